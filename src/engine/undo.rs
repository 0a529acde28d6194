//! `/undo` and `/undo turn`: tern's commits taken back (by `git::undo` and
//! `git::undo_turn`, which do every safety check), the record of each turn's commits
//! kept right, and the model told with the next message what is gone.
//!
//! `/undo` alone stays one commit, as it always was: a key pressed out of habit never
//! takes back more than the last landing. When that commit's turn made more, it says so
//! and names `/undo turn`.

use std::path::Path;

use git2::{Oid, Repository};

use super::Engine;
use super::slash::GitDone;
use crate::git::{TurnUndone, Undone};

impl Engine {
    pub(super) fn undo_command(&mut self, args: &str) {
        let turn = self.session.turns.last();
        match args.trim() {
            "" => self.git_job("undo", move |repo| undo_one(repo, &turn)),
            "turn" => self.git_job("undo", move |repo| {
                let done = crate::git::undo_turn(repo, &turn).map_err(|e| e.to_string())?;
                turn_done(repo, done)
            }),
            other => self.error(format!(
                "/undo takes nothing (tern's last commit) or `turn` (all of the last turn's commits), not {other:?}"
            )),
        }
    }
}

/// `/undo`: the last commit, and a word about the rest of its turn.
fn undo_one(repo: &Repository, turn: &[Oid]) -> Result<GitDone, String> {
    let undone = crate::git::undo(repo).map_err(|e| e.to_string())?;
    let mut message = undone.to_string();
    if let Some(rest) = rest_of_turn(repo, turn, undone.commit, "/undo turn") {
        message.push('\n');
        message.push_str(&rest);
    }
    Ok(GitDone {
        note: Some(undo_note(repo, &undone)),
        message,
        undone: vec![undone.commit],
        warning: None,
    })
}

/// After undoing `undone`, the last of `turn`'s commits: what is left of the turn, and
/// whether `how` (`/undo turn`, `tern undo --turn`) can take it back, which only holds
/// while the rest are the newest commits (a commit of the user's own changes that tern
/// made in between, or one of the user's, stands in the way).
fn rest_of_turn(repo: &Repository, turn: &[Oid], undone: Oid, how: &str) -> Option<String> {
    let (last, rest) = turn.split_last()?;
    if *last != undone || rest.is_empty() {
        return None;
    }
    let made = turn.len();
    let left = rest.len();
    Some(match crate::git::check_newest(repo, rest) {
        Ok(()) => format!("this turn made {made} commits: {how} undoes the other {left}"),
        Err(why) => {
            format!("this turn made {made} commits; {how} cannot take back the other {left}: {why}")
        }
    })
}

/// `/undo turn`'s result: undone commits are reported and told to the model; a stop
/// midway is a warning naming what was left; a stop before any is an error.
fn turn_done(repo: &Repository, done: TurnUndone) -> Result<GitDone, String> {
    if done.undone.is_empty() {
        return Err(format!("/undo turn: nothing was undone: {done}"));
    }
    let warning = done
        .stopped
        .as_ref()
        .map(|stopped| format!("/undo turn {stopped}"));
    Ok(GitDone {
        note: Some(turn_note(repo, &done.undone)),
        message: done
            .undone
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        undone: done.undone.iter().map(|u| u.commit).collect(),
        warning,
    })
}

/// What the model is told after `/undo`: the commit it made is gone, with its diff, so
/// it does not build on edits that are no longer there.
fn undo_note(repo: &Repository, undone: &Undone) -> String {
    let diff = crate::git::commit_diff(repo, undone.commit).unwrap_or_default();
    format!(
        "{}\n\n```diff\n{}```",
        crate::prompts::undone(&crate::git::short_id(undone.commit), &undone.summary),
        clip_lines(&diff, UNDO_NOTE_LINES)
    )
}

/// What the model is told after `/undo turn`: each undone commit (newest first) with
/// its diff, the diffs sharing `TURN_NOTE_LINES`.
pub fn turn_note(repo: &Repository, undone: &[Undone]) -> String {
    let ids: Vec<String> = undone
        .iter()
        .map(|u| crate::git::short_id(u.commit))
        .collect();
    let each = (TURN_NOTE_LINES / undone.len().max(1)).max(MIN_LINES_EACH);
    let mut note = crate::prompts::undone_turn(undone.len(), &ids.join(", "));
    for u in undone {
        let diff = crate::git::commit_diff(repo, u.commit).unwrap_or_default();
        note.push_str(&format!(
            "\n\n{} \"{}\":\n```diff\n{}```",
            crate::git::short_id(u.commit),
            u.summary,
            clip_lines(&diff, each)
        ));
    }
    note
}

/// The most diff lines an undo note carries.
const UNDO_NOTE_LINES: usize = 80;
/// The most diff lines a turn's undo note carries, shared by its commits...
const TURN_NOTE_LINES: usize = 2 * UNDO_NOTE_LINES;
/// ...but never fewer than this each.
const MIN_LINES_EACH: usize = 20;

/// The first `max` lines of `text`, and how many were left out.
fn clip_lines(text: &str, max: usize) -> String {
    let total = text.lines().count();
    let mut out: String = text.lines().take(max).map(|l| format!("{l}\n")).collect();
    if total > max {
        out.push_str(&format!("…({} more lines)\n", total - max));
    }
    out
}

/// `tern undo`: tern's last commit, as `/undo` does; the saved session then forgets it
/// (so `--turn` finds the rest of its turn) and carries the note to the model. Returns
/// what to print.
pub fn undo_saved_commit(repo: &Repository, root: &Path) -> Result<String, crate::git::UndoError> {
    let undone = crate::git::undo(repo)?;
    let mut out = undone.to_string();
    let file = super::persist::path(root);
    let mut saved = match super::persist::load(&file) {
        Ok(saved) => saved,
        // No session saved here: nothing to update.
        Err(super::persist::PersistError::Missing(_)) => return Ok(out),
        Err(e) => {
            out.push_str(&format!("\nthe saved session was not updated: {e}"));
            return Ok(out);
        }
    };
    if let Some(rest) = rest_of_turn(repo, &saved.turns.last(), undone.commit, "tern undo --turn") {
        out.push('\n');
        out.push_str(&rest);
    }
    saved.turns.undone(&[undone.commit]);
    saved.notes.push(undo_note(repo, &undone));
    if let Err(e) = super::persist::save(&file, &saved, false) {
        out.push_str(&format!(
            "\nbut the session could not be updated, so the model will not be told: {e}"
        ));
    }
    Ok(out)
}

/// `tern undo --turn`: the last turn of the session saved for the repository at
/// `root`, undone as `/undo turn` does; the saved session then forgets the undone
/// commits and carries the note to the model for `--resume`. Returns what was undone
/// (its `stopped` says where it stopped).
pub fn undo_saved_turn(repo: &Repository, root: &Path) -> Result<TurnUndone, String> {
    let file = super::persist::path(root);
    let mut saved = super::persist::load(&file).map_err(|e| e.to_string())?;
    let done = crate::git::undo_turn(repo, &saved.turns.last()).map_err(|e| e.to_string())?;
    if !done.undone.is_empty() {
        let commits: Vec<Oid> = done.undone.iter().map(|u| u.commit).collect();
        saved.turns.undone(&commits);
        saved.notes.push(turn_note(repo, &done.undone));
        super::persist::save(&file, &saved, false).map_err(|e| {
            format!(
                "{done}\nbut the session could not be updated, so the model will not be told: {e}"
            )
        })?;
    }
    Ok(done)
}
