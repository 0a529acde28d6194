//! What `--record` keeps, redacted (`egress`): the request body (credential fields
//! structurally, every other text by the matcher), the streamed reply as a whole (a key
//! a server sends in two events is still found), and error bodies (a 401 or a proxy's
//! 502 page that echoes the key).

use serde_json::Value;

use crate::egress::{self, Redactor};

/// Fields whose values are credentials wherever they appear in a request body.
const SECRET_FIELDS: &[&str] = &[
    "api_key",
    "api-key",
    "apikey",
    "x-api-key",
    "authorization",
    "access_token",
    "secret",
    "password",
];

/// The texts of a reply that stream in pieces, in each choice's `delta`.
const STREAMED: &[&str] = &["content", "reasoning_content", "reasoning"];

/// A request body as recorded: credential fields replaced, the key redacted from
/// every other text.
pub(super) fn request(bytes: &[u8]) -> Value {
    let mut value = serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    credentials(&mut value);
    egress::redact_json(&mut value);
    value
}

fn credentials(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if SECRET_FIELDS.contains(&name.to_ascii_lowercase().as_str()) {
                    *field = Value::String("<redacted>".into());
                } else {
                    credentials(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(credentials),
        _ => {}
    }
}

/// An error body as recorded: redacted as JSON when it is JSON (its escapes could
/// hide the key from the text), else as text.
pub(super) fn error_body(body: &str) -> String {
    if let Ok(mut value) = serde_json::from_str::<Value>(body)
        && egress::redact_json(&mut value)
    {
        return value.to_string();
    }
    egress::redact(body).into_owned()
}

/// A streamed reply's SSE events as recorded, redacted as a whole: the pieces of each
/// streamed text (per choice and field) go through one redactor, and each piece is put
/// back where it came from, so what one piece held back goes out in the next of its
/// stream (the rest in the last). Every other text of an event is redacted as it is.
/// Events are rewritten only where something changed.
pub(super) fn stream(events: &mut [String]) {
    let mut parsed: Vec<Option<Value>> = events.iter().map(|e| data(e)).collect();
    let mut changed = vec![false; events.len()];
    let mut streams: Vec<Stream> = Vec::new();
    for (at, value) in parsed.iter_mut().enumerate() {
        let Some(value) = value else {
            if let std::borrow::Cow::Owned(clean) = egress::redact(&events[at]) {
                events[at] = clean;
            }
            continue;
        };
        for (position, choice) in choices(value).enumerate() {
            let index = choice.get("index").and_then(Value::as_u64);
            for &field in STREAMED {
                let Some(Value::String(piece)) = choice.pointer_mut(&format!("/delta/{field}"))
                else {
                    continue;
                };
                let key = (index.unwrap_or(position as u64), field);
                let stream = match streams.iter_mut().position(|s| s.key == key) {
                    Some(i) => &mut streams[i],
                    None => {
                        streams.push(Stream {
                            key,
                            redactor: egress::redactor(),
                            last: (at, position),
                        });
                        streams.last_mut().expect("just pushed")
                    }
                };
                let out = stream.redactor.push(piece);
                stream.last = (at, position);
                changed[at] |= out != *piece;
                *piece = out;
            }
        }
        changed[at] |= egress::redact_json(value);
    }
    for mut stream in streams {
        let rest = stream.redactor.finish();
        let (at, position) = stream.last;
        if rest.is_empty() {
            continue;
        }
        if let Some(Value::String(piece)) = parsed[at].as_mut().and_then(|v| {
            choices(v)
                .nth(position)?
                .pointer_mut(&format!("/delta/{}", stream.key.1))
        }) {
            piece.push_str(&rest);
            changed[at] = true;
        }
    }
    for ((event, value), changed) in events.iter_mut().zip(parsed).zip(changed) {
        if let (Some(value), true) = (value, changed) {
            *event = format!("data: {value}\n\n");
        }
    }
}

/// One streamed text: which choice and field, its redactor, and where its last piece
/// is (event, choice position).
struct Stream {
    key: (u64, &'static str),
    redactor: Redactor,
    last: (usize, usize),
}

/// The JSON of an event that is one `data:` line, as OpenAI's streams are.
fn data(event: &str) -> Option<Value> {
    let line = event.strip_suffix("\n\n")?.strip_prefix("data:")?;
    if line.contains('\n') {
        return None;
    }
    serde_json::from_str(line.trim_start()).ok()
}

fn choices(value: &mut Value) -> impl Iterator<Item = &mut Value> {
    value
        .get_mut("choices")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::MARKER;
    use crate::egress::tests::{KEY, register_test_key};

    fn chunk(content: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({ "choices": [{ "index": 0, "delta": { "content": content } }] })
        )
    }

    fn content(event: &str) -> String {
        data(event).unwrap()["choices"][0]["delta"]["content"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_key_streamed_in_pieces_is_redacted_as_a_whole() {
        register_test_key();
        let (a, b) = KEY.split_at_checked(10).unwrap();
        let mut events = vec![
            chunk("the key is "),
            chunk(a),
            chunk(b),
            chunk(" and sk"),
            "data: [DONE]\n\n".to_string(),
        ];
        stream(&mut events);
        let text: String = events.iter().take(4).map(|e| content(e)).collect();
        assert_eq!(text, format!("the key is {MARKER} and sk"));
        assert_eq!(
            events[0],
            chunk("the key is "),
            "unchanged events stay as sent"
        );
        assert_eq!(events[4], "data: [DONE]\n\n");
        assert!(!events.concat().contains(KEY));
    }

    #[test]
    fn error_bodies_and_requests_lose_the_key() {
        register_test_key();
        let escaped = KEY.replace('s', "\\u0073");
        let body = format!(r#"{{"error":{{"message":"bad key {escaped}"}}}}"#);
        assert!(!body.contains(KEY));
        assert!(error_body(&body).contains(MARKER), "{}", error_body(&body));
        let page = format!("<html>502: upstream said Bearer {KEY}</html>");
        assert_eq!(
            error_body(&page),
            format!("<html>502: upstream said Bearer {MARKER}</html>")
        );
        let sent = request(
            serde_json::json!({ "api_key": "x", "messages": [{ "content": KEY }] })
                .to_string()
                .as_bytes(),
        );
        assert_eq!(
            sent,
            serde_json::json!({ "api_key": "<redacted>", "messages": [{ "content": MARKER }] })
        );
    }
}
