//! `docs/operations/tickets.env` is what the command line says: every
//! `serve` setting, its variable and its default.

use std::path::PathBuf;

#[test]
fn the_example_configuration_is_the_command_lines() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(server::example_config::PATH);
    let rendered = server::example_config::render();
    if std::env::var_os("TICKETS_WRITE_EXAMPLES").is_some() {
        std::fs::write(&path, &rendered).expect("write the example");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "{} is not what the command line says; rewrite it with \
         TICKETS_WRITE_EXAMPLES=1 cargo nextest run --workspace -E 'test(example_configuration)' and review the diff",
        path.display()
    );
    // Every setting is there, with its default.
    for line in [
        "#DATABASE_URL=sqlite:data/tickets.db",
        "#LISTEN=127.0.0.1:8080",
        "#REQUEST_TIMEOUT_SECS=30",
        "#WAIT_BOUND_MS=5000",
    ] {
        assert!(
            rendered.lines().any(|l| l == line),
            "{line} in:\n{rendered}"
        );
    }
    assert!(
        rendered.lines().all(|l| l.is_empty() || l.starts_with('#')),
        "as shipped it sets nothing"
    );
}
