//! A create's description, stored once.
//!
//! A create writes its description three times over: in the ticket, in
//! the frozen answer on its operation record (the ticket as it was made),
//! and in its first history entry (every field it was made with). With a
//! long description that is three copies of the same text. So the record
//! and the history entry store their JSON **around** it: a head that ends
//! just before the description's JSON string and a tail that starts just
//! after it (`result_snapshot` + `result_snapshot_tail`, `changes` +
//! `changes_tail`), and the text comes from the ticket when the row is
//! read. The frozen answer stays byte-exact: the head, the description as
//! `serde_json` writes a string, and the tail are the bytes that were cut.
//!
//! Invariant: a row with a tail holds head + (its ticket's *current*
//! description, as JSON) + tail. So before a ticket's description changes,
//! every row that shares it gets its copy back (`tickets::save`, with
//! [`UNSHARE_HISTORY`] and [`UNSHARE_RECORDS`]); after that the rows are
//! whole again and the new text is the ticket's alone. (Tickets are never
//! deleted, so the text a row shares is always there.) A description that changes is stored again by
//! the change anyway (its history entry's `from`), so nothing is lost by
//! waiting until then.
//!
//! Only the rows written together with their ticket share it: a create's
//! record and history entry on the local backend (the planned write, on
//! either database), and the history entry of the local copy the remote
//! backend makes. A record settled later (by the remote ledger, by an
//! operator) is stored whole.

use crate::KitchenError;

/// In a frozen answer (a ticket), what precedes the description's string.
pub(crate) const IN_SNAPSHOT: &str = "\"description\":";

/// In a create's history entry, what precedes it (`Changes` serializes
/// fields by name, and each as `from` then `to`).
pub(crate) const IN_HISTORY: &str = "\"description\":{\"from\":null,\"to\":";

/// The ticket's description, read with a row that may share it: `NULL`
/// unless the row has a tail (so a whole row costs no lookup). `$table` is
/// the row's table, unaliased in the query's `FROM`.
macro_rules! shared_description {
    ($table:literal, $tail:literal) => {
        concat!(
            "CASE WHEN ",
            $tail,
            " IS NULL THEN NULL ELSE (SELECT t.description FROM tickets t WHERE t.tenant_id = ",
            $table,
            ".tenant_id AND t.id = ",
            $table,
            ".ticket_id) END AS shared_description"
        )
    };
}
pub(crate) use shared_description;

/// Gives every history entry of ticket `$2` that shares its description
/// its copy (`$3`, the description as JSON).
pub(crate) const UNSHARE_HISTORY: &str = "UPDATE ticket_history SET changes = changes || $3 || changes_tail, \
     changes_tail = NULL \
     WHERE tenant_id = $1 AND ticket_id = $2 AND changes_tail IS NOT NULL";

/// The same for the operation records of ticket `$2`: its create's, found
/// by the key its history entry names (served by the primary key; the
/// records have no index on `ticket_id`, and need none for this).
pub(crate) const UNSHARE_RECORDS: &str = "UPDATE operations \
     SET result_snapshot = result_snapshot || $3 || result_snapshot_tail, \
     result_snapshot_tail = NULL \
     WHERE tenant_id = $1 AND action = 'create_ticket' AND result_snapshot_tail IS NOT NULL \
     AND operation_key IN (SELECT operation_key FROM ticket_history \
         WHERE tenant_id = $1 AND ticket_id = $2 AND action = 'create_ticket') \
     AND ticket_id = $2";

/// A JSON text as stored: whole (`tail` is `None`), or cut around a
/// description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored<'a> {
    /// All of it, or what precedes the description's string.
    pub(crate) head: &'a str,
    /// What follows the description's string, when cut.
    pub(crate) tail: Option<&'a str>,
}

impl<'a> Stored<'a> {
    /// Stored whole.
    pub(crate) fn whole(json: &'a str) -> Self {
        Self {
            head: json,
            tail: None,
        }
    }
}

/// `json` cut around `description` where it follows `before`, if it does
/// exactly once; whole otherwise (no description, or a text where the cut
/// would be ambiguous), which is always correct, only larger.
pub(crate) fn split<'a>(json: &'a str, before: &str, description: Option<&str>) -> Stored<'a> {
    let Some(description) = description else {
        return Stored::whole(json);
    };
    let needle = format!("{before}{}", as_json(description));
    let mut found = json.match_indices(&needle);
    match (found.next(), found.next()) {
        (Some((at, _)), None) => Stored {
            head: &json[..at + before.len()],
            tail: Some(&json[at + needle.len()..]),
        },
        _ => Stored::whole(json),
    }
}

/// The whole text of a row read back: `head` + the description + `tail`,
/// or `head` alone when whole.
pub(crate) fn join(
    head: String,
    tail: Option<String>,
    description: Option<String>,
) -> Result<String, KitchenError> {
    let Some(tail) = tail else {
        return Ok(head);
    };
    let Some(description) = description else {
        return Err(KitchenError::CorruptRecord(
            "a row shares its ticket's description, but the ticket has none".into(),
        ));
    };
    let text = as_json(&description);
    let mut whole = String::with_capacity(head.len() + text.len() + tail.len());
    whole.push_str(&head);
    whole.push_str(&text);
    whole.push_str(&tail);
    Ok(whole)
}

/// A string as `serde_json` writes it: the only encoding a cut is ever
/// joined with.
pub(crate) fn as_json(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_text_joins_back_to_the_same_bytes() {
        for description in ["plain", "two\nlines \"quoted\" \\ \u{1}\u{7f}\u{2028} é 🎫"] {
            let json = serde_json::json!({
                "title": description,
                "description": description,
                "version": 1,
            })
            .to_string();
            let stored = split(&json, IN_SNAPSHOT, Some(description));
            let tail = stored.tail.expect("cut");
            assert!(stored.head.ends_with(IN_SNAPSHOT), "{}", stored.head);
            let joined = join(
                stored.head.to_owned(),
                Some(tail.to_owned()),
                Some(description.to_owned()),
            )
            .expect("joins");
            assert_eq!(joined, json);
        }
    }

    #[test]
    fn a_text_is_stored_whole_when_the_cut_is_absent_or_ambiguous() {
        let json = r#"{"description":"a","other":{"description":"a"}}"#;
        assert_eq!(split(json, IN_SNAPSHOT, Some("a")), Stored::whole(json));
        assert_eq!(split(json, IN_SNAPSHOT, Some("b")), Stored::whole(json));
        assert_eq!(split(json, IN_SNAPSHOT, None), Stored::whole(json));
    }

    #[test]
    fn a_row_that_shares_a_description_its_ticket_lacks_is_corrupt() {
        assert!(join("{".into(), Some("}".into()), None).is_err());
        assert_eq!(join("{}".into(), None, None).expect("whole"), "{}");
    }
}
