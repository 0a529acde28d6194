//! The demo: its reply's edits apply to the demo project as a multi-hunk change, and its
//! recording (made by tern itself with `--record` against the loopback server) replays
//! that reply through the real client.
//!
//! Re-record after changing the demo reply, prompt or project (or when the requests tern
//! sends change):
//!
//! ```sh
//! cargo test --test tui_demo -- --ignored record_demo_session
//! ```

mod support;

use std::path::{Path, PathBuf};

use similar::TextDiff;
use support::{MockServer, Reply, TempRepo, texts};
use tern::llm::Exchange;
use tern::tui::demo;

const REPLY: &str = include_str!("../assets/demo/reply.md");

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo")
}

fn demo_repo() -> TempRepo {
    TempRepo::with_files(demo::PROJECT)
}

/// The SEARCH/REPLACE blocks of the reply: (file, search, replace).
fn blocks(reply: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = reply.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "<<<<<<< SEARCH" {
            // The file name is the line before the opening fence.
            let file = lines[i - 2].trim().to_string();
            let divider = i + lines[i..].iter().position(|l| *l == "=======").unwrap();
            let end = i + lines[i..]
                .iter()
                .position(|l| *l == ">>>>>>> REPLACE")
                .unwrap();
            let search = lines[i + 1..divider].join("\n") + "\n";
            let replace = lines[divider + 1..end].join("\n") + "\n";
            out.push((file, search, replace));
            i = end;
        }
        i += 1;
    }
    out
}

#[test]
fn the_demo_reply_is_a_multi_hunk_edit_of_the_demo_files() {
    let edits = blocks(REPLY);
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

    // The real binary, replaying: no server, no key.
    let repo = demo_repo();
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .env_remove("OPENAI_API_KEY")
        .arg("--replay")
        .arg(assets().join("session.jsonl"))
        .args(["--model", demo::MODEL, "-m", demo::PROMPT.trim()])
        .args(demo::EDITABLE)
        .args(demo::READ_ONLY.iter().flat_map(|f| ["--read", f]))
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim_end(), REPLY.trim_end());
}

/// Writes `assets/demo/session.jsonl`: tern sends the demo question to the loopback
/// server, which streams the demo reply at a readable pace, and `--record` keeps the
/// exchange.
#[test]
#[ignore = "writes assets/demo/session.jsonl; run it to re-record the demo"]
fn record_demo_session() {
    let server = MockServer::start_in_thread();
    server.push(Reply::text(REPLY).at_tokens_per_second(80.0));
    let repo = demo_repo();
    let record = repo.path().join(".git").join("session.jsonl");
    let out = repo
        .tern(&server.base_url())
        .arg("--record")
        .arg(&record)
        .args(["--model", demo::MODEL, "-m", demo::PROMPT.trim()])
        .args(demo::EDITABLE)
        .args(demo::READ_ONLY.iter().flat_map(|f| ["--read", f]))
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim_end(), REPLY.trim_end());
    assert_eq!(server.pending_replies(), 0);
    std::fs::copy(&record, assets().join("session.jsonl")).unwrap();
}
