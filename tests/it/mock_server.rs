//! Tests of the loopback OpenAI-compatible server (`tests/support/`) through a real HTTP
//! client, so that every other test can trust what it is served.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::{
    Dialect, MockServer, RecordedMessage, Reply, encoding_for_model, prompt_tokens, text_tokens,
};
use futures::StreamExt;
use serde_json::{Value, json};

const MODEL: &str = "gpt-4o";
const API_KEY: &str = "sk-test-secret-key";
/// Long enough to tell "nothing more is coming" from scheduling noise.
const QUIET: Duration = Duration::from_millis(300);
/// Upper bound for things that should happen promptly; only guards against hangs.
const PATIENCE: Duration = Duration::from_secs(10);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// A chat request with one user message.
fn chat(model: &str, stream: bool, text: &str) -> Value {
    json!({ "model": model, "stream": stream, "messages": [{ "role": "user", "content": text }] })
}

async fn post(server: &MockServer, body: &Value) -> reqwest::Response {
    post_to(&format!("{}/chat/completions", server.base_url()), body).await
}

async fn post_to(url: &str, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {API_KEY}"))
        .body(body.to_string())
        .send()
        .await
        .expect("the request reaches the mock server")
}

/// The `error.message` of an error body.
async fn error_message(response: reqwest::Response) -> String {
    let body = json_body(response).await;
    let message = body["error"]["message"].as_str();
    message
        .unwrap_or_else(|| panic!("no error message in {body}"))
        .to_owned()
}

async fn json_body(response: reqwest::Response) -> Value {
    serde_json::from_str(&response.text().await.expect("a complete body")).expect("a JSON body")
}

/// The `data:` payloads of an SSE body, checking the framing: every event is exactly one
/// `data: ` line followed by a blank line.
fn sse_data(body: &str) -> Vec<&str> {
    let events = body
        .strip_suffix("\n\n")
        .unwrap_or_else(|| panic!("unterminated SSE: {body:?}"));
    events
        .split("\n\n")
        .map(|event| {
            let data = event.strip_prefix("data: ");
            let data = data.unwrap_or_else(|| panic!("not a data event: {event:?}"));
            assert!(!data.contains('\n'), "one line per event: {event:?}");
            data
        })
        .collect()
}

/// The JSON chunks of a complete stream, checking that it ended with `[DONE]`.
async fn stream_chunks(response: reqwest::Response) -> Vec<Value> {
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response.text().await.expect("a complete body");
    let data = sse_data(&body);
    let (done, chunks) = data.split_last().expect("at least one event");
    assert_eq!(*done, "[DONE]");
    parse_chunks(chunks)
}

fn parse_chunks(data: &[&str]) -> Vec<Value> {
    let parse = |d: &&str| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"));
    data.iter().map(parse).collect()
}

/// Checks the events of a stream that stopped early: `text` arrived, and neither a
/// finish_reason nor `[DONE]` did.
fn assert_unfinished(data: &[&str], text: &str) {
    assert!(!data.contains(&"[DONE]"));
    let chunks = parse_chunks(data);
    assert_eq!(content_of(&chunks), text);
    let finish_reasons = chunks.iter().map(|c| &c["choices"][0]["finish_reason"]);
    assert!(finish_reasons.into_iter().all(Value::is_null));
}

/// Checks a non-streaming body that stopped half way.
fn assert_half_json(body: &str) {
    assert!(
        body.len() > 1 && body.starts_with('{'),
        "the first half arrives: {body}"
    );
    assert!(
        serde_json::from_str::<Value>(body).is_err(),
        "half a JSON object: {body}"
    );
}

fn content_of(chunks: &[Value]) -> String {
    let deltas = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str());
    deltas.collect()
}

/// What arrived before the body ended, and whether it ended in a transport error.
async fn read_to_end(response: reqwest::Response) -> (String, bool) {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let mut failed = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => body.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    (String::from_utf8(body).expect("UTF-8 body"), failed)
}

/// The six "corporate jargon" messages of OpenAI's cookbook ("How to count tokens with
/// tiktoken"), whose prompt_tokens the API reports as 129 (gpt-4, gpt-3.5) and 124 (gpt-4o).
fn cookbook_messages() -> Value {
    json!([
        { "role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English." },
        { "role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth." },
        { "role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue." },
        { "role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage." },
        { "role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better." },
        { "role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable." },
    ])
}

#[tokio::test]
async fn streams_openai_shaped_chunks_over_sse() {
    let server = MockServer::start().await;
    server.push(Reply::text("Hello there, world"));

    let chunks = stream_chunks(post(&server, &chat(MODEL, true, "Hi")).await).await;

    let first = &chunks[0];
    let id = first["id"].as_str().expect("an id");
    for chunk in &chunks {
        assert_eq!(chunk["id"], id);
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert!(chunk["created"].is_u64());
        assert_eq!(chunk["model"], MODEL);
        assert_eq!(chunk["choices"][0]["index"], 0);
        assert!(
            chunk.get("usage").is_none(),
            "no usage without include_usage: {chunk}"
        );
    }
    assert_eq!(
        first["choices"][0]["delta"],
        json!({ "role": "assistant", "content": "", "refusal": null })
    );
    let content: Vec<_> = chunks[1..chunks.len() - 1]
        .iter()
        .map(|c| &c["choices"][0])
        .collect();
    assert_eq!(content.len(), 3, "one chunk per word");
    assert!(content.iter().all(|c| c["finish_reason"].is_null()));
    assert_eq!(content_of(&chunks), "Hello there, world");
    let last = &chunks[chunks.len() - 1]["choices"][0];
    assert_eq!(last["delta"], json!({}));
    assert_eq!(last["finish_reason"], "stop");
}

#[tokio::test]
async fn usage_chunk_comes_last_and_only_with_include_usage() {
    let server = MockServer::start().await;
    let text = "Counting tokens, independently of tern.";
    server.push(Reply::text(text));
    let mut body = chat(MODEL, true, "Count me");
    body["stream_options"] = json!({ "include_usage": true });

    let chunks = stream_chunks(post(&server, &body).await).await;

    let (usage_chunk, rest) = chunks.split_last().unwrap();
    assert!(
        rest.iter()
            .all(|c| c["usage"].is_null() && c.get("usage").is_some())
    );
    assert_eq!(usage_chunk["choices"], json!([]));
    let usage = &usage_chunk["usage"];
    let sent = &server.requests()[0];
    assert_eq!(usage["prompt_tokens"], sent.prompt_tokens);
    assert_eq!(sent.prompt_tokens, prompt_tokens(MODEL, &sent.messages));
    assert_eq!(usage["completion_tokens"], text_tokens(MODEL, text));
    assert_eq!(
        usage["total_tokens"],
        sent.prompt_tokens + text_tokens(MODEL, text)
    );
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
}

#[tokio::test]
async fn non_streaming_requests_get_one_completion_object() {
    let server = MockServer::start().await;
    server.push(Reply::text("All at once."));

    let response = post(&server, &chat(MODEL, false, "Hi")).await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = json_body(response).await;
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["message"]["content"], "All at once.");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        body["usage"]["prompt_tokens"],
        server.requests()[0].prompt_tokens
    );
    assert_eq!(
        body["usage"]["completion_tokens"],
        text_tokens(MODEL, "All at once.")
    );
}

#[tokio::test]
async fn prompt_tokens_match_the_cookbook_worked_example() {
    let server = MockServer::start().await;
    let cases = [
        ("gpt-3.5-turbo", 129),
        ("gpt-4-0613", 129),
        ("gpt-4", 129),
        ("gpt-4o", 124),
        ("gpt-4o-mini", 124),
    ];
    for (model, expected) in cases {
        server.push(Reply::text("ok"));
        let body = json!({ "model": model, "messages": cookbook_messages(), "max_tokens": 1 });
        let usage = &json_body(post(&server, &body).await).await["usage"];
        assert_eq!(usage["prompt_tokens"], expected, "{model}");
    }
}

#[tokio::test]
async fn content_part_arrays_count_as_their_concatenated_text() {
    let server = MockServer::start().await;
    let as_parts: Vec<Value> = cookbook_messages()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"].as_str().unwrap();
            let half = text.char_indices().nth(text.chars().count() / 2);
            let (head, tail) = text.split_at_checked(half.map_or(0, |(i, _)| i)).unwrap();
            let mut m = m.clone();
            m["content"] = json!([
                { "type": "text", "text": head, "cache_control": { "type": "ephemeral" } },
                { "type": "text", "text": tail },
            ]);
            m
        })
        .collect();
    server.push(Reply::text("ok"));
    server.push(Reply::text("ok"));

    for messages in [cookbook_messages(), json!(as_parts)] {
        let body = json!({ "model": "gpt-4", "messages": messages });
        assert_eq!(
            json_body(post(&server, &body).await).await["usage"]["prompt_tokens"],
            129
        );
    }

    let log = server.requests();
    assert_eq!(
        log[0].messages, log[1].messages,
        "parts flatten to the same text"
    );
    assert!(!log[0].has_cache_control);
    assert!(log[1].has_cache_control);
}

#[tokio::test]
async fn usage_can_be_overridden() {
    let server = MockServer::start().await;
    server.push(
        Reply::text("cached")
            .with_prompt_tokens(2000)
            .with_completion_tokens(7)
            .with_cached_tokens(1536),
    );
    server.push(Reply::text("cached").with_cached_tokens(3));
    let mut body = chat(MODEL, true, "Hi");
    body["stream_options"] = json!({ "include_usage": true });

    let chunks = stream_chunks(post(&server, &body).await).await;
    let usage = &chunks.last().unwrap()["usage"];
    assert_eq!(usage["prompt_tokens"], 2000);
    assert_eq!(usage["completion_tokens"], 7);
    assert_eq!(usage["total_tokens"], 2007);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 1536);

    let usage = &json_body(post(&server, &chat(MODEL, false, "Hi")).await).await["usage"];
    assert_eq!(usage["prompt_tokens"], server.requests()[1].prompt_tokens);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 3);
}

#[tokio::test]
async fn exact_chunks_are_sent_as_given() {
    let server = MockServer::start().await;
    server.push(Reply::chunks(["<<<<<<< SEA", "RCH\nfn main", "() {}"]));

    let chunks = stream_chunks(post(&server, &chat(MODEL, true, "Edit")).await).await;

    let deltas: Vec<_> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(deltas, ["", "<<<<<<< SEA", "RCH\nfn main", "() {}"]);
}

#[tokio::test]
async fn length_limited_replies_finish_with_length() {
    let server = MockServer::start().await;
    server.push(Reply::length_limited("The answer was cut"));
    server.push(Reply::length_limited("The answer was cut"));
    server.push(Reply::text("Filtered").with_finish_reason("content_filter"));

    let chunks = stream_chunks(post(&server, &chat(MODEL, true, "Long")).await).await;
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
    assert_eq!(content_of(&chunks), "The answer was cut");
    let body = json_body(post(&server, &chat(MODEL, false, "Long")).await).await;
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    let chunks = stream_chunks(post(&server, &chat(MODEL, true, "Bad")).await).await;
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "content_filter"
    );
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let server = MockServer::start().await;
    server.push(Reply::rate_limited(7));

    let response = post(&server, &chat(MODEL, true, "Hi")).await;

    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = response.text().await.unwrap();
    let error = &serde_json::from_str::<Value>(&body).unwrap()["error"];
    assert_eq!(error["code"], "rate_limit_exceeded");
    assert!(body.contains("try again in 7s"), "{body}");
}

#[tokio::test]
async fn server_errors_have_openai_bodies() {
    let server = MockServer::start().await;
    for status in [500, 502, 503] {
        server.push(Reply::server_error(status));
        let response = post(&server, &chat(MODEL, true, "Hi")).await;
        assert_eq!(response.status(), status);
        assert!(response.headers().get("retry-after").is_none());
        let error = &json_body(response).await["error"];
        assert_eq!(error["type"], "server_error", "{status}");
        assert!(!error["message"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn client_errors_have_openai_bodies() {
    let server = MockServer::start().await;

    server.push(Reply::invalid_api_key());
    let response = post(&server, &chat(MODEL, false, "Hi")).await;
    assert_eq!(response.status(), 401);
    let body = response.text().await.unwrap();
    assert!(!body.contains(API_KEY), "the key is never echoed");
    let error = &serde_json::from_str::<Value>(&body).unwrap()["error"];
    assert_eq!(
        (&error["type"], &error["code"]),
        (&json!("invalid_request_error"), &json!("invalid_api_key"))
    );

    server.push(Reply::model_not_found());
    let response = post(&server, &chat("gpt-9-imaginary", true, "Hi")).await;
    assert_eq!(response.status(), 404);
    let error = &json_body(response).await["error"];
    assert_eq!(error["code"], "model_not_found");
    assert_eq!(
        error["message"],
        "The model `gpt-9-imaginary` does not exist or you do not have access to it."
    );

    server.push(Reply::http_error(
        403,
        json!({ "error": { "message": "Country not supported" } }),
    ));
    let response = post(&server, &chat(MODEL, true, "Hi")).await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        json_body(response).await,
        json!({ "error": { "message": "Country not supported" } })
    );
}

#[tokio::test]
async fn context_length_errors_quote_the_request() {
    let server = MockServer::start().await;
    server.push(Reply::context_length_exceeded(8192));
    server.push(Reply::llama_cpp_context_exceeded(4096));

    let response = post(&server, &chat(MODEL, true, "A long prompt")).await;
    assert_eq!(response.status(), 400);
    let n = server.requests()[0].prompt_tokens;
    assert_eq!(
        json_body(response).await,
        json!({ "error": {
            "message": format!("This model's maximum context length is 8192 tokens. However, your messages resulted in {n} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }})
    );

    let response = post(&server, &chat("qwen2.5-coder:7b", true, "A long prompt")).await;
    assert_eq!(response.status(), 400);
    let n = server.requests()[1].prompt_tokens;
    assert_eq!(
        json_body(response).await,
        json!({ "error": {
            "code": 400,
            "message": format!("request ({n} tokens) exceeds the available context size (4096 tokens), try increasing it"),
            "type": "exceed_context_size_error",
            "n_prompt_tokens": n,
            "n_ctx": 4096,
        }})
    );
}

/// The two ways a reply stops early: the connection is cut (a transport error), or the
/// body ends cleanly without a finish_reason or `[DONE]`.
#[tokio::test]
async fn early_endings_stop_short_of_finish_reason_and_done() {
    let server = MockServer::start().await;
    let endings = [
        (Reply::text("Partial answer").then_cut_connection(), true),
        (Reply::text("Partial answer").then_end_without_done(), false),
    ];
    for (reply, cut) in endings {
        server.push(reply.clone());
        server.push(reply);

        let (body, failed) = read_to_end(post(&server, &chat(MODEL, true, "Hi")).await).await;
        assert_eq!(failed, cut, "only a cut connection is a transport error");
        assert_unfinished(&sse_data(&body), "Partial answer");

        let (body, failed) = read_to_end(post(&server, &chat(MODEL, false, "Hi")).await).await;
        assert_eq!(failed, cut);
        assert_half_json(&body);
    }
}

#[tokio::test]
async fn malformed_chunk_follows_good_ones() {
    let server = MockServer::start().await;
    server.push(Reply::text("Good so far").then_malformed_chunk());
    server.push(Reply::text("Good so far").then_malformed_chunk());

    let (body, failed) = read_to_end(post(&server, &chat(MODEL, true, "Hi")).await).await;
    assert!(!failed);
    let data = sse_data(&body);
    let (bad, good) = data.split_last().unwrap();
    assert_eq!(*bad, "{not json");
    assert_unfinished(good, "Good so far");

    let (body, _) = read_to_end(post(&server, &chat(MODEL, false, "Hi")).await).await;
    assert_eq!(body, "{not json");
}

#[tokio::test]
async fn error_event_arrives_inside_the_stream() {
    let server = MockServer::start().await;
    server.push(Reply::text("Half").then_error_event("Upstream model failed"));
    server.push(Reply::text("Half").then_error_event("Upstream model failed"));

    let response = post(&server, &chat(MODEL, true, "Hi")).await;
    assert_eq!(response.status(), 200);
    let (body, failed) = read_to_end(response).await;
    assert!(!failed);
    let data = sse_data(&body);
    let (error, good) = data.split_last().unwrap();
    let error: Value = serde_json::from_str(error).unwrap();
    assert_eq!(error["error"]["message"], "Upstream model failed");
    assert_eq!(error["error"]["type"], "server_error");
    assert_unfinished(good, "Half");

    let response = post(&server, &chat(MODEL, false, "Hi")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(error_message(response).await, "Upstream model failed");
}

#[tokio::test]
async fn slow_start_delays_the_headers() {
    let server = MockServer::start().await;
    server.push(Reply::text("Finally").with_start_delay(Duration::from_millis(250)));
    server.push(Reply::text("Too late").with_start_delay(Duration::from_secs(30)));

    let started = Instant::now();
    let response = post(&server, &chat(MODEL, true, "Hi")).await;
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(content_of(&stream_chunks(response).await), "Finally");

    let impatient = reqwest::Client::builder()
        .no_proxy()
        .timeout(QUIET)
        .build()
        .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let error = impatient
        .post(&url)
        .body(chat(MODEL, true, "Hi").to_string())
        .send()
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
}

#[tokio::test]
async fn chunk_delays_pace_the_stream() {
    let server = MockServer::start().await;
    server.push(Reply::chunks(["a", "b", "c", "d"]).with_chunk_delay(Duration::from_millis(100)));

    let response = post(&server, &chat(MODEL, true, "Hi")).await;
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    assert!(
        server.requests()[0].finished_at.is_none(),
        "the first chunk arrives before the last is produced"
    );
    while body.next().await.is_some() {}

    let log = &server.requests()[0];
    assert!(log.finished_at.unwrap() - log.arrived_at >= Duration::from_millis(400));
}

#[tokio::test]
async fn tokens_per_second_sets_the_stream_rate() {
    let server = MockServer::start().await;
    let text =
        "The quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps again.";
    let tokens = text_tokens(MODEL, text);
    server.push(Reply::text(text).at_tokens_per_second(100.0));

    let chunks = stream_chunks(post(&server, &chat(MODEL, true, "Hi")).await).await;

    assert_eq!(content_of(&chunks), text);
    let log = &server.requests()[0];
    let expected = Duration::from_secs_f64(tokens as f64 / 100.0);
    assert!(log.finished_at.unwrap() - log.arrived_at >= expected - Duration::from_millis(1));
}

#[tokio::test]
async fn hanging_stream_stays_open_until_the_server_is_dropped() {
    let server = MockServer::start().await;
    server.push(Reply::text("Thinking").then_hang());

    let response = post(&server, &chat(MODEL, true, "Hi")).await;
    let mut body = response.bytes_stream();
    let mut received = String::new();
    while !received.contains("Thinking") {
        received.push_str(std::str::from_utf8(&body.next().await.unwrap().unwrap()).unwrap());
    }
    assert!(
        tokio::time::timeout(QUIET, body.next()).await.is_err(),
        "nothing more is sent"
    );
    assert!(server.requests()[0].finished_at.is_none());

    drop(server);
    let end = tokio::time::timeout(PATIENCE, body.next())
        .await
        .expect("dropping the server ends the reply");
    assert!(!matches!(end, Some(Ok(_))), "no more data after shutdown");
}

#[tokio::test]
async fn hanging_non_streaming_reply_never_sends_headers() {
    let server = MockServer::start().await;
    server.push(Reply::text("Never").then_hang());

    let pending = tokio::time::timeout(QUIET, post(&server, &chat(MODEL, false, "Hi"))).await;

    assert!(pending.is_err());
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_client_leaving_a_hanging_reply_finishes_it() {
    let server = MockServer::start().await;
    server.push(Reply::text("Thinking").then_hang());

    let response = post(&server, &chat(MODEL, true, "Hi")).await;
    let mut body = response.bytes_stream();
    body.next().await.unwrap().unwrap();
    drop(body);

    let deadline = Instant::now() + PATIENCE;
    while server.requests()[0].finished_at.is_none() {
        assert!(
            Instant::now() < deadline,
            "the server noticed the client left"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reply_does_not_hold_up_another() {
    let server = MockServer::start().await;
    let slow = Reply::text("one two three four five").with_chunk_delay(Duration::from_millis(100));
    server.push_for_model("slow-model", slow);
    server.push_for_model("fast-model", Reply::text("quick"));

    let slow_turn =
        async { stream_chunks(post(&server, &chat("slow-model", true, "Hi")).await).await };
    let fast_turn = async {
        server.wait_for_requests(1, PATIENCE).await;
        stream_chunks(post(&server, &chat("fast-model", true, "Hi")).await).await
    };
    futures::join!(slow_turn, fast_turn);

    let log = server.requests();
    let (slow, fast) = (&log[0], &log[1]);
    assert_eq!(
        (slow.model.as_str(), fast.model.as_str()),
        ("slow-model", "fast-model")
    );
    assert!(fast.arrived_at > slow.arrived_at);
    assert!(fast.finished_at.unwrap() < slow.finished_at.unwrap());
}

#[tokio::test]
async fn per_model_queues_come_before_the_general_queue() {
    let server = MockServer::start().await;
    server.push(Reply::text("general"));
    server.push_for_model("gpt-4o-mini", Reply::text("weak model"));
    assert_eq!(server.pending_replies(), 2);

    let answer = |model: &'static str| {
        let server = &server;
        async move { content_of(&stream_chunks(post(server, &chat(model, true, "Hi")).await).await) }
    };
    assert_eq!(answer("gpt-4o-mini").await, "weak model");
    assert_eq!(answer("gpt-4o-mini").await, "general");
    assert_eq!(server.pending_replies(), 0);
    assert_eq!(post(&server, &chat(MODEL, true, "Hi")).await.status(), 500);
}

#[tokio::test]
async fn responder_answers_when_the_queues_are_empty() {
    let server = MockServer::start().await;
    server.push(Reply::text("queued first"));
    server.set_responder(|request| match request.last_user_text() {
        Some(text) if text.starts_with("Summarize") => Reply::text("SUMMARY"),
        Some(text) => Reply::text(format!("echo: {text}")),
        None => Reply::server_error(500),
    });

    let mut answers = Vec::new();
    for prompt in ["one", "two", "Summarize the chat"] {
        answers.push(content_of(
            &stream_chunks(post(&server, &chat(MODEL, true, prompt)).await).await,
        ));
    }

    assert_eq!(answers, ["queued first", "echo: two", "SUMMARY"]);
}

#[tokio::test]
async fn a_panicking_responder_becomes_a_500_naming_the_panic() {
    let server = MockServer::start().await;
    server.set_responder(|_| panic!("responder says no"));

    let response = post(&server, &chat(MODEL, true, "Hi")).await;

    assert_eq!(response.status(), 500);
    let message = error_message(response).await;
    assert!(message.contains("responder says no"), "{message}");
}

#[tokio::test]
async fn nothing_scripted_is_a_loud_500() {
    let server = MockServer::start().await;

    let response = post(&server, &chat(MODEL, true, "Hi")).await;

    assert_eq!(response.status(), 500);
    let body = response.text().await.unwrap();
    let error = &serde_json::from_str::<Value>(&body).unwrap()["error"];
    assert_eq!(error["code"], "no_reply_scripted");
    assert!(
        body.contains("no reply was scripted for request #1"),
        "{body}"
    );
}

#[tokio::test]
async fn the_log_records_what_was_sent() {
    let server = MockServer::start().await;
    server.push(Reply::text("Logged"));
    let body = json!({
        "model": "gpt-4.1",
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_tokens": 50,
        "max_completion_tokens": 60,
        "messages": [
            { "role": "system", "content": [
                { "type": "text", "text": "Be brief. ", "cache_control": { "type": "ephemeral" } },
                { "type": "image_url", "image_url": { "url": "data:image/png;base64,AAAA" } },
                { "type": "text", "text": "Use Rust." },
            ]},
            { "role": "user", "name": "dev", "content": "Hi" },
            { "role": "assistant", "content": null },
        ],
    });

    stream_chunks(post(&server, &body).await).await;

    let log = server.requests();
    assert_eq!(log.len(), 1);
    let request = &log[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    assert_eq!(request.body, body);
    assert_eq!(
        serde_json::from_str::<Value>(&request.body_text).unwrap(),
        body
    );
    assert_eq!(request.model, "gpt-4.1");
    let message = |role: &str, name: Option<&str>, text: &str| RecordedMessage {
        role: role.into(),
        name: name.map(Into::into),
        text: text.into(),
    };
    assert_eq!(
        request.messages,
        [
            message("system", None, "Be brief. Use Rust."),
            message("user", Some("dev"), "Hi"),
            message("assistant", None, "")
        ]
    );
    assert_eq!(request.last_user_text(), Some("Hi"));
    assert!(request.stream && request.include_usage && request.has_cache_control);
    assert_eq!(
        (request.max_tokens, request.max_completion_tokens),
        (Some(50), Some(60))
    );
    assert_eq!(
        request.prompt_tokens,
        prompt_tokens("gpt-4.1", &request.messages)
    );
    assert_eq!(request.rejected, None);
    assert!(
        request
            .finished_at
            .expect("finished once the client has read it all")
            >= request.arrived_at
    );

    let printed = format!("{request:?}");
    assert!(!printed.contains(API_KEY), "Debug never shows the key");
    assert!(printed.contains("<redacted>"));
}

#[tokio::test]
async fn the_v1_prefix_is_optional() {
    let server = MockServer::start().await;
    server.push(Reply::text("no prefix"));

    let response = post_to(&server.url("/chat/completions"), &chat(MODEL, true, "Hi")).await;

    assert_eq!(content_of(&stream_chunks(response).await), "no prefix");
    assert_eq!(server.requests()[0].path, "/chat/completions");
}

#[tokio::test]
async fn unknown_urls_are_logged_and_answered_404() {
    let server = MockServer::start().await;
    server.push(Reply::text("unused"));

    let response = client()
        .get(format!("{}/embeddings", server.base_url()))
        .send()
        .await
        .unwrap();

    assert_eq!(response.status(), 404);
    assert_eq!(
        error_message(response).await,
        "Invalid URL (GET /v1/embeddings)"
    );
    let request = &server.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/embeddings")
    );
    assert_eq!(
        request.rejected.as_deref(),
        Some("Invalid URL (GET /v1/embeddings)")
    );
    assert_eq!(server.pending_replies(), 1, "the script is untouched");
}

#[tokio::test]
async fn malformed_requests_are_rejected_without_using_the_script() {
    let server = MockServer::start().await;
    server.push(Reply::text("unused"));
    let url = format!("{}/chat/completions", server.base_url());
    let cases = [
        ("{\"model\": ", "could not parse the JSON body"),
        (
            r#"{"messages": [{"role": "user", "content": "Hi"}]}"#,
            "you must provide a model parameter",
        ),
        (r#"{"model": "gpt-4o", "messages": []}"#, "too short"),
        (
            r#"{"model": "gpt-4o", "messages": [{"role": "wizard", "content": "Hi"}]}"#,
            "messages[0].role",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": 42}]}"#,
            "messages[0].content",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "text"}]}]}"#,
            "messages[0].content[0].text",
        ),
        (
            r#"{"model": "gpt-4o", "stream": "yes", "messages": [{"role": "user", "content": "Hi"}]}"#,
            "'stream'",
        ),
    ];

    for (body, expected) in cases {
        let response = client().post(&url).body(body).send().await.unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let error = &json_body(response).await["error"];
        assert_eq!(error["type"], "invalid_request_error");
        assert!(
            error["message"].as_str().unwrap().contains(expected),
            "{body}: {error}"
        );
    }

    assert_eq!(server.pending_replies(), 1);
    let log = server.requests();
    assert_eq!(log.len(), cases.len());
    assert!(log.iter().all(|r| r.rejected.is_some()));
}

#[tokio::test]
async fn wait_for_requests_returns_once_they_arrived() {
    let server = MockServer::start().await;
    server.push(Reply::text("a"));
    server.push(Reply::text("b"));

    let client_side = async {
        for prompt in ["first", "second"] {
            tokio::time::sleep(Duration::from_millis(50)).await;
            stream_chunks(post(&server, &chat(MODEL, true, prompt)).await).await;
        }
    };
    let (_, log) = futures::join!(client_side, server.wait_for_requests(2, PATIENCE));

    assert!(log.len() >= 2);
    assert_eq!(log[1].last_user_text(), Some("second"));
}

#[tokio::test]
#[should_panic(expected = "expected 1 requests within")]
async fn wait_for_requests_panics_on_timeout() {
    let server = MockServer::start().await;
    server.wait_for_requests(1, Duration::from_millis(50)).await;
}

/// A sync test, as the tmux end-to-end test is, speaking raw HTTP/1.1 to check the wire.
#[test]
fn start_in_thread_serves_sync_tests_until_dropped() {
    let server = MockServer::start_in_thread();
    assert!(
        server.base_url().starts_with("http://127.0.0.1:") && server.base_url().ends_with("/v1")
    );
    server.push(Reply::text("from a thread"));
    let addr = server.url("").trim_start_matches("http://").to_owned();
    let body = chat(MODEL, true, "raw").to_string();

    let mut stream = TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();

    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.contains("content-type: text/event-stream\r\n"));
    assert!(response.contains(r#""delta":{"content":" a"}"#));
    assert!(response.contains("data: [DONE]\n\n"));
    let log = server.wait_for_requests_blocking(1, PATIENCE);
    assert_eq!(log[0].last_user_text(), Some("raw"));

    drop(server);
    let deadline = Instant::now() + PATIENCE;
    while TcpStream::connect(&addr).is_ok() {
        assert!(Instant::now() < deadline, "the port is closed after drop");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn encodings_follow_openai_model_families() {
    let cl100k = tiktoken_rs::cl100k_base_singleton();
    let o200k = tiktoken_rs::o200k_base_singleton();
    for model in [
        "gpt-4",
        "gpt-4-0613",
        "gpt-4-turbo",
        "gpt-3.5-turbo",
        "openai/gpt-4-32k",
    ] {
        assert!(std::ptr::eq(encoding_for_model(model), cl100k), "{model}");
    }
    let others = [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "openai/gpt-4.1-mini",
        "gpt-5",
        "o3-mini",
        "qwen2.5-coder:32b",
        "anthropic/claude-sonnet-4",
    ];
    for model in others {
        assert!(std::ptr::eq(encoding_for_model(model), o200k), "{model}");
    }
    assert!(
        text_tokens(MODEL, "<|endoftext|>") > 1,
        "special-token text is ordinary text"
    );
}

#[test]
#[should_panic(expected = "needs a 5xx status")]
fn server_error_rejects_a_non_5xx_status() {
    Reply::server_error(404);
}

#[test]
#[should_panic(expected = "applies to completions")]
fn completion_modifiers_reject_error_replies() {
    let _ = Reply::invalid_api_key().with_chunk_delay(Duration::from_millis(1));
}

/// As llama.cpp: its own tokenizer (every digit a token) behind `/tokenize`, ChatML's
/// tokens around each message, and a prompt of `n_ctx` tokens or more refused with
/// `exceed_context_size_error`.
#[tokio::test]
async fn the_mock_plays_llama_cpp() {
    let dialect = Dialect::LlamaCpp { n_ctx: 64 };
    let server = MockServer::start_as(dialect).await;
    let answer = post_to(&server.url("/tokenize"), &json!({ "content": "lend 2024" })).await;
    let tokens = json_body(answer).await["tokens"].as_array().unwrap().len();
    assert_eq!(tokens, dialect.text_tokens(MODEL, "lend ") + 4);
    assert_eq!(server.tokenized(), ["lend 2024"]);
    assert_eq!(
        server.request_count(),
        0,
        "tokenizing is not a chat request"
    );

    server.push(Reply::text("ok"));
    let usage = json_body(post(&server, &chat(MODEL, false, "hi")).await).await["usage"].clone();
    // <|im_start|>user\nhi<|im_end|>\n, then <|im_start|>assistant\n
    let count = |text| dialect.text_tokens(MODEL, text);
    let expected = 1 + count("user\nhi") + 1 + count("\n") + 1 + count("assistant\n");
    assert_eq!(usage["prompt_tokens"], expected);

    let long = "many words ".repeat(40);
    let refused = post(&server, &chat(MODEL, true, &long)).await;
    assert_eq!(refused.status(), 400);
    let body = json_body(refused).await;
    assert_eq!(body["error"]["type"], "exceed_context_size_error");
    assert_eq!(body["error"]["n_ctx"], 64);
    assert_eq!(
        body["error"]["n_prompt_tokens"],
        server.requests()[1].prompt_tokens
    );
}

/// As llama-cpp-python (`/extras/tokenize/count`, no usage in streams, an over-long
/// prompt answered 200 with a role chunk and nothing more) and vLLM (`/tokenize` with a
/// count, prompt + max_tokens over the window refused); OpenAI has no tokenize endpoint.
#[tokio::test]
async fn the_mock_plays_llama_cpp_python_and_vllm() {
    let python = MockServer::start_as(Dialect::LlamaCppPython { n_ctx: 64 }).await;
    let count = post_to(
        &python.url("/extras/tokenize/count"),
        &json!({ "input": "lend 2024" }),
    )
    .await;
    assert!(json_body(count).await["count"].as_u64().unwrap() > 4);
    python.push(Reply::text("ok"));
    let mut streamed = chat(MODEL, true, "hi");
    streamed["stream_options"] = json!({ "include_usage": true });
    let chunks = stream_chunks(post(&python, &streamed).await).await;
    assert!(
        chunks.iter().all(|c| c.get("usage").is_none()),
        "{chunks:?}"
    );
    let long = chat(MODEL, true, &"many words ".repeat(40));
    let silent = post(&python, &long).await;
    assert_eq!(silent.status(), 200);
    let (body, _) = read_to_end(silent).await;
    let chunks = parse_chunks(&sse_data(&body));
    assert_eq!(chunks.len(), 1, "only the role chunk: {body}");
    assert_eq!(content_of(&chunks), "");

    let vllm = MockServer::start_as(Dialect::Vllm { max_model_len: 64 }).await;
    let answer = post_to(&vllm.url("/tokenize"), &json!({ "prompt": "lend 2024" })).await;
    let body = json_body(answer).await;
    assert_eq!(body["max_model_len"], 64);
    assert_eq!(body["count"], body["tokens"].as_array().unwrap().len());
    let mut asked = chat(MODEL, false, "hi");
    asked["max_tokens"] = json!(60);
    let refused = post(&vllm, &asked).await;
    assert_eq!(refused.status(), 400);
    let message = json_body(refused).await["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("maximum context length is 64 tokens"),
        "{message}"
    );

    let openai = MockServer::start().await;
    let missing = post_to(&openai.url("/tokenize"), &json!({ "content": "x" })).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(openai.request_count(), 0);
}
