//! The answers many operations share, added to the OpenAPI document in one
//! place instead of in every route's `#[utoipa::path]`: the `401` of every
//! operation behind a token, the `500` of every read and of every write
//! (a write's outcome is then unknown), and the `413` and `415` of every
//! write that takes a body. A write is an operation named after its
//! kitchen action, as `access::policy` knows it. A route that says one of
//! these itself, differently, keeps its own words.

use std::collections::BTreeMap;

use kitchen::Action;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response, ResponseBuilder};

use crate::BODY_LIMIT_BYTES;
use crate::problem::PROBLEM_JSON;

const UNAUTHENTICATED: &str = "Missing or invalid bearer token.";
const READ_FAILED: &str = "Something failed on our side (`internal`; logged). Retry.";
const WRITE_FAILED: &str = "Something failed on our side (`internal`; logged). The outcome is \
    unknown: retry the same request with the same key, or GET the operation by key.";
const UNSUPPORTED_MEDIA_TYPE: &str = "Body is not application/json (`unsupported-media-type`), \
    or compressed with a Content-Encoding other than gzip (`unsupported-content-encoding`). \
    Nothing written, key not used.";

/// `doc` with the shared answers added to every operation they apply to.
pub(crate) fn with_shared_responses(mut doc: OpenApi) -> OpenApi {
    for operation in secured_operations(&mut doc) {
        let write = operation
            .operation_id
            .as_deref()
            .and_then(Action::parse)
            .is_some();
        let has_body = operation.request_body.is_some();
        let responses = &mut operation.responses.responses;
        add(responses, "401", || {
            problem(UNAUTHENTICATED)
                .header("WWW-Authenticate", string_header("Bearer"))
                .build()
        });
        add(responses, "500", || {
            problem(if write { WRITE_FAILED } else { READ_FAILED }).build()
        });
        if write && has_body {
            add(responses, "413", || {
                problem(&format!(
                    "Body over {} KiB (after gzip decoding). Nothing written, key not used.",
                    BODY_LIMIT_BYTES / 1024
                ))
                .build()
            });
            add(responses, "415", || problem(UNSUPPORTED_MEDIA_TYPE).build());
        }
    }
    doc
}

/// Every operation of `doc` behind a token.
pub(crate) fn secured_operations(doc: &mut OpenApi) -> impl Iterator<Item = &mut Operation> {
    doc.paths.paths.values_mut().flat_map(|item| {
        [
            item.get.as_mut(),
            item.post.as_mut(),
            item.patch.as_mut(),
            item.put.as_mut(),
            item.delete.as_mut(),
        ]
        .into_iter()
        .flatten()
        .filter(|operation| operation.security.as_ref().is_some_and(|s| !s.is_empty()))
    })
}

/// Adds the answer under `status` unless the operation says it itself.
fn add(
    responses: &mut BTreeMap<String, RefOr<Response>>,
    status: &str,
    response: impl FnOnce() -> Response,
) {
    responses
        .entry(status.to_owned())
        .or_insert_with(|| RefOr::T(response()));
}

/// A problem document answer.
pub(crate) fn problem(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        PROBLEM_JSON,
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Problem")))
            .build(),
    )
}

/// A header whose value is text.
pub(crate) fn string_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(Some(
            ObjectBuilder::new().schema_type(SchemaType::Type(Type::String)),
        ))
        .description(Some(description))
        .build()
}
