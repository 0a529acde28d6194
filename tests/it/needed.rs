//! Files the model needs and commands it suggests (`Event::Needed`, `Op::AddNeeded`),
//! through the engine and the real binary, against the loopback server and real
//! temporary repositories.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use proptest::prelude::*;

use crate::support::{MockServer, Reply, TempRepo, output_within, spawn_engine, texts, until};
use tern::edit::EditFormat;
use tern::engine::needed::named;
use tern::engine::protocol::NeededFile;
use tern::engine::{EngineHandle, Event, FileMode, Op};

const POOL: &str = "pub struct Pool {\n    size: usize,\n}\n\nimpl Pool {\n    pub fn new(size: usize) -> Pool {\n        Pool { size }\n    }\n}\n";

fn repo() -> TempRepo {
    let repo = TempRepo::with_files(&[
        ("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n"),
        ("src/pool.rs", POOL),
        ("src/db.rs", "pub fn connect() {}\n"),
        ("src/abs.rs", "pub fn abs() {}\n"),
        ("src/forced.rs", "pub fn forced() {}\n"),
        (".gitignore", "secret.env\nsrc/forced.rs\n"),
    ]);
    // Untracked, and ignored: never offered.
    repo.write("notes.txt", "todo\n");
    repo.write("secret.env", "KEY=1\n");
    repo
}

fn engine(repo: &TempRepo, server: &MockServer) -> EngineHandle {
    spawn_engine(repo, server, "src/main.rs", false, |_| {})
}

async fn idle(engine: &mut EngineHandle) -> Vec<Event> {
    until(engine, |e| matches!(e, Event::Idle)).await
}

/// The `Needed` events among `events`.
fn needed(events: &[Event]) -> Vec<(Vec<NeededFile>, usize, Vec<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Needed {
                files,
                more_files,
                commands,
                ..
            } => Some((files.clone(), *more_files, commands.clone())),
            _ => None,
        })
        .collect()
}

async fn ask(engine: &mut EngineHandle, question: &str) -> Vec<Event> {
    // Startup: the map is built before the first message is sent.
    engine
        .ops
        .send(crate::support::typed(&format!("/ask {question}")))
        .unwrap();
    let mut events = idle(engine).await;
    while !events
        .iter()
        .any(|e| matches!(e, Event::TurnFinished { .. }))
    {
        events = idle(engine).await;
    }
    events
}

#[tokio::test]
async fn a_reply_naming_files_outside_the_chat_offers_only_tracked_ones_with_their_cost() {
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let server = MockServer::start().await;
    server.push(Reply::text(format!(
        "The pool lives in `src/pool.rs` and db.rs connects; see also src/main.rs (yours), \
         notes.txt, secret.env, src/forced.rs, ../outside.rs, /etc/passwd and {}.\n\n\
         src/new.rs\n```rust\n<<<<<<< SEARCH\n=======\npub fn new() {{}}\n>>>>>>> REPLACE\n```\n",
        root.join("src/abs.rs").display()
    )));
    let mut engine = engine(&repo, &server);
    let events = ask(&mut engine, "where is the pool?").await;
    let found = needed(&events);
    assert_eq!(found.len(), 1, "{events:#?}");
    let (files, more, commands) = &found[0];
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/db.rs", "src/pool.rs"]);
    assert_eq!(*more, 0);
    assert!(commands.is_empty());
    // The event comes after the reply it is about.
    let finished = events
        .iter()
        .position(|e| matches!(e, Event::TurnFinished { .. }))
        .unwrap();
    let at = events
        .iter()
        .position(|e| matches!(e, Event::Needed { .. }))
        .unwrap();
    assert!(at > finished);

    // Each costs what the chat then counts for it.
    engine
        .ops
        .send(Op::AddFiles {
            paths: vec!["src/pool.rs".into(), "src/db.rs".into()],
            mode: FileMode::ReadOnly,
        })
        .unwrap();
    let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
    let Some(Event::Files { files: entries }) = events.last() else {
        unreachable!()
    };
    for file in files {
        let entry = entries.iter().find(|e| e.path == file.path).unwrap();
        assert_eq!(entry.tokens, file.tokens, "{}", file.path);
        assert!(file.tokens > 10);
    }
}

#[tokio::test]
async fn add_needed_adds_the_files_and_asks_the_same_question_again() {
    let repo = repo();
    let server = MockServer::start().await;
    server.push(Reply::text("I need to see src/pool.rs to answer."));
    server.push(Reply::text("Pool::new takes the size."));
    let mut engine = engine(&repo, &server);
    let events = ask(&mut engine, "how big is a new pool?").await;
    let (files, _, _) = needed(&events).remove(0);
    engine
        .ops
        .send(Op::AddNeeded {
            paths: files.iter().map(|f| f.path.clone()).collect(),
            mode: FileMode::ReadOnly,
        })
        .unwrap();
    let events = until(&mut engine, |e| matches!(e, Event::TurnFinished { .. })).await;
    let started = events
        .iter()
        .find_map(|e| match e {
            Event::TurnStarted { text, notes, .. } => Some((text.clone(), notes.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(started.0, "how big is a new pool?");
    assert_eq!(started.1.len(), 1);
    assert!(started.1[0].contains("src/pool.rs"), "{:?}", started.1);
    assert!(started.1[0].contains("read-only"), "{:?}", started.1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1];
    let all: String = second.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        all.contains("pub fn new(size: usize) -> Pool"),
        "the file is sent"
    );
    // The first exchange stays in the history, and the question is asked again.
    assert!(all.contains("I need to see src/pool.rs to answer."));
    let last = second.last_user_text().unwrap();
    let (note, question) = last.split_once("\n\n").unwrap();
    assert!(note.contains("src/pool.rs"), "{last}");
    assert!(question.starts_with("how big is a new pool?"), "{last}");
    let Some(Event::Files { files: entries }) = events
        .iter()
        .rev()
        .find(|e| matches!(e, Event::Files { .. }))
    else {
        panic!("the files changed: {events:#?}")
    };
    let pool = entries.iter().find(|e| e.path == "src/pool.rs").unwrap();
    assert_eq!(pool.mode, FileMode::ReadOnly);
    assert_eq!(pool.tokens, files[0].tokens);
}

/// Asks to add `src/db.rs` and again; the error that refuses it.
async fn refused_add(engine: &mut EngineHandle, mode: FileMode) -> String {
    engine
        .ops
        .send(Op::AddNeeded {
            paths: vec!["src/db.rs".into()],
            mode,
        })
        .unwrap();
    let events = until(engine, |e| matches!(e, Event::Error { .. })).await;
    match events.last() {
        Some(Event::Error { text }) => text.clone(),
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn add_needed_is_refused_while_edits_wait_for_review() {
    let repo = repo();
    let server = MockServer::start().await;
    server.push(Reply::text(
        "This also touches src/db.rs.\n\nsrc/main.rs\n```rust\n<<<<<<< SEARCH\n    println!(\"hi\");\n=======\n    println!(\"hello\");\n>>>>>>> REPLACE\n```\n",
    ));
    let mut engine = engine(&repo, &server);
    engine
        .ops
        .send(Op::Submit {
            text: "say hello".into(),
        })
        .unwrap();
    let mut events = idle(&mut engine).await;
    while !events.iter().any(|e| matches!(e, Event::Proposal(_))) {
        events = idle(&mut engine).await;
    }
    assert_eq!(needed(&events)[0].0[0].path, "src/db.rs");
    let text = refused_add(&mut engine, FileMode::Editable).await;
    assert!(text.contains("wait for review"), "{text}");
    assert_eq!(server.request_count(), 1, "nothing was sent again");
}

#[tokio::test]
async fn add_needed_is_refused_while_a_reply_streams() {
    let repo = repo();
    let server = MockServer::start().await;
    server.push(Reply::text("Look at src/db.rs."));
    server.push(
        Reply::chunks(["slow ", "reply ", "naming ", "src/pool.rs"])
            .with_chunk_delay(Duration::from_millis(300)),
    );
    let mut engine = engine(&repo, &server);
    ask(&mut engine, "first").await;
    engine
        .ops
        .send(crate::support::typed("/ask second"))
        .unwrap();
    until(&mut engine, |e| matches!(e, Event::Delta { .. })).await;
    let text = refused_add(&mut engine, FileMode::ReadOnly).await;
    assert!(text.contains("still streaming"), "{text}");
    let events = until(&mut engine, |e| matches!(e, Event::Needed { .. })).await;
    assert_eq!(needed(&events)[0].0[0].path, "src/pool.rs");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn suggested_commands_come_with_the_event_one_per_line() {
    let repo = repo();
    let server = MockServer::start().await;
    server.push(Reply::text(
        "Run the tests:\n\n```console\r\n$ cargo test \\\r\n>   --all\r\nok\r\n$ cargo fmt\r\n```\r\n\nDone — ✓ テスト.\n",
    ));
    let mut engine = engine(&repo, &server);
    let events = ask(&mut engine, "how do I test?").await;
    let found = needed(&events);
    assert_eq!(found.len(), 1, "{events:#?}");
    assert!(found[0].0.is_empty());
    assert_eq!(found[0].2, ["cargo test --all", "cargo fmt"]);
}

#[tokio::test]
async fn a_reply_naming_ten_thousand_paths_lists_twenty_and_counts_the_rest() {
    let files: Vec<(String, String)> = (0..300)
        .map(|i| (format!("gen/m{i:03}.py"), format!("x = {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .chain([("src/main.rs", "fn main() {}\n")])
        .collect();
    let repo = TempRepo::with_files(&refs);
    let server = MockServer::start().await;
    let reply: String = (0..10_000).map(|i| format!("gen/m{i:03}.py ")).collect();
    server.push(Reply::text(reply));
    let mut engine = engine(&repo, &server);
    let events = ask(&mut engine, "list them").await;
    let (shown, more, _) = needed(&events).remove(0);
    assert_eq!(shown.len(), 20);
    assert_eq!(more, 280);
    assert_eq!(shown[0].path, "gen/m000.py");
}

#[test]
fn the_add_needed_flag_adds_the_files_and_asks_again_once() {
    let repo = repo();
    let server = MockServer::start_in_thread();
    server.push(Reply::text("I need src/pool.rs."));
    // The second answer names another file: it is not added by itself.
    server.push(Reply::text("Pool::new takes the size; src/db.rs connects."));
    let out = output_within(
        repo.tern(&server.base_url()).args([
            "--add-needed",
            "--model",
            "gpt-4o",
            "-m",
            "/ask how big is a new pool?",
        ]),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Pool::new takes the size"), "{stdout}");
    assert_eq!(server.request_count(), 2, "{stderr}");
    let pool_tokens = {
        let line = stderr
            .lines()
            .find(|l| l.starts_with("tern: added src/pool.rs ("))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(
            line.ends_with("tok) read-only; asking the question again"),
            "{line}"
        );
        line.to_string()
    };
    assert!(
        stderr.contains("src/db.rs") && stderr.contains("the question was already asked again"),
        "{stderr}"
    );
    let second = &server.requests()[1];
    let all: String = second.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        all.contains("pub fn new(size: usize) -> Pool"),
        "{pool_tokens}"
    );
}

#[test]
fn without_the_flag_the_files_are_named_and_json_gets_the_event() {
    let repo = repo();
    let server = MockServer::start_in_thread();
    server.push(Reply::text("I need src/pool.rs.\n```sh\ncargo test\n```\n"));
    server.push(Reply::text("I need src/pool.rs."));
    let out = output_within(
        repo.tern(&server.base_url())
            .args(["-m", "/ask what is a pool?"]),
        Duration::from_secs(60),
    );
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("names files that are not in the chat: src/pool.rs (")
            && stderr.contains("--add-needed adds them"),
        "{stderr}"
    );
    assert_eq!(server.request_count(), 1);
    let out = output_within(
        repo.tern(&server.base_url())
            .args(["--json", "-m", "/ask what is a pool?"]),
        Duration::from_secs(60),
    );
    let (stdout, _) = texts(&out);
    let event: serde_json::Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "needed")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(event["files"][0]["path"], "src/pool.rs");
    assert!(event["files"][0]["tokens"].as_u64().unwrap() > 10);
    assert_eq!(event["more_files"], 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text, CRLF and non-ASCII included, gives only tracked files outside the chat
    /// and single-line commands.
    #[test]
    fn extraction_never_panics_and_names_only_tracked_files(
        text in "(\\PC|\r\n|\n|```sh\n|\\$ |\\\\\n|<<|src/a\\.rs|b\\.py|'|\")*"
    ) {
        let tracked = vec!["b.py".to_string(), "src/a.rs".to_string()];
        let chat = vec!["src/a.rs".to_string()];
        for format in [EditFormat::Editblock, EditFormat::Udiff, EditFormat::Whole] {
            let found = named(&text, format, &tracked, &chat);
            prop_assert!(found.files.iter().all(|f| f == "b.py"));
            prop_assert!(found.commands.iter().all(|c| !c.contains('\n')));
        }
    }
}
