//! Scheduled faults: which request gets which misbehaviour.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::api::{Fault, FaultOn, FaultRule};

/// The rules, in the order they were added, each with its hits left.
#[derive(Default)]
pub(crate) struct Faults {
    rules: Mutex<Vec<FaultRule>>,
}

impl Faults {
    fn rules(&self) -> MutexGuard<'_, Vec<FaultRule>> {
        self.rules.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Schedules `rule`, or says why it can never match as written.
    pub(crate) fn add(&self, rule: FaultRule) -> Result<(), String> {
        if rule.times == 0 {
            return Err("times must be at least 1".into());
        }
        if rule.on == FaultOn::Search && rule.title_contains.is_some() {
            return Err(
                "title_contains applies to creates, updates, transitions and comments; \
                 searches have no title"
                    .into(),
            );
        }
        self.rules().push(rule);
        Ok(())
    }

    pub(crate) fn clear(&self) {
        self.rules().clear();
    }

    /// The fault for this request, if a rule matches; spends one of that
    /// rule's hits. `title` is that of the ticket the request makes or acts
    /// on (see `FaultRule::title_contains`), `None` for searches.
    pub(crate) fn take(
        &self,
        on: FaultOn,
        title: Option<&str>,
        external_ref: &str,
    ) -> Option<Fault> {
        let mut rules = self.rules();
        let at = rules.iter().position(|rule| {
            rule.on == on
                && rule
                    .title_contains
                    .as_deref()
                    .is_none_or(|part| title.is_some_and(|t| t.contains(part)))
                && rule
                    .external_ref
                    .as_deref()
                    .is_none_or(|r| r == external_ref)
        })?;
        let fault = rules[at].fault.clone();
        // A spent rule is removed, so "first with hits left" is simply "first".
        rules[at].times -= 1;
        if rules[at].times == 0 {
            rules.remove(at);
        }
        Some(fault)
    }
}
