//! The work of `/undo`, `/undo turn` and `tern undo`: tern's commits taken back (by `git::undo` and
//! `git::undo_turn`, which do every safety check), the record of each turn's commits
//! kept right, and the model told with the next message what is gone.
//!
//! `/undo` alone stays one commit, as it always was: a key pressed out of habit never
//! takes back more than the last landing. When that commit's turn made more, it says so
//! and names `/undo turn`.

use std::path::Path;

use git2::{Oid, Repository};

use super::git_job::{GitDone, GitJobError};
use super::persist::{self, OpenSession, Resume, SessionDisk, SessionFile, Store, StoreError};
use crate::git::{TurnUndone, Undone};

/// `/undo`: the last commit, and a word about the rest of its turn.
pub(super) fn undo_one(repo: &Repository, turn: &[Oid]) -> Result<GitDone, GitJobError> {
    let (undone, held) = crate::git::undo_held(repo, None)?;
    let mut message = undone.to_string();
    if let Some(rest) = rest_of_turn(repo, turn, undone.commit, "/undo turn") {
        message.push('\n');
        message.push_str(&rest);
    }
    Ok(GitDone {
        note: Some(undo_note(repo, &undone)),
        message,
        undone: vec![undone.commit],
        warning: None,
        held: Some(held),
    })
}

/// After undoing `undone`, the last of `turn`'s commits: what is left of the turn, and
/// whether `how` (`/undo turn`, `tern undo --turn`) can take it back, which only holds
/// while the rest are the newest commits (a commit of the user's own changes that tern
/// made in between, or one of the user's, stands in the way).
fn rest_of_turn(repo: &Repository, turn: &[Oid], undone: Oid, how: &str) -> Option<String> {
    let (last, rest) = turn.split_last()?;
    if *last != undone || rest.is_empty() {
        return None;
    }
    let made = turn.len();
    let left = rest.len();
    Some(match crate::git::check_newest(repo, rest) {
        Ok(()) => format!("this turn made {made} commits: {how} undoes the other {left}"),
        Err(why) => {
            format!("this turn made {made} commits; {how} cannot take back the other {left}: {why}")
        }
    })
}

/// `/undo turn`'s result: undone commits are reported and told to the model; a stop
/// midway is a warning naming what was left; a stop before any is an error.
pub(super) fn turn_done(repo: &Repository, done: TurnUndone) -> Result<GitDone, GitJobError> {
    if done.undone.is_empty() {
        return Err(GitJobError::NothingUndone(Box::new(done)));
    }
    let warning = done
        .stopped
        .as_ref()
        .map(|stopped| format!("/undo turn {stopped}"));
    Ok(GitDone {
        note: Some(turn_note(repo, &done.undone)),
        message: done
            .undone
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        undone: done.undone.iter().map(|u| u.commit).collect(),
        warning,
        held: None,
    })
}

/// What the model is told after `/undo`: the commit it made is gone, with its diff, so
/// it does not build on edits that are no longer there.
fn undo_note(repo: &Repository, undone: &Undone) -> String {
    let diff = crate::git::commit_diff(repo, undone.commit).unwrap_or_default();
    format!(
        "{}\n\n```diff\n{}```",
        crate::prompts::undone(&crate::git::short_id(undone.commit), &undone.summary),
        clip_lines(&diff, UNDO_NOTE_LINES)
    )
}

/// What the model is told after `/undo turn`: each undone commit (newest first) with
/// its diff, the diffs sharing `TURN_NOTE_LINES`.
pub(crate) fn turn_note(repo: &Repository, undone: &[Undone]) -> String {
    let ids: Vec<String> = undone
        .iter()
        .map(|u| crate::git::short_id(u.commit))
        .collect();
    let each = (TURN_NOTE_LINES / undone.len().max(1)).max(MIN_LINES_EACH);
    let mut note = crate::prompts::undone_turn(undone.len(), &ids.join(", "));
    for u in undone {
        let diff = crate::git::commit_diff(repo, u.commit).unwrap_or_default();
        note.push_str(&format!(
            "\n\n{} \"{}\":\n```diff\n{}```",
            crate::git::short_id(u.commit),
            u.summary,
            clip_lines(&diff, each)
        ));
    }
    note
}

/// The most diff lines an undo note carries.
const UNDO_NOTE_LINES: usize = 80;
/// The most diff lines a turn's undo note carries, shared by its commits...
const TURN_NOTE_LINES: usize = 2 * UNDO_NOTE_LINES;
/// ...but never fewer than this each.
const MIN_LINES_EACH: usize = 20;

/// The first `max` lines of `text`, and how many were left out.
fn clip_lines(text: &str, max: usize) -> String {
    let total = text.lines().count();
    let mut out: String = text.lines().take(max).map(|l| format!("{l}\n")).collect();
    if total > max {
        out.push_str(&format!("…({} more lines)\n", total - max));
    }
    out
}

/// Why `tern undo` refused before undoing anything, or how the undo failed.
#[derive(Debug, thiserror::Error)]
pub enum CommitUndoError {
    #[error(transparent)]
    Undo(#[from] crate::git::UndoError),
    /// The session to tell cannot be (a wrong `--resume=ID`, one open in a tern, one
    /// that did not make HEAD): nothing was undone.
    #[error("{0}; nothing was undone")]
    Session(String),
    #[error("{0}; nothing was undone")]
    Open(#[from] OpenStateError),
    /// The commit was undone (`said`), but the session that made it was not updated.
    #[error(
        "{said}\nsession {id} made it but could not be updated, so its model will not be told: {error}"
    )]
    NotTold {
        said: String,
        id: String,
        error: persist::PersistError,
    },
}

/// A session to tell of an undo that cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenStateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session is open in another tern, which can undo it itself.
    #[error("{0}, or undo in it (`/undo`, `/undo turn`)")]
    InUse(StoreError),
    #[error(transparent)]
    Persist(#[from] persist::PersistError),
    #[error("session {0} has no saved state")]
    NoState(String),
}

/// Why `tern undo --turn` undid nothing, or could not tell the session what it undid.
#[derive(Debug, thiserror::Error)]
pub enum TurnUndoError {
    #[error(transparent)]
    Open(#[from] OpenStateError),
    /// The turn's undo refused or failed; `other`: a session whose last turn is at
    /// HEAD, probably the one meant.
    #[error("session {id}: {error}{}", .other.as_ref().map(|o| format!("; the last turn of session {o} is: `tern undo --turn --resume={o}`")).unwrap_or_default())]
    Undo {
        id: String,
        error: Box<crate::git::UndoError>,
        other: Option<String>,
    },
    /// The commits were undone, but the session was not updated.
    #[error("{done}\nbut the session could not be updated, so the model will not be told: {error}")]
    NotTold {
        done: Box<TurnUndone>,
        error: persist::PersistError,
    },
}

/// `tern undo`: tern's last commit, as `/undo` does; then the session that made it
/// forgets it, so `--turn` finds the rest of its turn, and carries the note to the
/// model. That session (`which`: the one named, else the one whose turns hold HEAD) is
/// found and opened *before* anything is undone: a named session that cannot be opened
/// or did not make HEAD refuses, changing nothing. Returns what to print.
pub(crate) fn undo_saved_commit(
    repo: &Repository,
    root: &Path,
    which: Option<&Resume>,
) -> Result<String, CommitUndoError> {
    let store = Store::for_repo(root);
    let head = repo.head().ok().and_then(|h| h.target());
    let session = match which {
        Some(which) => {
            let session = open(&store, which)?;
            let (disk, saved) = open_state(session)?;
            if let Some(head) = head.filter(|h| !saved.turns.holds(*h)) {
                let mut why = format!(
                    "HEAD ({}) was not made by session {}",
                    crate::git::short_id(head),
                    disk.id()
                );
                if let Ok(Some(other)) = session_that_made(&store, head) {
                    why.push_str(&format!(
                        " but by session {}: `tern undo --resume={}`",
                        other.id, other.id
                    ));
                }
                return Err(CommitUndoError::Session(why));
            }
            Some((disk, saved))
        }
        None => match head.map(|h| session_that_made(&store, h)).transpose() {
            Ok(made) => made.flatten().map(open_state).transpose()?,
            Err(e) => {
                return Err(CommitUndoError::Session(format!(
                    "the session that made HEAD cannot be told: {e}"
                )));
            }
        },
    };
    // Kept until the session forgets the commit (or the failure is said): a kill
    // before then leaves the move's journal, and the next tern rolls it back.
    let (undone, _recorded) = crate::git::undo_held(repo, None)?;
    let mut out = undone.to_string();
    let Some((mut disk, mut saved)) = session else {
        out.push_str(
            "
no saved session of this repository made it, so no model is told",
        );
        return Ok(out);
    };
    let rest = rest_of_turn(repo, &saved.turns.last(), undone.commit, "tern undo --turn");
    let id = disk.id().to_string();
    match forget_undone(
        &mut disk,
        &mut saved,
        &[undone.commit],
        undo_note(repo, &undone),
    ) {
        Ok(()) => {
            out.push_str(&format!(
                "
session {id} made it: its model is told with the next message (`tern --resume={id}`)"
            ));
            if let Some(rest) = rest {
                out.push_str(&format!(
                    "
{rest}"
                ));
            }
        }
        Err(error) => {
            return Err(CommitUndoError::NotTold {
                said: out,
                id,
                error,
            });
        }
    }
    Ok(out)
}

/// `tern undo --turn`: the last turn of the session `which` names (the newest by
/// default) undone as `/undo turn` does; the session then forgets the undone commits
/// and carries the note to the model for `--resume`. Returns what was undone (its
/// `stopped` says where it stopped).
pub(crate) fn undo_saved_turn(
    repo: &Repository,
    root: &Path,
    which: &Resume,
) -> Result<TurnUndone, TurnUndoError> {
    let store = Store::for_repo(root);
    let session = open(&store, which)?;
    let id = session.id.clone();
    let (mut disk, mut saved) = open_state(session)?;
    let done =
        crate::git::undo_turn(repo, &saved.turns.last()).map_err(|error| TurnUndoError::Undo {
            other: other_turn_at_head(&store, repo, &id),
            id: id.clone(),
            error: Box::new(error),
        })?;
    if !done.undone.is_empty() {
        let commits: Vec<Oid> = done.undone.iter().map(|u| u.commit).collect();
        if let Err(error) = forget_undone(
            &mut disk,
            &mut saved,
            &commits,
            turn_note(repo, &done.undone),
        ) {
            return Err(TurnUndoError::NotTold {
                done: Box::new(done),
                error,
            });
        }
    }
    Ok(done)
}

/// The session `which` names, opened to be told of an undo.
pub(crate) fn open(store: &Store, which: &Resume) -> Result<OpenSession, OpenStateError> {
    store.open(which).map_err(|e| match e {
        StoreError::Open { .. } => OpenStateError::InUse(e),
        e => e.into(),
    })
}

/// The session whose turns hold `commit`, opened (an error when a tern has it open).
fn session_that_made(store: &Store, commit: Oid) -> Result<Option<OpenSession>, OpenStateError> {
    let made = store
        .list()
        .into_iter()
        .find(|listed| saved_state(listed).is_some_and(|saved| saved.turns.holds(commit)));
    match made {
        Some(listed) => open(store, &Resume::Id(listed.id)).map(Some),
        None => Ok(None),
    }
}

/// Another session than `except` whose last turn ends at HEAD: the one `tern undo
/// --turn` was probably meant for.
fn other_turn_at_head(store: &Store, repo: &Repository, except: &str) -> Option<String> {
    let head = repo.head().ok()?.target()?;
    store
        .list()
        .into_iter()
        .filter(|listed| listed.id != except)
        .find(|listed| {
            saved_state(listed).is_some_and(|saved| saved.turns.last().last() == Some(&head))
        })
        .map(|listed| listed.id)
}

fn saved_state(listed: &persist::Listed) -> Option<SessionFile> {
    persist::load(&listed.dir.join(persist::store::STATE))
        .ok()
        .flatten()
}

/// An open session's files and its state.
pub(crate) fn open_state(
    session: OpenSession,
) -> Result<(SessionDisk, SessionFile), OpenStateError> {
    let id = session.id.clone();
    let (disk, saved) = SessionDisk::open(session)?;
    let saved = saved.ok_or(OpenStateError::NoState(id))?;
    Ok((disk, saved))
}

/// `commits` were undone outside the session's tern: its turns forget them, the model
/// is told `note` with the next message, and the record notes the undo.
fn forget_undone(
    disk: &mut SessionDisk,
    saved: &mut SessionFile,
    commits: &[Oid],
    note: String,
) -> Result<(), persist::PersistError> {
    saved.turns.undone(commits);
    saved.notes.push(note);
    let record = persist::Record::Undone {
        commits: commits.iter().map(Oid::to_string).collect(),
    };
    disk.save(saved, vec![record])
}
