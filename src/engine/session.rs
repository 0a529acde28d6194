//! The conversation's state: chat files and their modes, the history, the mode, and
//! what the next turn must tell the model.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::protocol::{ChatMode, FileEntry, FileMode, Shown, ShownKind};
use crate::context::{CommandText, PromptFile};
use crate::llm::{Message, Usage};
use crate::tokens::TokenCounter;

/// Why a path cannot be a chat file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{path} is outside the repository {root}")]
    OutsideRoot { path: String, root: String },
    #[error("{0} is inside .git/")]
    InGitDir(String),
    #[error("{0} is a directory; add the files in it instead")]
    Directory(String),
    #[error("{0} looks like a binary file")]
    Binary(String),
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{0} is not in the chat")]
    NotInChat(String),
}

#[derive(Debug, Clone)]
struct CachedFile {
    modified: Option<SystemTime>,
    len: u64,
    text: Arc<str>,
}

/// The session state the engine owns.
#[derive(Debug)]
pub struct Session {
    root: PathBuf,
    files: BTreeMap<String, FileMode>,
    cache: HashMap<String, CachedFile>,
    /// Earlier turns: user and assistant messages, alternating.
    pub history: Vec<Message>,
    pub mode: ChatMode,
    /// Notes the next user message carries to the model (for example, rejected hunks).
    pub notes_for_next_turn: Vec<String>,
    pub last_usage: Option<Usage>,
    /// `last_usage` is tern's count: the server reported none.
    pub last_usage_estimated: bool,
    /// The last turn's predicted prompt against the server's count of it.
    pub last_drift: Option<crate::tokens::Drift>,
    pub last_cost: f64,
    pub session_cost: f64,
    /// What the chat showed, oldest first, within `TRANSCRIPT_LIMIT` messages and
    /// `TRANSCRIPT_BYTES`: the
    /// history is what the model sees (summarized, notes merged into user messages);
    /// this is what a resumed workspace shows again.
    pub transcript: Vec<Shown>,
    /// Command outputs in the context (`/run`, `/test`, `/lint`), oldest first; one per
    /// command. Not saved with the session: they describe the tree as it was.
    pub outputs: Vec<CommandText>,
    /// The commits each code-mode turn made, for `/undo turn`.
    pub turns: super::turn_commits::TurnCommits,
}

/// The most messages a transcript keeps.
pub const TRANSCRIPT_LIMIT: usize = 400;
/// The most bytes of one message a transcript keeps (a long reply or paste is kept in
/// part: the history has it whole).
pub const TRANSCRIPT_MESSAGE_BYTES: usize = 64 * 1024;
/// The most bytes a whole transcript keeps: the session file is written on every
/// change, so it must stay small.
pub const TRANSCRIPT_BYTES: usize = 2 * 1024 * 1024;

impl Session {
    /// Adds a request's cost to the session; `estimated` when the server reported no
    /// usage and `usage` is tern's count.
    pub(crate) fn record_cost(
        &mut self,
        model: &crate::llm::ModelInfo,
        usage: &Usage,
        estimated: bool,
    ) {
        let cost = model.cost(usage);
        self.session_cost += cost;
        self.last_cost = cost;
        self.last_usage = Some(*usage);
        self.last_usage_estimated = estimated;
    }

    /// The user's message as sent: any notes the engine owes the model (rejected
    /// hunks, say), then their text.
    pub(crate) fn user_message_text(&self, text: &str) -> String {
        if self.notes_for_next_turn.is_empty() {
            return text.to_string();
        }
        format!("{}\n\n{text}", self.notes_for_next_turn.join("\n\n"))
    }

    pub fn new(root: PathBuf) -> Self {
        Session {
            root,
            files: BTreeMap::new(),
            cache: HashMap::new(),
            history: Vec::new(),
            mode: ChatMode::Code,
            notes_for_next_turn: Vec::new(),
            last_usage: None,
            last_usage_estimated: false,
            last_drift: None,
            last_cost: 0.0,
            session_cost: 0.0,
            transcript: Vec::new(),
            outputs: Vec::new(),
            turns: Default::default(),
        }
    }

    /// Adds a message to the transcript (empty ones are not shown, so not kept),
    /// within its bounds: the newest messages, each cut to `TRANSCRIPT_MESSAGE_BYTES`.
    pub fn show(&mut self, kind: ShownKind, text: impl Into<String>) {
        let mut text = text.into();
        if text.is_empty() {
            return;
        }
        if text.len() > TRANSCRIPT_MESSAGE_BYTES {
            let left = text.len() - TRANSCRIPT_MESSAGE_BYTES;
            crate::chars::truncate(&mut text, TRANSCRIPT_MESSAGE_BYTES);
            text.push_str(&format!(
                "\n… ({left} more bytes are not kept for resuming)"
            ));
        }
        self.transcript.push(Shown { kind, text });
        let mut over = self.transcript.len().saturating_sub(TRANSCRIPT_LIMIT);
        let mut bytes: usize = self.transcript.iter().map(|s| s.text.len()).sum();
        while bytes > TRANSCRIPT_BYTES && over < self.transcript.len() - 1 {
            bytes -= self.transcript[over].text.len();
            over += 1;
        }
        self.transcript.drain(..over);
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a user-typed path (relative to `cwd`, or to the root, or absolute) to a
    /// path relative to the repository root with `/` separators. Nothing outside the
    /// root and nothing in `.git/` is accepted, symlinks included.
    pub fn resolve(&self, input: &str, cwd: &Path) -> Result<String, PathError> {
        let typed = Path::new(input.trim());
        let candidates = if typed.is_absolute() {
            vec![typed.to_path_buf()]
        } else {
            vec![cwd.join(typed), self.root.join(typed)]
        };
        let root = canonical(&self.root);
        let mut inside = Vec::new();
        let mut outside = None;
        for candidate in candidates {
            let full = canonical(&normalize(&candidate));
            match full.strip_prefix(&root) {
                Ok(rel) => inside.push((to_slash(rel), full.clone())),
                Err(_) => outside = Some(full),
            }
        }
        // Prefer a path that exists (relative to cwd first, then to the root); a new
        // file is taken relative to cwd.
        let chosen = inside
            .iter()
            .find(|(_, full)| full.exists())
            .or(inside.first())
            .cloned();
        let Some((rel, full)) = chosen else {
            return Err(PathError::OutsideRoot {
                path: outside.map_or(input.to_string(), |p| p.display().to_string()),
                root: root.display().to_string(),
            });
        };
        if rel == ".git" || rel.starts_with(".git/") {
            return Err(PathError::InGitDir(input.to_string()));
        }
        if full.is_dir() {
            return Err(PathError::Directory(input.to_string()));
        }
        Ok(rel)
    }

    /// Adds a chat file, or changes its mode. Returns false when it was already there in that
    /// mode. A file that does not exist yet is allowed: the model may create it.
    pub fn add(&mut self, rel: &str, mode: FileMode) -> Result<bool, PathError> {
        if self.root.join(rel).is_file() {
            self.read(rel)?;
        }
        Ok(self.files.insert(rel.to_string(), mode) != Some(mode))
    }

    pub(crate) fn set_mode(&mut self, rel: &str, mode: FileMode) -> Result<(), PathError> {
        match self.files.get_mut(rel) {
            Some(m) => {
                *m = mode;
                Ok(())
            }
            None => Err(PathError::NotInChat(rel.to_string())),
        }
    }

    pub(crate) fn drop_file(&mut self, rel: &str) -> Result<(), PathError> {
        self.cache.remove(rel);
        self.files
            .remove(rel)
            .map(|_| ())
            .ok_or_else(|| PathError::NotInChat(rel.to_string()))
    }

    pub(crate) fn drop_all(&mut self) {
        self.files.clear();
        self.cache.clear();
    }

    pub(crate) fn mode_of(&self, rel: &str) -> Option<FileMode> {
        self.files.get(rel).copied()
    }

    /// Chat files with the given mode, in path order.
    pub fn paths(&self, mode: FileMode) -> Vec<String> {
        self.files
            .iter()
            .filter(|(_, m)| **m == mode)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The current content of the chat files with this mode. Files that vanished are
    /// shown empty (the model may recreate them); unreadable ones are reported.
    pub fn texts(&mut self, mode: FileMode) -> (Vec<PromptFile>, Vec<PathError>) {
        let mut texts = Vec::new();
        let mut errors = Vec::new();
        for path in self.paths(mode) {
            match self.read(&path) {
                Ok(text) => texts.push(PromptFile {
                    path,
                    text: text.to_string(),
                }),
                Err(e) => errors.push(e),
            }
        }
        (texts, errors)
    }

    /// The files pane's rows.
    pub fn entries(&mut self, counter: &TokenCounter) -> Vec<FileEntry> {
        let files: Vec<(String, FileMode)> =
            self.files.iter().map(|(p, m)| (p.clone(), *m)).collect();
        files
            .into_iter()
            .map(|(path, mode)| {
                let exists = self.root.join(&path).is_file();
                let tokens = match self.read(&path) {
                    Ok(text) => file_tokens(counter, &path, &text),
                    Err(_) => counter.count(""),
                };
                FileEntry {
                    tokens,
                    path,
                    mode,
                    exists,
                }
            })
            .collect()
    }

    /// A file's text, re-read only when its size or modification time changed.
    fn read(&mut self, rel: &str) -> Result<Arc<str>, PathError> {
        let full = self.root.join(rel);
        let meta = match std::fs::metadata(&full) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Arc::from("")),
            Err(e) => {
                return Err(PathError::Unreadable {
                    path: rel.to_string(),
                    reason: e.to_string(),
                });
            }
        };
        let modified = meta.modified().ok();
        if let Some(hit) = self.cache.get(rel)
            && hit.modified == modified
            && hit.len == meta.len()
        {
            return Ok(hit.text.clone());
        }
        let bytes =
            crate::regular_file::read(&full, crate::regular_file::MAX_TEXT_BYTES).map_err(|e| {
                PathError::Unreadable {
                    path: rel.to_string(),
                    reason: e.to_string(),
                }
            })?;
        if crate::diff::is_binary(&bytes) {
            return Err(PathError::Binary(rel.to_string()));
        }
        let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).as_ref());
        self.cache.insert(
            rel.to_string(),
            CachedFile {
                modified,
                len: meta.len(),
                text: text.clone(),
            },
        );
        Ok(text)
    }
}

/// What a file costs in a request: its block as the chat sends it, counted.
pub(crate) fn file_tokens(counter: &TokenCounter, path: &str, text: &str) -> usize {
    counter.count(&crate::context::chunks::file_block(&PromptFile {
        path: path.to_string(),
        text: text.to_string(),
    }))
}

/// Removes `.` and resolves `..` lexically (the path may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Canonicalizes the longest existing ancestor (following symlinks) and appends the
/// rest, so a symlink that leaves the root is caught even for a new file below it.
fn canonical(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut full = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        full.push(name);
    }
    full
}

fn to_slash(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_accepts_inside_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
        let s = Session::new(root.clone());
        let cwd = root.join("src");
        assert_eq!(s.resolve("a.rs", &cwd).unwrap(), "src/a.rs");
        assert_eq!(s.resolve("src/a.rs", &cwd).unwrap(), "src/a.rs");
        assert_eq!(s.resolve("src/new.rs", &root).unwrap(), "src/new.rs");
        assert!(matches!(
            s.resolve("../../etc/passwd", &cwd),
            Err(PathError::OutsideRoot { .. })
        ));
        assert!(matches!(
            s.resolve("/etc/passwd", &cwd),
            Err(PathError::OutsideRoot { .. })
        ));
        assert!(matches!(
            s.resolve(".git/config", &root),
            Err(PathError::InGitDir(_))
        ));
        assert!(matches!(
            s.resolve("src", &root),
            Err(PathError::Directory(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn resolve_refuses_symlinks_that_leave_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        let s = Session::new(root.clone());
        assert!(matches!(
            s.resolve("out/x.txt", &root),
            Err(PathError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn binary_files_are_refused_and_edits_on_disk_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("blob.bin"), [0u8, 1, 2]).unwrap();
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        let mut s = Session::new(root.clone());
        assert!(matches!(
            s.add("blob.bin", FileMode::Editable),
            Err(PathError::Binary(_))
        ));
        assert!(s.add("a.txt", FileMode::Editable).unwrap());
        assert!(!s.add("a.txt", FileMode::Editable).unwrap());
        std::fs::write(root.join("a.txt"), "one\ntwo, longer\n").unwrap();
        let (texts, errors) = s.texts(FileMode::Editable);
        assert!(errors.is_empty());
        assert_eq!(texts[0].text, "one\ntwo, longer\n");
    }
}

#[cfg(test)]
mod transcript_tests {
    use super::*;

    #[test]
    fn the_transcript_keeps_the_newest_within_its_bounds() {
        let mut session = Session::new(PathBuf::from("/repo"));
        let huge = "日本".repeat(TRANSCRIPT_MESSAGE_BYTES);
        session.show(ShownKind::Assistant, huge.clone());
        let kept = &session.transcript[0].text;
        assert!(
            kept.len() < TRANSCRIPT_MESSAGE_BYTES + 100,
            "{}",
            kept.len()
        );
        assert!(kept.ends_with("more bytes are not kept for resuming)"));
        for i in 0..100 {
            session.show(ShownKind::User, format!("{i}{huge}"));
        }
        let bytes: usize = session.transcript.iter().map(|s| s.text.len()).sum();
        assert!(bytes <= TRANSCRIPT_BYTES, "{bytes}");
        assert!(session.transcript.last().unwrap().text.starts_with("99"));
        for i in 0..1000 {
            session.show(ShownKind::User, i.to_string());
        }
        assert_eq!(session.transcript.len(), TRANSCRIPT_LIMIT);
        assert_eq!(session.transcript.last().unwrap().text, "999");
    }
}
