//! Undoing a whole turn through the engine (`/undo turn`), against the loopback server
//! and a real temporary repository: every commit of the turn undone newest first, the
//! record of the turn surviving a restart, a commit of the user's on top refused, and
//! the model told what is gone.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::engine_edits::{GREET, TWO_EDITS, engine_with, idle, last_proposal, repo, send, submit};
use crate::support::{MockServer, Reply, TempRepo, until};
use tern::engine::protocol::{Decision, ReviewOp};
use tern::engine::{EngineHandle, Event, Op};

/// One turn that lands twice: the first hunk of `TWO_EDITS`, then the second (the
/// review stays open between the two applies). Returns the two commits' ids.
async fn turn_of_two_commits(engine: &mut EngineHandle, repo: &TempRepo) -> Vec<String> {
    submit(engine, "punctuate greet and fix wave");
    let mut events = idle(engine).await;
    for _ in 0..2 {
        let view = last_proposal(&events);
        let pending = view.files[0]
            .hunks
            .iter()
            .find(|h| h.decision == Decision::Pending)
            .unwrap()
            .id
            .clone();
        send(
            engine,
            Op::Review(ReviewOp::Hunk {
                id: pending,
                decision: Decision::Accept,
            }),
        );
        send(engine, Op::Review(ReviewOp::Apply));
        events = idle(engine).await;
        assert!(
            events.iter().any(|e| matches!(
                e,
                Event::Applied {
                    commit: Some(_),
                    ..
                }
            )),
            "{events:#?}"
        );
    }
    let log = repo.git(&["log", "--format=%H", "-2"]);
    log.lines().rev().map(str::to_string).collect()
}

fn script(server: &MockServer) {
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: punctuate the greeting"));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: wave properly"));
    server.push_for_model("gpt-4o", Reply::text("Understood."));
}

fn said(events: &[Event], what: fn(&Event) -> Option<&String>) -> String {
    events
        .iter()
        .filter_map(what)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

fn notice(e: &Event) -> Option<&String> {
    match e {
        Event::Notice { text } => Some(text),
        _ => None,
    }
}

fn error(e: &Event) -> Option<&String> {
    match e {
        Event::Error { text } => Some(text),
        _ => None,
    }
}

#[tokio::test]
async fn undo_turn_takes_back_every_commit_of_the_turn_and_tells_the_model() {
    let server = MockServer::start().await;
    script(&server);
    let repo = repo();
    let mut engine = engine_with(&repo, &server, false);
    let base = repo.git(&["rev-parse", "HEAD"]);
    let commits = turn_of_two_commits(&mut engine, &repo).await;
    assert_ne!(repo.read("src/greet.py"), GREET);

    submit(&engine, "/undo turn");
    let events = idle(&mut engine).await;
    let notices = said(&events, notice);
    assert_eq!(repo.read("src/greet.py"), GREET, "{notices}");
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), base);
    let short = |id: &String| tern::git::short_id(git2::Oid::from_str(id).unwrap());
    let newest = notices.find(&short(&commits[1])).expect(&notices);
    let oldest = notices.find(&short(&commits[0])).expect(&notices);
    assert!(newest < oldest, "newest first: {notices}");

    submit(&engine, "what now?");
    let events = idle(&mut engine).await;
    let notes = events
        .iter()
        .find_map(|e| match e {
            Event::TurnStarted { notes, .. } => Some(notes.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let sent = server
        .requests()
        .last()
        .unwrap()
        .last_user_text()
        .unwrap()
        .to_string();
    assert!(
        sent.contains("I undid 2 of your commits with /undo turn"),
        "{sent}"
    );
    assert!(
        sent.contains("+    return 'hello, ' + name + '!'"),
        "{sent}"
    );
    assert!(sent.contains("+    return 'waving at ' + name"), "{sent}");
    assert!(sent.contains("```\n\nwhat now?"), "{sent}");
}

/// The turn's record is saved with the session: after a restart `/undo` says what is
/// left of the turn, and `/undo turn` takes back the rest.
#[tokio::test]
async fn a_turns_commits_are_remembered_across_a_restart() {
    let server = MockServer::start().await;
    script(&server);
    let repo = repo();
    let mut engine = engine_with(&repo, &server, false);
    let base = repo.git(&["rev-parse", "HEAD"]);
    turn_of_two_commits(&mut engine, &repo).await;
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    let mut engine = engine_with(&repo, &server, true);
    submit(&engine, "/undo");
    let notices = said(&idle(&mut engine).await, notice);
    assert!(
        notices.contains("this turn made 2 commits: /undo turn undoes the other 1"),
        "{notices}"
    );
    submit(&engine, "/undo turn");
    let events = idle(&mut engine).await;
    assert_eq!(said(&events, error), "");
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), base);
    assert_eq!(repo.read("src/greet.py"), GREET);
    submit(&engine, "/undo turn");
    let errors = said(&idle(&mut engine).await, error);
    assert!(
        errors.contains("no turn of this session made a commit"),
        "{errors}"
    );
}

#[tokio::test]
async fn a_commit_of_the_users_on_top_keeps_the_turn_in_place() {
    let server = MockServer::start().await;
    script(&server);
    let repo = repo();
    let mut engine = engine_with(&repo, &server, false);
    turn_of_two_commits(&mut engine, &repo).await;
    let landed = repo.read("src/greet.py");
    repo.write("NOTES.md", "mine\n");
    repo.git(&["add", "NOTES.md"]);
    repo.git(&["commit", "-qm", "my notes"]);
    let head = repo.git(&["rev-parse", "HEAD"]);

    submit(&engine, "/undo turn");
    let errors = said(&idle(&mut engine).await, error);
    assert!(errors.contains("no longer the newest"), "{errors}");
    assert!(errors.contains("\"my notes\""), "{errors}");
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(repo.read("src/greet.py"), landed);
}
