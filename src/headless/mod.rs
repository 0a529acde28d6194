//! The non-TUI front end: the same engine, driven by flags, printing plain text (or one
//! JSON event per line with `--json`).

pub mod apply;
pub mod chat;
pub mod json;
pub mod map;
pub mod review;
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
