//! The operator's tenant and token commands, through the `tickets` binary
//! on a SQLite file (the kitchen's reads under them are tested on both
//! databases in `kitchen/tests/kitchen/tenants.rs`).

use std::process::{Command, Output};

struct Cli {
    url: String,
    _dir: tempfile::TempDir,
}

impl Cli {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let url = format!("sqlite:{}", dir.path().join("tickets.db").display());
        Self { url, _dir: dir }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_tickets"))
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .output()
            .expect("tickets runs")
    }

    /// Runs `args`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8")
    }
}

#[test]
fn a_tenant_takes_its_own_guard_mode_and_gives_it_back() {
    let cli = Cli::new();
    cli.ok(&["tenant", "create", "acme"]);
    let guard_of = |cli: &Cli| {
        let listed = cli.ok(&["tenant", "list"]);
        listed
            .lines()
            .nth(1)
            .expect("acme")
            .split_whitespace()
            .nth(3)
            .expect("GUARD")
            .to_owned()
    };
    cli.ok(&["tenant", "guard", "acme", "confirm"]);
    assert_eq!(guard_of(&cli), "confirm");

    let refused = cli.run(&["tenant", "guard", "acme", "strict"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("\"strict\" is not a guard mode (off, warn or confirm)")
            && said.contains("default"),
        "{said}"
    );
    assert_eq!(guard_of(&cli), "confirm", "a refused mode changes nothing");

    let unknown = cli.run(&["tenant", "guard", "globex", "off"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no tenant named globex"));

    cli.ok(&["tenant", "guard", "acme", "default"]);
    assert_eq!(guard_of(&cli), "default");
}

#[test]
fn tenants_and_their_tokens_are_listed_without_secrets() {
    let cli = Cli::new();
    assert_eq!(cli.ok(&["tenant", "list"]), "", "none yet (said on stderr)");
    let globex_id = cli.ok(&["tenant", "create", "globex"]);
    let acme_id = cli.ok(&["tenant", "create", "acme"]);
    let full = cli.ok(&["token", "issue", "acme"]);
    let read = cli.ok(&["token", "issue", "acme", "--scope", "tickets:read"]);
    cli.ok(&["token", "issue", "globex"]);

    let tenants = cli.ok(&["tenant", "list"]);
    let lines: Vec<Vec<&str>> = tenants
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "{tenants}");
    assert_eq!(lines[0], ["NAME", "ID", "CREATED", "GUARD"]);
    assert!(lines[1..].iter().all(|l| l[3] == "default"), "{tenants}");
    assert_eq!(
        lines[1][..2],
        ["acme", acme_id.trim()],
        "by name: {tenants}"
    );
    assert_eq!(lines[2][..2], ["globex", globex_id.trim()]);

    let tokens = cli.ok(&["token", "list", "acme"]);
    let lines: Vec<Vec<&str>> = tokens
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "acme's two, not globex's: {tokens}");
    assert_eq!(lines[0], ["ID", "SCOPES", "CREATED", "REVOKED"]);
    assert_eq!(lines[1][1], "tickets:read,tickets:write");
    assert_eq!(lines[2][1], "tickets:read");
    assert!(
        lines[1..].iter().all(|l| l[3] == "-"),
        "both live: {tokens}"
    );
    for secret in [&full, &read] {
        assert!(!tokens.contains(secret.trim()), "never a secret: {tokens}");
    }

    cli.ok(&["token", "revoke", lines[2][0]]);
    let after = cli.ok(&["token", "list", "acme"]);
    let revoked = after.lines().nth(2).expect("the read token");
    assert!(
        revoked.starts_with(lines[2][0]) && !revoked.trim_end().ends_with('-'),
        "says when it was revoked: {after}"
    );

    let missing = cli.run(&["token", "list", "initech"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no tenant named initech"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
