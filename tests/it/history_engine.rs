//! The engine's history handling, driven through its Ops and Events against the
//! loopback server: the double buffer's background checkpoint, swap, wait and fallback,
//! overflow prevention, recovery from context_length_exceeded, and `/compact`.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::history_support::{
    Chat, as_files, as_sent, failure, is_summary, mapped_repo, notices, sent_history, turn_of,
};
use crate::support::{MockServer, RecordedRequest, Reply, TempRepo};
use tern::config::{ApiKey, Settings};
use tern::context::history::{self, SUMMARY_PREFIX};
use tern::context::{HistoryPhase, Section};
use tern::engine::{Event, Op};
use tern::llm::{Message, ModelInfo};
use tern::tokens::TokenCounter;

const WEAK: &str = "gpt-4o-mini";
const MAIN: &str = "gpt-4o";
pub(crate) const BUDGET: usize = 1000;
pub(crate) const RECAP: &str = "I asked you to keep going with the parser work in src/parse.rs.";

pub(crate) fn user_text(turn: usize) -> String {
    format!(
        "turn {turn}: {}",
        "please keep going with the parser work ".repeat(6)
    )
}

fn reply_text(turn: usize) -> String {
    format!(
        "reply to turn {turn}: {}",
        "the parser now handles that case well ".repeat(6)
    )
}

fn conversations(server: &MockServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect()
}

pub(crate) fn summaries(server: &MockServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(is_summary).collect()
}

fn counter() -> TokenCounter {
    ModelInfo::lookup(MAIN).token_counter()
}

/// The history after `turns` turns with nothing summarized.
fn plain_history(turns: std::ops::RangeInclusive<usize>) -> Vec<Message> {
    turns
        .flat_map(|t| {
            [
                Message::user(user_text(t)),
                Message::assistant(reply_text(t)),
            ]
        })
        .collect()
}

/// The first turn after which the plain history holds at least `mark` tokens.
pub(crate) fn turn_reaching(mark: usize) -> usize {
    (1..)
        .find(|&t| history::tokens(&plain_history(1..=t), &counter()) >= mark)
        .unwrap()
}

/// Conversation requests get the scripted reply of their turn; summary requests get
/// `summary(n)` for the n-th summary request (0-based).
pub(crate) fn script(
    server: &MockServer,
    summary: impl Fn(usize) -> Reply + Send + Sync + 'static,
) {
    let count = AtomicUsize::new(0);
    server.set_responder(move |r| {
        if is_summary(r) {
            summary(count.fetch_add(1, Ordering::SeqCst))
        } else {
            Reply::text(reply_text(turn_of(r)))
        }
    });
}

pub(crate) fn settings(server: &MockServer) -> Settings {
    Settings {
        api_base: server.base_url(),
        api_key: Some(ApiKey::new("sk-test")),
        model: MAIN.into(),
        weak_model: WEAK.into(),
        max_chat_history_tokens: Some(BUDGET),
        retry_budget_secs: 2,
        ..Settings::default()
    }
}

/// Turns `turns`, each expected to succeed.
async fn turns(chat: &mut Chat, turns: std::ops::RangeInclusive<usize>) {
    for t in turns {
        let events = chat.say(user_text(t)).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {events:#?}"
        );
    }
}

fn phases(chat: &Chat) -> Vec<HistoryPhase> {
    chat.events
        .iter()
        .filter_map(|e| match e {
            Event::History(status) => Some(status.phase),
            _ => None,
        })
        .collect()
}

/// Whether a conversation request carries a summary of the history.
fn has_summary(request: &RecordedRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| m.role == "user" && m.text.starts_with(SUMMARY_PREFIX))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpoint_runs_in_the_background_without_delaying_the_conversation() {
    let server = MockServer::start().await;
    script(&server, |_| {
        Reply::text(RECAP).with_start_delay(Duration::from_millis(1500))
    });
    let checkpoint = turn_reaching(BUDGET * 60 / 100);
    let swap = turn_reaching(BUDGET * 85 / 100);
    assert!(swap >= checkpoint + 2, "turns go on between the marks");
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=swap - 1).await;
    chat.until(|e| matches!(e, Event::History(s) if s.phase == HistoryPhase::Ready))
        .await;

    let convo = conversations(&server);
    let summary = &summaries(&server)[0];
    assert_eq!(summaries(&server).len(), 1);
    assert_eq!(summary.model, WEAK);
    // The checkpoint snapshot is the whole history at the 60% mark.
    let transcript = &summary.messages[1].text;
    assert!(transcript.contains(&user_text(checkpoint)));
    assert!(!transcript.contains(&user_text(checkpoint + 1)));
    assert!(summary.arrived_at >= convo[checkpoint - 1].finished_at.unwrap());
    // The turns after it were sent while the summary was still being written.
    let summary_end = summary.finished_at.unwrap();
    for request in &convo[checkpoint..] {
        assert!(
            request.arrived_at < summary_end,
            "turn {} waited for the summary",
            turn_of(request)
        );
    }
    assert!(
        !notices(&chat.events)
            .iter()
            .any(|n| n.contains("waiting for the history summary"))
    );
    assert!(phases(&chat).contains(&HistoryPhase::Checkpointing));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_keeps_every_message_after_the_anchor_verbatim() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let checkpoint = turn_reaching(BUDGET * 60 / 100);
    let swap = turn_reaching(BUDGET * 85 / 100);
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=swap + 1).await;

    let summarized = chat
        .events
        .iter()
        .find_map(|e| match e {
            Event::Summarized {
                replaced_messages,
                replaced_tokens,
                summary_tokens,
            } => Some((*replaced_messages, *replaced_tokens, *summary_tokens)),
            _ => None,
        })
        .expect("a summary was swapped in");
    let c = counter();
    let replaced = plain_history(1..=checkpoint);
    assert_eq!(
        summarized,
        (
            replaced.len(),
            history::tokens(&replaced, &c),
            history::tokens(&history::summary_messages(RECAP), &c)
        )
    );
    let after_swap = conversations(&server).pop().unwrap();
    assert_eq!(turn_of(&after_swap), swap + 1);
    let mut expected = history::summary_messages(RECAP).to_vec();
    expected.extend(plain_history(checkpoint + 1..=swap));
    assert_eq!(sent_history(&after_swap), as_sent(&expected));
    assert!(has_summary(&after_swap));
    let phases = phases(&chat);
    for phase in [
        HistoryPhase::Checkpointing,
        HistoryPhase::Ready,
        HistoryPhase::Swapped,
    ] {
        assert!(phases.contains(&phase), "{phase:?} missing from {phases:?}");
    }
}

/// A chat that has just reached the swap mark while its checkpoint (answered after two
/// seconds) still runs; the number of its last turn.
async fn at_the_swap_mark_with_a_slow_summary() -> (MockServer, Chat, usize) {
    let server = MockServer::start().await;
    script(&server, |_| {
        Reply::text(RECAP).with_start_delay(Duration::from_secs(2))
    });
    let swap = turn_reaching(BUDGET * 85 / 100);
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=swap).await;
    (server, chat, swap)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_that_comes_before_the_summary_waits_for_it_visibly() {
    let (server, mut chat, swap) = at_the_swap_mark_with_a_slow_summary().await;
    let events = chat.say(user_text(swap + 1)).await;
    assert!(matches!(events.last(), Some(Event::TurnFinished { .. })));
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("waiting for the history summary")),
        "{events:#?}"
    );
    let summary = summaries(&server).remove(0);
    let waited = conversations(&server).pop().unwrap();
    assert_eq!(turn_of(&waited), swap + 1);
    assert!(waited.arrived_at >= summary.finished_at.unwrap());
    assert!(has_summary(&waited));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_a_summary_can_be_cancelled_and_the_message_comes_back() {
    let (server, mut chat, swap) = at_the_swap_mark_with_a_slow_summary().await;
    let text = user_text(swap + 1);
    chat.send(Op::Submit { text: text.clone() });
    chat.until(
        |e| matches!(e, Event::Notice { text } if text.contains("waiting for the history summary")),
    )
    .await;
    chat.send(Op::Cancel);
    let events = chat.until(|e| matches!(e, Event::TurnFailed { .. })).await;
    let (error, message) = failure(&events).unwrap();
    assert!(error.contains("cancelled"), "{error}");
    assert_eq!(message, text);
    assert_eq!(conversations(&server).len(), swap, "nothing was sent");
    // The background summary went on; once it lands the message goes through with it.
    chat.until(|e| matches!(e, Event::Summarized { .. })).await;
    let events = chat.say(text).await;
    assert!(matches!(events.last(), Some(Event::TurnFinished { .. })));
    let sent = conversations(&server).pop().unwrap();
    assert!(has_summary(&sent));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_checkpoint_falls_back_to_the_classic_summarizer() {
    let server = MockServer::start().await;
    // The checkpoint's requests (weak, then main) fail; later ones succeed.
    script(&server, |n| {
        if n < 2 {
            Reply::http_error(
                400,
                serde_json::json!({"error": {"message": "bad summary"}}),
            )
        } else {
            Reply::text(RECAP)
        }
    });
    let checkpoint = turn_reaching(BUDGET * 60 / 100);
    let swap = turn_reaching(BUDGET * 85 / 100);
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=swap + 1).await;

    assert!(
        notices(&chat.events)
            .iter()
            .any(|n| n.contains("background history summary failed")),
    );
    let requests = summaries(&server);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(requests[0].model, WEAK);
    assert_eq!(requests[1].model, MAIN);
    let snapshot = &requests[0].messages[1].text;
    assert!(snapshot.contains(&user_text(checkpoint)));
    assert!(!snapshot.contains(&user_text(checkpoint + 1)));
    // The classic summarizer kept a tail under half the budget.
    let full = plain_history(1..=swap);
    let c = counter();
    let split = history::split_point(&full, &c, BUDGET).unwrap();
    let classic = &requests[2].messages[1].text;
    assert!(classic.contains(&user_text(split / 2)));
    assert!(!classic.contains(&user_text(split / 2 + 1)));
    let after = conversations(&server).pop().unwrap();
    assert_eq!(turn_of(&after), swap + 1);
    let mut expected = history::summary_messages(RECAP).to_vec();
    expected.extend_from_slice(&full[split..]);
    assert_eq!(sent_history(&after), as_sent(&expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crossing_both_marks_at_once_summarizes_before_the_next_request() {
    let server = MockServer::start().await;
    let long_reply = "the parser now handles that case well ".repeat(95);
    let long = long_reply.clone();
    let summaries_made = AtomicUsize::new(0);
    server.set_responder(move |r| {
        if is_summary(r) {
            summaries_made.fetch_add(1, Ordering::SeqCst);
            Reply::text(RECAP)
        } else if turn_of(r) == 3 {
            Reply::text(long.clone())
        } else {
            Reply::text(reply_text(turn_of(r)))
        }
    });
    let mut history = plain_history(1..=3);
    history[5].content = long_reply;
    let c = counter();
    let before = history::tokens(&history[..4], &c);
    let after = history::tokens(&history, &c);
    assert!(before < BUDGET * 60 / 100 && after >= BUDGET * 85 / 100);

    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=4).await;
    let requests = summaries(&server);
    assert_eq!(
        requests.len(),
        1,
        "no background checkpoint: one synchronous summary"
    );
    let next = conversations(&server).pop().unwrap();
    assert_eq!(turn_of(&next), 4);
    assert!(next.arrived_at >= requests[0].finished_at.unwrap());
    assert!(has_summary(&next));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_window_summarizes_the_history_first() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let file: String = (0..60)
        .map(|i| format!("fn helper_{i}(x: u32) -> u32 {{ x + {i} }}\n"))
        .collect();
    // The prompts and the file take ~1900 of the 3000 tokens a request may have; the
    // history budget is larger than what is left. The window is 4k or more, where the
    // system prompt keeps its long form (below, it shrinks before the history does).
    let settings = Settings {
        context_window: Some(4100),
        reserve_output: Some(1100),
        max_chat_history_tokens: Some(8000),
        ..settings(&server)
    };
    let mut chat = Chat::start(settings, &[("src/big.rs", &file)], &["src/big.rs"]);
    turns(&mut chat, 1..=16).await;
    let convo = conversations(&server);
    assert_eq!(convo.len(), 16);
    for r in &convo {
        assert!(r.prompt_tokens <= 3000, "{} tokens sent", r.prompt_tokens);
    }
    assert!(!summaries(&server).is_empty());
    assert!(
        notices(&chat.events)
            .iter()
            .any(|n| n.contains("over the limit")),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_cannot_fit_is_refused_naming_the_largest_file() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let huge: String = (0..400)
        .map(|i| format!("fn helper_{i}(x: u32) -> u32 {{ x + {i} }}\n"))
        .collect();
    let settings = Settings {
        context_window: Some(2000),
        ..settings(&server)
    };
    let mut chat = Chat::start(
        settings,
        &[("src/huge.rs", &huge), ("src/small.rs", "fn a() {}\n")],
        &["src/huge.rs", "src/small.rs"],
    );
    let text = "explain src/huge.rs".to_string();
    let events = chat.say(text.clone()).await;
    let (error, message) = failure(&events).unwrap();
    assert_eq!(message, text, "the message comes back");
    // The advice names what is big, largest first, with what to do about it.
    assert!(
        error.contains("largest first: src/huge.rs") && error.contains("(/drop src/huge.rs)"),
        "{error}"
    );
    let table = events.iter().find_map(|e| match e {
        Event::Output { title, text } if title.contains("does not fit") => Some(text),
        _ => None,
    });
    assert!(table.unwrap().contains("OVER the limit"));
    assert_eq!(server.request_count(), 0, "nothing too big is sent");
}

/// A server that refuses turn `turn` as too long `times` times and answers the rest,
/// and settings without the double buffer and with a large history budget, so that the
/// only summaries are those made to retry smaller.
fn refusing(server: &MockServer, turn: usize, times: usize) -> Settings {
    let refusals = AtomicUsize::new(0);
    server.set_responder(move |r| {
        if is_summary(r) {
            Reply::text(RECAP)
        } else if turn_of(r) == turn && refusals.fetch_add(1, Ordering::SeqCst) < times {
            Reply::context_length_exceeded(400)
        } else {
            Reply::text(reply_text(turn_of(r)))
        }
    });
    Settings {
        double_buffer: false,
        max_chat_history_tokens: Some(8000),
        ..settings(server)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_length_exceeded_twice_then_success_retries_smaller() {
    let server = MockServer::start().await;
    let mut chat = Chat::start(refusing(&server, 12, 2), &[], &[]);
    chat.ask_mode().await;
    turns(&mut chat, 1..=13).await;

    let tries: Vec<RecordedRequest> = conversations(&server)
        .into_iter()
        .filter(|r| turn_of(r) == 12)
        .collect();
    assert_eq!(tries.len(), 3);
    for pair in tries.windows(2) {
        assert!(
            pair[1].prompt_tokens <= pair[0].prompt_tokens * 3 / 4,
            "{} then {}",
            pair[0].prompt_tokens,
            pair[1].prompt_tokens
        );
    }
    assert_eq!(
        summaries(&server).len(),
        2,
        "the history was summarized each time"
    );
    let retries = notices(&chat.events)
        .into_iter()
        .filter(|n| n.contains("retrying with"))
        .count();
    assert_eq!(retries, 2);
    // What was learned holds for the next turn too.
    let next = conversations(&server).pop().unwrap();
    assert_eq!(turn_of(&next), 13);
    assert!(next.prompt_tokens <= tries[1].prompt_tokens * 3 / 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_refusing_stops_after_three_retries() {
    let server = MockServer::start().await;
    let mut chat = Chat::start(refusing(&server, 30, usize::MAX), &[], &[]);
    chat.ask_mode().await;
    turns(&mut chat, 1..=29).await;
    let text = user_text(30);
    let events = chat.say(text.clone()).await;
    let (error, message) = failure(&events).expect("a clear stop");
    assert_eq!(message, text);
    assert!(error.contains("after 3 smaller retries"), "{error}");
    let tries = conversations(&server)
        .into_iter()
        .filter(|r| turn_of(r) == 30)
        .count();
    assert_eq!(tries, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_summarizes_now_and_tokens_show_the_history() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=3).await;
    let (text, events) = chat.command("/compact", "compact").await;
    let (replaced, summary) = events
        .iter()
        .find_map(|e| match e {
            Event::Summarized {
                replaced_messages: 6,
                replaced_tokens,
                summary_tokens,
            } => Some((*replaced_tokens, *summary_tokens)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:#?}"));
    // It says the tokens it freed, as the event counts them.
    let thousands = tern::tokens::thousands;
    assert_eq!(
        text,
        format!(
            "replaced 6 messages ({} tokens) with a summary of {} tokens: {} tokens freed\n",
            thousands(replaced),
            thousands(summary),
            thousands(replaced - summary)
        )
    );
    assert_eq!(summaries(&server).len(), 1);
    turns(&mut chat, 4..=4).await;
    let next = conversations(&server).pop().unwrap();
    assert_eq!(
        sent_history(&next),
        as_sent(&history::summary_messages(RECAP))
    );

    let (text, _) = chat.command("/tokens", "tokens").await;
    assert!(text.contains("History "), "{text}");
    assert!(text.contains("phase swapped"), "{text}");
    assert!(text.contains("1 summaries made"), "{text}");
}

/// `/compact` says why it summarizes nothing: an empty history, a reply under way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_says_why_it_cannot_summarize_now() {
    let server = MockServer::start().await;
    server.set_responder(|r| {
        Reply::text(reply_text(turn_of(r))).with_start_delay(Duration::from_millis(1500))
    });
    let mut chat = Chat::start(settings(&server), &[], &[]);
    let (text, _) = chat.command("/compact", "compact").await;
    assert_eq!(text, "nothing to compact: the history is empty\n");
    chat.send(Op::Submit { text: user_text(1) });
    chat.until(|e| matches!(e, Event::Request { .. })).await;
    let (text, events) = chat.command("/compact", "compact").await;
    assert_eq!(
        text,
        "not now: a reply is under way; /compact when it is done\n"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Summarized { .. })));
    chat.until(|e| matches!(e, Event::TurnFinished { .. }))
        .await;
    assert!(server.requests().iter().all(|r| !is_summary(r)));
}

/// A summary no smaller than the history it would replace is not put in its place:
/// `/compact` keeps the history and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_keeps_a_history_its_summary_would_not_shrink() {
    let server = MockServer::start().await;
    let long = RECAP.repeat(40);
    script(&server, move |_| Reply::text(long.clone()));
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=1).await;
    let (text, events) = chat.command("/compact", "compact").await;
    assert!(
        text.starts_with("kept the history: the summary (")
            && text.contains("is no smaller than the 2 messages ("),
        "{text}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Summarized { .. })),
        "{events:?}"
    );
    turns(&mut chat, 2..=2).await;
    let next = conversations(&server).pop().unwrap();
    let sent = sent_history(&next);
    assert_eq!(sent.len(), 2, "the first turn, as it was: {sent:?}");
    assert_eq!(sent[0], ("user".to_string(), user_text(1)));
}

/// The weak model fails and the main model writes the summary: the fallback is said
/// with the weak model's failure, not silent.
#[tokio::test]
async fn a_summary_the_main_model_wrote_after_the_weak_one_failed_says_so() {
    let server = MockServer::start().await;
    script(&server, |n| match n {
        0 => Reply::http_error(
            400,
            serde_json::json!({"error": {"message": "weak is down"}}),
        ),
        _ => Reply::text(RECAP),
    });
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=3).await;
    let (_, events) = chat.command("/compact", "compact").await;
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&format!("summarizing: {WEAK}: "))
                && w.contains("weak is down")
                && w.ends_with("; the next model wrote the summary")),
        "{warnings:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Summarized { .. })),
        "{events:?}"
    );
}

/// Regress-4 #8: a summary request the server fails is retried, and each retry is
/// said, as a turn's are (they were silent).
#[tokio::test]
async fn a_summary_requests_retries_are_said() {
    let server = MockServer::start().await;
    script(&server, |n| match n {
        0 => Reply::http_error(
            500,
            serde_json::json!({"error": {"message": "summaries are down"}}),
        ),
        _ => Reply::text(RECAP),
    });
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=3).await;
    let (_, events) = chat.command("/compact", "compact").await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { text }
            if text.starts_with("summarizing: ") && text.contains("summaries are down") && text.contains("; retry 1 in "))),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Summarized { .. })),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_compact_during_a_checkpoint_supersedes_it_and_the_cycle_goes_on() {
    let server = MockServer::start().await;
    // The checkpoint is slow; the two requests of /compact's summary (weak, then main)
    // fail; the summaries after them work. Told apart by arrival time, not order.
    let compact_sent: Arc<Mutex<Option<Instant>>> = Arc::default();
    let sent = Arc::clone(&compact_sent);
    let failures = AtomicUsize::new(0);
    server.set_responder(move |r| {
        if !is_summary(r) {
            return Reply::text(reply_text(turn_of(r)));
        }
        let after_compact = sent.lock().unwrap().is_some_and(|at| r.arrived_at >= at);
        if !after_compact {
            Reply::text(RECAP).with_start_delay(Duration::from_secs(3))
        } else if failures.fetch_add(1, Ordering::SeqCst) < 2 {
            Reply::http_error(400, serde_json::json!({"error": {"message": "no"}}))
        } else {
            Reply::text(RECAP)
        }
    });
    let checkpoint = turn_reaching(BUDGET * 60 / 100);
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=checkpoint).await;
    server
        .wait_for_requests(checkpoint + 1, Duration::from_secs(10))
        .await;
    *compact_sent.lock().unwrap() = Some(Instant::now());
    let (text, events) = chat.command("/compact", "compact").await;
    assert!(text.contains("failed"), "{events:#?}");
    // The abandoned checkpoint does not stall the cycle: a new one starts and swaps.
    turns(&mut chat, checkpoint + 1..=checkpoint + 4).await;
    assert!(
        chat.events
            .iter()
            .any(|e| matches!(e, Event::Summarized { .. })),
        "no summary was swapped in after the failed /compact"
    );
    assert_eq!(summaries(&server).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_shrinks_the_repo_map_first() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    // A repository whose map fills its whole budget.
    let sources = mapped_repo(80);
    let files = as_files(&sources);
    let settings = Settings {
        context_window: Some(6000),
        reserve_output: Some(3000),
        ..settings(&server)
    };
    let mut chat = Chat::start(settings, &files, &[]);
    chat.ask_mode().await;
    let long = format!(
        "turn 1: {}",
        "please explain the inventory code ".repeat(170)
    );
    let events = chat.say(long).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{events:#?}"
    );
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("the repo map shrinks")),
        "{events:#?}"
    );
    // Nothing was summarized to make this request fit (a summary of the long turn may
    // start after it, in the background).
    let requests = server.requests();
    let first_turn = requests.iter().position(|r| !is_summary(r)).unwrap();
    assert!(
        !requests[..first_turn].iter().any(is_summary),
        "the history was not needed"
    );
    let sent = conversations(&server).pop().unwrap();
    assert!(
        sent.prompt_tokens <= 3000,
        "{} tokens sent",
        sent.prompt_tokens
    );
    assert!(
        sent.messages
            .iter()
            .any(|m| m.text.starts_with("Here is a map")),
        "a smaller map is still sent"
    );
    // Later requests get the whole map again (once the background refresh after the
    // turn is done).
    chat.until(|e| {
        matches!(e, Event::Budget(report) if report.map.as_ref().is_some_and(|m| m.budget == 1904))
    })
    .await;
}

/// Esc is final: a turn interrupted at the checkpoint mark starts no summary by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_turn_starts_no_summary() {
    let server = MockServer::start().await;
    let checkpoint = turn_reaching(BUDGET * 60 / 100);
    server.set_responder(move |r| {
        if is_summary(r) {
            Reply::text(RECAP)
        } else if turn_of(r) == checkpoint {
            Reply::text(reply_text(checkpoint)).then_hang()
        } else {
            Reply::text(reply_text(turn_of(r)))
        }
    });
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=checkpoint - 1).await;
    chat.send(Op::Submit {
        text: user_text(checkpoint),
    });
    let mut text = String::new();
    while text != reply_text(checkpoint) {
        if let Some(Event::Delta { text: t }) =
            chat.until(|e| matches!(e, Event::Delta { .. })).await.pop()
        {
            text.push_str(&t);
        }
    }
    chat.send(Op::Cancel);
    chat.until(|e| matches!(e, Event::Idle)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(summaries(&server).is_empty(), "a summary started after Esc");
}

/// A resumed history already over its budget is summarized before the next request
/// goes out, which then carries the summary instead of the whole history.
#[tokio::test]
async fn a_resumed_history_over_budget_is_summarized_before_the_next_request() {
    use tern::engine::persist::{SessionFile, Store};
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let repo = TempRepo::with_files(&[("a.txt", "a\n")]);
    let over = turn_reaching(BUDGET + 300);
    crate::support::plant_session(
        &Store::for_repo(repo.path()),
        SessionFile {
            model: MAIN.into(),
            mode: tern::engine::ChatMode::Ask,
            history: plain_history(1..=over),
            ..SessionFile::default()
        },
    );
    let mut chat = Chat::start_in(repo, settings(&server), &[], true);
    let events = chat.say(user_text(over + 1)).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{events:#?}"
    );
    assert_eq!(
        summaries(&server).len(),
        1,
        "summarized once, before sending"
    );
    let sent = conversations(&server);
    assert_eq!(sent.len(), 1);
    let texts: Vec<&str> = sent[0].messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        texts.iter().any(|t| t.starts_with(SUMMARY_PREFIX)),
        "{texts:#?}"
    );
    assert!(
        !texts.iter().any(|t| t.starts_with("turn 1:")),
        "the oldest turns are summarized, not sent: {texts:#?}"
    );
}

/// The budget the engine reports for `draft` once the map is built.
async fn measured(chat: &mut Chat, draft: &str) -> Box<tern::context::BudgetReport> {
    if !chat.events.iter().any(|e| matches!(e, Event::Map(_))) {
        chat.until(|e| matches!(e, Event::Map(_))).await;
    }
    chat.send(Op::Draft {
        text: draft.into(),
        mode: None,
    });
    let drafted = |e: &Event| matches!(e, Event::Budget(r) if r.section(Section::Cur) > 0);
    let events = chat.until(drafted).await;
    let Some(Event::Budget(report)) = events.last().cloned() else {
        unreachable!("until stops at a budget")
    };
    report
}

/// A request a little over its limit goes with a smaller repo map, however small the
/// map already is (it used to stop at 256 tokens and refuse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_map_gives_way_before_a_refusal() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let sources = mapped_repo(3);
    let files = as_files(&sources);
    let text = user_text(1);
    // The same map budget in both engines, whatever their windows.
    let settings = || Settings {
        map_tokens: Some(200),
        ..settings(&server)
    };
    // Ask mode: no few-shot examples in either engine (a small window drops them).
    let mut probe = Chat::start(settings(), &files, &[]);
    probe.ask_mode().await;
    let report = measured(&mut probe, &text).await;
    let map = report.map.as_ref().unwrap().tokens;
    assert!(map > 0 && map < 256, "a small map: {map}");
    // Five tokens over, with a map too small for the old floor to give anything.
    let limit = report.total - 5;
    // The reserve is at most half the window: this window's limit is `limit`.
    let tight = Settings {
        context_window: Some(2 * limit),
        reserve_output: Some(limit),
        ..settings()
    };
    let mut chat = Chat::start(tight, &files, &[]);
    chat.ask_mode().await;
    let events = chat.say(text).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("the repo map shrinks") || n.contains("without the repo map")),
        "{:?}",
        notices(&events)
    );
    assert!(conversations(&server)[0].prompt_tokens <= limit);
}

/// Making room may call for a summary smaller than 128 tokens: it is made (it used to
/// be skipped, and the request refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_of_under_128_tokens_makes_room() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text("I asked about the parser."));
    let loose = Settings {
        double_buffer: false,
        max_chat_history_tokens: Some(8000),
        ..settings(&server)
    };
    let mut chat = Chat::start(loose.clone(), &[], &[]);
    chat.ask_mode().await;
    turns(&mut chat, 1..=3).await;
    let text = user_text(4);
    let report = measured(&mut chat, &text).await;
    let history = report.section(Section::Done);
    // Over by all but 100 tokens of the history: the summary must fit in 100.
    let limit = report.total - (history - 100);
    let tight = Settings {
        context_window: Some(2 * limit),
        reserve_output: Some(limit),
        ..loose
    };
    let mut chat = chat.resume(tight).await;
    let events = chat.say(text).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let made = summaries(&server);
    assert!(!made.is_empty());
    assert!(
        made.iter().all(|r| r.max_tokens.unwrap() < 128),
        "{made:#?}"
    );
    assert!(has_summary(&conversations(&server).pop().unwrap()));
}

/// The session's spending as the next budget reports it.
async fn spent(chat: &mut Chat) -> f64 {
    chat.send(Op::Draft {
        text: "x".into(),
        mode: None,
    });
    let events = chat.until(|e| matches!(e, Event::Budget(_))).await;
    match events.last() {
        Some(Event::Budget(report)) => report.session_cost,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_summary_counts_toward_the_sessions_spending() {
    let server = MockServer::start().await;
    script(&server, |_| Reply::text(RECAP));
    let mut chat = Chat::start(settings(&server), &[], &[]);
    turns(&mut chat, 1..=3).await;
    let before = spent(&mut chat).await;
    chat.command("/compact", "compact").await;
    assert_eq!(summaries(&server).len(), 1);
    let after = spent(&mut chat).await;
    assert!(
        after > before,
        "{after} after {before}: the summary was free"
    );
}

/// `/clear` while a reply streams would not clear the turn under way (it joins the
/// history when it ends): it is refused, says so, and the history stays; once idle it
/// clears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_while_a_reply_streams_is_refused_and_says_so() {
    let server = MockServer::start().await;
    server.set_responder(|r| {
        Reply::text(reply_text(turn_of(r))).with_start_delay(Duration::from_millis(1500))
    });
    let mut chat = Chat::start(settings(&server), &[], &[]);
    chat.send(Op::Submit { text: user_text(1) });
    chat.until(|e| matches!(e, Event::Request { .. })).await;
    chat.send(crate::support::typed("/clear"));
    let events = chat.until(|e| matches!(e, Event::Error { .. })).await;
    let Some(Event::Error { text }) = events.last() else {
        unreachable!("until stops at the error")
    };
    assert!(
        text.starts_with("/clear: not now, the history stays: a reply is still streaming"),
        "{text}"
    );
    assert!(
        !notices(&events).contains(&"history cleared"),
        "{events:#?}"
    );
    chat.until(|e| matches!(e, Event::TurnFinished { .. }))
        .await;
    chat.say(user_text(2)).await;
    let sent = sent_history(server.requests().last().unwrap());
    assert!(
        sent.iter().any(|(_, text)| text.contains(&user_text(1))),
        "{sent:?}"
    );
    chat.send(crate::support::typed("/clear"));
    let events = chat
        .until(|e| matches!(e, Event::Notice { text } if text == "history cleared"))
        .await;
    assert!(!events.iter().any(|e| matches!(e, Event::Error { .. })));
    chat.say(user_text(3)).await;
    let sent = sent_history(server.requests().last().unwrap());
    assert!(
        !sent.iter().any(|(_, text)| text.contains(&user_text(1))),
        "{sent:?}"
    );
}
