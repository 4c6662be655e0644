//! Strategy (d): this service with `tickets-client`, used as its docs say
//! and otherwise left alone: its own retry policy (transient: same key
//! after `Retry-After`; ambiguous: reconciled through the status lookup;
//! permanent: returned), its journal on a SQLite file per caller, the
//! bench's per-call timeout and longest wait (the budget every strategy
//! shares), its other defaults.
//!
//! The caller chooses each intent's key and passes it
//! (`create_ticket_with_key`), so that a call interrupted before it
//! returned can be taken up with the same key; the journal reopens the
//! intent and the client looks before it sends. After a crash the new
//! caller knows no key: it finishes what the journal holds
//! (`Client::resume`). A repair sends the corrected request under the
//! intent's key, and the client's answer to that is what is measured.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tickets_client::{
    Client, ClientConfig, ClientError, NewTicket, OperationKey, Settled, SqliteJournal,
};

use super::callers::CallEnd;
use super::timing;
use super::wire::Ask;

/// A caller of strategy (d) for one intent.
pub(crate) struct ClientAgent {
    base: String,
    token: String,
    journal: PathBuf,
    timeout: Duration,
    client: Client,
    /// The intent's key, while this caller is alive.
    key: Option<OperationKey>,
}

impl ClientAgent {
    /// A caller of the service at `base` with `token`, journaling to the
    /// SQLite file `journal`.
    pub(crate) async fn new(
        base: &str,
        token: &str,
        journal: &Path,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let client = client(base, token, journal, timeout).await?;
        Ok(Self {
            base: base.to_owned(),
            token: token.to_owned(),
            journal: journal.to_owned(),
            timeout,
            client,
            key: None,
        })
    }

    /// One call for `ask`, under the intent's key (chosen on the first).
    pub(crate) async fn call(&mut self, ask: &Ask) -> CallEnd {
        let key = match &self.key {
            Some(key) => key.clone(),
            None => match OperationKey::parse(uuid::Uuid::now_v7().to_string()) {
                Ok(key) => self.key.insert(key).clone(),
                Err(e) => {
                    eprintln!("effect-bench: a UUID is not a key? {e}");
                    return CallEnd::Unresolved;
                }
            },
        };
        let ticket = NewTicket {
            description: Some(ask.description.clone()),
            ..NewTicket::new(ask.project_id.clone(), ask.title.clone())
        };
        end(self.client.create_ticket_with_key(key, &ticket).await)
    }

    /// The caller dies: its client and the key it held are gone; the
    /// journal file stays, and a new client opens it.
    pub(crate) async fn crash(&mut self) -> anyhow::Result<()> {
        self.key = None;
        self.client = client(&self.base, &self.token, &self.journal, self.timeout).await?;
        Ok(())
    }

    /// The restarted caller finishes what its journal holds (one intent).
    pub(crate) async fn resume(&mut self, _ask: &Ask) -> CallEnd {
        match self.client.resume().await {
            Ok(finished) => match finished.into_iter().last() {
                Some((_, settled)) => {
                    self.key = Some(settled.key().clone());
                    end::<serde_json::Value>(Ok(settled))
                }
                // Nothing pending: the crashed call had settled its entry,
                // but its answer died with it.
                None => CallEnd::Unresolved,
            },
            Err(e) => end::<serde_json::Value>(Err(e)),
        }
    }
}

async fn client(
    base: &str,
    token: &str,
    journal: &Path,
    timeout: Duration,
) -> anyhow::Result<Client> {
    let journal = SqliteJournal::open(journal).await?;
    let config = ClientConfig {
        call_timeout: timeout,
        journal: Arc::new(journal),
        max_wait: timing::BACKOFF_CAP,
        ..ClientConfig::default()
    };
    Ok(Client::new(base, token, config)?)
}

/// What the caller concludes from the client's answer.
fn end<T>(settled: Result<Settled<T>, ClientError>) -> CallEnd {
    match settled {
        Ok(Settled::Done { replayed, .. }) => CallEnd::Done { dedup: replayed },
        Ok(Settled::Expired { .. }) => CallEnd::Done { dedup: true },
        Ok(Settled::Refused { problem, .. }) => CallEnd::Refused {
            dedup: problem.problem_type.ends_with("idempotency-key-reused"),
        },
        Ok(Settled::Unresolved { .. }) => CallEnd::Unresolved,
        // The journal refuses the key for a changed request before
        // anything is sent: a refusal as a reuse of the key.
        Err(ClientError::KeyTaken { .. }) => CallEnd::Refused { dedup: true },
        Err(e) => {
            eprintln!("effect-bench: tickets-client failed: {e}");
            CallEnd::Unresolved
        }
    }
}
