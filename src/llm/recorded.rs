//! What `--record` keeps, redacted (`egress`): the request body (credential fields
//! structurally, every other text by the matcher), the streamed reply as a whole (a key
//! a server sends in two events is still found), and error bodies (a 401 or a proxy's
//! 502 page that echoes the key).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value;

use crate::egress::{self, Secrets};

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

/// A streamed reply's SSE events as recorded, redacted as a whole: every string of
/// the stream is one text per place in it (its JSON path, an array's items told apart
/// by their `index` as OpenAI's streams number choices and tool calls), so a key sent
/// in pieces, in the content, a tool call's arguments, a refusal or any field a
/// server adds, is found as the reader of the whole would see it. Each piece keeps
/// what is not of a key; of a key, the piece it starts in gets the marker. Events are
/// rewritten only where something changed.
pub(super) fn stream(events: &mut [String]) {
    redact_stream(events, &egress::secrets());
}

/// [`stream`], for `secrets`.
fn redact_stream(events: &mut [String], secrets: &Secrets) {
    let mut parsed: Vec<Option<Value>> = events.iter().map(|e| data(e)).collect();
    let mut changed = vec![false; events.len()];
    let mut texts: BTreeMap<String, Vec<Piece>> = BTreeMap::new();
    for (at, value) in parsed.iter_mut().enumerate() {
        match value {
            Some(value) => {
                changed[at] |= secrets.redact_json(value);
                strings(value, at, "", "", &mut texts);
            }
            None => {
                if let Some(clean) = other_event(&events[at], secrets) {
                    events[at] = clean;
                }
            }
        }
    }
    for pieces in texts.values() {
        let whole: String = pieces.iter().map(|p| p.text.as_str()).collect();
        let found = secrets.find(&whole);
        if found.is_empty() {
            continue;
        }
        let mut from = 0;
        for piece in pieces {
            let to = from + piece.text.len();
            let clean = redacted_piece(&whole, from..to, &found);
            from = to;
            if clean == piece.text {
                continue;
            }
            if let Some(Value::String(text)) = parsed[piece.event]
                .as_mut()
                .and_then(|v| v.pointer_mut(&piece.pointer))
            {
                *text = clean;
                changed[piece.event] = true;
            }
        }
    }
    for ((event, value), changed) in events.iter_mut().zip(parsed).zip(changed) {
        if let (Some(value), true) = (value, changed) {
            *event = format!("data: {value}\n\n");
        }
    }
}

/// One string of one event: which event, where in it (a JSON pointer), its text.
struct Piece {
    event: usize,
    pointer: String,
    text: String,
}

/// Every string of `value` (event `event`), added to the text of its path in the
/// stream. `pointer` is where `value` is in its event, `path` where in the stream.
fn strings(
    value: &Value,
    event: usize,
    pointer: &str,
    path: &str,
    texts: &mut BTreeMap<String, Vec<Piece>>,
) {
    match value {
        Value::String(text) => texts.entry(path.to_string()).or_default().push(Piece {
            event,
            pointer: pointer.to_string(),
            text: text.clone(),
        }),
        Value::Array(items) => {
            for (position, item) in items.iter().enumerate() {
                // A streamed item says which one it continues; one that does not is
                // told apart by its place.
                let place = match item.get("index").and_then(Value::as_u64) {
                    Some(index) => format!("{path}/#{index}"),
                    None => format!("{path}/{position}"),
                };
                strings(item, event, &format!("{pointer}/{position}"), &place, texts);
            }
        }
        Value::Object(fields) => {
            for (name, field) in fields {
                let name = name.replace('~', "~0").replace('/', "~1");
                let (pointer, path) = (format!("{pointer}/{name}"), format!("{path}/{name}"));
                strings(field, event, &pointer, &path, texts);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The piece of `whole` at `piece`, with what of it belongs to a secret in `found`
/// taken out, and the marker where a secret starts.
fn redacted_piece(whole: &str, piece: Range<usize>, found: &[Range<usize>]) -> String {
    let mut out = String::new();
    let mut at = piece.start;
    for secret in found
        .iter()
        .filter(|s| s.start < piece.end && s.end > piece.start)
    {
        out.push_str(whole.get(at..secret.start.max(at)).unwrap_or_default());
        if secret.start >= piece.start {
            out.push_str(egress::MARKER);
        }
        at = secret.end.min(piece.end);
    }
    out.push_str(whole.get(at..piece.end).unwrap_or_default());
    out
}

/// An event that is not one `data:` line (an `event: error` before its data, a
/// comment), redacted line by line: a `data:` line that holds JSON as its JSON (its
/// escapes could hide the key from the text), any other as text. None when nothing
/// changed.
fn other_event(event: &str, secrets: &Secrets) -> Option<String> {
    let mut changed = false;
    let lines: Vec<String> = event
        .split('\n')
        .map(|line| {
            let json = line
                .strip_prefix("data:")
                .and_then(|d| serde_json::from_str::<Value>(d.trim_start()).ok());
            match json {
                Some(mut value) => {
                    if !secrets.redact_json(&mut value) {
                        return line.to_string();
                    }
                    changed = true;
                    format!("data: {value}")
                }
                None => {
                    let clean = secrets.redact(line);
                    changed |= matches!(clean, Cow::Owned(_));
                    clean.into_owned()
                }
            }
        })
        .collect();
    changed.then(|| lines.join("\n"))
}

/// The JSON of an event that is one `data:` line, as OpenAI's streams are.
fn data(event: &str) -> Option<Value> {
    let line = event.strip_suffix("\n\n")?.strip_prefix("data:")?;
    if line.contains('\n') {
        return None;
    }
    serde_json::from_str(line.trim_start()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::MARKER;
    use crate::egress::tests::{KEY, dressed, register_test_key};

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

    /// An event whose delta holds `piece` in the field `field` of [`FIELDS`].
    fn delta(field: usize, piece: &str) -> String {
        let delta = match FIELDS[field % FIELDS.len()] {
            "arguments" => serde_json::json!({ "tool_calls": [
                { "index": 0, "function": { "arguments": piece } }
            ] }),
            "transcript" => serde_json::json!({ "audio": { "transcript": piece } }),
            name => serde_json::json!({ name: piece }),
        };
        format!(
            "data: {}\n\n",
            serde_json::json!({ "id": "c1", "choices": [{ "index": 0, "delta": delta }] })
        )
    }

    /// Streamed fields: OpenAI's, and one a server adds.
    const FIELDS: &[&str] = &[
        "content",
        "reasoning_content",
        "refusal",
        "transcript",
        "arguments",
        "x_server_note",
    ];

    /// The stream's text in `field`, as its reader puts it together.
    fn streamed(events: &[String], field: usize) -> String {
        let pointer = match FIELDS[field % FIELDS.len()] {
            "arguments" => "/choices/0/delta/tool_calls/0/function/arguments".to_string(),
            "transcript" => "/choices/0/delta/audio/transcript".to_string(),
            name => format!("/choices/0/delta/{name}"),
        };
        events
            .iter()
            .filter_map(|e| Some(data(e)?.pointer(&pointer)?.as_str()?.to_string()))
            .collect()
    }

    #[test]
    fn a_key_split_in_any_streamed_field_is_redacted() {
        register_test_key();
        let (a, b) = KEY.split_at_checked(12).unwrap();
        for (field, name) in FIELDS.iter().enumerate() {
            let mut events = vec![delta(field, &format!("{{\"k\": \"{a}")), delta(field, b)];
            stream(&mut events);
            let text = streamed(&events, field);
            assert_eq!(text, format!("{{\"k\": \"{MARKER}"), "{name}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256,
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/llm_recorded.txt",
                ),
            )),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any key, with any hidden or control characters (or escape sequences) put
        /// inside it, streamed in any field cut anywhere: the record never holds it.
        #[test]
        fn no_key_survives_the_record_in_any_field_or_split(
            key in "[A-Za-z0-9_-]{8,24}",
            junk in proptest::collection::vec((0usize..30, 0usize..100_000), 0..4),
            before in "\\PC{0,8}",
            after in "\\PC{0,8}",
            field in 0usize..FIELDS.len(),
            cuts in proptest::collection::vec(0usize..200, 0..6),
        ) {
            let secrets = Secrets::of(&key);
            let text = format!("{before}{}{after}", dressed(&key, &junk));
            let mut bounds: Vec<usize> = cuts
                .iter()
                .map(|&c| crate::chars::floor_char_boundary(&text, c))
                .collect();
            bounds.push(text.len());
            bounds.sort_unstable();
            let mut events = Vec::new();
            let mut from = 0;
            for to in bounds {
                events.push(delta(field, text.get(from..to).unwrap_or_default()));
                from = to;
            }
            redact_stream(&mut events, &secrets);
            let whole = streamed(&events, field);
            proptest::prop_assert!(secrets.find(&whole).is_empty(), "{:?}", whole);
            proptest::prop_assert!(whole.contains(MARKER), "{:?}", whole);
            let shown: String = whole
                .chars()
                .filter(|&c| !c.is_control() && !crate::terminal_text::may_hide(c))
                .collect();
            proptest::prop_assert!(!shown.contains(&key), "{:?}", whole);
            proptest::prop_assert!(!events.concat().contains(&key));
        }
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
