//! `POST /settle`: the settle form, carried out by the kitchen with the
//! same rules as `tickets ops settle`. Every bad field is said at once and
//! nothing is changed; a refusal says what won or what to do.

use axum::Form;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use kitchen::{
    Action, Decision, OperationKey, OperatorName, ProviderReference, SettleAnswer, SettleOrder,
    SettleReason, TenantName,
};
use maud::html;
use serde::Deserialize;

use crate::Console;
use crate::failed::Failed;
use crate::layout::{Here, page};

/// The form's fields, as text: each bad one is reported by name.
#[derive(Debug, Deserialize)]
pub(crate) struct SettleForm {
    form_token: String,
    tenant: String,
    action: String,
    key: String,
    decision: String,
    #[serde(default)]
    reference: String,
    #[serde(default)]
    by: String,
    #[serde(default)]
    reason: String,
    force: Option<String>,
}

/// The value of `parsed`, or its message added to `problems`.
fn field<T>(problems: &mut Vec<String>, parsed: Result<T, kitchen::FieldViolation>) -> Option<T> {
    parsed.map_err(|v| problems.push(v.message)).ok()
}

/// The form read into an order, or every reason it cannot be one.
fn read(form: &SettleForm) -> Result<(TenantName, Action, OperationKey, SettleOrder), Vec<String>> {
    let mut problems = Vec::new();
    let tenant = TenantName::parse(form.tenant.as_str())
        .map_err(|e| problems.push(format!("tenant: {e}")))
        .ok();
    let action = Action::parse(&form.action);
    if action.is_none() {
        problems.push(format!("action: the actions are {}", Action::names()));
    }
    let key = OperationKey::parse(form.key.as_str())
        .map_err(|e| problems.push(format!("key: {e}")))
        .ok();
    let decision = match form.decision.as_str() {
        "made" => field(
            &mut problems,
            ProviderReference::parse_as("reference", &form.reference),
        )
        .map(Decision::Made),
        "keep" => field(
            &mut problems,
            ProviderReference::parse_as("reference", &form.reference),
        )
        .map(Decision::Kept),
        "not_made" => Some(Decision::NotMade),
        _ => {
            problems.push("decision: made, not_made or keep".to_owned());
            None
        }
    };
    let by = field(&mut problems, OperatorName::parse(&form.by));
    let reason = field(&mut problems, SettleReason::parse(&form.reason));
    match (tenant, action, key, decision, by, reason) {
        (Some(tenant), Some(action), Some(key), Some(decision), Some(by), Some(reason))
            if problems.is_empty() =>
        {
            let order = SettleOrder {
                decision,
                by,
                reason,
                force: form.force.is_some(),
            };
            Ok((tenant, action, key, order))
        }
        _ => Err(problems),
    }
}

/// `POST /settle`.
pub(crate) async fn submit(
    State(console): State<Console>,
    Form(form): Form<SettleForm>,
) -> Result<Response, Failed> {
    if !console.guard.is_form_token(&form.form_token) {
        let body = html! {
            div.note.bad {
                "This form did not come from this console (or the server restarted since the page \
                 was loaded): nothing was changed. " a href="/effects" { "Reload the page" } " and try again."
            }
        };
        return Ok((
            StatusCode::FORBIDDEN,
            page("Not settled", Here::Effects, body),
        )
            .into_response());
    }
    let (tenant, action, key, order) = match read(&form) {
        Ok(read) => read,
        Err(problems) => {
            let body = html! {
                div.note.bad {
                    "Not settled, nothing changed:"
                    ul { @for p in &problems { li { (p) } } }
                    a href="/effects" { "Back" }
                }
            };
            return Ok((
                StatusCode::BAD_REQUEST,
                page("Not settled", Here::Effects, body),
            )
                .into_response());
        }
    };
    let Some(tenant) = console.kitchen.tenant_by_name(&tenant).await? else {
        let body = html! {
            div.note.bad { "Not settled, nothing changed: no tenant named " (tenant) ". " a href="/effects" { "Back" } }
        };
        return Ok((
            StatusCode::BAD_REQUEST,
            page("Not settled", Here::Effects, body),
        )
            .into_response());
    };
    let answer = console
        .kitchen
        .settle(tenant.id, action, &key, &order)
        .await?;
    let (status, body) = match answer {
        SettleAnswer::Settled { state, settlement } => (
            StatusCode::OK,
            html! {
                div.note.ok {
                    "Settled " span.mono { (action) " " (key) } ": " (state.as_str()) ", by "
                    (settlement.by) ". The provider search said: " (settlement.provider_check)
                    @if settlement.forced { " (forced)" } ". "
                    @match state {
                        kitchen::OperationState::FailedBeforeEffect => "The caller's retry with the same key sends it.",
                        _ => "The caller's retry with the same key answers this effect.",
                    }
                }
                p { a href="/effects" { "Back to what needs a person" } }
            },
        ),
        SettleAnswer::Refused(why) => (
            StatusCode::CONFLICT,
            html! {
                div.note.bad { "Not settled, nothing changed: " (why) }
                p { a href="/effects" { "Back" } }
            },
        ),
    };
    Ok((status, page("Settle", Here::Effects, body)).into_response())
}
