//! Test helpers: replies as the service sends them, and a scripted network
//! with a virtual clock that records every request and every wait.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use crate::network::{Answer, Call, Method, Network, NoAnswer, Reach, Reply};

/// A ticket as the service answers it.
pub(crate) const TICKET: &str = r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk full","description":null,"priority":"normal","status":"open","created_at":"2026-11-30T12:00:00.123456Z","version":1}"#;

/// A comment as the service answers it.
pub(crate) const COMMENT: &str = r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7b","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","body":"seen","created_at":"2026-11-30T12:00:00Z"}"#;

/// An answer with `status`, `body` and no headers.
pub(crate) fn answer(status: u16, body: &str) -> Reply {
    Reply::Answer(Answer {
        status,
        retry_after: None,
        replayed: None,
        body: body.as_bytes().to_vec(),
    })
}

/// An answer with a `Retry-After` of `secs`.
pub(crate) fn advised(status: u16, secs: u64, body: &str) -> Reply {
    Reply::Answer(Answer {
        status,
        retry_after: Some(Duration::from_secs(secs)),
        replayed: None,
        body: body.as_bytes().to_vec(),
    })
}

/// A success with `Idempotent-Replayed: value`.
pub(crate) fn replayed(status: u16, value: &str, body: &str) -> Reply {
    Reply::Answer(Answer {
        status,
        retry_after: None,
        replayed: Some(value.into()),
        body: body.as_bytes().to_vec(),
    })
}

/// No answer, having got as far as `reach`.
pub(crate) fn no_answer(reach: Reach) -> Reply {
    Reply::NoAnswer(NoAnswer {
        reach,
        error: format!("{reach:?}"),
    })
}

/// A problem document of kind `slug`.
pub(crate) fn problem(status: u16, slug: &str) -> String {
    format!(r#"{{"type":"/problems/{slug}","title":"{slug}","status":{status},"detail":"why"}}"#)
}

/// A status lookup's body in `state`.
pub(crate) fn status_body(state: &str) -> String {
    format!(
        r#"{{"action":"create_ticket","key":"k-0000001","state":"{state}","phase":"replayable","ticket_id":null,"resource_id":null,"ticket_location":null,"fingerprint":"v1:x","created_at":"2026-11-30T12:00:00Z","replayable_until":"2026-12-30T12:00:00Z","retained_until":"2028-01-04T12:00:00Z","retry_safe":true,"next_step":"…","detail":"d"}}"#
    )
}

/// A network that answers writes and lookups from two scripts (then with
/// a default each), on a virtual clock: each request takes 10 ms, each
/// wait as long as asked.
#[derive(Debug)]
pub(crate) struct Scripted {
    writes: Mutex<VecDeque<Reply>>,
    lookups: Mutex<VecDeque<Reply>>,
    write_default: Reply,
    lookup_default: Reply,
    calls: Mutex<Vec<Call>>,
    waits: Mutex<Vec<Duration>>,
    clock: Mutex<Duration>,
}

impl Scripted {
    /// Writes answered by `writes`, then lost; lookups by `lookups`, then
    /// unanswered.
    pub(crate) fn new(writes: Vec<Reply>, lookups: Vec<Reply>) -> Self {
        Self {
            writes: Mutex::new(writes.into()),
            lookups: Mutex::new(lookups.into()),
            write_default: no_answer(Reach::MaybeSent),
            lookup_default: no_answer(Reach::MaybeSent),
            calls: Mutex::new(Vec::new()),
            waits: Mutex::new(Vec::new()),
            clock: Mutex::new(Duration::ZERO),
        }
    }

    /// Every request, in order.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("lock").clone()
    }

    /// The write requests.
    pub(crate) fn writes(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method != Method::Get)
            .collect()
    }

    /// Every wait, in order.
    pub(crate) fn waits(&self) -> Vec<Duration> {
        self.waits.lock().expect("lock").clone()
    }
}

impl Network for Scripted {
    async fn send(&self, call: Call) -> Reply {
        let lookup = call.method == Method::Get;
        self.calls.lock().expect("lock").push(call);
        *self.clock.lock().expect("lock") += Duration::from_millis(10);
        let (script, default) = if lookup {
            (&self.lookups, &self.lookup_default)
        } else {
            (&self.writes, &self.write_default)
        };
        let next = script.lock().expect("lock").pop_front();
        next.unwrap_or_else(|| default.clone())
    }

    async fn sleep(&self, pause: Duration) {
        self.waits.lock().expect("lock").push(pause);
        *self.clock.lock().expect("lock") += pause;
    }

    fn elapsed(&self) -> Duration {
        *self.clock.lock().expect("lock")
    }
}
