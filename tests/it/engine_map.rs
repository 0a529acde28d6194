//! The repo map's refresh modes (`map_refresh`), end to end through Ops and Events:
//! a real engine, the loopback OpenAI server and a real temporary git repository. Each
//! test adds a file on disk and looks for its definition in the map the model was sent.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::support::{MockServer, Reply, TempRepo, spawn_engine, until};
use tern::engine::{EngineHandle, Event, FileMode, Op};
use tern::repomap::MapRefresh;

/// What the file added on disk defines.
const ADDED: &str = "freshly_added_helper";

fn repo() -> TempRepo {
    TempRepo::with_files(&[
        (
            "src/app.py",
            "from lib import shared_helper\nshared_helper()\n",
        ),
        ("src/lib.py", "def shared_helper():\n    pass\n"),
        ("src/other.py", "def other_function():\n    pass\n"),
    ])
}

fn add_file(repo: &TempRepo) {
    repo.write(
        "src/added.py",
        format!("def {ADDED}():\n    pass\n\n{ADDED}()\n"),
    );
}

fn engine(repo: &TempRepo, server: &MockServer, mode: MapRefresh) -> EngineHandle {
    spawn_engine(repo, server, "src/app.py", false, |s| s.map_refresh = mode)
}

/// Adds src/other.py to the chat and waits for the op's `Idle`.
async fn add_other_to_chat(engine: &mut EngineHandle) {
    engine
        .ops
        .send(Op::AddFiles {
            paths: vec!["src/other.py".into()],
            mode: FileMode::ReadOnly,
        })
        .unwrap();
    until(engine, |e| matches!(e, Event::Idle)).await;
}

/// Sends a message and waits for the turn to end.
async fn turn(engine: &mut EngineHandle, text: &str) {
    engine.ops.send(Op::Submit { text: text.into() }).unwrap();
    until(engine, |e| matches!(e, Event::Idle)).await;
}

/// Waits until the map's file set holds `path`: the background refresh is done.
async fn map_holds(engine: &mut EngineHandle, path: &str) {
    for _ in 0..200 {
        engine.ops.send(Op::ListRepoFiles).unwrap();
        let events = until(engine, |e| matches!(e, Event::RepoFiles { .. })).await;
        if let Some(Event::RepoFiles { files }) = events.last()
            && files.iter().any(|f| f == path)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the map never picked up {path}");
}

/// Whether request `n` (from 0) sent a map that shows the added file's definition.
fn map_sent_added(server: &MockServer, n: usize) -> bool {
    let requests = server.requests();
    requests[n].body_text.contains(&format!("def {ADDED}()"))
}

fn replies(server: &MockServer, n: usize) {
    for _ in 0..n {
        server.push_for_model("gpt-4o", Reply::text("noted"));
    }
}

#[tokio::test]
async fn auto_rebuilds_when_files_change_on_disk_and_the_gauge_says_so() {
    let server = MockServer::start().await;
    server.push_for_model(
        "gpt-4o",
        Reply::text("noted").with_start_delay(Duration::from_millis(400)),
    );
    replies(&server, 1);
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Auto);
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    engine
        .ops
        .send(Op::Submit {
            text: "first".into(),
        })
        .unwrap();
    // Written while the reply streams: the file-system events bring it in (during the
    // turn or after it), and the turn ends.
    add_file(&repo);
    let (mapped, idle) = (std::cell::Cell::new(false), std::cell::Cell::new(false));
    until(&mut engine, |e| {
        match e {
            Event::Map(view) if view.text.contains(ADDED) => mapped.set(true),
            Event::Idle => idle.set(true),
            _ => {}
        }
        mapped.get() && idle.get()
    })
    .await;
    // The gauge names the mode.
    let events = until(&mut engine, |e| matches!(e, Event::Budget(_))).await;
    let Some(Event::Budget(report)) = events.last() else {
        unreachable!()
    };
    assert_eq!(report.map.as_ref().unwrap().refresh, MapRefresh::Auto);
    turn(&mut engine, "second").await;
    assert!(!map_sent_added(&server, 0));
    assert!(map_sent_added(&server, 1));
    // So does the budget table.
    engine.ops.send(crate::support::typed("/tokens")).unwrap();
    let events = until(
        &mut engine,
        |e| matches!(e, Event::Output { title, .. } if title == "tokens"),
    )
    .await;
    let Some(Event::Output { text, .. }) = events.last() else {
        unreachable!()
    };
    assert!(text.contains("refresh auto"), "{text}");
}

#[tokio::test]
async fn a_file_edited_while_the_engine_idles_is_in_the_map_without_a_turn() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Auto);
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    // No message is sent: only the file-system events can bring it in.
    repo.write(
        "src/lib.py",
        format!("def shared_helper():\n    pass\n\ndef {ADDED}():\n    pass\n"),
    );
    until(
        &mut engine,
        |e| matches!(e, Event::Map(view) if view.text.contains(ADDED)),
    )
    .await;
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn files_rebuilds_only_when_the_chat_files_change() {
    let server = MockServer::start().await;
    replies(&server, 3);
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Files);
    turn(&mut engine, "first").await;
    add_file(&repo);
    turn(&mut engine, "second").await;
    // The tags are refreshed in the background, but the map is kept...
    map_holds(&mut engine, "src/added.py").await;
    turn(&mut engine, "third").await;
    assert!(!map_sent_added(&server, 2));
    // ...until the chat files change.
    add_other_to_chat(&mut engine).await;
    replies(&server, 1);
    turn(&mut engine, "fourth").await;
    assert!(
        map_sent_added(&server, 3),
        "{}",
        server.requests()[3].body_text
    );
}

#[tokio::test]
async fn manual_keeps_the_map_until_map_refresh() {
    let server = MockServer::start().await;
    replies(&server, 3);
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Manual);
    turn(&mut engine, "first").await;
    add_file(&repo);
    turn(&mut engine, "second").await;
    // Not even a new chat file rebuilds it.
    add_other_to_chat(&mut engine).await;
    turn(&mut engine, "third").await;
    assert!(!map_sent_added(&server, 1) && !map_sent_added(&server, 2));
    engine
        .ops
        .send(crate::support::typed("/map-refresh"))
        .unwrap();
    until(
        &mut engine,
        |e| matches!(e, Event::Map(view) if view.text.contains(ADDED)),
    )
    .await;
    replies(&server, 1);
    turn(&mut engine, "fourth").await;
    assert!(map_sent_added(&server, 3));
}

#[tokio::test]
async fn always_rescans_before_every_message() {
    let server = MockServer::start().await;
    replies(&server, 2);
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Always);
    turn(&mut engine, "first").await;
    // Written after the turn: only a rescan before the next message finds it.
    add_file(&repo);
    turn(&mut engine, "second").await;
    assert!(!map_sent_added(&server, 0));
    assert!(map_sent_added(&server, 1));
}

/// The issue: module-level constants went to the model with their values, from files
/// not in the chat, untracked ones included. The map shows their names and shapes; the
/// map pane (the `Map` event's text) and the request alike never hold the secrets.
#[tokio::test]
async fn the_map_never_carries_a_constant_s_value() {
    let server = MockServer::start().await;
    replies(&server, 1);
    let repo = TempRepo::with_files(&[
        (
            "src/app.py",
            "from settings import STRIPE_SECRET, connect\nconnect(STRIPE_SECRET)\n",
        ),
        (
            "src/settings.py",
            "STRIPE_SECRET = \"sk_live_51HvSecretValue\"\nDATABASE_URL = \"postgres://admin:hunter2@db.internal/prod\"\nACCOUNT = 4111111111111111\n\ndef connect(url=\"postgres://admin:hunter2@db\"):\n    pass\n",
        ),
    ]);
    // Never committed, never added.
    repo.write(
        "src/local_keys.rs",
        "pub const STRIPE_SECRET: &str = r#\"sk_live_untracked\"#;\npub fn connect() -> u64 { 4111111111111111 }\n",
    );
    let mut engine = spawn_engine(&repo, &server, "src/app.py", false, |_| {});
    map_holds(&mut engine, "src/local_keys.rs").await;
    engine
        .ops
        .send(Op::Submit {
            text: "where is STRIPE_SECRET used? connect".into(),
        })
        .unwrap();
    let events = until(&mut engine, |e| matches!(e, Event::Idle)).await;
    let shown: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Map(view) => Some(view.text.as_str()),
            _ => None,
        })
        .collect();
    let sent = server.requests().pop().unwrap().body_text;
    assert!(!shown.is_empty());
    for text in shown.iter().copied().chain([sent.as_str()]) {
        for secret in ["sk_live", "hunter2", "4111111111111111"] {
            assert!(!text.contains(secret), "{secret} in\n{text}");
        }
    }
    for shape in [
        "STRIPE_SECRET = \\\"…\\\"",
        "def connect(url=\\\"…\\\")",
        "pub const STRIPE_SECRET: &str = r#\\\"…\\\"#;",
    ] {
        assert!(sent.contains(shape), "{shape} not in\n{sent}");
    }
}

/// The `MapBudget` event `/map-tokens N` sends, the notice after it, and the events
/// up to the engine's `Idle`.
async fn map_tokens(
    engine: &mut EngineHandle,
    args: &str,
) -> (tern::engine::protocol::MapBudget, String, Vec<Event>) {
    engine
        .ops
        .send(crate::support::typed(&format!("/map-tokens {args}")))
        .unwrap();
    let events = until(engine, |e| matches!(e, Event::Idle)).await;
    let changed = events
        .iter()
        .find_map(|e| match e {
            Event::MapBudget(m) => Some(*m),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no MapBudget in {events:#?}"));
    let said = events
        .iter()
        .find_map(|e| match e {
            Event::Notice { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    (changed, said, events)
}

/// The map shows `other.py`'s definition, a file never in the chat.
fn map_sent(server: &MockServer, n: usize) -> bool {
    server.requests()[n].body_text.contains("other_function")
}

#[tokio::test]
async fn map_tokens_turns_the_map_off_and_on_and_says_the_tokens_freed_or_added() {
    let server = MockServer::start().await;
    replies(&server, 3);
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Auto);
    turn(&mut engine, "first").await;
    assert!(map_sent(&server, 0));
    let (off, said, events) = map_tokens(&mut engine, "0").await;
    assert_eq!((off.budget, off.tokens), (0, Some(0)));
    assert!(
        off.budget_before >= 1024 && off.tokens_before > 0,
        "{off:?}"
    );
    assert!(
        said.starts_with("the repo map is off; the map went from ")
            && said.ends_with(&format!("to 0 tokens ({} freed)", off.tokens_before)),
        "{said}"
    );
    // The gauge follows, and the next request goes without the map (no wait for one).
    let report = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Budget(report) => Some(report),
            _ => None,
        })
        .unwrap();
    assert_eq!(report.section(tern::engine::protocol::Section::Repo), 0);
    turn(&mut engine, "second").await;
    assert!(!map_sent(&server, 1));
    // /map says why there is none.
    engine.ops.send(crate::support::typed("/map")).unwrap();
    let events = until(&mut engine, |e| matches!(e, Event::Idle)).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Output { title, text } if title == "repo map" && text.contains("/map-tokens N turns it on"))),
        "{events:?}"
    );
    // On again: fitted at once from the map kept up to date meanwhile.
    let (on, said, _) = map_tokens(&mut engine, "2048").await;
    assert_eq!(
        (on.budget_before, on.budget, on.tokens_before),
        (0, 2048, 0)
    );
    let tokens = on.tokens.unwrap();
    assert!(tokens > 0 && tokens <= 2048, "{on:?}");
    assert_eq!(
        said,
        format!(
            "the repo map is on, with 2,048 tokens; the map went from 0 to {tokens} tokens ({tokens} added)"
        )
    );
    turn(&mut engine, "third").await;
    assert!(map_sent(&server, 2));
}

#[tokio::test]
async fn map_tokens_refuses_what_is_no_budget() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Auto);
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    for (args, why) in [
        (
            "lots",
            "/map-tokens takes a number of tokens, from 0 (no map) to 1,048,576, not \"lots\"",
        ),
        (
            "-5",
            "/map-tokens takes a number of tokens, from 0 (no map) to 1,048,576, not \"-5\"",
        ),
        (
            "1048577",
            "/map-tokens takes a number of tokens, from 0 (no map) to 1,048,576, not \"1048577\"",
        ),
    ] {
        engine
            .ops
            .send(crate::support::typed(&format!("/map-tokens {args}")))
            .unwrap();
        let events = until(&mut engine, |e| matches!(e, Event::Error { .. })).await;
        assert!(
            matches!(events.last(), Some(Event::Error { text }) if text == why),
            "{events:?}"
        );
        assert!(!events.iter().any(|e| matches!(e, Event::MapBudget(_))));
    }
    // No argument: the parser's own refusal, before the engine.
    assert_eq!(
        tern::engine::input::parse("/map-tokens")
            .unwrap_err()
            .to_string(),
        "/map-tokens needs an argument: /map-tokens N"
    );
}

#[tokio::test]
async fn map_tokens_builds_the_map_that_map_tokens_0_left_off_at_start() {
    let server = MockServer::start().await;
    replies(&server, 1);
    let repo = repo();
    let mut engine = spawn_engine(&repo, &server, "src/app.py", false, |s| {
        s.map_tokens = Some(0)
    });
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    let (on, said, _) = map_tokens(&mut engine, "1024").await;
    assert_eq!(
        on,
        tern::engine::protocol::MapBudget {
            budget_before: 0,
            budget: 1024,
            tokens_before: 0,
            tokens: None
        }
    );
    assert!(said.contains("the map is being built"), "{said}");
    until(
        &mut engine,
        |e| matches!(e, Event::Map(view) if view.text.contains("other_function")),
    )
    .await;
    turn(&mut engine, "first").await;
    assert!(map_sent(&server, 0));
}

/// `/map-tokens` persists for the session: a resumed one keeps the map off, and its
/// choice of a budget.
#[tokio::test]
async fn map_tokens_persists_across_resume() {
    let server = MockServer::start().await;
    replies(&server, 2);
    let repo = repo();
    let mut engine = engine(&repo, &server, MapRefresh::Auto);
    turn(&mut engine, "first").await;
    map_tokens(&mut engine, "0").await;
    engine.ops.send(Op::Shutdown).unwrap();
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
    let mut engine = spawn_engine(&repo, &server, "src/app.py", true, |_| {});
    // Off from the start: no map to wait for, none sent.
    until(
        &mut engine,
        |e| matches!(e, Event::Map(view) if view.text.is_empty()),
    )
    .await;
    turn(&mut engine, "second").await;
    assert!(map_sent(&server, 0));
    assert!(!map_sent(&server, 1));
    let (on, _, _) = map_tokens(&mut engine, "1500").await;
    assert_eq!((on.budget_before, on.budget), (0, 1500));
    engine.ops.send(Op::Shutdown).unwrap();
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
    let mut engine = spawn_engine(&repo, &server, "src/app.py", true, |_| {});
    let (again, _, _) = map_tokens(&mut engine, "1500").await;
    assert_eq!(again.budget_before, 1500, "{again:?}");
}
