//! One line per engine event (`tern --json -m`, `--script`), and the `stopped` line
//! that ends a run.

use serde::Serialize;

use super::budget::{Budget, Counting, Drift, History};
use super::map::{Edge, Map};
use super::proposal::{Caution, Proposal};
use super::reply::{Finish, Usage};
use super::review::{Plan, Reply};
use crate::engine::protocol as p;

/// An event as `--json` writes it: `{"version": 1, "event": "<kind>", ...fields}`.
/// Its conversion from the engine's event matches every variant without a wildcard, so
/// a new engine event does not compile until it has a JSON form here.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    Ready {
        root: &'a str,
        model: &'a str,
        mode: &'static str,
        session: Option<&'a str>,
    },
    TurnStarted {
        text: &'a str,
        notes: &'a [String],
        mode: &'static str,
    },
    Delta {
        text: &'a str,
    },
    Reasoning {
        text: &'a str,
    },
    Retrying {
        attempt: usize,
        delay_ms: u64,
        reason: &'a str,
    },
    Continuing {
        continuation: usize,
    },
    Request {
        purpose: &'static str,
        model: &'a str,
        predicted_prompt_tokens: Option<usize>,
        max_tokens: Option<usize>,
        counting: Counting,
    },
    /// The server's count of a request's prompt against tern's prediction.
    Drift {
        purpose: &'static str,
        #[serde(flatten)]
        drift: Drift,
        counting: Counting,
    },
    TurnFinished {
        reply: &'a str,
        finish: Finish<'a>,
        usage: Option<Usage>,
        usage_estimated: bool,
        cost: f64,
        session_cost: f64,
    },
    Needed {
        files: Vec<NeededFile<'a>>,
        more_files: usize,
        commands: &'a [String],
        more_commands: usize,
    },
    TurnFailed {
        error: &'a str,
        message: &'a str,
    },
    Budget(Box<Budget<'a>>),
    Sessions {
        sessions: Vec<super::Session<'a>>,
        current: Option<&'a str>,
    },
    Resumed {
        transcript: Vec<Shown<'a>>,
        /// A message that waited for the repo map when tern stopped: never sent.
        #[serde(skip_serializing_if = "Option::is_none")]
        unsent: Option<&'a str>,
    },
    Files {
        files: Vec<FileEntry<'a>>,
    },
    Mode {
        mode: &'static str,
    },
    Model {
        model: &'a str,
    },
    Output {
        title: &'a str,
        text: &'a str,
    },
    Notice {
        text: &'a str,
    },
    Warning {
        text: &'a str,
    },
    Error {
        text: &'a str,
    },
    Proposal(Proposal<'a>),
    Reflection {
        attempt: usize,
        max: usize,
        message: &'a str,
    },
    Applied {
        files: &'a [String],
        accepted: usize,
        rejected: usize,
        commit: Option<&'a str>,
        message: &'a str,
        failed: &'a [String],
        held: usize,
        lost: usize,
    },
    HunkText {
        id: &'a str,
        path: &'a str,
        text: &'a str,
    },
    EditRefused {
        id: &'a str,
        new_lines: &'a str,
        reason: &'a str,
    },
    HeldBack {
        path: &'a str,
        hunk: Option<&'a str>,
        cautions: Vec<Caution<'a>>,
    },
    NotApplied {
        reason: &'static str,
    },
    ReviewPlan(Plan<'a>),
    BranchReviewed {
        plan: Plan<'a>,
        replies: Vec<Reply<'a>>,
        usage: Usage,
        cost: f64,
    },
    MapProgress {
        done: usize,
        total: usize,
    },
    Map(Map<'a>),
    MapBudget {
        budget_before: usize,
        budget: usize,
        tokens_before: usize,
        /// null while the map is being built.
        tokens: Option<usize>,
    },
    MapWhy {
        path: &'a str,
        edges: Vec<Edge<'a>>,
    },
    RepoFiles {
        files: &'a [String],
    },
    History(History),
    Undone {
        commits: &'a [String],
    },
    Timeline {
        turns: Vec<TimelineTurn<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        redo: Option<&'a str>,
    },
    Rewound {
        to: usize,
        redo: bool,
        commits: &'a [String],
        #[serde(skip_serializing_if = "Option::is_none")]
        transcript: Option<Vec<Shown<'a>>>,
        text: &'a str,
    },
    Summarized {
        replaced_messages: usize,
        replaced_tokens: usize,
        summary_tokens: usize,
    },
    Idle,
    ConfirmCommand {
        command: &'a str,
        purpose: &'static str,
        reason: Option<&'a str>,
    },
    CommandStarted {
        command: &'a str,
        purpose: &'static str,
        /// `[round, most]` of the auto-test loop.
        auto_round: Option<(usize, usize)>,
    },
    CommandProgress {
        text: &'a str,
        lines: usize,
        last_line: &'a str,
        elapsed_ms: u64,
    },
    CommandFinished {
        command: &'a str,
        purpose: &'static str,
        passed: bool,
        outcome: &'a str,
        lines: usize,
        elapsed_ms: u64,
        tokens: usize,
        in_context: bool,
    },
    OutputAdded {
        command: &'a str,
        tokens: usize,
    },
    OutputDropped {
        command: &'a str,
    },
    Crashed {
        text: &'a str,
    },
    Exited,
    /// Not an engine event: the headless front end's last line, why the run ended.
    Stopped(Stopped<'a>),
}

/// Why a headless run (`-m`, `--script`) ended; `ok` when every message was sent and
/// nothing failed. `messages_sent` counts the entries (messages and commands) whose turn
/// came, of `messages`.
#[derive(Serialize)]
pub struct Stopped<'a> {
    pub ok: bool,
    pub messages_sent: usize,
    pub messages: usize,
    pub reason: &'a str,
}

#[derive(Serialize)]
pub struct NeededFile<'a> {
    path: &'a str,
    tokens: usize,
}

#[derive(Serialize)]
pub struct Shown<'a> {
    kind: &'static str,
    text: &'a str,
}

impl<'a> From<&'a p::Shown> for Shown<'a> {
    fn from(s: &'a p::Shown) -> Self {
        Shown {
            kind: match s.kind {
                p::ShownKind::User => "user",
                p::ShownKind::Note => "note",
                p::ShownKind::Assistant => "assistant",
                p::ShownKind::Summary => "summary",
            },
            text: &s.text,
        }
    }
}

/// A turn of `tern rewind --list` and of the `/rewind` timeline.
#[derive(Serialize)]
pub struct TimelineTurn<'a> {
    turn: usize,
    text: &'a str,
    at: u64,
    commits: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
    turns_after: usize,
    commits_since: &'a [String],
    files_since: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_since: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code_refused: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<&'a str>,
}

impl<'a> From<&'a p::TimelineTurn> for TimelineTurn<'a> {
    fn from(t: &'a p::TimelineTurn) -> Self {
        TimelineTurn {
            turn: t.turn,
            text: &t.text,
            at: t.at,
            commits: &t.commits,
            cost: t.cost,
            turns_after: t.turns_after,
            commits_since: &t.commits_since,
            files_since: &t.files_since,
            cost_since: t.cost_since,
            code_refused: t.code_refused.as_deref(),
            refused: t.refused.as_deref(),
        }
    }
}

#[derive(Serialize)]
pub struct FileEntry<'a> {
    path: &'a str,
    mode: &'static str,
    tokens: usize,
    exists: bool,
}

fn chat_mode(mode: p::ChatMode) -> &'static str {
    match mode {
        p::ChatMode::Code => "code",
        p::ChatMode::Ask => "ask",
    }
}

fn purpose(purpose: p::CommandPurpose) -> &'static str {
    match purpose {
        p::CommandPurpose::Run => "run",
        p::CommandPurpose::Test => "test",
        p::CommandPurpose::Lint => "lint",
    }
}

impl<'a> From<&'a p::Event> for Event<'a> {
    fn from(event: &'a p::Event) -> Self {
        use p::Event as E;
        match event {
            E::Ready {
                root,
                model,
                mode,
                session,
            } => Event::Ready {
                root,
                model,
                mode: chat_mode(*mode),
                session: session.as_deref(),
            },
            E::TurnStarted { text, notes, mode } => Event::TurnStarted {
                text,
                notes,
                mode: chat_mode(*mode),
            },
            E::Delta { text } => Event::Delta { text },
            E::Reasoning { text } => Event::Reasoning { text },
            E::Retrying {
                attempt,
                delay_ms,
                reason,
            } => Event::Retrying {
                attempt: *attempt,
                delay_ms: *delay_ms,
                reason,
            },
            E::Continuing { continuation } => Event::Continuing {
                continuation: *continuation,
            },
            E::Request {
                purpose,
                model,
                predicted_prompt_tokens,
                max_tokens,
                counting,
            } => Event::Request {
                purpose: purpose_name(*purpose),
                model,
                predicted_prompt_tokens: *predicted_prompt_tokens,
                max_tokens: *max_tokens,
                counting: Counting::from(*counting),
            },
            E::Drift { purpose, drift } => Event::Drift {
                purpose: purpose_name(*purpose),
                drift: Drift::from(*drift),
                counting: Counting::from(drift.counting),
            },
            E::TurnFinished {
                reply,
                finish,
                usage,
                usage_estimated,
                cost,
                session_cost,
            } => Event::TurnFinished {
                reply,
                finish: Finish::from(finish),
                usage: usage.as_ref().map(Usage::from),
                usage_estimated: *usage_estimated,
                cost: *cost,
                session_cost: *session_cost,
            },
            E::Needed {
                files,
                more_files,
                commands,
                more_commands,
            } => Event::Needed {
                files: files
                    .iter()
                    .map(|f| NeededFile {
                        path: &f.path,
                        tokens: f.tokens,
                    })
                    .collect(),
                more_files: *more_files,
                commands,
                more_commands: *more_commands,
            },
            E::TurnFailed { error, message } => Event::TurnFailed { error, message },
            E::Budget(report) => Event::Budget(Box::new(Budget::from(&**report))),
            E::Resumed { transcript, unsent } => Event::Resumed {
                unsent: unsent.as_deref(),
                transcript: transcript.iter().map(Shown::from).collect(),
            },
            E::Sessions { sessions, current } => Event::Sessions {
                sessions: sessions.iter().map(super::Session::from).collect(),
                current: current.as_deref(),
            },
            E::Files { files } => Event::Files {
                files: files
                    .iter()
                    .map(|f| FileEntry {
                        path: &f.path,
                        mode: match f.mode {
                            p::FileMode::Editable => "editable",
                            p::FileMode::ReadOnly => "read_only",
                        },
                        tokens: f.tokens,
                        exists: f.exists,
                    })
                    .collect(),
            },
            E::Mode { mode } => Event::Mode {
                mode: chat_mode(*mode),
            },
            E::Model { model } => Event::Model { model },
            E::Output { title, text } => Event::Output { title, text },
            E::Notice { text } => Event::Notice { text },
            E::Warning { text } => Event::Warning { text },
            E::Error { text } => Event::Error { text },
            E::Proposal(view) => Event::Proposal(Proposal::from(&**view)),
            E::Reflection {
                attempt,
                max,
                message,
            } => Event::Reflection {
                attempt: *attempt,
                max: *max,
                message,
            },
            E::Applied {
                files,
                accepted,
                rejected,
                commit,
                message,
                failed,
                held,
                lost,
            } => Event::Applied {
                files,
                accepted: *accepted,
                rejected: *rejected,
                commit: commit.as_deref(),
                message,
                failed,
                held: *held,
                lost: *lost,
            },
            E::HunkText { id, path, text } => Event::HunkText { id, path, text },
            E::EditRefused {
                id,
                new_lines,
                reason,
            } => Event::EditRefused {
                id,
                new_lines,
                reason,
            },
            E::HeldBack {
                path,
                hunk,
                cautions,
            } => Event::HeldBack {
                path,
                hunk: hunk.as_deref(),
                cautions: cautions.iter().map(Caution::from).collect(),
            },
            E::NotApplied { reason } => Event::NotApplied {
                reason: match reason {
                    p::NotAppliedReason::Refused => "refused",
                    p::NotAppliedReason::Cancelled => "cancelled",
                    p::NotAppliedReason::DirtyCommitFailed => "dirty_commit_failed",
                    p::NotAppliedReason::CommitFailed => "commit_failed",
                    p::NotAppliedReason::Stale => "stale",
                    p::NotAppliedReason::NeedsConfirmation => "needs_confirmation",
                    p::NotAppliedReason::WriteFailed => "write_failed",
                },
            },
            E::ReviewPlan(plan) => Event::ReviewPlan(Plan::from(&**plan)),
            E::BranchReviewed {
                plan,
                replies,
                usage,
                cost,
            } => Event::BranchReviewed {
                plan: Plan::from(&**plan),
                replies: replies.iter().map(Reply::from).collect(),
                usage: Usage::from(usage),
                cost: *cost,
            },
            E::MapProgress { done, total } => Event::MapProgress {
                done: *done,
                total: *total,
            },
            E::Map(view) => Event::Map(Map::from(&**view)),
            E::MapBudget(m) => Event::MapBudget {
                budget_before: m.budget_before,
                budget: m.budget,
                tokens_before: m.tokens_before,
                tokens: m.tokens,
            },
            E::MapWhy { path, edges } => Event::MapWhy {
                path,
                edges: edges.iter().map(Edge::from).collect(),
            },
            E::RepoFiles { files } => Event::RepoFiles { files },
            E::History(status) => Event::History(History::from(status)),
            E::Undone { commits } => Event::Undone { commits },
            E::Timeline { turns, redo } => Event::Timeline {
                turns: turns.iter().map(TimelineTurn::from).collect(),
                redo: redo.as_deref(),
            },
            E::Rewound {
                to,
                redo,
                commits,
                transcript,
                text,
            } => Event::Rewound {
                to: *to,
                redo: *redo,
                commits,
                transcript: transcript
                    .as_ref()
                    .map(|t| t.iter().map(Shown::from).collect()),
                text,
            },
            E::Summarized {
                replaced_messages,
                replaced_tokens,
                summary_tokens,
            } => Event::Summarized {
                replaced_messages: *replaced_messages,
                replaced_tokens: *replaced_tokens,
                summary_tokens: *summary_tokens,
            },
            E::Idle => Event::Idle,
            E::ConfirmCommand {
                command,
                purpose: why,
                reason,
            } => Event::ConfirmCommand {
                command,
                purpose: purpose(*why),
                reason: reason.as_deref(),
            },
            E::CommandStarted {
                command,
                purpose: why,
                auto_round,
            } => Event::CommandStarted {
                command,
                purpose: purpose(*why),
                auto_round: *auto_round,
            },
            E::CommandProgress {
                text,
                lines,
                last_line,
                elapsed_ms,
            } => Event::CommandProgress {
                text,
                lines: *lines,
                last_line,
                elapsed_ms: *elapsed_ms,
            },
            E::CommandFinished {
                command,
                purpose: why,
                passed,
                outcome,
                lines,
                elapsed_ms,
                tokens,
                in_context,
            } => Event::CommandFinished {
                command,
                purpose: purpose(*why),
                passed: *passed,
                outcome,
                lines: *lines,
                elapsed_ms: *elapsed_ms,
                tokens: *tokens,
                in_context: *in_context,
            },
            E::OutputAdded { command, tokens } => Event::OutputAdded {
                command,
                tokens: *tokens,
            },
            E::OutputDropped { command } => Event::OutputDropped { command },
            E::Crashed { text } => Event::Crashed { text },
            E::Exited => Event::Exited,
        }
    }
}

/// A request kind as `request` and `drift` events name it.
fn purpose_name(purpose: p::RequestKind) -> &'static str {
    match purpose {
        p::RequestKind::Turn => "turn",
        p::RequestKind::Summary => "summary",
        p::RequestKind::Review => "review",
        p::RequestKind::CommitMessage => "commit_message",
    }
}
