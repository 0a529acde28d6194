//! The repo map inside the engine: extracted on a blocking thread at start (with
//! progress, while the UI stays usable), refreshed in the background after each turn and
//! after edits land, and rebuilt for a request as the `map_refresh` mode says: `auto`
//! and `files` when what it depends on (chat files, mentions, budget) changed, `auto`
//! also when files changed on disk (unless a rebuild is slow and nothing the chat
//! references changed), `always` after a rescan before every message, `manual` only on
//! `/map-refresh`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use std::path::Path;

use super::model::Model;
use super::protocol::{Event, FileMode, MapBudget, MapEdge, MapView};
use super::run_loop::Loop;
use super::{EventSink, Internal, Session};
use crate::context::MapStatus;
use crate::repomap::watch::{Changes, Watch};
use crate::repomap::{self, CacheLocation, MapRefresh, MapResult, Mentions, RepoMap};

/// What `/map` and `/map-refresh` say while the map is off.
const OFF: &str = "the repo map is off (map_tokens 0): /map-tokens N turns it on";

/// In `auto`, a rebuild slower than this keeps the last map when nothing the chat
/// references changed.
const SLOW_REBUILD: Duration = Duration::from_secs(1);

/// How many ranked files the map pane gets (the rest are never shown).
const RANKED_FOR_PANE: usize = 500;

enum MapState {
    /// The first extraction is running.
    Loading,
    Ready(Arc<RwLock<RepoMap>>),
    /// A background refresh holds the map; requests use the last result meanwhile.
    Refreshing(Arc<RwLock<RepoMap>>),
    Unavailable,
    /// `--map-tokens 0` (or `/map-tokens 0` before the first extraction): no map is
    /// built, and no message waits for one.
    Off,
}

/// What a map was built for: a request with the same key gets the same map.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MapKey {
    chat: Vec<String>,
    mentions: Mentions,
    /// The budget in the counts the request is judged by (the server's).
    budget: usize,
    /// The same in tern's own tokens, which the map is fitted in: the budget over the
    /// rate learned from the server (`TokenCounter::in_own_tokens`), so that the fit
    /// asks the server nothing per candidate and the rate is part of the key.
    fit_budget: usize,
}

pub(crate) struct MapSlot {
    state: MapState,
    last: Option<(MapKey, MapResult)>,
    /// The tokens the last `Event::Map` said `last` has (counted again once the server
    /// counted its text: `recount`).
    shown_tokens: usize,
    /// A smaller budget forced while shrinking an oversized request.
    budget_override: Option<usize>,
    /// The budget `/map-tokens N` chose for the rest of the run, over the settings' (0:
    /// no map; a map already extracted is kept up to date, so turning it on is quick).
    chosen: Option<usize>,
    /// How long the last whole-tree refresh and the last build took: what a rebuild
    /// after files changed costs.
    refresh_took: Duration,
    build_took: Duration,
    /// Files changed on disk since `last` was built, and it was kept.
    kept_stale: bool,
    /// In `always`: the rescan for the message waiting on it is done.
    rescanned_for_turn: bool,
    /// Where the map keeps its tag cache.
    cache: CacheLocation,
    /// File-system events keep the map fresh while this lives (started after the first
    /// extraction); without it, the map rescans the tree after each turn.
    watch: Option<Watch>,
    /// The watch could not start or grow (said once); no other is tried.
    watch_failed: bool,
    /// Events that came while a refresh ran, applied after it.
    pending: Changes,
}

/// Why a refresh ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The first extraction, at start.
    First,
    /// After a turn or a landing, to pick up what changed on disk.
    Background,
    /// `/map-refresh`.
    Asked,
    /// In `always`, before a message is sent.
    ForTurn,
}

/// What a refresh looks at.
enum Scope {
    /// The whole tree.
    Tree,
    /// Files known to have changed (edits that landed).
    Files(Vec<String>),
    /// What file-system events named.
    Events(Changes),
}

/// A finished extraction or refresh, handed back to the loop.
pub(crate) struct Refreshed {
    map: Arc<RwLock<RepoMap>>,
    cause: Cause,
    /// Files added, removed or changed since the last refresh.
    changed: Vec<String>,
    /// A whole-tree refresh, and how long it took.
    whole_tree: Option<Duration>,
}

impl MapSlot {
    pub(crate) fn new(cache: CacheLocation) -> Self {
        MapSlot {
            cache,
            state: MapState::Loading,
            last: None,
            shown_tokens: 0,
            budget_override: None,
            chosen: None,
            refresh_took: Duration::ZERO,
            build_took: Duration::ZERO,
            kept_stale: false,
            rescanned_for_turn: false,
            watch: None,
            watch_failed: false,
            pending: Changes::default(),
        }
    }
}

impl MapSlot {
    /// Opens the map and extracts tags on a blocking thread, reporting progress.
    pub(super) fn start(&mut self, model: &Model, root: &Path, events: &EventSink, jobs: &Loop) {
        if self.off(model) {
            self.state = MapState::Off;
            events.send(Event::Map(Box::default()));
            return;
        }
        let map = match RepoMap::open(root, model.counter().clone(), self.cache.clone()) {
            Ok(map) => Arc::new(RwLock::new(map)),
            Err(e) => {
                self.state = MapState::Unavailable;
                events.warning(format!("no repo map: {e}"));
                events.send(Event::Map(Box::default()));
                return;
            }
        };
        self.refresh_in_background(map, Cause::First, Scope::Tree, events, jobs);
    }

    /// This engine builds no map (it is not a conversation).
    pub(super) fn none(&mut self) {
        self.state = MapState::Unavailable;
    }

    /// Refreshes what `scope` says on a blocking thread.
    fn refresh_in_background(
        &mut self,
        map: Arc<RwLock<RepoMap>>,
        cause: Cause,
        scope: Scope,
        events: &EventSink,
        jobs: &Loop,
    ) {
        if cause != Cause::First {
            self.state = MapState::Refreshing(map.clone());
        }
        let events = events.clone();
        let done = jobs.done();
        super::run_loop::spawn_blocking(done.clone(), move || {
            super::run_loop::test_panic("map");
            let start = Instant::now();
            let whole_tree = matches!(scope, Scope::Tree);
            let stats = {
                let mut guard = map.write().unwrap_or_else(|e| e.into_inner());
                let progress = progress_reporter(events, cause == Cause::First);
                match &scope {
                    Scope::Tree => guard.refresh(&progress),
                    Scope::Files(changed) => guard.refresh_files(changed),
                    Scope::Events(changes) => guard.refresh_changed(changes, &progress),
                }
            };
            let _ = done.send(Internal::MapRefreshed(Refreshed {
                map,
                cause,
                changed: stats.changed,
                whole_tree: whole_tree.then(|| start.elapsed()),
            }));
        });
    }

    /// Starts watching the files after the first extraction, and watches the
    /// directories a refresh added; when that fails (inotify's watch limit), says so once
    /// and leaves the map to rescan after each turn.
    fn keep_watching(&mut self, map: &RepoMap, events: &EventSink, jobs: &Loop) {
        if self.watch_failed {
            return;
        }
        let watched = match self.watch.take() {
            Some(watch) => Ok(watch),
            None => {
                let done = jobs.done_unasked();
                Watch::start(map.root(), move |changes| {
                    done.send(Internal::FilesChanged(changes)).is_ok()
                })
            }
        };
        match watched.and_then(|mut w| w.cover(map.files().iter().map(String::as_str)).map(|()| w))
        {
            Ok(watch) => self.watch = Some(watch),
            Err(e) => {
                self.watch_failed = true;
                events.warning(format!(
                    "cannot watch the repository's files for the repo map ({e}): it rescans the repository after each turn instead"
                ));
            }
        }
    }

    /// File-system events named `changes`: refreshes what they name now, or after the
    /// refresh under way, as [`refresh`](Self::refresh) would.
    pub(super) fn files_changed(
        &mut self,
        changes: Changes,
        model: &Model,
        events: &EventSink,
        jobs: &Loop,
    ) {
        self.pending.lost |= changes.lost;
        self.pending.paths.extend(changes.paths);
        self.apply_pending(model, events, jobs);
    }

    /// Refreshes what events named while the map was busy, if it is idle now.
    pub(super) fn apply_pending(&mut self, model: &Model, events: &EventSink, jobs: &Loop) {
        if self.pending == Changes::default() {
            return;
        }
        if matches!(
            model.settings().map_refresh,
            MapRefresh::Manual | MapRefresh::Always
        ) {
            // Nothing is refreshed unasked, or the next message rescans anyway.
            self.pending = Changes::default();
            return;
        }
        if let MapState::Ready(map) = &self.state {
            let map = map.clone();
            let changes = std::mem::take(&mut self.pending);
            self.refresh_in_background(
                map,
                Cause::Background,
                Scope::Events(changes),
                events,
                jobs,
            );
        }
    }

    /// A refresh finished: the map is ready, and the last one is kept or rebuilt for
    /// `draft`. Returns what the refresh was for.
    pub(super) fn finish_refresh(
        &mut self,
        refreshed: Refreshed,
        model: &Model,
        session: &Session,
        draft: &str,
        events: &EventSink,
        jobs: &Loop,
    ) -> Cause {
        {
            let map = refreshed.map.read().unwrap_or_else(|e| e.into_inner());
            self.keep_watching(&map, events, jobs);
        }
        self.state = MapState::Ready(refreshed.map);
        if let Some(took) = refreshed.whole_tree {
            self.refresh_took = took;
        }
        let referenced = |path: &str| {
            session.mode_of(path).is_some()
                || self
                    .last
                    .as_ref()
                    .is_some_and(|(k, _)| k.mentions.files.iter().any(|f| f == path))
        };
        let keep = keeps_last_map(
            model.settings().map_refresh,
            refreshed.cause,
            &refreshed.changed,
            referenced,
            self.refresh_took + self.build_took,
        );
        if !keep {
            self.last = None;
        } else if !refreshed.changed.is_empty() && self.last.is_some() {
            self.kept_stale = true;
        }
        self.update(draft, model, session, events);
        refreshed.cause
    }

    /// The message that waited for the refresh that was for `cause` goes now: in
    /// `always`, a rescan for it is done.
    pub(super) fn waited_for(&mut self, cause: Cause) {
        self.rescanned_for_turn = matches!(cause, Cause::ForTurn | Cause::Asked);
    }

    /// Refreshes the map after a turn or a landing, unless one is already running, or
    /// the mode is `manual` (nothing is refreshed unasked) or `always` (the next message
    /// rescans anyway).
    pub(super) fn refresh(
        &mut self,
        changed: Vec<String>,
        model: &Model,
        events: &EventSink,
        jobs: &Loop,
    ) {
        if matches!(
            model.settings().map_refresh,
            MapRefresh::Manual | MapRefresh::Always
        ) {
            return;
        }
        if let MapState::Ready(map) = &self.state {
            let map = map.clone();
            let scope = match (changed.is_empty(), &self.watch) {
                // The watch picked up what changed on disk meanwhile.
                (true, Some(_)) => return self.apply_pending(model, events, jobs),
                (true, None) => Scope::Tree,
                (false, _) => Scope::Files(changed),
            };
            self.refresh_in_background(map, Cause::Background, scope, events, jobs);
        }
    }

    /// `/map-refresh`: rescans the repository and rebuilds the map, in any mode.
    pub(super) fn refresh_now(&mut self, events: &EventSink, jobs: &Loop) {
        match &self.state {
            MapState::Ready(map) => {
                let map = map.clone();
                self.refresh_in_background(map, Cause::Asked, Scope::Tree, events, jobs);
                events.notice("rescanning the repository for the repo map".into());
            }
            MapState::Loading | MapState::Refreshing(_) => {
                events.notice("the repo map is being built already".into());
            }
            MapState::Unavailable => events.error("there is no repo map for this directory".into()),
            MapState::Off => events.error(OFF.into()),
        }
    }

    /// The map text for a request whose current message is `text`, built if what it
    /// depends on changed since the last one.
    pub(super) fn text(
        &mut self,
        text: &str,
        model: &Model,
        session: &Session,
        events: &EventSink,
    ) -> Option<String> {
        self.update(text, model, session, events);
        self.last
            .as_ref()
            .map(|(_, result)| result.text.clone())
            .filter(|t| !t.is_empty())
    }

    fn update(&mut self, text: &str, model: &Model, session: &Session, events: &EventSink) {
        let MapState::Ready(map) = &self.state else {
            return;
        };
        if self.off(model) {
            self.last = None;
            return;
        }
        let map = map.clone();
        let guard = map.read().unwrap_or_else(|e| e.into_inner());
        let chat = chat_paths(session);
        let budget = self.budget(!chat.is_empty(), model);
        let key = MapKey {
            budget,
            fit_budget: {
                let last = self.last.as_ref().map(|(_, r)| r.text.as_str());
                model
                    .counter()
                    .in_own_tokens(budget, last.filter(|t| !t.is_empty()))
            },
            mentions: guard.mentions(text),
            chat,
        };
        let manual = model.settings().map_refresh == MapRefresh::Manual;
        if let Some((k, r)) = &self.last {
            // `manual` keeps its map for any chat, as long as it fits the budget.
            if *k == key || (manual && r.tokens <= key.fit_budget) {
                return;
            }
        }
        let start = Instant::now();
        let result = guard.build(
            &key.chat,
            &key.mentions.files,
            &key.mentions.idents,
            key.fit_budget,
        );
        drop(guard);
        self.build_took = start.elapsed();
        self.kept_stale = false;
        let view = view(&result, &key, model);
        self.shown_tokens = view.tokens;
        events.send(Event::Map(Box::new(view)));
        self.last = Some((key, result));
    }

    /// Says the map again when its count changed since it was said (the server counted
    /// its text since): the Repo map pane shows the number the gauge shows.
    pub(super) fn recount(&mut self, model: &Model, events: &EventSink) {
        let Some((key, result)) = &self.last else {
            return;
        };
        if model.counter().count(&result.text) != self.shown_tokens {
            let view = view(result, key, model);
            self.shown_tokens = view.tokens;
            events.send(Event::Map(Box::new(view)));
        }
    }

    fn budget(&self, has_chat_files: bool, model: &Model) -> usize {
        self.budget_override.unwrap_or_else(|| {
            self.chosen
                .or(model.settings().map_tokens)
                .unwrap_or_else(|| repomap::default_budget(model.window().window, has_chat_files))
        })
    }

    /// Whether the map is off: `/map-tokens 0`, or `--map-tokens 0` unless
    /// `/map-tokens N` turned it on.
    fn off(&self, model: &Model) -> bool {
        self.chosen.or(model.settings().map_tokens) == Some(0)
    }

    /// The budget `/map-tokens` chose, for the session file.
    pub(super) fn chosen(&self) -> Option<usize> {
        self.chosen
    }

    /// The map gets the budget `/map-tokens` chose (None: the settings' again), as a
    /// resumed or switched-to session saved it; it is refitted (even in `manual`, which
    /// keeps a map that fits), and a map that was off since start and no longer is
    /// starts to be built.
    pub(super) fn restore_budget(
        &mut self,
        chosen: Option<usize>,
        (model, session): (&Model, &Session),
        events: &EventSink,
        jobs: &Loop,
    ) {
        self.chosen = chosen;
        self.last = None;
        if matches!(self.state, MapState::Off) && !self.off(model) {
            self.state = MapState::Loading;
            self.start(model, session.root(), events, jobs);
        }
    }

    /// `/map-tokens N`: the map gets `budget` tokens (0: none) for the rest of the run.
    /// A map that is ready is fitted to it at once; one being built, or extracted now
    /// because it was off, takes it when it is done. Returns what changed.
    pub(super) fn choose_budget(
        &mut self,
        budget: usize,
        (model, session, draft): (&Model, &Session, &str),
        events: &EventSink,
        jobs: &Loop,
    ) -> Result<MapBudget, String> {
        if matches!(self.state, MapState::Unavailable) {
            return Err("there is no repo map for this directory".into());
        }
        let budget_before = match self.off(model) {
            true => 0,
            false => self.budget(!chat_paths(session).is_empty(), model),
        };
        let tokens_before = self.last.as_ref().map_or(0, |(_, r)| r.tokens);
        self.budget_override = None;
        self.restore_budget(Some(budget), (model, session), events, jobs);
        self.update(draft, model, session, events);
        if budget == 0 {
            events.send(Event::Map(Box::default()));
        }
        let building = matches!(self.state, MapState::Loading | MapState::Refreshing(_));
        let tokens = match (budget, building) {
            (0, _) => Some(0),
            (_, true) => None,
            (_, false) => Some(self.last.as_ref().map_or(0, |(_, r)| r.tokens)),
        };
        Ok(MapBudget {
            budget_before,
            budget,
            tokens_before,
            tokens,
        })
    }

    /// The next requests' maps get at most `budget` tokens (shrinking an oversized
    /// request), or their usual budget again (None).
    pub(super) fn override_budget(&mut self, budget: Option<usize>) {
        self.budget_override = budget;
    }

    /// The map's line in the budget report.
    pub(super) fn status(&self, model: &Model) -> Option<MapStatus> {
        self.last.as_ref().map(|(key, r)| MapStatus {
            tokens: model.counter().count(&r.text),
            budget: key.budget,
            files: r.shown_files,
            refresh: model.settings().map_refresh,
            kept_stale: self.kept_stale,
        })
    }

    /// The first map is still being built: a request now would wait for it, and a
    /// count now is without it.
    pub(super) fn pending(&self) -> bool {
        self.last.is_none() && matches!(self.state, MapState::Loading | MapState::Refreshing(_))
    }

    /// Why the map ranks `path` as it does: the references that lead to it.
    pub(super) fn why(&self, path: &str) -> Vec<MapEdge> {
        self.last
            .as_ref()
            .map(|(_, r)| r.why(path, 10))
            .unwrap_or_default()
            .into_iter()
            .map(|e| MapEdge {
                ident: e.ident,
                from: e.from,
                weight: e.weight,
            })
            .collect()
    }

    /// The repository's files, for completion: the map's file set, or git's index while
    /// the map is still loading.
    pub(super) fn repo_files(&self, root: &Path) -> Vec<String> {
        match &self.state {
            MapState::Ready(map) | MapState::Refreshing(map) => match map.try_read() {
                Ok(guard) => guard.files().to_vec(),
                Err(_) => index_files(root),
            },
            MapState::Loading | MapState::Unavailable | MapState::Off => index_files(root),
        }
    }

    /// `/map`: the map as the model sees it now.
    pub(super) fn shown(
        &mut self,
        draft: &str,
        model: &Model,
        session: &Session,
        events: &EventSink,
    ) -> String {
        match &self.state {
            MapState::Loading => "the repo map is still being built\n".to_string(),
            MapState::Unavailable => "there is no repo map for this directory\n".to_string(),
            MapState::Off => format!("{OFF}\n"),
            _ if self.off(model) => format!("{OFF}\n"),
            _ => self.text(draft, model, session, events).unwrap_or_else(|| {
                "the repo map is empty (nothing fits, or no tagged files)\n".into()
            }),
        }
    }

    /// Whether a user turn waits for the map: until the first extraction is done, so the
    /// first request has its map; until a refresh under way is done, so the request's
    /// map is built for its own chat files and mentions from the files as they are; in
    /// `always`, until a rescan is done (started here).
    pub(super) fn defers_turn(&mut self, model: &Model, events: &EventSink, jobs: &Loop) -> bool {
        if self.off(model) {
            return false;
        }
        match &self.state {
            MapState::Loading => {
                events.notice(
                    "waiting for the repo map to be built; the message is sent as soon as it is"
                        .into(),
                );
                true
            }
            // The refresh under way sends the message when it is done.
            MapState::Refreshing(_) => true,
            MapState::Ready(map) => {
                let rescan = model.settings().map_refresh == MapRefresh::Always
                    && !std::mem::take(&mut self.rescanned_for_turn);
                if rescan {
                    let map = map.clone();
                    self.refresh_in_background(map, Cause::ForTurn, Scope::Tree, events, jobs);
                }
                rescan
            }
            MapState::Unavailable | MapState::Off => false,
        }
    }
}

/// Whether a refresh that found `changed` keeps the last map in `mode`: `files`,
/// `manual` and `always` (which rescans before each message) keep it after any
/// background refresh, `auto` when nothing changed, or when
/// a rebuild costs more than [`SLOW_REBUILD`] and nothing the chat references changed.
/// A first extraction, `/map-refresh` and `always`'s rescan never keep it.
fn keeps_last_map(
    mode: MapRefresh,
    cause: Cause,
    changed: &[String],
    referenced: impl Fn(&str) -> bool,
    rebuild: Duration,
) -> bool {
    if cause != Cause::Background {
        return false;
    }
    match mode {
        MapRefresh::Files | MapRefresh::Manual | MapRefresh::Always => true,
        MapRefresh::Auto => {
            changed.is_empty() || (rebuild > SLOW_REBUILD && !changed.iter().any(|p| referenced(p)))
        }
    }
}

/// The chat's files, editable then read-only: what the map ranks around.
fn chat_paths(session: &Session) -> Vec<String> {
    session
        .paths(FileMode::Editable)
        .into_iter()
        .chain(session.paths(FileMode::ReadOnly))
        .collect()
}

/// The map as the Repo map pane shows it: its tokens and budget in the counts the
/// gauge shows (the server's, where it counts), one number per thing.
fn view(result: &MapResult, key: &MapKey, model: &Model) -> MapView {
    MapView {
        tokens: model.counter().count(&result.text),
        budget: key.budget,
        ranked: result
            .ranked_files
            .iter()
            .take(RANKED_FOR_PANE)
            .cloned()
            .collect(),
        text: result.text.clone(),
    }
}

/// Progress events at most every 1% of the files (the callback runs on every parse).
fn progress_reporter(events: EventSink, first: bool) -> impl Fn(repomap::Progress) + Sync {
    let last_percent = AtomicUsize::new(usize::MAX);
    move |p: repomap::Progress| {
        if !first || p.total == 0 {
            return;
        }
        let percent = p.parsed * 100 / p.total;
        if last_percent.swap(percent, Ordering::Relaxed) != percent {
            events.send(Event::MapProgress {
                done: p.parsed,
                total: p.total,
            });
        }
    }
}

fn index_files(root: &Path) -> Vec<String> {
    crate::edit::Workspace::discover(root)
        .map(|ws| {
            ws.files()
                .into_iter()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_keeps_a_slow_map_unless_what_the_chat_references_changed() {
        let changed = ["src/a.rs".to_string()];
        let chat = |p: &str| p == "src/chat.rs";
        let slow = Duration::from_millis(1500);
        let fast = Duration::from_millis(200);
        let keeps = |mode, cause, changed: &[String], rebuild| {
            keeps_last_map(mode, cause, changed, chat, rebuild)
        };
        use Cause::*;
        use MapRefresh::*;
        assert!(!keeps(Auto, Background, &changed, fast));
        assert!(keeps(Auto, Background, &changed, slow));
        assert!(keeps(Auto, Background, &[], fast));
        let chat_changed = ["src/chat.rs".to_string()];
        assert!(!keeps(Auto, Background, &chat_changed, slow));
        assert!(keeps(Files, Background, &chat_changed, fast));
        assert!(keeps(Manual, Background, &chat_changed, fast));
        assert!(keeps(Always, Background, &changed, fast));
        for mode in [Auto, Always, Files, Manual] {
            assert!(!keeps(mode, Asked, &changed, slow));
            assert!(!keeps(mode, ForTurn, &[], slow));
            assert!(!keeps(mode, First, &[], slow));
        }
    }
}
