//! `GET /metrics` (Prometheus text) and `GET /v1/stats` (the caller's
//! retry rates).

use axum::Extension;
use axum::extract::State;
use axum::response::IntoResponse;
use http::header;
use kitchen::Tenant;
use serde::Serialize;
use telemetry::{DoorStats, Metrics};
use utoipa::ToSchema;

use crate::problem::Problem;

/// Every metric of this instance in the Prometheus text format: outcomes by
/// door, action and outcome; latency by door and outcome; contract failures
/// by kind; MCP tool calls by tool and contract hash.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "health",
    responses(
        (status = 200, description = "Prometheus text exposition format.", body = String, content_type = "text/plain"),
        (status = 400, description = "A header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn metrics(State(metrics): State<Metrics>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.prometheus_text(),
    )
}

/// The caller's write outcomes on this instance since it started.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Stats {
    /// What the counts cover.
    scope: &'static str,
    /// One entry per door and action used.
    #[schema(value_type = Vec<Object>)]
    doors: Vec<DoorStats>,
}

/// How often you retry: per door and action, outcome counts and
/// `retry_rate` = (replayed + expired) / (created + replayed + expired).
#[utoipa::path(get, path = "/v1/stats", operation_id = "get_stats", tag = "operations",
    responses(
        (status = 200, description = "Outcome counts and retry rates of the caller's tenant.", body = Stats),
        (status = 400, description = "A header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn stats(
    State(metrics): State<Metrics>,
    Extension(tenant): Extension<Tenant>,
) -> axum::Json<Stats> {
    axum::Json(Stats {
        scope: "this instance, since it started",
        doors: metrics.stats().of(tenant.id),
    })
}
