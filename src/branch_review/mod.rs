//! Review mode: the branch diff (or the uncommitted changes), extended with context or
//! compressed to a token budget with PR-Agent's algorithm, as requests for the model.
//!
//! The engine calls, in order:
//! 1. [`collect`] (git; blocking, run it off the UI thread) -> [`ChangeSet`];
//! 2. [`plan`] with the model's `TokenCounter` and [`ReviewOptions`] -> [`ReviewPlan`],
//!    whose `calls` hold the exact messages to send and their token counts, and whose
//!    `files` say what happened to every changed file;
//! 3. after sending each call, [`merge_replies`] when there was more than one.

mod change;
mod extend;
mod lang;
mod mode;
mod plan;
mod prompt;
mod render;
mod send;
mod source;

use std::path::PathBuf;

pub use change::{Body, ChangeSet, FileChange, FileStatus, GitHunk, HunkLine, TextDiff};
pub use extend::{ContextOptions, MAX_CONTEXT, extend};
pub use lang::{Language, Noise};
pub use mode::PlanMode;
pub use plan::{
    FilePlan, OUTPUT_BUFFER_HARD, OUTPUT_BUFFER_SOFT, OmitReason, Outcome, ReviewCall,
    ReviewOptions, ReviewPlan, plan,
};
pub(crate) use prompt::merge_replies;
pub use prompt::{ADDED_TITLE, DELETED_TITLE, MODIFIED_TITLE};
pub use render::section;
pub(crate) use send::total_usage;
pub use send::{CONTEXT_RETRIES, CallReply, Reviewer, SendError, SendEvent, send};
pub use source::{DiffSource, GIT_CONTEXT, collect};

impl ReviewError {
    /// What to do about it, when the message alone does not say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            ReviewError::NoBase | ReviewError::NoMergeBase { .. } | ReviewError::NoCommits => Some(
                "pass --base REF to choose the base, or --worktree to review uncommitted changes (in the workspace: /review REF, /review --worktree)",
            ),
            ReviewError::BadBase { .. } => Some(
                "a base is a branch, tag or commit, as `git rev-parse` takes it (--base REF; in the workspace, /review REF)",
            ),
            ReviewError::BudgetTooSmall { .. } => Some("raise --budget (or --context-window)"),
            ReviewError::NoCalls => Some("--max-calls must be at least 1"),
            _ => None,
        }
    }

    /// The message with its hint on a line of its own.
    pub(crate) fn with_hint(&self) -> String {
        match self.hint() {
            Some(hint) => format!("{self}\nhint: {hint}"),
            None => self.to_string(),
        }
    }
}

/// What a list clipped to its budget ends with.
pub const TRUNCATED: &str = crate::prompts::REVIEW_TRUNCATED;

/// How many requests a review may take unless told otherwise (`--max-calls`).
pub const DEFAULT_MAX_CALLS: usize = 4;

impl ReviewOptions {
    /// A review within `budget` tokens: 5 extra lines before and 1 after each hunk with
    /// dynamic context, plain hunks, up to [`DEFAULT_MAX_CALLS`] calls (what `/review`
    /// uses, with the model's input window; see `config`).
    pub(crate) fn with_budget(budget: usize) -> Self {
        ReviewOptions {
            budget,
            context: ContextOptions::default(),
            line_numbers: false,
            max_calls: DEFAULT_MAX_CALLS,
        }
    }
}

/// Why a review could not be prepared. Every message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the repository has no commits yet, so there is no branch to review")]
    NoCommits,
    #[error("a bare repository has no work tree to review")]
    Bare,
    #[error("cannot use `{name}` as the base: {message}")]
    BadBase { name: String, message: String },
    #[error(
        "no base to compare with: the current branch has no upstream and there is no \
         `main` or `master` branch; name a base ref, or review uncommitted changes instead"
    )]
    NoBase,
    #[error("HEAD and `{base}` have no common ancestor, so there is no merge base to diff against")]
    NoMergeBase { base: String },
    #[error("nothing to review: {0}")]
    Empty(String),
    #[error("git failed while {context}: {source}")]
    Git {
        context: &'static str,
        source: git2::Error,
    },
    #[error("cannot read the stored content of {path}: {source}")]
    Blob { path: String, source: git2::Error },
    #[error("cannot diff {path}: {source}")]
    Diff { path: String, source: git2::Error },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "a budget of {budget} tokens is too small: the review prompt alone takes {prompt} \
         and {reserve} more are kept for the reply"
    )]
    BudgetTooSmall {
        budget: usize,
        prompt: usize,
        reserve: usize,
    },
    #[error("a review needs at least one model call")]
    NoCalls,
}
