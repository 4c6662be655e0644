//! The one generic write path: what every retry-safe write has in common,
//! written once.
//!
//! A write action is a type implementing [`WriteAction`]: its stable name,
//! how its request is validated into a normalized command, the canonical
//! form its fingerprint is computed over, and what it does inside the one
//! transaction once its key is claimed. Everything else (claim, fingerprint,
//! replay or conflict, the wait bound, in progress, a refusal leaving the
//! key unused, the frozen result, the crash hook) is `engine.rs`, the same
//! for every action. The actions themselves are in `crate::actions`.
//!
//! # Layout
//! - `action.rs`: the traits an action implements (`WriteAction`, and
//!   `RemoteAction` for one a provider can do) and the two ways generic code
//!   reaches an action's type (`Reach`, `ForAction`);
//! - `context.rs`: what an action is handed (`WriteContext`) and answers
//!   (`Applied`, `Planned`);
//! - `engine.rs`: the path every write takes;
//! - `keys.rs`: what a key means: its fingerprint, the record an attempt
//!   makes under it, what a record already under it answers;
//! - `replay_cache.rs`: finished answers in memory, so a retry within the
//!   replay window skips the database.

mod action;
mod context;
pub(crate) mod engine;
pub(crate) mod keys;
pub(crate) mod replay_cache;

pub use action::RetrySafeWrite;
pub(crate) use action::{ForAction, Reach, RemoteAction, WriteAction, WriteResult, wrong_kind};
pub(crate) use context::{Applied, Planned, WriteContext};
