//! Kitchen tests. Every test that touches a database runs twice, on SQLite
//! and on PostgreSQL (`sqlite::NAME`, `postgres::NAME`).

mod comments;
mod concurrency;
mod conditional;
mod create;
mod duplicate_guard;
mod fingerprint;
mod group_commit;
mod history;
mod key_lifecycle;
mod keys;
mod labels;
mod lifecycle_concurrency;
mod model;
mod operation_list;
mod postgres_setup;
mod reads;
mod remote;
mod remote_cap;
mod remote_model;
mod remote_writes;
mod replay_cache;
mod settle_by_hand;
mod support;
mod tenants;
mod text;
mod transition;
mod update;
mod upgrade;
mod upgrade_0004;
mod upgrade_0005;
mod upgrade_0006;
mod upgrade_0007;
mod upgrade_0009;
mod upgrade_0010;
