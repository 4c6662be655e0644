//! The one rule for text, as a property on both databases: whatever title,
//! description and project id the validator accepts comes back from the
//! database byte for byte; whatever it refuses answers `Invalid` and writes
//! nothing. A NUL is always refused, so the rule is the kitchen's, not the
//! database's (PostgreSQL cannot store U+0000, SQLite can).

use kitchen::actions::CreateTicket;
use std::sync::atomic::{AtomicUsize, Ordering};

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Action, Kitchen, OperationKey, Outcome, TenantId, TicketDraft};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::support::ticket_count;

/// Characters any field may hold: printable ASCII, the rest of the BMP from
/// U+00A0 (letters, CJK, combining marks), invisible and special ones, and
/// the astral planes (emoji, unassigned and noncharacter code points).
fn storable_char() -> impl Strategy<Value = char> {
    use proptest::char::range;
    prop_oneof![
        4 => range(' ', '~'),
        2 => range('\u{a0}', '\u{d7ff}'),
        2 => range('\u{300}', '\u{36f}'),
        2 => range('\u{1f300}', '\u{1faff}'),
        1 => range('\u{10000}', '\u{10ffff}'),
        1 => prop::sample::select(vec![
            '\u{200b}', '\u{200d}', '\u{2028}', '\u{202e}', '\u{feff}', '\u{fffd}',
            '\u{ffff}', '\u{e000}',
        ]),
    ]
}

/// Anything at all, weighted towards control characters (NUL among them,
/// but rarely enough that the other controls are often the only problem).
fn wild_char() -> impl Strategy<Value = char> {
    use proptest::char::range;
    prop_oneof![
        4 => storable_char(),
        1 => any::<char>(),
        1 => range('\0', '\u{1f}'),
        1 => range('\u{7f}', '\u{9f}'),
    ]
}

fn text(
    chars: impl Strategy<Value = char> + 'static,
    lens: impl Strategy<Value = usize> + 'static,
) -> BoxedStrategy<String> {
    let chars = chars.boxed();
    lens.prop_flat_map(move |n| prop::collection::vec(chars.clone(), n))
        .prop_map(|cs| cs.into_iter().collect())
        .boxed()
}

/// `clean` with one to three NULs put in at random places.
fn with_nul(clean: BoxedStrategy<String>) -> BoxedStrategy<String> {
    (
        clean,
        prop::collection::vec(any::<prop::sample::Index>(), 1..=3),
    )
        .prop_map(|(s, at)| {
            let mut cs: Vec<char> = s.chars().collect();
            for i in at {
                cs.insert(i.index(cs.len() + 1), '\0');
            }
            cs.into_iter().collect()
        })
        .boxed()
}

/// A field's text: mostly clean, sometimes with a NUL, sometimes anything.
fn field(clean: BoxedStrategy<String>, wild: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![8 => clean.clone(), 2 => with_nul(clean), 1 => wild].boxed()
}

/// Slugs of 1 to 65 characters: valid ones, and one over the limit.
fn slug() -> BoxedStrategy<String> {
    let first = prop::sample::select(('a'..='z').chain('0'..='9').collect::<Vec<_>>());
    let rest = prop::sample::select(
        ('a'..='z')
            .chain('0'..='9')
            .chain(['_', '-'])
            .collect::<Vec<_>>(),
    );
    (first, prop::collection::vec(rest, 0..=64))
        .prop_map(|(f, r)| std::iter::once(f).chain(r).collect())
        .boxed()
}

/// Lengths short and around the limit (the limit itself and one over).
fn lens(short: usize, limit: usize) -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0..=short, 1 => limit - 3..=limit + 1]
}

fn draft() -> impl Strategy<Value = TicketDraft> {
    let project = field(slug(), text(wild_char(), 0..=66usize));
    let title = field(
        text(storable_char(), lens(40, kitchen::MAX_TITLE_CHARS)),
        text(wild_char(), lens(40, kitchen::MAX_TITLE_CHARS)),
    );
    // A description may hold line breaks and tabs.
    let description_char =
        prop_oneof![12 => storable_char(), 1 => prop::sample::select(vec!['\n', '\r', '\t'])];
    let description = prop::option::weighted(
        0.85,
        field(
            text(description_char, lens(80, kitchen::MAX_DESCRIPTION_CHARS)),
            text(wild_char(), lens(80, kitchen::MAX_DESCRIPTION_CHARS)),
        ),
    );
    (project, title, description).prop_map(|(project, title, description)| TicketDraft {
        project_id: Some(project),
        title: Some(title),
        description,
        priority: None,
    })
}

async fn check(
    kitchen: &Kitchen,
    tenant: TenantId,
    case: usize,
    draft: &TicketDraft,
) -> Result<(), TestCaseError> {
    let key = OperationKey::parse(format!("text-case-{case}")).expect("valid key");
    let infrastructure = |e: kitchen::KitchenError| {
        // The whole cause chain: the database's own message is in the source.
        TestCaseError::fail(format!("infrastructure error: {e}: {e:?}"))
    };
    let before = ticket_count(kitchen, tenant).await;
    let accepted = draft.validate().is_ok();
    let fields = [
        ("project_id", &draft.project_id),
        ("title", &draft.title),
        ("description", &draft.description),
    ];
    // Independent of the validator: a NUL can never be accepted.
    for (name, value) in fields {
        if value.as_deref().is_some_and(|v| v.contains('\0')) {
            prop_assert!(!accepted, "{name} holds a NUL and was accepted");
        }
    }

    let outcome = kitchen
        .write::<CreateTicket>(tenant, &key, draft)
        .await
        .map_err(infrastructure)?;
    match outcome {
        Outcome::Created(receipt) if accepted => {
            let stored = kitchen
                .ticket(tenant, receipt.result.id)
                .await
                .map_err(infrastructure)?
                .ok_or_else(|| TestCaseError::fail("created ticket not found"))?;
            // Compared with what the caller sent, not with what was parsed.
            prop_assert_eq!(
                Some(stored.project_id.as_str()),
                draft.project_id.as_deref()
            );
            prop_assert_eq!(Some(stored.title.as_str()), draft.title.as_deref());
            let sent = draft.description.as_deref().filter(|d| !d.is_empty());
            prop_assert_eq!(stored.description.as_ref().map(|d| d.as_str()), sent);
            prop_assert_eq!(&stored, &receipt.result);
            // The replay path reads the stored snapshot: the same ticket.
            let record = kitchen
                .operation(tenant, Action::CreateTicket, &key)
                .await
                .map_err(infrastructure)?
                .ok_or_else(|| TestCaseError::fail("no operation record"))?;
            let snapshot = record
                .result
                .ok_or_else(|| TestCaseError::fail("no result snapshot"))?;
            prop_assert_eq!(snapshot.parse::<kitchen::Ticket>().ok(), Some(stored));
            prop_assert_eq!(ticket_count(kitchen, tenant).await, before + 1);
        }
        Outcome::Invalid { violations } if !accepted => {
            prop_assert!(!violations.is_empty());
            for (name, value) in fields {
                if value.as_deref().is_some_and(|v| v.contains('\0')) {
                    prop_assert!(
                        violations
                            .iter()
                            .any(|v| v.field == name && v.code == "nul_character"),
                        "{} holds a NUL; violations: {:?}",
                        name,
                        violations
                    );
                }
            }
            prop_assert_eq!(ticket_count(kitchen, tenant).await, before);
            let record = kitchen
                .operation(tenant, Action::CreateTicket, &key)
                .await
                .map_err(infrastructure)?;
            prop_assert!(record.is_none(), "an invalid create recorded its key");
        }
        other => {
            return Err(TestCaseError::fail(format!(
                "validator accepted: {accepted}; kitchen answered {other:?}"
            )));
        }
    }
    Ok(())
}

/// One database and one tenant for every case; each case has its own key.
async fn accepted_text_round_trips_and_refused_text_writes_nothing(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let handle = tokio::runtime::Handle::current();
    // proptest's runner takes an Fn closure, so the case counter is atomic.
    let case = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 48,
        // A failing case shrinks against the database; bound how long.
        max_shrink_iters: 512,
        // The runner is not built by the proptest! macro, so it knows no
        // source file to keep regressions next to.
        failure_persistence: None,
        ..Config::default()
    });
    // The runner is synchronous; block_in_place lets it drive the kitchen
    // from inside this multi-threaded test runtime.
    let result = tokio::task::block_in_place(|| {
        runner.run(&draft(), |draft| {
            let n = case.fetch_add(1, Ordering::Relaxed);
            handle.block_on(check(&kitchen, tenant.id, n, &draft))
        })
    });
    kitchen.close().await;
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

kitchen::on_both_databases!(accepted_text_round_trips_and_refused_text_writes_nothing);
