//! The commented example configuration: every setting of `tickets serve`
//! (and the global `DATABASE_URL` and `LOG_FORMAT`, and OpenTelemetry's
//! export variables) as an environment variable, with what it does and
//! its default, written from the clap
//! definitions in [`crate::cli`] so it cannot drift from them. The copy in
//! `docs/operations/tickets.env` is checked against this by a test, which
//! also rewrites it when asked (`TICKETS_WRITE_EXAMPLES=1`).

use clap::{Arg, CommandFactory};
use telemetry::OtlpTarget;

use crate::cli::Cli;

/// Where the copy for people lives, from the workspace root.
pub const PATH: &str = "docs/operations/tickets.env";

/// The example: a header, then one commented block per setting, in the
/// order `tickets serve --help` lists them. Every line is a comment, so the
/// file as shipped changes nothing; uncomment a line to set it.
pub fn render() -> String {
    let mut command = Cli::command();
    command.build();
    let globals: Vec<Arg> = command
        .get_arguments()
        .filter(|arg| arg.get_env().is_some())
        .cloned()
        .collect();
    let serve = command
        .find_subcommand("serve")
        .map(|serve| serve.get_arguments().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    let mut out = String::from(
        "# Settings of `tickets serve`, as environment variables (each is also a\n\
         # command-line flag: `tickets serve --help`). Every line is a comment: what\n\
         # is shown is the default. Uncomment and change a line to set it, e.g. in\n\
         # the systemd unit's EnvironmentFile (docs/operations/tickets.service).\n\
         #\n\
         # Written from the command line's own definitions; do not edit by hand.\n\
         # To rewrite it: TICKETS_WRITE_EXAMPLES=1 cargo nextest run --workspace\n\
         #   -E 'test(example_configuration)'\n",
    );
    let mut seen = Vec::new();
    for arg in globals.iter().chain(&serve) {
        let Some(env) = arg.get_env().and_then(|e| e.to_str()) else {
            continue;
        };
        if arg.is_hide_set() || seen.contains(&env.to_owned()) {
            continue;
        }
        seen.push(env.to_owned());
        out.push('\n');
        let help = arg
            .get_long_help()
            .or_else(|| arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        // clap drops a doc comment's closing full stop; a sentence here
        // keeps it.
        let help = if help.ends_with(['.', ')', ':']) || help.is_empty() {
            help
        } else {
            format!("{help}.")
        };
        for line in wrap(&help, 76) {
            out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if defaults.is_empty() {
            out.push_str(&format!("# (not set by default; --{})\n", flag(arg)));
        } else {
            out.push_str(&format!("# (flag --{})\n", flag(arg)));
        }
        out.push_str(&format!("#{env}={}\n", defaults.join(",")));
    }
    out.push_str(&format!(
        "\n# OpenTelemetry export of traces and metrics, by OpenTelemetry's own\n\
         # variables (no flags): the collector's base URL, e.g.\n\
         # http://127.0.0.1:4318 (unset: no export), and its wire format,\n\
         # http/protobuf or http/json.\n\
         #{}=\n\
         #{}=http/protobuf\n",
        OtlpTarget::ENDPOINT_VAR,
        OtlpTarget::PROTOCOL_VAR
    ));
    out
}

fn flag(arg: &Arg) -> String {
    arg.get_long()
        .unwrap_or_else(|| arg.get_id().as_str())
        .to_owned()
}

/// `text` in lines of at most `width` characters, broken at spaces; a
/// blank line in it (a paragraph break) is kept.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split("\n\n") {
        if !lines.is_empty() {
            lines.push(String::new());
        }
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}
