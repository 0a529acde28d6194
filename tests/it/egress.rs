//! The API key never leaves tern, with the real binary: not in what a server echoes
//! (stderr once per retry, `--json`, `--record`'s `error_body`, the log), not in a reply
//! that holds it (streamed in two pieces, or dressed in a zero-width character and an
//! escape sequence: stdout, `--json`, the record, the session file, the log, a commit
//! message), not in a command's output, and no child process (a hook, `/run`) gets it
//! in any form in its environment.

use std::path::Path;
use std::time::Duration;

use crate::support::{MockServer, Reply, TempRepo, output_within, texts};

/// The key of these tests: long and unmistakable, as real keys are.
const KEY: &str = "sk-proj-egressTest0123456789abcdefXYZ";
const MARKER: &str = "[API key redacted]";

/// The key with a zero-width space and a colour escape put inside it: what a reader
/// of the text (or a terminal) still sees as the key.
fn dressed() -> String {
    let (a, b) = KEY.split_at_checked(12).unwrap();
    let (b, c) = b.split_at_checked(10).unwrap();
    format!("{a}\u{200b}{b}\u{1b}[1m{c}")
}

/// Whether `text` holds the key, as it is or with control and invisible characters
/// (and the escape sequences they begin) taken out.
fn leaks(text: &str) -> bool {
    let plain: String = strip_escapes(text)
        .chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
                    | '\u{2028}' | '\u{2029}')
        })
        .collect();
    text.contains(KEY) || plain.contains(KEY) || plain.replace("\\u{1b}[1m", "").contains(KEY)
}

/// `text` without CSI escape sequences (`ESC [ … final`), raw or as JSON escapes them.
fn strip_escapes(text: &str) -> String {
    let text = text.replace("\\u001b", "\u{1b}");
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// A repository whose `tern` has `KEY`, a short retry budget, and its log where the
/// test reads it.
fn repo() -> TempRepo {
    let repo = TempRepo::with_files(&[("a.py", "x = 1\n")]);
    repo.user_config("retry_budget_secs = 3\n");
    repo
}

fn tern(repo: &TempRepo, server: &MockServer) -> std::process::Command {
    let mut cmd = repo.tern(&server.base_url());
    cmd.env("OPENAI_API_KEY", KEY).env("TERN_LOG", "tern=debug");
    cmd
}

fn log(repo: &TempRepo) -> String {
    std::fs::read_to_string(repo.log_file()).unwrap_or_default()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file of every session the runs saved (state and turn record), empty when they
/// saved none.
fn session(repo: &TempRepo) -> String {
    fn all(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                all(&path, out);
            } else {
                out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut text = String::new();
    all(&repo.state_dir().join("sessions"), &mut text);
    text
}

/// What one `tern -m MESSAGE` (with `--json` or not, recording) left in every sink.
struct Sinks {
    ok: bool,
    stdout: String,
    stderr: String,
    record: String,
    session: String,
}

/// Runs `tern -m message` against `server` and checks that no sink holds the key.
fn run_and_check_every_sink(
    repo: &TempRepo,
    server: &MockServer,
    json: bool,
    message: &str,
) -> Sinks {
    let record = repo.path().join(".git/record.jsonl");
    let mut cmd = tern(repo, server);
    cmd.arg(format!("--record={}", record.display()));
    if json {
        cmd.arg("--json");
    }
    cmd.args(["-m", message]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    let (stdout, stderr) = texts(&out);
    let sinks = Sinks {
        ok: out.status.success(),
        stdout,
        stderr,
        record: read(&record),
        session: session(repo),
    };
    for (sink, text) in [
        ("stdout", &sinks.stdout),
        ("stderr", &sinks.stderr),
        ("record", &sinks.record),
        ("log", &log(repo)),
        ("session", &sinks.session),
    ] {
        assert!(
            !leaks(text),
            "json {json}: the key is in the {sink}:\n{text}"
        );
    }
    sinks
}

#[test]
fn a_key_a_server_echoes_reaches_no_sink() {
    for json in [false, true] {
        let server = MockServer::start_in_thread();
        // A proxy's 502 page (retried), then a 401 that quotes the Authorization header.
        server.push(Reply::key_echoed_in_page(502));
        server.push(Reply::key_echoed_in_page(502));
        server.push(Reply::key_echoed(401));
        let repo = repo();
        let Sinks {
            ok,
            stdout,
            stderr,
            record,
            ..
        } = run_and_check_every_sink(&repo, &server, json, "hello");
        assert!(!ok, "{stderr}");
        assert_eq!(server.requests().len(), 3, "{stderr}");
        let echoed = server.requests()[0]
            .header("authorization")
            .unwrap()
            .to_string();
        assert!(echoed.contains(KEY), "the server did get the key to echo");
        let shown = if json { &stdout } else { &stderr };
        // Each retry says why, the page redacted; the failure quotes the 401, redacted.
        assert!(
            shown
                .matches(&format!("Authorization: Bearer {MARKER}"))
                .count()
                >= 2,
            "json {json}: {shown}"
        );
        assert!(
            shown.contains(&format!("Incorrect API key provided: Bearer {MARKER}")),
            "json {json}: {shown}"
        );
        let error_bodies = record.lines().filter(|l| l.contains("error_body")).count();
        assert_eq!(error_bodies, 3, "{record}");
        assert_eq!(record.matches(MARKER).count(), 3, "{record}");
    }
}

/// A reply holding the key three ways: split between two SSE chunks, with a
/// zero-width space inside, and with an escape sequence inside.
fn reply_with_the_key() -> Reply {
    let (a, b) = KEY.split_at_checked(20).unwrap();
    Reply::chunks([
        "Your key is ".to_string(),
        a.to_string(),
        format!("{b}, and again {}", dressed()),
        " (do not share it).\n".to_string(),
    ])
}

#[test]
fn a_reply_holding_the_key_reaches_no_sink() {
    for json in [false, true] {
        let server = MockServer::start_in_thread();
        server.push(reply_with_the_key());
        let repo = repo();
        let Sinks {
            ok,
            stdout,
            stderr,
            session,
            ..
        } = run_and_check_every_sink(&repo, &server, json, "what is my key?");
        assert!(ok, "{stderr}");
        let reply = format!("Your key is {MARKER}, and again {MARKER} (do not share it).\n");
        if json {
            let deltas: String = stdout
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|e| e["event"] == "delta")
                .map(|e| e["text"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(deltas, reply, "{stdout}");
            assert!(
                stdout.contains(&serde_json::to_string(&reply).unwrap()),
                "{stdout}"
            );
        } else {
            assert_eq!(stdout, reply);
        }
        assert_eq!(
            session.matches(MARKER).count(),
            6,
            "the history, the transcript and the turn record: {session}"
        );
        // The record still replays, as redacted.
        let replayed = repo
            .tern("http://127.0.0.1:9/v1")
            .args([&format!(
                "--replay={}",
                repo.path().join(".git/record.jsonl").display()
            )])
            .args(["-m", "what is my key?"])
            .output()
            .unwrap();
        let (replayed_out, replayed_err) = texts(&replayed);
        assert!(replayed.status.success(), "{replayed_err}");
        assert_eq!(replayed_out, reply);
    }
}

#[test]
fn a_key_cut_by_a_line_break_reaches_no_sink() {
    let (a, b) = KEY.split_at_checked(16).unwrap();
    for json in [false, true] {
        let server = MockServer::start_in_thread();
        server.push(Reply::chunks([
            format!("one {a}\u{2028}{b} two {a}\u{2029}{b}"),
            format!(" three {a}\n{b} end\n"),
        ]));
        let repo = repo();
        let Sinks {
            ok,
            stdout,
            stderr,
            record,
            session,
        } = run_and_check_every_sink(&repo, &server, json, "what is my key?");
        assert!(ok, "{stderr}");
        // Each of the three keys once (as deltas, and again in the reply as a whole).
        let times = if json { 6 } else { 3 };
        assert_eq!(stdout.matches(MARKER).count(), times, "{stdout}");
        for (sink, text) in [("record", &record), ("session", &session)] {
            assert!(text.contains(MARKER), "{sink}: {text}");
        }
    }
}

/// A hook that writes its environment to `.git/env-NAME` and exits with `code`,
/// printing the key it finds in `.git/leak` first.
fn hook(repo: &TempRepo, name: &str, code: i32) {
    let path = repo.path().join(".git/hooks").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        format!("#!/bin/sh\nenv > .git/env-{name}\ncat .git/leak\nexit {code}\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Variables that hold the key in every form a child must not get.
fn key_forms() -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_API_KEY", KEY.to_string()),
        ("MY_COPY", KEY.to_string()),
        ("AUTH_HEADER", format!("Bearer {KEY}")),
        (
            "PROXY_URL",
            format!("https://user:{KEY}@proxy.invalid:8080"),
        ),
        ("DRESSED", dressed()),
    ]
}

fn assert_no_key_in_env(env: &str, who: &str) {
    assert!(env.contains("PATH="), "{who} ran: {env}");
    for (name, _) in key_forms() {
        assert!(
            !env.contains(&format!("{name}=")),
            "{who} got {name}:\n{env}"
        );
    }
    assert!(!leaks(env), "{who} got the key:\n{env}");
    assert!(
        env.contains("KEEP_ME=1"),
        "{who} lost an innocent variable:\n{env}"
    );
}

#[test]
fn no_hook_and_no_command_gets_the_key_and_what_they_print_is_redacted() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    repo.write(".git/leak", format!("token={}\n", dressed()));
    hook(&repo, "pre-commit", 0);
    hook(&repo, "commit-msg", 0);
    hook(&repo, "post-commit", 1);
    let reply = repo.path().join(".git/reply.md");
    std::fs::write(
        &reply,
        "a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n",
    )
    .unwrap();
    let mut apply = tern(&repo, &server);
    apply.envs(key_forms()).env("KEEP_ME", "1");
    apply.args(["apply", reply.to_str().unwrap(), "a.py"]);
    let out = output_within(&mut apply, Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    for name in ["pre-commit", "commit-msg", "post-commit"] {
        assert_no_key_in_env(&repo.read(&format!(".git/env-{name}")), name);
    }
    // The post-commit hook failed, printing the key: logged, redacted.
    let logged = log(&repo);
    assert!(
        logged.contains("post-commit") && logged.contains(MARKER),
        "{logged}"
    );
    assert!(!leaks(&logged), "{logged}");

    // A failing pre-commit hook's output is shown, redacted.
    hook(&repo, "pre-commit", 1);
    std::fs::write(
        &reply,
        "a.py\n```python\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n```\n",
    )
    .unwrap();
    let mut apply = tern(&repo, &server);
    apply.args(["apply", reply.to_str().unwrap(), "a.py"]);
    let out = output_within(&mut apply, Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains(&format!("token={MARKER}")), "{stderr}");
    assert!(!leaks(&stderr), "{stderr}");

    // `/run`: its environment, and what it prints.
    let mut run = tern(&repo, &server);
    run.envs(key_forms()).env("KEEP_ME", "1");
    run.args(["--allow-commands", "--script"]);
    let script = repo.path().join(".git/script.txt");
    std::fs::write(
        &script,
        "/run env > .git/env-run\n---\n/run cat .git/leak\n",
    )
    .unwrap();
    run.arg(&script);
    let out = output_within(&mut run, Duration::from_secs(30));
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_no_key_in_env(&repo.read(".git/env-run"), "/run");
    assert!(stderr.contains(&format!("token={MARKER}")), "{stderr}");
    for text in [&stdout, &stderr, &log(&repo), &session(&repo)] {
        assert!(!leaks(text), "{text}");
    }
}

#[test]
fn a_commit_message_never_holds_the_key() {
    let server = MockServer::start_in_thread();
    let edit = "a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n";
    server.push_for_model("gpt-4o", Reply::text(edit));
    server.push_for_model("gpt-4o-mini", Reply::text(format!("fix: use key {KEY}")));
    let repo = repo();
    let mut cmd = tern(&repo, &server);
    cmd.args(["--yes", "-m", "change x", "a.py"]);
    let out = output_within(&mut cmd, Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let message = repo.git(&["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with(&format!("fix: use key {MARKER}")),
        "{message}"
    );
    assert!(!leaks(&message) && !leaks(&stderr), "{message}\n{stderr}");
}
