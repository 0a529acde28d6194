//! The engine's edit flow end to end, through Ops and Events only (as the TUI drives it),
//! against the loopback OpenAI server and a real temporary git repository: proposals,
//! hunk decisions, reflections, landing with a weak-model commit message, undo.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::support::{MockServer, Reply, TempRepo, spawn_engine, until};
use tern::config::{ApiKey, Settings};
use tern::engine::protocol::{Caution, Decision, NotAppliedReason, ProposalView, ReviewOp};
use tern::engine::{EngineConfig, EngineHandle, Envelope, Event, FileMode, Op, OpId};

pub(crate) const GREET: &str = "\
def greet(name):
    return 'hello ' + name


def shout(name):
    return greet(name).upper()


def wave(name):
    return 'wave at ' + name
";

/// Two SEARCH/REPLACE blocks far apart in the file: two hunks.
pub(crate) const TWO_EDITS: &str = "Here are both changes.

src/greet.py
```python
<<<<<<< SEARCH
def greet(name):
    return 'hello ' + name
=======
def greet(name):
    return 'hello, ' + name + '!'
>>>>>>> REPLACE
```

src/greet.py
```python
<<<<<<< SEARCH
def wave(name):
    return 'wave at ' + name
=======
def wave(name):
    return 'waving at ' + name
>>>>>>> REPLACE
```
";

pub(crate) const BAD_EDIT: &str = "src/greet.py
```python
<<<<<<< SEARCH
def greet(person):
    return 'hi ' + person
=======
def greet(person):
    return 'hey ' + person
>>>>>>> REPLACE
```
";

const FIXED_EDIT: &str = "src/greet.py
```python
<<<<<<< SEARCH
def greet(name):
    return 'hello ' + name
=======
def greet(name):
    return 'hey ' + name
>>>>>>> REPLACE
```
";

pub(crate) fn repo() -> TempRepo {
    TempRepo::with_files(&[("src/greet.py", GREET), ("README.md", "# Greeter\n")])
}

fn engine(repo: &TempRepo, server: &MockServer) -> EngineHandle {
    engine_with(repo, server, false)
}

pub(crate) fn engine_with(repo: &TempRepo, server: &MockServer, resume: bool) -> EngineHandle {
    engine_tuned(repo, server, resume, |_| {})
}

/// An engine whose settings `tune` adjusts.
pub(crate) fn engine_tuned(
    repo: &TempRepo,
    server: &MockServer,
    resume: bool,
    tune: impl FnOnce(&mut Settings),
) -> EngineHandle {
    spawn_engine(repo, server, "src/greet.py", resume, tune)
}

/// The user message of the last request the model got.
fn last_sent(server: &MockServer) -> String {
    server
        .requests()
        .last()
        .unwrap()
        .last_user_text()
        .unwrap()
        .to_string()
}

pub(crate) async fn idle(engine: &mut EngineHandle) -> Vec<Event> {
    until(engine, |e| matches!(e, Event::Idle)).await
}

pub(crate) fn last_proposal(events: &[Event]) -> ProposalView {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Proposal(p) => Some((**p).clone()),
            _ => None,
        })
        .expect("a proposal was sent")
}

/// The model proposes `TWO_EDITS`, the weak model writes the commit message, then the
/// model answers the next message with `then`.
fn script_two_edits(server: &MockServer, then: &str) {
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: punctuate the greeting"));
    server.push_for_model("gpt-4o", Reply::text(then));
}

/// Sends a message or a slash command.
pub(crate) fn submit(engine: &EngineHandle, text: &str) {
    send(engine, crate::support::typed(text));
}

pub(crate) fn send(engine: &EngineHandle, op: Op) {
    engine.ops.send(op).unwrap();
}

/// Every op is answered: an empty message is refused with an error, then `Idle`, so a
/// front end waiting for it never waits for ever; nothing is sent.
#[tokio::test]
async fn an_empty_message_is_refused_and_answered_with_idle() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server);
    send(
        &engine,
        Op::Submit {
            text: " \n ".into(),
        },
    );
    until(
        &mut engine,
        |e| matches!(e, Event::Error { text } if text == "an empty message is not sent"),
    )
    .await;
    idle(&mut engine).await;
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn accept_one_hunk_reject_another_then_commit_and_undo() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: punctuate the greeting"));
    server.push_for_model("gpt-4o", Reply::text("Noted."));
    let repo = repo();
    let mut engine = engine(&repo, &server);

    submit(&engine, "punctuate greet and fix wave");
    let events = idle(&mut engine).await;
    let view = last_proposal(&events);
    assert_eq!(view.files.len(), 1);
    let hunks = &view.files[0].hunks;
    assert_eq!(hunks.len(), 2, "{view:#?}");
    assert!(hunks.iter().all(|h| h.decision == Decision::Pending));
    assert_eq!(
        repo.read("src/greet.py"),
        GREET,
        "nothing is written before review"
    );

    send(
        &engine,
        Op::Review(ReviewOp::Hunk {
            id: hunks[0].id.clone(),
            decision: Decision::Accept,
        }),
    );
    send(
        &engine,
        Op::Review(ReviewOp::Hunk {
            id: hunks[1].id.clone(),
            decision: Decision::Reject,
        }),
    );
    let events = until(&mut engine, |e| {
        matches!(e, Event::Proposal(p) if p.files.iter().flat_map(|f| &f.hunks).all(|h| h.decision != Decision::Pending))
    })
    .await;
    let decided = last_proposal(&events);
    assert_eq!(decided.files[0].hunks[0].decision, Decision::Accept);
    assert_eq!(decided.files[0].hunks[1].decision, Decision::Reject);

    send(&engine, Op::Review(ReviewOp::Apply));
    let events = idle(&mut engine).await;
    let applied = events
        .iter()
        .find_map(|e| match e {
            Event::Applied {
                accepted,
                rejected,
                commit,
                message,
                ..
            } => Some((*accepted, *rejected, commit.clone(), message.clone())),
            _ => None,
        })
        .expect("applied");
    assert_eq!((applied.0, applied.1), (1, 1));
    assert!(applied.2.is_some());
    assert_eq!(applied.3, "fix: punctuate the greeting");
    let text = repo.read("src/greet.py");
    assert!(text.contains("'hello, ' + name + '!'"));
    assert!(
        text.contains("'wave at ' + name"),
        "the rejected hunk is not written"
    );
    let log = repo.git(&["log", "--format=%s%n%b", "-1"]);
    assert!(log.starts_with("fix: punctuate the greeting"), "{log}");
    assert!(log.contains("Co-authored-by: tern (gpt-4o)"), "{log}");
    let weak = server
        .requests()
        .into_iter()
        .find(|r| r.model == "gpt-4o-mini")
        .unwrap();
    assert!(
        weak.last_user_text()
            .unwrap()
            .contains("'hello, ' + name + '!'"),
        "the commit message is asked from the diff"
    );

    // The next turn tells the model which hunk was rejected.
    submit(&engine, "thanks");
    idle(&mut engine).await;
    let third = server
        .requests()
        .into_iter()
        .filter(|r| r.model == "gpt-4o")
        .nth(1)
        .unwrap();
    let told = third.last_user_text().unwrap();
    assert!(
        told.contains("did not accept these hunks") && told.contains("waving at"),
        "{told}"
    );
    assert!(told.contains("\n\nthanks"), "{told}");

    submit(&engine, "/undo");
    let events = idle(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { text } if text.starts_with("undid"))),
        "{events:#?}"
    );
    // Front ends hear which commit went, by its full id (the review's `Applied … commit
    // X` line follows it).
    let short = applied.2.unwrap();
    assert!(
        events.iter().any(|e| matches!(e, Event::Undone { commits }
            if commits.len() == 1 && commits[0].len() == 40 && commits[0].starts_with(&short))),
        "{events:#?}"
    );
    assert_eq!(repo.read("src/greet.py"), GREET);
    assert_eq!(repo.git(&["log", "--format=%s"]).lines().count(), 1);
}

#[tokio::test]
async fn failed_blocks_are_reflected_to_the_model_and_the_fix_applies() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(BAD_EDIT));
    server.push_for_model("gpt-4o", Reply::text(FIXED_EDIT));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "say hey");
    let events = idle(&mut engine).await;
    let reflection = events
        .iter()
        .find_map(|e| match e {
            Event::Reflection {
                attempt,
                max,
                message,
            } => Some((*attempt, *max, message.clone())),
            _ => None,
        })
        .expect("a reflection");
    assert_eq!((reflection.0, reflection.1), (1, 3));
    let second = &server.requests()[1];
    assert!(
        second.last_user_text().unwrap().starts_with(&reflection.2),
        "the model gets exactly what the user sees (and the format reminder)"
    );
    assert!(
        reflection.2.contains("def greet(name):"),
        "did-you-mean lines: {}",
        reflection.2
    );
    let view = last_proposal(&events);
    assert!(view.failures.is_empty(), "{view:#?}");
    assert_eq!(view.files[0].hunks.len(), 1);
    assert!(
        view.files[0].hunks[0]
            .lines
            .iter()
            .any(|l| l.text.contains("'hey ' + name"))
    );
}

#[tokio::test]
async fn reflections_stop_after_three() {
    let server = MockServer::start().await;
    server.set_responder(|_| Reply::text(BAD_EDIT));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "say hey");
    let events = idle(&mut engine).await;
    assert_eq!(server.request_count(), 4, "the turn plus three reflections");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Warning { text } if text.contains("still failed after 3")))
    );
    // Said to every front end: a headless run has no review to point at.
    assert!(
        events.iter().any(|e| matches!(e, Event::Warning { text }
            if text == "1 edit block still failed after 3 reflections; not applied (each is shown with why)")),
        "{events:?}"
    );
    let view = last_proposal(&events);
    assert_eq!(view.failures.len(), 1);
    // Said once where it failed, then why (the view used to carry "block 1
    // (src/greet.py): " in its message too, and front ends said it twice).
    assert_eq!(
        view.failures[0].to_string(),
        "block 1 (src/greet.py): the SEARCH text does not match any lines of the file exactly; closest lines start at line 1"
    );
    assert_eq!(repo.read("src/greet.py"), GREET);
}

/// A reflection answered in prose (no blocks) fixes nothing: the failed block stays
/// with the proposal, is said, and is saved with the session (it was dropped, and the
/// review and a headless run forgot it; regression findings 4 and 12).
#[tokio::test]
async fn a_failure_the_reflection_reply_does_not_answer_stays() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(BAD_EDIT));
    server.push_for_model("gpt-4o", Reply::text("OK, that looks right to me."));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "say hey");
    let events = idle(&mut engine).await;
    assert_eq!(server.request_count(), 2, "the turn and one reflection");
    let view = last_proposal(&events);
    assert_eq!(view.failures.len(), 1, "{view:#?}");
    assert!(
        view.failures[0]
            .to_string()
            .starts_with("block 1 (src/greet.py): the SEARCH text does not match"),
        "{view:#?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Warning { text }
            if text == "1 edit block still failed after 1 reflection; not applied (each is shown with why)")),
        "{events:?}"
    );
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
    let mut engine = engine_with(&repo, &server, true);
    let events = until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    assert_eq!(last_proposal(&events).failures, view.failures);
    send(&engine, Op::Shutdown);
}

/// Beside good hunks too: a reflection reply with no block for the failed one's file
/// leaves that failure open (one with a block for it answers it: the test above).
#[tokio::test]
async fn a_failure_stays_beside_good_hunks_until_a_reply_answers_its_file() {
    let server = MockServer::start().await;
    let other =
        "README.md\n```\n<<<<<<< SEARCH\n# Greeter\n=======\n# Greeter app\n>>>>>>> REPLACE\n```\n";
    server.push_for_model("gpt-4o", Reply::text(format!("{TWO_EDITS}\n{BAD_EDIT}")));
    server.push_for_model("gpt-4o", Reply::text(other));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "/add README.md");
    idle(&mut engine).await;
    submit(&engine, "punctuate");
    let view = last_proposal(&idle(&mut engine).await);
    assert_eq!(view.failures.len(), 1, "{view:#?}");
    assert_eq!(view.failures[0].path.as_deref(), Some("src/greet.py"));
    assert_eq!(view.files.len(), 2, "{view:#?}");
    send(&engine, Op::Shutdown);
}

#[tokio::test]
async fn code_turns_wait_for_a_pending_review_and_discard_tells_the_model() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(FIXED_EDIT));
    server.push_for_model("gpt-4o", Reply::text("It greets."));
    server.push_for_model("gpt-4o", Reply::text("ok"));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "say hey");
    idle(&mut engine).await;

    submit(&engine, "and more");
    let events = idle(&mut engine).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::TurnFailed { message, error } if message == "and more" && error.starts_with("1 proposed hunk still waits for a decision"))),
        "{events:#?}"
    );
    submit(&engine, "/ask what does greet do?");
    let events = idle(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnFinished { reply, .. } if reply == "It greets."))
    );

    submit(&engine, "/discard");
    idle(&mut engine).await;
    submit(&engine, "and more");
    idle(&mut engine).await;
    let last = last_sent(&server);
    assert!(
        last.contains("did not accept") && last.contains("\n\nand more"),
        "{last}"
    );
    assert_eq!(repo.read("src/greet.py"), GREET);
}

#[tokio::test]
async fn the_users_own_changes_are_committed_first_and_stale_files_are_re_diffed() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    // The user's own uncommitted edit, in a part of the file the model does not touch.
    let mine = GREET.replace(
        "return greet(name).upper()",
        "return greet(name).upper()  # loud",
    );
    repo.write("src/greet.py", &mine);
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;

    // The file changes again after the proposal: applying must not overwrite it.
    let newer = mine.replace("# loud", "# very loud");
    repo.write("src/greet.py", &newer);
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    let events = idle(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Warning { text } if text.contains("changed on disk"))),
        "{events:#?}"
    );
    assert_eq!(repo.read("src/greet.py"), newer);

    // The hunks were found again in the new content, all pending: the user reviews
    // them again; applied, the user's change lands in its own commit.
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    idle(&mut engine).await;
    let text = repo.read("src/greet.py");
    assert!(
        text.contains("# very loud") && text.contains("waving at"),
        "{text}"
    );
    let subjects = repo.git(&["log", "--format=%s"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(subjects.len(), 3, "{subjects:?}");
    assert!(
        subjects[1].starts_with("chore: save local changes to src/greet.py"),
        "{subjects:?}"
    );
}

#[tokio::test]
async fn files_can_be_toggled_and_dropped() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server);
    send(
        &engine,
        Op::SetFileMode {
            path: "src/greet.py".into(),
            mode: FileMode::ReadOnly,
        },
    );
    send(
        &engine,
        Op::AddFiles {
            paths: vec!["README.md".into()],
            mode: FileMode::Editable,
        },
    );
    let events = until(
        &mut engine,
        |e| matches!(e, Event::Files { files } if files.len() == 2),
    )
    .await;
    let Some(Event::Files { files }) = events.last() else {
        unreachable!()
    };
    assert_eq!(files[0].path, "README.md");
    assert_eq!(files[0].mode, FileMode::Editable);
    assert_eq!(files[1].mode, FileMode::ReadOnly);
    assert!(files.iter().all(|f| f.tokens > 0 && f.exists));
    send(
        &engine,
        Op::DropFile {
            path: "README.md".into(),
        },
    );
    until(
        &mut engine,
        |e| matches!(e, Event::Files { files } if files.len() == 1),
    )
    .await;
}

/// Every op that changes the chat's files ends, like every other, with `Idle` once
/// nothing more follows: a front end that waits for it after each op (the ACP agent
/// did, for an editor's attached file) never waits for ever.
#[tokio::test]
async fn changing_the_chat_files_ends_in_idle_like_every_op() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server);
    let ops = [
        Op::AddFiles {
            paths: vec!["README.md".into()],
            mode: FileMode::ReadOnly,
        },
        Op::SetFileMode {
            path: "README.md".into(),
            mode: FileMode::Editable,
        },
        Op::DropFile {
            path: "README.md".into(),
        },
    ];
    for op in ops {
        let said = format!("{op:?}");
        send(&engine, op);
        let events = until(&mut engine, |e| matches!(e, Event::Idle)).await;
        assert!(
            events.iter().any(|e| matches!(e, Event::Files { .. })),
            "{said}: {events:?}"
        );
    }
}

const README_EDIT: &str = "README.md
```
<<<<<<< SEARCH
# Greeter
=======
# Greeter, rewritten
>>>>>>> REPLACE
```
";

fn cautions(view: &ProposalView, path: &str) -> Vec<Caution> {
    view.files
        .iter()
        .find(|f| f.path == path)
        .map(|f| f.cautions.clone())
        .unwrap_or_else(|| panic!("no {path} in {view:?}"))
}

#[tokio::test]
async fn edits_outside_the_chat_are_marked_and_never_accepted_in_bulk() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(format!("{TWO_EDITS}\n{README_EDIT}")));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "change them");
    let view = last_proposal(&idle(&mut engine).await);
    assert_eq!(cautions(&view, "README.md"), [Caution::OutsideChat]);
    assert!(cautions(&view, "src/greet.py").is_empty());

    // Dropped from the chat while pending: marked too.
    send(
        &engine,
        Op::DropFile {
            path: "src/greet.py".into(),
        },
    );
    let events = until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    assert_eq!(
        cautions(&last_proposal(&events), "src/greet.py"),
        [Caution::OutsideChat]
    );
    idle(&mut engine).await;
    send(
        &engine,
        Op::AddFiles {
            paths: vec!["src/greet.py".into()],
            mode: FileMode::Editable,
        },
    );
    idle(&mut engine).await;

    // `A` then apply: README.md stays as it was.
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    idle(&mut engine).await;
    assert_eq!(repo.read("README.md"), "# Greeter\n");
    assert!(repo.read("src/greet.py").contains("waving at"));
}

#[tokio::test]
async fn edits_to_read_only_files_are_refused_and_the_model_is_told() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(README_EDIT));
    server.push_for_model("gpt-4o", Reply::text("Understood, I will leave it."));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    send(
        &engine,
        Op::AddFiles {
            paths: vec!["README.md".into()],
            mode: FileMode::ReadOnly,
        },
    );
    idle(&mut engine).await;
    submit(&engine, "retitle the readme");
    idle(&mut engine).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the refusal goes back to the model");
    let reflection = &requests[1].messages.last().unwrap().text;
    assert!(
        reflection.contains("read-only in this chat"),
        "{reflection}"
    );
    assert_eq!(repo.read("README.md"), "# Greeter\n");
}

#[tokio::test]
async fn after_esc_no_reflection_starts_by_itself() {
    let server = MockServer::start().await;
    // A failing block arrives, then the server keeps the stream open.
    server.push_for_model("gpt-4o", Reply::text(BAD_EDIT).then_hang());
    server.push_for_model("gpt-4o", Reply::text("a reflection reply"));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "change it");
    // Wait for the whole block to have arrived.
    let mut text = String::new();
    while !text.contains(">>>>>>> REPLACE") {
        if let Event::Delta { text: t } = until(&mut engine, |e| matches!(e, Event::Delta { .. }))
            .await
            .pop()
            .unwrap()
        {
            text.push_str(&t);
        }
    }
    send(&engine, Op::Cancel);
    let events = idle(&mut engine).await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::Reflection { .. })),
        "{events:#?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.requests().len(), 1, "no follow-up request after Esc");
}

/// A repository of `n` small Python files (and `src/greet.py`): its map takes a
/// while to build.
fn many_files_repo(n: usize) -> TempRepo {
    let files: Vec<(String, String)> = (0..n)
        .map(|i| {
            (
                format!("src/m{i}.py"),
                format!("def f{i}(x):\n    return g{i}(x) + {i}\n\n\ndef g{i}(y):\n    return y\n"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = TempRepo::with_files(&borrowed);
    repo.write("src/greet.py", GREET);
    repo
}

/// A message waiting for the repo map, then Esc: it comes back to the user and is
/// never sent by itself once the map is ready. (`always` rescans before every message,
/// so the message surely waits: the first map of a few hundred files is built before
/// the message arrives on a fast machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_esc_a_message_waiting_for_the_map_is_not_sent_later() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text("a reply nobody asked for"));
    let repo = many_files_repo(400);
    let always = |s: &mut Settings| s.map_refresh = tern::repomap::MapRefresh::Always;
    let mut engine = engine_tuned(&repo, &server, false, always);
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    submit(&engine, "hello");
    send(&engine, Op::Cancel);
    let events = until(&mut engine, |e| matches!(e, Event::TurnFailed { .. })).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnFailed { error, message }
            if error.contains("cancelled") && message == "hello")),
        "{events:#?}"
    );
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(server.requests().is_empty(), "nothing was sent after Esc");
}

/// The state of the repository's newest session (engines in this process save in the
/// test state directory).
fn newest_state(repo: &TempRepo) -> tern::engine::persist::SessionFile {
    let root = repo.path().canonicalize().unwrap();
    let newest = tern::engine::persist::Store::for_repo(&root)
        .pick(&tern::engine::persist::Resume::Newest)
        .unwrap();
    tern::engine::persist::load(&newest.dir.join("state.json"))
        .unwrap()
        .unwrap()
}

/// A message waiting for the repo map when tern quits (the workspace's signal, or its
/// quit) or when a signal cancels it (headless sends Cancel first) is no turn yet, but
/// is not lost: it is kept with the session, given back and said on resume, and kept
/// until a message is sent. (`always` rescans before every message, so the message
/// surely waits: the Shutdown queued right behind it finds it waiting.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_waiting_for_the_map_at_quit_is_kept_and_given_back_on_resume() {
    let server = MockServer::start().await;
    let repo = many_files_repo(300);
    let always = |s: &mut Settings| s.map_refresh = tern::repomap::MapRefresh::Always;
    for (cancel_first, text) in [(false, "a message typed with care"), (true, "and another")] {
        let mut engine = engine_tuned(&repo, &server, cancel_first, always);
        until(&mut engine, |e| matches!(e, Event::Map(_))).await;
        submit(&engine, text);
        if cancel_first {
            send(&engine, Op::Cancel);
        }
        send(&engine, Op::Shutdown);
        let events = until(&mut engine, |e| matches!(e, Event::Exited)).await;
        assert!(
            !cancel_first
                || events
                    .iter()
                    .any(|e| matches!(e, Event::TurnFailed { error, .. }
                    if error.contains("kept with the session"))),
            "{events:#?}"
        );
        assert_eq!(newest_state(&repo).unsent.as_deref(), Some(text));
        assert!(server.requests().is_empty(), "nothing was sent");

        let mut engine = engine_tuned(&repo, &server, true, always);
        let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Resumed { unsent: Some(u), .. } if u == text)),
            "{events:#?}"
        );
        assert!(
            events.iter().any(|e| matches!(e, Event::Warning { text: w }
                if w.contains(&format!("\"{text}\" was never sent")))),
            "{events:#?}"
        );
        send(&engine, Op::Shutdown);
        until(&mut engine, |e| matches!(e, Event::Exited)).await;
        assert_eq!(
            newest_state(&repo).unsent.as_deref(),
            Some(text),
            "kept until a message is sent"
        );
    }
    // Sent: no longer kept.
    server.push_for_model("gpt-4o", Reply::text("Sent at last."));
    let mut engine = engine_tuned(&repo, &server, true, always);
    until(&mut engine, |e| matches!(e, Event::Map(_))).await;
    submit(&engine, "and another");
    idle(&mut engine).await;
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
    assert_eq!(newest_state(&repo).unsent, None);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn pending_proposals_are_saved_with_the_session_and_restored_rechecked() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    let view = last_proposal(&idle(&mut engine).await);
    let ids: Vec<String> = view.files[0].hunks.iter().map(|h| h.id.clone()).collect();
    send(
        &engine,
        Op::Review(ReviewOp::Hunk {
            id: ids[0].clone(),
            decision: Decision::Reject,
        }),
    );
    until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    // Resumed: the same hunks, the decision kept (the file did not change).
    let mut engine = engine_with(&repo, &server, true);
    let events = until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    let view = last_proposal(&events);
    let restored: Vec<(String, Decision)> = view.files[0]
        .hunks
        .iter()
        .map(|h| (h.id.clone(), h.decision))
        .collect();
    assert_eq!(
        restored,
        [
            (ids[0].clone(), Decision::Reject),
            (ids[1].clone(), Decision::Pending)
        ]
    );
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    // The file changed meanwhile: what still applies is back, to review again; what
    // does not is listed as failed.
    repo.write(
        "src/greet.py",
        GREET.replace("return 'wave at ' + name", "return 'WAVE ' + name"),
    );
    let mut engine = engine_with(&repo, &server, true);
    let events = until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    let view = last_proposal(&events);
    assert_eq!(view.files[0].hunks.len(), 1);
    assert_eq!(view.files[0].hunks[0].decision, Decision::Pending);
    assert_eq!(view.failures.len(), 1, "{:?}", view.failures);
    send(&engine, Op::Shutdown);
}

/// The failed blocks and suggested commands shown with a pending proposal come back
/// with it on resume.
#[tokio::test]
async fn a_resumed_proposal_keeps_its_failed_blocks_and_suggested_commands() {
    let server = MockServer::start().await;
    server.push_for_model(
        "gpt-4o",
        Reply::text(format!(
            "{TWO_EDITS}\n{BAD_EDIT}\nThen run:\n\n```bash\npython -m pytest\n```\n"
        )),
    );
    let repo = repo();
    let no_reflections = |s: &mut Settings| s.max_reflections = 0;
    let mut engine = engine_tuned(&repo, &server, false, no_reflections);
    submit(&engine, "punctuate");
    let before = last_proposal(&idle(&mut engine).await);
    assert_eq!(before.failures.len(), 1, "{before:?}");
    assert_eq!(before.shell_commands, ["python -m pytest"]);
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    let mut engine = engine_tuned(&repo, &server, true, no_reflections);
    let events = until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    let after = last_proposal(&events);
    assert_eq!(after.failures, before.failures);
    assert_eq!(after.shell_commands, before.shell_commands);
    assert_eq!(after.files, before.files);
    send(&engine, Op::Shutdown);
}

/// A file made read-only after its hunks were proposed is not written, even with its
/// hunks accepted one by one; made editable again, it is.
#[tokio::test]
async fn a_file_made_read_only_while_pending_is_not_written() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: punctuate"));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    let read_only = |mode| Op::SetFileMode {
        path: "src/greet.py".into(),
        mode,
    };
    send(&engine, read_only(FileMode::ReadOnly));
    send(
        &engine,
        Op::Review(ReviewOp::File {
            path: "src/greet.py".into(),
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    let events = until(&mut engine, |e| matches!(e, Event::Error { .. })).await;
    let Some(Event::Error { text }) = events.last() else {
        unreachable!()
    };
    assert!(text.contains("src/greet.py is read-only"), "{text}");
    assert_eq!(repo.read("src/greet.py"), GREET);

    send(&engine, read_only(FileMode::Editable));
    send(&engine, Op::Review(ReviewOp::Apply));
    until(&mut engine, |e| matches!(e, Event::Applied { .. })).await;
    assert!(repo.read("src/greet.py").contains("waving at"));
}

#[tokio::test]
async fn adding_an_ignored_file_to_the_chat_warns() {
    let server = MockServer::start().await;
    let repo = TempRepo::with_files(&[(".gitignore", ".env\n"), ("src/greet.py", GREET)]);
    repo.write(".env", "TOKEN=x\n");
    let mut engine = engine(&repo, &server);
    send(
        &engine,
        Op::AddFiles {
            paths: vec![".env".into()],
            mode: FileMode::ReadOnly,
        },
    );
    let events = until(&mut engine, |e| matches!(e, Event::Warning { .. })).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Warning { text } if text.contains("git ignores .env"))),
        "{events:#?}"
    );
}

/// One good block and one that fails: a hunk to review and a reflection.
fn good_and_bad() -> String {
    format!("{FIXED_EDIT}\n{BAD_EDIT}")
}

/// Applying while a reflection streams would write hunks the reply may still add to:
/// the engine does one thing at a time and says why it waits.
#[tokio::test]
async fn apply_waits_while_a_reflection_streams() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(good_and_bad()));
    server.push_for_model(
        "gpt-4o",
        Reply::text("No further changes.").with_start_delay(Duration::from_secs(2)),
    );
    server.push_for_model("gpt-4o-mini", Reply::text("fix: greet with hey"));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "say hey");
    until(&mut engine, |e| matches!(e, Event::Reflection { .. })).await;
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    let refused = until(&mut engine, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        refused.iter().any(
            |e| matches!(e, Event::Error { text } if text.contains("a reply is still streaming"))
        ),
        "{refused:#?}"
    );
    assert_eq!(
        repo.read("src/greet.py"),
        GREET,
        "nothing written meanwhile"
    );
    idle(&mut engine).await;
    send(&engine, Op::Review(ReviewOp::Apply));
    let landed = idle(&mut engine).await;
    assert!(
        landed
            .iter()
            .any(|e| matches!(e, Event::Applied { accepted: 1, .. })),
        "{landed:#?}"
    );
    assert!(repo.read("src/greet.py").contains("'hey ' + name"));
}

/// A reply written elsewhere (`Op::ProposeReply`, what `tern apply` sends) is proposed
/// as the model's would be, but nothing goes to the model: its failed block is shown,
/// never reflected.
#[tokio::test]
async fn a_given_reply_is_proposed_without_asking_the_model() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server);
    send(
        &engine,
        Op::ProposeReply {
            reply: good_and_bad(),
        },
    );
    let events = idle(&mut engine).await;
    let view = last_proposal(&events);
    assert_eq!(view.files[0].hunks.len(), 1, "{view:#?}");
    assert_eq!(view.failures.len(), 1, "{view:#?}");
    assert!(!events.iter().any(|e| matches!(e, Event::Reflection { .. })));
    assert_eq!(server.request_count(), 0, "nothing was sent");

    send(
        &engine,
        Op::ProposeReply {
            reply: "no edits here".into(),
        },
    );
    let events = idle(&mut engine).await;
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Error { text } if text.contains("proposed hunks still wait"))
        ),
        "the pending proposal is not replaced: {events:#?}"
    );
}

/// After `/undo` the model is told which of its edits are gone (the commit's diff),
/// with the user's next message; the front end gets that note apart from the user's
/// words.
#[tokio::test]
async fn an_undone_commit_is_told_to_the_model_as_a_note() {
    let server = MockServer::start().await;
    script_two_edits(&server, "Understood.");
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    submit(&engine, "/apply all");
    idle(&mut engine).await;
    submit(&engine, "/undo");
    idle(&mut engine).await;
    assert_eq!(repo.read("src/greet.py"), GREET);
    submit(&engine, "what now?");
    let events = idle(&mut engine).await;
    let (text, notes) = events
        .iter()
        .find_map(|e| match e {
            Event::TurnStarted { text, notes, .. } => Some((text.clone(), notes.clone())),
            _ => None,
        })
        .expect("the turn started");
    assert_eq!(text, "what now?");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].starts_with("I undid your commit"), "{}", notes[0]);
    let sent = last_sent(&server);
    assert!(sent.contains("I undid your commit"), "{sent}");
    assert!(
        sent.contains("+    return 'hello, ' + name + '!'"),
        "the undone diff: {sent}"
    );
    assert!(
        sent.contains("```\n\nwhat now?"),
        "the user's words follow: {sent}"
    );
}

/// `/commit MESSAGE` commits the user's changes with their message.
#[tokio::test]
async fn commit_uses_the_message_given() {
    let server = MockServer::start().await;
    let repo = repo();
    repo.write("README.md", "# Greeter\n\nSays hello.\n");
    let mut engine = engine(&repo, &server);
    submit(&engine, "/commit docs: say what the greeter does");
    idle(&mut engine).await;
    assert_eq!(
        repo.git(&["log", "--format=%s", "-1"]).trim(),
        "docs: say what the greeter does"
    );
    submit(&engine, "/commit");
    let events = idle(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { text } if text == "nothing to commit")),
        "{events:#?}"
    );
}

/// `--resume` brings back the session as it was when tern quit, not as of its last
/// turn: mode, files and their modes, model, and the conversation as the chat showed
/// it. A model named for the new start wins over the saved one.
#[tokio::test]
async fn resume_restores_mode_files_model_and_conversation() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text("Hi there."));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "hello");
    idle(&mut engine).await;
    for text in ["/ask", "/model gpt-4o-mini"] {
        submit(&engine, text);
    }
    send(
        &engine,
        Op::AddFiles {
            paths: vec!["README.md".into()],
            mode: FileMode::ReadOnly,
        },
    );
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    let mut engine = engine_with(&repo, &server, true);
    let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Ready { model, mode, .. }
            if model == "gpt-4o-mini" && *mode == tern::engine::ChatMode::Ask)),
        "{events:#?}"
    );
    let transcript = events
        .iter()
        .find_map(|e| match e {
            Event::Resumed { transcript, .. } => Some(transcript.clone()),
            _ => None,
        })
        .expect("the conversation is sent");
    let texts: Vec<&str> = transcript.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, ["hello", "Hi there."]);
    assert!(
        events.iter().any(|e| matches!(e, Event::Files { files }
            if files.iter().any(|f| f.path == "README.md" && f.mode == FileMode::ReadOnly))),
        "{events:#?}"
    );
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    let root = repo.path().canonicalize().unwrap();
    let mut engine = tern::engine::spawn(EngineConfig {
        settings: Settings {
            api_base: server.base_url(),
            api_key: Some(ApiKey::new("sk-test")),
            model: "gpt-4o".into(),
            ..Settings::default()
        },
        cwd: root.clone(),
        root,
        record: None,
        replay: None,
        editable: vec![],
        read_only: vec![],
        map_cache: tern::repomap::CacheLocation::Disabled,
        resume: Some(tern::engine::persist::Resume::Newest),
        role: Default::default(),
        model_chosen: true,
    })
    .unwrap();
    let events = until(&mut engine, |e| matches!(e, Event::Ready { .. })).await;
    assert!(
        matches!(events.last(), Some(Event::Ready { model, .. }) if model == "gpt-4o"),
        "{events:#?}"
    );
    send(&engine, Op::Shutdown);
}

/// The notes owed to the model (here, the hunks of a discarded proposal) go with the
/// next message, so the gauge counts them before anything is typed, and `/tokens`
/// (which itself sends nothing) says the same.
#[tokio::test]
async fn the_gauge_and_tokens_count_the_notes_owed_to_the_model_alike() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    submit(&engine, "/discard");
    let events = idle(&mut engine).await;
    let current = |report: &tern::context::BudgetReport| {
        report
            .sections
            .iter()
            .find(|s| s.section == tern::context::Section::Cur)
            .map_or(0, |s| s.tokens)
    };
    let gauge = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Budget(report) => Some(current(report)),
            _ => None,
        })
        .expect("a budget after the discard");
    assert!(gauge > 20, "the note is counted: {gauge}");
    send(
        &engine,
        Op::Draft {
            text: tern::engine::input::draft_message("/tokens").into(),
            mode: None,
        },
    );
    submit(&engine, "/tokens");
    let events = until(&mut engine, |e| matches!(e, Event::Output { .. })).await;
    let drafted = events
        .iter()
        .find_map(|e| match e {
            Event::Budget(report) => Some(current(report)),
            _ => None,
        })
        .expect("the draft's budget");
    assert_eq!(drafted, gauge, "a command adds nothing to the message");
    let Some(Event::Output { text, .. }) = events.last() else {
        unreachable!()
    };
    assert!(
        text.lines()
            .any(|l| l.contains("current") && l.trim_start().starts_with(&gauge.to_string())),
        "{text}"
    );
}

/// A decided proposal that the user leaves for a new request ends at once: the front
/// ends get the empty proposal (no pane or badge keeps it) and the model is told its
/// edits were not applied.
#[tokio::test]
async fn a_proposal_left_for_a_new_request_ends_visibly_and_is_told() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o", Reply::text("Something else, then."));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Reject,
        }),
    );
    submit(&engine, "never mind; rename wave");
    let events = idle(&mut engine).await;
    let ended = events
        .iter()
        .position(|e| matches!(e, Event::Proposal(p) if p.files.is_empty()))
        .expect("the empty proposal is sent");
    let started = events
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { .. }))
        .unwrap();
    assert!(ended < started, "{events:#?}");
    let Event::TurnStarted { notes, .. } = &events[started] else {
        unreachable!()
    };
    assert!(
        notes.iter().any(|n| n.contains("waving at")),
        "the model hears which hunks were not applied: {notes:#?}"
    );
}

/// `/show` shows the commit tern just made: its message and its diff.
#[tokio::test]
async fn show_shows_the_commit_tern_just_made() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: punctuate the greeting"));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    for text in ["punctuate", "/apply all", "/show"] {
        submit(&engine, text);
        if text != "/show" {
            idle(&mut engine).await;
        }
    }
    let events = until(&mut engine, |e| matches!(e, Event::Output { .. })).await;
    let Some(Event::Output { title, text }) = events.last() else {
        unreachable!()
    };
    let head = repo.git(&["rev-parse", "--short=7", "HEAD"]);
    assert_eq!(title, &format!("commit {}", head.trim()));
    assert!(text.contains("fix: punctuate the greeting"), "{text}");
    assert!(
        text.contains("+    return 'hello, ' + name + '!'"),
        "{text}"
    );
}

/// `/reject ID REASON` (the Review pane's `N`) rejects a hunk and the model hears why,
/// with the hunk, in the next message.
#[tokio::test]
async fn a_reason_given_for_a_rejected_hunk_reaches_the_model() {
    let server = MockServer::start().await;
    script_two_edits(&server, "Understood.");
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    let view = last_proposal(&idle(&mut engine).await);
    let hunks = &view.files[0].hunks;
    let (keep, drop) = (hunks[0].id.clone(), hunks[1].id.clone());
    submit(
        &engine,
        &format!("/reject {drop} waving is the wrong verb here"),
    );
    send(
        &engine,
        Op::Review(ReviewOp::Hunk {
            id: keep,
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    until(&mut engine, |e| matches!(e, Event::Applied { .. })).await;
    idle(&mut engine).await;
    submit(&engine, "ok");
    idle(&mut engine).await;
    let told = last_sent(&server);
    assert!(told.contains("did not accept these hunks"), "{told}");
    assert!(
        told.contains(&format!("- hunk {drop}: waving is the wrong verb here")),
        "{told}"
    );
}

/// One block changing two lines with unchanged lines between them: one hunk, two parts.
const GREET_AND_SHOUT: &str = "src/greet.py
```python
<<<<<<< SEARCH
def greet(name):
    return 'hello ' + name


def shout(name):
    return greet(name).upper()
=======
def greet(name):
    return 'hi ' + name


def shout(name):
    return greet(name).upper() + '!'
>>>>>>> REPLACE
```
";

fn hunk_ids(view: &ProposalView) -> Vec<String> {
    view.files[0].hunks.iter().map(|h| h.id.clone()).collect()
}

/// Sends a message and waits for the proposal its reply makes.
async fn ask(engine: &mut EngineHandle, text: &str) -> ProposalView {
    send(engine, Op::Submit { text: text.into() });
    last_proposal(&idle(engine).await)
}

async fn next_proposal(engine: &mut EngineHandle) -> (Vec<Event>, ProposalView) {
    let events = until(engine, |e| matches!(e, Event::Proposal(_))).await;
    let view = last_proposal(&events);
    (events, view)
}

#[tokio::test]
async fn a_hunk_split_and_edited_by_the_user_lands_and_the_model_hears_whose_lines_they_are() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(GREET_AND_SHOUT));
    server.push_for_model("gpt-4o-mini", Reply::text("feat: shout louder"));
    server.push_for_model("gpt-4o", Reply::text("Noted."));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    let view = ask(&mut engine, "greet shorter, shout louder").await;
    let whole = hunk_ids(&view);
    assert_eq!(whole.len(), 1, "{view:#?}");

    // `/split` (what `s` sends as `ReviewOp::Split`): two parts, each with its own id.
    send(
        &engine,
        crate::support::typed(&format!("/split {}", whole[0])),
    );
    let (events, view) = next_proposal(&mut engine).await;
    let parts = hunk_ids(&view);
    assert_eq!(parts.len(), 2);
    assert!(!parts.contains(&whole[0]));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { text } if text.starts_with(&format!("split hunk {} into 2", whole[0])))),
        "{events:#?}"
    );
    // A part has a single change: the engine says so and the proposal stays.
    send(
        &engine,
        Op::Review(ReviewOp::Split {
            id: parts[0].clone(),
        }),
    );
    let (events, view) = next_proposal(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Error { text } if text.contains("cannot be split"))),
        "{events:#?}"
    );
    assert_eq!(hunk_ids(&view), parts);

    // `e`: the part's exact lines, then the user's version of them.
    send(
        &engine,
        Op::HunkText {
            id: parts[1].clone(),
        },
    );
    let events = until(&mut engine, |e| matches!(e, Event::HunkText { .. })).await;
    let Some(Event::HunkText { id, path, text }) = events.last() else {
        panic!("{events:#?}")
    };
    assert_eq!((id, path.as_str()), (&parts[1], "src/greet.py"));
    assert_eq!(text, "    return greet(name).upper() + '!'\n");
    let mine = "    return greet(name).upper() + '!!!'\n";
    send(
        &engine,
        Op::Review(ReviewOp::Edit {
            id: parts[1].clone(),
            new_lines: mine.into(),
        }),
    );
    let (_, view) = next_proposal(&mut engine).await;
    let edited = &view.files[0].hunks[1];
    assert!(
        edited.edited && edited.decision == Decision::Accept,
        "{edited:#?}"
    );
    assert!(edited.lines.iter().any(|l| l.text.ends_with("'!!!'")));

    // An edit the engine refuses comes back whole, and nothing changes.
    let bad = "    return greet(name)\u{0}\n";
    send(
        &engine,
        Op::Review(ReviewOp::Edit {
            id: edited.id.clone(),
            new_lines: bad.into(),
        }),
    );
    let events = until(&mut engine, |e| matches!(e, Event::Proposal(_))).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::EditRefused { id, new_lines, reason }
            if id == &edited.id && new_lines == bad && reason.contains("NUL"))),
        "{events:#?}"
    );
    assert_eq!(last_proposal(&events), view);

    send(
        &engine,
        Op::Review(ReviewOp::Hunk {
            id: parts[0].clone(),
            decision: Decision::Reject,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    let events = idle(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Applied { accepted: 1, .. })),
        "{events:#?}"
    );
    let text = repo.read("src/greet.py");
    assert!(text.contains("upper() + '!!!'"), "{text}");
    assert!(
        text.contains("'hello ' + name"),
        "the rejected part is not written"
    );

    // The model hears that the applied lines are the user's, and what it proposed that
    // was not applied.
    send(
        &engine,
        Op::Submit {
            text: "thanks".into(),
        },
    );
    idle(&mut engine).await;
    let request = server
        .requests()
        .into_iter()
        .filter(|r| r.model == "gpt-4o")
        .nth(1)
        .unwrap();
    let told = request.last_user_text().unwrap();
    assert!(
        told.contains("The user rewrote some of your edits"),
        "{told}"
    );
    assert!(
        told.contains("+    return greet(name).upper() + '!!!'"),
        "{told}"
    );
    assert!(
        told.contains("did not accept these hunks") && told.contains("+    return 'hi ' + name"),
        "{told}"
    );
}

/// An engine whose reply proposed `GREET_AND_SHOUT`, one hunk, and that hunk's id.
async fn greeted_and_shouted() -> (MockServer, TempRepo, EngineHandle, String) {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(GREET_AND_SHOUT));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    let view = ask(&mut engine, "greet shorter, shout louder").await;
    let whole = hunk_ids(&view)[0].clone();
    (server, repo, engine, whole)
}

/// Issue 24: the id an edited hunk had, and the ids split parts came from, are saved
/// with the proposal: after `tern --resume` `/reject OLD` and `/split OLD` still name
/// what they became (the aliases were lost with the session, and `/split` did not
/// resolve an alias at all).
#[tokio::test]
async fn an_edited_hunks_old_id_still_names_it_after_resume_for_reject_and_split() {
    let (server, repo, mut engine, whole) = greeted_and_shouted().await;
    send(&engine, Op::HunkText { id: whole.clone() });
    let events = until(&mut engine, |e| matches!(e, Event::HunkText { .. })).await;
    let Some(Event::HunkText { text, .. }) = events.last() else {
        panic!("{events:#?}")
    };
    let mine = text.replace("+ '!'", "+ '!!!'");
    send(
        &engine,
        Op::Review(ReviewOp::Edit {
            id: whole.clone(),
            new_lines: mine,
        }),
    );
    let (_, view) = next_proposal(&mut engine).await;
    let edited = hunk_ids(&view);
    assert_eq!(edited.len(), 1, "{view:#?}");
    assert_ne!(edited[0], whole);
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    let mut engine = engine_with(&repo, &server, true);
    until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
    send(&engine, crate::support::typed(&format!("/reject {whole}")));
    let (events, view) = next_proposal(&mut engine).await;
    assert_eq!(hunk_ids(&view), edited, "{events:#?}");
    assert_eq!(
        view.files[0].hunks[0].decision,
        Decision::Reject,
        "{events:#?}"
    );
    send(&engine, crate::support::typed(&format!("/split {whole}")));
    let (events, view) = next_proposal(&mut engine).await;
    let parts = hunk_ids(&view);
    assert_eq!(parts.len(), 2, "{events:#?}");
    assert!(
        view.files[0]
            .hunks
            .iter()
            .all(|h| h.decision == Decision::Reject),
        "the parts keep the decision: {view:#?}"
    );
    send(&engine, Op::Shutdown);
}

/// A pending hunk whose lines changed while tern was not running comes back, on
/// resume, as a failed hunk with its lines and the reason (it used to be dropped with
/// only a message, and a second resume lost even that), and the rest stays reviewable.
#[tokio::test]
async fn a_resumed_hunk_whose_lines_changed_comes_back_failed_with_its_text() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
    repo.write(
        "src/greet.py",
        GREET.replace("return 'hello ' + name", "return 'hi ' + name"),
    );
    for _ in 0..2 {
        let mut engine = engine_with(&repo, &server, true);
        let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
        let proposal = last_proposal(&events);
        assert_eq!(proposal.files[0].hunks.len(), 1, "the other hunk stays");
        let [failure] = proposal.failures.as_slice() else {
            panic!("{:#?}", proposal.failures)
        };
        let hunk = failure.hunk.as_deref().expect("the stale hunk's lines");
        assert!(
            hunk.contains("-    return 'hello ' + name")
                && hunk.contains("+    return 'hello, ' + name + '!'"),
            "{hunk}"
        );
        let said = failure.to_string();
        assert!(
            said.starts_with(
                "src/greet.py: a proposed hunk no longer applies: the lines it changes"
            ),
            "{said}"
        );
        send(&engine, Op::Shutdown);
        until(&mut engine, |e| matches!(e, Event::Exited)).await;
    }
}

/// The weak model is asked for the commit message before anything is written, so a
/// save of the user's while it answers is never taken into tern's commit. That file is
/// stale, exactly as at the preflight: nothing is written, its hunks are found again in
/// the new content and wait for review (kept with the session), and no word says
/// "applied" or "written".
#[tokio::test]
async fn a_save_while_the_commit_message_is_written_sends_the_hunks_back_to_review() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model(
        "gpt-4o-mini",
        Reply::text("fix: punctuate").with_start_delay(std::time::Duration::from_secs(2)),
    );
    let repo = repo();
    let base = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    send(
        &engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    // While the weak model answers, the user saves the file.
    let asked = std::time::Instant::now();
    while server.requests().len() < 2 && asked.elapsed().as_secs() < 10 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(repo.read("src/greet.py"), GREET, "nothing written yet");
    let saved = format!("{GREET}# the user's line\n");
    repo.write("src/greet.py", &saved);
    let events = idle(&mut engine).await;
    assert_eq!(repo.read("src/greet.py"), saved);
    let log = repo.git(&["log", "--format=%s", &format!("{base}..HEAD")]);
    assert_eq!(log, "", "no commit: the save is the user's, uncommitted");
    assert_eq!(repo.git(&["status", "--porcelain"]), " M src/greet.py\n");
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::NotApplied {
                reason: NotAppliedReason::Stale
            }
        )),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Applied { .. })),
        "nothing was applied: {events:?}"
    );
    let said: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { text } | Event::Error { text } | Event::Notice { text } => {
                Some(format!("{text}\n"))
            }
            _ => None,
        })
        .collect();
    assert!(said.contains("src/greet.py changed on disk"), "{said}");
    assert!(!said.contains("written,"), "{said}");
    // Both hunks are back: pending, or (the save touched its context) failed with
    // its lines (the headless test sees them in the saved session).
    let view = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Proposal(view) => Some(view),
            _ => None,
        })
        .expect("the proposal is published");
    let hunks: Vec<_> = view.files.iter().flat_map(|f| &f.hunks).collect();
    let failed = view.failures.iter().filter(|f| f.hunk.is_some()).count();
    assert_eq!((hunks.len(), failed), (1, 1), "{view:?}");
    assert!(hunks.iter().all(|h| h.decision == Decision::Pending));
}

/// `d` after part of a proposal was applied said "nothing was written" although its
/// accepted hunks had just been written and committed: it says what it discards.
#[tokio::test]
async fn discarding_after_a_partial_apply_says_only_the_rest_goes() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: punctuate"));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    let events = idle(&mut engine).await;
    let first = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Proposal(view) => view.files.first().and_then(|f| f.hunks.first()),
            _ => None,
        })
        .expect("hunks")
        .id
        .clone();
    send(
        &engine,
        Op::Review(ReviewOp::Hunk {
            id: first,
            decision: Decision::Accept,
        }),
    );
    send(&engine, Op::Review(ReviewOp::Apply));
    let events = idle(&mut engine).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Applied { .. })),
        "{events:?}"
    );
    submit(&engine, "/discard");
    let events = idle(&mut engine).await;
    let said: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { text } => Some(format!("{text}\n")),
            _ => None,
        })
        .collect();
    assert!(!said.contains("nothing was written"), "{said}");
    assert!(said.contains("discarded the 1 hunk not applied"), "{said}");
}

/// A discard before anything was applied speaks of no hunk "applied earlier"
/// (regression finding 5).
#[tokio::test]
async fn discarding_before_any_apply_says_nothing_was_written() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    let mut engine = engine(&repo, &server);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    submit(&engine, "/discard");
    let said: Vec<String> = idle(&mut engine)
        .await
        .into_iter()
        .filter_map(|e| match e {
            Event::Notice { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["discarded the 2 hunks (nothing was written)"]);
    assert_eq!(repo.read("src/greet.py"), GREET);
}

/// The engine reads no `/` in a message: slash text is parsed where it is typed, so a
/// message that starts with `/` (as an editor integration may send one) is a message.
#[tokio::test]
async fn a_message_that_starts_with_a_slash_goes_to_the_model() {
    let repo = repo();
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text("It is a path."));
    let mut engine = engine(&repo, &server);
    send(
        &engine,
        Op::Submit {
            text: "/tokens is a path here".into(),
        },
    );
    let events = idle(&mut engine).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnFinished { reply, .. } if reply == "It is a path.")),
        "{events:#?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Output { .. })));
    let last = last_sent(&server);
    assert!(last.starts_with("/tokens is a path here"), "{last}");
}

/// Every event an op causes carries the op's id, through the work it starts (the
/// reply's stream, the landing on its blocking thread); what the engine says on its own
/// carries none.
#[tokio::test]
async fn events_carry_the_id_of_the_op_that_caused_them() {
    let repo = repo();
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(FIXED_EDIT));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: say hey"));
    let mut engine = engine(&repo, &server);
    let ask = engine.ops.send(crate::support::typed("say hey")).unwrap();
    let asked = answered(&mut engine, ask).await;
    assert!(matches!(
        asked[0],
        Envelope {
            op: None,
            event: Event::Ready { .. }
        }
    ));
    for wanted in ["turn_started", "delta", "turn_finished", "proposal"] {
        let tagged: Vec<_> = asked
            .iter()
            .filter(|e| {
                serde_json::to_value(tern::headless::json::Event::from(&e.event)).unwrap()["event"]
                    == wanted
            })
            .map(|e| e.op)
            .collect();
        assert!(!tagged.is_empty(), "no {wanted}: {asked:#?}");
        assert!(
            tagged.iter().all(|op| *op == Some(ask)),
            "{wanted}: {tagged:?}"
        );
    }
    let apply = engine
        .ops
        .send(crate::support::typed("/apply all"))
        .unwrap();
    assert_ne!(apply, ask);
    let applied = answered(&mut engine, apply).await;
    assert!(
        applied.iter().any(
            |e| matches!(e, Envelope { op, event: Event::Applied { .. } } if *op == Some(apply))
        ),
        "{applied:#?}"
    );
}

/// The envelopes up to the `Idle` that answers `op`.
async fn answered(engine: &mut EngineHandle, op: OpId) -> Vec<Envelope> {
    let mut seen = Vec::new();
    loop {
        let envelope = tokio::time::timeout(Duration::from_secs(20), engine.events.next())
            .await
            .expect("the op was answered in time")
            .expect("the engine runs");
        let done = envelope.op == Some(op) && envelope.event == Event::Idle;
        seen.push(envelope);
        if done {
            return seen;
        }
    }
}

/// `--yes`'s policy is the engine's: `Op::ApplyAllowed` names what it holds back and
/// lands the rest.
#[tokio::test]
async fn apply_allowed_holds_back_a_file_outside_the_chat_and_lands_the_rest() {
    let repo = repo();
    let server = MockServer::start().await;
    let readme =
        "README.md\n```\n<<<<<<< SEARCH\n# Greeter\n=======\n# Greeter app\n>>>>>>> REPLACE\n```\n";
    server.push_for_model("gpt-4o", Reply::text(format!("{FIXED_EDIT}\n{readme}")));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: say hey"));
    let mut engine = engine(&repo, &server);
    submit(&engine, "say hey and retitle");
    idle(&mut engine).await;
    send(
        &engine,
        Op::ApplyAllowed {
            outside_chat: false,
        },
    );
    let events = idle(&mut engine).await;
    let held = events
        .iter()
        .position(|e| {
            matches!(e, Event::HeldBack { path, hunk: None, cautions }
                if path == "README.md" && cautions == &[Caution::OutsideChat])
        })
        .expect("README.md is held back");
    let applied = events
        .iter()
        .position(|e| matches!(e, Event::Applied { files, .. } if files == &["src/greet.py"]))
        .expect("the chat file lands");
    assert!(held < applied, "{events:#?}");
    assert_eq!(repo.read("README.md"), "# Greeter\n");
    assert!(repo.read("src/greet.py").contains("'hey '"));
}

/// The id a hunk had before it was split, and the id a part had before the user edited
/// it, keep naming what they became until the proposal ends: `/reject OLD` typed from
/// an earlier screen rejects every part, with its reason.
#[tokio::test]
async fn an_id_replaced_by_a_split_or_an_edit_still_names_what_it_became() {
    let (_server, _repo, mut engine, whole) = greeted_and_shouted().await;
    send(&engine, crate::support::typed(&format!("/split {whole}")));
    let (_, view) = next_proposal(&mut engine).await;
    let parts = hunk_ids(&view);
    assert_eq!(parts.len(), 2);
    send(
        &engine,
        Op::Review(ReviewOp::Edit {
            id: parts[1].clone(),
            new_lines: "    return greet(name).upper() + '!!!'\n".into(),
        }),
    );
    let (_, view) = next_proposal(&mut engine).await;
    let now = hunk_ids(&view);
    assert!(!now.contains(&parts[1]), "the edit has a new id: {now:?}");
    // The edited part's old id: its hunk (accepted as the user's) is rejected again.
    send(
        &engine,
        crate::support::typed(&format!("/reject {}", parts[1])),
    );
    let (_, view) = next_proposal(&mut engine).await;
    assert_eq!(view.files[0].hunks[1].decision, Decision::Reject);
    assert_eq!(view.files[0].hunks[0].decision, Decision::Pending);
    // The whole hunk's id: both parts.
    send(
        &engine,
        crate::support::typed(&format!("/reject {whole} too much at once")),
    );
    let told = format!("rejected hunk {whole}; the model will be told why");
    let events = until(
        &mut engine,
        |e| matches!(e, Event::Notice { text } if *text == told),
    )
    .await;
    let view = last_proposal(&events);
    assert!(
        view.files[0]
            .hunks
            .iter()
            .all(|h| h.decision == Decision::Reject),
        "{view:#?}"
    );
}
