//! The repo map inside the engine: extracted on a blocking thread at start (with
//! progress, while the UI stays usable), refreshed in the background after each turn and
//! after edits land, and rebuilt for a request only when what it depends on (chat files,
//! mentions, budget) changed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use super::protocol::{ChatMode, Event, FileMode, MapEdge, MapView};
use super::{Engine, EventSink, Internal};
use crate::context::MapStatus;
use crate::repomap::{self, MapResult, Mentions, RepoMap};

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
}

/// A finished extraction or refresh, handed back to the loop.
pub(crate) struct Refreshed {
    map: Arc<RwLock<RepoMap>>,
    first: bool,
}

impl MapSlot {
    pub(crate) fn new() -> Self {
        MapSlot {
            state: MapState::Loading,
            last: None,
            budget_override: None,
        }
    }

    pub(crate) fn is_loading(&self) -> bool {
        matches!(self.state, MapState::Loading)
    }
}

impl Engine {
    /// Opens the map and extracts tags on a blocking thread, reporting progress.
    pub(super) fn start_map(&mut self) {
        if self.settings.map_tokens == Some(0) {
            self.map.state = MapState::Off;
            self.events.send(Event::Map(Box::default()));
            return;
        }
        let map = match RepoMap::open(
            self.session.root(),
            self.counter.clone(),
            self.map_cache.clone(),
        ) {
            Ok(map) => Arc::new(RwLock::new(map)),
            Err(e) => {
                self.map.state = MapState::Unavailable;
                self.warning(format!("no repo map: {e}"));
                self.events.send(Event::Map(Box::default()));
                return;
            }
        };
        self.refresh_map_in_background(map, true, Vec::new());
    }

    /// Refreshes the whole tree (`changed` empty) or just the files known to have
    /// changed, on a blocking thread.
    pub(super) fn refresh_map_in_background(
        &mut self,
        map: Arc<RwLock<RepoMap>>,
        first: bool,
        changed: Vec<String>,
    ) {
        if !first {
            self.map.state = MapState::Refreshing(map.clone());
        }
        let events = self.events.clone();
        let done = self.internal_tx.clone();
        super::worker::spawn_blocking(done.clone(), move || {
            super::worker::test_panic("map");
            {
                let mut guard = map.write().unwrap_or_else(|e| e.into_inner());
                if changed.is_empty() {
                    let progress = progress_reporter(events, first);
                    guard.refresh(&progress);
                } else {
                    guard.refresh_files(&changed);
                }
            }
            let _ = done.send(Internal::MapRefreshed(Refreshed { map, first }));
        });
    }

    pub(super) fn finish_map_refresh(&mut self, refreshed: Refreshed) {
        self.map.state = MapState::Ready(refreshed.map);
        // Files changed: the cached result may show stale lines.
        self.map.last = None;
        let draft = self.draft.clone();
        self.update_map(&draft);
        self.publish_budget();
        if refreshed.first
            && let Some((text, mode)) = self.activity.take_waiting()
        {
            self.start_user_turn(text, mode);
        }
    }

    /// Refreshes the map after a turn or a landing, unless one is already running.
    pub(super) fn refresh_map(&mut self, changed: Vec<String>) {
        if let MapState::Ready(map) = &self.map.state {
            let map = map.clone();
            self.refresh_map_in_background(map, false, changed);
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
        if self.map.last.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        let result = guard.build(
            &key.chat,
            &key.mentions.files,
            &key.mentions.idents,
            key.budget,
        );
        drop(guard);
        self.events.send(Event::Map(Box::new(view(&result))));
        self.map.last = Some((key, result));
    }

    pub(super) fn map_budget(&self, has_chat_files: bool) -> usize {
        self.map.budget_override.unwrap_or_else(|| {
            self.settings
                .map_tokens
                .unwrap_or_else(|| repomap::default_budget(self.window.window, has_chat_files))
        })
    }

    /// The map's line in the budget report.
    pub(super) fn map_status(&self) -> Option<MapStatus> {
        self.map.last.as_ref().map(|(_, r)| MapStatus {
            tokens: r.tokens,
            budget: r.budget,
            files: r.shown_files,
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
        let draft = self.draft.clone();
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

    /// `Op::Cancel`: a message waiting for the first repo map is not sent later by
    /// itself (Esc is final); it comes back to the user.
    pub(super) fn cancel_deferred(&mut self) {
        if let Some((text, _)) = self.activity.take_waiting() {
            self.events.send(Event::TurnFailed {
                error: "cancelled while waiting for the repo map; nothing was sent".into(),
                message: text,
            });
            self.idle_if_done();
        }
    }

    /// Defers a user turn until the first extraction is done, so the first request has
    /// its map. Returns true when the turn was deferred.
    pub(super) fn defer_until_map(&mut self, text: &str, mode: ChatMode) -> bool {
        if !self.map.is_loading() {
            return false;
        }
        self.activity = super::activity::Activity::WaitingForMap {
            text: text.to_string(),
            mode,
        };
        self.notice(
            "waiting for the repo map to be built; the message is sent as soon as it is".into(),
        );
        true
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
