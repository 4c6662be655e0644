//! The nine checks. Each makes up its own project, so the count it reads
//! back from the server holds exactly its own tickets.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::future::join_all;

use super::doors::{Answer, Caller, Door, Ticket};
use super::report::{CheckResult, Verdict};
use super::{CRASH_AFTER_COMMIT, CRASH_AFTER_DISPATCH, Options, Target};
use crate::fault_proxy::FaultProxy;

const RACERS: usize = 32;

pub(crate) struct Checks<'a> {
    target: &'a Target,
    options: Options,
    caller: Caller,
    run: String,
    next: AtomicU32,
}

/// What a check saw, before it is judged.
pub(crate) struct Seen {
    pub(crate) tickets: Vec<String>,
    pub(crate) intended: usize,
}

impl<'a> Checks<'a> {
    pub(crate) fn new(target: &'a Target, options: Options, round: u32) -> Self {
        // The random tail of a v7 UUID: distinct per run, short enough for a slug.
        let run = format!(
            "{}{round}",
            &uuid::Uuid::now_v7().simple().to_string()[24..]
        );
        Self {
            target,
            options,
            caller: Caller::default(),
            run,
            next: AtomicU32::new(0),
        }
    }

    /// A ticket in a project of its own.
    pub(crate) fn target(&self) -> &Target {
        self.target
    }

    /// Waits for the server (instance A) to answer `/readyz` again.
    pub(crate) async fn wait_ready(&self) -> bool {
        self.caller.wait_ready(&self.target.base_url, 100).await
    }

    pub(crate) fn ticket(&self, title: &str) -> Ticket {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Ticket {
            project_id: format!("df-{}-{n}", self.run),
            title: format!("double-fire: {title}"),
        }
    }

    pub(crate) fn key(&self) -> String {
        uuid::Uuid::now_v7().to_string()
    }

    /// The key a retry sends: the same, unless sabotaging.
    pub(crate) fn retry_key(&self, key: &str) -> String {
        if self.options.fresh_key_retries {
            self.key()
        } else {
            key.to_owned()
        }
    }

    pub(crate) async fn create(&self, door: Door, key: Option<&str>, ticket: &Ticket) -> Answer {
        self.caller
            .create(&self.target.base_url, door, &self.target.token, key, ticket)
            .await
    }

    pub(crate) async fn count(&self, ticket: &Ticket) -> Result<Vec<String>, String> {
        self.caller
            .count(
                &self.target.base_url,
                &self.target.token,
                &ticket.project_id,
            )
            .await
            .map_err(|e| format!("cannot read the server's tickets: {e}"))
    }

    /// Judges a check: it passes when `ok` holds and exactly `intended`
    /// tickets exist.
    pub(crate) fn judge(
        number: u8,
        name: String,
        seen: Result<Seen, String>,
        ok: bool,
        detail: String,
    ) -> CheckResult {
        match seen {
            Err(e) => CheckResult {
                number,
                name,
                verdict: Verdict::Fail,
                tickets: Vec::new(),
                intended: 0,
                detail: e,
            },
            Ok(seen) => {
                let exact = seen.tickets.len() == seen.intended;
                let verdict = if ok && exact {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                let detail = if exact {
                    detail
                } else {
                    format!(
                        "{detail}; expected {} ticket(s), found {}",
                        seen.intended,
                        seen.tickets.len()
                    )
                };
                CheckResult {
                    number,
                    name,
                    verdict,
                    tickets: seen.tickets,
                    intended: seen.intended,
                    detail,
                }
            }
        }
    }

    pub(crate) fn skip(number: u8, name: String, why: &str) -> CheckResult {
        CheckResult {
            number,
            name,
            verdict: Verdict::Skip,
            tickets: Vec::new(),
            intended: 0,
            detail: why.to_owned(),
        }
    }

    /// Check 1: Without a stable key, a retry duplicates; without any key, the
    /// write is refused.
    pub(super) async fn control(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("control");
        let first = self.create(door, Some(&self.key()), &ticket).await;
        let retry = self.create(door, Some(&self.key()), &ticket).await;
        let keyless = self.create(door, None, &ticket).await;
        let refused = match (door, &keyless) {
            (Door::Rest, Answer::Refused(status)) => status == "400",
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
        let seen = tickets.map(|tickets| Seen {
            tickets,
            intended: 2,
        });
        let mut result = Self::judge(1, format!("control [{door}]"), seen, ok, detail);
        result.intended = 0; // not an intended effect: kept out of the totals
        result
    }

    /// Check 2: The same key and request twice: one ticket, identical result.
    pub(super) async fn retry_same_key(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("retry");
        let key = self.key();
        let first = self.create(door, Some(&key), &ticket).await;
        let retry = self.create(door, Some(&key), &ticket).await;
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Replayed { .. })
            && first.ticket() == retry.ticket()
            && first.body() == retry.body();
        let detail = format!("first: {}, retry: {}", short(&first), short(&retry));
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(2, format!("retry-same-key [{door}]"), seen, ok, detail)
    }

    /// Check 3: The same key with another request: a conflict, still one ticket.
    pub(super) async fn changed_request(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("changed");
        let key = self.key();
        let first = self.create(door, Some(&key), &ticket).await;
        let changed = Ticket {
            title: format!("{} (changed)", ticket.title),
            ..ticket.clone()
        };
        let second = self.create(door, Some(&key), &changed).await;
        let ok = matches!(first, Answer::Created { .. }) && second == Answer::Conflict;
        let detail = format!(
            "first: {}, changed request: {}",
            short(&first),
            short(&second)
        );
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(
            3,
            format!("same-key-changed-request [{door}]"),
            seen,
            ok,
            detail,
        )
    }

    /// Check 4: 32 identical calls at once: one ticket.
    pub(super) async fn concurrent(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("concurrent");
        let key = self.key();
        let answers = join_all((0..RACERS).map(|_| self.create(door, Some(&key), &ticket))).await;
        let (ok, detail) = judge_race(&answers);
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(4, format!("concurrent-{RACERS} [{door}]"), seen, ok, detail)
    }

    /// Check 5: The answer is lost after the commit; the retry returns the original.
    pub(super) async fn response_lost(&self, door: Door) -> CheckResult {
        let name = format!("response-lost [{door}]");
        let proxy = match self.proxy(&self.target.base_url).await {
            Ok(p) => p,
            Err(e) => return Self::skip(5, name, &e),
        };
        let ticket = self.ticket("lost");
        let key = self.key();
        let lost = self
            .caller
            .create(
                &proxy.base_url(),
                door,
                &self.target.token,
                Some(&key),
                &ticket,
            )
            .await;
        let retry = self
            .create(door, Some(&self.retry_key(&key)), &ticket)
            .await;
        let ok = matches!(lost, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let detail = format!(
            "through the fault proxy: {}, retry: {}",
            short(&lost),
            short(&retry)
        );
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(5, name, seen, ok, detail)
    }

    /// Check 6: The same key under another tenant: its own ticket, nothing leaked.
    pub(super) async fn other_tenant(&self, door: Door) -> CheckResult {
        let name = format!("other-tenant [{door}]");
        let Some(other) = &self.target.other_token else {
            return Self::skip(6, name, "needs a second tenant's token (--other-token)");
        };
        let ticket = self.ticket("tenant");
        let key = self.key();
        let mine = self.create(door, Some(&key), &ticket).await;
        let theirs = self
            .caller
            .create(&self.target.base_url, door, other, Some(&key), &ticket)
            .await;
        let theirs_count = self
            .caller
            .count(&self.target.base_url, other, &ticket.project_id)
            .await
            .map(|t| t.len())
            .unwrap_or(usize::MAX);
        let ok = matches!(mine, Answer::Created { .. })
            && matches!(theirs, Answer::Created { .. })
            && mine.ticket() != theirs.ticket()
            && theirs_count == 1;
        let detail = format!(
            "this tenant: {}, other tenant with the same key: {} (it sees {theirs_count} ticket(s))",
            short(&mine),
            short(&theirs)
        );
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(6, name, seen, ok, detail)
    }

    /// Check 7: Created through one door, retried through the other: replayed.
    pub(super) async fn cross_door(&self, first_door: Door, retry_door: Door) -> CheckResult {
        let ticket = self.ticket("cross");
        let key = self.key();
        let first = self.create(first_door, Some(&key), &ticket).await;
        let retry = self.create(retry_door, Some(&key), &ticket).await;
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Replayed { .. })
            && first.ticket() == retry.ticket();
        let detail = format!(
            "{first_door}: {}, then {retry_door}: {}",
            short(&first),
            short(&retry)
        );
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(
            7,
            format!("cross-door [{first_door}->{retry_door}]"),
            seen,
            ok,
            detail,
        )
    }

    /// Check 8: The server dies right after the commit; after a restart the retry
    /// returns the original.
    pub(super) async fn crash_after_commit(&self, door: Door) -> CheckResult {
        let name = format!("crash-after-commit [{door}]");
        let Some(restart) = &self.target.restart else {
            return Self::skip(
                8,
                name,
                "needs a way to restart the server (--restart-cmd) and a fault-injection build",
            );
        };
        let ticket = self.ticket("crash");
        // With a ticket provider there is no local commit: the crash comes
        // right after the dispatch, before its answer is recorded.
        let prefix = if self.target.provider.is_some() {
            CRASH_AFTER_DISPATCH
        } else {
            CRASH_AFTER_COMMIT
        };
        let key = format!("{prefix}{}", self.key());
        let crashed = self.create(door, Some(&key), &ticket).await;
        if let Err(e) = restart.restart().await {
            return Self::judge(
                8,
                name,
                Err(format!("restart failed: {e}")),
                false,
                String::new(),
            );
        }
        if !self.caller.wait_ready(&self.target.base_url, 100).await {
            return Self::judge(
                8,
                name,
                Err("the server did not come back".into()),
                false,
                String::new(),
            );
        }
        let retry_key = if self.options.fresh_key_retries {
            self.key()
        } else {
            key
        };
        let retry = self.create(door, Some(&retry_key), &ticket).await;
        let ok = matches!(crashed, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let detail = format!(
            "crashing call: {}, retry after restart: {}",
            short(&crashed),
            short(&retry)
        );
        let seen = self.count(&ticket).await.map(|tickets| Seen {
            tickets,
            intended: 1,
        });
        Self::judge(8, name, seen, ok, detail)
    }

    /// Check 9: Two instances on one database: lost on A, retried on B; and 32
    /// identical calls split over A and B.
    pub(super) async fn two_instances(&self) -> CheckResult {
        let name = "two-instances [rest+mcp]".to_owned();
        let Some(b) = &self.target.second_base_url else {
            return Self::skip(
                9,
                name,
                "needs a second instance on the same database (--second-url)",
            );
        };
        let a = &self.target.base_url;
        let proxy = match self.proxy(a).await {
            Ok(p) => p,
            Err(e) => return Self::skip(9, name, &e),
        };
        let lost_ticket = self.ticket("instances-lost");
        let key = self.key();
        let token = &self.target.token;
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
                    tickets: x,
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
        Self::judge(9, name, seen, first_ok && race_ok, detail)
    }

    async fn proxy(&self, base: &str) -> Result<FaultProxy, String> {
        let upstream = upstream_addr(base).await?;
        FaultProxy::losing_responses(upstream)
            .await
            .map_err(|e| format!("cannot start the fault proxy: {e}"))
    }
}

/// Every racer must get the one ticket (or be told to wait), none an error.
fn judge_race(answers: &[Answer]) -> (bool, String) {
    let ids: BTreeSet<_> = answers.iter().filter_map(Answer::ticket).collect();
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
        "{} created, {} replayed, {waiting} told to retry later, {} other {other:?}; {} distinct ticket id(s) answered",
        created,
        answers.len() - created - waiting - other.len(),
        other.len(),
        ids.len()
    );
    (ok, detail)
}

pub(crate) fn short(answer: &Answer) -> String {
    match answer {
        Answer::Created { ticket, .. } => format!("created {ticket}"),
        Answer::Replayed { ticket, .. } => format!("replayed {ticket}"),
        Answer::Conflict => "conflict".into(),
        Answer::InProgress => "in progress".into(),
        Answer::Unknown => "unknown".into(),
        Answer::NotCreated(why) => format!("not created ({why})"),
        Answer::Refused(why) => format!("refused ({why})"),
        Answer::Lost(_) => "no answer".into(),
    }
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
