//! Benchmarks and the soak: what the service costs and what it survives,
//! measured against a real server. Not part of what a team copies: the
//! service is `kitchen`, the doors and `server`; the driver operators run
//! is `double-fire`; the provider simulator the remote checks use is
//! `provider-sim`.
//!
//! # Layout
//!
//! - [`effect_bench`]: the effect benchmark: fault points × retry
//!   strategies × backends, judged by the effects counted where they are
//!   made (is the effect ledger worth it over a simpler policy?).
//! - [`load`]: the load generator behind the benchmarks.
//! - [`soak`]: the kill -9 soak: the real server SIGKILLed and restarted
//!   while clients retry their creates, then the database counted.
//! - `bin/effect-bench.rs`, `bin/load.rs`, `bin/soak.rs`: their command
//!   lines; `bin/retention-bench.rs`: what keeping keys costs (the
//!   retention sweep's benchmark, in-process).

pub mod effect_bench;
pub mod load;
pub mod soak;
