//! File-system events for a long-running map (`notify`): the directories that hold the
//! map's files are watched one by one (never `target/` or `node_modules/`, which the
//! map leaves out anyway), and what changed is handed on in debounced batches, so a
//! refresh after an edit costs the changed files only ([`RepoMap::refresh_changed`]).
//!
//! [`RepoMap::refresh_changed`]: super::RepoMap::refresh_changed

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

/// How long the files must be quiet before a batch is handed on: an editor's save
/// (temporary file, rename, chmod) or a `git checkout` arrives as one batch.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// What changed since the last batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Root-relative paths of the files and directories that events named.
    pub paths: BTreeSet<String>,
    /// Events were lost (the kernel's queue overflowed): only a rescan is exact.
    pub lost: bool,
}

/// Watches a repository's directories while it lives; dropping it stops the events.
pub struct Watch {
    root: PathBuf,
    watcher: notify::RecommendedWatcher,
    /// Root-relative directories watched ("" for the root).
    watched: HashSet<String>,
}

impl Watch {
    /// Starts watching `root` (canonical) and hands each debounced batch to `deliver`,
    /// on a thread of its own, until `deliver` returns false or the watch is dropped.
    pub fn start(
        root: &Path,
        deliver: impl FnMut(Changes) -> bool + Send + 'static,
    ) -> notify::Result<Watch> {
        let (tx, rx) = mpsc::channel();
        let watcher = notify::recommended_watcher(tx)?;
        let root_owned = root.to_path_buf();
        std::thread::Builder::new()
            .name("repo map watch".into())
            .spawn(move || debounce(&root_owned, &rx, deliver))?;
        let mut watch = Watch {
            root: root.to_path_buf(),
            watcher,
            watched: HashSet::new(),
        };
        watch.cover(std::iter::empty::<&str>())?;
        Ok(watch)
    }

    /// Also watches the directories of `files` (root-relative) and their parents that
    /// are not watched yet. Fails when the system's watch limit is reached (inotify's
    /// `max_user_watches`).
    pub fn cover<'a>(&mut self, files: impl IntoIterator<Item = &'a str>) -> notify::Result<()> {
        let mut new = Vec::new();
        for file in std::iter::once("").chain(files.into_iter().map(parent)) {
            let mut dir = file;
            while !self.watched.contains(dir) {
                self.watched.insert(dir.to_string());
                new.push(dir.to_string());
                if dir.is_empty() {
                    break;
                }
                dir = parent(dir);
            }
        }
        if new.is_empty() {
            return Ok(());
        }
        let mut paths = self.watcher.paths_mut();
        for dir in &new {
            paths.add(&self.root.join(dir), RecursiveMode::NonRecursive)?;
        }
        paths.commit()
    }

    /// How many directories are watched.
    pub fn directories(&self) -> usize {
        self.watched.len()
    }
}

/// The directory part of a root-relative path ("" at the top).
fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Gathers events until the files are quiet for [`DEBOUNCE`], then delivers them.
fn debounce(
    root: &Path,
    rx: &mpsc::Receiver<notify::Result<notify::Event>>,
    mut deliver: impl FnMut(Changes) -> bool,
) {
    let mut changes = Changes::default();
    loop {
        let next = if changes == Changes::default() {
            rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(DEBOUNCE)
        };
        match next {
            Ok(Ok(event)) => {
                changes.lost |= event.need_rescan();
                changes.paths.extend(
                    event
                        .paths
                        .iter()
                        .filter_map(|p| p.strip_prefix(root).ok())
                        .filter_map(|p| p.to_str())
                        .map(|p| p.replace(std::path::MAIN_SEPARATOR, "/")),
                );
            }
            // An error from the backend: events may be missing.
            Ok(Err(_)) => changes.lost = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !deliver(std::mem::take(&mut changes)) {
                    return;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
