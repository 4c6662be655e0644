//! The policies every write action keeps, each written once for any
//! action ([`Policy`]): create_ticket runs them as checks 2, 3, 4, 5, 7 and
//! 8, the lifecycle actions as checks 18 to 23; and the checks that need a
//! second tenant (6) or a second instance (9). `checks.rs` makes the ground
//! each stands on and judges what it reads back.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use futures::future::join_all;
use kitchen::Action;

use super::doors::{Answer, Door};
use super::report::CheckResult;
use super::{CRASH_AFTER_COMMIT, CRASH_AFTER_DISPATCH};
use crate::fault_proxy::FaultProxy;

use crate::checks::{CheckId, Checks, Policy, RACERS, Seen, short};

impl Checks<'_> {
    /// `policy` for `action`, through each door (for cross-door: first
    /// through it, then retried through the other).
    pub(super) async fn policy(&self, policy: Policy, action: Action) -> Vec<CheckResult> {
        let mut results = Vec::new();
        for door in Door::BOTH {
            results.push(match policy {
                Policy::RetrySameKey => self.retry_same_key(action, door).await,
                Policy::ChangedRequest => self.changed_request(action, door).await,
                Policy::Concurrent => self.concurrent(action, door).await,
                Policy::ResponseLost => self.response_lost(action, door).await,
                Policy::CrossDoor => self.cross_door(action, door, door.other()).await,
                Policy::CrashAfterCommit => self.crash_after_commit(action, door).await,
            });
        }
        results
    }

    /// Check 1: Without a stable key, a retry duplicates; without any key, the
    /// write is refused.
    pub(super) async fn control(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("control");
        let first = self.create(door, Some(&self.key()), &ticket).await;
        let retry = self.create(door, Some(&self.key()), &ticket).await;
        let keyless = self.create(door, None, &ticket).await;
        let refused = match (door, &keyless) {
            (Door::Rest, Answer::Refused(status)) => status == "400 idempotency-key-missing",
            (Door::Mcp, Answer::Refused(status)) => status == "invalid",
            _ => false,
        };
        let tickets = self.count(&ticket).await;
        let duplicated = tickets.as_ref().is_ok_and(|t| t.len() == 2);
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Created { .. })
            && refused
            && duplicated;
        let detail = format!(
            "expected failure mode: a retry with a fresh key made a second ticket ({}); a keyless write was refused ({keyless:?})",
            if duplicated { "yes" } else { "no" }
        );
        // The duplicate is the point: judge against the two tickets it makes.
        let seen = tickets.map(|effects| Seen {
            effects,
            intended: 2,
        });
        let mut result = Self::judge(
            CheckId::create(1, format!("control [{door}]")),
            seen,
            ok,
            detail,
        );
        result.intended = 0; // not an intended effect: kept out of the totals
        result
    }

    /// Checks 2 and 18: The same key and request twice: one effect,
    /// identical answer.
    async fn retry_same_key(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::RetrySameKey.check(action, &door.to_string());
        let intent = match self.intent(action, "retry").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let first = self.write(door, &key, &intent.write).await;
        let retry = self.write(door, &key, &intent.write).await;
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Replayed { .. })
            && first.id() == retry.id()
            && first.body() == retry.body();
        let detail = format!("first: {}, retry: {}", short(&first), short(&retry));
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 3 and 19: The same key with another request: a conflict,
    /// still one effect.
    async fn changed_request(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::ChangedRequest.check(action, &door.to_string());
        let intent = match self.intent(action, "changed").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let first = self.write(door, &key, &intent.write).await;
        let second = self.write(door, &key, &intent.changed).await;
        let ok = matches!(first, Answer::Created { .. }) && second == Answer::Conflict;
        let detail = format!(
            "first: {}, changed request: {}",
            short(&first),
            short(&second)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 4 and 20: 32 identical calls at once: one effect.
    async fn concurrent(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::Concurrent.check(action, &door.to_string());
        let intent = match self.intent(action, "concurrent").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let answers = join_all((0..RACERS).map(|_| self.write(door, &key, &intent.write))).await;
        let (ok, detail) = judge_race(&answers);
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 5 and 21: The answer is lost after the commit; the retry
    /// returns the original.
    async fn response_lost(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::ResponseLost.check(action, &door.to_string());
        let proxy = match self.proxy(&self.target().base_url).await {
            Ok(p) => p,
            Err(e) => return Self::skip(check, &e),
        };
        let intent = match self.intent(action, "lost").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let lost = self
            .write_at(&proxy.base_url(), door, &key, &intent.write)
            .await;
        let retry = self.write(door, &self.retry_key(&key), &intent.write).await;
        let ok = matches!(lost, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let detail = format!(
            "through the fault proxy: {}, retry: {}",
            short(&lost),
            short(&retry)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Check 6: The same key under another tenant: its own ticket, nothing leaked.
    pub(super) async fn other_tenant(&self, door: Door) -> CheckResult {
        let check = CheckId::create(6, format!("other-tenant [{door}]"));
        let Some(other) = &self.target().other_token else {
            return Self::skip(check, "needs a second tenant's token (--other-token)");
        };
        let ticket = self.ticket("tenant");
        let key = self.key();
        let mine = self.create(door, Some(&key), &ticket).await;
        let theirs = self
            .caller
            .create(&self.target().base_url, door, other, Some(&key), &ticket)
            .await;
        let theirs_count = self
            .caller
            .count(&self.target().base_url, other, &ticket.project_id)
            .await
            .map(|t| t.len())
            .unwrap_or(usize::MAX);
        let ok = matches!(mine, Answer::Created { .. })
            && matches!(theirs, Answer::Created { .. })
            && mine.id() != theirs.id()
            && theirs_count == 1;
        let detail = format!(
            "this tenant: {}, other tenant with the same key: {} (it sees {theirs_count} ticket(s))",
            short(&mine),
            short(&theirs)
        );
        let seen = self.count(&ticket).await.map(|effects| Seen {
            effects,
            intended: 1,
        });
        Self::judge(check, seen, ok, detail)
    }

    /// Checks 7 and 22: Done through one door, retried through the other:
    /// replayed.
    async fn cross_door(&self, action: Action, first_door: Door, retry_door: Door) -> CheckResult {
        let check = Policy::CrossDoor.check(action, &format!("{first_door}->{retry_door}"));
        let intent = match self.intent(action, "cross").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let first = self.write(first_door, &key, &intent.write).await;
        let retry = self.write(retry_door, &key, &intent.write).await;
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Replayed { .. })
            && first.id() == retry.id();
        let detail = format!(
            "{first_door}: {}, then {retry_door}: {}",
            short(&first),
            short(&retry)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 8 and 23: The server dies right after the commit; after a
    /// restart the retry returns the original.
    async fn crash_after_commit(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::CrashAfterCommit.check(action, &door.to_string());
        let Some(restart) = &self.target().restart else {
            return Self::skip(
                check,
                "needs a way to restart the server (--restart-cmd) and a fault-injection build",
            );
        };
        let intent = match self.intent(action, "crash").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        // With a ticket provider there is no local commit: the crash comes
        // right after the dispatch, before its answer is recorded.
        let prefix = if self.target().provider.is_some() {
            CRASH_AFTER_DISPATCH
        } else {
            CRASH_AFTER_COMMIT
        };
        let key = format!("{prefix}{}", self.key());
        let crashed = self.write(door, &key, &intent.write).await;
        if let Err(e) = restart.restart().await {
            return Self::broken(check, format!("restart failed: {e}"));
        }
        if !self.wait_ready().await {
            return Self::broken(check, "the server did not come back".into());
        }
        let retry = self.write(door, &self.retry_key(&key), &intent.write).await;
        let ok = matches!(crashed, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let detail = format!(
            "crashing call: {}, retry after restart: {}",
            short(&crashed),
            short(&retry)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Check 9: Two instances on one database: lost on A, retried on B; and 32
    /// identical calls split over A and B.
    pub(super) async fn two_instances(&self) -> CheckResult {
        let check = CheckId::create(9, "two-instances [rest+mcp]".to_owned());
        let Some(b) = &self.target().second_base_url else {
            return Self::skip(
                check,
                "needs a second instance on the same database (--second-url)",
            );
        };
        let a = &self.target().base_url;
        let proxy = match self.proxy(a).await {
            Ok(p) => p,
            Err(e) => return Self::skip(check, &e),
        };
        let lost_ticket = self.ticket("instances-lost");
        let key = self.key();
        let token = &self.target().token;
        let lost = self
            .caller
            .create(
                &proxy.base_url(),
                Door::Rest,
                token,
                Some(&key),
                &lost_ticket,
            )
            .await;
        let retry = self
            .caller
            .create(
                b,
                Door::Mcp,
                token,
                Some(&self.retry_key(&key)),
                &lost_ticket,
            )
            .await;
        let first_ok = matches!(lost, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let first_seen = self.count(&lost_ticket).await;

        let race_ticket = self.ticket("instances-race");
        let race_key = self.key();
        let calls = (0..RACERS).map(|i| {
            let (base, door) = match i % 4 {
                0 => (a.as_str(), Door::Rest),
                1 => (b.as_str(), Door::Rest),
                2 => (a.as_str(), Door::Mcp),
                _ => (b.as_str(), Door::Mcp),
            };
            self.caller
                .create(base, door, token, Some(&race_key), &race_ticket)
        });
        let answers = join_all(calls).await;
        let (race_ok, race_detail) = judge_race(&answers);
        let race_seen = self.count(&race_ticket).await;

        let seen = match (first_seen, race_seen) {
            (Ok(mut x), Ok(y)) => {
                x.extend(y);
                Ok(Seen {
                    effects: x,
                    intended: 2,
                })
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        let detail = format!(
            "lost on A: {}, retried on B: {}; {RACERS} calls split over A and B: {race_detail}",
            short(&lost),
            short(&retry)
        );
        Self::judge(check, seen, first_ok && race_ok, detail)
    }

    async fn proxy(&self, base: &str) -> Result<FaultProxy, String> {
        let upstream = upstream_addr(base).await?;
        FaultProxy::losing_responses(upstream)
            .await
            .map_err(|e| format!("cannot start the fault proxy: {e}"))
    }
}

/// Every racer must get the one effect (or be told to wait), none an error.
fn judge_race(answers: &[Answer]) -> (bool, String) {
    let ids: BTreeSet<_> = answers.iter().filter_map(Answer::id).collect();
    let created = answers
        .iter()
        .filter(|a| matches!(a, Answer::Created { .. }))
        .count();
    let waiting = answers.iter().filter(|a| **a == Answer::InProgress).count();
    let other: Vec<_> = answers
        .iter()
        .filter(|a| {
            !matches!(
                a,
                Answer::Created { .. } | Answer::Replayed { .. } | Answer::InProgress
            )
        })
        .map(short)
        .collect();
    let ok = ids.len() == 1 && created == 1 && other.is_empty();
    let detail = format!(
        "{} created, {} replayed, {waiting} told to retry later, {} other {other:?}; {} distinct id(s) answered",
        created,
        answers.len() - created - waiting - other.len(),
        other.len(),
        ids.len()
    );
    (ok, detail)
}

async fn upstream_addr(base: &str) -> Result<SocketAddr, String> {
    let url = reqwest::Url::parse(base).map_err(|e| format!("bad base URL {base}: {e}"))?;
    let host = url
        .host_str()
        .ok_or_else(|| format!("no host in {base}"))?
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to nothing"))
}
