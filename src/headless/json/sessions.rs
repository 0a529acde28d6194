//! `tern sessions --json`: one session a line.

use std::time::UNIX_EPOCH;

use serde::Serialize;

use crate::engine::persist::Listed;

#[derive(Serialize)]
pub struct Session<'a> {
    id: &'a str,
    last_active_ms: u64,
    title: &'a str,
    pending_hunks: usize,
    /// Proposed hunks that no longer apply, kept until dismissed.
    failed_hunks: usize,
    cost: f64,
    /// A tern has it open (`pid`, when the lock says which).
    open: bool,
    pid: Option<u32>,
    /// Why its state cannot be read, if it cannot.
    unreadable: Option<&'a str>,
}

impl<'a> From<&'a Listed> for Session<'a> {
    fn from(s: &'a Listed) -> Self {
        let holder = s.holder();
        Session {
            id: &s.id,
            last_active_ms: s
                .last_active
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            title: &s.title,
            pending_hunks: s.pending_hunks,
            failed_hunks: s.failed_hunks,
            cost: s.cost,
            open: holder.is_some(),
            pid: holder.flatten(),
            unreadable: s.unreadable.as_deref(),
        }
    }
}
