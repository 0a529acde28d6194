//! `tern undo`: revert tern's last commit (or, with `--turn`, every commit of the saved
//! session's last turn), or say precisely why not.

use std::path::Path;
use std::process::ExitCode;

use crate::egress::{errln, outln};
use crate::git::{self, UndoError};

/// Runs `tern undo` in the repository containing `cwd`. A signal lets the undo under
/// way finish (the repository lock marks it, `signals`), then ends the run with its
/// exit code.
pub fn run(cwd: &Path, turn: bool) -> ExitCode {
    let signals = crate::signals::watch(crate::signals::Exit::default());
    let code = undo(cwd, turn);
    match signals.as_ref().and_then(crate::signals::Stop::signal) {
        Some(signal) => {
            errln!(
                "tern undo: {} arrived while it ran; it ran to its end first",
                crate::signals::name(signal)
            );
            ExitCode::from(crate::signals::exit_code(signal))
        }
        None => code,
    }
}

fn undo(cwd: &Path, turn: bool) -> ExitCode {
    let repo = match git2::Repository::discover(cwd) {
        Ok(repo) => repo,
        Err(e) => {
            errln!("tern undo: not in a git repository: {}", e.message());
            return ExitCode::from(2);
        }
    };
    if turn {
        return run_turn(&repo);
    }
    let undone = match repo.workdir() {
        Some(root) => crate::engine::undo::undo_saved_commit(&repo, root),
        None => git::undo(&repo).map(|u| u.to_string()),
    };
    match undone {
        Ok(said) => {
            outln!("{said}");
            ExitCode::SUCCESS
        }
        Err(why @ (UndoError::Refused(_) | UndoError::Turn(_))) => {
            errln!("tern undo: refused: {why}");
            ExitCode::from(1)
        }
        Err(UndoError::Git(e)) => {
            errln!("tern undo: {e}");
            ExitCode::from(2)
        }
    }
}

/// `tern undo --turn`: what was undone on stdout; a stop (before or midway) on stderr,
/// exit 1.
fn run_turn(repo: &git2::Repository) -> ExitCode {
    let Some(root) = repo.workdir() else {
        errln!("tern undo: the repository has no work tree");
        return ExitCode::from(2);
    };
    match crate::engine::undo::undo_saved_turn(repo, root) {
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
        Err(e) => {
            errln!("tern undo: refused: {e}");
            ExitCode::from(1)
        }
    }
}
