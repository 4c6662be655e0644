//! `tickets` with the kitchen's crash hooks armed (`kitchen::faults`), for
//! the double-fire driver's crash checks. Never deploy it.

fn main() -> anyhow::Result<()> {
    // Before anything else: no write may run unarmed in this binary.
    kitchen::faults::arm();
    server::run::main()
}
