//! The streaming chat client: async-openai for the wire format, tern's own retry policy
//! (Retry-After honoured, 0.25 s doubling backoff inside a total budget, cancellable),
//! partial replies kept, and length-cut replies continued by assistant prefill.

use derive_visitor::DriveMut;
use std::path::Path;
use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::{OpenAIError, StreamError};
use futures::StreamExt;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::Message;
use super::error::{self, HttpFailure, LlmError, Verdict};
use super::key::ApiKey;
use super::models::{ModelInfo, Usage};
use super::tokenize::{CountError, ServerTokenizer};
use super::transport::Transport;

/// How many times a reply cut by `finish_reason: length` is continued.
pub const MAX_CONTINUATIONS: usize = 3;

/// First retry delay; each further attempt doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// What the client needs to know, built from the settings in one place
/// (`From<&config::Settings>`), so that the client does not depend on them.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub api_base: String,
    pub api_key: Option<ApiKey>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    /// Total time spent retrying one request.
    pub retry_budget: Duration,
    /// The most bytes of text (and of reasoning) one reply may hold.
    pub max_reply_bytes: usize,
}

impl ClientOptions {
    /// Why no request can be sent with these options, when none can: there is no API
    /// key for OpenAI's API (a replay sends nothing, so it needs none).
    pub fn unusable(&self, replay: Option<&Path>) -> Option<LlmError> {
        let keyless = self.api_key.as_ref().is_none_or(|k| k.expose().is_empty());
        let openai = self.api_base.trim_end_matches('/') == OPENAI_API_BASE;
        (replay.is_none() && keyless && openai).then_some(LlmError::NoApiKey)
    }
}

/// One chat request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: ModelInfo,
    pub messages: Vec<Message>,
    /// Send `cache_control` breakpoints on the messages that carry one.
    pub cache_control: bool,
    /// What caps the reply, sent as `max_tokens` (or `max_completion_tokens`).
    pub reply_limit: ReplyLimit,
    /// tern's prediction of the prompt tokens: reported with the request, and what
    /// tells an over-long prompt's empty reply from a glitch.
    pub predicted_prompt: Option<usize>,
    /// How that prediction was made (`TokenCounter::provenance`), said with the request.
    pub counting: Option<crate::tokens::Counting>,
    /// Sent only while no other such request to the server is under way (summaries).
    /// Every request to a server that takes one at a time waits so anyway.
    pub one_at_a_time: bool,
    /// The window as told or reported (None when assumed): an empty reply is taken for
    /// llama-cpp-python's overflow only from a prompt near it.
    pub known_window: Option<usize>,
}

/// What caps a reply's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum ReplyLimit {
    /// Nothing was sent: the server decides.
    Server,
    /// The model's output limit, or a smaller cap tern chose (a summary's).
    Output { max_tokens: usize },
    /// What the context window leaves after the prompt, below the output limit.
    Window { max_tokens: usize, window: usize },
}

impl ReplyLimit {
    /// `min(model's output limit, window − prompt)`: the reply's reserve made real
    /// without capping a big window's model below its own limit.
    pub(crate) fn for_prompt(model: &ModelInfo, window: usize, prompt: usize) -> Self {
        let room = window.saturating_sub(prompt).max(1);
        if room < model.max_output {
            ReplyLimit::Window {
                max_tokens: room,
                window,
            }
        } else {
            ReplyLimit::Output {
                max_tokens: model.max_output,
            }
        }
    }

    pub fn max_tokens(self) -> Option<usize> {
        match self {
            ReplyLimit::Server => None,
            ReplyLimit::Output { max_tokens } | ReplyLimit::Window { max_tokens, .. } => {
                Some(max_tokens)
            }
        }
    }

    /// Why a reply with `finish_reason: length` stopped, for the user.
    pub fn describe(self) -> String {
        match self {
            ReplyLimit::Server => "the reply filled its limit, the server's output limit".into(),
            ReplyLimit::Output { max_tokens } => format!(
                "the reply filled its limit, the model's output limit ({max_tokens} tokens)"
            ),
            ReplyLimit::Window { max_tokens, window } => format!(
                "the reply filled its limit, the room left in the context window: {max_tokens} tokens of {window} after the prompt (send less, or give the model a bigger window and tell tern with --context-window)"
            ),
        }
    }
}

/// Why a reply ended.
#[derive(Debug, Clone, PartialEq, Eq, DriveMut)]
pub enum Finish {
    /// The model finished.
    Stop,
    /// The reply hit its limit and could not be continued further.
    Length(ReplyLimit),
    /// The server stopped the reply for its length before the `asked` tokens: its
    /// context is full (llama.cpp stops a reply there), so it is smaller than tern's
    /// window. `prompt` and `reply` are the server's counts.
    ContextFull {
        prompt: usize,
        reply: usize,
        asked: usize,
    },
    /// The stream broke after some text arrived; the text is kept.
    CutOff(String),
    /// The server sent no text, when asked again too.
    Empty,
    /// The user cancelled; the text so far is kept.
    Cancelled,
}

impl Finish {
    /// Why the reply is incomplete, for the user; None when the model finished.
    pub fn incomplete(&self) -> Option<String> {
        match self {
            Finish::Stop => None,
            Finish::Length(limit) => Some(limit.describe()),
            Finish::ContextFull {
                prompt,
                reply,
                asked,
            } => {
                let filled = prompt + reply;
                Some(format!(
                    "the server stopped the reply at {reply} tokens, short of the {asked} asked: its context is probably full (the prompt's {prompt} and the reply's {reply} make {filled}); if the server's context is {filled} tokens (llama.cpp's -c), start tern with --context-window {filled}"
                ))
            }
            Finish::CutOff(why) => Some(format!("cut off: {why}; the partial reply is kept")),
            Finish::Empty => Some(
                "the reply was empty: the server sent no text, and none when asked once more; your message stays in the history"
                    .into(),
            ),
            Finish::Cancelled => Some("interrupted; the partial reply is kept".into()),
        }
    }
}

/// A finished (or partially finished) reply.
#[derive(Debug, Clone)]
pub struct ChatReply {
    pub text: String,
    /// Summed over continuations. Zero when the server reported none.
    pub usage: Usage,
    pub usage_reported: bool,
    pub finish: Finish,
    /// How many continuation requests were made after `finish_reason: length`.
    pub continuations: usize,
}

/// What the client reports while a request runs.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Reply text as it arrives.
    Delta(String),
    /// Reasoning text from models that stream it separately (shown, never sent back).
    Reasoning(String),
    /// An attempt failed and another follows after `delay`.
    Retrying {
        attempt: usize,
        delay: Duration,
        reason: String,
    },
    /// The reply hit the output limit; continuing it.
    Continuing { continuation: usize },
    /// The server's usage report could not be read (a count that is not a count): it
    /// is ignored, the reply kept, and the counts are tern's.
    UsageIgnored(String),
    /// A request (the first, or a continuation) is sent.
    Request {
        model: String,
        predicted_prompt_tokens: Option<usize>,
        max_tokens: Option<usize>,
        counting: Option<crate::tokens::Counting>,
    },
    /// The server's count of a request's prompt against tern's prediction (told by
    /// whoever predicted it: the summarizer, a review).
    Counted(crate::tokens::Drift),
}

/// Below this many predicted prompt tokens, an empty reply is empty (asked once more);
/// from llama-cpp-python above it (and near a known window), it is probably a prompt
/// too long for the server's context: llama-cpp-python answers one with 200, a role
/// chunk and nothing more. No server has a smaller window.
const EMPTY_MEANS_OVERFLOW: usize = 1024;

/// "Near the window": a prompt of at least this share of a known window.
const NEAR_WINDOW: (usize, usize) = (3, 4);

/// A client for one API base.
#[derive(Clone)]
pub struct LlmClient {
    api: Client<OpenAIConfig>,
    /// The base URL as shown in messages: without userinfo and query values, which may
    /// hold credentials.
    api_base: String,
    retry_budget: Duration,
    read_timeout: Duration,
    /// The most bytes of text (and of reasoning) one reply may hold.
    max_reply_bytes: usize,
    /// No key for OpenAI's own API: every request would be refused (or, offline,
    /// retried for a minute), so none is sent.
    missing_key: bool,
    /// For the server's tokenize endpoint: the network client, the server's root and
    /// the key. None when replaying or recording, which must not depend on it.
    tokenize: Option<(reqwest::Client, String, Option<ApiKey>)>,
}

/// OpenAI's API, the default base URL: the one base that surely needs a key.
pub const OPENAI_API_BASE: &str = "https://api.openai.com/v1";

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("api_base", &self.api_base)
            .finish_non_exhaustive()
    }
}

impl LlmClient {
    /// A client for `options.api_base`; `record` appends exchanges to a file, `replay`
    /// answers from one instead of the network.
    pub fn new(
        options: impl Into<ClientOptions>,
        record: Option<&Path>,
        replay: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let options: ClientOptions = options.into();
        let http = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .build()?;
        let key = options
            .api_key
            .as_ref()
            .map(|k| k.expose().to_string())
            .unwrap_or_default();
        let tokenize = (replay.is_none() && record.is_none()).then(|| {
            (
                http.clone(),
                super::tokenize::server_root(&options.api_base),
                options.api_key.clone(),
            )
        });
        let transport = match (replay, record) {
            (Some(path), _) => Transport::replay(path)?,
            (None, Some(path)) => Transport::record(http, path, options.max_reply_bytes)
                .map_err(|e| anyhow::anyhow!("cannot open record file {}: {e}", path.display()))?,
            (None, None) => Transport::Network {
                http,
                limit: options.max_reply_bytes,
            },
        };
        let api_base = options.api_base.trim_end_matches('/').to_string();
        let missing_key = options.unusable(replay).is_some();
        let shown = super::error::redact_url(&api_base);
        let config = OpenAIConfig::new()
            .with_api_base(api_base)
            .with_api_key(key);
        Ok(LlmClient {
            api: Client::with_config(config).with_http_service(transport),
            api_base: shown,
            retry_budget: options.retry_budget,
            read_timeout: options.read_timeout,
            max_reply_bytes: options.max_reply_bytes,
            missing_key,
            tokenize,
        })
    }

    pub fn api_base(&self) -> &str {
        &self.api_base
    }

    /// Why no request can be sent, when none can: there is no API key for OpenAI's
    /// API. Said before anything is sent, not after a minute of retries.
    pub fn unusable(&self) -> Option<LlmError> {
        self.missing_key.then_some(LlmError::NoApiKey)
    }

    /// The server's gate (`gate`): its root, as its tokenize calls know it.
    fn gate_key(&self) -> String {
        self.tokenize
            .as_ref()
            .map_or_else(|| self.api_base.clone(), |(_, root, _)| root.clone())
    }

    /// True when the server was found to take one request at a time (llama.cpp,
    /// llama-cpp-python), by the probe for its tokenize endpoint.
    fn serves_one_at_a_time(&self) -> bool {
        self.tokenize
            .as_ref()
            .is_some_and(|(_, root, _)| super::tokenize::one_at_a_time(root))
    }

    /// Whether an empty reply to `request` is llama-cpp-python's sign of a prompt over
    /// its context: only from that server (found by its tokenize endpoint), which
    /// nothing else of tern's interrupts (see `gate`), for a prompt of
    /// `EMPTY_MEANS_OVERFLOW` tokens or more and near the window where it is known.
    fn empty_means_overflow(&self, request: &ChatRequest) -> bool {
        let llama_cpp_python = self
            .tokenize
            .as_ref()
            .is_some_and(|(_, root, _)| super::tokenize::interrupts(root));
        let (near, of) = NEAR_WINDOW;
        llama_cpp_python
            && request.predicted_prompt.is_some_and(|p| {
                p >= EMPTY_MEANS_OVERFLOW && request.known_window.is_none_or(|w| p * of >= w * near)
            })
    }

    /// The server's own tokenizer for `model`, if the server has a tokenize endpoint
    /// (probed once per server).
    pub(crate) async fn server_tokenizer(
        &self,
        model: &str,
    ) -> Result<Option<ServerTokenizer>, CountError> {
        let Some((http, root, key)) = self.tokenize.clone() else {
            return Ok(None);
        };
        ServerTokenizer::probe(http, root, key, model).await
    }

    /// The window the server allocated for `model`, where it can say (see
    /// `window::probe`); garbage it answered is the error.
    pub(crate) async fn server_window(
        &self,
        model: &str,
    ) -> Result<Option<super::ReportedWindow>, String> {
        let Some((http, root, key)) = &self.tokenize else {
            return Ok(None);
        };
        super::window::probe(http, root, key.as_ref(), model).await
    }

    /// Sends `request` and streams the reply through `on_event`. A reply cut by the
    /// output limit is continued (prefill) up to `MAX_CONTINUATIONS` times where the
    /// model allows it. Errors before any text are returned as `Err`; after some text,
    /// the text is kept and `finish` says what happened.
    pub async fn chat(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ChatReply, LlmError> {
        if let Some(e) = self.unusable() {
            return Err(e);
        }
        let mut reply = ChatReply {
            text: String::new(),
            usage: Usage::default(),
            usage_reported: false,
            finish: Finish::Stop,
            continuations: 0,
        };
        let gate = self.gate_key();
        let turn = if request.one_at_a_time || self.serves_one_at_a_time() {
            tokio::select! {
                _ = cancel.cancelled() => {
                    reply.finish = Finish::Cancelled;
                    return Ok(reply);
                }
                permit = super::gate::enter(&gate) => permit,
            }
        } else {
            None
        };
        let result = self.stream(request, reply, cancel, on_event).await;
        // A cancelled request may still run on the server: the next waits for it.
        if cancel.is_cancelled()
            && self.serves_one_at_a_time()
            && let (Some(permit), Some((http, root, key))) = (turn, self.tokenize.clone())
        {
            super::gate::release_when_settled(permit, http, root, key);
        }
        result
    }

    /// `chat` once the server takes the request: the request, its continuations, and
    /// the reply so far in `reply`.
    async fn stream(
        &self,
        request: &ChatRequest,
        mut reply: ChatReply,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ChatReply, LlmError> {
        loop {
            let mut messages = request.messages.clone();
            if !reply.text.is_empty() {
                messages.push(Message::assistant(reply.text.clone()));
            }
            let body = request_body(request, &messages);
            on_event(StreamEvent::Request {
                model: request.model.name.clone(),
                predicted_prompt_tokens: request.predicted_prompt,
                max_tokens: request.reply_limit.max_tokens(),
                counting: request.counting,
            });
            tracing::debug!(
                model = %request.model.name,
                messages = messages.len(),
                predicted_prompt = ?request.predicted_prompt,
                max_tokens = ?request.reply_limit.max_tokens(),
                continuation = reply.continuations,
                "chat request to {}",
                self.api_base
            );
            let part = match self.attempts(request, &body, cancel, on_event).await {
                Ok(part) => part,
                Err(e) if reply.text.is_empty() => return Err(e),
                Err(e) => {
                    reply.finish = Finish::CutOff(e.to_string());
                    return Ok(reply);
                }
            };
            reply.text.push_str(&part.text);
            tracing::debug!(usage = ?part.usage, finish = ?part.finish, "chat reply");
            if let Some(usage) = part.usage {
                reply.usage_reported = true;
                reply.usage.prompt_tokens += usage.prompt_tokens;
                reply.usage.completion_tokens += usage.completion_tokens;
                reply.usage.cached_tokens += usage.cached_tokens;
                reply.usage.cache_write_tokens += usage.cache_write_tokens;
            }
            reply.finish = match part.finish {
                // A continuation with nothing to add: the model had finished.
                Finish::Empty if !reply.text.is_empty() => Finish::Stop,
                finish => finish,
            };
            // A continuation is a new request: never after Esc, and never when the
            // window, not the output limit, stopped the reply.
            let continue_it = matches!(
                reply.finish,
                Finish::Length(ReplyLimit::Output { .. } | ReplyLimit::Server)
            ) && !cancel.is_cancelled()
                && request.model.prefill
                && reply.continuations < MAX_CONTINUATIONS;
            if !continue_it {
                return Ok(reply);
            }
            reply.continuations += 1;
            on_event(StreamEvent::Continuing {
                continuation: reply.continuations,
            });
        }
    }

    /// One logical request with retries. Retries happen only while no reply text has
    /// arrived: text already shown to the user is never silently re-requested.
    async fn attempts(
        &self,
        request: &ChatRequest,
        body: &serde_json::Value,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Part, LlmError> {
        let started = Instant::now();
        let mut attempt = 0;
        let mut empty = false;
        loop {
            attempt += 1;
            let failure = match self
                .attempt(body, request.reply_limit, cancel, on_event)
                .await
            {
                Attempt::Done(part) => return Ok(part),
                // An empty reply is asked for once more as it was, then said as such.
                Attempt::Failed(Failure::Empty) if !self.empty_means_overflow(request) => {
                    if std::mem::replace(&mut empty, true) {
                        return Ok(Part {
                            text: String::new(),
                            usage: None,
                            finish: Finish::Empty,
                        });
                    }
                    on_event(StreamEvent::Retrying {
                        attempt,
                        delay: Duration::ZERO,
                        reason: "the server sent an empty reply".into(),
                    });
                    continue;
                }
                Attempt::Failed(failure) => failure,
            };
            let (after, reason, limit, if_exhausted) = match self.judge(failure, request, attempt) {
                Judged::Retry {
                    after,
                    reason,
                    limit,
                    if_exhausted,
                } => (after, reason, limit, if_exhausted),
                Judged::Fail(e) => return Err(e),
            };
            tracing::debug!(attempt, %reason, "chat request failed; retrying");
            let delay = after.unwrap_or(FIRST_BACKOFF * 2u32.saturating_pow(attempt as u32 - 1));
            if started.elapsed().saturating_add(delay) > self.retry_budget
                || limit.is_some_and(|n| attempt >= n)
            {
                return Err(if_exhausted);
            }
            on_event(StreamEvent::Retrying {
                attempt,
                delay,
                reason,
            });
            tokio::select! {
                _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    async fn attempt(
        &self,
        body: &serde_json::Value,
        limit: ReplyLimit,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Attempt {
        let chat = self.api.chat();
        let opened = tokio::select! {
            _ = cancel.cancelled() => return Attempt::Done(Part::cancelled(String::new())),
            opened = chat.create_stream_byot::<_, Chunk>(body.clone()) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(e) => return Attempt::Failed(Failure::Open(e)),
        };
        let mut text = String::new();
        let mut reasoning_bytes = 0usize;
        let mut usage = None;
        let mut finish = None;
        loop {
            let item = tokio::select! {
                _ = cancel.cancelled() => return Attempt::Done(Part::cancelled(text)),
                item = stream.next() => item,
            };
            let chunk = match item {
                None => break,
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) if text.is_empty() => return Attempt::Failed(Failure::Open(e)),
                Some(Err(e)) => {
                    return Attempt::Done(Part {
                        text,
                        usage,
                        finish: Finish::CutOff(describe_stream_error(&e)),
                    });
                }
            };
            if let Some(err) = chunk.error {
                let body = serde_json::json!({ "error": err }).to_string();
                if text.is_empty() {
                    return Attempt::Failed(Failure::InStream(body));
                }
                return Attempt::Done(Part {
                    text,
                    usage,
                    finish: Finish::CutOff(format!(
                        "{}: {}",
                        error::IN_STREAM,
                        error::api_message(&body)
                    )),
                });
            }
            // A usage report is an extra: one that cannot be read costs the reply
            // nothing.
            if let Some(u) = chunk.usage {
                match serde_json::from_value::<WireUsage>(u) {
                    Ok(u) => usage = Some(u.into()),
                    Err(e) => on_event(StreamEvent::UsageIgnored(format!(
                        "the server's usage report could not be read ({e}): ignored; the token counts and cost are tern's estimate"
                    ))),
                }
            }
            for choice in chunk.choices {
                if let Some(delta) = choice.delta {
                    if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning)
                        && !reasoning.is_empty()
                    {
                        reasoning_bytes += reasoning.len();
                        if reasoning_bytes > self.max_reply_bytes {
                            return Attempt::Done(Part {
                                text,
                                usage,
                                finish: Finish::CutOff(self.too_long()),
                            });
                        }
                        on_event(StreamEvent::Reasoning(reasoning));
                    }
                    if let Some(mut content) = delta.content
                        && !content.is_empty()
                    {
                        let room = self.max_reply_bytes.saturating_sub(text.len());
                        let over = content.len() > room;
                        if over {
                            crate::chars::truncate(&mut content, room);
                        }
                        text.push_str(&content);
                        on_event(StreamEvent::Delta(content));
                        if over {
                            return Attempt::Done(Part {
                                text,
                                usage,
                                finish: Finish::CutOff(self.too_long()),
                            });
                        }
                    }
                }
                if let Some(reason) = choice.finish_reason {
                    finish = Some(reason);
                }
            }
        }
        let finish = match finish.as_deref() {
            Some("length") => match (limit.max_tokens(), usage) {
                (Some(asked), Some(u)) if u.completion_tokens < asked => Finish::ContextFull {
                    prompt: u.prompt_tokens,
                    reply: u.completion_tokens,
                    asked,
                },
                _ => Finish::Length(limit),
            },
            _ if text.is_empty() && reasoning_bytes == 0 => {
                return Attempt::Failed(Failure::Empty);
            }
            Some(_) => Finish::Stop,
            None => Finish::CutOff("the stream ended before the model finished".to_string()),
        };
        Attempt::Done(Part {
            text,
            usage,
            finish,
        })
    }

    /// Why a reply that passed `max_reply_bytes` stopped.
    fn too_long(&self) -> String {
        format!(
            "the reply passed {} KiB, the most one reply may hold (max_reply_bytes); the rest was not read",
            self.max_reply_bytes / 1024
        )
    }

    fn judge(&self, failure: Failure, request: &ChatRequest, attempts: usize) -> Judged {
        let url = format!("{}/chat/completions", self.api_base);
        let model = request.model.name.as_str();
        match failure {
            // Only llama-cpp-python's overflow gets here (`attempts`).
            Failure::Empty => Judged::Fail(LlmError::ContextLengthExceeded {
                message: format!(
                    "the server answered with an empty reply, which llama-cpp-python does when the prompt (about {} tokens) does not fit its context (n_ctx)",
                    request.predicted_prompt.unwrap_or_default()
                ),
                window: None,
                prompt_tokens: None,
                probable: true,
            }),
            Failure::InStream(body) => judged(
                error::classify_in_stream(&body),
                LlmError::InStream {
                    attempts,
                    message: error::api_message(&body),
                },
            ),
            Failure::Open(e) => match e {
                OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
                    Ok(http) => judge_http(&http, model, &url, attempts),
                    Err(other) => Judged::Fail(LlmError::Replay(other.to_string())),
                },
                OpenAIError::ApiError(api) => {
                    let http = HttpFailure {
                        status: api.status_code.as_u16(),
                        retry_after: None,
                        body: serde_json::json!({ "error": api.api_error }).to_string(),
                    };
                    judge_http(&http, model, &url, attempts)
                }
                OpenAIError::Reqwest(e) if e.is_timeout() => Judged::Fail(LlmError::Timeout {
                    url: self.api_base.clone(),
                    secs: self.read_timeout.as_secs(),
                }),
                OpenAIError::Reqwest(e) => {
                    let detail = root_cause(&e);
                    Judged::Retry {
                        after: None,
                        reason: format!("connection failed: {detail}"),
                        limit: (!server_restarting(&e)).then_some(LASTING_FAILURE_ATTEMPTS),
                        if_exhausted: LlmError::Connection {
                            url: self.api_base.clone(),
                            detail,
                            attempts,
                        },
                    }
                }
                OpenAIError::StreamError(e) => {
                    let detail = e.to_string();
                    Judged::Retry {
                        after: None,
                        limit: None,
                        reason: format!("the stream broke: {detail}"),
                        if_exhausted: LlmError::BadResponse { detail },
                    }
                }
                OpenAIError::JSONDeserialize(e, content) => Judged::Fail(LlmError::BadResponse {
                    detail: format!("malformed chunk ({e}): {}", error::api_message(&content)),
                }),
                other => Judged::Fail(LlmError::BadResponse {
                    detail: other.to_string(),
                }),
            },
        }
    }
}

fn judge_http(http: &HttpFailure, model: &str, url: &str, attempts: usize) -> Judged {
    judged(
        error::classify_http(http, model, url),
        error::exhausted(http, attempts),
    )
}

/// A verdict, with the error to give when its retries run out.
fn judged(verdict: Verdict, if_exhausted: LlmError) -> Judged {
    match verdict {
        Verdict::Retry { after, reason } => Judged::Retry {
            after,
            reason,
            limit: None,
            if_exhausted,
        },
        Verdict::Fail(e) => Judged::Fail(e),
    }
}

/// The innermost error message (reqwest hides "connection refused" several levels down).
/// Attempts for a connection failure that waiting will not fix (a name that does not
/// resolve, a TLS handshake that fails): the first and one retry.
const LASTING_FAILURE_ATTEMPTS: usize = 2;

/// Whether a connection failure looks like a server that is (re)starting: refused,
/// reset or aborted connections, which a local server gives while it loads a model.
/// These get the whole retry budget.
fn server_restarting(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset, NotConnected};
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected
            )
        {
            return true;
        }
        cause = c.source();
    }
    false
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

fn describe_stream_error(e: &OpenAIError) -> String {
    match e {
        OpenAIError::JSONDeserialize(_, content) => {
            format!(
                "the server sent a malformed chunk: {}",
                error::api_message(content)
            )
        }
        OpenAIError::StreamError(inner) => match inner.as_ref() {
            StreamError::EventStream(detail) => format!("the connection broke: {detail}"),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

enum Attempt {
    Done(Part),
    Failed(Failure),
}

enum Failure {
    /// The request failed before any reply text.
    Open(OpenAIError),
    /// The stream carried an error object (this JSON body) before any reply text.
    InStream(String),
    /// The stream ended with no text (and no reasoning) and no length limit hit.
    Empty,
}

enum Judged {
    Retry {
        after: Option<Duration>,
        reason: String,
        /// The most attempts this failure is worth; None: the retry budget decides.
        limit: Option<usize>,
        if_exhausted: LlmError,
    },
    Fail(LlmError),
}

/// The result of one successful attempt.
struct Part {
    text: String,
    usage: Option<Usage>,
    finish: Finish,
}

impl Part {
    fn cancelled(text: String) -> Self {
        Part {
            text,
            usage: None,
            finish: Finish::Cancelled,
        }
    }
}

/// The JSON body of a streaming chat request.
fn request_body(request: &ChatRequest, messages: &[Message]) -> serde_json::Value {
    let messages: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| wire_message(m, request.cache_control))
        .collect();
    let mut body = serde_json::json!({
        "model": request.model.name,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if let Some(max) = request.reply_limit.max_tokens() {
        let field = if request.model.max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[field] = max.into();
    }
    body
}

fn wire_message(m: &Message, cache_control: bool) -> serde_json::Value {
    let role = m.role.as_str();
    if cache_control && m.cache_breakpoint {
        serde_json::json!({
            "role": role,
            "content": [{
                "type": "text",
                "text": m.content,
                "cache_control": { "type": "ephemeral" },
            }],
        })
    } else {
        serde_json::json!({ "role": role, "content": m.content })
    }
}

/// A streamed chunk, read leniently: providers differ in what they add.
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    /// Read apart from the chunk: a malformed one is ignored, not a malformed chunk.
    #[serde(default)]
    usage: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: usize,
    #[serde(default)]
    completion_tokens: usize,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek reports cache hits here.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<usize>,
    #[serde(default)]
    cache_write_tokens: Option<usize>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        let details = u.prompt_tokens_details.as_ref();
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: details
                .and_then(|d| d.cached_tokens)
                .or(u.prompt_cache_hit_tokens)
                .unwrap_or(0),
            cache_write_tokens: details.and_then(|d| d.cache_write_tokens).unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_breakpoints_become_content_parts_only_when_enabled() {
        let mut m = Message::user("hello");
        m.cache_breakpoint = true;
        let on = wire_message(&m, true);
        assert_eq!(on["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(on["content"][0]["text"], "hello");
        let off = wire_message(&m, false);
        assert_eq!(off["content"], "hello");
    }

    #[test]
    fn usage_reads_cached_tokens_from_openai_and_deepseek_shapes() {
        let openai: WireUsage = serde_json::from_str(
            r#"{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}"#,
        )
        .unwrap();
        assert_eq!(Usage::from(openai).cached_tokens, 4);
        let deepseek: WireUsage = serde_json::from_str(
            r#"{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":7}"#,
        )
        .unwrap();
        assert_eq!(Usage::from(deepseek).cached_tokens, 7);
    }
}
