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

use super::protocol::{ChatMode, Event, FileMode, MapEdge, MapView};
use super::{Engine, EventSink, Internal};
use crate::context::MapStatus;
use crate::repomap::{self, CacheLocation, MapRefresh, MapResult, Mentions, RepoMap};

/// In `auto`, a rebuild slower than this keeps the last map when nothing the chat
/// references changed.
const SLOW_REBUILD: Duration = Duration::from_secs(1);

/// How many ranked files the map pane gets (the rest are never shown).
const RANKED_FOR_PANE: usize = 500;

pub(crate) enum MapState {
    /// The first extraction is running.
    Loading,
    Ready(Arc<RwLock<RepoMap>>),
    /// A background refresh holds the map; requests use the last result meanwhile.
    Refreshing(Arc<RwLock<RepoMap>>),
    Unavailable,
    /// `--map-tokens 0`: no map is built, and no message waits for one.
    Off,
}

/// What a map was built for: a request with the same key gets the same map.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MapKey {
    chat: Vec<String>,
    mentions: Mentions,
    budget: usize,
}

pub(crate) struct MapSlot {
    pub state: MapState,
    last: Option<(MapKey, MapResult)>,
    /// A smaller budget forced while shrinking an oversized request.
    pub budget_override: Option<usize>,
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
            budget_override: None,
            refresh_took: Duration::ZERO,
            build_took: Duration::ZERO,
            kept_stale: false,
            rescanned_for_turn: false,
        }
    }
}

impl Engine {
    /// Opens the map and extracts tags on a blocking thread, reporting progress.
    pub(super) fn start_map(&mut self) {
        if self.model.settings().map_tokens == Some(0) {
            self.map.state = MapState::Off;
            self.events.send(Event::Map(Box::default()));
            return;
        }
        let map = match RepoMap::open(
            self.session.root(),
            self.model.counter().clone(),
            self.map.cache.clone(),
        ) {
            Ok(map) => Arc::new(RwLock::new(map)),
            Err(e) => {
                self.map.state = MapState::Unavailable;
                self.events.warning(format!("no repo map: {e}"));
                self.events.send(Event::Map(Box::default()));
                return;
            }
        };
        self.refresh_map_in_background(map, Cause::First, Vec::new());
    }

    /// Refreshes the whole tree (`changed` empty) or just the files known to have
    /// changed, on a blocking thread.
    pub(super) fn refresh_map_in_background(
        &mut self,
        map: Arc<RwLock<RepoMap>>,
        cause: Cause,
        changed: Vec<String>,
    ) {
        if cause != Cause::First {
            self.map.state = MapState::Refreshing(map.clone());
        }
        let events = self.events.clone();
        let done = self.run_loop.done();
        super::run_loop::spawn_blocking(done.clone(), move || {
            super::run_loop::test_panic("map");
            let start = Instant::now();
            let stats = {
                let mut guard = map.write().unwrap_or_else(|e| e.into_inner());
                if changed.is_empty() {
                    let progress = progress_reporter(events, cause == Cause::First);
                    guard.refresh(&progress)
                } else {
                    guard.refresh_files(&changed)
                }
            };
            let _ = done.send(Internal::MapRefreshed(Refreshed {
                map,
                cause,
                changed: stats.changed,
                whole_tree: changed.is_empty().then(|| start.elapsed()),
            }));
        });
    }

    pub(super) fn finish_map_refresh(&mut self, refreshed: Refreshed) {
        self.map.state = MapState::Ready(refreshed.map);
        if let Some(took) = refreshed.whole_tree {
            self.map.refresh_took = took;
        }
        let referenced = |path: &str| {
            self.session.mode_of(path).is_some()
                || self
                    .map
                    .last
                    .as_ref()
                    .is_some_and(|(k, _)| k.mentions.files.iter().any(|f| f == path))
        };
        let keep = keeps_last_map(
            self.model.settings().map_refresh,
            refreshed.cause,
            &refreshed.changed,
            referenced,
            self.map.refresh_took + self.map.build_took,
        );
        if !keep {
            self.map.last = None;
        } else if !refreshed.changed.is_empty() && self.map.last.is_some() {
            self.map.kept_stale = true;
        }
        let draft = self.conversation.draft().to_string();
        self.update_map(&draft);
        self.publish_budget();
        if let Some((text, mode, op)) = self.activity.take_waiting() {
            self.answering(op);
            self.map.rescanned_for_turn = matches!(refreshed.cause, Cause::ForTurn | Cause::Asked);
            self.start_user_turn(text, mode);
        }
    }

    /// Refreshes the map after a turn or a landing, unless one is already running, or
    /// the mode is `manual` (nothing is refreshed unasked) or `always` (the next message
    /// rescans anyway).
    pub(super) fn refresh_map(&mut self, changed: Vec<String>) {
        if matches!(
            self.model.settings().map_refresh,
            MapRefresh::Manual | MapRefresh::Always
        ) {
            return;
        }
        if let MapState::Ready(map) = &self.map.state {
            let map = map.clone();
            self.refresh_map_in_background(map, Cause::Background, changed);
        }
    }

    /// `/map-refresh`: rescans the repository and rebuilds the map, in any mode.
    pub(super) fn refresh_map_now(&mut self) {
        match &self.map.state {
            MapState::Ready(map) => {
                let map = map.clone();
                self.refresh_map_in_background(map, Cause::Asked, Vec::new());
                self.events
                    .notice("rescanning the repository for the repo map".into());
            }
            MapState::Loading | MapState::Refreshing(_) => {
                self.events
                    .notice("the repo map is being built already".into());
            }
            MapState::Unavailable => self
                .events
                .error("there is no repo map for this directory".into()),
            MapState::Off => self
                .events
                .error("the repo map is off (--map-tokens 0)".into()),
        }
    }

    /// The map text for a request whose current message is `text`, built if what it
    /// depends on changed since the last one.
    pub(super) fn map_text(&mut self, text: &str) -> Option<String> {
        self.update_map(text);
        self.map
            .last
            .as_ref()
            .map(|(_, result)| result.text.clone())
            .filter(|t| !t.is_empty())
    }

    fn update_map(&mut self, text: &str) {
        let MapState::Ready(map) = &self.map.state else {
            return;
        };
        let map = map.clone();
        let guard = map.read().unwrap_or_else(|e| e.into_inner());
        let chat: Vec<String> = self
            .session
            .paths(FileMode::Editable)
            .into_iter()
            .chain(self.session.paths(FileMode::ReadOnly))
            .collect();
        let key = MapKey {
            budget: self.map_budget(!chat.is_empty()),
            mentions: guard.mentions(text),
            chat,
        };
        let manual = self.model.settings().map_refresh == MapRefresh::Manual;
        if let Some((k, r)) = &self.map.last {
            // `manual` keeps its map for any chat, as long as it fits the budget.
            if *k == key || (manual && r.tokens <= key.budget) {
                return;
            }
        }
        let start = Instant::now();
        let result = guard.build(
            &key.chat,
            &key.mentions.files,
            &key.mentions.idents,
            key.budget,
        );
        drop(guard);
        self.map.build_took = start.elapsed();
        self.map.kept_stale = false;
        self.events.send(Event::Map(Box::new(view(&result))));
        self.map.last = Some((key, result));
    }

    pub(super) fn map_budget(&self, has_chat_files: bool) -> usize {
        self.map.budget_override.unwrap_or_else(|| {
            self.model.settings().map_tokens.unwrap_or_else(|| {
                repomap::default_budget(self.model.window().window, has_chat_files)
            })
        })
    }

    /// The map's line in the budget report.
    pub(super) fn map_status(&self) -> Option<MapStatus> {
        self.map.last.as_ref().map(|(_, r)| MapStatus {
            tokens: r.tokens,
            budget: r.budget,
            files: r.shown_files,
            refresh: self.model.settings().map_refresh,
            kept_stale: self.map.kept_stale,
        })
    }

    pub(super) fn map_why(&self, path: &str) {
        let edges = self
            .map
            .last
            .as_ref()
            .map(|(_, r)| r.why(path, 10))
            .unwrap_or_default()
            .into_iter()
            .map(|e| MapEdge {
                ident: e.ident,
                from: e.from,
                weight: e.weight,
            })
            .collect();
        self.events.send(Event::MapWhy {
            path: path.to_string(),
            edges,
        });
    }

    /// The repository's files, for completion: the map's file set, or git's index while
    /// the map is still loading.
    pub(super) fn list_repo_files(&self) {
        let files = match &self.map.state {
            MapState::Ready(map) | MapState::Refreshing(map) => match map.try_read() {
                Ok(guard) => guard.files().to_vec(),
                Err(_) => index_files(self.session.root()),
            },
            MapState::Loading | MapState::Unavailable | MapState::Off => {
                index_files(self.session.root())
            }
        };
        self.events.send(Event::RepoFiles { files });
    }

    /// `/map`: the map as the model sees it now.
    pub(super) fn show_map(&mut self) {
        let draft = self.conversation.draft().to_string();
        let text = match &self.map.state {
            MapState::Loading => "the repo map is still being built\n".to_string(),
            MapState::Unavailable => "there is no repo map for this directory\n".to_string(),
            MapState::Off => "the repo map is off (--map-tokens 0)\n".to_string(),
            _ => self.map_text(&draft).unwrap_or_else(|| {
                "the repo map is empty (nothing fits, or no tagged files)\n".into()
            }),
        };
        self.events.send(Event::Output {
            title: "repo map".into(),
            text,
        });
    }

    /// `Op::Cancel` (Esc, or a signal): a message waiting for the repo map is not sent
    /// later by itself (Esc is final); it comes back to the user, and stays with the
    /// session until a message is sent (a signal's exit follows at once).
    pub(super) fn cancel_deferred(&mut self) {
        if let Some((text, ..)) = self.activity.take_waiting() {
            let kept = match self.keep_unsent(&text) {
                true => " (the message is kept with the session until you send one)",
                false => "",
            };
            self.events.send(Event::TurnFailed {
                error: format!("cancelled while waiting for the repo map; nothing was sent{kept}"),
                message: text,
            });
            self.idle_if_done();
        }
    }

    /// Defers a user turn until the first extraction is done, so the first request has
    /// its map; until a refresh under way is done, so the request's map is built for its
    /// own chat files and mentions from the files as they are; in `always`, until a
    /// rescan is done. Returns true when the turn was deferred.
    pub(super) fn defer_until_map(&mut self, text: &str, mode: ChatMode) -> bool {
        let deferred = match &self.map.state {
            MapState::Loading => {
                self.events.notice(
                    "waiting for the repo map to be built; the message is sent as soon as it is"
                        .into(),
                );
                true
            }
            // The refresh under way sends the message when it is done.
            MapState::Refreshing(_) => true,
            MapState::Ready(map) => {
                let rescan = self.model.settings().map_refresh == MapRefresh::Always
                    && !std::mem::take(&mut self.map.rescanned_for_turn);
                if rescan {
                    let map = map.clone();
                    self.refresh_map_in_background(map, Cause::ForTurn, Vec::new());
                }
                rescan
            }
            MapState::Unavailable | MapState::Off => false,
        };
        if deferred {
            self.activity = super::activity::Activity::WaitingForMap {
                text: text.to_string(),
                mode,
                op: self.events.op,
            };
        }
        deferred
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

fn view(result: &MapResult) -> MapView {
    MapView {
        tokens: result.tokens,
        budget: result.budget,
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

fn index_files(root: &std::path::Path) -> Vec<String> {
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
