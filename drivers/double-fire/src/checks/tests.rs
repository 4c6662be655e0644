use std::collections::BTreeSet;

use super::*;

/// The table in the module docs (and the README) is how people read a
/// report: every check the code numbers must be listed there under
/// its number and name.
#[test]
fn every_policy_check_is_in_the_table() {
    let docs = include_str!("../lib.rs");
    for policy in Policy::ALL {
        for action in [Action::CreateTicket, Action::UpdateTicket] {
            let row = format!("//! | {} | {} |", policy.number(action), policy.slug());
            assert!(docs.contains(&row), "missing row: {row}");
        }
    }
}

#[test]
fn each_policy_has_its_own_numbers() {
    let mut numbers = BTreeSet::new();
    for policy in Policy::ALL {
        for action in Action::ALL {
            numbers.insert((policy.number(action), action == Action::CreateTicket));
        }
    }
    // Two per policy: create_ticket's and the lifecycle actions'.
    assert_eq!(numbers.len(), 2 * Policy::ALL.len(), "{numbers:?}");
    for action in lifecycle() {
        let check = Policy::CrossDoor.check(action, "rest->mcp");
        assert_eq!(check.name, format!("cross-door {action} [rest->mcp]"));
    }
    assert_eq!(
        Policy::CrossDoor
            .check(Action::CreateTicket, "rest->mcp")
            .name,
        "cross-door [rest->mcp]",
        "a create's check keeps its name"
    );
}
