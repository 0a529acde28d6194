//! The repo map: tree-sitter tags of every file, ranked with personalized PageRank and
//! fitted to a token budget (ARCHITECTURE.md, *The repo map*).
//!
//! Use: [`RepoMap::open`] once per repository, [`RepoMap::refresh`] (whole tree) or
//! [`RepoMap::refresh_files`] (files known to have changed) whenever files may have
//! changed, then [`RepoMap::build`] for each request. `build` takes `&self` and is cheap
//! once tags are loaded; `RepoMap` is `Send + Sync`, so the engine can keep it behind an
//! `Arc<RwLock<_>>` and call it from `spawn_blocking`.

use derive_visitor::DriveMut;

mod cache;
mod collapse;
mod files;
mod fitted;
mod graph_cell;
mod important;
mod interner;
mod languages;
mod left_out;
pub mod mentions;
mod rank;
mod render;
mod store;
mod tags;
pub mod watch;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use serde::Serialize;

pub use files::MAX_FILE_BYTES;
pub use languages::Grammar;
pub use mentions::Mentions;
pub use rank::GraphStats;
pub use render::{BAR, ELISION};
pub use tags::MAX_LINE_CHARS;

use crate::tokens::TokenCounter;
use cache::{Kind, Known, Words};
use graph_cell::GraphCell;
use interner::{Interner, Names};
use rank::{Credit, Ranking};
use render::{BlockCounts, Item};
use store::{Content, Key, Store};
use tags::FileTags;

/// When the engine rebuilds the map for a request (the `map_refresh` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, DriveMut)]
#[serde(rename_all = "lowercase")]
pub enum MapRefresh {
    /// Like `files`, and also when files changed on disk; but when a rebuild takes
    /// long (over a second) and nothing the chat references changed, the last map is
    /// reused.
    #[default]
    Auto,
    /// Rescans the repository and rebuilds the map before every message sent.
    Always,
    /// Rebuilds when the chat files, the mentions or the budget change.
    Files,
    /// Rebuilds only on `/map-refresh`.
    Manual,
}

impl MapRefresh {
    pub fn label(self) -> &'static str {
        match self {
            MapRefresh::Auto => "auto",
            MapRefresh::Always => "always",
            MapRefresh::Files => "files",
            MapRefresh::Manual => "manual",
        }
    }
}

impl std::str::FromStr for MapRefresh {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            MapRefresh::Auto,
            MapRefresh::Always,
            MapRefresh::Files,
            MapRefresh::Manual,
        ]
        .into_iter()
        .find(|m| m.label() == s)
        .ok_or_else(|| format!("{s:?} is not auto, always, files or manual"))
    }
}

/// The default map budget: window/8 clamped to 1024..4096 (below an 8k window, just
/// window/8, so a small window keeps room for the rest); with no chat files, eight
/// times that, up to the window less 4096 (never below the chat-files budget).
pub fn default_budget(window: usize, has_chat_files: bool) -> usize {
    let base = (window / 8).clamp(1024.min(window / 8), 4096);
    if has_chat_files {
        base
    } else {
        (base * 8).min(window.saturating_sub(4096)).max(base)
    }
}

/// `path` (absolute, or relative to `cwd`) relative to the canonical `root`, with `/`
/// separators; None when it is not under the root.
pub(crate) fn relative_path(root: &Path, cwd: &Path, path: &Path) -> Option<String> {
    files::to_rel(root, cwd, path)
}

/// Maps keyed by the set's paths (tens of thousands of them, hashed on every warm
/// start): foldhash rather than SipHash, the paths being the repository's own.
type PathMap<V> = foldhash::HashMap<String, V>;

/// Where the tag cache lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheLocation {
    /// `dirs::cache_dir()/tern/tags` (no disk cache if the platform has no cache dir):
    /// the tag store shared by every checkout under `store/`, each checkout's snapshot
    /// under `checkouts/`.
    UserCacheDir,
    /// This directory instead (tests and benchmarks).
    Dir(PathBuf),
    /// Keep tags in memory only.
    Disabled,
}

#[derive(Debug, thiserror::Error)]
pub enum RepoMapError {
    #[error("cannot open repository root {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Extraction progress, for the first (cold) refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub parsed: usize,
    pub total: usize,
}

/// What a refresh found and did, with timings (`tern map --stats`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RefreshStats {
    /// Files in the file set (tracked plus untracked-not-ignored, minus `.ternignore`).
    pub files_seen: usize,
    /// Files read and parsed in this refresh.
    pub parsed: usize,
    /// Files known from this checkout's snapshot, unchanged.
    pub from_cache: usize,
    /// Files whose tags came from the store shared by all checkouts (content some
    /// checkout parsed before).
    pub from_store: usize,
    /// Files read to find their content's key (untracked, changed since staged, or
    /// staged too close to the index write to trust its stat data).
    pub hashed: usize,
    /// Files whose tags were already in memory and unchanged.
    pub unchanged: usize,
    pub skipped_binary: usize,
    pub skipped_large: usize,
    /// Files that could not be read (vanished, permissions).
    pub unreadable: usize,
    /// Definitions and references (distinct names per file) across the set.
    pub definitions: usize,
    pub references: usize,
    /// Why the checkout's snapshot was discarded, if it was.
    pub cache_discarded: Option<String>,
    /// Paths added, removed, or whose content changed (after the first refresh).
    #[serde(skip)]
    pub changed: Vec<String>,
    /// Walking the tree (the first refresh reads the tag cache alongside).
    #[serde(serialize_with = "as_ms")]
    pub scan: Duration,
    #[serde(serialize_with = "as_ms")]
    pub parse: Duration,
    /// Indexing the paths, their noise, and the inputs of the graph (built when a map
    /// is fitted: `RankTimes`).
    #[serde(serialize_with = "as_ms")]
    pub index: Duration,
    #[serde(serialize_with = "as_ms")]
    pub save: Duration,
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// How many refreshes from file-system events ([`RepoMap::refresh_changed`]) took
/// which way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchCounts {
    /// Refreshes of the changed files only.
    pub by_file: usize,
    /// Rescans of the whole tree.
    pub rescans: usize,
}

/// One edge that puts a file in the map: `from` references `ident`, defined in the file,
/// and carries `weight` of rank along it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhyEdge {
    pub ident: String,
    pub from: String,
    pub weight: f64,
}

/// A fitted map and how it was ranked.
pub struct MapResult {
    /// The map as the model sees it (empty when nothing fits).
    pub text: String,
    /// Tokens of `text`, counted with the real tokenizer; never above the budget.
    pub tokens: usize,
    pub budget: usize,
    /// Every file that could be in the map (chat, binary and left-out files excluded)
    /// with its PageRank score, best first; a collapsed group is one entry, its line
    /// with its best ranked file's score.
    pub ranked_files: Vec<(String, f64)>,
    /// What was left out as noise (chat and mentioned files never are): a count per
    /// reason, for the reasons that left something out.
    pub left_out: Vec<(&'static str, usize)>,
    /// Definitions and files shown (the important files listed at the top too).
    pub shown_defs: usize,
    pub shown_files: usize,
    /// Lines that stand for collapsed groups of files (`locale/**/*.po (36 files)`), in
    /// `ranked_files` and the map alike, and how many files they stand for.
    pub collapsed: usize,
    pub collapsed_files: usize,
    /// Important files (README, manifests, CI, ...) listed at the top, best first.
    pub important: Vec<String>,
    /// The last map fitted from the same files and inputs, reused (`rank_time` is then
    /// the time it took to find it).
    pub reused: bool,
    pub rank_time: Duration,
    pub fit_time: Duration,
    explain: Explain,
}

/// How a chat personalizes the rank: per file, whether it is a chat file and its
/// personalization weight; the mentioned identifiers' ids.
struct Personal {
    chat: Vec<bool>,
    personal: Vec<f64>,
    mentioned: Vec<u32>,
}

impl Personal {
    fn new(n: usize, chat_files: &[u32], mentioned_files: &[u32], mentioned: Vec<u32>) -> Self {
        let mut chat = vec![false; n];
        let mut personal = vec![0.0; n];
        for &f in chat_files {
            chat[f as usize] = true;
            personal[f as usize] = 1.0;
        }
        for &f in mentioned_files {
            personal[f as usize] = 1.0;
        }
        Personal {
            chat,
            personal,
            mentioned,
        }
    }
}

/// What `MapResult::why` needs, shared with the `RepoMap` that made it.
struct Explain {
    graph: Arc<GraphCell>,
    /// Made from `personal` when first needed, for a map that was reused.
    ranking: OnceLock<Ranking>,
    personal: Personal,
    paths: Arc<Vec<String>>,
    names: Arc<Names>,
}

impl MapResult {
    /// The top edges (identifier, from which file, rank carried) that put `path` in
    /// the map, strongest first; empty for an unknown path or one nobody references.
    pub fn why(&self, path: &str, limit: usize) -> Vec<WhyEdge> {
        let e = &self.explain;
        let Some(file) = position(&e.paths, path) else {
            return Vec::new();
        };
        let p = &e.personal;
        let graph = e.graph.get();
        let ranking = e
            .ranking
            .get_or_init(|| graph.rank(&p.chat, &p.personal, &p.mentioned));
        graph
            .why(ranking, file, limit)
            .into_iter()
            .map(|(ident, from, weight)| WhyEdge {
                ident: e.names.get(ident).to_string(),
                from: e.paths[from as usize].clone(),
                weight,
            })
            .collect()
    }
}

impl std::fmt::Debug for MapResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapResult")
            .field("tokens", &self.tokens)
            .field("budget", &self.budget)
            .field("shown_defs", &self.shown_defs)
            .field("shown_files", &self.shown_files)
            .finish_non_exhaustive()
    }
}

/// One file of the set: what is known about it, and its tags once loaded.
struct Slot {
    known: Known,
    /// Parsed or fetched in this process, or read from the store when the map first
    /// shows the file (a warm start loads no tags at all); None when they cannot be had.
    tags: OnceLock<Option<Arc<Loaded>>>,
}

/// A file's tags with their names resolved to global identifier ids.
struct Loaded {
    tags: FileTags,
    /// The file's name index -> global identifier id.
    ids: Vec<u32>,
}

impl Resolved {
    /// The new content with the stat data it was found with.
    fn with_stat(self, f: files::Found) -> Option<(files::Found, Key, Content)> {
        match self {
            Resolved::New { key, content } => Some((f, key, content)),
            Resolved::Same | Resolved::Gone => None,
        }
    }
}

impl Slot {
    fn is_tagged(&self) -> bool {
        matches!(self.known.kind, Kind::Tags { .. })
    }
}

/// What resolving one file found.
enum Resolved {
    /// What was known still holds (its stat data may have moved).
    Same,
    /// New content, parsed here or fetched from the store.
    New { key: Key, content: Content },
    /// Vanished or unreadable.
    Gone,
}

/// The repo map of one repository.
pub struct RepoMap {
    root: PathBuf,
    /// `<cache dir>/checkouts/<hash of root>`: this checkout's cache files' stem.
    cache_stem: Option<PathBuf>,
    /// `<cache dir>/store`, opened on the first refresh.
    store_dir: Option<PathBuf>,
    store: Option<Store>,
    counter: TokenCounter,
    block_counts: BlockCounts,
    /// Root-relative paths, sorted; `slots[i]` belongs to `paths[i]`.
    paths: Arc<Vec<String>>,
    slots: Vec<Slot>,
    /// The packages of the set and their important files (`important.rs`), found when
    /// a map is first fitted (a reused map needs none).
    packages: OnceLock<important::Packages>,
    /// Per file: why its name or attributes leave it out of the map (`left_out.rs`).
    left_out: Vec<Option<left_out::Reason>>,
    /// What git2's attribute lookups answered, kept in the snapshot.
    attributes: left_out::AttributeMemo,
    interner: Interner,
    graph: Arc<GraphCell>,
    /// The snapshot's files not yet claimed by a refresh; None until the first refresh
    /// loads them.
    disk: Option<Disk>,
    disk_saved_ns: i64,
    /// When this process last stat'ed the files.
    read_ns: i64,
    /// Keys parsed here that the store may not have yet.
    fresh: Vec<Key>,
    /// The snapshot is behind what is known.
    unsaved: bool,
    watch_counts: WatchCounts,
    /// How long after its modification a file's stat data proves nothing.
    racy: files::Racy,
    /// The index's entries as last read (`files::StagedMemo`).
    staged: files::StagedMemo,
}

impl RepoMap {
    /// Opens the map of the repository at `root`. Nothing is scanned or loaded until
    /// [`refresh`](Self::refresh).
    pub fn open(
        root: &Path,
        counter: TokenCounter,
        cache: CacheLocation,
    ) -> Result<RepoMap, RepoMapError> {
        let root = root.canonicalize().map_err(|source| RepoMapError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        let cache_root = match cache {
            CacheLocation::UserCacheDir => dirs::cache_dir().map(|d| d.join("tern").join("tags")),
            CacheLocation::Dir(dir) => Some(dir),
            CacheLocation::Disabled => None,
        };
        let cache_stem = cache_root
            .as_ref()
            .map(|dir| cache::stem_for(&dir.join("checkouts"), &root));
        let block_counts = BlockCounts::new(match &cache_stem {
            Some(stem) => cache::load_counts(&counts_path(stem, &counter)),
            None => HashMap::new(),
        });
        let racy = files::Racy::of(&root);
        Ok(RepoMap {
            root,
            cache_stem,
            store_dir: cache_root.map(|dir| dir.join("store")),
            store: None,
            counter,
            block_counts,
            paths: Arc::default(),
            slots: Vec::new(),
            packages: OnceLock::new(),
            left_out: Vec::new(),
            attributes: left_out::AttributeMemo::default(),
            interner: Interner::default(),
            graph: Arc::default(),
            disk: None,
            disk_saved_ns: 0,
            read_ns: 0,
            fresh: Vec::new(),
            unsaved: false,
            watch_counts: WatchCounts::default(),
            racy,
            staged: files::StagedMemo::default(),
        })
    }

    /// The canonical repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Root-relative paths of the file set, sorted.
    pub fn files(&self) -> &[String] {
        &self.paths
    }

    /// The shared store's segments and bytes on disk (0 without a disk cache).
    pub(crate) fn store_usage(&self) -> (usize, u64) {
        self.store.as_ref().map_or((0, 0), Store::usage)
    }

    /// Re-scans the whole file set, re-parses what changed (in parallel, reporting each
    /// file resolved to `progress`), rebuilds the graph and saves the caches.
    pub fn refresh(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> RefreshStats {
        let start = Instant::now();
        // The first refresh reads the snapshot and opens the store while the tree is
        // walked.
        let first = self.disk.is_none();
        let snapshot_file = self
            .cache_stem
            .as_ref()
            .filter(|_| first)
            .map(|stem| stem.with_extension("snap"));
        let store_dir = self.store_dir.as_ref().filter(|_| self.store.is_none());
        let staged_file = self
            .cache_stem
            .as_ref()
            .filter(|_| first)
            .map(|stem| stem.with_extension("staged"));
        let staged = &mut self.staged;
        let (found, (loaded, store)) = rayon::join(
            || {
                if let Some(path) = &staged_file {
                    *staged = cache::load_staged(path);
                }
                files::scan(&self.root, self.racy, staged)
            },
            || {
                rayon::join(
                    || snapshot_file.map(|path| cache::load_snapshot(&path)),
                    || store_dir.map(|dir| Store::open(dir, store::DEFAULT_CAP_BYTES)),
                )
            },
        );
        if store.is_some() {
            self.store = store;
        }
        let scan = start.elapsed();
        let mut discarded = None;
        if let Some((snapshot, why)) = loaded {
            if let Some(why) = &why {
                tracing::warn!("repo map snapshot discarded: {why}");
            }
            discarded = why;
            self.interner = Interner::from_names(snapshot.names);
            self.disk = Some(Disk::of(snapshot.files));
            self.disk_saved_ns = snapshot.saved_ns;
            self.attributes = snapshot.attributes;
        } else if first {
            self.disk = Some(Disk::default());
        }
        let mut stats = self.update(found, progress, scan, first);
        stats.cache_discarded = discarded;
        stats
    }

    /// Like [`refresh`](Self::refresh) for files the caller knows changed (edited,
    /// created or deleted; root-relative paths): no tree walk. Call it after a first
    /// `refresh`; the named files are taken as part of the file set. The caches are
    /// written later ([`save`](Self::save), the next `refresh`, or drop), so an edit
    /// costs a re-parse, not a rewrite of the whole snapshot.
    pub fn refresh_files(&mut self, changed: &[String]) -> RefreshStats {
        let start = Instant::now();
        let mut stats = RefreshStats::default();
        let mut set_changed = false;
        let mut seen = std::collections::HashSet::new();
        for rel in changed.iter().filter(|r| seen.insert(r.as_str())) {
            let found = files::stat(&self.root, rel);
            if found.as_ref().is_some_and(|f| f.size > MAX_FILE_BYTES) {
                stats.skipped_large += 1;
            }
            let existing = position(&self.paths, rel);
            let resolved = match found.filter(|f| f.size <= MAX_FILE_BYTES) {
                Some(f) => {
                    let prior = existing.map(|i| &self.slots[i as usize].known);
                    let resolved = self.resolve(&f, prior, self.read_ns, &mut stats);
                    if let (Resolved::Same, Some(i)) = (&resolved, existing) {
                        stats.unchanged += 1;
                        set_stat(&mut self.slots[i as usize].known, &f);
                        continue;
                    }
                    resolved.with_stat(f)
                }
                None => None,
            };
            let slot = resolved.map(|(f, key, content)| self.new_slot(&f, key, content));
            stats.changed.push(rel.clone());
            self.unsaved = true;
            match (slot, existing) {
                (Some(slot), Some(i)) => self.slots[i as usize] = slot,
                (Some(slot), None) => {
                    let paths = Arc::make_mut(&mut self.paths);
                    let at = paths.partition_point(|p| p < rel);
                    paths.insert(at, rel.clone());
                    self.slots.insert(at, slot);
                    set_changed = true;
                }
                (None, Some(i)) => {
                    Arc::make_mut(&mut self.paths).remove(i as usize);
                    self.slots.remove(i as usize);
                    set_changed = true;
                }
                (None, None) => {
                    stats.changed.pop();
                }
            }
        }
        stats.parse = start.elapsed();
        let index_start = Instant::now();
        // What `.gitattributes` says may have changed with it.
        if set_changed || stats.changed.iter().any(|p| p.ends_with(".gitattributes")) {
            self.rebuild_index();
        }
        if !stats.changed.is_empty() {
            self.rebuild_graph();
        }
        stats.index = index_start.elapsed();
        self.total_stats(&mut stats);
        stats
    }

    /// Takes in what file-system events named ([`watch::Changes`]): a rescan of the
    /// whole tree when only one is exact (events were lost; an ignore file changed, so
    /// the set may have too; a directory appeared, vanished or was renamed), else a
    /// refresh of the named files that are in the set or now belong in it. A watch
    /// counts how many refreshes took each way ([`watch_counts`](Self::watch_counts)).
    pub fn refresh_changed(
        &mut self,
        changes: &watch::Changes,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> RefreshStats {
        if changes.lost || changes.paths.iter().any(|p| self.changes_the_set(p)) {
            self.watch_counts.rescans += 1;
            return self.refresh(progress);
        }
        let files: Vec<String> = changes
            .paths
            .iter()
            .filter(|p| position(&self.paths, p).is_some() || files::admits(&self.root, p))
            .cloned()
            .collect();
        self.watch_counts.by_file += 1;
        self.refresh_files(&files)
    }

    /// Whether an event on `rel` may change which files are in the set, beyond `rel`
    /// itself: an ignore file, or a directory (a file of the set under a path that is
    /// not one, or a directory on disk).
    fn changes_the_set(&self, rel: &str) -> bool {
        let name = rel.rsplit_once('/').map_or(rel, |(_, n)| n);
        if [".gitignore", ".ignore", files::TERNIGNORE].contains(&name) {
            return true;
        }
        if position(&self.paths, rel).is_some() {
            return false;
        }
        let dir = format!("{rel}/");
        let at = self.paths.partition_point(|p| p.as_str() < dir.as_str());
        self.paths.get(at).is_some_and(|p| p.starts_with(&dir))
            || std::fs::symlink_metadata(self.root.join(rel)).is_ok_and(|m| m.is_dir())
    }

    /// How the refreshes from file-system events went.
    pub fn watch_counts(&self) -> WatchCounts {
        self.watch_counts
    }

    fn update(
        &mut self,
        found: Vec<files::Found>,
        progress: &(dyn Fn(Progress) + Sync),
        scan: Duration,
        first: bool,
    ) -> RefreshStats {
        let mut stats = RefreshStats {
            scan,
            ..RefreshStats::default()
        };
        let parse_start = Instant::now();
        let now = now_ns();
        let mut old: PathMap<Slot> = Arc::unwrap_or_clone(std::mem::take(&mut self.paths))
            .into_iter()
            .zip(std::mem::take(&mut self.slots))
            .collect();
        let mut disk = self.disk.take().unwrap_or_default();

        // Keep what is proven unchanged by its stat data; resolve the rest in parallel.
        let mut kept: Vec<(files::Found, Option<Slot>)> = Vec::new();
        let mut jobs: Vec<(usize, Option<Known>, i64)> = Vec::new();
        for f in found {
            if f.size > MAX_FILE_BYTES {
                stats.skipped_large += 1;
                continue;
            }
            let prior = match old.remove(&f.rel) {
                Some(slot) if self.proven(&slot.known, &f, self.read_ns) => {
                    stats.unchanged += 1;
                    kept.push((f, Some(slot)));
                    continue;
                }
                Some(slot) => Some((slot.known, self.read_ns)),
                None => match disk.claim(&f.rel) {
                    Some(known) if self.proven(&known, &f, self.disk_saved_ns) => {
                        stats.from_cache += 1;
                        kept.push((f, Some(self.slot_of(known))));
                        continue;
                    }
                    Some(known) => Some((known, self.disk_saved_ns)),
                    None => None,
                },
            };
            let (known, since) = prior.map_or((None, 0), |(k, t)| (Some(k), t));
            jobs.push((kept.len(), known, since));
            kept.push((f, None));
        }
        let total = jobs.len();
        let done = AtomicUsize::new(0);
        let counters = Mutex::new(RefreshStats::default());
        let resolved: Vec<(usize, Option<Known>, Resolved)> = jobs
            .into_par_iter()
            .map(|(k, prior, since)| {
                let mut local = RefreshStats::default();
                let resolved = self.resolve(&kept[k].0, prior.as_ref(), since, &mut local);
                add_counts(
                    &mut counters.lock().unwrap_or_else(|e| e.into_inner()),
                    &local,
                );
                let parsed = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress { parsed, total });
                (k, prior, resolved)
            })
            .collect();
        add_counts(
            &mut stats,
            &counters.into_inner().unwrap_or_else(|e| e.into_inner()),
        );
        for (k, prior, resolved) in resolved {
            let f = &kept[k].0;
            let slot = match (resolved, prior) {
                (Resolved::Same, Some(mut known)) => {
                    stats.from_cache += 1;
                    set_stat(&mut known, f);
                    Some(self.slot_of(known))
                }
                (Resolved::New { key, content }, _) => {
                    if !first {
                        stats.changed.push(f.rel.clone());
                    }
                    Some(self.new_slot(f, key, content))
                }
                (Resolved::Gone | Resolved::Same, _) => {
                    stats.unreadable += 1;
                    None
                }
            };
            kept[k].1 = slot;
        }
        stats.parse = parse_start.elapsed();

        let index_start = Instant::now();
        let removed: Vec<String> = old.into_keys().collect();
        let changed = !stats.changed.is_empty() || !removed.is_empty() || disk.unclaimed();
        if !first {
            stats.changed.extend(removed);
        }
        let mut paths = Vec::with_capacity(kept.len());
        for (f, slot) in kept {
            if let Some(slot) = slot {
                paths.push(f.rel);
                self.slots.push(slot);
            }
        }
        self.paths = Arc::new(paths);
        self.read_ns = now;
        self.rebuild_index();
        self.rebuild_graph();
        stats.index = index_start.elapsed();
        self.total_stats(&mut stats);

        // A snapshot entry for a file no longer in the set is dropped with it.
        self.disk = Some(Disk::default());
        self.unsaved |= changed || stats.parsed + stats.from_store + stats.hashed > 0;
        let save_start = Instant::now();
        self.save();
        stats.save = save_start.elapsed();
        stats
    }

    /// Whether the stat data of `f` proves that it still is what `known` describes:
    /// the same size, time and inode, and either a time older than `since` (when it
    /// was last stat'ed) by more than a clock tick, or the index's blob id agreeing.
    /// What a tern with other grammars or queries made (an older literal query, say)
    /// describes tags this one would not make: never proven.
    fn proven(&self, known: &Known, f: &files::Found, since: i64) -> bool {
        known.key.is_current(Grammar::from_path(Path::new(&f.rel)))
            && known.size == f.size
            && known.mtime_ns == f.mtime_ns
            && known.ino == f.ino
            && (self.racy.settled(f.mtime_ns, since)
                || f.blob.is_some_and(|b| b == known.key.blob()))
    }

    /// Finds the content key of `f` (from the index, else by reading it) and its tags
    /// (what `prior` knew, the store, or a parse).
    fn resolve(
        &self,
        f: &files::Found,
        prior: Option<&Known>,
        since: i64,
        stats: &mut RefreshStats,
    ) -> Resolved {
        if prior.is_some_and(|k| self.proven(k, f, since)) {
            return Resolved::Same;
        }
        let lang = Grammar::from_path(Path::new(&f.rel));
        let path = self.root.join(&f.rel);
        let (key, mut bytes) = match f.blob {
            Some(blob) => (Key::new(&blob, lang), None),
            None => {
                let Ok(bytes) = crate::regular_file::read(&path, MAX_FILE_BYTES) else {
                    return Resolved::Gone;
                };
                stats.hashed += 1;
                (Key::new(&Key::blob_id(&bytes), lang), Some(bytes))
            }
        };
        if prior.is_some_and(|k| k.key == key) {
            return Resolved::Same;
        }
        if let Some(content) = self.store.as_ref().and_then(|s| s.get(&key)) {
            stats.from_store += 1;
            return Resolved::New { key, content };
        }
        let bytes = match bytes.take() {
            Some(b) => b,
            None => match crate::regular_file::read(&path, MAX_FILE_BYTES) {
                Ok(b) => b,
                Err(_) => return Resolved::Gone,
            },
        };
        stats.parsed += 1;
        // Keyed by what was parsed: the file may have changed since it was stat'ed.
        let key = Key::new(&Key::blob_id(&bytes), lang);
        Resolved::New {
            key,
            content: content_of(lang, &bytes),
        }
    }

    /// A slot for new content, its names interned.
    fn new_slot(&mut self, f: &files::Found, key: Key, content: Content) -> Slot {
        let (kind, tags) = match content {
            Content::Tags(tags) => (
                Kind::Tags {
                    defs: tags.defs.len() as u32,
                    refs: tags.refs.len() as u32,
                },
                Some(tags),
            ),
            Content::Untagged => (Kind::Untagged, None),
            Content::Binary => (Kind::Binary, None),
            Content::LongLines => (Kind::LongLines, None),
        };
        let mut known = Known {
            size: f.size,
            mtime_ns: f.mtime_ns,
            ino: f.ino,
            key,
            kind,
            defines: Words::default(),
            refs: Words::default(),
        };
        let loaded = tags.map(|tags| {
            let ids: Vec<u32> = tags.names().map(|n| self.interner.intern(n)).collect();
            let mut defines: Vec<u32> = tags.defs.iter().map(|d| ids[d.name as usize]).collect();
            defines.sort_unstable();
            defines.dedup();
            let mut refs: Vec<(u32, u32)> = tags
                .refs
                .iter()
                .map(|&(name, n)| (ids[name as usize], n))
                .collect();
            refs.sort_unstable();
            (known.defines, known.refs) = (defines.into(), refs.into());
            Arc::new(Loaded { tags, ids })
        });
        self.fresh.push(key);
        Slot {
            known,
            tags: OnceLock::from(loaded),
        }
    }

    /// A slot for what the snapshot knew; its tags are loaded when first shown.
    fn slot_of(&self, known: Known) -> Slot {
        let tags = OnceLock::new();
        if !matches!(known.kind, Kind::Tags { .. }) {
            let _ = tags.set(None);
        }
        Slot { known, tags }
    }

    /// The tags of a tagged slot whose current content is `content`: from the store,
    /// else parsed again (the store may have evicted them).
    fn load_tags(&self, slot: &Slot, path: &str, content: &[u8]) -> Option<Arc<Loaded>> {
        let tags = match self.store.as_ref().and_then(|s| s.get(&slot.known.key)) {
            Some(Content::Tags(tags)) => tags,
            _ => match content_of(Grammar::from_path(Path::new(path)), content) {
                Content::Tags(tags) => tags,
                _ => return None,
            },
        };
        let ids = tags
            .names()
            .map(|n| self.interner.get(n).unwrap_or(u32::MAX))
            .collect();
        Some(Arc::new(Loaded { tags, ids }))
    }

    /// What the map derives from its paths alone: their noise (`attributes` asked first
    /// and kept current) and their packages (found when first needed).
    fn rebuild_index(&mut self) {
        let (left_out, changed) = left_out::by_path(&self.root, &self.paths, &mut self.attributes);
        self.packages = OnceLock::new();
        self.left_out = left_out;
        self.unsaved |= changed;
    }

    /// Fills in the totals over the whole file set.
    fn total_stats(&self, stats: &mut RefreshStats) {
        stats.files_seen = self.slots.len() + stats.skipped_large + stats.unreadable;
        for slot in &self.slots {
            match slot.known.kind {
                Kind::Binary => stats.skipped_binary += 1,
                Kind::Tags { defs, refs } => {
                    stats.definitions += defs as usize;
                    stats.references += refs as usize;
                }
                Kind::Untagged | Kind::LongLines => {}
            }
        }
    }

    /// The graph of the files as they are now, built when first needed.
    fn rebuild_graph(&mut self) {
        let files = self.slots.iter().map(|s| {
            let k = &s.known;
            (k.defines.clone(), k.refs.clone())
        });
        self.graph = Arc::new(GraphCell::new(files, Arc::clone(self.interner.names())));
    }

    /// How big the reference graph is (built now if it was not).
    pub fn graph_stats(&self) -> GraphStats {
        self.graph.get().stats()
    }

    /// Writes what changed since it was last written: new tags to the shared store,
    /// this checkout's snapshot, the block token counts (also done by the next full
    /// `refresh` and on drop). Failures are logged: the caches are an optimization,
    /// never a reason to fail.
    pub fn save(&mut self) {
        let Some(stem) = &self.cache_stem else {
            return;
        };
        if std::mem::take(&mut self.staged.unsaved) {
            let path = stem.with_extension("staged");
            if let Err(e) = cache::save_staged(&path, &self.staged) {
                tracing::warn!("cannot save the index's entries {}: {e}", path.display());
            }
        }
        if !std::mem::take(&mut self.unsaved) {
            return self.save_counts();
        }
        if let Some(store) = &mut self.store {
            let fresh: std::collections::HashSet<Key> = self.fresh.drain(..).collect();
            let fresh: Vec<(Key, store::ContentRef)> = self
                .slots
                .iter()
                .filter(|s| fresh.contains(&s.known.key))
                .filter_map(|s| stored_content(s).map(|c| (s.known.key, c)))
                .collect();
            let live: Vec<Key> = self.slots.iter().map(|s| s.known.key).collect();
            if let Err(e) = store.save(&fresh, &live) {
                tracing::warn!("cannot save to the repo map store: {e}");
            }
        }
        let path = stem.with_extension("snap");
        let files: Vec<(&str, &Known)> = self
            .paths
            .iter()
            .zip(&self.slots)
            .map(|(p, s)| (p.as_str(), &s.known))
            .collect();
        let saved = cache::save_snapshot(
            &path,
            self.read_ns,
            self.interner.names(),
            &files,
            &self.attributes,
        );
        if let Err(e) = saved {
            tracing::warn!("cannot save repo map snapshot {}: {e}", path.display());
        }
        if let Some(dir) = stem.parent() {
            cache::evict_checkouts(dir, stem, cache::CHECKOUTS_CAP_BYTES);
        }
        self.save_counts();
    }

    fn save_counts(&mut self) {
        let Some(stem) = &self.cache_stem else {
            return;
        };
        if let Some(counts) = self.block_counts.take_added() {
            let path = counts_path(stem, &self.counter);
            if let Err(e) = cache::save_counts(&path, &counts) {
                tracing::warn!("cannot save repo map token counts {}: {e}", path.display());
            }
        }
    }

    /// Names in `text` that the map knows: file paths and basenames of the file set, and
    /// identifiers defined somewhere in it. Feed the result to [`build`](Self::build).
    pub fn mentions(&self, text: &str) -> Mentions {
        mentions::find(text, &self.paths, |name| {
            self.interner
                .get(name)
                .is_some_and(|id| self.graph.get().is_defined(id))
        })
    }

    /// Ranks the repository for a chat and fits the map into `budget` tokens; the last
    /// map fitted from the same files and inputs is reused (`fitted.rs`).
    ///
    /// `chat_files` are left out of the map and personalize the rank, as do
    /// `mentioned_files`; both are root-relative (or absolute under the root).
    /// `mentioned_idents` weigh x10 on the edges that carry them.
    pub fn build(
        &self,
        chat_files: &[impl AsRef<Path>],
        mentioned_files: &[impl AsRef<Path>],
        mentioned_idents: &[impl AsRef<str>],
        budget: usize,
    ) -> MapResult {
        let start = Instant::now();
        let chat = self.file_indices(chat_files);
        let mentioned_files = self.file_indices(mentioned_files);
        let mentioned: Vec<u32> = mentioned_idents
            .iter()
            .filter_map(|i| self.interner.get(i.as_ref()))
            .collect();
        let names = self.interner.names();
        let idents: Vec<&str> = mentioned.iter().map(|&i| names.get(i)).collect();
        let key = fitted::key(
            self.state_digest(),
            &fitted::Inputs {
                chat: &chat,
                mentioned_files: &mentioned_files,
                mentioned_idents: &idents,
                budget,
                counter: &self.counter,
            },
        );
        let personal = Personal::new(self.slots.len(), &chat, &mentioned_files, mentioned);
        let path = self.cache_stem.as_ref().map(|s| s.with_extension("fitted"));
        if let Some(last) = path
            .as_deref()
            .and_then(cache::load_fitted)
            .filter(|f| f.key == key && f.read.iter().all(|&file| self.still_current(file)))
        {
            let took = start.elapsed();
            return self.result(last, personal, None, budget, (took, Duration::ZERO));
        }
        let (fitted, ranking, times) = self.fit(key, &personal, budget, start);
        // A map that read a file changed since the refresh shows what is on disk only
        // now: it is not kept.
        if let Some(path) = path.as_deref().filter(|_| fitted.all_current)
            && let Err(e) = cache::save_fitted(path, &fitted)
        {
            tracing::warn!("cannot save the fitted repo map {}: {e}", path.display());
        }
        self.result(fitted, personal, Some(ranking), budget, times)
    }

    /// Whether the stat data of `file` proves it still is what the last refresh found.
    fn still_current(&self, file: u32) -> bool {
        let (Some(slot), Some(path)) =
            (self.slots.get(file as usize), self.paths.get(file as usize))
        else {
            return false;
        };
        files::stat(&self.root, path).is_some_and(|f| self.proven(&slot.known, &f, self.read_ns))
    }

    /// The digest of the file set as the last refresh left it (`fitted::state_digest`).
    fn state_digest(&self) -> u128 {
        fitted::state_digest(self.paths.iter().zip(&self.slots).enumerate().map(
            |(f, (path, slot))| {
                let left_out = self.left_out.get(f).copied().flatten();
                (path.as_str(), slot.known.key, slot.known.kind, left_out)
            },
        ))
    }

    /// Ranks the files for `personal` and fits the map into `budget`: the map keyed
    /// `key`, its ranking, and how long ranking and fitting took since `start`.
    fn fit(
        &self,
        key: u128,
        personal: &Personal,
        budget: usize,
        start: Instant,
    ) -> (fitted::Fitted, Ranking, (Duration, Duration)) {
        let n = self.slots.len();
        let Personal {
            chat,
            personal,
            mentioned,
        } = personal;
        let graph = self.graph.get();
        let ranking = graph.rank(chat, personal, mentioned);
        // Noise is left out unless the chat names it.
        let mut left_out = [0usize; left_out::Reason::ALL.len()];
        let listed: Vec<bool> = (0..n as u32)
            .map(|f| {
                if chat[f as usize] || !self.is_mappable(f) {
                    return false;
                }
                match self.noise(f) {
                    Some(reason) if personal[f as usize] == 0.0 => {
                        left_out[reason as usize] += 1;
                        false
                    }
                    _ => true,
                }
            })
            .collect();
        let defines: Vec<&[u32]> = self
            .slots
            .iter()
            .zip(&listed)
            .map(
                |(s, &listed)| {
                    if listed { &s.known.defines[..] } else { &[] }
                },
            )
            .collect();
        let credits = graph.credits(&ranking, &defines);
        let rank_time = start.elapsed();

        let fit_start = Instant::now();
        let mut by_rank: Vec<u32> = (0..n as u32).filter(|&f| listed[f as usize]).collect();
        // Equal scores (all zero when the chat files reference nothing, or there is no
        // graph at all) go by what the chat mentions, then by how referenced a file is,
        // then by size: never by name.
        let mentions = |f: u32| {
            let defines = &self.slots[f as usize].known.defines;
            personal[f as usize] > 0.0 || mentioned.iter().any(|i| defines.binary_search(i).is_ok())
        };
        let fallback = |f: u32| {
            (
                mentions(f),
                graph.in_degree(f),
                self.slots[f as usize].known.size,
            )
        };
        // Files without tags (YAML, SQL, data) rank below tagged ones unless named.
        let tier = |f: u32| self.slots[f as usize].is_tagged() || personal[f as usize] > 0.0;
        by_rank.sort_by_cached_key(|&f| {
            (
                std::cmp::Reverse(tier(f)),
                std::cmp::Reverse(OrderedScore(ranking.file_rank[f as usize])),
                std::cmp::Reverse(fallback(f)),
                f,
            )
        });
        let mut position = vec![u32::MAX; n];
        for (at, &f) in by_rank.iter().enumerate() {
            position[f as usize] = at as u32;
        }
        let important: Vec<u32> = self
            .packages()
            .important(&ranking.file_rank, chat, |f| graph.in_degree(f))
            .into_iter()
            .filter(|&f| position[f as usize] != u32::MAX)
            .collect();
        let important_items = important.iter().map(|&file| Item::Important { file });
        let mut is_important = vec![false; n];
        for &f in &important {
            is_important[f as usize] = true;
        }
        let collapsed = collapse::collapse(&self.paths, self.packages(), &by_rank, |f| {
            !is_important[f as usize]
                && !self.slots[f as usize].is_tagged()
                && personal[f as usize] == 0.0
        });
        let rendering = Rendering::new(self, &collapsed.lines);
        let defs = RankedDefs::new(credits, self, &position).flat_map(|c| rendering.defs_of(c));
        let bare = collapsed.entries.iter().map(|&file| Item::Bare { file });
        let map = render::fit(
            important_items.chain(defs).chain(bare),
            &rendering,
            &self.counter,
            &self.block_counts,
            budget,
        );
        let (read, all_current) = rendering.read();
        let fitted = fitted::Fitted {
            key,
            read,
            all_current,
            text: map.text,
            tokens: map.tokens,
            ranked_files: collapsed
                .entries
                .iter()
                .map(|&f| {
                    (
                        rendering.path_or_line(f).to_string(),
                        ranking.file_rank[f as usize],
                    )
                })
                .collect(),
            left_out: left_out::Reason::ALL
                .into_iter()
                .zip(left_out)
                .filter(|&(_, count)| count > 0)
                .collect(),
            shown_defs: map.defs,
            shown_files: map.files,
            collapsed: collapsed.lines.len(),
            collapsed_files: collapsed.files,
            important: important
                .iter()
                .take(map.important)
                .map(|&f| self.paths[f as usize].clone())
                .collect(),
        };
        (fitted, ranking, (rank_time, fit_start.elapsed()))
    }

    /// The result of a fitted map; `ranking` is made when first asked for if the map
    /// was reused.
    fn result(
        &self,
        fitted: fitted::Fitted,
        personal: Personal,
        ranking: Option<Ranking>,
        budget: usize,
        (rank_time, fit_time): (Duration, Duration),
    ) -> MapResult {
        MapResult {
            reused: ranking.is_none(),
            text: fitted.text,
            tokens: fitted.tokens,
            budget,
            ranked_files: fitted.ranked_files,
            left_out: fitted
                .left_out
                .into_iter()
                .map(|(reason, count)| (reason.label(), count))
                .collect(),
            shown_defs: fitted.shown_defs,
            shown_files: fitted.shown_files,
            collapsed: fitted.collapsed,
            collapsed_files: fitted.collapsed_files,
            important: fitted.important,
            rank_time,
            fit_time,
            explain: Explain {
                graph: Arc::clone(&self.graph),
                ranking: ranking.map_or_else(OnceLock::new, OnceLock::from),
                personal,
                paths: Arc::clone(&self.paths),
                names: Arc::clone(self.interner.names()),
            },
        }
    }

    fn packages(&self) -> &important::Packages {
        self.packages
            .get_or_init(|| important::Packages::find(&self.paths))
    }

    fn is_mappable(&self, file: u32) -> bool {
        !matches!(self.slots[file as usize].known.kind, Kind::Binary)
    }

    /// Why `file` is noise the map leaves out, if it is.
    fn noise(&self, file: u32) -> Option<left_out::Reason> {
        self.left_out
            .get(file as usize)
            .copied()
            .flatten()
            .or_else(|| {
                matches!(self.slots[file as usize].known.kind, Kind::LongLines)
                    .then_some(left_out::Reason::LongLines)
            })
    }

    /// The file indices of those of `paths` in the set, in their order.
    fn file_indices(&self, paths: &[impl AsRef<Path>]) -> Vec<u32> {
        paths
            .iter()
            .filter_map(|p| self.file_index(p.as_ref()))
            .collect()
    }

    /// The file index of a root-relative or absolute path.
    fn file_index(&self, path: &Path) -> Option<u32> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.root).ok()?
        } else {
            path
        };
        position(&self.paths, &rel.to_str()?.replace('\\', "/"))
    }

    /// The content of `file` if it still is what its tags were taken from: its stat
    /// data proves it, or its blob id does.
    fn current_content(&self, file: u32) -> Option<Rc<[u8]>> {
        let slot = &self.slots[file as usize];
        let path = self.root.join(&self.paths[file as usize]);
        let content = crate::regular_file::read(&path, MAX_FILE_BYTES).ok()?;
        // Stat'ed after the read: a change before the read shows in it.
        let found = files::stat(&self.root, &self.paths[file as usize])?;
        let current = self.proven(&slot.known, &found, self.read_ns)
            || Key::blob_id(&content) == slot.known.key.blob();
        current.then(|| Rc::from(content))
    }
}

impl Drop for RepoMap {
    fn drop(&mut self) {
        self.save();
    }
}

/// The files of one `build` as the renderer sees them: each file shown is read once,
/// and shown only if it still is what its tags were taken from.
struct Rendering<'a> {
    map: &'a RepoMap,
    contents: RefCell<HashMap<u32, Option<Rc<[u8]>>>>,
    /// The line of each collapsed group, by the file that stands for it.
    collapsed: &'a HashMap<u32, String>,
}

impl<'a> Rendering<'a> {
    fn new(map: &'a RepoMap, collapsed: &'a HashMap<u32, String>) -> Self {
        Rendering {
            map,
            contents: RefCell::default(),
            collapsed,
        }
    }
}

impl<'a> Rendering<'a> {
    /// The files whose content was read, in index order, and whether each still was
    /// what its tags were taken from.
    fn read(&self) -> (Vec<u32>, bool) {
        let contents = self.contents.borrow();
        let mut read: Vec<u32> = contents.keys().copied().collect();
        read.sort_unstable();
        (read, contents.values().all(Option::is_some))
    }

    /// The path of `file`, or the line of the collapsed group it stands for.
    fn path_or_line(&self, file: u32) -> &'a str {
        self.collapsed
            .get(&file)
            .map_or(self.map.paths[file as usize].as_str(), String::as_str)
    }

    /// The tags of `file` and the content they were taken from, when it is tagged and
    /// unchanged; its tags are loaded on first use.
    fn loaded(&self, file: u32) -> Option<(&'a Loaded, Rc<[u8]>)> {
        let map = self.map;
        let slot = &map.slots[file as usize];
        if !slot.is_tagged() {
            return None;
        }
        let content = self
            .contents
            .borrow_mut()
            .entry(file)
            .or_insert_with(|| map.current_content(file))
            .clone()?;
        let loaded = slot
            .tags
            .get_or_init(|| map.load_tags(slot, &map.paths[file as usize], &content))
            .as_deref()?;
        Some((loaded, content))
    }

    /// The definitions of the credited identifier in its file, in source order (none
    /// when the file changed since its tags were taken).
    fn defs_of(&self, credit: Credit) -> impl Iterator<Item = Item> + use<'a> {
        let loaded = self.loaded(credit.file).map(|(l, _)| l);
        let defs: &'a [tags::Def] = loaded.map_or(&[], |l| &l.tags.defs);
        defs.iter()
            .enumerate()
            .filter(move |(_, d)| loaded.is_some_and(|l| l.ids[d.name as usize] == credit.ident))
            .map(move |(k, _)| Item::Def {
                file: credit.file,
                def: k as u32,
            })
    }
}

impl render::Source for Rendering<'_> {
    fn path(&self, file: u32) -> &str {
        self.path_or_line(file)
    }

    fn tagged(&self, file: u32) -> Option<(&FileTags, Rc<[u8]>)> {
        self.loaded(file).map(|(l, content)| (&l.tags, content))
    }
}

/// A score that sorts (scores are never NaN; `total_cmp` orders them all).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrderedScore(f64);

impl Eq for OrderedScore {}

impl PartialOrd for OrderedScore {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedScore {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Credits best first, sorted lazily in growing chunks: a map rarely needs more than a
/// few thousand of the hundreds of thousands a large repository has.
struct RankedDefs<'a> {
    credits: Vec<Credit>,
    sorted: usize,
    next: usize,
    chunk: usize,
    map: &'a RepoMap,
    /// Each file's place in the ranked file list.
    position: &'a [u32],
}

impl<'a> RankedDefs<'a> {
    fn new(credits: Vec<Credit>, map: &'a RepoMap, position: &'a [u32]) -> Self {
        RankedDefs {
            credits,
            sorted: 0,
            next: 0,
            chunk: 1024,
            map,
            position,
        }
    }

    /// Best score first; ties by the file's place in the ranked list, then by name, so
    /// the map is deterministic.
    fn order(&self, a: &Credit, b: &Credit) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then(self.position[a.file as usize].cmp(&self.position[b.file as usize]))
            .then_with(|| {
                let names = self.map.interner.names();
                names.get(a.ident).cmp(names.get(b.ident))
            })
    }
}

impl Iterator for RankedDefs<'_> {
    type Item = Credit;

    fn next(&mut self) -> Option<Credit> {
        if self.next == self.sorted {
            let mut rest = std::mem::take(&mut self.credits);
            let tail = &mut rest[self.sorted..];
            if tail.is_empty() {
                return None;
            }
            let k = self.chunk.min(tail.len());
            if k < tail.len() {
                tail.select_nth_unstable_by(k, |a, b| self.order(a, b));
            }
            tail[..k].sort_unstable_by(|a, b| self.order(a, b));
            self.credits = rest;
            self.sorted += k;
            self.chunk *= 4;
        }
        self.next += 1;
        Some(self.credits[self.next - 1])
    }
}

/// What `bytes` hold for the map, for a file of `lang`.
fn content_of(lang: Option<Grammar>, bytes: &[u8]) -> Content {
    if crate::diff::is_binary(bytes) {
        return Content::Binary;
    }
    if crate::noise::has_long_lines(bytes) {
        return Content::LongLines;
    }
    match lang {
        Some(lang) => {
            let tags = tags::extract(lang, bytes);
            if tags.defs.is_empty() && tags.refs.is_empty() {
                Content::Untagged
            } else {
                Content::Tags(tags)
            }
        }
        None => Content::Untagged,
    }
}

/// What the store keeps for a slot: its tags (if loaded), or its kind.
fn stored_content(slot: &Slot) -> Option<store::ContentRef<'_>> {
    Some(match slot.known.kind {
        Kind::Tags { .. } => store::ContentRef::Tags(&slot.tags.get()?.as_ref()?.tags),
        Kind::Untagged => store::ContentRef::Untagged,
        Kind::Binary => store::ContentRef::Binary,
        Kind::LongLines => store::ContentRef::LongLines,
    })
}

/// The snapshot's files, sorted, claimed in path order by the first refresh's sorted
/// scan: a walk along both lists, not a table of 17k paths built to be emptied.
struct Disk {
    files: std::iter::Peekable<std::vec::IntoIter<(String, Known)>>,
    /// Files passed over: in the snapshot, no longer in the set.
    passed: usize,
}

impl Default for Disk {
    fn default() -> Self {
        Disk::of(Vec::new())
    }
}

impl Disk {
    fn of(mut files: Vec<(String, Known)>) -> Disk {
        if !files.is_sorted_by(|a, b| a.0 < b.0) {
            files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            files.dedup_by(|a, b| a.0 == b.0);
        }
        Disk {
            files: files.into_iter().peekable(),
            passed: 0,
        }
    }

    /// What the snapshot knew of `rel`; asked in increasing path order.
    fn claim(&mut self, rel: &str) -> Option<Known> {
        while let Some((path, _)) = self.files.peek() {
            match path.as_str().cmp(rel) {
                std::cmp::Ordering::Less => {
                    self.passed += 1;
                    self.files.next();
                }
                std::cmp::Ordering::Equal => return self.files.next().map(|(_, k)| k),
                std::cmp::Ordering::Greater => return None,
            }
        }
        None
    }

    /// Whether some file of the snapshot was not claimed.
    fn unclaimed(&mut self) -> bool {
        self.passed > 0 || self.files.peek().is_some()
    }
}

/// Where `path` is in `paths` (sorted): a search, not a table, which a warm start
/// would build for 17k paths to look up a handful.
fn position(paths: &[String], path: &str) -> Option<u32> {
    paths
        .binary_search_by(|p| p.as_str().cmp(path))
        .ok()
        .map(|i| i as u32)
}

fn set_stat(known: &mut Known, f: &files::Found) {
    known.size = f.size;
    known.mtime_ns = f.mtime_ns;
    known.ino = f.ino;
}

/// Adds the per-file counts of a parallel resolve.
fn add_counts(total: &mut RefreshStats, part: &RefreshStats) {
    total.parsed += part.parsed;
    total.from_store += part.from_store;
    total.hashed += part.hashed;
}

fn counts_path(stem: &Path, counter: &TokenCounter) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(format!(".{}.counts", counter.encoding().name()));
    PathBuf::from(name)
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_budget_follows_the_design() {
        assert_eq!(default_budget(128_000, true), 4096);
        assert_eq!(default_budget(16_000, true), 2000);
        assert_eq!(default_budget(4_000, true), 500);
        assert_eq!(default_budget(2_048, true), 256);
        assert_eq!(default_budget(2_048, false), 256);
        assert_eq!(default_budget(128_000, false), 32_768);
        assert_eq!(default_budget(32_768, false), 28_672);
        assert_eq!(default_budget(8_192, false), 4096);
        assert_eq!(default_budget(4_096, false), 512);
    }

    /// A snapshot written by a tern whose tags version differs (another literal query,
    /// say) must not serve its tags for files whose stat data still matches.
    #[test]
    fn a_snapshot_of_another_tags_version_is_parsed_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&root).unwrap();
        git2::Repository::init(&root).unwrap();
        std::fs::write(
            root.join("lib.rs"),
            "pub const KEY: &str = \"sk_live_value\";\n",
        )
        .unwrap();
        // Old enough that its stat data alone proves it unchanged.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .append(true)
            .open(root.join("lib.rs"))
            .and_then(|f| f.set_modified(old))
            .unwrap();
        let open = || {
            let counter =
                crate::tokens::TokenCounter::new(crate::tokens::Encoding::O200kBase, false);
            RepoMap::open(&root, counter, CacheLocation::Dir(cache.clone())).unwrap()
        };
        let mut first = open();
        assert_eq!(first.refresh(&|_| {}).parsed, 1);
        first.save();
        let stem = first.cache_stem.clone().unwrap();
        drop(first);
        // An old tern's snapshot: the same files, keyed by another version.
        let path = stem.with_extension("snap");
        let (snapshot, why) = cache::load_snapshot(&path);
        assert!(why.is_none(), "{why:?}");
        let files: Vec<(String, Known)> = snapshot
            .files
            .into_iter()
            .map(|(p, mut known)| {
                known.key = Key::new(known.key.blob(), None);
                (p, known)
            })
            .collect();
        let borrowed: Vec<(&str, &Known)> = files.iter().map(|(p, k)| (p.as_str(), k)).collect();
        cache::save_snapshot(
            &path,
            snapshot.saved_ns,
            &snapshot.names,
            &borrowed,
            &snapshot.attributes,
        )
        .unwrap();

        let mut second = open();
        let stats = second.refresh(&|_| {});
        assert_eq!((stats.from_cache, stats.parsed + stats.from_store), (0, 1));
        assert!(
            second
                .slots
                .iter()
                .all(|s| s.known.key.is_current(Some(Grammar::Rust)))
        );
    }

    #[test]
    fn repo_map_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<RepoMap>();
        check::<MapResult>();
    }
}
