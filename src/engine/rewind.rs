//! Rewinding a session to before any of its turns (`/rewind`, `tern rewind`): the code
//! (every commit tern made since, taken back all or none by `git::undo_since`, with
//! undo's checks), the conversation (the history, the notes owed to the model and the
//! command outputs as the turn record saved them before that turn, across any summary
//! made later), or both; and the redo of the last rewind, until a message is sent. The
//! live session and a saved one (`tern rewind`) are rewound by the same code, through
//! `Parts`. See ARCHITECTURE.md, *The parts of the engine* (Rewind).

use git2::{Oid, Repository};

use super::persist::{Before, Record, RecordError, Redo, RedoChat, RedoCode};
use super::protocol::{Shown, ShownKind};
use super::timeline::TimelineTurn;
use super::turn_commits::TurnCommits;
use crate::context::CommandText;
use crate::git::{RedoError, UndoError};
use crate::llm::Message;
use crate::plural::count;

/// The parts of a session a rewind changes, lent by the live session or a saved one.
pub(crate) struct Parts<'a> {
    pub(crate) history: &'a mut Vec<Message>,
    pub(crate) notes: &'a mut Vec<String>,
    pub(crate) outputs: &'a mut Vec<CommandText>,
    pub(crate) transcript: &'a mut Vec<Shown>,
    /// Each turn's commits, for `/undo turn`.
    pub(crate) turns: &'a mut TurnCommits,
    /// The number of turns of the conversation now.
    pub(crate) turns_now: usize,
    /// Hunks await review: a rewind waits until they are decided.
    pub(crate) pending: bool,
}

/// Why a rewind or its redo did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("turns are numbered from 1, as the chat shows them")]
    Zero,
    #[error("{0}")]
    Record(#[from] RecordError),
    #[error(
        "hunks await review in this session: apply or reject them first (a rewind would leave them without the turn that proposed them)"
    )]
    Pending,
    #[error("choose what to rewind: the code, the conversation, or both")]
    Nothing,
    #[error("the code cannot be rewound: not in a git repository")]
    NoRepository,
    #[error("the code cannot be rewound: {0}")]
    Code(UndoError),
    /// What a command tern ran changed cannot be put back (or brought back).
    #[error("the files commands changed cannot be put back: {0}")]
    Commands(String),
    #[error("there is no rewind to redo (a message sent since ends it, as does a redo)")]
    NoRedo,
    #[error("the code cannot be redone: {0}")]
    Redo(RedoError),
}

/// A rewind done: what to record, what to keep for its redo, what to say, and what
/// the model is told with the next message (a code-only rewind's undone commits).
pub(crate) struct Rewound {
    pub(crate) records: Vec<Record>,
    pub(crate) redo: Option<Redo>,
    /// The number of turns of the conversation now (None: unchanged).
    pub(crate) renumbered: Option<usize>,
    pub(crate) commits: Vec<String>,
    pub(crate) said: String,
    /// The move of HEAD's journal and lock, dropped once the session is saved with
    /// `records` (None: HEAD did not move).
    pub(crate) held: Option<crate::git::Held>,
}

/// What `/rewind`'s arguments ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    Timeline,
    Redo,
    Rewind { to: usize, code: bool, chat: bool },
}

/// Reads `/rewind`'s arguments: nothing, `redo`, or a turn and `code` or `chat` (both
/// when neither).
pub fn parse_args(args: &str) -> Result<Asked, String> {
    let mut words = args.split_whitespace();
    let (Some(first), choice, None) = (words.next(), words.next(), words.next()) else {
        return match args.trim().is_empty() {
            true => Ok(Asked::Timeline),
            false => Err(USAGE.into()),
        };
    };
    if first == "redo" && choice.is_none() {
        return Ok(Asked::Redo);
    }
    let to = turn_number(first)?;
    let (code, chat) = match choice {
        None => (true, true),
        Some("code") => (true, false),
        Some("chat") => (false, true),
        Some(_) => return Err(USAGE.into()),
    };
    Ok(Asked::Rewind { to, code, chat })
}

const USAGE: &str = "/rewind takes nothing (the turns), `redo`, or a turn number and `code` or `chat` (both when neither): /rewind 3 code";

/// A turn number as typed: 1 or more.
pub fn turn_number(text: &str) -> Result<usize, String> {
    match text.parse::<i64>() {
        Ok(n) if n >= 1 => usize::try_from(n).map_err(|e| e.to_string()),
        Ok(_) => Err(RewindError::Zero.to_string()),
        Err(_) => Err(format!(
            "{text:?} is not a turn number (turns are numbered from 1, as the chat shows them)"
        )),
    }
}

/// The turns of the session, oldest first, each with what a rewind to before it would
/// change (`repo`: where the code is; None: not in a repository).
pub(crate) fn timeline(
    repo: Option<&Repository>,
    records: &[Record],
    turns_now: usize,
    cost_now: f64,
    pending: bool,
) -> Result<Vec<TimelineTurn>, RecordError> {
    let turns = crate::engine::persist::record::timeline(records)?;
    let mut shown = Vec::new();
    for (i, before) in turns.iter().enumerate() {
        let (own, cost) = crate::engine::persist::record::own_commits_and_cost(&turns, i, cost_now);
        let commits = code_commits(before);
        let (files, code_refused) = match repo {
            Some(repo) => (
                crate::git::files_of(repo, &commits)
                    .map(|files| files.iter().map(|f| f.display().to_string()).collect())
                    .unwrap_or_default(),
                code_refusal(repo, before),
            ),
            None => (Vec::new(), None),
        };
        shown.push(TimelineTurn {
            turn: before.turn,
            text: before.text.lines().next().unwrap_or_default().to_string(),
            at: before.at,
            commits: own.iter().map(|c| described(repo, c)).collect(),
            cost,
            turns_after: turns_now.saturating_sub(before.turn) + 1,
            commits_since: commits
                .iter()
                .map(|c| described(repo, &c.to_string()))
                .collect(),
            files_since: files,
            cost_since: before.cost_before.map(|c| (cost_now - c).max(0.0)),
            code_refused,
            refused: pending.then(|| RewindError::Pending.to_string()),
        });
    }
    Ok(shown)
}

/// What a redo of `redo` would put back, in a few words.
pub(crate) fn redo_text(redo: &Redo) -> String {
    let mut parts = Vec::new();
    if let Some(code) = &redo.code {
        parts.push(count(code.commits.len(), "commit"));
    }
    if let Some(chat) = &redo.chat {
        parts.push(format!(
            "the conversation ({})",
            count(chat.turns.saturating_sub(redo.to) + 1, "turn")
        ));
    }
    format!(
        "the rewind to before turn {}: {}",
        redo.to,
        match parts.is_empty() {
            true => "nothing".to_string(),
            false => parts.join(" and "),
        }
    )
}

/// `id summary`, or the short id alone when the commit cannot be read.
fn described(repo: Option<&Repository>, id: &str) -> String {
    let Ok(oid) = Oid::from_str(id) else {
        return id.to_string();
    };
    let short = crate::git::short_id(oid);
    match repo.and_then(|r| r.find_commit(oid).ok()) {
        Some(c) => format!(
            "{short} {}",
            String::from_utf8_lossy(c.summary_bytes().unwrap_or_default())
        ),
        None => short,
    }
}

/// The commits a code rewind to before `before` takes back, oldest first: tern's
/// commits since, less the user's own changes it committed first, when they come
/// before every edit of tern's (they are the user's work, and stay).
fn code_commits(before: &Before) -> Vec<Oid> {
    before
        .commits_since
        .iter()
        .skip_while(|c| before.yours.contains(c))
        .filter_map(|c| Oid::from_str(c).ok())
        .collect()
}

/// What a code rewind to before `before` takes back, after the checks it makes
/// before it changes anything but the commits' own: the commits (oldest first), each
/// command's swap (oldest first), and the files each command changed (newest first).
type CodePlan = (
    Vec<Oid>,
    Vec<(String, Oid, Oid)>,
    Vec<(String, Vec<std::path::PathBuf>)>,
);

fn code_plan(repo: &Repository, before: &Before) -> Result<CodePlan, RewindError> {
    // A move of HEAD a killed tern left half done is rolled back before HEAD is read.
    crate::git::recover(repo).map_err(|e| RewindError::Code(e.into()))?;
    let commits = code_commits(before);
    let swaps = swaps(&before.commands_since, true)?;
    let commit_files = crate::git::files_of(repo, &commits).map_err(RewindError::Code)?;
    let changed = check_commands(repo, swaps.iter().rev().cloned(), &commit_files)?;
    Ok((commits, swaps, changed))
}

/// Why a code rewind to before `before` would be refused now, checked in the order
/// the rewind checks (a listing's answer; changes nothing).
fn code_refusal(repo: &Repository, before: &Before) -> Option<String> {
    let checked = code_plan(repo, before).and_then(|(commits, _, _)| {
        crate::git::check_all(repo, &commits).map_err(RewindError::Code)
    });
    match checked {
        Ok(()) => None,
        Err(RewindError::Code(e)) => Some(e.to_string()),
        Err(e) => Some(e.to_string()),
    }
}

/// What taking back the code did.
struct CodeRewound {
    said: Vec<String>,
    commits: Vec<String>,
    /// The commands whose changes were put back (their `after` trees).
    commands: Vec<String>,
    redo: Option<RedoCode>,
    /// What the model is told of the commits taken back (a code-only rewind).
    note: Option<String>,
    /// The move's journal and lock, until the session is saved.
    held: Option<crate::git::Held>,
}

/// Takes back the code since `before`: first every check (the commits' as undo
/// checks them; each file a command changed must hold what the command left, and be
/// no file of a commit taken back), then the commits, newest first, then what the
/// commands changed, newest first.
fn rewind_code(
    repo: &Repository,
    before: &Before,
    chat: bool,
    turns: &mut TurnCommits,
) -> Result<CodeRewound, RewindError> {
    let (commits, swaps, changed) = code_plan(repo, before)?;
    let head = repo.head().ok().and_then(|h| h.target());
    let (undone, held) = crate::git::undo_since(repo, &commits).map_err(RewindError::Code)?;
    let mut said = Vec::new();
    let mut note = None;
    let head_now = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map(|h| h.to_string());
    if undone.is_empty() && before.head.is_some() && before.head != head_now {
        // Not silent: the code did change since, but the record knows of no commit
        // of tern's that made it (the user's own, or a record cut short).
        said.push(format!(
            "code: HEAD moved since the turn began ({} to {}), but the record holds no commit of tern's since then, so none was taken back",
            short(before.head.as_deref()),
            short(head_now.as_deref())
        ));
    } else if undone.is_empty() {
        said.push("code: no commit of tern's since then is left to take back".into());
    } else {
        said.push(format!("code: {}", count(undone.len(), "commit")));
        said.extend(undone.iter().map(ToString::to_string));
        if !chat {
            note = Some(super::undo_commits::turn_note(repo, &undone));
        }
    }
    for ((_, now, wanted), (command, files)) in swaps.iter().rev().zip(&changed) {
        crate::git::swap_files(repo, *now, *wanted)
            .map_err(|e| RewindError::Commands(e.to_string()))?;
        said.push(format!(
            "put back what `{command}` changed: {}",
            listed(files)
        ));
    }
    let head = head.map(|h| h.to_string()).unwrap_or_default();
    let redo = (!undone.is_empty() || !swaps.is_empty()).then(|| RedoCode {
        at: undone
            .last()
            .map_or(head.clone(), |last| last.head.to_string()),
        head,
        commits: commits.iter().map(Oid::to_string).collect(),
        turns: turns.clone(),
        note: note.clone(),
        commands: before.commands_since.clone(),
    });
    let gone: Vec<Oid> = undone.iter().map(|u| u.commit).collect();
    turns.undone(&gone);
    Ok(CodeRewound {
        said,
        commits: gone.iter().map(Oid::to_string).collect(),
        commands: before
            .commands_since
            .iter()
            .map(|r| r.after.clone())
            .collect(),
        redo,
        note,
        held,
    })
}

/// Each command with the trees to swap its files between: from after it to before it
/// (`back`, a rewind), or the other way (a redo). Oldest first.
fn swaps(
    ran: &[crate::engine::persist::record::Ran],
    back: bool,
) -> Result<Vec<(String, Oid, Oid)>, RewindError> {
    let oid = |id: &str| Oid::from_str(id).map_err(|e| RewindError::Commands(e.to_string()));
    ran.iter()
        .map(|r| {
            let (before, after) = (oid(&r.before)?, oid(&r.after)?);
            Ok(match back {
                true => (r.command.clone(), after, before),
                false => (r.command.clone(), before, after),
            })
        })
        .collect()
}

/// A commit id as `git log --oneline` shows it (`none`: no commit).
fn short(id: Option<&str>) -> String {
    id.and_then(|id| Oid::from_str(id).ok())
        .map_or("none".into(), crate::git::short_id)
}

/// `a, b, c`.
fn listed(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that commands' changes can be swapped, in the order given (a command and
/// its `now` and `wanted` trees): each file's first swap finds it as `now` has it, and none is a file of
/// `commit_files` (what a commit taken back also changed cannot be told apart).
/// Returns each command's files, in the order given.
fn check_commands(
    repo: &Repository,
    swaps: impl Iterator<Item = (String, Oid, Oid)>,
    commit_files: &[std::path::PathBuf],
) -> Result<Vec<(String, Vec<std::path::PathBuf>)>, RewindError> {
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    let mut all = Vec::new();
    for (command, now, wanted) in swaps {
        let files = crate::git::changed(repo, now, wanted)
            .map_err(|e| RewindError::Commands(e.to_string()))?;
        if let Some(both) = files.iter().find(|f| commit_files.contains(f)) {
            return Err(RewindError::Commands(format!(
                "{} was changed by a command tern ran and by a commit it takes back, so the two cannot be told apart",
                both.display()
            )));
        }
        let first: Vec<std::path::PathBuf> = files
            .iter()
            .filter(|f| !seen.contains(f))
            .cloned()
            .collect();
        crate::git::not_changed_since(repo, now, &first)
            .map_err(|e| RewindError::Commands(e.to_string()))?;
        seen.extend(first);
        all.push((command, files));
    }
    Ok(all)
}

/// Rewinds to before turn `to`: the code when `code` (refused, with nothing changed,
/// as `/undo` refuses), then the conversation when `chat`.
pub(crate) fn rewind(
    repo: Option<&Repository>,
    records: &[Record],
    to: usize,
    (code, chat): (bool, bool),
    parts: Parts<'_>,
) -> Result<Rewound, RewindError> {
    let turns = parts.turns.clone();
    let step = code_step(repo, records, to, (code, chat), parts.pending, turns)?;
    Ok(finish(step, to, chat, parts))
}

/// A rewind up to the conversation: the checks, the turn's record, and the code taken
/// back. The engine runs it as a job, off its loop (git, and the wait for the record).
pub(crate) struct CodeStep {
    before: Before,
    code: Option<CodeRewound>,
    /// Each turn's commits, less those taken back.
    turns: TurnCommits,
}

/// The first part of `rewind`, on a copy of the turns' commits (`turns`).
pub(crate) fn code_step(
    repo: Option<&Repository>,
    records: &[Record],
    to: usize,
    (code, chat): (bool, bool),
    pending: bool,
    mut turns: TurnCommits,
) -> Result<CodeStep, RewindError> {
    if to == 0 {
        return Err(RewindError::Zero);
    }
    if !code && !chat {
        return Err(RewindError::Nothing);
    }
    let before = crate::engine::persist::before_turn(records, to)?;
    if pending {
        return Err(RewindError::Pending);
    }
    let code = match code {
        true => {
            let repo = repo.ok_or(RewindError::NoRepository)?;
            Some(rewind_code(repo, &before, chat, &mut turns)?)
        }
        false => None,
    };
    Ok(CodeStep {
        before,
        code,
        turns,
    })
}

/// The rest of `rewind`, on the session's parts: the conversation when `chat`.
pub(crate) fn finish(step: CodeStep, to: usize, chat: bool, parts: Parts<'_>) -> Rewound {
    let CodeStep {
        before,
        code,
        turns,
    } = step;
    *parts.turns = turns;
    let mut said = vec![format!("rewound to before turn {to}")];
    let mut redo = Redo {
        to,
        code: None,
        chat: None,
    };
    let mut undone_ids = Vec::new();
    let mut commands = Vec::new();
    let mut note = None;
    let mut held = None;
    if let Some(code) = code {
        held = code.held;
        said.extend(code.said);
        (undone_ids, commands, note) = (code.commits, code.commands, code.note);
        redo.code = code.redo;
    }
    let mut renumbered = None;
    if chat {
        let taken = parts.turns_now.saturating_sub(to) + 1;
        redo.chat = Some(RedoChat {
            turns: parts.turns_now,
            history: std::mem::replace(parts.history, before.history),
            notes: std::mem::replace(parts.notes, before.notes),
            outputs: std::mem::replace(parts.outputs, before.outputs),
            transcript: parts.transcript.clone(),
        });
        if let Some(at) = parts
            .transcript
            .iter()
            .rposition(|s| s.kind == ShownKind::User && s.text == before.text)
        {
            parts.transcript.truncate(at);
        }
        renumbered = Some(to - 1);
        said.push(format!(
            "conversation: {} taken back; the history, the notes owed to the model and the command outputs are as they were before turn {to}",
            count(taken, "turn")
        ));
    } else {
        said.push("conversation: unchanged".into());
    }
    if let Some(note) = note {
        parts.notes.push(note);
    }
    Rewound {
        records: vec![Record::Rewound {
            to,
            commits: undone_ids.clone(),
            commands,
            chat,
        }],
        redo: Some(redo),
        renumbered,
        commits: undone_ids,
        said: said.join("\n"),
        held,
    }
}

/// Puts back what the last rewind (`redo`) took away: its commits, by moving HEAD back
/// to where the rewind found it (refused, with nothing changed, when anything moved
/// since), then the conversation.
pub(crate) fn redo(
    repo: Option<&Repository>,
    redo: Option<Redo>,
    parts: Parts<'_>,
) -> Result<Rewound, RewindError> {
    let redo = redo.ok_or(RewindError::NoRedo)?;
    let mut said = vec![format!("redone: the rewind to before turn {}", redo.to)];
    let mut commits = Vec::new();
    let mut commands = Vec::new();
    let mut held = None;
    if let Some(code) = &redo.code {
        let repo = repo.ok_or(RewindError::NoRepository)?;
        let oid =
            |id: &str| Oid::from_str(id).map_err(|e| RewindError::Redo(RedoError::Undo(e.into())));
        let swaps = swaps(&code.commands, false)?;
        check_commands(repo, swaps.iter().cloned(), &[])?;
        let files = match code.at == code.head {
            true => Vec::new(),
            false => {
                let (files, journal) =
                    crate::git::redo_rewind(repo, oid(&code.at)?, oid(&code.head)?)
                        .map_err(RewindError::Redo)?;
                held = Some(journal);
                files
            }
        };
        for (command, now, wanted) in &swaps {
            let changed = crate::git::swap_files(repo, *now, *wanted)
                .map_err(|e| RewindError::Commands(e.to_string()))?;
            said.push(format!(
                "`{command}`'s changes are back: {}",
                listed(&changed)
            ));
        }
        commands = code.commands.iter().map(|r| r.after.clone()).collect();
        commits.clone_from(&code.commits);
        *parts.turns = code.turns.clone();
        // The model is no longer told of commits that are back.
        parts.notes.retain(|n| Some(n) != code.note.as_ref());
        if !files.is_empty() {
            said.push(format!(
                "code: {} back ({}), HEAD is {} again",
                count(code.commits.len(), "commit"),
                listed(&files),
                code.head.get(..7).unwrap_or(&code.head)
            ));
        }
    }
    let mut renumbered = None;
    if let Some(chat) = redo.chat.clone() {
        *parts.history = chat.history;
        *parts.notes = chat.notes;
        *parts.outputs = chat.outputs;
        *parts.transcript = chat.transcript;
        renumbered = Some(chat.turns);
        said.push(format!(
            "conversation: back as it was, {}",
            count(chat.turns, "turn")
        ));
    }
    Ok(Rewound {
        records: vec![Record::Redone {
            commits: commits.clone(),
            commands,
            chat: redo.chat.is_some(),
        }],
        redo: None,
        renumbered,
        commits,
        said: said.join("\n"),
        held,
    })
}

/// What `tern rewind` did to a saved session.
pub enum SavedOutcome {
    /// The turns, and what a redo would put back.
    Listed(Vec<TimelineTurn>, Option<String>),
    /// A rewind or a redo, as said.
    Done(String),
}

/// Why `tern rewind` changed nothing, or could not keep what it changed.
#[derive(Debug, thiserror::Error)]
pub enum SavedRewindError {
    /// The session is open in another tern, which can rewind it itself.
    #[error("{0}, or rewind in it (`/rewind`); nothing was changed")]
    InUse(crate::engine::persist::StoreError),
    #[error("{0}; nothing was changed")]
    Open(super::undo_commits::OpenStateError),
    #[error("{0}; nothing was changed")]
    Rewind(RewindError),
    /// Done (`said`), but the session could not be saved.
    #[error(
        "{said}\nbut session {id} could not be updated, so its conversation still says otherwise: {error}"
    )]
    NotSaved {
        said: String,
        id: String,
        error: crate::engine::persist::PersistError,
    },
}

/// `tern rewind` on the saved session `which` names: `asked` (`Asked::Timeline`
/// lists the turns). The session is locked while it runs (one open in a tern is
/// refused), and saved with the record of what was done.
pub fn on_saved(
    repo: Option<&Repository>,
    root: &std::path::Path,
    which: &crate::engine::persist::Resume,
    asked: Asked,
) -> Result<SavedOutcome, SavedRewindError> {
    use super::undo_commits::{OpenStateError, open, open_state};
    let store = crate::engine::persist::Store::for_repo(root);
    let session = open(&store, which).map_err(|e| match e {
        OpenStateError::InUse(e) => SavedRewindError::InUse(e),
        e => SavedRewindError::Open(e),
    })?;
    let (mut disk, mut state) = open_state(session).map_err(SavedRewindError::Open)?;
    let id = disk.id().to_string();
    let records = disk
        .records()
        .map_err(|e| SavedRewindError::Rewind(e.into()))?;
    let pending = state.proposal.is_some();
    let turns_now = state.record.turns;
    let redo_state = state.redo.clone();
    let parts = Parts {
        history: &mut state.history,
        notes: &mut state.notes,
        outputs: &mut state.outputs,
        transcript: &mut state.transcript,
        turns: &mut state.turns,
        turns_now,
        pending,
    };
    let done = match asked {
        Asked::Timeline => {
            let turns = timeline(repo, &records, turns_now, state.session_cost, pending)
                .map_err(|e| SavedRewindError::Rewind(e.into()))?;
            return Ok(SavedOutcome::Listed(
                turns,
                state.redo.as_ref().map(redo_text),
            ));
        }
        Asked::Redo => redo(repo, redo_state, parts),
        Asked::Rewind { to, code, chat } => rewind(repo, &records, to, (code, chat), parts),
    };
    let mut done = done.map_err(SavedRewindError::Rewind)?;
    // Kept until the session records the move: a kill before then leaves its journal,
    // and the next tern rolls the code back to match the session. Dropped after a
    // failed save too: the code stays rewound, and that is said (`NotSaved`).
    let held = done.held.take();
    state.redo = done.redo;
    if let Some(turns) = done.renumbered {
        state.record.turns = turns;
        state.summary_at_front = false;
        state.checkpoint = None;
    }
    let saved = disk.save(&mut state, done.records);
    drop(held);
    if let Err(error) = saved {
        return Err(SavedRewindError::NotSaved {
            said: done.said,
            id,
            error,
        });
    }
    Ok(SavedOutcome::Done(done.said))
}
