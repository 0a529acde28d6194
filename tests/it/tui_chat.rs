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

/// Pastes as a terminal sends them: an 82-line paste with CRLF, CR-only or LF line
/// ends, with and without a last line end.
fn pasted(lines: usize, end: &str, last_end: bool) -> String {
    let text: Vec<String> = (1..=lines)
        .map(|n| format!("    row {n} = compute({n})"))
        .collect();
    let text = text.join(end);
    match last_end {
        true => text + end,
        false => text,
    }
}

/// A paste over ten lines is a `[pasted N lines]` token in the message box, counted
/// right whatever the line ends; Ctrl-X expands it in place, and Enter sends it whole.
#[test]
fn a_long_paste_is_a_counted_token_in_the_box_expandable_and_sent_whole() {
    for end in ["\r\n", "\r", "\n"] {
        for last_end in [true, false] {
            let mut app = started();
            type_text(&mut app, "why does this fail? ");
            app.handle_terminal(crossterm::event::Event::Paste(pasted(82, end, last_end)));
            assert_eq!(
                app.panes().input.text(),
                "why does this fail? [pasted 82 lines]",
                "{end:?} {last_end}"
            );
            let shown = screen(&mut app, 80, 24);
            assert!(
                shown.contains("› why does this fail? [pasted 82 lines]"),
                "{shown}"
            );
            app.handle_terminal(key(KeyCode::Enter));
            let sent = pasted(82, "\n", last_end);
            assert_eq!(
                app.take_ops().last(),
                Some(&tern::engine::Op::Submit {
                    text: format!("why does this fail? {sent}").trim_end().to_string()
                })
            );
        }
    }
    let mut app = started();
    app.handle_terminal(crossterm::event::Event::Paste(pasted(82, "\r", true)));
    type_text(&mut app, " explain");
    // The cursor is not on the token: Ctrl-X expands the last one.
    app.handle_terminal(ctrl('x'));
    assert_eq!(
        app.panes().input.text(),
        format!("{} explain", pasted(82, "\n", true))
    );
    // The box's own count is of lines, not of the rows they wrap into.
    let shown = screen(&mut app, 80, 24);
    assert!(shown.contains(" 83 lines "), "{shown}");
}

/// Paragraphs pasted through tmux (each `\n` sent as `\r`, so a blank line is `\r\r`)
/// keep their blank lines; a CRLF text through tmux is the same bytes, and shows its
/// line ends doubled rather than losing any.
#[test]
fn a_paste_of_paragraphs_through_tmux_keeps_its_blank_lines() {
    let paragraphs: Vec<String> = (1..=12)
        .map(|n| format!("Paragraph {n} is one line."))
        .collect();
    let mut app = started();
    app.handle_terminal(crossterm::event::Event::Paste(paragraphs.join("\r\r")));
    assert_eq!(app.panes().input.text(), "[pasted 23 lines]");
    app.handle_terminal(key(KeyCode::Enter));
    assert_eq!(
        app.take_ops().last(),
        Some(&tern::engine::Op::Submit {
            text: paragraphs.join("\n\n")
        })
    );
    let crlf_through_tmux = pasted(82, "\r\r", true);
    assert_eq!(
        tern::tui::text::paste_line_ends(&crlf_through_tmux),
        pasted(82, "\n\n", true)
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/proptest-regressions/tui_chat.txt",
            ),
        )),
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Any lines (arbitrary text, control and invisible characters but no line ends)
    /// joined by one kind of line end, with or without one at the end: counted as the
    /// lines they are, in the box's token too.
    #[test]
    fn a_paste_counts_its_lines_whatever_their_ends(
        lines in proptest::collection::vec("[^\r\n]{0,12}", 1..40),
        end in proptest::sample::select(vec!["\r\n", "\r", "\n"]),
        last_end: bool,
        through_tmux: bool,
    ) {
        // An empty last line with no end is no line: "a\n" is one line, as `wc -l` says.
        proptest::prop_assume!(last_end || lines.last().is_some_and(|l| !l.is_empty()));
        let mut text = lines.join(end);
        if last_end {
            text.push_str(end);
        }
        proptest::prop_assert_eq!(tern::tui::text::line_count(&text), lines.len());
        // tmux's paste-buffer sends each `\n` as `\r`: a CRLF end arrives as `\r\r`, the
        // same bytes as an LF text's blank line, and is taken as two ends (nothing lost).
        let doubled = end == "\r\n" && through_tmux;
        if through_tmux {
            text = text.replace('\n', "\r");
        }
        let normal = tern::tui::text::paste_line_ends(&text);
        let sent_end = if doubled { "\n\n" } else { "\n" };
        let mut expected = lines.join(sent_end);
        if last_end {
            expected.push_str(sent_end);
        }
        proptest::prop_assert_eq!(&normal, &expected);
        // The token counts the lines of the paste it stands for (control characters
        // dropped, which may empty the last line), which is what is sent (a message's
        // leading and trailing blank lines are trimmed then, so the count of the
        // message sent can be smaller).
        let mut app = started();
        app.handle_terminal(crossterm::event::Event::Paste(text));
        let token = app.panes().input.text().to_string();
        let pasted = app.panes().input.expanded();
        let pasted_lines = tern::tui::text::line_count(&pasted);
        if pasted_lines > tern::tui::panes::input::PASTE_TOKEN_LINES {
            proptest::prop_assert_eq!(token, format!("[pasted {pasted_lines} lines]"));
        }
    }
}

/// The repo map's rows of namesakes (`…/LC_MESSAGES/humanize.po` in 36 locales) keep
/// the directory that tells them apart, at 80x24 (the Map tab) and 160x48.
#[test]
fn the_map_keeps_what_tells_namesake_paths_apart() {
    let locales = ["de", "fr", "pt_BR", "zh_Hans", "es", "nb", "sr_Latn", "uk"];
    let mut ranked: Vec<(String, f64)> = locales
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (
                format!("django/contrib/humanize/locale/{l}/LC_MESSAGES/humanize.po"),
                0.05 - i as f64 * 0.001,
            )
        })
        .collect();
    ranked.insert(0, ("django/utils/text.py".into(), 0.2));
    let mut app = started();
    feed(
        &mut app,
        [tern::engine::Event::Map(Box::new(
            tern::engine::protocol::MapView {
                tokens: 100,
                budget: 1024,
                ranked,
                text: String::new(),
            },
        ))],
    );
    while app.focus() != PaneId::Map {
        app.handle_terminal(key(KeyCode::Tab));
    }
    for (w, h) in [(80, 24), (160, 48), (120, 40)] {
        let shown = screen(&mut app, w, h);
        let rows: Vec<&str> = shown.lines().filter(|r| r.contains("▮")).collect();
        for l in locales {
            let with = rows.iter().filter(|r| r.contains(&format!("{l}/"))).count();
            assert_eq!(with, 1, "{l} at {w}x{h}:\n{shown}");
        }
        assert!(shown.contains("django/utils/text.py"), "{shown}");
    }
}

/// A workspace reviewing the demo proposal, the Review focused.
fn reviewing() -> App {
    let mut app = started();
    feed(&mut app, turn("add a low-stock report", REPLY, 40));
    feed(
        &mut app,
        [tern::engine::Event::Proposal(Box::new(proposal()))],
    );
    assert_eq!(app.focus(), PaneId::Review);
    app
}

/// At 80x24 (the Review tab) and with the review zoomed, what the engine answers a
/// review key with ("cannot be split") shows where the user is, until the next key;
/// where the chat is on screen it is there only. The top bar keeps the mode.
#[test]
fn review_feedback_shows_where_the_user_is_and_the_top_bar_keeps_the_mode() {
    let refusal =
        "hunk 1a2b3c4 cannot be split: no unchanged line separates its changes (edit it instead)";
    for (w, h, aside) in [(80, 24, true), (120, 40, true), (160, 48, false)] {
        let mut app = reviewing();
        screen(&mut app, w, h);
        app.handle_terminal(key(KeyCode::Char('s')));
        assert!(
            matches!(
                app.take_ops().as_slice(),
                [tern::engine::Op::Review(
                    tern::engine::protocol::ReviewOp::Split { .. }
                )]
            ),
            "s splits"
        );
        feed(
            &mut app,
            [tern::engine::Event::Error {
                text: refusal.into(),
            }],
        );
        let shown = screen(&mut app, w, h);
        let top = shown.lines().next().unwrap_or_default();
        assert!(top.contains(" · code "), "the mode at {w}x{h}: {top}");
        let visible = shown.replace(['│', '┃', '"', '\n'], " ");
        let words = visible.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(shown.contains("cannot be split"), "{w}x{h}:\n{shown}");
        // Aside, it is whole (wrapped), not cut at the screen's edge.
        assert!(
            !aside || words.contains("separates its changes (edit it instead)"),
            "{w}x{h}:\n{shown}"
        );
        assert_eq!(
            shown.contains("any key hides this"),
            aside,
            "aside only when the chat is hidden, {w}x{h}:\n{shown}"
        );
        app.handle_terminal(key(KeyCode::Char('j')));
        assert!(!screen(&mut app, w, h).contains("any key hides this"));
    }
    let mut app = reviewing();
    feed(
        &mut app,
        [tern::engine::Event::Mode {
            mode: tern::engine::ChatMode::Ask,
        }],
    );
    let shown = screen(&mut app, 80, 24);
    assert!(
        shown
            .lines()
            .next()
            .unwrap_or_default()
            .contains("gpt-4o · ask "),
        "{shown}"
    );
}

/// The "needs" row: `[`/`]` select a file, `x` leaves it out (the question and the
/// op count only the files picked), and a file left out is not offered again.
#[test]
fn needed_files_are_picked_one_by_one_and_a_declined_one_is_not_offered_again() {
    let mut app = started();
    feed(
        &mut app,
        turn("where are prices set?", "In `shop/pricing.py`.", 40),
    );
    feed(&mut app, [needed_event()]);
    while app.focus() != PaneId::Chat {
        app.handle_terminal(key(KeyCode::Tab));
    }
    app.take_ops();
    let mut slowly = Slowly::new();
    // From the first command, `[` goes back to the last file; `x` leaves it out.
    slowly.press(&mut app, key(KeyCode::Char('[')));
    slowly.press(&mut app, key(KeyCode::Char('x')));
    let shown = screen(&mut app, 160, 48).replace('\u{a0}', " ");
    assert!(
        shown.contains("▸✗ tests/test_inventory.py · 310 tok"),
        "{shown}"
    );
    assert!(shown.contains("[x] leave out the selected one"), "{shown}");
    slowly.press(&mut app, key(KeyCode::Char('f')));
    let shown = screen(&mut app, 160, 48);
    assert!(
        shown.contains("add 1 file read-only, 1,240 tok, and ask again?"),
        "{shown}"
    );
    slowly.press(&mut app, key(KeyCode::Char('y')));
    assert_eq!(
        app.take_ops(),
        [tern::engine::Op::AddNeeded {
            paths: vec!["shop/pricing.py".into()],
            mode: tern::engine::FileMode::ReadOnly
        }]
    );
    // The next reply needs both again: the one left out is not offered.
    feed(
        &mut app,
        turn("and discounts?", "Also `tests/test_inventory.py`.", 40),
    );
    feed(&mut app, [needed_event()]);
    let shown = screen(&mut app, 160, 48);
    let row = shown
        .lines()
        .rev()
        .find(|l| l.contains("needs:"))
        .unwrap_or_default();
    assert!(row.contains("shop/pricing.py"), "{shown}");
    assert!(!row.contains("test_inventory"), "offered again: {row}");
    // `F` adds what the row offers: the file left out stays out.
    slowly.press(&mut app, key(KeyCode::Char('F')));
    slowly.press(&mut app, key(KeyCode::Char('y')));
    assert!(matches!(
        app.take_ops().as_slice(),
        [tern::engine::Op::AddNeeded { paths, .. }] if paths == &["shop/pricing.py".to_string()]
    ));
}

/// `{` / `}` select any message or a code block in it, `y` and `c` copy the selection
/// (OSC 52), `G` goes back to the last reply; `?` says so.
#[test]
fn any_message_or_code_block_can_be_selected_and_copied() {
    let first = "Two ways:\n\n```python\nprint(1)\n```\n\nor\n\n```sh\necho 2\n```\n";
    let mut app = started();
    feed(&mut app, turn("how to print?", first, 9));
    feed(&mut app, turn("thanks", "Glad to help.", 9));
    while app.focus() != PaneId::Chat {
        app.handle_terminal(key(KeyCode::Tab));
    }
    let mut slowly = Slowly::new();
    let mut copy = |app: &mut App, moves: &[char], k: char| {
        for c in moves {
            slowly.press(app, key(KeyCode::Char(*c)));
        }
        slowly.press(app, key(KeyCode::Char(k)));
        app.take_clipboard()
    };
    assert_eq!(
        copy(&mut app, &['{'], 'y').as_deref(),
        Some("Glad to help.")
    );
    assert_eq!(copy(&mut app, &['{'], 'y').as_deref(), Some("thanks"));
    assert_eq!(copy(&mut app, &['{'], 'y').as_deref(), Some("echo 2"));
    let shown = screen(&mut app, 80, 24);
    assert!(shown.contains("code block 2 of message"), "{shown}");
    assert_eq!(copy(&mut app, &['{'], 'c').as_deref(), Some("print(1)"));
    assert_eq!(copy(&mut app, &['{'], 'y').as_deref(), Some(first));
    // The selected reply is scrolled into view, its first line marked.
    let shown = screen(&mut app, 80, 24);
    assert!(
        shown.contains("◆ gpt-4o") && shown.contains("Two ways:"),
        "{shown}"
    );
    assert_eq!(copy(&mut app, &['}'], 'y').as_deref(), Some("print(1)"));
    assert_eq!(
        copy(&mut app, &['G'], 'y').as_deref(),
        Some("Glad to help.")
    );
    assert!(!screen(&mut app, 80, 24).contains("y copies it"));
    slowly.press(&mut app, key(KeyCode::Char('?')));
    let help = screen(&mut app, 160, 48);
    assert!(
        help.contains("select the message or code block before"),
        "{help}"
    );
}
