//! Error bodies in the shapes providers really send, so the client's error classification
//! is tested against the real thing.

use serde_json::{Value, json};

use super::reply::ErrorBody;
use super::request::RecordedRequest;

/// OpenAI's error envelope: `{"error":{"message","type","param","code"}}`.
pub(super) fn openai(kind: &str, message: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({ "error": { "message": message, "type": kind, "param": param, "code": code } })
}

/// The JSON body of a scripted error, quoting the request where the real one does.
pub(super) fn render(body: &ErrorBody, request: &RecordedRequest) -> Value {
    match body {
        ErrorBody::Json(value) => value.clone(),
        ErrorBody::ModelNotFound => {
            let message = format!(
                "The model `{}` does not exist or you do not have access to it.",
                request.model
            );
            openai(
                "invalid_request_error",
                &message,
                None,
                Some("model_not_found"),
            )
        }
        ErrorBody::ContextLengthExceeded { max_context } => {
            let message = format!(
                "This model's maximum context length is {max_context} tokens. However, your \
                 messages resulted in {} tokens. Please reduce the length of the messages.",
                request.prompt_tokens
            );
            let code = Some("context_length_exceeded");
            openai("invalid_request_error", &message, Some("messages"), code)
        }
        ErrorBody::LlamaCppContextExceeded { n_ctx } => {
            let n_prompt = request.prompt_tokens;
            json!({ "error": {
                "code": 400,
                "message": format!(
                    "request ({n_prompt} tokens) exceeds the available context size \
                     ({n_ctx} tokens), try increasing it"
                ),
                "type": "exceed_context_size_error",
                "n_prompt_tokens": n_prompt,
                "n_ctx": n_ctx,
            }})
        }
        ErrorBody::EchoAuthorization => {
            let message = format!(
                "Incorrect API key provided: {}",
                request.header("authorization").unwrap_or_default()
            );
            openai(
                "invalid_request_error",
                &message,
                None,
                Some("invalid_api_key"),
            )
        }
        ErrorBody::EchoPage => Value::String(page(request)),
    }
}

/// A proxy's HTML error page quoting the request's `Authorization` header.
pub(super) fn page(request: &RecordedRequest) -> String {
    format!(
        "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>\n<p>upstream refused the request with Authorization: {}</p></body></html>\n",
        request.header("authorization").unwrap_or_default()
    )
}

/// The 400 for a request the server refused before consulting the script.
pub(super) fn invalid_request(reason: &str) -> Value {
    openai("invalid_request_error", reason, None, None)
}

/// The 500 for a request nothing was scripted for: loud, so no test passes by accident.
pub(super) fn nothing_scripted(number: usize, model: &str) -> Value {
    let message = format!(
        "mock server: no reply was scripted for request #{number} (model `{model}`); \
         push a Reply or set a responder"
    );
    openai(
        "mock_server_error",
        &message,
        None,
        Some("no_reply_scripted"),
    )
}
