//! The file set of the map: git-tracked files plus untracked files that no ignore rule
//! hides, minus the root `.ternignore` (gitignore syntax; nested `.ternignore` files
//! apply to untracked files too). Outside a git repository, every file the `ignore`
//! crate's standard filters keep.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Files larger than this are skipped: generated code, data, minified bundles.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

pub const TERNIGNORE: &str = ".ternignore";

/// One file of the set, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Relative to the root, `/`-separated.
    pub rel: String,
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// The inode (0 where there is none): a file renamed over another is another file.
    pub ino: u64,
    /// The content's git blob id, from the index, when the index's stat data proves
    /// that the file still holds what was staged.
    pub blob: Option<[u8; 20]>,
}

impl Found {
    fn new(rel: String, meta: &std::fs::Metadata) -> Found {
        Found {
            rel,
            size: meta.len(),
            mtime_ns: mtime_ns(meta),
            ino: ino(meta),
            blob: None,
        }
    }
}

/// Lists the repository's files, sorted by relative path. Files that vanish or cannot
/// be stat'ed while listing are left out. `staged` holds the index's entries as last
/// read; it is read again only if the index file changed since.
pub fn scan(root: &Path, racy: Racy, staged: &mut StagedMemo) -> Vec<Found> {
    let ternignore = ternignore(root);
    // Matching walks every parent of the path: skipped when there is nothing to match.
    let kept = |rel: &str, meta: &std::fs::Metadata| {
        meta.is_file()
            && (ternignore.is_empty()
                || !ternignore
                    .matched_path_or_any_parents(rel, false)
                    .is_ignore())
    };

    // Tracked files come from the index (stat'ed in parallel); submodules are gitlinks
    // (mode 160000) there: their files belong to another repository, and the walk must
    // not pick them up as untracked either.
    let mut submodules: HashSet<PathBuf> = HashSet::new();
    let mut found: Vec<Found> = Vec::new();
    if let Ok(repo) = git2::Repository::open(root)
        && staged.refresh(&repo, racy).is_ok()
    {
        let trust = IndexTrust::new(&repo, staged, racy);
        let mut entries = Vec::with_capacity(staged.entries.len());
        for entry in &staged.entries {
            if entry.gitlink {
                submodules.insert(root.join(&entry.rel));
            } else {
                entries.push(entry);
            }
        }
        found = entries
            .into_par_iter()
            .filter_map(|entry| {
                let meta = std::fs::symlink_metadata(root.join(&entry.rel)).ok()?;
                if !kept(&entry.rel, &meta) {
                    return None;
                }
                let mut f = Found::new(entry.rel.clone(), &meta);
                f.blob = trust.blob(entry, &f);
                Some(f)
            })
            .collect();
    }
    // Untracked files: a walk on every core that skips ignored directories, and those
    // whose ignore files it could not read without blocking (a FIFO).
    if !crate::regular_file::walkable(root, &[TERNIGNORE]) {
        tracing::warn!(
            "{}: an ignore file is not a file; untracked files are left out",
            root.display()
        );
        found.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        return found;
    }
    let tracked: foldhash::HashSet<&str> = found.iter().map(|f| f.rel.as_str()).collect();
    let untracked = Mutex::new(Vec::new());
    walker(root, root, submodules).build_parallel().run(|| {
        Box::new(|entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
                && let Some(rel) = walked_relative(root, entry.path())
                && !tracked.contains(&*rel)
                && let Ok(meta) = entry.metadata()
                && kept(&rel, &meta)
            {
                let found = Found::new(rel.into_owned(), &meta);
                untracked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(found);
            }
            ignore::WalkState::Continue
        })
    });
    drop(tracked);
    found.extend(untracked.into_inner().unwrap_or_else(|e| e.into_inner()));
    found.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    found
}

/// The walk that finds untracked files, from `from` (the root or a directory under it):
/// ignored directories, `.git` and submodules are skipped, and so are directories whose
/// ignore files cannot be read without blocking (a FIFO).
fn walker(root: &Path, from: &Path, submodules: HashSet<PathBuf>) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(from);
    walk.add_custom_ignore_filename(TERNIGNORE)
        .require_git(false)
        .git_exclude(!crate::regular_file::would_block(
            &root.join(".git/info/exclude"),
        ))
        .filter_entry(move |e| {
            // Asked of every entry: the checks that cost something are for directories.
            e.file_name() != ".git"
                && (!e.file_type().is_some_and(|t| t.is_dir())
                    || (!submodules.contains(e.path())
                        && crate::regular_file::walkable(e.path(), &[TERNIGNORE])))
        });
    walk
}

/// Whether a file that is not in the set yet (`rel`, root-relative) belongs in it, as
/// [`scan`] would find it: staged, or a regular file that the walk from the root would
/// reach and keep. Its directory's entries are listed the way the walk lists them, with
/// the same ignore files of every parent.
pub fn admits(root: &Path, rel: &str) -> bool {
    let path = root.join(rel);
    let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
    if !is_file
        || ternignore(root)
            .matched_path_or_any_parents(rel, false)
            .is_ignore()
    {
        return false;
    }
    let index = git2::Repository::open(root).and_then(|repo| repo.index());
    let staged = |p: &str| {
        let index = index.as_ref().ok()?;
        index.get_path(Path::new(p), 0).map(|e| e.mode)
    };
    let rel_dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let submodule = Path::new(rel_dir)
        .ancestors()
        .filter_map(Path::to_str)
        .any(|d| !d.is_empty() && staged(d) == Some(0o160000));
    if submodule {
        return false; // in a submodule: another repository's file
    }
    if staged(rel).is_some() {
        return true;
    }
    // The walk never enters a hidden directory, `.git` or one it cannot read.
    let Some(dir) = path.parent() else {
        return false;
    };
    !rel_dir.split('/').any(|c| c.starts_with('.'))
        && crate::regular_file::walkable(dir, &[TERNIGNORE])
        && walker(root, dir, HashSet::new())
            .max_depth(Some(1))
            .build()
            .flatten()
            .any(|e| e.path() == path)
}

/// The index's entries as the scan uses them, with the index file's stat data from
/// before they were read. While the index file keeps that inode, size and time, and the
/// time was settled when it was read ([`Racy`]: a later write cannot have kept it), its
/// entries are these: reading and checksumming a 17k-entry index again cost 13% of a
/// warm map's instructions.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedMemo {
    /// None: never read, or read too soon after it was written to stand for it.
    index: Option<IndexStat>,
    entries: Vec<StagedEntry>,
    /// Read again since it was loaded or saved.
    #[serde(skip)]
    pub unsaved: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct IndexStat {
    ino: u64,
    size: u64,
    mtime_ns: i64,
}

/// One index entry with a UTF-8 path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct StagedEntry {
    rel: String,
    /// A submodule's commit (mode 160000), not a file.
    gitlink: bool,
    stat: Staged,
    /// The staged blob id (None where ids are not SHA-1's 20 bytes).
    #[serde(with = "super::cache::byte_array::option")]
    id: Option<[u8; 20]>,
}

impl StagedMemo {
    /// Reads the index again unless it is unchanged since it was last read.
    fn refresh(&mut self, repo: &git2::Repository, racy: Racy) -> Result<(), git2::Error> {
        let before_ns = super::now_ns();
        let stat = std::fs::metadata(repo.path().join("index"))
            .ok()
            .map(|m| IndexStat {
                ino: ino(&m),
                size: m.len(),
                mtime_ns: mtime_ns(&m),
            });
        if stat.is_some() && stat == self.index {
            return Ok(());
        }
        self.unsaved = true;
        self.index = None;
        self.entries.clear();
        let index = repo.index()?;
        self.entries = index
            .iter()
            .filter_map(|entry| {
                Some(StagedEntry {
                    gitlink: entry.mode == 0o160000,
                    stat: Staged::of(&entry),
                    id: entry.id.as_bytes().try_into().ok(),
                    rel: String::from_utf8(entry.path).ok()?,
                })
            })
            .collect();
        self.index = stat.filter(|s| racy.settled(s.mtime_ns, before_ns));
        Ok(())
    }
}

/// How close to a later moment a file's modification time must be for the file to
/// have been changed again since without that time moving (the file system's clock
/// tick): such a file's stat data proves nothing and its content is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Racy {
    /// The file system keeps nanosecond times from this machine's clock.
    fine: bool,
}

impl Racy {
    /// Two seconds where times may be whole seconds (or FAT's two), or come from another
    /// machine's clock (a network file system).
    const COARSE_NS: i64 = 2_000_000_000;
    /// On a local file system with nanosecond times: the kernel stamps files from its
    /// coarse clock, which ticks at least every 10 ms (HZ=100); five ticks of margin.
    const FINE_NS: i64 = 50_000_000;

    /// The rule for the file system that holds `root`.
    pub fn of(root: &Path) -> Racy {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::statfs;
            let local = [
                statfs::EXT4_SUPER_MAGIC,
                statfs::XFS_SUPER_MAGIC,
                statfs::BTRFS_SUPER_MAGIC,
                statfs::TMPFS_MAGIC,
                statfs::OVERLAYFS_SUPER_MAGIC,
                statfs::F2FS_SUPER_MAGIC,
            ];
            let fine = statfs::statfs(root).is_ok_and(|s| local.contains(&s.filesystem_type()));
            Racy { fine }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = root;
            Racy { fine: false }
        }
    }

    /// The window for a file modified at `mtime_ns`: a whole-second time says the file
    /// system keeps no more (ext4's small inodes) or the file came from elsewhere.
    fn window(self, mtime_ns: i64) -> i64 {
        if self.fine && mtime_ns.rem_euclid(1_000_000_000) != 0 {
            Racy::FINE_NS
        } else {
            Racy::COARSE_NS
        }
    }

    /// Whether a file modified at `mtime_ns` could not have changed again, keeping that
    /// time, after `since` (both on this machine's clock).
    pub fn settled(self, mtime_ns: i64, since: i64) -> bool {
        mtime_ns < since.saturating_sub(self.window(mtime_ns))
    }

    /// Whether a staged file modified at `mtime_ns` could not have changed again after
    /// the index (modified at `index_ns`, on the same file system's clock) was written:
    /// git's "racy git" rule, at whole seconds unless the file system's times are fine.
    fn staged_settled(self, mtime_ns: i64, index_ns: i64) -> bool {
        match self.window(mtime_ns) {
            Racy::COARSE_NS => {
                mtime_ns.div_euclid(1_000_000_000) < index_ns.div_euclid(1_000_000_000)
            }
            window => mtime_ns < index_ns.saturating_sub(window),
        }
    }
}

/// When the index's blob ids may stand for the files in the work tree.
struct IndexTrust {
    /// When the index was written.
    written_ns: i64,
    racy: Racy,
    /// Directories (with a trailing `/`; empty for all) where git may convert content
    /// on checkout (line endings, filters), so the work tree's bytes may not be the
    /// blob's.
    converted: Vec<String>,
}

/// Attribute words that make git change content between the index and the work tree.
const CONVERTING: [&str; 6] = ["filter", "eol", "text", "crlf", "ident", "encoding"];

impl IndexTrust {
    fn new(repo: &git2::Repository, staged: &StagedMemo, racy: Racy) -> IndexTrust {
        let written_ns =
            std::fs::metadata(repo.path().join("index")).map_or(i64::MIN, |m| mtime_ns(&m));
        let autocrlf = repo
            .config()
            .ok()
            .and_then(|c| c.get_string("core.autocrlf").ok())
            .is_some_and(|v| !v.eq_ignore_ascii_case("false"));
        let paths = staged.entries.iter().map(|e| e.rel.as_str());
        let mut converted = attribute_dirs(repo, paths, &CONVERTING).dirs;
        if autocrlf && converted.first().is_none_or(|d| !d.is_empty()) {
            converted.insert(0, String::new());
        }
        IndexTrust {
            written_ns,
            racy,
            converted,
        }
    }

    fn blob(&self, entry: &StagedEntry, found: &Found) -> Option<[u8; 20]> {
        (entry.stat.is_current(found, self.written_ns, self.racy)
            && !self
                .converted
                .iter()
                .any(|d| found.rel.starts_with(d.as_str())))
        .then_some(entry.id)
        .flatten()
    }
}

/// The attribute files that may set some attributes.
#[derive(Debug, Default)]
pub(crate) struct AttributeFiles {
    /// The directories (with a trailing `/`; empty for all) they apply to.
    pub dirs: Vec<String>,
    /// The xxh3 of their paths and contents.
    pub digest: u64,
}

/// The attribute files whose git attributes may set one of `words`: the `.gitattributes`
/// files among `files` (root-relative) that mention one, and the repository's
/// `info/attributes` or the global attributes file (for all directories) if they do. The
/// words are only looked for, so that a repository with no such attribute costs git's
/// attribute lookup nothing; git2 says what they are set to.
pub(crate) fn attribute_dirs(
    repo: &git2::Repository,
    files: impl IntoIterator<Item = impl AsRef<str>>,
    words: &[&str],
) -> AttributeFiles {
    let hasher = std::cell::RefCell::new(xxhash_rust::xxh3::Xxh3::new());
    let mentions = |path: &Path| {
        let text =
            crate::regular_file::read_to_string(path, crate::regular_file::MAX_SETTINGS_BYTES);
        let mentions = text
            .as_ref()
            .is_ok_and(|t| words.iter().any(|w| t.contains(w)));
        if let (true, Ok(text)) = (mentions, &text) {
            let mut hasher = hasher.borrow_mut();
            hasher.update(path.as_os_str().as_encoded_bytes());
            hasher.update(&[0]);
            hasher.update(text.as_bytes());
        }
        mentions
    };
    let mut dirs = Vec::new();
    let global = repo
        .config()
        .ok()
        .and_then(|c| c.get_path("core.attributesFile").ok())
        .is_some_and(|p| mentions(&p));
    if global || mentions(&repo.path().join("info").join("attributes")) {
        dirs.push(String::new());
    }
    if let Some(workdir) = repo.workdir() {
        for rel in files {
            let rel = rel.as_ref();
            if let Some(dir) = rel.strip_suffix(".gitattributes")
                && (dir.is_empty() || dir.ends_with('/'))
                && mentions(&workdir.join(rel))
            {
                dirs.push(dir.to_string());
            }
        }
    }
    let digest = hasher.borrow().digest();
    AttributeFiles { dirs, digest }
}

/// The stat data the index keeps for a staged file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Staged {
    /// Truncated to 32 bits, as git stores it.
    size: u32,
    mtime_ns: i64,
    /// Truncated to 32 bits; 0 where the platform has no inodes.
    ino: u32,
}

impl Staged {
    fn of(entry: &git2::IndexEntry) -> Staged {
        Staged {
            size: entry.file_size,
            mtime_ns: i64::from(entry.mtime.seconds()) * 1_000_000_000
                + i64::from(entry.mtime.nanoseconds()),
            ino: entry.ino,
        }
    }

    /// Whether the staged blob is what the file holds now: the file's size, time and
    /// inode are the staged ones, and it was staged a clock tick before the index was
    /// written ([`Racy`]). A file changed again within the tick the index was written
    /// can keep its size and time, so such entries prove nothing and the file is read
    /// instead (git's "racy git" rule).
    fn is_current(&self, found: &Found, index_written_ns: i64, racy: Racy) -> bool {
        found.size as u32 == self.size
            && found.mtime_ns == self.mtime_ns
            && found.ino as u32 == self.ino
            && racy.staged_settled(self.mtime_ns, index_written_ns)
    }
}

/// Stats one file of the set again (after an edit), or None if it is gone.
pub fn stat(root: &Path, rel: &str) -> Option<Found> {
    let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
    meta.is_file().then(|| Found::new(rel.to_string(), &meta))
}

/// The root's `.ternignore`, or an empty matcher (a broken pattern is skipped, the rest
/// still apply).
fn ternignore(root: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    let file = root.join(TERNIGNORE);
    let text = crate::regular_file::read_to_string(&file, crate::regular_file::MAX_SETTINGS_BYTES);
    for line in text.iter().flat_map(|t| t.lines()) {
        if let Err(err) = builder.add_line(Some(file.clone()), line) {
            tracing::warn!("{}: {err}", file.display());
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// `path` relative to `root`, with `/` between components.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let text = rel.to_str()?;
    Some(if std::path::MAIN_SEPARATOR == '/' {
        text.to_string()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    })
}

/// Like [`relative`] for a path the walk found under `root`, borrowed where that is
/// its own spelling: the walk asks this of each of the tree's files.
fn walked_relative<'p>(root: &Path, path: &'p Path) -> Option<std::borrow::Cow<'p, str>> {
    let under = path
        .as_os_str()
        .as_encoded_bytes()
        .strip_prefix(root.as_os_str().as_encoded_bytes())
        .and_then(|rest| rest.strip_prefix(b"/"))
        .filter(|_| std::path::MAIN_SEPARATOR == '/')
        .and_then(|rest| std::str::from_utf8(rest).ok());
    match under {
        Some(text) => Some(text.into()),
        None => relative(root, path).map(Into::into),
    }
}

/// Turns a user-given path (absolute or relative to `cwd`) into a root-relative one.
pub(crate) fn to_rel(root: &Path, cwd: &Path, path: &Path) -> Option<String> {
    let abs: PathBuf = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let abs = abs.canonicalize().unwrap_or(abs);
    relative(root, &abs)
}

pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

#[cfg(unix)]
pub fn ino(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
pub fn ino(_meta: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with `a.rs` staged, its index written a clock tick ago.
    fn staged_repo() -> (tempfile::TempDir, git2::Repository) {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        stage(&repo, "fn a() {}\n");
        (dir, repo)
    }

    /// Writes and stages `a.rs`, a clock tick apart where times are fine, so that the
    /// index's stat data for it and the index itself are settled.
    fn stage(repo: &git2::Repository, content: &str) {
        let tick = || std::thread::sleep(std::time::Duration::from_nanos(2 * Racy::FINE_NS as u64));
        let root = repo.workdir().unwrap();
        std::fs::write(root.join("a.rs"), content).unwrap();
        tick();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.rs")).unwrap();
        index.write().unwrap();
        tick();
    }

    fn blob_id(content: &[u8]) -> [u8; 20] {
        let id = git2::Oid::hash_object(git2::ObjectType::Blob, content).unwrap();
        id.as_bytes().try_into().unwrap()
    }

    fn blob_of(found: &[Found], rel: &str) -> Option<[u8; 20]> {
        found.iter().find(|f| f.rel == rel).and_then(|f| f.blob)
    }

    #[test]
    fn the_index_is_read_again_only_when_its_file_changed() {
        let (dir, repo) = staged_repo();
        let root = dir.path();
        let fine = Racy { fine: true };
        let mut staged = StagedMemo::default();
        let first = blob_of(&scan(root, fine, &mut staged), "a.rs");
        assert_eq!(first, Some(blob_id(b"fn a() {}\n")));
        assert!(staged.index.is_some() && staged.unsaved);
        staged.unsaved = false;

        // Damage the index in place, keeping its inode, size and time: the memo stands
        // for it (a fresh read would find no entries and leave the blob unknown).
        let index = repo.path().join("index");
        let bytes = std::fs::read(&index).unwrap();
        let mtime = std::fs::metadata(&index).unwrap().modified().unwrap();
        let rewrite = |content: &[u8]| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .open(&index)
                .unwrap();
            std::io::Write::write_all(&mut file, content).unwrap();
            file.set_modified(mtime).unwrap();
        };
        rewrite(&vec![b'x'; bytes.len()]);
        assert_eq!(blob_of(&scan(root, fine, &mut staged), "a.rs"), first);
        assert!(!staged.unsaved);
        let fresh = scan(root, fine, &mut StagedMemo::default());
        assert!(fresh.iter().any(|f| f.rel == "a.rs"));
        assert_eq!(blob_of(&fresh, "a.rs"), None);
        rewrite(&bytes);

        // Staging a change writes the index anew: it is read again.
        stage(&repo, "fn b() {}\n");
        let second = blob_of(&scan(root, fine, &mut staged), "a.rs");
        assert_eq!(second, Some(blob_id(b"fn b() {}\n")));
        assert!(staged.unsaved);
    }

    #[test]
    fn an_index_read_within_its_clock_tick_is_not_remembered() {
        let (dir, _repo) = staged_repo();
        // Two seconds of window where times may be coarse: just written, so a later
        // write could keep its time; the next scan reads it again.
        let mut staged = StagedMemo::default();
        scan(dir.path(), Racy { fine: false }, &mut staged);
        assert_eq!(staged.index, None);
        assert_eq!(staged.entries.len(), 1);
    }

    fn found(size: u64, mtime_ns: i64, ino: u64) -> Found {
        Found {
            rel: "a.rs".into(),
            size,
            mtime_ns,
            ino,
            blob: None,
        }
    }

    #[test]
    fn a_staged_blob_stands_for_the_file_only_when_its_stat_data_proves_it() {
        let s = 1_000_000_000;
        let staged = Staged {
            size: 10,
            mtime_ns: 100 * s + 5,
            ino: 7,
        };
        let coarse = Racy { fine: false };
        let current = |f: &Found, index_ns| staged.is_current(f, index_ns, coarse);
        assert!(current(&found(10, 100 * s + 5, 7), 101 * s));
        // Another size, time or inode: changed since it was staged.
        assert!(!current(&found(11, 100 * s + 5, 7), 101 * s));
        assert!(!current(&found(10, 100 * s + 6, 7), 101 * s));
        assert!(!current(&found(10, 100 * s + 5, 8), 101 * s));
        // Staged in the second the index was written: a later change in that second
        // could look the same, so it proves nothing.
        assert!(!current(&found(10, 100 * s + 5, 7), 100 * s + 900_000_000));
        // Where times are fine, the window is the clock's tick, not the second.
        let fine = Racy { fine: true };
        let f = found(10, 100 * s + 5, 7);
        assert!(staged.is_current(&f, 100 * s + 5 + Racy::FINE_NS + 1, fine));
        assert!(!staged.is_current(&f, 100 * s + 5 + Racy::FINE_NS / 2, fine));
        // Sizes and inodes over 32 bits compare as git stores them.
        let big = Staged {
            size: 3,
            mtime_ns: 0,
            ino: 1,
        };
        assert!(big.is_current(&found((1 << 32) + 3, 0, (1 << 32) + 1), s, coarse));
    }

    #[test]
    fn stat_data_settles_after_the_clock_tick_of_the_file_system() {
        let s = 1_000_000_000;
        let fine = Racy { fine: true };
        let coarse = Racy { fine: false };
        let mtime = 100 * s + 5;
        assert!(fine.settled(mtime, mtime + Racy::FINE_NS + 1));
        assert!(!fine.settled(mtime, mtime + Racy::FINE_NS / 2));
        assert!(!coarse.settled(mtime, mtime + Racy::FINE_NS + 1));
        assert!(coarse.settled(mtime, mtime + Racy::COARSE_NS + 1));
        // A whole-second time says the file system keeps no finer one.
        assert!(!fine.settled(100 * s, 100 * s + Racy::FINE_NS + 1));
    }
}
