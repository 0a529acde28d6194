//! `tern rewind` through the real binary, on sessions made by real `tern -m` turns
//! against the loopback server, in real temporary repositories: the code only, the
//! conversation only, both; the redo, and its end when a message is sent; the refusal
//! when the user changed a file a rewound commit touches; turn numbers that are not
//! turns; a damaged record.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::headless::repo;
use crate::support::{MockServer, Reply, TempRepo, output_within, texts};

const WAIT: Duration = Duration::from_secs(30);
const AFTER_ONE: &str = "def greet(name):\n    return 'hello, ' + name\n";
const AFTER_TWO: &str = "def greet(name: str):\n    return 'hello, ' + name\n";

pub(crate) fn run(
    repo: &TempRepo,
    server: &MockServer,
    args: &[&str],
) -> (String, String, Option<i32>) {
    let out = output_within(repo.tern(&server.base_url()).args(args), WAIT);
    let (stdout, stderr) = texts(&out);
    (stdout, stderr, out.status.code())
}

/// A turn sent with `text`, whose reply replaces `old` with `new` in src/greet.py
/// (none: a reply without edits), applied with --yes; the first turn starts the
/// session, the others resume it.
fn turn(repo: &TempRepo, server: &MockServer, text: &str, edit: Option<(&str, &str)>) {
    let reply = match edit {
        Some((old, new)) => {
            server.push_for_model("gpt-4o-mini", Reply::text(format!("Change greet: {text}")));
            format!(
                "src/greet.py\n```python\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n"
            )
        }
        None => format!("An answer to {text}."),
    };
    server.push_for_model("gpt-4o", Reply::text(reply));
    let first = repo.sessions().list().is_empty();
    let mut args = vec!["--yes", "--model", "gpt-4o", "-m", text];
    if first {
        args.push("src/greet.py");
    } else {
        args.insert(0, "--resume");
    }
    let (_, stderr, code) = run(repo, server, &args);
    assert_eq!(code, Some(0), "{stderr}");
}

/// `/run COMMAND` in the session, allowed.
fn run_command(repo: &TempRepo, server: &MockServer, command: &str) {
    let text = format!("/run {command}");
    let args = ["--resume", "--allow-commands", "-m", &text];
    let (_, stderr, code) = run(repo, server, &args);
    assert_eq!(code, Some(0), "{stderr}");
}

pub(crate) fn head(repo: &TempRepo) -> String {
    repo.git(&["rev-parse", "HEAD"]).trim().to_string()
}

/// The first turn: it makes commit A, returned.
fn add_a_comma(repo: &TempRepo, server: &MockServer) -> String {
    turn(
        repo,
        server,
        "add a comma",
        Some((
            "    return 'hello ' + name\n",
            "    return 'hello, ' + name\n",
        )),
    );
    head(repo)
}

/// Three turns: two that edit (commits A and B), one question.
fn three_turns(repo: &TempRepo, server: &MockServer) -> (String, String) {
    let a = add_a_comma(repo, server);
    turn(
        repo,
        server,
        "type the name",
        Some(("def greet(name):\n", "def greet(name: str):\n")),
    );
    let b = head(repo);
    turn(repo, server, "what does it do?", None);
    assert_eq!(repo.read("src/greet.py"), AFTER_TWO);
    (a, b)
}

/// The first segment of the newest session's turn record.
fn first_segment(repo: &TempRepo) -> std::path::PathBuf {
    let newest = repo.sessions().pick(&tern::engine::persist::Resume::Newest);
    newest.unwrap().dir.join("turns-1.jsonl")
}

/// The user's messages in the saved history.
fn asked(repo: &TempRepo) -> Vec<String> {
    repo.newest_session()
        .history
        .iter()
        .filter(|m| m.role == tern::llm::Role::User)
        .map(|m| m.content.clone())
        .collect()
}

#[test]
fn the_code_the_conversation_or_both_go_back_and_come_back() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let (a, b) = three_turns(&repo, &server);

    let (stdout, stderr, code) = run(&repo, &server, &["rewind"]);
    assert_eq!(code, Some(0), "{stderr}");
    for line in [
        "turn 1  add a comma  · 1 commit",
        "turn 2  type the name  · 1 commit",
        "turn 3  what does it do?  · 0 commits",
        "before it: code: 1 commit taken back (src/greet.py); chat: 2 turns taken back",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }

    // The code only: B goes, the conversation stays, and the model is to be told.
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "2", "--code"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("rewound to before turn 2"), "{stdout}");
    assert!(stdout.contains("conversation: unchanged"), "{stdout}");
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (a.clone(), AFTER_ONE.into())
    );
    assert_eq!(asked(&repo).len(), 3);
    assert_eq!(
        repo.newest_session().notes.len(),
        1,
        "the model hears of it"
    );

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("code: 1 commit back (src/greet.py)"),
        "{stdout}"
    );
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (b.clone(), AFTER_TWO.into())
    );
    assert!(
        repo.newest_session().notes.is_empty(),
        "nothing to tell now"
    );
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(1), "a redo is done once: {stderr}");
    assert!(stderr.contains("there is no rewind to redo"), "{stderr}");

    // The conversation only: the code stays.
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "2", "--chat"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("conversation: 2 turns taken back"),
        "{stdout}"
    );
    assert_eq!(head(&repo), b);
    assert_eq!(asked(&repo), ["add a comma"]);
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(asked(&repo).len(), 3);

    // Both.
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--to", "2"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (a.clone(), AFTER_ONE.into())
    );
    assert_eq!(asked(&repo), ["add a comma"]);

    // A message sent ends the redo; it is turn 2 now, and the model saw turn 1 only.
    turn(&repo, &server, "say hi instead", None);
    let sent: Vec<String> = server
        .requests()
        .iter()
        .rev()
        .find(|r| r.model == "gpt-4o")
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text.clone())
        .collect();
    let all = sent.join("\n");
    assert!(
        all.contains("add a comma") && !all.contains("type the name"),
        "{all}"
    );
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("there is no rewind to redo (a message sent since ends it"),
        "{stderr}"
    );
    assert_eq!(head(&repo), a, "nothing was changed");
    let (stdout, _, _) = run(&repo, &server, &["rewind", "--list"]);
    assert!(stdout.contains("turn 2  say hi instead"), "{stdout}");
    assert!(!stdout.contains("turn 3"), "{stdout}");
}

#[test]
fn your_own_change_to_a_rewound_file_refuses_and_changes_nothing() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let (_, b) = three_turns(&repo, &server);
    let yours = format!("{AFTER_TWO}# mine\n");
    repo.write("src/greet.py", &yours);
    let before = repo.newest_session();

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "1"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stderr.contains(
            "the code cannot be rewound: these files have changes that are not in tern's commits"
        ) && stderr.contains("src/greet.py")
            && stderr.ends_with("nothing was changed\n"),
        "{stderr}"
    );
    assert_eq!((head(&repo), repo.read("src/greet.py")), (b, yours));
    assert_eq!(repo.newest_session().history, before.history);
    // The listing says it before anything is tried.
    let (stdout, _, _) = run(&repo, &server, &["rewind"]);
    assert!(
        stdout.contains(
            "code cannot go back: these files have changes that are not in tern's commits"
        ),
        "{stdout}"
    );
}

#[test]
fn a_commit_on_top_refuses_once_without_calling_it_yours() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    three_turns(&repo, &server);
    repo.write("notes.txt", "mine\n");
    let on_top = repo.commit("my own commit").to_string();

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "1"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(stderr.matches("nothing was changed").count(), 1, "{stderr}");
    assert!(
        stderr.contains("was committed on top of") && stderr.contains("undo or move those commits"),
        "{stderr}"
    );
    assert!(!stderr.contains("your commits"), "{stderr}");
    assert_eq!(head(&repo), on_top);
}

#[test]
fn turns_that_are_not_turns_and_a_damaged_record_are_refused() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let a = add_a_comma(&repo, &server);
    for (to, said) in [
        ("0", "turns are numbered from 1"),
        ("-1", "turns are numbered from 1"),
        ("x", "\"x\" is not a turn number"),
        ("2", "turn 2 is not in the record (it has turns 1 to 1)"),
        ("99999999999999999999", "is not a turn number"),
    ] {
        let (_, stderr, code) = run(&repo, &server, &["rewind", "--to", to]);
        assert_eq!(code, Some(1), "{to}: {stderr}");
        assert!(
            stderr.contains(said) && stderr.contains("nothing was changed"),
            "{to}: {stderr}"
        );
        assert_eq!(head(&repo), a);
    }
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("there is no rewind to redo"), "{stderr}");

    // A record damaged in its middle: read whole or not at all.
    let segment = first_segment(&repo);
    let text = std::fs::read_to_string(&segment).unwrap();
    let mut bytes = text.into_bytes();
    bytes[3] = b'#';
    std::fs::write(&segment, bytes).unwrap();
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--to", "1"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("the turn record's line 1")
            && stderr.contains("is damaged")
            && stderr.contains("nothing was changed"),
        "{stderr}"
    );
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (a, AFTER_ONE.into())
    );
}

/// What a command tern ran changed is taken back with the code (a file it wrote, a
/// file it changed), and comes back with the redo.
#[test]
fn what_a_command_tern_ran_changed_goes_back_with_the_code() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let a = add_a_comma(&repo, &server);
    run_command(
        &repo,
        &server,
        "printf 'made\\n' > notes.txt && printf '# Changed\\n' > README.md",
    );
    assert_eq!(repo.read("notes.txt"), "made\n");
    turn(&repo, &server, "what changed?", None);

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "1", "--code"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("put back what `printf 'made\\n' > notes.txt && printf '# Changed\\n' > README.md` changed: README.md, notes.txt"),
        "{stdout}"
    );
    assert_eq!(repo.read("README.md"), "# Demo\n");
    assert!(!repo.path().join("notes.txt").exists());
    assert_eq!(
        repo.read("src/greet.py"),
        "def greet(name):\n    return 'hello ' + name\n"
    );
    assert_ne!(head(&repo), a);

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("changes are back: README.md, notes.txt"),
        "{stdout}"
    );
    assert_eq!(
        (head(&repo), repo.read("README.md"), repo.read("notes.txt")),
        (a, "# Changed\n".to_string(), "made\n".to_string())
    );
}

/// A change a command made, committed by tern as the user's before its next edit,
/// refuses the rewind; the listing gives the reason the rewind gives.
#[test]
fn the_listing_gives_the_reason_the_rewind_gives() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    add_a_comma(&repo, &server);
    run_command(&repo, &server, "sed -i s/hello/hi/ src/greet.py");
    turn(
        &repo,
        &server,
        "type the name",
        Some(("def greet(name):\n", "def greet(name: str):\n")),
    );
    let before = head(&repo);

    let (_, refused, code) = run(&repo, &server, &["rewind", "--to", "1"]);
    assert_eq!(code, Some(1), "{refused}");
    let why = "src/greet.py was changed by a command tern ran and by a commit it takes back";
    assert!(refused.contains(why), "{refused}");
    let (listed, _, code) = run(&repo, &server, &["rewind", "--list"]);
    assert_eq!(code, Some(0));
    let turn_one = listed.split("turn 2").next().unwrap();
    assert!(turn_one.contains(why), "{listed}");
    assert!(!listed.contains("is not a commit tern made"), "{listed}");
    assert_eq!(head(&repo), before);
}

fn timeline_turn(
    turn: usize,
    text: &str,
    commits: &[&str],
    turns_after: usize,
) -> tern::engine::protocol::TimelineTurn {
    tern::engine::protocol::TimelineTurn {
        turn,
        text: text.into(),
        at: 0,
        commits: commits.iter().map(|c| c.to_string()).collect(),
        cost: Some(0.0123),
        turns_after,
        commits_since: vec!["1a2b3c4 Add a comma".into(), "5d6e7f8 Type the name".into()]
            .into_iter()
            .skip(turn - 1)
            .collect(),
        files_since: vec!["src/greet.py".into()],
        cost_since: Some(0.03),
        code_refused: None,
        refused: None,
    }
}

/// `/rewind` opens the timeline; the picker shows what each choice changes before it
/// does anything, and enter sends exactly the rewind chosen.
#[test]
fn the_rewind_picker_shows_each_choice_before_it_rewinds() {
    use crate::tui_support::{app, feed, key, screen, session_start};
    use crossterm::event::KeyCode;
    use tern::engine::protocol::Command;
    use tern::engine::{Event, Op};

    let mut app = app();
    feed(&mut app, session_start());
    app.take_ops();
    for c in "/rewind".chars() {
        app.handle_terminal(key(KeyCode::Char(c)));
    }
    app.handle_terminal(key(KeyCode::Enter));
    assert!(app.take_ops().iter().any(|op| matches!(
        op,
        Op::Command { command: Command::Rewind, args } if args.is_empty()
    )),);
    let turns = vec![
        timeline_turn(1, "add a comma", &["1a2b3c4 Add a comma"], 2),
        timeline_turn(2, "type the name", &["5d6e7f8 Type the name"], 1),
    ];
    feed(&mut app, [Event::Timeline { turns, redo: None }]);
    for (w, h) in [(80, 24), (160, 48)] {
        let shown = screen(&mut app, w, h);
        for text in [
            "turn 1  add a comma  · 1 commit · $0.0123",
            "turn 2  type the name",
            "before turn 2, code and conversation:",
            "code: 1 commit taken back (src/greet.py)",
            "chat: 1 turn taken back",
            // The keys show whole at every width (a footer: the title was cut at 80).
            "enter rewinds",
            "esc",
            "tab code and conversation",
        ] {
            assert!(shown.contains(text), "{w}x{h}: {text:?} in\n{shown}");
        }
    }
    // Even where the keys take more than one row, none is cut.
    for (w, h) in [(40, 24), (60, 20)] {
        let shown = screen(&mut app, w, h);
        for text in [
            "↑↓ turn",
            "tab code and conversation",
            "enter rewinds",
            "esc",
        ] {
            assert!(shown.contains(text), "{w}x{h}: {text:?} in\n{shown}");
        }
    }
    // Up to turn 1, then the code only: the preview follows, nothing is sent yet.
    app.handle_terminal(key(KeyCode::Up));
    app.handle_terminal(key(KeyCode::Tab));
    let shown = screen(&mut app, 80, 24);
    assert!(shown.contains("before turn 1, code only:"), "{shown}");
    assert!(shown.contains("code: 2 commits taken back"), "{shown}");
    assert!(!shown.contains("chat: 2 turns taken back"), "{shown}");
    assert!(app.take_ops().is_empty());
    // The conversation only, then enter.
    app.handle_terminal(key(KeyCode::Tab));
    assert!(screen(&mut app, 80, 24).contains("chat: 2 turns taken back"));
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(
        app.take_ops(),
        [Op::Rewind {
            to: 1,
            code: false,
            chat: true
        }]
    );
    assert!(
        !screen(&mut app, 80, 24).contains("before turn 1"),
        "closed"
    );
    // Esc closes it having sent nothing; `r` redoes only when a redo is offered.
    feed(
        &mut app,
        [Event::Timeline {
            turns: vec![timeline_turn(1, "add a comma", &[], 1)],
            redo: None,
        }],
    );
    app.handle_terminal(key(KeyCode::Char('r')));
    app.handle_terminal(key(KeyCode::Esc));
    assert!(app.take_ops().is_empty());
    feed(
        &mut app,
        [Event::Timeline {
            turns: Vec::new(),
            redo: Some("the rewind to before turn 1: 1 commit".into()),
        }],
    );
    let shown = screen(&mut app, 80, 24);
    assert!(shown.contains("r redoes the rewind to before turn 1: 1 commit"));
    for keys in ["enter rewinds", "r redo", "esc"] {
        assert!(shown.contains(keys), "{keys:?} in\n{shown}");
    }
    app.handle_terminal(key(KeyCode::Char('r')));
    assert_eq!(app.take_ops(), [Op::RewindRedo]);
}

/// After a rewind of the conversation the chat shows it as it is now: the turns taken
/// back are gone from the pane (and from the message box's history), not only said gone.
#[test]
fn the_chat_pane_shows_the_conversation_a_rewind_left() {
    use crate::tui_support::{app, feed, screen, session_start};
    use tern::engine::Event;
    use tern::engine::protocol::{Shown, ShownKind};

    let said = |kind, text: &str| Shown {
        kind,
        text: text.into(),
    };
    let mut app = app();
    feed(&mut app, session_start());
    let turns = [
        said(ShownKind::User, "add a comma"),
        said(ShownKind::Assistant, "Added the comma."),
        said(ShownKind::User, "type the name"),
        said(ShownKind::Assistant, "Typed it as str."),
    ];
    feed(
        &mut app,
        [Event::Resumed {
            transcript: turns.to_vec(),
            unsent: None,
        }],
    );
    assert!(screen(&mut app, 80, 24).contains("Typed it as str."));
    feed(
        &mut app,
        [Event::Rewound {
            to: 2,
            redo: false,
            commits: Vec::new(),
            transcript: Some(turns[..2].to_vec()),
            text: "rewound to before turn 2: chat: 1 turn taken back".into(),
        }],
    );
    let shown = screen(&mut app, 80, 24);
    assert!(shown.contains("Added the comma."), "{shown}");
    assert!(shown.contains("chat: 1 turn taken back"), "{shown}");
    for gone in ["type the name", "Typed it as str."] {
        assert!(!shown.contains(gone), "{gone:?} still shown:\n{shown}");
    }
}

/// The engine's `/rewind` (what the workspace and `-m` send): it reads the record its
/// own writer is still saving, and keeps the redo until the next message.
#[test]
fn the_engine_rewinds_its_own_session_and_redoes() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let (a, b) = three_turns(&repo, &server);
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "/rewind 2 code"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rewound to before turn 2"), "{stderr}");
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (a.clone(), AFTER_ONE.into())
    );
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "/rewind redo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(head(&repo), b);
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "/rewind 2 chat"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(asked(&repo), ["add a comma"]);
    let (_, stderr, _) = run(&repo, &server, &["--resume", "-m", "/rewind 0"]);
    assert!(
        stderr.contains("/rewind: turns are numbered from 1"),
        "{stderr}"
    );
    let (_, stderr, _) = run(&repo, &server, &["--resume", "-m", "/rewind 7"]);
    assert!(
        stderr.contains("turn 7 is not in the record (it has turns 1 to 1); nothing was changed"),
        "{stderr}"
    );
}

/// A record cut short (its last lines gone): the turns it still has can be rewound,
/// and a code rewind that finds no commit of tern's while HEAD moved says so instead
/// of pretending the code is as it was.
#[test]
fn a_record_cut_short_says_what_it_no_longer_knows() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let (a, b) = three_turns(&repo, &server);
    let segment = first_segment(&repo);
    let text = std::fs::read_to_string(&segment).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&segment, format!("{first}\n")).unwrap();
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--to", "2"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("turn 2 is not in the record (it has turns 1 to 1); nothing was changed"),
        "{stderr}"
    );
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "1", "--code"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "HEAD moved since the turn began ({} to {}), but the record holds no commit of tern's since then, so none was taken back",
            &repo.git(&["rev-parse", "--short", "HEAD~2"]).trim(),
            b.get(..7).unwrap()
        )),
        "{stdout}"
    );
    assert_eq!(head(&repo), b, "nothing was taken back");
    assert_ne!(a, b);
}

/// A chat rewind to a turn before a history summary made later: the conversation comes
/// back as the turn record saved it (turn 1 verbatim, no summary), and the next request
/// carries exactly that. Eight long turns in a 4,096-token window, so the history is
/// summarized after turn 2.
#[test]
fn a_chat_rewind_across_a_later_summary_brings_the_turns_back_verbatim() {
    use crate::history_support::{as_sent, is_summary, sent_history};
    use tern::context::history::SUMMARY_PREFIX;
    let server = MockServer::start_in_thread();
    server.set_responder(|r| match is_summary(r) {
        true => Reply::text("I asked you to extend parse_config, step by step."),
        false => Reply::text(format!(
            "A reply: {}",
            "I changed parse_config to read the new key and added a test. ".repeat(20)
        )),
    });
    let repo = TempRepo::with_files(&[("src/config.rs", "fn parse_config() {}\n")]);
    let messages: Vec<String> = (1..=8)
        .map(|n| {
            format!(
                "turn {n}: {}",
                "please extend parse_config ".repeat(30).trim_end()
            )
        })
        .collect();
    let script = repo.path().join(".git/rewind-script.txt");
    std::fs::write(&script, messages.join("\n---\n")).unwrap();
    let window = ["--model", "gpt-4o", "--weak-model", "gpt-4o-mini"];
    let mut args = window.to_vec();
    let script_arg = format!("--script={}", script.display());
    args.extend(["--context-window=4096", script_arg.as_str()]);
    let (_, stderr, code) = run(&repo, &server, &args);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        server.requests().iter().any(is_summary),
        "a summary was made"
    );
    let now = repo.newest_session().history;
    assert!(
        now[0].content.starts_with(SUMMARY_PREFIX),
        "the history begins with the summary now: {:?}",
        now[0].content
    );
    let store = repo.sessions();
    let (disk, _) = tern::engine::persist::SessionDisk::open(
        store.open(&tern::engine::persist::Resume::Newest).unwrap(),
    )
    .unwrap();
    let before = tern::engine::persist::before_turn(&disk.records().unwrap(), 2).unwrap();
    drop(disk);
    assert_eq!(before.history[0].content, messages[0], "turn 1, verbatim");

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "2", "--chat"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("conversation: 7 turns taken back"),
        "{stdout}"
    );
    let back = repo.newest_session().history;
    assert_eq!(as_sent(&back), as_sent(&before.history));

    let mut args = window.to_vec();
    args.extend([
        "--context-window=4096",
        "--resume",
        "-m",
        "turn 9: and now?",
    ]);
    let (_, stderr, code) = run(&repo, &server, &args);
    assert_eq!(code, Some(0), "{stderr}");
    let requests = server.requests();
    let last = requests.iter().rev().find(|r| !is_summary(r)).unwrap();
    assert_eq!(sent_history(last), as_sent(&before.history));
}

/// Moves every time a session's files hold a day back (the state's times in ms, the
/// turn record's `at` in seconds), and the files' own times too.
fn age_by_a_day(dir: &std::path::Path) {
    fn shift(text: &str, key: &str, by: u64) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some((head, tail)) = rest.split_once(key) {
            out.push_str(head);
            out.push_str(key);
            let number = tail.trim_start();
            out.push_str(tail.strip_suffix(number).unwrap());
            let end = number.find(|c: char| !c.is_ascii_digit()).unwrap();
            let (digits, after) = number.split_at_checked(end).unwrap();
            out.push_str(&(digits.parse::<u64>().unwrap() - by).to_string());
            rest = after;
        }
        out.push_str(rest);
        out
    }
    let day = std::time::Duration::from_secs(24 * 60 * 60);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let text = match path.file_name().unwrap().to_str().unwrap() {
            "state.json" => shift(
                &shift(&text, "\"created_ms\":", day.as_millis() as u64),
                "\"last_active_ms\":",
                day.as_millis() as u64,
            ),
            _ => shift(&text, "\"at\":", day.as_secs()),
        };
        std::fs::write(&path, text).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::SystemTime::now() - day)
            .unwrap();
    }
}

/// Yesterday's session, resumed with `--resume`, rewinds as today's does: the code and
/// the conversation to before its turn 2, and the redo.
#[test]
fn yesterdays_session_resumed_rewinds_and_redoes() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let (a, b) = three_turns(&repo, &server);
    let dir = first_segment(&repo).parent().unwrap().to_path_buf();
    age_by_a_day(&dir);
    let (stdout, _, _) = run(&repo, &server, &["sessions"]);
    assert!(stdout.contains("  yesterday  "), "aged: {stdout}");
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("turn 3  what does it do?"), "{stdout}");

    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "/rewind 2"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rewound to before turn 2"), "{stderr}");
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (a, AFTER_ONE.into())
    );
    assert_eq!(asked(&repo), ["add a comma"]);
    let (_, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(head(&repo), b);
    assert_eq!(asked(&repo).len(), 3);
}

/// Hunks await review: the listing says no rewind can happen now, for the reason the
/// rewind itself gives, instead of "code: nothing to take back".
#[test]
fn the_listing_says_pending_hunks_block_every_rewind() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    add_a_comma(&repo, &server);
    // The session is left with a hunk awaiting review (as a workspace quit leaves it).
    let newest = repo
        .sessions()
        .pick(&tern::engine::persist::Resume::Newest)
        .unwrap();
    let mut state = repo.newest_session();
    let ws = tern::edit::Workspace::discover(repo.path()).unwrap();
    let files = tern::edit::FileSet::new(vec!["src/greet.py".into()], ws.files());
    let mut proposal = tern::edit::Proposal::new(&ws);
    let reply = "src/greet.py\n```python\n<<<<<<< SEARCH\ndef greet(name):\n=======\ndef greet(name: str):\n>>>>>>> REPLACE\n```\n";
    proposal.add_reply(&ws, reply, tern::edit::EditFormat::Editblock, &files);
    state.proposal = Some(proposal.snapshot());
    std::fs::write(
        newest.dir.join("state.json"),
        serde_json::to_vec(&state).unwrap(),
    )
    .unwrap();
    let before = head(&repo);

    let (out, refused, code) = run(&repo, &server, &["rewind", "--to", "1"]);
    assert_eq!(code, Some(1), "{out}{refused}");
    let why = "hunks await review in this session";
    assert!(refused.contains(why), "{refused}");
    let (listed, _, code) = run(&repo, &server, &["rewind", "--list"]);
    assert_eq!(code, Some(0));
    assert!(
        listed.contains(&format!("cannot rewind now: {why}")),
        "{listed}"
    );
    assert!(!listed.contains("nothing to take back"), "{listed}");
    assert_eq!(head(&repo), before);
}

/// A rewind killed at each step of its move of HEAD (the files written and HEAD not
/// yet moved; git's index written into its lock; HEAD moved and the index not yet
/// installed) is rolled back whole by the next tern, and the rewind asked again goes
/// through: never a HEAD part way down the turns, nor tern's files taken for the
/// user's (regression pass 5, #2). The user's own change is kept throughout.
#[test]
fn a_rewind_killed_part_way_is_rolled_back_whole_and_goes_through_when_asked_again() {
    for step in ["index", "ref", "index-commit"] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let original = repo.read("src/greet.py");
        let start = head(&repo);
        let (_, b) = three_turns(&repo, &server);
        repo.write("README.md", "# Demo, mine\n");

        let mut killed = repo.tern(&server.base_url());
        killed
            .env("TERN_DIE_AT", step)
            .args(["rewind", "--to", "1", "--code"]);
        let out = output_within(&mut killed, WAIT);
        assert_eq!(out.status.code(), None, "{step}: killed, {:?}", texts(&out));
        assert!(repo.path().join(".git/tern-move.json").exists(), "{step}");

        let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "1", "--code"]);
        assert_eq!(code, Some(0), "{step}: {stderr}");
        assert!(stdout.contains("code: 2 commits"), "{step}: {stdout}");
        assert_eq!(head(&repo), start, "{step}");
        assert_eq!(repo.read("src/greet.py"), original, "{step}");
        assert_eq!(
            repo.git(&["status", "--porcelain"]),
            " M README.md\n",
            "{step}"
        );
        assert!(!repo.path().join(".git/tern-move.json").exists(), "{step}");
        assert!(!repo.path().join(".git/index.lock").exists(), "{step}");
        let reflog = repo.git(&["reflog", "-3", "--format=%gs"]);
        assert!(
            reflog.contains("tern: rolled back") == (step == "index-commit"),
            "{step}: {reflog}"
        );

        let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
        assert_eq!(code, Some(0), "{step}: {stderr}");
        assert_eq!(
            (head(&repo), repo.read("src/greet.py")),
            (b, AFTER_TWO.into()),
            "{step}: {stdout}{stderr}"
        );
        assert_eq!(repo.read("README.md"), "# Demo, mine\n", "{step}");
    }
}

/// `tern ARGS` killed (SIGKILL, by `TERN_DIE_AT`) once its move of HEAD is done and
/// before the session is saved: the move's journal is still there.
fn kill_when_moved(repo: &TempRepo, server: &MockServer, args: &[&str]) {
    let mut killed = repo.tern(&server.base_url());
    killed.env("TERN_DIE_AT", "moved").args(args);
    let out = output_within(&mut killed, WAIT);
    assert_eq!(
        out.status.code(),
        None,
        "{args:?}: killed, {:?}",
        texts(&out)
    );
    assert!(repo.path().join(".git/tern-move.json").exists(), "{args:?}");
}

/// A rewind, then its redo, each killed after HEAD moved and before the session was
/// saved: the next tern rolls the code back to match the session, so the turns can
/// still be listed, rewound and redone (the rewound commits were stranded in the
/// reflog: regression pass 6, #5). The user's own save made after the kill stays.
#[test]
fn a_rewind_or_redo_killed_before_the_session_is_saved_leaves_code_and_session_agreeing() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let original = repo.read("src/greet.py");
    let start = head(&repo);
    let (_, b) = three_turns(&repo, &server);

    kill_when_moved(&repo, &server, &["rewind", "--to", "1", "--code"]);
    assert_eq!(head(&repo), start, "HEAD had moved when it was killed");
    repo.write("README.md", "# Demo, saved after the kill\n");
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("tern: rolled back a move of HEAD"),
        "{stderr}"
    );
    assert!(!stdout.contains("cannot go back"), "{stdout}");
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (b.clone(), AFTER_TWO.into())
    );
    assert!(!repo.path().join(".git/tern-move.json").exists());

    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--to", "1", "--code"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("code: 2 commits"), "{stdout}");
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (start.clone(), original.clone())
    );

    kill_when_moved(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(head(&repo), b, "HEAD had moved when it was killed");
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--redo"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("tern: rolled back a move of HEAD"),
        "{stderr}"
    );
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (b, AFTER_TWO.into())
    );
    assert_eq!(repo.read("README.md"), "# Demo, saved after the kill\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), " M README.md\n");
    assert!(!repo.path().join(".git/tern-move.json").exists());
}

/// `tern undo` killed (SIGKILL, by `TERN_DIE_AT`) when its move of HEAD reaches `step`.
fn kill_undo_at(repo: &TempRepo, server: &MockServer, step: &str) {
    let mut killed = repo.tern(&server.base_url());
    killed.env("TERN_DIE_AT", step).args(["undo"]);
    let out = output_within(&mut killed, WAIT);
    assert_eq!(out.status.code(), None, "{step}: killed, {:?}", texts(&out));
}

/// `tern undo` killed after HEAD moved and before the session forgot the commit: the
/// next undo rolls the move back first, so it takes back that same commit, not the
/// one below it, and the session agrees with the code (regression pass 6, #5).
#[test]
fn an_undo_killed_before_the_session_forgot_its_commit_is_rolled_back() {
    for args in [&["undo"][..], &["--resume", "-m", "/undo"]] {
        undo_killed_before_the_session_forgot_its_commit(args);
    }
}

fn undo_killed_before_the_session_forgot_its_commit(args: &[&str]) {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let (a, _) = three_turns(&repo, &server);
    kill_when_moved(&repo, &server, args);
    assert_eq!(
        head(&repo),
        a,
        "{args:?}: HEAD had moved when it was killed"
    );
    repo.write("README.md", "# Demo, saved after the kill\n");

    let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("tern: rolled back a move of HEAD"),
        "{stderr}"
    );
    assert_eq!(
        (head(&repo), repo.read("src/greet.py")),
        (a, AFTER_ONE.into())
    );
    let (stdout, stderr, code) = run(&repo, &server, &["rewind", "--list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains("cannot go back"), "{stdout}");
    assert_eq!(repo.git(&["status", "--porcelain"]), " M README.md\n");
    assert!(!repo.path().join(".git/tern-move.json").exists());
}

/// `tern undo` killed after HEAD moved and before git's index followed: the next tern
/// puts both back, so git's index never disagrees with HEAD about tern's files.
#[test]
fn an_undo_killed_between_the_branch_and_the_index_is_rolled_back() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let a = add_a_comma(&repo, &server);
    kill_undo_at(&repo, &server, "index-commit");
    assert_ne!(head(&repo), a, "HEAD had moved when it was killed");

    let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // The rollback changed HEAD and the files: it is said, not only logged.
    assert!(
        stderr.contains("tern: rolled back a move of HEAD from")
            && stderr.contains("(1 file put back"),
        "{stderr}"
    );
    assert_eq!(
        repo.read("src/greet.py"),
        "def greet(name):\n    return 'hello ' + name\n"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert!(!repo.path().join(".git/tern-move.json").exists());
}

/// What the user saved after a tern was killed in the middle of an undo is never
/// rolled back over, in each state a kill leaves: the journal written and nothing
/// else (written here as tern writes it), the files restored and HEAD not moved, HEAD
/// moved and the journal not removed (regression pass 6, #1). The next tern, a
/// listing or an undo, rolls back nothing, keeps the journal, and says which file
/// changed and what to do; once the file is put back as HEAD has it, the rollback
/// goes through and says so.
#[test]
fn a_save_after_a_killed_undo_is_never_rolled_back_over() {
    for state in ["journal", "index", "index-commit"] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let a = add_a_comma(&repo, &server);
        let parent = repo.git(&["rev-parse", "HEAD~1"]).trim().to_string();
        let journal = repo.path().join(".git/tern-move.json");
        if state == "journal" {
            let text = serde_json::json!({
                "from": a, "to": parent, "paths": [b"src/greet.py".to_vec()], "before": [],
            });
            std::fs::write(&journal, text.to_string()).unwrap();
        } else {
            kill_undo_at(&repo, &server, state);
            assert!(journal.exists(), "{state}");
        }
        let left = head(&repo);
        let yours = "def greet(name):\n    return 'a day of my work, ' + name\n";
        repo.write("src/greet.py", yours);

        for args in [&["rewind", "--list"][..], &["undo"]] {
            let (stdout, stderr, _) = run(&repo, &server, args);
            let said = format!("{stdout}{stderr}");
            assert!(
                said.contains("src/greet.py changed since")
                    && said.contains("nothing was rolled back")
                    && said.contains("`git checkout HEAD -- src/greet.py`"),
                "{state} {args:?}: {said}"
            );
            assert!(
                !said.contains("rolled back a move"),
                "{state} {args:?}: {said}"
            );
            assert_eq!(repo.read("src/greet.py"), yours, "{state} {args:?}");
            assert_eq!(head(&repo), left, "{state} {args:?}");
            assert!(journal.exists(), "{state} {args:?}");
        }
        let (_, _, code) = run(&repo, &server, &["undo"]);
        assert_ne!(code, Some(0), "{state}: the undo refuses");

        // Put back as HEAD has it, the file is the move's again: rolled back, and said.
        repo.git(&["checkout", "HEAD", "--", "src/greet.py"]);
        let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
        assert_eq!(code, Some(0), "{state}: {stdout}{stderr}");
        assert!(
            stderr.contains("tern: rolled back a move of HEAD"),
            "{state}: {stderr}"
        );
        assert_eq!(head(&repo), parent, "{state}: {stdout}");
        assert!(!journal.exists(), "{state}");
    }
}

/// A rollback done by the engine (here `/undo` in a headless chat; the workspace and
/// ACP show the same notice) is said as well.
#[test]
fn a_rollback_from_the_chat_is_a_notice() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let a = add_a_comma(&repo, &server);
    let parent = repo.git(&["rev-parse", "HEAD~1"]).trim().to_string();
    kill_undo_at(&repo, &server, "index-commit");
    assert_ne!(head(&repo), a, "HEAD had moved when it was killed");

    let (stdout, stderr, code) = run(&repo, &server, &["--resume", "-m", "/undo"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("tern: rolled back a move of HEAD from"),
        "{stdout}{stderr}"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(head(&repo), parent, "rolled back, then undone");
}

/// A foreign or corrupt journal naming a path outside the work tree (absolute, with
/// `..`, in `.git`, through a symlinked directory) is refused whole: nothing outside
/// (or inside) is written or deleted, and the journal is kept to look at (regression
/// pass 6, #9).
/// What is at the journal's place but is not a file (a FIFO, whose read would block for
/// ever while tern holds its lock; a directory, once taken for no journal) is refused and
/// said, and a journal's paths reach the terminal marked, never as escape sequences.
#[test]
fn a_journal_that_is_not_a_file_is_refused_and_its_paths_are_shown_marked() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let a = add_a_comma(&repo, &server);
    let journal = repo.path().join(".git/tern-move.json");
    nix::unistd::mkfifo(&journal, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
    assert_ne!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("is not a journal tern wrote") && stderr.contains("nothing was done"),
        "{stderr}"
    );
    std::fs::remove_file(&journal).unwrap();
    std::fs::create_dir(&journal).unwrap();
    let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
    assert_ne!(code, Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("is not a journal tern wrote"), "{stderr}");
    assert_eq!(head(&repo), a);
    std::fs::remove_dir(&journal).unwrap();

    // A move journal naming a file whose name holds an escape sequence, changed since.
    let hostile = "src/\x1b]0;PWNED\x07.py";
    repo.write(hostile, "mine\n");
    let text = serde_json::json!({"from": a, "to": a, "paths": [hostile.as_bytes()], "before": []});
    std::fs::write(&journal, text.to_string()).unwrap();
    let (_, stderr, _) = run(&repo, &server, &["undo"]);
    assert!(stderr.contains("PWNED"), "{stderr}");
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
}

#[test]
fn a_journal_naming_paths_outside_the_work_tree_is_refused() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::os::unix::fs::symlink(outside.path(), repo.path().join("link")).unwrap();
    repo.git(&["add", "link"]);
    repo.git(&["commit", "-qm", "a link out"]);
    let a = add_a_comma(&repo, &server);
    let journal = repo.path().join(".git/tern-move.json");
    let config = repo.read(".git/config");
    let shapes = [
        victim.to_str().unwrap().to_string(),
        format!("../{}", victim.strip_prefix("/").unwrap().display()),
        "src/../../victim.txt".into(),
        ".git/config".into(),
        "src/.GIT/config".into(),
        "link/victim.txt".into(),
    ];
    for shape in &shapes {
        for (paths, before) in [
            (vec![shape.as_bytes().to_vec()], serde_json::json!([])),
            (vec![], serde_json::json!([[shape.as_bytes(), null]])),
            (
                vec![],
                serde_json::json!([[shape.as_bytes(), "0000000000000000000000000000000000000000"]]),
            ),
        ] {
            std::fs::write(&victim, "precious\n").unwrap();
            let text = serde_json::json!({"from": a, "to": a, "paths": paths, "before": before});
            std::fs::write(&journal, text.to_string()).unwrap();
            let (stdout, stderr, code) = run(&repo, &server, &["undo"]);
            assert_ne!(code, Some(0), "{shape}: {stdout}{stderr}");
            assert!(
                stderr.contains("which is not a file of the work tree tern would write")
                    && stderr.contains("nothing was done"),
                "{shape}: {stderr}"
            );
            assert_eq!(
                std::fs::read_to_string(&victim).unwrap(),
                "precious\n",
                "{shape}"
            );
            assert_eq!(repo.read(".git/config"), config, "{shape}");
            assert!(journal.exists(), "{shape}: kept");
            assert_eq!(head(&repo), a, "{shape}");
        }
    }
    // A file git tracks that is itself a symlink is a file of the work tree: a journal
    // naming it (to check it out) is tern's, and rolled back.
    let text = serde_json::json!({"from": a, "to": a, "paths": [b"link".to_vec()], "before": []});
    std::fs::write(&journal, text.to_string()).unwrap();
    let (_, stderr, code) = run(&repo, &server, &["undo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("tern: rolled back a move of HEAD"),
        "{stderr}"
    );
    assert!(!journal.exists());
    assert_eq!(
        std::fs::read_link(repo.path().join("link")).unwrap(),
        outside.path()
    );
}
