//! `GET /healthz` and `GET /readyz`.

use axum::extract::State;
use kitchen::Kitchen;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::RestError;
use crate::problem::Problem;

/// Health or readiness.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Health {
    /// `ok` or `ready`.
    status: &'static str,
    /// For readiness: `sqlite` or `postgres`.
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<&'static str>,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "health",
    responses(
        (status = 200, description = "Up.", body = Health),
        (status = 400, description = "A header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn healthz() -> axum::Json<Health> {
    axum::Json(Health {
        status: "ok",
        database: None,
    })
}

/// The database answers.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "health",
    responses(
        (status = 200, description = "Ready.", body = Health),
        (status = 400, description = "A header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database does not answer within a second, or cannot store anything while writes are failing (`not-ready`).", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn readyz(
    State(kitchen): State<Kitchen>,
) -> Result<axum::Json<Health>, RestError> {
    kitchen.ready().await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        RestError::NotReady(
            e.storage_fault()
                .map_or(kitchen::StorageFault::Unreachable, |(fault, _)| fault),
        )
    })?;
    Ok(axum::Json(Health {
        status: "ready",
        database: Some(kitchen.database_kind()),
    }))
}
