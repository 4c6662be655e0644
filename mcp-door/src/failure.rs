//! The failure record: what a program (a host, a proxy, an agent loop)
//! reads in a tool result's `_meta` to decide, without parsing prose,
//! whether repeating the call can help and when, and which operation the
//! failure concerns.
//!
//! Its shape is `ToolFailure` of the open MCP proposal for structured
//! tool failures, SEP-3313 ("Structured Tool-Failure Classification",
//! modelcontextprotocol/modelcontextprotocol#3313; prototype #3312):
//! `class` (`capability`, `reliability` or `governance`), an open `code`,
//! `retryable`, `retryNotBefore` (Unix epoch milliseconds) and a
//! server-made `correlationId`; with two fields of ours, `tool` and
//! `operationId`. It sits under our own key, [`FAILURE_META`], not the
//! proposal's `io.modelcontextprotocol/toolFailure`: MCP reserves that
//! prefix for the protocol, and the proposal is a draft that may still
//! change.
//!
//! Every result that shows no effect carries one: each tool error
//! (`isError: true`: `conflict`, `invalid`, a refusal such as
//! `possible_duplicate` or `version_mismatch`, a read's `not_found`) and
//! the write answers that are not errors but not done either
//! (`in_progress`, `unknown`, a `not_created` the provider may still
//! accept). A write that happened (`created`, `updated`, `replayed`,
//! `expired`) carries none. This module is the one place that builds it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{CallToolResult, MetaObject};
use serde::Serialize;

/// The `_meta` key of the failure record.
pub const FAILURE_META: &str = "retry-safe-tickets/failure";

/// What a failure record is made of.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Failure<'a> {
    /// The tool that was called.
    pub(crate) tool: &'a str,
    /// The result's `status` (a write) or `error` (a read): the record's
    /// `code`.
    pub(crate) code: &'a str,
    /// The operation_id the call named, once it was one.
    pub(crate) operation_id: Option<&'a str>,
    /// The kitchen's wait before the same call can help; `None` when
    /// repeating it cannot (the kitchen's `Outcome::retry_after`).
    pub(crate) retry_after_seconds: Option<u64>,
}

/// The record as it is sent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    class: &'static str,
    code: &'a str,
    retryable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_not_before: Option<u64>,
    correlation_id: String,
    tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation_id: Option<&'a str>,
}

impl Failure<'_> {
    /// Whether the same call (the same operation_id and arguments) can
    /// help: the kitchen gives a wait only when waiting settles it.
    fn retryable(&self) -> bool {
        self.retry_after_seconds.is_some()
    }

    /// The proposal's class. `reliability`: the same call later can help.
    /// `governance`: only someone outside the call can settle it (the
    /// caller confirming it means a second one, `confirm_new`; an operator
    /// checking the provider for an effect reconciliation gave up on).
    /// `capability`: the call as made cannot succeed (a conflict, invalid
    /// arguments, a ticket that is not there, another version, a move the
    /// status machine forbids, a write the provider refused).
    fn class(&self) -> &'static str {
        if self.retryable() {
            return "reliability";
        }
        match self.code {
            "possible_duplicate" | "unknown" => "governance",
            _ => "capability",
        }
    }

    /// `result` with this record under [`FAILURE_META`] in its `_meta`.
    /// Logs the record's correlation id with the tool, the code and the
    /// operation_id (inside a write's attempt span, which names the
    /// attempt), so that an operator finds the call a caller reports.
    pub(crate) fn attach(self, mut result: CallToolResult) -> CallToolResult {
        let correlation_id = kitchen::Uuid::now_v7().to_string();
        let retry_not_before = self.retry_after_seconds.map(|wait| {
            let at = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                + Duration::from_secs(wait);
            u64::try_from(at.as_millis()).unwrap_or(u64::MAX)
        });
        let record = Record {
            class: self.class(),
            code: self.code,
            retryable: self.retryable(),
            retry_not_before,
            correlation_id,
            tool: self.tool,
            operation_id: self.operation_id,
        };
        tracing::info!(
            correlation_id = %record.correlation_id,
            tool = record.tool,
            code = record.code,
            operation_id = record.operation_id.unwrap_or_default(),
            "tool failure answered"
        );
        let value = serde_json::to_value(&record).unwrap_or_default();
        result
            .meta
            .get_or_insert_with(MetaObject::new)
            .insert(FAILURE_META.into(), value);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(failure: Failure<'_>) -> serde_json::Value {
        let result = failure.attach(CallToolResult::structured_error(serde_json::json!({})));
        result.meta.expect("a _meta")[FAILURE_META].clone()
    }

    fn failure(code: &'static str, retry_after_seconds: Option<u64>) -> Failure<'static> {
        Failure {
            tool: "create_ticket",
            code,
            operation_id: Some("0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79"),
            retry_after_seconds,
        }
    }

    #[test]
    fn a_wait_makes_it_retryable_not_before_then() {
        let now = || {
            let since = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after 1970");
            u64::try_from(since.as_millis()).expect("fits")
        };
        let before = now();
        let r = record(failure("in_progress", Some(1)));
        let after = now();
        assert_eq!(r["class"], "reliability");
        assert_eq!(r["code"], "in_progress");
        assert_eq!(r["retryable"], true);
        let at = r["retryNotBefore"].as_u64().expect("epoch milliseconds");
        assert!(before + 1000 <= at && at <= after + 1000, "{r}");
        assert_eq!(r["tool"], "create_ticket");
        assert_eq!(r["operationId"], "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79");
        assert!(r["correlationId"].as_str().is_some_and(|id| id.len() == 36));
    }

    #[test]
    fn without_a_wait_it_is_not_retryable_and_names_no_time() {
        for (code, class) in [
            ("conflict", "capability"),
            ("invalid", "capability"),
            ("version_mismatch", "capability"),
            ("not_created", "capability"),
            ("possible_duplicate", "governance"),
            ("unknown", "governance"),
        ] {
            let r = record(failure(code, None));
            assert_eq!(r["class"], class, "{code}");
            assert_eq!(r["retryable"], false, "{code}");
            assert!(r.get("retryNotBefore").is_none(), "{code}: {r}");
        }
    }

    #[test]
    fn each_record_has_its_own_correlation_id_and_keeps_other_meta() {
        let mut meta = MetaObject::new();
        meta.insert("other".into(), "kept".into());
        let mut result = CallToolResult::structured_error(serde_json::json!({}));
        result.meta = Some(meta);
        let result = failure("conflict", None).attach(result);
        let meta = result.meta.expect("a _meta");
        assert_eq!(meta["other"], "kept");
        assert_ne!(
            meta[FAILURE_META]["correlationId"],
            record(failure("conflict", None))["correlationId"]
        );
        let mut read = failure("not_found", None);
        read.operation_id = None;
        assert!(record(read).get("operationId").is_none());
    }
}
