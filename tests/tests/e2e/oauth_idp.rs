//! A minimal identity provider for the Rust end-to-end tests: OpenID
//! discovery and a JWKS over real HTTP, with EC P-256 keys made by `rcgen`
//! and tokens signed by `jsonwebtoken`, so the server's fetching, caching
//! and verifying run exactly as in production. It can rotate its keys and
//! be slow. (The script `tests/oauth/run.sh` runs the same cases against a
//! maintained test authorization server, `oauth2-mock-server`.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// One signing key: its id, the private half, the public JWK.
#[derive(Clone)]
struct Key {
    kid: String,
    private: EncodingKey,
    public: Jwk,
}

impl Key {
    fn generate(kid: &str) -> Self {
        let pair =
            rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("an EC key pair");
        let private = EncodingKey::from_ec_der(&pair.serialize_der());
        let mut public = Jwk::from_encoding_key(&private, Algorithm::ES256).expect("a JWK");
        public.common.key_id = Some(kid.to_owned());
        Self {
            kid: kid.to_owned(),
            private,
            public,
        }
    }
}

#[derive(Default)]
struct Shared {
    /// Published keys; the last one signs.
    keys: Mutex<Vec<Key>>,
    /// How long the JWKS endpoint stalls before answering.
    stall: Mutex<Duration>,
    jwks_fetches: AtomicUsize,
}

/// A running identity provider.
pub struct TestIdp {
    /// Its issuer identifier (`http://127.0.0.1:PORT`).
    pub issuer: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestIdp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl TestIdp {
    /// Starts one with a key `k1`.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        shared.keys.lock().expect("keys").push(Key::generate("k1"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let issuer = format!(
            "http://127.0.0.1:{}",
            listener.local_addr().expect("addr").port()
        );
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .with_state((issuer.clone(), shared.clone()));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            issuer,
            shared,
            server,
        }
    }

    /// Publishes a new key `kid` and signs with it from now on.
    pub fn rotate(&self, kid: &str) {
        self.shared
            .keys
            .lock()
            .expect("keys")
            .push(Key::generate(kid));
    }

    /// Makes the JWKS endpoint stall for `stall` before answering.
    pub fn stall(&self, stall: Duration) {
        *self.shared.stall.lock().expect("stall") = stall;
    }

    /// How many times the JWKS was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.shared.jwks_fetches.load(Ordering::SeqCst)
    }

    /// A token with `claims` over the defaults (this issuer, `aud`, `sub`
    /// `user-1`, valid for an hour, both scopes), signed with the current
    /// key. A claim set to `null` is left out.
    pub fn token(&self, aud: &str, claims: Value) -> String {
        let key = self.current();
        self.sign(&key, &key.kid, aud, claims)
    }

    /// Like [`token`](Self::token), but naming `kid` in the header.
    pub fn token_naming(&self, kid: &str, aud: &str, claims: Value) -> String {
        let key = self.current();
        self.sign(&key, kid, aud, claims)
    }

    /// A token signed by a key this provider never published, under its
    /// own issuer and a `kid` of its own.
    pub fn forged(&self, aud: &str) -> String {
        let stranger = Key::generate("stranger");
        self.sign(&stranger, "stranger", aud, json!({}))
    }

    /// A token `"alg": "none"`, unsigned.
    pub fn unsigned(&self, aud: &str) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
        let claims = URL_SAFE_NO_PAD.encode(self.claims(aud, json!({})).to_string());
        format!("{header}.{claims}.")
    }

    /// A token `HS256`-"signed" with the current public key's bytes as the
    /// secret, naming its `kid`: the classic algorithm-confusion forgery.
    pub fn hmac_confused(&self, aud: &str) -> String {
        let key = self.current();
        let secret = serde_json::to_vec(&key.public).expect("JWK bytes");
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(
            &header,
            &self.claims(aud, json!({})),
            &EncodingKey::from_secret(&secret).expect("an HMAC key"),
        )
        .expect("sign")
    }

    fn current(&self) -> Key {
        self.shared
            .keys
            .lock()
            .expect("keys")
            .last()
            .cloned()
            .expect("a key")
    }

    fn claims(&self, aud: &str, overrides: Value) -> Value {
        let now = jsonwebtoken::get_current_timestamp();
        let mut claims = json!({
            "iss": self.issuer,
            "aud": aud,
            "sub": "user-1",
            "iat": now,
            "exp": now + 3600,
            "scope": "tickets:read tickets:write",
        });
        if let (Some(claims), Some(overrides)) = (claims.as_object_mut(), overrides.as_object()) {
            for (name, value) in overrides {
                if value.is_null() {
                    claims.remove(name);
                } else {
                    claims.insert(name.clone(), value.clone());
                }
            }
        }
        claims
    }

    fn sign(&self, key: &Key, kid: &str, aud: &str, claims: Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &self.claims(aud, claims), &key.private).expect("sign")
    }
}

async fn discovery(State((issuer, _)): State<(String, Arc<Shared>)>) -> axum::Json<Value> {
    axum::Json(json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
    }))
}

async fn jwks(State((_, shared)): State<(String, Arc<Shared>)>) -> axum::Json<JwkSet> {
    shared.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let stall = *shared.stall.lock().expect("stall");
    if !stall.is_zero() {
        tokio::time::sleep(stall).await;
    }
    let keys = shared
        .keys
        .lock()
        .expect("keys")
        .iter()
        .map(|k| k.public.clone())
        .collect();
    axum::Json(JwkSet { keys })
}
