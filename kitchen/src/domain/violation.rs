use serde::Serialize;

/// One reason a request was refused, tied to the field that caused it.
///
/// Doors show these to the caller as they are: `message` is written for the
/// person (or model) who has to correct the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldViolation {
    /// The field as the caller named it, e.g. `title` or `project_id`.
    pub field: String,
    /// A short, stable, machine-readable reason, e.g. `too_long`.
    pub code: &'static str,
    /// What is wrong and what a valid value looks like.
    pub message: String,
}

impl FieldViolation {
    pub(crate) fn new(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            code,
            message: message.into(),
        }
    }
}
