//! The matrix: which fault points (rows) meet which strategies on which
//! backends (columns), which cells cannot exist, and in words how each
//! fault is made to happen. The words are printed in the report, so the
//! table a reader sees and the code that ran cannot drift apart.

use std::fmt;

use serde::Serialize;

/// Where the intended effects are made, and so where they are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// This service's own database (the local backend): counted there.
    Local,
    /// A provider that honours `Idempotency-Key` (within its dedup window):
    /// counted at the simulator.
    Honour,
    /// A provider that ignores keys (a weak tool): counted at the simulator.
    Ignore,
    /// A real Redmine (which takes no key) behind the fault proxy
    /// (`provider_sim::spawn_redmine_proxy`), our server with
    /// `PROVIDER_KIND=redmine`: counted in Redmine itself, by subject.
    Redmine,
}

impl Backend {
    /// Every backend, in report order.
    pub const ALL: [Backend; 4] = [
        Backend::Local,
        Backend::Honour,
        Backend::Ignore,
        Backend::Redmine,
    ];

    /// The backends with guard columns: the guard compares content in our
    /// own database whatever the provider, so a real tracker would add
    /// nothing to what the simulator's columns show.
    pub const GUARDED: [Backend; 3] = [Backend::Local, Backend::Honour, Backend::Ignore];

    /// Its short name (`local`, `honour`, `ignore`, `redmine`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Local => "local",
            Backend::Honour => "honour",
            Backend::Ignore => "ignore",
            Backend::Redmine => "redmine",
        }
    }

    /// Whether the effects are made at a provider (the simulator, or
    /// Redmine behind the fault proxy).
    pub fn remote(self) -> bool {
        self != Backend::Local
    }

    /// Whether the provider is a real Redmine behind the fault proxy.
    pub fn redmine(self) -> bool {
        self == Backend::Redmine
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a caller goes about an intended effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// (a) Blind retry: every attempt under a fresh key.
    Blind,
    /// (b) The simple adapter: the provider's native key when it honours
    /// one (retrying with it), no automatic retry otherwise. Calls the
    /// provider directly; there is none on the local backend.
    Native,
    /// (c) This service with a naive client: one key per intent, retried
    /// as is, never reconciled (no status lookups, no journal).
    Naive,
    /// (d) This service with `tickets-client`: its journal and its
    /// reconciling retry policy.
    Client,
}

impl Strategy {
    /// Every strategy, in report order.
    pub const ALL: [Strategy; 4] = [
        Strategy::Blind,
        Strategy::Native,
        Strategy::Naive,
        Strategy::Client,
    ];

    /// Its letter in the issue: `a` to `d`.
    pub fn letter(self) -> &'static str {
        match self {
            Strategy::Blind => "a",
            Strategy::Native => "b",
            Strategy::Naive => "c",
            Strategy::Client => "d",
        }
    }

    /// Its short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Blind => "blind",
            Strategy::Native => "native",
            Strategy::Naive => "naive",
            Strategy::Client => "client",
        }
    }

    /// Whether its caller talks to this service (rather than to the
    /// provider directly).
    pub fn through_service(self, backend: Backend) -> bool {
        match self {
            Strategy::Naive | Strategy::Client => true,
            // Blind retry has no provider to call on the local backend: it
            // blindly retries this service, with a fresh key each time.
            Strategy::Blind => backend == Backend::Local,
            Strategy::Native => false,
        }
    }
}

/// The likely-duplicate guard (`DUPLICATE_GUARD`) our server runs with in
/// the guard columns: strategy (a) through this service, on every backend.
/// The matrix's other columns run with it `off`, as before the guard
/// existed. On the command line and in JSON a guard is its
/// [`Guard::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Guard {
    /// `DUPLICATE_GUARD=off`: every new key is a new write.
    Off,
    /// `DUPLICATE_GUARD=warn`: made, and the answer carries
    /// `Possible-Duplicate-Of`.
    Warn,
    /// `DUPLICATE_GUARD=confirm`: refused with `409 possible-duplicate`,
    /// nothing written; the caller never says `confirm_new`.
    Confirm,
    /// `DUPLICATE_GUARD=confirm`, and the caller says `confirm_new: true`
    /// on an intent it means as a second one with the same content (the
    /// control's second; never on a retry).
    ConfirmNew,
}

impl Guard {
    /// Every guard, in report order.
    pub const ALL: [Guard; 4] = [Guard::Off, Guard::Warn, Guard::Confirm, Guard::ConfirmNew];

    /// `off`, `warn`, `confirm`, `confirm-new`.
    pub fn as_str(self) -> &'static str {
        match self {
            Guard::Off => "off",
            Guard::Warn => "warn",
            Guard::Confirm => "confirm",
            Guard::ConfirmNew => "confirm-new",
        }
    }

    /// The server's `DUPLICATE_GUARD`.
    pub fn mode(self) -> kitchen::GuardMode {
        match self {
            Guard::Off => kitchen::GuardMode::Off,
            Guard::Warn => kitchen::GuardMode::Warn,
            Guard::Confirm | Guard::ConfirmNew => kitchen::GuardMode::Confirm,
        }
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Guard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}) {}", self.letter(), self.as_str())
    }
}

/// A fault point: one row of the matrix.
/// In JSON and on the command line a row is its [`Row::slug`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Row {
    /// Control: the same content intended twice, two legitimate effects.
    NewActionControl,
    /// The write never reaches whatever makes the effect.
    BeforeDispatch,
    /// The provider got it and failed before making anything.
    ReceivedNotMutated,
    /// The provider made it and the answer was lost.
    MutatedAnswerLost,
    /// Our server produced the answer; the caller never got it.
    AnswerLostToCaller,
    /// The caller drops its call while the backend works.
    CancelledMidCall,
    /// The caller's own timeout fires before the backend is done.
    CallerTimeout,
    /// The caller dies mid-call and starts again.
    #[value(name = "caller-crash-restart")]
    CallerCrash,
    /// The retry goes to another instance of the service.
    #[value(name = "retry-on-other-instance")]
    OtherInstance,
    /// The retry comes after the provider forgot the key.
    #[value(name = "after-provider-dedup-window")]
    AfterProviderWindow,
    /// The retry comes after our replay window.
    #[value(name = "after-our-replay-window")]
    AfterReplayWindow,
    /// The first attempt was refused; the retry corrects one field.
    RepairAfterRefusal,
    /// The first attempt's answer was lost; the retry changes one field.
    RepairAfterLostAnswer,
}

impl Row {
    /// Every row, in report order.
    pub const ALL: [Row; 13] = [
        Row::NewActionControl,
        Row::BeforeDispatch,
        Row::ReceivedNotMutated,
        Row::MutatedAnswerLost,
        Row::AnswerLostToCaller,
        Row::CancelledMidCall,
        Row::CallerTimeout,
        Row::CallerCrash,
        Row::OtherInstance,
        Row::AfterProviderWindow,
        Row::AfterReplayWindow,
        Row::RepairAfterRefusal,
        Row::RepairAfterLostAnswer,
    ];

    /// Its slug, used in titles, project ids and the JSON.
    pub fn slug(self) -> &'static str {
        match self {
            Row::NewActionControl => "new-action-control",
            Row::BeforeDispatch => "before-dispatch",
            Row::ReceivedNotMutated => "received-not-mutated",
            Row::MutatedAnswerLost => "mutated-answer-lost",
            Row::AnswerLostToCaller => "answer-lost-to-caller",
            Row::CancelledMidCall => "cancelled-mid-call",
            Row::CallerTimeout => "caller-timeout",
            Row::CallerCrash => "caller-crash-restart",
            Row::OtherInstance => "retry-on-other-instance",
            Row::AfterProviderWindow => "after-provider-dedup-window",
            Row::AfterReplayWindow => "after-our-replay-window",
            Row::RepairAfterRefusal => "repair-after-refusal",
            Row::RepairAfterLostAnswer => "repair-after-lost-answer",
        }
    }

    /// Its position in [`Row::ALL`] (the `r00`… in titles).
    pub fn index(self) -> usize {
        Row::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    /// How many effects each intent declares: 2 for the control (two
    /// legitimate actions with the same content), 1 otherwise.
    pub fn multiplicity(self) -> u64 {
        match self {
            Row::NewActionControl => 2,
            _ => 1,
        }
    }

    /// Whether the fault leaves the caller's first call without a definite
    /// answer (so that the time until it knows is worth measuring): every
    /// row but the control, an unreachable backend (refused connections
    /// and `503 provider-unavailable` both say nothing was made) and a
    /// refusal.
    pub fn ambiguous(self) -> bool {
        !matches!(
            self,
            Row::NewActionControl | Row::BeforeDispatch | Row::RepairAfterRefusal
        )
    }
}

impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.slug())
    }
}

/// One column: a strategy on a backend, and for the guard columns the
/// likely-duplicate guard our server runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Column {
    /// Where the effects are made.
    pub backend: Backend,
    /// How the caller goes about them.
    pub strategy: Strategy,
    /// `None`: a column of the main grid (our server, where there is one,
    /// runs with the guard `off`). `Some`: a guard column, strategy (a)
    /// through this service with this guard.
    pub guard: Option<Guard>,
}

impl Column {
    /// The main grid's columns in report order; the simple adapter has no
    /// local column (there is no provider to call), and blind retry no
    /// Redmine column (what it does there, sending a possibly made create
    /// again, is what it does at the key-ignoring simulator, `ignore/a`).
    pub fn all() -> Vec<Column> {
        Backend::ALL
            .iter()
            .flat_map(|&backend| {
                Strategy::ALL.iter().map(move |&strategy| Column {
                    backend,
                    strategy,
                    guard: None,
                })
            })
            .filter(|c| !(c.backend == Backend::Local && c.strategy == Strategy::Native))
            .filter(|c| !(c.backend == Backend::Redmine && c.strategy == Strategy::Blind))
            .collect()
    }

    /// The guard columns: blind retry (a) through this service under each
    /// guard, on every backend of [`Backend::GUARDED`]. Local `off` is the
    /// grid's `local/a` (blind retry already calls this service there), so
    /// it is not repeated.
    pub fn guarded() -> Vec<Column> {
        Backend::GUARDED
            .iter()
            .flat_map(|&backend| {
                Guard::ALL.iter().map(move |&guard| Column {
                    backend,
                    strategy: Strategy::Blind,
                    guard: Some(guard),
                })
            })
            .filter(|c| !(c.backend == Backend::Local && c.guard == Some(Guard::Off)))
            .collect()
    }

    /// The grid's columns, then the guard columns, then Redmine's (which
    /// came last): a column's place here seeds its schedule, so every
    /// column keeps the place, and the cells the schedule, they had
    /// before the next was added.
    pub fn every() -> Vec<Column> {
        let (redmine, mut every): (Vec<Column>, Vec<Column>) =
            Self::all().into_iter().partition(|c| c.backend.redmine());
        every.extend(Self::guarded());
        every.extend(redmine);
        every
    }

    /// `honour/c`, as in the table's header; a guard column `honour/a+warn`.
    pub fn label(self) -> String {
        match self.guard {
            None => format!("{}/{}", self.backend, self.strategy.letter()),
            Some(guard) => format!("{}/{}+{guard}", self.backend, self.strategy.letter()),
        }
    }

    /// Whether its caller talks to this service (rather than to the
    /// provider directly): a guard column always does.
    pub fn through_service(self) -> bool {
        self.guard.is_some() || self.strategy.through_service(self.backend)
    }

    /// The `DUPLICATE_GUARD` of the server its callers reach.
    pub fn server_guard(self) -> kitchen::GuardMode {
        self.guard.map_or(kitchen::GuardMode::Off, Guard::mode)
    }
}

/// Why a cell does not exist, or how its fault is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Applies {
    /// Not applicable, and why.
    No(&'static str),
    /// Applicable, made this way.
    Yes(&'static str),
}

/// Whether `row` exists for `column`, and how its fault is made there.
/// On Redmine the provider's faults are the fault proxy's (the simulator's
/// faults, in front of a tracker we did not write: `redmine_proxy.rs`),
/// and a row that needs a provider's dedup window is what it is on
/// `ignore`: Redmine keeps no key, so there is no window to outlast.
pub(crate) fn applies(row: Row, column: Column) -> Applies {
    use Applies::{No, Yes};
    let backend = column.backend;
    let service = column.through_service();
    let redmine = backend.redmine();
    match row {
        Row::NewActionControl if column.guard == Some(Guard::ConfirmNew) => Yes(
            "no fault: two calls with identical content, each a new intended effect; the second says confirm_new: true",
        ),
        _ if column.guard == Some(Guard::ConfirmNew) => No(
            "the caller says confirm_new only on an intent it means as a second one (the control's); here its calls are confirm's",
        ),
        Row::NewActionControl => {
            Yes("no fault: two calls with identical content, each a new intended effect")
        }
        Row::BeforeDispatch if !backend.remote() => {
            Yes("the service is unreachable (the proxy stops listening for 1 s)")
        }
        Row::BeforeDispatch if service && redmine => Yes(
            "Redmine is unreachable from our server (the fault proxy in front of it stops listening for 1 s): nothing dispatched",
        ),
        Row::BeforeDispatch if service => Yes(
            "the provider is unreachable from our server (simulator outage, 1 s): nothing dispatched",
        ),
        Row::BeforeDispatch => Yes(
            "the provider is unreachable from the caller (the proxy in front of it stops listening for 1 s)",
        ),
        Row::ReceivedNotMutated | Row::MutatedAnswerLost | Row::AfterProviderWindow
            if !backend.remote() =>
        {
            No("no provider on the local backend (our commit and its answer: rows 4 and 8)")
        }
        Row::ReceivedNotMutated if redmine => Yes(
            "fault proxy fail_before_commit (503 with an HTML page, as a proxy's; nothing reaches Redmine)",
        ),
        Row::ReceivedNotMutated => Yes("simulator fail_before_commit (503, nothing made)"),
        Row::MutatedAnswerLost if redmine => Yes(
            "fault proxy commit_then_drop (Redmine made it, the proxy closes the connection unanswered)",
        ),
        Row::MutatedAnswerLost => Yes("simulator commit_then_drop (made, connection closed)"),
        Row::AnswerLostToCaller | Row::OtherInstance | Row::AfterReplayWindow if !service => {
            No("no service of ours between this caller and the provider")
        }
        Row::AnswerLostToCaller => Yes(
            "the proxy in front of our server forwards, gets the answer, and cuts the caller off",
        ),
        Row::CancelledMidCall if redmine => Yes(
            "fault proxy hang 1.2 s, then Redmine gets it regardless; the caller drops its call at ~0.4 s and calls again at ~0.6 s",
        ),
        Row::CancelledMidCall if backend.remote() => Yes(
            "simulator hang 1.2 s (commits regardless); the caller drops its call at ~0.4 s and calls again at ~0.6 s",
        ),
        Row::CancelledMidCall => Yes(
            "the proxy holds the request 1.2 s, then delivers it regardless; the caller drops its call at ~0.4 s and calls again at ~0.6 s",
        ),
        Row::CallerTimeout if redmine => Yes(
            "fault proxy hang 2 s, then Redmine gets it regardless > the caller's 1.5 s timeout; its own policy goes on",
        ),
        Row::CallerTimeout if backend.remote() => Yes(
            "simulator hang 2 s (commits regardless) > the caller's 1.5 s timeout; its own policy goes on",
        ),
        Row::CallerTimeout => Yes(
            "the proxy holds the request 2 s, then delivers it regardless > the caller's 1.5 s timeout",
        ),
        Row::CallerCrash if redmine => Yes(
            "fault proxy hang 1.2 s, then Redmine gets it regardless; at ~0.4 s the caller's state is discarded; a new caller takes the intent up at ~0.6 s",
        ),
        Row::CallerCrash if backend.remote() => Yes(
            "simulator hang 1.2 s; at ~0.4 s the caller's state is discarded; a new caller takes the intent up at ~0.6 s",
        ),
        Row::CallerCrash => Yes(
            "the proxy holds the request 1.2 s; at ~0.4 s the caller's state is discarded; a new caller takes the intent up at ~0.6 s",
        ),
        Row::OtherInstance => Yes(
            "two servers on one PostgreSQL database: the first attempt goes to A, whose answer the proxy cuts; every later request goes to B",
        ),
        Row::AfterProviderWindow if service && redmine => Yes(
            "fault proxy commit_then_drop on our dispatch; the caller hears nothing, pauses, and retries 3.5 s later (Redmine keeps no key: no window, as on ignore)",
        ),
        Row::AfterProviderWindow if service => Yes(
            "simulator commit_then_drop on our dispatch; the caller hears nothing, pauses, and retries 3.5 s later (dedup window 3 s)",
        ),
        Row::AfterProviderWindow if redmine => Yes(
            "Redmine makes it, the proxy withholds its answer; the caller pauses and retries 3.5 s later (Redmine keeps no key: no window, as on ignore)",
        ),
        Row::AfterProviderWindow => Yes(
            "the provider makes it, the proxy withholds its answer; the caller pauses and retries 3.5 s later (dedup window 3 s)",
        ),
        Row::AfterReplayWindow => Yes(
            "a server with --replay-window-secs 2: the proxy withholds the answer; the caller pauses and retries 3.5 s later",
        ),
        Row::RepairAfterRefusal if redmine => Yes(
            "fault proxy reject (422 with Redmine's error list, nothing reaches Redmine); the caller's retry changes the description",
        ),
        Row::RepairAfterRefusal if backend.remote() => {
            Yes("simulator reject (422, nothing made); the caller's retry changes the description")
        }
        Row::RepairAfterRefusal => Yes(
            "a description over 10,000 characters (400, nothing made); the caller's retry shortens it",
        ),
        Row::RepairAfterLostAnswer => Yes(
            "the effect is made, the proxy withholds the answer; the caller drops the call and sends it again with the description changed",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_has_fourteen_columns_no_local_adapter_and_no_blind_retry_on_redmine() {
        let columns = Column::all();
        assert_eq!(columns.len(), 14);
        assert!(!columns.contains(&Column {
            backend: Backend::Local,
            strategy: Strategy::Native,
            guard: None,
        }));
        let redmine: Vec<String> = columns
            .iter()
            .filter(|c| c.backend == Backend::Redmine)
            .map(|c| c.label())
            .collect();
        assert_eq!(redmine, ["redmine/b", "redmine/c", "redmine/d"]);
    }

    #[test]
    fn redmine_came_last_so_every_earlier_column_keeps_its_place() {
        let every = Column::every();
        let all = Column::all();
        assert_eq!(every.len(), 14 + 11);
        assert_eq!(every[..11], all[..11], "the first grid's columns");
        assert_eq!(
            every[11..22],
            Column::guarded()[..],
            "then the guard columns"
        );
        assert_eq!(every[22..], all[11..], "then Redmine's");
        assert!(
            Column::guarded()
                .iter()
                .all(|c| c.backend != Backend::Redmine),
            "no guard column on Redmine"
        );
    }

    #[test]
    fn redmine_has_the_rows_ignore_has() {
        // Redmine keeps no key: every row exists there as on the
        // key-ignoring simulator, made by the fault proxy instead.
        for strategy in [Strategy::Native, Strategy::Naive, Strategy::Client] {
            let on = |backend| Column {
                backend,
                strategy,
                guard: None,
            };
            for row in Row::ALL {
                let redmine = applies(row, on(Backend::Redmine));
                let ignore = applies(row, on(Backend::Ignore));
                assert_eq!(
                    matches!(redmine, Applies::Yes(_)),
                    matches!(ignore, Applies::Yes(_)),
                    "{} {strategy}",
                    row.slug()
                );
                if let Applies::Yes(words) = redmine
                    && words.contains("simulator")
                {
                    panic!("{} {strategy} on Redmine: {words}", row.slug());
                }
            }
        }
    }

    #[test]
    fn guard_columns_are_blind_retry_through_this_service_after_the_grid() {
        let guarded = Column::guarded();
        // local: warn, confirm, confirm-new (off is local/a); remote: all four.
        assert_eq!(guarded.len(), 11);
        assert!(guarded.iter().all(|c| c.strategy == Strategy::Blind));
        assert!(guarded.iter().all(|c| c.through_service()));
        let honour_a = Column {
            backend: Backend::Honour,
            strategy: Strategy::Blind,
            guard: None,
        };
        assert!(
            !honour_a.through_service(),
            "the grid's (a) calls the provider"
        );
        assert_eq!(
            Column::every()[..11],
            Column::all()[..11],
            "the grid's columns keep their places (and their schedules)"
        );
        assert_eq!(guarded[0].label(), "local/a+warn");
        let applicable: Vec<(Row, Column)> = Row::ALL
            .iter()
            .flat_map(|&r| guarded.iter().map(move |&c| (r, c)))
            .filter(|&(r, c)| matches!(applies(r, c), Applies::Yes(_)))
            .collect();
        // local: rows 0, 1, 4 to 8, 10 to 12 (10) × 2, remote: 13 × 3 each,
        // and the control of confirm-new on each backend.
        assert_eq!(applicable.len(), 10 * 2 + 13 * 3 * 2 + 3);
        assert!(
            applicable
                .iter()
                .filter(|(_, c)| c.guard == Some(Guard::ConfirmNew))
                .all(|(r, _)| *r == Row::NewActionControl)
        );
    }

    #[test]
    fn a_row_is_its_slug_on_the_command_line_and_in_json() {
        use clap::ValueEnum;
        for row in Row::ALL {
            let name = row.to_possible_value().map(|v| v.get_name().to_owned());
            assert_eq!(name.as_deref(), Some(row.slug()));
            let json = serde_json::to_value(row).expect("a row serializes");
            assert_eq!(json.as_str(), Some(row.slug()));
        }
    }

    #[test]
    fn cells_that_cannot_exist_say_so() {
        let adapter = Column {
            backend: Backend::Honour,
            strategy: Strategy::Native,
            guard: None,
        };
        let local = Column {
            backend: Backend::Local,
            strategy: Strategy::Naive,
            guard: None,
        };
        assert!(matches!(
            applies(Row::AfterReplayWindow, adapter),
            Applies::No(_)
        ));
        assert!(matches!(
            applies(Row::AfterProviderWindow, local),
            Applies::No(_)
        ));
        assert!(matches!(
            applies(Row::AfterReplayWindow, local),
            Applies::Yes(_)
        ));
        let applicable = Row::ALL
            .iter()
            .flat_map(|&r| Column::all().into_iter().map(move |c| applies(r, c)))
            .filter(|a| matches!(a, Applies::Yes(_)))
            .count();
        // 122 on the first three backends; Redmine's (b) 10 rows (not 4,
        // 8, 10), (c) and (d) 13 each.
        assert_eq!(applicable, 122 + 10 + 13 * 2);
    }
}
