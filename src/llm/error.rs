//! What can go wrong talking to a model, classified so the engine and the user can act.

use std::time::Duration;

/// An HTTP answer that was not a success, kept whole so it can be classified (and, for
/// 429, so `Retry-After` is not lost on the way up through async-openai).
#[derive(Debug, Clone)]
pub struct HttpFailure {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
}

impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}: {}", self.status, api_message(&self.body))
    }
}

impl std::error::Error for HttpFailure {}

/// A failed model request. Each variant's message says what happened and what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("the API rejected the key (HTTP 401): {message}. Set OPENAI_API_KEY or --api-key.")]
    Unauthorized { message: String },

    #[error(
        "model {model:?} was not found at {url} (HTTP 404): {message}. Check --model and --api-base."
    )]
    ModelNotFound {
        model: String,
        url: String,
        message: String,
    },

    #[error("{}: {message}", if *probable { "the request is probably larger than the server's context" } else { "the request is larger than the model's context window" })]
    ContextLengthExceeded {
        message: String,
        /// The server's context size, when it said (llama.cpp's `n_ctx`).
        window: Option<usize>,
        /// The prompt's tokens by the server's count (llama.cpp's `n_prompt_tokens`).
        prompt_tokens: Option<usize>,
        /// Inferred (an empty reply to a long prompt), not said by the server.
        probable: bool,
    },

    #[error("rate limited (HTTP 429) and still limited after {attempts} attempts: {message}")]
    RateLimited { attempts: usize, message: String },

    #[error("the server failed (HTTP {status}) after {attempts} attempts: {message}")]
    Server {
        status: u16,
        attempts: usize,
        message: String,
    },

    #[error("{IN_STREAM} and still did after {attempts} attempts: {message}")]
    InStream { attempts: usize, message: String },

    #[error("the API refused the request (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },

    #[error("cannot connect to {url} ({detail}) after {attempts} attempts. Is the server running?")]
    Connection {
        url: String,
        detail: String,
        attempts: usize,
    },

    #[error("no answer from {url} within {secs} s")]
    Timeout { url: String, secs: u64 },

    #[error("the server sent something that is not a chat completion: {detail}")]
    BadResponse { detail: String },

    #[error("replay: {0}")]
    Replay(String),

    #[error(
        "no API key for OpenAI's API, so tern sends nothing: set one (export OPENAI_API_KEY=sk-...), or use a local server with --api-base (Ollama: --api-base http://localhost:11434/v1; llama.cpp: --api-base http://localhost:8080/v1), or try tern --demo"
    )]
    NoApiKey,

    #[error("cancelled")]
    Cancelled,
}

impl LlmError {
    /// True when sending less context might succeed.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, LlmError::ContextLengthExceeded { .. })
    }
}

/// What to do with a failed attempt.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Try again after this long (at least); the string says why, for the user.
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    Fail(LlmError),
}

/// Classifies a non-success HTTP answer.
pub(crate) fn classify_http(f: &HttpFailure, model: &str, url: &str) -> Verdict {
    let message = api_message(&f.body);
    match f.status {
        429 => Verdict::Retry {
            after: f.retry_after,
            reason: format!("rate limited: {message}"),
        },
        500..=599 => Verdict::Retry {
            after: f.retry_after,
            reason: format!("server error {}: {message}", f.status),
        },
        _ if is_context_overflow(&f.body) => Verdict::Fail(overflow(&f.body, message)),
        401 | 403 => Verdict::Fail(LlmError::Unauthorized { message }),
        404 => Verdict::Fail(LlmError::ModelNotFound {
            model: model.to_string(),
            url: url.to_string(),
            message,
        }),
        status => Verdict::Fail(LlmError::Rejected { status, message }),
    }
}

/// How an error object inside a stream is said: the stream's HTTP status was 200, so
/// no status is named.
pub(crate) const IN_STREAM: &str = "the server reported an error in the stream";

/// Classifies an error object a stream carried before any reply text (a provider whose
/// upstream model failed after the 200 was sent): a context overflow fails, anything
/// else is retried, as a server error would be.
pub(crate) fn classify_in_stream(body: &str) -> Verdict {
    let message = api_message(body);
    match is_context_overflow(body) {
        true => Verdict::Fail(overflow(body, message)),
        false => Verdict::Retry {
            after: None,
            reason: format!("{IN_STREAM}: {message}"),
        },
    }
}

/// The server's "your prompt is too long", with the sizes it gave (llama.cpp's).
fn overflow(body: &str, message: String) -> LlmError {
    let number = |field: &str| {
        serde_json::from_str::<serde_json::Value>(body)
            .ok()?
            .pointer(&format!("/error/{field}"))?
            .as_u64()
            .map(|n| n as usize)
    };
    LlmError::ContextLengthExceeded {
        message,
        window: number("n_ctx"),
        prompt_tokens: number("n_prompt_tokens"),
        probable: false,
    }
}

/// Turns the verdict of the last allowed attempt into the error the user sees.
pub(crate) fn exhausted(f: &HttpFailure, attempts: usize) -> LlmError {
    let message = api_message(&f.body);
    if f.status == 429 {
        LlmError::RateLimited { attempts, message }
    } else {
        LlmError::Server {
            status: f.status,
            attempts,
            message,
        }
    }
}

/// Recognizes "your prompt is too long" in the dialects of the servers tern talks to:
/// OpenAI's `context_length_exceeded` code, llama.cpp's `exceed_context_size_error`
/// type, and the message texts of vLLM, Ollama, LiteLLM and Anthropic via OpenRouter.
pub(crate) fn is_context_overflow(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "exceed_context_size_error",
        "maximum context length",
        "context length exceeded",
        "context window",
        "prompt is too long",
        "too many tokens",
        "exceeds the context",
        "input is too long",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The human part of an error body: `error.message` of OpenAI-shaped JSON, else the
/// body itself, shortened.
pub(crate) fn api_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        return "(empty body)".to_string();
    }
    // Redacted before it is cut: cut first, a key could be cut in two and not be found.
    shorten(&crate::egress::redact(&text), 300)
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(status: u16, body: &str) -> HttpFailure {
        HttpFailure {
            status,
            retry_after: None,
            body: body.to_string(),
        }
    }

    #[test]
    fn context_overflow_in_every_dialect() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert!(matches!(
            classify_http(&failure(400, openai), "m", "u"),
            Verdict::Fail(LlmError::ContextLengthExceeded { window: None, .. })
        ));
        assert!(matches!(
            classify_http(&failure(400, llama), "m", "u"),
            Verdict::Fail(LlmError::ContextLengthExceeded {
                window: Some(8192),
                prompt_tokens: Some(9000),
                probable: false,
                ..
            })
        ));
    }

    #[test]
    fn statuses_map_to_specific_errors() {
        let v = classify_http(
            &failure(401, r#"{"error":{"message":"bad key"}}"#),
            "m",
            "u",
        );
        assert!(
            matches!(v, Verdict::Fail(LlmError::Unauthorized { ref message }) if message == "bad key")
        );
        let v = classify_http(&failure(404, "nope"), "gpt-x", "http://h/v1");
        assert!(
            matches!(v, Verdict::Fail(LlmError::ModelNotFound { ref model, .. }) if model == "gpt-x")
        );
        assert!(matches!(
            classify_http(&failure(503, ""), "m", "u"),
            Verdict::Retry { .. }
        ));
        assert!(matches!(
            classify_http(&failure(418, "teapot"), "m", "u"),
            Verdict::Fail(LlmError::Rejected { status: 418, .. })
        ));
    }

    #[test]
    fn api_message_prefers_the_json_message_and_shortens() {
        assert_eq!(api_message(r#"{"error":{"message":"x"}}"#), "x");
        assert_eq!(api_message("  plain  "), "plain");
        assert_eq!(api_message(""), "(empty body)");
        assert!(api_message(&"a".repeat(1000)).chars().count() <= 301);
    }
}

/// `url` as it may be shown: userinfo and query values removed (a base URL like
/// `http://user:pass@host/v1?key=…` carries credentials).
pub(crate) fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "<the configured API base URL>".to_string();
    };
    let had_userinfo = !parsed.username().is_empty() || parsed.password().is_some();
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    if parsed.query().is_some() {
        let keys: Vec<String> = parsed.query_pairs().map(|(k, _)| k.into_owned()).collect();
        parsed
            .query_pairs_mut()
            .clear()
            .extend_pairs(keys.iter().map(|k| (k.as_str(), "REDACTED")));
    }
    let shown = parsed.to_string();
    let shown = shown
        .strip_suffix('/')
        .filter(|_| !url.ends_with('/'))
        .unwrap_or(&shown);
    match had_userinfo {
        true => shown.replacen("://", "://REDACTED@", 1),
        false => shown.to_string(),
    }
}

#[cfg(test)]
mod redact_tests {
    use super::redact_url;

    #[test]
    fn credentials_in_urls_are_not_shown() {
        assert_eq!(
            redact_url("http://user:pa55@example.test:8080/v1?key=sk-abc&x=1"),
            "http://REDACTED@example.test:8080/v1?key=REDACTED&x=REDACTED"
        );
        assert_eq!(redact_url("http://127.0.0.1:1/v1"), "http://127.0.0.1:1/v1");
        assert_eq!(redact_url("not a url"), "<the configured API base URL>");
    }
}
