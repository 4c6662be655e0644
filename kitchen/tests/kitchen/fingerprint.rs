//! What "the same request" means: properties of the fingerprint.

use kitchen::{Action, FINGERPRINT_VERSION, Fingerprint, Priority, TicketDraft};
use proptest::prelude::*;

fn fingerprint(draft: &TicketDraft) -> Fingerprint {
    Fingerprint::of(
        Action::CreateTicket,
        &draft.validate().expect("valid draft"),
    )
}

/// Valid drafts, described by their meaningful fields.
fn meaning() -> impl Strategy<Value = (String, String, Option<String>, Priority)> {
    (
        "[a-z0-9][a-z0-9_-]{0,20}",
        "[A-Za-z0-9][ -~]{0,40}",
        proptest::option::of("[ -~\n]{1,40}"),
        proptest::sample::select(Priority::ALL.to_vec()),
    )
}

/// The JSON a caller might send for a meaning: fields in any order, and the
/// defaults (priority normal, no description) either spelled out or left out.
fn as_json(
    (project, title, description, priority): &(String, String, Option<String>, Priority),
    order: &[usize],
    spell_out_defaults: bool,
) -> String {
    let mut fields = [
        Some(("project_id", serde_json::json!(project))),
        Some(("title", serde_json::json!(title))),
        match description {
            Some(d) => Some(("description", serde_json::json!(d))),
            None => spell_out_defaults.then(|| ("description", serde_json::json!(""))),
        },
        (*priority != Priority::Normal || spell_out_defaults)
            .then(|| ("priority", serde_json::json!(priority.as_str()))),
    ];
    let mut object = Vec::new();
    for &i in order {
        if let Some((name, value)) = fields[i].take() {
            object.push(format!("{}:{}", serde_json::json!(name), value));
        }
    }
    format!("{{{}}}", object.join(","))
}

proptest! {
    #[test]
    fn field_order_and_omitted_defaults_do_not_change_it(
        m in meaning(),
        order_a in Just(vec![0usize, 1, 2, 3]).prop_shuffle(),
        order_b in Just(vec![0usize, 1, 2, 3]).prop_shuffle(),
        defaults_a: bool,
        defaults_b: bool,
    ) {
        let a: TicketDraft = serde_json::from_str(&as_json(&m, &order_a, defaults_a)).expect("json");
        let b: TicketDraft = serde_json::from_str(&as_json(&m, &order_b, defaults_b)).expect("json");
        prop_assert_eq!(fingerprint(&a), fingerprint(&b));
        prop_assert_eq!(fingerprint(&a).version(), FINGERPRINT_VERSION);
    }

    #[test]
    fn every_meaningful_field_changes_it(a in meaning(), b in meaning()) {
        prop_assume!(a != b);
        let draft = |(project, title, description, priority): &(String, String, Option<String>, Priority)| TicketDraft {
            project_id: Some(project.clone()),
            title: Some(title.clone()),
            description: description.clone(),
            priority: Some(priority.as_str().into()),
        };
        prop_assert_ne!(fingerprint(&draft(&a)), fingerprint(&draft(&b)));
    }

    #[test]
    fn changing_any_one_field_changes_it(m in meaning(), which in 0usize..4) {
        let (project, title, description, priority) = m.clone();
        let base = TicketDraft {
            project_id: Some(project.clone()),
            title: Some(title.clone()),
            description: description.clone(),
            priority: Some(priority.as_str().into()),
        };
        let mut changed = base.clone();
        match which {
            0 => changed.project_id = Some(format!("{project}x")),
            1 => changed.title = Some(format!("{title}!")),
            2 => changed.description = Some(format!("{}+", description.unwrap_or_default())),
            _ => {
                let other = Priority::ALL.into_iter().find(|p| *p != priority).expect("4 priorities");
                changed.priority = Some(other.as_str().into());
            }
        }
        prop_assert_ne!(fingerprint(&base), fingerprint(&changed));
    }
}

#[test]
fn the_key_and_tenant_are_not_part_of_it() {
    // Fingerprint::of takes only the action and the command: by construction
    // nothing else can reach it. Pin the encoding so an accidental change of
    // the canonical form (which would turn old replays into conflicts) fails.
    let draft = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Disk full".into()),
        ..TicketDraft::default()
    };
    insta::assert_snapshot!(fingerprint(&draft).to_string());
}
