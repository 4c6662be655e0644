//! The tracker's memory: tickets, remembered idempotency keys, and the
//! request counters behind `/_sim/counts`.
//!
//! One plain mutex guards it all. Creating is check-the-key then insert
//! with no `.await` in between, so holding the lock for that step is what
//! serialises concurrent creates with the same key: the second one finds
//! the first one's key and replays it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use super::KeyPolicy;
use super::api::{Counts, RefCount, SimTicket};

/// A validated create request: everything a key's fingerprint covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewTicket {
    pub external_ref: String,
    pub project_id: String,
    pub title: String,
    pub description: Option<String>,
    pub priority: String,
}

/// What a create did.
#[derive(Debug)]
pub(crate) enum Created {
    /// Made a ticket.
    New(SimTicket),
    /// The key was remembered with the same request: nothing made.
    Replayed(SimTicket),
    /// The key was remembered with a different request: nothing made.
    KeyReused,
}

pub(crate) struct Store {
    keys: KeyPolicy,
    dedup_window: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    tickets: Vec<SimTicket>,
    remembered: HashMap<String, Remembered>,
    creates_received: u64,
    searches_received: u64,
}

struct Remembered {
    first_seen: Instant,
    request: NewTicket,
    /// Index into `State::tickets`.
    ticket: usize,
}

impl Store {
    pub(crate) fn new(keys: KeyPolicy, dedup_window: Duration) -> Self {
        Self {
            keys,
            dedup_window,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave `State` half-updated in a way that
        // matters to a test fixture; keep serving rather than cascade.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn note_create(&self) {
        self.state().creates_received += 1;
    }

    pub(crate) fn note_search(&self) {
        self.state().searches_received += 1;
    }

    /// Makes a ticket, or replays the one `key` made within the dedup
    /// window (honour mode only).
    pub(crate) fn create(&self, request: NewTicket, key: Option<&str>) -> Created {
        let mut state = self.state();
        let key = match self.keys {
            KeyPolicy::Honour => key,
            KeyPolicy::Ignore => None,
        };
        let now = Instant::now();
        if let Some(seen) = key.and_then(|k| state.remembered.get(k))
            // An expired key is forgotten: fall through and make a new ticket.
            && now.duration_since(seen.first_seen) < self.dedup_window
        {
            return if seen.request == request {
                Created::Replayed(state.tickets[seen.ticket].clone())
            } else {
                Created::KeyReused
            };
        }
        let ticket = SimTicket {
            id: format!("SIM-{}", state.tickets.len() + 1),
            external_ref: request.external_ref.clone(),
            project_id: request.project_id.clone(),
            title: request.title.clone(),
            description: request.description.clone(),
            priority: request.priority.clone(),
            created_at: OffsetDateTime::now_utc(),
        };
        state.tickets.push(ticket.clone());
        if let Some(key) = key {
            let remembered = Remembered {
                first_seen: now,
                request,
                ticket: state.tickets.len() - 1,
            };
            state.remembered.insert(key.to_owned(), remembered);
        }
        Created::New(ticket)
    }

    /// Tickets with this external reference, oldest first.
    pub(crate) fn search(&self, external_ref: &str) -> Vec<SimTicket> {
        let state = self.state();
        state
            .tickets
            .iter()
            .filter(|t| t.external_ref == external_ref)
            .cloned()
            .collect()
    }

    pub(crate) fn get(&self, id: &str) -> Option<SimTicket> {
        let state = self.state();
        state.tickets.iter().find(|t| t.id == id).cloned()
    }

    pub(crate) fn counts(&self) -> Counts {
        let state = self.state();
        let mut by_ref: Vec<RefCount> = Vec::new();
        let mut position: HashMap<&str, usize> = HashMap::new();
        for ticket in &state.tickets {
            let at = *position
                .entry(ticket.external_ref.as_str())
                .or_insert_with(|| {
                    by_ref.push(RefCount {
                        external_ref: ticket.external_ref.clone(),
                        tickets: 0,
                        titles: Vec::new(),
                    });
                    by_ref.len() - 1
                });
            by_ref[at].tickets += 1;
            by_ref[at].titles.push(ticket.title.clone());
        }
        Counts {
            total_tickets: state.tickets.len() as u64,
            creates_received: state.creates_received,
            searches_received: state.searches_received,
            by_external_ref: by_ref,
        }
    }
}
