//! `tickets ops list|show|settle`: what an operator does about operations.
//! Lists and shows read the database as it is (nothing is reconciled,
//! nothing is sent); a settle searches the provider once, then records the
//! decision with its audit entry.

use anyhow::bail;
use kitchen::{
    Action, Decision, EffectLedger, FieldViolation, KeyPhase, Kitchen, OperationCursor,
    OperationFilter, OperationKey, OperationState, OperationStatus, OperationSummary, OperatorName,
    PageSize, ProviderReference, SettleAnswer, SettleOrder, SettleReason, Settlement, TenantId,
    rfc3339,
};
use serde_json::json;

use crate::admin::{existing_tenant, table};
use crate::cli::{OperationArgs, OpsListArgs, OpsSettleArgs};

/// Every bad argument at once, as the doors report bad fields.
fn refuse(violations: &[FieldViolation]) -> anyhow::Result<()> {
    if violations.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = violations
        .iter()
        .map(|v| format!("--{}: {}", v.field.replace('_', "-"), v.message))
        .collect();
    bail!("{}", lines.join("\n"))
}

/// `ops list`: a table (or JSON lines) on stdout; where the next page
/// starts on stderr.
pub async fn list(kitchen: &Kitchen, args: &OpsListArgs) -> anyhow::Result<()> {
    let mut violations = Vec::new();
    let mut filter = OperationFilter::parse(
        args.state.as_deref(),
        args.action.as_deref(),
        None,
        &mut violations,
    );
    filter.needs_operator = args.needs_operator;
    if let Some(age) = args.older_than {
        let age = time::Duration::try_from(age)?;
        filter.before = Some(time::OffsetDateTime::now_utc() - age);
    }
    let size = PageSize::parse(args.limit)
        .map_err(|v| violations.push(v))
        .unwrap_or_default();
    let cursor = args.cursor.as_deref().and_then(|raw| {
        OperationCursor::parse(raw)
            .map_err(|v| violations.push(v))
            .ok()
    });
    refuse(&violations)?;
    let tenant = match &args.tenant {
        Some(name) => Some(existing_tenant(kitchen, name).await?),
        None => None,
    };
    let tenants = kitchen.tenants().await?;
    let name_of = |id: TenantId| {
        tenants
            .iter()
            .find(|t| t.id == id)
            .map_or_else(|| id.to_string(), |t| t.name.to_string())
    };
    let page = kitchen
        .all_operations(tenant.map(|t| t.id), &filter, size, cursor.as_ref())
        .await?;
    if args.json {
        for op in &page.operations {
            println!("{}", summary_json(op, &name_of(op.record.tenant_id)));
        }
    } else if page.operations.is_empty() {
        eprintln!("No operations match.");
    } else {
        let rows = page.operations.iter().map(|op| {
            vec![
                name_of(op.record.tenant_id),
                op.record.action.to_string(),
                op.record.key.to_string(),
                op.listed_state().to_string(),
                if op.needs_operator() { "yes" } else { "-" }.to_owned(),
                rfc3339(op.record.created_at),
            ]
        });
        print!(
            "{}",
            table(
                &[
                    "TENANT",
                    "ACTION",
                    "KEY",
                    "STATE",
                    "NEEDS OPERATOR",
                    "CREATED"
                ],
                rows
            )
        );
    }
    if let Some(next) = page.next_cursor {
        eprintln!("More: add --cursor {next}");
    }
    Ok(())
}

fn summary_json(op: &OperationSummary, tenant: &str) -> serde_json::Value {
    json!({
        "tenant": tenant,
        "action": op.record.action.as_str(),
        "key": op.record.key.as_str(),
        "state": op.listed_state().as_str(),
        "needs_operator": op.needs_operator(),
        "created_at": rfc3339(op.record.created_at),
        "ticket_id": op.record.ticket_id.map(|id| id.to_string()),
        "external_reference": op.external_ref.as_ref().map(|r| r.as_str()),
        "detail": op.detail,
        "duplicates_at_provider": op.duplicates_at_provider,
    })
}

/// The tenant, action and key an operator named, each checked.
async fn operation(
    kitchen: &Kitchen,
    args: &OperationArgs,
) -> anyhow::Result<(kitchen::Tenant, Action, OperationKey)> {
    let Some(action) = Action::parse(&args.action) else {
        bail!(
            "no action {:?}; the actions are {}",
            args.action,
            Action::names()
        );
    };
    let key = OperationKey::parse(args.key.as_str()).map_err(|e| anyhow::anyhow!("key: {e}"))?;
    let tenant = existing_tenant(kitchen, &args.tenant).await?;
    Ok((tenant, action, key))
}

/// `ops show`: the operation as recorded, on stdout.
pub async fn show(kitchen: &Kitchen, args: &OperationArgs) -> anyhow::Result<()> {
    let (tenant, action, key) = operation(kitchen, args).await?;
    let Some(status) = kitchen
        .operation_as_recorded(tenant.id, action, &key)
        .await?
    else {
        bail!(
            "nothing is recorded for {action} {key} of tenant {} (never used, or forgotten past \
             its tombstone horizon): a retry with that key is safe",
            tenant.name
        );
    };
    print!("{}", describe(&tenant.name.to_string(), &status));
    Ok(())
}

/// What `ops show` prints.
fn describe(tenant: &str, status: &OperationStatus) -> String {
    let record = &status.record;
    let mut out = format!(
        "Operation {} {} of tenant {tenant}\n",
        record.action, record.key
    );
    let given_up = status.effect.as_ref().is_some_and(|e| e.given_up);
    let state = match (record.state, status.phase, given_up) {
        (OperationState::Unknown, _, true) => {
            "unknown: reconciliation gave up; only a person settles it now".to_owned()
        }
        (OperationState::Succeeded, KeyPhase::Expired, _) => {
            "succeeded, past its replay window (expired)".to_owned()
        }
        (state, _, _) => state.as_str().to_owned(),
    };
    let mut field = |name: &str, value: String| out.push_str(&format!("  {name:<20}{value}\n"));
    field("state", state);
    field("first used", rfc3339(record.created_at));
    field("replayable until", rfc3339(record.replayable_until));
    field("retained until", rfc3339(record.retained_until));
    if let Some(ticket) = record.ticket_id {
        field("ticket", ticket.to_string());
    }
    field("fingerprint", record.fingerprint.to_string());
    if let Some(effect) = &status.effect {
        describe_effect(&mut out, effect);
    }
    out.push_str("What to check\n");
    for line in what_to_check(tenant, status) {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

fn describe_effect(out: &mut String, effect: &EffectLedger) {
    let mut field = |name: &str, value: String| out.push_str(&format!("  {name:<20}{value}\n"));
    field("external reference", effect.external_ref.to_string());
    if let Some(detail) = &effect.state_detail {
        field("detail", detail.clone());
    }
    if let Some(at) = effect.first_dispatched_at {
        field("first sent", rfc3339(at));
    }
    if let Some(at) = effect.last_dispatched_at {
        field("last sent", rfc3339(at));
    }
    if !effect.duplicates_at_provider.is_empty() {
        field(
            "copies at provider",
            effect.duplicates_at_provider.join(", "),
        );
    }
    out.push_str("Calls to the provider\n");
    let rows = effect.attempts.iter().map(|a| {
        vec![
            a.number.to_string(),
            a.kind.as_str().to_owned(),
            a.trigger.as_str().to_owned(),
            rfc3339(a.started_at),
            a.result.map_or_else(
                || "(no answer recorded)".to_owned(),
                |r| r.as_str().to_owned(),
            ),
            a.detail.clone().unwrap_or_default(),
        ]
    });
    for line in table(
        &["#", "KIND", "TRIGGER", "STARTED", "RESULT", "DETAIL"],
        rows,
    )
    .lines()
    {
        out.push_str(&format!("  {line}\n"));
    }
    if !effect.settled_by_hand.is_empty() {
        out.push_str("Settled by hand\n");
        for s in &effect.settled_by_hand {
            out.push_str(&format!("  {}\n", settlement_line(s)));
        }
    }
}

fn settlement_line(s: &Settlement) -> String {
    let decision = match &s.decision {
        Decision::Made(reference) => format!("made as {reference}"),
        Decision::NotMade => "not made".to_owned(),
        Decision::Kept(reference) => format!("copies removed, {reference} kept"),
    };
    format!(
        "{} by {}: {decision} ({}); the provider search said: {}{}",
        rfc3339(s.settled_at),
        s.by,
        s.reason.as_str(),
        s.provider_check,
        if s.forced { "; forced" } else { "" }
    )
}

/// What a person should do about the operation, in a few lines.
fn what_to_check(tenant: &str, status: &OperationStatus) -> Vec<String> {
    let record = &status.record;
    let effect = status.effect.as_ref();
    let settle = format!(
        "tickets ops settle {tenant} {} {}",
        record.action, record.key
    );
    let mut lines = Vec::new();
    match (record.state, effect) {
        (OperationState::Unknown, Some(effect)) => {
            lines.push(format!(
                "Search the provider for external reference {}.",
                effect.external_ref
            ));
            lines.push(format!(
                "If it holds the effect: {settle} --made <its id there> --by <you> --reason <what \
                 you saw>"
            ));
            lines.push(format!(
                "If it does not, and no request sent at {} can still land: {settle} --not-made \
                 --by <you> --reason <what you saw> (the caller's retry with the same key then \
                 sends it).",
                effect
                    .last_dispatched_at
                    .map_or_else(|| "-".to_owned(), rfc3339)
            ));
            if !effect.given_up {
                lines.push(
                    "Reconciliation is still trying (it has not given up): it may settle it \
                     first."
                        .to_owned(),
                );
            }
        }
        (OperationState::InProgress, _) => lines.push(
            "A worker is sending it right now, or one died doing so: look again in a minute; \
             reconciliation takes it over once its lease runs out."
                .to_owned(),
        ),
        (OperationState::FailedBeforeEffect, _) => lines.push(
            "Nothing was made at the provider: the caller's retry with the same key sends it. \
             Nothing to settle."
                .to_owned(),
        ),
        (OperationState::Succeeded, _) | (OperationState::Unknown, None) => {
            lines.push("Nothing to settle: the outcome is known.".to_owned());
        }
    }
    if let Some(effect) = effect.filter(|e| !e.duplicates_at_provider.is_empty()) {
        lines.push(format!(
            "The provider holds this effect more than once ({} besides the original): remove \
             the copies there, then: {settle} --keep <the original's id> --by <you> --reason \
             <what you removed>",
            effect.duplicates_at_provider.join(", ")
        ));
    }
    lines
}

/// `ops settle`: the new state on stdout, what was recorded on stderr;
/// a refusal is an error that says what won or what to do.
pub async fn settle(kitchen: &Kitchen, args: &OpsSettleArgs) -> anyhow::Result<()> {
    let (tenant, action, key) = operation(kitchen, &args.operation).await?;
    let mut violations = Vec::new();
    let reference = |raw: &str, field: &str| ProviderReference::parse_as(field, raw);
    let decision = match (&args.made, &args.keep) {
        (Some(raw), _) => reference(raw, "made")
            .map(Decision::Made)
            .map_err(|v| violations.push(v))
            .ok(),
        (None, Some(raw)) => reference(raw, "keep")
            .map(Decision::Kept)
            .map_err(|v| violations.push(v))
            .ok(),
        (None, None) => Some(Decision::NotMade),
    };
    let by = OperatorName::parse(&args.by)
        .map_err(|v| violations.push(v))
        .ok();
    let reason = SettleReason::parse(&args.reason)
        .map_err(|v| violations.push(v))
        .ok();
    refuse(&violations)?;
    let (Some(decision), Some(by), Some(reason)) = (decision, by, reason) else {
        bail!("the arguments are not valid");
    };
    let order = SettleOrder {
        decision,
        by,
        reason,
        force: args.force,
    };
    match kitchen.settle(tenant.id, action, &key, &order).await? {
        SettleAnswer::Settled { state, settlement } => {
            eprintln!(
                "Settled {action} {key} of tenant {}: {}. A retry with the same key now {}.",
                tenant.name,
                settlement_line(&settlement),
                match state {
                    OperationState::Succeeded => "answers this effect",
                    _ => "sends it",
                }
            );
            println!("{}", state.as_str());
            Ok(())
        }
        SettleAnswer::Refused(why) => bail!("not settled: {why}"),
    }
}
