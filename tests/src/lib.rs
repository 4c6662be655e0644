//! End-to-end test harness: the real server, spawned in-process on port 0
//! over a fresh database, driven over real HTTP.
//!
//! # Layout
//!
//! - [`TestApp`]: one running server instance (several may share a database).
//! - [`TestTenant`]: a tenant and its bearer token.
//! - [`snapshot_settings`]: insta settings shared by both databases, with
//!   ids, keys and times redacted.
//! - [`process`]: the server as a separate process (crash, restart, several
//!   instances, SIGTERM), as built and in its fault-injection build.

pub mod process;

use std::time::Duration;

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Kitchen, KitchenConfig, TenantId};
use server::{Application, ServeSettings};
use telemetry::Metrics;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server instance running on a free port.
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub address: String,
    /// The instance's own kitchen (the same one the server uses).
    pub kitchen: Kitchen,
    /// The instance's metrics.
    pub metrics: Metrics,
    /// A plain HTTP client.
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
}

/// A tenant with a live token.
#[derive(Debug, Clone)]
pub struct TestTenant {
    /// The tenant's id.
    pub id: TenantId,
    /// Its bearer token.
    pub token: String,
}

impl TestApp {
    /// A server over `db` with default settings.
    pub async fn spawn(db: &TestDatabase) -> Self {
        Self::spawn_with(db, KitchenConfig::default(), Duration::from_secs(30)).await
    }

    /// A server over `db` with `config` and a request timeout.
    pub async fn spawn_with(
        db: &TestDatabase,
        config: KitchenConfig,
        request_timeout: Duration,
    ) -> Self {
        let settings = ServeSettings {
            request_timeout,
            ..ServeSettings::default()
        };
        Self::spawn_with_settings(db, config, settings).await
    }

    /// A server over `db` with `config` and `settings` (its `listen` is
    /// replaced by a free loopback port).
    pub async fn spawn_with_settings(
        db: &TestDatabase,
        config: KitchenConfig,
        settings: ServeSettings,
    ) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let listen = listener.local_addr().expect("its address");
        drop(listener);
        Self::spawn_on(db, config, ServeSettings { listen, ..settings }).await
    }

    /// A server over `db` listening where `settings` say (a port chosen
    /// before the server starts, e.g. to name it in the OAuth audience).
    pub async fn spawn_on(
        db: &TestDatabase,
        config: KitchenConfig,
        settings: ServeSettings,
    ) -> Self {
        let kitchen = db.kitchen_with(config).await;
        Self::spawn_kitchen(kitchen, settings).await
    }

    /// A server over `kitchen`, listening where `settings` say (a database
    /// a test made itself: on a small file system, on a cluster it stops).
    pub async fn spawn_kitchen(kitchen: Kitchen, settings: ServeSettings) -> Self {
        let listen = if settings.listen.port() == 0 {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            listener.local_addr().expect("its address")
        } else {
            settings.listen
        };
        let settings = ServeSettings { listen, ..settings };
        let metrics = Metrics::new();
        let app = Application::build(kitchen.clone(), metrics.clone(), &settings)
            .await
            .expect("bind a free port");
        let address = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Self {
            address,
            kitchen,
            metrics,
            client: reqwest::Client::new(),
            stop: Some(stop),
            served: Some(served),
        }
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// Makes a tenant named `name` with a token.
    pub async fn tenant(&self, name: &str) -> TestTenant {
        let (tenant, token) = tenant_with_token(&self.kitchen, name).await;
        TestTenant {
            id: tenant.id,
            token: token.secret,
        }
    }

    /// Another token of `tenant`, carrying only `scopes`.
    pub async fn token_with(&self, tenant: &TestTenant, scopes: kitchen::Scopes) -> TestTenant {
        let token = self
            .kitchen
            .issue_token_with(tenant.id, scopes)
            .await
            .expect("issue a token");
        TestTenant {
            id: tenant.id,
            token: token.secret,
        }
    }

    /// Holds `key` for `tenant` the way a slow concurrent attempt would (an
    /// open transaction that claimed it), until rolled back.
    pub async fn hold_key(&self, tenant: &TestTenant, key: &str) -> kitchen::testing::KeyHolder {
        let key = kitchen::OperationKey::parse(key).expect("a valid key");
        self.kitchen.hold_key_for_test(tenant.id, &key).await
    }

    /// `POST /v1/tickets` with `body` as JSON and, if given, the key.
    pub async fn post_ticket(
        &self,
        tenant: &TestTenant,
        key: Option<&str>,
        body: &str,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url("/v1/tickets"))
            .bearer_auth(&tenant.token)
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request.send().await.expect("server answers")
    }

    /// `GET path` as `tenant`.
    pub async fn get(&self, tenant: &TestTenant, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(&tenant.token)
            .send()
            .await
            .expect("server answers")
    }

    /// Waits (polling, up to 5 s) until the create under `key` has
    /// committed; whether it did. For creates whose caller stopped waiting.
    pub async fn operation_committed(&self, tenant: &TestTenant, key: &str) -> bool {
        let path = format!("/v1/operations/create_ticket/{key}");
        for _ in 0..250 {
            if self.get(tenant, &path).await.status() == 200 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// `GET path` without credentials, as JSON.
    pub async fn public_json(&self, path: &str) -> serde_json::Value {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("server answers")
            .json()
            .await
            .expect("a JSON body")
    }

    /// How many tickets the tenant has, counted through the list API: the
    /// server's state, not any create's answer.
    pub async fn ticket_count(&self, tenant: &TestTenant) -> usize {
        let mut count = 0;
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/v1/tickets?limit=200&cursor={c}"),
                None => "/v1/tickets?limit=200".to_owned(),
            };
            let page: serde_json::Value = self
                .get(tenant, &path)
                .await
                .json()
                .await
                .expect("JSON page");
            count += page["tickets"].as_array().expect("tickets array").len();
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return count,
            }
        }
    }

    /// Stops accepting, finishes requests in flight, and waits for the end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            served.await.expect("server task").expect("server ran");
        }
    }
}

/// insta settings for response snapshots: one snapshot per shape, shared by
/// the SQLite and PostgreSQL runs (no module prefix), with UUIDs, RFC 3339
/// times and token secrets replaced by placeholders.
pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[uuid]",
    );
    settings.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[time]");
    settings.add_filter(r"tkt_[0-9a-f]{64}", "[token]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[port]");
    settings
}
