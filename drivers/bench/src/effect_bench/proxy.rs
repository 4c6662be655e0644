//! The bench's proxy: every caller, of every strategy, reaches its backend
//! (our server, or the provider for the strategies that call it directly)
//! through it.
//!
//! Why a proxy, and not faults inside each caller: `tickets-client` runs its
//! own retries, which the bench must not touch, so a fault on the caller's
//! side of the wire has to happen on the wire, at a chosen request (the
//! first write of an intent, named by its unique title), whatever client
//! sent it. It can lose an answer after the backend produced it, withhold
//! one for good, deliver a request late (after the caller gave up on it),
//! send the first attempt to another instance than the retries, and stop
//! listening for a while (nothing reaches the backend). It also counts, per
//! title, the writes that crossed it: the attempts of every strategy,
//! measured the same way.
//!
//! Work already sent upstream always finishes: a forward runs on its own
//! task, so a caller that goes away cannot cancel a request the backend
//! is still to receive.
//!
//! The accept loop is the provider simulator's (`provider_sim/listener.rs`),
//! whose module is private to it: closing a connection unanswered and the
//! outage need the same two powers axum does not give a handler.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tower::ServiceExt;

/// What happens to the request a [`Rule`] matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Forwarded at once; once the whole answer is in, the caller's
    /// connection is closed without a byte of it.
    LoseAnswer,
    /// Forwarded at once; the caller never hears back (until it gives up
    /// or is interrupted).
    Withhold,
    /// Held this long, then forwarded whatever the caller did meanwhile,
    /// and answered if the caller is still there.
    Delay(Duration),
}

/// A fault for the next write whose JSON body has this exact `title`.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// The title the request carries (each intent's is unique).
    pub(crate) title: String,
    /// What happens to it.
    pub(crate) fate: Option<Fate>,
    /// Where it goes instead of the default upstream.
    pub(crate) upstream: Option<String>,
}

/// What our server's likely-duplicate guard answered, counted on the wire
/// as the answers came back from upstream (an answer the proxy then
/// loses, withholds, or delivers to a caller that went away included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GuardSaid {
    /// Answers carrying `Possible-Duplicate-Of` (`warn`: made, flagged).
    pub(crate) flagged: u64,
    /// `409 possible-duplicate` answers (`confirm`: refused).
    pub(crate) refused: u64,
}

impl GuardSaid {
    fn count(&mut self, status: StatusCode, headers: &HeaderMap, body: &[u8]) {
        if headers.contains_key(super::wire::POSSIBLE_DUPLICATE_OF) {
            self.flagged += 1;
        }
        if status == StatusCode::CONFLICT
            && super::wire::possible_duplicate(&String::from_utf8_lossy(body))
        {
            self.refused += 1;
        }
    }
}

/// What the proxy saw since the last [`Proxy::reset`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// Write requests per title.
    pub(crate) writes: BTreeMap<String, u32>,
    /// `GET /v1/operations/…` (status lookups).
    pub(crate) status_reads: u64,
    /// What the guard answered.
    pub(crate) guard: GuardSaid,
}

#[derive(Default)]
struct Plan {
    upstream: String,
    rules: Vec<Rule>,
    seen: Seen,
}

struct Shared {
    http: reqwest::Client,
    plan: Mutex<Plan>,
    /// Forwards still running (a delayed request not delivered yet).
    in_flight: AtomicUsize,
}

impl Shared {
    fn plan(&self) -> MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running proxy on a loopback port; stops when dropped.
pub(crate) struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    outages: mpsc::UnboundedSender<(Duration, oneshot::Sender<()>)>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy forwarding to `upstream` (`http://host:port`).
    pub(crate) async fn start(upstream: &str) -> anyhow::Result<Self> {
        let listener = bind("127.0.0.1:0".parse()?)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            // No timeout: a forward ends when the backend answers or cuts;
            // the callers have timeouts of their own.
            http: reqwest::Client::builder().build()?,
            plan: Mutex::new(Plan {
                upstream: upstream.to_owned(),
                ..Plan::default()
            }),
            in_flight: AtomicUsize::new(0),
        });
        let router = Router::new().fallback(forward).with_state(shared.clone());
        let (outages, outage_requests) = mpsc::unbounded_channel();
        let task = tokio::spawn(serve(listener, router, outage_requests));
        Ok(Self {
            addr,
            shared,
            outages,
            task,
        })
    }

    /// `http://ADDR`: what callers use as their base URL.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Forgets the rules and the counts, and forwards to `upstream` from now.
    pub(crate) fn reset(&self, upstream: &str) {
        let mut plan = self.shared.plan();
        plan.upstream = upstream.to_owned();
        plan.rules.clear();
        plan.seen = Seen::default();
    }

    /// Adds a rule; rules are tried in the order added, each used once.
    pub(crate) fn add(&self, rule: Rule) {
        self.shared.plan().rules.push(rule);
    }

    /// What crossed since the last reset.
    pub(crate) fn seen(&self) -> Seen {
        self.shared.plan().seen.clone()
    }

    /// Forwards still under way (delayed requests not yet delivered).
    pub(crate) fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Stops listening for `pause` (connections are refused), then listens
    /// on the same port again. Returns once the port is closed.
    pub(crate) async fn outage(&self, pause: Duration) -> anyhow::Result<()> {
        let (closed, is_closed) = oneshot::channel();
        self.outages
            .send((pause, closed))
            .map_err(|_| anyhow::anyhow!("the proxy has stopped"))?;
        is_closed
            .await
            .map_err(|_| anyhow::anyhow!("the proxy stopped during an outage"))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Kills the connection a request came on; a request extension.
#[derive(Clone)]
struct ConnKill(Arc<Notify>);

/// The answer from upstream, or why there is none.
type Upstream = Result<(StatusCode, HeaderMap, Bytes), String>;

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let kill = request.extensions().get::<ConnKill>().cloned();
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let title = title_of(&parts.method, &body);
    let (upstream, fate) = {
        let mut plan = shared.plan();
        if parts.method == axum::http::Method::GET && path.starts_with("/v1/operations/") {
            plan.seen.status_reads += 1;
        }
        let rule = title.as_ref().and_then(|title| {
            let at = plan.rules.iter().position(|r| &r.title == title)?;
            Some(plan.rules.remove(at))
        });
        if let Some(title) = &title {
            *plan.seen.writes.entry(title.clone()).or_default() += 1;
        }
        let upstream = rule
            .as_ref()
            .and_then(|r| r.upstream.clone())
            .unwrap_or_else(|| plan.upstream.clone());
        (upstream, rule.and_then(|r| r.fate))
    };
    let delay = match fate {
        Some(Fate::Delay(delay)) => delay,
        _ => Duration::ZERO,
    };
    let sent = shared.clone();
    let url = format!("{upstream}{path}");
    let (method, headers) = (parts.method, parts.headers);
    // Detached: the backend gets the request even if the caller goes away.
    shared.in_flight.fetch_add(1, Ordering::SeqCst);
    let answer = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let answer = send(&sent.http, method, &url, headers, body).await;
        // Counted before the forward is over: a cell that waits for
        // nothing in flight sees it.
        if let Ok((status, headers, body)) = &answer {
            sent.plan().seen.guard.count(*status, headers, body);
        }
        sent.in_flight.fetch_sub(1, Ordering::SeqCst);
        answer
    });
    let answer = answer
        .await
        .unwrap_or_else(|e| Err(format!("forward task: {e}")));
    match (answer, fate) {
        (Ok(_), Some(Fate::Withhold)) => std::future::pending().await,
        (Ok(_), Some(Fate::LoseAnswer)) | (Err(_), _) => drop_connection(kill).await,
        (Ok((status, headers, body)), _) => {
            let mut response = Response::new(Body::from(body));
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            response
        }
    }
}

/// The title of a write's JSON body, if it has one: its `title` (this
/// service's API, the simulator's), or its `issue.subject` (Redmine's).
fn title_of(method: &axum::http::Method, body: &[u8]) -> Option<String> {
    if method == axum::http::Method::GET {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value
        .get("title")
        .or_else(|| value.get("issue")?.get("subject"))?
        .as_str()
        .map(str::to_owned)
}

/// Headers that belong to one hop, never forwarded (and no compression:
/// the proxy hands bodies on as it got them).
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "accept-encoding"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

async fn send(
    http: &reqwest::Client,
    method: axum::http::Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
) -> Upstream {
    let mut request = http.request(method, url).body(body);
    for (name, value) in &headers {
        if !hop_by_hop(name) {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let mut headers = HeaderMap::new();
    for (name, value) in response.headers() {
        if !hop_by_hop(name) {
            headers.append(name, value.clone());
        }
    }
    let body = response.bytes().await.map_err(|e| e.to_string())?;
    Ok((status, headers, body))
}

/// Closes this request's connection without a byte of answer; the future
/// never finishes (the connection task drops it with the socket).
async fn drop_connection(kill: Option<ConnKill>) -> Response {
    match kill {
        Some(kill) => {
            kill.0.notify_one();
            std::future::pending().await
        }
        None => StatusCode::BAD_GATEWAY.into_response(),
    }
}

/// Binds with `SO_REUSEADDR`, so the port can be taken again after an
/// outage.
fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

async fn serve(
    listener: TcpListener,
    router: Router,
    mut outages: mpsc::UnboundedReceiver<(Duration, oneshot::Sender<()>)>,
) {
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    let mut listener = listener;
    let (closing, _) = watch::channel(());
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, router.clone(), closing.subscribe()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some((pause, closed)) = outages.recv() => {
                drop(listener);
                // Idle kept-alive connections close too: a pooled client
                // must not slip through the outage.
                closing.send_replace(());
                let _ = closed.send(());
                tokio::time::sleep(pause).await;
                match rebind(addr).await {
                    Ok(again) => listener = again,
                    Err(e) => {
                        eprintln!("effect-bench proxy: cannot listen on {addr} again: {e}");
                        return;
                    }
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn rebind(addr: SocketAddr) -> io::Result<TcpListener> {
    let mut attempts = 0;
    loop {
        match bind(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) if attempts >= 100 => return Err(e),
            Err(_) => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn serve_connection(stream: TcpStream, router: Router, mut closing: watch::Receiver<()>) {
    let kill = ConnKill(Arc::new(Notify::new()));
    let tag = kill.clone();
    let service = router.map_request(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(tag.clone());
        request
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            () = kill.0.notified() => return,
            changed = closing.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_known_by_its_title_or_its_redmine_subject() {
        let post = axum::http::Method::POST;
        let title = |body: serde_json::Value| title_of(&post, body.to_string().as_bytes());
        assert_eq!(
            title(serde_json::json!({"title": "t"})).as_deref(),
            Some("t")
        );
        assert_eq!(
            title(serde_json::json!({"issue": {"project_id": 1, "subject": "s"}})).as_deref(),
            Some("s"),
            "Redmine's create"
        );
        assert_eq!(title(serde_json::json!({"issue": {"notes": "n"}})), None);
        let get = axum::http::Method::GET;
        assert_eq!(title_of(&get, br#"{"title": "t"}"#), None);
    }

    /// A tiny upstream that counts the requests it got and answers 201.
    async fn upstream() -> (String, Arc<AtomicUsize>) {
        let got = Arc::new(AtomicUsize::new(0));
        let counted = got.clone();
        let app = Router::new().fallback(move || {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                (StatusCode::CREATED, "{}")
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}"), got)
    }

    async fn post(http: &reqwest::Client, base: &str, title: &str) -> reqwest::Result<u16> {
        let response = http
            .post(format!("{base}/v1/tickets"))
            .json(&serde_json::json!({"title": title}))
            .send()
            .await?;
        Ok(response.status().as_u16())
    }

    #[tokio::test]
    async fn a_lost_answer_reaches_the_backend_and_only_its_title_is_hit() {
        let (base, got) = upstream().await;
        let proxy = Proxy::start(&base).await.expect("a proxy");
        proxy.add(Rule {
            title: "t1".into(),
            fate: Some(Fate::LoseAnswer),
            upstream: None,
        });
        let http = reqwest::Client::new();
        let lost = post(&http, &proxy.base_url(), "t1").await;
        assert!(lost.is_err(), "the first t1 is cut: {lost:?}");
        assert_eq!(got.load(Ordering::SeqCst), 1, "but it reached the backend");
        assert_eq!(post(&http, &proxy.base_url(), "t1").await.ok(), Some(201));
        assert_eq!(post(&http, &proxy.base_url(), "t2").await.ok(), Some(201));
        let seen = proxy.seen();
        assert_eq!((seen.writes["t1"], seen.writes["t2"]), (2, 1));
    }

    #[tokio::test]
    async fn a_delayed_request_is_delivered_after_its_caller_gave_up() {
        let (base, got) = upstream().await;
        let proxy = Proxy::start(&base).await.expect("a proxy");
        proxy.add(Rule {
            title: "slow".into(),
            fate: Some(Fate::Delay(Duration::from_millis(300))),
            upstream: None,
        });
        let http = reqwest::Client::new();
        let gave_up = tokio::time::timeout(
            Duration::from_millis(50),
            post(&http, &proxy.base_url(), "slow"),
        )
        .await;
        assert!(gave_up.is_err(), "the caller gave up first");
        assert_eq!(got.load(Ordering::SeqCst), 0);
        assert_eq!(proxy.in_flight(), 1);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(got.load(Ordering::SeqCst), 1, "delivered anyway");
        assert_eq!(proxy.in_flight(), 0);
    }

    #[tokio::test]
    async fn the_guards_answers_are_counted_even_when_the_caller_never_gets_them() {
        let app = Router::new().fallback(|request: Request| async move {
            let body = axum::body::to_bytes(request.into_body(), 1 << 16)
                .await
                .unwrap_or_default();
            let title = title_of(&axum::http::Method::POST, &body).unwrap_or_default();
            match title.as_str() {
                "flagged" => (
                    StatusCode::CREATED,
                    [(
                        "possible-duplicate-of",
                        "operation=\"/v1/operations/create_ticket/k\"",
                    )],
                    "{}",
                )
                    .into_response(),
                "refused" => (
                    StatusCode::CONFLICT,
                    r#"{"type":"/problems/possible-duplicate"}"#,
                )
                    .into_response(),
                _ => (
                    StatusCode::CONFLICT,
                    r#"{"type":"/problems/operation-in-progress"}"#,
                )
                    .into_response(),
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let proxy = Proxy::start(&base).await.expect("a proxy");
        // The flagged answer is lost on the way back; the refusal arrives.
        proxy.add(Rule {
            title: "flagged".into(),
            fate: Some(Fate::LoseAnswer),
            upstream: None,
        });
        let http = reqwest::Client::new();
        assert!(post(&http, &proxy.base_url(), "flagged").await.is_err());
        assert_eq!(
            post(&http, &proxy.base_url(), "refused").await.ok(),
            Some(409)
        );
        assert_eq!(post(&http, &proxy.base_url(), "busy").await.ok(), Some(409));
        assert_eq!(
            proxy.seen().guard,
            GuardSaid {
                flagged: 1,
                refused: 1
            }
        );
    }

    #[tokio::test]
    async fn an_outage_refuses_connections_then_ends() {
        let (base, got) = upstream().await;
        let proxy = Proxy::start(&base).await.expect("a proxy");
        let http = reqwest::Client::new();
        assert_eq!(post(&http, &proxy.base_url(), "warm").await.ok(), Some(201));
        proxy
            .outage(Duration::from_millis(300))
            .await
            .expect("an outage");
        let refused = post(&http, &proxy.base_url(), "t").await;
        assert!(
            refused.as_ref().is_err_and(reqwest::Error::is_connect),
            "refused: {refused:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(post(&http, &proxy.base_url(), "t").await.ok(), Some(201));
        assert_eq!(got.load(Ordering::SeqCst), 2);
    }
}
