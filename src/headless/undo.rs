//! `tern undo`: revert tern's last commit, or say precisely why not.

use std::path::Path;
use std::process::ExitCode;

use crate::git::{self, UndoError};

/// `--help` text for the exit codes.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  the last tern commit was undone
  1  refused: HEAD is not a tern commit, is a merge or the first commit, its files
     changed since, or a remote branch already contains it
  2  error: not in a git repository, or git failed";

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
        Err(UndoError::Refused(why)) => {
            eprintln!("tern undo: refused: {why}");
            ExitCode::from(1)
        }
        Err(UndoError::Git(e)) => {
            eprintln!("tern undo: {e}");
            ExitCode::from(2)
        }
    }
}
