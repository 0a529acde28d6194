//! `tern rewind`: the turns of the newest session (or of `--resume=ID`) and what a
//! rewind to before each would change (`--list`, or no `--to`); a rewind to before a
//! turn (`--to TURN`, its code with `--code`, its conversation with `--chat`, both
//! when neither); and the redo of the last rewind (`--redo`). The work is
//! `engine::rewind`'s, on the saved session; this says what happened.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::RewindArgs;
use crate::egress::{errln, outln};
use crate::engine::persist::Resume;
use crate::engine::rewind::{Asked, RewindError, SavedOutcome, SavedRewindError};
use crate::git::UndoError;

/// Runs `tern rewind` in the repository containing `cwd` (or, outside one, the
/// sessions of `cwd`: the conversation can be rewound, the code cannot). A signal lets
/// the rewind under way finish (the repository lock marks it), then ends the run with
/// its exit code; one that comes while it waits for another tern's lock cancels it.
pub fn run(cwd: &Path, args: &RewindArgs, which: Option<Resume>, json: bool) -> ExitCode {
    let signals = crate::signals::watch(crate::signals::Exit::default());
    let code = rewind(cwd, args, &which.unwrap_or(Resume::Newest), json);
    let Some(signal) = signals.as_ref().and_then(crate::signals::Stop::signal) else {
        return code;
    };
    errln!(
        "tern rewind: {} (the rewind under way ran to its end first)",
        crate::signals::stopped_by(signal)
    );
    ExitCode::from(crate::signals::exit_code(signal))
}

fn rewind(cwd: &Path, args: &RewindArgs, which: &Resume, json: bool) -> ExitCode {
    let asked = match (&args.to, args.redo) {
        (_, true) => Asked::Redo,
        (None, false) => Asked::Timeline,
        (Some(to), false) => match crate::engine::rewind::turn_number(to) {
            Ok(to) => Asked::Rewind {
                to,
                code: args.code || !args.chat,
                chat: args.chat || !args.code,
            },
            Err(why) => {
                errln!("tern rewind: refused: {why}; nothing was changed");
                return ExitCode::from(1);
            }
        },
    };
    let repo = git2::Repository::discover(cwd).ok();
    let root = repo
        .as_ref()
        .and_then(|r| r.workdir())
        .unwrap_or(cwd)
        .to_path_buf();
    for notice in crate::engine::persist::Store::for_repo(&root).notices() {
        errln!("tern: {notice}");
    }
    let outcome = crate::engine::rewind::on_saved(repo.as_ref(), &root, which, asked);
    super::undo::tell_rollbacks();
    match outcome {
        Ok(SavedOutcome::Listed(turns, redo)) => {
            if json {
                let mut out = std::io::stdout().lock();
                for turn in &turns {
                    let line = super::json::TimelineTurn::from(turn);
                    if super::json::print_line(&mut out, line).is_err() {
                        return ExitCode::SUCCESS;
                    }
                }
            } else {
                let text = crate::engine::protocol::timeline_text(&turns, redo.as_deref());
                outln!("{}", text.trim_end());
            }
            ExitCode::SUCCESS
        }
        Ok(SavedOutcome::Done(said)) => {
            outln!("{said}");
            ExitCode::SUCCESS
        }
        Err(SavedRewindError::Rewind(RewindError::Code(UndoError::Interrupted))) => {
            errln!(
                "tern rewind: cancelled: a signal arrived while it waited for another tern to finish; nothing was changed"
            );
            ExitCode::from(1)
        }
        Err(e) => {
            errln!("tern rewind: {e}");
            ExitCode::from(1)
        }
    }
}
