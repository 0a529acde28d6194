//! The non-TUI front end: the same engine, driven by flags, printing plain text (or one
//! JSON event per line with `--json`).

pub mod apply;
pub mod chat;
pub mod map;
pub mod review;
pub mod script;
pub mod sessions;
pub mod tokens;
pub mod trust;
pub mod undo;

use std::io::Write;
use std::process::ExitCode;

use crate::engine::Event;

/// The exit code once the engine has stopped: a failure when the run failed or the
/// engine did not end cleanly.
pub(crate) async fn exit_code(engine: tokio::task::JoinHandle<()>, ok: bool) -> ExitCode {
    if engine.await.is_ok() && ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Writes one event as a JSON line, every text redacted (before serializing: JSON
/// escapes a control character inside the key, which would hide it from a redactor
/// of the line).
pub(crate) fn print_json(out: &mut impl Write, event: &Event) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &crate::egress::json(event)?)?;
    out.write_all(b"\n")?;
    out.flush()
}
