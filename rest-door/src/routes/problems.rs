//! `GET /problems/{slug}`: every problem `type` URI dereferences to its
//! description.

use axum::extract::Path;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::RestError;
use crate::problem::ProblemKind;

/// What a kind of problem means.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProblemType {
    /// The `type` URI.
    #[serde(rename = "type")]
    type_uri: String,
    /// Short summary.
    title: &'static str,
    /// HTTP status.
    status: u16,
    /// What it means and what to do.
    description: &'static str,
}

/// Describe a problem type.
#[utoipa::path(get, path = "/problems/{slug}", operation_id = "describe_problem", tag = "problems",
    params(("slug" = String, Path, description = "Last segment of a problem `type` URI", example = "idempotency-key-reused")),
    responses(
        (status = 200, description = "The problem type.", body = ProblemType),
        (status = 400, description = "The path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such problem type.", body = crate::problem::Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn describe(
    Path(slug): Path<String>,
) -> Result<axum::Json<ProblemType>, RestError> {
    let kind = ProblemKind::by_slug(&slug)
        .ok_or_else(|| RestError::NotFound(format!("Problem type {slug:?}")))?;
    Ok(axum::Json(ProblemType {
        type_uri: kind.type_uri(),
        title: kind.title,
        status: kind.status.as_u16(),
        description: kind.description,
    }))
}
