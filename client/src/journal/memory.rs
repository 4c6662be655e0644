//! The journal in memory: the default. It survives a lost answer, not a
//! crash of the process (use `SqliteJournal` for that).

use std::sync::Mutex;

use time::OffsetDateTime;

use super::{Begun, EntryId, Journal, JournalEntry, JournalFuture, Settlement, take_over};
use crate::intent::Intent;

/// A journal held in this process's memory.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    entries: Mutex<Vec<Kept>>,
}

/// An entry and, once it finished, how.
#[derive(Debug)]
struct Kept {
    entry: JournalEntry,
    settled: Option<Settlement>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the entries. A panic while the lock was held poisons it;
    /// the entries are still whole (no update is left half done), so the
    /// journal keeps working.
    fn with_entries<T>(&self, f: impl FnOnce(&mut Vec<Kept>) -> T) -> T {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut entries)
    }
}

impl Journal for MemoryJournal {
    fn begin<'a>(&'a self, intent: &'a Intent) -> JournalFuture<'a, Begun> {
        let begun = self.with_entries(|entries| {
            let same_scope = entries.iter_mut().find(|kept| {
                kept.entry.action() == intent.action() && kept.entry.key() == intent.key()
            });
            match same_scope {
                Some(kept) if kept.entry.is_for(intent) => {
                    kept.settled = None;
                    Ok(Begun::Existing(kept.entry.clone()))
                }
                Some(kept) => {
                    take_over(intent, kept.settled.as_ref().map(|s| s.outcome))?;
                    let entry =
                        JournalEntry::new(EntryId::new(), intent, OffsetDateTime::now_utc());
                    *kept = Kept {
                        entry: entry.clone(),
                        settled: None,
                    };
                    Ok(Begun::New(entry))
                }
                None => {
                    let entry =
                        JournalEntry::new(EntryId::new(), intent, OffsetDateTime::now_utc());
                    entries.push(Kept {
                        entry: entry.clone(),
                        settled: None,
                    });
                    Ok(Begun::New(entry))
                }
            }
        });
        Box::pin(async move { begun })
    }

    fn settle<'a>(&'a self, entry: EntryId, settlement: &'a Settlement) -> JournalFuture<'a, ()> {
        self.with_entries(|entries| {
            if let Some(kept) = entries.iter_mut().find(|kept| kept.entry.id() == entry) {
                kept.settled = Some(settlement.clone());
            }
        });
        Box::pin(async { Ok(()) })
    }

    fn pending(&self) -> JournalFuture<'_, Vec<JournalEntry>> {
        let pending = self.with_entries(|entries| {
            entries
                .iter()
                .filter(|kept| kept.settled.is_none())
                .map(|kept| kept.entry.clone())
                .collect()
        });
        Box::pin(async move { Ok(pending) })
    }

    fn entries(&self) -> JournalFuture<'_, Vec<JournalEntry>> {
        let all = self.with_entries(|entries| entries.iter().map(|k| k.entry.clone()).collect());
        Box::pin(async move { Ok(all) })
    }
}
