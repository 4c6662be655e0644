//! `double-fire`: prove, against a running server, that retries never
//! duplicate. See `double-fire --help` and the README.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use clap::Parser;
use std::time::Duration;

use double_fire::{self, Options, ProviderTarget, RedmineTruth, Restart, Target};
use kitchen::Action;

/// Fire retries at a running ticket service through both doors, with faults
/// at the awkward moments, and check the server's own state for duplicates.
#[derive(Debug, Parser)]
#[command(name = "double-fire", version)]
struct Args {
    /// Base URL of the server, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "DOUBLE_FIRE_URL")]
    url: String,
    /// A bearer token.
    #[arg(long, env = "DOUBLE_FIRE_TOKEN", hide_env_values = true)]
    token: String,
    /// A token of a second tenant (check 6).
    #[arg(long, env = "DOUBLE_FIRE_OTHER_TOKEN", hide_env_values = true)]
    other_token: Option<String>,
    /// Base URL of a second instance on the same database (check 9).
    #[arg(long)]
    second_url: Option<String>,
    /// A shell command that restarts the server after checks 8, 17 and 23
    /// crash it (the server must be a fault-injection build).
    #[arg(long)]
    restart_cmd: Option<String>,
    /// Run the whole set N times with fresh keys and report totals.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Sabotage: retries in checks 5, 8, 9, 21, 23 and 24 use a fresh key,
    /// to see the faults produce the duplicates (or wrong answers) the
    /// checks catch. Those checks FAIL.
    #[arg(long)]
    fresh_key_retries: bool,
    /// Run only check N (through every door and action it covers), e.g. 24
    /// against a server started with a short --replay-window-secs.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=i64::from(double_fire::LAST_CHECK)))]
    only: Option<u8>,
    /// Run only the checks of this write action: create_ticket (with the
    /// checks only a create has), update_ticket, transition_ticket or
    /// add_comment.
    #[arg(long, value_parser = parse_action)]
    action: Option<Action>,
    /// The provider simulator's URL, when the server runs with
    /// TICKET_BACKEND=remote against it: adds checks 10 to 17.
    #[arg(long, env = "DOUBLE_FIRE_PROVIDER_URL")]
    provider_url: Option<String>,
    /// A Redmine behind the fault proxy (`provider-sim --redmine-upstream`,
    /// whose URL is --provider-url): effects are counted in it, read
    /// directly at this URL.
    #[arg(long, requires_all = ["provider_url", "redmine_api_key", "redmine_project"])]
    redmine_url: Option<String>,
    /// An API key that sees the Redmine project (for counting).
    #[arg(long, env = "DOUBLE_FIRE_REDMINE_API_KEY", hide_env_values = true)]
    redmine_api_key: Option<String>,
    /// The Redmine project's identifier.
    #[arg(long)]
    redmine_project: Option<String>,
    /// The dedup window (ms) the simulator honours keys for, as the server
    /// was told in PROVIDER_DEDUP_WINDOW_MS (check 16; skipped without it).
    #[arg(long)]
    provider_dedup_window_ms: Option<u64>,
    /// The server's PROVIDER_TIMEOUT_MS (read from the same variable, with
    /// the server's default), so that the hang fault outlasts it.
    #[arg(long, env = "PROVIDER_TIMEOUT_MS", default_value_t = 10_000)]
    server_provider_timeout_ms: u64,
    /// The server's PROVIDER_MAX_INFLIGHT_MS (read from the same variable,
    /// with the server's default), so that a check waits long enough for a
    /// search to prove absence.
    #[arg(long, env = "PROVIDER_MAX_INFLIGHT_MS", default_value_t = 30_000)]
    server_provider_max_inflight_ms: u64,
    /// How long (ms) the hang fault keeps a request open; must exceed the
    /// server's PROVIDER_TIMEOUT_MS. Default: that plus 2 s.
    #[arg(long)]
    provider_hang_ms: Option<u64>,
    /// How long (s) a check retries an unknown outcome before giving up on
    /// it settling; must exceed the server's PROVIDER_MAX_INFLIGHT_MS.
    /// Default: twice that plus 30 s (the reconciler's backoff).
    #[arg(long)]
    settle_within_secs: Option<u64>,
}

fn parse_action(raw: &str) -> Result<Action, String> {
    Action::parse(raw).ok_or_else(|| format!("no such write action; one of {}", Action::names()))
}

struct ShellRestart(String);

impl Restart for ShellRestart {
    fn restart(&self) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + '_>> {
        Box::pin(async move {
            let status = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(&self.0)
                .status()
                .await?;
            anyhow::ensure!(status.success(), "restart command exited with {status}");
            Ok(())
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let target = Target {
        base_url: args.url.trim_end_matches('/').to_owned(),
        token: args.token,
        other_token: args.other_token,
        second_base_url: args.second_url.map(|u| u.trim_end_matches('/').to_owned()),
        restart: args
            .restart_cmd
            .map(|cmd| Arc::new(ShellRestart(cmd)) as Arc<dyn Restart>),
        provider: args.provider_url.map(|url| ProviderTarget {
            url: url.trim_end_matches('/').to_owned(),
            redmine: args.redmine_url.map(|url| RedmineTruth {
                url: url.trim_end_matches('/').to_owned(),
                api_key: args.redmine_api_key.unwrap_or_default(),
                project: args.redmine_project.unwrap_or_default(),
            }),
            dedup_window: args.provider_dedup_window_ms.map(Duration::from_millis),
            hang: Duration::from_millis(
                args.provider_hang_ms
                    .unwrap_or(args.server_provider_timeout_ms + 2_000),
            ),
            settle_within: Duration::from_secs(
                args.settle_within_secs
                    .unwrap_or((2 * args.server_provider_max_inflight_ms).div_ceil(1000) + 30),
            ),
        }),
    };
    let options = Options {
        repeat: args.repeat,
        fresh_key_retries: args.fresh_key_retries,
        only: args.only,
        action: args.action,
    };
    let report = double_fire::run(&target, options, |result| println!("{result}")).await;
    println!("{}", report.summary());
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    }
    std::process::exit(if report.all_passed() { 0 } else { 1 });
}
