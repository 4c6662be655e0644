//! `tickets` with the kitchen's crash-after-commit hook compiled in, for the
//! double-fire driver's crash check. Never deploy it.

fn main() -> anyhow::Result<()> {
    server::run::main()
}
