//! What the clients share with the killer: how many keys are acknowledged
//! (the kill moments are set in acknowledgements, so that every kill lands
//! while clients are still firing), how many attempts are in flight right
//! now, and whether the clients are done.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::watch;

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    acknowledged: usize,
    finished: bool,
}

/// The clients' progress, as the killer watches it.
#[derive(Debug)]
pub(crate) struct Tally {
    counts: watch::Sender<Counts>,
    in_flight: AtomicUsize,
}

impl Tally {
    /// Nothing acknowledged, nothing in flight.
    pub(crate) fn new() -> Self {
        Self {
            counts: watch::Sender::new(Counts::default()),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// Runs `attempt`, counted as in flight until it ends.
    pub(crate) async fn in_flight<T>(&self, attempt: impl Future<Output = T>) -> T {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let answer = attempt.await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        answer
    }

    /// Attempts sent and not answered yet.
    pub(crate) fn in_flight_now(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// One more key acknowledged.
    pub(crate) fn acknowledge(&self) {
        self.counts.send_modify(|c| c.acknowledged += 1);
    }

    /// Every client has stopped.
    pub(crate) fn finish(&self) {
        self.counts.send_modify(|c| c.finished = true);
    }

    /// Waits until `n` keys are acknowledged (true), or the clients have
    /// stopped short of that (false).
    pub(crate) async fn acknowledged(&self, n: usize) -> bool {
        let mut counts = self.counts.subscribe();
        // The sender lives in `self`, so the wait cannot lose its sender.
        match counts.wait_for(|c| c.acknowledged >= n || c.finished).await {
            Ok(c) => c.acknowledged >= n,
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_ends_at_the_count_or_when_the_clients_stop() {
        let tally = Tally::new();
        tally.acknowledge();
        tally.acknowledge();
        assert!(tally.acknowledged(2).await);
        tally.finish();
        assert!(!tally.acknowledged(3).await);
    }
}
