//! History summaries: aider's ChatSummary, without its blind spots.
//!
//! When the history is over its budget, a tail worth under half the budget is kept
//! verbatim, the split moves left until the head ends on an assistant message, and the
//! head becomes one user message written in the developer's voice (followed by a short
//! assistant acknowledgement, so roles keep alternating). The weak model writes it; the
//! main model is tried when the weak one fails. At most `MAX_DEPTH` rounds run until
//! summary + tail fits. Unlike aider, a head larger than the summarizer's own window is
//! never cut: it is summarized in chunks whose summaries are then merged.

use std::sync::atomic::{AtomicUsize, Ordering};

use futures::{StreamExt, TryStreamExt};
use tokio_util::sync::CancellationToken;

use super::Window;
use crate::llm::{ChatRequest, Finish, LlmClient, LlmError, Message, ModelInfo, Role};
use crate::prompts;
use crate::tokens::{MESSAGE_OVERHEAD, REPLY_PRIMING, TokenCounter};

/// How many summarize-and-check rounds `Summarizer::fit` makes at most; the last one
/// summarizes everything. (A second round keeps the same tail as the first, so it
/// already summarizes everything; the bound guards the loop.)
pub const MAX_DEPTH: usize = 3;

/// A history this short is summarized whole rather than split.
const MIN_SPLIT: usize = 4;

/// Summary requests made at once when a head is summarized in chunks.
const PARALLEL_CHUNKS: usize = 4;

/// Opens the summary message, so the model knows what it is reading.
pub const SUMMARY_PREFIX: &str = prompts::SUMMARY_PREFIX;

/// The history budget when none is configured: `min(max(window/16, 1024), 8192)`.
pub fn default_budget(window: usize) -> usize {
    (window / 16).clamp(1024, 8192)
}

/// The most tokens a summary may take for a history budget of `budget`: a quarter of
/// it, so that after a swap summary + kept messages sit well under the checkpoint mark.
pub fn summary_cap(budget: usize) -> usize {
    (budget / 4).clamp(64, 2048)
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

/// Replaces `history[..anchor]` with the summary pair; the messages from `anchor` on
/// stay verbatim. `anchor` must not exceed the history's length.
pub fn replace_head(
    history: &mut Vec<Message>,
    anchor: usize,
    summary: &str,
    counter: &TokenCounter,
) -> Replaced {
    let pair = summary_messages(summary);
    let replaced_tokens = tokens(&history[..anchor], counter);
    let summary_tokens = tokens(&pair, counter);
    history.splice(..anchor, pair);
    Replaced {
        replaced_messages: anchor,
        replaced_tokens,
        summary_tokens,
    }
}

/// A model the summarizer may use, with the most prompt tokens it accepts.
#[derive(Debug, Clone)]
pub struct SummaryModel {
    pub info: ModelInfo,
    pub input_limit: usize,
}

impl SummaryModel {
    /// `info` with its window (or `window_override`) as its input limit.
    pub fn new(info: ModelInfo, window_override: Option<usize>) -> Self {
        let input_limit = Window::for_model(&info, window_override, Some(0)).prompt_limit;
        SummaryModel { info, input_limit }
    }
}

/// A summary of the head `[..anchor]` of some messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The summary text, without `SUMMARY_PREFIX`.
    pub text: String,
    /// The summarized messages are `[..anchor]`; the rest is kept verbatim.
    pub anchor: usize,
    /// Model requests it took (fallbacks and chunks included).
    pub calls: usize,
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
}

/// Writes history summaries with the weak model, falling back to the main model.
#[derive(Debug, Clone)]
pub struct Summarizer {
    client: LlmClient,
    /// Tried in order for every request: the weak model first.
    models: Vec<SummaryModel>,
    counter: TokenCounter,
}

impl Summarizer {
    /// `models` are tried in order (weak, then main); `counter` counts the history as
    /// the main model's requests do.
    pub fn new(client: LlmClient, models: Vec<SummaryModel>, counter: TokenCounter) -> Self {
        Summarizer {
            client,
            models,
            counter,
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
        })
    }
}

/// One summarizing job: its cap, its cancel switch and its request count.
struct Run<'a> {
    summarizer: &'a Summarizer,
    cap: usize,
    cancel: &'a CancellationToken,
    calls: AtomicUsize,
}

impl<'a> Run<'a> {
    fn new(summarizer: &'a Summarizer, budget: usize, cancel: &'a CancellationToken) -> Self {
        Run {
            summarizer,
            cap: summary_cap(budget),
            cancel,
            calls: AtomicUsize::new(0),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    fn counter(&self) -> &TokenCounter {
        &self.summarizer.counter
    }

    /// The summarizer's system prompt, ending with a line break.
    fn prompt(&self) -> String {
        format!("{}\n", prompts::summarize(self.cap / 2))
    }

    /// Transcript tokens one request may carry: the smallest input limit of the models
    /// minus the prompt, the summary's room and a tenth for tokenizers that count
    /// differently from ours.
    fn chunk_limit(&self) -> Result<usize, SummaryError> {
        let window = self
            .summarizer
            .models
            .iter()
            .map(|m| m.input_limit)
            .min()
            .unwrap_or(0);
        let fixed = REPLY_PRIMING
            + 2 * MESSAGE_OVERHEAD
            + self.counter().count(&self.prompt())
            + self.counter().count(&merge_preamble())
            + self.cap;
        let limit = window.saturating_sub(fixed) * 9 / 10;
        if limit < 64 {
            return Err(SummaryError::WindowTooSmall(window));
        }
        Ok(limit)
    }

    /// One summary of all of `messages`, in chunks when they do not fit one request.
    async fn summarize(&self, messages: &[Message]) -> Result<String, SummaryError> {
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

    /// One summary request, tried with each model in turn.
    async fn ask(&self, prompt: &str, transcript: &str) -> Result<String, SummaryError> {
        let mut failures = Vec::new();
        for model in &self.summarizer.models {
            if self.cancel.is_cancelled() {
                return Err(SummaryError::Cancelled);
            }
            let mut info = model.info.clone();
            // A summary cut at its cap is still a summary; never continue it.
            info.prefill = false;
            let request = ChatRequest {
                model: info,
                messages: vec![Message::system(prompt), Message::user(transcript)],
                cache_control: false,
                max_tokens: Some(self.cap),
            };
            self.calls.fetch_add(1, Ordering::Relaxed);
            let reply = self
                .summarizer
                .client
                .chat(&request, self.cancel, &mut |_| {})
                .await;
            match reply {
                Ok(reply) => match reply.finish {
                    Finish::Cancelled => return Err(SummaryError::Cancelled),
                    Finish::CutOff(why) => failures.push(format!(
                        "{}: the reply was cut off ({why})",
                        model.info.name
                    )),
                    Finish::Stop | Finish::Length if reply.text.trim().is_empty() => {
                        failures.push(format!("{}: the reply was empty", model.info.name))
                    }
                    Finish::Stop | Finish::Length => return Ok(reply.text.trim().to_string()),
                },
                Err(LlmError::Cancelled) => return Err(SummaryError::Cancelled),
                Err(e) => failures.push(format!("{}: {e}", model.info.name)),
            }
        }
        Err(SummaryError::Failed(failures.join("; ")))
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
