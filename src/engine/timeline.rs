//! A turn of the `/rewind` timeline (`engine::rewind::timeline` makes them) and how
//! front ends write it: the turn, and what a rewind to before it changes with each
//! choice. Below the protocol, which re-exports it, so that the rewind and the
//! protocol do not use each other.

use derive_visitor::DriveMut;
use serde::Serialize;

use crate::plural::count;

/// A turn of the session as `/rewind` lists it, and what a rewind to before it would
/// change, choice by choice (`engine::rewind::timeline`).
#[derive(Debug, Clone, PartialEq, Serialize, DriveMut)]
pub struct TimelineTurn {
    pub turn: usize,
    /// The first line of the message that began it.
    pub text: String,
    /// When it began, Unix seconds.
    #[drive(skip)]
    pub at: u64,
    /// The commits it made that are still in place (`short id summary`).
    pub commits: Vec<String>,
    /// What it cost (None: recorded by a tern that kept no cost).
    #[drive(skip)]
    pub cost: Option<f64>,
    /// The conversation: turns taken back (this one and those after it).
    pub turns_after: usize,
    /// The code: commits taken back (`short id summary`, oldest first), and the files
    /// they changed.
    pub commits_since: Vec<String>,
    pub files_since: Vec<String>,
    /// What was spent since it began (spent: a rewind gives none of it back).
    #[drive(skip)]
    pub cost_since: Option<f64>,
    /// Why its code cannot be rewound now (the user's changes, a commit of theirs on
    /// top…); None: it can.
    pub code_refused: Option<String>,
    /// Why no rewind to before it can happen now, code or conversation (hunks await
    /// review); None: it can.
    pub refused: Option<String>,
}

/// The timeline as text, one turn and what a rewind to before it changes in a few
/// lines each (`tern rewind --list`, `/rewind`); `redo`: what a redo would put back.
pub fn timeline_text(turns: &[TimelineTurn], redo: Option<&str>) -> String {
    let mut out = String::new();
    for t in turns {
        out.push_str(&format!("{}\n", turn_line(t)));
        out.push_str(&format!(
            "  before it: {}\n",
            preview(t, true, true).join("; ")
        ));
    }
    if turns.is_empty() {
        out.push_str("no turn to go back to (the record has none)\n");
    }
    if let Some(redo) = redo {
        out.push_str(&format!("redo: {redo}\n"));
    }
    out
}

/// `turn 3  make greet typed  · 2 commits · $0.0123`.
pub fn turn_line(t: &TimelineTurn) -> String {
    let cost = t.cost.map(|c| format!(" · ${c:.4}")).unwrap_or_default();
    format!(
        "turn {}  {}  · {}{cost}",
        t.turn,
        t.text,
        count(t.commits.len(), "commit")
    )
}

/// What a rewind to before `t` changes, with the code, the conversation or both.
pub fn preview(t: &TimelineTurn, code: bool, chat: bool) -> Vec<String> {
    if let Some(why) = &t.refused {
        return vec![format!("cannot rewind now: {why}")];
    }
    let mut lines = Vec::new();
    if code {
        lines.push(match &t.code_refused {
            Some(why) => format!("code cannot go back: {why}"),
            None if t.commits_since.is_empty() => "code: nothing to take back".into(),
            None => format!(
                "code: {} taken back ({})",
                count(t.commits_since.len(), "commit"),
                t.files_since.join(", ")
            ),
        });
    }
    if chat {
        lines.push(format!("chat: {} taken back", count(t.turns_after, "turn")));
    }
    if let Some(c) = t.cost_since {
        lines.push(format!("spent since: ${c:.4}, not given back"));
    }
    lines
}
