//! The typing rule: outside the message box a printable key is either a pane's key or
//! the start of a message, and a person typing must never set off the first.
//!
//! - `/` and `@` always go to the box.
//! - A bare letter that would send a request, add or drop files or change a mode asks
//!   first ([`Letter::Asks`]); a key other than `y`, or a `y` within [`TYPING_WINDOW`]
//!   of the letter ("dye"), puts both in the box. A command question (the chat's `r`)
//!   is declined the same way, and the key typed (`App::on_key`).
//! - A printable key within [`TYPING_WINDOW`] of another goes to the box, with the one
//!   before when that one only moved or looked; except the same key again (a held `j`,
//!   `y y y`), a key that moves (`f G`), and a key of the pane after one that moved or
//!   decided (`j j y`, `y n`): that is working the pane, not writing.
//! - A letter no key of the pane's is typed.
//! - When a burst of keys the review took turns out to be typing ("All good": `A`
//!   accepted everything, `l l` scrolled, then a space), the decisions its keys made
//!   are taken back and the whole burst is typed (`App::on_key`). The review's `N`
//!   writes `/reject ID ` into the box, and a key right after it ("No way") puts the
//!   burst there instead. The review's `e` (the editor) acts only after a pause:
//!   within the window it is typing too.
//! - A key held down (`j j j`) is not the start of the word typed after it.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keymap::Action;

/// How soon after another printable key a printable key is taken for typing.
pub const TYPING_WINDOW: Duration = Duration::from_secs(1);

/// What a bare letter bound to an action does outside the message box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Letter {
    /// It would spend, add or drop files or change a mode: the status line asks first.
    Asks,
    /// It moves the selection or the view: it acts, the pane's keys may follow it at
    /// once, and when typing follows it is typed too.
    Moves,
    /// It shows, hides, copies or opens a popup: it acts, and what follows at once is
    /// typing, with it.
    Looks,
    /// It decides (the review's keys): it acts, and when typing follows it is typed
    /// too and its decision taken back.
    Decides,
    /// It opens the user's editor (the review's `e`): only as a key of its own, after
    /// a pause; within the window of another key it is typing ("yes").
    Opens,
}

/// How a bare letter bound to `action` is treated.
pub(crate) fn letter(action: Action) -> Letter {
    match action {
        Action::AddNeededReadOnly
        | Action::AddNeededEditable
        | Action::ToggleMode
        | Action::DropFile
        | Action::Discard
        | Action::DropRow
        | Action::ReadOnlyRow
        | Action::ShrinkMap
        | Action::CompactHistory => Letter::Asks,
        Action::Accept
        | Action::Reject
        | Action::RejectWithReason
        | Action::SplitHunk
        | Action::AcceptFile
        | Action::AcceptAll
        | Action::Reset
        | Action::ResetAll
        | Action::Apply
        | Action::RefreshMap => Letter::Decides,
        Action::EditHunk => Letter::Opens,
        Action::Up
        | Action::Down
        | Action::Top
        | Action::Bottom
        | Action::NextFile
        | Action::PrevFile
        | Action::ScrollLeft
        | Action::ScrollRight
        | Action::NextCommand
        | Action::PrevCommand
        | Action::SelectPrevMessage
        | Action::SelectNextMessage
        | Action::PageUp
        | Action::PageDown => Letter::Moves,
        // Among these the chat's `r` (RunCommand): the engine asks before it runs what
        // the model suggested, and a key typed at once takes that question back, so `r`
        // was the start of a word and is typed with it.
        _ => Letter::Looks,
    }
}

/// The character a key types, when it is a bare printable key (shift allowed).
pub(crate) fn printable(key: &KeyEvent) -> Option<char> {
    match key.code {
        KeyCode::Char(c)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
                && !c.is_control() =>
        {
            Some(c)
        }
        _ => None,
    }
}

/// Where a printable key pressed outside the message box goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// To the pane, as its key.
    Pane,
    /// Into the message box: this text (the key, after the letter before it when that
    /// one only looked).
    Type(String),
}

/// The last printable key a pane took, for the window.
#[derive(Debug, Clone, Copy)]
struct Last {
    c: char,
    at: Instant,
    letter: Letter,
    /// Pressed more than once in a row: a held key, not the start of a word.
    repeated: bool,
}

/// The typing rule's memory.
#[derive(Debug, Default)]
pub(crate) struct Typing {
    last: Option<Last>,
}

impl Typing {
    /// Where printable `c`, pressed at `now` outside the message box, goes; `key`:
    /// what it is as a key of the focused pane, if it is one.
    pub(crate) fn route(&self, c: char, now: Instant, key: Option<Letter>) -> Route {
        let recent = self
            .last
            .filter(|l| now.saturating_duration_since(l.at) < TYPING_WINDOW);
        let slash = matches!(c, '/' | '@');
        let working = |l: &Last| match key {
            _ if l.c == c => true,
            Some(Letter::Moves) => true,
            Some(Letter::Opens) => false,
            Some(_) => matches!(l.letter, Letter::Moves | Letter::Decides),
            None => false,
        };
        match recent {
            None if !slash => return Route::Pane,
            Some(l) if !slash && working(&l) => return Route::Pane,
            _ => {}
        }
        let mut text: String = self.leading(now).into_iter().collect();
        text.push(c);
        Route::Type(text)
    }

    /// The letter typed before a key at `now` when that key turns out to be typing:
    /// the last one, if it came within the window and only moved or looked.
    pub(crate) fn leading(&self, now: Instant) -> Option<char> {
        self.last
            .filter(|l| now.saturating_duration_since(l.at) < TYPING_WINDOW)
            .filter(|l| matches!(l.letter, Letter::Moves | Letter::Looks) && !l.repeated)
            .map(|l| l.c)
    }

    /// Whether a key a pane took is remembered (a popup it opened is typed over).
    pub(crate) fn remembers(&self) -> bool {
        self.last.is_some()
    }

    /// A pane took `c` at `now` as its key.
    pub(crate) fn took(&mut self, c: char, now: Instant, letter: Letter) {
        let repeated = self.last.is_some_and(|l| l.c == c);
        self.last = Some(Last {
            c,
            at: now,
            letter,
            repeated,
        });
    }

    /// Any other key (or text typed in the box): what came before is not typing.
    pub(crate) fn forget(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_letter_within_the_window_is_typed_with_a_first_that_only_looked() {
        let t0 = Instant::now();
        let soon = t0 + Duration::from_millis(300);
        let late = t0 + TYPING_WINDOW;
        let (looks, moves, decides) = (
            Some(Letter::Looks),
            Some(Letter::Moves),
            Some(Letter::Decides),
        );
        let mut typing = Typing::default();
        assert_eq!(typing.route('f', t0, looks), Route::Pane);
        typing.took('f', t0, Letter::Looks);
        assert_eq!(typing.route('i', soon, None), Route::Type("fi".into()));
        assert_eq!(typing.route('r', soon, decides), Route::Type("fr".into()));
        assert_eq!(typing.route('G', soon, moves), Route::Pane, "f G: moving");
        assert_eq!(
            typing.route('f', soon, looks),
            Route::Pane,
            "a held key repeats"
        );
        assert_eq!(typing.route('i', late, None), Route::Pane);
        assert_eq!(typing.route('/', late, None), Route::Type("/".into()));
        typing.took('y', t0, Letter::Decides);
        assert_eq!(
            typing.route('n', soon, decides),
            Route::Pane,
            "y n: reviewing"
        );
        assert_eq!(typing.route('e', soon, None), Route::Type("e".into()));
        typing.took('j', t0, Letter::Moves);
        assert_eq!(
            typing.route('y', soon, decides),
            Route::Pane,
            "j y: reviewing"
        );
        assert_eq!(typing.route('u', soon, None), Route::Type("ju".into()));
        typing.took('j', t0, Letter::Moves);
        assert_eq!(typing.route('t', soon, None), Route::Type("t".into()));
        typing.forget();
        assert_eq!(typing.route('t', soon, None), Route::Pane);
        typing.took('y', t0, Letter::Decides);
        assert_eq!(
            typing.route('e', soon, Some(Letter::Opens)),
            Route::Type("e".into()),
            "y e: the editor never opens from typing"
        );
        assert_eq!(typing.route('e', late, Some(Letter::Opens)), Route::Pane);
    }
}
