//! The N clients: each creates its own keys one after another, and
//! retries every unanswered attempt with the same key and the same body
//! (or, sabotaged, a fresh key) until a definite answer or the deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use uuid::Uuid;

use super::attempt::{Attempt, DoorClient};
use super::keys;
use super::tally::Tally;
use double_fire::Door;

/// The longest pause between two attempts of one key: a killed server
/// takes about this long to come back, and a client should not spin on a
/// refused connection meanwhile.
const MAX_BACKOFF: Duration = Duration::from_millis(400);

/// What the clients do.
#[derive(Debug, Clone)]
pub(crate) struct FleetPlan {
    /// How many clients fire at once.
    pub(crate) clients: usize,
    /// How many keys each client creates.
    pub(crate) keys_per_client: usize,
    /// Sabotage: every retry sends a fresh key (with the same body).
    pub(crate) fresh_key_retries: bool,
    /// After this, no key is tried again; an unanswered key stays so.
    pub(crate) give_up_at: Instant,
}

/// What became of one key.
#[derive(Debug, Clone)]
pub(crate) struct KeyRecord {
    /// The key (the one the title carries).
    pub(crate) key: String,
    /// The ticket the definite answer named.
    pub(crate) acknowledged: Option<Uuid>,
    /// Attempts sent.
    pub(crate) attempts: u32,
    /// A definite answer that was not a ticket.
    pub(crate) refused: Option<String>,
    /// Why the last attempt went unanswered, while the key is.
    pub(crate) last_unanswered: Option<String>,
}

/// The door client `index` uses: about one client in four goes through
/// MCP, so both doors share the soak.
pub(crate) fn door_of(index: usize) -> Door {
    if index % 4 == 3 {
        Door::Mcp
    } else {
        Door::Rest
    }
}

/// Runs every client to its end; one record per planned key.
pub(crate) async fn run(
    plan: FleetPlan,
    door_client: DoorClient,
    tally: Arc<Tally>,
) -> anyhow::Result<Vec<KeyRecord>> {
    // A JoinSet, so that aborting the fleet aborts every client with it.
    let mut clients = JoinSet::new();
    for index in 0..plan.clients {
        clients.spawn(client(
            index,
            plan.clone(),
            door_client.clone(),
            tally.clone(),
        ));
    }
    let mut records = Vec::with_capacity(plan.clients * plan.keys_per_client);
    let mut failure = None;
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(mine) => records.extend(mine),
            Err(e) => failure = Some(e),
        }
    }
    tally.finish();
    match failure {
        Some(e) => Err(anyhow::anyhow!("a soak client failed: {e}")),
        None => Ok(records),
    }
}

async fn client(
    index: usize,
    plan: FleetPlan,
    door_client: DoorClient,
    tally: Arc<Tally>,
) -> Vec<KeyRecord> {
    let door = door_of(index);
    let mut records = Vec::with_capacity(plan.keys_per_client);
    for n in 0..plan.keys_per_client {
        let key = keys::key(index, n);
        let title = keys::title(&key);
        let mut record = KeyRecord {
            key,
            acknowledged: None,
            attempts: 0,
            refused: None,
            last_unanswered: None,
        };
        while Instant::now() < plan.give_up_at {
            let sent_key = if plan.fresh_key_retries && record.attempts > 0 {
                keys::fresh_retry_key(&record.key, record.attempts)
            } else {
                record.key.clone()
            };
            record.attempts += 1;
            let answer = tally
                .in_flight(door_client.create(door, &sent_key, &title))
                .await;
            match answer {
                Attempt::Acknowledged(id) => {
                    record.acknowledged = Some(id);
                    record.last_unanswered = None;
                    tally.acknowledge();
                    break;
                }
                Attempt::Refused(why) => {
                    record.refused = Some(why);
                    break;
                }
                Attempt::Unanswered(why) => {
                    record.last_unanswered = Some(why);
                    tokio::time::sleep(backoff(record.attempts)).await;
                }
            }
        }
        records.push(record);
    }
    records
}

/// The pause after the `attempts`th unanswered attempt: doubling from
/// 25 ms up to [`MAX_BACKOFF`].
fn backoff(attempts: u32) -> Duration {
    let doubled =
        Duration::from_millis(25).saturating_mul(1 << attempts.clamp(1, 8).saturating_sub(1));
    doubled.min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff(1), Duration::from_millis(25));
        assert_eq!(backoff(2), Duration::from_millis(50));
        assert_eq!(backoff(30), MAX_BACKOFF);
    }

    #[test]
    fn one_client_in_four_uses_mcp() {
        let mcp = (0..8).filter(|&i| door_of(i) == Door::Mcp).count();
        assert_eq!(mcp, 2);
    }
}
