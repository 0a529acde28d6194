//! `--json`, a public interface: its own types, converted from the engine's, so that
//! renaming an engine type never changes what users' scripts read. Every line (or
//! document, for the commands that print one) starts with `"version": 1`; a change to
//! a shape that breaks a reader raises it. The README's "`--json` output" section
//! documents each kind; `tests/it/json_lines.rs` snapshots each.
//!
//! A line that answers an op carries the op's id right after `version` (`"id"`).

mod budget;
mod event;
mod map;
mod proposal;
mod reply;
mod review;
mod sessions;

use std::io::Write;

use serde::Serialize;

use crate::engine::OpId;

pub use budget::Budget;
pub use event::{Event, Stopped, TimelineTurn};
pub use map::{MapFile, Ranked};
pub use review::{Plan, Review, ReviewStopped};
pub use sessions::Session;

/// The version of every shape in this module.
const VERSION: u32 = 1;

/// One JSON line or document: the version first, the id of the op it answers (if
/// any), then the body's fields.
#[derive(Serialize)]
struct Versioned<T> {
    version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(flatten)]
    body: T,
}

/// `body` as JSON with the version first, every text redacted (before serializing:
/// JSON escapes a control character inside the key, which would hide it from a
/// redactor of the line).
fn value(id: Option<OpId>, body: impl Serialize) -> serde_json::Result<serde_json::Value> {
    crate::egress::json(&Versioned {
        version: VERSION,
        id: id.map(|OpId(n)| n),
        body,
    })
}

/// Writes `body` as one JSON line and flushes it (a reader waits on each line).
pub fn print_line(out: &mut impl Write, body: impl Serialize) -> std::io::Result<()> {
    write_line(out, None, body)
}

fn write_line(out: &mut impl Write, id: Option<OpId>, body: impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &value(id, body)?)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes `body` as one indented JSON document (the commands that print one).
pub(crate) fn print_pretty(out: &mut impl Write, body: impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &value(None, body)?)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes one engine event as a JSON line, with the id of the op it answers.
pub fn print_event(
    out: &mut impl Write,
    op: Option<OpId>,
    event: &crate::engine::Event,
) -> std::io::Result<()> {
    write_line(out, op, Event::from(event))
}
