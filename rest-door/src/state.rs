//! What every REST handler can reach.

use axum::extract::FromRef;
use kitchen::Kitchen;
use telemetry::Metrics;

/// The REST door's state: the kitchen it calls and the metrics it feeds.
#[derive(Debug, Clone)]
pub struct DoorState {
    /// The domain core.
    pub kitchen: Kitchen,
    /// Write-attempt metrics and per-tenant counts.
    pub metrics: Metrics,
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
