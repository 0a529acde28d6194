//! The demo: its reply's edits apply to the demo project as a multi-hunk change, and its
//! recording (made by tern itself with `--record` against the loopback server) replays
//! that reply through the real client.
//!
//! Re-record after changing the demo reply, prompt or project (or when the requests tern
//! sends change):
//!
//! ```sh
//! cargo test --test it tui_demo:: -- --ignored record_demo_session
//! ```

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{MockServer, Reply, TempRepo, texts};
use similar::TextDiff;
use tern::llm::Exchange;
use tern::tui::demo;

use crate::tui_support::REPLY;

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo")
}

fn demo_repo() -> TempRepo {
    TempRepo::with_files(demo::PROJECT)
}

/// `tern` asking the demo question headlessly, with the demo's chat files.
fn ask_demo_question(repo: &TempRepo, api_base: &str) -> Command {
    let mut cmd = repo.tern(api_base);
    cmd.args(["--model", demo::MODEL, "-m", demo::PROMPT.trim()])
        .args(demo::EDITABLE)
        .args(demo::READ_ONLY.iter().flat_map(|f| ["--read", f]));
    cmd
}

#[test]
fn the_demo_reply_is_a_multi_hunk_edit_of_the_demo_files() {
    let edits = crate::tui_support::edit_blocks(REPLY);
    assert_eq!(edits.len(), 4);
    let mut after: Vec<(String, String, String)> = Vec::new();
    for (file, search, replace) in &edits {
        assert!(
            demo::EDITABLE.contains(&file.as_str()),
            "{file} is editable in the demo"
        );
        let original = demo::PROJECT.iter().find(|(p, _)| p == file).unwrap().1;
        let entry = match after.iter_mut().find(|(p, _, _)| p == file) {
            Some(entry) => entry,
            None => {
                after.push((file.clone(), original.to_string(), original.to_string()));
                after.last_mut().unwrap()
            }
        };
        assert_eq!(
            entry.2.matches(search.as_str()).count(),
            1,
            "the SEARCH text of {file} matches exactly once:\n{search}"
        );
        entry.2 = entry.2.replacen(search.as_str(), replace, 1);
    }
    for (file, before, edited) in &after {
        let diff = TextDiff::from_lines(before.as_str(), edited.as_str());
        let hunks = diff.unified_diff().context_radius(3).iter_hunks().count();
        assert_eq!(hunks, 2, "{file} changes in two separate hunks");
    }
}

#[test]
fn the_recording_replays_the_demo_reply_through_the_real_client() {
    let session = std::fs::read_to_string(assets().join("session.jsonl")).unwrap();
    let exchanges: Vec<Exchange> = session
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is an Exchange"))
        .collect();
    assert!(
        !exchanges.is_empty(),
        "assets/demo/session.jsonl is recorded"
    );
    let first = &exchanges[0];
    assert_eq!(first.request["model"], demo::MODEL);
    let sent = first.request["messages"].to_string();
    assert!(
        sent.contains("low_stock") || sent.contains(demo::PROMPT.trim()),
        "the demo prompt was sent"
    );
    assert!(first.events.len() > 50, "streamed in many events");
    assert!(
        first.events.windows(2).all(|w| w[0].ms <= w[1].ms),
        "events are in time order"
    );

    // The real binary, replaying: no server, no key. `--yes` lands the edits, which
    // asks the weak model for a commit message: the recording's second exchange.
    let repo = demo_repo();
    let out = ask_demo_question(&repo, "http://127.0.0.1:9/v1")
        .env_remove("OPENAI_API_KEY")
        .arg("--yes")
        .arg("--replay")
        .arg(assets().join("session.jsonl"))
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with(REPLY.trim_end()), "{stdout}");
    assert!(
        repo.read("shop/inventory.py")
            .contains("def low_stock(self")
    );
    assert!(
        repo.read("shop/cli.py")
            .contains("elif args.command == \"low\":")
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s"]).trim(),
        COMMIT_MESSAGE
    );
}

/// The weak model's answer when the demo's edits are committed.
const COMMIT_MESSAGE: &str = "feat: refuse to remove more than is in stock; add shop low";

/// Writes `assets/demo/session.jsonl`: tern sends the demo question to the loopback
/// server, which streams the demo reply at a readable pace; the edits are landed and
/// the weak model names the commit; `--record` keeps both exchanges.
#[test]
#[ignore = "writes assets/demo/session.jsonl; run it to re-record the demo"]
fn record_demo_session() {
    let server = MockServer::start_in_thread();
    server.push_for_model(demo::MODEL, Reply::text(REPLY).at_tokens_per_second(80.0));
    server.push_for_model("gpt-4o-mini", Reply::text(COMMIT_MESSAGE));
    let repo = demo_repo();
    let record = repo.path().join(".git").join("session.jsonl");
    let out = ask_demo_question(&repo, &server.base_url())
        .args(["--yes", "--weak-model", "gpt-4o-mini", "--record"])
        .arg(&record)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with(REPLY.trim_end()), "{stdout}");
    assert_eq!(server.pending_replies(), 0);
    std::fs::copy(&record, assets().join("session.jsonl")).unwrap();
}

/// The recording is of today's prompt: replayed, its reported prompt is what tern
/// predicts, so the demo, a newcomer's first look, flags no drift (a recording of an
/// older prompt showed "⚠ beyond the ±0 the counts claim"; re-record with
/// `record_demo_session` when the prompts change).
#[test]
fn the_demo_recording_matches_the_prompt_tern_sends_today() {
    let repo = demo_repo();
    let out = ask_demo_question(&repo, "http://127.0.0.1:9/v1")
        .env_remove("OPENAI_API_KEY")
        .args(["--json", "--replay"])
        .arg(assets().join("session.jsonl"))
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let drifts: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "drift")
        .collect();
    assert!(!drifts.is_empty(), "{stdout}");
    for drift in &drifts {
        assert_eq!(drift["beyond_margin"], false, "{drift}");
    }
}
