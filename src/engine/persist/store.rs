//! A repository's sessions, one directory each: `<state dir>/sessions/<repo key>/<id>/`
//! (the repository's key is its directory's name and a hash of its path), never in the
//! work tree, so that a cloned repository cannot ship a session whose proposal `--resume
//! --yes` would apply. An id is 8 characters drawn from a random source (40 bits, in
//! lowercase Crockford base 32, so no `i`, `l`, `o` or `u`), unique within the
//! repository because the directory is created exclusively.
//!
//! Listing reads each session's `state.json` for what `tern sessions` shows; opening one
//! takes its lock (`lock.rs`). Pruning keeps the newest `KEEP` sessions and any younger
//! than `MAX_AGE`, and never removes one that has pending hunks, cannot be read, or is
//! open in a tern. The older layout (one `<repo key>.json` per repository and the
//! `.prev.json` a new session set it aside as) is moved into this one, a session each,
//! the first time a tern looks.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde::de::{IgnoredAny, SeqAccess, Visitor};

use super::lock::{LockError, SessionLock};
use crate::edit::ProposalSnapshot;

/// The characters of an id: Crockford's base 32, lowercase.
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// How long an id is.
pub const ID_LEN: usize = 8;
/// The newest sessions, always kept.
pub const KEEP: usize = 50;
/// Sessions active within this long are kept, however many there are.
pub const MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// A session directory left without a state this long (a tern killed as it started)
/// is removed.
const ABANDONED: Duration = Duration::from_secs(60 * 60);
/// The state's file name in a session's directory.
pub const STATE: &str = "state.json";

/// Which session `--resume` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// The one active last.
    Newest,
    /// The one whose id is, or starts with, this.
    Id(String),
}

/// A repository's sessions.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// What moving an older tern's sessions into this layout did, to tell the user.
    notices: Vec<String>,
}

/// A session as `tern sessions` shows it (a protocol type: `/sessions` sends the list).
pub use crate::engine::protocol::Listed;

impl Listed {
    /// Whether it holds hunks the user has not dealt with (pending, or failed and
    /// not dismissed): such a session is never removed without asking.
    pub(crate) fn has_hunks(&self) -> bool {
        self.pending_hunks > 0 || self.failed_hunks > 0
    }

    /// `1 hunk pending, 2 hunks failed`; empty when it holds none.
    pub fn hunks_text(&self) -> String {
        let pending = (self.pending_hunks > 0).then(|| {
            format!(
                "{} pending",
                crate::plural::count(self.pending_hunks, "hunk")
            )
        });
        let failed = (self.failed_hunks > 0)
            .then(|| format!("{} failed", crate::plural::count(self.failed_hunks, "hunk")));
        pending
            .into_iter()
            .chain(failed)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether a tern has it open, and that tern's pid.
    pub fn holder(&self) -> Option<Option<u32>> {
        SessionLock::holder(&self.dir)
    }

    /// `k3f9a2mx  2 h ago       make parse_args reject -x          1 hunk pending  $0.0123`,
    /// and `open in a tern (pid 4242)` when a tern has it open: the line `tern sessions`
    /// prints and the workspace's `/sessions` lists. `tty`: the title's control and
    /// hidden characters are made visible.
    pub fn line(&self, now: SystemTime, tty: bool) -> String {
        self.line_titled(now, tty, TITLE_COLUMNS, false)
    }

    /// [`Self::line`] in at most `max` columns where it can be: the first message is
    /// shortened (to no less than 8 columns), so the hunks, cost and holder stay whole.
    /// `here`: the session is the one open in this tern, said as `(this one)` in place
    /// of the holder (which is this process).
    pub fn line_within(&self, now: SystemTime, tty: bool, max: usize, here: bool) -> String {
        let line = self.line_titled(now, tty, TITLE_COLUMNS, here);
        match unicode_width::UnicodeWidthStr::width(line.as_str()).checked_sub(max) {
            Some(over) if over > 0 => {
                self.line_titled(now, tty, TITLE_COLUMNS.saturating_sub(over).max(8), here)
            }
            _ => line,
        }
    }

    fn line_titled(&self, now: SystemTime, tty: bool, title_columns: usize, here: bool) -> String {
        let title = match &self.unreadable {
            Some(why) => format!("(cannot be read: {why})"),
            None if self.title.is_empty() => "(no message)".to_string(),
            None => self.title.clone(),
        };
        let title =
            crate::terminal_text::for_terminal(&headline(&title, title_columns), tty).into_owned();
        let pad =
            title_columns.saturating_sub(unicode_width::UnicodeWidthStr::width(title.as_str()));
        let pending = self.hunks_text();
        let open = match self.holder() {
            _ if here => "  (this one)".to_string(),
            Some(pid) => format!("  open in a tern{}", super::lock::holder_text(pid)),
            None => String::new(),
        };
        format!(
            "{}  {:<12}  {title}{}  {pending:<16}  ${:.4}{open}",
            self.id,
            ago(self.last_active, now),
            " ".repeat(pad),
            self.cost
        )
        .trim_end()
        .to_string()
    }
}

/// Columns of the first message in a session's line.
const TITLE_COLUMNS: usize = 40;

/// A session this process has open (its lock held until dropped).
#[derive(Debug)]
pub struct OpenSession {
    pub id: String,
    pub dir: PathBuf,
    _lock: SessionLock,
}

impl OpenSession {
    pub fn state_path(&self) -> PathBuf {
        self.dir.join(STATE)
    }

    /// Removes the session (a run that kept nothing).
    pub fn remove(self) -> std::io::Result<()> {
        std::fs::remove_dir_all(&self.dir)
    }

    /// Makes the session's directory again if it was removed while this tern had it
    /// open (an `rm -rf` of the state directory), with a new lock file, locked again
    /// (the old one went with the directory). Returns whether it was made again.
    pub(crate) fn make_again(&mut self) -> std::io::Result<bool> {
        if self.dir.is_dir() {
            return Ok(false);
        }
        private_dir().recursive(true).create(&self.dir)?;
        self._lock = SessionLock::take(&self.dir).map_err(std::io::Error::other)?;
        Ok(true)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "no saved session for this repository (`tern sessions` lists none): a run of tern that leaves something to resume saves one"
    )]
    NoSessions,
    #[error("no session {0} in this repository (`tern sessions` lists them)")]
    NotFound(String),
    #[error("{0:?} is the start of several sessions' ids ({1}): give more of it")]
    Ambiguous(String, String),
    #[error(
        "{0:?} is not a session id: an id is {ID_LEN} letters and digits, as `tern sessions` lists them"
    )]
    BadId(String),
    /// Each caller adds what else can be done (start a new session, undo in that tern).
    #[error("session {id} {why}: quit that tern first")]
    Open { id: String, why: LockError },
    #[error("cannot make a new session in {dir}: {source}")]
    Create {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove session {id}: {source}")]
    Remove { id: String, source: std::io::Error },
}

impl Store {
    /// The sessions of the repository at `root`, in the state directory.
    pub fn for_repo(root: &Path) -> Store {
        Store::in_state_dir(&crate::config::state_dir(), root)
    }

    /// The sessions of the repository at `root` under the state directory `base`; an
    /// older tern's sessions are moved in first.
    pub fn in_state_dir(base: &Path, root: &Path) -> Store {
        let sessions = base.join("sessions");
        let key = crate::config::repo_key(root);
        let mut store = Store {
            dir: sessions.join(&key),
            notices: Vec::new(),
        };
        for old in [format!("{key}.json"), format!("{key}.prev.json")] {
            store.move_in(&sessions.join(old));
        }
        store
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What moving an older tern's sessions in did.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// An older tern's session file becomes a session of its own (the file is moved,
    /// so it is never moved twice, even by two terns at once).
    fn move_in(&mut self, old: &Path) {
        if !old.is_file() {
            return;
        }
        let moved =
            self.make_dir()
                .and_then(|(id, dir)| match std::fs::rename(old, dir.join(STATE)) {
                    Ok(()) => Ok(id),
                    Err(e) => {
                        let _ = std::fs::remove_dir(&dir);
                        Err(e)
                    }
                });
        match moved {
            Ok(id) => self.notices.push(format!(
                "the session an older tern saved in {} is now session {id} (`tern sessions` lists the sessions, `tern --resume={id}` resumes it)",
                old.display()
            )),
            // Another tern moved it meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.notices.push(format!(
                "the session an older tern saved in {} could not be moved into the new layout ({e}); it is left where it is",
                old.display()
            )),
        }
    }

    /// Makes a new session's directory under a new id, readable by the user alone (a
    /// session holds the conversation).
    fn make_dir(&self) -> std::io::Result<(String, PathBuf)> {
        private_dir().recursive(true).create(&self.dir)?;
        loop {
            let id = new_id()?;
            let dir = self.dir.join(&id);
            match private_dir().create(&dir) {
                Ok(()) => return Ok((id, dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// A new session, open in this process.
    pub fn create(&self) -> Result<OpenSession, StoreError> {
        let create = |source| StoreError::Create {
            dir: self.dir.clone(),
            source,
        };
        let (id, dir) = self.make_dir().map_err(create)?;
        let lock = SessionLock::take(&dir).map_err(|e| match e {
            LockError::Io(e) => create(e),
            other => create(std::io::Error::other(other.to_string())),
        })?;
        Ok(OpenSession {
            id,
            dir,
            _lock: lock,
        })
    }

    /// The sessions that have a state, the one active last first.
    pub fn list(&self) -> Vec<Listed> {
        let mut found: Vec<Listed> = self
            .session_dirs()
            .into_iter()
            .filter_map(|(id, dir)| listed(id, dir))
            .collect();
        found.sort_by(|a, b| {
            b.last_active
                .cmp(&a.last_active)
                .then_with(|| a.id.cmp(&b.id))
        });
        found
    }

    /// The directories named like sessions.
    fn session_dirs(&self) -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let id = entry.file_name().to_str()?.to_string();
                (is_id(&id) && entry.file_type().ok()?.is_dir()).then(|| (id, entry.path()))
            })
            .collect()
    }

    /// The session `which` names.
    pub fn pick(&self, which: &Resume) -> Result<Listed, StoreError> {
        let mut all = self.list();
        match which {
            Resume::Newest if all.is_empty() => Err(StoreError::NoSessions),
            Resume::Newest => Ok(all.remove(0)),
            Resume::Id(given) => {
                let prefix = given.trim().to_ascii_lowercase();
                if prefix.is_empty() || prefix.len() > ID_LEN || !is_id_text(&prefix) {
                    return Err(StoreError::BadId(given.clone()));
                }
                let mut matching: Vec<Listed> = all
                    .into_iter()
                    .filter(|s| s.id.starts_with(&prefix))
                    .collect();
                match matching.len() {
                    0 => Err(StoreError::NotFound(prefix)),
                    1 => Ok(matching.remove(0)),
                    _ => Err(StoreError::Ambiguous(
                        prefix,
                        matching
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    )),
                }
            }
        }
    }

    /// Opens the session `which` names, unless a tern has it open.
    pub fn open(&self, which: &Resume) -> Result<OpenSession, StoreError> {
        let listed = self.pick(which)?;
        match SessionLock::take(&listed.dir) {
            Ok(lock) => Ok(OpenSession {
                id: listed.id,
                dir: listed.dir,
                _lock: lock,
            }),
            Err(LockError::Gone) => Err(StoreError::NotFound(listed.id)),
            Err(why) => Err(StoreError::Open { id: listed.id, why }),
        }
    }

    /// The sessions pruning may take: beyond the newest `KEEP`, inactive for longer
    /// than `MAX_AGE`, and not open in a tern (pending hunks or not).
    pub fn old(&self, now: SystemTime) -> Vec<Listed> {
        self.list()
            .into_iter()
            .skip(KEEP)
            .filter(|s| {
                now.duration_since(s.last_active)
                    .is_ok_and(|age| age > MAX_AGE)
            })
            .filter(|s| s.holder().is_none())
            .collect()
    }

    /// At start: removes the old sessions (see `old`) that have no pending hunks and
    /// can be read, and directories a tern left without a state. Cheap: with no more
    /// than `KEEP` sessions it reads a directory and nothing else. Returns the ids
    /// removed.
    pub fn prune(&self, now: SystemTime) -> Vec<String> {
        let dirs = self.session_dirs();
        let mut removed = Vec::new();
        for (id, dir) in &dirs {
            let abandoned = !dir.join(STATE).exists()
                && std::fs::metadata(dir)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > ABANDONED));
            if abandoned
                && let Ok(lock) = SessionLock::take_now(dir)
                && !dir.join(STATE).exists()
                && std::fs::remove_dir_all(dir).is_ok()
            {
                drop(lock);
                removed.push(id.clone());
            }
        }
        if dirs.len() - removed.len() <= KEEP {
            return removed;
        }
        for old in self.old(now) {
            if !old.has_hunks()
                && old.unreadable.is_none()
                && self.remove(&old, false).is_ok_and(|done| done)
            {
                removed.push(old.id);
            }
        }
        removed
    }

    /// Removes `session` as it was listed: not if a tern has it open, nor if it
    /// changed since (it was used meanwhile), nor, unless `pending_too`, if it has
    /// pending hunks or cannot be read. Returns whether it was removed.
    pub fn remove(&self, session: &Listed, pending_too: bool) -> Result<bool, StoreError> {
        let lock = match SessionLock::take_now(&session.dir) {
            Ok(lock) => lock,
            Err(LockError::Gone) => return Ok(false),
            Err(why) => {
                return Err(StoreError::Open {
                    id: session.id.clone(),
                    why,
                });
            }
        };
        let now = listed(session.id.clone(), session.dir.clone());
        let unchanged = now.as_ref().is_some_and(|now| {
            now.last_active == session.last_active
                && (pending_too || (!now.has_hunks() && now.unreadable.is_none()))
        });
        if !unchanged {
            return Ok(false);
        }
        std::fs::remove_dir_all(&session.dir).map_err(|source| StoreError::Remove {
            id: session.id.clone(),
            source,
        })?;
        drop(lock);
        Ok(true)
    }
}

/// What listing needs of a state, read without keeping the rest.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    last_active_ms: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    session_cost: f64,
    #[serde(default)]
    proposal: Option<ProposalSnapshot>,
    #[serde(default)]
    proposal_failures: Vec<FailureHead>,
    /// An older tern's state has no title: its first message shown stands in.
    #[serde(default, deserialize_with = "first_user_message")]
    transcript: Option<String>,
}

/// What listing needs of a failure: whether it is a hunk (with its lines).
#[derive(Deserialize)]
struct FailureHead {
    #[serde(default)]
    hunk: Option<IgnoredAny>,
}

/// The session in `dir` as listed; None when it has no state.
fn listed(id: String, dir: PathBuf) -> Option<Listed> {
    let path = dir.join(STATE);
    let file_time = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    let read = crate::regular_file::read(&path, crate::regular_file::MAX_TEXT_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice::<Head>(&bytes).map_err(|e| e.to_string()));
    Some(match read {
        Ok(head) => Listed {
            id,
            dir,
            last_active: match head.last_active_ms {
                0 => file_time,
                ms => UNIX_EPOCH + Duration::from_millis(ms),
            },
            title: match head.title.is_empty() {
                true => head.transcript.unwrap_or_default(),
                false => head.title,
            },
            pending_hunks: head.proposal.map_or(0, |p| p.hunk_count()),
            failed_hunks: head
                .proposal_failures
                .iter()
                .filter(|f| f.hunk.is_some())
                .count(),
            cost: head.session_cost,
            unreadable: None,
        },
        Err(why) => Listed {
            id,
            dir,
            last_active: file_time,
            title: String::new(),
            pending_hunks: 0,
            failed_hunks: 0,
            cost: 0.0,
            unreadable: Some(why),
        },
    })
}

/// The text of the first `user` entry of a transcript, the rest skipped unread.
fn first_user_message<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    struct First;
    #[derive(Deserialize)]
    struct Entry {
        kind: String,
        text: String,
    }
    impl<'de> Visitor<'de> for First {
        type Value = Option<String>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a transcript")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut first = None;
            while first.is_none() {
                match seq.next_element::<Entry>()? {
                    Some(entry) if entry.kind == "user" => first = Some(entry.text),
                    Some(_) => {}
                    None => return Ok(None),
                }
            }
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    deserializer.deserialize_seq(First)
}

/// How long ago `then` was, as `tern sessions` says it: `just now`, `5 min ago`, `3 h
/// ago`, `yesterday`, `12 days ago`.
pub fn ago(then: SystemTime, now: SystemTime) -> String {
    let secs = now.duration_since(then).map_or(0, |d| d.as_secs());
    match secs {
        0..60 => "just now".into(),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        86_400..172_800 => "yesterday".into(),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// `text` on one line (runs of white space made one space), cut to `columns` columns
/// with `…`.
pub fn headline(text: &str, columns: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.width() <= columns {
        return line;
    }
    let mut cut = String::new();
    let mut width = 0;
    for c in line.chars() {
        width += c.width().unwrap_or(0);
        if width + 1 > columns {
            break;
        }
        cut.push(c);
    }
    cut.push('…');
    cut
}

/// Makes directories only the user may read (a session's files are made so too).
fn private_dir() -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// A new id from the system's random source.
fn new_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 5];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    let bits = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    Ok((0..ID_LEN)
        .map(|i| char::from(ALPHABET[((bits >> (5 * (ID_LEN - 1 - i))) & 31) as usize]))
        .collect())
}

fn is_id_text(s: &str) -> bool {
    s.bytes().all(|b| ALPHABET.contains(&b))
}

/// Whether `s` is a whole id.
pub(crate) fn is_id(s: &str) -> bool {
    s.len() == ID_LEN && is_id_text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dir: &Path, json: &str) {
        std::fs::write(dir.join(STATE), json).unwrap();
    }

    /// The session open in this tern is "(this one)" in the workspace's list, not
    /// "open in a tern (pid …)" with this process's own pid (the demo showed both).
    #[test]
    fn the_session_open_here_is_this_one_not_another_terns() {
        let dir = tempfile::tempdir().unwrap();
        let _held = SessionLock::take(dir.path()).unwrap();
        let listed = Listed {
            id: "k3f9a2mx".into(),
            dir: dir.path().to_path_buf(),
            last_active: SystemTime::now(),
            title: "make parse_args reject -x".into(),
            pending_hunks: 1,
            failed_hunks: 0,
            cost: 0.0123,
            unreadable: None,
        };
        let now = SystemTime::now();
        let here = listed.line_within(now, false, 200, true);
        assert!(here.ends_with("$0.0123  (this one)"), "{here}");
        assert!(!here.contains("open in a tern"), "{here}");
        let elsewhere = listed.line_within(now, false, 200, false);
        assert!(elsewhere.contains("open in a tern"), "{elsewhere}");
    }

    #[test]
    fn ids_are_random_unique_and_well_formed() {
        let store = Store::in_state_dir(tempfile::tempdir().unwrap().path(), Path::new("/r"));
        let ids: std::collections::BTreeSet<String> = (0..200).map(|_| new_id().unwrap()).collect();
        assert_eq!(ids.len(), 200);
        assert!(ids.iter().all(|id| is_id(id)), "{ids:?}");
        let a = store.create().unwrap();
        let b = store.create().unwrap();
        assert_ne!(a.id, b.id);
        assert!(a.dir.starts_with(store.dir()));
    }

    #[test]
    fn sessions_are_listed_newest_first_and_picked_by_a_unique_prefix() {
        let base = tempfile::tempdir().unwrap();
        let store = Store::in_state_dir(base.path(), Path::new("/repo"));
        let (old, new) = (store.create().unwrap(), store.create().unwrap());
        state(
            &old.dir,
            r#"{"last_active_ms": 1000, "title": "first", "session_cost": 0.5,
                "proposal": {"files": [{"path": "a", "existed": true, "original_hash": 1,
                  "confirmed": false, "hunks": []}]}}"#,
        );
        state(
            &new.dir,
            r#"{"last_active_ms": 2000, "transcript": [{"kind": "note", "text": "n"},
                {"kind": "user", "text": "from the transcript"}, {"kind": "user", "text": "x"}]}"#,
        );
        let unsaved = store.create().unwrap();
        let list = store.list();
        assert_eq!(list.len(), 2, "a session with no state is not listed");
        assert_eq!(list[0].id, new.id);
        assert_eq!(list[0].title, "from the transcript");
        assert_eq!((list[1].title.as_str(), list[1].cost), ("first", 0.5));
        assert_eq!(store.pick(&Resume::Newest).unwrap().id, new.id);
        let prefix = old.id.get(..3).unwrap().to_ascii_uppercase();
        let picked = store.pick(&Resume::Id(prefix));
        // Three characters of two random ids can be alike: then it is ambiguous.
        match picked {
            Ok(s) => assert_eq!(s.id, old.id),
            Err(StoreError::Ambiguous(..)) => assert!(new.id.starts_with(old.id.get(..3).unwrap())),
            Err(e) => panic!("{e}"),
        }
        assert!(matches!(
            store.pick(&Resume::Id("".into())),
            Err(StoreError::BadId(_))
        ));
        assert!(matches!(
            store.pick(&Resume::Id("src/a.rs".into())),
            Err(StoreError::BadId(_))
        ));
        assert!(matches!(
            store.pick(&Resume::Id(unsaved.id.clone())),
            Err(StoreError::NotFound(_))
        ));
        // Both are open here: another opener is refused, naming this process.
        match store.open(&Resume::Newest) {
            Err(StoreError::Open { id, why }) => {
                assert_eq!(id, new.id);
                assert!(why.to_string().contains(&std::process::id().to_string()));
            }
            other => panic!("{other:?}"),
        }
        drop(new);
        assert!(store.open(&Resume::Newest).is_ok());
    }

    #[test]
    fn pruning_keeps_the_newest_the_recent_the_pending_and_the_open() {
        let base = tempfile::tempdir().unwrap();
        let store = Store::in_state_dir(base.path(), Path::new("/repo"));
        let day = 24 * 60 * 60;
        let now = UNIX_EPOCH + Duration::from_secs(1000 * day);
        let mut open = Vec::new();
        let mut ids = Vec::new();
        // KEEP + 10 sessions, one a day, the oldest 100 days ago.
        for i in 0..KEEP + 10 {
            let s = store.create().unwrap();
            let age = 100 - i as u64;
            let pending = if i == 1 {
                r#", "proposal": {"files": [{"path": "a", "existed": true, "original_hash": 1, "confirmed": false, "hunks": [{"before": [], "at_start": true, "old": [], "after": [], "at_end": true, "parts": [], "decision": "pending"}]}]}"#
            } else {
                ""
            };
            state(
                &s.dir,
                &format!(
                    r#"{{"last_active_ms": {}{pending}}}"#,
                    (1000 - age) * day * 1000
                ),
            );
            ids.push(s.id.clone());
            if i == 2 {
                open.push(s);
            }
        }
        let broken = store.dir().join(&ids[3]).join(STATE);
        std::fs::write(&broken, "{ broken").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&broken)
            .unwrap()
            .set_modified(now - Duration::from_secs(97 * day))
            .unwrap();
        let removed = store.prune(now);
        // Beyond the newest 50 are the 10 oldest (100 to 91 days old): all older than
        // 30 days; the pending one, the open one and the unreadable one stay.
        assert_eq!(removed.len(), 7, "{removed:?}");
        for kept in [&ids[1], &ids[2], &ids[3]] {
            assert!(store.dir().join(kept).exists());
        }
        assert_eq!(store.list().len(), KEEP + 3);
        assert!(store.prune(now).is_empty(), "nothing more to do");
        // Asked, the pending one goes too.
        let old = store.old(now);
        let pending = old.iter().find(|s| s.id == ids[1]).unwrap();
        assert!(store.remove(pending, true).unwrap());
    }

    #[test]
    fn the_older_layout_becomes_two_sessions() {
        let base = tempfile::tempdir().unwrap();
        let root = Path::new("/some/repo");
        let key = crate::config::repo_key(root);
        let sessions = base.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        std::fs::write(sessions.join(format!("{key}.json")), r#"{"title": "new"}"#).unwrap();
        std::fs::write(
            sessions.join(format!("{key}.prev.json")),
            r#"{"title": "prev"}"#,
        )
        .unwrap();
        let store = Store::in_state_dir(base.path(), root);
        assert_eq!(store.notices().len(), 2, "{:?}", store.notices());
        let mut titles: Vec<String> = store.list().into_iter().map(|s| s.title).collect();
        titles.sort();
        assert_eq!(titles, ["new", "prev"]);
        assert!(!sessions.join(format!("{key}.json")).exists());
        let again = Store::in_state_dir(base.path(), root);
        assert!(again.notices().is_empty());
        assert_eq!(again.list().len(), 2, "moved once");
    }
}
