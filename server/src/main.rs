//! `tickets`: the retry-safe ticket service. See `tickets --help`.

fn main() -> anyhow::Result<()> {
    server::run::main()
}
