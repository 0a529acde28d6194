//! Scripted replies. A `Reply` is either a completion (streamed as SSE or returned as one
//! JSON object, whichever the request asked for) or an HTTP error with an OpenAI-shaped
//! body. Completions end normally or in one of the faults real providers produce, so the
//! client's handling of each can be tested against the wire format it will really see.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::Value;

use super::errors;

/// One scripted answer. Build it with the constructors below and adjust it with the
/// `with_*`/`then_*` modifiers, e.g. `Reply::text("Hi there").then_cut_connection()`.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Slow start: time before the status line and headers are sent.
    pub(super) start_delay: Duration,
    pub(super) kind: ReplyKind,
}

#[derive(Debug, Clone)]
pub(super) enum ReplyKind {
    Completion(Completion),
    Error(HttpError),
}

#[derive(Debug, Clone)]
pub(super) struct Completion {
    /// The content deltas, in order; their concatenation is the reply text.
    pub chunks: Vec<String>,
    pub pace: Pace,
    pub ending: Ending,
    pub usage: UsageOverride,
}

/// How long to wait before each content chunk.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pace {
    Immediate,
    PerChunk(Duration),
    /// The chunk's token count divided by this rate.
    TokensPerSecond(f64),
}

/// What follows the content chunks.
#[derive(Debug, Clone)]
pub(super) enum Ending {
    /// A chunk with this `finish_reason`, the usage chunk if asked for, `[DONE]`.
    Finish(String),
    /// The connection is aborted mid-body (no finish_reason, no `[DONE]`).
    CutConnection,
    /// The body ends cleanly but without finish_reason or `[DONE]`.
    EndWithoutDone,
    /// `data: {not json`, then the body ends.
    MalformedChunk,
    /// Nothing more is sent; the connection stays open until the client leaves or the
    /// server is dropped.
    Hang,
    /// `data: {"error":{...}}`, then the body ends.
    ErrorEvent(Value),
}

/// Replaces the server's own usage numbers; `total_tokens` is always their sum.
#[derive(Debug, Clone, Default)]
pub(super) struct UsageOverride {
    pub prompt_tokens: Option<usize>,
    /// `prompt_tokens` as this JSON value, whatever it is (null, a string, -5).
    pub prompt_tokens_json: Option<Box<Value>>,
    pub completion_tokens: Option<usize>,
    pub cached_tokens: Option<usize>,
}

#[derive(Debug, Clone)]
pub(super) struct HttpError {
    pub status: StatusCode,
    pub body: ErrorBody,
    /// `Retry-After` header, in seconds.
    pub retry_after: Option<u64>,
}

/// Error bodies that quote numbers from the request are rendered when it arrives.
#[derive(Debug, Clone)]
pub(super) enum ErrorBody {
    Json(Value),
    ModelNotFound,
    ContextLengthExceeded {
        max_context: usize,
    },
    LlamaCppContextExceeded {
        n_ctx: usize,
    },
    /// OpenAI's 401 body, quoting the request's whole `Authorization` header.
    EchoAuthorization,
    /// A proxy's HTML error page quoting the `Authorization` header.
    EchoPage,
}

impl Reply {
    /// A normal completion of `text`, streamed in several chunks (one per word with its
    /// leading whitespace, roughly how models emit tokens), ending with
    /// `finish_reason: "stop"`.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::chunks(split_words(&text.into()))
    }

    /// A normal completion whose content deltas are exactly `chunks`: for tests of
    /// chunk boundaries, e.g. an edit marker split across two deltas.
    pub fn chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Reply {
        Reply::completion(Completion {
            chunks: chunks.into_iter().map(Into::into).collect(),
            pace: Pace::Immediate,
            ending: Ending::Finish("stop".into()),
            usage: UsageOverride::default(),
        })
    }

    /// `text` cut by the output limit: `finish_reason: "length"`.
    pub fn length_limited(text: impl Into<String>) -> Reply {
        Reply::text(text).with_finish_reason("length")
    }

    /// 429 with a `Retry-After: <seconds>` header and OpenAI's rate-limit body.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        let message = format!(
            "Rate limit reached for requests. Limit: 3, Used: 3, Requested: 1. \
             Please try again in {retry_after_secs}s."
        );
        let body = errors::openai("requests", &message, None, Some("rate_limit_exceeded"));
        Reply::error(429, ErrorBody::Json(body), Some(retry_after_secs))
    }

    /// A 5xx with the body OpenAI sends for it (500, 502 and 503 have their own
    /// messages). Panics on a status outside 500..=599: that is a bug in the test.
    pub fn server_error(status: u16) -> Reply {
        assert!(
            (500..600).contains(&status),
            "server_error({status}) needs a 5xx status"
        );
        let message = match status {
            502 => "Bad gateway.",
            503 => "The engine is currently overloaded, please try again later.",
            _ => "The server had an error while processing your request. Sorry about that!",
        };
        Reply::http_error(status, errors::openai("server_error", message, None, None))
    }

    /// 401 `invalid_api_key`, as OpenAI answers a wrong key (the key itself is not echoed).
    pub fn invalid_api_key() -> Reply {
        let message = "Incorrect API key provided: sk-****. You can find your API key at \
                       https://platform.openai.com/account/api-keys.";
        let body = errors::openai(
            "invalid_request_error",
            message,
            None,
            Some("invalid_api_key"),
        );
        Reply::http_error(401, body)
    }

    /// 404 `model_not_found`, naming the model the request asked for.
    pub fn model_not_found() -> Reply {
        Reply::error(404, ErrorBody::ModelNotFound, None)
    }

    /// 400 `context_length_exceeded` in OpenAI's exact shape, quoting `max_context` and
    /// the request's prompt tokens as counted by the server.
    pub fn context_length_exceeded(max_context: usize) -> Reply {
        Reply::error(400, ErrorBody::ContextLengthExceeded { max_context }, None)
    }

    /// 400 `exceed_context_size_error` as llama.cpp's server sends it, with
    /// `n_prompt_tokens` (the request's prompt tokens) and `n_ctx`.
    pub fn llama_cpp_context_exceeded(n_ctx: usize) -> Reply {
        Reply::error(400, ErrorBody::LlamaCppContextExceeded { n_ctx }, None)
    }

    /// `status` with OpenAI's error body quoting the request's `Authorization` header
    /// whole, key and all, as a careless proxy or a debugging server does.
    pub fn key_echoed(status: u16) -> Reply {
        Reply::error(status, ErrorBody::EchoAuthorization, None)
    }

    /// `status` with an HTML error page (a proxy's 502) quoting the `Authorization`
    /// header.
    pub fn key_echoed_in_page(status: u16) -> Reply {
        Reply::error(status, ErrorBody::EchoPage, None)
    }

    /// Any status with any JSON body, for providers' oddities the builders above miss.
    pub fn http_error(status: u16, body: Value) -> Reply {
        Reply::error(status, ErrorBody::Json(body), None)
    }

    /// Slow start: wait `delay` before sending the status line and headers.
    pub fn with_start_delay(mut self, delay: Duration) -> Reply {
        self.start_delay = delay;
        self
    }

    /// Wait `delay` before each content chunk.
    pub fn with_chunk_delay(self, delay: Duration) -> Reply {
        self.map_completion("with_chunk_delay", |c| c.pace = Pace::PerChunk(delay))
    }

    /// Pace the content chunks to stream at `rate` tokens per second (each chunk waits
    /// its own token count divided by `rate`).
    pub fn at_tokens_per_second(self, rate: f64) -> Reply {
        assert!(
            rate > 0.0,
            "at_tokens_per_second({rate}) needs a positive rate"
        );
        self.map_completion("at_tokens_per_second", |c| {
            c.pace = Pace::TokensPerSecond(rate)
        })
    }

    /// End with this `finish_reason` instead of `"stop"`.
    pub fn with_finish_reason(self, reason: impl Into<String>) -> Reply {
        let reason = reason.into();
        self.map_completion("with_finish_reason", |c| c.ending = Ending::Finish(reason))
    }

    /// Report this `usage.prompt_tokens` instead of the server's count.
    pub fn with_prompt_tokens(self, tokens: usize) -> Reply {
        self.map_completion("with_prompt_tokens", |c| {
            c.usage.prompt_tokens = Some(tokens)
        })
    }

    /// Report this JSON value as `usage.prompt_tokens` (a server that sends no count).
    pub fn with_prompt_tokens_json(self, value: Value) -> Reply {
        self.map_completion("with_prompt_tokens_json", |c| {
            c.usage.prompt_tokens_json = Some(Box::new(value))
        })
    }

    /// Report this `usage.completion_tokens` instead of the server's count.
    pub fn with_completion_tokens(self, tokens: usize) -> Reply {
        self.map_completion("with_completion_tokens", |c| {
            c.usage.completion_tokens = Some(tokens)
        })
    }

    /// Report this `usage.prompt_tokens_details.cached_tokens` (default 0).
    pub fn with_cached_tokens(self, tokens: usize) -> Reply {
        self.map_completion("with_cached_tokens", |c| {
            c.usage.cached_tokens = Some(tokens)
        })
    }

    /// After the content, abort the connection: no finish_reason, no `[DONE]`, and the
    /// HTTP body is incomplete (the client sees a transport error). A non-streaming
    /// request gets half of its JSON body, then the abort.
    pub fn then_cut_connection(self) -> Reply {
        self.map_completion("then_cut_connection", |c| c.ending = Ending::CutConnection)
    }

    /// After the content, end the body cleanly but with no finish_reason and no
    /// `[DONE]`, as a proxy that drops the upstream stream does. A non-streaming request
    /// gets half of its JSON body, cleanly ended.
    pub fn then_end_without_done(self) -> Reply {
        self.map_completion("then_end_without_done", |c| {
            c.ending = Ending::EndWithoutDone
        })
    }

    /// After the content, send `data: {not json` and end the body. A non-streaming
    /// request gets `{not json` as its body.
    pub fn then_malformed_chunk(self) -> Reply {
        self.map_completion("then_malformed_chunk", |c| {
            c.ending = Ending::MalformedChunk
        })
    }

    /// After the content, send nothing more and keep the connection open until the client
    /// leaves (for cancellation tests). A non-streaming request never gets its headers.
    pub fn then_hang(self) -> Reply {
        self.map_completion("then_hang", |c| c.ending = Ending::Hang)
    }

    /// After the content, send an in-stream error event `data: {"error":{...}}` with
    /// `message`, as some providers do when the upstream model fails mid-reply, and end
    /// the body. A non-streaming request gets that error object with status 200.
    pub fn then_error_event(self, message: &str) -> Reply {
        let error = errors::openai("server_error", message, None, None);
        self.map_completion("then_error_event", |c| c.ending = Ending::ErrorEvent(error))
    }

    fn completion(completion: Completion) -> Reply {
        Reply {
            start_delay: Duration::ZERO,
            kind: ReplyKind::Completion(completion),
        }
    }

    fn error(status: u16, body: ErrorBody, retry_after: Option<u64>) -> Reply {
        let status = StatusCode::from_u16(status).expect("a valid HTTP status code");
        let error = HttpError {
            status,
            body,
            retry_after,
        };
        Reply {
            start_delay: Duration::ZERO,
            kind: ReplyKind::Error(error),
        }
    }

    /// Applies a completion-only modifier; on an HTTP error reply that is a test bug.
    fn map_completion(mut self, modifier: &str, change: impl FnOnce(&mut Completion)) -> Reply {
        match &mut self.kind {
            ReplyKind::Completion(completion) => change(completion),
            ReplyKind::Error(error) => panic!(
                "Reply::{modifier} applies to completions, not to an HTTP {} error reply",
                error.status
            ),
        }
        self
    }
}

/// Splits text into pieces of leading whitespace plus one word; they concatenate back to
/// `text` exactly.
fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    for c in text.chars() {
        if c.is_whitespace() && in_word {
            pieces.push(std::mem::take(&mut current));
            in_word = false;
        }
        in_word |= !c.is_whitespace();
        current.push(c);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}
