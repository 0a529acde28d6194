//! The history summarizer against the loopback server: the classic split, the fallback
//! to the main model, chunked summaries of a head larger than the summarizer's window,
//! the recursion bound and cancellation.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{Dialect, MockServer, Reply};
use tern::config::{ApiKey, Settings};
use tern::context::history::{
    self, SUMMARY_PREFIX, Summarizer, SummaryError, SummaryModel, replace_head,
};
use tern::llm::{LlmClient, Message, ModelInfo, Role};
use tern::tokens::TokenCounter;
use tokio_util::sync::CancellationToken;

const WEAK: &str = "gpt-4o-mini";
const MAIN: &str = "gpt-4o";

fn client(server: &MockServer) -> LlmClient {
    let settings = Settings {
        api_base: server.base_url(),
        api_key: Some(ApiKey::new("sk-test")),
        retry_budget_secs: 2,
        ..Settings::default()
    };
    LlmClient::new(&settings, None, None).unwrap()
}

fn counter() -> TokenCounter {
    ModelInfo::lookup(MAIN).token_counter()
}

/// The weak and main models, each with `window` as its input limit (None: the table's).
fn summarizer(server: &MockServer, window: Option<usize>) -> Summarizer {
    let models = [WEAK, MAIN]
        .into_iter()
        .map(|name| SummaryModel::new(ModelInfo::lookup(name), window, None))
        .collect();
    Summarizer::new(client(server), models, counter())
}

/// A unique tag for message `i`; no tag is a substring of another.
fn tag(i: usize) -> String {
    format!("[m{i:03}]")
}

/// `turns` user/assistant exchanges of varied lengths, each message tagged.
fn conversation(turns: usize) -> Vec<Message> {
    (0..2 * turns)
        .map(|i| {
            let words = "refactor the parser in src/parse.rs ".repeat(1 + (i * 7) % 9);
            let text = format!("{} {words}", tag(i));
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect()
}

fn assert_alternates(messages: &[Message]) {
    assert_eq!(messages[0].role, Role::User);
    for pair in messages.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "{pair:?}");
    }
}

#[tokio::test]
async fn a_200_message_history_is_split_where_the_tail_fits_half_the_budget() {
    let server = MockServer::start().await;
    let recap = "I asked you to refactor the parser in src/parse.rs and you did.";
    server.push_for_model(WEAK, Reply::text(recap));
    let history = conversation(100);
    assert_eq!(history.len(), 200);
    let c = counter();
    let budget = 2048;
    assert!(history::tokens(&history, &c) > budget);

    let summary = summarizer(&server, None)
        .fit(&history, budget, false, &CancellationToken::new())
        .await
        .unwrap()
        .expect("over budget, so summarized");

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one round was enough");
    assert_eq!(summary.calls, 1);
    let request = &requests[0];
    assert_eq!(request.model, WEAK);
    assert_eq!(
        request.max_tokens,
        Some(history::summary_cap(budget) as u64)
    );
    assert_eq!(request.messages[0].role, "system");
    assert!(request.messages[0].text.contains("first person"));
    // The transcript is exactly the head; the tail is not sent.
    let transcript = &request.messages[1].text;
    let anchor = summary.anchor;
    for i in 0..history.len() {
        assert_eq!(transcript.contains(&tag(i)), i < anchor, "message {i}");
    }
    assert_eq!(transcript.matches("# USER\n").count(), anchor / 2);
    assert_eq!(transcript.matches("# ASSISTANT\n").count(), anchor / 2);
    // The head ends on an assistant message; the tail is under half the budget, and the
    // message before it would not have fit.
    assert_eq!(history[anchor - 1].role, Role::Assistant);
    assert!(history::tokens(&history[anchor..], &c) < budget / 2);
    assert!(history::tokens(&history[anchor - 2..], &c) >= budget / 2);

    let mut compacted = history.clone();
    let replaced = replace_head(&mut compacted, anchor, &summary.text, &c);
    assert_eq!(replaced.replaced_messages, anchor);
    assert_eq!(compacted[0].content, format!("{SUMMARY_PREFIX}{recap}"));
    assert_eq!(&compacted[2..], &history[anchor..], "the tail is verbatim");
    assert_alternates(&compacted);
    assert!(history::tokens(&compacted, &c) <= budget);
}

#[tokio::test]
async fn a_history_within_budget_is_left_alone_unless_forced() {
    let server = MockServer::start().await;
    server.push_for_model(WEAK, Reply::text("I asked you about the parser."));
    let history = conversation(3);
    let s = summarizer(&server, None);
    let cancel = CancellationToken::new();
    assert_eq!(s.fit(&history, 10_000, false, &cancel).await.unwrap(), None);
    assert_eq!(server.request_count(), 0);
    let forced = s
        .fit(&history, 10_000, true, &cancel)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        forced.anchor,
        history.len(),
        "too short to split: all of it"
    );
}

#[tokio::test]
async fn the_main_model_summarizes_when_the_weak_model_fails() {
    let server = MockServer::start().await;
    server.push_for_model(WEAK, Reply::model_not_found());
    server.push_for_model(MAIN, Reply::text("I asked you to fix the lexer."));
    let history = conversation(10);
    let summary = summarizer(&server, None)
        .summarize(&history, 1024, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(summary.text, "I asked you to fix the lexer.");
    assert_eq!(summary.calls, 2);
    let requests = server.requests();
    let models: Vec<&str> = requests.iter().map(|r| r.model.as_str()).collect();
    assert_eq!(models, vec![WEAK, MAIN]);
    assert_eq!(
        requests[0].messages, requests[1].messages,
        "the same request"
    );
    assert_eq!(server.pending_replies(), 0);
}

#[tokio::test]
async fn when_every_model_fails_the_error_names_each() {
    let server = MockServer::start().await;
    server.push_for_model(WEAK, Reply::model_not_found());
    server.push_for_model(MAIN, Reply::invalid_api_key());
    let err = summarizer(&server, None)
        .summarize(&conversation(2), 1024, &CancellationToken::new())
        .await
        .unwrap_err();
    let SummaryError::Failed(why) = err else {
        panic!("{err:?}")
    };
    assert!(why.contains(WEAK) && why.contains(MAIN), "{why}");
}

#[tokio::test]
async fn a_head_larger_than_the_summarizer_window_is_summarized_in_chunks() {
    let server = MockServer::start().await;
    let partials = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&partials);
    server.set_responder(move |request| {
        if request.messages[0].text.contains("# PART") {
            Reply::text("I asked you to rewrite the whole tokenizer.")
        } else {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            Reply::text(format!("partial summary number {n}"))
        }
    });
    // One message alone is three times the 3000-token window.
    const LINES: usize = 1000;
    let mut history = conversation(20);
    let big: String = (0..LINES)
        .map(|k| format!("line-{k:04} of the generated table\n"))
        .collect();
    history[7].content = format!("{}\n{big}", tag(7));
    let window = 3000;
    let budget = 1024;
    let c = counter();
    assert!(c.count(&history[7].content) > 3 * window);

    let summary = summarizer(&server, Some(window))
        .summarize(&history, budget, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(summary.text, "I asked you to rewrite the whole tokenizer.");
    assert_eq!(summary.anchor, history.len());

    let requests = server.requests();
    let (merges, chunks): (Vec<_>, Vec<_>) = requests
        .iter()
        .partition(|r| r.messages[0].text.contains("# PART"));
    assert_eq!(merges.len(), 1);
    assert!(chunks.len() >= 5, "{} chunks", chunks.len());
    assert_eq!(summary.calls, requests.len());
    let cap = history::summary_cap(budget);
    for r in &requests {
        assert_eq!(r.model, WEAK);
        assert!(
            r.prompt_tokens + cap <= window,
            "a request of {} tokens + {cap} for the reply does not fit {window}",
            r.prompt_tokens
        );
    }
    // Nothing was dropped: every message and every line of the big one was sent.
    let sent: String = chunks.iter().map(|r| r.messages[1].text.as_str()).collect();
    for i in 0..history.len() {
        assert!(sent.contains(&tag(i)), "message {i} was dropped");
    }
    for k in 0..LINES {
        assert!(
            sent.contains(&format!("line-{k:04}")),
            "line {k} was dropped"
        );
    }
    assert!(sent.contains("# ASSISTANT (continued)\n"));
    // The merge saw every partial summary, in order.
    let merge = &merges[0].messages[1].text;
    let mut at = 0;
    for part in 1..=chunks.len() {
        let header = format!("# PART {part}\n");
        let found = merge
            .get(at..)
            .unwrap_or_default()
            .find(&header)
            .expect("parts in order");
        at += found + header.len();
    }
    for n in 0..chunks.len() {
        assert!(merge.contains(&format!("partial summary number {n}\n")));
    }
}

#[tokio::test]
async fn summaries_that_stay_too_long_end_with_everything_summarized() {
    let server = MockServer::start().await;
    // Every summary alone is over the budget.
    let long = "I asked you about src/parse.rs and many other things. ".repeat(60);
    server.set_responder(move |_| Reply::text(long.clone()));
    let history = conversation(40);
    let budget = 400;
    let summary = summarizer(&server, None)
        .fit(&history, budget, false, &CancellationToken::new())
        .await
        .unwrap()
        .unwrap();
    // The first round keeps a tail; summary + tail is still over, and the next round's
    // split keeps the same tail, so it summarizes everything (as aider's does).
    assert_eq!(summary.calls, 2);
    assert!(summary.calls <= history::MAX_DEPTH);
    assert_eq!(summary.anchor, history.len());
    let requests = server.requests();
    let first = &requests[0].messages[1].text;
    let second = &requests[1].messages[1].text;
    assert!(!first.contains(&tag(history.len() - 1)));
    assert!(second.starts_with(&format!("# USER\n{SUMMARY_PREFIX}")));
    assert!(second.contains(&tag(history.len() - 1)));
}

#[tokio::test]
async fn a_summary_can_be_cancelled() {
    let server = MockServer::start().await;
    server.push_for_model(WEAK, Reply::text("partial").then_hang());
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let err = summarizer(&server, None)
        .summarize(&conversation(3), 1024, &cancel)
        .await
        .unwrap_err();
    assert_eq!(err, SummaryError::Cancelled);
    assert_eq!(server.request_count(), 1, "the main model is not tried");
}

/// A server whose context is smaller than the summarizer was told (llama.cpp's
/// `n_ctx` 1024 for a model configured with 8192) refuses the first chunk; the summary
/// is made again in chunks that fit what the server said, never given up.
#[tokio::test]
async fn a_summary_the_server_refuses_as_too_long_is_made_again_smaller() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 1024 }).await;
    server.set_responder(|_| Reply::text("I asked you to refactor the parser."));
    let model = ModelInfo::lookup("smollm2-summary");
    let summarizer = Summarizer::new(
        client(&server),
        vec![SummaryModel::new(model.clone(), Some(8192), None)],
        model.token_counter(),
    );
    let history = conversation(40);
    let summary = summarizer
        .summarize(&history, 2048, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(summary.text, "I asked you to refactor the parser.");
    let requests = server.requests();
    let (refused, made): (Vec<_>, Vec<_>) = requests.iter().partition(|r| r.prompt_tokens >= 1024);
    assert!(!refused.is_empty(), "the first try was too long");
    assert!(made.len() > 1, "then smaller chunks: {}", requests.len());
    // Every message of the history reached the summarizer after all.
    let sent: String = made.iter().map(|r| r.messages[1].text.as_str()).collect();
    for i in 0..history.len() {
        assert!(sent.contains(&tag(i)), "message {i} was dropped");
    }
}

/// A summary in several chunks goes to the server one request at a time: a local
/// server often has one slot, and a second request would only queue there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_requests_go_to_a_server_one_at_a_time() {
    let server = MockServer::start().await;
    server.set_responder(|_| {
        Reply::text("I asked you about the parser.").with_start_delay(Duration::from_millis(100))
    });
    let history = conversation(40);
    let summary = summarizer(&server, Some(1500))
        .summarize(&history, 1024, &CancellationToken::new())
        .await
        .unwrap();
    let mut requests = server.requests();
    assert!(requests.len() >= 3, "{} requests", requests.len());
    assert_eq!(summary.calls, requests.len());
    requests.sort_by_key(|r| r.arrived_at);
    for pair in requests.windows(2) {
        assert!(
            pair[1].arrived_at >= pair[0].finished_at.unwrap(),
            "two summary requests at once"
        );
    }
}
