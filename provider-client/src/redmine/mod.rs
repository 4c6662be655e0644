//! An adapter from the kitchen's provider port to Redmine's REST API: a real
//! tracker that accepts no idempotency key, so every effect must be
//! findable by its external reference instead.
//!
//! - a create is an issue carrying the reference in an issue custom field
//!   (`REDMINE_REFERENCE_FIELD`), found again with an exact filter on that
//!   field;
//! - an update, a move and a comment are a `PUT /issues/{id}.json` whose
//!   note ends with a marker line naming the write and its reference
//!   (`journal.rs`), found again in the issue's journals.
//!
//! Redmine's quirks the adapter must not miss (tests/redmine/API_NOTES.md):
//! it ignores a filter it cannot apply and answers with the whole project,
//! so every returned issue's reference is checked, and a search that
//! brought back anything else proves nothing; it ignores a status change
//! its workflow forbids and still answers 204, so a move is checked against
//! the issue's allowed statuses first and read back after; a wrong API key
//! is the anonymous user, so the key is checked at start; notes are not
//! idempotent, so nothing is re-sent before the journals show absence
//! (the kitchen's rule for a provider with a dedup window of 0).
//!
//! # Layout
//! - this file: [`RedmineProvider`] (the writes and searches) and its
//!   settings;
//! - `setup.rs`: the start-up checks, which name the setting at fault;
//! - `mapping.rs`: statuses and priorities, ours to Redmine's and back;
//! - `journal.rs`: the marker line, and a journal read back as a receipt;
//! - `api.rs`: one HTTP call, and what its failure proves;
//! - `wire.rs`: Redmine's JSON.

mod api;
mod journal;
mod mapping;
mod setup;
mod wire;

use std::time::Duration;

use kitchen::{
    DispatchRequest, Dispatched, EffectKind, Lookup, Priority, ProviderEffect, ProviderFuture,
    ProviderReceipt, ProviderWrite, SearchRequest, Setting, TicketProvider, TicketStatus,
};
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};

pub use journal::marker_in;
pub use mapping::StatusNames;
pub use setup::RedmineSetupError;

use crate::ProviderTls;
use api::{Answer, Api, Failure};
use journal::Verb;
use mapping::Mapping;
use wire::{Issue, IssueEnvelope, IssueList};

/// How to reach one Redmine and where tickets go there.
#[derive(Debug, Clone)]
pub struct RedmineSettings {
    /// Redmine's base URL, e.g. `https://redmine.example` or
    /// `http://127.0.0.1:3000/redmine`.
    pub base_url: String,
    /// The API key of the user the service acts as.
    pub api_key: String,
    /// The project's identifier or numeric id.
    pub project: String,
    /// The issue custom field (name or numeric id) that holds the external
    /// reference: a string field, "Used as a filter", enabled for the
    /// project and its trackers.
    pub reference_field: String,
    /// Which Redmine status each status of ours is.
    pub statuses: StatusNames,
    /// How long one call may take.
    pub timeout: Duration,
    /// Which certificates an `https://` Redmine may present.
    pub tls: ProviderTls,
}

/// A Redmine project, reached with one user's API key.
#[derive(Clone)]
pub struct RedmineProvider {
    api: Api,
    project_id: u64,
    field_id: u64,
    mapping: Mapping,
}

impl std::fmt::Debug for RedmineProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the API key.
        f.debug_struct("RedmineProvider")
            .field("base_url", &crate::redacted(self.api.base_url()))
            .field("project_id", &self.project_id)
            .field("reference_field", &self.field_id)
            .finish_non_exhaustive()
    }
}

impl RedmineProvider {
    /// Checks the settings against the Redmine they name (the key is
    /// accepted, the project and the field exist and the field filters,
    /// every status maps) and resolves Redmine's ids.
    pub async fn connect(settings: &RedmineSettings) -> Result<Self, RedmineSetupError> {
        setup::connect(settings).await
    }

    /// The issue `ticket` names (the provider's id is Redmine's issue id),
    /// or why nothing can be sent for it.
    fn issue_id(ticket: &str) -> Result<u64, String> {
        ticket
            .parse()
            .map_err(|_| format!("`{ticket}` is not a Redmine issue id"))
    }

    /// `GET /issues/{id}.json` with `include`.
    async fn issue(&self, id: u64, include: &str) -> Result<Issue, String> {
        let answer = self
            .api
            .call(
                Method::GET,
                &format!("/issues/{id}.json"),
                &[("include".to_owned(), include.to_owned())],
                None,
            )
            .await
            .map_err(Failure::into_reason)?;
        if answer.status != StatusCode::OK {
            return Err(format!("reading issue {id} answered {}", answer.describe()));
        }
        answer.json::<IssueEnvelope>().map(|e| e.issue)
    }

    async fn write(&self, request: &DispatchRequest) -> Dispatched {
        let reference = request.external_ref.as_str();
        match &request.write {
            ProviderWrite::CreateTicket {
                title,
                description,
                priority,
                ..
            } => {
                self.create(title, description.as_deref(), priority, reference)
                    .await
            }
            ProviderWrite::UpdateTicket {
                ticket,
                expected_version,
                title,
                description,
                priority,
                assignee,
            } => {
                if let Setting::Set(_) = assignee {
                    // Nothing was sent: the refusal is a proof.
                    return Dispatched::Rejected(
                        "Redmine assigns issues to its users by id; this service's free-text \
                         assignee does not map to one (leave assignee out)"
                            .into(),
                    );
                }
                let mut fields = Map::new();
                if let Setting::Set(title) = title {
                    fields.insert("subject".into(), title.as_str().into());
                }
                if let Setting::Set(description) = description {
                    fields.insert(
                        "description".into(),
                        description.as_deref().unwrap_or_default().into(),
                    );
                }
                if let Setting::Set(priority) = priority {
                    match self.priority_id(priority) {
                        Ok(id) => fields.insert("priority_id".into(), id.into()),
                        Err(why) => return Dispatched::Rejected(why),
                    };
                }
                self.update(ticket, *expected_version, fields, reference)
                    .await
            }
            ProviderWrite::TransitionTicket { ticket, to, reason } => {
                self.transition(ticket, to, reason.as_deref(), reference)
                    .await
            }
            ProviderWrite::AddComment { ticket, body } => {
                let id = match Self::issue_id(ticket) {
                    Ok(id) => id,
                    Err(why) => return Dispatched::Rejected(why),
                };
                let note = journal::note(Some(body), Verb::Comment, reference);
                let fields = Map::from_iter([("notes".to_owned(), Value::from(note))]);
                self.put_then_read_back(id, fields, Verb::Comment, reference)
                    .await
            }
        }
    }

    /// Redmine's id of the priority ours is named `priority`, or why
    /// nothing can be sent with it.
    fn priority_id(&self, priority: &str) -> Result<u64, String> {
        Priority::parse(priority)
            .map(|p| self.mapping.priority_id(p))
            .map_err(|v| v.message)
    }

    async fn create(
        &self,
        title: &str,
        description: Option<&str>,
        priority: &str,
        reference: &str,
    ) -> Dispatched {
        let priority_id = match self.priority_id(priority) {
            Ok(id) => id,
            Err(why) => return Dispatched::Rejected(why),
        };
        let body = json!({ "issue": {
            "project_id": self.project_id,
            "subject": title,
            "description": description.unwrap_or_default(),
            "priority_id": priority_id,
            "custom_fields": [{ "id": self.field_id, "value": reference }],
        }});
        let answer = match self
            .api
            .call(Method::POST, "/issues.json", &[], Some(body))
            .await
        {
            Ok(answer) => answer,
            Err(failure) => return failure.into(),
        };
        if answer.status != StatusCode::CREATED {
            return answer.refusal();
        }
        // A yes must be about our issue: in our project, with our reference.
        match answer.json::<IssueEnvelope>() {
            Ok(IssueEnvelope { issue })
                if issue.project.id == self.project_id
                    && issue.custom_value(self.field_id) == Some(reference) =>
            {
                Dispatched::Done {
                    receipt: ProviderReceipt {
                        external_ref: reference.to_owned(),
                        effect: ProviderEffect::Ticket {
                            id: issue.id.to_string(),
                        },
                    },
                    replayed: false,
                }
            }
            Ok(IssueEnvelope { issue }) => Dispatched::Ambiguous(format!(
                "201 with issue {} in project {}, which does not carry this write's reference",
                issue.id, issue.project.id
            )),
            Err(why) => Dispatched::Ambiguous(format!("201 with an unreadable answer: {why}")),
        }
    }

    async fn update(
        &self,
        ticket: &str,
        expected_version: Option<i64>,
        fields: Map<String, Value>,
        reference: &str,
    ) -> Dispatched {
        let id = match Self::issue_id(ticket) {
            Ok(id) => id,
            Err(why) => return Dispatched::Rejected(why),
        };
        if let Some(expected) = expected_version {
            // Redmine's API has no version precondition: the version is
            // read just before the write. A change made in between is not
            // caught (the service's own copy already checked If-Match).
            let now = match self.issue(id, "journals").await {
                Ok(issue) => journal::state_at(&issue, u64::MAX, &self.mapping),
                Err(why) => {
                    return Dispatched::NotSent(format!(
                        "the issue's version could not be read before the update: {why}"
                    ));
                }
            };
            match now {
                Ok(state) if state.version.get() != expected => {
                    return Dispatched::Rejected(format!(
                        "412: issue {id} is at version {} in Redmine, not {expected}",
                        state.version.get()
                    ));
                }
                Ok(_) => {}
                Err(why) => {
                    return Dispatched::NotSent(format!(
                        "the issue's version could not be read before the update: {why}"
                    ));
                }
            }
        }
        let mut fields = fields;
        fields.insert(
            "notes".into(),
            journal::note(None, Verb::Update, reference).into(),
        );
        self.put_then_read_back(id, fields, Verb::Update, reference)
            .await
    }

    async fn transition(
        &self,
        ticket: &str,
        to: &str,
        reason: Option<&str>,
        reference: &str,
    ) -> Dispatched {
        let id = match Self::issue_id(ticket) {
            Ok(id) => id,
            Err(why) => return Dispatched::Rejected(why),
        };
        let target = match TicketStatus::parse_field(to, "to") {
            Ok(status) => self.mapping.status_id(status),
            Err(v) => return Dispatched::Rejected(v.message),
        };
        // Redmine answers 204 to a move its workflow forbids and does not
        // move: ask first what this user may do.
        let issue = match self.issue(id, "allowed_statuses").await {
            Ok(issue) => issue,
            Err(why) => {
                return Dispatched::NotSent(format!(
                    "the issue's allowed statuses could not be read before the move: {why}"
                ));
            }
        };
        if issue.status.id == target {
            return Dispatched::Rejected(format!(
                "issue {id} is already {} in Redmine",
                issue.status.name
            ));
        }
        if let Some(allowed) = &issue.allowed_statuses
            && !allowed.iter().any(|s| s.id == target)
        {
            let names: Vec<&str> = allowed.iter().map(|s| s.name.as_str()).collect();
            return Dispatched::Rejected(format!(
                "Redmine's workflow does not let this user move issue {id} from {} to status {target} \
                 (allowed: {})",
                issue.status.name,
                names.join(", ")
            ));
        }
        let fields = Map::from_iter([
            ("status_id".to_owned(), Value::from(target)),
            (
                "notes".to_owned(),
                journal::note(reason, Verb::Transition, reference).into(),
            ),
        ]);
        self.put_then_read_back(id, fields, Verb::Transition, reference)
            .await
    }

    /// `PUT /issues/{id}.json` with `fields` (its note carrying the marker),
    /// then the journal that carries it, read back as the receipt.
    async fn put_then_read_back(
        &self,
        id: u64,
        fields: Map<String, Value>,
        verb: Verb,
        reference: &str,
    ) -> Dispatched {
        let body = json!({ "issue": fields });
        let answer = match self
            .api
            .call(Method::PUT, &format!("/issues/{id}.json"), &[], Some(body))
            .await
        {
            Ok(answer) => answer,
            Err(failure) => return failure.into(),
        };
        if answer.status != StatusCode::NO_CONTENT {
            return answer.refusal();
        }
        // The 204 says nothing of which journal: the journals do. Failing to
        // read them leaves the outcome to reconciliation.
        let kind = match verb {
            Verb::Comment => EffectKind::Comment,
            Verb::Update | Verb::Transition => EffectKind::Change,
        };
        match self.journal_lookup(id, kind, reference).await {
            Lookup::Found { receipt, .. } => Dispatched::Done {
                receipt,
                replayed: false,
            },
            Lookup::Absent => Dispatched::Ambiguous(format!(
                "204, but no journal of issue {id} carries `{}`",
                journal::marker(verb, reference)
            )),
            Lookup::Failed(why) => {
                Dispatched::Ambiguous(format!("204, then the journal could not be read: {why}"))
            }
        }
    }

    /// The journals of issue `id` carrying `reference` for an effect of
    /// `kind`.
    async fn journal_lookup(&self, id: u64, kind: EffectKind, reference: &str) -> Lookup {
        let issue = match self.issue(id, "journals").await {
            Ok(issue) => issue,
            Err(why) => return Lookup::Failed(why),
        };
        let found = journal::found(&issue, kind, reference);
        let Some(((original, verb, text), copies)) = found.split_first() else {
            return Lookup::Absent;
        };
        match journal::receipt(&issue, original, *verb, text, reference, &self.mapping) {
            Ok(receipt) => Lookup::Found {
                receipt,
                duplicates: copies.iter().map(|(j, ..)| j.id.to_string()).collect(),
            },
            Err(why) => Lookup::Failed(format!("journal {} unreadable: {why}", original.id)),
        }
    }

    /// The issues of the project carrying `reference` in the reference
    /// field, closed ones included. The explicit filter syntax takes the
    /// value literally (the short `cf_N=` reads operators into it).
    async fn ticket_lookup(&self, reference: &str) -> Lookup {
        let field = format!("cf_{}", self.field_id);
        let query = [
            ("project_id".to_owned(), self.project_id.to_string()),
            ("set_filter".into(), "1".into()),
            ("f[]".into(), field.clone()),
            (format!("op[{field}]"), "=".into()),
            (format!("v[{field}][]"), reference.to_owned()),
            ("sort".into(), "id".into()),
            ("limit".into(), "100".into()),
        ];
        let answer = match self
            .api
            .call(Method::GET, "/issues.json", &query, None)
            .await
        {
            Ok(answer) => answer,
            Err(failure) => return Lookup::Failed(failure.into_reason()),
        };
        if answer.status != StatusCode::OK {
            return Lookup::Failed(format!("the search answered {}", answer.describe()));
        }
        let list = match answer.json::<IssueList>() {
            Ok(list) => list,
            Err(why) => return Lookup::Failed(format!("unreadable search answer: {why}")),
        };
        issues_found(list, self.field_id, reference)
    }
}

/// What a search's issues prove. Redmine answers a filter it cannot apply
/// with the whole project, so one issue without our reference means the
/// search was not a search: nothing is proven.
fn issues_found(list: IssueList, field_id: u64, reference: &str) -> Lookup {
    if let Some(other) = list
        .issues
        .iter()
        .find(|i| i.custom_value(field_id) != Some(reference))
    {
        return Lookup::Failed(format!(
            "the search for {reference} answered issue {}, which does not carry it: Redmine did \
             not apply the filter (is the reference field still \"Used as a filter\" and visible \
             to this user?), so absence is not proven",
            other.id
        ));
    }
    if list.total_count > list.issues.len() as u64 {
        return Lookup::Failed(format!(
            "{} issues carry {reference}, more than one page: a runaway duplicate",
            list.total_count
        ));
    }
    let mut ids: Vec<u64> = list.issues.iter().map(|i| i.id).collect();
    ids.sort_unstable();
    let Some((original, copies)) = ids.split_first() else {
        return Lookup::Absent;
    };
    Lookup::Found {
        receipt: ProviderReceipt {
            external_ref: reference.to_owned(),
            effect: ProviderEffect::Ticket {
                id: original.to_string(),
            },
        },
        duplicates: copies.iter().map(u64::to_string).collect(),
    }
}

impl TicketProvider for RedmineProvider {
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched> {
        Box::pin(self.write(request))
    }

    fn find_by_reference<'a>(&'a self, request: &'a SearchRequest) -> ProviderFuture<'a, Lookup> {
        Box::pin(async move {
            match (request.kind, request.ticket.as_deref()) {
                (EffectKind::Ticket, _) => self.ticket_lookup(&request.external_ref).await,
                (kind, Some(ticket)) => match ticket.parse() {
                    Ok(id) => self.journal_lookup(id, kind, &request.external_ref).await,
                    Err(_) => Lookup::Failed(format!("`{ticket}` is not a Redmine issue id")),
                },
                (kind, None) => Lookup::Failed(format!(
                    "a {} is searched in its issue's journals, and no issue was named",
                    kind.as_str()
                )),
            }
        })
    }
}

impl From<Failure> for Dispatched {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NotSent(why) => Dispatched::NotSent(why),
            Failure::MaybeSent(why) => Dispatched::Ambiguous(why),
        }
    }
}

impl Answer {
    /// What an answer other than the expected success proves.
    fn refusal(&self) -> Dispatched {
        let said = self.describe();
        match self.status {
            // Throttled (by a proxy in front): turned away before any work.
            StatusCode::TOO_MANY_REQUESTS => Dispatched::NotSent(said),
            // A timeout or a conflict says nothing about the effect.
            StatusCode::REQUEST_TIMEOUT | StatusCode::CONFLICT => Dispatched::Ambiguous(said),
            StatusCode::UNAUTHORIZED => {
                Dispatched::Rejected(format!("{said}: Redmine no longer accepts REDMINE_API_KEY"))
            }
            // A refusal on the merits: Redmine's validation (422), no such
            // issue (404), not allowed (403).
            s if s.is_client_error() => Dispatched::Rejected(said),
            // 5xx, another 2xx, a redirect: it may have acted.
            _ => Dispatched::Ambiguous(said),
        }
    }
}

#[cfg(test)]
mod tests;
