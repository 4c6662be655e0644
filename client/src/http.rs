//! The real network: reqwest over HTTP/1.1 (rustls for `https://`).

use std::fmt;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use tokio::time::Instant;

use crate::network::{Answer, Call, Method, Network, NoAnswer, Reach, Reply};

/// The most of a call's timeout that connecting may take: a server that
/// does not accept within it is down, and a refused connection is the one
/// failure that proves nothing was sent.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an idle pooled connection is kept. Below the server's own
/// idle close (its header-read timeout, 10 s by default), so the client
/// rarely writes a request onto a connection the server already closed
/// (which would make a write's outcome ambiguous for nothing).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// A bearer token, never printed.
#[derive(Clone)]
struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// The service at one base URL, reached with one token.
#[derive(Debug, Clone)]
pub(crate) struct HttpNetwork {
    http: reqwest::Client,
    base: Url,
    token: Token,
    call_timeout: Duration,
    started: Instant,
}

/// Why the network could not be set up (the caller's settings).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    #[error("{0}")]
    Url(String),
    #[error("could not set up the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

impl HttpNetwork {
    /// The service at `base_url` (`http://` or `https://`, any path
    /// prefix), each request bounded by `call_timeout`.
    pub(crate) fn new(
        base_url: &str,
        token: &str,
        call_timeout: Duration,
    ) -> Result<Self, SetupError> {
        let base = Url::parse(base_url)
            .map_err(|e| SetupError::Url(format!("{base_url:?} is not a URL: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(SetupError::Url(format!(
                "{base_url:?} is not an http:// or https:// URL"
            )));
        }
        let http = reqwest::Client::builder()
            // A write answered with a redirect is not followed: the key was
            // sent here, and the answer is judged here.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(call_timeout.min(CONNECT_TIMEOUT))
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .user_agent(concat!("tickets-client/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            http,
            base,
            token: Token(token.to_owned()),
            call_timeout,
            started: Instant::now(),
        })
    }

    /// The URL of `call`: each path segment escaped (a key may hold `/`,
    /// `?`, `#` or `%`), after the base URL's own path.
    fn url(&self, call: &Call) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(&call.path);
        }
        if !call.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in &call.query {
                pairs.append_pair(name, value);
            }
        }
        url
    }
}

impl Network for HttpNetwork {
    async fn send(&self, call: Call) -> Reply {
        let method = match call.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        };
        let mut request = self
            .http
            .request(method, self.url(&call))
            .bearer_auth(&self.token.0)
            .header("x-request-id", call.request_id.to_string())
            .timeout(self.call_timeout);
        if let Some(key) = &call.key {
            request = request.header("idempotency-key", key.as_str());
        }
        if let Some(version) = call.if_match {
            request = request.header("if-match", format!("\"{version}\""));
        }
        if let Some((media_type, body)) = call.body {
            request = request.header(CONTENT_TYPE, media_type).body(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Reply::NoAnswer(no_answer(&e)),
        };
        let status = response.status().as_u16();
        let headers = response.headers();
        // Only delta-seconds: the service sends nothing else, and a date
        // from another hop is taken as "no advice" (the policy's own
        // backoff applies).
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let replayed = headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match response.bytes().await {
            Ok(body) => Reply::Answer(Answer {
                status,
                retry_after,
                replayed,
                body: body.to_vec(),
            }),
            // The status arrived but the body broke off: the answer is
            // not whole, so it proves nothing.
            Err(e) => Reply::NoAnswer(no_answer(&e)),
        }
    }

    async fn sleep(&self, pause: Duration) {
        tokio::time::sleep(pause).await;
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// How far a failed request got. Only a connection that was never made
/// proves nothing was sent (a connect timeout included).
fn no_answer(e: &reqwest::Error) -> NoAnswer {
    let reach = if e.is_connect() {
        Reach::NotSent
    } else if e.is_timeout() {
        Reach::TimedOut
    } else {
        Reach::MaybeSent
    };
    NoAnswer {
        reach,
        error: chain(e),
    }
}

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(base: &str) -> HttpNetwork {
        HttpNetwork::new(base, "t", Duration::from_secs(1)).expect("a network")
    }

    #[test]
    fn paths_are_escaped_after_the_base_path() {
        let mut call = Call::get(
            vec![
                "v1".into(),
                "operations".into(),
                "create_ticket".into(),
                "odd/key?#%".into(),
            ],
            vec![],
        );
        assert_eq!(
            network("http://127.0.0.1:8080").url(&call).as_str(),
            "http://127.0.0.1:8080/v1/operations/create_ticket/odd%2Fkey%3F%23%25"
        );
        call.path = vec!["v1".into(), "tickets".into()];
        call.query = vec![("project_id", "ops team".into()), ("limit", "5".into())];
        assert_eq!(
            network("https://example.test/tickets/").url(&call).as_str(),
            "https://example.test/tickets/v1/tickets?project_id=ops+team&limit=5"
        );
    }

    #[test]
    fn only_http_urls_are_services() {
        for bad in ["ftp://example.test", "not a url", "mailto:ops@example.test"] {
            assert!(
                HttpNetwork::new(bad, "t", Duration::from_secs(1)).is_err(),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn a_refused_connection_was_not_sent() {
        // A port nothing listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let reply = network(&format!("http://127.0.0.1:{port}"))
            .send(Call::get(vec!["healthz".into()], vec![]))
            .await;
        let Reply::NoAnswer(no_answer) = reply else {
            panic!("nothing listens there: {reply:?}");
        };
        assert_eq!(no_answer.reach, Reach::NotSent, "{}", no_answer.error);
    }
}
