//! The operations that need a person (reconciliation gave up on them, or
//! the provider holds them more than once), each with a settle form, and
//! the `unknown` ones reconciliation is still working on.

use axum::extract::State;
use kitchen::{KitchenError, ListedState, OperationFilter, OperationSummary, PageSize, Tenant};
use maud::{Markup, html};

use crate::Console;
use crate::failed::Failed;
use crate::layout::{Here, page as frame};
use crate::words::{age, tenant_name};

/// `GET /effects`.
pub(crate) async fn page(State(console): State<Console>) -> Result<Markup, Failed> {
    Ok(render(&console).await?)
}

async fn render(console: &Console) -> Result<Markup, KitchenError> {
    let kitchen = &console.kitchen;
    let size = PageSize::parse(PageSize::MAX).unwrap_or_default();
    let needing = OperationFilter {
        needs_operator: true,
        ..OperationFilter::default()
    };
    let needing = kitchen.all_operations(None, &needing, size, None).await?;
    let unknown = OperationFilter {
        state: Some(ListedState::Unknown),
        ..OperationFilter::default()
    };
    let reconciling: Vec<OperationSummary> = kitchen
        .all_operations(None, &unknown, size, None)
        .await?
        .operations
        .into_iter()
        .filter(|op| !op.needs_operator())
        .collect();
    let tenants = kitchen.tenants().await?;
    let now = time::OffsetDateTime::now_utc();
    let body = html! {
        h1 { "Needs a person" }
        p.lead {
            "Writes whose outcome at the provider reconciliation could not learn, or that the \
             provider holds more than once. Check the provider for the external reference, then \
             settle: the service searches the provider once more, refuses a decision it \
             contradicts (unless forced), and keeps who decided what and why."
        }
        @if needing.next_cursor.is_some() {
            div.note.bad {
                "Showing the newest " (needing.operations.len()) "; there are more: "
                span.mono { "tickets ops list --needs-operator" } " pages through them all."
            }
        }
        @if needing.operations.is_empty() {
            div.note.ok { "Nothing needs a person." }
        } @else {
            table.effects {
                colgroup { col width="110"; col width="330"; col width="110"; col width="80"; col; }
                thead { tr { th { "Tenant" } th { "Operation" } th { "State" } th { "Age" } th { "What is known" } } }
                tbody {
                    @for op in &needing.operations {
                        tr {
                            td { (tenant_name(&tenants, op.record.tenant_id)) }
                            td {
                                a.mono href=(lookup_href(&tenants, op)) { (op.record.action) " " (op.record.key) }
                                @if let Some(reference) = &op.external_ref {
                                    br; span.mono { "ref " (reference) }
                                }
                            }
                            td { span.tag.needs { (op.listed_state()) } }
                            td { (age(now - op.record.created_at)) }
                            td {
                                @if let Some(detail) = &op.detail { (detail) }
                                @if !op.duplicates_at_provider.is_empty() {
                                    " Copies at the provider: " span.mono { (op.duplicates_at_provider.join(", ")) } "."
                                }
                            }
                        }
                        tr.form { td colspan="5" { (settle_form(console, &tenant_name(&tenants, op.record.tenant_id), op)) } }
                    }
                }
            }
        }
        h1 { "Unknown, being reconciled" }
        p.lead {
            "Lost answers the service is still searching the provider for: usually nothing to do \
             yet. If you already know the answer, settle it here (reconciliation may settle it \
             first; then the settle is refused and says so)."
        }
        @if reconciling.is_empty() {
            div.note { "None." }
        } @else {
            table.effects {
                colgroup { col width="110"; col width="330"; col width="80"; col; }
                thead { tr { th { "Tenant" } th { "Operation" } th { "Age" } th { "Detail" } } }
                tbody {
                    @for op in &reconciling {
                        tr {
                            td { (tenant_name(&tenants, op.record.tenant_id)) }
                            td { a.mono href=(lookup_href(&tenants, op)) { (op.record.action) " " (op.record.key) } }
                            td { (age(now - op.record.created_at)) }
                            td { (op.detail.as_deref().unwrap_or("")) }
                        }
                        tr.form { td colspan="4" { (settle_form(console, &tenant_name(&tenants, op.record.tenant_id), op)) } }
                    }
                }
            }
        }
    };
    Ok(frame("Needs a person", Here::Effects, body))
}

/// The settle form of one operation: the same choices as `tickets ops
/// settle`.
fn settle_form(console: &Console, tenant: &str, op: &OperationSummary) -> Markup {
    let copies = !op.duplicates_at_provider.is_empty();
    html! {
        form.settle method="post" action="/settle" {
            input type="hidden" name="form_token" value=(console.guard.form_token());
            input type="hidden" name="tenant" value=(tenant);
            input type="hidden" name="action" value=(op.record.action);
            input type="hidden" name="key" value=(op.record.key);
            select name="decision" aria-label="decision" {
                @if copies {
                    option value="keep" { "keep" }
                } @else {
                    option value="made" { "made" }
                    option value="not_made" { "not made" }
                }
            }
            input name="reference" placeholder=(if copies { "the original's id" } else { "id at the provider (made)" }) aria-label="provider reference";
            input name="by" placeholder="your name" aria-label="by" required;
            input name="reason" placeholder="what you saw at the provider" aria-label="reason" required;
            label { input type="checkbox" name="force" value="1"; " force" }
            button type="submit" { "Settle" }
        }
    }
}

fn lookup_href(tenants: &[Tenant], op: &OperationSummary) -> String {
    crate::lookup::href(
        &tenant_name(tenants, op.record.tenant_id),
        op.record.action,
        &op.record.key,
    )
}
