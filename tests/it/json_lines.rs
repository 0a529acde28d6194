//! `--json` is a public interface: one snapshot per kind of line, each built from an
//! engine event exactly as `tern --json` converts and writes it, so a change to a shape
//! shows in review. The list covers every `Event` variant (checked against
//! `Event::COUNT`, which strum derives from the enum) plus the `stopped` line.
//!
//! Review changes with `cargo insta review` (or `INSTA_UPDATE=always`).

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use proptest::prelude::*;

use crate::tui_support::{budget, files, map, needed_event, why_inventory};
use strum::EnumCount;
use tern::branch_review::{FilePlan, FileStatus, Language, OmitReason, ReviewCall};
use tern::edit::EditFormat;
use tern::engine::protocol::*;
use tern::engine::{ChatMode, Event};
use tern::headless::json;
use tern::llm::{Message, Role};

fn usage() -> Usage {
    Usage {
        prompt_tokens: 1_931,
        completion_tokens: 624,
        cached_tokens: 1_024,
        cache_write_tokens: 0,
    }
}

fn plan() -> ReviewPlan {
    ReviewPlan {
        description: "HEAD against main (merge base 3f2a9c1)".into(),
        mode: PlanMode::Compressed,
        budget: 16_000,
        estimated: false,
        calls: vec![ReviewCall {
            messages: vec![
                Message::new(Role::System, "You review code."),
                Message::new(Role::User, "## src/lib.rs\n+fn added() {}\n"),
            ],
            tokens: 42,
            diff_tokens: 12,
            files: vec!["src/lib.rs".into()],
        }],
        files: vec![
            FilePlan {
                path: "src/lib.rs".into(),
                old_path: Some("src/old.rs".into()),
                status: FileStatus::Renamed,
                language: Language::Rust,
                added: 1,
                removed: 0,
                tokens: 12,
                outcome: Outcome::Included { call: 0 },
            },
            FilePlan {
                path: "Cargo.lock".into(),
                old_path: None,
                status: FileStatus::Modified,
                language: Language::Other,
                added: 40,
                removed: 12,
                tokens: 0,
                outcome: Outcome::Omitted {
                    reason: OmitReason::Lockfile,
                },
            },
        ],
    }
}

fn proposal() -> ProposalView {
    let line = |kind, old_line, new_line, text: &str| DiffLine {
        kind,
        old_line,
        new_line,
        text: text.into(),
        no_newline: false,
    };
    ProposalView {
        files: vec![
            FileProposalView {
                path: "src/lib.rs".into(),
                change: FileStatus::Modified,
                hunks: vec![HunkView {
                    id: "3f2a9c1".into(),
                    old_start: 4,
                    old_len: 2,
                    new_start: 4,
                    new_len: 2,
                    lines: vec![
                        line(LineKind::Context, Some(4), Some(4), "fn main() {"),
                        line(LineKind::Removed, Some(5), None, "    run();"),
                        line(LineKind::Added, None, Some(5), "    run(\u{202e});"),
                    ],
                    decision: Decision::Pending,
                    edited: false,
                    cautions: vec![Caution::Invisible {
                        characters: vec!["U+202E".into()],
                    }],
                }],
                cautions: vec![Caution::OutsideChat],
                ignored: None,
            },
            FileProposalView {
                path: ".env".into(),
                change: FileStatus::Added,
                hunks: vec![HunkView {
                    id: "b71e004".into(),
                    old_start: 0,
                    old_len: 0,
                    new_start: 1,
                    new_len: 1,
                    lines: vec![DiffLine {
                        no_newline: true,
                        ..line(LineKind::Added, None, Some(1), "DEBUG=1")
                    }],
                    decision: Decision::Accept,
                    edited: true,
                    cautions: vec![],
                }],
                cautions: vec![Caution::DeletesMost {
                    removed: 9,
                    total: 10,
                }],
                ignored: Some(Ignored::New),
            },
        ],
        failures: vec![
            EditFailureView {
                path: Some("src/db.rs".into()),
                block: 2,
                message: "the SEARCH text was not found".into(),
                near: Some(NearLines {
                    line: 12,
                    text: "fn open() {}\n".into(),
                }),
                hunk: None,
            },
            EditFailureView {
                path: Some("src/pool.rs".into()),
                block: 0,
                message: "the file changed on disk".into(),
                near: None,
                hunk: Some(" fn size() {\n-    4\n+    8\n".into()),
            },
        ],
        shell_commands: vec!["cargo test".into()],
        written_as: vec![EditFormat::Udiff],
    }
}

/// One event of each kind, named for its snapshot.
fn events() -> Vec<(&'static str, Event)> {
    let text = |s: &str| s.to_string();
    vec![
        (
            "ready",
            Event::Ready {
                root: text("/home/dev/shop"),
                model: text("gpt-4o"),
                mode: ChatMode::Code,
                session: Some(text("k3f9a2mx")),
            },
        ),
        (
            "turn_started",
            Event::TurnStarted {
                text: text("make parse_args reject -x"),
                notes: vec![text("The user rejected hunk 3f2a9c1 of src/cli.rs.")],
                mode: ChatMode::Ask,
            },
        ),
        (
            "delta",
            Event::Delta {
                text: text("Here is"),
            },
        ),
        (
            "reasoning",
            Event::Reasoning {
                text: text("The user wants"),
            },
        ),
        (
            "retrying",
            Event::Retrying {
                attempt: 2,
                delay_ms: 1_500,
                reason: text("HTTP 429: rate limited"),
            },
        ),
        ("continuing", Event::Continuing { continuation: 1 }),
        (
            "request",
            Event::Request {
                purpose: RequestKind::Turn,
                model: text("local"),
                predicted_prompt_tokens: Some(2_048),
                max_tokens: Some(4_096),
                counting: Counting::Calibrated {
                    error_percent: Some(1.5),
                },
            },
        ),
        (
            "drift",
            Event::Drift {
                purpose: RequestKind::Summary,
                drift: tern::tokens::Drift {
                    predicted: 1_052,
                    reported: 961,
                    counting: Counting::Server,
                },
            },
        ),
        (
            "turn_finished",
            Event::TurnFinished {
                reply: text("Done."),
                finish: Finish::Length(ReplyLimit::Window {
                    max_tokens: 512,
                    window: 8_192,
                }),
                usage: Some(usage()),
                usage_estimated: false,
                cost: 0.0096,
                session_cost: 0.0213,
            },
        ),
        ("needed", needed_event()),
        (
            "turn_failed",
            Event::TurnFailed {
                error: text("HTTP 401: invalid key"),
                message: text("make parse_args reject -x"),
            },
        ),
        ("budget", Event::Budget(Box::new(budget("hi", &[])))),
        (
            "sessions",
            Event::Sessions {
                sessions: vec![tern::engine::persist::Listed {
                    id: "k3f9a2mx".into(),
                    dir: "/nowhere/k3f9a2mx".into(),
                    last_active: std::time::UNIX_EPOCH
                        + std::time::Duration::from_secs(1_700_000_000),
                    title: text("make parse_args reject -x"),
                    pending_hunks: 1,
                    failed_hunks: 0,
                    cost: 0.0123,
                    unreadable: None,
                }],
                current: Some("m2x7q9ab".into()),
            },
        ),
        (
            "resumed",
            Event::Resumed {
                transcript: vec![
                    Shown {
                        kind: ShownKind::User,
                        text: text("why?"),
                    },
                    Shown {
                        kind: ShownKind::Assistant,
                        text: text("Because."),
                    },
                ],
                unsent: Some(text("and then?")),
            },
        ),
        ("files", Event::Files { files: files() }),
        (
            "mode",
            Event::Mode {
                mode: ChatMode::Code,
            },
        ),
        (
            "model",
            Event::Model {
                model: text("gpt-4o-mini"),
            },
        ),
        (
            "output",
            Event::Output {
                title: text("/help"),
                text: text("/add FILE  add a file\n"),
            },
        ),
        (
            "notice",
            Event::Notice {
                text: text("added src/cli.rs"),
            },
        ),
        (
            "warning",
            Event::Warning {
                text: text("max_cost $0.50 reached"),
            },
        ),
        (
            "error",
            Event::Error {
                text: text("no such file: src/x.rs"),
            },
        ),
        ("proposal", Event::Proposal(Box::new(proposal()))),
        (
            "reflection",
            Event::Reflection {
                attempt: 1,
                max: 3,
                message: text("block 2 (src/db.rs): the SEARCH text was not found"),
            },
        ),
        (
            "applied",
            Event::Applied {
                files: vec![text("src/lib.rs")],
                accepted: 2,
                rejected: 1,
                commit: Some(text("9c0ffee")),
                message: text("tern: make parse_args reject -x"),
                failed: vec![text("src/db.rs")],
                held: 1,
                lost: 2,
            },
        ),
        (
            "held_back",
            Event::HeldBack {
                path: text("src/lib.rs"),
                hunk: Some(text("3f2a9c1")),
                cautions: vec![Caution::Invisible {
                    characters: vec![text("U+202E")],
                }],
            },
        ),
        (
            "hunk_text",
            Event::HunkText {
                id: text("3f2a9c1"),
                path: text("src/lib.rs"),
                text: text("    run();\n"),
            },
        ),
        (
            "edit_refused",
            Event::EditRefused {
                id: text("3f2a9c1"),
                new_lines: text("    run(1);\n"),
                reason: text("the hunk was decided meanwhile"),
            },
        ),
        (
            "not_applied",
            Event::NotApplied {
                reason: NotAppliedReason::NeedsConfirmation,
            },
        ),
        ("review_plan", Event::ReviewPlan(Box::new(plan()))),
        (
            "branch_reviewed",
            Event::BranchReviewed {
                plan: Box::new(plan()),
                replies: vec![CallReply {
                    files: vec![text("src/lib.rs")],
                    text: text("Looks fine."),
                    finish: Finish::CutOff(text("connection reset")),
                    usage: None,
                }],
                usage: usage(),
                cost: 0.002,
            },
        ),
        (
            "map_progress",
            Event::MapProgress {
                done: 120,
                total: 480,
            },
        ),
        ("map", Event::Map(Box::new(map()))),
        (
            "map_budget",
            Event::MapBudget(tern::engine::protocol::MapBudget {
                budget_before: 1024,
                budget: 0,
                tokens_before: 1008,
                tokens: Some(0),
            }),
        ),
        (
            "map_why",
            Event::MapWhy {
                path: text("shop/inventory.py"),
                edges: why_inventory(),
            },
        ),
        (
            "repo_files",
            Event::RepoFiles {
                files: vec![text("README.md"), text("src/lib.rs")],
            },
        ),
        (
            "history",
            Event::History(HistoryStatus {
                budget: 8_192,
                tokens: 5_000,
                checkpoint_mark: 4_915,
                swap_mark: 6_963,
                phase: tern::context::HistoryPhase::Checkpointing,
                summary_tokens: 0,
                summaries: 1,
            }),
        ),
        (
            "undone",
            Event::Undone {
                commits: vec![text("5bbbba2c0ffee5bbbba2c0ffee5bbbba2c0ffee00")],
            },
        ),
        (
            "timeline",
            Event::Timeline {
                turns: vec![tern::engine::protocol::TimelineTurn {
                    turn: 2,
                    text: text("type the name"),
                    at: 1_767_225_600,
                    commits: vec![text("5bbbba2 Type greet's name")],
                    cost: Some(0.0123),
                    turns_after: 1,
                    commits_since: vec![text("5bbbba2 Type greet's name")],
                    files_since: vec![text("src/greet.py")],
                    cost_since: Some(0.0123),
                    code_refused: None,
                    refused: None,
                }],
                redo: Some(text("the rewind to before turn 3: 1 commit")),
            },
        ),
        (
            "rewound",
            Event::Rewound {
                to: 2,
                redo: false,
                commits: vec![text("5bbbba2c0ffee5bbbba2c0ffee5bbbba2c0ffee00")],
                transcript: Some(vec![tern::engine::protocol::Shown {
                    kind: tern::engine::protocol::ShownKind::User,
                    text: text("add a comma"),
                }]),
                text: text("rewound to before turn 2"),
            },
        ),
        (
            "summarized",
            Event::Summarized {
                replaced_messages: 12,
                replaced_tokens: 6_000,
                summary_tokens: 400,
            },
        ),
        ("idle", Event::Idle),
        (
            "confirm_command",
            Event::ConfirmCommand {
                command: text("cargo test"),
                purpose: CommandPurpose::Test,
                reason: Some(text("from Cargo.toml")),
            },
        ),
        (
            "command_started",
            Event::CommandStarted {
                command: text("cargo test"),
                purpose: CommandPurpose::Test,
                auto_round: Some((1, 3)),
            },
        ),
        (
            "command_progress",
            Event::CommandProgress {
                text: text("running 3 tests\n"),
                lines: 1,
                last_line: text("running 3 tests"),
                elapsed_ms: 800,
            },
        ),
        (
            "command_finished",
            Event::CommandFinished {
                command: text("cargo test"),
                purpose: CommandPurpose::Test,
                passed: false,
                outcome: text("exit code 101"),
                lines: 40,
                elapsed_ms: 5_200,
                tokens: 310,
                in_context: true,
            },
        ),
        (
            "output_added",
            Event::OutputAdded {
                command: text("make lint"),
                tokens: 120,
            },
        ),
        (
            "output_dropped",
            Event::OutputDropped {
                command: text("make lint"),
            },
        ),
        (
            "crashed",
            Event::Crashed {
                text: text("the engine stopped on an internal error"),
            },
        ),
        ("exited", Event::Exited),
    ]
}

/// The line `tern --json` writes.
fn line(body: json::Event) -> String {
    let mut out = Vec::new();
    json::print_line(&mut out, body).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_kind_of_line_keeps_its_shape() {
    let mut kinds = BTreeSet::new();
    let mut lines: Vec<(&str, String)> = events()
        .iter()
        .map(|(name, event)| (*name, line(json::Event::from(event))))
        .collect();
    let stopped = json::Stopped {
        ok: false,
        messages_sent: 1,
        messages: 2,
        reason: "the turn failed: HTTP 401: invalid key",
    };
    lines.push(("stopped", line(json::Event::Stopped(stopped))));
    for (name, line) in &lines {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        // The version first, then the kind, which names the snapshot.
        let keys: Vec<&String> = value.as_object().unwrap().keys().take(2).collect();
        assert_eq!(keys, ["version", "event"], "{line}");
        assert_eq!(value["version"], 1, "{line}");
        assert_eq!(value["event"], *name, "{line}");
        assert_eq!(line.matches('\n').count(), 1, "one line: {line}");
        assert!(kinds.insert(*name), "{name} twice");
        insta::assert_snapshot!(format!("json_{name}"), line);
    }
    // Every engine event, and the front end's own `stopped`.
    assert_eq!(kinds.len(), Event::COUNT + 1, "{kinds:?}");
}

/// A key no other test uses: registering it redacts it in this process only.
const SECRET: &str = "sk-json-lines-9f3a7c1e2b";

/// Any text: arbitrary Unicode, control and invisible characters, CRLF.
fn wild_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "\\PC{0,12}",
        Just("\r\n".to_string()),
        Just("\u{1b}[2J".to_string()),
        Just("\u{202e}\u{200b}".to_string()),
        Just("\0\t\u{7f}".to_string()),
        Just("\"\\".to_string()),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever a text holds, its event is one line that reads back to the same text;
    /// with the key in it, the key never reaches the line.
    #[test]
    fn any_text_is_one_line_that_reads_back_and_never_the_key(
        text in wild_text(),
        around in wild_text(),
    ) {
        tern::egress::register(SECRET);
        let written = line(json::Event::from(&Event::Delta { text: text.clone() }));
        prop_assert!(written.ends_with('\n') && written.matches('\n').count() == 1);
        let value: serde_json::Value = serde_json::from_str(&written).unwrap();
        prop_assert_eq!(value["text"].as_str(), Some(text.as_str()));

        let keyed = format!("{around}{SECRET}{text}");
        let written = line(json::Event::from(&Event::Warning { text: keyed }));
        prop_assert!(!written.contains(SECRET), "{}", written);
        let value: serde_json::Value = serde_json::from_str(&written).unwrap();
        prop_assert!(value["text"].as_str().unwrap().contains("[API key redacted]"));
    }
}

/// An event that answers an op says which, right after the version.
#[test]
fn a_line_that_answers_an_op_carries_its_id() {
    let mut out = Vec::new();
    json::print_event(&mut out, Some(tern::engine::OpId(7)), &Event::Idle).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "{\"version\":1,\"id\":7,\"event\":\"idle\"}\n"
    );
}
