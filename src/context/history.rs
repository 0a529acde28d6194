//! History summaries: aider's ChatSummary, without its blind spots.
//!
//! When the history is over its budget, a tail worth under half the budget is kept
//! verbatim, the split moves left until the head ends on an assistant message, and the
//! head becomes one user message written in the developer's voice (followed by a short
//! assistant acknowledgement, so roles keep alternating). The weak model writes it; the
//! main model is tried when the weak one fails. At most `MAX_DEPTH` rounds run until
//! summary + tail fits. Unlike aider, a head larger than the summarizer's own window is
//! never cut: it is summarized in chunks whose summaries are then merged.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::{StreamExt, TryStreamExt};
use tokio_util::sync::CancellationToken;

use super::Window;
use crate::llm::{
    ChatReply, ChatRequest, Finish, LlmClient, LlmError, Message, ModelInfo, ReplyLimit, Role,
    StreamEvent,
};
use crate::prompts;
use crate::tokens::{Counting, Prediction, TokenCounter};

/// How many summarize-and-check rounds `Summarizer::fit` makes at most; the last one
/// summarizes everything. (A second round keeps the same tail as the first, so it
/// already summarizes everything; the bound guards the loop.)
pub const MAX_DEPTH: usize = 3;

/// A history this short is summarized whole rather than split.
const MIN_SPLIT: usize = 4;

/// Summary requests made at once when a head is summarized in chunks; they still go
/// to one server one at a time (`ChatRequest::one_at_a_time`).
const PARALLEL_CHUNKS: usize = 4;

/// How many times a summary is made again in smaller chunks after the server refused
/// one as too long.
const SMALLER_RETRIES: usize = 3;

/// Told of every summary request as it is sent (`StreamEvent::Request`).
pub type RequestObserver = Arc<dyn Fn(StreamEvent) + Send + Sync>;

/// Opens the summary message, so the model knows what it is reading.
pub const SUMMARY_PREFIX: &str = prompts::SUMMARY_PREFIX;

/// The history budget when none is configured: `min(max(window/16, 1024), 8192)`,
/// where the floor of 1024 scales down to a quarter of windows under 4096 tokens.
pub fn default_budget(window: usize) -> usize {
    (window / 16).clamp(1024.min(window / 4), 8192)
}

/// The most tokens a summary may take for a history budget of `budget`: a quarter of
/// it, so that after a swap summary + kept messages sit well under the checkpoint mark.
pub fn summary_cap(budget: usize) -> usize {
    (budget / 4).clamp(32, 2048)
}

/// Goes before the summarizer's prompt when partial summaries are merged.
fn merge_preamble() -> String {
    format!("{}\n\n", prompts::SUMMARIZE_MERGE)
}

/// Tokens the messages take in a request (content plus the chat format's overhead).
pub fn tokens(messages: &[Message], counter: &TokenCounter) -> usize {
    messages
        .iter()
        .map(|m| counter.count_message(&m.content))
        .sum()
}

/// The summary as it sits at the front of the history: the developer's recap and the
/// assistant's acknowledgement.
pub fn summary_messages(text: &str) -> [Message; 2] {
    [
        Message::user(format!("{SUMMARY_PREFIX}{}", text.trim())),
        Message::assistant(prompts::SUMMARY_ACK),
    ]
}

/// Where `messages` split for a budget: the tail `[i..]` is the longest suffix worth
/// under half the budget, then `i` moves right (aider moves it left, which can push the
/// tail over half) until the head `[..i]` ends on an assistant message. None when the
/// whole history should be summarized: too few messages, or no tail to keep.
pub fn split_point(messages: &[Message], counter: &TokenCounter, budget: usize) -> Option<usize> {
    if messages.len() <= MIN_SPLIT {
        return None;
    }
    let half = budget / 2;
    let mut tail = 0;
    let mut split = messages.len();
    for (i, m) in messages.iter().enumerate().rev() {
        let t = counter.count_message(&m.content);
        if tail + t >= half {
            break;
        }
        tail += t;
        split = i;
    }
    if split == 0 {
        return None;
    }
    while split < messages.len() && messages[split - 1].role != Role::Assistant {
        split += 1;
    }
    (split > MIN_SPLIT && split < messages.len()).then_some(split)
}

/// What replacing a history's head with a summary did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    pub replaced_messages: usize,
    pub replaced_tokens: usize,
    /// Tokens of the summary pair now at the front.
    pub summary_tokens: usize,
}

/// The tokens of `history[..anchor]`, and of the summary pair that would replace it.
pub fn head_and_summary(
    history: &[Message],
    anchor: usize,
    summary: &str,
    counter: &TokenCounter,
) -> (usize, usize) {
    let head = history.get(..anchor).unwrap_or(history);
    (
        tokens(head, counter),
        tokens(&summary_messages(summary), counter),
    )
}

/// Replaces `history[..anchor]` with the summary pair; the messages from `anchor` on
/// stay verbatim. `anchor` must not exceed the history's length.
pub fn replace_head(
    history: &mut Vec<Message>,
    anchor: usize,
    summary: &str,
    counter: &TokenCounter,
) -> Replaced {
    let (replaced_tokens, summary_tokens) = head_and_summary(history, anchor, summary, counter);
    history.splice(..anchor, summary_messages(summary));
    Replaced {
        replaced_messages: anchor,
        replaced_tokens,
        summary_tokens,
    }
}

/// What dropping a history's oldest turns did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forgotten {
    pub turns: usize,
    pub tokens: usize,
}

/// Drops the oldest turns of `history` (a summary or an earlier note at its front
/// counts as one): `turns` of them, or with None as many as it takes to bring it to
/// at most `target` tokens; the latest turn stays when `keep_latest`. A note at the front tells the
/// model. None when there is nothing to drop. The fallback when summarizing fails,
/// made only with the user's consent (`/forget`).
pub(crate) fn forget_head(
    history: &mut Vec<Message>,
    turns: Option<usize>,
    target: usize,
    keep_latest: bool,
    counter: &TokenCounter,
) -> Option<Forgotten> {
    let note = [
        Message::user(prompts::FORGOTTEN),
        Message::assistant(prompts::FORGOTTEN_ACK),
    ];
    let droppable = (history.len() / 2).saturating_sub(usize::from(keep_latest));
    let pair_tokens: Vec<usize> = history
        .chunks(2)
        .map(|pair| tokens(pair, counter))
        .collect();
    let dropped = turns.unwrap_or_else(|| {
        let mut left = tokens(history, counter) + tokens(&note, counter);
        pair_tokens
            .iter()
            .take_while(|&&t| {
                let over = left > target;
                left -= t;
                over
            })
            .count()
    });
    let dropped = dropped.min(droppable);
    if dropped == 0 {
        return None;
    }
    let forgotten = Forgotten {
        turns: dropped,
        tokens: pair_tokens[..dropped].iter().sum(),
    };
    history.splice(..2 * dropped, note);
    Some(forgotten)
}

/// A model the summarizer may use, with the most prompt tokens it accepts.
#[derive(Debug, Clone)]
pub struct SummaryModel {
    pub info: ModelInfo,
    pub input_limit: usize,
}

impl SummaryModel {
    /// `info` with its window (or `window_override`) as its input limit, and never
    /// more than `cap` (the main model's window when they share a server).
    pub fn new(info: ModelInfo, window_override: Option<usize>, cap: Option<usize>) -> Self {
        let own = Window::for_model(&info, window_override, Some(0)).prompt_limit;
        let input_limit = cap.map_or(own, |cap| own.min(cap));
        SummaryModel { info, input_limit }
    }
}

/// A summary of the head `[..anchor]` of some messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The summary text, without `SUMMARY_PREFIX`.
    pub text: String,
    /// The summarized messages are `[..anchor]`; the rest is kept verbatim.
    pub anchor: usize,
    /// Model requests it took (fallbacks and chunks included).
    pub calls: usize,
    /// What its requests cost at the models' prices (those that answered).
    pub cost: f64,
    /// Why a model failed before the next one wrote (part of) the summary, each
    /// reason once: a fallback is said, not silent.
    pub fell_back: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("summarizing was cancelled")]
    Cancelled,
    #[error("no model could summarize the history: {0}")]
    Failed(String),
    #[error("the summarizer's window ({0} tokens) is too small to summarize anything")]
    WindowTooSmall(usize),
    #[error("the partial summaries stopped getting shorter ({0} tokens); giving up")]
    NoProgress(usize),
    #[error("the server refused the summary request as too long ({0})")]
    TooLong(String, Option<usize>),
}

/// Writes history summaries with the weak model, falling back to the main model.
#[derive(Clone)]
pub struct Summarizer {
    client: LlmClient,
    /// Tried in order for every request: the weak model first.
    models: Vec<SummaryModel>,
    counter: TokenCounter,
    observer: Option<RequestObserver>,
    /// The server's window as told or reported (`ChatRequest::known_window`).
    known_window: Option<usize>,
    /// The server's tokenizer, taken when a request is sent (the probe may still be
    /// under way when the summary starts): a summary's texts are counted by it before
    /// they are sent, so its prediction is the server's count, not an estimate.
    tokenizer: Option<crate::llm::ProbedTokenizer>,
}

impl std::fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summarizer")
            .field("client", &self.client)
            .field("models", &self.models)
            .finish_non_exhaustive()
    }
}

impl Summarizer {
    /// `models` are tried in order (weak, then main); `counter` counts the history as
    /// the main model's requests do.
    pub fn new(client: LlmClient, models: Vec<SummaryModel>, counter: TokenCounter) -> Self {
        Summarizer {
            client,
            models,
            counter: counter.summarizing(),
            observer: None,
            known_window: None,
            tokenizer: None,
        }
    }

    /// Counts its requests' texts with the server's tokenizer, when there is one
    /// once its probe answers.
    pub(crate) fn counted_by(self, tokenizer: crate::llm::ProbedTokenizer) -> Self {
        Summarizer {
            tokenizer: Some(tokenizer),
            ..self
        }
    }

    /// The server's window is `window`, as told or reported (not assumed).
    pub(crate) fn window_known(self, window: usize) -> Self {
        Summarizer {
            known_window: Some(window),
            ..self
        }
    }

    /// Whether `counter` counts for `model`: the main model's, tried last. Another
    /// model's tokenizer may differ: its requests are predicted with it uncalibrated,
    /// and teach nothing.
    fn counts_for(&self, model: &ModelInfo) -> bool {
        self.models
            .last()
            .is_some_and(|main| main.info.name == model.name)
    }

    /// Tells `observer` of each request as it is sent.
    pub(crate) fn observed(self, observer: RequestObserver) -> Self {
        Summarizer {
            observer: Some(observer),
            ..self
        }
    }

    /// Classic summarizing: shrinks `history` under `budget` by summarizing a head and
    /// keeping a tail, at most `MAX_DEPTH` rounds. Returns None when it already fits
    /// and `force` is off. With `force`, at least one round runs.
    pub async fn fit(
        &self,
        history: &[Message],
        budget: usize,
        force: bool,
        cancel: &CancellationToken,
    ) -> Result<Option<Summary>, SummaryError> {
        if history.is_empty() || (!force && tokens(history, &self.counter) <= budget) {
            return Ok(None);
        }
        let run = Run::new(self, budget, cancel);
        let mut messages = history.to_vec();
        // How many messages of `history` the summary pair at the front of `messages`
        // stands for (0 before the first round).
        let mut anchor = 0;
        let mut text = String::new();
        for depth in 0..MAX_DEPTH {
            let last = depth + 1 == MAX_DEPTH;
            let split = if last {
                None
            } else {
                split_point(&messages, &self.counter, budget)
            };
            let split = split.unwrap_or(messages.len());
            text = run.summarize(&messages[..split]).await?;
            // `messages` is [pair, history[anchor..]] after the first round.
            anchor = if depth == 0 {
                split
            } else {
                anchor + split - 2
            };
            messages = summary_messages(&text).to_vec();
            messages.extend_from_slice(&history[anchor..]);
            if anchor == history.len() || tokens(&messages, &self.counter) <= budget {
                break;
            }
        }
        Ok(Some(Summary {
            text,
            anchor,
            calls: run.calls(),
            cost: run.cost(),
            fell_back: run.fell_back(),
        }))
    }

    /// Summarizes all of `messages` into one text of at most `summary_cap(budget)`
    /// tokens (the background checkpoint and `/compact`).
    pub async fn summarize(
        &self,
        messages: &[Message],
        budget: usize,
        cancel: &CancellationToken,
    ) -> Result<Summary, SummaryError> {
        let run = Run::new(self, budget, cancel);
        let text = run.summarize(messages).await?;
        Ok(Summary {
            text,
            anchor: messages.len(),
            calls: run.calls(),
            cost: run.cost(),
            fell_back: run.fell_back(),
        })
    }
}

/// One summarizing job: its cap, its cancel switch and its request count.
struct Run<'a> {
    summarizer: &'a Summarizer,
    cap: usize,
    cancel: &'a CancellationToken,
    calls: AtomicUsize,
    /// What the answered requests cost.
    cost: std::sync::Mutex<f64>,
    /// The most prompt tokens a request may carry, once a server refused more.
    refused_above: AtomicUsize,
    /// Failures a later model made up for (`Summary::fell_back`).
    fell_back: std::sync::Mutex<Vec<String>>,
}

impl<'a> Run<'a> {
    fn new(summarizer: &'a Summarizer, budget: usize, cancel: &'a CancellationToken) -> Self {
        Run {
            summarizer,
            cap: summary_cap(budget),
            cancel,
            calls: AtomicUsize::new(0),
            cost: std::sync::Mutex::new(0.0),
            refused_above: AtomicUsize::new(usize::MAX),
            fell_back: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    fn cost(&self) -> f64 {
        *self.cost.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fell_back(&self) -> Vec<String> {
        self.fell_back
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A later model answered after `failures`: kept to be said, each reason once.
    fn made_up_for(&self, failures: Vec<String>) {
        let mut kept = self.fell_back.lock().unwrap_or_else(|e| e.into_inner());
        for failure in failures {
            if !kept.contains(&failure) {
                kept.push(failure);
            }
        }
    }

    fn counter(&self) -> &TokenCounter {
        &self.summarizer.counter
    }

    /// The server's count of a summary request teaches the counts as a turn's does
    /// (the rates were learned on turns alone, whose contents are mostly code: a
    /// transcript's prose was predicted 8–22% off). Only the main model's requests
    /// teach them, whose counter this is; a count no tokenizer gives is not learned.
    /// The drift is told to the observer for every model's request.
    fn learn(&self, request: &ChatRequest, prediction: &Prediction, reply: &ChatReply) {
        if !reply.usage_reported || reply.continuations > 0 {
            return;
        }
        if let (Some(observe), Some(counting)) = (&self.summarizer.observer, request.counting) {
            observe(StreamEvent::Counted(crate::tokens::Drift {
                predicted: prediction.total,
                reported: reply.usage.prompt_tokens,
                counting,
            }));
        }
        if !self.summarizer.counts_for(&request.model) {
            return;
        }
        match self
            .counter()
            .observe(prediction, reply.usage.prompt_tokens)
        {
            Ok(error) => tracing::debug!(
                predicted = prediction.total,
                reported = reply.usage.prompt_tokens,
                error = ?error,
                "summary prompt tokens predicted and reported"
            ),
            Err(implausible) => tracing::warn!("summary: {implausible}"),
        }
    }

    /// The summarizer's system prompt, ending with a line break.
    fn prompt(&self) -> String {
        format!("{}\n", prompts::summarize(self.cap / 2))
    }

    /// Transcript tokens one request may carry: the smallest input limit of the models
    /// (or what a server accepted, after it refused more) minus the prompt, the
    /// summary's room and a tenth for counts that differ from the server's.
    fn chunk_limit(&self) -> Result<usize, SummaryError> {
        let window = self.input_limit();
        let fixed = self.counter().per_request()
            + 2 * self.counter().per_message()
            + self.counter().count(&self.prompt())
            + self.counter().count(&merge_preamble())
            + self.cap;
        let limit = window.saturating_sub(fixed) * 9 / 10;
        if limit < 64 {
            return Err(SummaryError::WindowTooSmall(window));
        }
        Ok(limit)
    }

    /// The most prompt tokens a request may carry: the smallest input limit of the
    /// models, or less once a server refused more.
    fn input_limit(&self) -> usize {
        self.summarizer
            .models
            .iter()
            .map(|m| m.input_limit)
            .min()
            .unwrap_or(0)
            .min(self.refused_above.load(Ordering::Relaxed))
    }

    /// One summary of all of `messages`, in chunks when they do not fit one request;
    /// made again in smaller chunks when the server refuses one as too long.
    async fn summarize(&self, messages: &[Message]) -> Result<String, SummaryError> {
        let mut retries = 0;
        loop {
            match self.summarize_in_chunks(messages).await {
                Err(SummaryError::TooLong(why, window)) if retries < SMALLER_RETRIES => {
                    retries += 1;
                    let tried = self.input_limit();
                    // The server's window when it said one smaller than what was tried;
                    // else its counts run higher than ours: a quarter less.
                    let smaller = window.filter(|&w| w < tried).unwrap_or(tried * 3 / 4);
                    tracing::debug!(
                        "a summary request was too long ({why}); trying again below {smaller} tokens"
                    );
                    self.refused_above.fetch_min(smaller, Ordering::Relaxed);
                }
                other => return other,
            }
        }
    }

    async fn summarize_in_chunks(&self, messages: &[Message]) -> Result<String, SummaryError> {
        let limit = self.chunk_limit()?;
        let pieces: Vec<String> = messages
            .iter()
            .filter(|m| m.role != Role::System)
            .flat_map(|m| transcript_pieces(m, limit, self.counter()))
            .collect();
        let chunks = pack(&pieces, limit, self.counter());
        if let [only] = chunks.as_slice() {
            return self.ask(&self.prompt(), only).await;
        }
        let mut partials = self.ask_all(&self.prompt(), chunks).await?;
        // Merge the partial summaries, in chunks again if they still do not fit.
        let merge_prompt = format!("{}{}", merge_preamble(), self.prompt());
        let mut size = usize::MAX;
        loop {
            let parts: Vec<String> = partials
                .iter()
                .enumerate()
                .map(|(i, s)| format!("# PART {}\n{}\n", i + 1, s.trim()))
                .collect();
            let total: usize = parts.iter().map(|p| self.counter().count(p)).sum();
            if total >= size {
                return Err(SummaryError::NoProgress(total));
            }
            size = total;
            let chunks = pack(&parts, limit, self.counter());
            if let [only] = chunks.as_slice() {
                return self.ask(&merge_prompt, only).await;
            }
            partials = self.ask_all(&merge_prompt, chunks).await?;
        }
    }

    async fn ask_all(
        &self,
        prompt: &str,
        chunks: Vec<String>,
    ) -> Result<Vec<String>, SummaryError> {
        futures::stream::iter(chunks)
            .map(|chunk| async move { self.ask(prompt, &chunk).await })
            .buffered(PARALLEL_CHUNKS)
            .try_collect()
            .await
    }

    /// Has the server count `messages`' texts, so that the prediction is its count
    /// (a summary's transcript is new text no turn noted); a text it cannot count
    /// now stays an estimate, said as one. A probe still under way is waited for
    /// (within its own timeouts), unless the summary is cancelled meanwhile.
    async fn count_with_server(&self, messages: &[Message]) {
        let Some(probed) = &self.summarizer.tokenizer else {
            return;
        };
        let tokenizer = tokio::select! {
            tokenizer = probed.answered() => tokenizer,
            () = self.cancel.cancelled() => None,
        };
        let Some(tokenizer) = tokenizer else {
            return;
        };
        for message in messages.iter().filter(|m| !m.content.is_empty()) {
            if let Ok(n) = tokenizer.count(&message.content).await {
                let key = xxhash_rust::xxh3::xxh3_64(message.content.as_bytes());
                self.counter().learn_exact([(key, n)]);
            }
        }
    }

    /// One summary request, tried with each model in turn. Too long for every model
    /// is `TooLong`, so the caller can try smaller chunks.
    async fn ask(&self, prompt: &str, transcript: &str) -> Result<String, SummaryError> {
        let mut failures = Vec::new();
        let mut too_long = None;
        for model in &self.summarizer.models {
            if self.cancel.is_cancelled() {
                return Err(SummaryError::Cancelled);
            }
            let mut info = model.info.clone();
            // A summary cut at its cap is still a summary; never continue it.
            info.prefill = false;
            let messages = vec![Message::system(prompt), Message::user(transcript)];
            if self.summarizer.counts_for(&model.info) {
                self.count_with_server(&messages).await;
            }
            // Counted as a turn is, and said as what it is: exact where the server
            // counted every text, an estimate where it could not.
            let prediction = self
                .counter()
                .predict(messages.iter().map(|m| m.content.as_str()));
            let request = ChatRequest {
                model: info,
                messages,
                cache_control: false,
                reply_limit: ReplyLimit::Output {
                    max_tokens: self.cap,
                },
                predicted_prompt: Some(prediction.total),
                counting: Some(match self.summarizer.counts_for(&model.info) {
                    true => self.counter().provenance(&prediction),
                    false => Counting::Uncalibrated,
                }),
                one_at_a_time: true,
                known_window: self.summarizer.known_window,
            };
            self.calls.fetch_add(1, Ordering::Relaxed);
            let observer = self.summarizer.observer.clone();
            let reply = self
                .summarizer
                .client
                .chat(&request, self.cancel, &mut |event| {
                    if let Some(observe) = &observer {
                        observe(event);
                    }
                })
                .await;
            if let Ok(reply) = &reply {
                *self.cost.lock().unwrap_or_else(|e| e.into_inner()) +=
                    model.info.cost(&reply.usage);
                self.learn(&request, &prediction, reply);
            }
            match reply {
                Ok(reply) => match reply.finish {
                    Finish::Cancelled => return Err(SummaryError::Cancelled),
                    Finish::CutOff(why) => failures.push(format!(
                        "{}: the reply was cut off ({why})",
                        model.info.name
                    )),
                    Finish::Empty => {
                        failures.push(format!("{}: the reply was empty", model.info.name))
                    }
                    Finish::Stop | Finish::Length(_) | Finish::ContextFull { .. }
                        if reply.text.trim().is_empty() =>
                    {
                        failures.push(format!("{}: the reply was empty", model.info.name))
                    }
                    Finish::Stop | Finish::Length(_) | Finish::ContextFull { .. } => {
                        self.made_up_for(failures);
                        return Ok(reply.text.trim().to_string());
                    }
                },
                Err(LlmError::Cancelled) => return Err(SummaryError::Cancelled),
                Err(LlmError::ContextLengthExceeded {
                    message, window, ..
                }) => {
                    failures.push(format!("{}: {message}", model.info.name));
                    too_long = Some(window);
                }
                Err(e) => failures.push(format!("{}: {e}", model.info.name)),
            }
        }
        let failures = failures.join("; ");
        match too_long {
            // Every model refused it as too long, or the others failed otherwise: a
            // smaller request may still go through.
            Some(window) => Err(SummaryError::TooLong(failures, window)),
            None => Err(SummaryError::Failed(failures)),
        }
    }
}

/// A message as the summarizer reads it: `# ROLE`, then the content. A message over
/// `limit` tokens is cut at line ends (inside a line if it must) into several pieces,
/// the later ones headed `# ROLE (continued)`: nothing is dropped.
fn transcript_pieces(m: &Message, limit: usize, counter: &TokenCounter) -> Vec<String> {
    let role = m.role.as_str().to_uppercase();
    let piece = |head: &str, body: &str| format!("{head}{}\n", body.trim_end_matches('\n'));
    let first = format!("# {role}\n");
    let whole = piece(&first, &m.content);
    if counter.count(&whole) <= limit {
        return vec![whole];
    }
    let later = format!("# {role} (continued)\n");
    // Two tokens of slack: counts of joined text can differ from the sum of the parts.
    let room = limit.saturating_sub(counter.count(&later) + 2).max(1);
    let mut pieces = vec![];
    let mut current = String::new();
    for line in m.content.split_inclusive('\n') {
        for part in split_line(line, room, counter) {
            let head = if pieces.is_empty() { &first } else { &later };
            let joined = format!("{current}{part}");
            if !current.is_empty() && counter.count(&piece(head, &joined)) > limit {
                pieces.push(piece(head, &current));
                current = part.to_string();
            } else {
                current = joined;
            }
        }
    }
    if !current.is_empty() {
        let head = if pieces.is_empty() { &first } else { &later };
        pieces.push(piece(head, &current));
    }
    pieces
}

/// `line` in pieces of at most `room` tokens, cut at character boundaries.
fn split_line<'a>(line: &'a str, room: usize, counter: &TokenCounter) -> Vec<&'a str> {
    let mut out = vec![];
    let mut rest = line;
    while counter.count(rest) > room {
        // Shrink a guess until it fits; tokens are at least one character each.
        let mut cut = rest.len() * room / counter.count(rest).max(1);
        loop {
            cut = floor_char_boundary(rest, cut.max(1));
            if cut == 0 {
                cut = rest.chars().next().map_or(rest.len(), char::len_utf8);
                break;
            }
            if counter.count(rest.get(..cut).unwrap_or(rest)) <= room {
                break;
            }
            cut = cut * 3 / 4;
        }
        let (piece, tail) = rest.split_at_checked(cut).unwrap_or((rest, ""));
        out.push(piece);
        rest = tail;
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Consecutive pieces joined into chunks of at most `limit` tokens (each piece is
/// already within it).
fn pack(pieces: &[String], limit: usize, counter: &TokenCounter) -> Vec<String> {
    let mut chunks = vec![];
    let mut current = String::new();
    let mut current_tokens = 0;
    for piece in pieces {
        let t = counter.count(piece);
        if !current.is_empty() && current_tokens + t > limit {
            chunks.push(std::mem::take(&mut current));
            current_tokens = 0;
        }
        current.push_str(piece);
        current_tokens += t;
    }
    if !current.is_empty() || chunks.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn counter() -> TokenCounter {
        TokenCounter::new(Encoding::O200kBase, false)
    }

    fn conversation(turns: usize, words: usize) -> Vec<Message> {
        (0..turns)
            .flat_map(|i| {
                let body = "word ".repeat(words);
                [
                    Message::user(format!("question {i}: {body}")),
                    Message::assistant(format!("answer {i}: {body}")),
                ]
            })
            .collect()
    }

    #[test]
    fn default_budget_is_a_sixteenth_of_the_window_within_bounds() {
        assert_eq!(default_budget(4096), 1024);
        assert_eq!(default_budget(32_768), 2048);
        assert_eq!(default_budget(128_000), 8000);
        assert_eq!(default_budget(1_000_000), 8192);
    }

    #[test]
    fn the_split_keeps_a_tail_under_half_the_budget_after_an_assistant_message() {
        let c = counter();
        let history = conversation(50, 20);
        let budget = 1000;
        let split = split_point(&history, &c, budget).unwrap();
        assert_eq!(history[split - 1].role, Role::Assistant);
        assert!(tokens(&history[split..], &c) < budget / 2);
        // The split moved right by at most one message from where one more message
        // would not have fit under half.
        assert!(tokens(&history[split - 2..], &c) >= budget / 2);
    }

    #[test]
    fn short_or_unsplittable_histories_are_summarized_whole() {
        let c = counter();
        assert_eq!(split_point(&conversation(2, 5), &c, 100), None);
        // Every message is bigger than half the budget: nothing can be kept.
        assert_eq!(split_point(&conversation(10, 200), &c, 100), None);
    }

    #[test]
    fn replacing_the_head_keeps_the_rest_verbatim_and_alternating() {
        let c = counter();
        let mut history = conversation(6, 10);
        let kept = history[8..].to_vec();
        let replaced = replace_head(&mut history, 8, "I asked you things.", &c);
        assert_eq!(replaced.replaced_messages, 8);
        assert_eq!(&history[2..], kept.as_slice());
        assert!(history[0].content.starts_with(SUMMARY_PREFIX));
        assert_eq!(replaced.summary_tokens, tokens(&history[..2], &c));
        for pair in history.windows(2) {
            assert_ne!(pair[0].role, pair[1].role);
        }
    }

    #[test]
    fn forgetting_drops_the_oldest_turns_keeps_the_latest_and_tells_the_model() {
        let c = counter();
        let mut history = conversation(10, 20);
        let latest = history[18..].to_vec();
        let whole = tokens(&history, &c);
        let forgotten = forget_head(&mut history, None, whole / 2, true, &c).unwrap();
        assert!(tokens(&history, &c) <= whole / 2);
        assert!(
            forgotten.turns >= 5 && forgotten.turns < 10,
            "{forgotten:?}"
        );
        assert_eq!(history[0].content, prompts::FORGOTTEN);
        assert_eq!(&history[history.len() - 2..], latest.as_slice());
        for pair in history.windows(2) {
            assert_ne!(pair[0].role, pair[1].role);
        }
        // Asked for more than there is, the latest turn still stays.
        let forgotten = forget_head(&mut history, Some(100), 0, true, &c).unwrap();
        assert_eq!(history.len(), 4);
        assert!(forgotten.turns >= 1);
        assert_eq!(&history[2..], latest.as_slice());
        assert_eq!(
            forget_head(&mut conversation(1, 5), None, 0, true, &c),
            None
        );
        // `/forget all`: the latest turn goes too; only the note stays.
        let mut one = conversation(1, 5);
        let forgotten = forget_head(&mut one, Some(usize::MAX), 0, false, &c).unwrap();
        assert_eq!(forgotten.turns, 1);
        assert_eq!(one.len(), 2);
        assert_eq!(one[0].content, prompts::FORGOTTEN);
    }

    #[test]
    fn oversized_messages_are_cut_into_pieces_that_lose_nothing() {
        let c = counter();
        let lines: String = (0..400)
            .map(|i| format!("line {i} of a big file\n"))
            .collect();
        let long_line = "x".repeat(5000);
        let m = Message::assistant(format!("{lines}{long_line}\n"));
        let pieces = transcript_pieces(&m, 300, &c);
        assert!(pieces.len() > 5);
        assert!(
            pieces.iter().all(|p| c.count(p) <= 300),
            "a piece is over the limit"
        );
        assert!(pieces[0].starts_with("# ASSISTANT\n"));
        assert!(pieces[1].starts_with("# ASSISTANT (continued)\n"));
        let body: String = pieces
            .iter()
            .map(|p| p.split_once('\n').unwrap().1)
            .collect::<String>()
            .replace('\n', "");
        assert_eq!(body, m.content.replace('\n', ""));
    }

    #[test]
    fn pack_keeps_order_and_limit() {
        let c = counter();
        let pieces: Vec<String> = (0..30).map(|i| format!("# USER\nmessage {i}\n")).collect();
        let chunks = pack(&pieces, 40, &c);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|ch| c.count(ch) <= 40));
        assert_eq!(chunks.concat(), pieces.concat());
    }
}
