//! Counts that match the server's, for a model whose tokenizer tern has not: the
//! server's tokenize endpoint (probed once per server) counts what a request sends
//! before it is sent, and each reported `usage.prompt_tokens` calibrates the counts;
//! what is learned is kept per model in the state directory. The gauge says which.
//! A server that cannot count just now (down, restarting, loading its model) leaves
//! counts to estimates until it answers a request, then is asked again.

use futures::StreamExt;

use super::Model;
use crate::config::calibration_file;
use crate::context::Assembled;
use crate::engine::run_loop::{self, Loop};
use crate::engine::{EngineRole, EventSink, Internal};
use crate::llm::{CountError, ProbedTokenizer, ServerTokenizer, TokenizerSlot};
use crate::plural::count;
use crate::tokens::{Prediction, calibration};

/// Texts counted by the server at once.
const PARALLEL_COUNTS: usize = 4;

/// How many times a turn waits for counts before it goes with estimates (texts can
/// change while they are counted: the map refreshes, say).
pub(crate) const MAX_COUNT_ROUNDS: usize = 2;

/// The engine's side of the server's counting.
#[derive(Default)]
pub(crate) struct CountSlot {
    /// The server's tokenizer, once the probe found one (shared with summaries that
    /// start before it answers).
    tokenizer: TokenizerSlot,
    /// The probe has answered (for the current model).
    probed: bool,
    /// A counting job (the probe, or texts to count) is running.
    pub(crate) running: bool,
    /// The server could not count just now: counts are estimates (and nothing waits
    /// for the server's) until it answers a request.
    unavailable: bool,
    /// A report no tokenizer gives was said; the next ones only go to the log.
    told_implausible: bool,
    /// A report of more cached tokens than prompt tokens was said (likewise).
    told_cached: bool,
    /// The server was asked what window it allocated (once per model).
    window_asked: bool,
}

/// A counting job's result, handed back to the loop.
pub(crate) struct Counted {
    model: String,
    /// The probe's answer (or the tokenizer already known).
    tokenizer: Result<Option<ServerTokenizer>, CountError>,
    counts: Vec<(u64, usize)>,
    error: Option<CountError>,
    /// The window the server said it allocated, if it was asked (`Err`: garbage).
    window: Option<Result<Option<crate::llm::ReportedWindow>, String>>,
    /// The chat template's tokens by the framing probe, if it was made (a server
    /// that streams no usage, just found).
    framing: Option<Result<Vec<(usize, usize)>, CountError>>,
}

impl Model {
    /// The server's tokenizer once the probe under way (if any) answers: for
    /// requests whose texts nothing noted for counting (a summary's transcript), which
    /// may be made before it does (a resumed session's first summary).
    pub(crate) fn server_tokenizer(&self) -> ProbedTokenizer {
        self.counts.tokenizer.later()
    }

    /// Starts from what earlier sessions learned about the model's counts (mended if
    /// an absurd report got into it), and asks whether the server counts tokens itself.
    pub(in crate::engine) fn start_counts(&mut self, events: &EventSink, jobs: &Loop) {
        self.counts = CountSlot::default();
        self.start_window(events);
        let file = calibration_file();
        if let Some(mut saved) = calibration::load(&file).remove(&self.info().name) {
            let dropped = saved.sanitize();
            if dropped > 0 {
                // Forgotten on disk too, so that it is said once.
                let removed = match calibration::save(&file, &self.info().name, &saved) {
                    Ok(()) => "forgotten (removed from the file)".to_string(),
                    Err(e) => format!(
                        "forgotten for this session, but the file could not be rewritten ({e})"
                    ),
                };
                events.warning(format!(
                    "{} held {} of {}'s prompt tokens that no tokenizer gives: {removed}",
                    file.display(),
                    crate::plural::count(dropped, "report"),
                    self.info().name
                ));
            }
            self.counter().set_calibration(saved);
        }
        self.start_counting(jobs);
    }

    /// Starts a counting job unless one is running: the probe first, then the texts
    /// counted since the last job that the server has not counted.
    pub(in crate::engine) fn start_counting(&mut self, jobs: &Loop) {
        let no_server = self.counts.probed && self.counts.tokenizer.get().is_none();
        // Landing a saved reply or reviewing a branch asks the server nothing more.
        let conversation = jobs.role() == EngineRole::Conversation;
        if self.counts.running
            || self.counts.unavailable
            || self.info().exact_tokens
            || no_server
            || !conversation
        {
            return;
        }
        // OpenAI's API has no tokenize endpoint, and without a key nothing is sent: as
        // good as probed, with no tokenizer (the counts are calibrated instead).
        if self.client().api_base() == crate::llm::OPENAI_API_BASE
            || self.client().unusable().is_some()
        {
            self.counts.probed = true;
            return;
        }
        let wanted = self.counter().take_wanted();
        if self.counts.probed && wanted.is_empty() {
            return;
        }
        self.counts.running = true;
        let client = self.client().clone();
        let model = self.info().name.clone();
        let known = self.counts.tokenizer.get();
        let first_probe = !self.counts.probed;
        // A summary made meanwhile waits for the probe's answer, told as soon as it
        // comes (with the counter told first, so the summary's counts say "via server").
        let slot = self.counts.tokenizer.clone();
        let counter = self.counter().clone();
        if known.is_none() {
            slot.asking();
        }
        let ask_window = !std::mem::replace(&mut self.counts.window_asked, true);
        let done = jobs.done();
        run_loop::spawn(done.clone(), async move {
            // The window is asked beside the tokenizer, so that a turn waiting for the
            // probe goes with it.
            let (tokenizer, window) = futures::join!(
                async {
                    match known {
                        Some(tokenizer) => Ok(Some(tokenizer)),
                        None => {
                            let probed = client.server_tokenizer(&model).await;
                            if let Ok(found) = &probed {
                                counter.set_server(found.is_some());
                            }
                            slot.set(probed.clone().ok().flatten());
                            probed
                        }
                    }
                },
                async {
                    match ask_window {
                        true => Some(client.server_window(&model).await),
                        false => None,
                    }
                }
            );
            let mut counts = Vec::new();
            let mut error = None;
            let mut framing = None;
            if let Ok(Some(tokenizer)) = &tokenizer {
                // Before any turn: nothing streams while it is asked.
                if first_probe && tokenizer.needs_framing_probe() {
                    framing = Some(tokenizer.framing().await);
                }
                let results: Vec<_> = futures::stream::iter(wanted)
                    .map(
                        |(key, text)| async move { tokenizer.count(&text).await.map(|n| (key, n)) },
                    )
                    .buffer_unordered(PARALLEL_COUNTS)
                    .collect()
                    .await;
                for result in results {
                    match result {
                        Ok(count) => counts.push(count),
                        Err(e) => error = Some(e),
                    }
                }
            }
            let _ = done.send(Internal::Counted(Counted {
                model,
                tokenizer,
                counts,
                error,
                window,
                framing,
            }));
        });
    }

    /// A counting job finished: uses what it counted (the engine then lets a turn
    /// waiting for it go); false when the model changed meanwhile.
    pub(in crate::engine) fn counted(
        &mut self,
        done: Counted,
        events: &EventSink,
        jobs: &Loop,
    ) -> bool {
        self.counts.running = false;
        if done.model != self.info().name {
            // The model changed meanwhile; its own probe follows.
            self.start_counting(jobs);
            return false;
        }
        let first = !self.counts.probed;
        match done.window {
            Some(Ok(Some(reported))) => self.reported_window(reported, events),
            Some(Err(garbage)) => events.warning(format!(
                "what the server says about its window was ignored ({garbage}): the window stays {} tokens",
                self.window().window
            )),
            Some(Ok(None)) | None => {}
        }
        match done.tokenizer {
            Ok(tokenizer) => {
                self.counts.probed = true;
                self.counts.tokenizer.set(tokenizer);
            }
            Err(e) => self.server_unavailable(&e),
        }
        match done.error {
            Some(e @ CountError::Unavailable(_)) => self.server_unavailable(&e),
            Some(CountError::NoCount(e)) => {
                events.warning(format!(
                    "the server's tokenize endpoint failed ({e}); token counts are calibrated estimates from now on"
                ));
                self.counts.tokenizer.set(None);
            }
            None => {}
        }
        match done.framing {
            Some(Ok(framing)) => {
                tracing::debug!("the chat template's tokens by the framing probe: {framing:?}");
                self.counter().learn_framing(&framing);
                self.save_calibration(jobs);
            }
            Some(Err(e)) => {
                tracing::debug!("no framing probe ({e}): the template's tokens stay as they were")
            }
            None => {}
        }
        self.counter()
            .set_server(self.counts.tokenizer.get().is_some());
        self.counter().learn_exact(done.counts);
        if first && let Some(tokenizer) = &self.counts.tokenizer.get() {
            tracing::debug!("token counts come from {}", tokenizer.describe());
        }
        true
    }

    /// The server could not count (or say whether it counts): estimates until it
    /// answers a request (`server_answered`).
    fn server_unavailable(&mut self, e: &CountError) {
        tracing::debug!("the server cannot count tokens now ({e}); estimates until it answers");
        self.counts.unavailable = true;
    }

    /// The server answered a request: if it could not count before, it is asked again
    /// (the probe too, if that was what it could not answer).
    pub(in crate::engine) fn server_answered(&mut self, jobs: &Loop) {
        if std::mem::take(&mut self.counts.unavailable) {
            self.start_counting(jobs);
        }
    }

    /// A counting job (the probe, or texts to count) is running.
    pub(in crate::engine) fn counting(&self) -> bool {
        self.counts.running
    }

    /// True while the server has yet to answer the probe or count texts it was given.
    pub(in crate::engine) fn counts_pending(&self, jobs: &Loop) -> bool {
        !self.info().exact_tokens
            && jobs.role() == EngineRole::Conversation
            && !self.counts.unavailable
            && (!self.counts.probed
                || self.counts.running
                || (self.counts.tokenizer.get().is_some() && self.counter().has_wanted()))
    }

    /// True when a request must wait for the server's counts before it is checked
    /// against the window: the probe has not answered, or the server has not counted
    /// some of its messages yet.
    pub(in crate::engine) fn needs_counts(&self, assembled: &Assembled) -> bool {
        if self.info().exact_tokens || self.counts.unavailable {
            return false;
        }
        !self.counts.probed
            || assembled
                .messages
                .iter()
                .any(|m| !self.counter().knows(&m.content))
    }

    /// A reported usage's cached tokens, as `Usage::believed_cached` says: an
    /// impossible report (more cached than prompt tokens) counts none as cached, and is
    /// said once.
    pub(in crate::engine) fn believed_cache(
        &mut self,
        usage: &mut crate::llm::Usage,
        events: &EventSink,
    ) {
        if usage.cache_is_possible() {
            return;
        }
        let impossible = format!(
            "the server reported {} of {}, more than it was sent",
            count(usage.cached_tokens, "cached token"),
            count(usage.prompt_tokens, "prompt token")
        );
        tracing::warn!("{impossible}");
        if !std::mem::replace(&mut self.counts.told_cached, true) {
            events.warning(format!(
                "{impossible} (a proxy that miscounts?): none is counted as cached, so the cost is at the full input price, and reports like it are not believed"
            ));
        }
        usage.cached_tokens = usage.believed_cached();
    }

    /// Learns from the server's count of a request tern predicted, and keeps what was
    /// learned for the next session; false (and said, once) when the count is one no
    /// tokenizer gives, which is not learned.
    pub(in crate::engine) fn calibrate(
        &mut self,
        prediction: &Prediction,
        reported: usize,
        events: &EventSink,
        jobs: &Loop,
    ) -> bool {
        let error = match self.counter().observe(prediction, reported) {
            Ok(Some(error)) => error,
            Ok(None) => return true,
            Err(implausible) => {
                tracing::warn!("{implausible}");
                if !std::mem::replace(&mut self.counts.told_implausible, true) {
                    events.warning(format!(
                        "{implausible} (a proxy that miscounts?); its cost is tern's count instead, and reports like it are not learned"
                    ));
                }
                return false;
            }
        };
        tracing::debug!(
            predicted = prediction.total,
            reported,
            error = format!("{:.2}%", 100.0 * error),
            counting = ?self.counter().counting(),
            "prompt tokens predicted and reported"
        );
        self.save_calibration(jobs);
        true
    }

    /// Keeps what was learned for the next session.
    fn save_calibration(&self, jobs: &Loop) {
        if let Some(learned) = self.counter().calibration() {
            let model = self.info().name.clone();
            let done = jobs.done();
            run_loop::spawn_blocking(done, move || {
                if let Err(e) = calibration::save(&calibration_file(), &model, &learned) {
                    tracing::warn!("cannot save the token calibration: {e}");
                }
            });
        }
    }
}

/// What a refusal made with counts learned from the server adds: where they are
/// kept and how to forget them.
pub(in crate::engine) fn calibration_note(counting: crate::tokens::Counting) -> Option<String> {
    counting
        .is_learned()
        .then(|| calibration::refusal_note(&calibration_file()))
}
