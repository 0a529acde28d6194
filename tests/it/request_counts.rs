//! Every request kind counted the same way, with the provenance that is true for it:
//! against the loopback server playing llama.cpp (which counts with `/tokenize`), each
//! `request` event's prediction is within the margin its `counting` claims of what the
//! server counted.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::history_support::{Chat, is_summary, turn_of};
use crate::local_models::settings;
use crate::support::{Dialect, MockServer, Reply, TempRepo, Tokenizing};
use tern::config::Settings;
use tern::engine::Event;
use tern::engine::protocol::{Counting, RequestKind};
use tern::llm::Message;

/// Chat prose, as a summary's transcript holds it: replies long enough that the
/// history is summarized every few turns.
fn reply(turn: usize) -> String {
    format!(
        "reply {turn}: the lending code keeps a list of who borrowed which book and when; a friend who has had a book for more than a month gets a reminder, and the reminder goes away once the book is marked as returned. Wish lists are kept the same way, in the notes file, one title a line."
    )
}

/// The request events tern sent, and the prompt tokens the server counted for each,
/// in order per kind.
fn claims(chat: &Chat, server: &MockServer) -> Vec<(RequestKind, usize, Counting, usize)> {
    let requests = server.requests();
    let mut turns = requests.iter().filter(|r| !is_summary(r));
    let mut summaries = requests.iter().filter(|r| is_summary(r));
    chat.events
        .iter()
        .filter_map(|e| match e {
            Event::Request {
                purpose,
                predicted_prompt_tokens: Some(predicted),
                counting,
                ..
            } => {
                let sent = match purpose {
                    RequestKind::Summary => summaries.next(),
                    _ => turns.next(),
                };
                Some((*purpose, *predicted, *counting, sent.unwrap().prompt_tokens))
            }
            _ => None,
        })
        .collect()
}

/// The issue: summaries were predicted 8–22% off yet labelled "exact via server",
/// whose margin is 2%. Every request's prediction is within the margin its label
/// claims; a summary's texts, which no turn noted for counting, are counted by the
/// server before it is sent, so it is said (and is) via the server too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_within_the_margin_its_counting_claims() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 8192 }).await;
    server.set_responder(|r| match is_summary(r) {
        true => Reply::text("I asked how lending and reminders work in the shelf code."),
        false => Reply::text(reply(turn_of(r))),
    });
    let settings = Settings {
        context_window: Some(8192),
        max_chat_history_tokens: Some(1024),
        ..settings(&server, "smollm2-request-counts")
    };
    let mut chat = Chat::start(settings, &[("README.md", "# Shelf\n")], &[]);
    for t in 1..=16 {
        let events = chat
            .say(format!(
                "turn {t}: and what happens when friend {t} is late?"
            ))
            .await;
        assert!(
            matches!(events.last(), Some(Event::TurnFinished { .. })),
            "{events:#?}"
        );
    }
    let claims = claims(&chat, &server);
    let summaries: Vec<_> = claims
        .iter()
        .filter(|c| c.0 == RequestKind::Summary)
        .collect();
    assert!(!summaries.is_empty(), "the history was summarized");
    for (kind, predicted, counting, reported) in &claims {
        eprintln!(
            "{kind:?}: predicted {predicted}, server {reported} ({:+.1}%), {}",
            100.0 * (*predicted as f64 - *reported as f64) / *reported as f64,
            counting.label()
        );
    }
    for (kind, _, counting, _) in &summaries {
        assert!(
            !counting.is_estimate(),
            "{kind:?} said {}",
            counting.label()
        );
    }
    for (kind, predicted, counting, reported) in &claims {
        assert!(
            predicted.abs_diff(*reported) <= counting.margin(*predicted),
            "{kind:?}: predicted {predicted}, server {reported}, said {}",
            counting.label()
        );
    }
    // Each request's drift is told as it is counted, and none is flagged.
    let drifts: Vec<_> = chat
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Drift { purpose, drift } => Some((*purpose, *drift)),
            _ => None,
        })
        .collect();
    assert_eq!(drifts.len(), claims.len(), "one drift per request");
    // In order per kind: a background summary's drift may come before that of the
    // turn it followed (the summary is a task of its own).
    for kind in [RequestKind::Turn, RequestKind::Summary] {
        let claimed = claims.iter().filter(|c| c.0 == kind);
        let told = drifts.iter().filter(|d| d.0 == kind);
        assert_eq!(claimed.clone().count(), told.clone().count(), "{kind:?}");
        for ((_, predicted, counting, reported), (_, drift)) in claimed.zip(told) {
            assert_eq!(
                (predicted, reported, counting),
                (&drift.predicted, &drift.reported, &drift.counting)
            );
            assert!(!drift.beyond_margin(), "{}", drift.describe());
        }
    }
    // `/tokens` shows the last turn's.
    let (table, _) = chat.command("/tokens", "tokens").await;
    let last = drifts
        .iter()
        .rev()
        .find(|d| d.0 == RequestKind::Turn)
        .unwrap()
        .1;
    assert!(
        table.contains(&format!("Last request: {}", last.describe())),
        "{table}"
    );
}

/// The first summary of a session resumed with its history over the budget (it starts
/// before anything else, as a resumed run's did in the check against a real
/// llama-server), against a server whose tokenize endpoints answer as `tokenizing`
/// says: its request event's prediction and counting, and the server's count.
async fn resumed_summary(tokenizing: Tokenizing, model: &str) -> (usize, Counting, usize) {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 8192 }).await;
    server.tokenizing(tokenizing);
    server.set_responder(|_| Reply::text("I asked how lending and reminders work."));
    let repo = TempRepo::with_files(&[("README.md", "# Shelf\n")]);
    let history = (1..=16)
        .flat_map(|t| {
            [
                Message::user(format!("turn {t}: and when friend {t} is late?")),
                Message::assistant(reply(t)),
            ]
        })
        .collect();
    crate::support::plant_session(
        &tern::engine::persist::Store::for_repo(repo.path()),
        tern::engine::persist::SessionFile {
            model: model.into(),
            mode: tern::engine::ChatMode::Ask,
            history,
            ..Default::default()
        },
    );
    let settings = Settings {
        context_window: Some(8192),
        max_chat_history_tokens: Some(512),
        ..settings(&server, model)
    };
    let mut chat = Chat::start_in(repo, settings, &[], true);
    let events = chat
        .until(|e| {
            matches!(
                e,
                Event::Drift {
                    purpose: RequestKind::Summary,
                    ..
                }
            )
        })
        .await;
    let (predicted, counting) = events
        .iter()
        .find_map(|e| match e {
            Event::Request {
                purpose: RequestKind::Summary,
                predicted_prompt_tokens: Some(predicted),
                counting,
                ..
            } => Some((*predicted, *counting)),
            _ => None,
        })
        .unwrap();
    let sent = server.requests().into_iter().find(is_summary).unwrap();
    (predicted, counting, sent.prompt_tokens)
}

/// The issue: on a resumed run 2 of 4 summaries against a real llama-server were
/// labelled "uncalibrated" and 6-8% off: the summary took the server's tokenizer when
/// it started, before the probe answered. It takes it when it is sent, waiting for the
/// probe: counted by the server, said so, within that margin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_s_first_summary_waits_for_the_tokenizer_probe() {
    let slow = Tokenizing::After(std::time::Duration::from_millis(500));
    let (predicted, counting, reported) = resumed_summary(slow, "smollm2-resumed-slow").await;
    assert_eq!(counting, Counting::Server, "said {}", counting.label());
    assert!(
        predicted.abs_diff(reported) <= counting.margin(predicted),
        "predicted {predicted}, server {reported}"
    );
}

/// A tokenize endpoint that never answers, or is not there, holds no summary back
/// (the probe's own timeouts bound the wait): it goes out, said to be an estimate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_goes_out_as_an_estimate_when_the_tokenize_endpoint_hangs_or_is_missing() {
    for (tokenizing, model) in [
        (Tokenizing::Never, "smollm2-resumed-hang"),
        (Tokenizing::NotFound, "smollm2-resumed-404"),
    ] {
        let started = std::time::Instant::now();
        let (_, counting, _) = resumed_summary(tokenizing, model).await;
        assert!(
            counting.is_estimate(),
            "{tokenizing:?}: said {}",
            counting.label()
        );
        eprintln!(
            "{tokenizing:?}: the summary went out after {:?}",
            started.elapsed()
        );
    }
}

/// `tern -m … --json` says each request's drift (what an error table per request kind
/// needs: its kind, tern's prediction, the server's count, the claimed margin), and a
/// drift beyond the margin is flagged.
#[test]
fn json_drift_events_carry_prediction_report_and_margin() {
    let server = MockServer::start_in_thread_as(Dialect::LlamaCpp { n_ctx: 8192 });
    server.push(Reply::text("Hello."));
    let repo = crate::support::TempRepo::with_files(&[("shelf.py", "class Shelf:\n    pass\n")]);
    let args = [
        "--json",
        "--model",
        "smollm2-json-drift",
        "--context-window",
        "8192",
        "-m",
        "hi",
    ];
    let out = repo.tern(&server.base_url()).args(args).output().unwrap();
    let (stdout, stderr) = crate::support::texts(&out);
    assert!(out.status.success(), "{stderr}");
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let drift = events
        .iter()
        .find(|e| e["event"] == "drift")
        .expect("a drift event");
    let sent = server.requests().pop().unwrap().prompt_tokens;
    let request = events.iter().find(|e| e["event"] == "request").unwrap();
    assert_eq!(drift["purpose"], "turn");
    assert_eq!(drift["reported_prompt_tokens"], sent);
    assert_eq!(
        drift["predicted_prompt_tokens"],
        request["predicted_prompt_tokens"]
    );
    let predicted = drift["predicted_prompt_tokens"].as_i64().unwrap();
    assert_eq!(drift["difference"], predicted - sent as i64);
    assert_eq!(drift["counting"], request["counting"]);
    assert!(drift["margin"].as_u64().unwrap() > 0);
    assert_eq!(drift["beyond_margin"], false, "{drift}");
}

/// llama-cpp-python streams no usage, so its chat template's tokens were never learned
/// and every turn was predicted 0.4–0.6% low. The framing probe, made once before the
/// first turn, teaches them: each turn is predicted within 0.5% (tern's old framing
/// was 1.0% low here). What is left is the template's tokens per role, which differ by
/// one ("assistant" is two tokens): a whole number per message is up to half a token
/// off for each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_python_s_framing_is_learned_before_the_first_turn() {
    let server = MockServer::start_as(Dialect::LlamaCppPython { n_ctx: 16_384 }).await;
    server.set_responder(|r| Reply::text(reply(turn_of(r))));
    let settings = Settings {
        context_window: Some(16_384),
        ..settings(&server, "smollm2-python-framing")
    };
    let mut chat = Chat::start(settings, &[("README.md", "# Shelf\n")], &[]);
    for t in 1..=4 {
        chat.say(format!("turn {t}: who has the atlas?")).await;
    }
    let claims = claims(&chat, &server);
    assert_eq!(claims.len(), 4);
    for (kind, predicted, counting, sent) in claims {
        eprintln!(
            "{kind:?}: predicted {predicted}, server {sent}, {}",
            counting.label()
        );
        assert_eq!(counting, Counting::Server);
        assert!(
            predicted.abs_diff(sent) * 200 <= sent,
            "predicted {predicted}, the server counted {sent}"
        );
    }
    assert_eq!(server.framing_probes(), 2, "one probe of two requests");
}

/// `tern tokens -m "/ask …"` counted code mode's prompt (5,488 printed, 4,677 sent):
/// it predicts the request that message sends, mode included, as `tern -m` sends it.
#[test]
fn tokens_of_an_ask_message_count_the_ask_prompt() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("It keeps books."));
    let repo = crate::support::TempRepo::with_files(&[("shelf.py", "class Shelf:\n    pass\n")]);
    for message in [
        "/ask what does the shelf keep?",
        "/code what does the shelf keep?",
    ] {
        let args = [
            "tokens", "--json", "--model", "gpt-4o", "-m", message, "shelf.py",
        ];
        let out = repo.tern(&server.base_url()).args(args).output().unwrap();
        let (stdout, stderr) = crate::support::texts(&out);
        assert!(out.status.success(), "{stderr}");
        let budget: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let predicted = budget["total"].as_u64().unwrap() as usize;
        if message.starts_with("/ask") {
            let args = ["--json", "--model", "gpt-4o", "-m", message, "shelf.py"];
            let out = repo.tern(&server.base_url()).args(args).output().unwrap();
            assert!(out.status.success(), "{}", crate::support::texts(&out).1);
            let sent = server.requests().pop().unwrap().prompt_tokens;
            assert_eq!(
                predicted, sent,
                "{message}: tern tokens said {predicted}, {sent} were sent"
            );
        } else {
            let ask = server.requests().pop().unwrap().prompt_tokens;
            assert!(
                predicted > ask,
                "code mode's prompt is the longer: {predicted} vs {ask}"
            );
        }
    }
}

/// `/tokens` before the first map is built (a script's first line, right after start)
/// said a total without the map and nothing else (1,238 instead of 5,320): it says the
/// map is not counted yet; once the map is there, it counts it and says nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_before_the_map_is_built_says_the_map_is_not_counted() {
    let server = MockServer::start_as(Dialect::OpenAi).await;
    let files: Vec<(String, String)> = (0..1500)
        .map(|i| {
            (
                format!("src/m{i}.py"),
                format!("def f{i}(x):\n    return g{}(x) + {i}\n", (i + 1) % 1500),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let settings = settings(&server, "gpt-4o");
    let mut chat = Chat::start(settings, &files, &[]);
    let (early, events) = chat.command("/tokens", "tokens").await;
    let map_built = events.iter().any(|e| matches!(e, Event::Map(_)));
    assert!(
        !map_built,
        "the map was built before /tokens: make the repository larger"
    );
    assert!(
        early.contains("Repo map: still being built, not counted yet"),
        "{early}"
    );
    chat.until(|e| matches!(e, Event::Map(_))).await;
    let (late, _) = chat.command("/tokens", "tokens").await;
    assert!(!late.contains("still being built"), "{late}");
    assert!(late.contains("Repo map "), "{late}");
}

/// The repo map's budget was enforced in tern's own tokens ("1008 of 1024" was 1,350 of
/// the server's). Once a rate is learned, the map is fitted in the server's counts: its
/// text as the server counts it stays within the budget, and `/tokens` and the gauge
/// say the server's count of it, against the budget in the same counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_map_is_fitted_in_the_server_s_counts() {
    let server = MockServer::start_as(Dialect::LlamaCpp { n_ctx: 16_384 }).await;
    server.set_responder(|r| Reply::text(reply(turn_of(r))));
    let budget = 200;
    let settings = Settings {
        context_window: Some(16_384),
        map_tokens: Some(budget),
        ..settings(&server, "smollm2-map-fit")
    };
    let files = crate::history_support::mapped_repo(120);
    let in_chat = files[3].0.clone();
    let mut chat = Chat::start(
        settings,
        &crate::history_support::as_files(&files),
        &[in_chat.as_str()],
    );
    chat.say("turn 1: where is the total computed?".into())
        .await;
    chat.say("turn 2: and the report?".into()).await;
    let map = chat
        .events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Map(view) => Some(view.clone()),
            _ => None,
        })
        .unwrap();
    let by_server = Dialect::LlamaCpp { n_ctx: 16_384 }.text_tokens("smollm2-map-fit", &map.text);
    eprintln!(
        "map: {} said, {by_server} by the server, budget {budget}",
        map.tokens
    );
    assert!(
        by_server <= budget,
        "{by_server} server tokens for a budget of {budget}"
    );
    assert!(
        by_server * 10 >= budget * 8,
        "the map fills its budget: {by_server}"
    );
    let report = chat
        .events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Budget(report) => Some(report.clone()),
            _ => None,
        })
        .unwrap();
    let status = report.map.unwrap();
    assert_eq!((status.tokens, status.budget), (by_server, budget));
    // One number per thing: the Repo map and Files panes say what the gauge says.
    assert_eq!(map.tokens, by_server, "the Repo map pane's tokens");
    let files = chat
        .events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Files { files } => Some(files.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!report.files.is_empty(), "a file is in the chat");
    for row in &report.files {
        let shown = files.iter().find(|f| f.path == row.path).unwrap();
        assert_eq!(
            shown.tokens, row.tokens,
            "{}: the Files pane's tokens",
            row.path
        );
    }
}
