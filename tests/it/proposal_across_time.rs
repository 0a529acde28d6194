//! A proposal across time: its file deleted, made binary or otherwise unwritable while
//! the review waits (within a session or between two), and hunks that no longer apply
//! kept until the user dismisses them. A hunk that cannot be placed fails with its text
//! and reason, and nothing else comes in its place.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::engine_edits::{TWO_EDITS, engine_with, idle, last_proposal, repo, send, submit};
use crate::support::{MockServer, Reply, TempRepo, until};
use tern::engine::protocol::{Decision, ProposalView, ReviewOp};
use tern::engine::{EngineHandle, Event, Op};

/// How the user takes the file away.
#[derive(Debug, Clone, Copy)]
enum Gone {
    /// `rm`: deleted in the work tree.
    Removed,
    /// `git rm`: deleted and the deletion staged.
    GitRemoved,
    /// Replaced by bytes that are not text.
    Binary,
    /// Replaced by a directory.
    Directory,
}

impl Gone {
    fn apply(self, repo: &TempRepo) {
        match self {
            Gone::Removed => repo.remove("src/greet.py"),
            Gone::GitRemoved => {
                repo.git(&["rm", "-q", "src/greet.py"]);
            }
            Gone::Binary => repo.write("src/greet.py", b"\x00\x01binary\x00"),
            Gone::Directory => {
                repo.remove("src/greet.py");
                repo.write("src/greet.py/inside", "a file in a directory\n");
            }
        }
    }

    /// What the work tree holds there afterwards.
    fn left(self) -> Option<Vec<u8>> {
        match self {
            Gone::Removed | Gone::GitRemoved | Gone::Directory => None,
            Gone::Binary => Some(b"\x00\x01binary\x00".to_vec()),
        }
    }
}

async fn apply_all(engine: &mut EngineHandle) -> Vec<Event> {
    send(
        engine,
        Op::Review(ReviewOp::All {
            decision: Decision::Accept,
        }),
    );
    send(engine, Op::Review(ReviewOp::Apply));
    idle(engine).await
}

/// `/apply all` with only failed hunks left: nothing lands, and it says why.
async fn assert_nothing_to_apply(engine: &mut EngineHandle, gone: Gone) {
    submit(engine, "/apply all");
    // Other errors may come first (a chat file now binary is said whenever the budget
    // is counted again): the answer to `/apply all` is the one that says what it did.
    let events = until(engine, |e| match e {
        Event::Error { text } => text.starts_with("nothing to apply"),
        e => matches!(e, Event::Applied { .. }),
    })
    .await;
    let Some(Event::Error { text }) = events.last() else {
        panic!("{gone:?}: {events:#?}")
    };
    assert!(
        text.starts_with("nothing to apply: the 2 proposed hunks left no longer apply"),
        "{gone:?}: {text}"
    );
}

async fn shut(mut engine: EngineHandle) {
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
}

/// Both hunks failed with their lines, and no hunk left to review (no empty "new
/// file" hunk in their place).
fn assert_failed_with_text(view: &ProposalView, gone: Gone) {
    assert!(
        view.files.is_empty(),
        "{gone:?}: no hunk stands in: {view:#?}"
    );
    assert_eq!(view.failures.len(), 2, "{gone:?}: {:#?}", view.failures);
    let texts: Vec<&str> = view
        .failures
        .iter()
        .map(|f| f.hunk.as_deref().expect("the failed hunk's lines"))
        .collect();
    assert!(
        texts[0].contains("+    return 'hello, ' + name + '!'")
            && texts[1].contains("+    return 'waving at ' + name"),
        "{gone:?}: {texts:#?}"
    );
}

/// The file as the user left it, HEAD where it was, nothing staged or committed in
/// tern's name.
fn assert_untouched(repo: &TempRepo, gone: Gone, head: &str) {
    let now = std::fs::read(repo.path().join("src/greet.py")).ok();
    assert_eq!(
        now,
        gone.left(),
        "{gone:?}: the file is as the user left it"
    );
    assert_eq!(repo.git(&["rev-parse", "HEAD"]).trim(), head, "{gone:?}");
}

/// A repository, HEAD, and an engine whose reply proposed `TWO_EDITS` (the server
/// kept for what follows).
async fn proposed() -> (MockServer, TempRepo, String, EngineHandle) {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let mut engine = engine_with(&repo, &server, false);
    submit(&engine, "punctuate");
    idle(&mut engine).await;
    (server, repo, head, engine)
}

/// Within a session: the file goes after the hunks were accepted, the landing finds it
/// changed; its hunks fail with their text, nothing is written or committed, and
/// applying again (`/apply all`) has nothing to land.
#[tokio::test]
async fn a_file_gone_during_review_fails_its_hunks_and_lands_nothing() {
    for gone in [Gone::Removed, Gone::GitRemoved, Gone::Binary] {
        let (_server, repo, head, mut engine) = proposed().await;
        gone.apply(&repo);
        let events = apply_all(&mut engine).await;
        assert_failed_with_text(&last_proposal(&events), gone);
        assert_nothing_to_apply(&mut engine, gone).await;
        assert_untouched(&repo, gone, &head);
        shut(engine).await;
    }
}

/// Across sessions: the file goes while tern is not running; on resume its hunks come
/// back failed with their text (no empty new-file hunk), and applying lands nothing.
#[tokio::test]
async fn a_file_gone_before_resume_fails_its_hunks_and_lands_nothing() {
    for gone in [
        Gone::Removed,
        Gone::GitRemoved,
        Gone::Binary,
        Gone::Directory,
    ] {
        let (server, repo, head, engine) = proposed().await;
        shut(engine).await;
        gone.apply(&repo);
        let mut engine = engine_with(&repo, &server, true);
        let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
        assert_failed_with_text(&last_proposal(&events), gone);
        assert_nothing_to_apply(&mut engine, gone).await;
        assert_untouched(&repo, gone, &head);
        shut(engine).await;
    }
}

/// The warning that says how many resumed hunks came back failed, if one came, and
/// whether it came after the resumed conversation (where the user looks).
fn resumed_failures_said(events: &[Event]) -> Option<(String, bool)> {
    let resumed = events
        .iter()
        .position(|e| matches!(e, Event::Resumed { .. }));
    events.iter().enumerate().find_map(|(i, e)| match e {
        Event::Warning { text } if text.contains("no longer apply") => {
            Some((text.clone(), resumed.is_some_and(|r| r < i)))
        }
        _ => None,
    })
}

/// What `tern sessions` says of the hunks of the only session.
fn sessions_line(repo: &TempRepo) -> String {
    let root = repo.path().canonicalize().unwrap();
    let listed = tern::engine::persist::Store::for_repo(&root).list();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    listed[0].hunks_text()
}

/// When every resumed hunk no longer applies, they are said on resume (after the
/// conversation), kept with their text in the session and counted by `tern sessions`,
/// and come back at every resume until `/discard` dismisses them.
#[tokio::test]
async fn resumed_hunks_that_all_fail_are_said_kept_and_counted_until_discarded() {
    let (server, repo, _, engine) = proposed().await;
    shut(engine).await;
    // Overnight, the lines both hunks change are changed by the user.
    let greet = repo.read("src/greet.py");
    repo.write(
        "src/greet.py",
        greet
            .replace("return 'hello ' + name", "return 'HELLO ' + name")
            .replace("return 'wave at ' + name", "return 'WAVE ' + name"),
    );
    for resume in 1..=2 {
        let mut engine = engine_with(&repo, &server, true);
        let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
        assert_failed_with_text(&last_proposal(&events), Gone::Removed);
        let (said, after) = resumed_failures_said(&events).expect("the failures are said");
        assert!(
            said.starts_with("2 of the saved session's proposed hunks no longer apply"),
            "resume {resume}: {said}"
        );
        // Each is named, with why.
        let named: Vec<&str> = said.lines().skip(1).collect();
        assert_eq!(named.len(), 2, "resume {resume}: {said}");
        for line in named {
            assert!(
                line.starts_with("  ✗ src/greet.py: ") && line.contains("no longer"),
                "resume {resume}: {said}"
            );
        }
        assert!(
            after,
            "resume {resume}: said after the resumed conversation"
        );
        shut(engine).await;
        let line = sessions_line(&repo);
        assert_eq!(line, "2 hunks failed", "resume {resume}");
    }
    // Dismissed: gone from the session and from its line.
    let mut engine = engine_with(&repo, &server, true);
    until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
    submit(&engine, "/discard");
    idle(&mut engine).await;
    shut(engine).await;
    assert_eq!(sessions_line(&repo), "");
    let mut engine = engine_with(&repo, &server, true);
    let events = until(&mut engine, |e| matches!(e, Event::Files { .. })).await;
    assert!(resumed_failures_said(&events).is_none(), "{events:#?}");
    shut(engine).await;
}
