//! `/sessions` in a running engine: the list `tern sessions` prints, and a switch to
//! another session that saves the one left first (a save that fails stops it), keeps
//! its pending hunks with it only when the user said so, refuses a session another
//! tern has open as `--resume` does, and lists a session that cannot be read without
//! switching to it.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use crate::engine_edits::{TWO_EDITS, engine_with, idle, repo, send, submit};
use crate::support::{MockServer, Reply, TempRepo, plant_session, typed, until};
use tern::engine::persist::{Listed, Resume, SessionFile, Store, load};
use tern::engine::protocol::{Shown, ShownKind};
use tern::engine::{EngineHandle, Event, Op};
use tern::llm::Message;

fn store(repo: &TempRepo) -> Store {
    Store::for_repo(&repo.path().canonicalize().unwrap())
}

/// Another session of the repository: one exchange about apples.
fn apples(repo: &TempRepo) -> String {
    plant_session(
        &store(repo),
        SessionFile {
            model: "gpt-4o".into(),
            title: "about apples".into(),
            history: vec![Message::user("about apples"), Message::assistant("Apples.")],
            transcript: vec![
                Shown {
                    kind: ShownKind::User,
                    text: "about apples".into(),
                },
                Shown {
                    kind: ShownKind::Assistant,
                    text: "Apples.".into(),
                },
            ],
            ..SessionFile::default()
        },
    )
}

/// The directory of session `id`, once it has a state (the engine saves on a thread
/// of its own).
fn session_dir(repo: &TempRepo, id: &str) -> PathBuf {
    let start = std::time::Instant::now();
    loop {
        if let Ok(listed) = store(repo).pick(&Resume::Id(id.into())) {
            return listed.dir;
        }
        assert!(
            start.elapsed().as_secs() < 10,
            "session {id} is never saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The session this engine saves to, from its `Ready`.
fn ready_session(events: &[Event]) -> Option<String> {
    events.iter().rev().find_map(|e| match e {
        Event::Ready { session, .. } => session.clone(),
        _ => None,
    })
}

async fn start(repo: &TempRepo, server: &MockServer) -> (EngineHandle, String) {
    let mut engine = engine_with(repo, server, false);
    let events = until(&mut engine, |e| matches!(e, Event::Ready { .. })).await;
    let id = ready_session(&events).unwrap();
    (engine, id)
}

fn errors(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Error { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

async fn switch(engine: &mut EngineHandle, id: &str, keep_pending: bool) -> Vec<Event> {
    send(
        engine,
        Op::SwitchSession {
            id: id.into(),
            keep_pending,
        },
    );
    idle(engine).await
}

async fn shut(mut engine: EngineHandle) {
    send(&engine, Op::Shutdown);
    until(&mut engine, |e| matches!(e, Event::Exited)).await;
}

/// `/sessions` lists what `tern sessions` lists (a session that cannot be read
/// included, as such); a switch saves the session left as it was, releases it, shows
/// the other's conversation and sends its history with the next message.
#[tokio::test]
async fn a_switch_saves_the_session_left_and_goes_on_in_the_other() {
    let server = MockServer::start().await;
    server.push(Reply::text("Hi."));
    server.push(Reply::text("More apples."));
    let repo = repo();
    let other = apples(&repo);
    let broken = apples(&repo);
    std::fs::write(session_dir(&repo, &broken).join("state.json"), "{ not json").unwrap();
    let (mut engine, own) = start(&repo, &server).await;
    submit(&engine, "hello");
    idle(&mut engine).await;

    send(&engine, typed("/sessions"));
    let events = idle(&mut engine).await;
    let Some((sessions, current)) = events.iter().find_map(|e| match e {
        Event::Sessions { sessions, current } => Some((sessions, current)),
        _ => None,
    }) else {
        panic!("{events:#?}")
    };
    assert_eq!(current.as_deref(), Some(own.as_str()));
    assert_eq!(
        sessions,
        &store(&repo).list(),
        "the list `tern sessions` prints"
    );
    let unreadable: Vec<&Listed> = sessions.iter().filter(|s| s.unreadable.is_some()).collect();
    assert_eq!(unreadable.len(), 1, "{sessions:#?}");
    assert_eq!(unreadable[0].id, broken);
    assert!(
        unreadable[0]
            .line(std::time::SystemTime::now(), false)
            .contains("(cannot be read: "),
        "{sessions:#?}"
    );

    // The broken one: refused, saying why, still in the session.
    let events = switch(&mut engine, &broken, false).await;
    let said = errors(&events);
    assert!(
        said.len() == 1 && said[0].starts_with(&format!("cannot switch to session {broken}: ")),
        "{said:?}"
    );
    assert_eq!(ready_session(&events), None, "no switch: {events:#?}");

    let events = switch(&mut engine, &other, false).await;
    assert!(errors(&events).is_empty(), "{events:#?}");
    assert_eq!(ready_session(&events).as_deref(), Some(other.as_str()));
    let transcript = events.iter().find_map(|e| match e {
        Event::Resumed { transcript, .. } => Some(transcript.clone()),
        _ => None,
    });
    let texts: Vec<String> = transcript.unwrap().into_iter().map(|s| s.text).collect();
    assert_eq!(texts, ["about apples", "Apples."]);
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { text } if text == &format!(
            "switched to session {other}; session {own} is saved as you left it (`/sessions` or `tern --resume={own}` brings it back)"
        ))),
        "{events:#?}"
    );
    // The session left: saved with its exchange, and no longer open.
    let left = load(&session_dir(&repo, &own).join("state.json"))
        .unwrap()
        .unwrap();
    assert_eq!(left.history.len(), 2, "{:#?}", left.history);
    assert!(
        left.history[0].content.contains("hello"),
        "{:#?}",
        left.history
    );
    let listed = store(&repo).list();
    let held = |id: &str| listed.iter().find(|s| s.id == id).unwrap().holder();
    assert_eq!(held(&own), None, "released");
    assert_eq!(held(&other), Some(Some(std::process::id())), "taken");

    submit(&engine, "and pears?");
    idle(&mut engine).await;
    let sent = server.requests().pop().unwrap();
    let texts: Vec<&str> = sent.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        texts.iter().any(|t| t.contains("about apples")),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains("hello")), "{texts:?}");
    shut(engine).await;
    let saved = load(&session_dir(&repo, &other).join("state.json"))
        .unwrap()
        .unwrap();
    assert_eq!(saved.history.len(), 4, "the turn went to the other session");
}

/// Pending hunks: without the user's yes the session is not left; with it, they stay
/// with it (for `tern --resume`), nothing is written, and the other session has none.
#[tokio::test]
async fn pending_hunks_stay_with_the_session_left_only_when_the_user_says_so() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_EDITS));
    let repo = repo();
    let greet = repo.read("src/greet.py");
    let other = apples(&repo);
    let (mut engine, own) = start(&repo, &server).await;
    submit(&engine, "punctuate");
    idle(&mut engine).await;

    let events = switch(&mut engine, &other, false).await;
    assert_eq!(
        errors(&events),
        [
            "this session has 2 hunks not dealt with: review them first, or switch from the workspace's /sessions, which asks and keeps them with this session for `tern --resume`"
        ]
    );
    assert_eq!(ready_session(&events), None);

    let events = switch(&mut engine, &other, true).await;
    assert_eq!(ready_session(&events).as_deref(), Some(other.as_str()));
    let proposal = events.iter().rev().find_map(|e| match e {
        Event::Proposal(view) => Some(view.clone()),
        _ => None,
    });
    assert!(proposal.unwrap().files.is_empty(), "the other has none");
    assert_eq!(repo.read("src/greet.py"), greet, "nothing written");
    let listed = store(&repo).list();
    let left = listed.iter().find(|s| s.id == own).unwrap();
    assert_eq!(left.hunks_text(), "2 hunks pending");
    shut(engine).await;
}

/// A session another tern has open is refused, as `--resume` refuses it; the switch
/// to oneself is no switch.
#[tokio::test]
async fn a_session_open_in_another_tern_is_refused() {
    let server = MockServer::start().await;
    let repo = repo();
    let other = apples(&repo);
    let (mut engine, own) = start(&repo, &server).await;
    let held = store(&repo).open(&Resume::Id(other.clone())).unwrap();
    let events = switch(&mut engine, &other, false).await;
    let said = errors(&events);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(&format!("session {other} is open in another tern (pid "))
            && said[0].ends_with("quit that tern first"),
        "{said:?}"
    );
    assert_eq!(ready_session(&events), None);
    drop(held);
    let events = switch(&mut engine, own.get(..4).unwrap(), false).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { text } if text == &format!("session {own} is the one open here"))),
        "{events:#?}"
    );
    assert_eq!(ready_session(&events), None);
    shut(engine).await;
}

/// A session left that cannot be saved (its state cannot be put in place) stops the
/// switch: the user stays in it, and the other session is not kept open.
#[tokio::test]
async fn a_save_that_fails_stops_the_switch() {
    let server = MockServer::start().await;
    server.push(Reply::text("Hi."));
    let repo = repo();
    let other = apples(&repo);
    let (mut engine, own) = start(&repo, &server).await;
    submit(&engine, "hello");
    idle(&mut engine).await;
    let state = session_dir(&repo, &own).join("state.json");
    std::fs::remove_file(&state).unwrap();
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("x"), "").unwrap();
    let events = switch(&mut engine, &other, false).await;
    let said = errors(&events);
    assert_eq!(said.len(), 1, "{events:#?}");
    assert!(
        said[0].starts_with(&format!(
            "did not switch to session {other}: this session could not be saved first ("
        )) && said[0].ends_with("); you are still in it"),
        "{said:?}"
    );
    assert_eq!(ready_session(&events), None);
    // Not kept open: released once its writer has closed it.
    let start = std::time::Instant::now();
    while store(&repo)
        .list()
        .iter()
        .any(|s| s.id == other && s.holder().is_some())
    {
        assert!(
            start.elapsed().as_secs() < 10,
            "session {other} is kept open"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // Once it can be saved, the switch goes.
    std::fs::remove_dir_all(&state).unwrap();
    let events = switch(&mut engine, &other, false).await;
    assert_eq!(
        ready_session(&events).as_deref(),
        Some(other.as_str()),
        "{events:#?}"
    );
    let left = load(&state).unwrap().unwrap();
    assert!(
        left.history[0].content.contains("hello"),
        "{:#?}",
        left.history
    );
    shut(engine).await;
}
