//! The likely-duplicate guard: a create or a comment under a *new* key
//! whose content matches a recent write under another key (an agent that
//! minted a fresh key for its retry) is pointed at that write (`warn`) or
//! refused with the key left unused (`confirm`), unless the caller says it
//! means a new one. Replays and conflicts never meet the guard; it never
//! looks across tenants or past its window; in `confirm`, two racing
//! writes of the same content (one kitchen or two) make one effect; in
//! `warn`, of racing writes all but at most one are pointed at another.

use std::time::Duration;

use kitchen::actions::{AddComment, CreateTicket};
use kitchen::fake_provider::FakeProvider;
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, Clock, DuplicateGuard, EarlierWrite, EffectKind, GuardMode, Kitchen, KitchenConfig,
    OperationKey, OperationState, Outcome, Refusal, Tenant, TenantName, Ticket, WriteOptions,
};
use time::OffsetDateTime;

use crate::support::{
    Desk, conflict, created, draft, fresh_key, refused, remote_backend, replayed, say, ticket_count,
};

const MEANT_NEW: WriteOptions = WriteOptions { confirm_new: true };

fn guard(mode: GuardMode) -> KitchenConfig {
    KitchenConfig {
        duplicate_guard: DuplicateGuard {
            mode,
            ..DuplicateGuard::default()
        },
        ..KitchenConfig::default()
    }
}

fn earlier<T: std::fmt::Debug>(outcome: Outcome<T>) -> EarlierWrite {
    match refused(outcome) {
        Refusal::PossibleDuplicate { of } => of,
        other => panic!("expected a likely-duplicate refusal, got {other:?}"),
    }
}

async fn by_default_a_fresh_key_for_the_same_ticket_is_made_and_points_at_the_first(
    db: TestDatabase,
) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let (first_key, retry_key) = (fresh_key(), fresh_key());
    let request = draft("ops", "Disk full on db-1");
    let first = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &first_key, &request)
            .await
            .expect("create"),
    );
    assert_eq!(first.possible_duplicate_of, None, "nothing came before it");

    let outcome = kitchen
        .write::<CreateTicket>(tenant.id, &retry_key, &request)
        .await
        .expect("retry under a new key");
    assert_eq!(outcome.name(), "possible_duplicate");
    let second = created(outcome);
    let of = second
        .possible_duplicate_of
        .expect("the answer points at the first");
    assert_eq!(of.key, first_key);
    assert_eq!(of.action, Action::CreateTicket);
    assert_eq!(of.state, OperationState::Succeeded);
    assert_eq!(of.ticket_id, Some(first.result.id));
    assert_eq!(of.created_at, first.operation.created_at);
    assert_ne!(second.result.id, first.result.id, "warn still makes it");
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 2);

    // Other content is not a duplicate, and neither is the replay of the
    // flagged write (its key is not new).
    let other = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &draft("ops", "Disk full on db-2"))
            .await
            .expect("other content"),
    );
    assert_eq!(other.possible_duplicate_of, None);
    let again = replayed(
        kitchen
            .write::<CreateTicket>(tenant.id, &retry_key, &request)
            .await
            .expect("replay"),
    );
    assert_eq!(again.result.id, second.result.id);
    assert_eq!(again.possible_duplicate_of, None);
}

async fn confirm_refuses_the_fresh_key_leaving_it_unused_until_a_new_one_is_meant(
    db: TestDatabase,
) {
    let desk = Desk::on(db.kitchen_with(guard(GuardMode::Confirm)).await, "acme").await;
    let request = draft("ops", "Disk full"); // the content of the desk's ticket
    let retry_key = fresh_key();
    let of = earlier(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &retry_key, &request)
            .await
            .expect("retry under a new key"),
    );
    assert_eq!(of.ticket_id, Some(desk.ticket.id), "points at the first");
    assert!(
        desk.unused(Action::CreateTicket, &retry_key).await,
        "nothing recorded"
    );
    assert_eq!(ticket_count(&desk.kitchen, desk.tenant.id).await, 1);

    // The same key, now saying a second one is meant: made, no warning.
    let second = created(
        desk.kitchen
            .write_with::<CreateTicket>(desk.actor, &retry_key, &request, MEANT_NEW)
            .await
            .expect("confirmed"),
    );
    assert_eq!(second.possible_duplicate_of, None);
    assert_eq!(ticket_count(&desk.kitchen, desk.tenant.id).await, 2);
}

async fn replays_and_conflicts_never_meet_the_guard(db: TestDatabase) {
    let desk = Desk::on(db.kitchen_with(guard(GuardMode::Confirm)).await, "acme").await;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let made = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    for options in [WriteOptions::default(), MEANT_NEW] {
        let again = replayed(
            desk.kitchen
                .write_with::<CreateTicket>(desk.actor, &key, &request, options)
                .await
                .expect("replay"),
        );
        assert_eq!(again.result.id, made.result.id, "{options:?}");
        // The key names another content now: a conflict, whatever the guard.
        let original = conflict(
            desk.kitchen
                .write_with::<CreateTicket>(desk.actor, &key, &draft("ops", "Disk full"), options)
                .await
                .expect("conflict"),
        );
        assert_eq!(original.key, key, "{options:?}");
    }
    assert_eq!(ticket_count(&desk.kitchen, desk.tenant.id).await, 2);
}

async fn the_guard_never_looks_across_tenants_or_actions(db: TestDatabase) {
    let kitchen = db.kitchen_with(guard(GuardMode::Confirm)).await;
    let acme = Desk::on(kitchen.clone(), "acme").await;
    // Globex's first ticket has acme's content: not a duplicate of it.
    let globex = Desk::on(kitchen.clone(), "globex").await;
    assert_eq!(ticket_count(&kitchen, globex.tenant.id).await, 1);
    let warned = Kitchen::connect(db.url(), KitchenConfig::default())
        .await
        .expect("a second instance, warning");
    let (initech, _) = tenant_with_token(&warned, "initech").await;
    let made = created(
        warned
            .write::<CreateTicket>(initech.id, &fresh_key(), &draft("ops", "Disk full"))
            .await
            .expect("create"),
    );
    assert_eq!(made.possible_duplicate_of, None, "acme's are not initech's");

    // A comment whose text is a ticket's title is another action.
    let comment = created(
        kitchen
            .write::<AddComment>(
                acme.actor,
                &fresh_key(),
                &(acme.ticket.id.into(), say("Disk full")),
            )
            .await
            .expect("comment"),
    );
    assert_eq!(comment.possible_duplicate_of, None);
    warned.close().await;
}

async fn a_write_outside_the_window_is_not_a_duplicate(db: TestDatabase) {
    let start = OffsetDateTime::now_utc();
    let clock = Clock::manual(start);
    let window = Duration::from_secs(60);
    let kitchen = db
        .kitchen_with(KitchenConfig {
            clock: clock.clone(),
            duplicate_guard: DuplicateGuard {
                mode: GuardMode::Confirm,
                window,
            },
            ..KitchenConfig::default()
        })
        .await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let request = draft("ops", "Nightly backup failed");
    created(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &request)
            .await
            .expect("first night"),
    );
    clock.advance(time::Duration::seconds(59));
    earlier(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &request)
            .await
            .expect("within the window"),
    );
    clock.advance(time::Duration::seconds(2));
    let next_night = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &request)
            .await
            .expect("past the window"),
    );
    assert_eq!(next_night.possible_duplicate_of, None);
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 2);
}

async fn a_comment_repeated_on_the_same_ticket_is_flagged_on_another_is_not(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let first_key = fresh_key();
    let first = created(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &first_key,
                &(desk.ticket.id.into(), say("Rebooted it")),
            )
            .await
            .expect("comment"),
    );
    let again = created(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &fresh_key(),
                &(desk.ticket.id.into(), say("Rebooted it")),
            )
            .await
            .expect("comment again"),
    );
    let of = again.possible_duplicate_of.expect("flagged");
    assert_eq!(of.key, first_key);
    assert_eq!(of.ticket_id, Some(desk.ticket.id));
    assert_eq!(
        of.resource_id,
        Some(first.result.id.as_uuid()),
        "the comment"
    );

    let other = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", "Other"))
            .await
            .expect("create"),
    )
    .result;
    let elsewhere = created(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &fresh_key(),
                &(other.id.into(), say("Rebooted it")),
            )
            .await
            .expect("comment elsewhere"),
    );
    assert_eq!(elsewhere.possible_duplicate_of, None);
    assert_eq!(desk.comments(desk.ticket.id).await.len(), 2);
}

async fn a_tenant_override_wins_over_the_deployment_and_can_be_taken_back(db: TestDatabase) {
    let kitchen = db.kitchen_with(guard(GuardMode::Off)).await;
    let desk = Desk::on(kitchen.clone(), "acme").await;
    let request = draft("ops", "Disk full");
    let unflagged = created(
        kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &request)
            .await
            .expect("off: made without a word"),
    );
    assert_eq!(unflagged.possible_duplicate_of, None);

    let acme = TenantName::parse("acme").expect("a name");
    assert!(
        kitchen
            .set_duplicate_guard(&acme, Some(GuardMode::Confirm))
            .await
            .expect("set")
    );
    assert_eq!(
        kitchen
            .duplicate_guard_of(desk.tenant.id)
            .await
            .expect("read"),
        Some(GuardMode::Confirm)
    );
    earlier(
        kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &request)
            .await
            .expect("confirm: refused"),
    );
    assert!(
        kitchen
            .set_duplicate_guard(&acme, None)
            .await
            .expect("unset")
    );
    created(
        kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &request)
            .await
            .expect("the deployment's again"),
    );
    let nobody = TenantName::parse("nobody").expect("a name");
    assert!(
        !kitchen
            .set_duplicate_guard(&nobody, Some(GuardMode::Warn))
            .await
            .expect("no such tenant"),
    );
}

/// Eight creates of one content under fresh keys, fired at once and
/// spread over two instances on one database.
struct Race {
    /// The first instance, to look with.
    one: Kitchen,
    /// The second, to close.
    two: Kitchen,
    tenant: Tenant,
    keys: Vec<OperationKey>,
    /// Each key's outcome, in the order of `keys`.
    outcomes: Vec<Outcome<Ticket>>,
}

async fn race_eight_fresh_keys(db: &TestDatabase, config: KitchenConfig) -> Race {
    let one = db.kitchen_with(config.clone()).await;
    let two = Kitchen::connect(db.url(), config)
        .await
        .expect("a second instance");
    let (tenant, _) = tenant_with_token(&one, "acme").await;
    let request = draft("ops", "Everything is down");
    let keys: Vec<_> = (0..8).map(|_| fresh_key()).collect();
    let writes = keys.iter().enumerate().map(|(i, key)| {
        let kitchen = if i % 2 == 0 { one.clone() } else { two.clone() };
        let request = request.clone();
        let key = key.clone();
        async move {
            kitchen
                .write::<CreateTicket>(tenant.id, &key, &request)
                .await
                .expect("write")
        }
    });
    let outcomes = futures::future::join_all(writes).await;
    Race {
        one,
        two,
        tenant,
        keys,
        outcomes,
    }
}

/// Eight fresh-key creates of one content at once, spread over two
/// instances of the service: one is made, every other is refused pointing
/// at it, and no refused key is used.
async fn in_confirm_racing_fresh_keys_make_one_effect_across_two_instances(db: TestDatabase) {
    let race = race_eight_fresh_keys(&db, guard(GuardMode::Confirm)).await;
    let (one, keys, outcomes) = (&race.one, &race.keys, race.outcomes);
    let made: Vec<_> = outcomes
        .iter()
        .zip(keys)
        .filter_map(|(outcome, key)| match outcome {
            Outcome::Created(receipt) => Some((key.clone(), receipt.result.id)),
            _ => None,
        })
        .collect();
    assert_eq!(made.len(), 1, "one is made: {outcomes:?}");
    let (made_key, made_id) = made[0].clone();
    for (outcome, key) in outcomes.into_iter().zip(keys) {
        if *key == made_key {
            continue;
        }
        let of = earlier(outcome);
        assert_eq!(of.key, made_key);
        assert_eq!(of.ticket_id, Some(made_id));
        assert!(
            one.operation(race.tenant.id, Action::CreateTicket, key)
                .await
                .expect("lookup")
                .is_none(),
            "a refused key stays unused"
        );
    }
    assert_eq!(ticket_count(one, race.tenant.id).await, 1);
    race.two.close().await;
}

/// Eight fresh-key creates of one content at once, spread over two
/// instances, with the guard warning (the default): all eight are made,
/// and every one but at most the first to be written points at another of
/// them. Each reads after its own write, so of any two the later reader
/// sees the other.
async fn in_warn_racing_fresh_keys_are_all_made_and_all_but_one_point_at_another(db: TestDatabase) {
    let race = race_eight_fresh_keys(&db, guard(GuardMode::Warn)).await;
    let keys = &race.keys;
    let made: Vec<_> = keys
        .iter()
        .zip(race.outcomes)
        .map(|(key, outcome)| (key, created(outcome)))
        .collect();
    let unwarned = made
        .iter()
        .filter(|(_, receipt)| receipt.possible_duplicate_of.is_none())
        .count();
    assert!(unwarned <= 1, "{unwarned} of 8 made without a warning");
    for (key, receipt) in &made {
        if let Some(of) = &receipt.possible_duplicate_of {
            assert_ne!(&of.key, *key, "never itself");
            assert!(keys.contains(&of.key), "one of the eight: {of:?}");
        }
    }
    assert_eq!(ticket_count(&race.one, race.tenant.id).await, 8);
    race.two.close().await;
}

/// A kitchen in front of `provider`, its guard in `mode`.
async fn remote_kitchen(db: &TestDatabase, provider: &FakeProvider, mode: GuardMode) -> Kitchen {
    db.kitchen_with(KitchenConfig {
        backend: remote_backend(provider, Duration::from_millis(30)),
        ..guard(mode)
    })
    .await
}

/// On the remote backend the guard decides in the transaction that writes
/// the effect ahead: a refused create never reaches the provider.
async fn on_the_remote_backend_a_refused_create_never_reaches_the_provider(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let kitchen = remote_kitchen(&db, &provider, GuardMode::Confirm).await;
    let desk = Desk::on(kitchen, "acme").await;
    assert_eq!(provider.made(EffectKind::Ticket), 1, "the desk's ticket");
    let retry_key = fresh_key();
    let of = earlier(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &retry_key, &draft("ops", "Disk full"))
            .await
            .expect("retry under a new key"),
    );
    assert_eq!(of.ticket_id, Some(desk.ticket.id));
    assert!(desk.unused(Action::CreateTicket, &retry_key).await);
    assert_eq!(provider.made(EffectKind::Ticket), 1, "nothing dispatched");
    created(
        desk.kitchen
            .write_with::<CreateTicket>(
                desk.actor,
                &retry_key,
                &draft("ops", "Disk full"),
                MEANT_NEW,
            )
            .await
            .expect("meant"),
    );
    assert_eq!(provider.made(EffectKind::Ticket), 2);
}

/// On the remote backend, in `warn`, the provider makes the second ticket
/// and the answer names the first, read once the write is settled (not on
/// the local write path, which looks on its own).
async fn on_the_remote_backend_a_warned_create_is_made_and_points_at_the_first(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let kitchen = remote_kitchen(&db, &provider, GuardMode::Warn).await;
    let desk = Desk::on(kitchen, "acme").await;
    let made = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", "Disk full"))
            .await
            .expect("retry under a new key"),
    );
    let of = made
        .possible_duplicate_of
        .expect("the answer points at the first");
    assert_eq!(of.ticket_id, Some(desk.ticket.id));
    assert_ne!(made.result.id, desk.ticket.id, "warn still makes it");
    assert_eq!(provider.made(EffectKind::Ticket), 2);
}

kitchen::on_both_databases!(
    on_the_remote_backend_a_refused_create_never_reaches_the_provider,
    on_the_remote_backend_a_warned_create_is_made_and_points_at_the_first,
    by_default_a_fresh_key_for_the_same_ticket_is_made_and_points_at_the_first,
    confirm_refuses_the_fresh_key_leaving_it_unused_until_a_new_one_is_meant,
    replays_and_conflicts_never_meet_the_guard,
    the_guard_never_looks_across_tenants_or_actions,
    a_write_outside_the_window_is_not_a_duplicate,
    a_comment_repeated_on_the_same_ticket_is_flagged_on_another_is_not,
    a_tenant_override_wins_over_the_deployment_and_can_be_taken_back,
    in_confirm_racing_fresh_keys_make_one_effect_across_two_instances,
    in_warn_racing_fresh_keys_are_all_made_and_all_but_one_point_at_another,
);
