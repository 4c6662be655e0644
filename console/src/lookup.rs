//! `GET /lookup`: one operation by tenant (name), action and key, as it is
//! recorded (nothing is reconciled or sent): the record, every call to the
//! provider, copies there and settlements by hand.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use kitchen::{Action, OperationKey, OperationStatus, TenantName, rfc3339};
use maud::{Markup, html};
use serde::Deserialize;

use crate::Console;
use crate::failed::Failed;
use crate::layout::{Here, page};

/// The lookup box's fields, as text.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LookupQuery {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    key: String,
}

/// The address of the lookup of one operation.
pub(crate) fn href(tenant: &str, action: Action, key: &OperationKey) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    format!(
        "/lookup?tenant={}&action={}&key={}",
        enc(tenant),
        enc(action.as_str()),
        enc(key.as_str())
    )
}

fn form(query: &LookupQuery) -> Markup {
    html! {
        form.lookup method="get" action="/lookup" {
            input name="tenant" placeholder="tenant, e.g. acme" value=(query.tenant) aria-label="tenant";
            input name="action" placeholder="action, e.g. create_ticket" value=(query.action) aria-label="action";
            input name="key" placeholder="operation key" value=(query.key) size="44" aria-label="key";
            button type="submit" { "Look up" }
        }
    }
}

/// `GET /lookup`.
pub(crate) async fn page_of(
    State(console): State<Console>,
    Query(query): Query<LookupQuery>,
) -> Result<Response, Failed> {
    let title = "Look up a key";
    if query.tenant.is_empty() && query.action.is_empty() && query.key.is_empty() {
        let body = html! { h1 { (title) } (form(&query)) };
        return Ok(page(title, Here::Lookup, body).into_response());
    }
    let mut problems = Vec::new();
    let name = TenantName::parse(query.tenant.as_str())
        .map_err(|e| problems.push(format!("tenant: {e}")))
        .ok();
    let action = Action::parse(&query.action);
    if action.is_none() {
        problems.push(format!("action: the actions are {}", Action::names()));
    }
    let key = OperationKey::parse(query.key.as_str())
        .map_err(|e| problems.push(format!("key: {e}")))
        .ok();
    let tenant = match name {
        Some(name) => match console.kitchen.tenant_by_name(&name).await? {
            Some(tenant) => Some(tenant),
            None => {
                problems.push(format!("tenant: no tenant named {name}"));
                None
            }
        },
        None => None,
    };
    let (Some(tenant), Some(action), Some(key)) = (tenant, action, key) else {
        let body = html! {
            h1 { (title) } (form(&query))
            div.note.bad { ul { @for p in &problems { li { (p) } } } }
        };
        return Ok((StatusCode::BAD_REQUEST, page(title, Here::Lookup, body)).into_response());
    };
    let status = console
        .kitchen
        .operation_as_recorded(tenant.id, action, &key)
        .await?;
    let body = html! {
        h1 { (title) } (form(&query))
        @match &status {
            None => div.note {
                "Nothing is recorded for " span.mono { (action) " " (key) } " of tenant "
                (tenant.name) " (never used, or forgotten past its tombstone horizon): a retry with \
                 that key is safe."
            },
            Some(status) => (describe(status)),
        }
    };
    let code = if status.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    Ok((code, page(title, Here::Lookup, body)).into_response())
}

fn describe(status: &OperationStatus) -> Markup {
    let record = &status.record;
    html! {
        dl {
            dt { "State" } dd { span class=(format!("tag {}", record.state.as_str())) { (record.state.as_str()) } " (" (status.phase.as_str()) ")" }
            dt { "First used" } dd { (rfc3339(record.created_at)) }
            dt { "Replayable until" } dd { (rfc3339(record.replayable_until)) }
            dt { "Retained until" } dd { (rfc3339(record.retained_until)) }
            @if let Some(ticket) = record.ticket_id { dt { "Ticket" } dd.mono { (ticket) } }
            dt { "Fingerprint" } dd.mono { (record.fingerprint) }
            @if let Some(effect) = &status.effect {
                dt { "External reference" } dd.mono { (effect.external_ref) }
                @if let Some(detail) = &effect.state_detail { dt { "Detail" } dd { (detail) } }
                @if effect.given_up { dt { "Reconciliation" } dd { "gave up: only a person settles it now (" a href="/effects" { "settle it" } ")" } }
                @if !effect.duplicates_at_provider.is_empty() {
                    dt { "Copies at the provider" } dd.mono { (effect.duplicates_at_provider.join(", ")) }
                }
            }
        }
        @if let Some(effect) = &status.effect {
            h1 { "Calls to the provider" }
            table {
                thead { tr { th { "#" } th { "Kind" } th { "Trigger" } th { "Started" } th { "Result" } th { "Detail" } } }
                tbody {
                    @for a in &effect.attempts {
                        tr {
                            td.num { (a.number) } td { (a.kind.as_str()) } td { (a.trigger.as_str()) }
                            td { (rfc3339(a.started_at)) }
                            td { (a.result.map_or("(no answer recorded)", |r| r.as_str())) }
                            td { (a.detail.as_deref().unwrap_or("")) }
                        }
                    }
                }
            }
            @if !effect.settled_by_hand.is_empty() {
                h1 { "Settled by hand" }
                table {
                    thead { tr { th { "When" } th { "By" } th { "Decision" } th { "Why" } th { "The provider search said" } } }
                    tbody {
                        @for s in &effect.settled_by_hand {
                            tr {
                                td { (rfc3339(s.settled_at)) } td { (s.by) }
                                td { (s.decision.as_str()) @if let Some(r) = s.decision.reference() { " " span.mono { (r) } } @if s.forced { " (forced)" } }
                                td { (s.reason.as_str()) } td { (s.provider_check) }
                            }
                        }
                    }
                }
            }
        }
    }
}
