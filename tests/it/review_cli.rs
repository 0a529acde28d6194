//! `tern review` as a process: `--print-diff`, `--json`, errors, and real reviews
//! against the loopback OpenAI server.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::support::{MockServer, Reply, TempRepo, texts};

/// Ten small Rust functions on `main`, three of them edited on `feature`.
fn branch() -> TempRepo {
    let function = |i: usize, body: &str| {
        format!("pub fn step_{i}(x: u64) -> u64 {{\n    let y = x + {i};\n    {body}\n}}\n\n")
    };
    let base: String = (0..10).map(|i| function(i, "y * 2")).collect();
    let repo = TempRepo::with_files(&[("src/lib.rs", &base), ("README.md", "# Steps\n")]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let edited: String = (0..10)
        .map(|i| {
            function(
                i,
                if i % 3 == 0 {
                    "y.saturating_mul(3)"
                } else {
                    "y * 2"
                },
            )
        })
        .collect();
    repo.write("src/lib.rs", &edited);
    repo.write("src/new.rs", "pub const LIMIT: u64 = 10;\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "saturate"]);
    repo
}

const REVIEW: &str = "## Findings\n\n1. **medium** `src/lib.rs:3` — Saturation hides overflow\n   \
                      Return an error instead.\n\n## Summary\n\nSaturates three steps.\n";

/// The plan `--print-diff --json` gives for these arguments.
fn plan(repo: &TempRepo, args: &[&str]) -> serde_json::Value {
    let out = repo
        .tern("http://127.0.0.1:9")
        .args(["review", "--print-diff", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", texts(&out).1);
    assert!(
        out.stdout.starts_with(b"{\n  \"version\": 1,"),
        "{}",
        texts(&out).0
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn print_diff_prints_the_request_and_a_summary() {
    let repo = branch();
    let out = repo
        .tern("http://127.0.0.1:9")
        .args(["review", "--print-diff"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("==> call 1 of 1: system <==\nYou review code changes"),
        "{stdout}"
    );
    assert!(stdout.contains("==> call 1 of 1: user <==\nReview this change: `feature`"));
    assert!(stdout.contains("## File: 'src/lib.rs'\n\n@@ "));
    assert!(stdout.contains("## File: 'src/new.rs' (new file)\n\n@@ -0,0 +1 @@\n"));
    assert!(stderr.contains("mode: extended"), "{stderr}");
    assert!(stderr.contains(" of 128,000 "), "{stderr}");
    assert!(stderr.contains("included: 2 files;"), "{stderr}");
}

#[test]
fn json_gives_the_plan() {
    let repo = branch();
    let plan = plan(&repo, &["--budget", "6000", "--line-numbers"]);
    assert_eq!(plan["budget"], 6000);
    assert_eq!(plan["mode"], "extended");
    let call = &plan["calls"][0];
    assert!(call["tokens"].as_u64().unwrap() <= 6000 - 1500);
    assert_eq!(call["messages"][0]["role"], "system");
    assert!(
        call["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("__new hunk__")
    );
    let lib = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "src/lib.rs")
        .unwrap();
    assert_eq!(lib["outcome"]["kind"], "included");
    assert_eq!(lib["language"], "rust");
    assert_eq!(lib["added"], 4);
}

#[test]
fn errors_are_clear_and_an_empty_diff_is_not_an_error() {
    let repo = branch();
    let run = |args: &[&str]| {
        let out = repo
            .tern("http://127.0.0.1:9")
            .arg("review")
            .args(args)
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        (out.status.code(), stdout, stderr)
    };
    // The largest budget a flag can give is a budget like any other.
    let (code, stdout, stderr) = run(&["--print-diff", "--budget", &usize::MAX.to_string()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("step_1"), "{stdout}");

    let (code, _, stderr) = run(&["--print-diff", "--budget", "500"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("a budget of 500 tokens is too small"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: raise --budget"), "{stderr}");

    let (code, _, stderr) = run(&["--print-diff", "--base", "nope"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("cannot use `nope` as the base"), "{stderr}");

    let (code, _, stderr) = run(&["--print-diff", "--max-calls", "0"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("--max-calls must be at least 1"),
        "{stderr}"
    );

    let (code, stdout, stderr) = run(&["--print-diff", "--worktree"]);
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains("nothing to review: the work tree and the index match HEAD"),
        "{stderr}"
    );
    assert!(stdout.is_empty());

    let outside = tempfile::tempdir().unwrap();
    let out = repo
        .tern("http://127.0.0.1:9")
        .current_dir(outside.path())
        .args(["review", "--print-diff"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(texts(&out).1.contains("looking for a git repository"));
}

#[test]
fn a_review_streams_the_reply_and_the_request_is_counted_exactly() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(REVIEW));
    let repo = branch();
    let planned = plan(&repo, &[]);
    let out = repo
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "review"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, REVIEW);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.messages.len(), 2);
    assert_eq!(request.messages[0].role, "system");
    assert_eq!(
        request.messages[1].text,
        planned["calls"][0]["messages"][1]["content"]
            .as_str()
            .unwrap()
    );
    // The server counts with the reference tokenizer: tern's plan agrees to the token.
    assert_eq!(
        request.prompt_tokens as u64,
        planned["calls"][0]["tokens"].as_u64().unwrap()
    );
    assert!(
        stderr.contains(&format!("Tokens: {} sent", request.prompt_tokens)),
        "{stderr}"
    );
}

#[test]
fn a_multi_call_review_merges_the_findings_of_every_part() {
    let server = MockServer::start_in_thread();
    let repo = TempRepo::with_files(&[]);
    let body = |tag: &str| -> String {
        (0..80)
            .map(|i| format!("fn {tag}_{i}() -> u32 {{ {i} }}\n"))
            .collect()
    };
    for f in ["a", "b", "c"] {
        repo.write(&format!("src/{f}.rs"), body(f));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    for f in ["a", "b", "c"] {
        repo.write(&format!("src/{f}.rs"), body(f).replace("-> u32", "-> u64"));
    }
    repo.git(&["commit", "-q", "-am", "widen"]);
    let args = ["--budget", "6000", "--max-calls", "3"];
    let planned = plan(&repo, &args);
    let calls = planned["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{planned}");
    let severities = ["low", "critical", "medium"];
    for (i, severity) in severities.iter().enumerate() {
        server.push(Reply::text(format!(
            "## Findings\n\n1. **{severity}** `src/x.rs:{i}` — Problem {i}\n   Fix it.\n\n\
             ## Summary\n\nPart {i} is fine.\n"
        )));
    }
    let out = repo
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "review"])
        .args(args)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (request, call) in requests.iter().zip(calls) {
        assert_eq!(
            request.prompt_tokens as u64,
            call["tokens"].as_u64().unwrap()
        );
        assert!(request.prompt_tokens <= 6000 - 1000);
    }
    assert!(stderr.contains("part 2 of 3"), "{stderr}");
    let first = stdout.find("1. **critical** `src/x.rs:1`").expect(&stdout);
    let second = stdout.find("2. **medium** `src/x.rs:2`").unwrap();
    let third = stdout.find("3. **low** `src/x.rs:0`").unwrap();
    assert!(first < second && second < third);
    assert!(stdout.contains("## Summary\n\nPart 1: Part 0 is fine.\n\nPart 2: Part 1 is fine."));
}

#[test]
fn a_request_the_server_finds_too_long_is_planned_again_smaller() {
    let server = MockServer::start_in_thread();
    server.push(Reply::context_length_exceeded(2000));
    server.push(Reply::text(REVIEW));
    let repo = branch();
    let out = repo
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "review", "--budget", "20000"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("planning again within 15000 tokens"),
        "{stderr}"
    );
    assert_eq!(stdout, REVIEW);
    assert_eq!(server.requests().len(), 2);
}

/// `tern --json review` of `branch()` with gpt-4o: its document and stderr.
fn json_review(server: &MockServer) -> (serde_json::Value, String) {
    let out = branch()
        .tern(&server.base_url())
        .args(["--model", "gpt-4o", "--json", "review"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_str(&stdout).unwrap(), stderr)
}

#[test]
fn json_review_reports_the_text_and_usage() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(REVIEW));
    let (value, _) = json_review(&server);
    assert_eq!(value["version"], 1);
    assert_eq!(value["review"], REVIEW);
    assert_eq!(value["replies"][0]["finish"]["kind"], "stop");
    assert_eq!(
        value["usage"]["prompt_tokens"].as_u64().unwrap(),
        server.requests()[0].prompt_tokens as u64
    );
}

/// A review's usage report of more cached tokens than prompt tokens is not believed,
/// by the chat's rule (`Usage::believed_cached`): none counts as cached, the cost is
/// the prompt's at the full price, and it is said.
#[test]
fn a_review_does_not_believe_more_cached_tokens_than_prompt_tokens() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(REVIEW).with_cached_tokens(1_000_000));
    let (value, stderr) = json_review(&server);
    let prompt = server.requests()[0].prompt_tokens;
    assert_eq!(value["usage"]["cached_tokens"], 0, "{value}");
    let full = tern::llm::Usage {
        prompt_tokens: prompt,
        completion_tokens: value["usage"]["completion_tokens"].as_u64().unwrap() as usize,
        ..Default::default()
    };
    let cost = value["cost"].as_f64().unwrap();
    let expected = tern::llm::ModelInfo::lookup("gpt-4o").cost(&full);
    assert!(
        (cost - expected).abs() < 1e-9,
        "{cost} != {expected}: {value}"
    );
    assert!(
        stderr.contains("the server reported 1000000 cached tokens of "),
        "{stderr}"
    );
}

/// With no key and OpenAI's default URL: `--print-diff` needs no model and says nothing
/// of a key; a review that needs the model is one error, exit 1, before any header; and
/// nothing to review says so, exit 0, with no key error.
#[test]
fn without_a_key_a_review_fails_once_and_only_when_it_needs_the_model() {
    let repo = branch();
    let run = |args: &[&str]| {
        let mut cmd = repo.tern("unused");
        cmd.env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .arg("review")
            .args(args);
        let out = crate::support::output_within(&mut cmd, std::time::Duration::from_secs(30));
        let (stdout, stderr) = texts(&out);
        (out.status.code(), stdout, stderr)
    };
    let (code, stdout, stderr) = run(&["--print-diff"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("step_3"), "{stdout}");
    assert!(!stderr.contains("API key"), "{stderr}");

    let (code, stdout, stderr) = run(&[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.matches("no API key").count(), 1, "{stderr}");
    assert!(!stderr.contains("mode:"), "no header: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let (code, _, stderr) = run(&["--worktree"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("nothing to review"), "{stderr}");
    assert!(!stderr.contains("API key"), "{stderr}");
}
