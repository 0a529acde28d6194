//! What a git command run from the chat (`/commit`, `/undo`, `/undo turn`) hands back
//! to the loop: its result, or why it did nothing. Shared by the handlers (`slash`) and
//! the undo work (`undo_commits`).

/// A git command's result: what to tell the user, and what to tell the model with the
/// next message.
pub(crate) struct GitDone {
    pub message: String,
    pub note: Option<String>,
    /// Commits undone: no turn holds them any more.
    pub undone: Vec<git2::Oid>,
    /// Part of the job could not be done (an undo that stopped midway).
    pub warning: Option<String>,
    /// An undo's move of HEAD, its journal kept until the session is saved.
    pub held: Option<crate::git::Held>,
}

/// Why a git command did nothing, or stopped before it did anything: each variant says
/// it in the words the user has always seen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitJobError {
    #[error("/{what}: not a git repository: {source}")]
    NotARepository {
        what: &'static str,
        source: git2::Error,
    },
    #[error(transparent)]
    Undo(#[from] crate::git::UndoError),
    /// `/undo turn` stopped before its first commit.
    #[error("/undo turn: nothing was undone: {0}")]
    NothingUndone(Box<crate::git::TurnUndone>),
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
}

impl GitDone {
    pub(super) fn said(message: String) -> GitDone {
        GitDone {
            message,
            note: None,
            undone: Vec::new(),
            warning: None,
            held: None,
        }
    }
}
