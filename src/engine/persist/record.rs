//! The turn record: what each turn of a session started from and what it made,
//! appended to the session's directory as the session goes, so that a rewind can bring
//! back the conversation as it was before any turn (the history, the notes owed to the
//! model, the command outputs in the context), even across summaries made later, and
//! find every commit made since; and so that an editor can be replayed the
//! conversation (ACP's `session/load`).
//!
//! One JSON object a line, each with its `kind`:
//!
//! - `turn`: turn N begins. Turns are the messages you send to the model, numbered from
//!   1 as the chat shows them (a message in either mode, a question asked again with
//!   the files it needed, `/review`); the reflections and test-fix rounds tern sends by
//!   itself belong to the turn they follow. It holds when (`at`, Unix seconds), the mode,
//!   the `text` as typed, and the conversation before it: `messages_before` (how many
//!   messages had joined the history in the whole session), the `notes` owed to the
//!   model, the command `outputs` in the context and the history's `front` (what the
//!   history held before its verbatim messages from index `from` on: a summary and its
//!   acknowledgement, the note that turns were forgotten, or nothing). `outputs` and
//!   `front` are left out when they are as in the turn before (never in the first turn
//!   a process records, nor the first of a segment). `head`: the commit checked out.
//! - `messages`: messages that joined the history, verbatim (a request and its reply),
//!   with the request's kind (`user`, `reflection`, `fix`, `review`) and its turn.
//! - `commit`: a commit tern made, with the turn whose edits it holds (`yours`: your
//!   own uncommitted changes, which tern commits before its edits).
//! - `undone`: commits taken back (`/undo`, `/undo turn`, `tern undo`).
//! - `ran`: a command tern ran (`/run`, `/test`, `/lint`, an auto-test round) changed
//!   files: the trees of the work tree `before` and `after` it (`git::snapshot`).
//! - `rewound`: a rewind to before turn `to`: the `commits` it took back (the code),
//!   and whether the conversation went back too (`chat`), after which the turns are
//!   numbered again from `to`: the newest turn of a number is the one that counts.
//! - `redone`: a rewind's redo: its commits are back (the same ids), and with `chat`
//!   the conversation and the numbering as they were before it.
//!
//! The history before turn N is its `front.messages` followed by the messages numbered
//! `front.from .. messages_before` (numbering every message of the `messages` records
//! from 0); the commits made since are those recorded after it, less those undone or
//! rewound and not redone (`before_turn`). A turn also keeps the session's cost before
//! it (`cost_before`), so that a turn's cost is the difference to the next. The record is appended, never rewritten, so a save writes only what
//! is new. It is kept in segments (`turns-1.jsonl`, `turns-2.jsonl`, …) of about
//! `SEGMENT_BYTES`, each after the first starting with a turn; beyond `SEGMENTS` of
//! them the oldest is deleted, so the record keeps the newest turns within about
//! 64 MiB. `state.json` says how far the record is complete (`log`): a save appends,
//! then writes the state, and what a crash left beyond that is cut off when the session
//! is opened next.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::context::CommandText;
use crate::edit::prompts::Mode as ChatMode;
use crate::llm::Message;

/// A segment is closed at the first turn after it reaches this size.
pub const SEGMENT_BYTES: u64 = 8 * 1024 * 1024;
/// The most segments kept; the oldest goes when a new one would pass this.
pub const SEGMENTS: u32 = 8;

/// One line of the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Turn(TurnStart),
    Messages(Joined),
    Commit {
        turn: usize,
        commit: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        yours: bool,
    },
    Undone {
        commits: Vec<String>,
    },
    Ran(Ran),
    Rewound {
        to: usize,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commits: Vec<String>,
        /// The commands whose changes it put back (their `after` trees).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commands: Vec<String>,
        chat: bool,
    },
    Redone {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commits: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commands: Vec<String>,
        chat: bool,
    },
}

/// A command tern ran changed files: the work tree's trees before and after it
/// (`git::snapshot`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ran {
    pub turn: usize,
    pub command: String,
    pub before: String,
    pub after: String,
}

/// A turn begins, and the conversation as it was before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnStart {
    pub turn: usize,
    pub at: u64,
    pub mode: ChatMode,
    pub text: String,
    pub messages_before: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// None: as in the turn before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<CommandText>>,
    /// None: as in the turn before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front: Option<Front>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The session's cost before the turn, in dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_before: Option<f64>,
}

/// The history is `messages` followed by the verbatim messages from index `from` on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Front {
    pub messages: Vec<Message>,
    pub from: usize,
}

/// Messages that joined the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Joined {
    pub turn: usize,
    pub request: Request,
    pub messages: Vec<Message>,
}

/// Who sent the request whose messages joined the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Your message.
    User,
    /// Failed edit blocks sent back to the model.
    Reflection,
    /// A failing test or lint run sent to the model to fix.
    Fix,
    /// `/review`.
    Review,
}

/// Where the recording stands, saved in `state.json` (`record`): the history is its
/// first `front` messages followed by the verbatim messages numbered `from ..
/// messages`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    /// Turns begun: the number of the last.
    pub turns: usize,
    /// Messages that joined the history.
    pub messages: usize,
    pub front: usize,
    pub from: usize,
}

/// How far the record on disk is complete (`state.json`'s `log`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogPosition {
    pub segment: u32,
    pub bytes: u64,
}

impl Default for LogPosition {
    fn default() -> Self {
        LogPosition {
            segment: 1,
            bytes: 0,
        }
    }
}

/// The engine's side: what happened since the last save, as records, and the cursor.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    cursor: Cursor,
    /// The front and outputs the record last gave in this process (none yet: the next
    /// turn gives them).
    front: Option<Front>,
    outputs: Option<Vec<CommandText>>,
    unsaved: Vec<Record>,
}

impl Recorder {
    /// Recording goes on from a saved cursor.
    pub(crate) fn resumed(cursor: Cursor) -> Self {
        Recorder {
            cursor,
            ..Recorder::default()
        }
    }

    pub(crate) fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// The number of the turn under way (0 before the first).
    pub(crate) fn turn(&self) -> usize {
        self.cursor.turns
    }

    /// Turn N+1 begins with `history`, `notes` and `outputs` as they are. Returns its
    /// number.
    pub(crate) fn begin(
        &mut self,
        history: &[Message],
        turn: (&str, ChatMode),
        notes: &[String],
        outputs: &[CommandText],
        (head, cost_before): (Option<String>, f64),
    ) -> usize {
        let c = &mut self.cursor;
        // A process's first turn gives the whole history as its front, so that what
        // this process records never leans on messages recorded before it. And should
        // the cursor ever lose track of the history, the record starts again from the
        // history as it is, which stays true.
        if self.front.is_none()
            || c.front + c.messages.saturating_sub(c.from) != history.len()
            || c.from > c.messages
        {
            c.front = history.len();
            c.from = c.messages;
        }
        let front = Front {
            messages: history.get(..c.front).unwrap_or_default().to_vec(),
            from: c.from,
        };
        let front = (self.front.as_ref() != Some(&front)).then(|| {
            self.front = Some(front.clone());
            front
        });
        let outputs = (self.outputs.as_deref() != Some(outputs)).then(|| {
            self.outputs = Some(outputs.to_vec());
            outputs.to_vec()
        });
        c.turns += 1;
        self.unsaved.push(Record::Turn(TurnStart {
            turn: c.turns,
            at: super::now_ms() / 1000,
            mode: turn.1,
            text: turn.0.to_string(),
            messages_before: c.messages,
            notes: notes.to_vec(),
            outputs,
            front,
            head,
            cost_before: Some(cost_before),
        }));
        c.turns
    }

    /// The conversation was rewound (or a rewind redone) to `turns` turns: the next
    /// turn is numbered after them and gives the history whole, as a process's first
    /// does.
    pub(crate) fn renumbered(&mut self, turns: usize) {
        self.cursor.turns = turns;
        (self.front, self.outputs) = (None, None);
    }

    /// `messages` joined the end of the history.
    pub(crate) fn joined(&mut self, request: Request, messages: &[Message]) {
        self.cursor.messages += messages.len();
        self.unsaved.push(Record::Messages(Joined {
            turn: self.cursor.turns,
            request,
            messages: messages.to_vec(),
        }));
    }

    /// The history's first `replaced` messages became `front` new ones (a summary, the
    /// note that turns were forgotten).
    pub(crate) fn replaced_front(&mut self, replaced: usize, front: usize) {
        let c = &mut self.cursor;
        if replaced >= c.front {
            c.from += replaced - c.front;
            c.front = front;
        } else {
            c.front = front + (c.front - replaced);
        }
    }

    /// The history was cleared.
    pub(crate) fn cleared(&mut self) {
        self.cursor.front = 0;
        self.cursor.from = self.cursor.messages;
    }

    /// Tern committed `commit` for `turn`'s edits (`yours`: the user's own changes).
    pub(crate) fn committed(&mut self, turn: usize, commit: String, yours: bool) {
        self.unsaved.push(Record::Commit {
            turn,
            commit,
            yours,
        });
    }

    /// A command tern ran during the current turn changed files.
    pub(crate) fn ran(&mut self, command: String, (before, after): (String, String)) {
        self.unsaved.push(Record::Ran(Ran {
            turn: self.cursor.turns,
            command,
            before,
            after,
        }));
    }

    /// A rewind or its redo (`Record::Rewound`, `Record::Redone`).
    pub(crate) fn rewound(&mut self, records: Vec<Record>) {
        self.unsaved.extend(records);
    }

    pub(crate) fn undone(&mut self, commits: Vec<String>) {
        if !commits.is_empty() {
            self.unsaved.push(Record::Undone { commits });
        }
    }

    /// The records not saved yet.
    pub(crate) fn take(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.unsaved)
    }
}

/// Where a record stood (`LogWriter::mark`).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    at: LogPosition,
    base: Option<usize>,
}

/// Appends records to a session's record on disk, segment by segment.
#[derive(Debug)]
pub struct LogWriter {
    dir: PathBuf,
    at: LogPosition,
    /// A segment is closed at the first turn after it reaches this size.
    segment_bytes: u64,
    /// The number of the first message the current segment's turns may lean on (None:
    /// it has no turn yet). A turn that leans on earlier ones is written whole, so
    /// that every segment can be read without those before it.
    base: Option<usize>,
    /// What this process wrote, to make a turn whole: the last front and outputs
    /// given, and the messages since the front's `from` (None once they are not all
    /// known: nothing this process wrote came before them).
    front: Option<Front>,
    outputs: Option<Vec<CommandText>>,
    tail: Option<Vec<Message>>,
}

impl LogWriter {
    /// The record of the session in `dir`, complete up to `at` (from its state): what a
    /// crash left beyond that is cut off, and later segments removed.
    pub(crate) fn recover(dir: &Path, at: LogPosition) -> std::io::Result<LogWriter> {
        let mut at = at;
        let path = segment_path(dir, at.segment);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.len() > at.bytes => {
                let file = std::fs::OpenOptions::new().write(true).open(&path)?;
                file.set_len(at.bytes)?;
                file.sync_all()?;
            }
            // Shorter than the state says (someone cut it): go on from its end.
            Ok(meta) => at.bytes = meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => at.bytes = 0,
            Err(e) => return Err(e),
        }
        for (n, later) in segments(dir)? {
            if n > at.segment {
                std::fs::remove_file(later)?;
            }
        }
        let base = match at.segment {
            1 => Some(0),
            _ => first_turn(&path).map(|t| t.messages_before),
        };
        Ok(LogWriter {
            dir: dir.to_path_buf(),
            at,
            segment_bytes: SEGMENT_BYTES,
            base,
            front: None,
            outputs: None,
            tail: None,
        })
    }

    pub fn position(&self) -> LogPosition {
        self.at
    }

    /// Appends `records` (each made a line by `encode`) and syncs them to disk. A turn
    /// that begins once the segment is full begins the next one; the oldest segment
    /// goes when there are more than `SEGMENTS`.
    pub fn append(
        &mut self,
        records: Vec<Record>,
        encode: impl Fn(&Record) -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<LogPosition> {
        let mark = self.mark();
        let appended = self.append_all(records, encode);
        if appended.is_err() {
            self.back_to(mark);
        }
        appended
    }

    /// Where the record stands now, to go back to if what follows fails.
    pub fn mark(&self) -> Mark {
        Mark {
            at: self.at,
            base: self.base,
        }
    }

    /// Nothing written since `mark` counts: the disk goes back to where it was, and
    /// what this process knew of earlier turns is forgotten (the next turn, written
    /// whole, cannot lean on it).
    pub(crate) fn back_to(&mut self, mark: Mark) {
        self.cut_back(mark.at);
        self.base = mark.base;
        (self.front, self.outputs, self.tail) = (None, None, None);
    }

    /// Removes what was written after `at`.
    fn cut_back(&mut self, at: LogPosition) {
        for (n, later) in segments(&self.dir).unwrap_or_default() {
            if n > at.segment {
                let _ = std::fs::remove_file(later);
            }
        }
        if let Ok(file) = std::fs::OpenOptions::new()
            .write(true)
            .open(segment_path(&self.dir, at.segment))
        {
            let _ = file.set_len(at.bytes);
        }
        self.at = at;
    }

    fn append_all(
        &mut self,
        records: Vec<Record>,
        encode: impl Fn(&Record) -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<LogPosition> {
        let mut lines = Vec::new();
        for mut record in records {
            match &mut record {
                Record::Turn(turn) => {
                    if self.at.bytes + lines.len() as u64 >= self.segment_bytes {
                        self.write(&lines)?;
                        lines.clear();
                        self.at = LogPosition {
                            segment: self.at.segment + 1,
                            bytes: 0,
                        };
                        self.base = None;
                    }
                    let base = *self.base.get_or_insert(turn.messages_before);
                    self.follow(turn);
                    let leans_on = self.front.as_ref().map(|f| f.from);
                    if base == turn.messages_before || leans_on.is_some_and(|from| from < base) {
                        self.make_whole(turn);
                    }
                }
                Record::Messages(joined) => {
                    if let Some(tail) = &mut self.tail {
                        tail.extend(joined.messages.iter().cloned());
                    }
                }
                Record::Commit { .. }
                | Record::Ran(_)
                | Record::Undone { .. }
                | Record::Rewound { .. }
                | Record::Redone { .. } => {}
            }
            lines.extend(encode(&record)?);
            lines.push(b'\n');
        }
        self.write(&lines)?;
        // An old segment that cannot be deleted now goes at the next save.
        for (n, old) in segments(&self.dir).unwrap_or_default() {
            if n + SEGMENTS <= self.at.segment {
                let _ = std::fs::remove_file(old);
            }
        }
        Ok(self.at)
    }

    /// Gives `turn` its whole history as its front, and the outputs before it, where
    /// this process knows them (always after its own first turn, which is whole), so
    /// that it leans on no earlier segment.
    fn make_whole(&self, turn: &mut TurnStart) {
        if turn.outputs.is_none() {
            turn.outputs.clone_from(&self.outputs);
        }
        if let (Some(front), Some(tail)) = (&self.front, &self.tail)
            && front.from + tail.len() == turn.messages_before
        {
            turn.front = Some(Front {
                messages: front.messages.iter().chain(tail).cloned().collect(),
                from: turn.messages_before,
            });
        }
    }

    /// Follows the front and outputs as the engine gives them (never as made whole
    /// here: the engine's later fronts count from its own), with the messages since.
    fn follow(&mut self, turn: &TurnStart) {
        if let Some(outputs) = &turn.outputs {
            self.outputs = Some(outputs.clone());
        }
        let Some(front) = &turn.front else {
            return;
        };
        // The messages from the new front's `from` on, if this process has them all.
        self.tail = match (self.front.take(), self.tail.take()) {
            _ if front.from == turn.messages_before => Some(Vec::new()),
            (Some(old), Some(mut tail)) if old.from <= front.from => {
                let gone = front.from - old.from;
                (gone <= tail.len()).then(|| tail.split_off(gone))
            }
            _ => None,
        };
        self.front = Some(front.clone());
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        // The user's alone, as `state.json` is (a temporary file's mode).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(segment_path(&self.dir, self.at.segment))?;
        #[cfg(test)]
        if super::failpoint::met(&self.dir, super::failpoint::Step::Record) {
            file.write_all(bytes.get(..bytes.len() / 2).unwrap_or_default())?;
            return Err(super::failpoint::disk_full());
        }
        file.write_all(bytes)?;
        file.sync_data()?;
        self.at.bytes += bytes.len() as u64;
        Ok(())
    }
}

/// The first turn of the segment at `path`, if it has one.
fn first_turn(path: &Path) -> Option<TurnStart> {
    let file = crate::regular_file::open(path).ok()?;
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(file), &mut line).ok()?;
    match serde_json::from_str(&line).ok()? {
        Record::Turn(turn) => Some(turn),
        _ => None,
    }
}

pub(super) fn segment_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("turns-{n}.jsonl"))
}

/// The record's segments in `dir`, oldest first.
fn segments(dir: &Path) -> std::io::Result<Vec<(u32, PathBuf)>> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let n = name
                .to_str()?
                .strip_prefix("turns-")?
                .strip_suffix(".jsonl")?
                .parse()
                .ok()?;
            Some((n, entry.path()))
        })
        .collect();
    found.sort();
    Ok(found)
}

/// Why the record cannot say something.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read the turn record: {0}")]
    Read(#[from] std::io::Error),
    #[error("the turn record's line {line} in {path} is damaged: {message}")]
    Damaged {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("turn {0} is not in the record ({1})")]
    NoTurn(usize, String),
    #[error(
        "the conversation before turn {0} is no longer in the record (its oldest part was dropped to keep it within its bound)"
    )]
    Dropped(usize),
}

/// The session's record in `dir`, oldest first (read while the session is open, so
/// that it is complete).
pub fn read(dir: &Path) -> Result<Vec<Record>, RecordError> {
    let mut records = Vec::new();
    for (_, path) in segments(dir)? {
        let text = crate::regular_file::read_to_string(&path, crate::regular_file::MAX_TEXT_BYTES)?;
        for (i, line) in text.lines().enumerate() {
            let record = serde_json::from_str(line).map_err(|e| RecordError::Damaged {
                path: path.clone(),
                line: i + 1,
                message: e.to_string(),
            })?;
            records.push(record);
        }
    }
    Ok(records)
}

/// The session as it was when turn N began, and what happened to the code since.
#[derive(Debug, Clone, PartialEq)]
pub struct Before {
    pub turn: usize,
    /// The message that began it, as typed, and when (Unix seconds).
    pub text: String,
    pub at: u64,
    /// The session's cost before it (None: recorded by a tern that did not keep it).
    pub cost_before: Option<f64>,
    /// The session's cost when the next turn began after it, kept or rewound since
    /// (None: none has begun, or it did not keep its cost): where its own cost ends.
    pub cost_after: Option<f64>,
    pub history: Vec<Message>,
    pub notes: Vec<String>,
    pub outputs: Vec<CommandText>,
    /// The commit checked out when it began.
    pub head: Option<String>,
    /// The commits tern made since it began and that were not undone, oldest first.
    pub commits_since: Vec<String>,
    /// Those of them that hold the user's own changes, committed before tern's edits.
    pub yours: Vec<String>,
    /// The commands tern ran since that changed files, not put back, oldest first.
    pub commands_since: Vec<Ran>,
}

/// What the session was before turn `turn` (1-based), from its record: the newest
/// turn of that number, while the conversation has not been rewound past it.
pub fn before_turn(records: &[Record], turn: usize) -> Result<Before, RecordError> {
    let scan = scan(records, turn)?;
    match scan.found {
        Some(found) if turn <= scan.current => Ok(found),
        _ => {
            let have = match scan.first {
                Some(first) if first <= scan.current => {
                    format!("it has turns {first} to {}", scan.current)
                }
                _ => "it has no turn".to_string(),
            };
            match scan.first {
                Some(first) if turn < first && turn > 0 => Err(RecordError::Dropped(turn)),
                _ => Err(RecordError::NoTurn(turn, have)),
            }
        }
    }
}

/// The turns of the conversation as it is now, oldest first, with the commits each
/// made since each began (`own_commits_and_cost` splits them by turn). Turns whose
/// start the record no longer has are left out.
pub fn timeline(records: &[Record]) -> Result<Vec<Before>, RecordError> {
    let scan = scan(records, 0)?;
    let Some(first) = scan.first else {
        return Ok(Vec::new());
    };
    let mut turns: Vec<Before> = Vec::new();
    for n in first..=scan.current {
        match before_turn(records, n) {
            Ok(before) => turns.push(before),
            Err(RecordError::Dropped(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(turns)
}

/// A turn of a timeline: what it made alone (its `commits_since` less the next
/// turn's) and what it cost (to the next turn's start, or to `cost_now`).
pub fn own_commits_and_cost(
    turns: &[Before],
    i: usize,
    cost_now: f64,
) -> (Vec<String>, Option<f64>) {
    let Some(turn) = turns.get(i) else {
        return (Vec::new(), None);
    };
    let next = turns.get(i + 1);
    let commits = turn
        .commits_since
        .iter()
        .filter(|c| next.is_none_or(|n| !n.commits_since.contains(c)))
        .cloned()
        .collect();
    let until = turn
        .cost_after
        .or_else(|| next.map_or(Some(cost_now), |n| n.cost_before));
    let cost = turn
        .cost_before
        .zip(until)
        .map(|(from, to)| (to - from).max(0.0));
    (commits, cost)
}

/// What one pass over the record found: the newest start of the turn asked for, the
/// first turn the record has, and the number of the last turn of the conversation as
/// it is now.
struct Scan {
    found: Option<Before>,
    first: Option<usize>,
    current: usize,
}

fn scan(records: &[Record], turn: usize) -> Result<Scan, RecordError> {
    // The number of the first message the record still has.
    let base = match records.first() {
        Some(Record::Turn(t)) => t.messages_before,
        _ => 0,
    };
    let mut messages: Vec<&Message> = Vec::new();
    let mut front: Option<&Front> = None;
    let mut outputs: Option<&[CommandText]> = None;
    let mut found: Option<Before> = None;
    // Commits of `found` taken back, and commands whose changes were put back, which
    // a redo may bring back.
    let mut removed: Vec<String> = Vec::new();
    let mut put_back: Vec<Ran> = Vec::new();
    let mut first = None;
    let mut current = 0;
    // The number of turns before each chat rewind not yet redone.
    let mut rewinds: Vec<usize> = Vec::new();
    for record in records {
        match record {
            Record::Turn(t) => {
                first.get_or_insert(t.turn);
                current = t.turn;
                front = t.front.as_ref().or(front);
                outputs = t.outputs.as_deref().or(outputs);
                if t.turn != turn {
                    if let Some(before) = found.as_mut().filter(|b| b.cost_after.is_none()) {
                        before.cost_after = t.cost_before;
                    }
                    continue;
                }
                let (Some(front), Some(outputs)) = (front, outputs) else {
                    return Err(RecordError::Dropped(turn));
                };
                let verbatim = front
                    .from
                    .checked_sub(base)
                    .and_then(|from| messages.get(from..t.messages_before.checked_sub(base)?))
                    .ok_or(RecordError::Dropped(turn))?;
                removed.clear();
                put_back.clear();
                found = Some(Before {
                    turn: t.turn,
                    text: t.text.clone(),
                    at: t.at,
                    cost_before: t.cost_before,
                    cost_after: None,
                    history: front
                        .messages
                        .iter()
                        .chain(verbatim.iter().copied())
                        .cloned()
                        .collect(),
                    notes: t.notes.clone(),
                    outputs: outputs.to_vec(),
                    head: t.head.clone(),
                    commits_since: Vec::new(),
                    yours: Vec::new(),
                    commands_since: Vec::new(),
                });
            }
            Record::Messages(joined) => messages.extend(&joined.messages),
            Record::Commit { commit, yours, .. } => {
                if let Some(before) = &mut found {
                    before.commits_since.push(commit.clone());
                    if *yours {
                        before.yours.push(commit.clone());
                    }
                }
            }
            Record::Ran(ran) => {
                if let Some(before) = &mut found {
                    before.commands_since.push(ran.clone());
                }
            }
            Record::Undone { commits } | Record::Rewound { commits, .. } => {
                if let Some(before) = &mut found {
                    removed.extend(before.commits_since.extract_if(.., |c| commits.contains(c)));
                    if let Record::Rewound { commands, .. } = record {
                        put_back.extend(
                            before
                                .commands_since
                                .extract_if(.., |r| commands.contains(&r.after)),
                        );
                    }
                }
                if let Record::Rewound { to, chat: true, .. } = record {
                    rewinds.push(current);
                    current = current.min(to.saturating_sub(1));
                }
            }
            Record::Redone {
                commits,
                commands,
                chat,
            } => {
                if let Some(before) = &mut found {
                    before
                        .commits_since
                        .extend(removed.extract_if(.., |c| commits.contains(c)));
                    before
                        .commands_since
                        .extend(put_back.extract_if(.., |r| commands.contains(&r.after)));
                }
                if *chat && let Some(before) = rewinds.pop() {
                    current = before;
                }
            }
        }
    }
    Ok(Scan {
        found,
        first,
        current,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Role;
    use proptest::prelude::*;

    fn encode(record: &Record) -> std::io::Result<Vec<u8>> {
        serde_json::to_vec(record).map_err(std::io::Error::other)
    }

    /// What can happen to a session's history between turns, as the engine does it.
    #[derive(Debug, Clone)]
    enum Step {
        /// A user turn: a request and its reply join the history.
        Turn,
        /// A reflection or fix round in the same turn.
        Round,
        /// `history[..anchor]` replaced by a summary pair (anchor after a reply).
        Summarize(usize),
        /// `/forget N`: the oldest N pairs become the note pair.
        Forget(usize),
        Clear,
        /// A command's output joins the context.
        Output,
        /// A note is owed to the model.
        Note,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => Just(Step::Turn),
            1 => Just(Step::Round),
            2 => (0usize..12).prop_map(Step::Summarize),
            1 => (1usize..4).prop_map(Step::Forget),
            1 => Just(Step::Clear),
            1 => Just(Step::Output),
            1 => Just(Step::Note),
        ]
    }

    /// Plays `steps` on a history as the engine would, recording them, and returns
    /// the record with the session as it was when each turn began.
    fn play(steps: &[Step], mut disk: Option<&mut LogWriter>) -> (Vec<Record>, Vec<Before>) {
        let mut history: Vec<Message> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut outputs: Vec<CommandText> = Vec::new();
        let mut recorder = Recorder::default();
        let mut log = Vec::new();
        let mut seen = Vec::new();
        let mut n = 0;
        for step in steps {
            n += 1;
            match step {
                Step::Turn | Step::Round => {
                    if matches!(step, Step::Turn) {
                        let text = format!("question {n}");
                        recorder.begin(
                            &history,
                            (&text, ChatMode::Code),
                            &notes,
                            &outputs,
                            (Some(format!("head{n}")), 0.0),
                        );
                        seen.push(Before {
                            turn: seen.len() + 1,
                            text: text.clone(),
                            at: 0,
                            cost_before: Some(0.0),
                            cost_after: None,
                            history: history.clone(),
                            notes: std::mem::take(&mut notes),
                            outputs: outputs.clone(),
                            head: Some(format!("head{n}")),
                            commits_since: Vec::new(),
                            yours: Vec::new(),
                            commands_since: Vec::new(),
                        });
                    }
                    let pair = [
                        Message::user(format!("sent {n}")),
                        Message::assistant(format!("reply {n}")),
                    ];
                    history.extend(pair.clone());
                    let request = match step {
                        Step::Turn => Request::User,
                        _ => Request::Fix,
                    };
                    recorder.joined(request, &pair);
                    recorder.committed(recorder.turn(), format!("c{n}"), false);
                }
                Step::Summarize(at) => {
                    let anchor = (at * 2).min(history.len());
                    history.splice(
                        ..anchor,
                        [
                            Message::user(format!("summary {n}")),
                            Message::assistant("ok"),
                        ],
                    );
                    recorder.replaced_front(anchor, 2);
                }
                Step::Forget(pairs) => {
                    let dropped = (history.len() / 2).saturating_sub(1).min(*pairs);
                    if dropped > 0 {
                        history.splice(
                            ..2 * dropped,
                            [Message::user("forgotten"), Message::assistant("ok")],
                        );
                        recorder.replaced_front(2 * dropped, 2);
                    }
                }
                Step::Clear => {
                    history.clear();
                    recorder.cleared();
                }
                Step::Output => outputs.push(CommandText {
                    command: format!("cargo test {n}"),
                    outcome: "exit 1".into(),
                    text: "failed".into(),
                    test: true,
                }),
                Step::Note => notes.push(format!("note {n}")),
            }
            let records = recorder.take();
            if let Some(disk) = disk.as_mut() {
                disk.append(records.clone(), encode).unwrap();
            }
            log.extend(records);
        }
        (log, seen)
    }

    proptest! {
        /// Whatever summaries, forgetting and clearing came after it, the record gives
        /// back the history, notes and outputs each turn began with.
        #[test]
        fn the_record_gives_back_the_session_before_any_turn(
            steps in proptest::collection::vec(step(), 1..60)
        ) {
            let (log, seen) = play(&steps, None);
            for (i, expected) in seen.iter().enumerate() {
                let before = before_turn(&log, i + 1).unwrap();
                prop_assert_eq!(&before.history, &expected.history, "turn {}", i + 1);
                prop_assert_eq!(&before.notes, &expected.notes);
                prop_assert_eq!(&before.outputs, &expected.outputs);
                prop_assert_eq!(&before.head, &expected.head);
                for pair in before.history.chunks(2) {
                    prop_assert_eq!(pair[0].role, Role::User);
                }
            }
            prop_assert!(matches!(
                before_turn(&log, seen.len() + 1),
                Err(RecordError::NoTurn(..))
            ));
        }
    }

    #[test]
    fn a_summary_made_later_does_not_hide_the_turns_before_it() {
        let steps = [
            Step::Turn,
            Step::Turn,
            Step::Turn,
            Step::Summarize(3),
            Step::Turn,
            Step::Summarize(1),
            Step::Turn,
        ];
        let (log, _) = play(&steps, None);
        let third = before_turn(&log, 3).unwrap();
        let texts: Vec<&str> = third.history.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["sent 1", "reply 1", "sent 2", "reply 2"]);
        assert_eq!(third.commits_since, ["c3", "c5", "c7"]);
        let fourth = before_turn(&log, 4).unwrap();
        let texts: Vec<&str> = fourth.history.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["summary 4", "ok"]);
        let fifth = before_turn(&log, 5).unwrap();
        let texts: Vec<&str> = fifth.history.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["summary 6", "ok", "sent 5", "reply 5"]);
    }

    #[test]
    fn commits_since_a_turn_leave_out_those_undone() {
        let mut recorder = Recorder::default();
        recorder.begin(&[], ("one", ChatMode::Code), &[], &[], (None, 0.0));
        recorder.committed(1, "a".into(), false);
        recorder.begin(&[], ("two", ChatMode::Ask), &[], &[], (None, 0.0));
        // A proposal of turn 1 reviewed across a question lands after turn 2 began.
        recorder.committed(1, "b".into(), true);
        recorder.committed(1, "c".into(), false);
        recorder.undone(vec!["c".into()]);
        let log = recorder.take();
        assert_eq!(before_turn(&log, 1).unwrap().commits_since, ["a", "b"]);
        assert_eq!(before_turn(&log, 2).unwrap().commits_since, ["b"]);
    }

    /// A rewind of the conversation numbers the turns again from where it went back
    /// to; a redo brings back the turns and commits it took; a turn begun after a
    /// rewind is the one its number names.
    #[test]
    fn rewound_turns_are_gone_until_redone_and_a_new_turn_takes_their_number() {
        let mut recorder = Recorder::default();
        for (n, text) in ["one", "two", "three", "four"].iter().enumerate() {
            recorder.begin(&[], (text, ChatMode::Code), &[], &[], (None, n as f64));
            recorder.committed(n + 1, format!("c{}", n + 1), false);
        }
        let mut log = recorder.take();
        let rewound = |log: &mut Vec<Record>| {
            log.push(Record::Rewound {
                to: 3,
                commits: vec!["c3".into(), "c4".into()],
                commands: Vec::new(),
                chat: true,
            })
        };
        rewound(&mut log);
        assert!(
            matches!(before_turn(&log, 3), Err(RecordError::NoTurn(3, have)) if have == "it has turns 1 to 2")
        );
        let turns = timeline(&log).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[1].commits_since, ["c2"]);
        assert_eq!(
            own_commits_and_cost(&turns, 1, 9.0),
            (vec!["c2".to_string()], Some(1.0)),
            "turn 2 cost 1: the rewound turns' cost is not its own"
        );
        log.push(Record::Redone {
            commits: vec!["c3".into(), "c4".into()],
            commands: Vec::new(),
            chat: true,
        });
        assert_eq!(before_turn(&log, 3).unwrap().commits_since, ["c3", "c4"]);
        assert_eq!(
            before_turn(&log, 2).unwrap().commits_since,
            ["c2", "c3", "c4"]
        );
        assert_eq!(timeline(&log).unwrap().len(), 4);
        rewound(&mut log);
        recorder.renumbered(2);
        assert_eq!(
            recorder.begin(&[], ("three again", ChatMode::Code), &[], &[], (None, 5.0)),
            3
        );
        recorder.committed(3, "d3".into(), false);
        log.extend(recorder.take());
        let third = before_turn(&log, 3).unwrap();
        assert_eq!(
            (third.text.as_str(), third.commits_since.as_slice()),
            ("three again", &["d3".to_string()][..])
        );
        assert!(matches!(before_turn(&log, 4), Err(RecordError::NoTurn(..))));
        assert!(matches!(
            before_turn(&log, 0),
            Err(RecordError::NoTurn(0, _))
        ));
    }

    #[test]
    fn the_log_on_disk_is_cut_back_to_what_the_state_says_and_rolls_over() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = LogWriter::recover(dir.path(), LogPosition::default()).unwrap();
        let mut recorder = Recorder::default();
        recorder.begin(&[], ("one", ChatMode::Code), &[], &[], (None, 0.0));
        recorder.joined(
            Request::User,
            &[Message::user("q"), Message::assistant("a")],
        );
        let saved = writer.append(recorder.take(), encode).unwrap();
        // A crash after appending more but before the state was written: those
        // records, and a torn line, are cut off when the session is opened again.
        recorder.begin(&[], ("two", ChatMode::Code), &[], &[], (None, 0.0));
        writer.append(recorder.take(), encode).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("turns-1.jsonl"))
            .unwrap();
        file.write_all(b"{\"kind\":\"tu").unwrap();
        std::fs::write(dir.path().join("turns-2.jsonl"), "junk\n").unwrap();
        let writer = LogWriter::recover(dir.path(), saved).unwrap();
        assert_eq!(writer.position(), saved);
        let records = read(dir.path()).unwrap();
        assert_eq!(records.len(), 2, "{records:#?}");
        assert!(!dir.path().join("turns-2.jsonl").exists());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// With small segments, most of them dropped, every turn the kept segments
        /// hold still gives back the session it began with.
        #[test]
        fn segments_stand_on_their_own(steps in proptest::collection::vec(step(), 1..80)) {
            let dir = tempfile::tempdir().unwrap();
            let mut disk = LogWriter::recover(dir.path(), LogPosition::default()).unwrap();
            disk.segment_bytes = 300;
            let (_, seen) = play(&steps, Some(&mut disk));
            let kept = read(dir.path()).unwrap();
            prop_assert!(segments(dir.path()).unwrap().len() <= SEGMENTS as usize);
            let first = kept.iter().find_map(|r| match r {
                Record::Turn(t) => Some(t.turn),
                _ => None,
            });
            for turn in first.unwrap_or(1)..=seen.len() {
                let before = before_turn(&kept, turn).unwrap();
                prop_assert_eq!(&before.history, &seen[turn - 1].history, "turn {}", turn);
                prop_assert_eq!(&before.outputs, &seen[turn - 1].outputs);
            }
            if let Some(first) = first.filter(|&f| f > 1) {
                prop_assert!(matches!(before_turn(&kept, first - 1), Err(RecordError::Dropped(_))));
            }
        }
    }

    #[test]
    fn a_resumed_session_records_on_from_where_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut disk = LogWriter::recover(dir.path(), LogPosition::default()).unwrap();
        let (_, first) = play(
            &[Step::Turn, Step::Summarize(1), Step::Turn],
            Some(&mut disk),
        );
        let mut history = first[1].history.clone();
        history.extend([Message::user("sent 3"), Message::assistant("reply 3")]);
        // A new process: the cursor from the state, the log from disk.
        let mut recorder = Recorder::resumed(Cursor {
            turns: 2,
            messages: 4,
            front: 2,
            from: 2,
        });
        let at = disk.position();
        let mut disk = LogWriter::recover(dir.path(), at).unwrap();
        assert_eq!(
            recorder.begin(&history, ("three", ChatMode::Code), &[], &[], (None, 0.0)),
            3
        );
        disk.append(recorder.take(), encode).unwrap();
        let records = read(dir.path()).unwrap();
        assert_eq!(before_turn(&records, 3).unwrap().history, history);
        assert_eq!(before_turn(&records, 2).unwrap().history, first[1].history);
    }
}
