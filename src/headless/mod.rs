//! The non-TUI front end: the same engine, driven by flags, printing plain text (or one
//! JSON event per line with `--json`).

pub mod apply;
pub mod chat;
pub mod map;
pub mod review;
pub mod script;
pub mod tokens;
pub mod trust;
pub mod undo;

use std::io::Write;

use crate::engine::Event;

/// Writes one event as a JSON line.
pub(crate) fn print_json(out: &mut impl Write, event: &Event) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    out.write_all(b"\n")?;
    out.flush()
}
