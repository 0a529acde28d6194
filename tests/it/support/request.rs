//! What the server received: every request is recorded, parsed leniently into the fields
//! tests assert on, and validated strictly the way the OpenAI API would, so a client
//! serialization bug shows up as a 400 naming the field instead of a confusing reply.

use std::fmt;
use std::time::Instant;

use axum::http::{HeaderMap, Method};
use serde_json::Value;

/// Roles the OpenAI chat API accepts.
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// One request as the server saw it. Cloned out of the log by `MockServer::requests`.
#[derive(Clone)]
pub struct RecordedRequest {
    pub method: Method,
    /// Path only, e.g. `/v1/chat/completions`.
    pub path: String,
    /// All headers, including `authorization`: assert on it, never print it (`Debug`
    /// redacts it).
    pub headers: HeaderMap,
    /// The body exactly as sent (lossy UTF-8).
    pub body_text: String,
    /// The body parsed as JSON, `Value::Null` when it was not JSON.
    pub body: Value,
    pub model: String,
    pub messages: Vec<RecordedMessage>,
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    pub max_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    /// Whether any content part carried `cache_control` (Anthropic prompt caching).
    pub has_cache_control: bool,
    /// The server's own count of the prompt (see `tokens::prompt_tokens`); what it
    /// reports as `usage.prompt_tokens` unless the reply overrides it.
    pub prompt_tokens: usize,
    /// Why the server refused the request before consulting the script (malformed body,
    /// unknown URL); `None` for a well-formed chat request.
    pub rejected: Option<String>,
    /// The server the mock plays, whose tokenizer and template made `prompt_tokens`.
    pub dialect: super::Dialect,
    pub arrived_at: Instant,
    /// When the last byte of the reply was handed to the connection, or the connection
    /// was dropped; `None` while the reply is still in flight.
    pub finished_at: Option<Instant>,
}

/// One chat message, its content flattened to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMessage {
    pub role: String,
    pub name: Option<String>,
    /// A string content as is; a content-part array as the concatenation of its text
    /// parts; `null` content as "".
    pub text: String,
}

impl RecordedRequest {
    /// Records a request and parses the chat fields out of its body. `rejected` is set
    /// when the body is not a valid chat completion request.
    pub(super) fn new(
        method: Method,
        path: String,
        headers: HeaderMap,
        body: &[u8],
        arrived_at: Instant,
    ) -> Self {
        let mut request = RecordedRequest {
            method,
            path,
            headers,
            body_text: String::from_utf8_lossy(body).into_owned(),
            body: Value::Null,
            model: String::new(),
            messages: Vec::new(),
            stream: false,
            include_usage: false,
            max_tokens: None,
            max_completion_tokens: None,
            has_cache_control: false,
            prompt_tokens: 0,
            rejected: None,
            dialect: super::Dialect::OpenAi,
            arrived_at,
            finished_at: None,
        };
        match serde_json::from_slice(body) {
            Ok(json) => {
                request.body = json;
                if let Err(reason) = request.parse_chat() {
                    request.rejected = Some(reason);
                }
            }
            Err(e) => {
                request.rejected = Some(format!(
                    "We could not parse the JSON body of your request ({e}). \
                     The OpenAI API expects a JSON payload."
                ));
            }
        }
        request
    }

    /// The value of header `name` (case-insensitive), if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Text of the last `user` message: what a responder usually branches on.
    pub fn last_user_text(&self) -> Option<&str> {
        let last = self.messages.iter().rev().find(|m| m.role == "user");
        last.map(|m| m.text.as_str())
    }

    fn parse_chat(&mut self) -> Result<(), String> {
        let body = self
            .body
            .as_object()
            .ok_or("The request body must be a JSON object.")?;
        self.model = match body.get("model") {
            Some(Value::String(model)) if !model.is_empty() => model.clone(),
            _ => return Err("you must provide a model parameter".into()),
        };
        self.stream = optional(body.get("stream"), "stream", Value::as_bool)?.unwrap_or(false);
        let options = body.get("stream_options");
        let include_usage = options.and_then(|o| o.get("include_usage"));
        self.include_usage = optional(
            include_usage,
            "stream_options.include_usage",
            Value::as_bool,
        )?
        .unwrap_or(false);
        self.max_tokens = optional(body.get("max_tokens"), "max_tokens", Value::as_u64)?;
        self.max_completion_tokens = optional(
            body.get("max_completion_tokens"),
            "max_completion_tokens",
            Value::as_u64,
        )?;
        let messages = match body.get("messages") {
            Some(Value::Array(messages)) if !messages.is_empty() => messages,
            Some(Value::Array(_)) => return Err("[] is too short - 'messages'".into()),
            _ => return Err("Missing required parameter: 'messages'.".into()),
        };
        for (i, message) in messages.iter().enumerate() {
            let parsed = parse_message(message, i, &mut self.has_cache_control)?;
            self.messages.push(parsed);
        }
        self.prompt_tokens = super::tokens::prompt_tokens(&self.model, &self.messages);
        Ok(())
    }
}

/// A field that may be absent or `null`, but must have the right type when present.
fn optional<T>(
    value: Option<&Value>,
    field: &str,
    get: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => get(v)
            .map(Some)
            .ok_or_else(|| format!("Invalid type for '{field}': got {v}.")),
    }
}

fn parse_message(
    message: &Value,
    i: usize,
    has_cache_control: &mut bool,
) -> Result<RecordedMessage, String> {
    let field = |name: &str| format!("messages[{i}].{name}");
    let role = match message.get("role") {
        Some(Value::String(role)) if ROLES.contains(&role.as_str()) => role.clone(),
        Some(other) => {
            return Err(format!(
                "Invalid value for '{}': {other}. Supported values are: {}.",
                field("role"),
                ROLES.join(", ")
            ));
        }
        None => return Err(format!("Missing required parameter: '{}'.", field("role"))),
    };
    let name = optional(message.get("name"), &field("name"), |v| {
        v.as_str().map(str::to_owned)
    })?;
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                let part_field = field(&format!("content[{j}]"));
                text.push_str(parse_part(part, &part_field, has_cache_control)?);
            }
            text
        }
        Some(other) => {
            return Err(format!(
                "Invalid type for '{}': expected one of a string or array of objects, \
                 but got {other} instead.",
                field("content")
            ));
        }
    };
    Ok(RecordedMessage { role, name, text })
}

/// The text a content part contributes ("" for non-text parts such as images).
fn parse_part<'a>(
    part: &'a Value,
    field: &str,
    has_cache_control: &mut bool,
) -> Result<&'a str, String> {
    let Some(kind) = part.get("type").and_then(Value::as_str) else {
        return Err(format!("Missing required parameter: '{field}.type'."));
    };
    if part.get("cache_control").is_some() {
        *has_cache_control = true;
    }
    if kind != "text" {
        return Ok("");
    }
    part.get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("Missing required parameter: '{field}.text'."))
}

/// Never shows credentials: tests print requests in assertion messages.
impl fmt::Debug for RecordedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let secret = matches!(name.as_str(), "authorization" | "api-key" | "x-api-key");
                let shown = if secret {
                    "<redacted>"
                } else {
                    value.to_str().unwrap_or("<binary>")
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("RecordedRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("headers", &headers)
            .field("model", &self.model)
            .field("messages", &self.messages)
            .field("stream", &self.stream)
            .field("include_usage", &self.include_usage)
            .field("max_tokens", &self.max_tokens)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .field("has_cache_control", &self.has_cache_control)
            .field("prompt_tokens", &self.prompt_tokens)
            .field("rejected", &self.rejected)
            .field("arrived_at", &self.arrived_at)
            .field("finished_at", &self.finished_at)
            .finish_non_exhaustive()
    }
}
