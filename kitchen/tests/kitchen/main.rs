//! Kitchen tests. Every test that touches a database runs twice, on SQLite
//! and on PostgreSQL (`sqlite::NAME`, `postgres::NAME`).

mod concurrency;
mod create;
mod fingerprint;
mod model;
mod reads;
mod remote;
mod remote_model;
mod support;
mod tenants;
mod text;
