//! The only way in and out of the engine: front ends send `Op`s and read `Event`s.
//! The TUI and the headless front end are two consumers of the same stream.

use serde::Serialize;

/// A branch review's plan, as the Review pane lists it.
pub use crate::branch_review::{Outcome, PlanMode, ReviewPlan};
/// Where the window's size comes from.
pub use crate::context::WindowSource;
/// The budget view the gauge draws.
pub use crate::context::{BudgetReport, HistoryStatus, Section};
/// How a reply ended, and what it cost.
pub use crate::llm::{Finish, ReplyLimit, Usage};
/// How token counts are made (the gauge says it).
pub use crate::tokens::Counting;
/// How front ends write token counts (`12,345`).
pub use crate::tokens::thousands;

/// The models tern knows (its model table): name and context window, for completion.
pub fn known_models() -> impl Iterator<Item = (&'static str, usize)> {
    crate::llm::models::all()
        .iter()
        .map(|m| (m.name.as_str(), m.context_window))
}

/// Whether a chat file may be edited by the model.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FileMode {
    Editable,
    ReadOnly,
}

/// Whether a turn may propose edits.
pub use crate::edit::prompts::Mode as ChatMode;
/// What the user decided about a hunk.
pub use crate::edit::{Caution, Decision, LineKind};

/// What a request to the model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A chat turn (or a reflection on failed edits).
    Turn,
    /// A history summary.
    Summary,
    /// A branch review.
    Review,
}

/// A request from a front end.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A chat message, or a slash command when it starts with `/`.
    Submit {
        text: String,
    },
    /// The input box's current text, so the gauge can show the `cur` section live.
    Draft {
        text: String,
    },
    /// Add files (paths relative to the working directory or the repository root).
    AddFiles {
        paths: Vec<String>,
        mode: FileMode,
    },
    SetFileMode {
        path: String,
        mode: FileMode,
    },
    DropFile {
        path: String,
    },
    /// Interrupt the running turn (its partial reply is kept).
    Cancel,
    /// Decide on the hunks of the pending proposal, or apply / discard it.
    Review(ReviewOp),
    /// Ask for the repository's files (for `@` completion and the file picker).
    ListRepoFiles,
    /// Ask why a file is in the repo map (answered with `Event::MapWhy`).
    MapWhy {
        path: String,
    },
    /// No message follows the ones sent (a one-shot `-m`, a script's end): no summary
    /// starts after them; the next start makes one if the history needs it.
    NoMoreMessages,
    Shutdown,
}

/// A review action on the pending proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewOp {
    Hunk {
        id: String,
        decision: Decision,
    },
    File {
        path: String,
        decision: Decision,
    },
    All {
        decision: Decision,
    },
    /// Write the accepted hunks (and commit them, unless auto-commits are off).
    Apply,
    /// Forget the proposal; nothing is written.
    Discard,
}

/// One line of a hunk, with its numbers in the old and new file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub kind: LineKind,
    pub old_line: Option<usize>,
    pub new_line: Option<usize>,
    pub text: String,
}

/// A hunk as the review pane shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HunkView {
    /// Stable id, also used by `tern apply --accept`.
    pub id: String,
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<DiffLine>,
    pub decision: Decision,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    Created,
    Modified,
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProposalView {
    pub path: String,
    pub change: FileChange,
    pub hunks: Vec<HunkView>,
    /// Why its hunks are not accepted in bulk (empty: they are).
    pub cautions: Vec<Caution>,
}

/// An edit block that could not be applied, as shown to the user (and sent back to the
/// model as a reflection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EditFailureView {
    pub path: Option<String>,
    /// Which block of the reply (1-based).
    pub block: usize,
    pub message: String,
}

/// The edits a reply proposes, with the user's decisions so far. An empty view (no
/// files, no failures) means nothing is left to review.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ProposalView {
    pub files: Vec<FileProposalView>,
    pub failures: Vec<EditFailureView>,
    /// Shell commands the model suggested; shown, never run.
    pub shell_commands: Vec<String>,
}

/// The repo map as the map pane shows it (empty when there is no map).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MapView {
    pub tokens: usize,
    pub budget: usize,
    /// Ranked files, best first, with their scores.
    pub ranked: Vec<(String, f64)>,
    pub text: String,
}

/// Why a file is in the map: an identifier it defines, referenced from another file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapEdge {
    pub ident: String,
    pub from: String,
    pub weight: f64,
}

/// A chat file as the front ends list it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileEntry {
    pub path: String,
    pub mode: FileMode,
    pub tokens: usize,
    /// False for a file that does not exist yet (the model may create it).
    pub exists: bool,
}

/// Something the engine reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The engine is up; sent once first.
    Ready {
        root: String,
        model: String,
        mode: ChatMode,
    },
    /// A user message was accepted and a request is on its way.
    TurnStarted {
        text: String,
        mode: ChatMode,
    },
    /// Reply text as it streams.
    Delta {
        text: String,
    },
    /// Reasoning text from models that stream it separately.
    Reasoning {
        text: String,
    },
    /// A request failed and will be retried.
    Retrying {
        attempt: usize,
        delay_ms: u64,
        reason: String,
    },
    /// The reply hit the output limit and is being continued.
    Continuing {
        continuation: usize,
    },
    /// A request is on its way to the model (one event per request: turns, their
    /// continuations and retries, summaries), with tern's prediction of its prompt.
    Request {
        purpose: Purpose,
        model: String,
        predicted_prompt_tokens: Option<usize>,
        max_tokens: Option<usize>,
        counting: Counting,
    },
    /// The reply is complete (or was cut off or cancelled: `finish` says which).
    TurnFinished {
        reply: String,
        finish: Finish,
        usage: Option<Usage>,
        /// The server reported no usage: `usage` is tern's count of the prompt it sent
        /// and of the reply it received.
        usage_estimated: bool,
        cost: f64,
        session_cost: f64,
    },
    /// The turn failed; the user's message is returned so nothing is lost.
    TurnFailed {
        error: String,
        message: String,
    },
    /// The next request's budget changed.
    Budget(Box<BudgetReport>),
    /// The chat files changed.
    Files {
        files: Vec<FileEntry>,
    },
    /// The mode changed.
    Mode {
        mode: ChatMode,
    },
    /// The model changed.
    Model {
        model: String,
    },
    /// Text a command produced for the user to read (`/tokens`, `/help`, ...).
    Output {
        title: String,
        text: String,
    },
    Notice {
        text: String,
    },
    Warning {
        text: String,
    },
    Error {
        text: String,
    },
    /// A reply proposed edits (sent again whenever a decision changes them; empty once
    /// nothing is left to review).
    Proposal(Box<ProposalView>),
    /// Failed edit blocks are being sent back to the model (`attempt` of `max`).
    Reflection {
        attempt: usize,
        max: usize,
        message: String,
    },
    /// Accepted hunks were written (and committed when `commit` is set).
    Applied {
        files: Vec<String>,
        accepted: usize,
        rejected: usize,
        commit: Option<String>,
        message: String,
    },
    /// A review's plan: what is compared, and which files were included, compressed or
    /// left out (sent before the review streams).
    ReviewPlan(Box<crate::branch_review::ReviewPlan>),
    /// Tags are being extracted for the repo map.
    MapProgress {
        done: usize,
        total: usize,
    },
    Map(Box<MapView>),
    MapWhy {
        path: String,
        edges: Vec<MapEdge>,
    },
    /// The repository's files, for completion.
    RepoFiles {
        files: Vec<String>,
    },
    /// The history sub-budget or the summarizer's phase changed.
    History(HistoryStatus),
    /// A summary replaced part of the history.
    Summarized {
        replaced_messages: usize,
        replaced_tokens: usize,
        summary_tokens: usize,
    },
    /// Nothing is under way: no reply streaming, no reflection or landing pending. The
    /// engine waits for the front end.
    Idle,
    /// The engine stopped on an internal error (a bug); `Exited` follows.
    Crashed {
        text: String,
    },
    /// The engine stopped; no events follow.
    Exited,
}
