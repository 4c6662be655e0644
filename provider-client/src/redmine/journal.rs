//! What the adapter writes into a journal's note, and how it reads a
//! journal back as the port's receipt.
//!
//! Redmine has no idempotency key and nothing searchable on a journal, so
//! every change and comment the adapter makes ends its note with a marker
//! line naming the write and its external reference:
//!
//! ```text
//! [tickets transition rst1-0c5e…]
//! ```
//!
//! Reconciliation reads the issue's journals and looks for that line
//! (`found`). A ticket's version is Redmine's count of edits: 1 at
//! creation, +1 per journal that changed a field the service keeps
//! (subject, description, priority, status); a comment changes none.

use kitchen::{
    Changes, Description, EffectKind, Priority, ProviderEffect, ProviderReceipt,
    ProviderTicketState, Title, Version,
};
use serde_json::{Map, Value, json};

use super::mapping::Mapping;
use super::wire::{Issue, Journal};

/// Which write a journal is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Update,
    Transition,
    Comment,
}

impl Verb {
    fn as_str(self) -> &'static str {
        match self {
            Self::Update => "update",
            Self::Transition => "transition",
            Self::Comment => "comment",
        }
    }

    fn kind(self) -> EffectKind {
        match self {
            Self::Update | Self::Transition => EffectKind::Change,
            Self::Comment => EffectKind::Comment,
        }
    }
}

/// The marker line for `verb` of `external_ref`.
pub(crate) fn marker(verb: Verb, external_ref: &str) -> String {
    format!("[tickets {} {external_ref}]", verb.as_str())
}

/// The note carrying `text` (if any) and the marker.
pub(crate) fn note(text: Option<&str>, verb: Verb, external_ref: &str) -> String {
    match text {
        Some(text) if !text.is_empty() => format!("{text}\n\n{}", marker(verb, external_ref)),
        _ => marker(verb, external_ref),
    }
}

/// The write and the reference named by the marker line that ends `notes`,
/// if it ends with one: `("comment", "rst1-…")`. Test tools that count
/// effects in Redmine read notes with it too.
pub fn marker_in(notes: &str) -> Option<(&str, &str)> {
    let last = notes.trim_end().rsplit('\n').next()?.trim_end_matches('\r');
    last.strip_prefix("[tickets ")?
        .strip_suffix(']')?
        .split_once(' ')
}

/// The write a journal's note says it is for, with the note's text before
/// the marker, if the note ends with a marker of `external_ref`.
fn marked(journal: &Journal, external_ref: &str) -> Option<(Verb, String)> {
    let notes = journal.notes.as_deref()?.replace("\r\n", "\n");
    let notes = notes.trim_end();
    let (verb, reference) = marker_in(notes)?;
    if reference != external_ref {
        return None;
    }
    let verb = [Verb::Update, Verb::Transition, Verb::Comment]
        .into_iter()
        .find(|v| v.as_str() == verb)?;
    let text = notes.rsplit_once('\n').map_or("", |(before, _)| before);
    Some((verb, text.trim_end().to_owned()))
}

/// The journals of `issue` that carry `external_ref` for an effect of
/// `kind`, oldest first.
pub(crate) fn found<'a>(
    issue: &'a Issue,
    kind: EffectKind,
    external_ref: &str,
) -> Vec<(&'a Journal, Verb, String)> {
    issue
        .journals
        .iter()
        .filter_map(|j| marked(j, external_ref).map(|(verb, text)| (j, verb, text)))
        .filter(|(_, verb, _)| verb.kind() == kind)
        .collect()
}

/// The fields the service keeps, by Redmine's attribute names.
const KEPT: [&str; 4] = ["subject", "description", "priority_id", "status_id"];

fn changes_a_kept_field(journal: &Journal) -> bool {
    journal
        .details
        .iter()
        .any(|d| d.property == "attr" && KEPT.contains(&d.name.as_str()))
}

/// The receipt of the journal `journal` of `issue` (read with its
/// journals), found carrying `external_ref` for `verb` with note `text`.
pub(crate) fn receipt(
    issue: &Issue,
    journal: &Journal,
    verb: Verb,
    text: &str,
    external_ref: &str,
    mapping: &Mapping,
) -> Result<ProviderReceipt, String> {
    let effect = match verb {
        Verb::Comment => ProviderEffect::Comment {
            id: journal.id.to_string(),
        },
        Verb::Update | Verb::Transition => ProviderEffect::Change {
            id: journal.id.to_string(),
            changes: changes(journal, verb, text, mapping)?,
            ticket: state_at(issue, journal.id, mapping)?,
        },
    };
    Ok(ProviderReceipt {
        external_ref: external_ref.to_owned(),
        effect,
    })
}

/// What `journal` changed, in the service's words. A transition's reason is
/// the note's text.
fn changes(
    journal: &Journal,
    verb: Verb,
    text: &str,
    mapping: &Mapping,
) -> Result<Changes, String> {
    let mut changes = Map::new();
    for d in journal.details.iter().filter(|d| d.property == "attr") {
        let (field, from, to) = match d.name.as_str() {
            "subject" => ("title", text_value(&d.old_value), text_value(&d.new_value)),
            "description" => (
                "description",
                text_value(&d.old_value),
                text_value(&d.new_value),
            ),
            "priority_id" => (
                "priority",
                id_value(&d.old_value, |id| {
                    mapping.priority(id).map(Priority::as_str)
                })?,
                id_value(&d.new_value, |id| {
                    mapping.priority(id).map(Priority::as_str)
                })?,
            ),
            "status_id" => (
                "status",
                id_value(&d.old_value, |id| mapping.status(id).map(|s| s.as_str()))?,
                id_value(&d.new_value, |id| mapping.status(id).map(|s| s.as_str()))?,
            ),
            // Fields the service does not keep (assignee, dates, done
            // ratio…): Redmine's business.
            _ => continue,
        };
        if from != to {
            changes.insert(field.to_owned(), json!({ "from": from, "to": to }));
        }
    }
    if verb == Verb::Transition && !text.is_empty() {
        changes.insert("reason".into(), json!({ "from": null, "to": text }));
    }
    serde_json::from_value(Value::Object(changes))
        .map_err(|e| format!("journal {}: unreadable changes: {e}", journal.id))
}

/// A text attribute: empty is none.
fn text_value(raw: &Option<String>) -> Value {
    match raw.as_deref() {
        None | Some("") => Value::Null,
        Some(text) => text.into(),
    }
}

/// An id attribute, as the name of ours it maps to.
fn id_value(
    raw: &Option<String>,
    name: impl Fn(u64) -> Result<&'static str, String>,
) -> Result<Value, String> {
    match raw.as_deref() {
        None | Some("") => Ok(Value::Null),
        Some(id) => {
            let id = id
                .parse()
                .map_err(|_| format!("`{id}` is not a Redmine id"))?;
            Ok(name(id)?.into())
        }
    }
}

/// The issue as journal `at` left it: its fields now, with every later
/// journal's changes undone (newest first), and its version then.
pub(crate) fn state_at(
    issue: &Issue,
    at: u64,
    mapping: &Mapping,
) -> Result<ProviderTicketState, String> {
    let mut subject = Some(issue.subject.clone());
    let mut description = issue.description.clone();
    let mut priority = Some(issue.priority.id.to_string());
    let mut status = Some(issue.status.id.to_string());
    for journal in issue.journals.iter().rev().filter(|j| j.id > at) {
        for d in journal.details.iter().filter(|d| d.property == "attr") {
            let field = match d.name.as_str() {
                "subject" => &mut subject,
                "description" => &mut description,
                "priority_id" => &mut priority,
                "status_id" => &mut status,
                _ => continue,
            };
            field.clone_from(&d.old_value);
        }
    }
    let edits = issue
        .journals
        .iter()
        .filter(|j| j.id <= at && changes_a_kept_field(j))
        .count();
    let bad = |field: &str, why: String| format!("issue {}: {field}: {why}", issue.id);
    let id = |raw: Option<String>, field: &str| -> Result<u64, String> {
        raw.as_deref().and_then(|r| r.parse().ok()).ok_or_else(|| {
            bad(
                field,
                format!("`{}` is not a Redmine id", raw.unwrap_or_default()),
            )
        })
    };
    Ok(ProviderTicketState {
        id: issue.id.to_string(),
        title: Title::parse(subject.unwrap_or_default()).map_err(|v| bad("subject", v.message))?,
        description: Description::parse(description.unwrap_or_default())
            .map_err(|v| bad("description", v.message))?,
        priority: mapping.priority(id(priority, "priority")?)?,
        status: mapping.status(id(status, "status")?)?,
        // Redmine assigns issues to its users by id; the adapter does not
        // map the service's free-text assignee (see docs/providers.md).
        assignee: None,
        version: Version::parse(
            i64::try_from(edits).unwrap_or(i64::MAX).saturating_add(1),
            "version",
        )
        .map_err(|v| bad("version", v.message))?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::mapping::StatusNames;
    use super::super::wire::{Detail, Named, Status};
    use super::*;

    fn mapping() -> Mapping {
        let statuses: Vec<Status> = ["New", "In Progress", "Resolved", "Feedback", "Closed"]
            .iter()
            .zip(1..)
            .map(|(name, id)| Status {
                id,
                name: (*name).into(),
                is_closed: *name == "Closed",
            })
            .collect();
        let priorities: Vec<Named> = ["Low", "Normal", "High", "Urgent"]
            .iter()
            .zip(1..)
            .map(|(name, id)| Named {
                id,
                name: (*name).into(),
            })
            .collect();
        Mapping::resolve(&StatusNames::default(), &statuses, &priorities).expect("maps")
    }

    fn attr(name: &str, old: &str, new: &str) -> Detail {
        Detail {
            property: "attr".into(),
            name: name.into(),
            old_value: Some(old.into()),
            new_value: Some(new.into()),
        }
    }

    fn journal(id: u64, notes: &str, details: Vec<Detail>) -> Journal {
        Journal {
            id,
            notes: Some(notes.into()),
            details,
        }
    }

    /// An issue now titled "Third", In Progress, after: 10 renames it
    /// "Second" (our update r1), 11 a comment (r2), 12 a move to In
    /// Progress with a reason (r3), 13 someone's rename to "Third" in
    /// Redmine's screens.
    fn issue() -> Issue {
        Issue {
            id: 7,
            project: Named {
                id: 1,
                name: "Tickets".into(),
            },
            subject: "Third".into(),
            description: None,
            status: Named {
                id: 2,
                name: "In Progress".into(),
            },
            priority: Named {
                id: 3,
                name: "High".into(),
            },
            custom_fields: Vec::new(),
            journals: vec![
                journal(
                    10,
                    &marker(Verb::Update, "r1"),
                    vec![attr("subject", "First", "Second")],
                ),
                journal(11, &note(Some("Looking"), Verb::Comment, "r2"), vec![]),
                journal(
                    12,
                    &note(Some("on it"), Verb::Transition, "r3"),
                    vec![attr("status_id", "1", "2")],
                ),
                journal(13, "", vec![attr("subject", "Second", "Third")]),
            ],
            allowed_statuses: None,
        }
    }

    #[test]
    fn a_change_reads_back_as_the_issue_was_right_after_it() {
        let issue = issue();
        let [(j, verb, text)] = &found(&issue, EffectKind::Change, "r1")[..] else {
            panic!("one journal carries r1");
        };
        let read = receipt(&issue, j, *verb, text, "r1", &mapping()).expect("reads");
        let ProviderEffect::Change {
            id,
            changes,
            ticket,
        } = read.effect
        else {
            panic!("a change");
        };
        assert_eq!(id, "10");
        assert_eq!(
            serde_json::to_value(&changes).expect("json"),
            json!({"title": {"from": "First", "to": "Second"}})
        );
        // As 10 left it: renamed, still New; one edit.
        assert_eq!(ticket.title.as_str(), "Second");
        assert_eq!(ticket.status.as_str(), "open");
        assert_eq!(ticket.version.get(), 2);

        let [(j, verb, text)] = &found(&issue, EffectKind::Change, "r3")[..] else {
            panic!("one journal carries r3");
        };
        let ProviderEffect::Change {
            changes, ticket, ..
        } = receipt(&issue, j, *verb, text, "r3", &mapping())
            .expect("reads")
            .effect
        else {
            panic!("a change");
        };
        assert_eq!(
            serde_json::to_value(&changes).expect("json"),
            json!({"status": {"from": "open", "to": "in_progress"}, "reason": {"from": null, "to": "on it"}})
        );
        assert_eq!(
            (
                ticket.title.as_str(),
                ticket.status.as_str(),
                ticket.version.get()
            ),
            ("Second", "in_progress", 3),
            "the comment is no edit; the later rename is undone"
        );
    }

    #[test]
    fn only_a_marker_line_of_this_reference_and_kind_counts() {
        let issue = issue();
        assert_eq!(found(&issue, EffectKind::Comment, "r2").len(), 1);
        assert!(
            found(&issue, EffectKind::Change, "r2").is_empty(),
            "a comment is no change"
        );
        assert!(
            found(&issue, EffectKind::Comment, "r").is_empty(),
            "a prefix is no match"
        );
        let mut copied = issue.clone();
        copied
            .journals
            .push(journal(14, "quoting [tickets comment r2] inline", vec![]));
        copied.journals.push(journal(
            15,
            &note(Some("Looking"), Verb::Comment, "r2"),
            vec![],
        ));
        let ids: Vec<u64> = found(&copied, EffectKind::Comment, "r2")
            .iter()
            .map(|(j, ..)| j.id)
            .collect();
        assert_eq!(
            ids,
            [11, 15],
            "a mention mid-line is not a marker; a repeat is"
        );
    }
}
