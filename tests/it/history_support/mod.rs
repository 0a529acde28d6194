//! What the history and local-model tests share: an engine driven through its Ops and
//! Events in a temporary repository, telling summary requests from conversation
//! requests, and which scripted turn a conversation request is for.

use std::time::Duration;

use crate::support::{RecordedRequest, TempRepo};
use tern::config::Settings;
use tern::context::history::SUMMARY_PREFIX;
use tern::engine::{EngineConfig, EngineHandle, Event, Op};

/// True for a request made by the history summarizer (its system prompt is tern's
/// summarize prompt).
pub fn is_summary(request: &RecordedRequest) -> bool {
    let prompt = tern::prompts::summarize(0);
    let opening = prompt.lines().next().unwrap();
    request.messages[0].text.contains(opening)
}

/// The number of a scripted turn, from the `turn N:` its last user message starts with.
pub fn turn_of(request: &RecordedRequest) -> usize {
    let text = request.last_user_text().unwrap_or_default();
    let digits: String = text
        .strip_prefix("turn ")
        .expect("a scripted turn")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

/// An engine in a temporary repository, with every event it sent kept.
pub struct Chat {
    pub engine: EngineHandle,
    pub events: Vec<Event>,
    pub repo: TempRepo,
}

impl Chat {
    pub fn start(settings: Settings, files: &[(&str, &str)], editable: &[&str]) -> Chat {
        Chat::start_in(TempRepo::with_files(files), settings, editable, false)
    }

    /// An engine in `repo`, continuing its saved session when `resume` is set.
    pub fn start_in(repo: TempRepo, settings: Settings, editable: &[&str], resume: bool) -> Chat {
        let engine = tern::engine::spawn(EngineConfig {
            settings,
            root: repo.path().to_path_buf(),
            cwd: repo.path().to_path_buf(),
            record: None,
            replay: None,
            editable: editable.iter().map(|s| s.to_string()).collect(),
            read_only: vec![],
            map_cache: tern::repomap::CacheLocation::Disabled,
            resume: resume.then_some(tern::engine::persist::Resume::Newest),
            role: Default::default(),
            model_chosen: false,
        })
        .unwrap();
        Chat {
            engine,
            events: vec![],
            repo,
        }
    }

    /// Ends this engine and starts another on the same repository that resumes its
    /// saved session (`tern --resume`).
    pub async fn resume(mut self, settings: Settings) -> Chat {
        self.send(Op::Shutdown);
        self.until(|e| matches!(e, Event::Exited)).await;
        Chat::start_in(self.repo, settings, &[], true)
    }

    pub fn send(&self, op: Op) {
        self.engine.ops.send(op).unwrap();
    }

    /// Events until one matches `done` (included).
    pub async fn until(&mut self, done: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut seen = vec![];
        loop {
            let event = tokio::time::timeout(Duration::from_secs(30), self.engine.events.recv())
                .await
                .expect("the engine went quiet")
                .expect("the engine stopped");
            self.events.push(event.clone());
            let last = done(&event);
            seen.push(event);
            if last {
                return seen;
            }
        }
    }

    /// Sends a message and returns the events up to its turn's end.
    pub async fn say(&mut self, text: String) -> Vec<Event> {
        self.send(Op::Submit { text });
        self.until(|e| matches!(e, Event::TurnFinished { .. } | Event::TurnFailed { .. }))
            .await
    }

    /// Runs a slash command; returns its events up to its `Output` titled `title`.
    pub async fn command(&mut self, text: &str, title: &str) -> (String, Vec<Event>) {
        self.send(crate::support::typed(text));
        let events = self
            .until(|e| matches!(e, Event::Output { title: t, .. } if t == title))
            .await;
        let Some(Event::Output { text, .. }) = events.last() else {
            unreachable!("until stops at the output")
        };
        (text.clone(), events)
    }

    /// Switches to ask mode, whose fixed prompt is small (no edit-format examples).
    pub async fn ask_mode(&mut self) {
        self.send(crate::support::typed("/ask"));
        self.until(|e| matches!(e, Event::Mode { .. })).await;
    }
}

/// A repository whose map is large: `n` modules that reference one another.
pub fn mapped_repo(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|k| {
            let prev = k.max(1) - 1;
            let text = format!(
                "from pkg.mod_{prev} import compute_total_{prev}\n\n\
                 class InventoryRecord{k}:\n    def refresh_inventory_{k}(self, items):\n        return compute_total_{prev}(items)\n\n\
                 def compute_total_{k}(values):\n    return sum(values) + {k}\n\n\
                 def format_report_{k}(record):\n    return str(compute_total_{k}([record]))\n"
            );
            (format!("pkg/mod_{k}.py"), text)
        })
        .collect()
}

/// `files` as `TempRepo::with_files` takes them.
pub fn as_files(files: &[(String, String)]) -> Vec<(&str, &str)> {
    files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect()
}

/// The texts of the notices and warnings among `events`.
pub fn notices(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { text } | Event::Warning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The first failed turn among `events`: its error and the message given back.
/// Fails the test unless `events` end with a finished turn, saying why it failed.
pub fn assert_finished(events: &[Event]) {
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(events)
    );
}

pub fn failure(events: &[Event]) -> Option<(&str, &str)> {
    events.iter().find_map(|e| match e {
        Event::TurnFailed { error, message } => Some((error.as_str(), message.as_str())),
        _ => None,
    })
}

/// The history part of a conversation request (these tests add no files): from the
/// summary or the first scripted turn (`turn N: …`) up to the current message.
pub fn sent_history(request: &RecordedRequest) -> Vec<(String, String)> {
    let n = request.messages.len();
    let start = request.messages[..n - 1]
        .iter()
        .position(|m| m.text.starts_with(SUMMARY_PREFIX) || m.text.starts_with("turn "))
        .unwrap_or(n - 1);
    request.messages[start..n - 1]
        .iter()
        .map(|m| (m.role.clone(), m.text.clone()))
        .collect()
}

/// Messages as `sent_history` gives them: role and text.
pub fn as_sent(messages: &[tern::llm::Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| (m.role.as_str().to_string(), m.content.clone()))
        .collect()
}
