//! How the `tickets` binary fails: for a person, not a debugger.

use std::process::Command;

/// A database that cannot be opened (its folder is a file): the error and
/// its causes on one line, exit code 1, and no stack backtrace although
/// `RUST_BACKTRACE=1` is set, as it often is in a developer's shell.
#[test]
fn a_failure_is_one_line_with_its_causes_and_no_backtrace() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"").expect("a file");
    let url = format!("sqlite:{}/tickets.db", file.display());
    let output = Command::new(env!("CARGO_BIN_EXE_tickets"))
        .args(["--database-url", &url, "tenant", "create", "acme"])
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .expect("tickets runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("Error: "))
        .unwrap_or_else(|| panic!("an Error: line: {stderr}"));
    assert!(
        error.starts_with(&format!("Error: cannot open the database at {url}: ")),
        "the error, then its causes on the same line: {error}"
    );
    assert!(!stderr.contains("backtrace"), "{stderr}");
    assert!(!stderr.contains("Caused by"), "{stderr}");
}

/// A deployment guard mode that does not exist stops `serve` before it
/// opens anything, naming the setting and the modes there are.
#[test]
fn an_unknown_guard_mode_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let url = format!("sqlite:{}/tickets.db", dir.path().display());
    let output = Command::new(env!("CARGO_BIN_EXE_tickets"))
        .args(["--database-url", &url, "serve", "--listen", "127.0.0.1:0"])
        .env("DUPLICATE_GUARD", "strict")
        .output()
        .expect("tickets runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--duplicate-guard")
            && stderr.contains("\"strict\" is not a guard mode (off, warn or confirm)"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("tickets.db").exists(),
        "nothing was opened or made"
    );
}
