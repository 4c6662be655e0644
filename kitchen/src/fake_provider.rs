//! An in-memory ticket provider for the kitchen's own tests (feature
//! `test-support`): the effect ledger's rules, checked fast and
//! deterministically at the port. The HTTP provider simulator in `drivers/`
//! plays the same part across a real network in the end-to-end tests.
//!
//! Its per-reference ticket count is the ground truth for duplicates.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::provider::{
    DispatchRequest, Dispatched, Lookup, ProviderFuture, ProviderTicket, TicketProvider,
};

/// What the next dispatch does instead of behaving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DispatchFault {
    /// Fails before making anything, but in a way the caller cannot tell
    /// apart from a loss (a 5xx): answers [`Dispatched::Ambiguous`].
    FailBeforeCommit,
    /// Makes the ticket, then the answer is lost: [`Dispatched::Ambiguous`].
    CommitThenLose,
    /// Refuses the ticket: [`Dispatched::Rejected`].
    Reject,
    /// Cannot be reached: [`Dispatched::NotSent`].
    Unreachable,
    /// Answers [`Dispatched::Ambiguous`] at once (as a client timeout
    /// would) and makes the ticket this much later.
    LandLater(Duration),
}

/// What the next search does instead of behaving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupFault {
    /// Answers [`Lookup::Failed`].
    Fail,
}

#[derive(Debug, Default)]
struct State {
    tickets: Vec<ProviderTicket>,
    /// Key → (ticket, when first seen).
    keys: HashMap<String, (ProviderTicket, Instant)>,
    dispatch_faults: VecDeque<DispatchFault>,
    lookup_faults: VecDeque<LookupFault>,
    dispatches: usize,
    lookups: usize,
    /// Every call hangs: see [`FakeProvider::stop_answering`].
    silent: bool,
}

/// An in-memory provider. Cheap to clone: clones share their tickets.
#[derive(Debug, Clone)]
pub struct FakeProvider {
    /// `None`: ignores idempotency keys. `Some(window)`: remembers a key
    /// this long.
    dedup_window: Option<Duration>,
    state: Arc<Mutex<State>>,
}

impl FakeProvider {
    /// A provider that ignores idempotency keys.
    pub fn ignoring_keys() -> Self {
        Self {
            dedup_window: None,
            state: Arc::default(),
        }
    }

    /// A provider that honours idempotency keys for `window`.
    pub fn honouring_keys(window: Duration) -> Self {
        Self {
            dedup_window: Some(window),
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a fault for the next dispatch.
    pub fn fail_next_dispatch(&self, fault: DispatchFault) {
        self.state().dispatch_faults.push_back(fault);
    }

    /// Queues a fault for the next search.
    pub fn fail_next_lookup(&self, fault: LookupFault) {
        self.state().lookup_faults.push_back(fault);
    }

    /// Drops every queued fault: the provider behaves from now on.
    pub fn clear_faults(&self) {
        let mut state = self.state();
        state.dispatch_faults.clear();
        state.lookup_faults.clear();
    }

    /// From now on every call (dispatch or search) is received, counted,
    /// and never answered, and nothing is made: a provider that has gone
    /// dark. Only the caller's own timeout ends each call.
    pub fn stop_answering(&self) {
        self.state().silent = true;
    }

    /// Answers again, after [`FakeProvider::stop_answering`].
    pub fn resume_answering(&self) {
        self.state().silent = false;
    }

    /// Counts a call; `true` if it must go unanswered.
    fn received(&self, dispatch: bool) -> bool {
        let mut state = self.state();
        if !state.silent {
            return false;
        }
        if dispatch {
            state.dispatches += 1;
        } else {
            state.lookups += 1;
        }
        true
    }

    /// Makes a ticket as if a dispatch we never heard back from had landed.
    pub fn make_ticket(&self, external_ref: &str) {
        make(&mut self.state(), external_ref);
    }

    /// How many tickets carry `external_ref`: the ground truth.
    pub fn count(&self, external_ref: &str) -> usize {
        self.state()
            .tickets
            .iter()
            .filter(|t| t.external_ref == external_ref)
            .count()
    }

    /// How many tickets it made in all.
    pub fn total(&self) -> usize {
        self.state().tickets.len()
    }

    /// (dispatches, searches) received.
    pub fn calls(&self) -> (usize, usize) {
        let state = self.state();
        (state.dispatches, state.lookups)
    }

    fn create(&self, request: &DispatchRequest) -> Dispatched {
        let mut state = self.state();
        state.dispatches += 1;
        let fault = state.dispatch_faults.pop_front();
        match fault {
            Some(DispatchFault::FailBeforeCommit) => {
                return Dispatched::Ambiguous("503 from the provider".into());
            }
            Some(DispatchFault::Reject) => {
                return Dispatched::Rejected("422: title not accepted".into());
            }
            Some(DispatchFault::Unreachable) => {
                return Dispatched::NotSent("connection refused".into());
            }
            Some(DispatchFault::LandLater(after)) => {
                let state = self.state.clone();
                let external_ref = request.external_ref.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                    make(&mut state, &external_ref);
                });
                return Dispatched::Ambiguous("timed out".into());
            }
            Some(DispatchFault::CommitThenLose) | None => {}
        }
        if let Some(window) = self.dedup_window {
            let remembered = state
                .keys
                .get(&request.external_ref)
                .filter(|(_, seen)| seen.elapsed() < window)
                .map(|(ticket, _)| ticket.clone());
            if let Some(ticket) = remembered {
                return answer(fault, ticket, true);
            }
        }
        let ticket = make(&mut state, &request.external_ref);
        if self.dedup_window.is_some() {
            state.keys.insert(
                request.external_ref.clone(),
                (ticket.clone(), Instant::now()),
            );
        }
        answer(fault, ticket, false)
    }

    fn search(&self, external_ref: &str) -> Lookup {
        let mut state = self.state();
        state.lookups += 1;
        if let Some(LookupFault::Fail) = state.lookup_faults.pop_front() {
            return Lookup::Failed("503 from the provider's search".into());
        }
        state
            .tickets
            .iter()
            .find(|t| t.external_ref == external_ref)
            .cloned()
            .map_or(Lookup::Absent, Lookup::Found)
    }
}

fn make(state: &mut State, external_ref: &str) -> ProviderTicket {
    let ticket = ProviderTicket {
        id: format!("FAKE-{}", state.tickets.len() + 1),
        external_ref: external_ref.into(),
    };
    state.tickets.push(ticket.clone());
    ticket
}

fn answer(fault: Option<DispatchFault>, ticket: ProviderTicket, replayed: bool) -> Dispatched {
    match fault {
        Some(DispatchFault::CommitThenLose) => Dispatched::Ambiguous("connection reset".into()),
        _ => Dispatched::Created { ticket, replayed },
    }
}

impl TicketProvider for FakeProvider {
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched> {
        Box::pin(async move {
            if self.received(true) {
                return std::future::pending().await;
            }
            self.create(request)
        })
    }

    fn find_by_reference<'a>(&'a self, external_ref: &'a str) -> ProviderFuture<'a, Lookup> {
        Box::pin(async move {
            if self.received(false) {
                return std::future::pending().await;
            }
            self.search(external_ref)
        })
    }
}
