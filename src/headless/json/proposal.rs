//! The edits a reply proposes, hunk by hunk, with the decisions so far: the
//! `proposal` event.

use serde::Serialize;

use crate::edit::EditFormat;
use crate::engine::protocol as p;

#[derive(Serialize)]
pub struct Proposal<'a> {
    files: Vec<File<'a>>,
    failures: Vec<Failure<'a>>,
    shell_commands: &'a [String],
    written_as: Vec<&'static str>,
}

impl<'a> From<&'a p::ProposalView> for Proposal<'a> {
    fn from(v: &'a p::ProposalView) -> Self {
        Proposal {
            files: v.files.iter().map(File::from).collect(),
            failures: v.failures.iter().map(Failure::from).collect(),
            shell_commands: &v.shell_commands,
            written_as: v
                .written_as
                .iter()
                .map(|f| match f {
                    EditFormat::Editblock => "editblock",
                    EditFormat::Udiff => "udiff",
                    EditFormat::Whole => "whole",
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct File<'a> {
    path: &'a str,
    change: &'static str,
    hunks: Vec<Hunk<'a>>,
    cautions: Vec<Caution<'a>>,
    ignored: Option<&'static str>,
}

impl<'a> From<&'a p::FileProposalView> for File<'a> {
    fn from(f: &'a p::FileProposalView) -> Self {
        File {
            path: &f.path,
            // A proposal's new file has always been `created` here.
            change: match f.change {
                p::FileStatus::Added => "created",
                p::FileStatus::Modified => "modified",
                p::FileStatus::Deleted => "deleted",
                p::FileStatus::Renamed => "renamed",
            },
            hunks: f.hunks.iter().map(Hunk::from).collect(),
            cautions: f.cautions.iter().map(Caution::from).collect(),
            ignored: f.ignored.map(|i| match i {
                p::Ignored::New => "new",
                p::Ignored::Existing => "existing",
            }),
        }
    }
}

#[derive(Serialize)]
struct Hunk<'a> {
    id: &'a str,
    old_start: usize,
    old_len: usize,
    new_start: usize,
    new_len: usize,
    lines: Vec<Line<'a>>,
    decision: &'static str,
    edited: bool,
    cautions: Vec<Caution<'a>>,
}

impl<'a> From<&'a p::HunkView> for Hunk<'a> {
    fn from(h: &'a p::HunkView) -> Self {
        Hunk {
            id: &h.id,
            old_start: h.old_start,
            old_len: h.old_len,
            new_start: h.new_start,
            new_len: h.new_len,
            lines: h.lines.iter().map(Line::from).collect(),
            decision: match h.decision {
                p::Decision::Pending => "pending",
                p::Decision::Accept => "accept",
                p::Decision::Reject => "reject",
            },
            edited: h.edited,
            cautions: h.cautions.iter().map(Caution::from).collect(),
        }
    }
}

#[derive(Serialize)]
struct Line<'a> {
    kind: &'static str,
    old_line: Option<usize>,
    new_line: Option<usize>,
    text: &'a str,
    no_newline: bool,
}

impl<'a> From<&'a p::DiffLine> for Line<'a> {
    fn from(l: &'a p::DiffLine) -> Self {
        Line {
            kind: match l.kind {
                p::LineKind::Context => "context",
                p::LineKind::Removed => "removed",
                p::LineKind::Added => "added",
            },
            old_line: l.old_line,
            new_line: l.new_line,
            text: &l.text,
            no_newline: l.no_newline,
        }
    }
}

/// Why hunks are not accepted in bulk: `{"kind": ...}` with the kind's details.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Caution<'a> {
    OutsideChat,
    DeletesMost { removed: usize, total: usize },
    Invisible { characters: &'a [String] },
}

impl<'a> From<&'a p::Caution> for Caution<'a> {
    fn from(c: &'a p::Caution) -> Self {
        match c {
            p::Caution::OutsideChat => Caution::OutsideChat,
            p::Caution::DeletesMost { removed, total } => Caution::DeletesMost {
                removed: *removed,
                total: *total,
            },
            p::Caution::Invisible { characters } => Caution::Invisible { characters },
        }
    }
}

/// An edit block that could not be applied (or a hunk that went stale: `block` 0,
/// with its lines in `hunk`).
#[derive(Serialize)]
struct Failure<'a> {
    path: Option<&'a str>,
    block: usize,
    message: &'a str,
    near: Option<Near<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hunk: Option<&'a str>,
}

#[derive(Serialize)]
struct Near<'a> {
    line: usize,
    text: &'a str,
}

impl<'a> From<&'a p::EditFailureView> for Failure<'a> {
    fn from(f: &'a p::EditFailureView) -> Self {
        Failure {
            path: f.path.as_deref(),
            block: f.block,
            message: &f.message,
            near: f.near.as_ref().map(|n| Near {
                line: n.line,
                text: &n.text,
            }),
            hunk: f.hunk.as_deref(),
        }
    }
}
