//! An in-memory ticket provider for the kitchen's own tests (feature
//! `test-support`): the effect ledger's rules, checked fast and
//! deterministically at the port. The HTTP provider simulator in `drivers/`
//! plays the same part across a real network in the end-to-end tests.
//!
//! It keeps tickets (with a version and a status), changelog entries and
//! comments, each carrying the external reference of the write that made
//! it; its count per reference is the ground truth for duplicates.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domain::change::Changes;
use crate::domain::patch::Setting;
use crate::domain::status::TicketStatus;
use crate::domain::ticket::{Assignee, Description, Priority, Title, Version};
use crate::provider::{
    DispatchRequest, Dispatched, EffectKind, Lookup, ProviderEffect, ProviderFuture,
    ProviderReceipt, ProviderTicketState, ProviderWrite, SearchRequest, TicketProvider,
};

/// What the next dispatch does instead of behaving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DispatchFault {
    /// Fails before doing anything, but in a way the caller cannot tell
    /// apart from a loss (a 5xx): answers [`Dispatched::Ambiguous`].
    FailBeforeCommit,
    /// Does the write, then the answer is lost: [`Dispatched::Ambiguous`].
    CommitThenLose,
    /// Refuses the write: [`Dispatched::Rejected`].
    Reject,
    /// Cannot be reached: [`Dispatched::NotSent`].
    Unreachable,
    /// Answers [`Dispatched::Ambiguous`] at once (as a client timeout
    /// would) and does the write this much later.
    LandLater(Duration),
}

/// What the next search does instead of behaving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupFault {
    /// Answers [`Lookup::Failed`].
    Fail,
}

/// One object the provider keeps, with the reference of the write that
/// made it.
#[derive(Debug, Clone)]
struct Object {
    receipt: ProviderReceipt,
    /// The provider's id of the ticket it is (or is on).
    ticket: String,
}

#[derive(Debug, Default)]
struct State {
    /// Every ticket as it is now, by the provider's id.
    tickets: HashMap<String, ProviderTicketState>,
    /// Tickets, changes and comments, in the order they were made.
    objects: Vec<Object>,
    /// Key → (answer, when first seen).
    keys: HashMap<String, (ProviderReceipt, Instant)>,
    dispatch_faults: VecDeque<DispatchFault>,
    lookup_faults: VecDeque<LookupFault>,
    dispatches: usize,
    lookups: usize,
    /// Every call hangs: see [`FakeProvider::stop_answering`].
    silent: bool,
}

/// An in-memory provider. Cheap to clone: clones share their state.
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

    /// Makes a ticket as if a create we never heard back from had landed.
    pub fn make_ticket(&self, external_ref: &str) {
        let write = ProviderWrite::CreateTicket {
            project_id: "ops".into(),
            title: "Made behind our back".into(),
            description: None,
            priority: "normal".into(),
        };
        let _ = apply(&mut self.state(), external_ref, &write);
    }

    /// Makes one more object like the newest one carrying `external_ref`
    /// (a ticket, a change or a comment), with a fresh id: what a provider
    /// that duplicated the effect holds. `false` when nothing carries it.
    pub fn duplicate(&self, external_ref: &str) -> bool {
        let mut state = self.state();
        let Some(newest) = state
            .objects
            .iter()
            .rev()
            .find(|o| o.receipt.external_ref == external_ref)
            .cloned()
        else {
            return false;
        };
        let id = next_id(&state, newest.receipt.effect.kind());
        let effect = match newest.receipt.effect {
            ProviderEffect::Ticket { .. } => {
                let copy = ProviderTicketState {
                    id: id.clone(),
                    ..state.tickets[&newest.ticket].clone()
                };
                state.tickets.insert(id.clone(), copy);
                ProviderEffect::Ticket { id: id.clone() }
            }
            ProviderEffect::Change {
                changes, ticket, ..
            } => ProviderEffect::Change {
                id,
                changes,
                ticket,
            },
            ProviderEffect::Comment { .. } => ProviderEffect::Comment { id },
        };
        let ticket = match &effect {
            ProviderEffect::Ticket { id } => id.clone(),
            _ => newest.ticket,
        };
        state.objects.push(Object {
            receipt: ProviderReceipt {
                external_ref: external_ref.into(),
                effect,
            },
            ticket,
        });
        true
    }

    /// Deletes the object `id` (a ticket, a change or a comment), as a
    /// person resolving a duplicate there would. `false` when there is no
    /// such object.
    pub fn remove(&self, id: &str) -> bool {
        let mut state = self.state();
        let before = state.objects.len();
        state.objects.retain(|o| o.receipt.effect.id() != id);
        state.tickets.remove(id);
        state.objects.len() < before
    }

    /// Changes ticket `id` at the provider without any of our requests (a
    /// person editing it there): its version moves on by one. `false` when
    /// there is no such ticket.
    pub fn edit_behind_our_back(&self, id: &str) -> bool {
        let mut state = self.state();
        let Some(ticket) = state.tickets.get_mut(id) else {
            return false;
        };
        ticket.version = ticket.version.next();
        true
    }

    /// How many objects carry `external_ref`: the ground truth (1 for an
    /// effect made once).
    pub fn count(&self, external_ref: &str) -> usize {
        self.state()
            .objects
            .iter()
            .filter(|o| o.receipt.external_ref == external_ref)
            .count()
    }

    /// How many objects (tickets, changes, comments) it made in all.
    pub fn total(&self) -> usize {
        self.state().objects.len()
    }

    /// How many objects of `kind` it made.
    pub fn made(&self, kind: EffectKind) -> usize {
        self.state()
            .objects
            .iter()
            .filter(|o| o.receipt.effect.kind() == kind)
            .count()
    }

    /// A ticket as the provider has it now, by its id.
    pub fn ticket(&self, id: &str) -> Option<ProviderTicketState> {
        self.state().tickets.get(id).cloned()
    }

    /// (dispatches, searches) received.
    pub fn calls(&self) -> (usize, usize) {
        let state = self.state();
        (state.dispatches, state.lookups)
    }

    fn dispatched(&self, request: &DispatchRequest) -> Dispatched {
        let mut state = self.state();
        state.dispatches += 1;
        let fault = state.dispatch_faults.pop_front();
        match fault {
            Some(DispatchFault::FailBeforeCommit) => {
                return Dispatched::Ambiguous("503 from the provider".into());
            }
            Some(DispatchFault::Reject) => {
                return Dispatched::Rejected("422: not accepted".into());
            }
            Some(DispatchFault::Unreachable) => {
                return Dispatched::NotSent("connection refused".into());
            }
            Some(DispatchFault::LandLater(after)) => {
                let state = self.state.clone();
                let request = request.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = apply(&mut state, &request.external_ref, &request.write);
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
                .map(|(receipt, _)| receipt.clone());
            if let Some(receipt) = remembered {
                return answer(fault, receipt, true);
            }
        }
        let receipt = match apply(&mut state, &request.external_ref, &request.write) {
            Ok(receipt) => receipt,
            Err(why) => return Dispatched::Rejected(why),
        };
        if self.dedup_window.is_some() {
            state.keys.insert(
                request.external_ref.clone(),
                (receipt.clone(), Instant::now()),
            );
        }
        answer(fault, receipt, false)
    }

    fn searched(&self, request: &SearchRequest) -> Lookup {
        let mut state = self.state();
        state.lookups += 1;
        if let Some(LookupFault::Fail) = state.lookup_faults.pop_front() {
            return Lookup::Failed("503 from the provider's search".into());
        }
        let mut found = state.objects.iter().filter(|o| {
            o.receipt.external_ref == request.external_ref
                && o.receipt.effect.kind() == request.kind
                && request.ticket.as_ref().is_none_or(|t| *t == o.ticket)
        });
        match found.next() {
            None => Lookup::Absent,
            Some(original) => Lookup::Found {
                receipt: original.receipt.clone(),
                duplicates: found.map(|o| o.receipt.effect.id().to_owned()).collect(),
            },
        }
    }
}

/// The next id for an object of `kind`: `FAKE-n`, `CHG-n`, `CMT-n`.
fn next_id(state: &State, kind: EffectKind) -> String {
    let prefix = match kind {
        EffectKind::Ticket => "FAKE",
        EffectKind::Change => "CHG",
        EffectKind::Comment => "CMT",
    };
    let n = state
        .objects
        .iter()
        .filter(|o| o.receipt.effect.kind() == kind)
        .count();
    format!("{prefix}-{}", n + 1)
}

/// Does `write` (as the provider's workflow allows), recording the object
/// it makes under `external_ref`; `Err` with the provider's words when it
/// refuses (nothing made).
fn apply(
    state: &mut State,
    external_ref: &str,
    write: &ProviderWrite,
) -> Result<ProviderReceipt, String> {
    let id = next_id(state, write.kind());
    let (effect, ticket) = match write {
        ProviderWrite::CreateTicket {
            title,
            description,
            priority,
            ..
        } => {
            let ticket = ProviderTicketState {
                id: id.clone(),
                title: Title::parse(title.clone()).map_err(|v| format!("422: {}", v.message))?,
                description: Description::parse(description.clone().unwrap_or_default())
                    .map_err(|v| format!("422: {}", v.message))?,
                priority: Priority::parse(priority).map_err(|v| format!("422: {}", v.message))?,
                status: TicketStatus::Open,
                assignee: None,
                version: Version::FIRST,
            };
            state.tickets.insert(id.clone(), ticket);
            (ProviderEffect::Ticket { id: id.clone() }, id)
        }
        ProviderWrite::UpdateTicket {
            ticket,
            expected_version,
            title,
            description,
            priority,
            assignee,
        } => {
            let current = found(state, ticket)?;
            if let Some(expected) = expected_version
                && *expected != current.version.get()
            {
                return Err(format!(
                    "412: ticket {ticket} is at version {}, not {expected}",
                    current.version
                ));
            }
            let mut after = current.clone();
            let mut changes = Changes::default();
            let bad = |v: crate::FieldViolation| format!("422: {}", v.message);
            if let Setting::Set(t) = title {
                after.title = Title::parse(t.clone()).map_err(bad)?;
                changes.note("title", &current.title, &after.title);
            }
            if let Setting::Set(d) = description {
                after.description =
                    Description::parse(d.clone().unwrap_or_default()).map_err(bad)?;
                changes.note("description", &current.description, &after.description);
            }
            if let Setting::Set(p) = priority {
                after.priority = Priority::parse(p).map_err(bad)?;
                changes.note("priority", current.priority, after.priority);
            }
            if let Setting::Set(a) = assignee {
                after.assignee = a.as_deref().map(Assignee::parse).transpose().map_err(bad)?;
                changes.note("assignee", &current.assignee, &after.assignee);
            }
            if !changes.is_empty() {
                after.version = after.version.next();
            }
            state.tickets.insert(ticket.clone(), after.clone());
            let effect = ProviderEffect::Change {
                id,
                changes,
                ticket: after,
            };
            (effect, ticket.clone())
        }
        ProviderWrite::TransitionTicket { ticket, to, reason } => {
            let current = found(state, ticket)?;
            let to = TicketStatus::parse(to).ok_or_else(|| format!("422: no status {to}"))?;
            if current.status == to {
                return Err(format!("422: ticket {ticket} is already {}", to.as_str()));
            }
            let mut after = current.clone();
            after.status = to;
            after.version = after.version.next();
            let mut changes = Changes::default();
            changes.note("status", current.status, to);
            if let Some(reason) = reason {
                changes.added("reason", reason);
            }
            state.tickets.insert(ticket.clone(), after.clone());
            let effect = ProviderEffect::Change {
                id,
                changes,
                ticket: after,
            };
            (effect, ticket.clone())
        }
        ProviderWrite::AddComment { ticket, .. } => {
            found(state, ticket)?;
            (ProviderEffect::Comment { id }, ticket.clone())
        }
    };
    let receipt = ProviderReceipt {
        external_ref: external_ref.into(),
        effect,
    };
    state.objects.push(Object {
        receipt: receipt.clone(),
        ticket,
    });
    Ok(receipt)
}

/// The ticket with the provider's id `id`, or the provider's 404.
fn found(state: &State, id: &str) -> Result<ProviderTicketState, String> {
    state
        .tickets
        .get(id)
        .cloned()
        .ok_or_else(|| format!("404: no ticket {id}"))
}

fn answer(fault: Option<DispatchFault>, receipt: ProviderReceipt, replayed: bool) -> Dispatched {
    match fault {
        Some(DispatchFault::CommitThenLose) => Dispatched::Ambiguous("connection reset".into()),
        _ => Dispatched::Done { receipt, replayed },
    }
}

impl TicketProvider for FakeProvider {
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched> {
        Box::pin(async move {
            if self.received(true) {
                return std::future::pending().await;
            }
            self.dispatched(request)
        })
    }

    fn find_by_reference<'a>(&'a self, request: &'a SearchRequest) -> ProviderFuture<'a, Lookup> {
        Box::pin(async move {
            if self.received(false) {
                return std::future::pending().await;
            }
            self.searched(request)
        })
    }
}
