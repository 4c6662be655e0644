//! One intent's story under a row's fault, told the same way for every
//! strategy: when the caller calls, when it is interrupted (its call
//! dropped, or its whole state lost), when it comes back, and what it sends
//! when it repairs a request. The faults themselves are set by the cell
//! (`cell.rs`); what a caller does inside a call is its strategy's
//! (`callers.rs`, `client_caller.rs`).

use std::time::{Duration, Instant};

use super::callers::{CallEnd, Caller, Remembered, forget};
use super::client_caller::ClientAgent;
use super::matrix::Row;
use super::timing::{self, Moments};
use super::wire::Ask;

/// A caller of any strategy, with what it remembers about its intent.
pub(crate) enum Agent {
    /// Strategies (a) to (c).
    Simple {
        /// The policy and where it sends.
        caller: Caller,
        /// What it remembers (lost in a crash).
        memory: Remembered,
    },
    /// Strategy (d): `tickets-client` over its journal.
    Client(Box<ClientAgent>),
}

impl Agent {
    /// A new caller of strategy (a) to (c).
    pub(crate) fn simple(caller: Caller) -> Self {
        Agent::Simple {
            caller,
            memory: forget(),
        }
    }

    /// One call for `ask`.
    async fn call(&mut self, ask: &Ask) -> CallEnd {
        match self {
            Agent::Simple { caller, memory } => caller.call(memory, ask).await,
            Agent::Client(agent) => agent.call(ask).await,
        }
    }

    /// The caller dies and a new one starts: (a) to (c) keep nothing (no
    /// journal, a new HTTP client); (d) keeps its journal file.
    async fn crash(&mut self) -> anyhow::Result<()> {
        match self {
            Agent::Simple { caller, memory, .. } => {
                *memory = forget();
                caller.http = reqwest::Client::new();
                Ok(())
            }
            Agent::Client(agent) => agent.crash().await,
        }
    }

    /// After a crash, the new caller takes the intent up: (a) to (c) as a
    /// new call (they cannot know it was begun); (d) from its journal.
    async fn take_up(&mut self, ask: &Ask) -> CallEnd {
        if let Agent::Client(agent) = self {
            return agent.resume(ask).await;
        }
        self.call(ask).await
    }
}

/// What an intent's story produced, for its log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Story {
    /// Every call's end that the caller saw, in order.
    pub(crate) ends: Vec<CallEnd>,
    /// From the start to the last call's return.
    pub(crate) latency: Duration,
}

/// What an intent's calls send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Asks {
    /// What it asks for.
    pub(crate) first: Ask,
    /// The same request with one field corrected (the repair rows).
    pub(crate) repaired: Ask,
    /// The control's second, separate intent: the same content (saying
    /// `confirm_new` when the column's caller does).
    pub(crate) second: Ask,
}

/// A call dropped at `after` (the caller is cancelled or dies then); its
/// end if it finished first.
async fn interrupted(agent: &mut Agent, ask: &Ask, after: Duration) -> Option<CallEnd> {
    tokio::time::timeout(after, agent.call(ask)).await.ok()
}

/// Tells the story of `row` for one intent, sending `asks`. `second` makes
/// the caller of the control's second, separate intent.
pub(crate) async fn tell(
    row: Row,
    mut agent: Agent,
    second: impl AsyncFnOnce() -> anyhow::Result<Agent>,
    asks: &Asks,
    moments: Moments,
) -> anyhow::Result<Story> {
    let Asks {
        first: ask,
        repaired,
        second: again,
    } = asks;
    let start = Instant::now();
    let mut ends = Vec::new();
    match row {
        Row::NewActionControl => {
            ends.push(agent.call(ask).await);
            // The same content again, as a new intent of its own.
            let mut other = second().await?;
            ends.push(other.call(again).await);
        }
        Row::CancelledMidCall | Row::CallerCrash => {
            match interrupted(&mut agent, ask, moments.interrupt).await {
                Some(end) => ends.push(end),
                None => {
                    tokio::time::sleep(timing::RESUME_AFTER).await;
                    if row == Row::CallerCrash {
                        agent.crash().await?;
                        ends.push(agent.take_up(ask).await);
                    } else {
                        ends.push(agent.call(ask).await);
                    }
                }
            }
        }
        Row::AfterProviderWindow | Row::AfterReplayWindow => {
            match interrupted(&mut agent, ask, timing::WITHHELD_FOR).await {
                Some(end) => ends.push(end),
                None => {
                    tokio::time::sleep_until((start + timing::PAST_WINDOW).into()).await;
                    ends.push(agent.call(ask).await);
                }
            }
        }
        Row::RepairAfterRefusal => {
            let first = agent.call(ask).await;
            ends.push(first);
            if !matches!(first, CallEnd::Done { .. }) {
                ends.push(agent.call(repaired).await);
            }
        }
        Row::RepairAfterLostAnswer => {
            match interrupted(&mut agent, ask, timing::WITHHELD_FOR).await {
                Some(end @ CallEnd::Done { .. }) => ends.push(end),
                first => {
                    ends.extend(first);
                    ends.push(agent.call(repaired).await);
                }
            }
        }
        Row::BeforeDispatch
        | Row::ReceivedNotMutated
        | Row::MutatedAnswerLost
        | Row::AnswerLostToCaller
        | Row::CallerTimeout
        | Row::OtherInstance => ends.push(agent.call(ask).await),
    }
    Ok(Story {
        ends,
        latency: start.elapsed(),
    })
}
