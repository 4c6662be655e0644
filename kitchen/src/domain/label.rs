//! Labels: what a label is, and the set a ticket carries. The writes that
//! change them are in `label_change.rs`.

use serde::{Deserialize, Serialize};

use super::violation::FieldViolation;

/// Longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 50;

/// Most labels one ticket carries.
pub const MAX_LABELS_PER_TICKET: usize = 20;

/// The characters a label is made of, for messages and schemas.
pub const LABEL_PATTERN: &str = "^[a-z0-9-]{1,50}$";

/// A label: 1 to 50 characters of `a`–`z`, `0`–`9` and `-`. Lowercase only,
/// so `Bug` and `bug` cannot be two labels that look like one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Label(String);

impl Label {
    /// Parses a label a caller sent.
    pub fn parse(raw: impl Into<String>) -> Result<Self, FieldViolation> {
        let raw = raw.into();
        let chars = raw.chars().count();
        if raw.is_empty() {
            Err(FieldViolation::new(
                "label",
                "blank",
                "label must not be empty",
            ))
        } else if chars > MAX_LABEL_CHARS {
            Err(FieldViolation::new(
                "label",
                "too_long",
                format!("label must be at most {MAX_LABEL_CHARS} characters; it has {chars}"),
            ))
        } else if let Some(bad) = raw
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            Err(FieldViolation::new(
                "label",
                "invalid_characters",
                format!("label may use only lowercase letters a-z, digits and '-'; it has {bad:?}"),
            ))
        } else {
            Ok(Self(raw))
        }
    }

    /// The label.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The labels a ticket carries: at most [`MAX_LABELS_PER_TICKET`], each
/// once, in alphabetical order (so two tickets with the same labels read,
/// store and compare the same).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Labels(Vec<Label>);

impl Labels {
    /// The labels, alphabetical.
    pub fn as_slice(&self) -> &[Label] {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `label` is one of them.
    pub fn contains(&self, label: &Label) -> bool {
        self.0.binary_search(label).is_ok()
    }

    /// These labels and `label`; `None` when that would be more than a
    /// ticket carries. Adding one already here changes nothing.
    pub(crate) fn with(&self, label: &Label) -> Option<Self> {
        let Err(at) = self.0.binary_search(label) else {
            return Some(self.clone());
        };
        if self.0.len() >= MAX_LABELS_PER_TICKET {
            return None;
        }
        let mut labels = self.0.clone();
        labels.insert(at, label.clone());
        Some(Self(labels))
    }

    /// These labels without `label` (unchanged if it is not here).
    pub(crate) fn without(&self, label: &Label) -> Self {
        Self(self.0.iter().filter(|l| *l != label).cloned().collect())
    }

    /// How the database keeps them: a JSON array, alphabetical.
    pub(crate) fn to_stored(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|_| "[]".into())
    }

    /// Reads what [`Labels::to_stored`] wrote.
    pub(crate) fn from_stored(raw: &str) -> Result<Self, String> {
        let raw: Vec<String> = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        let mut labels = raw
            .into_iter()
            .map(|l| Label::parse(l).map_err(|v| v.message))
            .collect::<Result<Vec<_>, _>>()?;
        labels.sort();
        labels.dedup();
        Ok(Self(labels))
    }

    /// The pattern a stored array contains exactly when it holds `label`:
    /// for `LIKE`, safe because a label has no `%`, `_` or `"`.
    pub(crate) fn stored_pattern(label: &Label) -> String {
        format!("%\"{}\"%", label.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(raw: &str) -> Label {
        Label::parse(raw).expect("valid")
    }

    #[test]
    fn a_label_is_lowercase_letters_digits_and_dashes_up_to_fifty() {
        for good in ["bug", "p1", "needs-review", &"a".repeat(MAX_LABEL_CHARS)] {
            assert!(Label::parse(good).is_ok(), "{good}");
        }
        for (bad, code) in [
            ("", "blank"),
            ("Bug", "invalid_characters"),
            ("two words", "invalid_characters"),
            ("snake_case", "invalid_characters"),
            ("ünï", "invalid_characters"),
            (&"a".repeat(MAX_LABEL_CHARS + 1), "too_long"),
        ] {
            assert_eq!(Label::parse(bad).expect_err(bad).code, code, "{bad:?}");
        }
    }

    #[test]
    fn labels_stay_sorted_unique_and_within_the_limit() {
        let some = Labels::default()
            .with(&label("ui"))
            .and_then(|l| l.with(&label("bug")))
            .and_then(|l| l.with(&label("ui")))
            .expect("room");
        assert_eq!(some.as_slice(), &[label("bug"), label("ui")]);
        assert_eq!(some.without(&label("ui")).as_slice(), &[label("bug")]);
        assert_eq!(some.without(&label("nope")), some);
        let full = (0..MAX_LABELS_PER_TICKET).fold(Labels::default(), |l, n| {
            l.with(&label(&format!("l{n}"))).expect("room")
        });
        assert_eq!(full.with(&label("one-more")), None);
        assert_eq!(full.with(&label("l3")), Some(full.clone()));
        assert_eq!(Labels::from_stored(&full.to_stored()), Ok(full));
    }

    #[test]
    fn the_stored_pattern_matches_whole_labels_only() {
        let stored = Labels::default()
            .with(&label("needs-review"))
            .expect("room")
            .to_stored();
        let like = |l: &str| Labels::stored_pattern(&label(l));
        assert!(stored.contains(like("needs-review").trim_matches('%')));
        assert!(!stored.contains(like("review").trim_matches('%')));
    }
}
