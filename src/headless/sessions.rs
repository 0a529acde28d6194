//! `tern sessions`: this repository's saved sessions, the one active last first, one
//! line each (`--json`: one object each); `--prune` removes the old ones now, those with
//! pending hunks only once the user confirms. A signal that stops it (a reader that
//! does not read, a question not answered) is said, as the other commands say it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::engine::persist::store::{KEEP, MAX_AGE};
use crate::engine::persist::{Listed, Store};
use crate::plural::count;

/// Runs `tern sessions` for the repository at `root`.
pub fn run(root: &Path, prune: bool, yes: bool, json: bool) -> ExitCode {
    let signals = super::StopLine::watch("tern sessions");
    signals.end(list_or_prune(root, prune, yes, json))
}

fn list_or_prune(root: &Path, prune: bool, yes: bool, json: bool) -> ExitCode {
    let store = Store::for_repo(root);
    for notice in store.notices() {
        crate::egress::errln!("tern: {notice}");
    }
    if prune {
        return prune_old(&store, yes);
    }
    let sessions = store.list();
    let mut out = std::io::stdout().lock();
    let written: std::io::Result<()> = sessions.iter().try_for_each(|s| match json {
        true => super::json::print_line(&mut out, super::json::Session::from(s)),
        false => writeln!(out, "{}", text_line(s, SystemTime::now())),
    });
    match written {
        // The reader has all it wanted (`tern sessions | head -1`): a quiet end.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => {
            crate::egress::errln!("tern sessions: {e}");
            return ExitCode::FAILURE;
        }
        Ok(()) => {}
    }
    if sessions.is_empty() && !json {
        crate::egress::errln!(
            "tern: no saved sessions for {} (a run that sends a message or adds a file saves one)",
            root.components().as_path().display()
        );
    }
    ExitCode::SUCCESS
}

/// The line for `s`: made visible when stdout is a terminal.
pub(super) fn text_line(s: &Listed, now: SystemTime) -> String {
    s.line(now, std::io::stdout().is_terminal())
}

/// `--prune`: the old sessions without pending hunks go at once; those with them (or
/// that cannot be read) go once the user says so.
fn prune_old(store: &Store, yes: bool) -> ExitCode {
    let now = SystemTime::now();
    let (asking, plain): (Vec<Listed>, Vec<Listed>) = store
        .old(now)
        .into_iter()
        .partition(|s| s.has_hunks() || s.unreadable.is_some());
    let mut failed = false;
    let removed = remove_all(store, &plain, false, &mut failed);
    let days = MAX_AGE.as_secs() / 86_400;
    if asking.is_empty() {
        crate::egress::outln!(
            "removed {} (the newest {KEEP} and any active in the last {days} days are kept)",
            count(removed, "old session")
        );
        return exit(failed);
    }
    crate::egress::outln!(
        "{} hunks pending or cannot be read:",
        match asking.len() {
            1 => "1 old session has".to_string(),
            n => format!("{n} old sessions have"),
        }
    );
    for s in &asking {
        crate::egress::outln!("  {}", text_line(s, now));
    }
    let confirmed = yes || (std::io::stdin().is_terminal() && ask("remove them too? [y/N] "));
    if !confirmed {
        let how = match std::io::stdin().is_terminal() {
            true => "kept them",
            false => "kept them: pass --yes to remove them too",
        };
        crate::egress::outln!("removed {}; {how}", count(removed, "old session"));
        return exit(failed || !std::io::stdin().is_terminal());
    }
    let gone = remove_all(store, &asking, true, &mut failed);
    crate::egress::outln!("removed {}", count(removed + gone, "old session"));
    exit(failed)
}

/// Removes `sessions` (see `Store::remove`); returns how many went, and sets `failed`
/// when one could not be removed.
fn remove_all(store: &Store, sessions: &[Listed], pending_too: bool, failed: &mut bool) -> usize {
    let mut removed = 0;
    for s in sessions {
        match store.remove(s, pending_too) {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => {
                crate::egress::errln!("tern sessions: {e}");
                *failed = true;
            }
        }
    }
    removed
}

/// Asks a y/N question on the terminal.
fn ask(question: &str) -> bool {
    crate::egress::out!("{question}");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).is_ok()
        && matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn exit(failed: bool) -> ExitCode {
    match failed {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    }
}
