//! Sessions through the real binary: a session per run, `tern sessions`, `--resume` and
//! `--resume=ID`, one tern per session (its lock), two terns at once, pruning, the
//! older layout moved in, the notice of a session with pending hunks, and a tern killed
//! mid-save.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::headless::{EDIT_REPLY, repo};
use crate::support::{MockServer, Reply, TempRepo, output_within, texts};
use tern::engine::persist::{Resume, SessionFile, load};
use tern::llm::Message;

const GREET: &str = "def greet(name):\n    return 'hello ' + name\n";

const WAIT: Duration = Duration::from_secs(30);
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A session with one exchange, last active `age_ms` ago.
fn exchange(question: &str, answer: &str, age_ms: u64) -> SessionFile {
    SessionFile {
        model: "gpt-4o".into(),
        title: question.into(),
        last_active_ms: now_ms() - age_ms,
        history: vec![Message::user(question), Message::assistant(answer)],
        session_cost: 0.5,
        ..SessionFile::default()
    }
}

/// `state` with one hunk pending for src/greet.py.
fn with_pending_hunk(repo: &TempRepo, mut state: SessionFile) -> SessionFile {
    let ws = tern::edit::Workspace::discover(repo.path()).unwrap();
    let files = tern::edit::FileSet::new(vec!["src/greet.py".into()], ws.files());
    let mut proposal = tern::edit::Proposal::new(&ws);
    proposal.add_reply(&ws, EDIT_REPLY, tern::edit::EditFormat::Editblock, &files);
    state.proposal = Some(proposal.snapshot());
    state
}

fn run(repo: &TempRepo, server: &MockServer, args: &[&str]) -> (String, String, Option<i32>) {
    let out = output_within(repo.tern(&server.base_url()).args(args), WAIT);
    let (stdout, stderr) = texts(&out);
    (stdout, stderr, out.status.code())
}

/// What the model was sent last, message by message.
fn last_sent(server: &MockServer) -> Vec<String> {
    let last = server.requests().pop().unwrap();
    last.messages.into_iter().map(|m| m.text).collect()
}

#[test]
fn tern_sessions_lists_each_run_newest_first_with_what_it_holds() {
    let server = MockServer::start_in_thread();
    server.set_responder(|_| Reply::text("Sure."));
    let repo = repo();
    let yesterday = repo.plant_session(with_pending_hunk(
        &repo,
        exchange(
            "make greet add a comma,\nthen say so in a very long first message that goes on",
            "Done.",
            DAY_MS + 60_000,
        ),
    ));
    let (_, stderr, code) = run(&repo, &server, &["-m", "what does greet do?"]);
    assert_eq!(code, Some(0), "{stderr}");
    // A run that sends nothing and adds no file keeps nothing.
    let (_, stderr, code) = run(&repo, &server, &["-m", "/help"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (_, stderr, code) = run(&repo, &server, &["tokens"]);
    assert_eq!(code, Some(0), "{stderr}");

    // A session holds the conversation: for the user's eyes only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let newest = &repo.sessions().list()[0].dir;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(newest), 0o700);
        assert_eq!(mode(newest.parent().unwrap()), 0o700);
        assert_eq!(mode(&newest.join("state.json")), 0o600);
        assert_eq!(mode(&newest.join("turns-1.jsonl")), 0o600);
    }

    let (stdout, stderr, code) = run(&repo, &server, &["sessions"]);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let newest = repo.sessions().list()[0].id.clone();
    assert!(
        lines[0].starts_with(&format!("{newest}  just now")),
        "{stdout}"
    );
    assert!(lines[0].contains("what does greet do?"), "{stdout}");
    assert!(!lines[0].contains("pending"), "{stdout}");
    assert!(
        lines[1].starts_with(&format!("{yesterday}  yesterday")),
        "{stdout}"
    );
    assert!(
        lines[1].contains("make greet add a comma, then say so in … "),
        "one line, cut: {stdout}"
    );
    assert!(lines[1].contains("1 hunk pending"), "{stdout}");
    assert!(lines[1].ends_with("$0.5000"), "{stdout}");

    let (stdout, _, _) = run(&repo, &server, &["sessions", "--json"]);
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with(r#"{"version":1,"id":"#)),
        "{stdout}"
    );
    let listed: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed[1]["id"], yesterday.as_str());
    assert_eq!(listed[1]["pending_hunks"], 1);
    assert_eq!(listed[1]["open"], false);
}

/// `--resume` takes the session active last (by what the state records, not the
/// file's time), `--resume=ID` the one named (a unique start of its id will do), and
/// `--resume FILE` keeps FILE a file to add.
#[test]
fn resume_takes_the_newest_or_the_one_named_and_never_swallows_a_file() {
    let server = MockServer::start_in_thread();
    server.set_responder(|_| Reply::text("Right."));
    let repo = repo();
    let yesterday = repo.plant_session(exchange("about apples", "Apples.", DAY_MS));
    let older = repo.plant_session(exchange("about bananas", "Bananas.", 3 * DAY_MS));
    // Saved last, but last active three days ago.
    assert_eq!(repo.sessions().pick(&Resume::Newest).unwrap().id, yesterday);

    let (_, stderr, code) = run(&repo, &server, &["--resume", "src/greet.py", "-m", "and?"]);
    assert_eq!(code, Some(0), "{stderr}");
    let sent = last_sent(&server).join("\n");
    assert!(sent.contains("about apples"), "{sent}");
    assert!(
        sent.contains("return 'hello ' + name"),
        "the file was added: {sent}"
    );

    let prefix = older.get(..4).unwrap();
    let (_, stderr, code) = run(&repo, &server, &[&format!("--resume={prefix}"), "-m", "hm"]);
    assert_eq!(code, Some(0), "{stderr}");
    let sent = last_sent(&server).join("\n");
    assert!(
        sent.contains("about bananas") && !sent.contains("about apples"),
        "{sent}"
    );

    let requests = server.requests().len();
    for (id, says) in [
        ("zzzzzzzz", "no session zzzzzzzz in this repository"),
        ("src/a.rs", "\"src/a.rs\" is not a session id"),
        ("", "\"\" is not a session id"),
    ] {
        let (_, stderr, code) = run(&repo, &server, &[&format!("--resume={id}"), "-m", "hm"]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    assert_eq!(server.requests().len(), requests, "nothing was sent");
    assert_eq!(repo.sessions().list().len(), 2, "and no session made");
}

/// A session is open in one tern at a time: another `--resume` of it is refused,
/// naming the tern that has it, and `tern sessions` shows it open; once that tern ends
/// (however it ends) the session can be resumed again.
#[test]
fn a_session_open_in_one_tern_is_refused_to_another_that_says_which() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("Slowly.").with_start_delay(Duration::from_secs(3)));
    server.push(Reply::text("Now."));
    let repo = repo();
    let id = repo.plant_session(exchange("about apples", "Apples.", DAY_MS));
    let mut first = repo
        .tern(&server.base_url())
        .args(["--resume", "-m", "take your time"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session = repo.sessions().pick(&Resume::Newest).unwrap();
    let start = Instant::now();
    while session.holder().is_none() {
        assert!(start.elapsed() < WAIT, "the first tern never opened it");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "me too"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "session {id} is open in another tern (pid {}): quit that tern first, or start a new session: tern without --resume",
            first.id()
        )),
        "{stderr}"
    );
    let (stdout, _, _) = run(&repo, &server, &["sessions"]);
    assert!(
        stdout.contains(&format!("open in a tern (pid {})", first.id())),
        "{stdout}"
    );
    assert!(first.wait().unwrap().success());
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "my turn"]);
    assert_eq!(code, Some(0), "{stderr}");
    let saved = repo.newest_session();
    let asked: Vec<&str> = saved.history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        asked,
        [
            "about apples",
            "Apples.",
            "take your time",
            "Slowly.",
            "my turn",
            "Now."
        ]
    );

    // A tern killed outright holds nothing.
    server.push(Reply::text("Never.").with_start_delay(Duration::from_secs(20)));
    let mut killed = repo
        .tern(&server.base_url())
        .args(["--resume", "-m", "then die"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while session.holder().is_none() {
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(session.holder().is_none());
}

/// Two terns started at once in one repository keep a session each.
#[test]
fn two_terns_at_once_keep_two_sessions() {
    let server = MockServer::start_in_thread();
    server.set_responder(|r| {
        let asked = r.last_user_text().unwrap_or_default();
        let answer = if asked.starts_with("one") {
            "First."
        } else {
            "Second."
        };
        Reply::text(answer).with_start_delay(Duration::from_millis(500))
    });
    let repo = repo();
    let spawn = |message: &str| {
        repo.tern(&server.base_url())
            .args(["-m", message])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn("one"), spawn("two"));
    for child in [one, two] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut held: Vec<Vec<String>> = repo
        .sessions()
        .list()
        .iter()
        .map(|s| {
            let saved = load(&s.dir.join("state.json")).unwrap().unwrap();
            saved.history.into_iter().map(|m| m.content).collect()
        })
        .collect();
    held.sort();
    assert_eq!(held, [["one", "First."], ["two", "Second."]]);
}

/// An older tern kept one file per repository and set the one before aside as
/// `.prev.json`: both become sessions on the first start, the newer the newest.
#[test]
fn an_older_terns_session_and_the_one_before_become_two_sessions() {
    let server = MockServer::start_in_thread();
    server.set_responder(|_| Reply::text("Back."));
    let repo = repo();
    let sessions = repo.state_dir().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let key = tern::config::repo_key(repo.path());
    let v1 = |question: &str| {
        format!(
            r#"{{"version": 1, "model": "gpt-4o", "mode": "ask", "files": [],
                "history": [{{"role": "user", "content": "{question}"}},
                            {{"role": "assistant", "content": "ok"}}],
                "summary_at_front": false, "checkpoint": null, "summaries": 0,
                "session_cost": 0.25,
                "transcript": [{{"kind": "user", "text": "{question}"}}]}}"#
        )
    };
    let (current, previous) = (
        sessions.join(format!("{key}.json")),
        sessions.join(format!("{key}.prev.json")),
    );
    std::fs::write(&previous, v1("the one before")).unwrap();
    std::fs::write(&current, v1("the latest")).unwrap();
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&previous)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();

    let (stdout, stderr, code) = run(&repo, &server, &["sessions"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("is now session").count(), 2, "{stderr}");
    assert!(!current.exists() && !previous.exists());
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].contains("the latest") && lines[1].contains("the one before"));

    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "where were we?"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(last_sent(&server).iter().any(|m| m == "the latest"));
    let resumed = &repo.sessions().list()[0];
    assert_eq!(
        resumed.title, "the latest",
        "still named by its first message"
    );
    let before = repo.sessions().list()[1].id.clone();
    let (_, stderr, code) = run(
        &repo,
        &server,
        &[&format!("--resume={before}"), "-m", "and?"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(last_sent(&server).iter().any(|m| m == "the one before"));
}

/// Opened without `--resume`, a run says when another session has hunks pending and
/// how to get it back; resuming one does not.
#[test]
fn a_new_run_tells_of_a_session_with_pending_hunks() {
    let server = MockServer::start_in_thread();
    server.set_responder(|_| Reply::text("Hi."));
    let repo = repo();
    let id = repo.plant_session(with_pending_hunk(
        &repo,
        exchange("add a comma", "Here.", DAY_MS + 60_000),
    ));
    let (_, stderr, code) = run(&repo, &server, &["-m", "hello"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.lines().next().unwrap(),
        format!(
            "tern: session {id} (yesterday: \"add a comma\") has 1 hunk pending: `tern --resume={id}` brings it back (in the workspace, /sessions)"
        ),
        "the first thing said: {stderr}"
    );
    let (_, stderr, _) = run(&repo, &server, &[&format!("--resume={id}"), "-m", "hello"]);
    assert!(!stderr.contains("brings it back"), "{stderr}");
}

/// At start, sessions beyond the newest 50 that were inactive for 30 days go, but
/// never one with pending hunks; `tern sessions --prune` removes those only when told
/// to.
#[test]
fn old_sessions_are_pruned_but_never_with_pending_hunks_unless_confirmed() {
    let server = MockServer::start_in_thread();
    server.set_responder(|_| Reply::text("Hi."));
    let repo = repo();
    for i in 0..50 {
        repo.plant_session(exchange(&format!("recent {i}"), "ok", DAY_MS + i));
    }
    let old = |age_days: u64| exchange("old", "ok", age_days * DAY_MS);
    let plain = [repo.plant_session(old(40)), repo.plant_session(old(41))];
    let pending = repo.plant_session(with_pending_hunk(&repo, old(45)));
    let (_, stderr, code) = run(&repo, &server, &["-m", "hello"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("removed 2 sessions of this repository inactive for over 30 days"),
        "{stderr}"
    );
    let left: Vec<String> = repo.sessions().list().into_iter().map(|s| s.id).collect();
    assert_eq!(left.len(), 52, "50 recent, the pending one and the new one");
    assert!(left.contains(&pending) && !plain.iter().any(|p| left.contains(p)));

    // Not on a terminal and without --yes: listed, kept, and not a success.
    let (stdout, stderr, code) = run(&repo, &server, &["sessions", "--prune"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(&pending) && stdout.contains("pass --yes"),
        "{stdout}"
    );
    assert!(repo.sessions().list().iter().any(|s| s.id == pending));
    let (stdout, stderr, code) = run(&repo, &server, &["sessions", "--prune", "--yes"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("removed 1 old session"), "{stdout}");
    assert!(!repo.sessions().list().iter().any(|s| s.id == pending));
}

/// A tern killed while it saves (here at random points of a scripted session) leaves a
/// session that resumes: its state whole, its turn record cut back to what the state
/// says, numbering on from there.
#[test]
fn a_tern_killed_mid_save_leaves_a_session_that_resumes() {
    let server = MockServer::start_in_thread();
    // A summary request (the history written out) gets a short summary: an echo of it
    // would grow the history with each summary and make them follow one another.
    server.set_responder(|r| {
        let last = r.last_user_text().unwrap_or_default();
        Reply::text(match last.contains("# USER") {
            true => "a short summary".to_string(),
            false => format!("reply to {last}"),
        })
    });
    let repo = repo();
    let script = repo.path().join(".git/script.txt");
    let turns: Vec<String> = (1..=400).map(|i| format!("turn {i}")).collect();
    std::fs::write(&script, turns.join("\n---\n")).unwrap();
    let (_, stderr, code) = run(&repo, &server, &["-m", "turn 0"]);
    assert_eq!(code, Some(0), "{stderr}");
    for (round, after_ms) in [150u64, 400, 900].into_iter().enumerate() {
        let mut child = repo
            .tern(&server.base_url())
            .args(["--resume", "--script"])
            .arg(&script)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        let listed = repo.sessions().list().into_iter().next().unwrap();
        let saved = load(&listed.dir.join("state.json")).unwrap().unwrap();
        let store = repo.sessions();
        let session = store.open(&Resume::Newest).unwrap();
        let (disk, _) = tern::engine::persist::SessionDisk::open(session).unwrap();
        let records = disk.records().unwrap();
        let messages: usize = records
            .iter()
            .map(|r| match r {
                tern::engine::persist::Record::Messages(j) => j.messages.len(),
                _ => 0,
            })
            .sum();
        // What the record ends with, should it disagree with the state.
        let tail: Vec<String> = records
            .iter()
            .rev()
            .take(6)
            .map(|r| match r {
                tern::engine::persist::Record::Turn(t) => format!("turn {}", t.turn),
                tern::engine::persist::Record::Messages(j) => {
                    format!("{} messages of turn {}", j.messages.len(), j.turn)
                }
                other => format!("{other:?}"),
            })
            .collect();
        let said = format!(
            "round {round}: state says {} turns, {} messages; the record ends {tail:?}",
            saved.record.turns, saved.record.messages
        );
        assert_eq!(messages, saved.record.messages, "{said}");
        let last_turn = records.iter().rev().find_map(|r| match r {
            tern::engine::persist::Record::Turn(t) => Some(t.turn),
            _ => None,
        });
        assert_eq!(last_turn.unwrap_or(0), saved.record.turns, "{said}");
        // A summary replaces the history's front, up to its end at times: then the
        // history neither only grew since the turn began nor ends with its messages.
        let summarized = saved.summaries > 0 || saved.summary_at_front;
        if saved.record.turns > 0 {
            // The record rebuilds the turn's start, the history only grew since, and
            // what the last turn added ends the saved history.
            let before = tern::engine::persist::before_turn(&records, saved.record.turns).unwrap();
            assert!(
                summarized || before.history.len() <= saved.history.len(),
                "{said}: {} messages before the turn, {} saved",
                before.history.len(),
                saved.history.len()
            );
            let added: Vec<_> = records
                .iter()
                .filter_map(|r| match r {
                    tern::engine::persist::Record::Messages(j) if j.turn == saved.record.turns => {
                        Some(j.messages.iter())
                    }
                    _ => None,
                })
                .flatten()
                .collect();
            let ends: Vec<_> = saved.history.iter().rev().take(added.len()).rev().collect();
            assert!(summarized || ends == added, "{said}");
        }
        drop(disk);
    }
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "after the crash"]);
    assert_eq!(code, Some(0), "{stderr}");
    let saved = repo.newest_session();
    let last = &saved.history.last().unwrap().content;
    assert!(last.starts_with("reply to after the crash"), "{last}");
}

/// `tern undo --turn` acts on the newest session unless `--resume=ID` names another (and
/// says which session's turn is at HEAD when the newest has none); it refuses a session
/// a tern has open. Plain `tern undo` updates the session whose turn made the commit.
#[test]
fn undo_acts_on_the_newest_session_or_the_one_named() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let land = |old: &str, new: &str| {
        let reply = repo.path().join(".git/reply.md");
        let block = format!(
            "src/greet.py\n```python\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n"
        );
        std::fs::write(&reply, block).unwrap();
        let (_, stderr, code) = run(&repo, &server, &["apply", &reply.display().to_string()]);
        assert_eq!(code, Some(0), "{stderr}");
        repo.git(&["rev-parse", "HEAD"]).trim().to_string()
    };
    let first = land(
        "    return 'hello ' + name\n",
        "    return 'hello, ' + name\n",
    );
    let second = land("def greet(name):\n", "def greet(name: str):\n");
    let turns = |commits: &[&str]| serde_json::from_value(serde_json::json!([commits])).unwrap();
    let made = repo.plant_session(SessionFile {
        turns: turns(&[&first, &second]),
        ..exchange("type greet", "Done.", DAY_MS)
    });
    let newest = repo.plant_session(exchange("just a question", "An answer.", 0));

    let (_, stderr, code) = run(&repo, &server, &["undo", "--turn"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "session {newest}: no turn of this session made a commit"
        )) && stderr.contains(&format!("`tern undo --turn --resume={made}`")),
        "{stderr}"
    );
    assert_eq!(
        repo.git(&["rev-parse", "HEAD"]).trim(),
        second,
        "nothing undone"
    );

    let store = repo.sessions();
    let open_here = store.open(&Resume::Id(made.clone())).unwrap();
    let resume = format!("--resume={made}");
    let (_, stderr, code) = run(&repo, &server, &["undo", "--turn", &resume]);
    assert_eq!(code, Some(1), "{stderr}");
    // The advice is about undoing (that tern can), not about starting a chat.
    assert!(
        stderr.contains(&format!(
            "session {made} is open in another tern (pid {}): quit that tern first, or undo in it (`/undo`, `/undo turn`)",
            std::process::id()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("--resume starts"), "{stderr}");
    drop(open_here);

    let (stdout, stderr, code) = run(&repo, &server, &["undo", "--turn", &resume]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.matches("undid ").count(), 2, "{stdout}");
    assert_eq!(repo.read("src/greet.py"), GREET);
    let state = |id: &str| {
        let listed = store.pick(&Resume::Id(id.into())).unwrap();
        load(&listed.dir.join("state.json")).unwrap().unwrap()
    };
    let saved = state(&made);
    assert!(saved.turns.is_empty());
    assert_eq!(saved.notes.len(), 1);
    let (disk, _) =
        tern::engine::persist::SessionDisk::open(store.open(&Resume::Id(made.clone())).unwrap())
            .unwrap();
    assert!(matches!(
        disk.records().unwrap().as_slice(),
        [tern::engine::persist::Record::Undone { commits }] if commits.len() == 2
    ));
    drop(disk);

    // Plain `tern undo`: the session that made the commit is told, not the newest.
    let third = land("    return 'hello ' + name\n", "    return 'hi ' + name\n");
    let maker = repo.plant_session(SessionFile {
        turns: turns(&[&third]),
        ..exchange("say hi", "Done.", 2 * DAY_MS)
    });
    let (_, stderr, code) = run(&repo, &server, &["undo"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(state(&maker).notes.len(), 1, "the maker hears of it");
    assert!(state(&maker).turns.is_empty());
    assert!(state(&newest).notes.is_empty(), "the newest does not");
}

/// A state directory where no session can be made costs the run its saving, nothing
/// else: it says so once and answers.
#[test]
fn a_session_that_cannot_be_made_costs_only_the_saving() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("Still here."));
    let repo = repo();
    // Under a file: no directory can be made there, whoever runs the test.
    let blocked = repo.path().join(".git/HEAD/state");
    let out = output_within(
        repo.tern(&server.base_url())
            .env("TERN_STATE_DIR", &blocked)
            .args(["-m", "hello"]),
        WAIT,
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Still here."), "{stdout}");
    assert_eq!(
        stderr.matches("this session will not be saved").count(),
        1,
        "{stderr}"
    );
}

/// `tern undo --resume=ID` checks the session before undoing: an id that is not one,
/// no such session, or a session that did not make HEAD refuses (naming the one that
/// did), changing nothing; the session that made it is told, and says so.
#[test]
fn undo_checks_the_session_named_before_undoing() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let reply = repo.path().join(".git/reply.md");
    std::fs::write(
        &reply,
        "src/greet.py\n```python\n<<<<<<< SEARCH\n    return 'hello ' + name\n=======\n    return 'hi ' + name\n>>>>>>> REPLACE\n```\n",
    )
    .unwrap();
    let (_, stderr, code) = run(&repo, &server, &["apply", &reply.display().to_string()]);
    assert_eq!(code, Some(0), "{stderr}");
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let turns = serde_json::from_value(serde_json::json!([[&head]])).unwrap();
    let maker = repo.plant_session(SessionFile {
        turns,
        ..exchange("say hi", "Done.", DAY_MS)
    });
    let other = repo.plant_session(exchange("just a question", "An answer.", 0));
    let store = repo.sessions();
    let notes = |id: &str| {
        let listed = store.pick(&Resume::Id(id.into())).unwrap();
        load(&listed.dir.join("state.json")).unwrap().unwrap().notes
    };

    for (resume, says) in [
        (
            "--resume=!!!".to_string(),
            "\"!!!\" is not a session id".to_string(),
        ),
        (
            "--resume=zzzzzzzz".to_string(),
            "no session zzzzzzzz".to_string(),
        ),
        (
            format!("--resume={other}"),
            format!(
                "was not made by session {other} but by session {maker}: `tern undo --resume={maker}`"
            ),
        ),
    ] {
        let (_, stderr, code) = run(&repo, &server, &["undo", &resume]);
        assert_eq!(code, Some(1), "{resume}: {stderr}");
        assert!(
            stderr.contains(&says) && stderr.contains("nothing was undone"),
            "{resume}: {stderr}"
        );
        assert_eq!(repo.git(&["rev-parse", "HEAD"]).trim(), head, "{resume}");
        assert!(
            notes(&other).is_empty(),
            "{resume}: the other is told nothing"
        );
    }

    let (stdout, stderr, code) = run(&repo, &server, &["undo", &format!("--resume={maker}")]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("session {maker} made it")),
        "{stdout}"
    );
    assert_ne!(repo.git(&["rev-parse", "HEAD"]).trim(), head);
    assert_eq!(notes(&maker).len(), 1, "the maker hears of it");
    assert!(notes(&other).is_empty());
}

/// A reader that closes the pipe early (`tern sessions | head -1`, `tern -m … | head`)
/// ends tern quietly, exit 0: no "Broken pipe" message.
#[test]
fn a_closed_pipe_ends_quietly() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    for age in 0..3 {
        repo.plant_session(exchange("a question", "An answer.", age * DAY_MS));
    }
    server.push(Reply::text("a reply ".repeat(20_000)));
    for args in [&["sessions"][..], &["-m", "hi"]] {
        let mut child = repo
            .tern(&server.base_url())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes before tern writes anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// A state that cannot be read (a FIFO in its place) is refused naming the file and
/// why, once: the error's text ended with its cause and `{:#}` added it again
/// (regression pass 3, finding 6).
#[test]
fn an_unreadable_state_says_why_once() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok"));
    let repo = repo();
    let (_, stderr, code) = run(&repo, &server, &["-m", "hi"]);
    assert_eq!(code, Some(0), "{stderr}");
    let state = repo.sessions().list()[0].dir.join("state.json");
    crate::nothing_hangs::mkfifo(&state);
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "again"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&state.display().to_string()), "{stderr}");
    assert_eq!(stderr.matches("a FIFO, not a file").count(), 1, "{stderr}");
}

/// `tern --resume` when the session active last cannot be read (a truncated state)
/// refuses, saying why and naming the newest session that can be resumed.
#[test]
fn resume_of_an_unreadable_newest_names_the_next_resumable() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let older = repo.plant_session(exchange("about apples", "Apples.", 2 * DAY_MS));
    let newest = repo.plant_session(exchange("about pears", "Pears.", DAY_MS));
    let state = repo
        .sessions()
        .pick(&Resume::Id(newest.clone()))
        .unwrap()
        .dir
        .join("state.json");
    let bytes = std::fs::read(&state).unwrap();
    std::fs::write(&state, &bytes[..bytes.len() / 2]).unwrap();
    let (_, stderr, code) = run(&repo, &server, &["--resume", "-m", "again"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&newest), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "; the newest session that can be resumed is {older}: `tern --resume={older}`"
        )),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}

/// Headless, `/sessions` prints the lines `tern sessions` prints; `/sessions ID`
/// switches (the next message goes on in that session).
#[test]
fn sessions_in_a_headless_run_lists_and_switches() {
    let server = MockServer::start_in_thread();
    server.set_responder(|_| Reply::text("Right."));
    let repo = repo();
    let older = repo.plant_session(exchange("about apples", "Apples.", DAY_MS));
    let (listed, _, _) = run(&repo, &server, &["sessions"]);
    let script = repo.path().join(".git/script.txt");
    let text = format!("/sessions\n---\n/sessions {older}\n---\nand pears?\n");
    std::fs::write(&script, text).unwrap();
    let (_, stderr, code) = run(&repo, &server, &["--script", script.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(listed.trim_end()), "{listed}\n{stderr}");
    assert!(
        stderr.contains(&format!("tern: switched to session {older}; session ")),
        "{stderr}"
    );
    let sent = last_sent(&server);
    assert!(sent.iter().any(|t| t.contains("about apples")), "{sent:?}");
    let state = load(
        &repo
            .sessions()
            .pick(&Resume::Id(older))
            .unwrap()
            .dir
            .join("state.json"),
    )
    .unwrap()
    .unwrap();
    assert_eq!(state.history.len(), 4, "the turn went to {state:#?}");
}
