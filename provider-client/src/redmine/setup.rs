//! The start-up checks: every setting is tried against the Redmine it
//! names, and a wrong one is refused naming it, before the service takes a
//! single write. Redmine treats a wrong API key as the anonymous user and
//! ignores a filter it cannot apply, so neither would show up as an error
//! later, only as writes refused or searches that prove nothing.

use reqwest::{Method, StatusCode};

use super::api::{Answer, Api, Failure};
use super::mapping::Mapping;
use super::wire::{
    CurrentUser, CustomField, CustomFields, IssueList, Named, Priorities, ProjectEnvelope, Statuses,
};
use super::{RedmineProvider, RedmineSettings};
use crate::SetupError;

/// Why the adapter cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RedmineSetupError {
    /// The HTTP client refused its settings (e.g. the CA bundle).
    #[error(transparent)]
    Client(#[from] SetupError),
    /// Redmine could not be asked.
    #[error("PROVIDER_URL {url}: Redmine could not be reached: {why}")]
    Unreachable {
        /// Redmine's URL, credentials removed.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// Redmine answered, and a setting is wrong.
    #[error("{setting}: {why}")]
    Refused {
        /// The setting at fault.
        setting: &'static str,
        /// What Redmine answered, and what to do.
        why: String,
    },
}

fn refused(setting: &'static str, why: impl Into<String>) -> RedmineSetupError {
    RedmineSetupError::Refused {
        setting,
        why: why.into(),
    }
}

/// Checks `settings` and resolves Redmine's ids.
pub(super) async fn connect(
    settings: &RedmineSettings,
) -> Result<RedmineProvider, RedmineSetupError> {
    let client = crate::http_client(settings.timeout, &settings.tls)?;
    let api = Api::new(client, &settings.base_url, &settings.api_key);
    let get = |path: String, query: Vec<(String, String)>| {
        let api = api.clone();
        async move {
            api.call(Method::GET, &path, &query, None)
                .await
                .map_err(|failure| RedmineSetupError::Unreachable {
                    url: crate::redacted(api.base_url()),
                    why: Failure::into_reason(failure),
                })
        }
    };

    // The key: a wrong one is the anonymous user, and only this says so.
    let me = get("/users/current.json".into(), Vec::new()).await?;
    let user = match me.status {
        StatusCode::OK => me.json::<CurrentUser>().map(|c| c.user).map_err(|why| {
            refused(
                "PROVIDER_URL",
                format!("is this Redmine? GET /users/current.json answered {why}"),
            )
        })?,
        StatusCode::UNAUTHORIZED => {
            return Err(refused(
                "REDMINE_API_KEY",
                "Redmine does not accept this API key (GET /users/current.json answered 401). \
                 Copy the key from \"My account\" → \"API access key\" of the user the service \
                 acts as.",
            ));
        }
        StatusCode::FORBIDDEN => {
            return Err(refused(
                "REDMINE_API_KEY",
                "Redmine refused the API (403): an administrator must enable \"Enable REST web \
                 service\" in Administration → Settings → API.",
            ));
        }
        _ => {
            return Err(refused(
                "PROVIDER_URL",
                format!(
                    "is this Redmine? GET /users/current.json answered {}",
                    me.describe()
                ),
            ));
        }
    };

    // The project, with the custom fields enabled for it.
    let project = get(
        format!("/projects/{}.json", settings.project),
        vec![("include".into(), "issue_custom_fields".into())],
    )
    .await?;
    let project = match project.status {
        StatusCode::OK => {
            project
                .json::<ProjectEnvelope>()
                .map_err(|why| refused("REDMINE_PROJECT", why))?
                .project
        }
        _ => {
            return Err(refused(
                "REDMINE_PROJECT",
                format!(
                    "user {} sees no project `{}` ({}). Give its identifier (as in \
                     /projects/IDENTIFIER) or its id, and make the user a member.",
                    user.login,
                    settings.project,
                    project.describe()
                ),
            ));
        }
    };

    let wanted = settings.reference_field.as_str();
    let field = if user.admin {
        // Only an administrator may read field definitions: check what the
        // search and the writes rely on.
        let fields = get("/custom_fields.json".into(), Vec::new()).await?;
        let defs = read::<CustomFields>(&fields, "/custom_fields.json")?.custom_fields;
        let issue_fields: Vec<&CustomField> = defs
            .iter()
            .filter(|f| f.customized_type == "issue")
            .collect();
        let def = issue_fields
            .iter()
            .find(|f| wanted.parse::<u64>().ok() == Some(f.id) || f.name == wanted)
            .ok_or_else(|| {
                no_such_field(
                    wanted,
                    issue_fields.iter().map(|f| (f.name.as_str(), f.id)),
                    "",
                )
            })?;
        let wrong = if def.field_format != "string" {
            Some("is not a text (string) field")
        } else if def.multiple {
            Some("takes several values")
        } else if !def.is_filter {
            Some("is not \"Used as a filter\", so Redmine would ignore a search by it")
        } else {
            None
        };
        if let Some(wrong) = wrong {
            return Err(refused(
                "REDMINE_REFERENCE_FIELD",
                format!("custom field `{}` ({}) {wrong}", def.name, def.id),
            ));
        }
        Named {
            id: def.id,
            name: def.name.clone(),
        }
    } else {
        // Others see a field on the project when it is enabled there by
        // name, and on its issues when it is for all projects.
        let sample = get(
            "/issues.json".into(),
            vec![
                ("project_id".into(), project.id.to_string()),
                ("status_id".into(), "*".into()),
                ("limit".into(), "1".into()),
            ],
        )
        .await?;
        let on_issues: Vec<Named> = sample
            .json::<IssueList>()
            .ok()
            .and_then(|list| list.issues.into_iter().next())
            .map(|issue| issue.custom_fields)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.name.map(|name| Named { id: v.id, name }))
            .collect();
        let visible: Vec<&Named> = project
            .issue_custom_fields
            .iter()
            .chain(&on_issues)
            .collect();
        match visible
            .iter()
            .find(|f| wanted.parse::<u64>().ok() == Some(f.id) || f.name == wanted)
        {
            Some(field) => (*field).clone(),
            // A field for all projects is invisible to a non-administrator
            // until an issue has it; its id is taken on trust (the probe
            // below still checks that it filters, once the project has
            // issues).
            None => match wanted.parse::<u64>() {
                Ok(id) => Named {
                    id,
                    name: wanted.to_owned(),
                },
                Err(_) => {
                    return Err(no_such_field(
                        wanted,
                        visible.iter().map(|f| (f.name.as_str(), f.id)),
                        &format!(
                            " User {} is no administrator and cannot read field definitions: \
                             give the field's id (Administration → Custom fields, the number in \
                             its URL).",
                            user.login
                        ),
                    ));
                }
            },
        }
    };
    // Whoever the user: a search for a reference nobody has must find
    // nothing. Redmine answers a filter it cannot apply with every issue.
    let probe = format!("rst1-probe-{}", probe_suffix());
    let cf = format!("cf_{}", field.id);
    let search = get(
        "/issues.json".into(),
        vec![
            ("project_id".into(), project.id.to_string()),
            ("set_filter".into(), "1".into()),
            ("f[]".into(), cf.clone()),
            (format!("op[{cf}]"), "=".into()),
            (format!("v[{cf}][]"), probe),
            ("limit".into(), "1".into()),
        ],
    )
    .await?;
    match search.json::<IssueList>() {
        Ok(list) if search.status == StatusCode::OK && list.issues.is_empty() => {}
        Ok(_) if search.status == StatusCode::OK => {
            return Err(refused(
                "REDMINE_REFERENCE_FIELD",
                format!(
                    "Redmine ignored a search by custom field `{}` ({}) and answered with other \
                     issues: make it \"Used as a filter\", enabled for every tracker of the \
                     project, and visible to user {}",
                    field.name, field.id, user.login
                ),
            ));
        }
        _ => {
            return Err(refused(
                "REDMINE_REFERENCE_FIELD",
                format!("a search by it answered {}", search.describe()),
            ));
        }
    }

    let statuses = get("/issue_statuses.json".into(), Vec::new()).await?;
    let statuses = read::<Statuses>(&statuses, "/issue_statuses.json")?.issue_statuses;
    let priorities = get("/enumerations/issue_priorities.json".into(), Vec::new()).await?;
    let priorities =
        read::<Priorities>(&priorities, "/enumerations/issue_priorities.json")?.issue_priorities;
    let mapping = Mapping::resolve(&settings.statuses, &statuses, &priorities)
        .map_err(|why| refused("REDMINE_STATUSES", why))?;
    Ok(RedmineProvider {
        api,
        project_id: project.id,
        field_id: field.id,
        mapping,
    })
}

/// No issue field is named `wanted`; `known` are those there are.
fn no_such_field<'a>(
    wanted: &str,
    known: impl Iterator<Item = (&'a str, u64)>,
    hint: &str,
) -> RedmineSetupError {
    let names: Vec<String> = known.map(|(name, id)| format!("`{name}` ({id})")).collect();
    refused(
        "REDMINE_REFERENCE_FIELD",
        format!(
            "there is no issue custom field `{wanted}` (there are: {}). Create a text field, \
             \"Used as a filter\", for all trackers, and enable it for the project.{hint}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ),
    )
}

fn read<T: serde::de::DeserializeOwned>(
    answer: &Answer,
    path: &str,
) -> Result<T, RedmineSetupError> {
    if answer.status != StatusCode::OK {
        return Err(refused(
            "PROVIDER_URL",
            format!("GET {path} answered {}", answer.describe()),
        ));
    }
    answer
        .json()
        .map_err(|why| refused("PROVIDER_URL", format!("GET {path}: {why}")))
}

/// Enough to make the probe's reference one nobody has.
fn probe_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}")
}
