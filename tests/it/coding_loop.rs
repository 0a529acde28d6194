//! The coding loop: `/run`, `/test`, the command output section and the auto-test loop,
//! with real processes in real temporary repositories, against the loopback server.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::{MockServer, Reply, TempRepo, output_within, spawn_engine, texts, until};
use tern::engine::{EngineHandle, Event, Op};

/// The tests pass once `value.txt` says `value = 4`; each failure prints the value.
const CHECK: &str = "\
echo checking value
if grep -q '^value = 4$' value.txt; then echo ok; exit 0; fi
echo \"FAIL: expected value = 4, found $(cat value.txt)\"
exit 1
";

fn repo() -> TempRepo {
    TempRepo::with_files(&[("value.txt", "value = 0\n"), ("check.sh", CHECK)])
}

/// A reply that changes `value = FROM` to `value = TO`.
fn bump(from: u32, to: u32) -> Reply {
    Reply::text(format!(
        "value.txt\n```\n<<<<<<< SEARCH\nvalue = {from}\n=======\nvalue = {to}\n>>>>>>> REPLACE\n```\n"
    ))
}

/// The weak model answers every commit-message request.
fn commit_messages(server: &MockServer) {
    server.set_responder(|_| Reply::text("fix: bump the value"));
}

fn engine(
    repo: &TempRepo,
    server: &MockServer,
    tune: impl FnOnce(&mut tern::config::Settings),
) -> EngineHandle {
    spawn_engine(repo, server, "value.txt", false, tune)
}

fn submit(engine: &EngineHandle, text: &str) {
    engine.ops.send(crate::support::typed(text)).unwrap();
}

async fn idle(engine: &mut EngineHandle) -> Vec<Event> {
    until(engine, |e| matches!(e, Event::Idle)).await
}

/// Answers the engine's question about `command` with `run`.
async fn confirm(engine: &mut EngineHandle, command: &str, run: bool) -> Vec<Event> {
    let events = until(engine, |e| matches!(e, Event::ConfirmCommand { .. })).await;
    match events.last() {
        Some(Event::ConfirmCommand { command: asked, .. }) => assert_eq!(asked, command),
        other => panic!("{other:?}"),
    }
    engine.ops.send(Op::AnswerCommand { run }).unwrap();
    events
}

/// Whether the engine asked before running a command.
fn asked(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::ConfirmCommand { .. }))
}

fn finished(events: &[Event]) -> Vec<(String, bool, bool, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CommandFinished {
                command,
                passed,
                in_context,
                tokens,
                ..
            } => Some((command.clone(), *passed, *in_context, *tokens)),
            _ => None,
        })
        .collect()
}

fn all_text(request: &crate::support::RecordedRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the user typed runs at once; what the model suggested asks first.
#[tokio::test]
async fn a_typed_run_runs_at_once_and_a_suggested_one_asks_first() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, |_| {});
    submit(&engine, "!touch typed-marker");
    let events = idle(&mut engine).await;
    assert!(!asked(&events), "{events:#?}");
    assert_eq!(finished(&events).len(), 1);
    assert!(repo.path().join("typed-marker").exists());

    // Declined: nothing runs.
    engine
        .ops
        .send(Op::RunSuggested {
            command: "touch declined-marker".into(),
        })
        .unwrap();
    let asked = confirm(&mut engine, "touch declined-marker", false).await;
    assert!(asked.iter().any(|e| matches!(
        e,
        Event::ConfirmCommand { reason: Some(r), .. } if r == "the model suggested it"
    )));
    let events = idle(&mut engine).await;
    assert!(finished(&events).is_empty());
    assert!(!repo.path().join("declined-marker").exists());
    engine
        .ops
        .send(Op::RunSuggested {
            command: "touch suggested-marker".into(),
        })
        .unwrap();
    confirm(&mut engine, "touch suggested-marker", true).await;
    idle(&mut engine).await;
    assert!(repo.path().join("suggested-marker").exists());
}

#[tokio::test]
async fn run_streams_and_its_output_joins_the_context_only_when_added() {
    let server = MockServer::start().await;
    server.push(Reply::text("It printed two lines."));
    let repo = repo();
    let mut engine = engine(&repo, &server, |_| {});

    submit(&engine, "/run printf 'first line\\nsecond line\\n'");
    let events = idle(&mut engine).await;
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            Event::CommandProgress { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "first line\nsecond line\n");
    let done = finished(&events);
    assert_eq!(done.len(), 1);
    let (_, passed, in_context, tokens) = done[0].clone();
    assert!(passed && !in_context && tokens > 0, "{done:?}");

    // Not added: the next request does not carry it.
    let table = tokens_table(&mut engine).await;
    assert!(!table.contains("command output"), "{table}");

    submit(&engine, "/add-output");
    let table = tokens_table(&mut engine).await;
    assert!(table.contains("command output"), "{table}");
    assert!(table.contains("$ printf"), "{table}");
    // The section grew by what the finished event said it would.
    let row = table
        .lines()
        .find(|l| l.contains("command output"))
        .unwrap();
    assert_eq!(
        row.split_whitespace().next(),
        Some(tokens.to_string().as_str()),
        "{row}"
    );

    submit(&engine, "what did it print?");
    until(&mut engine, |e| matches!(e, Event::TurnFinished { .. })).await;
    let request = &server.requests()[0];
    let text = all_text(request);
    assert!(
        text.contains("$ printf 'first line\\nsecond line\\n'"),
        "{text}"
    );
    assert!(text.contains("first line\nsecond line\n"), "{text}");
    // A section, never the history: the user message is only the question.
    assert_eq!(
        request.last_user_text().unwrap().trim_end().lines().next(),
        Some("what did it print?")
    );

    submit(&engine, "/drop-output");
    assert!(!tokens_table(&mut engine).await.contains("command output"));
}

/// `/tokens`' table as the engine answers it.
async fn tokens_table(engine: &mut EngineHandle) -> String {
    submit(engine, "/tokens");
    let events = until(
        engine,
        |e| matches!(e, Event::Output { title, .. } if title == "tokens"),
    )
    .await;
    match events.last() {
        Some(Event::Output { text, .. }) => text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_command_with_a_line_break_or_escape_is_refused_before_it_is_asked() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, |_| {});
    // Typed, a line break is refused before the engine sees it (a command is one line);
    // the engine refuses one that comes another way (a suggested command handed to /run).
    assert_eq!(
        tern::engine::input::parse("/run true\rtouch marker"),
        Err(tern::engine::input::InputError::LineBreak(
            tern::engine::protocol::Command::Run
        ))
    );
    for hidden in ["true\u{1b}[2K; touch marker", "true\rtouch marker"] {
        engine
            .ops
            .send(Op::Command {
                command: tern::engine::protocol::Command::Run,
                args: hidden.into(),
            })
            .unwrap();
        let events = idle(&mut engine).await;
        assert!(!asked(&events), "{events:#?}");
        assert!(events.iter().any(
            |e| matches!(e, Event::Error { text } if text.contains("not run: the command holds"))
        ));
    }
    assert!(!repo.path().join("marker").exists());
}

#[tokio::test]
async fn a_failing_test_goes_to_the_model_whose_fix_is_reviewed() {
    let server = MockServer::start().await;
    commit_messages(&server);
    server.push_for_model("gpt-4o", bump(0, 4));
    let repo = repo();
    let mut engine = engine(&repo, &server, |s| s.test_cmd = Some("sh check.sh".into()));
    // The configured command runs at once: the user set it.
    submit(&engine, "/test");
    let events = idle(&mut engine).await;
    assert!(!asked(&events), "{events:#?}");
    let done = finished(&events);
    assert_eq!(done.len(), 1);
    assert!(
        !done[0].1 && done[0].2,
        "failed and in the context: {done:?}"
    );
    // The fix request: the failure's output as a section, the ask as tern's note.
    let request = &server.requests()[0];
    let text = all_text(request);
    assert!(
        text.contains("FAIL: expected value = 4, found value = 0"),
        "{text}"
    );
    let ask = request.last_user_text().unwrap();
    assert!(
        ask.contains("I ran `sh check.sh` and it failed (exit 1"),
        "{ask}"
    );
    let proposal = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Proposal(p) => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(proposal.files.len(), 1, "the fix waits for review");
    assert_eq!(
        repo.read("value.txt"),
        "value = 0\n",
        "nothing lands unreviewed"
    );
}

#[tokio::test]
async fn test_without_a_test_cmd_proposes_one_from_the_repository_and_shows_where_from() {
    let server = MockServer::start().await;
    let repo = repo();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    let mut engine = engine(&repo, &server, |_| {});
    submit(&engine, "/test");
    let events = confirm(&mut engine, "cargo test", false).await;
    let reason = events
        .iter()
        .find_map(|e| match e {
            Event::ConfirmCommand { reason, .. } => reason.clone(),
            _ => None,
        })
        .unwrap();
    assert!(reason.contains("Cargo.toml"), "{reason}");
    idle(&mut engine).await;
    assert!(server.requests().is_empty());
}

/// The headless auto-test loop: edits land, the tests run, their failure goes back;
/// `replies` are the model's (the first answers the user, the rest the fix rounds).
fn auto_test(repo: &TempRepo, server: &MockServer, extra: &[&str]) -> (bool, String, String) {
    let mut cmd = repo.tern(&server.base_url());
    cmd.args([
        "--model",
        "gpt-4o",
        "--yes",
        "--auto-test",
        "--test-cmd",
        "sh check.sh",
        "-m",
        "set the value",
        "value.txt",
    ])
    .args(extra);
    let out = output_within(&mut cmd, Duration::from_secs(60));
    let (stdout, stderr) = texts(&out);
    (out.status.success(), stdout, stderr)
}

/// How many requests the main model got (the user's turn and the fix rounds).
fn main_turns(server: &MockServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.model == "gpt-4o")
        .count()
}

fn tern_commits(repo: &TempRepo) -> usize {
    repo.git(&["log", "--format=%s"]).lines().count() - 1
}

#[test]
fn the_auto_test_loop_fixes_in_three_rounds_each_a_reviewed_proposal() {
    let server = MockServer::start_in_thread();
    commit_messages(&server);
    for (from, to) in [(0, 1), (1, 2), (2, 3), (3, 4)] {
        server.push_for_model("gpt-4o", bump(from, to));
    }
    let repo = repo();
    let (ok, _, stderr) = auto_test(&repo, &server, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(repo.read("value.txt"), "value = 4\n");
    assert!(stderr.contains("passes after 3 fix rounds"), "{stderr}");
    let turns: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.model == "gpt-4o")
        .collect();
    assert_eq!(turns.len(), 4, "the user's turn and three fix rounds");
    for (round, request) in turns.iter().enumerate().skip(1) {
        let text = all_text(request);
        assert!(
            text.contains(&format!("found value = {round}")),
            "round {round} sees the latest failure: {text}"
        );
        // Replaced, not accumulated: one output of the command at a time.
        assert_eq!(text.matches("$ sh check.sh").count(), 1, "{text}");
    }
    assert_eq!(
        tern_commits(&repo),
        4,
        "each round landed as its own commit"
    );

    // The whole loop was one turn: `tern undo` takes back its last commit and says what
    // is left; `--turn` the rest, newest first.
    let out = repo.tern(&server.base_url()).arg("undo").output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("this turn made 4 commits: tern undo --turn undoes the other 3"),
        "{stdout}"
    );
    assert_eq!(repo.read("value.txt"), "value = 3\n");
    let out = repo
        .tern(&server.base_url())
        .args(["undo", "--turn"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(repo.read("value.txt"), "value = 0\n");
    assert_eq!(tern_commits(&repo), 0);
}

#[test]
fn the_auto_test_loop_stops_after_its_rounds_and_the_run_fails() {
    let server = MockServer::start_in_thread();
    commit_messages(&server);
    // The model never gets there: 0 → 1 → 2 → 3 → 5.
    for (from, to) in [(0, 1), (1, 2), (2, 3), (3, 5)] {
        server.push_for_model("gpt-4o", bump(from, to));
    }
    let repo = repo();
    let (ok, _, stderr) = auto_test(&repo, &server, &[]);
    assert!(!ok, "the tests still fail: {stderr}");
    assert!(
        stderr.contains("still fails after 3 fix rounds"),
        "{stderr}"
    );
    let turns = main_turns(&server);
    assert_eq!(turns, 4, "no fourth fix round");
}

/// Whether process `pid` is gone (or a zombie waiting for its reaper).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

async fn wait_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn esc_during_the_loops_test_run_kills_it_and_ends_the_loop() {
    let server = MockServer::start().await;
    commit_messages(&server);
    server.push_for_model("gpt-4o", bump(0, 1));
    let repo = repo();
    // A test run that starts a grandchild, ignores SIGTERM, and would last 5 minutes.
    repo.write(
        "slow.sh",
        "trap '' TERM\nsleep 300 &\necho $! > grandchild.pid\necho $$ > child.pid\necho started\nwait\n",
    );
    let mut engine = engine(&repo, &server, |s| {
        s.auto_test = true;
        s.test_cmd = Some("sh slow.sh".into());
    });
    submit(&engine, "set the value");
    idle(&mut engine).await;
    submit(&engine, "/apply all");
    until(
        &mut engine,
        |e| matches!(e, Event::CommandProgress { text, .. } if text.contains("started")),
    )
    .await;
    engine.ops.send(Op::Cancel).unwrap();
    let events = idle(&mut engine).await;
    let done = finished(&events);
    assert_eq!(done.len(), 1, "{events:#?}");
    assert!(
        !done[0].1 && !done[0].2,
        "cancelled, and not sent: {done:?}"
    );
    assert!(events.iter().any(
        |e| matches!(e, Event::Notice { text } if text.contains("auto-test loop was stopped"))
    ));
    for pid in ["child.pid", "grandchild.pid"] {
        let pid = read_pid(&repo.path().join(pid));
        assert!(wait_gone(pid).await, "{pid} outlived Esc");
    }
    let turns = main_turns(&server);
    assert_eq!(turns, 1, "no fix round after Esc");
}

/// What a `/run env` saw, run headless with `configure` setting how tern gets its key.
fn env_seen_by_commands(configure: impl FnOnce(&TempRepo, &mut std::process::Command)) -> String {
    const KEY: &str = "sk-very-secret-key-0123456789";
    let server = MockServer::start_in_thread();
    let repo = repo();
    let mut cmd = repo.tern(&server.base_url());
    cmd.env_remove("OPENAI_API_KEY")
        // Copies under other names, whole and inside a longer value.
        .env("MY_COPY", KEY)
        .env("SOME_URL", format!("https://user:{KEY}@example.invalid"));
    configure(&repo, &mut cmd);
    cmd.args(["--allow-commands", "-m", "/run env > env.txt"]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let env = repo.read("env.txt");
    assert!(env.contains("PATH="), "the command ran: {env}");
    assert!(!env.contains(KEY), "{env}");
    assert!(
        !env.contains("MY_COPY") && !env.contains("SOME_URL"),
        "{env}"
    );
    assert!(!stderr.contains(KEY));
    env
}

#[test]
fn commands_never_see_the_api_key_from_the_environment() {
    env_seen_by_commands(|_, cmd| {
        cmd.env("OPENAI_API_KEY", "sk-very-secret-key-0123456789");
    });
}

#[test]
fn commands_never_see_the_api_key_from_the_flag() {
    env_seen_by_commands(|_, cmd| {
        cmd.args(["--api-key", "sk-very-secret-key-0123456789"]);
    });
}

#[test]
fn commands_never_see_the_api_key_from_the_key_command() {
    env_seen_by_commands(|repo, cmd| {
        let config = repo.path().join(".git/tern-test-home/config/tern");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            "api_key_cmd = \"echo sk-very-secret-key-0123456789\"\n",
        )
        .unwrap();
        let _ = cmd;
    });
}

#[test]
fn headless_runs_no_command_without_allow_commands() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let mut cmd = repo.tern(&server.base_url());
    cmd.args(["-m", "/run touch marker"]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("--allow-commands"), "{stderr}");
    assert!(!repo.path().join("marker").exists());
}

/// Headless, nobody is asked about a test command guessed from the repository's
/// files: `--allow-commands` runs it, and the run says it was guessed and from what.
#[test]
fn a_guessed_test_command_run_headless_says_where_it_came_from() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    repo.write("Makefile", "test:\n\ttouch tested\n");
    let mut cmd = repo.tern(&server.base_url());
    cmd.args(["--allow-commands", "-m", "/test"]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(repo.path().join("tested").exists(), "{stderr}");
    assert!(
        stderr.contains("tern: running `make test` (proposed from Makefile test target; set test_cmd to keep it), as --allow-commands lets it"),
        "{stderr}"
    );
}

#[test]
fn a_command_that_prints_the_key_shows_and_sends_it_redacted() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    repo.write("leak.txt", "token=sk-test-key-never-shown\n");
    let mut cmd = repo.tern(&server.base_url());
    cmd.args(["--allow-commands", "-m", "/run cat leak.txt"]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("token=[API key redacted]"), "{stderr}");
    assert!(!stderr.contains("sk-test-key-never-shown") && !stdout.contains("sk-test-key"));
}

#[test]
fn the_loop_cost_cap_stops_the_fix_rounds_and_the_run_fails() {
    let server = MockServer::start_in_thread();
    commit_messages(&server);
    for (from, to) in [(0, 1), (1, 2)] {
        server.push_for_model("gpt-4o", bump(from, to));
    }
    let repo = repo();
    let (ok, _, stderr) = auto_test(&repo, &server, &["--max-loop-cost", "0.000001"]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("the failing tests were not sent back to the model"),
        "{stderr}"
    );
    let turns = main_turns(&server);
    assert_eq!(turns, 1, "no fix round past the cap");
    assert_eq!(
        repo.read("value.txt"),
        "value = 1\n",
        "the user's own turn landed"
    );
}

#[test]
fn a_failed_command_or_tests_that_never_ran_fail_a_headless_run() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let mut cmd = repo.tern(&server.base_url());
    cmd.args(["--allow-commands", "-m", "/run exit 3"]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    assert!(!out.status.success(), "{}", texts(&out).1);

    // --auto-test whose reply proposes nothing: nothing says the tests pass.
    server.push_for_model("gpt-4o", Reply::text("I would rather not change anything."));
    let (ok, _, stderr) = auto_test(&repo, &server, &[]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("the tests never ran"), "{stderr}");
}

#[test]
fn sigterm_to_a_headless_run_kills_its_command() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    repo.write("slow.sh", "echo $$ > child.pid\nsleep 300\n");
    let mut child = repo
        .tern(&server.base_url())
        .args(["--allow-commands", "-m", "/run sh slow.sh"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = repo.path().join("child.pid");
    for _ in 0..200 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = read_pid(&pid_file);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    let rt = tokio::runtime::Runtime::new().unwrap();
    assert!(rt.block_on(wait_gone(pid)), "the command outlived tern");
}

/// The session's spending: the last budget's `session_cost`.
fn session_cost(events: &[Event]) -> f64 {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Budget(report) => Some(report.session_cost),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn the_weak_models_commit_messages_count_toward_the_spending() {
    let server = MockServer::start().await;
    commit_messages(&server);
    server.push_for_model("gpt-4o", bump(0, 1));
    let repo = repo();
    let mut engine = engine(&repo, &server, |_| {});
    submit(&engine, "set the value");
    let after_turn = session_cost(&idle(&mut engine).await);
    assert!(after_turn > 0.0);
    submit(&engine, "/apply all");
    let after_landing = session_cost(&idle(&mut engine).await);
    let asked = server
        .requests()
        .iter()
        .filter(|r| r.model == "gpt-4o-mini")
        .count();
    assert_eq!(asked, 1, "one commit message");
    assert!(
        after_landing > after_turn,
        "{after_landing} after {after_turn}"
    );
}

#[tokio::test]
async fn command_outputs_in_the_context_come_back_with_the_session() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, |_| {});
    submit(&engine, "/run echo kept across restarts");
    idle(&mut engine).await;
    submit(&engine, "/add-output");
    let before = tokens_table(&mut engine).await;
    assert!(before.contains("$ echo kept across restarts"), "{before}");
    engine.ops.send(Op::Shutdown).unwrap();
    until(&mut engine, |e| matches!(e, Event::Exited)).await;

    let mut engine = spawn_engine(&repo, &server, "value.txt", true, |_| {});
    let after = tokens_table(&mut engine).await;
    let row = |table: &str| {
        table
            .lines()
            .find(|l| l.contains("command output"))
            .map(str::to_string)
    };
    assert_eq!(row(&after), row(&before), "{after}");
}

#[tokio::test]
async fn a_test_runner_that_is_not_installed_is_not_sent_to_the_model_to_fix() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, |s| {
        s.test_cmd = Some("no-such-test-runner-here".into())
    });
    submit(&engine, "/test");
    let events = idle(&mut engine).await;
    let done = finished(&events);
    assert_eq!(done.len(), 1);
    assert!(
        !done[0].1 && !done[0].2,
        "failed, not in the context: {done:?}"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Error { text } if text.contains("could not run (exit 127"))
        )
    );
    assert!(server.requests().is_empty(), "no fix request");
}

#[tokio::test]
async fn outputs_are_dropped_by_name_with_a_word_and_add_output_takes_no_name() {
    let server = MockServer::start().await;
    let repo = repo();
    let mut engine = engine(&repo, &server, |_| {});
    submit(&engine, "/run echo one");
    idle(&mut engine).await;
    assert_eq!(
        tern::engine::input::parse("/add-output echo one")
            .unwrap_err()
            .to_string(),
        "/add-output takes no argument"
    );
    submit(&engine, "/add-output");
    idle(&mut engine).await;
    submit(&engine, "/drop-output echo one");
    let events = idle(&mut engine).await;
    assert!(events.iter().any(|e| matches!(
        e,
        Event::OutputDropped { command } if command == "echo one"
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Notice { text } if text == "removed the output of `echo one` from the context"
    )));
}

/// Issue 24: a failed `/test` output stayed in the context after a different test
/// command passed. A passing run of the configured test command removes every earlier
/// test output, whatever command made it: `/tokens` and the next request hold none.
#[tokio::test]
async fn the_configured_tests_passing_remove_every_earlier_test_output() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text("I cannot tell from here."));
    server.push_for_model("gpt-4o", Reply::text("Good."));
    let repo = repo();
    repo.write("other.sh", "echo OTHER SUITE BROKE\nexit 1\n");
    let mut engine = engine(&repo, &server, |s| {
        s.test_cmd = Some("echo all tests passed".into())
    });
    submit(&engine, "/test sh other.sh");
    let events = idle(&mut engine).await;
    assert_eq!(
        finished(&events)
            .iter()
            .map(|(c, passed, in_context, _)| (c.as_str(), *passed, *in_context))
            .collect::<Vec<_>>(),
        [("sh other.sh", false, true)]
    );
    assert!(tokens_table(&mut engine).await.contains("$ sh other.sh"));
    idle(&mut engine).await;

    submit(&engine, "/test");
    let events = idle(&mut engine).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { text }
            if text.contains("`echo all tests passed` passed: the earlier output of `sh other.sh` was removed"))),
        "{events:#?}"
    );
    let table = tokens_table(&mut engine).await;
    assert!(!table.contains("other.sh"), "{table}");
    idle(&mut engine).await;
    submit(&engine, "thanks");
    idle(&mut engine).await;
    let sent = all_text(server.requests().last().unwrap());
    assert!(sent.contains("thanks"), "{sent}");
    assert!(!sent.contains("OTHER SUITE BROKE"), "{sent}");
}
