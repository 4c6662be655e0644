//! The REST routes' request timeout, which tells a body that never arrived
//! from a request that ran too long.
//!
//! Why not `tower_http`'s `TimeoutLayer`: it answers every timeout alike
//! (`503 timeout`, "a write may or may not have happened"), but a body
//! trickled past the deadline never reached a handler, so nothing can have
//! happened: that is a `408 body-timeout` saying so, as on `/mcp`. Only a
//! request whose body was all read and still ran past the deadline keeps
//! the `503 timeout` (the write itself runs on to its end).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http_body::{Frame, SizeHint};

/// Runs the request within `timeout`.
pub(crate) async fn within(
    State(timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let arrived = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        if body.is_end_stream() {
            arrived.store(true, Ordering::Release);
        }
        Body::new(Watched {
            inner: body,
            arrived: arrived.clone(),
        })
    });
    match tokio::time::timeout(timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) if !arrived.load(Ordering::Acquire) => {
            rest_door::RestError::BodyTimeout(timeout).into_response()
        }
        // Bare: `problem_for_bare_errors` makes it the `timeout` problem.
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// A request body that notes when its last byte has arrived.
struct Watched {
    inner: Body,
    arrived: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.arrived.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
