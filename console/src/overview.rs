//! What callers are doing, on this instance since it started: outcomes per
//! door and action, how often callers retry (replays) and reuse a key for
//! another request (conflicts), with the counts that need a person; and
//! the upkeep behind the promises (the reconciler's backlog, the records
//! the sweep keeps, the provider's last errors); and `/metrics` for
//! scrapers that only reach the admin listener.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::header;
use maud::{Markup, html};
use telemetry::DoorStats;

use crate::Console;
use crate::failed::Failed;
use crate::history::{Totals, sparkline};
use crate::layout::{Here, page as frame};

/// `GET /`.
pub(crate) async fn page(State(console): State<Console>) -> Result<Markup, Failed> {
    let unresolved = console.kitchen.unresolved_effects().await?;
    let duplicates = console.kitchen.provider_duplicates().await?;
    let rows = console.metrics.stats().all();
    let total = |f: fn(&DoorStats) -> u64| rows.iter().map(f).sum::<u64>();
    let answered = total(|s| s.created + s.replayed + s.expired);
    let attempts = total(|s| {
        s.created
            + s.replayed
            + s.expired
            + s.conflict
            + s.invalid
            + s.refused
            + s.in_progress
            + s.error
    });
    let retries = total(|s| s.replayed + s.expired);
    let upkeep = console.kitchen.upkeep().await?;
    let failed = console.kitchen.failed_provider_calls(10).await?;
    let tenants = console.kitchen.tenants().await?;
    let steps = console.history.steps();
    let series = |f: fn(&Totals) -> u64| steps.iter().map(f).collect::<Vec<u64>>();
    let last_sweep = console.metrics.sweep_last_success().map(|at| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        crate::words::age(time::Duration::seconds(
            i64::try_from(now.saturating_sub(at)).unwrap_or(0),
        )) + " ago"
    });
    let body = html! {
        h1 { "Overview" }
        p.lead { "Writes this instance answered since it started, by door and action." }
        div.cards {
            (card("Need a person", unresolved + duplicates, unresolved + duplicates > 0))
            (card("Given up on (unknown)", unresolved, unresolved > 0))
            (card("Copies at the provider", duplicates, duplicates > 0))
            (card("Write attempts", attempts, false))
        }
        @if unresolved + duplicates > 0 {
            div.note.bad { "Some writes need a person: " a href="/effects" { "see them and settle them" } "." }
        }
        table {
            thead { tr { th { "The last hour, every 10 s" } th { "" } th.num { "Last 10 s" } } }
            tbody {
                @for (label, values) in [
                    ("Write attempts", series(|t| t.attempts)),
                    ("Replays (retries of a write that happened)", series(|t| t.replays)),
                    ("Conflicts (a key reused for another request)", series(|t| t.conflicts)),
                    ("Other answers (unknown, not made, errors)", series(|t| t.errors)),
                ] {
                    tr {
                        td { (label) }
                        td { (sparkline(&values)) }
                        td.num { (values.last().copied().unwrap_or(0)) }
                    }
                }
                @for (label, values) in [
                    ("Write latency, median", series(|t| t.p50_us)),
                    ("Write latency, 99th percentile", series(|t| t.p99_us)),
                ] {
                    tr {
                        td { (label) }
                        td { (sparkline(&values)) }
                        td.num { (format!("{:.1} ms", values.last().copied().unwrap_or(0) as f64 / 1000.0)) }
                    }
                }
            }
        }
        table {
            thead { tr {
                th { "Door" } th { "Action" } th.num { "Created" } th.num { "Replayed" }
                th.num { "Expired" } th.num { "Conflict" } th.num { "Invalid" } th.num { "Refused" }
                th.num { "In progress" } th.num { "Other" } th.num { "Retry rate" }
            } }
            tbody {
                @if rows.is_empty() {
                    tr { td colspan="11" { "No writes yet." } }
                }
                @for s in &rows {
                    tr {
                        td { (s.door) } td.mono { (s.action) }
                        td.num { (s.created) } td.num { (s.replayed) } td.num { (s.expired) }
                        td.num { (s.conflict) } td.num { (s.invalid) } td.num { (s.refused) }
                        td.num { (s.in_progress) } td.num { (s.error) }
                        td.num { (percent(s.retry_rate)) }
                    }
                }
            }
        }
        p.lead {
            "Retry rate: replays among answered writes ("
            (percent((answered > 0).then(|| retries as f64 / answered as f64)))
            " overall). A high rate is callers double-firing, which this service absorbs; \
             conflicts are callers reusing a key for another request, a bug on their side. \
             Longer spans and every instance together: scrape /metrics (the Grafana dashboard \
             in ops/grafana)."
        }
        h1 { "Upkeep" }
        div.cards {
            (card("Being reconciled", upkeep.reconciling, false))
            (card("Records kept", upkeep.records, false))
            (card("Of which tombstones", upkeep.tombstones, false))
            div.card {
                div.k { "Last retention sweep" }
                div.n { (last_sweep.unwrap_or_else(|| "not yet".to_owned())) }
            }
        }
        h1 { "The provider's last errors" }
        @if failed.is_empty() {
            div.note { "No call to a provider has gone wrong." }
        } @else {
            table {
                thead { tr { th { "When" } th { "Operation" } th { "Call" } th { "Result" } th { "Detail" } } }
                tbody {
                    @for call in &failed {
                        @let tenant = crate::words::tenant_name(&tenants, call.tenant);
                        tr {
                            td { (kitchen::rfc3339(call.attempt.started_at)) }
                            td { a.mono href=(crate::lookup::href(&tenant, call.action, &call.key)) { (tenant) " " (call.action) " " (call.key) } }
                            td { (call.attempt.kind.as_str()) " (" (call.attempt.trigger.as_str()) ")" }
                            td { span.tag.needs { (call.attempt.result.map_or("-", |r| r.as_str())) } }
                            td { (call.attempt.detail.as_deref().unwrap_or("")) }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Overview", Here::Overview, body))
}

fn card(label: &str, n: u64, bad: bool) -> Markup {
    html! {
        div.card.bad[bad] {
            div.k { (label) }
            div.n { (n) }
        }
    }
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "–".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

/// `GET /metrics`: the same text as the service's own `/metrics`.
pub(crate) async fn metrics(State(console): State<Console>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        console.metrics.prometheus_text(),
    )
        .into_response()
}
