//! The ground truth of checks 10 to 17 when the provider is a real Redmine
//! (behind the fault proxy, `provider-sim --redmine-upstream`): effects
//! counted in Redmine itself, read directly (never through the proxy):
//! issues by subject, and journals per issue by the marker line the
//! service's adapter ends each note with.

use anyhow::Context;
use provider_client::redmine::marker_in;
use provider_sim::ChangeKind;
use serde::Deserialize;

use super::actions::Counted;

/// A Redmine to count in.
#[derive(Debug, Clone)]
pub struct RedmineTruth {
    /// Redmine's own URL (not the proxy's).
    pub url: String,
    /// An API key that sees the project (an administrator's sees all).
    pub api_key: String,
    /// The project's identifier or id.
    pub project: String,
}

#[derive(Deserialize)]
struct Issues {
    issues: Vec<Subject>,
    total_count: usize,
}

#[derive(Deserialize)]
struct Subject {
    subject: String,
}

#[derive(Deserialize)]
struct WithJournals {
    issue: Journals,
}

#[derive(Deserialize)]
struct Journals {
    journals: Vec<Note>,
}

#[derive(Deserialize)]
struct Note {
    #[serde(default)]
    notes: Option<String>,
}

impl RedmineTruth {
    async fn get<T: for<'de> Deserialize<'de>>(
        &self,
        http: &reqwest::Client,
        path: &str,
        query: &[(String, String)],
    ) -> anyhow::Result<T> {
        let answer = http
            .get(format!("{}{path}", self.url))
            .header("x-redmine-api-key", &self.api_key)
            .query(query)
            .send()
            .await
            .with_context(|| format!("Redmine GET {path}"))?;
        anyhow::ensure!(
            answer.status().is_success(),
            "Redmine GET {path} answered {}",
            answer.status()
        );
        answer
            .json()
            .await
            .with_context(|| format!("Redmine GET {path}: not the JSON expected"))
    }

    /// How many effects `counted` Redmine holds: issues titled `title`, or
    /// journals of the kind on issue `issue`.
    pub(crate) async fn count(
        &self,
        http: &reqwest::Client,
        counted: Counted,
        title: &str,
        issue: Option<&str>,
    ) -> anyhow::Result<usize> {
        let verb = match counted {
            Counted::Tickets => return self.issues_titled(http, title).await,
            Counted::Changes(ChangeKind::Update) => "update",
            Counted::Changes(ChangeKind::Transition) => "transition",
            Counted::Comments => "comment",
        };
        let Some(issue) = issue else {
            return Ok(0);
        };
        let found: WithJournals = self
            .get(
                http,
                &format!("/issues/{issue}.json"),
                &[("include".into(), "journals".into())],
            )
            .await?;
        Ok(found
            .issue
            .journals
            .iter()
            .filter_map(|j| j.notes.as_deref().and_then(marker_in))
            .filter(|(v, _)| *v == verb)
            .count())
    }

    /// Issues of the project, closed ones included, whose subject is
    /// `title` exactly, paging through all that contain it.
    pub async fn issues_titled(
        &self,
        http: &reqwest::Client,
        title: &str,
    ) -> anyhow::Result<usize> {
        let mut exact = 0;
        let mut offset = 0;
        loop {
            let query: Vec<(String, String)> = [
                ("project_id", self.project.as_str()),
                ("set_filter", "1"),
                ("f[]", "subject"),
                ("op[subject]", "~"),
                ("v[subject][]", title),
                ("f[]", "status_id"),
                ("op[status_id]", "*"),
                ("sort", "id"),
                ("limit", "100"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .chain([("offset".to_owned(), offset.to_string())])
            .collect();
            let page: Issues = self.get(http, "/issues.json", &query).await?;
            exact += page.issues.iter().filter(|i| i.subject == title).count();
            offset += page.issues.len();
            if page.issues.is_empty() || offset >= page.total_count {
                return Ok(exact);
            }
        }
    }
}
