//! What a write changed on a ticket, as its history shows it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One field's change: its value before and after (`null` for "none").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The value before the write.
    pub from: Value,
    /// The value after the write.
    pub to: Value,
}

/// Every field a write changed, by field name, in name order. Empty when a
/// write changed nothing (an update that sets what is already there).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Changes(BTreeMap<String, Change>);

impl Changes {
    /// Notes `field` going from `from` to `to`, unless they are equal.
    pub(crate) fn note(&mut self, field: &str, from: impl Serialize, to: impl Serialize) {
        let (from, to) = (json(from), json(to));
        if from != to {
            self.0.insert(field.to_owned(), Change { from, to });
        }
    }

    /// Notes a value that is there now and was not before.
    pub(crate) fn added(&mut self, field: &str, to: impl Serialize) {
        self.note(field, Value::Null, to);
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The changes, by field.
    pub fn fields(&self) -> &BTreeMap<String, Change> {
        &self.0
    }
}

/// Values here are plain strings, numbers and options of them, which always
/// serialize.
fn json(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
