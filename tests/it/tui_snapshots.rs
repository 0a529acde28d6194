//! What the workspace looks like: every pane alone, and the whole screen at 80x24 (tabs)
//! and 160x48 (side by side), in the states a session goes through. Drawn with
//! ratatui's TestBackend from the events a real session sends.
//!
//! Review changes with `cargo insta review` (or `INSTA_UPDATE=always`).

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::tui_support::*;
use crossterm::event::KeyCode;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tern::engine::Event;
use tern::llm::Message;
use tern::tui::{App, PaneId};

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

/// A session after one question and the demo reply, with its proposal open.
fn reviewed_session() -> App {
    let mut app = app();
    feed(&mut app, session_start());
    feed(&mut app, turn(demo_question(), REPLY, 40));
    feed(
        &mut app,
        [
            Event::Budget(Box::new(budget(
                "",
                &[Message::user(demo_question()), Message::assistant(REPLY)],
            ))),
            Event::Proposal(Box::new(proposal())),
        ],
    );
    app
}

fn demo_question() -> &'static str {
    tern::tui::demo::PROMPT.trim()
}

fn pane_alone(app: &mut App, id: PaneId, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    app.draw_pane(id, area, &mut buf);
    let mut out = String::new();
    for y in 0..height {
        let line: String = (0..width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn first_screen() {
    for (w, h) in SIZES {
        let mut app = app();
        feed(&mut app, session_start());
        insta::assert_snapshot!(format!("first_screen_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn streaming_reply() {
    for (w, h) in SIZES {
        let mut app = app();
        feed(&mut app, session_start());
        let events = turn(demo_question(), REPLY, 40);
        // Stop halfway through the reply, inside the first SEARCH/REPLACE block.
        let half = events.len() / 3;
        feed(&mut app, events.into_iter().take(half));
        insta::assert_snapshot!(format!("streaming_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn review_takes_the_focus_with_the_first_hunk_selected() {
    for (w, h) in SIZES {
        let mut app = reviewed_session();
        assert_eq!(app.focus(), PaneId::Review);
        insta::assert_snapshot!(format!("review_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn review_after_decisions() {
    for (w, h) in SIZES {
        let mut app = reviewed_session();
        // Accept the first hunk, reject the second: the third is selected.
        app.handle_terminal(key(KeyCode::Char('y')));
        app.handle_terminal(key(KeyCode::Char('n')));
        insta::assert_snapshot!(format!("review_decided_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn after_the_review_the_chat_has_its_footer() {
    for (w, h) in SIZES {
        let mut app = reviewed_session();
        app.handle_terminal(key(KeyCode::Esc));
        insta::assert_snapshot!(format!("chat_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn each_tab_at_80x24() {
    for (id, name) in [
        (PaneId::Files, "files"),
        (PaneId::Map, "map"),
        (PaneId::Gauge, "gauge"),
    ] {
        let mut app = reviewed_session();
        app.handle_terminal(key(KeyCode::Esc));
        while app.focus() != id {
            app.handle_terminal(key(KeyCode::Tab));
        }
        feed(
            &mut app,
            [Event::MapWhy {
                path: "shop/inventory.py".into(),
                edges: why_inventory(),
            }],
        );
        insta::assert_snapshot!(format!("tab_{name}_80x24"), screen(&mut app, 80, 24));
    }
}

#[test]
fn every_pane_alone() {
    let mut app = reviewed_session();
    feed(
        &mut app,
        [Event::MapWhy {
            path: "shop/inventory.py".into(),
            edges: why_inventory(),
        }],
    );
    for (id, name) in [
        (PaneId::Chat, "chat"),
        (PaneId::Input, "input"),
        (PaneId::Files, "files"),
        (PaneId::Map, "map"),
        (PaneId::Gauge, "gauge"),
        (PaneId::Review, "review"),
    ] {
        let height = if id == PaneId::Input { 3 } else { 22 };
        insta::assert_snapshot!(format!("pane_{name}"), pane_alone(&mut app, id, 60, height));
    }
}

#[test]
fn overlays() {
    for (w, h) in SIZES {
        let mut app = reviewed_session();
        app.handle_terminal(key(KeyCode::Char('?')));
        insta::assert_snapshot!(format!("help_review_{w}x{h}"), screen(&mut app, w, h));

        let mut app = reviewed_session();
        app.handle_terminal(key(KeyCode::Esc));
        type_text(&mut app, "/re");
        insta::assert_snapshot!(format!("completion_{w}x{h}"), screen(&mut app, w, h));

        let mut app = reviewed_session();
        app.handle_terminal(key(KeyCode::Esc));
        while app.focus() != PaneId::Files {
            app.handle_terminal(key(KeyCode::Tab));
        }
        let mut slowly = Slowly::new();
        slowly.press(&mut app, key(KeyCode::Char('a')));
        // The filter typed after a pause: at once, it would be typing.
        for c in "py".chars() {
            slowly.press(&mut app, key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!(format!("picker_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn map_progress_while_tags_are_read_and_the_map_text() {
    let mut app = app();
    feed(&mut app, session_start().into_iter().take(3));
    feed(
        &mut app,
        [Event::MapProgress {
            done: 120,
            total: 480,
        }],
    );
    insta::assert_snapshot!("map_progress", pane_alone(&mut app, PaneId::Map, 48, 10));
    feed(&mut app, [Event::Map(Box::new(map()))]);
    while app.focus() != PaneId::Map {
        app.handle_terminal(key(KeyCode::Tab));
    }
    app.handle_terminal(key(KeyCode::Char('t')));
    insta::assert_snapshot!("map_text", pane_alone(&mut app, PaneId::Map, 48, 14));
}

#[test]
fn an_empty_map_says_there_is_none() {
    let mut app = app();
    feed(&mut app, session_start());
    feed(&mut app, [Event::Map(Box::default())]);
    let pane = pane_alone(&mut app, PaneId::Map, 48, 6);
    assert!(pane.contains("No repo map for this repository"), "{pane}");
}

#[test]
fn wide_terminal_250x70() {
    let mut app = reviewed_session();
    insta::assert_snapshot!("review_250x70", screen(&mut app, 250, 70));
}

#[test]
fn an_unknown_model_is_flagged_and_estimates_marked() {
    let mut app = app();
    feed(&mut app, session_start());
    let mut report = budget("a draft of the next message", &[]);
    report.model = "local/qwen-coder".into();
    report.known_model = false;
    report.window_source = tern::engine::protocol::WindowSource::Assumed;
    report.counting = tern::engine::protocol::Counting::Uncalibrated;
    report.window = 32_768;
    report.reserved_output = 4_096;
    report.prompt_limit = report.window - report.reserved_output;
    report.remaining = report.prompt_limit as i64 - report.total as i64;
    feed(&mut app, [Event::Budget(Box::new(report))]);
    insta::assert_snapshot!(
        "gauge_unknown_model",
        pane_alone(&mut app, PaneId::Gauge, 48, 26)
    );
}

#[test]
fn the_fill_colours_the_gauge_green_yellow_red() {
    use ratatui::style::Color;
    let theme = tern::tui::Theme::default_theme();
    for (fill, expected) in [
        (0.30, theme.c.ok),
        (0.70, theme.c.caution),
        (0.90, theme.c.danger),
    ] {
        let mut app = app();
        let mut report = budget("", &[]);
        report.window = (report.total as f64 / fill) as usize;
        feed(&mut app, [Event::Budget(Box::new(report))]);
        let area = Rect::new(0, 0, 48, 10);
        let mut buf = Buffer::empty(area);
        app.draw_pane(PaneId::Gauge, area, &mut buf);
        // The headline's first cell, inside the border and its padding.
        let fg: Option<Color> = buf[(2, 1)].style().fg;
        assert_eq!(fg, Some(expected), "fill {fill}");
    }
}

#[test]
fn too_small_says_so() {
    let mut app = app();
    feed(&mut app, session_start());
    let text = screen(&mut app, 30, 8);
    assert!(text.contains("tern needs at least 40×10"), "{text}");
}

/// A real review plan of a small branch, compressed because one big file cannot fit: a
/// small modified file sent; the big file, a lockfile and a deleted file left out.
fn review_plan() -> tern::branch_review::ReviewPlan {
    let big = |tag: &str| -> String {
        (0..600)
            .map(|i| format!("VALUE_{i} = '{tag} {i}'\n"))
            .collect()
    };
    let repo = crate::support::TempRepo::with_files(&[
        ("src/calc.py", "def ratio(a, b):\n    return a\n"),
        ("src/old.py", "def gone():\n    pass\n"),
        ("Cargo.lock", "# lock\n"),
        ("src/big.py", &big("old")),
    ]);
    repo.branch("feature");
    repo.write("src/calc.py", "def ratio(a, b):\n    return a / b\n");
    repo.write("Cargo.lock", "# lock\nversion = 4\n");
    repo.write("src/big.py", big("new"));
    repo.remove("src/old.py");
    repo.commit("feature");
    let changes = tern::branch_review::collect(
        &repo.repo,
        &tern::branch_review::DiffSource::Branch {
            base: Some("main".into()),
        },
    )
    .unwrap();
    let counter = tern::llm::ModelInfo::lookup("gpt-4o").token_counter();
    let mut options = tern::branch_review::ReviewOptions::from(&tern::config::Settings::default());
    // Too small for the extended diff: the compressed plan leaves files out.
    options.budget = 2440;
    tern::branch_review::plan(&changes, &counter, &options).unwrap()
}

#[test]
fn the_review_pane_lists_what_a_review_sent_and_left_out() {
    let mut app = app();
    feed(&mut app, session_start());
    feed(&mut app, [Event::ReviewPlan(Box::new(review_plan()))]);
    let pane = pane_alone(&mut app, PaneId::Review, 60, 11);
    assert!(pane.contains("✓ src/calc.py"), "{pane}");
    assert!(pane.contains("– Cargo.lock"), "{pane}");
    assert!(pane.contains("– src/old.py"), "{pane}");
    assert!(pane.contains("– src/big.py"), "{pane}");
    // The commit id differs on every run.
    let (before, after) = pane.split_once("HEAD ").unwrap();
    let sha: String = after.chars().take(7).collect();
    let pane = format!(
        "{before}HEAD <sha>{}",
        after.strip_prefix(sha.as_str()).unwrap()
    );
    insta::assert_snapshot!("review_plan", pane);
}

/// The gauge says how counts are made (by the server, or calibrated with their recent
/// error), where the window comes from, and marks a last request whose usage the
/// server did not report.
#[test]
fn the_gauge_says_how_counts_are_made_and_marks_estimated_usage() {
    use tern::engine::protocol::{Counting, WindowSource};
    let mut app = app();
    feed(&mut app, session_start());
    let mut report = budget("a draft", &[]);
    report.counting = Counting::Server;
    report.window = 2048;
    report.window_source = WindowSource::Server;
    report.last_usage_estimated = true;
    feed(&mut app, [Event::Budget(Box::new(report.clone()))]);
    let text = pane_alone(&mut app, PaneId::Gauge, 60, 26);
    assert!(text.contains("counts exact via server"), "{text}");
    assert!(
        text.contains("window 2,048 learned from an overflow"),
        "{text}"
    );
    assert!(text.contains("last ↑≈1,931 ↓≈624 (not reported)"), "{text}");
    report.window_source = WindowSource::Reported;
    feed(&mut app, [Event::Budget(Box::new(report.clone()))]);
    let text = pane_alone(&mut app, PaneId::Gauge, 60, 26);
    assert!(text.contains("window 2,048 from the server"), "{text}");
    report.counting = Counting::Calibrated {
        error_percent: Some(1.4),
    };
    feed(&mut app, [Event::Budget(Box::new(report))]);
    let text = pane_alone(&mut app, PaneId::Gauge, 60, 26);
    assert!(text.contains("counts ≈ calibrated ±2%"), "{text}");
}

fn command_events(passed: bool) -> Vec<Event> {
    use tern::engine::protocol::CommandPurpose;
    let outcome = if passed {
        "exit 0 after 0.4 s"
    } else {
        "exit 101 after 3.2 s"
    };
    vec![
        Event::CommandStarted {
            command: "cargo test".into(),
            purpose: CommandPurpose::Test,
            auto_round: Some((1, 3)),
        },
        Event::CommandProgress {
            text: "running 3 tests\ntest a ... ok\ntest b ... FAILED\n".into(),
            lines: 3,
            last_line: "test b ... FAILED".into(),
            elapsed_ms: 1200,
        },
        Event::CommandProgress {
            text: "\nfailures:\n    b: assertion `left == right` failed\n".into(),
            lines: 6,
            last_line: "    b: assertion `left == right` failed".into(),
            elapsed_ms: 3200,
        },
        Event::CommandFinished {
            command: "cargo test".into(),
            purpose: CommandPurpose::Test,
            passed,
            outcome: outcome.into(),
            lines: 6,
            elapsed_ms: 3200,
            tokens: 1240,
            in_context: !passed,
        },
    ]
}

#[test]
fn the_command_block_streams_and_ends_with_how_and_what_it_costs() {
    use tern::engine::protocol::CommandPurpose;
    let mut app = app();
    feed(&mut app, session_start());
    feed(
        &mut app,
        [Event::ConfirmCommand {
            command: "cargo test".into(),
            purpose: CommandPurpose::Test,
            reason: Some("proposed from Cargo.toml; set test_cmd to keep it".into()),
        }],
    );
    insta::assert_snapshot!("command_confirm_80x24", screen(&mut app, 80, 24));
    // A long command is cut in the status line so that `[y/N]` stays in view; the chat
    // line above has it whole.
    let mut long = crate::tui_support::app();
    feed(&mut long, session_start());
    feed(
        &mut long,
        [Event::ConfirmCommand {
            command: "cargo test --workspace --all-features -- --nocapture --test-threads=1 日本語"
                .into(),
            purpose: CommandPurpose::Run,
            reason: None,
        }],
    );
    let shown = screen(&mut long, 80, 24);
    let status = shown.lines().last().unwrap();
    assert!(status.contains("…`? [y/N]"), "{status}");
    assert!(
        shown.contains("日本語"),
        "the chat line has it whole: {shown}"
    );
    let mut events = command_events(false);
    let finished = events.pop().unwrap();
    feed(&mut app, events);
    insta::assert_snapshot!("command_running_80x24", screen(&mut app, 80, 24));
    feed(&mut app, [finished]);
    insta::assert_snapshot!("command_failed", pane_alone(&mut app, PaneId::Chat, 80, 16));
}

/// Every question the status line asks, at both sizes: the question, shortened where it
/// must be, and always its answer keys (nothing drawn over them).
#[test]
fn every_question_shows_its_answer_keys() {
    use tern::engine::protocol::CommandPurpose;
    use tern::tui::{EditRequest, EditTarget};
    type Ask = fn(&mut App);
    let questions: [(&str, Ask); 4] = [
        ("run", |app| {
            feed(
                app,
                [Event::ConfirmCommand {
                    command: "cargo test --workspace --all-features -- --nocapture".into(),
                    purpose: CommandPurpose::Run,
                    reason: None,
                }],
            )
        }),
        ("empty_edit", |app: &mut App| {
            let id = proposal().files[0].hunks[0].id.clone();
            let request = EditRequest {
                target: EditTarget::Hunk { id },
                text: "old\n".into(),
                suffix: ".py".into(),
            };
            app.editor_done(request, Ok(String::new()));
        }),
        ("quit", |app| {
            // One accepted, the rest to review.
            app.handle_terminal(key(KeyCode::Char('y')));
            app.handle_terminal(ctrl('c'));
            app.handle_terminal(ctrl('c'));
        }),
        ("quit_landing", |app| {
            app.handle_terminal(key(KeyCode::Char('y')));
            app.handle_terminal(key(KeyCode::Enter));
            assert!(app.applying());
            app.handle_terminal(ctrl('c'));
            app.handle_terminal(ctrl('c'));
        }),
    ];
    for (name, ask) in questions {
        for (w, h) in SIZES {
            let mut app = reviewed_session();
            ask(&mut app);
            let shown = screen(&mut app, w, h);
            let status = shown.lines().last().unwrap().trim_matches('"').trim_end();
            assert!(status.ends_with("[y/N]"), "{name} at {w}x{h}: {status}");
            insta::assert_snapshot!(format!("question_{name}_{w}x{h}"), shown);
        }
    }
}

/// A flashed message that names keys is not cut at 80 columns by the gauge; `f` with
/// nothing to show says so.
#[test]
fn a_flash_keeps_its_keys_at_80_columns() {
    let mut app = reviewed_session();
    app.handle_terminal(key(KeyCode::Enter));
    let shown = screen(&mut app, 80, 24);
    let status = shown.lines().last().unwrap();
    assert!(
        status.contains("no hunk accepted: y accepts one, A all; d discards the proposal"),
        "{status}"
    );
    let mut view = proposal();
    view.failures.clear();
    view.shell_commands.clear();
    view.written_as.clear();
    let mut app = crate::tui_support::app();
    feed(&mut app, session_start());
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    app.handle_terminal(key(KeyCode::Char('f')));
    let shown = screen(&mut app, 80, 24);
    assert!(
        shown.contains("no failed edit and no note to show"),
        "{shown}"
    );
    assert!(
        shown.contains("y accept · n reject"),
        "still the hunks: {shown}"
    );
}

/// The row under a reply that names files outside the chat and suggests commands.
#[test]
fn the_files_the_model_needs_row() {
    let mut app = app();
    feed(&mut app, session_start());
    feed(
        &mut app,
        turn("where are prices set?", "In `shop/pricing.py`.", 40),
    );
    feed(&mut app, [needed_event()]);
    insta::assert_snapshot!("needed_row", pane_alone(&mut app, PaneId::Chat, 72, 16));
}

/// A proposed hunk that went stale (its lines changed on disk) is listed as failed with
/// its lines, coloured as a diff, under the reason; a failed block is named once.
/// Failed edits under hunks still to review: at 80x24 the rows under the diff hold a
/// few lines of them, the last row says how many more there are, and `f` shows them all
/// (scrolled with j/k, G to the end), down to the last failure's last line.
#[test]
fn every_failed_edit_can_be_reached_at_any_size() {
    for (w, h) in SIZES {
        let mut app = app();
        feed(&mut app, session_start());
        let mut view = proposal();
        for n in 1..=3 {
            view.failures.push(tern::engine::protocol::EditFailureView {
                path: Some(format!("shop/stale{n}.py")),
                block: 0,
                message: "a proposed hunk no longer applies: the lines it changes, or the lines around them, are no longer in the file".into(),
                near: None,
                hunk: Some(format!(" def main():\n-    run()\n+    run(verbose=True)\n+    # last line {n}\n")),
            });
        }
        feed(&mut app, [Event::Proposal(Box::new(view))]);
        assert_eq!(app.focus(), PaneId::Review);
        let shown = screen(&mut app, w, h);
        if !shown.contains("# last line 3") {
            assert!(
                shown.contains("more lines: f shows every failed edit"),
                "{w}x{h}: {shown}"
            );
        }
        insta::assert_snapshot!(format!("review_failures_{w}x{h}"), shown);
        app.handle_terminal(key(KeyCode::Char('f')));
        insta::assert_snapshot!(
            format!("review_failures_open_{w}x{h}"),
            screen(&mut app, w, h)
        );
        app.handle_terminal(key(KeyCode::Char('G')));
        let end = screen(&mut app, w, h);
        assert!(end.contains("# last line 3"), "{w}x{h}: {end}");
        // `f` again: back to the hunks, which the keys decide on again.
        app.handle_terminal(key(KeyCode::Char('f')));
        assert!(screen(&mut app, w, h).contains("y accept"));
    }
}

#[test]
fn the_review_shows_a_stale_hunk_with_its_lines() {
    let mut app = app();
    feed(&mut app, session_start());
    let mut view = proposal();
    view.files.clear();
    view.failures.push(tern::engine::protocol::EditFailureView {
        path: Some("shop/cli.py".into()),
        block: 0,
        message: "a proposed hunk no longer applies: the lines it changes, or the lines around them, are no longer in the file".into(),
        near: None,
        hunk: Some("     def main():\n-    run()\n+    run(verbose=True)\n".into()),
    });
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    let pane = pane_alone(&mut app, PaneId::Review, 100, 20);
    assert!(
        pane.contains("✗ shop/cli.py: a proposed hunk no longer applies"),
        "{pane}"
    );
    assert_eq!(
        pane.matches("block 5 (shop/pricing.py)").count(),
        1,
        "{pane}"
    );
    let (removed, added) = (
        pane.find("-    run()").expect(&pane),
        pane.find("+    run(verbose=True)").expect(&pane),
    );
    assert!(removed < added);
    let area = Rect::new(0, 0, 100, 20);
    let mut buf = Buffer::empty(area);
    app.draw_pane(PaneId::Review, area, &mut buf);
    let theme = tern::tui::Theme::default_theme();
    assert_eq!(color_of(&buf, "+    run(verbose"), Some(theme.c.added));
    assert_eq!(color_of(&buf, "-    run()"), Some(theme.c.removed));
}

/// A hunk's long caution list and a map "why" line too long for the pane are cut with
/// `…` (they were cut mid-list and mid-number with no mark), at both sizes.
#[test]
fn long_cautions_and_why_lines_are_cut_with_a_mark() {
    for (w, h) in SIZES {
        let mut app = reviewed_session();
        let mut view = proposal();
        let characters = ["U+202E", "U+2066", "U+2069", "U+2028", "U+200B", "U+2067"];
        let caution = tern::edit::Caution::Invisible {
            characters: characters.iter().map(|c| c.to_string()).collect(),
        };
        view.files[0].hunks[0].cautions = vec![caution.clone()];
        view.files[1].cautions = vec![caution];
        feed(&mut app, [Event::Proposal(Box::new(view))]);
        let review = screen(&mut app, w, h);
        insta::assert_snapshot!(format!("long_caution_{w}x{h}"), review);
        app.handle_terminal(key(KeyCode::Esc));
        while app.focus() != PaneId::Map {
            app.handle_terminal(key(KeyCode::Tab));
        }
        let mut edges = why_inventory();
        edges.push(tern::engine::protocol::MapEdge {
            ident: "format_cents".into(),
            from: "shop/commands/reporting/monthly/statements/with/a/very/long/module/path/cli.py"
                .into(),
            weight: 0.25,
        });
        feed(
            &mut app,
            [Event::MapWhy {
                path: "shop/inventory.py".into(),
                edges,
            }],
        );
        let map = screen(&mut app, w, h);
        let why = map
            .lines()
            .find(|l| l.contains("format_cents ←"))
            .unwrap_or_else(|| panic!("{map}"));
        assert!(why.contains('…'), "{why}");
        insta::assert_snapshot!(format!("long_why_{w}x{h}"), map);
    }
}

/// The Budget pane focused as a control: the file rows shown, one selected, the keys
/// for it in the footer; then `?` with the pane's keys.
#[test]
fn the_budget_pane_as_a_control() {
    for (w, h) in SIZES {
        let mut app = reviewed_session();
        app.handle_terminal(key(KeyCode::Esc));
        while app.focus() != PaneId::Gauge {
            app.handle_terminal(key(KeyCode::Tab));
        }
        screen(&mut app, w, h);
        app.handle_terminal(key(KeyCode::Char('f')));
        screen(&mut app, w, h);
        app.handle_terminal(key(KeyCode::Char('j')));
        insta::assert_snapshot!(format!("gauge_control_{w}x{h}"), screen(&mut app, w, h));
        app.handle_terminal(key(KeyCode::Char('?')));
        insta::assert_snapshot!(format!("help_gauge_{w}x{h}"), screen(&mut app, w, h));
    }
}
