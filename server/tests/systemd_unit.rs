//! `docs/operations/tickets.service` is a unit systemd accepts: its own
//! verifier (`systemd-analyze verify`, which `.ci/run` installs) finds no
//! error and no warning, with `ExecStart` pointed at the binary just built.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_example_systemd_unit_verifies_cleanly() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let unit = std::fs::read_to_string(root.join("docs/operations/tickets.service"))
        .expect("the example unit");
    let exec = "ExecStart=/usr/local/bin/tickets serve";
    assert!(unit.contains(exec), "the unit runs `tickets serve`");
    let dir = tempfile::tempdir().expect("a temp dir");
    let copy = dir.path().join("tickets.service");
    let built = format!("ExecStart={} serve", env!("CARGO_BIN_EXE_tickets"));
    std::fs::write(&copy, unit.replace(exec, &built)).expect("a copy");
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .expect("systemd-analyze runs (apt-get install systemd; .ci/run does)");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(said.trim().is_empty(), "no warning: {said}");
}
