//! The chat and its message box, by key scripts (issue 24, "Chat and context"): pastes,
//! copying any message, the files a reply needs, where feedback shows at 80x24, edit
//! blocks in any mode, repo map paths, the `/` command list.

use crate::tui_support::*;
use crossterm::event::KeyCode;
use tern::tui::{App, PaneId};

fn started() -> App {
    let mut app = app();
    feed(&mut app, session_start());
    app.take_ops();
    app
}

/// The rows of a screen as `TestBackend` prints them, without the quotes.
fn rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| l.trim_matches('"').to_string())
        .collect()
}

/// The `/` list sits inside the chat: the chat's bottom border is whole under it, and
/// a description cut to fit ends in `…`.
#[test]
fn the_command_list_keeps_the_chat_border_and_marks_what_it_cuts() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = started();
        feed(&mut app, turn("hello", "Hi.", 10));
        type_text(&mut app, "/re");
        assert_eq!(app.focus(), PaneId::Input);
        let rows = rows(&screen(&mut app, w, h));
        let message = rows
            .iter()
            .position(|r| r.contains(" Message "))
            .expect("the message box");
        let border = &rows[message - 1];
        let inside = border
            .trim_start_matches(|c| c != '╰')
            .trim_end_matches(|c| c != '╯');
        assert!(
            inside.starts_with('╰')
                && inside.ends_with('╯')
                && inside
                    .chars()
                    .skip(1)
                    .take(inside.chars().count() - 2)
                    .all(|c| c == '─'),
            "the chat's bottom border is drawn over at {w}x{h}: {border:?}"
        );
        let listed: Vec<&String> = rows.iter().filter(|r| r.contains("/review")).collect();
        assert_eq!(listed.len(), 1, "{rows:#?}");
        if w == 80 {
            assert!(
                listed[0].trim_end_matches(['│', ' ', '┃']).ends_with('…'),
                "a cut description ends in …: {:?}",
                listed[0]
            );
        }
    }
}

/// In ask mode a reply holding a SEARCH/REPLACE block without a fence draws it as
/// code, as in code mode, not as `│ │ │ │` quotes.
#[test]
fn a_bare_edit_block_is_code_in_ask_mode() {
    let mut app = started();
    feed(
        &mut app,
        [tern::engine::Event::Mode {
            mode: tern::engine::ChatMode::Ask,
        }],
    );
    let reply = "Change it so:\n\nshop/cli.py\n<<<<<<< SEARCH\nold = 1\n=======\nnew = 2\n>>>>>>> REPLACE\n\nThat's all.";
    feed(&mut app, turn("how?", reply, 7));
    for (w, h) in [(80, 24), (160, 48)] {
        let text = screen(&mut app, w, h);
        assert!(text.contains("▎ >>>>>>> REPLACE"), "{text}");
        assert!(
            text.contains("- old = 1") && text.contains("+ new = 2"),
            "{text}"
        );
        assert!(!text.contains("│ │ │"), "quotes: {text}");
    }
}
