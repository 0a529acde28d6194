//! The real `tern` binary, headless, against the loopback OpenAI server.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::support::{MockServer, Reply, TempRepo, output_within, texts};

pub(crate) fn repo() -> TempRepo {
    TempRepo::with_files(&[
        (
            "src/greet.py",
            "def greet(name):\n    return 'hello ' + name\n",
        ),
        ("README.md", "# Demo\n"),
    ])
}

#[test]
fn a_headless_turn_streams_the_reply_and_reports_tokens() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("The function greets by name.\n").with_cached_tokens(5));
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args([
            "--model",
            "gpt-4o",
            "-m",
            "what does greet do?",
            "src/greet.py",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "The function greets by name.\n");
    let request = &server.requests()[0];
    let all_text: String = request.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(
        all_text.contains("return 'hello ' + name"),
        "the chat file is sent"
    );
    assert!(all_text.contains("what does greet do?"));
    let expected = format!(
        "Tokens: {} sent (5 cached), {} received.",
        request.prompt_tokens,
        crate::support::text_tokens("gpt-4o", "The function greets by name.\n")
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("Cost: $"), "{stderr}");
    assert!(!stderr.contains("sk-test-key-never-shown"));
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("two words"));
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["--json", "-m", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (stdout, _) = texts(&out);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    // Every line, the `stopped` one too, says first which version of the shapes it has.
    // Then the id of the op it answers, when it answers one: the message's events
    // carry its id, the engine's own start-up none.
    for (line, event) in stdout.lines().zip(&events) {
        let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
        let second = if event.get("id").is_some() {
            "id"
        } else {
            "event"
        };
        assert_eq!(keys[..2], ["version", second], "{line}");
        assert_eq!(event["version"], 1);
    }
    let id_of = |kind: &str| &events.iter().find(|e| e["event"] == kind).unwrap()["id"];
    assert!(id_of("ready").is_null());
    assert!(id_of("turn_started").is_u64(), "{stdout}");
    for kind in ["delta", "turn_finished"] {
        assert_eq!(id_of(kind), id_of("turn_started"), "{stdout}");
    }
    assert_eq!(kinds.first(), Some(&"ready"));
    assert!(kinds.contains(&"turn_started"));
    assert!(kinds.contains(&"budget"));
    let text: String = events
        .iter()
        .filter(|e| e["event"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "two words");
    let finished = events
        .iter()
        .find(|e| e["event"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["finish"]["kind"], "stop");
    // The engine's last event, then why the run stopped.
    assert_eq!(kinds[kinds.len() - 2..], ["exited", "stopped"]);
    let stopped = events.last().unwrap();
    assert_eq!(stopped["ok"], true, "{stopped}");
    assert_eq!(stopped["reason"], "every message was sent");
}

#[test]
fn errors_exit_non_zero_with_a_specific_message() {
    let server = MockServer::start_in_thread();
    server.push(Reply::invalid_api_key());
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["-m", "hi"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success());
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("401") && stderr.contains("OPENAI_API_KEY"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-test-key-never-shown"));
}

#[test]
fn a_cut_reply_is_kept_and_flagged() {
    let server = MockServer::start_in_thread();
    server.push(Reply::chunks(["partial ", "answer"]).then_cut_connection());
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["-m", "hi"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success());
    assert_eq!(stdout, "partial answer\n");
    assert!(stderr.contains("cut off"), "{stderr}");
}

/// A usage report whose `prompt_tokens` is not a count, after a complete reply, costs
/// the reply nothing: it is kept whole, the report ignored with a warning, exit 0.
#[test]
fn a_malformed_usage_report_is_ignored_and_the_reply_kept() {
    for bad in [
        serde_json::Value::Null,
        serde_json::json!("12"),
        serde_json::json!(-5),
        serde_json::json!(1e20),
    ] {
        let server = MockServer::start_in_thread();
        server.push(Reply::text("the whole answer").with_prompt_tokens_json(bad.clone()));
        let repo = repo();
        let out = output_within(
            repo.tern(&server.base_url()).args(["-m", "hi"]),
            std::time::Duration::from_secs(20),
        );
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(0), "{bad}: {stderr}");
        assert_eq!(stdout, "the whole answer\n", "{bad}");
        assert!(!stderr.contains("cut off"), "{bad}: {stderr}");
        assert!(
            stderr.contains("the server's usage report could not be read")
                && stderr.contains("ignored"),
            "{bad}: {stderr}"
        );
    }
}

#[test]
fn tokens_json_sums_to_its_total_and_predicts_the_request() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok"));
    let repo = repo();
    let message = "rename greet to salute";
    let out = repo
        .tern(&server.base_url())
        .args([
            "tokens",
            "--json",
            "-m",
            message,
            "src/greet.py",
            "--read",
            "README.md",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("{\n  \"version\": 1,"), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for key in [
        "sections",
        "files",
        "total",
        "window",
        "reserved_output",
        "remaining",
    ] {
        assert!(report.get(key).is_some(), "{key} missing");
    }
    let total = report["total"].as_u64().unwrap();
    let sections: u64 = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sections, total);
    let files: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, vec!["README.md", "src/greet.py"]);
    assert_eq!(
        report["remaining"].as_i64().unwrap(),
        report["prompt_limit"].as_i64().unwrap() - total as i64
    );
    assert_eq!(server.request_count(), 0, "tern tokens sends nothing");

    // The same files and message, sent: the server counts exactly the predicted total.
    let out = repo
        .tern(&server.base_url())
        .args(["-m", message, "src/greet.py", "--read", "README.md"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(server.requests()[0].prompt_tokens as u64, total);
}

#[test]
fn tokens_table_names_sections_files_and_what_is_left() {
    let repo = repo();
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["tokens", "src/greet.py"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    for needle in [
        "system",
        "editable files",
        "src/greet.py",
        "total prompt",
        "reserved for the reply",
        "remaining",
    ] {
        assert!(stdout.contains(needle), "{needle} missing from\n{stdout}");
    }
}

#[test]
fn an_unknown_model_is_warned_about() {
    let repo = repo();
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["tokens", "--model", "my-local-model"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(stderr.contains("not in tern's model table"), "{stderr}");
    assert!(stdout.contains("unknown model"), "{stdout}");
}

#[test]
fn record_then_replay_reproduces_the_session() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("A reply worth recording."));
    let repo = repo();
    let file = repo.path().join(".git/exchange.jsonl");
    let record = format!("--record={}", file.display());
    let live = repo
        .tern(&server.base_url())
        .args([&record, "-m", "hi"])
        .output()
        .unwrap();
    assert!(live.status.success());
    drop(server);
    let recording = std::fs::read_to_string(&file).unwrap();
    assert!(!recording.contains("sk-test-key-never-shown"));

    let replay = format!("--replay={}", file.display());
    let replayed = repo
        .tern("http://127.0.0.1:9/v1")
        .args([&replay, "-m", "hi"])
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", texts(&replayed).1);
    assert_eq!(texts(&replayed).0, texts(&live).0);
}

#[test]
fn paths_outside_the_repository_are_refused() {
    let repo = repo();
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["tokens", "../../etc/passwd"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(stderr.contains("outside the repository"), "{stderr}");
}

pub(crate) const EDIT_REPLY: &str = "src/greet.py
```python
<<<<<<< SEARCH
    return 'hello ' + name
=======
    return 'hello, ' + name
>>>>>>> REPLACE
```
";

#[test]
fn edits_are_shown_but_not_applied_without_yes() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(EDIT_REPLY));
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["-m", "add a comma", "src/greet.py"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("-    return 'hello ' + name\n+    return 'hello, ' + name"),
        "{stdout}"
    );
    assert!(stdout.contains("@@ -1,2 +1,2 @@ hunk "), "{stdout}");
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert_eq!(
        repo.read("src/greet.py"),
        "def greet(name):\n    return 'hello ' + name\n"
    );
    assert_eq!(repo.git(&["log", "--format=%s"]).lines().count(), 1);
}

#[test]
fn yes_applies_and_commits_with_a_fallback_message_when_the_weak_model_fails() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(EDIT_REPLY));
    server.push_for_model("gpt-4o-mini", Reply::invalid_api_key());
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["--yes", "-m", "add a comma", "src/greet.py"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        repo.read("src/greet.py"),
        "def greet(name):\n    return 'hello, ' + name\n"
    );
    let subject = repo.git(&["log", "--format=%s", "-1"]);
    assert!(
        subject.trim().contains("src/greet.py"),
        "fallback message: {subject}\n{stderr}"
    );
    assert!(
        stderr.contains("applied 1 hunk to src/greet.py; committed"),
        "{stderr}"
    );
}

#[test]
fn the_repo_map_is_counted_and_sent() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok"));
    let repo = TempRepo::with_files(&[
        (
            "app/models.py",
            "class Invoice:\n    def total_amount(self):\n        return 0\n",
        ),
        (
            "app/views.py",
            "from app.models import Invoice\n\ndef render_invoice(invoice: Invoice):\n    return invoice.total_amount()\n",
        ),
    ]);
    let out = repo
        .tern(&server.base_url())
        .args([
            "tokens",
            "--json",
            "-m",
            "change render_invoice",
            "app/views.py",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let repo_tokens = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["section"] == "repo")
        .unwrap()["tokens"]
        .as_u64()
        .unwrap();
    assert!(repo_tokens > 0, "{report}");
    assert!(report["map"]["tokens"].as_u64().unwrap() > 0);

    let out = repo
        .tern(&server.base_url())
        .args(["-m", "change render_invoice", "app/views.py"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let request = &server.requests()[0];
    let map_message = request
        .messages
        .iter()
        .find(|m| m.text.contains("map of the other files"))
        .expect("the map is sent");
    assert!(
        map_message.text.contains("app/models.py"),
        "{}",
        map_message.text
    );
    assert!(
        map_message.text.contains("class Invoice"),
        "{}",
        map_message.text
    );
    assert_eq!(
        request.prompt_tokens as u64,
        report["total"].as_u64().unwrap()
    );
}

const README_EDIT: &str =
    "README.md\n```\n<<<<<<< SEARCH\n# Demo\n=======\n# Demo, rewritten\n>>>>>>> REPLACE\n```\n";

#[test]
fn yes_leaves_files_outside_the_chat_alone_unless_allowed() {
    for allow in [false, true] {
        let server = MockServer::start_in_thread();
        server.push(Reply::text(README_EDIT));
        let repo = repo();
        let mut cmd = repo.tern(&server.base_url());
        cmd.args([
            "--model",
            "gpt-4o",
            "--yes",
            "-m",
            "retitle",
            "src/greet.py",
        ]);
        if allow {
            cmd.arg("--allow-outside-chat");
        }
        let out = cmd.output().unwrap();
        let (_, stderr) = texts(&out);
        if allow {
            assert!(out.status.success(), "{stderr}");
            assert_eq!(repo.read("README.md"), "# Demo, rewritten\n");
        } else {
            assert!(!out.status.success(), "{stderr}");
            assert!(
                stderr.contains("not applied to README.md (not in the chat)"),
                "{stderr}"
            );
            assert!(stderr.contains("--allow-outside-chat"), "{stderr}");
            // Everything held back: nothing to apply, and no review keys to press.
            assert!(!stderr.contains("no hunk is accepted"), "{stderr}");
            assert_eq!(repo.read("README.md"), "# Demo\n");
        }
    }
}

/// Without --yes the diff is printed; a file outside the chat is marked in it.
#[test]
fn the_printed_diff_marks_files_outside_the_chat() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(format!("{EDIT_REPLY}\n{README_EDIT}")));
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "-m", "edit both", "src/greet.py"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let marker =
        "# caution: README.md: not in the chat (never accepted in bulk)\n--- a/README.md\n";
    assert!(stdout.contains(marker), "{stdout}");
    assert!(!stdout.contains("# caution: src/greet.py"), "{stdout}");
}

/// `edit_outside_chat` in the user's config is --allow-outside-chat; a repository's
/// `.tern.toml` cannot set it.
#[test]
fn edit_outside_chat_comes_from_the_users_config_never_the_repositorys() {
    for users in [true, false] {
        let server = MockServer::start_in_thread();
        server.push(Reply::text(README_EDIT));
        let repo = repo();
        if users {
            let config = repo
                .path()
                .join(".git/tern-test-home/config/tern/config.toml");
            std::fs::create_dir_all(config.parent().unwrap()).unwrap();
            std::fs::write(config, "edit_outside_chat = true\n").unwrap();
        } else {
            repo.write(".tern.toml", "edit_outside_chat = true\n");
            repo.commit("a config that widens what tern may edit");
        }
        let out = repo
            .tern(&server.base_url())
            .args([
                "--model",
                "gpt-4o",
                "--yes",
                "-m",
                "retitle",
                "src/greet.py",
            ])
            .output()
            .unwrap();
        let (_, stderr) = texts(&out);
        if users {
            assert!(out.status.success(), "{stderr}");
            assert_eq!(repo.read("README.md"), "# Demo, rewritten\n");
        } else {
            assert!(!out.status.success(), "{stderr}");
            assert!(stderr.contains("edit_outside_chat"), "{stderr}");
            assert_eq!(repo.read("README.md"), "# Demo\n");
        }
    }
}

#[test]
fn yes_never_applies_a_reply_that_guts_a_file() {
    let server = MockServer::start_in_thread();
    let long: String = (0..21).map(|i| format!("line_{i} = {i}\n")).collect();
    server.push(Reply::text(
        "src/long.py\n```python\n<<<<<<< SEARCH\n".to_string()
            + &long
            + "=======\nx = 1\n>>>>>>> REPLACE\n```\n",
    ));
    let repo = repo();
    repo.write("src/long.py", &long);
    repo.stage_all();
    repo.commit("long");
    let out = repo
        .tern(&server.base_url())
        .args([
            "--model",
            "gpt-4o",
            "--yes",
            "-m",
            "simplify",
            "src/long.py",
        ])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("deletes 21 of its 21 lines"), "{stderr}");
    assert_eq!(repo.read("src/long.py"), long);
}

/// `-m` and `--script` parse a command where it comes in: an unknown one is an error
/// with a hint, the run fails, and nothing reaches the model.
#[test]
fn an_unknown_command_fails_the_run_with_a_hint() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["-m", "/c"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("tern: error: unknown command /c: did you mean /code, /"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

/// A script that ends before its last entry says where and what was not sent: after a
/// `/quit` (the run fails: messages were left out) and after a failure, in plain mode and
/// in `--json`.
#[test]
fn a_script_stopped_early_says_what_was_not_sent() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let script = repo.path().join(".git/script.txt");
    // Runs `text` as a script: whether it succeeded, stdout and stderr.
    let run = |text: &str, json: bool| {
        std::fs::write(&script, text).unwrap();
        let mut tern = repo.tern(&server.base_url());
        if json {
            tern.arg("--json");
        }
        let out = tern.arg("--script").arg(&script).output().unwrap();
        let (stdout, stderr) = texts(&out);
        (out.status.success(), stdout, stderr)
    };
    let quits = "one\n---\n/quit\n---\ntwo\n";
    server.push(Reply::text("one done"));
    let (ok, _, stderr) = run(quits, false);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("tern: stopped at message 2 of 3 (`/quit`): 1 message not sent: `two`"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);

    server.push(Reply::text("one done"));
    let (_, stdout, _) = run(quits, true);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], false);
    assert_eq!(last["messages_sent"], 2);
    assert_eq!(
        last["reason"],
        "stopped at message 2 of 3 (`/quit`): 1 message not sent: `two`"
    );

    let (ok, _, stderr) = run("/nope\n---\ntwo\n---\nthree\n", false);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("tern: stopped at message 1 of 3: 2 messages not sent: `two`, `three`"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 2);
}

/// A `/test` entry whose fix round did not make it pass has failed, as a failed `/run`
/// has: the script stops there and names what it did not run, in plain mode and in
/// `--json`.
#[test]
fn a_script_stops_at_a_test_that_still_fails() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let script = repo.path().join(".git/script.txt");
    std::fs::write(
        &script,
        "/test grep -q LINE3 README.md\n---\n/run touch ran\n---\n/run touch ran2\n",
    )
    .unwrap();
    for json in [false, true] {
        // The fix request is answered in prose: nothing lands, the test still fails.
        server.push(Reply::text("I would not know how to fix that."));
        let mut tern = repo.tern(&server.base_url());
        if json {
            tern.arg("--json");
        }
        let out = tern
            .args(["--allow-commands", "--script"])
            .arg(&script)
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        assert!(!out.status.success(), "{stderr}");
        assert!(!repo.path().join("ran").exists(), "{stderr}");
        assert!(!repo.path().join("ran2").exists(), "{stderr}");
        if json {
            let last: serde_json::Value =
                serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            assert_eq!(last["ok"], false);
            assert_eq!(last["messages_sent"], 1);
            assert_eq!(last["reason"], "`grep -q LINE3 README.md` still fails");
        } else {
            assert!(
                stderr.contains(
                    "tern: `grep -q LINE3 README.md` still fails\ntern: stopped at message 1 of 3: 2 messages not sent: `/run touch ran`, `/run touch ran2`\n"
                ),
                "{stderr}"
            );
        }
    }
    assert_eq!(server.requests().len(), 2, "one fix request a run");
}

/// A command's row in the table says what arguments it takes; anything else is refused
/// before anything is done (`/apply al` is no `/apply`, `/add` alone adds nothing).
#[test]
fn arguments_a_command_does_not_take_are_refused() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    for (typed, said) in [
        ("/apply al", "tern: error: /apply takes `all` or nothing"),
        ("/tokens x", "tern: error: /tokens takes no argument"),
        ("/add", "tern: error: /add needs an argument: /add FILE..."),
    ] {
        let out = repo
            .tern(&server.base_url())
            .args(["-m", typed])
            .output()
            .unwrap();
        let (_, stderr) = texts(&out);
        assert!(!out.status.success(), "{typed}: {stderr}");
        assert!(stderr.contains(said), "{typed}: {stderr}");
    }
    assert!(server.requests().is_empty());
}

/// `//` sends a message that starts with `/` (a path, say), and an unknown command's
/// error says so.
#[test]
fn a_doubled_slash_sends_a_message_that_starts_with_one() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("ok"));
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["-m", "//usr/bin is where my tools live"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let requests = server.requests();
    let sent = requests[0].last_user_text().unwrap();
    assert!(
        sent.starts_with("/usr/bin is where my tools live\n"),
        "{sent}"
    );
    let out = repo
        .tern(&server.base_url())
        .args(["-m", "/usr/bin is where my tools live"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "unknown command /usr/bin: see /help; //… sends a message that starts with /"
        ),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// A command is one line: the lines after `/add FILE` never become files, the message is
/// refused whole (nothing added, nothing sent) and `--json` says why.
#[test]
fn a_command_followed_by_lines_is_refused_not_split_into_arguments() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args(["--json", "-m", "/add README.md\nplease fix the bug"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("/add is one line"), "{stdout}");
    assert!(!stdout.contains("please"), "no file named please: {stdout}");
    let last = stdout.lines().last().unwrap();
    assert!(last.contains(r#""ok":false"#), "{last}");
    assert!(server.requests().is_empty());
}

#[test]
fn an_engine_panic_is_a_failure_with_a_message_never_a_hang_or_exit_0() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let started = std::time::Instant::now();
    let out = repo
        .tern(&server.base_url())
        .env("TERN_TEST_PANIC", "1")
        .args(["-m", "/debug-panic"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("internal error"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}

/// A panic in one of the engine's background jobs (here the turn's stream, then the
/// repo map's refresh) ends the run like a panic of the engine itself: a message and a
/// failure, not a wait for a result that never comes.
#[test]
fn a_panic_in_a_background_job_is_a_failure_never_a_hang() {
    for place in ["turn", "map"] {
        let server = MockServer::start_in_thread();
        server.push(Reply::text("Hello."));
        let repo = repo();
        let out = output_within(
            repo.tern(&server.base_url())
                .env("TERN_TEST_PANIC", place)
                .args(["-m", "hi"]),
            std::time::Duration::from_secs(20),
        );
        let (_, stderr) = texts(&out);
        assert!(!out.status.success(), "{place}: {stderr}");
        assert!(stderr.contains("internal error"), "{place}: {stderr}");
        assert!(stderr.contains(place), "{place}: {stderr}");
    }
}

/// `tern tokens` after a crash of the repo map's job fails and says so; it printed the
/// budget it had and exited 0, saying the map was "still being built".
#[test]
fn tokens_after_a_crash_is_a_failure() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let out = output_within(
        repo.tern(&server.base_url())
            .env("TERN_TEST_PANIC", "map")
            .arg("tokens"),
        std::time::Duration::from_secs(20),
    );
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("internal error"), "{stderr}");
}

/// Ctrl-C is final with --yes too: the complete blocks an interrupted reply holds are
/// shown, never applied.
#[test]
fn ctrl_c_withdraws_yes() {
    use std::io::Read;
    let server = MockServer::start_in_thread();
    server.push(Reply::text(EDIT_REPLY).then_hang());
    server.push(Reply::text("fix: add a comma"));
    let repo = repo();
    let mut child = repo
        .tern(&server.base_url())
        .args(["--yes", "-m", "add a comma", "src/greet.py"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(">>>>>>> REPLACE") {
        let n = stdout.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the reply ended early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let pid = child.id().to_string();
    let interrupt = crate::support::command("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let waited = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        (child.wait().unwrap(), stderr)
    });
    let start = std::time::Instant::now();
    while !waited.is_finished() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = crate::support::command("kill").args(["-9", &pid]).status();
            panic!("tern hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (status, stderr) = waited.join().unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("not applied; the reply was interrupted"),
        "{stderr}"
    );
    assert_eq!(
        repo.read("src/greet.py"),
        "def greet(name):\n    return 'hello ' + name\n"
    );
}

/// Hunks a session kept for review are not this run's to decide: `--resume --yes`
/// neither applies them nor, without --yes, discards them.
#[test]
fn a_resumed_sessions_pending_hunks_are_left_for_review() {
    use tern::engine::persist::{SavedFile, SessionFile};
    use tern::engine::{ChatMode, FileMode};
    let repo = repo();
    let ws = tern::edit::Workspace::discover(repo.path()).unwrap();
    let files = tern::edit::FileSet::new(vec!["src/greet.py".into()], ws.files());
    let mut proposal = tern::edit::Proposal::new(&ws);
    proposal.add_reply(&ws, EDIT_REPLY, tern::edit::EditFormat::Editblock, &files);
    assert_eq!(proposal.hunk_count(), 1);
    let id = repo.plant_session(SessionFile {
        model: "gpt-4o".into(),
        mode: ChatMode::Code,
        files: vec![SavedFile {
            path: "src/greet.py".into(),
            mode: FileMode::Editable,
        }],
        proposal: Some(proposal.snapshot()),
        ..SessionFile::default()
    });
    for yes in [true, false] {
        let server = MockServer::start_in_thread();
        server.push(Reply::text("fix: add a comma"));
        let mut cmd = repo.tern(&server.base_url());
        cmd.args(["--resume", "-m", "go on"]);
        if yes {
            cmd.arg("--yes");
        }
        let out = output_within(&mut cmd, std::time::Duration::from_secs(20));
        let (_, stderr) = texts(&out);
        assert!(
            stderr.contains("1 proposed hunk of the resumed session left for review")
                && stderr.contains(&format!("tern --resume={id}")),
            "{stderr}"
        );
        assert_eq!(
            repo.read("src/greet.py"),
            "def greet(name):\n    return 'hello ' + name\n",
            "{stderr}"
        );
        let kept = repo.newest_session();
        assert!(
            kept.proposal.is_some(),
            "the review is still saved: {stderr}"
        );
    }
}

/// A first run with no key and OpenAI's default URL says so before anything is sent,
/// with the ways out, and fails at once instead of retrying a keyless request.
#[test]
fn a_first_run_without_a_key_says_what_to_do_and_sends_nothing() {
    let repo = repo();
    let mut cmd = repo.tern("unused");
    cmd.env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        // Belt and braces: were anything sent, it would go nowhere but here.
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .args(["-m", "hello"]);
    let out = output_within(&mut cmd, std::time::Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no API key"), "{stderr}");
    assert!(stderr.contains("export OPENAI_API_KEY"), "{stderr}");
    assert!(stderr.contains("tern --demo"), "{stderr}");
    assert!(!stderr.contains("retry"), "nothing was retried: {stderr}");
    assert_eq!(
        stderr.matches("no API key").count(),
        1,
        "one error, said once: {stderr}"
    );
    assert!(
        !stderr.contains("sent as soon as"),
        "no message waits for the map: {stderr}"
    );

    // A model tern does not know would ask the server for its tokenizer: not OpenAI's,
    // which has none, and not without a key.
    let mut cmd = repo.tern("unused");
    cmd.env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .args(["--model", "my-local-model", "-m", "hello"]);
    let out = output_within(&mut cmd, std::time::Duration::from_secs(30));
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no API key"), "{stderr}");
}

/// Outside a git repository tern says so, and how to make one.
#[test]
fn outside_a_repository_tern_says_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread();
    server.push(Reply::text("hi"));
    let home = tempfile::tempdir().unwrap();
    let out = crate::support::command(env!("CARGO_BIN_EXE_tern"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TERN_STATE_DIR", home.path().join("state"))
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["-m", "hello"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(
        stderr.contains("is not inside a git repository"),
        "{stderr}"
    );
    assert!(stderr.contains("git init"), "{stderr}");
}

/// `tern map` outside a git repository maps the files under the directory and says so;
/// a map with nothing in it says why instead of printing nothing at all.
#[test]
fn tern_map_outside_a_repository_and_an_empty_map_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let map = |cwd: &std::path::Path, args: &[&str]| {
        let out = crate::support::command(env!("CARGO_BIN_EXE_tern"))
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("TERN_STATE_DIR", home.path().join("state"))
            .arg("map")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        texts(&out)
    };
    let outside = format!(
        "tern map: warning: {} is not inside a git repository: this is the map of the files under it",
        dir.path().display()
    );
    let (stdout, stderr) = map(dir.path(), &[]);
    assert_eq!(stdout, "");
    assert!(stderr.contains(&outside), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tern map: the map is empty: no file under {}",
            dir.path().display()
        )),
        "{stderr}"
    );
    std::fs::write(dir.path().join("a.py"), "def f():\n    pass\n").unwrap();
    let (stdout, stderr) = map(dir.path(), &[]);
    assert!(stdout.contains("def f():"), "{stdout}");
    assert!(
        stderr.contains(&outside) && !stderr.contains("empty"),
        "{stderr}"
    );
    let (stdout, stderr) = map(dir.path(), &["--tokens", "0"]);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("tern map: the map is empty: no file outside the chat fits in 0 tokens"),
        "{stderr}"
    );
}

fn sigterm(child: &std::process::Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

/// `tern map` and `tern tokens` stopped by a signal while they build a cold map of
/// 3,000 files (seconds in a debug build) end with a line that says so and 128 + the
/// signal, as `tern review` does, not silently.
#[test]
fn tern_map_and_tern_tokens_stopped_by_a_signal_say_so() {
    let server = MockServer::start_in_thread();
    for command in ["map", "tokens"] {
        let repo = TempRepo::empty();
        for i in 0..3000 {
            let text: String = (0..20)
                .map(|j| format!("def f{i}_{j}(x):\n    return g{j}(x)\n\n"))
                .collect();
            repo.write(&format!("m{i}.py"), &text);
        }
        repo.commit("many files");
        let child = repo
            .tern(&server.base_url())
            .arg(command)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        sigterm(&child);
        let out = child.wait_with_output().unwrap();
        let (_, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(143), "{command}: {stderr}");
        assert!(
            stderr.ends_with(&format!("tern {command}: stopped by SIGTERM\n")),
            "{command}: {stderr}"
        );
    }
}

/// `tern sessions` and `tern trust` stopped by a signal while they write to a reader
/// that does not read (a pipe full of 1,500 sessions' lines, of a 200 KB `.tern.toml`)
/// say so and end with 128 + the signal, as the other commands do: they died silently.
#[test]
fn tern_sessions_and_tern_trust_stopped_by_a_signal_say_so() {
    let server = MockServer::start_in_thread();
    let repo = TempRepo::empty();
    repo.write("README.md", "hi\n");
    repo.commit("start");
    let first = repo.plant_session(tern::engine::persist::SessionFile {
        title: "a question long enough to fill the line".into(),
        history: vec![tern::llm::Message::user("a question")],
        ..Default::default()
    });
    let store = repo.sessions();
    let state = std::fs::read(store.dir().join(&first).join("state.json")).unwrap();
    for i in 0..1500u32 {
        let dir = store.dir().join(format!("{i:0>8}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("state.json"), &state).unwrap();
    }
    repo.write(
        ".tern.toml",
        "# a comment line, printed back\n".repeat(7000),
    );
    for command in ["sessions", "trust"] {
        let mut child = repo
            .tern(&server.base_url())
            .arg(command)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Not read until the end: the pipe fills and the write waits.
        let stdout = child.stdout.take().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        sigterm(&child);
        let out = child.wait_with_output().unwrap();
        drop(stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(143), "{command}: {stderr}");
        assert!(
            stderr.ends_with(&format!("tern {command}: stopped by SIGTERM\n")),
            "{command}: {stderr}"
        );
    }
}

/// A reply that adds a bidi override to one line and a plain fix to another: `--yes`
/// applies the plain one only, names the other, and exits non-zero; `--json` carries
/// the caution on the hunk.
#[test]
fn yes_never_applies_a_hunk_with_invisible_characters() {
    let reply = "src/greet.py\n```python\n<<<<<<< SEARCH\ndef greet(name):\n=======\ndef greet(name):  # \u{202e} }nruter{ \u{2066}\n>>>>>>> REPLACE\n```\n\nREADME.md\n```\n<<<<<<< SEARCH\n# Demo\n=======\n# Demo app\n>>>>>>> REPLACE\n```\n";
    for json in [false, true] {
        let server = MockServer::start_in_thread();
        server.push_for_model("gpt-4o", Reply::text(reply));
        server.push_for_model("gpt-4o-mini", Reply::invalid_api_key());
        let repo = repo();
        let mut cmd = repo.tern(&server.base_url());
        if json {
            cmd.arg("--json");
        }
        let out = cmd
            .args(["--yes", "-m", "tidy", "src/greet.py", "README.md"])
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        assert!(!out.status.success(), "{stdout}\n{stderr}");
        assert_eq!(repo.read("README.md"), "# Demo app\n", "{stderr}");
        assert_eq!(
            repo.read("src/greet.py"),
            "def greet(name):\n    return 'hello ' + name\n"
        );
        if json {
            assert!(
                stdout.contains(
                    r#""cautions":[{"kind":"invisible","characters":["U+202E","U+2066"]}]"#
                ),
                "{stdout}"
            );
            let last = stdout.lines().last().unwrap();
            assert!(
                last.contains(r#""ok":false"#) && last.contains("held back"),
                "{last}"
            );
        } else {
            assert!(
                stderr.contains("holds invisible characters (U+202E, U+2066)"),
                "{stderr}"
            );
        }
    }
}

/// The issue's case: a ```` ```diff ```` reply while the format is editblock was ignored
/// and `--yes` exited 0 having written nothing. Now it is applied and said so; a
/// diff that cannot be applied fails the run.
#[test]
fn yes_applies_a_diff_written_in_another_format_and_fails_on_one_it_cannot_read() {
    let diff = "```diff\n--- a/src/greet.py\n+++ b/src/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n-    return 'hello ' + name\n+    return 'hello, ' + name\n```\n";
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(diff));
    server.push_for_model("gpt-4o-mini", Reply::invalid_api_key());
    let repo = repo();
    let out = repo
        .tern(&server.base_url())
        .args([
            "--model",
            "gpt-4o",
            "--edit-format",
            "editblock",
            "--yes",
            "-m",
            "comma",
            "src/greet.py",
        ])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        repo.read("src/greet.py"),
        "def greet(name):\n    return 'hello, ' + name\n"
    );
    assert!(
        stderr
            .contains("wrote its edits as unified diffs, not the SEARCH/REPLACE blocks asked for"),
        "{stderr}"
    );

    let broken = "```diff\n@@ -1,2 +1,2 @@\n def greet(name):\n-    return 'hello ' + name\n+    return 'hi ' + name\n```\n";
    let server = MockServer::start_in_thread();
    // The reply, then the model's answer to being told the block failed.
    server.push_for_model("gpt-4o", Reply::text(broken));
    server.push_for_model("gpt-4o", Reply::text(broken));
    server.push_for_model("gpt-4o", Reply::text(broken));
    server.push_for_model("gpt-4o", Reply::text(broken));
    let repo2 = self::repo();
    let out = repo2
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "--yes", "-m", "greet", "src/greet.py"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("is not a diff tern can apply"), "{stderr}");
    assert_eq!(
        repo2.read("src/greet.py"),
        "def greet(name):\n    return 'hello ' + name\n"
    );
}

/// A save while the weak model writes the commit message (after the preflight,
/// before the write): nothing is written, the hunk goes back to review in the session,
/// no line says it was applied, and `--yes` exits non-zero (it exited 0 having written
/// nothing, and the proposal was gone).
#[test]
fn yes_fails_and_keeps_the_hunk_when_the_file_changes_before_the_write() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(EDIT_REPLY));
    server.push_for_model(
        "gpt-4o-mini",
        Reply::text("fix: comma").with_start_delay(std::time::Duration::from_secs(3)),
    );
    let repo = repo();
    let before = repo.git(&["rev-parse", "HEAD"]);
    let child = repo
        .tern(&server.base_url())
        .args(["--yes", "-m", "add a comma", "src/greet.py"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let asked = std::time::Instant::now();
    while server.requests().len() < 2 && asked.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let saved = "# the user's line\ndef greet(name):\n    return 'hello ' + name\n";
    repo.write("src/greet.py", saved);
    let out = child.wait_with_output().unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("src/greet.py changed on disk"), "{stderr}");
    assert!(!stderr.contains("applied 1"), "{stderr}");
    assert_eq!(repo.read("src/greet.py"), saved);
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), before, "no commit");
    let kept = repo.newest_session();
    let pending = kept
        .proposal
        .map_or(0, |p| p.files.iter().map(|f| f.hunks.len()).sum::<usize>());
    assert_eq!(pending, 1, "the hunk waits for review: {stderr}");
}

/// The user's own `/apply all` on a resumed proposal (not the `--yes` policy) that
/// leaves a hunk held for its invisible characters exits non-zero, as `--yes` does.
#[test]
fn a_users_apply_all_that_holds_a_hunk_back_exits_non_zero() {
    use tern::engine::persist::{SavedFile, SessionFile};
    use tern::engine::{ChatMode, FileMode};
    let reply = "src/greet.py\n```python\n<<<<<<< SEARCH\ndef greet(name):\n=======\ndef greet(name):  # \u{202e} }nruter{ \u{2066}\n>>>>>>> REPLACE\n```\n\nREADME.md\n```\n<<<<<<< SEARCH\n# Demo\n=======\n# Demo app\n>>>>>>> REPLACE\n```\n";
    let repo = repo();
    let ws = tern::edit::Workspace::discover(repo.path()).unwrap();
    let files =
        tern::edit::FileSet::new(vec!["src/greet.py".into(), "README.md".into()], ws.files());
    let mut proposal = tern::edit::Proposal::new(&ws);
    proposal.add_reply(&ws, reply, tern::edit::EditFormat::Editblock, &files);
    assert_eq!(proposal.hunk_count(), 2);
    let id = repo.plant_session(SessionFile {
        model: "gpt-4o".into(),
        mode: ChatMode::Code,
        files: ["src/greet.py", "README.md"]
            .into_iter()
            .map(|path| SavedFile {
                path: path.into(),
                mode: FileMode::Editable,
            })
            .collect(),
        proposal: Some(proposal.snapshot()),
        ..SessionFile::default()
    });
    let server = MockServer::start_in_thread();
    server.push(Reply::text("docs: name the app"));
    let out = output_within(
        repo.tern(&server.base_url()).args([
            &format!("--resume={id}"),
            "--yes",
            "-m",
            "/apply all",
        ]),
        std::time::Duration::from_secs(20),
    );
    let (_, stderr) = texts(&out);
    assert_eq!(repo.read("README.md"), "# Demo app\n", "{stderr}");
    assert!(stderr.contains("not accepted with the others"), "{stderr}");
    assert!(!out.status.success(), "a hunk was held back: {stderr}");
}

/// A failed block the reflection reply does not answer (prose, no blocks) fails the
/// run, named with its reason, in plain output and `--json` (it exited 0 with "every
/// message was sent"; regression finding 12).
#[test]
fn a_failure_the_reflection_leaves_open_fails_the_run_and_is_named() {
    let bad =
        "src/greet.py\n```python\n<<<<<<< SEARCH\nnothere\n=======\nthere\n>>>>>>> REPLACE\n```\n";
    for json in [false, true] {
        let server = MockServer::start_in_thread();
        server.push_for_model("gpt-4o", Reply::text(bad));
        server.push_for_model("gpt-4o", Reply::text("OK, done."));
        let repo = repo();
        let mut args = vec!["--model", "gpt-4o", "--yes", "-m", "go", "src/greet.py"];
        if json {
            args.push("--json");
        }
        let out = output_within(
            repo.tern(&server.base_url()).args(&args),
            std::time::Duration::from_secs(30),
        );
        let (stdout, stderr) = texts(&out);
        assert_eq!(server.requests().len(), 2, "the turn and a reflection");
        assert!(!out.status.success(), "{stdout}{stderr}");
        let named = "block 1 (src/greet.py): the SEARCH text does not match";
        if json {
            let last: serde_json::Value =
                serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            assert_eq!(last["ok"], false, "{last}");
            let reason = last["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("1 edit block could not be applied: "),
                "{reason}"
            );
            assert!(reason.contains(named), "{reason}");
        } else {
            assert!(
                stderr.contains("tern: edit block 1 failed (src/greet.py): the SEARCH text"),
                "{stderr}"
            );
        }
    }
}

/// The user's own `/apply all` on a resumed proposal whose only hunk is held back (its
/// file is not in the chat) says what is held, why, and the commands that apply it,
/// never the review's keys (regression finding 6); `/add` then `/apply all` applies it.
#[test]
fn a_users_apply_all_that_accepts_nothing_says_what_is_held_and_how() {
    let repo = repo();
    let id = plant_readme_edit_outside_the_chat(&repo);
    let server = MockServer::start_in_thread();
    server.push(Reply::text("docs: retitle"));
    let resume = format!("--resume={id}");
    let run = |args: &[&str]| {
        output_within(
            repo.tern(&server.base_url()).arg(&resume).args(args),
            std::time::Duration::from_secs(20),
        )
    };
    let out = run(&["--json", "-m", "/apply all"]);
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    let said = "README.md: not in the chat (/add README.md first, then /apply all)";
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let reason = last["reason"].as_str().unwrap();
    assert!(reason.contains(said), "{reason}");
    assert!(!stdout.contains("y accepts"), "{stdout}");
    assert_eq!(repo.read("README.md"), "# Demo\n");

    let script = repo.path().join("script");
    std::fs::write(&script, "/add README.md\n---\n/apply all\n").unwrap();
    let out = run(&["--script", script.to_str().unwrap()]);
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(repo.read("README.md"), "# Demo, rewritten\n");
}

/// `--yes` holding back a file outside the chat and a hunk with invisible characters:
/// the run's reason names both (it named the first only), and each is said once
/// (the hunk was warned about twice; regression findings 3 and 14).
#[test]
fn everything_yes_held_back_is_named_once_and_in_the_reason() {
    let reply = format!(
        "src/greet.py\n```python\n<<<<<<< SEARCH\ndef greet(name):\n=======\ndef greet(name):  # \u{202e}x\n>>>>>>> REPLACE\n```\n\n{README_EDIT}"
    );
    for json in [false, true] {
        let server = MockServer::start_in_thread();
        server.push_for_model("gpt-4o", Reply::text(&reply));
        let repo = repo();
        let mut cmd = repo.tern(&server.base_url());
        if json {
            cmd.arg("--json");
        }
        let out = output_within(
            cmd.args(["--model", "gpt-4o", "--yes", "-m", "go", "src/greet.py"]),
            std::time::Duration::from_secs(20),
        );
        let (stdout, stderr) = texts(&out);
        assert!(!out.status.success(), "{stdout}{stderr}");
        if json {
            let last: serde_json::Value =
                serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            let reason = last["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("held back, not applied: edits to README.md; hunk ")
                    && reason.ends_with(" of src/greet.py"),
                "{reason}"
            );
            assert_eq!(
                stdout.matches(r#""event":"held_back""#).count(),
                2,
                "{stdout}"
            );
            assert!(!stdout.contains(r#""event":"warning""#), "{stdout}");
        } else {
            assert_eq!(stderr.matches("U+202E").count(), 1, "{stderr}");
            assert!(
                stderr.contains("not applied to README.md (not in the chat)"),
                "{stderr}"
            );
        }
    }
}

/// `--json --resume`: `ready` is the first line, before the resumed proposal and what
/// the files named at start say (a `proposal` came first; regression finding 7). A
/// file named at start is in the chat for the resumed proposal too: its edits are no
/// longer held back as outside the chat.
#[test]
fn a_resumed_run_says_ready_first_and_counts_the_files_named_at_start() {
    let repo = repo();
    let id = plant_readme_edit_outside_the_chat(&repo);
    let server = MockServer::start_in_thread();
    server.push(Reply::text("docs: retitle"));
    let resume = format!("--resume={id}");
    let out = output_within(
        repo.tern(&server.base_url())
            .args([&resume, "--json", "-m", "/tokens", "new.txt"]),
        std::time::Duration::from_secs(20),
    );
    let (stdout, stderr) = texts(&out);
    let kinds: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].to_string())
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("\"ready\""),
        "{stdout}{stderr}"
    );
    assert!(kinds.iter().any(|k| k == "\"proposal\""), "{stdout}");
    assert!(stdout.contains("new.txt does not exist yet"), "{stdout}");

    let out = output_within(
        repo.tern(&server.base_url())
            .args([&resume, "-m", "/apply all", "README.md"]),
        std::time::Duration::from_secs(20),
    );
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(repo.read("README.md"), "# Demo, rewritten\n");
}

/// Small messages that said something else than what is true (regression finding 14):
/// a missing read-only file is not one "the model may create", and a revision `/show`
/// cannot find is said without libgit2's class and code.
#[test]
fn a_missing_read_only_file_and_an_unknown_revision_are_said_truly() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let run = |message: &str| {
        let out = output_within(
            repo.tern(&server.base_url()).args(["-m", message]),
            std::time::Duration::from_secs(20),
        );
        let (_, stderr) = texts(&out);
        (out.status.success(), stderr)
    };
    let (ok, stderr) = run("/read-only nosuch.txt");
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(
            "nosuch.txt does not exist yet; it is read-only, so the model may not create it"
        ),
        "{stderr}"
    );
    // A name tern refuses to create is not one "the model may create" either.
    let (ok, stderr) = run("/add nosuch\u{202e}.txt");
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("does not exist yet, and the model may not create it: the file name"),
        "{stderr}"
    );
    assert!(!stderr.contains("the model may create it"), "{stderr}");
    let (ok, stderr) = run("/show nosuchrev");
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("/show nosuchrev: revspec 'nosuchrev' not found"),
        "{stderr}"
    );
    assert!(!stderr.contains("class="), "{stderr}");
    assert!(server.requests().is_empty());
}

/// `--script -` reads the script from standard input, as `tern apply -` reads the
/// reply (it looked for a file named `-`; regression finding 14).
#[test]
fn a_script_is_read_from_standard_input_with_a_dash() {
    use std::io::Write;
    let server = MockServer::start_in_thread();
    server.push(Reply::text("one done"));
    server.push(Reply::text("two done"));
    let repo = repo();
    let mut child = repo
        .tern(&server.base_url())
        .args(["--script", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\n---\ntwo\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "one done\ntwo done\n");
    assert_eq!(server.requests().len(), 2);
}

/// A saved session whose chat holds src/greet.py and whose pending proposal edits
/// README.md (so, once resumed, a file outside the chat); its id.
fn plant_readme_edit_outside_the_chat(repo: &TempRepo) -> String {
    use tern::engine::persist::{SavedFile, SessionFile};
    use tern::engine::{ChatMode, FileMode};
    let ws = tern::edit::Workspace::discover(repo.path()).unwrap();
    let files = tern::edit::FileSet::new(vec!["README.md".into()], ws.files());
    let mut proposal = tern::edit::Proposal::new(&ws);
    proposal.add_reply(&ws, README_EDIT, tern::edit::EditFormat::Editblock, &files);
    repo.plant_session(SessionFile {
        model: "gpt-4o".into(),
        mode: ChatMode::Code,
        files: vec![SavedFile {
            path: "src/greet.py".into(),
            mode: FileMode::Editable,
        }],
        proposal: Some(proposal.snapshot()),
        ..SessionFile::default()
    })
}

/// With stdout and stderr on one file (`2>&1`, a terminal), a reply's last characters
/// come before the lines that follow it: the redaction held back what might begin the
/// key (`s`, as in `sk-`) until the end of the run, after the token line and the
/// notices (regression pass 3, finding 1).
#[test]
fn a_replys_end_is_written_before_the_lines_after_it() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text("the answer is yes"));
    server.push(Reply::text("and s"));
    let repo = repo();
    let merged = repo.path().join(".git/merged.txt");
    let script = repo.path().join(".git/script.txt");
    std::fs::write(&script, "is it?\n---\nand?\n").unwrap();
    let file = std::fs::File::create(&merged).unwrap();
    let out = repo
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "--script"])
        .arg(&script)
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&merged).unwrap();
    assert!(out.status.success(), "{text}");
    let yes = text.find("the answer is yes\n").expect(&text);
    let tokens: Vec<usize> = text.match_indices("Tokens:").map(|(i, _)| i).collect();
    assert_eq!(tokens.len(), 2, "{text}");
    assert!(yes < tokens[0], "{text}");
    let second = text.find("and s\n").expect(&text);
    assert!(tokens[0] < second && second < tokens[1], "{text}");
}

/// `/commit MESSAGE` keeps no control or hidden character in the commit: every
/// `git log` would replay them in the user's terminal (regression pass 3, finding 5).
#[test]
fn a_users_commit_message_loses_controls_and_hidden_characters() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    repo.write("README.md", "# Demo\nmore\n");
    let message = "/commit fix\u{1b}]0;PWNED\u{7} the\u{202e} readme\u{200b}\u{1b}[2J";
    let out = repo
        .tern(&server.base_url())
        .args(["-m", message])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let logged = repo.git(&["log", "-1", "--format=%B"]);
    assert_eq!(logged.trim(), "fix]0;PWNED the readme[2J", "{logged:?}");
}

/// Hands `path` and everything under it to another user, as a repository cloned or
/// mounted from elsewhere is (the tests run as root, which may).
fn give_away(path: &std::path::Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            give_away(&entry.unwrap().path(), uid);
        }
    }
}

/// A repository git refuses for its owner (`safe.directory`) is named as git names it,
/// with git's remedy, before the model is asked; not called "no repository", and
/// nothing is written (`tern apply --git-init` does not try to make one either).
#[test]
fn a_repository_of_another_user_is_named_as_gits_safe_directory_refusal() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(
        "README.md\n```\n<<<<<<< SEARCH\n# Demo\n=======\n# DEMO\n>>>>>>> REPLACE\n```\n",
    ));
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let mut tern = repo.tern(&server.base_url());
    give_away(repo.path(), 65534);
    let out = tern
        .args(["--model", "gpt-4o", "--yes", "-m", "shout", "README.md"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(!out.status.success(), "{stderr}");
    let advice = format!(
        "git config --global --add safe.directory {}",
        root.display()
    );
    let said = stderr.find(&advice).expect(&stderr);
    let failed = stderr
        .find("nothing was written: git refuses")
        .expect(&stderr);
    assert!(said < failed, "said at the start: {stderr}");
    assert!(!stderr.contains("not inside a git repository"), "{stderr}");
    assert_eq!(repo.read("README.md"), "# Demo\n");

    let reply = repo.path().join(".git/reply.md");
    std::fs::write(
        &reply,
        "README.md\n```\n<<<<<<< SEARCH\n# Demo\n=======\n# DEMO\n>>>>>>> REPLACE\n```\n",
    )
    .unwrap();
    let out = repo
        .tern(&server.base_url())
        .args(["apply", ".git/reply.md", "README.md", "--git-init"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&advice), "{stderr}");
    assert_eq!(repo.read("README.md"), "# Demo\n");
}

/// On a detached HEAD tern's commit (and the user's own, committed first) is made
/// where git would make it, and said to be on no branch, as git's `[detached HEAD
/// abc1234]` says.
#[test]
fn a_commit_on_a_detached_head_says_no_branch_holds_it() {
    let repo = repo();
    repo.git(&["checkout", "-q", "--detach"]);
    repo.write("README.md", "# Demo\n\nmine\n");
    std::fs::write(
        repo.path().join(".git/reply.md"),
        "README.md\n```\n<<<<<<< SEARCH\n# Demo\n=======\n# DEMO\n>>>>>>> REPLACE\n```\n",
    )
    .unwrap();
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["apply", ".git/reply.md", "README.md"])
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "HEAD"
    );
    assert_eq!(repo.git(&["show", "HEAD:README.md"]), "# DEMO\n\nmine\n");
    let ours = repo.git(&["rev-parse", "--short", "HEAD"]);
    let yours = repo.git(&["rev-parse", "--short", "HEAD~1"]);
    let note = "on a detached HEAD: no branch holds it (`git switch -c NAME` makes one)";
    assert!(
        stderr.contains(&format!("{} is {note}", ours.trim())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("first: {} ", yours.trim())) && stderr.matches(note).count() == 2,
        "{stderr}"
    );
    let branches = repo.git(&["for-each-ref", "--contains", "HEAD", "refs/heads"]);
    assert_eq!(branches, "");
}
