//! How the service's statuses and priorities are Redmine's, both ways.
//!
//! Writing needs one Redmine status per status of ours (a setting, with
//! Redmine's default statuses as its default). Reading must map every
//! Redmine status, since people move issues in Redmine's own screens too:
//! a status named in the setting reads back as ours; any other reads as
//! `closed` when Redmine counts it closed ("Rejected") and `in_progress`
//! otherwise ("Feedback"). Priorities map by name (Low, Normal, High,
//! Urgent); one above Urgent in Redmine's order ("Immediate") reads as
//! `urgent`, one below Low as `low`, any other as `normal`.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use kitchen::{Priority, TicketStatus};

use super::wire::{Named, Status};

/// Which Redmine status (by name) each status of ours is written as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusNames(HashMap<TicketStatus, String>);

impl Default for StatusNames {
    /// Redmine's default statuses: New, In Progress, Resolved, Closed.
    fn default() -> Self {
        Self(HashMap::from([
            (TicketStatus::Open, "New".to_owned()),
            (TicketStatus::InProgress, "In Progress".to_owned()),
            (TicketStatus::Resolved, "Resolved".to_owned()),
            (TicketStatus::Closed, "Closed".to_owned()),
        ]))
    }
}

impl StatusNames {
    /// The Redmine status name `status` is written as.
    pub fn name(&self, status: TicketStatus) -> &str {
        &self.0[&status]
    }
}

impl fmt::Display for StatusNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = TicketStatus::ALL
            .iter()
            .map(|s| format!("{}={}", s.as_str(), self.name(*s)))
            .collect();
        f.write_str(&pairs.join(","))
    }
}

impl FromStr for StatusNames {
    type Err = String;

    /// `open=New,in_progress=In Progress,resolved=Resolved,closed=Closed`:
    /// every status of ours once. Names are Redmine's, as its screens
    /// show them (matched exactly).
    fn from_str(raw: &str) -> Result<Self, String> {
        let mut map = HashMap::new();
        for pair in raw.split(',').filter(|p| !p.trim().is_empty()) {
            let Some((ours, theirs)) = pair.split_once('=') else {
                return Err(format!(
                    "`{pair}` is not `our_status=Redmine status`, e.g. `in_progress=In Progress`"
                ));
            };
            let ours = TicketStatus::parse_field(ours.trim(), "status").map_err(|v| v.message)?;
            let theirs = theirs.trim();
            if theirs.is_empty() {
                return Err(format!("{} has no Redmine status", ours.as_str()));
            }
            if map.insert(ours, theirs.to_owned()).is_some() {
                return Err(format!("{} is named twice", ours.as_str()));
            }
        }
        let missing: Vec<&str> = TicketStatus::ALL
            .iter()
            .filter(|s| !map.contains_key(*s))
            .map(|s| s.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "every status needs a Redmine status; missing: {}",
                missing.join(", ")
            ));
        }
        Ok(Self(map))
    }
}

/// The ids of one Redmine installation, resolved at start.
#[derive(Debug, Clone)]
pub(crate) struct Mapping {
    status_to: HashMap<TicketStatus, u64>,
    status_from: HashMap<u64, TicketStatus>,
    priority_to: HashMap<Priority, u64>,
    priority_from: HashMap<u64, Priority>,
}

impl Mapping {
    /// The mapping for Redmine's `statuses` and `priorities` (in its
    /// order), or what is missing there.
    pub(crate) fn resolve(
        names: &StatusNames,
        statuses: &[Status],
        priorities: &[Named],
    ) -> Result<Self, String> {
        let mut status_to = HashMap::new();
        for ours in TicketStatus::ALL {
            let name = names.name(ours);
            let Some(found) = statuses.iter().find(|s| s.name == name) else {
                let known: Vec<&str> = statuses.iter().map(|s| s.name.as_str()).collect();
                return Err(format!(
                    "REDMINE_STATUSES: Redmine has no status named `{name}` (for {}); it has: {}",
                    ours.as_str(),
                    known.join(", ")
                ));
            };
            status_to.insert(ours, found.id);
        }
        let status_from = statuses
            .iter()
            .map(|s| {
                let ours = TicketStatus::ALL
                    .into_iter()
                    .find(|o| status_to[o] == s.id)
                    .unwrap_or(if s.is_closed {
                        TicketStatus::Closed
                    } else {
                        TicketStatus::InProgress
                    });
                (s.id, ours)
            })
            .collect();
        let position = |name: &str| priorities.iter().position(|p| p.name == name);
        let mut priority_to = HashMap::new();
        for ours in Priority::ALL {
            let name = redmine_priority(ours);
            let Some(at) = position(name) else {
                let known: Vec<&str> = priorities.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "Redmine has no issue priority named `{name}` (for {}); it has: {}. \
                     The adapter maps low, normal, high and urgent to Redmine's default \
                     priorities by name.",
                    ours.as_str(),
                    known.join(", ")
                ));
            };
            priority_to.insert(ours, priorities[at].id);
        }
        let (low, urgent) = (position("Low"), position("Urgent"));
        let priority_from = priorities
            .iter()
            .enumerate()
            .map(|(at, p)| {
                let ours = Priority::ALL
                    .into_iter()
                    .find(|o| priority_to[o] == p.id)
                    .unwrap_or_else(|| {
                        if urgent.is_some_and(|u| at > u) {
                            Priority::Urgent
                        } else if low.is_some_and(|l| at < l) {
                            Priority::Low
                        } else {
                            Priority::Normal
                        }
                    });
                (p.id, ours)
            })
            .collect();
        Ok(Self {
            status_to,
            status_from,
            priority_to,
            priority_from,
        })
    }

    /// Redmine's id of our `status`.
    pub(crate) fn status_id(&self, status: TicketStatus) -> u64 {
        self.status_to[&status]
    }

    /// Ours for Redmine's status `id`, if Redmine had it at start.
    pub(crate) fn status(&self, id: u64) -> Result<TicketStatus, String> {
        self.status_from
            .get(&id)
            .copied()
            .ok_or_else(|| format!("Redmine status {id} is not one it had at start"))
    }

    /// Redmine's id of our `priority`.
    pub(crate) fn priority_id(&self, priority: Priority) -> u64 {
        self.priority_to[&priority]
    }

    /// Ours for Redmine's priority `id`, if Redmine had it at start.
    pub(crate) fn priority(&self, id: u64) -> Result<Priority, String> {
        self.priority_from
            .get(&id)
            .copied()
            .ok_or_else(|| format!("Redmine priority {id} is not one it had at start"))
    }
}

/// The name of Redmine's default priority for ours.
fn redmine_priority(priority: Priority) -> &'static str {
    match priority {
        Priority::Low => "Low",
        Priority::Normal => "Normal",
        Priority::High => "High",
        Priority::Urgent => "Urgent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(id: u64, name: &str, is_closed: bool) -> Status {
        Status {
            id,
            name: name.into(),
            is_closed,
        }
    }

    fn named(id: u64, name: &str) -> Named {
        Named {
            id,
            name: name.into(),
        }
    }

    fn redmine_defaults() -> Mapping {
        let statuses = [
            status(1, "New", false),
            status(2, "In Progress", false),
            status(3, "Resolved", false),
            status(4, "Feedback", false),
            status(5, "Closed", true),
            status(6, "Rejected", true),
        ];
        let priorities = [
            named(1, "Low"),
            named(2, "Normal"),
            named(3, "High"),
            named(4, "Urgent"),
            named(5, "Immediate"),
        ];
        Mapping::resolve(&StatusNames::default(), &statuses, &priorities).expect("defaults map")
    }

    #[test]
    fn every_redmine_status_and_priority_reads_as_one_of_ours() {
        let m = redmine_defaults();
        assert_eq!(m.status_id(TicketStatus::InProgress), 2);
        assert_eq!(m.status(4), Ok(TicketStatus::InProgress), "Feedback");
        assert_eq!(m.status(6), Ok(TicketStatus::Closed), "Rejected");
        assert!(m.status(7).is_err());
        assert_eq!(m.priority_id(Priority::High), 3);
        assert_eq!(m.priority(5), Ok(Priority::Urgent), "Immediate");
    }

    #[test]
    fn the_status_setting_names_every_status_once() {
        let parsed: StatusNames = "open=Nouveau, in_progress=En cours,resolved=Résolu,closed=Fermé"
            .parse()
            .expect("a full mapping");
        assert_eq!(parsed.name(TicketStatus::InProgress), "En cours");
        assert_eq!(
            StatusNames::default().to_string().parse::<StatusNames>(),
            Ok(StatusNames::default())
        );
        for bad in ["open=New", "open=New,open=New", "opened=New", "open"] {
            assert!(bad.parse::<StatusNames>().is_err(), "{bad}");
        }
        let missing = Mapping::resolve(
            &"open=Neu,in_progress=In Progress,resolved=Resolved,closed=Closed"
                .parse()
                .expect("parses"),
            &[status(1, "New", false)],
            &[],
        )
        .expect_err("no such status");
        assert!(
            missing.contains("REDMINE_STATUSES") && missing.contains("Neu"),
            "{missing}"
        );
    }
}
