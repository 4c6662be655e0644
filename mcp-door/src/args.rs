//! Tool arguments, read totally.
//!
//! rmcp deserializes a tool's `Parameters<T>` with serde before the tool
//! runs; when that fails (a number where a string belongs, an unknown
//! argument under `deny_unknown_fields`) it answers with its own bare text,
//! "failed to deserialize parameters: …": no structured result, no
//! `status: invalid`, no `next_step`, and the tool never runs, so the call is
//! not counted either. So every tool takes [`Arguments<T>`] instead, whose
//! deserialization cannot fail: it keeps the JSON object as sent, and
//! [`Arguments::read`] checks each argument against `T`'s own input schema
//! (the one `tools/list` publishes), turning every unknown or wrong-typed
//! argument into a field error by name. What is left is deserialized into
//! `T`, whose fields are optional text or integers: the kitchen validates
//! the values and reports each problem by name, the same way the REST door
//! does (rmcp does not enforce schema limits).
//!
//! `null` is read as "left out", except for the arguments a tool declares in
//! [`ToolArgs::NULL_REMOVES`] (`update_ticket`'s description and assignee),
//! whose schema admits null and says that it removes the value.
//!
//! Every limit and enum in these schemas comes from the kitchen's own
//! constants, never a retyped number. Each write tool's argument struct is
//! in its own file under `actions/`; the read tools' are here.

use std::borrow::Cow;
use std::marker::PhantomData;

use kitchen::{
    FieldViolation, LABEL_PATTERN, MAX_DESCRIPTION_CHARS, MAX_KEY_LEN, MAX_TITLE_CHARS,
    MIN_KEY_LEN, PageSize, TicketDraft,
};
use rmcp::ErrorData as McpError;
use rmcp::handler::server::tool::schema_for_input;
use rmcp::model::JsonObject;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::contract;
use crate::result_text;
use crate::results::{action_names, priority_names};

/// The pattern of a project slug, as the kitchen's `ProjectId` checks it.
const PROJECT_ID_PATTERN: &str = r"^[a-z0-9][a-z0-9_-]{0,63}$";

/// A tool's argument struct.
pub(crate) trait ToolArgs: DeserializeOwned + JsonSchema + 'static {
    /// The arguments whose `null` is a value the tool acts on (it removes
    /// what the argument names) rather than "left out". Their schema admits
    /// null, and their description must say what null does (the contract
    /// lint checks it). Their field is an `Option<Option<_>>` read with
    /// [`present`].
    const NULL_REMOVES: &'static [&'static str] = &[];
}

/// A tool's arguments as the caller sent them, to be read with
/// [`Arguments::read`]. Its input schema is `T`'s, tidied (see
/// [`tidy_input_schema`]); deserializing it never fails.
pub(crate) struct Arguments<T> {
    raw: JsonObject,
    // `fn() -> T`: the wrapper holds no `T`, so it is Send and Sync whatever
    // `T` is.
    shape: PhantomData<fn() -> T>,
}

impl<'de, T> Deserialize<'de> for Arguments<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // rmcp hands over the arguments as a JSON object (an empty one when
        // they are absent), so this is the only shape that reaches us.
        JsonObject::deserialize(deserializer).map(|raw| Self {
            raw,
            shape: PhantomData,
        })
    }
}

impl<T: ToolArgs> JsonSchema for Arguments<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("Arguments<{}>", T::schema_id()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = T::json_schema(generator);
        tidy_input_schema(&mut schema, T::NULL_REMOVES);
        schema
    }
}

/// Makes `T`'s derived schema say what [`Arguments::read`] enforces, in a
/// form strict clients accept:
///
/// - `additionalProperties: false`: an unknown argument is refused by name
///   (a misspelt one must not be silently dropped, and none can name a
///   tenant). serde's `flatten`, which the create tools use, cannot say so
///   itself.
/// - no `null` in a `type` array, except for the arguments in `null_removes`:
///   an optional argument is one the caller leaves out. (An explicit `null`
///   is still read as "omitted", because many function-calling clients send
///   one for every optional argument; the schema just does not invite it.
///   Otherwise an enum without `null`, like `priority`, would have a type
///   that admits a value its enum refuses.)
/// - no `format` on integers: schemars' `int64`/`uint32` are not JSON Schema
///   formats, and validators such as Ajv warn about them on every call;
///   `minimum` and `maximum` say the range.
/// - no `default: null` (which serde's `default` on a null-removes argument
///   puts there): a client that fills in defaults would send the null, and
///   remove what the argument names. Left out, the value is kept.
fn tidy_input_schema(schema: &mut Schema, null_removes: &[&str]) {
    schema.insert("additionalProperties".into(), false.into());
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        let Some(property) = property.as_object_mut() else {
            continue;
        };
        if let Some(Value::Array(types)) = property.get_mut("type") {
            if !null_removes.contains(&name.as_str()) {
                types.retain(|t| t != "null");
            }
            if let [single] = types.as_slice() {
                let single = single.clone();
                property.insert("type".into(), single);
            }
        }
        if property.get("type").is_some_and(|t| t == "integer") {
            property.remove("format");
        }
        if property.get("default").is_some_and(Value::is_null) {
            property.remove("default");
        }
    }
}

/// Arguments read by [`Arguments::read`].
pub(crate) struct Read<T> {
    /// The arguments that were known and of the right type (the others are
    /// left out, as if omitted).
    pub(crate) args: T,
    /// Each unknown or wrong-typed argument, by name.
    pub(crate) problems: Vec<FieldViolation>,
}

/// The argument `problems`, followed by the violations in `checked` of
/// arguments that have none: an argument of the wrong type was left out, so
/// validation would add a misleading "is required" for it.
pub(crate) fn merge(
    problems: Vec<FieldViolation>,
    checked: Vec<FieldViolation>,
) -> Vec<FieldViolation> {
    let mut all = problems;
    let shadowed = all.len();
    for violation in checked {
        if !all[..shadowed].iter().any(|p| p.field == violation.field) {
            all.push(violation);
        }
    }
    all
}

impl<T: ToolArgs> Arguments<T> {
    /// Reads the arguments. Never refuses them: unknown and wrong-typed ones
    /// become [`Read::problems`]. Fails only if `T` cannot hold a value its
    /// own schema admits, which is a bug in this crate (the tests try every
    /// tool's schema against its type).
    pub(crate) fn read(self) -> Result<Read<T>, McpError> {
        let schema = schema_for_input::<Self>().map_err(|e| misread::<T>(&e))?;
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut kept = JsonObject::new();
        let mut problems = Vec::new();
        for (name, value) in self.raw {
            let Some(declared) = properties.and_then(|p| p.get(&name)) else {
                let known: Vec<&str> = properties
                    .into_iter()
                    .flat_map(|p| p.keys())
                    .map(String::as_str)
                    .collect();
                problems.push(FieldViolation {
                    message: result_text::unknown_argument(&name, &known),
                    field: name,
                    code: "unknown_argument",
                });
                continue;
            };
            let (expected, nullable) = declared_type(declared);
            match admit(expected, nullable, value) {
                Admitted::Omitted => {}
                Admitted::Value(value) => {
                    kept.insert(name, value);
                }
                Admitted::Refused(got) => problems.push(FieldViolation {
                    message: result_text::wrong_type(&name, expected.unwrap_or_default(), &got),
                    field: name,
                    code: "wrong_type",
                }),
            }
        }
        let args = serde_json::from_value(Value::Object(kept))
            .map_err(|e| misread::<T>(&e.to_string()))?;
        Ok(Read { args, problems })
    }
}

/// The type an argument's schema declares (`string`, `integer`), and
/// whether it also admits `null` as a value.
fn declared_type(declared: &Value) -> (Option<&str>, bool) {
    match declared.get("type") {
        Some(Value::String(single)) => (Some(single), false),
        Some(Value::Array(types)) => (
            types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null"),
            types.iter().any(|t| t == "null"),
        ),
        _ => (None, false),
    }
}

/// What [`admit`] makes of one argument.
#[derive(Debug, PartialEq)]
enum Admitted {
    /// `null` where the schema does not admit it: read as if the argument
    /// had been left out.
    Omitted,
    /// Of the declared type (a whole number normalized to an integer).
    Value(Value),
    /// Of another type: what was sent instead, in words.
    Refused(String),
}

/// Checks `value` against the `type` its schema declares (`nullable`: the
/// schema admits null as a value). Only the types the tools use are
/// checked (`string`, `integer`); any other is left to serde, and the tests
/// make sure there is none.
fn admit(expected: Option<&str>, nullable: bool, value: Value) -> Admitted {
    match (expected, value) {
        (_, Value::Null) if nullable => Admitted::Value(Value::Null),
        (_, Value::Null) => Admitted::Omitted,
        (Some("string"), value @ Value::String(_)) | (Some("boolean"), value @ Value::Bool(_)) => {
            Admitted::Value(value)
        }
        (Some("integer"), Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Admitted::Value(i.into())
            } else if n.is_u64() {
                // Above i64::MAX: out of every range a tool has, and the
                // range check says so.
                Admitted::Value(i64::MAX.into())
            } else {
                match n.as_f64() {
                    // JSON Schema counts 5.0 and 1e12 as integers; `as`
                    // saturates a whole number too large for i64, which the
                    // range check then refuses.
                    #[expect(
                        clippy::cast_possible_truncation,
                        reason = "a whole, finite number; saturating is intended"
                    )]
                    Some(f) if f.is_finite() && f.fract() == 0.0 => {
                        Admitted::Value((f as i64).into())
                    }
                    _ => Admitted::Refused(format!("a number with a fraction ({n})")),
                }
            }
        }
        (Some("string" | "integer" | "boolean"), value) => {
            Admitted::Refused(json_type(&value).into())
        }
        (_, value) => Admitted::Value(value),
    }
}

/// The JSON type of `value`, as a caller would name it.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The arguments could not be read although they passed their schema: a
/// bug here, logged, answered opaquely.
fn misread<T>(error: &str) -> McpError {
    tracing::error!(
        args = std::any::type_name::<T>(),
        error,
        "tool arguments passed their schema but could not be read"
    );
    McpError::internal_error(result_text::ARGUMENTS_UNREADABLE, None)
}

/// Tells "sent as null" (`Some(None)`) from "left out" (`None`, through
/// `#[serde(default)]`), for the arguments in [`ToolArgs::NULL_REMOVES`].
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// `create_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CreateTicketArgs {
    /// The operation id.
    #[schemars(required, description = contract::OPERATION_ID_ARG, length(min = MIN_KEY_LEN, max = MAX_KEY_LEN))]
    pub(crate) operation_id: Option<String>,
    /// The ticket.
    #[serde(flatten)]
    pub(crate) ticket: TicketArgs,
    /// A second ticket with the same content as a recent one is meant.
    #[schemars(description = contract::CONFIRM_NEW_ARG)]
    pub(crate) confirm_new: Option<bool>,
}

impl ToolArgs for CreateTicketArgs {}

/// The fields of a ticket, shared by `create_ticket` and `preview_ticket`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TicketArgs {
    /// Project slug.
    #[schemars(required, description = contract::PROJECT_ID_ARG, regex(pattern = PROJECT_ID_PATTERN))]
    pub(crate) project_id: Option<String>,
    /// One line, not blank.
    #[schemars(required, length(min = 1, max = MAX_TITLE_CHARS))]
    pub(crate) title: Option<String>,
    /// Longer text.
    #[schemars(length(max = MAX_DESCRIPTION_CHARS))]
    pub(crate) description: Option<String>,
    /// Default normal.
    #[schemars(extend("enum" = priority_names()))]
    pub(crate) priority: Option<String>,
}

impl From<TicketArgs> for TicketDraft {
    fn from(args: TicketArgs) -> Self {
        Self {
            project_id: args.project_id,
            title: args.title,
            description: args.description,
            priority: args.priority,
        }
    }
}

/// `preview_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PreviewTicketArgs {
    /// The ticket.
    #[serde(flatten)]
    pub(crate) ticket: TicketArgs,
}

impl ToolArgs for PreviewTicketArgs {}

/// `get_operation_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct OperationStatusArgs {
    /// The operation id to look up.
    #[schemars(required, description = contract::OPERATION_ID_LOOKUP_ARG)]
    pub(crate) operation_id: Option<String>,
    /// The action it was used for.
    #[schemars(description = contract::ACTION_ARG, extend("enum" = action_names()))]
    pub(crate) action: Option<String>,
}

impl ToolArgs for OperationStatusArgs {}

/// `get_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GetTicketArgs {
    /// The ticket id.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub(crate) ticket_id: Option<String>,
}

impl ToolArgs for GetTicketArgs {}

/// `list_tickets` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ListTicketsArgs {
    /// Only tickets of this project.
    #[schemars(description = contract::PROJECT_ID_ARG, regex(pattern = PROJECT_ID_PATTERN))]
    pub(crate) project_id: Option<String>,
    /// Only tickets carrying this label.
    #[schemars(description = contract::LABEL_FILTER_ARG, regex(pattern = LABEL_PATTERN))]
    pub(crate) label: Option<String>,
    /// Page size.
    #[schemars(range(min = 1, max = PageSize::MAX), extend("default" = PageSize::DEFAULT.get()))]
    // Wider than a page size can be, so that -1 or 1e12 reach the range
    // check (and its message) instead of failing as a type.
    pub(crate) limit: Option<i64>,
    /// Where the page starts.
    #[schemars(description = contract::CURSOR_ARG)]
    pub(crate) cursor: Option<String>,
}

impl ToolArgs for ListTicketsArgs {}

/// `list_comments` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ListCommentsArgs {
    /// The ticket.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub(crate) ticket_id: Option<String>,
    /// Page size.
    #[schemars(range(min = 1, max = PageSize::MAX), extend("default" = PageSize::DEFAULT.get()))]
    // As in list_tickets: any integer reaches the range check.
    pub(crate) limit: Option<i64>,
    /// Where the page starts.
    #[schemars(description = contract::CURSOR_ARG)]
    pub(crate) cursor: Option<String>,
}

impl ToolArgs for ListCommentsArgs {}

#[cfg(test)]
mod tests;
