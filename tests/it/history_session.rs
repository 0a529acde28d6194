//! Long sessions through the real binary: `--script` files, the saved session and
//! `--resume`, and a 300-turn session that must never send a request bigger than the
//! window. `measure_a_300_turn_session` (ignored; run it with `--ignored --nocapture`)
//! prints the numbers the README reports.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::history_support::{as_sent, is_summary, sent_history, turn_of};
use crate::support::{MockServer, RecordedRequest, Reply, TempRepo, texts};

const TURNS: usize = 300;

/// A deterministic spread of sizes: mostly short, sometimes long, now and then huge.
fn words(turn: usize, salt: usize) -> usize {
    let x = (turn * 2_654_435_761 + salt * 40_503) % 1000;
    match x {
        0..=599 => 10 + x % 50,
        600..=949 => 60 + x % 200,
        _ => 400 + x % 300,
    }
}

fn user_message(turn: usize) -> String {
    let body = "please extend parse_config in src/config.rs ".repeat(words(turn, 1) / 6 + 1);
    format!("turn {turn}: {body}")
}

fn reply(turn: usize) -> String {
    let body = "I changed parse_config to read the new key and added a test. "
        .repeat(words(turn, 2) / 12 + 1);
    format!("reply to turn {turn}: {body}\n")
}

fn script_text(turns: usize) -> String {
    (1..=turns)
        .map(user_message)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// How long the server takes: a reply starts after `first_token` plus its length at
/// `tokens_per_second` (sent at once after that, so the test server's own write pacing
/// cannot distort it); a summary after `summary`. All zero: as fast as possible.
#[derive(Debug, Clone, Copy, Default)]
struct Pace {
    first_token: Duration,
    tokens_per_second: Option<f64>,
    summary: Duration,
}

fn serve(server: &MockServer, pace: Pace) {
    server.set_responder(move |r| {
        if is_summary(r) {
            Reply::text("I asked you to extend parse_config in src/config.rs, step by step.")
                .with_start_delay(pace.summary)
        } else {
            let text = reply(turn_of(r));
            let generation = pace.tokens_per_second.map_or(Duration::ZERO, |rate| {
                Duration::from_secs_f64(crate::support::text_tokens(&r.model, &text) as f64 / rate)
            });
            Reply::text(text).with_start_delay(pace.first_token + generation)
        }
    });
}

/// Runs a scripted session; returns the server's log.
fn run_session(window: usize, turns: usize, extra: &[&str], pace: Pace) -> Vec<RecordedRequest> {
    let server = MockServer::start_in_thread();
    serve(&server, pace);
    let repo = TempRepo::with_files(&[("src/config.rs", "fn parse_config() {}\n")]);
    let script = repo.path().join(".git/session-script.txt");
    std::fs::write(&script, script_text(turns)).unwrap();
    let out = repo
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "--weak-model", "gpt-4o-mini"])
        .arg(format!("--context-window={window}"))
        .arg(format!("--script={}", script.display()))
        .args(extra)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.matches("reply to turn ").count(), turns, "{stderr}");
    server.requests()
}

fn assert_alternates(request: &RecordedRequest) {
    assert_eq!(request.messages[0].role, "system");
    for pair in request.messages[1..].windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "turn {}", turn_of(request));
    }
}

#[test]
fn no_request_exceeds_the_window_in_a_300_turn_session() {
    let window = 4096;
    // The window less the reply's reserve (a quarter of so small a window).
    let model = tern::llm::ModelInfo::lookup("gpt-4o");
    let prompt_limit = tern::context::Window::for_model(&model, Some(window), None).prompt_limit;
    assert_eq!(prompt_limit, 3072);
    for extra in [&[][..], &["--no-double-buffer"][..]] {
        let requests = run_session(window, TURNS, extra, Default::default());
        let (summaries, convo): (Vec<_>, Vec<_>) = requests.iter().partition(|r| is_summary(r));
        assert_eq!(convo.len(), TURNS, "{extra:?}: one request per turn");
        for r in &convo {
            assert!(
                r.prompt_tokens <= prompt_limit,
                "{extra:?}: turn {} sent {} tokens",
                turn_of(r),
                r.prompt_tokens
            );
            // The reserve is real: the reply may take what the prompt leaves.
            let reply_room = r.max_tokens.unwrap() as usize;
            assert!(r.prompt_tokens + reply_room <= window, "{extra:?}");
            assert_alternates(r);
        }
        for r in &summaries {
            let reply_room = r.max_tokens.unwrap() as usize;
            assert!(r.prompt_tokens + reply_room <= window, "{extra:?}");
        }
        assert!(summaries.len() >= 20, "{extra:?}: it really cycles");
        let largest = convo.iter().map(|r| r.prompt_tokens).max().unwrap();
        eprintln!(
            "{extra:?}: largest prompt {largest} of {window} tokens ({:.1}%), {} summary calls",
            100.0 * largest as f64 / window as f64,
            summaries.len()
        );
    }
}

#[test]
fn a_script_sends_multi_line_messages_and_commands_in_order() {
    let server = MockServer::start_in_thread();
    server.set_responder(|r| {
        if is_summary(r) {
            Reply::text("I asked you two things.")
        } else {
            Reply::text(format!("ok {}", turn_of(r)))
        }
    });
    let repo = TempRepo::with_files(&[("src/config.rs", "fn parse_config() {}\n")]);
    let script = repo.path().join(".git/script.txt");
    std::fs::write(
        &script,
        "turn 1: first line\n\n- a list item\n\\---\nend of turn 1\n---\n/add src/config.rs\n---\n\
         turn 2: with the file\n---\n/compact\n---\n/tokens\n---\nturn 3: after compacting\n---\n/compact\n",
    )
    .unwrap();
    let out = repo
        .tern(&server.base_url())
        .arg(format!("--script={}", script.display()))
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "ok 1\nok 2\nok 3\n");
    let requests = server.requests();
    let convo: Vec<_> = requests.iter().filter(|r| !is_summary(r)).collect();
    assert_eq!(convo.len(), 3);
    assert!(
        convo[0]
            .last_user_text()
            .unwrap()
            .starts_with("turn 1: first line\n\n- a list item\n---\nend of turn 1")
    );
    let file_sent = |r: &RecordedRequest| {
        r.messages
            .iter()
            .any(|m| m.text.starts_with("These files are in the chat"))
    };
    assert!(!file_sent(convo[0]) && file_sent(convo[1]));
    let recap = |r: &RecordedRequest| r.messages.iter().any(|m| m.text.starts_with("To recap"));
    assert!(!recap(convo[1]) && recap(convo[2]));
    // Both /compact lines ran, the last one before tern exited.
    assert_eq!(requests.iter().filter(|r| is_summary(r)).count(), 2);
    assert_eq!(stderr.matches("replaced").count(), 4, "{stderr}");
    assert!(
        stderr.contains("History "),
        "/tokens printed the history: {stderr}"
    );
}

/// Every run saves a session of its own, outside the work tree: a second `tern -m`
/// leaves the first session as it was; `--resume` continues the newest and
/// `--resume=ID` the one named.
#[test]
fn sessions_are_saved_outside_git_one_per_run_and_resumed() {
    let server = MockServer::start_in_thread();
    server.set_responder(|r| Reply::text(format!("answer {}", turn_of(r))));
    let repo = TempRepo::with_files(&[("src/config.rs", "fn parse_config() {}\n")]);
    let run = |args: &[&str]| {
        let out = repo.tern(&server.base_url()).args(args).output().unwrap();
        assert!(out.status.success(), "{}", texts(&out).1);
        texts(&out)
    };
    run(&["--read", "src/config.rs", "-m", "turn 1: hello"]);
    let first = repo.sessions().list();
    assert_eq!(first.len(), 1);
    run(&["-m", "/ask turn 2: why?"]);
    let sessions = repo.sessions().list();
    assert_eq!(sessions.len(), 2, "a session per run");
    assert_eq!(sessions[1].id, first[0].id, "the first is the older now");
    assert_eq!(sessions[1].title, "turn 1: hello");
    assert_eq!(sessions[0].title, "turn 2: why?");
    let saved = repo.newest_session();
    assert_eq!(saved.version, 2);
    assert_eq!(saved.history[0].content, "turn 2: why?");
    assert_eq!(saved.history[1].content, "answer 2");
    assert!(saved.files.is_empty(), "a new session");
    // The first session is as it was, not replaced.
    let older = tern::engine::persist::load(&sessions[1].dir.join("state.json"))
        .unwrap()
        .unwrap();
    assert_eq!(older.history[0].content, "turn 1: hello");
    assert_eq!(older.files.len(), 1);
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "nothing of the session is in the work tree"
    );
    assert!(!repo.path().join(".tern").exists());

    run(&["--resume", "-m", "turn 3: and then?"]);
    let last = server.requests().pop().unwrap();
    let sent: Vec<&str> = last.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        sent.contains(&"turn 2: why?") && sent.contains(&"answer 2"),
        "{sent:#?}"
    );
    assert!(!sent.contains(&"turn 1: hello"), "{sent:#?}");
    assert_eq!(repo.newest_session().history.len(), 4);
    assert_eq!(repo.sessions().list().len(), 2, "resumed, not a new one");

    let older_id = &sessions[1].id;
    run(&[
        &format!("--resume={older_id}"),
        "-m",
        "turn 4: back to the first",
    ]);
    let last = server.requests().pop().unwrap();
    let sent: Vec<&str> = last.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(sent.contains(&"turn 1: hello"), "{sent:#?}");
    assert!(!sent.contains(&"turn 2: why?"), "{sent:#?}");
    assert_eq!(&repo.sessions().list()[0].id, older_id, "now the newest");

    let (report, _) = run(&["tokens", "--resume", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["history"]["phase"], "idle");
    assert!(report["history"]["tokens"].as_u64().unwrap() > 0);
    assert_eq!(report["history"]["budget"], 8000);
    assert_eq!(repo.sessions().list().len(), 2, "tokens kept nothing new");
}

/// The turn record gives back, for every turn, the history its request carried, across
/// the summaries made since (40 turns in a 4,096-token window, about a summary every
/// three turns) and across a resume: a script, then `--resume` with another.
#[test]
fn the_turn_record_gives_back_the_history_each_turn_was_sent_with() {
    use tern::context::history::SUMMARY_PREFIX;
    use tern::engine::persist::{Resume, SessionDisk, before_turn};
    let server = MockServer::start_in_thread();
    serve(&server, Pace::default());
    let repo = TempRepo::with_files(&[("src/config.rs", "fn parse_config() {}\n")]);
    let script = repo.path().join(".git/session-script.txt");
    for (turns, resume) in [(1..=20, None), (21..=40, Some("--resume"))] {
        let text: Vec<String> = turns.map(user_message).collect();
        std::fs::write(&script, text.join("\n---\n")).unwrap();
        let out = repo
            .tern(&server.base_url())
            .args(["--model", "gpt-4o", "--weak-model", "gpt-4o-mini"])
            .arg("--context-window=4096")
            .arg(format!("--script={}", script.display()))
            .args(resume)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", texts(&out).1);
    }
    let store = repo.sessions();
    assert_eq!(store.list().len(), 1);
    let (disk, _) = SessionDisk::open(store.open(&Resume::Newest).unwrap()).unwrap();
    let records = disk.records().unwrap();
    let requests: Vec<RecordedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect();
    let mut after_a_summary = 0;
    for turn in 1..=40 {
        let before = before_turn(&records, turn).unwrap();
        let request = requests.iter().find(|r| turn_of(r) == turn).unwrap();
        let sent = sent_history(request);
        assert_eq!(as_sent(&before.history), sent, "turn {turn}");
        after_a_summary += usize::from(
            sent.first()
                .is_some_and(|m| m.1.starts_with(SUMMARY_PREFIX)),
        );
    }
    assert!(
        after_a_summary > 20,
        "{after_a_summary} turns began after a summary"
    );
}

/// `tern undo --turn` with no session to act on says so, without telling a user who
/// gave no `--resume` to leave it out.
#[test]
fn undo_of_a_turn_without_any_session_says_there_is_none() {
    let repo = TempRepo::with_files(&[("a.txt", "a\n")]);
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["undo", "--turn"])
        .output()
        .unwrap();
    let stderr = texts(&out).1;
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no saved session for this repository"),
        "{stderr}"
    );
    assert!(!stderr.contains("--resume"), "{stderr}");
}

#[test]
fn resuming_without_a_session_or_from_a_broken_one_says_why() {
    let repo = TempRepo::with_files(&[("a.txt", "a\n")]);
    let resume = || {
        repo.tern("http://127.0.0.1:9/v1")
            .args(["--resume", "-m", "hi"])
            .output()
            .unwrap()
    };
    let out = resume();
    assert!(!out.status.success());
    assert!(
        texts(&out).1.contains("no saved session"),
        "{}",
        texts(&out).1
    );
    // A session file in the work tree (an older tern's, or one a cloned repository
    // ships) is never loaded.
    repo.write(".tern/session.json", "{\"version\": 1}");
    let out = resume();
    let stderr = texts(&out).1;
    assert!(!out.status.success());
    assert!(stderr.contains("is never loaded"), "{stderr}");
    // A broken one in the state directory is refused with the reason, and kept.
    let session = repo.sessions().create().unwrap();
    let real = session.state_path();
    std::fs::write(&real, "{\"version\": 1}").unwrap();
    drop(session);
    let out = resume();
    let stderr = texts(&out).1;
    assert!(
        stderr.contains("not a session tern can resume") && stderr.contains("missing field"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        "{\"version\": 1}",
        "left as it was"
    );
}

/// Without --resume, an older tern's session in the work tree is ignored, and tern
/// says so until it has saved a session of its own.
#[test]
fn an_old_session_in_the_work_tree_is_mentioned_once_and_never_loaded() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("Hello."));
    server.push(Reply::text("Hello again."));
    let repo = TempRepo::with_files(&[("a.txt", "a\n")]);
    repo.write(".tern/session.json", "{\"version\": 1}");
    let run = || {
        let out = repo
            .tern(&server.base_url())
            .args(["-m", "hi"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", texts(&out).1);
        texts(&out).1
    };
    let first = run();
    assert!(
        first.contains(".tern/session.json is from an older tern"),
        "{first}"
    );
    let second = run();
    assert!(!second.contains("older tern"), "{second}");
    assert_eq!(
        repo.read(".tern/session.json"),
        "{\"version\": 1}",
        "left alone"
    );
}

/// Gaps between one reply finishing and the next user turn's request arriving: the
/// latency summarizing adds to user turns (the script sends the next message at once).
fn turn_gaps(requests: &[RecordedRequest]) -> Vec<Duration> {
    let convo: Vec<&RecordedRequest> = requests.iter().filter(|r| !is_summary(r)).collect();
    convo
        .windows(2)
        .map(|w| w[1].arrived_at - w[0].finished_at.unwrap())
        .collect()
}

fn env_ms(name: &str, default: u64) -> Duration {
    let ms = std::env::var(name).ok().and_then(|v| v.parse().ok());
    Duration::from_millis(ms.unwrap_or(default))
}

#[test]
#[ignore = "a measurement: slow on purpose; run with --ignored --nocapture"]
fn measure_a_300_turn_session() {
    let window = std::env::var("TERN_MEASURE_WINDOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32_768usize);
    // Real timings scaled down tenfold: a main-model reply starts after ~0.7 s and
    // streams ~60 tokens/s; a weak-model summary of ~2k tokens takes ~3.5 s.
    let pace = Pace {
        first_token: env_ms("TERN_MEASURE_FIRST_TOKEN_MS", 70),
        tokens_per_second: Some(
            std::env::var("TERN_MEASURE_TOKENS_PER_S")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(600.0),
        ),
        summary: env_ms("TERN_MEASURE_SUMMARY_MS", 350),
    };
    println!("{TURNS} turns, window {window}, {pace:?}");
    println!(
        "{:<20} {:>10} {:>9} {:>12} {:>12} {:>10} {:>8}",
        "mode", "max prompt", "summaries", "median gap", "added total", "max gap", "waited"
    );
    for (mode, extra) in [
        ("double buffer", &[][..]),
        ("--no-double-buffer", &["--no-double-buffer"][..]),
    ] {
        let requests = run_session(window, TURNS, extra, pace);
        let largest = requests
            .iter()
            .filter(|r| !is_summary(r))
            .map(|r| r.prompt_tokens)
            .max()
            .unwrap();
        let summaries = requests.iter().filter(|r| is_summary(r)).count();
        let mut gaps = turn_gaps(&requests);
        gaps.sort();
        let median = gaps[gaps.len() / 2];
        let added: Duration = gaps.iter().map(|g| g.saturating_sub(median)).sum();
        let waited = gaps
            .iter()
            .filter(|g| **g > median + Duration::from_millis(50))
            .count();
        println!(
            "{mode:<20} {:>9.1}% {summaries:>9} {:>10.1}ms {:>10.2}s {:>8.0}ms {waited:>8}",
            100.0 * largest as f64 / window as f64,
            median.as_secs_f64() * 1000.0,
            added.as_secs_f64(),
            gaps.last().unwrap().as_secs_f64() * 1000.0,
        );
    }
}
