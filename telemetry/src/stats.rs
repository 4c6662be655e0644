//! Per-tenant outcome counts and retry rates, for `GET /v1/stats`.
//!
//! Counted in this process since it started: with several instances, each
//! answers for itself (sum them, or query `/metrics` across instances).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kitchen::TenantId;
use serde::Serialize;

use crate::door::Door;

/// Outcome counts of one tenant on one door and action.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DoorStats {
    /// `rest` or `mcp`.
    pub door: &'static str,
    /// The action, e.g. `create_ticket`.
    pub action: &'static str,
    /// New effects.
    pub created: u64,
    /// Retries answered with the original.
    pub replayed: u64,
    /// Retries after the key's replay window, answered with the resource
    /// as it is now (nothing new was made).
    pub expired: u64,
    /// Keys reused for another request.
    pub conflict: u64,
    /// Refused input.
    pub invalid: u64,
    /// Valid writes the ticket did not allow (no such ticket, another
    /// version, a forbidden move).
    pub refused: u64,
    /// Told to retry later.
    pub in_progress: u64,
    /// New keys whose content matched a recent write under another key:
    /// likely retries under a fresh key (made, with a warning, under the
    /// guard's `warn`; refused under `confirm`).
    pub possible_duplicate: u64,
    /// Infrastructure failures.
    pub error: u64,
    /// (replayed + expired) / (created + possible_duplicate + replayed +
    /// expired): the share of answers to a key, first or again, that were
    /// retries (a likely duplicate is a key's first answer). `null` before
    /// any.
    pub retry_rate: Option<f64>,
}

/// What the counts are kept by: tenant, door, action.
type Scope = (TenantId, Door, &'static str);

/// Counts per (tenant, door, action). Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct TenantStats {
    counts: Arc<Mutex<BTreeMap<Scope, DoorStats>>>,
}

impl TenantStats {
    pub(crate) fn count(&self, tenant: TenantId, door: Door, action: &'static str, outcome: &str) {
        // A short critical section per answer: no await, no I/O inside.
        let Ok(mut counts) = self.counts.lock() else {
            return;
        };
        let s = counts
            .entry((tenant, door, action))
            .or_insert_with(|| DoorStats {
                door: door.as_str(),
                action,
                ..DoorStats::default()
            });
        match outcome {
            "created" => s.created += 1,
            "replayed" => s.replayed += 1,
            "expired" => s.expired += 1,
            "conflict" => s.conflict += 1,
            "invalid" => s.invalid += 1,
            "refused" => s.refused += 1,
            "in_progress" => s.in_progress += 1,
            "possible_duplicate" => s.possible_duplicate += 1,
            _ => s.error += 1,
        }
        let retries = s.replayed + s.expired;
        let answered = s.created + s.possible_duplicate + retries;
        s.retry_rate = (answered > 0).then(|| retries as f64 / answered as f64);
    }

    /// Every tenant's counts together, one entry per door and action used
    /// (for the operators' console).
    pub fn all(&self) -> Vec<DoorStats> {
        let Ok(counts) = self.counts.lock() else {
            return Vec::new();
        };
        let mut summed: BTreeMap<(Door, &'static str), DoorStats> = BTreeMap::new();
        for ((_, door, action), s) in counts.iter() {
            let t = summed.entry((*door, action)).or_insert_with(|| DoorStats {
                door: s.door,
                action,
                ..DoorStats::default()
            });
            t.created += s.created;
            t.replayed += s.replayed;
            t.expired += s.expired;
            t.conflict += s.conflict;
            t.invalid += s.invalid;
            t.refused += s.refused;
            t.in_progress += s.in_progress;
            t.possible_duplicate += s.possible_duplicate;
            t.error += s.error;
        }
        summed
            .into_values()
            .map(|mut t| {
                let retries = t.replayed + t.expired;
                let answered = t.created + t.possible_duplicate + retries;
                t.retry_rate = (answered > 0).then(|| retries as f64 / answered as f64);
                t
            })
            .collect()
    }

    /// The tenant's counts, one entry per door and action it used.
    pub fn of(&self, tenant: TenantId) -> Vec<DoorStats> {
        self.counts
            .lock()
            .map(|counts| {
                counts
                    .iter()
                    .filter(|((t, _, _), _)| *t == tenant)
                    .map(|(_, s)| s.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}
