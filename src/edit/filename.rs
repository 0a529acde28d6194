//! Which file a block means: the model's spelling of a path resolved against the chat
//! files and the repository's files.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The files a reply's file names are matched against, relative to the repository root
/// with `/` separators.
#[derive(Debug, Clone, Default)]
pub struct FileSet {
    chat: Vec<String>,
    repo: Vec<String>,
    known: HashSet<String>,
    /// Chat files the model may read but not edit.
    read_only: HashSet<String>,
}

/// How close a misspelt path must be to a chat file to mean it (difflib's usual cutoff).
const FUZZY_CUTOFF: f32 = 0.8;

impl FileSet {
    /// `chat`: the files in the chat (tried first); `repo`: every other file the
    /// repository tracks.
    pub fn new(chat: Vec<PathBuf>, repo: Vec<PathBuf>) -> FileSet {
        let chat: Vec<String> = chat.iter().map(|p| slashed(p)).collect();
        let repo: Vec<String> = repo.iter().map(|p| slashed(p)).collect();
        let known = chat.iter().chain(&repo).cloned().collect();
        FileSet {
            chat,
            repo,
            known,
            read_only: HashSet::new(),
        }
    }

    /// The same, with the chat's read-only files, whose edits are refused.
    pub(crate) fn with_read_only(mut self, read_only: Vec<PathBuf>) -> FileSet {
        self.read_only = read_only.iter().map(|p| slashed(p)).collect();
        self
    }

    /// Whether `path` is an editable chat file.
    pub(crate) fn in_chat(&self, path: &Path) -> bool {
        let path = slashed(path);
        self.chat.contains(&path)
    }

    /// Whether `path`, as spelt, is a read-only chat file.
    pub(crate) fn is_read_only_chat_file(&self, path: &Path) -> bool {
        self.read_only.contains(&slashed(path))
    }

    /// Whether writing `path` (relative to the canonical `root`) would change a
    /// read-only chat file: compared by the real file the write lands in, so a symlink
    /// to a read-only file (or a read-only symlink's target) is read-only too.
    pub(crate) fn is_read_only(&self, root: &Path, path: &Path) -> bool {
        let real = |p: &Path| {
            super::safety::resolve(root, p).map_or_else(|_| slashed(p), |t| slashed(&t.real(root)))
        };
        if self.is_read_only_chat_file(path) {
            return true;
        }
        let target = real(path);
        self.read_only
            .iter()
            .any(|ro| real(Path::new(ro)) == target)
    }

    pub fn chat(&self) -> impl Iterator<Item = &str> {
        self.chat.iter().map(String::as_str)
    }

    /// Whether `name` is one of the files, exactly.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.known.contains(&normalize(name))
    }

    /// The single chat file, when there is exactly one.
    pub(crate) fn only_chat_file(&self) -> Option<PathBuf> {
        match self.chat.as_slice() {
            [one] => Some(PathBuf::from(one)),
            _ => None,
        }
    }

    /// Resolves the model's spelling of a path: exact chat file, exact repository
    /// file, then (for a block that edits existing text) the same basename and finally
    /// a close spelling among the chat files. A block that creates a file and names an
    /// unknown path creates that path, unless it gave a bare basename that one chat file
    /// has. Anything else is taken as written (and fails later if it does not exist).
    pub(crate) fn resolve(&self, name: &str, creating: bool) -> PathBuf {
        let name = normalize(name);
        if self.known.contains(&name) {
            return PathBuf::from(name);
        }
        let base = basename(&name);
        let unique_base = |list: &[String]| {
            let mut hits = list.iter().filter(|f| basename(f) == base);
            match (hits.next(), hits.next()) {
                (Some(one), None) => Some(one.clone()),
                _ => None,
            }
        };
        let found = if creating {
            (!name.contains('/'))
                .then(|| unique_base(&self.chat))
                .flatten()
        } else {
            unique_base(&self.chat)
                .or_else(|| unique_base(&self.repo))
                .or_else(|| self.fuzzy(&name))
        };
        PathBuf::from(found.unwrap_or(name))
    }

    fn fuzzy(&self, name: &str) -> Option<String> {
        let mut best: Option<(f32, &String)> = None;
        for f in &self.chat {
            let ratio = similar::TextDiff::from_chars(name, f.as_str()).ratio();
            if ratio >= FUZZY_CUTOFF && best.is_none_or(|(r, _)| ratio > r) {
                best = Some((ratio, f));
            }
        }
        best.map(|(_, f)| f.clone())
    }
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A path as the file set spells it: `/` separators, no leading `./`.
pub(crate) fn normalize(name: &str) -> String {
    let mut s = name.trim().replace('\\', "/");
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.to_string();
    }
    s
}

/// A relative path with `/` separators on every platform.
pub(crate) fn slashed(path: &Path) -> String {
    normalize(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> FileSet {
        FileSet::new(
            vec!["src/edit/matching.rs".into(), "src/main.rs".into()],
            vec![
                "README.md".into(),
                "docs/guide.md".into(),
                "src/lib.rs".into(),
            ],
        )
    }

    #[test]
    fn exact_then_basename_then_fuzzy() {
        let s = set();
        assert_eq!(
            s.resolve("./src/main.rs", false),
            PathBuf::from("src/main.rs")
        );
        assert_eq!(s.resolve("README.md", false), PathBuf::from("README.md"));
        assert_eq!(
            s.resolve("matching.rs", false),
            PathBuf::from("src/edit/matching.rs")
        );
        assert_eq!(s.resolve("guide.md", false), PathBuf::from("docs/guide.md"));
        assert_eq!(
            s.resolve("src/edit/matchin.rs", false),
            PathBuf::from("src/edit/matching.rs")
        );
        assert_eq!(
            s.resolve("src\\main.rs", false),
            PathBuf::from("src/main.rs")
        );
    }

    #[test]
    fn creating_prefers_the_new_path() {
        let s = set();
        assert_eq!(
            s.resolve("src/edit/matchin.rs", true),
            PathBuf::from("src/edit/matchin.rs")
        );
        assert_eq!(
            s.resolve("tests/main.rs", true),
            PathBuf::from("tests/main.rs")
        );
        assert_eq!(s.resolve("main.rs", true), PathBuf::from("src/main.rs"));
    }
}
