//! What an answer proves. The rules err one way only: anything that might
//! have made the effect is [`Dispatched::Ambiguous`], and a search proves
//! absence only when it answered about the reference asked for. A wrong
//! "nothing was made" is how duplicates happen; a wrong "found" is how a
//! lost write is reported as done.

use kitchen::{Dispatched, EffectKind, Lookup};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use crate::wire::{ChangeBody, CommentBody, ErrorBody, Found, Made, TicketBody};

/// What a write's answer proves, for the write of `external_ref` that
/// makes an object of `kind` (on ticket `ticket`, for a change or a
/// comment).
pub(crate) fn dispatched(
    kind: EffectKind,
    ticket: Option<&str>,
    status: StatusCode,
    body: &str,
    replayed: bool,
    external_ref: &str,
) -> Dispatched {
    if status.is_success() {
        return match kind {
            EffectKind::Ticket => done::<TicketBody>(status, body, replayed, external_ref, None),
            EffectKind::Change => done::<ChangeBody>(status, body, replayed, external_ref, ticket),
            EffectKind::Comment => {
                done::<CommentBody>(status, body, replayed, external_ref, ticket)
            }
        };
    }
    let said = serde_json::from_str::<ErrorBody>(body)
        .map(|b| b.error)
        .unwrap_or_else(|_| body.chars().take(200).collect());
    match status {
        // Throttled: turned away before any work.
        StatusCode::TOO_MANY_REQUESTS => Dispatched::NotSent(format!("{status}: {said}")),
        // A timeout or a conflict on the key says nothing about the effect.
        StatusCode::REQUEST_TIMEOUT | StatusCode::CONFLICT => {
            Dispatched::Ambiguous(format!("{status}: {said}"))
        }
        // A refusal on the merits: invalid, no such ticket, another version
        // (412), a move the workflow forbids.
        s if s.is_client_error() => Dispatched::Rejected(format!("{status}: {said}")),
        // 5xx (and anything stranger): the provider may have committed
        // before failing.
        _ => Dispatched::Ambiguous(format!("{status}: {said}")),
    }
}

/// A yes: done, if the answer is the object this write makes; otherwise
/// ambiguous (a yes about something else says nothing about ours, which may
/// or may not have been made: only a search can tell).
fn done<T: Made + HasTicket + DeserializeOwned>(
    status: StatusCode,
    body: &str,
    replayed: bool,
    external_ref: &str,
    ticket: Option<&str>,
) -> Dispatched {
    let made = match serde_json::from_str::<T>(body) {
        Ok(made) => made,
        Err(e) => {
            return Dispatched::Ambiguous(format!("{status} with an unreadable answer: {e}"));
        }
    };
    if made.external_ref() != external_ref {
        return Dispatched::Ambiguous(format!(
            "{status} with {} for another reference ({}, not {external_ref})",
            made.id(),
            made.external_ref()
        ));
    }
    if let (Some(asked), Some(answered)) = (ticket, made.ticket())
        && asked != answered
    {
        return Dispatched::Ambiguous(format!(
            "{status} with {} on ticket {answered}, not {asked}",
            made.id()
        ));
    }
    match made.receipt() {
        Ok(receipt) => Dispatched::Done { receipt, replayed },
        Err(why) => Dispatched::Ambiguous(format!("{status} with an unreadable answer: {why}")),
    }
}

/// The ticket an object is on, for the objects that are on one.
pub(crate) trait HasTicket {
    fn ticket(&self) -> Option<&str>;
}

impl HasTicket for TicketBody {
    fn ticket(&self) -> Option<&str> {
        None
    }
}

impl HasTicket for ChangeBody {
    fn ticket(&self) -> Option<&str> {
        Some(&self.ticket_id)
    }
}

impl HasTicket for CommentBody {
    fn ticket(&self) -> Option<&str> {
        Some(&self.ticket_id)
    }
}

/// What a search's answer proves, for objects of `kind` carrying
/// `external_ref`.
pub(crate) fn searched(kind: EffectKind, body: &str, external_ref: &str) -> Lookup {
    match kind {
        EffectKind::Ticket => lookup::<TicketBody>(body, external_ref),
        EffectKind::Change => lookup::<ChangeBody>(body, external_ref),
        EffectKind::Comment => lookup::<CommentBody>(body, external_ref),
    }
}

/// Only an answer that is well formed and about this reference settles
/// anything: objects that all carry another reference mean the provider
/// did not search for ours (a filter it ignored, a broken index), which
/// proves no absence. Several objects with our reference mean the provider
/// holds the effect more than once: the oldest (listed first) is the
/// original, and the others are reported, never hidden.
fn lookup<T: Made + DeserializeOwned>(body: &str, external_ref: &str) -> Lookup {
    let found = match serde_json::from_str::<Found<T>>(body) {
        Ok(found) => found.items,
        Err(e) => return Lookup::Failed(format!("unreadable search answer: {e}")),
    };
    let total = found.len();
    let mut ours = found
        .into_iter()
        .filter(|item| item.external_ref() == external_ref);
    let Some(original) = ours.next() else {
        return if total > 0 {
            Lookup::Failed(format!(
                "the search for {external_ref} answered {total} objects for other references \
                 and none for it: the provider did not search for it, so absence is not proven"
            ))
        } else {
            Lookup::Absent
        };
    };
    let duplicates = ours.map(|item| item.id().to_owned()).collect();
    match original.receipt() {
        Ok(receipt) => Lookup::Found {
            receipt,
            duplicates,
        },
        Err(why) => Lookup::Failed(format!("unreadable search answer: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use kitchen::ProviderEffect;

    use super::*;

    fn create(status: StatusCode, body: &str, replayed: bool) -> Dispatched {
        dispatched(EffectKind::Ticket, None, status, body, replayed, "r")
    }

    const TICKET: &str = r#"{"id":"SIM-1","external_ref":"r","project_id":"ops","title":"Disk full","description":null,"priority":"high"}"#;

    fn change(external_ref: &str, ticket: &str, shown: &str, version: i64) -> String {
        format!(
            r#"{{"id":"CHG-1","external_ref":"{external_ref}","ticket_id":"{ticket}","kind":"update",
               "changes":{{"title":{{"from":"Disk full","to":"Disk full on db-1"}}}},
               "ticket":{{"id":"{shown}","external_ref":"t","project_id":"ops","title":"Disk full on db-1",
               "description":null,"priority":"high","status":"open","assignee":null,"version":{version}}}}}"#
        )
    }

    #[test]
    fn a_yes_that_is_not_about_this_write_is_ambiguous() {
        for body in [
            r#"{"id":"SIM-1","external_ref":"someone-else","project_id":"ops","title":"x","description":null,"priority":"high"}"#,
            "not json",
            "",
            r#"{"id":"SIM-1"}"#,
            r#"[{"id":"SIM-1","external_ref":"r"}]"#,
        ] {
            assert!(
                matches!(
                    create(StatusCode::CREATED, body, false),
                    Dispatched::Ambiguous(_)
                ),
                "{body}"
            );
        }
        let update = |body: &str| {
            dispatched(
                EffectKind::Change,
                Some("SIM-1"),
                StatusCode::CREATED,
                body,
                false,
                "r",
            )
        };
        assert!(matches!(
            update(&change("r", "SIM-1", "SIM-1", 2)),
            Dispatched::Done { receipt, .. }
                if matches!(&receipt.effect, ProviderEffect::Change { ticket, .. } if ticket.version.get() == 2)
        ));
        for garbage in [
            change("other", "SIM-1", "SIM-1", 2),
            // A change to another ticket than the one asked for.
            change("r", "SIM-2", "SIM-2", 2),
            // A change whose ticket is not the one it says it changed.
            change("r", "SIM-1", "SIM-2", 2),
            // A ticket the service could not keep (version 0).
            change("r", "SIM-1", "SIM-1", 0),
            // A ticket where a change was expected.
            TICKET.to_owned(),
        ] {
            assert!(
                matches!(update(&garbage), Dispatched::Ambiguous(_)),
                "{garbage}"
            );
        }
    }

    #[test]
    fn a_search_proves_absence_only_when_it_answered_about_this_reference() {
        let ours = TICKET;
        let theirs = TICKET.replace(r#""external_ref":"r""#, r#""external_ref":"q""#);
        let search = |body: &str| searched(EffectKind::Ticket, body, "r");
        assert_eq!(search(r#"{"tickets":[]}"#), Lookup::Absent);
        assert!(matches!(
            search(&format!(r#"{{"tickets":[{theirs},{ours}]}}"#)),
            Lookup::Found { receipt, duplicates }
                if receipt.effect.id() == "SIM-1" && duplicates.is_empty()
        ));
        for garbage in [
            format!(r#"{{"tickets":[{theirs}]}}"#),
            "not json".to_owned(),
            String::new(),
            r#"{"tickets":[{"id":"SIM-1"}]}"#.to_owned(),
            r#"{"results":[]}"#.to_owned(),
        ] {
            assert!(matches!(search(&garbage), Lookup::Failed(_)), "{garbage}");
        }
        // Comments and changes are searched in their own lists.
        let comment = r#"{"id":"CMT-1","external_ref":"r","ticket_id":"SIM-1","body":"hi"}"#;
        assert!(matches!(
            searched(EffectKind::Comment, &format!(r#"{{"comments":[{comment}]}}"#), "r"),
            Lookup::Found { receipt, .. } if receipt.effect == ProviderEffect::Comment { id: "CMT-1".into() }
        ));
        assert!(matches!(
            searched(
                EffectKind::Change,
                &format!(r#"{{"changes":[{}]}}"#, change("r", "SIM-1", "SIM-1", 2)),
                "r"
            ),
            Lookup::Found { .. }
        ));
    }

    #[test]
    fn two_objects_for_one_reference_are_a_duplicate_reported_with_the_oldest_kept() {
        let copy = TICKET.replace("SIM-1", "SIM-7");
        let body = format!(r#"{{"tickets":[{TICKET},{copy}]}}"#);
        match searched(EffectKind::Ticket, &body, "r") {
            Lookup::Found {
                receipt,
                duplicates,
            } => {
                assert_eq!(receipt.effect.id(), "SIM-1");
                assert_eq!(duplicates, ["SIM-7"]);
            }
            other => panic!("expected found with a duplicate, got {other:?}"),
        }
    }

    #[test]
    fn only_a_refusal_on_the_merits_proves_nothing_was_made() {
        assert!(matches!(
            create(StatusCode::CREATED, TICKET, false),
            Dispatched::Done {
                replayed: false,
                ..
            }
        ));
        assert!(matches!(
            create(StatusCode::OK, TICKET, true),
            Dispatched::Done { replayed: true, .. }
        ));
        assert!(matches!(
            create(StatusCode::CREATED, "{", false),
            Dispatched::Ambiguous(_)
        ));
        assert!(matches!(
            create(StatusCode::UNPROCESSABLE_ENTITY, r#"{"error":"title is empty"}"#, false),
            Dispatched::Rejected(m) if m.contains("title is empty")
        ));
        for refused in [
            StatusCode::NOT_FOUND,
            StatusCode::PRECONDITION_FAILED,
            StatusCode::UNPROCESSABLE_ENTITY,
        ] {
            assert!(
                matches!(create(refused, "", false), Dispatched::Rejected(_)),
                "{refused}"
            );
        }
        for status in [
            StatusCode::INTERNAL_SERVER_ERROR,
            StatusCode::BAD_GATEWAY,
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::REQUEST_TIMEOUT,
            StatusCode::CONFLICT,
        ] {
            assert!(
                matches!(create(status, "", false), Dispatched::Ambiguous(_)),
                "{status}"
            );
        }
        assert!(matches!(
            create(StatusCode::TOO_MANY_REQUESTS, "", false),
            Dispatched::NotSent(_)
        ));
    }
}
