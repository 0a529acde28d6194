//! The non-TUI front end: the same engine, driven by flags, printing plain text (or one
//! JSON event per line with `--json`).

pub mod apply;
pub mod chat;
pub mod json;
pub mod map;
pub mod review;
pub mod rewind;
pub mod script;
pub mod sessions;
mod streams;
pub mod tokens;
pub mod trust;
pub mod undo;

use std::process::ExitCode;

/// The exit code once the engine has stopped: a failure when the run failed or the
/// engine did not end cleanly.
pub(crate) async fn exit_code(engine: tokio::task::JoinHandle<()>, ok: bool) -> ExitCode {
    if engine.await.is_ok() && ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// For a command that has nothing of its own to stop on a signal (`tern map`, `tern
/// tokens`): its last line says it was stopped, as `tern review`'s
/// does, whether it ends by itself after the signal (`end`) or the signal's exit ends
/// it (`signals::GRACE` later).
pub(crate) struct StopLine {
    command: &'static str,
    at_exit: Option<crate::signals::AtExit>,
}

impl StopLine {
    /// Starts watching for signals on behalf of `command` (`"tern map"`).
    pub(crate) fn watch(command: &'static str) -> StopLine {
        let watching = crate::signals::watch(crate::signals::Exit::default()).is_some();
        StopLine {
            command,
            at_exit: watching.then(|| crate::signals::at_exit(move || say_stopped(command))),
        }
    }

    /// `code`, or the signal's exit code (said) when one came.
    pub(crate) fn end(self, code: ExitCode) -> ExitCode {
        drop(self.at_exit);
        match crate::signals::arrived() {
            Some(signal) => {
                say_stopped(self.command);
                ExitCode::from(crate::signals::exit_code(signal))
            }
            None => code,
        }
    }
}

fn say_stopped(command: &str) {
    if let Some(signal) = crate::signals::arrived() {
        crate::egress::errln!("{command}: {}", crate::signals::stopped_by(signal));
    }
}
