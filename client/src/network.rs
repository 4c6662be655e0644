//! What the retry policy needs of the world: send one HTTP request and say
//! what came back, wait, and tell the time. The real one is `http.rs`;
//! tests script one, so that every path of the policy runs without a
//! network or a real clock.

use std::future::Future;
use std::time::Duration;

use uuid::Uuid;

use crate::key::OperationKey;

/// An HTTP method the client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

/// One HTTP request, before the base URL and credentials are added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) method: Method,
    /// Path segments after the base URL, unescaped (`["v1", "tickets"]`).
    pub(crate) path: Vec<String>,
    /// Query parameters.
    pub(crate) query: Vec<(&'static str, String)>,
    /// `Idempotency-Key`, on a write.
    pub(crate) key: Option<OperationKey>,
    /// `If-Match`, on a conditional update.
    pub(crate) if_match: Option<u64>,
    /// The body and its media type.
    pub(crate) body: Option<(&'static str, Vec<u8>)>,
    /// `x-request-id`: this HTTP request's own id (the transport request
    /// id), never the key.
    pub(crate) request_id: Uuid,
}

impl Call {
    /// A `GET` of `path` with `query`.
    pub(crate) fn get(path: Vec<String>, query: Vec<(&'static str, String)>) -> Self {
        Self {
            method: Method::Get,
            path,
            query,
            key: None,
            if_match: None,
            body: None,
            request_id: Uuid::now_v7(),
        }
    }
}

/// What came back for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// An answer: a status and its whole body.
    Answer(Answer),
    /// No answer.
    NoAnswer(NoAnswer),
}

/// An HTTP answer, with the headers the policy reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// `Retry-After`, in seconds.
    pub(crate) retry_after: Option<Duration>,
    /// `Idempotent-Replayed` (`true` or `expired`), as sent.
    pub(crate) replayed: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// A request that got no (whole) answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoAnswer {
    /// How far it got.
    pub(crate) reach: Reach,
    /// The transport's words.
    pub(crate) error: String,
}

/// How far a request without an answer got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// No connection was made: nothing was sent.
    NotSent,
    /// It may have been sent (the connection broke after it was made, or
    /// the answer's body broke off).
    MaybeSent,
    /// The call's timeout ran out: it may have been sent, and may still be
    /// running.
    TimedOut,
}

/// The world as the policy sees it.
pub(crate) trait Network: Send + Sync {
    /// Sends `call` and reads its whole answer, within the call timeout.
    fn send(&self, call: Call) -> impl Future<Output = Reply> + Send;

    /// Waits `pause`.
    fn sleep(&self, pause: Duration) -> impl Future<Output = ()> + Send;

    /// Time since an arbitrary fixed start (the policy's clock).
    fn elapsed(&self) -> Duration;
}
