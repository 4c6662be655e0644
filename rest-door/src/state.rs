//! What every REST handler can reach.

use access::Authenticator;
use axum::extract::FromRef;
use kitchen::Kitchen;
use telemetry::Metrics;

/// The REST door's state: the kitchen it calls, the metrics it feeds, and
/// who may call.
#[derive(Debug, Clone)]
pub struct DoorState {
    /// The domain core.
    pub kitchen: Kitchen,
    /// Write-attempt metrics and per-tenant counts.
    pub metrics: Metrics,
    /// Bearer tokens to callers, and the challenges of refusals.
    pub access: Authenticator,
}

impl FromRef<DoorState> for Authenticator {
    fn from_ref(state: &DoorState) -> Self {
        state.access.clone()
    }
}

impl FromRef<DoorState> for Kitchen {
    fn from_ref(state: &DoorState) -> Self {
        state.kitchen.clone()
    }
}

impl FromRef<DoorState> for Metrics {
    fn from_ref(state: &DoorState) -> Self {
        state.metrics.clone()
    }
}
