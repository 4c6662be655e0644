//! Runs the policy for one journal entry over a network: every request it
//! sends carries the entry's key (the only key it can reach), and is
//! logged with the three identities kept apart: the operation key (the
//! intent's span), the attempt id (a fresh one per try of the write) and
//! the transport request id (`x-request-id`, fresh per HTTP request).

use std::time::Duration;

use tracing::Instrument;
use uuid::Uuid;

use crate::classify::{self, LookupAnswer, WriteAnswer};
use crate::journal::JournalEntry;
use crate::network::{Network, Reply};
use crate::policy::{Bounds, Finish, Policy, Start, Step};
use crate::routes::{self, WriteCall};

/// Runs `entry` to its end from `start`.
pub(crate) async fn run<N: Network>(
    network: &N,
    bounds: &Bounds,
    entry: &JournalEntry,
    start: Start,
) -> Result<Finish, serde_json::Error> {
    let call = WriteCall::new(entry.key(), entry.request())?;
    let span = tracing::info_span!(
        "client_intent",
        action = %entry.action(),
        operation_key = %entry.key(),
        journal_entry = %entry.id(),
    );
    Ok(async {
        let mut policy = Policy::new(bounds.clone());
        let mut step = policy.first(start);
        loop {
            step = match step {
                Step::Send { after } => {
                    pause(network, after).await;
                    let answer = attempt(network, entry, &call).await;
                    policy.after_send(answer, network.elapsed())
                }
                Step::Look { after } => {
                    pause(network, after).await;
                    let answer = look_up(network, entry).await;
                    policy.after_lookup(answer, network.elapsed())
                }
                Step::Finish(finish) => {
                    log_finish(&finish);
                    return finish;
                }
            };
        }
    }
    .instrument(span)
    .await)
}

async fn pause<N: Network>(network: &N, after: Duration) {
    if !after.is_zero() {
        tracing::debug!(wait_ms = after.as_millis(), "waiting before the next try");
        network.sleep(after).await;
    }
}

/// One try of the write.
async fn attempt<N: Network>(network: &N, entry: &JournalEntry, call: &WriteCall) -> WriteAnswer {
    let call = call.attempt();
    let span = tracing::info_span!(
        "client_attempt",
        attempt = %Uuid::now_v7(),
        transport_request_id = %call.request_id,
    );
    async {
        let started = network.elapsed();
        let reply = network.send(call).await;
        let answer = classify::write_answer(entry.action(), &reply);
        tracing::info!(
            status = status(&reply),
            class = write_class(&answer),
            latency_ms = network.elapsed().saturating_sub(started).as_millis(),
            "write attempt answered"
        );
        answer
    }
    .instrument(span)
    .await
}

/// One status lookup of the entry's key.
async fn look_up<N: Network>(network: &N, entry: &JournalEntry) -> LookupAnswer {
    let call = routes::operation(entry.action(), entry.key());
    let span = tracing::info_span!(
        "client_lookup",
        transport_request_id = %call.request_id,
    );
    async {
        let reply = network.send(call).await;
        let answer = classify::lookup_answer(&reply);
        tracing::info!(
            status = status(&reply),
            found = lookup_class(&answer),
            "status lookup answered"
        );
        answer
    }
    .instrument(span)
    .await
}

/// The status, or 0 for no answer.
fn status(reply: &Reply) -> u16 {
    match reply {
        Reply::Answer(answer) => answer.status,
        Reply::NoAnswer(_) => 0,
    }
}

fn write_class(answer: &WriteAnswer) -> &'static str {
    match answer {
        WriteAnswer::Done {
            replayed: false, ..
        } => "done",
        WriteAnswer::Done { replayed: true, .. } => "replayed",
        WriteAnswer::Expired { .. } => "expired",
        WriteAnswer::Permanent(_) => "permanent",
        WriteAnswer::Transient { .. } => "transient",
        WriteAnswer::Ambiguous { .. } => "ambiguous",
    }
}

fn lookup_class(answer: &LookupAnswer) -> &'static str {
    match answer {
        LookupAnswer::Recorded(_) => "recorded",
        LookupAnswer::NothingMade { .. } => "nothing_made",
        LookupAnswer::NotRecorded => "not_recorded",
        LookupAnswer::Unsettled { .. } => "unsettled",
        LookupAnswer::Failed(_) => "failed",
        LookupAnswer::Refused(_) => "refused",
    }
}

fn log_finish(finish: &Finish) {
    match finish {
        Finish::Done { replayed, .. } => tracing::info!(replayed, "intent done"),
        Finish::Expired { .. } => tracing::info!("intent done (key past its replay window)"),
        Finish::Refused(problem) => {
            tracing::info!(status = problem.status, problem = %problem.problem_type, "intent refused");
        }
        Finish::Unresolved(last_seen) => {
            tracing::warn!(
                ?last_seen,
                "intent unresolved: it stays pending in the journal"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;
    use time::OffsetDateTime;

    use super::*;
    use crate::intent::Intent;
    use crate::journal::EntryId;
    use crate::network::{Method, Reach};
    use crate::requests::{NewTicket, WriteRequest};
    use crate::testing::{
        Scripted, TICKET, advised, answer, no_answer, problem, replayed, status_body,
    };

    fn bounds() -> Bounds {
        Bounds {
            max_transient_retries: 3,
            max_wait: Duration::from_secs(2),
            retry_delay: Duration::from_millis(100),
            reconcile_within: Duration::from_secs(5),
        }
    }

    fn entry() -> JournalEntry {
        let intent = Intent::new(WriteRequest::CreateTicket {
            ticket: NewTicket::new("ops", "Disk full"),
        });
        JournalEntry::new(EntryId::new(), &intent, OffsetDateTime::now_utc())
    }

    async fn run_on(network: &Scripted, entry: &JournalEntry, start: Start) -> Finish {
        run(network, &bounds(), entry, start)
            .await
            .expect("a request")
    }

    #[tokio::test]
    async fn a_lost_answer_is_looked_up_then_fetched_with_the_same_key() {
        let network = Scripted::new(
            vec![no_answer(Reach::MaybeSent), replayed(201, "true", TICKET)],
            vec![answer(200, &status_body("succeeded"))],
        );
        let entry = entry();
        let finish = run_on(&network, &entry, Start::Send).await;
        assert!(
            matches!(finish, Finish::Done { replayed: true, .. }),
            "{finish:?}"
        );
        let calls = network.calls();
        assert_eq!(calls.len(), 3, "send, look up, fetch");
        assert_eq!(calls[1].method, Method::Get);
        assert_eq!(
            calls[1].path,
            ["v1", "operations", "create_ticket", entry.key().as_str()]
        );
        for write in network.writes() {
            assert_eq!(write.key.as_ref(), Some(entry.key()));
        }
    }

    #[tokio::test]
    async fn in_progress_is_retried_after_retry_after_and_permanent_never() {
        let busy = problem(409, "operation-in-progress");
        let network = Scripted::new(
            vec![
                advised(409, 1, &busy),
                advised(409, 1, &busy),
                answer(201, TICKET),
            ],
            vec![],
        );
        let finish = run_on(&network, &entry(), Start::Send).await;
        assert!(
            matches!(
                finish,
                Finish::Done {
                    replayed: false,
                    ..
                }
            ),
            "{finish:?}"
        );
        assert_eq!(network.waits(), [Duration::from_secs(1); 2]);

        let network = Scripted::new(
            vec![answer(400, &problem(400, "validation-failed"))],
            vec![],
        );
        let finish = run_on(&network, &entry(), Start::Send).await;
        assert!(matches!(finish, Finish::Refused(_)), "{finish:?}");
        assert_eq!(network.calls().len(), 1, "a refusal is never sent again");
    }

    #[tokio::test]
    async fn a_resumed_entry_looks_first_and_sends_once_when_nothing_is_recorded() {
        let network = Scripted::new(
            vec![answer(201, TICKET)],
            vec![answer(404, &problem(404, "operation-not-found"))],
        );
        let finish = run_on(&network, &entry(), Start::Look).await;
        assert!(
            matches!(
                finish,
                Finish::Done {
                    replayed: false,
                    ..
                }
            ),
            "{finish:?}"
        );
        let methods: Vec<Method> = network.calls().iter().map(|c| c.method).collect();
        assert_eq!(methods, [Method::Get, Method::Post]);
    }

    /// Replies a write can get, one of each kind the classifier tells apart.
    fn any_write_reply() -> impl Strategy<Value = crate::network::Reply> {
        proptest::sample::select(vec![
            answer(201, TICKET),
            replayed(201, "true", TICKET),
            replayed(200, "expired", TICKET),
            answer(201, ""),
            advised(202, 2, r#"{"state":"unknown","detail":null}"#),
            advised(409, 1, &problem(409, "operation-in-progress")),
            answer(422, &problem(422, "idempotency-key-reused")),
            answer(500, ""),
            advised(503, 5, &problem(503, "provider-unavailable")),
            no_answer(Reach::NotSent),
            no_answer(Reach::MaybeSent),
            no_answer(Reach::TimedOut),
        ])
    }

    /// Replies a status lookup can get.
    fn any_lookup_reply() -> impl Strategy<Value = crate::network::Reply> {
        proptest::sample::select(vec![
            answer(200, &status_body("succeeded")),
            answer(200, &status_body("unknown")),
            answer(200, &status_body("failed_before_effect")),
            answer(404, &problem(404, "operation-not-found")),
            answer(404, "no route"),
            answer(503, ""),
            answer(401, &problem(401, "unauthorized")),
            no_answer(Reach::MaybeSent),
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the service and the network answer, in any order: every
        /// request names the entry's key and no other, each has its own
        /// transport request id, a send after "nothing recorded" happens at
        /// most once, and the run ends within the policy's bounds.
        #[test]
        fn no_path_sends_a_second_key_or_retries_without_bound(
            writes in proptest::collection::vec(any_write_reply(), 0..12),
            lookups in proptest::collection::vec(any_lookup_reply(), 0..12),
            resumed in any::<bool>(),
        ) {
            let nothing_made: Vec<bool> = lookups
                .iter()
                .map(|reply| matches!(
                    classify::lookup_answer(reply),
                    LookupAnswer::NotRecorded | LookupAnswer::NothingMade { .. }
                ))
                .collect();
            let network = Scripted::new(writes, lookups);
            let entry = entry();
            let start = if resumed { Start::Look } else { Start::Send };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a runtime");
            runtime.block_on(run_on(&network, &entry, start));

            let calls = network.calls();
            let keys: HashSet<String> = calls
                .iter()
                .map(|call| match call.method {
                    Method::Get => call.path.last().cloned().unwrap_or_default(),
                    Method::Post | Method::Patch | Method::Delete => call
                        .key
                        .as_ref()
                        .map(|k| k.as_str().to_owned())
                        .unwrap_or_default(),
                })
                .collect();
            prop_assert_eq!(keys, HashSet::from([entry.key().as_str().to_owned()]));

            let request_ids: HashSet<_> = calls.iter().map(|c| c.request_id).collect();
            prop_assert_eq!(request_ids.len(), calls.len());

            // The lookups in order, each with whether it said nothing was
            // made; a send right after such a lookup is the one blind send.
            let mut looked = 0;
            let mut blind_sends = 0;
            for pair in calls.windows(2) {
                if pair[0].method == Method::Get {
                    let said_nothing = nothing_made.get(looked).copied().unwrap_or(false);
                    looked += 1;
                    if said_nothing && pair[1].method != Method::Get {
                        blind_sends += 1;
                    }
                }
            }
            prop_assert!(blind_sends <= 1, "{} sends after nothing was recorded", blind_sends);

            let bounds = bounds();
            let most_sends = 1 + bounds.max_transient_retries + 1 + (1 + bounds.max_transient_retries);
            prop_assert!(network.writes().len() as u32 <= most_sends);
            prop_assert!(network.waits().iter().all(|w| *w <= bounds.max_wait));
        }
    }
}
