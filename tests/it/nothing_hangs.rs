//! Nothing hangs tern, with the real binary: a FIFO wherever tern reads a file (a chat
//! file, the session, the tag store and checkout snapshot, the config and trust list,
//! a repository file the map reads) is refused or skipped at once; SIGINT, SIGTERM and
//! SIGHUP end a run within a second with the conventional exit code, except a landing
//! under way, which finishes first; a corrupted trust list is reported and kept.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{MockServer, Reply, TempRepo, output_within, texts};

/// Longer than any of these runs takes when nothing hangs (a debug build, a loaded
/// machine): a hang fails at this bound instead of never ending.
const BOUND: Duration = Duration::from_secs(20);

pub(crate) fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

fn repo() -> TempRepo {
    TempRepo::with_files(&[
        ("a.py", "def f():\n    return 1\n"),
        ("b.py", "from a import f\n"),
    ])
}

#[test]
fn a_fifo_in_the_chat_is_refused_at_once() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok\n"));
    let repo = repo();
    mkfifo(&repo.path().join("pipe.py"));
    let started = Instant::now();
    let out = output_within(
        repo.tern(&server.base_url()).args(["-m", "hi", "pipe.py"]),
        BOUND,
    );
    let (_, stderr) = texts(&out);
    assert!(
        stderr.contains("pipe.py") && stderr.contains("a FIFO, not a file"),
        "{stderr}"
    );
    assert!(
        !out.status.success(),
        "a file that could not be added fails the run: {stderr}"
    );
    assert!(started.elapsed() < BOUND / 2);
}

/// `-m` with nothing to send is refused at once (a usage error), never a run that waits
/// for ever for a reply that is never asked for.
#[test]
fn an_empty_message_is_refused_at_once() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    for text in ["", "   ", "\n"] {
        for json in [false, true] {
            let mut tern = repo.tern(&server.base_url());
            if json {
                tern.arg("--json");
            }
            let out = output_within(tern.args(["--yes", "-m", text]), BOUND);
            let (_, stderr) = texts(&out);
            assert_eq!(out.status.code(), Some(2), "{text:?}: {stderr}");
            assert!(stderr.contains("a message needs text"), "{stderr}");
        }
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_fifo_as_the_saved_session_is_a_clear_error() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let id = repo.plant_session(tern::engine::persist::SessionFile {
        notes: vec!["a note for the model".into()],
        ..Default::default()
    });
    let state = repo.sessions().dir().join(&id).join("state.json");
    std::fs::remove_file(&state).unwrap();
    mkfifo(&state);
    let resume = format!("--resume={id}");
    let out = output_within(
        repo.tern(&server.base_url())
            .args([resume.as_str(), "-m", "hi"]),
        BOUND,
    );
    let (_, stderr) = texts(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("a FIFO, not a file"), "{stderr}");
    assert!(server.requests().is_empty(), "nothing was sent: {stderr}");
}

#[test]
fn fifos_in_the_tag_cache_and_the_repository_do_not_stop_the_map() {
    let repo = repo();
    let map = |repo: &TempRepo| {
        let out = output_within(
            repo.tern("http://127.0.0.1:9/v1")
                .args(["map", "--stats", "--mention", "f"]),
            BOUND,
        );
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains("a.py"), "{stdout}\n{stderr}");
        stderr
    };
    map(&repo);
    // Every file of the cache (the store's segments, the checkout's snapshot and
    // counts) becomes a FIFO; so do an untracked source file and .gitattributes.
    let cache = repo.cache_dir().join("tags");
    let mut replaced = 0;
    let mut dirs = vec![cache];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else {
                mkfifo(&entry.path());
                replaced += 1;
            }
        }
    }
    assert!(replaced >= 2, "the first map left a store and a snapshot");
    mkfifo(&repo.path().join("c.py"));
    mkfifo(&repo.path().join(".gitattributes"));
    let stderr = map(&repo);
    assert!(stderr.contains("cache: discarded"), "{stderr}");
}

#[test]
fn fifos_as_config_state_and_trust_files_are_skipped_or_reported_at_once() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok\n"));
    let repo = repo();
    // The repository's config needs the trust list read; the list is a FIFO, and so
    // are the user's config and the saved calibration.
    repo.write(".tern.toml", "model = \"their-model\"\n");
    mkfifo(&repo.config_dir().join("config.toml"));
    mkfifo(&repo.config_dir().join("trusted.toml"));
    mkfifo(&repo.state_dir().join("calibration.json"));
    let out = output_within(repo.tern(&server.base_url()).args(["-m", "hi"]), BOUND);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "ok\n");
    assert!(
        stderr.contains("trusted.toml: a FIFO, not a file; no repository config is trusted"),
        "{stderr}"
    );
}

/// Libraries tern uses read ignore files themselves (the `ignore` crate's walk,
/// libgit2): a FIFO as one leaves its directory out of the walk, or the path counts as
/// ignored, instead of a hang.
#[test]
fn fifos_as_ignore_files_do_not_stop_the_map_or_a_turn() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok, see sub/c.py\n"));
    let repo = repo();
    repo.write("sub/c.py", "def g():\n    return 2\n");
    for fifo in [
        ".gitignore",
        "sub/.gitignore",
        ".ternignore",
        ".git/info/exclude",
    ] {
        mkfifo(&repo.path().join(fifo));
    }
    let out = output_within(
        repo.tern("http://127.0.0.1:9/v1")
            .args(["map", "--mention", "f"]),
        BOUND,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("a.py"), "{stdout}");
    let out = output_within(
        repo.tern(&server.base_url()).args(["-m", "hi", "a.py"]),
        BOUND,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "ok, see sub/c.py\n");
}

/// `tern -m` against a server that takes the request and never answers.
fn hanging_run(repo: &TempRepo, server: &MockServer) -> Child {
    server.push(Reply::text("").then_hang());
    let child = repo
        .tern(&server.base_url())
        .args(["-m", "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    request_came(server);
    child
}

/// Waits until the server got a request.
fn request_came(server: &MockServer) {
    let started = Instant::now();
    while server.requests().is_empty() {
        assert!(started.elapsed() < BOUND, "the request never came");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(child: &Child, signal: &str) {
    let status = crate::support::command("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for `child` to exit; how long it took, its exit code and its stderr.
fn ended(child: Child) -> (Duration, Option<i32>, String) {
    let (took, out) = exited(child);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (took, out.status.code(), stderr)
}

/// Waits for `child` to exit; how long it took and what it wrote.
fn exited(child: Child) -> (Duration, std::process::Output) {
    let started = Instant::now();
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(BOUND) {
        Ok(out) => (started.elapsed(), out.unwrap()),
        Err(_) => {
            let _ = crate::support::command("kill").args(["-9", &pid]).status();
            panic!("tern did not exit after the signal: it hangs");
        }
    }
}

#[test]
fn sigint_sigterm_and_sighup_end_a_run_within_a_second() {
    for (signal, code, name) in [
        ("INT", 130, "SIGINT"),
        ("TERM", 143, "SIGTERM"),
        ("HUP", 129, "SIGHUP"),
    ] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let child = hanging_run(&repo, &server);
        kill(&child, signal);
        let (took, exit, stderr) = ended(child);
        assert!(
            took < Duration::from_secs(1),
            "{name}: took {took:?}: {stderr}"
        );
        assert_eq!(exit, Some(code), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("stopped by {name}")),
            "{name}: {stderr}"
        );
    }
}

/// A signal while `tern review` streams, or waits for its first byte, ends it with the
/// conventional code and a last line that says so; stdout ends with its line, and
/// `--json` still writes its document, marked stopped.
#[test]
fn a_signal_ends_a_review_with_a_last_line_and_a_document_marked_stopped() {
    for (streamed, json) in [("part1 ", false), ("part1 ", true), ("", false), ("", true)] {
        let server = MockServer::start_in_thread();
        server.push(Reply::chunks([streamed]).then_hang());
        let repo = repo();
        repo.git(&["checkout", "-q", "-b", "feature"]);
        repo.write("a.py", "def f():\n    return 2\n");
        repo.commit("two");
        let mut tern = repo.tern(&server.base_url());
        tern.args(["review", "--base", "main"]);
        if json {
            tern.arg("--json");
        }
        let child = tern
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        request_came(&server);
        std::thread::sleep(Duration::from_millis(500));
        kill(&child, "TERM");
        let (took, out) = exited(child);
        let (stdout, stderr) = texts(&out);
        assert!(took < Duration::from_secs(1), "took {took:?}: {stderr}");
        assert_eq!(out.status.code(), Some(143), "{stderr}");
        let last = match streamed {
            "" => "tern review: stopped by SIGTERM before any reply came",
            _ => "tern review: stopped by SIGTERM; the review above is partial",
        };
        assert_eq!(stderr.lines().last(), Some(last), "{stderr}");
        if json {
            let document: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(document["stopped"], "stopped by SIGTERM", "{stdout}");
            assert_eq!(document["review"], streamed, "{stdout}");
        } else {
            let line = match streamed {
                "" => "",
                _ => "part1 \n",
            };
            assert_eq!(stdout, line);
        }
    }
}

/// A signal while `tern undo` waits for another tern's lock cancels it, and says so:
/// nothing was undone.
#[test]
fn a_signal_cancels_an_undo_waiting_for_the_lock_and_says_so() {
    let repo = repo();
    let lock = std::fs::File::create(repo.path().join(".git/tern.lock")).unwrap();
    lock.lock().unwrap();
    let head = repo.git(&["rev-parse", "HEAD"]);
    let child = repo
        .tern("http://127.0.0.1:9/v1")
        .arg("undo")
        .env("TERN_LOCK_WAIT_MS", "60000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    kill(&child, "TERM");
    let (took, exit, stderr) = ended(child);
    assert!(took < Duration::from_secs(1), "took {took:?}: {stderr}");
    assert_eq!(exit, Some(143), "{stderr}");
    assert_eq!(
        stderr.lines().last(),
        Some(
            "tern undo: cancelled: nothing was undone (SIGTERM arrived while it waited for another tern to finish)"
        ),
        "{stderr}"
    );
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head);
}

#[test]
fn a_signal_lets_a_landing_under_way_finish_first() {
    let server = MockServer::start_in_thread();
    let edit = "a.py\n```python\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n```\n";
    server.push_for_model("gpt-4o", Reply::text(edit));
    server.push_for_model("gpt-4o-mini", Reply::text("fix: return 2"));
    let repo = repo();
    let hook = repo.path().join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "#!/bin/sh\ntouch .git/hook-started\nsleep 2\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = repo
        .tern(&server.base_url())
        .args(["--yes", "-m", "return 2", "a.py"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !repo.path().join(".git/hook-started").exists() {
        assert!(started.elapsed() < BOUND, "the landing never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(&child, "TERM");
    let (took, exit, stderr) = ended(child);
    assert!(
        took > Duration::from_millis(1500),
        "it did not wait for the hook: {stderr}"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}: {stderr}");
    assert_eq!(exit, Some(143), "{stderr}");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s"]).trim(),
        "fix: return 2"
    );
    assert!(repo.read("a.py").contains("return 2"));
    assert_eq!(
        repo.git(&["status", "--porcelain"]).trim(),
        "",
        "nothing half-landed"
    );
}

#[test]
fn a_corrupted_trust_list_is_reported_and_kept_when_trust_rewrites_it() {
    let repo = TempRepo::with_files(&[(".tern.toml", "model = \"their-model\"\n")]);
    let config = repo.config_dir();
    std::fs::create_dir_all(&config).unwrap();
    let damaged = "[[trusted]\npath = \"/somewhere/else\"\n";
    std::fs::write(config.join("trusted.toml"), damaged).unwrap();

    // Any start says that nothing is trusted, and why.
    let out = output_within(repo.tern("http://127.0.0.1:9/v1").args(["tokens"]), BOUND);
    let (_, stderr) = texts(&out);
    assert!(
        stderr.contains("trusted.toml is not valid TOML"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no repository config is trusted"),
        "{stderr}"
    );

    // `tern trust` says so again, keeps the file aside, and writes a new list.
    let out = output_within(repo.tern("http://127.0.0.1:9/v1").arg("trust"), BOUND);
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let kept = config.join("trusted.toml.damaged");
    assert!(
        stderr.contains("trusted.toml is not valid TOML")
            && stderr.contains(&format!("a copy was kept at {}", kept.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), damaged);
    let new = std::fs::read_to_string(config.join("trusted.toml")).unwrap();
    assert!(new.contains("[[trusted]]"), "{new}");
    let out = output_within(repo.tern("http://127.0.0.1:9/v1").args(["tokens"]), BOUND);
    let (_, stderr) = texts(&out);
    assert!(!stderr.contains("not valid TOML"), "{stderr}");
    assert!(
        stderr.contains("their-model is not in tern's model table"),
        "the config is trusted now, its model taken: {stderr}"
    );
}

/// The newest session's transcript, as (kind, text).
fn transcript(repo: &TempRepo) -> Vec<(tern::engine::protocol::ShownKind, String)> {
    repo.newest_session()
        .transcript
        .into_iter()
        .map(|s| (s.kind, s.text))
        .collect()
}

/// SIGTERM or SIGHUP while a reply streams ends it as Esc does: the message and the
/// partial reply are saved with the session before tern exits (a fresh run's session
/// too), and the exit is still within a second.
#[test]
fn a_signal_while_a_reply_streams_keeps_the_message_and_the_partial_reply() {
    use tern::engine::protocol::ShownKind;
    // Before any of the reply arrived (the tester's case), and with part of it.
    for (signal, code, resume, partial) in [
        ("TERM", 143, false, ""),
        ("HUP", 129, true, "the partial ans"),
    ] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let mut args = vec!["-m", "a question I do not want to lose"];
        if resume {
            server.push(Reply::text("the first answer"));
            let out = output_within(repo.tern(&server.base_url()).args(["-m", "first"]), BOUND);
            assert!(out.status.success(), "{}", texts(&out).1);
            args.insert(0, "--resume");
        }
        server.push(Reply::text(partial).then_hang());
        let asked = server.requests().len();
        let child = repo
            .tern(&server.base_url())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while server.requests().len() == asked {
            assert!(started.elapsed() < BOUND, "the request never came");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The partial reply reaches tern.
        std::thread::sleep(Duration::from_millis(300));
        kill(&child, signal);
        let (took, exit, stderr) = ended(child);
        assert!(took < Duration::from_secs(1), "{signal}: took {took:?}");
        assert_eq!(exit, Some(code), "{signal}: {stderr}");
        assert!(
            stderr.contains("interrupted; the partial reply is kept"),
            "{signal}: {stderr}"
        );
        let shown = transcript(&repo);
        assert!(
            shown.contains(&(ShownKind::User, "a question I do not want to lose".into())),
            "{signal}: {shown:#?}"
        );
        assert!(
            partial.is_empty()
                || shown
                    .iter()
                    .any(|(k, t)| *k == ShownKind::Assistant && t.contains(partial)),
            "{signal}: {shown:#?}"
        );
        if resume {
            assert!(
                shown.contains(&(ShownKind::Assistant, "the first answer".into())),
                "{signal}: the earlier turn is kept: {shown:#?}"
            );
        }
    }
}
