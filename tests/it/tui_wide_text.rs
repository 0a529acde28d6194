//! CJK, emoji (with ZWJ and variation selectors) and combining marks in chat text, file
//! names, the model's name and a proposal are drawn at every terminal size, down to one
//! cell, without a panic, without a character cut or pushed past the edge, and with the
//! columns each takes on a terminal.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use crate::tui_support::*;
use crate::unicode::wild_text;
use crossterm::event::KeyCode;
use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tern::engine::protocol::{FileProposalView, FileStatus, ProposalView};
use tern::engine::{ChatMode, Event, FileEntry, FileMode};
use tern::llm::Message;
use tern::tui::{App, PaneId};
use unicode_width::UnicodeWidthStr;

const MODEL_NAME: &str = "通义千问-🦀";
const CJK_FILE: &str = "src/日本語.rs";
const ACCENT_FILE: &str = "docs/café.md";

const QUESTION: &str = "日本語のコメントを追加して 🎉 (e\u{301}té, 👩‍💻, ❤️)";
const WIDE_REPLY: &str = "了解しました。全角の文字と絵文字 🎉👩‍💻🏳️‍🌈 を含む説明です。\
長い行はちゃんと折り返されるべきです、漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字。\n\n\
src/日本語.rs\n```rust\n<<<<<<< SEARCH\nfn 挨拶() {}\n=======\n/// こんにちは 🌏\nfn 挨拶() {}\n>>>>>>> REPLACE\n```\n";

/// A file list, a streamed reply and a proposal, all in wide and combined characters.
fn wide_session() -> App {
    let mut app = app();
    let mut files = files();
    for path in [CJK_FILE, ACCENT_FILE, "assets/🎉/ｆｕｌｌｗｉｄｔｈ.txt"] {
        files.push(FileEntry {
            path: path.into(),
            mode: FileMode::Editable,
            tokens: 12_345,
            exists: true,
        });
    }
    feed(
        &mut app,
        [
            Event::Ready {
                root: "/home/開発者/ショップ".into(),
                model: MODEL_NAME.into(),
                mode: ChatMode::Code,
                session: None,
            },
            Event::Files { files },
        ],
    );
    // Deltas of 7 bytes split the reply inside characters' neighbours and clusters.
    feed(&mut app, turn(QUESTION, WIDE_REPLY, 7));
    let before = "fn 挨拶() {}\nfn main() { 挨拶(); }\n";
    let after = "/// こんにちは 🌏 👩‍💻\nfn 挨拶() {}\nfn main() { 挨拶(); } // ❤️ e\u{301}\n";
    let proposal = ProposalView {
        files: [CJK_FILE, ACCENT_FILE]
            .iter()
            .map(|path| FileProposalView {
                path: path.to_string(),
                change: FileStatus::Modified,
                hunks: hunks(path, before, after),
                cautions: Vec::new(),
                ignored: None,
            })
            .collect(),
        failures: Vec::new(),
        shell_commands: vec!["echo 完了 🎉".into()],
        written_as: vec![],
    };
    feed(
        &mut app,
        [
            Event::Budget(Box::new(budget(
                "",
                &[Message::user(QUESTION), Message::assistant(WIDE_REPLY)],
            ))),
            Event::Proposal(Box::new(proposal)),
        ],
    );
    app
}

/// The buffer's rows as a terminal shows them: a wide symbol covers the cell after it.
/// Fails if a symbol would run past the right edge.
fn rows(buf: &Buffer) -> Vec<String> {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            let mut row = String::new();
            let mut x = area.left();
            while x < area.right() {
                let symbol = buf[(x, y)].symbol();
                let width = symbol.width().max(1) as u16;
                assert!(
                    x + width <= area.right(),
                    "{symbol:?} at column {x} of row {y} runs past the edge ({})",
                    area.width
                );
                row.push_str(symbol);
                x += width;
            }
            row
        })
        .collect()
}

fn draw_screen(app: &mut App, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    rows(terminal.backend().buffer())
}

fn draw_alone(app: &mut App, id: PaneId, width: u16, height: u16) -> Vec<String> {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    app.draw_pane(id, area, &mut buf);
    rows(&buf)
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

fn sizes() -> Vec<(u16, u16)> {
    let mut sizes = vec![
        (1, 1),
        (2, 2),
        (3, 3),
        (7, 5),
        (80, 24),
        (81, 24),
        (160, 48),
    ];
    sizes.extend((10..=40).step_by(3).map(|w| (w, 12)));
    sizes.extend((1..=12).map(|h| (60, h)));
    sizes
}

#[test]
fn wide_text_draws_at_every_size_without_cutting_a_character() {
    let mut app = wide_session();
    for (w, h) in sizes() {
        draw_screen(&mut app, w, h);
        for id in PaneId::ALL {
            draw_alone(&mut app, id, w, h);
        }
    }
}

/// The file picker and the help stay open when the terminal shrinks under them.
#[test]
fn overlays_draw_at_every_size() {
    let mut app = wide_session();
    focus(&mut app, PaneId::Files);
    let mut slowly = Slowly::new();
    slowly.press(&mut app, key(KeyCode::Char('a')));
    // The filter typed after a pause: at once, it would be typing.
    for c in "日本".chars() {
        slowly.press(&mut app, key(KeyCode::Char(c)));
    }
    assert!(
        draw_screen(&mut app, 80, 24)
            .concat()
            .contains("Add a file")
    );
    for (w, h) in sizes() {
        draw_screen(&mut app, w, h);
    }
    // A query about as wide as a u16 counts: the cursor's column must not overflow.
    app.handle_terminal(crossterm::event::Event::Paste("語".repeat(32_740)));
    for _ in 0..20 {
        app.handle_terminal(crossterm::event::Event::Paste("語".into()));
        draw_screen(&mut app, 80, 24);
    }
    app.handle_terminal(key(KeyCode::Esc));
    focus(&mut app, PaneId::Files);
    app.handle_terminal(key(KeyCode::Char('?')));
    assert!(draw_screen(&mut app, 80, 24).concat().contains("Keys"));
    for (w, h) in sizes() {
        draw_screen(&mut app, w, h);
    }
}

#[test]
fn wide_text_is_shown_where_it_belongs() {
    let mut app = wide_session();
    let chat = draw_alone(&mut app, PaneId::Chat, 100, 40).concat();
    assert!(chat.contains("了解しました。"), "{chat}");
    assert!(chat.contains("🎉"), "{chat}");
    let files = draw_alone(&mut app, PaneId::Files, 60, 12).concat();
    assert!(files.contains(CJK_FILE), "{files}");
    assert!(files.contains(ACCENT_FILE), "{files}");
    let review = draw_alone(&mut app, PaneId::Review, 100, 30).concat();
    assert!(review.contains(CJK_FILE), "{review}");
    assert!(review.contains("こんにちは 🌏"), "{review}");
}

/// Text drawn flush right ends in the last column whatever the characters' widths:
/// the model's name in the tab bar, and a file's token count beside a wide path.
#[test]
fn right_aligned_text_ends_at_the_edge_with_wide_characters() {
    let mut app = wide_session();
    let (w, h) = (80, 24);
    let screen = draw_screen(&mut app, w, h);
    let bar = screen
        .iter()
        .find(|row| row.contains(MODEL_NAME) && row.contains("Chat"))
        .unwrap_or_else(|| panic!("no tab bar with the model's name:\n{}", screen.join("\n")));
    assert_eq!(
        bar.trim_end().width(),
        usize::from(w) - 1,
        "the model's name ends one space before the edge: {bar:?}"
    );
    let files = draw_alone(&mut app, PaneId::Files, 40, 12);
    let counts: Vec<usize> = files
        .iter()
        .filter(|row| row.contains("12,345"))
        .map(|row| row.trim_end().width())
        .collect();
    assert_eq!(counts.len(), 3, "{files:#?}");
    assert!(
        counts.iter().all(|&end| end == counts[0]),
        "token counts line up: {files:#?}"
    );
}

/// Wide characters typed, moved over and deleted in the input box keep its cursor on
/// a character and what is sent is what was left.
#[test]
fn typing_and_editing_wide_text_in_the_input() {
    let mut app = wide_session();
    focus(&mut app, PaneId::Input);
    type_text(&mut app, "日本語🎉e\u{301}x");
    for code in [
        KeyCode::Left,
        KeyCode::Left,
        KeyCode::Backspace,
        KeyCode::Home,
        KeyCode::Right,
        KeyCode::Delete,
        KeyCode::End,
        KeyCode::Left,
    ] {
        app.handle_terminal(key(code));
        for (w, h) in [(80, 24), (12, 6)] {
            draw_screen(&mut app, w, h);
        }
    }
    // Home, Right, Delete removed the second character.
    let input = draw_alone(&mut app, PaneId::Input, 40, 3).concat();
    assert!(input.contains("日語"), "{input}");
    assert!(input.contains('x'), "{input}");
    // A paste wider than a u16 counts, on one line and on many.
    for pasted in ["語".repeat(40_000), "語🎉\n".repeat(20_000)] {
        app.handle_terminal(crossterm::event::Event::Paste(pasted));
        for (w, h) in [(80, 24), (160, 48), (12, 6)] {
            draw_screen(&mut app, w, h);
        }
    }
}

/// How many cells of `buf` hold `symbol`.
fn cells_holding(buf: &Buffer, symbol: &str) -> usize {
    buf.content()
        .iter()
        .filter(|c| c.symbol() == symbol)
        .count()
}

/// An emoji built of several characters (ZWJ sequences, a variation selector) takes
/// the columns a terminal gives it, not the sum of its characters' widths: wrapping
/// that counted characters let ratatui drop the end of every row.
#[test]
fn emoji_sequences_wrap_by_the_columns_they_take() {
    let heart = "❤\u{fe0f}";
    let coder = "👩\u{200d}💻";
    let reply = format!("{} {}", heart.repeat(40), coder.repeat(20));
    let mut app = app();
    feed(&mut app, session_start());
    feed(&mut app, turn("hearts", &reply, usize::MAX));
    for width in [20, 31, 47] {
        let area = Rect::new(0, 0, width, 40);
        let mut buf = Buffer::empty(area);
        app.draw_pane(PaneId::Chat, area, &mut buf);
        rows(&buf);
        assert_eq!(cells_holding(&buf, heart), 40, "at {width} columns");
        assert_eq!(cells_holding(&buf, coder), 20, "at {width} columns");
    }
}

/// The terminal cursor sits right after the last thing typed, whatever its width.
#[test]
fn the_input_cursor_follows_wide_and_combined_characters() {
    let mut app = app();
    feed(&mut app, session_start());
    focus(&mut app, PaneId::Input);
    type_text(&mut app, "❤\u{fe0f}👩\u{200d}💻日e\u{301}x");
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let cursor = terminal.get_cursor_position().unwrap();
    let buf = terminal.backend().buffer();
    let typed_x = (0..80)
        .find(|&x| buf[(x, cursor.y)].symbol() == "x")
        .unwrap_or_else(|| panic!("no x on the cursor's row {}", cursor.y));
    assert_eq!(cursor.x, typed_x + 1);
}

/// A session whose every text is `text`: reply, file names, hunk lines, typed input.
fn session_of(text: &str) -> App {
    let mut app = app();
    let mut files = files();
    files.push(FileEntry {
        path: text.into(),
        mode: FileMode::ReadOnly,
        tokens: 1,
        exists: false,
    });
    feed(
        &mut app,
        [
            Event::Ready {
                root: text.into(),
                model: text.into(),
                mode: ChatMode::Ask,
                session: None,
            },
            Event::Files { files },
        ],
    );
    feed(&mut app, turn(text, text, 5));
    let proposal = ProposalView {
        files: vec![FileProposalView {
            path: text.into(),
            change: FileStatus::Modified,
            hunks: hunks(text, "a\n", &format!("{text}\n")),
            cautions: Vec::new(),
            ignored: None,
        }],
        failures: Vec::new(),
        shell_commands: vec![text.into()],
        written_as: vec![],
    };
    feed(&mut app, [Event::Proposal(Box::new(proposal))]);
    focus(&mut app, PaneId::Input);
    type_text(&mut app, text);
    app
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Any text anywhere, at any size: no panic, no character past the edge.
    #[test]
    fn any_text_draws_at_any_size(text in wild_text(), w in 1u16..130, h in 1u16..50) {
        let mut app = session_of(&text);
        app.handle_terminal(key(KeyCode::Left));
        app.handle_terminal(key(KeyCode::Backspace));
        draw_screen(&mut app, w, h);
        for id in PaneId::ALL {
            draw_alone(&mut app, id, w, h);
        }
    }
}
