//! Git through git2: committing the user's own changes before tern edits a file,
//! committing exactly the accepted content of the edited files, commit messages, hooks,
//! and undoing tern's last commit.
//!
//! Everything is synchronous and takes a `&git2::Repository`; the engine runs it on a
//! blocking thread.

mod child;
mod commit;
mod date;
mod failpoint;
mod head;
mod head_move;
mod holds;
mod hooks;
mod identity;
mod index_lock;
mod journal;
mod land;
mod lock;
pub mod message;
mod notes;
mod redo;
mod sign;
mod snapshot;
mod status;
mod undo;
mod undo_turn;

pub use commit::{Commit, commit_dirty, commit_edits, commit_user_changes, dirty_paths};
pub use failpoint::{BadFailAt, FailAt, Step};
pub use head_move::Held;
pub use journal::changed;
pub use land::{LandOptions, Landed, land};
pub(crate) use lock::lock_wait;
pub use lock::{LOCK_WAIT, RepoLock, recover, recover_unless_busy, settled};
pub use notes::NOTES_REF;
pub use redo::{RedoError, RedoRefusal, redo_rewind};
pub use snapshot::{not_changed_since, snapshot, swap_files};
pub(crate) use status::{modified_tracked_paths, worktree_diff};
pub use undo::{TurnRefusal, UndoError, UndoRefusal, Undone, undo, undo_failing, undo_held};
pub(crate) use undo_turn::check_newest;
pub use undo_turn::{Stopped, TurnUndone, check_all, files_of, undo_since, undo_turn};

/// The repository holding `dir`, or why there is none: git's ownership check
/// ([`GitError::NotOwned`]) is named as git names it, not taken for no repository.
pub fn discover(dir: &std::path::Path) -> Result<git2::Repository, GitError> {
    git2::Repository::discover(dir).map_err(|e| match e.code() {
        git2::ErrorCode::NotFound => GitError::NoRepository,
        // The work tree git would name in its `safe.directory` advice.
        git2::ErrorCode::Owner => GitError::NotOwned(
            dir.ancestors()
                .find(|d| d.join(".git").symlink_metadata().is_ok())
                .unwrap_or(dir)
                .to_path_buf(),
        ),
        _ => GitError::Git(e),
    })
}

/// Why git refuses the repository holding `dir` for its owner; None when it does not.
pub fn owner_refusal(dir: &std::path::Path) -> Option<GitError> {
    match discover(dir) {
        Err(e @ GitError::NotOwned(_)) => Some(e),
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("the {hook} hook failed ({status}); nothing was committed:\n{output}")]
    Hook {
        hook: String,
        status: String,
        output: String,
    },
    #[error(
        "{} identity unknown: *** Please tell me who you are. Run `git config --global user.email \"you@example.com\"` and `git config --global user.name \"Your Name\"` to set your account's default identity (or set GIT_{}_NAME and GIT_{}_EMAIL)",
        capitalized(.0), .0.to_ascii_uppercase(), .0.to_ascii_uppercase()
    )]
    NoIdentity(&'static str),
    /// An identity git would refuse too (an empty name, a bad date), in git's words.
    #[error("{0}")]
    BadIdentity(String),
    /// Commits are to be signed and the key did not sign, in git's words.
    #[error("commit.gpgSign is set and signing failed: {0}")]
    Sign(String),
    #[error(
        "git's lock {} exists: another git process seems to be running in this repository: try again when it is done (if no git process is running, one crashed earlier: remove the file)",
        .0.display()
    )]
    IndexLocked(std::path::PathBuf),
    /// git's lock was taken from tern between its acquisition and the commit.
    #[error(
        "git's lock {} was taken from tern while it committed ({how}), so tern did not install its index nor move the branch",
        lock.display()
    )]
    IndexLockTaken {
        lock: std::path::PathBuf,
        how: String,
    },
    /// The branch was moved by someone else while tern made its commits.
    #[error("{0}")]
    HeadMoved(String),
    /// A failure injected by a test (debug builds only).
    #[error("failure injected at step {0} (TERN_FAIL_AT)")]
    Injected(Step),
    #[error("the repository has no work tree")]
    Bare,
    #[error(
        "not inside a git repository: tern writes only where every change can be undone; run `git init` first (or `tern apply --git-init`)"
    )]
    NoRepository,
    /// git's `safe.directory` check: the repository belongs to another user.
    #[error(
        "git refuses the repository in {}: it belongs to another user (git's safe.directory check against \"dubious ownership\"); if you trust it, run `git config --global --add safe.directory {}`, then try again",
        .0.display(), .0.display()
    )]
    NotOwned(std::path::PathBuf),
    #[error("git is in the middle of a {0}; finish or abort it first")]
    Busy(String),
    #[error(
        "git has unresolved conflicts in {0}; resolve them (edit, then `git add`) or undo what made them (`git checkout -m`, `git reset`) first"
    )]
    Conflicts(String),
    #[error(
        "another tern ({}) is writing to this repository: try again when it is done (its lock, .git/tern.lock, is released when that process ends)",
        holder(.0)
    )]
    Locked(String),
    #[error("cancelled: nothing was written (the accepted hunks are still there to apply)")]
    Interrupted,
    /// A landing, undo or rewind a killed tern left half done could not be settled.
    #[error(
        "a tern killed part way through a landing, undo or rewind left it half done, and it could not be rolled back or finished: {0}"
    )]
    HalfMove(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Who holds the lock, as its lock file says.
fn holder(pid: &str) -> String {
    match pid {
        "" => "a process that did not say which".into(),
        pid => format!("process {pid}"),
    }
}

/// How commits are made.
#[derive(Debug, Clone, Copy)]
pub struct CommitOptions<'a> {
    /// Run the pre-commit, commit-msg and post-commit hooks.
    pub verify_hooks: bool,
    /// The model that wrote the edits: named in tern's commit note and, with
    /// `co_author_trailer`, in `Co-authored-by: tern (<model>)`.
    pub model: Option<&'a str>,
    pub co_author_trailer: bool,
    /// A step to fail on purpose, for tests (debug builds only; see [`FailAt`]).
    pub fail_at: Option<FailAt>,
}

/// What commit `id` changed, as a unified diff against its first parent (its whole
/// tree for a root commit).
pub(crate) fn commit_diff(repo: &git2::Repository, id: git2::Oid) -> Result<String, git2::Error> {
    let commit = repo.find_commit(id)?;
    let parent = match commit.parent(0) {
        Ok(parent) => Some(parent.tree()?),
        Err(_) => None,
    };
    let diff = repo.diff_tree_to_tree(parent.as_ref(), Some(&commit.tree()?), None)?;
    let mut out = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin());
        }
        out.push_str(&String::from_utf8_lossy(line.content()));
        true
    })?;
    Ok(out)
}

/// `rev` as `git show` shows it: a title (`commit 1a2b3c4`) and its message and diff.
pub fn show(repo: &git2::Repository, rev: &str) -> Result<(String, String), git2::Error> {
    let commit = repo.revparse_single(rev)?.peel_to_commit()?;
    let author = commit.author();
    let text = format!(
        "Author: {} <{}>\n\n{}\n\n{}",
        author.name().unwrap_or_default(),
        author.email().unwrap_or_default(),
        commit.message().unwrap_or_default().trim_end(),
        commit_diff(repo, commit.id())?
    );
    Ok((format!("commit {}", short_id(commit.id())), text))
}

/// The 7-digit abbreviation of a commit id, as git shows it.
pub fn short_id(id: git2::Oid) -> String {
    id.to_string().chars().take(7).collect()
}

/// Refuses to commit (or undo) while a merge, rebase, cherry-pick... is in progress:
/// a one-parent commit of some paths would silently drop it. Also while the index has
/// conflicts (a `git stash pop` that conflicted leaves them with no merge state): git
/// itself will not commit then, and staging a conflicted file would commit its markers.
pub(crate) fn ensure_idle(repo: &git2::Repository) -> Result<(), GitError> {
    match repo.state() {
        git2::RepositoryState::Clean => {}
        state => return Err(GitError::Busy(format!("{state:?}").to_lowercase())),
    }
    let mut index = repo.index()?;
    // The repository's index object may predate the user's last git command.
    index.read(false)?;
    if index.has_conflicts() {
        let mut paths: Vec<String> = Vec::new();
        for conflict in index.conflicts()?.flatten() {
            let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
            if let Some(e) = entry {
                paths.push(String::from_utf8_lossy(&e.path).into_owned());
            }
        }
        return Err(GitError::Conflicts(paths.join(", ")));
    }
    Ok(())
}
