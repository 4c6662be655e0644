//! Reads: safe to repeat, so anything that may pass on a later try (no
//! answer, 5xx, a malformed body) is tried again, as often as a transient
//! write, after the same waits.

use serde::de::DeserializeOwned;
use tracing::Instrument;

use crate::classify::{self, ReadAnswer};
use crate::network::{Call, Network};
use crate::policy::Bounds;
use crate::settled::Read;

/// Reads what `call` asks for (a fresh request id per try).
pub(crate) async fn read<N: Network, T: DeserializeOwned>(
    network: &N,
    bounds: &Bounds,
    what: &'static str,
    call: impl Fn() -> Call,
) -> Read<T> {
    let mut tries = 0u32;
    loop {
        let call = call();
        let span = tracing::info_span!(
            "client_read",
            what,
            transport_request_id = %call.request_id,
        );
        let reply = network.send(call).instrument(span.clone()).await;
        match classify::read_answer(&reply) {
            ReadAnswer::Found(value) => return Read::Found(value),
            ReadAnswer::NotFound(problem) => return Read::NotFound(problem),
            ReadAnswer::Refused(problem) => return Read::Refused(problem),
            ReadAnswer::Retry { retry_after, seen } => {
                if tries >= bounds.max_transient_retries {
                    span.in_scope(|| tracing::warn!(?seen, "read gave up"));
                    return Read::Unreachable(seen);
                }
                tries += 1;
                let backoff = bounds
                    .retry_delay
                    .saturating_mul(1 << tries.saturating_sub(1).min(16));
                let wait = retry_after.unwrap_or(backoff).min(bounds.max_wait);
                span.in_scope(|| {
                    tracing::debug!(?seen, wait_ms = wait.as_millis(), "read retried")
                });
                network.sleep(wait).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::network::Reach;
    use crate::resources::Ticket;
    use crate::testing::{Scripted, TICKET, answer, no_answer};

    fn bounds() -> Bounds {
        Bounds {
            max_transient_retries: 2,
            max_wait: Duration::from_secs(1),
            retry_delay: Duration::from_millis(100),
            reconcile_within: Duration::from_secs(1),
        }
    }

    fn get() -> Call {
        Call::get(vec!["v1".into(), "tickets".into(), "x".into()], vec![])
    }

    #[tokio::test]
    async fn a_read_is_retried_until_it_answers_or_the_bound() {
        let network = Scripted::new(
            vec![],
            vec![
                no_answer(Reach::NotSent),
                answer(503, ""),
                answer(200, TICKET),
            ],
        );
        let found: Read<Ticket> = read(&network, &bounds(), "ticket", get).await;
        assert!(matches!(found, Read::Found(_)));
        assert_eq!(
            network.waits(),
            [Duration::from_millis(100), Duration::from_millis(200)]
        );

        let network = Scripted::new(vec![], vec![]);
        let gave_up: Read<Ticket> = read(&network, &bounds(), "ticket", get).await;
        assert!(matches!(gave_up, Read::Unreachable(_)), "{gave_up:?}");
        assert_eq!(network.calls().len(), 3, "one try and two retries");
    }
}
