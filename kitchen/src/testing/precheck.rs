//! A pause between a remote write's read of its key and its pre-check
//! (test support): the window where a concurrent attempt with the same key
//! can finish its whole effect, making the pre-check's local copy newer
//! than the key's record was when read. Tests hold a write there to race
//! it deterministically.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::OperationKey;

/// Pauses armed, by operation key: each pauses the first write with its
/// key that reaches the pre-check, once.
static PAUSES: Mutex<Option<HashMap<String, Armed>>> = Mutex::new(None);

struct Armed {
    arrived: oneshot::Sender<()>,
    release: oneshot::Receiver<()>,
}

/// The test's end of a pause armed by [`pause_before_precheck`].
pub struct PrecheckPause {
    arrived: oneshot::Receiver<()>,
    release: oneshot::Sender<()>,
}

/// Arms a pause: the next remote write with `key` that finds the key
/// unrecorded stops right before its pre-check until the pause is
/// released. Later writes with the key pass.
pub fn pause_before_precheck(key: &OperationKey) -> PrecheckPause {
    let (arrived_tx, arrived_rx) = oneshot::channel();
    let (release_tx, release_rx) = oneshot::channel();
    PAUSES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(
            key.as_str().to_owned(),
            Armed {
                arrived: arrived_tx,
                release: release_rx,
            },
        );
    PrecheckPause {
        arrived: arrived_rx,
        release: release_tx,
    }
}

impl PrecheckPause {
    /// Waits until a write is held at the pause.
    ///
    /// # Panics
    /// When the write went away without reaching it.
    pub async fn held(&mut self) {
        (&mut self.arrived)
            .await
            .expect("a write reaches the pre-check");
    }

    /// Lets the held write go on.
    pub fn release(self) {
        let _ = self.release.send(());
    }
}

/// Called by the remote write path between its read of the key and its
/// pre-check.
pub(crate) async fn reached(key: &OperationKey) {
    let armed = PAUSES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .and_then(|pauses| pauses.remove(key.as_str()));
    if let Some(Armed { arrived, release }) = armed {
        let _ = arrived.send(());
        let _ = release.await;
    }
}
