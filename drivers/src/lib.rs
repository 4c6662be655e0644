//! Drivers: tools that fire retries at a running server, through both
//! doors, and judge the result by the server's own state.
//!
//! # Layout
//!
//! - [`double_fire`]: the double-fire checks (a library, so tests run the
//!   very code the `double-fire` binary runs): retries, conflicts, races,
//!   lost responses, other tenants, cross-door retries, crashes after
//!   commit, several instances.
//! - [`effect_bench`]: the effect benchmark: fault points × retry
//!   strategies × backends, judged by the effects counted where they are
//!   made (is the effect ledger worth it over a simpler policy?).
//! - [`fault_proxy`]: a TCP proxy that forwards a request and cuts the
//!   client off before any byte of the answer reaches it.
//! - [`load`]: the load generator behind the benchmarks.
//! - [`soak`]: the kill -9 soak: the real server SIGKILLed and restarted
//!   while clients retry their creates, then the database counted.
//! - [`provider_sim`]: a fake hosted ticket tracker that misbehaves on
//!   demand, for testing the remote ticket backend against.
//! - `bin/double-fire.rs`, `bin/load.rs`, `bin/provider-sim.rs`,
//!   `bin/soak.rs`: the command lines; `bin/retention-bench.rs`: what
//!   keeping keys costs (the retention sweep's benchmark, in-process).

pub mod double_fire;
pub mod effect_bench;
pub mod fault_proxy;
pub mod load;
pub mod provider_sim;
pub mod soak;
