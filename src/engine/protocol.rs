//! The only way in and out of the engine: front ends send `Op`s and read `Event`s.
//! The TUI and the headless front end are two consumers of the same stream.

use serde::Serialize;

use crate::context::BudgetReport;
use crate::llm::{Finish, Usage};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ChatMode {
    #[default]
    Code,
    Ask,
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
    Shutdown,
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
    /// The reply is complete (or was cut off or cancelled: `finish` says which).
    TurnFinished {
        reply: String,
        finish: Finish,
        usage: Option<Usage>,
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
    /// The engine stopped; no events follow.
    Exited,
}
