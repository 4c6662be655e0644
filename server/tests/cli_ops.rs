//! The operator's commands, `tickets ops list|show|settle`, through the
//! `tickets` binary on a SQLite file whose effects went to a provider
//! simulator (the kitchen's lists and settlements under them are tested on
//! both databases in `kitchen/tests/kitchen/`).

use kitchen::actions::CreateTicket;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use kitchen::{
    Action, ExternalRef, Kitchen, KitchenConfig, OperationKey, Outcome, RemoteSettings, TenantName,
    TicketBackend, TicketDraft,
};
use provider_client::HttpProvider;
use provider_sim::{Fault, FaultRule, KeyPolicy, SimConfig};

struct Cli {
    url: String,
    provider_url: String,
    _dir: tempfile::TempDir,
}

impl Cli {
    async fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tickets"));
        command
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .env("PROVIDER_URL", &self.provider_url)
            .env("PROVIDER_TIMEOUT_MS", "2000")
            .env("PROVIDER_MAX_INFLIGHT_MS", "3600000");
        // The simulator serves on this runtime: wait for the binary off it.
        tokio::task::spawn_blocking(move || command.output().expect("tickets runs"))
            .await
            .expect("joined")
    }

    /// Runs `args`, which must succeed; its stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8")
    }

    /// Runs `args`, which must fail; its stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(!output.status.success(), "{args:?} succeeded");
        String::from_utf8(output.stderr).expect("UTF-8")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_finds_shows_and_settles_lost_creates() {
    let sim = provider_sim::spawn(
        "127.0.0.1:0".parse().expect("loopback"),
        SimConfig {
            keys: KeyPolicy::Ignore,
            dedup_window: Duration::ZERO,
        },
    )
    .await
    .expect("start the simulator");
    let dir = tempfile::tempdir().expect("a temp dir");
    let cli = Cli {
        url: format!("sqlite:{}", dir.path().join("tickets.db").display()),
        provider_url: sim.base_url(),
        _dir: dir,
    };

    // Two creates whose answers were lost after the provider made them.
    let provider = HttpProvider::new(&sim.base_url(), Duration::from_secs(2)).expect("a client");
    let kitchen = Kitchen::connect(
        &cli.url,
        KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider),
                settings: RemoteSettings {
                    dedup_window: Duration::ZERO,
                    max_inflight: Duration::from_secs(3600),
                    call_timeout: Duration::from_secs(2),
                    reconcile_every: Duration::from_secs(3600),
                    ..RemoteSettings::default()
                },
            },
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("open the database");
    let acme = kitchen
        .create_tenant(TenantName::parse("acme").expect("a name"))
        .await
        .expect("database")
        .expect("a new tenant");
    let rule = FaultRule::create(Fault::CommitThenDrop).times(2);
    sim.client().add_fault(&rule).await.expect("set the fault");
    let keys = [
        OperationKey::parse("lost-create-one").expect("a key"),
        OperationKey::parse("lost-create-two").expect("a key"),
    ];
    for key in &keys {
        let draft = TicketDraft {
            project_id: Some("ops".into()),
            title: Some("Disk full on db-1".into()),
            ..TicketDraft::default()
        };
        let outcome = kitchen
            .write::<CreateTicket>(acme.id, key, &draft)
            .await
            .expect("create");
        assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    }
    kitchen.close().await;
    let made = sim
        .client()
        .tickets(ExternalRef::derive(acme.id, Action::CreateTicket, &keys[0]).as_str())
        .await
        .expect("the simulator's tickets");
    let [ticket] = made.as_slice() else {
        panic!("one ticket: {made:?}");
    };

    // Find them.
    let listed = cli.ok(&["ops", "list", "--state", "unknown"]).await;
    let lines: Vec<Vec<&str>> = listed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "{listed}");
    assert_eq!(lines[0][..4], ["TENANT", "ACTION", "KEY", "STATE"]);
    assert_eq!(
        lines[1][..4],
        ["acme", "create_ticket", "lost-create-two", "unknown"]
    );
    assert_eq!(lines[2][2], "lost-create-one");
    let needing = cli.ok(&["ops", "list", "--needs-operator"]).await;
    assert_eq!(needing, "", "both are still being reconciled");
    let older = cli.ok(&["ops", "list", "--older-than", "1h"]).await;
    assert_eq!(older, "", "none is an hour old");
    let json = cli
        .ok(&["ops", "list", "--json", "--tenant", "acme", "--limit", "1"])
        .await;
    let first: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON line");
    assert_eq!(first["key"], "lost-create-two");
    assert!(first["external_reference"].is_string(), "{first}");
    let bad = cli
        .fails(&[
            "ops",
            "list",
            "--state",
            "lost",
            "--action",
            "delete_ticket",
        ])
        .await;
    assert!(bad.contains("--state: state must be one of"), "{bad}");
    assert!(bad.contains("--action: action must be one of"), "{bad}");

    // See one.
    let shown = cli
        .ok(&["ops", "show", "acme", "create_ticket", "lost-create-one"])
        .await;
    for part in [
        "external reference",
        "Calls to the provider",
        "dispatch",
        "--made <its id there>",
    ] {
        assert!(shown.contains(part), "{part:?} in {shown}");
    }

    // Settle it: not without the provider, not against what it holds.
    let one = ["ops", "settle", "acme", "create_ticket", "lost-create-one"];
    let by = ["--by", "ana", "--reason", "found it in the tracker"];
    let local = cli
        .fails(&[&one[..], &["--made", &ticket.id], &by[..]].concat())
        .await;
    assert!(local.contains("TICKET_BACKEND=remote"), "{local}");
    let remote = ["--ticket-backend", "remote"];
    let wrong = cli
        .fails(&[&one[..], &["--made", "SIM-999"], &by[..], &remote[..]].concat())
        .await;
    assert!(
        wrong.contains(&format!("found as {}", ticket.id)),
        "{wrong}"
    );
    let settled = cli
        .ok(&[&one[..], &["--made", &ticket.id], &by[..], &remote[..]].concat())
        .await;
    assert_eq!(settled.trim(), "succeeded");
    let again = cli
        .fails(&[&one[..], &["--not-made"], &by[..], &remote[..]].concat())
        .await;
    assert!(again.contains("ana settled it as made"), "{again}");
    let keep = cli
        .fails(&[&one[..], &["--keep", &ticket.id], &by[..], &remote[..]].concat())
        .await;
    assert!(keep.contains("knows of no copies"), "{keep}");
    let shown = cli
        .ok(&["ops", "show", "acme", "create_ticket", "lost-create-one"])
        .await;
    assert!(shown.contains("Settled by hand"), "{shown}");
    assert!(shown.contains("found it in the tracker"), "{shown}");

    // The other one: the provider holds it, so --not-made needs --force.
    let two = ["ops", "settle", "acme", "create_ticket", "lost-create-two"];
    let held = cli
        .fails(&[&two[..], &["--not-made"], &by[..], &remote[..]].concat())
        .await;
    assert!(held.contains("it was made"), "{held}");
    let forced = cli
        .ok(&[&two[..], &["--not-made", "--force"], &by[..], &remote[..]].concat())
        .await;
    assert_eq!(forced.trim(), "failed_before_effect");
    let rest = cli.ok(&["ops", "list", "--state", "unknown"]).await;
    assert_eq!(rest, "", "nothing unknown is left");
    let neither = cli.run(&[&two[..], &by[..]].concat()).await;
    assert!(!neither.status.success(), "a decision is required");
}
