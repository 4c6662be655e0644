//! `http.server.request.duration` for every request through either door:
//! the semantic conventions' measurement (method, matched route, status),
//! taken around the routed answer.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use telemetry::{HttpRequest, Metrics};

/// Measures `request`'s answer.
pub(crate) async fn measure(
    State(metrics): State<Metrics>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    // The template (`/v1/tickets/{id}`), never the path: ids and keys would
    // make a series per request.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned());
    let protocol_version = match request.version() {
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        _ => "1.1",
    };
    let response = next.run(request).await;
    metrics.http_request(
        &HttpRequest {
            method: method.as_str(),
            route: route.as_deref(),
            status: response.status().as_u16(),
            protocol_version,
        },
        started.elapsed().as_secs_f64(),
    );
    response
}
