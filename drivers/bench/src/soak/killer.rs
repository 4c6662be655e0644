//! When and how the server dies: K moments drawn from the run's seed, each
//! a number of acknowledged keys (so every kill lands while the clients are
//! still firing, whatever the machine's speed) plus a few milliseconds more
//! (so it lands at a random point of the requests then in flight). At each
//! moment: SIGKILL, restart on the same port, wait for readiness.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::server::Server;
use super::tally::Tally;

/// The longest extra wait after a kill moment's acknowledgement count.
const MAX_DELAY: Duration = Duration::from_millis(20);

/// One planned kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KillMoment {
    /// Kill once this many keys are acknowledged …
    pub(crate) after_acknowledged: usize,
    /// … and this much later.
    pub(crate) delay: Duration,
}

/// What the kills did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KillLog {
    /// Kills done (fewer than planned only if the clients stopped first).
    pub(crate) kills: u32,
    /// Attempts in flight at the kills, summed: how many requests the kills
    /// cut (at least; others may have been about to be sent).
    pub(crate) in_flight_at_kills: usize,
}

/// `kills` moments for a run of `total_keys` keys, from `seed`: spread
/// over the middle nine tenths of the run, in order.
pub(crate) fn schedule(seed: u64, kills: u32, total_keys: usize) -> Vec<KillMoment> {
    let mut rng = StdRng::seed_from_u64(seed);
    let low = total_keys / 20;
    let high = (total_keys - total_keys / 20).max(low + 1);
    let max_delay = u64::try_from(MAX_DELAY.as_micros()).unwrap_or(u64::MAX);
    let mut moments: Vec<KillMoment> = (0..kills)
        .map(|_| KillMoment {
            after_acknowledged: rng.random_range(low..high),
            delay: Duration::from_micros(rng.random_range(0..=max_delay)),
        })
        .collect();
    moments.sort_by_key(|m| m.after_acknowledged);
    moments
}

/// Kills and restarts `server` at each moment of `schedule`, telling
/// `progress` about each.
pub(crate) async fn run(
    server: &mut Server,
    schedule: &[KillMoment],
    tally: &Tally,
    progress: &dyn Fn(&str),
) -> anyhow::Result<KillLog> {
    let mut log = KillLog::default();
    for moment in schedule {
        if !tally.acknowledged(moment.after_acknowledged).await {
            progress(&format!(
                "the clients stopped before {} acknowledgements; no more kills",
                moment.after_acknowledged
            ));
            break;
        }
        tokio::time::sleep(moment.delay).await;
        let in_flight = tally.in_flight_now();
        server.kill().await?;
        log.kills += 1;
        log.in_flight_at_kills += in_flight;
        let took = server.restart().await?;
        progress(&format!(
            "kill {} of {} after {} acknowledged (+{} ms), {in_flight} in flight; ready again in {:.2} s",
            log.kills,
            schedule.len(),
            moment.after_acknowledged,
            moment.delay.as_millis(),
            took.as_secs_f64()
        ));
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_gives_the_same_moments_in_order_within_the_run() {
        let moments = schedule(7, 10, 400);
        assert_eq!(moments, schedule(7, 10, 400));
        assert_ne!(moments, schedule(8, 10, 400));
        assert_eq!(moments.len(), 10);
        assert!(
            moments
                .windows(2)
                .all(|w| w[0].after_acknowledged <= w[1].after_acknowledged)
        );
        assert!(
            moments
                .iter()
                .all(|m| (20..380).contains(&m.after_acknowledged))
        );
        assert!(moments.iter().all(|m| m.delay <= MAX_DELAY));
    }

    #[test]
    fn a_tiny_run_still_gets_its_kills() {
        assert_eq!(schedule(1, 3, 1).len(), 3);
        assert_eq!(schedule(1, 3, 0).len(), 3);
    }
}
