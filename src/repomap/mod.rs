//! The repo map: tree-sitter tags of every file, ranked with personalized PageRank and
//! fitted to a token budget (DESIGN.md §5).
//!
//! Use: [`RepoMap::open`] once per repository, [`RepoMap::refresh`] (whole tree) or
//! [`RepoMap::refresh_files`] (files known to have changed) whenever files may have
//! changed, then [`RepoMap::build`] for each request. `build` takes `&self` and is cheap
//! once tags are loaded; `RepoMap` is `Send + Sync`, so the engine can keep it behind an
//! `Arc<RwLock<_>>` and call it from `spawn_blocking`.

mod cache;
mod files;
mod interner;
mod languages;
mod mentions;
mod rank;
mod render;
mod tags;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

pub use files::MAX_FILE_BYTES;
pub use languages::Lang;
pub use mentions::Mentions;
pub use render::{BAR, ELISION};
pub use tags::MAX_LINE_CHARS;

use crate::tokens::TokenCounter;
use cache::{Content, Entry};
use interner::{Interner, Names};
use rank::{Credit, FileIdents, Graph, Ranking};
use render::{BlockCounts, Item};
use tags::FileTags;

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
pub fn relative_path(root: &Path, cwd: &Path, path: &Path) -> Option<String> {
    files::to_rel(root, cwd, path)
}

/// Where the tag cache lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheLocation {
    /// `dirs::cache_dir()/tern/tags` (no disk cache if the platform has no cache dir).
    UserCacheDir,
    /// This directory instead (tests, or a user's override).
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
    /// Files whose tags came from the disk cache.
    pub from_cache: usize,
    /// Files whose tags were already in memory and unchanged.
    pub unchanged: usize,
    pub skipped_binary: usize,
    pub skipped_large: usize,
    /// Files that could not be read (vanished, permissions).
    pub unreadable: usize,
    /// Definitions and references (distinct names per file) across the set.
    pub definitions: usize,
    pub references: usize,
    pub graph_identifiers: usize,
    pub graph_edges: usize,
    /// Why the disk cache was discarded, if it was.
    pub cache_discarded: Option<String>,
    /// Walking the tree (the first refresh reads the tag cache alongside).
    #[serde(serialize_with = "as_ms")]
    pub scan: Duration,
    #[serde(serialize_with = "as_ms")]
    pub parse: Duration,
    #[serde(serialize_with = "as_ms")]
    pub graph: Duration,
    #[serde(serialize_with = "as_ms")]
    pub save: Duration,
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
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
    /// Every file that could be in the map (chat and binary files excluded) with its
    /// PageRank score, best first.
    pub ranked_files: Vec<(String, f64)>,
    /// Definitions and files shown.
    pub shown_defs: usize,
    pub shown_files: usize,
    pub rank_time: Duration,
    pub fit_time: Duration,
    explain: Explain,
}

/// What `MapResult::why` needs, shared with the `RepoMap` that made it.
struct Explain {
    graph: Arc<Graph>,
    ranking: Ranking,
    paths: Arc<Vec<String>>,
    names: Arc<Names>,
    index: Arc<HashMap<String, u32>>,
}

impl MapResult {
    /// The top edges (identifier, from which file, rank carried) that put `path` in
    /// the map, strongest first; empty for an unknown path or one nobody references.
    pub fn why(&self, path: &str, limit: usize) -> Vec<WhyEdge> {
        let e = &self.explain;
        let Some(&file) = e.index.get(path) else {
            return Vec::new();
        };
        e.graph
            .why(&e.ranking, file, limit)
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

/// One file of the set and what is known about it.
struct Slot {
    entry: Entry,
    /// For tagged files: the file's name index -> global identifier id.
    ids: Vec<u32>,
    /// Distinct global identifier ids the file defines, sorted.
    defines: Vec<u32>,
    /// (global identifier id, references), sorted.
    refs: Vec<(u32, u32)>,
}

/// The repo map of one repository.
pub struct RepoMap {
    root: PathBuf,
    /// `<cache dir>/<hash of root>`: the cache files' common stem.
    cache_stem: Option<PathBuf>,
    counter: TokenCounter,
    block_counts: BlockCounts,
    /// Root-relative paths, sorted; `slots[i]` belongs to `paths[i]`.
    paths: Arc<Vec<String>>,
    slots: Vec<Slot>,
    index: Arc<HashMap<String, u32>>,
    interner: Interner,
    graph: Arc<Graph>,
    /// Tags loaded from disk and not yet claimed by a refresh; None until the first
    /// refresh loads them.
    disk: Option<HashMap<String, Entry>>,
    disk_saved_ns: i64,
    /// When this process last read the files.
    read_ns: i64,
    /// Tags changed since the cache was last written.
    unsaved: bool,
}

/// Files whose mtime is this close to the moment their tags were read could have been
/// changed again within the same clock tick: their content hash is checked.
const RACY_NS: i64 = 2_000_000_000;

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
        let cache_stem = cache_root.map(|dir| cache::stem_for(&dir, &root));
        let block_counts = BlockCounts::new(match &cache_stem {
            Some(stem) => cache::load_counts(&counts_path(stem, &counter)),
            None => HashMap::new(),
        });
        Ok(RepoMap {
            root,
            cache_stem,
            counter,
            block_counts,
            paths: Arc::default(),
            slots: Vec::new(),
            index: Arc::default(),
            interner: Interner::default(),
            graph: Arc::new(Graph::build(&[], 0, |_| "")),
            disk: None,
            disk_saved_ns: 0,
            read_ns: 0,
            unsaved: false,
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

    /// Re-scans the whole file set, re-parses what changed (in parallel, reporting each
    /// parsed file to `progress`), rebuilds the graph and saves the cache.
    pub fn refresh(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> RefreshStats {
        let start = Instant::now();
        // The first refresh reads the tag cache while the tree is walked.
        let tags_file = self
            .cache_stem
            .as_ref()
            .filter(|_| self.disk.is_none())
            .map(|stem| stem.with_extension("tags"));
        let (found, loaded) = rayon::join(
            || files::scan(&self.root),
            || tags_file.map(|path| cache::load_tags(&path)),
        );
        let scan = start.elapsed();
        let mut discarded = None;
        if let Some((body, why)) = loaded {
            if let Some(why) = &why {
                tracing::warn!("repo map cache discarded: {why}");
            }
            discarded = why;
            self.disk = Some(body.entries.into_iter().collect());
            self.disk_saved_ns = body.saved_ns;
        }
        let mut stats = self.update(found, progress, scan, true);
        stats.cache_discarded = discarded;
        stats
    }

    /// Like [`refresh`](Self::refresh) for files the caller knows changed (edited,
    /// created or deleted; root-relative paths): no tree walk. Call it after a first
    /// `refresh`; the named files are taken as part of the file set. The disk cache is
    /// written later ([`save`](Self::save), the next `refresh`, or drop), so an edit
    /// costs a re-parse, not a rewrite of the whole cache.
    pub fn refresh_files(&mut self, changed: &[String]) -> RefreshStats {
        let start = Instant::now();
        let mut stats = RefreshStats::default();
        let mut set_changed = false;
        let mut tags_changed = false;
        let mut seen = std::collections::HashSet::new();
        for rel in changed.iter().filter(|r| seen.insert(r.as_str())) {
            let found = files::stat(&self.root, rel);
            if found.as_ref().is_some_and(|f| f.size > MAX_FILE_BYTES) {
                stats.skipped_large += 1;
            }
            let found = found.filter(|f| f.size <= MAX_FILE_BYTES);
            let existing = self.index.get(rel.as_str()).copied();
            if let (Some(f), Some(i)) = (&found, existing)
                && self.still_valid(&self.slots[i as usize].entry, f, self.read_ns)
            {
                stats.unchanged += 1;
                continue;
            }
            let entry = found.and_then(|_| read_entry(&self.root, rel));
            stats.parsed += usize::from(entry.is_some());
            let slot = entry.map(|e| self.index_entry(e));
            tags_changed = true;
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
                (None, None) => {}
            }
        }
        stats.parse = start.elapsed();
        let graph_start = Instant::now();
        if set_changed {
            self.rebuild_index();
        }
        if tags_changed {
            self.rebuild_graph();
            self.unsaved = true;
        }
        stats.graph = graph_start.elapsed();
        self.total_stats(&mut stats);
        stats
    }

    fn update(
        &mut self,
        found: Vec<files::Found>,
        progress: &(dyn Fn(Progress) + Sync),
        scan: Duration,
        save: bool,
    ) -> RefreshStats {
        let mut stats = RefreshStats {
            scan,
            ..RefreshStats::default()
        };
        let parse_start = Instant::now();
        let now = now_ns();
        let mut old: HashMap<String, Slot> = Arc::unwrap_or_clone(std::mem::take(&mut self.paths))
            .into_iter()
            .zip(std::mem::take(&mut self.slots))
            .collect();

        // Reuse what is known and unchanged; collect the rest for parsing.
        let mut kept: Vec<(String, Option<Slot>, Option<Entry>)> = Vec::new();
        let mut to_parse = Vec::new();
        for f in found {
            if f.size > MAX_FILE_BYTES {
                stats.skipped_large += 1;
                continue;
            }
            if let Some(slot) = old.remove(&f.rel)
                && self.still_valid(&slot.entry, &f, self.read_ns)
            {
                stats.unchanged += 1;
                kept.push((f.rel, Some(slot), None));
            } else if let Some(entry) = self.disk.as_mut().and_then(|d| d.remove(&f.rel))
                && self.still_valid(&entry, &f, self.disk_saved_ns)
            {
                stats.from_cache += 1;
                kept.push((f.rel, None, Some(entry)));
            } else {
                to_parse.push(kept.len());
                kept.push((f.rel, None, None));
            }
        }
        // Parsed files, deleted files and stale disk entries all call for a save.
        let stale_on_disk = self.disk.as_ref().is_some_and(|d| !d.is_empty());
        let changed = !to_parse.is_empty() || !old.is_empty() || stale_on_disk;

        let total = to_parse.len();
        let done = AtomicUsize::new(0);
        let root = &self.root;
        let parsed: Vec<(usize, Option<Entry>)> = to_parse
            .par_iter()
            .map(|&k| {
                let entry = read_entry(root, &kept[k].0);
                let parsed = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress { parsed, total });
                (k, entry)
            })
            .collect();
        for (k, entry) in parsed {
            match entry {
                Some(e) => {
                    kept[k].2 = Some(e);
                    stats.parsed += 1;
                }
                None => stats.unreadable += 1,
            }
        }
        stats.parse = parse_start.elapsed();

        let graph_start = Instant::now();
        let mut paths = Vec::with_capacity(kept.len());
        for (rel, slot, entry) in kept {
            let slot = match (slot, entry) {
                (Some(slot), _) => slot,
                (None, Some(entry)) => self.index_entry(entry),
                (None, None) => continue,
            };
            paths.push(rel);
            self.slots.push(slot);
        }
        self.paths = Arc::new(paths);
        self.rebuild_index();
        self.read_ns = now;
        self.rebuild_graph();
        stats.graph = graph_start.elapsed();
        self.total_stats(&mut stats);

        self.unsaved |= changed;
        if save {
            let save_start = Instant::now();
            self.save();
            stats.save = save_start.elapsed();
        }
        // Whatever the disk held for files no longer in the set is dropped with it.
        if let Some(disk) = &mut self.disk {
            disk.clear();
        }
        stats
    }

    fn rebuild_index(&mut self) {
        self.index = Arc::new(
            self.paths
                .iter()
                .enumerate()
                .map(|(i, p)| (p.clone(), i as u32))
                .collect(),
        );
    }

    /// Fills in the totals over the whole file set.
    fn total_stats(&self, stats: &mut RefreshStats) {
        stats.files_seen = self.slots.len() + stats.skipped_large + stats.unreadable;
        for slot in &self.slots {
            match &slot.entry.content {
                Content::Binary => stats.skipped_binary += 1,
                Content::Tags(t) => {
                    stats.definitions += t.defs.len();
                    stats.references += t.refs.len();
                }
                Content::Untagged => {}
            }
        }
        let g = self.graph.stats();
        stats.graph_identifiers = g.identifiers;
        stats.graph_edges = g.edges;
    }

    /// Whether a known entry still describes the file found on disk.
    fn still_valid(&self, entry: &Entry, found: &files::Found, read_ns: i64) -> bool {
        if entry.size != found.size || entry.mtime_ns != found.mtime_ns {
            return false;
        }
        if found.mtime_ns < read_ns - RACY_NS {
            return true;
        }
        std::fs::read(self.root.join(&found.rel)).is_ok_and(|c| xxh3_64(&c) == entry.hash)
    }

    /// Interns a fresh entry's names.
    fn index_entry(&mut self, entry: Entry) -> Slot {
        let (ids, defines, refs) = match &entry.content {
            Content::Tags(tags) => {
                let ids: Vec<u32> = tags.names().map(|n| self.interner.intern(n)).collect();
                let mut defines: Vec<u32> =
                    tags.defs.iter().map(|d| ids[d.name as usize]).collect();
                defines.sort_unstable();
                defines.dedup();
                let mut refs: Vec<(u32, u32)> = tags
                    .refs
                    .iter()
                    .map(|&(name, n)| (ids[name as usize], n))
                    .collect();
                refs.sort_unstable();
                (ids, defines, refs)
            }
            _ => Default::default(),
        };
        Slot {
            entry,
            ids,
            defines,
            refs,
        }
    }

    fn rebuild_graph(&mut self) {
        let names = self.interner.names();
        let n_idents = names.len();
        let files: Vec<FileIdents> = self
            .slots
            .iter()
            .map(|s| FileIdents {
                defines: &s.defines,
                refs: &s.refs,
            })
            .collect();
        self.graph = Arc::new(Graph::build(&files, n_idents, |i| names.get(i)));
    }

    /// Writes the tag cache and the block token counts, each if it changed since it was
    /// last written (also done by the next full `refresh` and on drop). Failures are
    /// logged: the caches are an optimization, never a reason to fail.
    pub fn save(&mut self) {
        let Some(stem) = &self.cache_stem else {
            return;
        };
        if std::mem::take(&mut self.unsaved) {
            let path = stem.with_extension("tags");
            let entries: Vec<(&str, &Entry)> = self
                .paths
                .iter()
                .zip(&self.slots)
                .map(|(p, s)| (p.as_str(), &s.entry))
                .collect();
            if let Err(e) = cache::save_tags(&path, self.read_ns, &entries) {
                tracing::warn!("cannot save repo map cache {}: {e}", path.display());
            }
        }
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
                .is_some_and(|id| self.graph.is_defined(id))
        })
    }

    /// Ranks the repository for a chat and fits the map into `budget` tokens.
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
        let n = self.slots.len();
        let mut chat = vec![false; n];
        let mut personal = vec![0.0; n];
        for f in chat_files
            .iter()
            .filter_map(|p| self.file_index(p.as_ref()))
        {
            chat[f as usize] = true;
            personal[f as usize] = 1.0;
        }
        for f in mentioned_files
            .iter()
            .filter_map(|p| self.file_index(p.as_ref()))
        {
            personal[f as usize] = 1.0;
        }
        let mentioned: Vec<u32> = mentioned_idents
            .iter()
            .filter_map(|i| self.interner.get(i.as_ref()))
            .collect();
        let ranking = self.graph.rank(&chat, &personal, &mentioned);
        let defines: Vec<&[u32]> = self.slots.iter().map(|s| s.defines.as_slice()).collect();
        let credits = self.graph.credits(&ranking, &defines);
        let rank_time = start.elapsed();

        let fit_start = Instant::now();
        let mut by_rank: Vec<u32> = (0..n as u32)
            .filter(|&f| !chat[f as usize] && self.is_mappable(f))
            .collect();
        by_rank.sort_by(|&a, &b| {
            ranking.file_rank[b as usize]
                .total_cmp(&ranking.file_rank[a as usize])
                .then(a.cmp(&b))
        });
        let defs = RankedDefs::new(credits, self).flat_map(|c| self.defs_of(c));
        let bare = by_rank.iter().map(|&file| Item::Bare { file });
        let fitted = render::fit(
            defs.chain(bare),
            &Rendering::new(self),
            &self.counter,
            &self.block_counts,
            budget,
        );
        let fit_time = fit_start.elapsed();

        MapResult {
            text: fitted.text,
            tokens: fitted.tokens,
            budget,
            ranked_files: by_rank
                .iter()
                .map(|&f| {
                    (
                        self.paths[f as usize].clone(),
                        ranking.file_rank[f as usize],
                    )
                })
                .collect(),
            shown_defs: fitted.defs,
            shown_files: fitted.files,
            rank_time,
            fit_time,
            explain: Explain {
                graph: Arc::clone(&self.graph),
                ranking,
                paths: Arc::clone(&self.paths),
                names: Arc::clone(self.interner.names()),
                index: Arc::clone(&self.index),
            },
        }
    }

    fn is_mappable(&self, file: u32) -> bool {
        !matches!(self.slots[file as usize].entry.content, Content::Binary)
    }

    /// The file index of a root-relative or absolute path.
    fn file_index(&self, path: &Path) -> Option<u32> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.root).ok()?
        } else {
            path
        };
        self.index
            .get(rel.to_str()?.replace('\\', "/").as_str())
            .copied()
    }

    /// The definitions of the credited identifier in its file, in source order.
    fn defs_of(&self, credit: Credit) -> impl Iterator<Item = Item> + '_ {
        let slot = &self.slots[credit.file as usize];
        let defs: &[tags::Def] = match &slot.entry.content {
            Content::Tags(t) => &t.defs,
            _ => &[],
        };
        defs.iter()
            .enumerate()
            .filter(move |(_, d)| slot.ids[d.name as usize] == credit.ident)
            .map(move |(k, _)| Item::Def {
                file: credit.file,
                def: k as u32,
            })
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
}

impl<'a> Rendering<'a> {
    fn new(map: &'a RepoMap) -> Self {
        Rendering {
            map,
            contents: RefCell::default(),
        }
    }
}

impl render::Source for Rendering<'_> {
    fn path(&self, file: u32) -> &str {
        &self.map.paths[file as usize]
    }

    fn tagged(&self, file: u32) -> Option<(&FileTags, Rc<[u8]>)> {
        let slot = &self.map.slots[file as usize];
        let Content::Tags(tags) = &slot.entry.content else {
            return None;
        };
        let content = self
            .contents
            .borrow_mut()
            .entry(file)
            .or_insert_with(|| {
                let path = self.map.root.join(self.path(file));
                std::fs::read(path)
                    .ok()
                    .filter(|c| xxh3_64(c) == slot.entry.hash)
                    .map(Rc::from)
            })
            .clone()?;
        Some((tags, content))
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
}

impl<'a> RankedDefs<'a> {
    fn new(credits: Vec<Credit>, map: &'a RepoMap) -> Self {
        RankedDefs {
            credits,
            sorted: 0,
            next: 0,
            chunk: 1024,
            map,
        }
    }

    /// Best score first; ties by path, then by name, so the map is deterministic.
    fn order(&self, a: &Credit, b: &Credit) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then(a.file.cmp(&b.file))
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

/// Reads and tags one file; None if it cannot be read.
fn read_entry(root: &Path, rel: &str) -> Option<Entry> {
    let path = root.join(rel);
    let meta = std::fs::metadata(&path).ok()?;
    let content = std::fs::read(&path).ok()?;
    let hash = xxh3_64(&content);
    let tags = if files::is_binary(&content) {
        Content::Binary
    } else {
        match Lang::from_path(Path::new(rel)) {
            Some(lang) => {
                let tags = tags::extract(lang, &content);
                if tags.defs.is_empty() && tags.refs.is_empty() {
                    Content::Untagged
                } else {
                    Content::Tags(tags)
                }
            }
            None => Content::Untagged,
        }
    };
    Some(Entry {
        size: meta.len(),
        mtime_ns: files::mtime_ns(&meta),
        hash,
        content: tags,
    })
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

    #[test]
    fn repo_map_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<RepoMap>();
        check::<MapResult>();
    }
}
