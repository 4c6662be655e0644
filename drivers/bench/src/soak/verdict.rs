//! The verdict, from the database's own rows: per key exactly one ticket
//! (no duplicates), every acknowledged ticket there under its key (none
//! lost), every key's operation record `succeeded` (settled) and naming
//! the acknowledged ticket. Pure, so that it is tested without a server.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::keys;

/// A ticket row of the soak's project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredTicket {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its title, which carries the key it was made under.
    pub(crate) title: String,
}

/// An operation record of `create_ticket`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredOperation {
    /// The operation key.
    pub(crate) key: String,
    /// `succeeded` once settled.
    pub(crate) state: String,
    /// The ticket it made.
    pub(crate) ticket_id: Option<Uuid>,
}

/// What the soak's tenant holds after the run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored {
    /// The tickets of the soak's project.
    pub(crate) tickets: Vec<StoredTicket>,
    /// The `create_ticket` records.
    pub(crate) operations: Vec<StoredOperation>,
}

/// At most this many violations are described one by one.
const MAX_FINDINGS: usize = 10;

/// The violations found; all zero on a good run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Tickets beyond one per key, plus tickets that carry no planned key.
    pub(crate) duplicates: usize,
    /// Acknowledged tickets not in the database under their key.
    pub(crate) lost: usize,
    /// Planned keys without a `succeeded` operation record.
    pub(crate) unsettled: usize,
    /// Settled keys whose record names another ticket than the one
    /// acknowledged.
    pub(crate) mismatched: usize,
    /// The first few violations, one line each (which key, what is wrong),
    /// so that a failed run says where to look.
    pub(crate) findings: Vec<String>,
}

impl Verdict {
    fn note(&mut self, finding: impl FnOnce() -> String) {
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(finding());
        }
    }
}

/// Judges `stored` against `planned`: every key the clients had, with the
/// ticket its definite answer named (none if it never got one).
pub(crate) fn judge(planned: &BTreeMap<String, Option<Uuid>>, stored: &Stored) -> Verdict {
    let mut verdict = Verdict::default();
    let mut tickets_of: HashMap<&str, Vec<Uuid>> = HashMap::new();
    for ticket in &stored.tickets {
        match keys::key_of(&ticket.title) {
            Some(key) if planned.contains_key(key) => {
                tickets_of.entry(key).or_default().push(ticket.id);
            }
            _ => {
                verdict.duplicates += 1;
                verdict.note(|| {
                    format!(
                        "ticket {} carries no planned key: {:?}",
                        ticket.id, ticket.title
                    )
                });
            }
        }
    }
    for (key, ids) in &tickets_of {
        if ids.len() > 1 {
            verdict.duplicates += ids.len() - 1;
            verdict.note(|| format!("{key}: {} tickets {ids:?}", ids.len()));
        }
    }
    let records: HashMap<&str, &StoredOperation> = stored
        .operations
        .iter()
        .map(|op| (op.key.as_str(), op))
        .collect();
    for (key, acknowledged) in planned {
        if let Some(id) = acknowledged
            && !tickets_of
                .get(key.as_str())
                .is_some_and(|ids| ids.contains(id))
        {
            verdict.lost += 1;
            verdict.note(|| format!("{key}: the acknowledged ticket {id} is not there under it"));
        }
        match records.get(key.as_str()) {
            Some(op) if op.state == "succeeded" => {
                if acknowledged.is_some() && op.ticket_id != *acknowledged {
                    verdict.mismatched += 1;
                    verdict.note(|| {
                        format!(
                            "{key}: the record names {:?}, the answer {acknowledged:?}",
                            op.ticket_id
                        )
                    });
                }
            }
            Some(op) => {
                verdict.unsettled += 1;
                verdict.note(|| format!("{key}: its record is {}", op.state));
            }
            None => {
                verdict.unsettled += 1;
                verdict.note(|| format!("{key}: no operation record"));
            }
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn ticket(n: u128, key: &str) -> StoredTicket {
        StoredTicket {
            id: id(n),
            title: keys::title(key),
        }
    }

    fn settled(key: &str, n: u128) -> StoredOperation {
        StoredOperation {
            key: key.into(),
            state: "succeeded".into(),
            ticket_id: Some(id(n)),
        }
    }

    fn planned(pairs: &[(&str, Option<u128>)]) -> BTreeMap<String, Option<Uuid>> {
        pairs
            .iter()
            .map(|(k, n)| ((*k).to_owned(), n.map(id)))
            .collect()
    }

    #[test]
    fn one_settled_ticket_per_key_is_clean() {
        let stored = Stored {
            tickets: vec![ticket(1, "soak-c0-k0"), ticket(2, "soak-c0-k1")],
            operations: vec![settled("soak-c0-k0", 1), settled("soak-c0-k1", 2)],
        };
        let planned = planned(&[("soak-c0-k0", Some(1)), ("soak-c0-k1", Some(2))]);
        assert_eq!(judge(&planned, &stored), Verdict::default());
    }

    #[test]
    fn a_second_ticket_under_one_key_is_a_duplicate() {
        let stored = Stored {
            tickets: vec![
                ticket(1, "soak-c0-k0"),
                ticket(2, "soak-c0-k0"),
                ticket(3, "stray"),
            ],
            operations: vec![settled("soak-c0-k0", 1)],
        };
        let verdict = judge(&planned(&[("soak-c0-k0", Some(1))]), &stored);
        assert_eq!(verdict.duplicates, 2, "one extra ticket and one stray");
        assert_eq!(verdict.lost, 0);
    }

    #[test]
    fn an_acknowledged_ticket_missing_or_unrecorded_is_caught() {
        let stored = Stored {
            tickets: vec![ticket(2, "soak-c0-k1")],
            operations: vec![settled("soak-c0-k1", 9)],
        };
        let planned = planned(&[("soak-c0-k0", Some(1)), ("soak-c0-k1", Some(2))]);
        let verdict = judge(&planned, &stored);
        assert_eq!(verdict.lost, 1, "k0's ticket is gone");
        assert_eq!(verdict.unsettled, 1, "k0 has no record");
        assert_eq!(verdict.mismatched, 1, "k1's record names another ticket");
        assert_eq!(verdict.duplicates, 0);
        assert_eq!(verdict.findings.len(), 3, "{:?}", verdict.findings);
    }
}
