//! Key scripts: what the user presses, and the `Op`s the app sends the engine for it.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::tui_support::*;
use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use tern::engine::protocol::{Command, Decision, EditFailureView, ProposalView, ReviewOp};
use tern::engine::{Event, FileMode, Op};
use tern::llm::Finish;
use tern::tui::{App, PaneId};

fn started() -> App {
    let mut app = app();
    feed(&mut app, session_start());
    // Ready asks for the repository's files; the map asks why its first file is there.
    assert_eq!(
        app.take_ops(),
        [
            Op::ListRepoFiles,
            Op::MapWhy {
                path: "shop/inventory.py".into()
            }
        ]
    );
    app
}

/// A workspace whose last reply names files outside the chat and suggests commands.
fn needing() -> App {
    let mut app = started();
    feed(
        &mut app,
        turn("where are prices set?", "In `shop/pricing.py`.", 40),
    );
    feed(&mut app, [needed_event()]);
    app
}

fn focus(app: &mut App, id: PaneId) {
    for _ in 0..6 {
        if app.focus() == id {
            return;
        }
        app.handle_terminal(key(KeyCode::Tab));
    }
    panic!("{id:?} cannot be focused");
}

fn press(app: &mut App, c: char) {
    app.handle_terminal(key(KeyCode::Char(c)));
}

/// `y` after a pause: the answer to the question a letter asked (a `y` right after the
/// letter is typing).
fn answer_yes(app: &mut App) {
    let later = Instant::now() + tern::tui::typing::TYPING_WINDOW;
    app.handle_terminal_at(key(KeyCode::Char('y')), later);
}

fn hunk_ids() -> Vec<String> {
    proposal()
        .files
        .iter()
        .flat_map(|f| f.hunks.iter().map(|h| h.id.clone()))
        .collect()
}

#[test]
fn typing_sends_a_debounced_draft_and_enter_submits() {
    let mut app = started();
    type_text(&mut app, "rename remove");
    assert!(app.take_ops().is_empty(), "no draft before the debounce");
    app.tick(Instant::now() + Duration::from_millis(60));
    assert_eq!(
        app.take_ops(),
        [Op::Draft {
            text: "rename remove".into(),
            mode: None,
        }]
    );
    type_text(&mut app, "\n");
    assert_eq!(
        app.take_ops(),
        [Op::Submit {
            text: "rename remove".into()
        }]
    );
    app.tick(Instant::now() + Duration::from_millis(60));
    assert_eq!(
        app.take_ops(),
        [Op::Draft {
            text: String::new(),
            mode: None,
        }]
    );
}

#[test]
fn shift_enter_and_ctrl_j_break_lines_and_a_paste_arrives_whole() {
    let mut app = started();
    type_text(&mut app, "one");
    app.handle_terminal(TermEvent::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::SHIFT,
    )));
    type_text(&mut app, "two");
    app.handle_terminal(ctrl('j'));
    let pasted: String = (0..2_000).map(|i| format!("line {i}\r\n")).collect();
    app.handle_terminal(TermEvent::Paste(pasted));
    type_text(&mut app, "\n");
    let ops = app.take_ops();
    let Some(Op::Submit { text }) = ops.last() else {
        panic!("{ops:?}")
    };
    assert!(text.starts_with("one\ntwo\nline 0\nline 1\n"));
    assert!(text.ends_with("line 1999"), "trailing newline trimmed");
    assert!(!text.contains('\r'));
}

/// An unknown command keeps its text in the box, and the error names the way to send a
/// message that starts with `/`: `//`. `!!` does the same for `!`.
#[test]
fn an_unknown_command_keeps_the_text_and_a_doubled_slash_sends_it() {
    let mut app = started();
    type_text(&mut app, "/usr/bin is where my tools live\n");
    assert!(
        !app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::Submit { .. } | Op::Command { .. })),
    );
    assert_eq!(app.panes().input.text(), "/usr/bin is where my tools live");
    assert!(screen(&mut app, 120, 24).contains("//… sends a message that starts with /"));
    let mut app = started();
    type_text(&mut app, "//usr/bin is where my tools live\n");
    assert!(app.take_ops().contains(&Op::Submit {
        text: "/usr/bin is where my tools live".into()
    }));
    type_text(&mut app, "!!important: read this\n");
    assert!(app.take_ops().contains(&Op::Submit {
        text: "!important: read this".into()
    }));
}

/// A command is one line: lines typed after `/add FILE` are not made files, and the
/// refused text stays in the box to be mended.
#[test]
fn a_command_followed_by_lines_is_refused_and_the_text_kept() {
    let mut app = started();
    type_text(&mut app, "/add a.txt");
    app.handle_terminal(ctrl('j'));
    type_text(&mut app, "please fix the bug\n");
    assert!(
        !app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::Submit { .. } | Op::Command { .. })),
        "nothing is done"
    );
    assert_eq!(app.panes().input.text(), "/add a.txt\nplease fix the bug");
    assert!(screen(&mut app, 100, 24).contains("/add is one line"));
}

#[test]
fn files_pane_toggles_drops_and_adds_with_the_picker() {
    let mut app = started();
    focus(&mut app, PaneId::Files);
    // Selection starts on README.md (read-only). A letter that changes a mode or drops
    // a file asks first: `y` answers.
    press(&mut app, 'e');
    assert!(screen(&mut app, 120, 24).contains("make README.md editable? [y/N]"));
    answer_yes(&mut app);
    app.handle_terminal(key(KeyCode::Down));
    press(&mut app, ' ');
    answer_yes(&mut app);
    press(&mut app, 'j');
    press(&mut app, 'd');
    answer_yes(&mut app);
    assert_eq!(
        app.take_ops(),
        [
            Op::SetFileMode {
                path: "README.md".into(),
                mode: FileMode::Editable
            },
            Op::SetFileMode {
                path: "shop/cli.py".into(),
                mode: FileMode::ReadOnly
            },
            Op::DropFile {
                path: "shop/inventory.py".into()
            },
        ]
    );
    // The picker's filter typed after a pause (at once, it would be typing: see
    // `a_letter_right_after_another_is_typed`).
    let mut slowly = Slowly::new();
    slowly.press(&mut app, key(KeyCode::Char('a')));
    for c in "pric".chars() {
        slowly.press(&mut app, key(KeyCode::Char(c)));
    }
    slowly.press(&mut app, key(KeyCode::Enter));
    slowly.press(&mut app, key(KeyCode::Char('a')));
    for c in "test".chars() {
        slowly.press(&mut app, key(KeyCode::Char(c)));
    }
    app.handle_terminal(ctrl('r'));
    assert_eq!(
        app.take_ops(),
        [
            Op::AddFiles {
                paths: vec!["shop/pricing.py".into()],
                mode: FileMode::Editable
            },
            Op::AddFiles {
                paths: vec!["tests/test_inventory.py".into()],
                mode: FileMode::ReadOnly
            },
        ]
    );
    assert_eq!(
        app.focus(),
        PaneId::Files,
        "the picker closed back to the pane"
    );
}

#[test]
fn accept_one_hunk_reject_another_apply_then_undo() {
    let mut app = started();
    feed(&mut app, turn("fix remove", REPLY, 64));
    app.take_ops();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    assert_eq!(app.focus(), PaneId::Review, "a proposal takes the focus");
    let ids = hunk_ids();
    press(&mut app, 'y');
    press(&mut app, 'n');
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(
        app.take_ops(),
        [
            Op::Review(ReviewOp::Hunk {
                id: ids[0].clone(),
                decision: Decision::Accept
            }),
            Op::Review(ReviewOp::Hunk {
                id: ids[1].clone(),
                decision: Decision::Reject
            }),
            Op::Review(ReviewOp::Apply),
        ]
    );
    // The engine lands the accepted hunk; the rest of the proposal stays to decide on
    // (it sends what is left, then the account of what was written).
    let mut left = proposal();
    left.files[0].hunks.remove(0);
    left.files[0].hunks[0].decision = Decision::Reject;
    feed(
        &mut app,
        [
            Event::Proposal(Box::new(left)),
            Event::Applied {
                files: vec!["shop/inventory.py".into()],
                accepted: 1,
                rejected: 3,
                commit: Some("3f2a9c1d0e".into()),
                message: "fix: refuse to remove more than is in stock".into(),
                failed: vec![],
                held: 0,
                lost: 0,
            },
            Event::Idle,
        ],
    );
    assert_eq!(app.focus(), PaneId::Review, "pending hunks remain");
    let text = screen(&mut app, 160, 48);
    assert!(
        text.contains("✓ Applied 1 hunk to 1 file, 3 not applied · commit 3f2a9c1"),
        "{text}"
    );
    // Accept the rest, apply: the engine closes the proposal.
    press(&mut app, 'A');
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(
        app.take_ops(),
        [
            Op::Review(ReviewOp::All {
                decision: Decision::Accept
            }),
            Op::Review(ReviewOp::Apply),
        ]
    );
    feed(
        &mut app,
        [
            Event::Proposal(Box::default()),
            Event::Applied {
                files: vec!["shop/cli.py".into()],
                accepted: 2,
                rejected: 0,
                commit: Some("77aa01b".into()),
                message: "feat: shop low".into(),
                failed: vec![],
                held: 0,
                lost: 0,
            },
            Event::Idle,
        ],
    );
    assert_eq!(app.focus(), PaneId::Input, "back to the message box");
    let text = screen(&mut app, 160, 48);
    assert!(
        text.contains("Applied 2 hunks to 1 file · commit 77aa01b feat: shop low"),
        "{text}"
    );
    type_text(&mut app, "/undo\n");
    assert_eq!(
        app.take_ops(),
        [Op::Command {
            command: Command::Undo,
            args: String::new()
        }]
    );
}

#[test]
fn a_hunk_with_invisible_characters_is_left_pending_by_a_and_shows_why() {
    let mut app = started();
    let mut view = proposal();
    let caution = tern::edit::Caution::Invisible {
        characters: vec!["U+202E".into()],
    };
    view.files[0].hunks[0].cautions = vec![caution];
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    let review = screen(&mut app, 160, 48);
    assert!(
        review.contains(&format!(
            "· pending · {} ⚠ holds invisible characters (U+202E)",
            hunk_ids()[0]
        )),
        "{review}"
    );
    press(&mut app, 'a');
    press(&mut app, 'A');
    let decisions: Vec<Decision> = app
        .panes()
        .review
        .proposal()
        .unwrap()
        .files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.decision)
        .collect();
    assert_eq!(decisions[0], Decision::Pending, "{decisions:?}");
    assert!(
        decisions[1..].iter().all(|d| *d == Decision::Accept),
        "{decisions:?}"
    );
    // By itself, it is accepted.
    press(&mut app, 'g');
    app.take_ops();
    press(&mut app, 'y');
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Hunk {
            id: hunk_ids()[0].clone(),
            decision: Decision::Accept
        })]
    );
}

#[test]
fn review_keys_for_files_all_reset_discard_and_back() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    let ids = hunk_ids();
    app.handle_terminal(key(KeyCode::Enter));
    assert!(
        app.take_ops().is_empty(),
        "nothing accepted: Enter applies nothing"
    );
    press(&mut app, 'a');
    press(&mut app, ']');
    press(&mut app, 'n');
    press(&mut app, 'A');
    press(&mut app, 'r');
    press(&mut app, 'R');
    assert_eq!(
        app.take_ops(),
        [
            Op::Review(ReviewOp::File {
                path: "shop/inventory.py".into(),
                decision: Decision::Accept
            }),
            Op::Review(ReviewOp::Hunk {
                id: ids[2].clone(),
                decision: Decision::Reject
            }),
            Op::Review(ReviewOp::All {
                decision: Decision::Accept
            }),
            Op::Review(ReviewOp::Hunk {
                id: ids[3].clone(),
                decision: Decision::Pending
            }),
            Op::Review(ReviewOp::All {
                decision: Decision::Pending
            }),
        ]
    );
    app.handle_terminal(key(KeyCode::Esc));
    assert_eq!(
        app.focus(),
        PaneId::Input,
        "esc goes back, the edits stay pending"
    );
    assert!(app.take_ops().is_empty());
    focus(&mut app, PaneId::Review);
    press(&mut app, 'd');
    assert!(app.take_ops().is_empty(), "d asks first");
    answer_yes(&mut app);
    assert_eq!(app.take_ops(), [Op::Review(ReviewOp::Discard)]);
    assert_eq!(app.focus(), PaneId::Input);
}

#[test]
fn an_updated_proposal_keeps_the_selection_and_a_new_one_resets_it() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    press(&mut app, 'j');
    press(&mut app, 'j');
    app.take_ops();
    // The engine confirms a decision: same hunks, same selection (the third).
    let mut echoed = proposal();
    echoed.files[0].hunks[0].decision = Decision::Accept;
    feed(&mut app, [Event::Proposal(Box::new(echoed))]);
    press(&mut app, 'y');
    let ids = hunk_ids();
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Hunk {
            id: ids[2].clone(),
            decision: Decision::Accept
        })]
    );
    // A different proposal opens on its first hunk.
    feed(&mut app, [Event::Proposal(Box::new(big_proposal(30)))]);
    press(&mut app, 'y');
    let first = big_proposal(30).files[0].hunks[0].id.clone();
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Hunk {
            id: first,
            decision: Decision::Accept
        })]
    );
}

#[test]
fn ctrl_c_clears_then_quits_and_esc_interrupts_a_stream() {
    let mut app = started();
    type_text(&mut app, "half a thought");
    app.handle_terminal(ctrl('c'));
    assert!(app.panes().input.is_empty());
    app.handle_terminal(ctrl('c'));
    assert!(app.quitting());
    assert!(app.take_ops().contains(&Op::Shutdown));

    let mut app = started();
    feed(&mut app, turn("q", "partial", 3).into_iter().take(2));
    assert!(app.is_streaming());
    app.handle_terminal(key(KeyCode::Esc));
    assert_eq!(app.take_ops(), [Op::Cancel]);
    type_text(&mut app, "next question\n");
    assert!(
        !app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::Submit { .. })),
        "no second turn while one streams"
    );
    type_text(&mut app, "");
    app.handle_terminal(ctrl('c'));
    assert_eq!(app.take_ops(), [Op::Cancel], "ctrl-c interrupts first");
    feed(
        &mut app,
        [Event::TurnFinished {
            reply: "partial".into(),
            finish: Finish::Cancelled,
            usage: None,
            usage_estimated: false,
            cost: 0.0,
            session_cost: 0.0,
        }],
    );
    assert!(!app.is_streaming());
    assert!(screen(&mut app, 80, 24).contains("interrupted; the partial reply is kept"));
}

/// A message waits before its reply starts (for the repo map, a history summary): Esc
/// still reaches the engine, which then never sends it by itself.
#[test]
fn esc_cancels_a_message_that_waits_to_start() {
    let mut app = started();
    type_text(&mut app, "hello\n");
    assert!(
        app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::Submit { text } if text == "hello"))
    );
    feed(
        &mut app,
        [Event::Notice {
            text: "waiting for the repo map to be built; the message is sent as soon as it is"
                .into(),
        }],
    );
    app.handle_terminal(key(KeyCode::Esc));
    assert_eq!(app.take_ops(), [Op::Cancel]);
    // Once the engine is idle, Esc has nothing to interrupt.
    feed(&mut app, [Event::Idle]);
    app.handle_terminal(key(KeyCode::Esc));
    assert!(app.take_ops().is_empty());
}

#[test]
fn a_failed_turn_gives_the_message_back() {
    let mut app = started();
    feed(
        &mut app,
        [
            Event::TurnStarted {
                text: "explain pricing".into(),
                notes: vec![],
                mode: tern::engine::ChatMode::Code,
            },
            Event::TurnFailed {
                error: "401: the API key was refused".into(),
                message: "explain pricing".into(),
            },
        ],
    );
    assert_eq!(app.panes().input.text(), "explain pricing");
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("401: the API key was refused"), "{text}");
}

#[test]
fn map_pane_asks_why_for_the_selected_file_and_toggles_the_text() {
    let mut app = started();
    focus(&mut app, PaneId::Map);
    assert!(
        app.take_ops().is_empty(),
        "already asked for the first file"
    );
    press(&mut app, 'j');
    press(&mut app, 'j');
    press(&mut app, 'k');
    assert_eq!(
        app.take_ops(),
        [
            Op::MapWhy {
                path: "shop/pricing.py".into()
            },
            Op::MapWhy {
                path: "shop/cli.py".into()
            },
        ],
        "each file once"
    );
    press(&mut app, 'r');
    assert_eq!(
        app.take_ops(),
        [Op::Command {
            command: Command::MapRefresh,
            args: String::new()
        }]
    );
    press(&mut app, 't');
    assert!(screen(&mut app, 160, 48).contains("│def format_cents("));
}

#[test]
fn mouse_focuses_panes_selects_rows_and_scrolls() {
    let mut app = started();
    feed(&mut app, long_history(40));
    screen(&mut app, 160, 48);
    // The files pane is at the top left; its second row is shop/cli.py.
    app.handle_terminal(TermEvent::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 5,
        row: 3,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.focus(), PaneId::Files);
    press(&mut app, 'e');
    answer_yes(&mut app);
    assert_eq!(
        app.take_ops(),
        [Op::SetFileMode {
            path: "shop/cli.py".into(),
            mode: FileMode::ReadOnly
        }]
    );
    let bottom = screen(&mut app, 160, 48);
    app.handle_terminal(TermEvent::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: 80,
        row: 20,
        modifiers: KeyModifiers::NONE,
    }));
    let scrolled = screen(&mut app, 160, 48);
    assert_ne!(bottom, scrolled);
    assert!(scrolled.contains("more below"));
    assert!(!app.panes().chat.is_following());
}

/// A message sent while the chat is scrolled up brings the chat back to the bottom,
/// following its reply, instead of leaving it behind "more below".
#[test]
fn sending_while_scrolled_up_follows_the_stream_again() {
    let mut app = started();
    feed(&mut app, long_history(40));
    screen(&mut app, 80, 24);
    app.handle_terminal(key(KeyCode::PageUp));
    assert!(screen(&mut app, 80, 24).contains("more below"));
    assert!(!app.panes().chat.is_following());
    type_text(&mut app, "and now?");
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(
        app.take_ops(),
        [Op::Submit {
            text: "and now?".into()
        }]
    );
    let after = screen(&mut app, 80, 24);
    assert!(app.panes().chat.is_following(), "{after}");
    assert!(!after.contains("more below"), "{after}");
}

#[test]
fn page_keys_scroll_the_chat_from_the_message_box_and_end_follows() {
    let mut app = started();
    feed(&mut app, long_history(40));
    screen(&mut app, 80, 24);
    app.handle_terminal(key(KeyCode::PageUp));
    screen(&mut app, 80, 24);
    assert!(!app.panes().chat.is_following());
    app.handle_terminal(key(KeyCode::PageDown));
    app.handle_terminal(key(KeyCode::PageDown));
    screen(&mut app, 80, 24);
    assert!(
        app.panes().chat.is_following(),
        "scrolling back down follows again"
    );
    focus(&mut app, PaneId::Chat);
    press(&mut app, 'g');
    let top = screen(&mut app, 80, 24);
    assert!(top.contains("make step 0 handle empty input"), "{top}");
    press(&mut app, 'G');
    screen(&mut app, 80, 24);
    assert!(app.panes().chat.is_following());
}

#[test]
fn tab_cycles_every_pane_and_help_lists_the_focused_panes_keys() {
    let mut app = started();
    let mut seen = vec![app.focus()];
    for _ in 0..5 {
        app.handle_terminal(key(KeyCode::Tab));
        seen.push(app.focus());
    }
    assert_eq!(
        seen,
        [
            PaneId::Input,
            PaneId::Chat,
            PaneId::Files,
            PaneId::Map,
            PaneId::Gauge,
            PaneId::Review
        ]
    );
    app.handle_terminal(TermEvent::Key(KeyEvent::new(
        KeyCode::BackTab,
        KeyModifiers::SHIFT,
    )));
    assert_eq!(app.focus(), PaneId::Gauge);
    focus(&mut app, PaneId::Files);
    press(&mut app, '?');
    let text = screen(&mut app, 160, 48);
    assert!(text.contains("toggle editable / read-only"), "{text}");
    press(&mut app, 'q');
    assert!(!screen(&mut app, 160, 48).contains("toggle editable / read-only"));
}

#[test]
fn keys_from_the_config_replace_the_defaults() {
    let mut keys = std::collections::BTreeMap::new();
    keys.insert("accept".to_string(), "space".to_string());
    let (keymap, warnings) =
        tern::tui::Keymap::from_config(&keys, &tern::tui::app::Panes::scopes());
    assert!(warnings.is_empty());
    let mut app = reviewing_with(keymap);
    // `y` is no key of the review now: it is typed.
    press(&mut app, 'y');
    assert_eq!(app.panes().input.text(), "y");
    focus(&mut app, PaneId::Review);
    press(&mut app, ' ');
    assert_eq!(app.take_ops(), [first_hunk(Decision::Accept)]);
}

/// A workspace with `keymap`, reviewing the proposal.
fn reviewing_with(keymap: tern::tui::Keymap) -> App {
    let mut app = App::new(tern::tui::AppConfig {
        theme: tern::tui::Theme::default_theme(),
        keymap,
        notices: vec![],
        throwaway: false,
    });
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    app
}

/// The op that decides the proposal's first hunk.
fn first_hunk(decision: Decision) -> Op {
    Op::Review(ReviewOp::Hunk {
        id: hunk_ids()[0].clone(),
        decision,
    })
}

/// A `[keys]` entry that gives an action a key another action answers to in the same
/// pane (or everywhere) is said at start and not applied: `n` still rejects. One that
/// takes a key only another pane uses is no clash, and two actions may swap keys.
#[test]
fn a_key_another_action_answers_to_is_refused_and_said() {
    let scopes = tern::tui::app::Panes::scopes();
    let config = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect()
    };
    let (keymap, warnings) = tern::tui::Keymap::from_config(&config(&[("accept", "n")]), &scopes);
    assert_eq!(
        warnings,
        ["[keys] accept: n is also reject's, so accept keeps y"]
    );
    let mut app = reviewing_with(keymap);
    press(&mut app, 'n');
    assert_eq!(app.take_ops(), [first_hunk(Decision::Reject)]);

    // A global key taken in a pane would shadow it there.
    let (_, warnings) = tern::tui::Keymap::from_config(&config(&[("accept", "tab")]), &scopes);
    assert_eq!(
        warnings,
        ["[keys] accept: tab is also focus_next's, so accept keeps y"]
    );
    // `a` adds a file in the files pane and accepts a file in the review: no clash.
    let (_, warnings) = tern::tui::Keymap::from_config(&config(&[("add_file", "A")]), &scopes);
    assert!(warnings.is_empty(), "{warnings:?}");
    let (_, warnings) =
        tern::tui::Keymap::from_config(&config(&[("accept", "n"), ("reject", "y")]), &scopes);
    assert!(warnings.is_empty(), "a swap: {warnings:?}");
}

#[test]
fn a_failed_apply_leaves_the_proposal_to_decide_on() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    press(&mut app, 'y');
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(app.take_ops().last(), Some(&Op::Review(ReviewOp::Apply)));
    // The landing failed: the engine says why, and that it is idle again.
    feed(
        &mut app,
        [
            Event::Error {
                text: "nothing was written: your own changes could not be committed first".into(),
            },
            Event::Idle,
        ],
    );
    assert_eq!(app.focus(), PaneId::Review);
    press(&mut app, 'n');
    assert_eq!(
        app.take_ops(),
        [Op::Review(ReviewOp::Hunk {
            id: hunk_ids()[1].clone(),
            decision: Decision::Reject
        })]
    );
}

#[test]
fn accepting_a_file_moves_on_to_the_next_file() {
    let mut app = started();
    let view = proposal();
    assert!(view.files.len() >= 2);
    feed(&mut app, [Event::Proposal(Box::new(view.clone()))]);
    press(&mut app, 'a');
    press(&mut app, 'y');
    assert_eq!(
        app.take_ops(),
        [
            Op::Review(ReviewOp::File {
                path: view.files[0].path.clone(),
                decision: Decision::Accept
            }),
            Op::Review(ReviewOp::Hunk {
                id: view.files[1].hunks[0].id.clone(),
                decision: Decision::Accept
            }),
        ]
    );
}

/// Hunks accepted but not applied (Enter not pressed) are not written either: quitting
/// asks too.
#[test]
fn quitting_with_accepted_hunks_not_applied_asks_first() {
    let mut app = started();
    let mut view = proposal();
    for hunk in view.files.iter_mut().flat_map(|f| f.hunks.iter_mut()) {
        hunk.decision = Decision::Accept;
    }
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    app.handle_terminal(key(KeyCode::Esc));
    app.handle_terminal(ctrl('c'));
    app.handle_terminal(ctrl('c'));
    assert!(!app.quitting(), "not yet: accepted hunks are not applied");
    assert!(
        screen(&mut app, 100, 24).contains("accepted, not applied: kept for tern --resume [y/N]")
    );
    press(&mut app, 'y');
    assert!(app.quitting());
}

/// Ctrl-C twice quits only when nothing came between: a draft typed after the first
/// one is cleared by the second, never lost to a quit (also after an interrupted reply).
#[test]
fn ctrl_c_after_typing_clears_the_draft_and_never_quits() {
    let mut app = started();
    type_text(&mut app, "first");
    app.handle_terminal(ctrl('c'));
    assert!(app.panes().input.is_empty());
    type_text(&mut app, "typed after clear, not sent");
    app.handle_terminal(ctrl('c'));
    assert!(
        !app.quitting(),
        "the draft typed since is cleared, not quit over"
    );
    assert!(app.panes().input.is_empty());
    assert!(screen(&mut app, 80, 24).contains("input cleared"));
    app.handle_terminal(ctrl('c'));
    assert!(app.quitting(), "twice on an empty box quits");

    let mut app = started();
    feed(&mut app, turn("q", "partial", 3).into_iter().take(2));
    app.handle_terminal(ctrl('c'));
    assert_eq!(app.take_ops(), [Op::Cancel]);
    app.handle_terminal(TermEvent::Paste("a pasted draft".into()));
    app.handle_terminal(ctrl('c'));
    assert!(
        !app.quitting(),
        "a paste since the interrupt resets the twice"
    );
    assert!(!app.take_ops().contains(&Op::Shutdown));
}

#[test]
fn quitting_with_hunks_to_review_asks_first() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    app.handle_terminal(key(KeyCode::Esc));
    app.handle_terminal(ctrl('c'));
    app.handle_terminal(ctrl('c'));
    assert!(!app.quitting(), "not yet: hunks await review");
    assert!(screen(&mut app, 100, 24).contains("to review: kept for tern --resume [y/N]"));
    press(&mut app, 'n');
    assert!(!app.quitting());
    type_text(&mut app, "/quit\n");
    assert!(!app.quitting());
    assert!(
        !app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::Submit { .. } | Op::Command { .. })),
        "/quit waits for the answer"
    );
    press(&mut app, 'y');
    assert!(app.quitting());
    assert!(app.take_ops().contains(&Op::Shutdown));
}

/// What tern tells the model with a message (here, rejected hunks) is not shown as the
/// user's words: a dimmed one-line note under them, shown in full with `n`.
#[test]
fn notes_to_the_model_are_set_apart_and_expand() {
    let mut app = started();
    feed(
        &mut app,
        [Event::TurnStarted {
            text: "what now?".into(),
            notes: vec!["I did not apply these hunks:\n-    old line\n+    fresh code".into()],
            mode: tern::engine::ChatMode::Code,
        }],
    );
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("▌ what now?"), "{text}");
    assert!(
        text.contains("↳ note to the model: I did not apply these hunks: (+2 lines)"),
        "{text}"
    );
    assert!(!text.contains("fresh code"), "collapsed: {text}");
    focus(&mut app, PaneId::Chat);
    press(&mut app, 'n');
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("+    fresh code"), "expanded: {text}");
    press(&mut app, 'n');
    assert!(!screen(&mut app, 80, 24).contains("fresh code"));
}

/// A message that was never sent (it waited for the repo map when tern quit) comes
/// back in the input box on resume, said so; one the user is typing is never replaced.
#[test]
fn a_message_never_sent_is_back_in_the_input_box_on_resume() {
    let resumed = || Event::Resumed {
        transcript: Vec::new(),
        unsent: Some("the message I typed".into()),
    };
    let mut app = started();
    feed(&mut app, [resumed()]);
    assert_eq!(app.panes().input.text(), "the message I typed");
    let text = screen(&mut app, 160, 48);
    assert!(
        text.contains("never sent is back in the input box"),
        "{text}"
    );
    let mut app = started();
    type_text(&mut app, "typing");
    feed(&mut app, [resumed()]);
    assert_eq!(app.panes().input.text(), "typing");
}

/// A resumed session shows its conversation (a summary marked as such) and Up walks
/// the user's earlier messages.
#[test]
fn a_resumed_conversation_is_shown_and_up_recalls_its_messages() {
    use tern::engine::protocol::{Shown, ShownKind};
    let mut app = started();
    let shown = |kind, text: &str| Shown {
        kind,
        text: text.into(),
    };
    feed(
        &mut app,
        [Event::Resumed {
            transcript: vec![
                shown(ShownKind::User, "why is pricing slow?"),
                shown(ShownKind::Assistant, "It recomputes taxes per item."),
                shown(ShownKind::Summary, "We looked at pricing."),
                shown(ShownKind::User, "cache the tax table"),
                shown(ShownKind::Assistant, "Done in pricing.py."),
            ],
            unsent: None,
        }],
    );
    let text = screen(&mut app, 160, 48);
    for expected in [
        "why is pricing slow?",
        "It recomputes taxes per item.",
        "summary: the model now sees this instead",
        "We looked at pricing.",
        "Done in pricing.py.",
        "resumed the saved session",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    focus(&mut app, PaneId::Input);
    app.handle_terminal(key(KeyCode::Up));
    assert_eq!(app.panes().input.text(), "cache the tax table");
    app.handle_terminal(key(KeyCode::Up));
    assert_eq!(app.panes().input.text(), "why is pricing slow?");
}

/// The bar is proportional: 0.7% of the window (five small sections) is part of one
/// cell, never a run of full cells; `?` on the Budget pane explains its marks.
#[test]
fn the_budget_bar_is_proportional_and_its_marks_are_explained() {
    let mut app = started();
    let text = screen(&mut app, 160, 48);
    let bar = text
        .lines()
        .find(|l| l.contains('░') && l.contains('▒'))
        .expect("the bar");
    let used: Vec<char> = bar.chars().filter(|c| "█▉▊▋▌▍▎▏".contains(*c)).collect();
    assert_eq!(used.len(), 1, "{bar}");
    assert_ne!(used[0], '█', "0.7% of 37 cells is less than a cell: {bar}");
    assert!(
        text.contains("▔ fill · ╵ 60%/85% · ░ free · ▒ reply"),
        "{text}"
    );
    focus(&mut app, PaneId::Gauge);
    press(&mut app, '?');
    let help = screen(&mut app, 160, 48);
    assert!(help.contains("reserved for the reply"), "{help}");
    assert!(help.contains("the 60% and 85% marks"), "{help}");
}

/// However a proposal ends (here `/discard` typed in the input), the empty proposal
/// clears the Review pane and its tab badge at once.
#[test]
fn an_ended_proposal_clears_the_pane_and_the_badge() {
    let mut app = started();
    feed(
        &mut app,
        [Event::Proposal(Box::new(proposal())), Event::Idle],
    );
    assert!(screen(&mut app, 80, 24).contains(" Review 4 "));
    feed(
        &mut app,
        [
            Event::Proposal(Box::default()),
            Event::Notice {
                text: "discarded the 2 hunks (nothing was written)".into(),
            },
            Event::Idle,
        ],
    );
    let text = screen(&mut app, 80, 24);
    assert!(!text.contains(" Review 4 "), "{text}");
    focus(&mut app, PaneId::Review);
    assert!(
        screen(&mut app, 80, 24).contains("No edits to review"),
        "{}",
        screen(&mut app, 80, 24)
    );
}

/// The Review tab's badge counts the failed edits too: beside the pending hunks, and
/// alone when every hunk failed (before, no count at all).
#[test]
fn the_review_badge_counts_failed_edits_even_when_every_hunk_failed() {
    let mut app = started();
    let mixed = proposal();
    assert_eq!(mixed.failures.len(), 1);
    feed(
        &mut app,
        [Event::Proposal(Box::new(mixed.clone())), Event::Idle],
    );
    let text = screen(&mut app, 80, 24);
    assert!(text.contains(" Review 4 1✗ "), "{text}");
    let stale = |path: &str| {
        EditFailureView {
        path: Some(path.into()),
        block: 0,
        message: "a proposed hunk no longer applies: the lines it changes, or the lines around them, are no longer in the file".into(),
        near: None,
        hunk: Some("+    # plain comment\n".into()),
    }
    };
    let all_failed = ProposalView {
        files: Vec::new(),
        failures: vec![stale("shop/pricing.py"), stale("shop/cli.py")],
        ..mixed
    };
    feed(
        &mut app,
        [Event::Proposal(Box::new(all_failed)), Event::Idle],
    );
    let text = screen(&mut app, 80, 24);
    assert!(text.contains(" Review 2✗ "), "{text}");
}

/// A line longer than the Review pane is cut with a visible `›`; `l` scrolls it
/// sideways (marked `‹`) so its end can be read, `h` scrolls back.
#[test]
fn long_lines_in_review_scroll_sideways_with_cut_markers() {
    let mut app = started();
    let mut view = proposal();
    let long = format!(
        "    total = {}  # END_OF_LINE",
        "price * quantity + ".repeat(6)
    );
    view.files[0].hunks[0].lines[0].text = long;
    feed(&mut app, [Event::Proposal(Box::new(view)), Event::Idle]);
    focus(&mut app, PaneId::Review);
    let text = screen(&mut app, 80, 24);
    let row = text
        .lines()
        .find(|l| l.contains("total = price"))
        .expect("the long line")
        .to_string();
    assert!(!row.contains("END_OF_LINE"), "{row}");
    assert!(
        row.trim_end_matches(['"', '┃', '│', ' ']).ends_with('›'),
        "{row}"
    );
    for _ in 0..10 {
        press(&mut app, 'l');
    }
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("END_OF_LINE"), "{text}");
    assert!(text.contains('‹'), "{text}");
    for _ in 0..10 {
        press(&mut app, 'h');
    }
    assert!(screen(&mut app, 80, 24).contains("total = price"));
}

/// `/diff` and `/show` output is coloured like the review: added lines in the added
/// colour, removed in the removed colour.
#[test]
fn diff_output_in_the_chat_is_coloured() {
    let mut app = started();
    feed(
        &mut app,
        [Event::Output {
            title: "commit 3f2a9c1".into(),
            text: "Author: t <t@x>\n\nfix: stock\n\n--- a/s.py\n+++ b/s.py\n@@ -1 +1 @@\n-old_line_here\n+new_line_here\n".into(),
        }],
    );
    let buf = screen_buffer(&mut app, 160, 48);
    let theme = tern::tui::theme::Theme::default_theme();
    assert_eq!(color_of(&buf, "+new_line_here"), Some(theme.c.added));
    assert_eq!(color_of(&buf, "-old_line_here"), Some(theme.c.removed));
    assert_ne!(color_of(&buf, "fix: stock"), Some(theme.c.added));
}

/// The reason for a rejection typed after `N`, after a pause (right after `N` keys are
/// typing: "No way"), and sent.
fn give_reason(app: &mut App, reason: &str) {
    let later = Instant::now() + tern::tui::typing::TYPING_WINDOW;
    type_at(app, reason, later, Duration::from_millis(100));
    app.handle_terminal_at(key(KeyCode::Enter), later + Duration::from_secs(2));
}

/// `N` in the Review pane starts `/reject ID ` in the message box, for the reason.
#[test]
fn shift_n_asks_for_the_reason_of_a_rejection() {
    let mut app = started();
    feed(
        &mut app,
        [Event::Proposal(Box::new(proposal())), Event::Idle],
    );
    focus(&mut app, PaneId::Review);
    press(&mut app, 'N');
    assert_eq!(app.focus(), PaneId::Input);
    assert_eq!(
        app.panes().input.text(),
        format!("/reject {} ", hunk_ids()[0])
    );
    give_reason(&mut app, "too clever");
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Command {
            command: Command::Reject,
            args: format!("{} too clever", hunk_ids()[0])
        })
    );
    // Back to the review; once the rejection is in, on the next hunk.
    assert_eq!(app.focus(), PaneId::Review);
    let mut view = proposal();
    view.files[0].hunks[0].decision = Decision::Reject;
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    press(&mut app, 'y');
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Review(ReviewOp::Hunk {
            id: hunk_ids()[1].clone(),
            decision: Decision::Accept
        }))
    );
}

/// A long paste is sent in full but shown collapsed in the chat; `n` shows it all.
#[test]
fn a_long_paste_is_sent_whole_and_shown_collapsed() {
    let mut app = started();
    let pasted: String = (1..=200).map(|i| format!("log line {i}\n")).collect();
    let pasted = pasted.trim_end().to_string();
    app.handle_terminal(TermEvent::Paste(pasted.clone()));
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Submit {
            text: pasted.clone()
        })
    );
    feed(
        &mut app,
        [Event::TurnStarted {
            text: pasted,
            notes: vec![],
            mode: tern::engine::ChatMode::Ask,
        }],
    );
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("log line 3"), "{text}");
    assert!(
        text.contains("[pasted 200 lines, sent in full; n shows them all]"),
        "{text}"
    );
    assert!(!text.contains("log line 150"), "{text}");
    focus(&mut app, PaneId::Chat);
    press(&mut app, 'n');
    let mut seen = false;
    for _ in 0..30 {
        if screen(&mut app, 80, 24).contains("log line 150") {
            seen = true;
            break;
        }
        app.handle_terminal(key(KeyCode::PageUp));
    }
    assert!(seen, "expanded, every line can be scrolled to");
}

/// `y` in the chat copies the last reply, `c` its last code block (sent to the
/// terminal with OSC 52); the status line says what was copied.
#[test]
fn the_chat_copies_the_last_reply_and_its_last_code_block() {
    let mut app = started();
    let reply = "Use this:\n\n```python\nprint('first')\n```\n\nor better:\n\n```python\nprint('second')\nprint('third')\n```\n";
    feed(&mut app, turn("how?", reply, 7));
    focus(&mut app, PaneId::Chat);
    press(&mut app, 'c');
    assert_eq!(
        app.take_clipboard().as_deref(),
        Some("print('second')\nprint('third')")
    );
    assert!(screen(&mut app, 160, 48).contains("copied 2 lines (OSC 52)"));
    // A second later (at once, `cy` would be typing).
    app.handle_terminal_at(
        key(KeyCode::Char('y')),
        Instant::now() + Duration::from_secs(2),
    );
    assert_eq!(app.take_clipboard().as_deref(), Some(reply));
}

/// `?` at 80 columns wraps a long help line under its text instead of cutting it at
/// the popup's edge.
#[test]
fn help_lines_wrap_at_80_columns() {
    let mut app = started();
    focus(&mut app, PaneId::Chat);
    press(&mut app, '?');
    let text = screen(&mut app, 80, 24);
    let y = text
        .lines()
        .position(|l| l.contains("copy the last reply to the clipboard"))
        .expect("the copy line");
    let next = text.lines().nth(y + 1).unwrap();
    assert!(next.contains("ssh and tmux)"), "wrapped, not cut: {text}");
    assert!(
        next.contains("                    selected (OSC 52"),
        "under its text: {next}"
    );
}

#[test]
fn a_command_runs_only_on_y_and_esc_or_ctrl_o_do_what_they_say() {
    use tern::engine::protocol::CommandPurpose;
    let ask = || Event::ConfirmCommand {
        command: "make test".into(),
        purpose: CommandPurpose::Run,
        reason: None,
    };
    let mut app = started();
    // Any key but y declines, and is not typed into the message.
    for declining in [
        KeyCode::Char('Y'),
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Char('n'),
    ] {
        feed(&mut app, [ask()]);
        app.handle_terminal(key(declining));
        assert_eq!(
            app.take_ops(),
            [Op::AnswerCommand { run: false }],
            "{declining:?}"
        );
    }
    assert!(app.panes().input.text().is_empty());
    feed(&mut app, [ask()]);
    press(&mut app, 'y');
    assert_eq!(app.take_ops(), [Op::AnswerCommand { run: true }]);
    // While it runs, Esc stops it; afterwards ctrl-o adds its output.
    feed(
        &mut app,
        [Event::CommandStarted {
            command: "make test".into(),
            purpose: CommandPurpose::Run,
            auto_round: None,
        }],
    );
    app.handle_terminal(key(KeyCode::Esc));
    assert_eq!(app.take_ops(), [Op::Cancel]);
    app.handle_terminal(ctrl('o'));
    assert_eq!(app.take_ops(), [Op::AddOutput]);
    // The block offers its output, and says so once it is added.
    let footer = |app: &App| {
        let last = app.panes().chat.messages().last().unwrap();
        last.footer
            .as_ref()
            .map(|f| f.text.clone())
            .unwrap_or_default()
    };
    feed(
        &mut app,
        [Event::CommandFinished {
            command: "make test".into(),
            purpose: CommandPurpose::Run,
            passed: true,
            outcome: "exit 0 after 0.2 s".into(),
            lines: 3,
            elapsed_ms: 200,
            tokens: 1240,
            in_context: false,
        }],
    );
    assert!(
        footer(&app).contains("not in the context: ctrl-o"),
        "{}",
        footer(&app)
    );
    feed(
        &mut app,
        [Event::OutputAdded {
            command: "make test".into(),
            tokens: 1240,
        }],
    );
    assert_eq!(
        footer(&app),
        "exit 0 after 0.2 s · 3 lines · in the context (≈1,240 tok)"
    );
    feed(
        &mut app,
        [Event::OutputDropped {
            command: "make test".into(),
        }],
    );
    assert_eq!(
        footer(&app),
        "exit 0 after 0.2 s · 3 lines · dropped from the context"
    );
}

/// Only the last command's output can be added: an earlier block stops offering it
/// when another command starts, and a command run again replaces its output.
#[test]
fn older_command_blocks_stop_offering_what_they_no_longer_can() {
    use tern::engine::protocol::CommandPurpose;
    let mut app = started();
    let run = |command: &str, in_context: bool| {
        [
            Event::CommandStarted {
                command: command.into(),
                purpose: CommandPurpose::Run,
                auto_round: None,
            },
            Event::CommandFinished {
                command: command.into(),
                purpose: CommandPurpose::Run,
                passed: true,
                outcome: "exit 0 after 0.1 s".into(),
                lines: 1,
                elapsed_ms: 100,
                tokens: 20,
                in_context,
            },
        ]
    };
    feed(&mut app, run("ls", false));
    feed(&mut app, run("make test", true));
    feed(&mut app, run("make test", false));
    let footers: Vec<String> = app
        .panes()
        .chat
        .messages()
        .iter()
        .filter_map(|m| m.footer.as_ref().map(|f| f.text.clone()))
        .collect();
    assert_eq!(
        footers,
        [
            "exit 0 after 0.1 s · 1 line · not in the context",
            "exit 0 after 0.1 s · 1 line · replaced by the run below",
            "exit 0 after 0.1 s · 1 line · not in the context: ctrl-o or /add-output adds it (≈20 tok)",
        ]
    );
}

/// The keys of the row under a reply: add its files (read-only or editable) and ask
/// again, or hand the selected command to `/run`; control characters arrive visible.
#[test]
fn the_needed_row_adds_files_and_picks_a_command_for_run() {
    let mut app = needing();
    focus(&mut app, PaneId::Chat);
    app.take_ops();
    let paths = vec![
        "shop/pricing.py".to_string(),
        "tests/test_inventory.py".to_string(),
    ];
    // Each asks first (a letter never adds files or sends by itself); `y` answers.
    press(&mut app, 'f');
    assert!(app.take_ops().is_empty());
    assert!(
        screen(&mut app, 120, 24).contains("add 2 files read-only, 1,"),
        "{}",
        screen(&mut app, 120, 24)
    );
    answer_yes(&mut app);
    press(&mut app, 'F');
    answer_yes(&mut app);
    assert_eq!(
        app.take_ops(),
        [
            Op::AddNeeded {
                paths: paths.clone(),
                mode: FileMode::ReadOnly
            },
            Op::AddNeeded {
                paths,
                mode: FileMode::Editable
            },
        ]
    );
    // `r` hands the model's command to the engine, which asks before it runs it.
    // One selection walks the commands, then round through the files (`r` on a file
    // does nothing), back to the first command.
    for c in ['r', ']', 'r', ']', ']', ']', 'r'] {
        press(&mut app, c);
    }
    let ops = app.take_ops();
    assert_eq!(
        ops[0],
        Op::RunSuggested {
            command: "pytest -x tests".into()
        }
    );
    let Op::RunSuggested { command: text } = &ops[1] else {
        panic!("{ops:?}")
    };
    assert!(
        text.starts_with("echo ") && text.ends_with("[2Jdone"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "the escape is shown, never sent as is"
    );
    assert_eq!(ops[2], ops[0], "the selection wraps around");
    // A new turn retires the row: its keys no longer act, they are typed.
    feed(&mut app, turn("thanks", "You are welcome.", 40));
    // (After a pause: an `f` right after the last `r` would be typed with it.)
    type_at(
        &mut app,
        "fr",
        Instant::now() + tern::tui::typing::TYPING_WINDOW,
        Duration::ZERO,
    );
    assert!(app.take_ops().is_empty());
    assert_eq!(app.panes().input.text(), "fr");
}

/// The demo keeps no session: its quit question says the hunks are lost, never "kept
/// for tern --resume"; the workspace's says they are kept.
#[test]
fn the_demos_quit_question_says_nothing_is_kept() {
    for (throwaway, says) in [
        (true, "the demo keeps nothing"),
        (false, "kept for tern --resume"),
    ] {
        let mut app = App::new(tern::tui::AppConfig {
            theme: tern::tui::Theme::default_theme(),
            keymap: tern::tui::Keymap::default(),
            notices: vec![],
            throwaway,
        });
        feed(&mut app, session_start());
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        app.handle_terminal(key(KeyCode::Esc));
        app.handle_terminal(ctrl('c'));
        app.handle_terminal(ctrl('c'));
        let shown = screen(&mut app, 200, 24);
        assert!(shown.contains(says), "{throwaway}: {shown}");
    }
}

/// Quit while a landing runs, the workspace's last words (printed once the terminal is
/// restored) say how it ended and where the hunks left are: the demo's are not kept.
#[test]
fn quitting_while_a_landing_runs_ends_with_what_it_did() {
    use tern::engine::protocol::NotAppliedReason;
    for (throwaway, session, reason, says) in [
        (
            true,
            None,
            NotAppliedReason::Cancelled,
            "the landing was cancelled before anything was written; 4 hunks not kept: the demo keeps nothing",
        ),
        (
            false,
            Some("abcd1234"),
            NotAppliedReason::Cancelled,
            "the landing was cancelled before anything was written; 4 hunks kept for `tern --resume=abcd1234`",
        ),
        // Its files were written and put back: nothing applied, not "nothing written".
        (
            false,
            Some("abcd1234"),
            NotAppliedReason::CommitFailed,
            "nothing was applied: the commit failed and the files were put back; 4 hunks kept for `tern --resume=abcd1234`",
        ),
    ] {
        let mut app = App::new(tern::tui::AppConfig {
            theme: tern::tui::Theme::default_theme(),
            keymap: tern::tui::Keymap::default(),
            notices: vec![],
            throwaway,
        });
        let mut start = session_start();
        if let Event::Ready { session: s, .. } = &mut start[0] {
            *s = session.map(String::from);
        }
        feed(&mut app, start);
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        press(&mut app, 'y');
        app.handle_terminal(key(KeyCode::Enter));
        assert!(app.applying());
        app.handle_terminal(key(KeyCode::Esc));
        app.handle_terminal(ctrl('c'));
        app.handle_terminal(ctrl('c'));
        press(&mut app, 'y');
        assert!(app.quitting());
        assert_eq!(app.last_words(), None, "nothing ended yet");
        feed(&mut app, [Event::NotApplied { reason }]);
        assert_eq!(app.last_words().as_deref(), Some(says));
    }
}

/// Keys `text` at `step` apart from `at` on.
fn type_at(app: &mut App, text: &str, at: Instant, step: Duration) {
    for (i, c) in text.chars().enumerate() {
        app.handle_terminal_at(key(KeyCode::Char(c)), at + step * i as u32);
    }
}

/// The issue's case: `fine, thanks` typed with any pane focused ends in the message box
/// whole, and nothing is sent, added, dropped or decided (the chat's `f` would add the
/// files the last reply needs and ask again; the budget's `f` shows its file rows; the
/// files pane's `e`, `space` and `d` change a mode or drop a file).
#[test]
fn fine_thanks_typed_in_any_pane_lands_in_the_box_and_does_nothing() {
    for pane in PaneId::ALL {
        let mut app = needing();
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        focus(&mut app, pane);
        app.take_ops();
        type_at(
            &mut app,
            "fine, thanks",
            Instant::now(),
            Duration::from_millis(120),
        );
        assert_eq!(app.panes().input.text(), "fine, thanks", "{pane:?}");
        assert_eq!(app.focus(), PaneId::Input, "{pane:?}");
        let ops = app.take_ops();
        assert!(
            ops.iter().all(|op| matches!(op, Op::MapWhy { .. })),
            "{pane:?}: {ops:?}"
        );
        // Slowly, a letter at a time, it is the same: each key that would act asks.
        let mut app = needing();
        focus(&mut app, pane);
        app.take_ops();
        type_at(&mut app, "fine", Instant::now(), Duration::from_secs(2));
        let typed = app.panes().input.text().to_string();
        assert!(
            typed.ends_with("ne"),
            "{pane:?}: every letter after the first is typed ({typed:?})"
        );
        assert!(
            app.take_ops()
                .iter()
                .all(|op| matches!(op, Op::MapWhy { .. })),
            "{pane:?}"
        );
    }
}

/// A letter that would add files and send a request asks in the status line, with
/// what it costs; `y` does it, any other key types both letters.
#[test]
fn a_letter_that_would_spend_asks_first_and_another_key_types_both() {
    let mut app = needing();
    focus(&mut app, PaneId::Chat);
    app.take_ops();
    press(&mut app, 'f');
    let shown = screen(&mut app, 80, 24);
    assert!(
        shown.contains("add 2 files read-only, 1,") && shown.contains("and ask again? [y/N]"),
        "{shown}"
    );
    assert!(app.take_ops().is_empty(), "nothing before the answer");
    press(&mut app, 'x');
    assert!(app.take_ops().is_empty());
    assert_eq!(app.panes().input.text(), "fx");
    assert!(
        !screen(&mut app, 80, 24).contains("ask again?"),
        "the question is gone"
    );
    focus(&mut app, PaneId::Chat);
    press(&mut app, 'F');
    answer_yes(&mut app);
    assert!(matches!(
        app.take_ops().as_slice(),
        [Op::AddNeeded {
            mode: FileMode::Editable,
            ..
        }]
    ));
    // Esc takes the question back and types nothing.
    press(&mut app, 'f');
    app.handle_terminal(key(KeyCode::Esc));
    assert!(app.take_ops().is_empty());
    assert_eq!(app.panes().input.text(), "fx");
}

/// `/` and `@` go to the message box from any pane: `/ask` typed in the files pane is
/// the command, never the picker's `a`.
#[test]
fn slash_and_at_go_to_the_box_from_any_pane() {
    for pane in PaneId::ALL {
        let mut app = started();
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        focus(&mut app, pane);
        app.take_ops();
        type_text(&mut app, "/ask why\n");
        let ops = app.take_ops();
        assert!(
            ops.contains(&Op::Command {
                command: Command::Ask,
                args: "why".into()
            }),
            "{pane:?}: {ops:?}"
        );
        assert!(!ops.iter().any(|op| matches!(op, Op::AddFiles { .. })));
        let mut app = started();
        focus(&mut app, pane);
        press(&mut app, '@');
        assert_eq!(app.panes().input.text(), "@", "{pane:?}");
    }
}

/// A letter right after another is typed; the same key again, and the review's keys
/// after one that moved or decided, still act (`j j y`, `y n`).
#[test]
fn a_letter_right_after_another_is_typed_but_reviewing_keys_act() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    assert_eq!(app.focus(), PaneId::Review);
    app.take_ops();
    let t0 = Instant::now();
    let ms = Duration::from_millis(150);
    type_at(&mut app, "yn", t0, ms);
    let ids = hunk_ids();
    let decided: Vec<(String, Decision)> = app
        .take_ops()
        .into_iter()
        .filter_map(|op| match op {
            Op::Review(ReviewOp::Hunk { id, decision }) => Some((id, decision)),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        [
            (ids[0].clone(), Decision::Accept),
            (ids[1].clone(), Decision::Reject)
        ]
    );
    // The map pane: `t` shows the map text, `r` right after it is the start of "try".
    let mut app = started();
    feed(&mut app, session_start());
    focus(&mut app, PaneId::Map);
    app.take_ops();
    type_at(&mut app, "try", t0, ms);
    assert!(!app.take_ops().contains(&Op::Command {
        command: Command::MapRefresh,
        args: String::new()
    }));
    assert_eq!(app.panes().input.text(), "try");
}

/// `?` says which keys ask first and where typing goes.
#[test]
fn help_says_which_keys_act_and_which_ask() {
    let mut app = started();
    focus(&mut app, PaneId::Files);
    press(&mut app, '?');
    let shown = screen(&mut app, 120, 48);
    assert!(
        shown.contains("drop the file from the chat (asks first)"),
        "{shown}"
    );
    assert!(
        shown.contains("go to the message box from any pane"),
        "{shown}"
    );
}

/// At 80x24 the quit question shows whole with its answer keys, however many hunks
/// wait, and while hunks wait the status line says how to quit.
#[test]
fn the_quit_question_and_how_to_quit_fit_at_80_columns() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    press(&mut app, 'y');
    app.handle_terminal(key(KeyCode::Esc));
    let shown = screen(&mut app, 80, 24);
    let footer = shown.lines().last().unwrap();
    assert!(
        footer.contains("enter send · ctrl-j new line · ctrl-c ×2 quits"),
        "{footer}"
    );
    app.handle_terminal(ctrl('c'));
    app.handle_terminal(ctrl('c'));
    let shown = screen(&mut app, 80, 24);
    let footer = shown.lines().last().unwrap();
    assert!(
        footer.contains(
            "quit? 2 hunks to review, 2 accepted not applied: kept for tern --resume [y/N]"
        ),
        "{footer}"
    );
    press(&mut app, 'y');
    assert!(app.quitting());
}

/// After `N` and its reason, the review has the focus on the next *pending* hunk: one
/// already decided is skipped, and the search goes round to the top.
#[test]
fn after_a_reason_the_review_is_on_the_next_pending_hunk() {
    let mut app = started();
    let mut view = proposal();
    view.files[0].hunks[1].decision = Decision::Accept;
    feed(
        &mut app,
        [Event::Proposal(Box::new(view.clone())), Event::Idle],
    );
    press(&mut app, 'N');
    give_reason(&mut app, "too clever");
    assert_eq!(app.focus(), PaneId::Review);
    view.files[0].hunks[0].decision = Decision::Reject;
    feed(&mut app, [Event::Proposal(Box::new(view.clone()))]);
    press(&mut app, 'y');
    let ids = hunk_ids();
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Review(ReviewOp::Hunk {
            id: ids[2].clone(),
            decision: Decision::Accept
        })),
        "the accepted second hunk is skipped"
    );
    // On the last hunk, the next pending one is the first left from the top.
    let mut app = started();
    let mut view = proposal();
    for (i, h) in view.files.iter_mut().flat_map(|f| &mut f.hunks).enumerate() {
        if i != 1 {
            h.decision = Decision::Accept;
        }
    }
    let last = ids.len() - 1;
    view.files
        .iter_mut()
        .flat_map(|f| &mut f.hunks)
        .nth(last)
        .unwrap()
        .decision = Decision::Pending;
    feed(
        &mut app,
        [Event::Proposal(Box::new(view.clone())), Event::Idle],
    );
    press(&mut app, 'G');
    press(&mut app, 'N');
    give_reason(&mut app, "no");
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Command {
            command: Command::Reject,
            args: format!("{} no", ids[last])
        })
    );
    view.files
        .iter_mut()
        .flat_map(|f| &mut f.hunks)
        .nth(last)
        .unwrap()
        .decision = Decision::Reject;
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    app.handle_terminal_at(
        key(KeyCode::Char('y')),
        Instant::now() + Duration::from_secs(2),
    );
    assert_eq!(
        app.take_ops().last(),
        Some(&Op::Review(ReviewOp::Hunk {
            id: ids[1].clone(),
            decision: Decision::Accept
        }))
    );
}

/// Inside a changed line, the words that changed against its pair are marked (the
/// line's own colour as their background), and the words both share are not.
#[test]
fn the_words_that_changed_inside_a_line_are_marked() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    let buf = screen_buffer(&mut app, 160, 48);
    let theme = tern::tui::Theme::default_theme();
    let cell_bg = |row_text: &str, word: &str| {
        let area = buf.area;
        for y in area.top()..area.bottom() {
            let row: String = (area.left()..area.right())
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            if row.contains(row_text)
                && let Some(byte) = row.find(word)
            {
                let x = row.get(..byte).unwrap().chars().count() as u16;
                return buf[(area.left() + x, y)].bg;
            }
        }
        panic!("no {row_text:?} on the screen");
    };
    let added = "+         \"\"\"Takes";
    let removed = "-         \"\"\"Takes";
    assert_eq!(cell_bg(added, "never"), theme.c.added);
    assert_eq!(cell_bg(added, "Takes"), theme.c.added_bg);
    assert_eq!(cell_bg(removed, "shelf."), theme.c.removed);
    assert_eq!(cell_bg(removed, "Takes"), theme.c.removed_bg);
}

/// The focused review takes the whole width below 150 columns (at 120 its middle
/// column would be 54 wide), and `z` switches that, at any width.
#[test]
fn the_focused_review_takes_the_whole_width_when_narrow_or_zoomed() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    assert_eq!(app.focus(), PaneId::Review);
    let row = |shown: &str, n: usize| shown.lines().nth(n).unwrap().trim_matches('"').to_string();
    let narrow = screen(&mut app, 120, 40);
    assert!(row(&narrow, 1).starts_with("┏ Review"), "{narrow}");
    assert!(!narrow.contains("Files ·"), "{narrow}");
    let wide = screen(&mut app, 160, 48);
    assert!(
        wide.contains("Files ·") && wide.contains("┏ Review"),
        "{wide}"
    );
    assert!(!row(&wide, 1).starts_with("┏ Review"));
    press(&mut app, 'z');
    let zoomed = screen(&mut app, 160, 48);
    assert!(row(&zoomed, 1).starts_with("┏ Review"), "{zoomed}");
    assert!(!zoomed.contains("Files ·"));
    let unzoomed = screen(&mut app, 120, 40);
    assert!(
        unzoomed.contains("Files ·"),
        "z flips the narrow default too"
    );
    app.handle_terminal_at(
        key(KeyCode::Char('z')),
        Instant::now() + Duration::from_secs(2),
    );
    assert!(screen(&mut app, 160, 48).contains("Files ·"));
    // Back to the chat: the columns are back.
    app.handle_terminal(key(KeyCode::Esc));
    assert!(screen(&mut app, 120, 40).contains("Files ·"));
}

/// After `/undo` took back the commit the review says was applied, the review says it
/// was undone; another commit's undo leaves it as it was.
#[test]
fn the_review_says_when_its_applied_commit_was_undone() {
    let applied = || Event::Applied {
        files: vec!["shop/inventory.py".into()],
        accepted: 4,
        rejected: 0,
        commit: Some("5bbbba2".into()),
        message: "fix: refuse to remove more than there is".into(),
        failed: vec![],
        held: 0,
        lost: 0,
    };
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    press(&mut app, 'A');
    feed(&mut app, [applied(), Event::Idle]);
    focus(&mut app, PaneId::Review);
    let shown = screen(&mut app, 160, 48);
    assert!(
        shown.contains("Applied 4 hunks to 1 file · commit 5bbbba2"),
        "{shown}"
    );
    assert!(!shown.contains("undone"));
    feed(
        &mut app,
        [Event::Undone {
            commits: vec!["0123456789abcdef0123456789abcdef01234567".into()],
        }],
    );
    assert!(!screen(&mut app, 160, 48).contains("undone"));
    feed(
        &mut app,
        [Event::Undone {
            commits: vec!["5bbbba2c0ffee5bbbba2c0ffee5bbbba2c0ffee0".into()],
        }],
    );
    let shown = screen(&mut app, 160, 48);
    assert!(
        shown.contains("↶ undone: Applied 4 hunks to 1 file · commit 5bbbba2"),
        "{shown}"
    );
}

/// Issue 24 (regress-4 #1): a `y` typed within the typing window of the letter that
/// asked is typed, never the answer: "rye", "fyi", "eye", "key", "dye" and " yes" at
/// 150 ms a key leave exactly that in the box, and nothing runs, is added, toggled,
/// dropped or discarded. The engine's question for `r` that comes while the keys are
/// typed goes away, and one that comes after a burst is declined at once.
#[test]
fn a_y_typed_right_after_the_letter_that_asked_is_typing_not_yes() {
    let ms = Duration::from_millis(150);
    let run_question = || Event::ConfirmCommand {
        command: "pytest -x tests".into(),
        purpose: tern::engine::protocol::CommandPurpose::Run,
        reason: None,
    };
    let acted = |op: &Op| {
        !matches!(
            op,
            Op::MapWhy { .. } | Op::RunSuggested { .. } | Op::AnswerCommand { run: false }
        )
    };
    for (pane, word) in [
        (PaneId::Chat, "rye"),
        (PaneId::Chat, "fyi"),
        (PaneId::Files, "eye"),
        (PaneId::Files, "key"),
        (PaneId::Files, "dye"),
        (PaneId::Files, " yes"),
        (PaneId::Review, "dye"),
    ] {
        let mut app = needing();
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        focus(&mut app, pane);
        app.take_ops();
        let t0 = Instant::now();
        let mut ops = Vec::new();
        for (i, c) in word.chars().enumerate() {
            app.handle_terminal_at(key(KeyCode::Char(c)), t0 + ms * i as u32);
            let now = app.take_ops();
            // The engine asks as soon as `r` hands it the command.
            if now.iter().any(|op| matches!(op, Op::RunSuggested { .. })) {
                feed(&mut app, [run_question()]);
            }
            ops.extend(now);
        }
        assert_eq!(app.panes().input.text(), word, "{pane:?} {word:?}");
        ops.extend(app.take_ops());
        assert!(!ops.iter().any(acted), "{pane:?} {word:?}: {ops:?}");
        assert!(
            !screen(&mut app, 120, 24).contains("[y/N]"),
            "{pane:?} {word:?}: no question is left open"
        );
        // Typed as a burst, the engine's question comes after the keys: it is declined.
        if word == "rye" {
            let mut app = needing();
            focus(&mut app, pane);
            app.take_ops();
            type_at(&mut app, word, t0, Duration::ZERO);
            feed(&mut app, [run_question()]);
            press(&mut app, 'y');
            assert_eq!(app.panes().input.text(), "ryey");
            let ops = app.take_ops();
            assert!(
                ops.contains(&Op::AnswerCommand { run: false })
                    && !ops.contains(&Op::AnswerCommand { run: true }),
                "{ops:?}"
            );
        }
    }
    // After a pause, `y` answers.
    let mut app = needing();
    focus(&mut app, PaneId::Files);
    app.take_ops();
    let t0 = Instant::now();
    app.handle_terminal_at(key(KeyCode::Char('d')), t0);
    app.handle_terminal_at(
        key(KeyCode::Char('y')),
        t0 + tern::tui::typing::TYPING_WINDOW,
    );
    assert!(
        app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::DropFile { .. })),
        "a y after a pause answers"
    );
}

/// Regress-4 #3: the review drew no tabs, so `a<TAB>b` replaced by `ab` showed two
/// rows that look the same. A tab is expanded to the next tab stop, and the word marks
/// see it.
#[test]
fn a_tab_in_a_hunk_is_shown_and_marked_as_whitespace() {
    use tern::diff::LineKind;
    let mut proposal = proposal();
    let lines = &mut proposal.files[0].hunks[0].lines;
    let removed = lines
        .iter()
        .position(|l| l.kind == LineKind::Removed)
        .unwrap();
    let added = removed
        + lines[removed..]
            .iter()
            .position(|l| l.kind == LineKind::Added)
            .unwrap();
    lines[removed].text = "a\tb stays".into();
    lines[added].text = "ab stays".into();
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal))]);
    let buf = screen_buffer(&mut app, 160, 48);
    let theme = tern::tui::Theme::default_theme();
    let find = |text: &str| {
        let area = buf.area;
        (area.top()..area.bottom()).find_map(|y| {
            let row: String = (area.left()..area.right())
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            let byte = row.find(text)?;
            let x = row.get(..byte).unwrap().chars().count() as u16;
            Some(buf[(area.left() + x, y)].bg)
        })
    };
    let shown = screen(&mut app, 160, 48);
    assert_eq!(
        find("- a   b stays"),
        Some(theme.c.removed_bg),
        "the tab is drawn as spaces: {shown}"
    );
    assert_eq!(find("a   b stays"), Some(theme.c.removed), "and marked");
    assert_eq!(find("ab stays"), Some(theme.c.added), "{shown}");
}

/// Regress-4 #5: `/` and `@` always go to the message box, so `[keys]` bound to them
/// is refused at start and said; the action keeps its key, and `?` lists that one.
#[test]
fn a_key_that_always_types_is_refused_and_help_lists_the_real_one() {
    let scopes = tern::tui::app::Panes::scopes();
    let keys = std::collections::BTreeMap::from([("accept".to_string(), "/".to_string())]);
    let (keymap, warnings) = tern::tui::Keymap::from_config(&keys, &scopes);
    assert_eq!(
        warnings,
        [
            "[keys] accept: / always types (it goes to the message box from any pane), so accept keeps y"
        ]
    );
    let mut app = reviewing_with(keymap);
    press(&mut app, '?');
    let help = screen(&mut app, 120, 40);
    assert!(
        help.lines()
            .any(|l| l.contains("accept") && l.contains(" y ")),
        "{help}"
    );
    assert!(!help.lines().any(|l| l.contains("/   accept")), "{help}");
    app.handle_terminal(key(KeyCode::Esc));
    press(&mut app, 'y');
    assert_eq!(app.take_ops(), [first_hunk(Decision::Accept)]);
}

/// Regress-4 #4: a sentence typed in the review never works it. "All good" accepted
/// every hunk (`A`), scrolled (`l l`) and sent "l good"; "yes no" accepted a hunk and
/// opened the editor (`e`). Once a key proves the burst is typing, what its keys decided
/// is taken back and the whole burst is typed; the editor never opens and nothing is
/// discarded from inside one. At 150 ms a key and as one burst.
#[test]
fn a_sentence_typed_in_the_review_is_typed_and_decides_nothing() {
    for step in [Duration::from_millis(150), Duration::ZERO] {
        for sentence in ["All good\n", "yes no", "just do it", "dye"] {
            let mut app = started();
            feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
            assert_eq!(app.focus(), PaneId::Review);
            app.take_ops();
            let t0 = Instant::now();
            for (i, c) in sentence.chars().enumerate() {
                let code = match c {
                    '\n' => KeyCode::Enter,
                    c => KeyCode::Char(c),
                };
                app.handle_terminal_at(key(code), t0 + step * i as u32);
            }
            let ops = app.take_ops();
            // What the engine is left with: every hunk as it was, pending.
            let mut decisions: std::collections::BTreeMap<String, Decision> = hunk_ids()
                .into_iter()
                .map(|id| (id, Decision::Pending))
                .collect();
            for op in &ops {
                match op {
                    Op::Review(ReviewOp::Hunk { id, decision }) => {
                        decisions.insert(id.clone(), *decision);
                    }
                    Op::Review(ReviewOp::All { decision }) => {
                        decisions.values_mut().for_each(|d| *d = *decision)
                    }
                    Op::Review(other) => panic!("{sentence:?} {step:?}: {other:?} in {ops:?}"),
                    Op::HunkText { .. } => panic!("{sentence:?}: the editor was asked for"),
                    _ => {}
                }
            }
            assert!(
                decisions.values().all(|d| *d == Decision::Pending),
                "{sentence:?} {step:?}: {decisions:?} from {ops:?}"
            );
            assert!(app.take_editor_request().is_none(), "{sentence:?}");
            match sentence.strip_suffix('\n') {
                Some(sent) => assert!(
                    ops.contains(&Op::Submit { text: sent.into() }),
                    "{sentence:?} {step:?}: {ops:?}"
                ),
                None => assert_eq!(app.panes().input.text(), sentence, "{sentence:?} {step:?}"),
            }
            let shown = screen(&mut app, 120, 40);
            assert!(!shown.contains("[y/N]"), "{sentence:?}: no question open");
        }
    }
}

/// "As I said" in the review: `A` accepts everything and `s` splits the hunk before the
/// space shows it was typing. The split cannot be taken back, but its parts' accept is:
/// the old id, which the engine takes for the parts, goes back to pending.
#[test]
fn a_split_inside_a_typed_burst_leaves_its_parts_pending() {
    let mut app = started();
    // Ids unique across the files, as the engine's are.
    let mut initial = proposal();
    for (f, file) in initial.files.iter_mut().enumerate() {
        for (h, hunk) in file.hunks.iter_mut().enumerate() {
            hunk.id = format!("{f}{h}00000");
        }
    }
    let ids: Vec<String> = initial
        .files
        .iter()
        .flat_map(|f| f.hunks.iter().map(|h| h.id.clone()))
        .collect();
    feed(&mut app, [Event::Proposal(Box::new(initial.clone()))]);
    app.take_ops();
    let t0 = Instant::now();
    let ms = Duration::from_millis(150);
    type_at(&mut app, "As", t0, ms);
    // The engine's answer to the split comes before the next key: two parts, accepted.
    let mut view = initial;
    let whole = view.files[0].hunks.remove(0);
    for (at, part) in ["aaaaaaa", "bbbbbbb"].into_iter().enumerate() {
        let mut hunk = whole.clone();
        hunk.id = part.into();
        hunk.decision = Decision::Accept;
        view.files[0].hunks.insert(at, hunk);
    }
    for h in view.files.iter_mut().flat_map(|f| &mut f.hunks) {
        h.decision = Decision::Accept;
    }
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    type_at(&mut app, " I said", t0 + ms * 2, ms);
    assert_eq!(app.panes().input.text(), "As I said");
    let ops = app.take_ops();
    let reset: Vec<&String> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Review(ReviewOp::Hunk {
                id,
                decision: Decision::Pending,
            }) => Some(id),
            _ => None,
        })
        .collect();
    assert!(ids.iter().all(|id| reset.contains(&id)), "{ids:?}: {ops:?}");
    assert!(
        ops.iter()
            .any(|op| matches!(op, Op::Review(ReviewOp::Split { id }) if *id == ids[0])),
        "{ops:?}"
    );
}

/// `/sessions` asks the engine for the list and shows it in a picker (the session open
/// here marked, one that cannot be read said so and not switched to); Enter switches
/// to the one chosen, asking first when hunks are pending (kept with the session
/// left); the engine's next `Ready` starts the chat over for the session switched to.
#[test]
fn the_sessions_picker_switches_and_asks_first_with_pending_hunks() {
    use tern::engine::persist::Listed;
    use tern::engine::protocol::{Shown, ShownKind};
    let listed = |id: &str, title: &str, unreadable: Option<&str>| Listed {
        id: id.into(),
        dir: std::path::PathBuf::from("/nowhere").join(id),
        last_active: std::time::SystemTime::now(),
        title: title.into(),
        pending_hunks: 0,
        failed_hunks: 0,
        cost: 0.25,
        unreadable: unreadable.map(str::to_string),
    };
    let sessions = || Event::Sessions {
        sessions: vec![
            listed("aaaaaaaa", "where are prices set?", None),
            Listed {
                pending_hunks: 1,
                ..listed("bbbbbbbb", "about apples", None)
            },
            listed("cccccccc", "", Some("expected value at line 1 column 1")),
        ],
        current: Some("aaaaaaaa".into()),
    };
    let switch = |id: &str, keep_pending| Op::SwitchSession {
        id: id.into(),
        keep_pending,
    };
    let mut app = started();
    feed(
        &mut app,
        turn("where are prices set?", "In `shop/pricing.py`.", 40),
    );
    type_text(&mut app, "/sessions");
    app.handle_terminal(key(KeyCode::Enter));
    let ops = app.take_ops();
    assert!(
        ops.contains(&Op::Command {
            command: Command::Sessions,
            args: String::new()
        }),
        "{ops:?}"
    );
    feed(&mut app, [sessions()]);
    let text = screen(&mut app, 160, 48);
    for expected in [
        "aaaaaaaa  just now",
        "(this one)",
        "bbbbbbbb  just now      about apples",
        "cccccccc  just now      (cannot be read: expected value",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    // At 80 columns the first message is shortened, so the hunks pending and the cost
    // show whole (this one's mark too).
    let narrow = screen(&mut app, 80, 24);
    assert!(narrow.contains("about apples"), "{narrow}");
    assert!(narrow.contains("1 hunk pending"), "{narrow}");
    assert_eq!(narrow.matches("$0.2500").count(), 3, "{narrow}");
    assert!(narrow.contains("$0.2500  (this one)"), "{narrow}");
    // The newest other session is chosen first.
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(app.take_ops(), [switch("bbbbbbbb", false)]);

    // Neither the one that cannot be read nor this one: said, the picker stays.
    feed(&mut app, [sessions()]);
    app.handle_terminal(key(KeyCode::Down));
    app.handle_terminal(key(KeyCode::Enter));
    assert!(app.take_ops().is_empty());
    let text = screen(&mut app, 160, 48);
    assert!(text.contains("session cccccccc cannot be read"), "{text}");
    app.handle_terminal(key(KeyCode::Home));
    app.handle_terminal(key(KeyCode::Enter));
    assert!(app.take_ops().is_empty());
    assert!(
        screen(&mut app, 160, 48).contains("session aaaaaaaa is the one open here"),
        "{text}"
    );
    app.handle_terminal(key(KeyCode::Esc));
    assert!(!screen(&mut app, 160, 48).contains("bbbbbbbb"));

    // Hunks to review: asked first; no keeps the session (the letter is typed, as any
    // key but the answer is), yes keeps them with it.
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    for (pause, (answer, ops)) in [('n', vec![]), ('y', vec![switch("bbbbbbbb", true)])]
        .into_iter()
        .enumerate()
    {
        feed(&mut app, [sessions()]);
        app.handle_terminal(key(KeyCode::Enter));
        assert!(app.take_ops().is_empty(), "asked first");
        let text = screen(&mut app, 160, 48);
        assert!(
            text.contains("switch to session bbbbbbbb?")
                && text.contains("to review: kept with this session for tern --resume"),
            "{text}"
        );
        let later = Instant::now() + tern::tui::typing::TYPING_WINDOW * (2 * pause as u32 + 1);
        app.handle_terminal_at(key(KeyCode::Char(answer)), later);
        assert_eq!(app.take_ops(), ops, "{answer}");
        assert_eq!(app.panes().input.text(), "n");
    }

    // The engine switched: the chat starts over with the other conversation.
    feed(
        &mut app,
        [
            Event::Ready {
                root: "/home/dev/shop".into(),
                model: "gpt-4o".into(),
                mode: tern::engine::ChatMode::Code,
                session: Some("bbbbbbbb".into()),
            },
            Event::Resumed {
                transcript: vec![Shown {
                    kind: ShownKind::User,
                    text: "about apples".into(),
                }],
                unsent: None,
            },
        ],
    );
    let text = screen(&mut app, 160, 48);
    assert!(text.contains("about apples"), "{text}");
    assert!(!text.contains("where are prices set?"), "{text}");
}

/// "No way" typed in the review: `N` wrote `/reject ID ` into the box and the rest of
/// the sentence became the reason ("/reject ID o way"). A key right after `N`, the box
/// as `N` left it, shows the sentence: the box holds what was typed, nothing rejected.
#[test]
fn no_way_typed_in_the_review_is_typed_and_rejects_nothing() {
    for step in [Duration::from_millis(150), Duration::ZERO] {
        let mut app = started();
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        assert_eq!(app.focus(), PaneId::Review);
        app.take_ops();
        type_at(&mut app, "No way", Instant::now(), step);
        assert_eq!(app.panes().input.text(), "No way", "{step:?}");
        let ops = app.take_ops();
        assert!(
            !ops.iter()
                .any(|op| matches!(op, Op::Review(_) | Op::Command { .. })),
            "{step:?}: {ops:?}"
        );
        // `y N` works the review: a rejection with its reason after a pause.
        let mut app = started();
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        app.take_ops();
        let t0 = Instant::now();
        type_at(&mut app, "yN", t0, step);
        let later = t0 + tern::tui::typing::TYPING_WINDOW * 2;
        type_at(&mut app, "no", later, step);
        assert_eq!(
            app.panes().input.text(),
            format!("/reject {} no", hunk_ids()[1]),
            "{step:?}"
        );
    }
}

/// A held key is no start of a word: `j j u` in the review types `u`, where `j u`
/// types `ju` (`u` is no key of the review's). `Typing::took` ran after the memory was
/// forgotten, so no key was ever seen as repeated and `j j u` typed `ju`.
#[test]
fn a_held_key_before_a_typed_letter_is_not_typed() {
    for (keys, typed) in [("ju", "ju"), ("jju", "u"), ("jjju", "u")] {
        let mut app = started();
        feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
        assert_eq!(app.focus(), PaneId::Review);
        type_at(&mut app, keys, Instant::now(), Duration::from_millis(100));
        assert_eq!(app.panes().input.text(), typed, "{keys:?}");
    }
}

/// A key that turns out to be typing leaves nothing it said: `fine` typed in the review
/// of a proposal with no failed edit kept the `f`'s "no failed edit and no note to show"
/// in the status line under the typed text.
#[test]
fn a_letter_that_turned_out_to_be_typing_leaves_no_flash() {
    let mut app = started();
    let mut view = proposal();
    view.failures.clear();
    view.shell_commands.clear();
    feed(&mut app, [Event::Proposal(Box::new(view))]);
    assert_eq!(app.focus(), PaneId::Review);
    press(&mut app, 'f');
    let shown = screen(&mut app, 80, 24);
    assert!(
        shown.contains("no failed edit and no note to show"),
        "{shown}"
    );
    type_at(&mut app, "ine", Instant::now(), Duration::from_millis(100));
    let shown = screen(&mut app, 80, 24);
    assert_eq!(app.panes().input.text(), "fine");
    assert!(!shown.contains("no failed edit"), "{shown}");
}

/// `/sessions ID` with hunks pending checks the id before it asks (no question about a
/// session that does not exist); a switch question left unanswered does not swallow the
/// next key typed after a pause: it is typed (the `/` of the next command).
#[test]
fn a_typed_switch_checks_the_id_first_and_an_unanswered_question_lets_keys_through() {
    let mut app = started();
    feed(&mut app, [Event::Proposal(Box::new(proposal()))]);
    app.take_ops();
    type_text(&mut app, "/sessions zzzz");
    app.handle_terminal(key(KeyCode::Enter));
    let text = screen(&mut app, 160, 48);
    assert!(!text.contains("switch to session"), "not asked: {text}");
    assert!(
        text.contains("no session zzzz in this repository"),
        "{text}"
    );
    assert!(
        !app.take_ops()
            .iter()
            .any(|op| matches!(op, Op::SwitchSession { .. })),
    );

    let listed = tern::engine::persist::Listed {
        id: "bbbbbbbb".into(),
        dir: std::path::PathBuf::from("/nowhere/bbbbbbbb"),
        last_active: std::time::SystemTime::now(),
        title: "about apples".into(),
        pending_hunks: 0,
        failed_hunks: 0,
        cost: 0.0,
        unreadable: None,
    };
    feed(
        &mut app,
        [Event::Sessions {
            sessions: vec![listed],
            current: None,
        }],
    );
    app.handle_terminal(key(KeyCode::Enter));
    assert!(screen(&mut app, 160, 48).contains("switch to session bbbbbbbb?"));
    let later = Instant::now() + tern::tui::typing::TYPING_WINDOW;
    app.handle_terminal_at(key(KeyCode::Char('/')), later);
    assert_eq!(app.panes().input.text(), "/");
    assert!(app.take_ops().is_empty());
    assert!(!screen(&mut app, 160, 48).contains("switch to session"));
}

/// The Budget pane as a control, keys pressed `TYPING_WINDOW` apart (each a key of its
/// own), the screen drawn after each as the workspace does.
struct Control {
    app: App,
    at: Instant,
}

impl Control {
    /// The Budget pane focused, with `history` in its report.
    fn new(history: &[tern::llm::Message]) -> Control {
        let mut app = started();
        feed(&mut app, [Event::Budget(Box::new(budget("", history)))]);
        focus(&mut app, PaneId::Gauge);
        screen(&mut app, 80, 24);
        app.take_ops();
        Control {
            app,
            at: Instant::now(),
        }
    }

    fn press(&mut self, c: char) -> String {
        self.at += tern::tui::typing::TYPING_WINDOW;
        self.app.handle_terminal_at(key(KeyCode::Char(c)), self.at);
        screen(&mut self.app, 80, 24)
    }

    /// The status line's question and the ops a `y` after it sends.
    fn ask_and_answer(&mut self, c: char) -> (String, Vec<Op>) {
        let shown = self.press(c);
        assert!(self.app.take_ops().is_empty(), "nothing before the answer");
        let question = shown
            .lines()
            .find(|l| l.contains("[y/N]"))
            .unwrap_or_else(|| panic!("no question after {c:?}:\n{shown}"))
            .trim()
            .to_string();
        self.press('y');
        (question, self.app.take_ops())
    }
}

#[test]
fn the_budget_pane_drops_a_file_or_makes_it_read_only_after_saying_what_it_frees() {
    let report = budget("", &[]);
    let editable: Vec<String> = report
        .files
        .iter()
        .filter(|f| f.section == tern::engine::protocol::Section::ChatFiles)
        .map(|f| f.path.clone())
        .collect();
    let mut c = Control::new(&[]);
    // The first row a key acts on is selected, and the footer says its keys.
    let shown = c.press('f');
    assert!(
        shown.contains("d drop all · f each one · j/↓/k/↑ select"),
        "{shown}"
    );
    let shown = c.press('j');
    assert!(shown.contains("d drop · j/↓/k/↑ select"), "{shown}");
    // The only read-only file: dropping it frees its section's framing too.
    let (question, ops) = c.ask_and_answer('d');
    let section = report.section(tern::engine::protocol::Section::ReadonlyFiles);
    assert!(
        section
            > report
                .files
                .iter()
                .find(|f| f.path == "README.md")
                .unwrap()
                .tokens
    );
    assert!(
        question.contains(&format!(
            "drop README.md from the chat? frees {} tok [y/N]",
            tern::engine::protocol::thousands(section)
        )),
        "{question}"
    );
    assert_eq!(
        ops,
        [Op::DropFile {
            path: "README.md".into()
        }]
    );
    // Past the map's row to the editable files: each one, then the section.
    c.press('j');
    c.press('j');
    let shown = c.press('j');
    assert!(shown.contains("d drop · r read-only"), "{shown}");
    let (question, ops) = c.ask_and_answer('r');
    assert!(
        question.contains(&format!(
            "make {} read-only? frees 0 tok: the model still reads it [y/N]",
            editable[0]
        )),
        "{question}"
    );
    assert_eq!(
        ops,
        [Op::SetFileMode {
            path: editable[0].clone(),
            mode: FileMode::ReadOnly
        }]
    );
    c.press('k');
    let (question, ops) = c.ask_and_answer('d');
    assert!(
        question.contains(&format!(
            "drop the 2 editable files? frees {} tok [y/N]",
            tern::engine::protocol::thousands(
                report.section(tern::engine::protocol::Section::ChatFiles)
            )
        )),
        "{question}"
    );
    let drops: Vec<Op> = editable
        .iter()
        .map(|path| Op::DropFile { path: path.clone() })
        .collect();
    assert_eq!(ops, drops);
}

#[test]
fn the_budget_pane_shrinks_or_turns_off_the_map_and_summarizes_the_history() {
    let history = [
        tern::llm::Message::user("where are prices set?"),
        tern::llm::Message::assistant("In `shop/pricing.py`."),
    ];
    let mut c = Control::new(&history);
    let map = map().tokens;
    let shown = c.press('j');
    assert!(shown.contains("s halve · d off"), "{shown}");
    let (question, ops) = c.ask_and_answer('s');
    assert!(
        question.contains(&format!(
            "halve the repo map, {map} → at most {} tokens? frees at least {} tok [y/N]",
            map / 2,
            map - map / 2
        )),
        "{question}"
    );
    assert_eq!(
        ops,
        [Op::Command {
            command: Command::MapTokens,
            args: (map / 2).to_string()
        }]
    );
    let (question, ops) = c.ask_and_answer('d');
    assert!(
        question.contains("turn the repo map off? frees "),
        "{question}"
    );
    assert_eq!(
        ops,
        [Op::Command {
            command: Command::MapTokens,
            args: "0".into()
        }]
    );
    let shown = c.press('j');
    assert!(shown.contains("c summarize now"), "{shown}");
    let (question, ops) = c.ask_and_answer('c');
    assert!(question.contains("summarize the history ("), "{question}");
    assert_eq!(
        ops,
        [Op::Command {
            command: Command::Compact,
            args: String::new()
        }]
    );
    // A key that does nothing on the selected row is the start of a message.
    c.press('s');
    assert!(c.app.take_ops().is_empty());
    assert_eq!(c.app.panes().input.text(), "s");
}

/// The typing rule holds in the Budget pane: words typed there land in the box whole,
/// nothing dropped, shrunk or summarized, and no question is left open.
#[test]
fn words_typed_in_the_budget_pane_act_on_no_row() {
    let history = [
        tern::llm::Message::user("hi"),
        tern::llm::Message::assistant("hello"),
    ];
    for (row, word) in [(0, "dye"), (2, "sure"), (2, "dry"), (3, "cry"), (3, "cds")] {
        let mut c = Control::new(&history);
        for _ in 0..row {
            c.press('j');
        }
        c.app.take_ops();
        type_at(
            &mut c.app,
            word,
            c.at + Duration::from_secs(2),
            Duration::from_millis(150),
        );
        assert_eq!(c.app.panes().input.text(), word, "{row} {word:?}");
        assert!(
            c.app
                .take_ops()
                .iter()
                .all(|op| matches!(op, Op::Draft { .. })),
            "{word:?}"
        );
        assert!(!screen(&mut c.app, 80, 24).contains("[y/N]"), "{word:?}");
    }
}

#[test]
fn the_budget_pane_drops_a_command_output_through_drop_output() {
    use tern::engine::protocol::Section;
    let mut report = budget("", &[]);
    for row in report.sections.iter_mut() {
        if row.section == Section::CommandOutput {
            row.tokens = 1_234;
        }
    }
    report.files.push(tern::context::FileRow {
        path: "$ make lint".into(),
        section: Section::CommandOutput,
        tokens: 1_200,
        percent: 0.9,
        cost: 0.0,
    });
    let mut c = Control::new(&[]);
    feed(&mut c.app, [Event::Budget(Box::new(report))]);
    c.press('f');
    // The last row: past the end the selection stays.
    for _ in 0..9 {
        c.press('j');
    }
    let (question, ops) = c.ask_and_answer('d');
    assert!(
        // The only output: its section's framing goes with it.
        question.contains("drop the output of `make lint`? frees 1,234 tok [y/N]"),
        "{question}"
    );
    assert_eq!(
        ops,
        [Op::Command {
            command: Command::DropOutput,
            args: "make lint".into()
        }]
    );
    c.press('k');
    let (question, ops) = c.ask_and_answer('d');
    assert!(
        question.contains("drop 1 command output? frees 1,234 tok [y/N]"),
        "{question}"
    );
    assert_eq!(
        ops,
        [Op::Command {
            command: Command::DropOutput,
            args: String::new()
        }]
    );
}
