//! `tern undo`: revert tern's last commit, or say precisely why not.

use std::path::Path;
use std::process::ExitCode;

use crate::git::{self, UndoError};

/// Runs `tern undo` in the repository containing `cwd`.
pub fn run(cwd: &Path) -> ExitCode {
    let repo = match git2::Repository::discover(cwd) {
        Ok(repo) => repo,
        Err(e) => {
            eprintln!("tern undo: not in a git repository: {}", e.message());
            return ExitCode::from(2);
        }
    };
    match git::undo(&repo) {
        Ok(undone) => {
            println!("{undone}");
            ExitCode::SUCCESS
        }
        Err(why @ (UndoError::Refused(_) | UndoError::Turn(_))) => {
            eprintln!("tern undo: refused: {why}");
            ExitCode::from(1)
        }
        Err(UndoError::Git(e)) => {
            eprintln!("tern undo: {e}");
            ExitCode::from(2)
        }
    }
}
