//! The answers many operations share, added to the OpenAPI document in one
//! place instead of in every route's `#[utoipa::path]`: the `401` of every
//! operation behind a token, the `500` of every read and of every write
//! (a write's outcome is then unknown), and the `413` and `415` of every
//! write that takes a body; and what the likely-duplicate guard adds to a
//! create or a comment (`Confirm-New`, `Possible-Duplicate-Of`, its `409`).
//! A write is an operation named after its kitchen action, as
//! `access::policy` knows it. A route that says one of these itself,
//! differently, keeps its own words.

use std::collections::BTreeMap;

use kitchen::Action;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterIn};
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
        let guarded = operation
            .operation_id
            .as_deref()
            .and_then(Action::parse)
            .is_some_and(kitchen::actions::guarded);
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
        if guarded {
            add_guard(operation);
        }
    }
    doc
}

/// What the likely-duplicate guard adds to a create's or a comment's
/// document: the `Confirm-New` header, the warning on its success, and its
/// refusal among the `409`s.
fn add_guard(operation: &mut Operation) {
    const WARNING: &str = "With the likely-duplicate guard warning (the default), on a new key \
        whose content matches a write made under another key within the last minutes (a retry \
        that minted a new key looks like this): `operation` (that write's status resource), \
        `resource` (what it made) and `created_at`, as an RFC 9651 dictionary. This write was \
        made all the same; if it was such a retry, use the first key next time.";
    const REFUSED: &str = "Or, with the likely-duplicate guard in `confirm` mode, a write with \
        the same content was made under another key within the last minutes \
        (`possible-duplicate`; `original_operation`, `original_resource`, \
        `original_created_at` point at it): nothing written, key not used; send \
        `confirm_new: true` (or `Confirm-New: true`) if a second one is meant.";
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.push(RefOr::T(crate::schema::parameter(
        "Confirm-New",
        ParameterIn::Header,
        false,
        "`true`: this write is meant as a new one even if its content matches a recent write \
         under another key (as the body's `confirm_new`). Changes nothing about a replay or a \
         conflict.",
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some(["true", "false"]))
            .build(),
    )));
    let responses = &mut operation.responses.responses;
    if let Some(RefOr::T(created)) = responses.get_mut("201") {
        created.headers.insert(
            "Possible-Duplicate-Of".into(),
            RefOr::T(string_header(WARNING)),
        );
    }
    match responses.get_mut("409") {
        Some(RefOr::T(conflict)) => {
            conflict.description = format!("{} {REFUSED}", conflict.description);
        }
        _ => {
            responses.insert("409".into(), RefOr::T(problem(REFUSED).build()));
        }
    }
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
