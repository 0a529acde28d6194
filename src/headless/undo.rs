//! `tern undo`: revert tern's last commit (or, with `--turn`, every commit of the last
//! turn of the newest session, or of the one `--resume=ID` names), or say precisely why
//! not.

use std::path::Path;
use std::process::ExitCode;

use crate::egress::{errln, outln};
use crate::engine::persist::Resume;
use crate::engine::undo_commits::{CommitUndoError, TurnUndoError};
use crate::git::{self, UndoError};

/// Runs `tern undo` in the repository containing `cwd`; `which`: the session named by
/// `--resume[=ID]`. A signal lets the undo under way finish (the repository lock marks
/// it, `signals`), then ends the run with its exit code; one that comes while it waits
/// for another tern's lock cancels it.
pub fn run(cwd: &Path, turn: bool, which: Option<Resume>) -> ExitCode {
    let signals = crate::signals::watch(crate::signals::Exit::default());
    let outcome = undo(cwd, turn, which);
    let signal = signals.as_ref().and_then(crate::signals::Stop::signal);
    let name = signal.map_or("a signal".into(), crate::signals::name);
    match outcome {
        Err(Cancelled) => errln!(
            "tern undo: cancelled: nothing was undone ({name} arrived while it waited for another tern to finish)"
        ),
        Ok(_) if signal.is_some() => {
            errln!("tern undo: {name} arrived while it ran; it ran to its end first")
        }
        Ok(code) => return code,
    }
    ExitCode::from(signal.map_or(1, crate::signals::exit_code))
}

/// A signal came while the undo waited for the repository lock: nothing was undone.
struct Cancelled;

fn undo(cwd: &Path, turn: bool, which: Option<Resume>) -> Result<ExitCode, Cancelled> {
    let repo = match git2::Repository::discover(cwd) {
        Ok(repo) => repo,
        Err(e) => {
            errln!("tern undo: not in a git repository: {}", e.message());
            return Ok(ExitCode::from(2));
        }
    };
    // An older tern's sessions are moved in first, and that is said.
    if let Some(root) = repo.workdir() {
        for notice in crate::engine::persist::Store::for_repo(root).notices() {
            errln!("tern: {notice}");
        }
    }
    if turn {
        return run_turn(&repo, &which.unwrap_or(Resume::Newest));
    }
    let undone = match repo.workdir() {
        Some(root) => crate::engine::undo_commits::undo_saved_commit(&repo, root, which.as_ref()),
        None => git::undo(&repo)
            .map(|u| u.to_string())
            .map_err(CommitUndoError::from),
    };
    tell_rollbacks();
    Ok(match undone {
        Ok(said) => {
            outln!("{said}");
            ExitCode::SUCCESS
        }
        Err(CommitUndoError::Undo(UndoError::Interrupted)) => return Err(Cancelled),
        Err(
            why @ (CommitUndoError::Session(_)
            | CommitUndoError::Open(_)
            | CommitUndoError::Undo(UndoError::Refused(_) | UndoError::Turn(_))),
        ) => {
            errln!("tern undo: refused: {why}");
            ExitCode::from(1)
        }
        // Undone, but the session could not be told: the undo is said as done.
        Err(CommitUndoError::NotTold { said, id, error }) => {
            outln!("{said}");
            errln!(
                "tern undo: session {id} made it but could not be updated, so its model will not be told: {error}"
            );
            ExitCode::from(1)
        }
        Err(CommitUndoError::Undo(UndoError::Git(e))) => {
            errln!("tern undo: {e}");
            ExitCode::from(2)
        }
    })
}

/// `tern undo --turn`: what was undone on stdout; a stop (before or midway) on stderr,
/// exit 1.
fn run_turn(repo: &git2::Repository, which: &Resume) -> Result<ExitCode, Cancelled> {
    let Some(root) = repo.workdir() else {
        errln!("tern undo: the repository has no work tree");
        return Ok(ExitCode::from(2));
    };
    let undone = crate::engine::undo_commits::undo_saved_turn(repo, root, which);
    tell_rollbacks();
    Ok(match undone {
        Ok(done) => {
            for undone in &done.undone {
                outln!("{undone}");
            }
            match &done.stopped {
                None => ExitCode::SUCCESS,
                Some(stopped) => {
                    errln!("tern undo: {stopped}");
                    ExitCode::from(1)
                }
            }
        }
        // Undone, but the session could not be told: what was undone is said as done.
        Err(TurnUndoError::NotTold { done, error }) => {
            for undone in &done.undone {
                outln!("{undone}");
            }
            if let Some(stopped) = &done.stopped {
                errln!("tern undo: {stopped}");
            }
            errln!(
                "tern undo: the commits above are undone, but the session could not be updated, so the model will not be told: {error}"
            );
            ExitCode::from(1)
        }
        Err(TurnUndoError::Undo { error, .. }) if matches!(*error, UndoError::Interrupted) => {
            return Err(Cancelled);
        }
        Err(e) => {
            errln!("tern undo: refused: {e}");
            ExitCode::from(1)
        }
    })
}

/// Says on stderr what taking the repository lock did to a move a killed tern left
/// half done (`git::rolled_back`).
pub(super) fn tell_rollbacks() {
    for said in git::rolled_back() {
        errln!("tern: {said}");
    }
}
