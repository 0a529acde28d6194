//! Local models as first-class: the engine against the loopback server playing
//! llama.cpp, llama-cpp-python, vLLM and Ollama (`support::Dialect`): counts that match
//! the server's, small windows that work, and context overflows that never strand a
//! session.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::history_support::{
    Chat, as_files, assert_finished, failure, is_summary, mapped_repo, notices,
};
use crate::support::{Dialect, MockServer, RecordedRequest, Reply, TempRepo};
use tern::config::{ApiKey, Settings};
use tern::engine::protocol::{Counting, RequestKind, WindowSource};
use tern::engine::{Event, FileMode, Op};
use tern::tokens::{Encoding, TokenCounter};

const PROSE: &str = "# Bookshelf\n\nBookshelf keeps track of the books you own, the ones you lent to friends and the ones you still want to read. It runs in a terminal, stores everything in a plain text file next to your notes, and never talks to the network. Each book has a title, an author, the shelf it lives on and an optional note about where it came from.\n\nTo lend a book, name it and the friend who borrows it; bookshelf remembers the day and reminds you after a month. When the book comes back, mark it returned and the reminder goes away. Wish lists work the same way: add a title you want, and bookshelf tells you when a friend lends you a copy.\n";

/// Code that is mostly numbers: where tokenizers that split digits one by one count
/// far more than OpenAI's.
fn digits() -> String {
    let rows: String = (0..60)
        .map(|i| {
            format!(
                "    ({}, {}, {}, {}),\n",
                1_000_003 * i % 99_991,
                31_415_926 + i * 271,
                i * i * 1_337,
                2_718_281 - i * 17
            )
        })
        .collect();
    format!("pub const CALIBRATION: [(u32, u32, u32, u32); 60] = [\n{rows}];\n")
}

fn reply(turn: usize) -> String {
    format!(
        "reply {turn}: the shelf code reads the notes file line by line, splits each line at the tabs and keeps the books in the order they were added. Lending marks the book with the friend's name and the date."
    )
}

const RECAP: &str = "I asked about the shelf code and how lending works.";

/// Conversation requests get their turn's reply, summaries the recap.
fn serve_with_summaries(server: &MockServer) {
    serve_with_slow_summaries(server, std::time::Duration::ZERO);
}

/// `serve_with_summaries`, each summary taking the server `delay` to start.
fn serve_with_slow_summaries(server: &MockServer, delay: std::time::Duration) {
    server.set_responder(move |r| {
        if is_summary(r) {
            Reply::text(RECAP).with_start_delay(delay)
        } else {
            Reply::text(reply(crate::history_support::turn_of(r)))
        }
    });
}

pub(crate) fn settings(server: &MockServer, model: &str) -> Settings {
    Settings {
        api_base: server.base_url(),
        api_key: Some(ApiKey::new("sk-test")),
        model: model.into(),
        weak_model: model.into(),
        retry_budget_secs: 2,
        ..Settings::default()
    }
}

/// Conversation requests (not summaries) the server received, in order.
fn conversations(server: &MockServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect()
}

/// The prompt tokens tern predicted for each turn request, in order.
fn predictions(events: &[Event]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Request {
                purpose: RequestKind::Turn,
                predicted_prompt_tokens,
                ..
            } => *predicted_prompt_tokens,
            _ => None,
        })
        .collect()
}

fn relative_error(predicted: usize, reported: usize) -> f64 {
    predicted.abs_diff(reported) as f64 / reported as f64
}

/// What tern predicted before it knew local servers: o200k_base and OpenAI's framing.
fn o200k_prediction(request: &RecordedRequest) -> usize {
    TokenCounter::new(Encoding::O200kBase, false)
        .count_request(request.messages.iter().map(|m| m.text.as_str()))
}

/// A session of requests that differ in kind: a first one, prose, digit-heavy code,
/// and a long history. Returns the kind of each turn's request.
async fn varied_session(chat: &mut Chat) -> Vec<&'static str> {
    let mut kinds = vec![];
    let mut say = async |chat: &mut Chat, kind, text: String| {
        let events = chat.say(text).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "{events:#?}"
        );
        kinds.push(kind);
    };
    say(chat, "first", "turn 1: hello".into()).await;
    chat.send(Op::AddFiles {
        paths: vec!["README.md".into()],
        mode: FileMode::ReadOnly,
    });
    say(chat, "prose", "turn 2: what is bookshelf for?".into()).await;
    chat.send(Op::AddFiles {
        paths: vec!["src/tables.rs".into()],
        mode: FileMode::Editable,
    });
    say(chat, "digits", "turn 3: what are these numbers?".into()).await;
    chat.send(Op::DropFile {
        path: "src/tables.rs".into(),
    });
    chat.send(Op::DropFile {
        path: "README.md".into(),
    });
    for t in 4..=24 {
        let text = format!("turn {t}: and how does lending work when {t} friends ask?");
        say(chat, "history", text).await;
    }
    kinds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_counts_keep_every_prediction_within_two_percent() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 32_768 }).await;
    serve_with_summaries(&server);
    let settings = Settings {
        context_window: Some(32_768),
        max_chat_history_tokens: Some(20_000),
        ..settings(&server, "smollm2-server-counts")
    };
    let files = [("README.md", PROSE), ("src/tables.rs", &digits())];
    let mut chat = Chat::start(settings, &files, &[]);
    let kinds = varied_session(&mut chat).await;
    let requests = conversations(&server);
    let predicted = predictions(&chat.events);
    assert_eq!(predicted.len(), requests.len());
    for (i, (p, r)) in predicted.iter().zip(&requests).enumerate() {
        let error = relative_error(*p, r.prompt_tokens);
        let before = relative_error(o200k_prediction(r), r.prompt_tokens);
        eprintln!(
            "{:>8}: predicted {p:>5}, server {:>5}: {:.2}% (o200k alone: {:.1}%)",
            kinds[i],
            r.prompt_tokens,
            100.0 * error,
            100.0 * before
        );
        if i > 0 {
            assert!(error <= 0.02, "{}: {p} for {}", kinds[i], r.prompt_tokens);
        }
    }
    assert!(!server.tokenized().is_empty(), "the server counted");
    let counting = chat.events.iter().rev().find_map(|e| match e {
        Event::Budget(report) => Some(report.counting),
        _ => None,
    });
    assert_eq!(counting, Some(Counting::Server));
}

/// The last budget report's way of counting.
fn last_counting(events: &[Event]) -> Option<Counting> {
    events.iter().rev().find_map(|e| match e {
        Event::Budget(report) => Some(report.counting),
        _ => None,
    })
}

/// Without a tokenize endpoint (Ollama), counts are tern's scaled to the server's
/// reports: by one rate for text and one for digits, which tokenizers count most
/// differently. Each kind of request is within 2% once a request with enough of it was
/// reported (the first digit-heavy one cannot be), and what was learned is there for
/// the next session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibrated_counts_learn_from_usage_and_are_remembered() {
    let server = MockServer::start_as(Dialect::Ollama).await;
    serve_with_summaries(&server);
    let model = "smollm2-calibrated";
    let settings = Settings {
        context_window: Some(32_768),
        max_chat_history_tokens: Some(20_000),
        ..settings(&server, model)
    };
    let files = [("README.md", PROSE), ("src/tables.rs", &digits())];
    let mut chat = Chat::start(settings.clone(), &files, &[]);
    let kinds = varied_session(&mut chat).await;
    let requests = conversations(&server);
    let predicted = predictions(&chat.events);
    assert_eq!(predicted.len(), requests.len());
    for (i, (p, r)) in predicted.iter().zip(&requests).enumerate() {
        let error = relative_error(*p, r.prompt_tokens);
        eprintln!(
            "{:>8}: predicted {p:>5}, server {:>5}: {:.2}%",
            kinds[i],
            r.prompt_tokens,
            100.0 * error
        );
        let allowed = match kinds[i] {
            // Nothing learned yet: tern's count alone.
            "first" => 0.25,
            // One report of a request of another kind.
            "prose" => 0.03,
            // The first request with many digits.
            "digits" => 0.10,
            _ => 0.02,
        };
        assert!(
            error <= allowed,
            "{}: {p} for {}",
            kinds[i],
            r.prompt_tokens
        );
    }
    assert!(
        server.tokenized().is_empty(),
        "Ollama has no tokenize endpoint"
    );
    assert!(matches!(
        last_counting(&chat.events),
        Some(Counting::Calibrated {
            error_percent: Some(e)
        }) if e <= 2.0
    ));

    // The next session starts calibrated: its first prediction is off by a few percent
    // (a request of its own kind), not the 19% of tern's count alone.
    let mut next = Chat::start(settings, &files, &[]);
    let first = next.until(|e| matches!(e, Event::Budget(_))).await.pop();
    assert!(
        matches!(first, Some(Event::Budget(report)) if report.counting != Counting::Uncalibrated)
    );
    next.say("turn 1: hello again".into()).await;
    let request = conversations(&server).pop().unwrap();
    let predicted = *predictions(&next.events).last().unwrap();
    let error = relative_error(predicted, request.prompt_tokens);
    assert!(error <= 0.05, "{predicted} for {}", request.prompt_tokens);
}

const SHELF: &str = "\"\"\"The shelf: books, where they are, and who has them.\"\"\"\n\nfrom dataclasses import dataclass, field\n\n\n@dataclass\nclass Book:\n    title: str\n    author: str\n    shelf: str\n    lent_to: str | None = None\n\n\n@dataclass\nclass Shelf:\n    books: list[Book] = field(default_factory=list)\n\n    def add_book(self, title: str, author: str, shelf: str) -> Book:\n        book = Book(title, author, shelf)\n        self.books.append(book)\n        return book\n\n    def lend(self, title: str, friend: str) -> None:\n        for book in self.books:\n            if book.title == title:\n                book.lent_to = friend\n                return\n        raise KeyError(title)\n\n    def returned(self, title: str) -> None:\n        for book in self.books:\n            if book.title == title:\n                book.lent_to = None\n";

/// A 2048-token window (llama.cpp's `-c 2048`): a question about one file goes as it
/// comes, and twenty turns later nothing was ever refused or sent over the context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2048_window_takes_a_one_file_question_and_a_20_turn_session() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    serve_with_summaries(&server);
    let settings = Settings {
        context_window: Some(2048),
        ..settings(&server, "smollm2-2k")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &["shelf.py"]);
    let events = chat.say("turn 1: what does add_book do?".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{events:#?}"
    );
    assert!(
        !notices(&events)
            .iter()
            .any(|n| n.contains("over the limit")),
        "the first question fits as it comes: {:?}",
        notices(&events)
    );
    assert!(
        notices(&chat.events)
            .iter()
            .any(|n| n.contains("using the 2048-token window of --context-window")),
        "{:?}",
        notices(&chat.events)
    );
    for t in 2..=20 {
        let text = format!("turn {t}: and when a friend keeps book number {t} for a month?");
        let events = chat.say(text).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
    }
    let requests = server.requests();
    assert!(
        requests.iter().any(is_summary),
        "the history was summarized"
    );
    for r in &requests {
        assert!(r.prompt_tokens < 2048, "{} tokens sent", r.prompt_tokens);
        let room = r.max_tokens.unwrap() as usize;
        assert!(
            r.prompt_tokens + room <= 2048,
            "{} + {room}",
            r.prompt_tokens
        );
    }
    assert_eq!(conversations(&server).len(), 20, "one request per turn");
}

/// `max_tokens` is the model's output limit, or what the window leaves after the
/// prompt when that is less; reasoning models get it as `max_completion_tokens`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_reserve_is_sent_as_max_tokens() {
    let server = MockServer::start().await;
    server.set_responder(|_| Reply::text("ok"));
    let mut chat = Chat::start(settings(&server, "gpt-4o"), &[], &[]);
    chat.say("hello".into()).await;
    chat.send(crate::support::typed("/model o3"));
    chat.say("hello".into()).await;
    let requests = server.requests();
    assert_eq!(
        (requests[0].max_tokens, requests[0].max_completion_tokens),
        (Some(16_384), None)
    );
    assert_eq!(
        (requests[1].max_tokens, requests[1].max_completion_tokens),
        (None, Some(100_000))
    );

    let settings = Settings {
        context_window: Some(4096),
        ..settings(&server, "smollm2-reserve")
    };
    let mut chat = Chat::start(settings, &[], &[]);
    chat.say("hello".into()).await;
    let predicted = *predictions(&chat.events).last().unwrap();
    let request = server.requests().pop().unwrap();
    // Nothing is known about this model's tokenizer yet: a quarter more, to be safe.
    let margin = Counting::Uncalibrated.margin(predicted);
    assert_eq!(request.max_tokens, Some((4096 - predicted - margin) as u64));
}

/// The gauge's "reserved output" is the `max_tokens` the request sends (the room the
/// window leaves after the prompt, at most 4,096 for a model tern does not know), not
/// the window's reserve (it showed 512 at 2,048 while 552-643 were sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gauge_shows_the_max_tokens_sent() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    server.set_responder(|_| Reply::text("ok"));
    let settings = Settings {
        context_window: Some(2048),
        ..settings(&server, "gaugetest-gauge")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &["shelf.py"]);
    chat.ask_mode().await;
    let events = chat.say("what does lend do?".into()).await;
    assert_finished(&events);
    let shown = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Budget(report) => Some(report.reserved_output),
            _ => None,
        })
        .unwrap();
    let sent = server.requests().pop().unwrap().max_tokens.unwrap() as usize;
    assert!(sent > 512, "the room after the prompt: {sent}");
    assert_eq!(shown, sent);

    let unknown = MockServer::start().await;
    unknown.set_responder(|_| Reply::text("ok"));
    let mut chat = Chat::start(settings_for(&unknown, "gaugetest-big"), &[], &[]);
    chat.say("hello".into()).await;
    let request = unknown.requests().pop().unwrap();
    assert_eq!(
        request.max_tokens,
        Some(4096),
        "capped for an unknown model"
    );
}

fn settings_for(server: &MockServer, model: &str) -> Settings {
    Settings {
        context_window: Some(65_536),
        ..settings(server, model)
    }
}

/// Code mode at a 2,048-token window: a question about a 3 KB file was refused before
/// sending (1,727 > 1,536, tern's own part 628). Below 4k the fixed part shrinks first
/// (the short system prompt, as the map and the examples do), and the request is sent;
/// one still too big is refused naming what tern cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_below_4k_shrinks_its_own_part_before_refusing() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    server.set_responder(|_| Reply::text("It keeps the books."));
    let file: String = (0..36)
        .map(|i| {
            format!("def shelf_{i}(books):\n    return [b for b in books if b.shelf == {i}]\n")
        })
        .collect();
    assert!((2400..3400).contains(&file.len()), "{}", file.len());
    let settings = Settings {
        context_window: Some(2048),
        ..settings(&server, "tinyllm-code")
    };
    let mut chat = Chat::start(settings, &[("shelves.py", &file)], &["shelves.py"]);
    let events = chat
        .say("which function finds the books on shelf 7?".into())
        .await;
    assert_finished(&events);
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("the short system prompt")),
        "{:?}",
        notices(&events)
    );
    let sent = server.requests().pop().unwrap();
    let short = include_str!("../../assets/prompts/editblock-short.md").trim();
    assert_eq!(sent.messages[0].text, short);

    let bigger: String = file.repeat(2);
    std::fs::write(chat.repo.path().join("shelves.py"), &bigger).unwrap();
    let events = chat
        .say("and which finds the books on shelf 9?".into())
        .await;
    let (error, _) = failure(&events).expect("refused");
    assert!(
        error.contains("tern's own part was cut first") && error.contains("short system prompt"),
        "{error}"
    );
}

/// An OpenAI-style "context length exceeded" is retried, and the server really gets a
/// smaller request: the repo map shrinks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_error_is_retried_with_a_smaller_request() {
    let server = MockServer::start().await;
    server.push(Reply::context_length_exceeded(1000));
    server.push(Reply::text("It is in pkg."));
    let files = mapped_repo(20);
    let mut chat = Chat::start(settings(&server, "gpt-4o"), &as_files(&files), &[]);
    let events = chat.say("where is the inventory code?".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { reply, .. }) if reply == "It is in pkg."),
        "{events:#?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].prompt_tokens <= requests[0].prompt_tokens * 3 / 4,
        "{} then {}",
        requests[0].prompt_tokens,
        requests[1].prompt_tokens
    );
    assert!(
        notices(&events).iter().any(|n| n.contains("retrying with")),
        "{:?}",
        notices(&events)
    );
    // What was learned holds for the resumed session too.
    let limit = |events: &[Event]| {
        events.iter().rev().find_map(|e| match e {
            Event::Budget(r) => Some(r.prompt_limit),
            _ => None,
        })
    };
    let learned = limit(&chat.events).unwrap();
    assert_eq!(learned, requests[0].prompt_tokens * 3 / 4);
    let mut resumed = chat.resume(settings(&server, "gpt-4o")).await;
    let events = resumed.until(|e| matches!(e, Event::Budget(_))).await;
    assert_eq!(limit(&events), Some(learned));
}

/// vLLM counts with `/tokenize` and refuses prompt + `max_tokens` over its window:
/// the reply's reserve keeps clear of that, turn after turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_counts_exactly_and_never_refuses_the_reserve() {
    let server = MockServer::start_as(Dialect::Vllm {
        max_model_len: 4096,
    })
    .await;
    serve_with_summaries(&server);
    let settings = Settings {
        context_window: Some(4096),
        ..settings(&server, "smollm2-vllm")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &["shelf.py"]);
    for t in 1..=8 {
        let events = chat
            .say(format!(
                "turn {t}: what happens to book {t} when it is lent?"
            ))
            .await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
    }
    assert_eq!(conversations(&server).len(), 8, "none was refused");
    for r in server.requests() {
        assert!(r.prompt_tokens + r.max_tokens.unwrap() as usize <= 4096);
    }
    assert_eq!(last_counting(&chat.events), Some(Counting::Server));
}

/// llama.cpp says its context (`n_ctx`) when it refuses a prompt: that becomes the
/// session's window (and the resumed session's), and the retry fits it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_s_n_ctx_becomes_the_window_and_survives_resume() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 4096 }).await;
    serve_with_summaries(&server);
    let settings = settings(&server, "smollm2-n-ctx");
    let files = mapped_repo(80);
    let mut chat = Chat::start(settings.clone(), &as_files(&files), &[]);
    let events = chat
        .say("turn 1: where is the inventory code?".into())
        .await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let requests = server.requests();
    assert!(requests[0].prompt_tokens >= 4096, "the first was refused");
    let last = requests.last().unwrap();
    assert!(last.prompt_tokens < 4096 && last.prompt_tokens < requests[0].prompt_tokens);
    // The retry's new texts (a smaller map) were counted by the server before it went.
    let predicted = *predictions(&events).last().unwrap();
    assert!(
        relative_error(predicted, last.prompt_tokens) <= 0.02,
        "the retry: predicted {predicted}, the server counted {}",
        last.prompt_tokens
    );
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("context is 4096") && n.contains("kept for this server and model")),
        "{:?}",
        notices(&events)
    );
    let window = |events: &[Event]| {
        events.iter().rev().find_map(|e| match e {
            Event::Budget(r) => Some((r.window, r.window_source)),
            _ => None,
        })
    };
    assert_eq!(window(&chat.events), Some((4096, WindowSource::Server)));

    let mut resumed = chat.resume(settings).await;
    let events = resumed.until(|e| matches!(e, Event::Budget(_))).await;
    assert_eq!(window(&events), Some((4096, WindowSource::Server)));
}

/// llama-cpp-python answers a prompt over its context with 200 and an empty stream:
/// taken for a probable overflow, retried smaller at once (never the same request
/// again); it reports no usage, so tern's count stands in, marked as an estimate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_python_s_empty_reply_is_taken_for_an_overflow() {
    let server = MockServer::start_as(Dialect::LlamaCppPython { n_ctx: 2048 }).await;
    serve_with_summaries(&server);
    let files = mapped_repo(40);
    let mut chat = Chat::start(settings(&server, "smollm2-silent"), &as_files(&files), &[]);
    let events = chat
        .say("turn 1: where is the inventory code?".into())
        .await;
    let Some(Event::TurnFinished {
        usage: Some(usage),
        usage_estimated,
        ..
    }) = events.last()
    else {
        panic!("{:?}", failure(&events))
    };
    let sizes: Vec<usize> = server.requests().iter().map(|r| r.prompt_tokens).collect();
    assert!(sizes[0] > 2048, "{sizes:?}");
    assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
    assert!(sizes.len() <= 4, "{sizes:?}");
    assert!(
        notices(&events).iter().any(|n| n.contains("retrying with")),
        "{:?}",
        notices(&events)
    );
    assert!(*usage_estimated);
    assert_eq!(usage.prompt_tokens, *predictions(&events).last().unwrap());
    assert!(usage.completion_tokens > 0);
    let after = chat.until(|e| matches!(e, Event::Budget(_))).await;
    let Some(Event::Budget(report)) = after.last() else {
        unreachable!("until stops at a budget")
    };
    assert!(report.last_usage_estimated, "the gauge shows the estimate");
    assert_eq!(report.last_usage, Some(*usage));
}

/// When summarizing fails and the request does not fit, the refusal says how to go on
/// (`/forget`); with that consent the oldest turns go, the model is told, and the next
/// message is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_summaries_fail_forget_drops_the_oldest_turns_with_consent() {
    let server = MockServer::start().await;
    server.set_responder(|r| {
        if is_summary(r) {
            Reply::http_error(
                400,
                serde_json::json!({"error": {"message": "no summaries"}}),
            )
        } else {
            Reply::text(reply(crate::history_support::turn_of(r)))
        }
    });
    let big: String = (0..110)
        .map(|i| format!("def helper_{i}(x):\n    return x + {i}\n"))
        .collect();
    let settings = Settings {
        context_window: Some(4000),
        reserve_output: Some(1000),
        max_chat_history_tokens: Some(8000),
        ..settings(&server, "gpt-4o")
    };
    let mut chat = Chat::start(settings, &[("big.py", &big)], &["big.py"]);
    chat.ask_mode().await;
    let mut refused = None;
    for t in 1..=30 {
        let text = format!("turn {t}: what does helper number {t} return for seven?");
        let events = chat.say(text.clone()).await;
        if let Some((error, message)) = failure(&events) {
            assert_eq!(message, text, "the message comes back");
            refused = Some((error.to_string(), text));
            break;
        }
    }
    let (error, text) = refused.expect("the history outgrew the window");
    assert!(error.contains("/forget"), "{error}");
    chat.send(crate::support::typed("/forget"));
    let events = chat
        .until(|e| matches!(e, Event::Notice { text } if text.contains("forgot")))
        .await;
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("the model is told")),
        "{events:#?}"
    );
    let events = chat.say(text).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let sent = conversations(&server).pop().unwrap();
    let note = include_str!("../../assets/prompts/forgotten.md").trim();
    assert!(sent.messages.iter().any(|m| m.text == note), "{sent:#?}");
}

/// The JSON lines of a `--json` run.
fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// What a `tern` run did: whether it succeeded, its stdout and its stderr.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `tern ARGS` in `repo`, talking to `api_base`.
fn run(repo: &TempRepo, api_base: &str, args: &[&str]) -> Run {
    let out = repo.tern(api_base).args(args).output().unwrap();
    let (stdout, stderr) = crate::support::texts(&out);
    Run {
        ok: out.status.success(),
        stdout,
        stderr,
    }
}

fn shelf_repo() -> TempRepo {
    TempRepo::with_files(&[("shelf.py", SHELF)])
}

/// `--json` reports each request with tern's prediction of its prompt (exact for an
/// OpenAI model), and says at the end why the run stopped.
#[test]
fn json_has_one_request_event_per_request_and_the_reason_it_stopped() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("Hello."));
    let repo = shelf_repo();
    let args = ["--json", "--model", "gpt-4o", "-m", "hi", "shelf.py"];
    let done = run(&repo, &server.base_url(), &args);
    assert!(done.ok, "{}", done.stderr);
    let events = json_lines(&done.stdout);
    let requests: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event"] == "request").collect();
    let received = server.requests();
    assert_eq!(requests.len(), received.len());
    assert_eq!(requests[0]["purpose"], "turn");
    assert_eq!(
        requests[0]["predicted_prompt_tokens"],
        received[0].prompt_tokens
    );
    assert_eq!(requests[0]["max_tokens"], 16_384);

    server.push(Reply::invalid_api_key());
    let failed = run(&repo, &server.base_url(), &["--json", "-m", "hi"]);
    assert!(!failed.ok);
    let events = json_lines(&failed.stdout);
    let stopped = events.last().unwrap();
    assert_eq!(stopped["event"], "stopped");
    assert_eq!(stopped["ok"], false);
    assert!(
        stopped["reason"]
            .as_str()
            .unwrap()
            .contains("rejected the key"),
        "{stopped}"
    );
}

/// A reply that fills llama.cpp's context stops with `length`: tern says the window
/// filled (not the output limit), headless and in `--json`.
#[test]
fn a_reply_that_fills_the_window_says_so() {
    let server = MockServer::start_in_thread_as(Dialect::LlamaCpp { n_ctx: 2048 });
    server.push(Reply::text("words ".repeat(3000)));
    let args = [
        "--json",
        "--model",
        "smollm2-fill",
        "--context-window",
        "2048",
    ];
    let done = run(
        &shelf_repo(),
        &server.base_url(),
        &[&args[..], &["-m", "write a lot"]].concat(),
    );
    assert!(!done.ok, "an incomplete reply fails the run");
    let events = json_lines(&done.stdout);
    let finished = events
        .iter()
        .find(|e| e["event"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["finish"]["kind"], "length");
    assert_eq!(finished["finish"]["detail"]["limit"], "window");
    let stopped = events.last().unwrap();
    let reason = stopped["reason"].as_str().unwrap();
    assert!(
        reason.contains("the reply filled its limit") && reason.contains("context window"),
        "{stopped}"
    );
}

/// Without `--context-window`, tern assumes 32k for a model it does not know; llama.cpp
/// with `-c 2048` takes the prompt and stops the reply when its context is full, far
/// short of the `max_tokens` asked (as measured against the real server: 1,126 + 922 =
/// 2,048). tern says the server's context filled and which window to give it, not
/// that the reply hit "the model's output limit".
#[test]
fn a_reply_the_server_stops_short_says_its_context_is_full() {
    let server = MockServer::start_in_thread_as(Dialect::LlamaCpp { n_ctx: 2048 });
    server.push(Reply::text("words ".repeat(3000)));
    let args = ["--json", "--model", "smollm2-short", "-m", "write a lot"];
    let done = run(&shelf_repo(), &server.base_url(), &args);
    assert!(!done.ok, "an incomplete reply fails the run");
    let events = json_lines(&done.stdout);
    let finished = events
        .iter()
        .find(|e| e["event"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["finish"]["kind"], "context_full", "{finished}");
    let usage = &finished["usage"];
    let filled =
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap();
    assert_eq!(filled, 2048);
    let reason = events.last().unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("context is probably full") && reason.contains("--context-window 2048"),
        "{reason}"
    );
    assert!(!reason.contains("output limit"), "{reason}");
}

/// llama-cpp-python streams no usage: the token line shows tern's counts, marked as
/// estimates, never "0 sent, 0 received".
#[test]
fn usage_the_server_does_not_report_is_estimated() {
    let server = MockServer::start_in_thread_as(Dialect::LlamaCppPython { n_ctx: 8192 });
    server.push(Reply::text("It keeps the books."));
    let args = [
        "--model",
        "smollm2-no-usage",
        "-m",
        "what is it?",
        "shelf.py",
    ];
    let done = run(&shelf_repo(), &server.base_url(), &args);
    let stderr = done.stderr;
    assert!(done.ok, "{stderr}");
    assert!(
        stderr.contains("Tokens: ≈")
            && stderr.contains("(estimated: tern's count, not the server's)"),
        "{stderr}"
    );
    assert!(!stderr.contains("0 sent"), "{stderr}");
}

/// A one-shot `-m` ends after its reply even when the history needs a summary; the
/// next start makes it, before the next request needs it.
#[test]
fn a_one_shot_message_leaves_the_summary_to_the_next_start() {
    let server = MockServer::start_in_thread();
    serve_with_summaries(&server);
    let repo = TempRepo::with_files(&[
        ("shelf.py", SHELF),
        (".tern.toml", "max_chat_history_tokens = 256\n"),
    ]);
    let models = ["--model", "gpt-4o", "--weak-model", "gpt-4o-mini"];
    // A first turn longer than the whole history budget.
    let question = format!("turn 1: what does lend do? I read this: {PROSE}{PROSE}");
    let first = run(
        &repo,
        &server.base_url(),
        &[&models[..], &["-m", &question]].concat(),
    );
    assert!(first.ok, "{}", first.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "no summary after the last reply");
    let resumed = ["--resume", "-m", "turn 2: and returned?"];
    let next = run(
        &repo,
        &server.base_url(),
        &[&models[..], &resumed[..]].concat(),
    );
    assert!(next.ok, "{}", next.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert!(
        is_summary(&requests[1]),
        "the summary comes first: {requests:#?}"
    );
    let recap = tern::context::history::SUMMARY_PREFIX;
    assert!(
        requests[2]
            .messages
            .iter()
            .any(|m| m.text.starts_with(recap))
    );
}

/// A resumed run starts the summary its history needs at once; `/forget` arriving
/// then is not refused ("not while a summary is under way" stranded headless sessions:
/// `--resume -m /forget` failed on every run): it cancels the summary, says so, and
/// drops the oldest turns. Run against a summary that never answers.
#[test]
fn forget_in_a_resumed_run_cancels_the_summary_under_way() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = MockServer::start_in_thread();
    let stuck = std::sync::Arc::new(AtomicBool::new(false));
    let stuck_summaries = std::sync::Arc::clone(&stuck);
    server.set_responder(move |r| match is_summary(r) {
        true if stuck_summaries.load(Ordering::SeqCst) => Reply::text("").then_hang(),
        true => Reply::text(RECAP),
        false => Reply::text(reply(crate::history_support::turn_of(r))),
    });
    let repo = TempRepo::with_files(&[
        ("shelf.py", SHELF),
        (".tern.toml", "max_chat_history_tokens = 256\n"),
    ]);
    let script = repo.path().join(".git/script.txt");
    let turns: Vec<String> = (1..=3)
        .map(|t| format!("turn {t}: what does lend do? I read this: {PROSE}"))
        .collect();
    std::fs::write(&script, turns.join("\n---\n")).unwrap();
    let models = ["--model", "gpt-4o", "--weak-model", "gpt-4o-mini"];
    let script_arg = script.to_str().unwrap();
    let first = run(
        &repo,
        &server.base_url(),
        &[&models[..], &["--script", script_arg]].concat(),
    );
    assert!(first.ok, "{}", first.stderr);
    stuck.store(true, Ordering::SeqCst);
    let forget = run(
        &repo,
        &server.base_url(),
        &[&models[..], &["--resume", "-m", "/forget"]].concat(),
    );
    assert!(forget.ok, "{}", forget.stderr);
    assert!(
        forget
            .stderr
            .contains("cancelled the history summary under way")
            && forget.stderr.contains("forgot the oldest"),
        "{}",
        forget.stderr
    );
}

/// `/forget` keeps the latest turn; when that turn alone still leaves the history too
/// big for the room the rest of the request leaves it, it says so and offers
/// `/forget all`, which drops it too (the model is told).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_says_when_the_latest_turn_still_does_not_fit_and_all_drops_it() {
    let server = MockServer::start().await;
    server.set_responder(|r| Reply::text(reply(crate::history_support::turn_of(r))));
    let notes = PROSE.repeat(6);
    let settings = Settings {
        context_window: Some(2000),
        reserve_output: Some(500),
        ..settings(&server, "gpt-4o")
    };
    let mut chat = Chat::start(settings, &[("notes.md", &notes)], &[]);
    chat.ask_mode().await;
    assert_finished(&chat.say("turn 1: hi".into()).await);
    assert_finished(&chat.say("turn 2: hello".into()).await);
    assert_finished(
        &chat
            .say(format!("turn 3: and this? {}", PROSE.repeat(3)))
            .await,
    );
    chat.send(Op::AddFiles {
        paths: vec!["notes.md".into()],
        mode: FileMode::ReadOnly,
    });
    chat.send(crate::support::typed("/forget"));
    let events = chat.until(|e| matches!(e, Event::Idle)).await;
    let said = notices(&events);
    assert!(
        said.iter().any(|n| n.contains("forgot the oldest 2 turns")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|n| n.contains("still does not fit") && n.contains("/forget all")),
        "{said:?}"
    );
    chat.send(crate::support::typed("/forget all"));
    let events = chat
        .until(|e| matches!(e, Event::Notice { text } if text.contains("forgot")))
        .await;
    // The note standing for the first two, and the latest turn.
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("forgot the oldest 2 turns")),
        "{:?}",
        notices(&events)
    );
}

#[test]
fn tokens_refuses_a_missing_file() {
    let done = run(
        &shelf_repo(),
        "http://127.0.0.1:9/v1",
        &["tokens", "shelf.py", "nope.py"],
    );
    assert!(!done.ok, "{}", done.stdout);
    assert!(
        done.stderr.contains("no such file: nope.py"),
        "{}",
        done.stderr
    );
}

/// `TERN_LOG=tern=debug` fills the log file: each request, its prediction and reply.
#[test]
fn the_log_file_gets_each_request_under_tern_log_debug() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("Hello."));
    let repo = shelf_repo();
    let log = repo.path().join(".git/tern-debug.log");
    let out = repo
        .tern(&server.base_url())
        .env("TERN_LOG", "tern=debug")
        .arg(format!("--log-file={}", log.display()))
        .args(["-m", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("chat request") && text.contains("predicted_prompt"),
        "{text}"
    );
    assert!(text.contains("chat reply"), "{text}");
    assert!(!text.contains("sk-test-key-never-shown"));
}

/// With `--map-tokens 0` there is no map, and no message waits for one.
#[test]
fn with_map_tokens_0_no_message_waits_for_a_map() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("Hello."));
    let files = mapped_repo(5);
    let repo = TempRepo::with_files(&as_files(&files));
    let done = run(
        &repo,
        &server.base_url(),
        &["--map-tokens", "0", "-m", "hi"],
    );
    assert!(done.ok, "{}", done.stderr);
    assert!(
        !done.stderr.contains("waiting for the repo map"),
        "{}",
        done.stderr
    );
    let request = &server.requests()[0];
    assert!(
        !request
            .messages
            .iter()
            .any(|m| m.text.starts_with("Here is a map"))
    );
}

/// `tern tokens` against a server that counts waits for its counts and says so.
#[test]
fn tokens_against_llama_cpp_are_counted_by_the_server() {
    let server = MockServer::start_in_thread_as(Dialect::LlamaCpp { n_ctx: 8192 });
    let args = [
        "tokens",
        "--model",
        "smollm2-tokens",
        "--context-window",
        "8192",
        "shelf.py",
    ];
    let done = run(&shelf_repo(), &server.base_url(), &args);
    assert!(done.ok, "{}", done.stderr);
    assert!(
        done.stdout
            .contains("window 8192 tokens, counted exactly by the server"),
        "{}",
        done.stdout
    );
    assert!(!done.stdout.contains('≈'), "{}", done.stdout);
    assert!(
        server
            .tokenized()
            .iter()
            .any(|t| t.contains("def add_book")),
        "the file was counted by the server"
    );
}

/// Against llama.cpp's `-c 2048` with `--context-window 8192` (as measured against the
/// real server): the refused request is retried once, the retry's new texts (a smaller
/// map, no examples) counted by the server before it goes, and the user's message is
/// shown once, however many requests it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_n_ctx_is_counted_by_the_server_and_shown_once() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    serve_with_summaries(&server);
    let settings = Settings {
        context_window: Some(8192),
        ..settings(&server, "smollm2-retry")
    };
    let mut files = mapped_repo(60);
    files.push(("shelf.py".into(), SHELF.into()));
    let mut chat = Chat::start(settings, &as_files(&files), &["shelf.py"]);
    let events = chat.say("turn 1: who has the book?".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let requests = conversations(&server);
    assert_eq!(requests.len(), 2, "one refusal, one retry");
    assert!(requests[0].prompt_tokens >= 2048);
    let predicted = predictions(&events);
    for (p, r) in predicted.iter().zip(&requests) {
        eprintln!("predicted {p}, the server counted {}", r.prompt_tokens);
    }
    let retry = requests[1].prompt_tokens;
    assert!(
        relative_error(predicted[1], retry) <= 0.005,
        "the retry: predicted {}, the server counted {retry}",
        predicted[1]
    );
    let shown: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::TurnStarted { text, .. } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, ["turn 1: who has the book?"]);
}

/// Six turns with a small history budget, the next message sent as soon as a reply
/// ends, while the background summary (which takes the server 300 ms) runs; returns
/// how many requests the server had under way at once, at most.
async fn most_requests_at_once(dialect: Dialect) -> usize {
    let server = MockServer::start_as(dialect).await;
    serve_with_slow_summaries(&server, std::time::Duration::from_millis(300));
    let settings = Settings {
        context_window: Some(8192),
        max_chat_history_tokens: Some(300),
        ..settings(&server, "smollm2-slots")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &[]);
    for t in 1..=6 {
        let events = chat.say(format!("turn {t}: who has book {t}?")).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
    }
    let requests = server.requests();
    assert!(requests.iter().any(is_summary), "a summary was made");
    at_once(&requests)
}

/// The most of `requests` the server had under way at once (one started after the
/// last reply may still be).
fn at_once(requests: &[RecordedRequest]) -> usize {
    let end = |r: &RecordedRequest| r.finished_at.unwrap_or_else(std::time::Instant::now);
    requests
        .iter()
        .map(|r| {
            requests
                .iter()
                .filter(|o| o.arrived_at < end(r) && end(o) > r.arrived_at)
                .count()
        })
        .max()
        .unwrap()
}

/// A turn cancelled while llama.cpp computes it goes on being computed there (it does
/// not stop a prompt when the client leaves): the next request waits until the
/// server's `/slots` say it is done, so the two never run at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_still_computing_holds_the_next_one_back() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 8192 }).await;
    server.push(Reply::text("slow").with_start_delay(std::time::Duration::from_millis(1500)));
    server.push(Reply::text("It keeps the books."));
    let settings = Settings {
        context_window: Some(8192),
        ..settings(&server, "tinyllm-cancel")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &[]);
    chat.send(Op::Submit {
        text: "turn 1: what is it?".into(),
    });
    server
        .wait_for_requests(1, std::time::Duration::from_secs(10))
        .await;
    chat.send(Op::Cancel);
    chat.until(|e| matches!(e, Event::TurnFinished { .. } | Event::TurnFailed { .. }))
        .await;
    let events = chat.say("turn 2: what does it keep?".into()).await;
    assert_finished(&events);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(at_once(&requests), 1, "{requests:#?}");
}

/// A request that does not fit while the background summary runs waits for that
/// summary rather than cancel it for an overflow summary: llama.cpp goes on computing
/// a cancelled request (the loopback server does too), so against the real server both
/// summaries ran at once, 7-12 s each (5 times in 40 runs). The summaries go one after
/// the other, and the request is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_waits_for_the_background_summary_instead_of_running_beside_it() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 2048 }).await;
    serve_with_slow_summaries(&server, std::time::Duration::from_millis(1500));
    let settings = Settings {
        context_window: Some(2048),
        max_chat_history_tokens: Some(1600),
        map_tokens: Some(0),
        ..settings(&server, "tinyllm-overlap")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &[]);
    chat.ask_mode().await;
    let mut t = 0;
    while !server.requests().iter().any(is_summary) {
        t += 1;
        assert!(t <= 40, "no background summary started");
        let events = chat.say(format!("turn {t}: who has book {t}?")).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    t += 1;
    let events = chat
        .say(format!("turn {t}: and this? {PROSE}{PROSE}"))
        .await;
    assert_finished(&events);
    let summaries: Vec<RecordedRequest> =
        server.requests().into_iter().filter(is_summary).collect();
    assert_eq!(at_once(&summaries), 1, "{summaries:#?}");
    assert!(
        notices(&events)
            .iter()
            .any(|n| n.contains("waiting for the history summary under way")),
        "{:?}",
        notices(&events)
    );
}

/// llama.cpp's parallel slots share its context (`-c`): against the real server with
/// `-c 2048`, a background summary beside a turn filled it and both failed mid-reply
/// ("Context size has been exceeded"; 7 failed summaries in 22 turns). To llama.cpp
/// and llama-cpp-python every request goes one at a time; to a server that takes
/// several (vLLM), the summary still runs beside the next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_shares_one_context_gets_one_request_at_a_time() {
    assert_eq!(
        most_requests_at_once(Dialect::LlamaCpp { n_ctx: 8192 }).await,
        1
    );
    assert_eq!(
        most_requests_at_once(Dialect::LlamaCppPython { n_ctx: 8192 }).await,
        1
    );
    assert!(
        most_requests_at_once(Dialect::Vllm {
            max_model_len: 8192
        })
        .await
            > 1,
        "the summary runs beside the next turn"
    );
}

/// llama-cpp-python stops the reply it streams when another request arrives: tern's
/// own token counts cut its background summaries, whose empty replies were then taken
/// for "too long" (5 summary requests for a 2,300-token history). Nothing is sent to it
/// while a reply streams, counts included: no reply is interrupted, and every summary
/// lands whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_interrupts_a_llama_cpp_python_reply() {
    let server = MockServer::start_as(Dialect::LlamaCppPython { n_ctx: 8192 }).await;
    server.set_responder(|r| {
        let text = if is_summary(r) {
            format!("{RECAP} {}", PROSE)
        } else {
            reply(crate::history_support::turn_of(r))
        };
        Reply::chunks(
            text.split_inclusive(' ')
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        )
        .with_chunk_delay(std::time::Duration::from_millis(5))
    });
    let settings = Settings {
        context_window: Some(8192),
        max_chat_history_tokens: Some(300),
        ..settings(&server, "smollm2-interrupts")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &[]);
    for t in 1..=6 {
        let events = chat
            .say(format!(
                "turn {t}: who has book {t}? {}",
                "and why ".repeat(t)
            ))
            .await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
    }
    assert!(
        server.requests().iter().any(is_summary),
        "a summary was made"
    );
    assert!(!server.tokenized().is_empty(), "the server counted");
    assert_eq!(server.interrupted(), 0, "{:#?}", server.requests());
}

/// An empty reply is asked for once more as it was; empty again, it is said as such
/// (not a finished reply that says nothing), and the question stays in the history for
/// the next turn, with a note that no reply came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_is_asked_again_then_said_and_the_question_kept() {
    let server = MockServer::start().await;
    server.push(Reply::text(""));
    server.push(Reply::text("It keeps the books."));
    server.push(Reply::text(""));
    server.push(Reply::text(""));
    server.push(Reply::text("Lending marks the book."));
    let mut chat = Chat::start(settings(&server, "gpt-4o"), &[("shelf.py", SHELF)], &[]);
    let events = chat.say("turn 1: what does it keep?".into()).await;
    let Some(Event::TurnFinished { reply, finish, .. }) = events.last() else {
        panic!("{:?}", failure(&events))
    };
    assert_eq!(reply, "It keeps the books.");
    assert_eq!(*finish, tern::llm::Finish::Stop);
    let events = chat.say("turn 2: how does lending work?".into()).await;
    let Some(Event::TurnFinished { finish, .. }) = events.last() else {
        panic!("{:?}", failure(&events))
    };
    assert_eq!(*finish, tern::llm::Finish::Empty);
    let said = finish.incomplete().unwrap();
    assert!(said.contains("the reply was empty"), "{said}");
    chat.say("turn 3: and returning?".into()).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "each empty reply asked for once more");
    let last: Vec<&str> = requests[4]
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    let asked = last.iter().position(|m| m.starts_with("turn 2:"));
    let asked = asked.expect("the question stays in the history");
    assert_eq!(last[asked + 1], tern::prompts::EMPTY_REPLY);
}

/// A llama.cpp server still loading its model (503 to everything, as when tern and the
/// server start together) or restarting cannot count for a moment: tern goes on with
/// estimates, asks again once the server answers a request, and the counts are exact
/// from then on (they were estimates for the rest of the session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_count_for_a_moment_is_asked_again() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 8192 }).await;
    serve_with_summaries(&server);
    // The probe's two requests get "Loading model".
    server.answer_loading(2);
    let settings = Settings {
        context_window: Some(8192),
        ..settings(&server, "smollm2-loading")
    };
    let mut chat = Chat::start(settings, &[("shelf.py", SHELF)], &["shelf.py"]);
    let say = async |chat: &mut Chat, t: usize| {
        let events = chat.say(format!("turn {t}: who has book {t}?")).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
        events
    };
    say(&mut chat, 1).await;
    let events = say(&mut chat, 2).await;
    let counted_by_the_server = |events: &[Event], t: usize, tolerance: f64| {
        let sent = conversations(&server).pop().unwrap();
        let predicted = *predictions(events).last().unwrap();
        assert!(
            relative_error(predicted, sent.prompt_tokens) <= tolerance,
            "turn {t}: predicted {predicted}, the server counted {}",
            sent.prompt_tokens
        );
        assert!(
            events.iter().any(|e| matches!(
                e,
                Event::Request {
                    counting: Counting::Server,
                    ..
                }
            )),
            "turn {t}"
        );
    };
    // The first request the server counted: its template's tokens are not known yet.
    counted_by_the_server(&events, 2, 0.02);
    // The server restarts: counting the next message's new text fails once.
    server.answer_loading(1);
    say(&mut chat, 3).await;
    let events = say(&mut chat, 4).await;
    counted_by_the_server(&events, 4, 0.005);
    assert!(
        !notices(&chat.events)
            .iter()
            .any(|n| n.contains("tokenize endpoint failed")),
        "{:?}",
        notices(&chat.events)
    );
}

/// The issue: a buggy proxy reports `usage.prompt_tokens` of 693 billion once. Before,
/// it was learned into calibration.json and every later request to that model was
/// refused ("needs ≈693 billion tokens"), in every later session. Now it is said and
/// not learned, its cost is tern's count, and every later request goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_proxy_s_count_is_not_learned_and_later_sessions_still_send() {
    let server = MockServer::start_as(Dialect::Ollama).await;
    server.set_responder(|r| {
        let reply = Reply::text(reply(crate::history_support::turn_of(r)));
        match crate::history_support::turn_of(r) {
            2 => reply.with_prompt_tokens(693_000_000_000),
            _ => reply,
        }
    });
    let settings = Settings {
        context_window: Some(32_768),
        ..settings(&server, "smollm2-lying-proxy")
    };
    let files = [("README.md", PROSE)];
    let mut chat = Chat::start(settings.clone(), &files, &[]);
    chat.send(Op::AddFiles {
        paths: vec!["README.md".into()],
        mode: FileMode::ReadOnly,
    });
    for t in 1..=3 {
        let events = chat.say(format!("turn {t}: what is bookshelf for?")).await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "turn {t}: {:?}",
            failure(&events)
        );
        if t == 2 {
            let told = notices(&events).join("\n");
            assert!(
                told.contains("693,000,000,000") && told.contains("not learned"),
                "{told}"
            );
            let Some(Event::TurnFinished {
                usage: Some(usage),
                usage_estimated,
                ..
            }) = events.last()
            else {
                panic!("{events:?}")
            };
            assert!(usage.prompt_tokens < 10_000, "{usage:?}");
            assert!(usage_estimated, "a count no tokenizer gives is no cost");
        }
    }
    let requests = conversations(&server);
    let predicted = predictions(&chat.events);
    let error = relative_error(predicted[2], requests[2].prompt_tokens);
    assert!(
        error <= 0.03,
        "{} for {}",
        predicted[2],
        requests[2].prompt_tokens
    );

    // The next session starts from what the honest reports taught, and sends.
    let mut next = Chat::start(settings, &files, &[]);
    let events = next.say("turn 1: hello again".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    assert_eq!(conversations(&server).len(), 4);
}

/// What the old code saved after such a report is mended when a session reads it: the
/// absurd observation is forgotten (and said, with the file), the request goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calibration_poisoned_before_is_mended_when_read() {
    let server = MockServer::start_as(Dialect::Ollama).await;
    server.set_responder(|_| Reply::text("ok"));
    let model = "smollm2-poisoned";
    let repo = TempRepo::with_files(&[("README.md", PROSE)]);
    let file = tern::config::calibration_file();
    let poisoned = tern::tokens::Calibration {
        per_token: 6.93e8,
        per_digit: -0.056,
        samples: 1,
        contents: vec![(1000, 0, 693_000_000_000)],
        ..tern::tokens::Calibration::default()
    };
    tern::tokens::calibration::save(&file, model, &poisoned).unwrap();
    let mut chat = Chat::start_in(repo, settings(&server, model), &[], false);
    chat.until(|e| matches!(e, Event::Warning { text } if text.contains("forgotten")))
        .await;
    // Removed from the file as it is said (before any report could rewrite it), so
    // the next session has nothing to say about it.
    let kept = tern::tokens::calibration::load(&file)
        .remove(model)
        .unwrap();
    assert!(kept.contents.is_empty() && kept.samples == 0, "{kept:?}");
    let events = chat.say("hello".into()).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { .. })),
        "{:?}",
        failure(&events)
    );
    let told = notices(&chat.events).join("\n");
    assert!(
        told.contains(&file.display().to_string()) && told.contains("forgotten"),
        "{told}"
    );
    let repo = chat.repo;
    drop(chat.engine);
    let mut again = Chat::start_in(repo, settings(&server, model), &[], false);
    again.say("hello".into()).await;
    let told = notices(&again.events).join("\n");
    assert!(!told.contains("forgotten"), "{told}");
}

/// A request refused with counts learned from the server names where they are kept
/// and how to forget them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_made_with_learned_counts_names_the_file_and_the_way_out() {
    let server = MockServer::start_as(Dialect::Ollama).await;
    server.set_responder(|_| Reply::text("ok"));
    let settings = Settings {
        context_window: Some(2048),
        max_chat_history_tokens: Some(1024),
        map_tokens: Some(0),
        ..settings(&server, "smollm2-refused")
    };
    let big = PROSE.repeat(8);
    let mut chat = Chat::start(settings, &[("big.md", &big)], &[]);
    let events = chat.say("hello".into()).await;
    assert!(matches!(events.last(), Some(Event::TurnFinished { .. })));
    chat.send(Op::AddFiles {
        paths: vec!["big.md".into()],
        mode: FileMode::ReadOnly,
    });
    let events = chat.say("what is in big.md?".into()).await;
    let (error, _) = failure(&events).expect("refused");
    assert!(error.contains("needs ≈"), "{error}");
    assert!(
        error.contains(&tern::config::calibration_file().display().to_string())
            && error.contains("tern tokens --recalibrate"),
        "{error}"
    );
}

/// `tern tokens --recalibrate` forgets the model's calibration (`--all-models`:
/// every model's) and says so.
#[test]
fn tokens_recalibrate_forgets_what_was_learned() {
    let repo = shelf_repo();
    let state = repo.path().join(".git/tern-test-home/state");
    let file = state.join("calibration.json");
    for model in ["smollm2", "qwen"] {
        tern::tokens::calibration::save(&file, model, &tern::tokens::Calibration::default())
            .unwrap();
    }
    let out = run(
        &repo,
        "http://127.0.0.1:9/v1",
        &["--model", "smollm2", "tokens", "--recalibrate"],
    );
    assert!(
        out.stderr
            .contains("forgot what was learned about smollm2's token counts")
            && out.stderr.contains(&file.display().to_string()),
        "{}",
        out.stderr
    );
    let left = tern::tokens::calibration::load(&file);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["qwen"]);
    let out = run(
        &repo,
        "http://127.0.0.1:9/v1",
        &["tokens", "--recalibrate", "--all-models"],
    );
    assert!(out.stderr.contains("qwen"), "{}", out.stderr);
    assert!(tern::tokens::calibration::load(&file).is_empty());
}
