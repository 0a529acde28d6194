//! The production LLM client against a real HTTP server on 127.0.0.1 speaking the
//! OpenAI SSE wire format, with every fault the client must survive.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::support::{MockServer, Reply};
use tern::config::{ApiKey, Settings};
use tern::context::{self, ChunkInputs, PromptFile};
use tern::llm::{
    ChatRequest, Finish, LlmClient, LlmError, Message, ModelInfo, ReplyLimit, StreamEvent,
};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-test-very-secret-key";

fn settings(server: &MockServer) -> Settings {
    Settings {
        api_base: server.base_url(),
        api_key: Some(ApiKey::new(KEY)),
        retry_budget_secs: 10,
        ..Settings::default()
    }
}

fn request(model: &str, text: &str) -> ChatRequest {
    ChatRequest {
        model: ModelInfo::lookup(model),
        messages: vec![Message::system("You are terse."), Message::user(text)],
        cache_control: false,
        reply_limit: ReplyLimit::Server,
        predicted_prompt: None,
        counting: None,
        one_at_a_time: false,
        known_window: None,
    }
}

/// Runs a request and collects what the client reported along the way.
async fn chat(
    client: &LlmClient,
    request: &ChatRequest,
) -> (Result<tern::llm::ChatReply, LlmError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let result = client
        .chat(request, &CancellationToken::new(), &mut |e| events.push(e))
        .await;
    (result, events)
}

fn deltas(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streams_a_reply_with_usage_and_sends_the_key_only_in_the_header() {
    let server = MockServer::start().await;
    server.push(Reply::text("Hello there, how can I help?"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let (reply, events) = chat(&client, &request("gpt-4o", "hi")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Hello there, how can I help?");
    assert_eq!(deltas(&events), reply.text);
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Delta(_)))
            .count()
            > 1
    );
    assert_eq!(reply.finish, Finish::Stop);
    assert!(reply.usage_reported);
    let sent = &server.requests()[0];
    assert!(sent.stream && sent.include_usage);
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!sent.body_text.contains(KEY));
    assert_eq!(reply.usage.prompt_tokens, sent.prompt_tokens);
    assert!(reply.usage.completion_tokens > 0);
}

#[tokio::test]
async fn predicted_prompt_tokens_equal_the_servers_count() {
    let server = MockServer::start().await;
    for model in ["gpt-4o", "gpt-4"] {
        server.push(Reply::text("ok"));
        let model_info = ModelInfo::lookup(model);
        let counter = model_info.token_counter();
        let inputs = ChunkInputs {
            system: "You are tern, a careful pair programmer.".into(),
            examples: vec![
                Message::user("Rename x"),
                Message::assistant("Done: x is y."),
            ],
            readonly_files: vec![PromptFile {
                path: "README.md".into(),
                text: "# Demo\n\nSpecial text <|endoftext|> stays text.\n".into(),
            }],
            repo_map: Some("src/lib.rs:\n│pub fn parse(input: &str) -> Ast\n".into()),
            done: vec![
                Message::user("earlier"),
                Message::assistant("earlier reply"),
            ],
            chat_files: vec![PromptFile {
                path: "src/main.rs".into(),
                text: "fn main() {\n    println!(\"héllo 🦀\");\n}\n".into(),
            }],
            cur: vec![Message::user("Make it print twice.")],
            reminder: Some("Reply with SEARCH/REPLACE blocks.".into()),
            review_diff: None,
            command_outputs: Vec::new(),
        };
        let assembled = context::assemble(&inputs, &counter);
        let client = LlmClient::new(&settings(&server), None, None).unwrap();
        let req = ChatRequest {
            model: model_info,
            messages: assembled.messages.clone(),
            cache_control: false,
            reply_limit: ReplyLimit::Server,
            predicted_prompt: None,
            counting: None,
            one_at_a_time: false,
            known_window: None,
        };
        let (reply, _) = chat(&client, &req).await;
        let reply = reply.unwrap();
        assert_eq!(assembled.total, reply.usage.prompt_tokens, "{model}");
    }
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let server = MockServer::start().await;
    server.push(Reply::rate_limited(1));
    server.push(Reply::text("finally"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let started = Instant::now();
    let (reply, events) = chat(&client, &request("gpt-4o", "hi")).await;
    assert_eq!(reply.unwrap().text, "finally");
    assert!(started.elapsed() >= Duration::from_secs(1));
    let retry = events
        .iter()
        .find_map(|e| match e {
            StreamEvent::Retrying { delay, reason, .. } => Some((*delay, reason.clone())),
            _ => None,
        })
        .expect("a retry was reported");
    assert_eq!(retry.0, Duration::from_secs(1));
    assert!(retry.1.contains("rate limited"), "{}", retry.1);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn server_errors_back_off_exponentially_then_succeed() {
    let server = MockServer::start().await;
    server.push(Reply::server_error(500));
    server.push(Reply::server_error(503));
    server.push(Reply::text("recovered"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let (reply, events) = chat(&client, &request("gpt-4o", "hi")).await;
    assert_eq!(reply.unwrap().text, "recovered");
    let delays: Vec<Duration> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { delay, .. } => Some(*delay),
            _ => None,
        })
        .collect();
    assert_eq!(
        delays,
        vec![Duration::from_millis(250), Duration::from_millis(500)]
    );
}

#[tokio::test]
async fn retries_stop_at_the_budget_with_a_specific_error() {
    let server = MockServer::start().await;
    server.set_responder(|_| Reply::server_error(502));
    let mut s = settings(&server);
    s.retry_budget_secs = 1;
    let client = LlmClient::new(&s, None, None).unwrap();
    let (reply, _) = chat(&client, &request("gpt-4o", "hi")).await;
    match reply {
        Err(LlmError::Server {
            status: 502,
            attempts,
            ..
        }) => assert!(attempts >= 2),
        other => panic!("expected a server error, got {other:?}"),
    }
    // 0.25 + 0.5 fit in one second; the next 1 s wait does not.
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn client_errors_are_specific_and_not_retried() {
    let server = MockServer::start().await;
    server.push(Reply::invalid_api_key());
    server.push(Reply::model_not_found());
    server.push(Reply::context_length_exceeded(8192));
    server.push(Reply::llama_cpp_context_exceeded(4096));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();

    let (r, _) = chat(&client, &request("gpt-4o", "hi")).await;
    assert!(matches!(r, Err(LlmError::Unauthorized { .. })), "{r:?}");
    let message = r.unwrap_err().to_string();
    assert!(
        !message.contains(KEY),
        "the key must never be shown: {message}"
    );

    let (r, _) = chat(&client, &request("no-such-model", "hi")).await;
    match r {
        Err(e @ LlmError::ModelNotFound { .. }) => assert!(e.to_string().contains("no-such-model")),
        other => panic!("{other:?}"),
    }
    let (r, _) = chat(&client, &request("gpt-4o", "hi")).await;
    assert!(
        r.as_ref().is_err_and(LlmError::is_context_overflow),
        "{r:?}"
    );
    let (r, _) = chat(&client, &request("qwen2.5-coder:7b", "hi")).await;
    assert!(
        r.as_ref().is_err_and(LlmError::is_context_overflow),
        "{r:?}"
    );
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = Settings {
        api_base: format!("http://127.0.0.1:{port}/v1"),
        retry_budget_secs: 1,
        ..Settings::default()
    };
    let client = LlmClient::new(&s, None, None).unwrap();
    let (r, events) = chat(&client, &request("gpt-4o", "hi")).await;
    let e = r.unwrap_err();
    assert!(matches!(e, LlmError::Connection { .. }), "{e:?}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retrying { .. }))
    );
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let server = MockServer::start().await;
    server.push(Reply::text("too late").with_start_delay(Duration::from_secs(3)));
    let mut s = settings(&server);
    s.read_timeout_secs = 1;
    let client = LlmClient::new(&s, None, None).unwrap();
    let (r, _) = chat(&client, &request("gpt-4o", "hi")).await;
    assert!(matches!(r, Err(LlmError::Timeout { secs: 1, .. })), "{r:?}");
}

#[tokio::test]
async fn a_stream_cut_mid_way_keeps_its_text() {
    let server = MockServer::start().await;
    server.push(Reply::chunks(["The first ", "half"]).then_cut_connection());
    server.push(Reply::chunks(["Clean ", "end"]).then_end_without_done());
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    for expected in ["The first half", "Clean end"] {
        let (r, _) = chat(&client, &request("gpt-4o", "hi")).await;
        let reply = r.unwrap();
        assert_eq!(reply.text, expected);
        assert!(
            matches!(reply.finish, Finish::CutOff(_)),
            "{:?}",
            reply.finish
        );
    }
    assert_eq!(
        server.request_count(),
        2,
        "text already shown is never re-requested"
    );
}

#[tokio::test]
async fn malformed_chunks_and_error_events() {
    let server = MockServer::start().await;
    server.push(Reply::chunks(["Some ", "text"]).then_malformed_chunk());
    server.push(Reply::chunks(["Before "]).then_error_event("overloaded"));
    server.push(Reply::chunks(Vec::<String>::new()).then_malformed_chunk());
    let client = LlmClient::new(&settings(&server), None, None).unwrap();

    let reply = chat(&client, &request("gpt-4o", "hi")).await.0.unwrap();
    assert_eq!(reply.text, "Some text");
    assert!(
        matches!(&reply.finish, Finish::CutOff(why) if why.contains("malformed")),
        "{:?}",
        reply.finish
    );

    // The stream's status was 200: the error is said as the stream's, with no HTTP
    // status the server never sent.
    let reply = chat(&client, &request("gpt-4o", "hi")).await.0.unwrap();
    assert_eq!(reply.text, "Before ");
    assert_eq!(
        reply.finish,
        Finish::CutOff("the server reported an error in the stream: overloaded".into())
    );

    let r = chat(&client, &request("gpt-4o", "hi")).await.0;
    assert!(matches!(r, Err(LlmError::BadResponse { .. })), "{r:?}");
}

/// A stream that carries only an error object is retried as a server error is, and
/// both the retry and the error its retries end in say it came in the stream: the
/// server sent HTTP 200, so no other status is named.
#[tokio::test]
async fn an_error_only_stream_is_said_as_the_streams_error() {
    let server = MockServer::start().await;
    server.push(Reply::chunks(Vec::<String>::new()).then_error_event("bad thing"));
    server.push(Reply::text("recovered"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let (reply, events) = chat(&client, &request("gpt-4o", "hi")).await;
    assert_eq!(reply.unwrap().text, "recovered");
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasons,
        ["the server reported an error in the stream: bad thing"]
    );

    server.set_responder(|_| Reply::chunks(Vec::<String>::new()).then_error_event("bad thing"));
    let mut s = settings(&server);
    s.retry_budget_secs = 1;
    let client = LlmClient::new(&s, None, None).unwrap();
    let error = chat(&client, &request("gpt-4o", "hi")).await.0.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the server reported an error in the stream and still did after 3 attempts: bad thing"
    );
}

#[tokio::test]
async fn length_cut_replies_continue_by_prefill_at_most_three_times() {
    let server = MockServer::start().await;
    for part in ["one ", "two ", "three ", "four "] {
        server.push(Reply::length_limited(part));
    }
    server.push(Reply::text("never asked"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let req = request("anthropic/claude-sonnet-4", "count");
    assert!(req.model.prefill);
    let (r, events) = chat(&client, &req).await;
    let reply = r.unwrap();
    assert_eq!(reply.text, "one two three four ");
    assert_eq!(reply.finish, Finish::Length(ReplyLimit::Server));
    assert_eq!(reply.continuations, 3);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Continuing { .. }))
            .count(),
        3
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3].messages.last().unwrap();
    assert_eq!(
        (last.role.as_str(), last.text.as_str()),
        ("assistant", "one two three ")
    );
    let model = "anthropic/claude-sonnet-4";
    let billed: usize = ["one ", "two ", "three ", "four "]
        .iter()
        .map(|part| crate::support::text_tokens(model, part))
        .sum();
    assert_eq!(
        reply.usage.completion_tokens, billed,
        "usage is summed over continuations"
    );
}

#[tokio::test]
async fn length_cut_without_prefill_stops_at_once() {
    let server = MockServer::start().await;
    server.push(Reply::length_limited("partial"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let (r, _) = chat(&client, &request("gpt-4o", "hi")).await;
    let reply = r.unwrap();
    assert_eq!(
        (reply.text.as_str(), reply.finish),
        ("partial", Finish::Length(ReplyLimit::Server))
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn cancel_keeps_the_partial_reply() {
    let server = MockServer::start().await;
    server.push(Reply::chunks(["streaming ", "forever"]).then_hang());
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let mut seen = String::new();
    let reply = client
        .chat(&request("gpt-4o", "hi"), &cancel, &mut |e| {
            if let StreamEvent::Delta(t) = e {
                seen.push_str(&t);
                if seen == "streaming forever" {
                    trigger.cancel();
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(reply.text, "streaming forever");
    assert_eq!(reply.finish, Finish::Cancelled);
}

#[tokio::test]
async fn cancel_during_a_retry_wait_returns_at_once() {
    let server = MockServer::start().await;
    server.push(Reply::rate_limited(30));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let started = Instant::now();
    let r = client
        .chat(&request("gpt-4o", "hi"), &cancel, &mut |e| {
            if matches!(e, StreamEvent::Retrying { .. }) {
                trigger.cancel();
            }
        })
        .await;
    // Retry-After of 30 s does not fit the 10 s budget: the client gives up at once
    // rather than sleeping past it.
    assert!(matches!(r, Err(LlmError::RateLimited { .. })), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A server may say to retry after more seconds than a `Duration` holds: that is a
/// wait past any budget (the client gives up), never a panic.
#[tokio::test]
async fn a_retry_after_past_what_the_clock_holds_gives_up_at_once() {
    let server = MockServer::start().await;
    server.push(Reply::rate_limited(u64::MAX));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let started = Instant::now();
    let (r, _) = chat(&client, &request("gpt-4o", "hi")).await;
    assert!(matches!(r, Err(LlmError::RateLimited { .. })), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn cache_breakpoints_are_sent_as_content_parts() {
    let server = MockServer::start().await;
    server.push(Reply::text("ok"));
    server.push(Reply::text("ok"));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let mut req = request("anthropic/claude-sonnet-4", "hi");
    req.messages[0].cache_breakpoint = true;
    req.cache_control = true;
    chat(&client, &req).await.0.unwrap();
    req.cache_control = false;
    chat(&client, &req).await.0.unwrap();
    let requests = server.requests();
    assert!(requests[0].has_cache_control);
    assert!(!requests[1].has_cache_control);
    assert_eq!(requests[0].messages[0].text, "You are terse.");
}

#[tokio::test]
async fn cached_tokens_are_reported() {
    let server = MockServer::start().await;
    server.push(Reply::text("ok").with_cached_tokens(7));
    let client = LlmClient::new(&settings(&server), None, None).unwrap();
    let reply = chat(&client, &request("gpt-4o", "hi")).await.0.unwrap();
    assert_eq!(reply.usage.cached_tokens, 7);
}

#[tokio::test]
async fn record_then_replay_gives_the_same_reply_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    let server = MockServer::start().await;
    server.push(Reply::invalid_api_key());
    server.push(Reply::text("recorded reply, streamed in parts").with_cached_tokens(3));
    let recording = LlmClient::new(&settings(&server), Some(&file), None).unwrap();
    let mut secret_request = request("gpt-4o", &format!("my key is {KEY}"));
    let first = chat(&recording, &secret_request).await.0;
    assert!(matches!(first, Err(LlmError::Unauthorized { .. })));
    secret_request.messages[1].content = "hello".into();
    let (live, live_events) = chat(&recording, &secret_request).await;
    let live = live.unwrap();
    drop(server);

    let recorded = std::fs::read_to_string(&file).unwrap();
    assert_eq!(recorded.lines().count(), 2);
    assert!(!recorded.contains(KEY), "the key leaked into the recording");
    assert!(recorded.contains(tern::egress::MARKER), "{recorded}");

    let replaying = LlmClient::new(&Settings::default(), None, Some(&file)).unwrap();
    let replayed_first = chat(&replaying, &secret_request).await.0;
    assert!(matches!(replayed_first, Err(LlmError::Unauthorized { .. })));
    let (replayed, replay_events) = chat(&replaying, &secret_request).await;
    let replayed = replayed.unwrap();
    assert_eq!(replayed.text, live.text);
    assert_eq!(replayed.usage, live.usage);
    assert_eq!(deltas(&replay_events), deltas(&live_events));
    let exhausted = chat(&replaying, &secret_request).await.0;
    assert!(
        matches!(exhausted, Err(LlmError::Replay(_))),
        "{exhausted:?}"
    );
}

/// Without a key for OpenAI's own API nothing is sent (it would be refused, or retried
/// for a minute offline): the error says how to set a key, use a local server, or try
/// the demo.
#[tokio::test]
async fn no_key_for_openai_sends_nothing_and_says_what_to_do() {
    let s = Settings {
        api_key: None,
        ..Settings::default()
    };
    assert_eq!(s.api_base, tern::llm::OPENAI_API_BASE);
    let client = LlmClient::new(&s, None, None).unwrap();
    let (r, events) = chat(&client, &request("gpt-4o", "hi")).await;
    let e = r.unwrap_err();
    assert!(matches!(e, LlmError::NoApiKey), "{e:?}");
    let text = e.to_string();
    for hint in ["OPENAI_API_KEY", "--api-base", "11434", "--demo"] {
        assert!(text.contains(hint), "{hint}: {text}");
    }
    assert!(events.is_empty(), "no attempt: {events:?}");
    // A local server needs no key.
    let server = MockServer::start().await;
    server.push(Reply::text("fine"));
    let local = Settings {
        api_base: server.base_url(),
        api_key: None,
        ..Settings::default()
    };
    let client = LlmClient::new(&local, None, None).unwrap();
    assert!(client.unusable().is_none());
    assert_eq!(
        chat(&client, &request("gpt-4o", "hi"))
            .await
            .0
            .unwrap()
            .text,
        "fine"
    );
}

/// A failure that waiting will not fix (here a TLS handshake with a server that speaks
/// plain HTTP) is retried once, not for the whole budget; a refused connection keeps
/// the budget, since a local server may be restarting.
#[tokio::test]
async fn a_tls_failure_is_retried_once() {
    let server = MockServer::start().await;
    let s = Settings {
        api_base: server.base_url().replacen("http://", "https://", 1),
        api_key: Some(ApiKey::new(KEY)),
        retry_budget_secs: 60,
        ..Settings::default()
    };
    let client = LlmClient::new(&s, None, None).unwrap();
    let (r, events) = chat(&client, &request("gpt-4o", "hi")).await;
    let e = r.unwrap_err();
    assert!(
        matches!(e, LlmError::Connection { attempts: 2, .. }),
        "{e:?}"
    );
    let retries = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Retrying { .. }))
        .count();
    assert_eq!(retries, 1, "{events:?}");
}
