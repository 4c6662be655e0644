//! End-to-end tests over real HTTP. Tests that need a database run on
//! SQLite and PostgreSQL (`sqlite::NAME`, `postgres::NAME`).

mod client;
mod conditional;
mod cross_door;
mod double_fire;
mod duplicate_guard;
mod field_limits;
mod http_edge;
mod load;
mod mcp_failures;
mod mcp_key_lifecycle;
mod mcp_lifecycle;
mod mcp_support;
mod mcp_tasks;
mod mcp_tools;
mod mcp_transport;
mod oauth;
mod oauth_idp;
mod remote_backend;
mod remote_reads;
mod rest_create;
mod rest_errors;
mod rest_instances;
mod rest_key_lifecycle;
mod rest_labels;
mod rest_lifecycle;
mod rest_openapi;
mod rest_operation_list;
mod rest_reads;
mod rest_remote;
mod slow_clients;
mod storage_faults;
mod telemetry;

/// A fresh operation key.
pub fn fresh_key() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A valid create body.
pub const DISK_FULL: &str = r#"{"project_id":"ops","title":"Disk full on db-1"}"#;
