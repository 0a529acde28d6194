//! Taking over the terminal and giving it back: raw mode, the alternate screen, mouse
//! capture, bracketed paste and (where the terminal supports it) the kitty keyboard
//! protocol so Shift-Enter can be told from Enter. Restoring is idempotent and happens
//! on quit, on panic (a hook runs before the panic message prints), when the guard is
//! dropped on any error path, and while an external editor runs ([`resume`] takes the
//! terminal back after it).

use std::io::{self, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::Show;
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static KEYBOARD_FLAGS: AtomicBool = AtomicBool::new(false);

/// Restores the terminal when dropped.
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal in the state the TUI needs.
pub fn enter() -> io::Result<Guard> {
    install_panic_hook();
    // Made first: a failure halfway restores what was done.
    let guard = Guard(());
    take_over()?;
    Ok(guard)
}

/// Takes the terminal over again after [`restore`] gave it to an external editor; the
/// guard from [`enter`] still restores it at the end.
pub fn resume() -> io::Result<()> {
    take_over()
}

fn take_over() -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    // Asked before the event stream starts reading stdin: the answer arrives there.
    let enhanced = matches!(supports_keyboard_enhancement(), Ok(true));
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )?;
    if enhanced {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        KEYBOARD_FLAGS.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Gives the terminal back as it was. Safe to call more than once, from any thread.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if KEYBOARD_FLAGS.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        Show
    );
    let _ = out.flush();
    let _ = disable_raw_mode();
}

/// The most a copy sends: terminals refuse (or choke on) larger OSC 52 payloads.
const CLIPBOARD_LIMIT: usize = 100_000;

/// Puts `text` on the clipboard with OSC 52, which works in most terminals, over ssh
/// and in tmux (with `set-clipboard on`). Only to a terminal; a longer text is cut at
/// a char boundary.
pub fn copy(text: &str) {
    use base64::Engine as _;
    let mut out = io::stdout();
    if !std::io::IsTerminal::is_terminal(&out) {
        return;
    }
    let cut = crate::chars::floor_char_boundary(text, CLIPBOARD_LIMIT);
    let payload = base64::engine::general_purpose::STANDARD.encode(text.get(..cut).unwrap_or(text));
    let _ = write!(out, "\x1b]52;c;{payload}\x07");
    let _ = out.flush();
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
