//! Key bindings: every action the TUI knows, its default keys, and the overrides from
//! the `[keys]` table of the config (`accept = "y space"`: the action's name, then one
//! or more keys separated by spaces).
//!
//! A pane asks for the action a key means *in its scope*, so one key can mean different
//! things in different panes (`a` accepts a file in review and adds one in the files
//! pane), while the global keys work everywhere.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Something the user can ask for with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Interrupt,
    Cancel,
    FocusNext,
    FocusPrev,
    Help,
    PageUp,
    PageDown,
    Send,
    Newline,
    HistoryPrev,
    HistoryNext,
    Complete,
    Up,
    Down,
    Top,
    Bottom,
    FocusInput,
    Accept,
    Reject,
    AcceptFile,
    AcceptAll,
    Reset,
    ResetAll,
    Apply,
    Discard,
    NextFile,
    PrevFile,
    Back,
    ToggleMode,
    DropFile,
    AddFile,
    AddReadOnly,
    ToggleMapText,
    RefreshMap,
    ToggleFileRows,
    ToggleNotes,
    ToggleFailures,
    ScrollLeft,
    ScrollRight,
    RejectWithReason,
    ExternalEditor,
    ExpandPaste,
    SplitHunk,
    EditHunk,
    CopyReply,
    CopyCode,
    SelectPrevMessage,
    SelectNextMessage,
    AddOutput,
    AddNeededReadOnly,
    AddNeededEditable,
    RunCommand,
    NextCommand,
    PrevCommand,
    LeaveOutFile,
    Zoom,
    DropRow,
    ReadOnlyRow,
    ShrinkMap,
    CompactHistory,
}

/// An action's config name, default keys and the line `?` shows for it.
#[derive(Debug, Clone, Copy)]
pub struct ActionSpec {
    pub action: Action,
    pub name: &'static str,
    pub keys: &'static str,
    pub help: &'static str,
}

const fn spec(
    action: Action,
    name: &'static str,
    keys: &'static str,
    help: &'static str,
) -> ActionSpec {
    ActionSpec {
        action,
        name,
        keys,
        help,
    }
}

/// Every action with its default keys: `[keys]` in the config rebinds them by name, and
/// `?` lists them.
pub const ACTIONS: &[ActionSpec] = &[
    spec(
        Action::Interrupt,
        "interrupt",
        "ctrl-c",
        "interrupt the reply or clear the input; twice: quit",
    ),
    spec(
        Action::Cancel,
        "cancel",
        "esc",
        "interrupt the reply / close a popup",
    ),
    spec(
        Action::FocusNext,
        "focus_next",
        "tab",
        "focus the next pane",
    ),
    spec(
        Action::FocusPrev,
        "focus_prev",
        "shift-tab",
        "focus the previous pane",
    ),
    spec(Action::Help, "help", "? f1", "keys of the focused pane"),
    spec(Action::PageUp, "page_up", "pgup", "scroll up a page"),
    spec(Action::PageDown, "page_down", "pgdn", "scroll down a page"),
    spec(Action::Send, "send", "enter", "send the message"),
    spec(
        Action::Newline,
        "newline",
        "ctrl-j shift-enter alt-enter",
        "new line in the message",
    ),
    spec(
        Action::HistoryPrev,
        "history_prev",
        "up",
        "previous message (on the first line)",
    ),
    spec(
        Action::HistoryNext,
        "history_next",
        "down",
        "next message (on the last line)",
    ),
    spec(
        Action::Complete,
        "complete",
        "tab",
        "take the completion (/commands, @files)",
    ),
    spec(Action::Up, "up", "k up", "move up"),
    spec(Action::Down, "down", "j down", "move down"),
    spec(Action::Top, "top", "g home", "go to the top"),
    spec(
        Action::Bottom,
        "bottom",
        "G end",
        "go to the bottom (the chat: follow it again)",
    ),
    spec(
        Action::FocusInput,
        "focus_input",
        "enter i",
        "type a message",
    ),
    spec(Action::Accept, "accept", "y", "accept the hunk"),
    spec(Action::Reject, "reject", "n", "reject the hunk"),
    spec(
        Action::AcceptFile,
        "accept_file",
        "a",
        "accept every hunk of the file",
    ),
    spec(Action::AcceptAll, "accept_all", "A", "accept every hunk"),
    spec(Action::Reset, "reset", "r", "hunk back to pending"),
    spec(
        Action::ResetAll,
        "reset_all",
        "R",
        "every hunk back to pending",
    ),
    spec(
        Action::Apply,
        "apply",
        "enter",
        "write and commit the accepted hunks",
    ),
    spec(
        Action::Discard,
        "discard",
        "d",
        "discard the proposal (nothing is written)",
    ),
    spec(Action::NextFile, "next_file", "]", "next file"),
    spec(Action::PrevFile, "prev_file", "[", "previous file"),
    spec(
        Action::Back,
        "back",
        "esc",
        "back to the chat (edits stay pending)",
    ),
    spec(
        Action::ToggleMode,
        "toggle_mode",
        "e space",
        "toggle editable / read-only",
    ),
    spec(
        Action::DropFile,
        "drop_file",
        "d delete",
        "drop the file from the chat",
    ),
    spec(
        Action::AddFile,
        "add_file",
        "a",
        "add a file (fuzzy picker)",
    ),
    spec(
        Action::AddReadOnly,
        "add_read_only",
        "ctrl-r",
        "in the picker: add read-only",
    ),
    spec(
        Action::ToggleMapText,
        "toggle_map_text",
        "t",
        "ranked files / the map text",
    ),
    spec(
        Action::RefreshMap,
        "refresh_map",
        "r",
        "rebuild the map (/map-refresh)",
    ),
    spec(
        Action::ToggleFileRows,
        "toggle_file_rows",
        "f",
        "show or hide the per-file rows",
    ),
    spec(
        Action::CopyReply,
        "copy_reply",
        "y",
        "copy the last reply to the clipboard, or what { } selected (OSC 52: works over ssh and tmux)",
    ),
    spec(
        Action::CopyCode,
        "copy_code",
        "c",
        "copy the last code block of the last reply, or of the selected message",
    ),
    spec(
        Action::SelectPrevMessage,
        "select_prev_message",
        "{",
        "select the message or code block before, for y / c to copy",
    ),
    spec(
        Action::SelectNextMessage,
        "select_next_message",
        "}",
        "select the message or code block after (G: back to the last reply)",
    ),
    spec(
        Action::AddNeededReadOnly,
        "add_needed_read_only",
        "f",
        "add the files the last reply needs, read-only, and ask again",
    ),
    spec(
        Action::AddNeededEditable,
        "add_needed_editable",
        "F",
        "add the files the last reply needs, editable, and ask again",
    ),
    spec(
        Action::RunCommand,
        "run_command",
        "r",
        "/run the selected suggested command (it asks before running)",
    ),
    spec(
        Action::NextCommand,
        "next_command",
        "]",
        "select the next file or command the last reply needs",
    ),
    spec(
        Action::PrevCommand,
        "prev_command",
        "[",
        "select the previous file or command the last reply needs",
    ),
    spec(
        Action::LeaveOutFile,
        "leave_out_file",
        "x",
        "leave out the selected needed file (not added, not offered again); again: take it back",
    ),
    spec(
        Action::RejectWithReason,
        "reject_with_reason",
        "N",
        "reject the hunk, telling the model why",
    ),
    spec(
        Action::SplitHunk,
        "split_hunk",
        "s",
        "split the hunk at unchanged lines between its changes",
    ),
    spec(
        Action::EditHunk,
        "edit_hunk",
        "e",
        "edit the hunk in $VISUAL / $EDITOR; yours is accepted",
    ),
    spec(
        Action::ExternalEditor,
        "editor",
        "ctrl-g",
        "write the message in $VISUAL / $EDITOR (also /editor)",
    ),
    spec(
        Action::ExpandPaste,
        "expand_paste",
        "ctrl-x",
        "put a long paste's text in place of its [pasted N lines] token",
    ),
    spec(
        Action::ScrollLeft,
        "scroll_left",
        "h left",
        "scroll long lines left",
    ),
    spec(
        Action::ScrollRight,
        "scroll_right",
        "l right",
        "scroll long lines right (› marks a cut line)",
    ),
    spec(
        Action::ToggleNotes,
        "toggle_notes",
        "n",
        "show or hide in full tern's notes to the model and long messages",
    ),
    spec(
        Action::Zoom,
        "zoom",
        "z",
        "the review takes the whole width (automatic below 150 columns); again: back",
    ),
    spec(
        Action::ToggleFailures,
        "toggle_failures",
        "f",
        "show the failed edits and notes in full (j/k scroll); again: back to the hunks",
    ),
    spec(
        Action::DropRow,
        "drop_row",
        "d",
        "drop the selected file or command output from the context (a section's row: all of them); on the repo map: turn it off (/map-tokens 0)",
    ),
    spec(
        Action::ReadOnlyRow,
        "read_only_row",
        "r",
        "make the selected editable file read-only (the editable files' row: all of them)",
    ),
    spec(
        Action::ShrinkMap,
        "shrink_map",
        "s",
        "on the repo map: halve it (/map-tokens with half its tokens)",
    ),
    spec(
        Action::CompactHistory,
        "compact_history",
        "c",
        "on the history: summarize it now (/compact)",
    ),
    spec(
        Action::AddOutput,
        "add_output",
        "ctrl-o",
        "add the last command's output to the context (/add-output)",
    ),
];

/// Actions every pane answers to, after its own.
pub const GLOBAL: &[Action] = &[
    Action::Interrupt,
    Action::AddOutput,
    Action::Cancel,
    Action::FocusNext,
    Action::FocusPrev,
    Action::Help,
    Action::PageUp,
    Action::PageDown,
];

/// One key with its modifiers, as bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl KeyBinding {
    /// `/` and `@` (bare or shifted): the typing rule sends them to the message box
    /// from every pane, so no action can answer to them.
    fn always_types(&self) -> bool {
        matches!(self.code, KeyCode::Char('/' | '@'))
            && !self
                .mods
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    }

    /// The binding a key event matches: the shift of a character is in the character
    /// itself, and shift-tab is always `BackTab`.
    pub fn of(key: &KeyEvent) -> KeyBinding {
        let mut mods =
            key.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match key.code {
            KeyCode::Char(c) if mods.contains(KeyModifiers::SHIFT) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c.to_ascii_uppercase())
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        KeyBinding { code, mods }
    }

    /// Parses `ctrl-j`, `shift-enter`, `pgup`, `f1`, `A`, `?`, `space`.
    pub fn parse(text: &str) -> Result<KeyBinding, UnknownKey> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = text;
        loop {
            let lower = rest.to_ascii_lowercase();
            let (prefix, flag) = if lower.starts_with("ctrl-") || lower.starts_with("ctrl+") {
                ("ctrl-", KeyModifiers::CONTROL)
            } else if lower.starts_with("alt-") || lower.starts_with("alt+") {
                ("alt-", KeyModifiers::ALT)
            } else if lower.starts_with("shift-") || lower.starts_with("shift+") {
                ("shift-", KeyModifiers::SHIFT)
            } else {
                break;
            };
            if rest.len() == prefix.len() {
                break;
            }
            mods |= flag;
            rest = rest.get(prefix.len()..).unwrap_or_default();
        }
        let named = match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" => Some(KeyCode::Enter),
            "esc" | "escape" => Some(KeyCode::Esc),
            "tab" if mods.contains(KeyModifiers::SHIFT) => {
                mods.remove(KeyModifiers::SHIFT);
                Some(KeyCode::BackTab)
            }
            "tab" => Some(KeyCode::Tab),
            "backtab" => Some(KeyCode::BackTab),
            "space" => Some(KeyCode::Char(' ')),
            "up" => Some(KeyCode::Up),
            "down" => Some(KeyCode::Down),
            "left" => Some(KeyCode::Left),
            "right" => Some(KeyCode::Right),
            "pgup" | "pageup" => Some(KeyCode::PageUp),
            "pgdn" | "pagedown" => Some(KeyCode::PageDown),
            "home" => Some(KeyCode::Home),
            "end" => Some(KeyCode::End),
            "delete" | "del" => Some(KeyCode::Delete),
            "backspace" => Some(KeyCode::Backspace),
            "insert" => Some(KeyCode::Insert),
            "comma" => Some(KeyCode::Char(',')),
            f if f.strip_prefix('f').is_some_and(|n| n.parse::<u8>().is_ok()) => {
                let n: u8 = f
                    .strip_prefix('f')
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                (1..=24).contains(&n).then_some(KeyCode::F(n))
            }
            _ => None,
        };
        let code = match named {
            Some(code) => code,
            None => {
                let mut chars = rest.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => KeyCode::Char(c),
                    _ => return Err(UnknownKey(text.to_string())),
                }
            }
        };
        Ok(KeyBinding::of(&KeyEvent::new(code, mods)))
    }
}

/// A key name that names no key, as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown key {0:?}")]
pub struct UnknownKey(pub String);

impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// The bindings in effect.
#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Action, Vec<KeyBinding>)>,
}

/// Keys as a config writes them, space-separated (`y ctrl-y`).
fn described(keys: &[KeyBinding]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::from_config(&BTreeMap::new(), &[]).0
    }
}

impl Keymap {
    /// The defaults with the config's `[keys]` applied. Entries that cannot be used are
    /// skipped and described in the returned warnings, among them one that gives an
    /// action a key another action answers to where it does (`scopes`: each pane's
    /// actions; [`GLOBAL`]'s are everywhere).
    pub fn from_config(
        keys: &BTreeMap<String, String>,
        scopes: &[&[Action]],
    ) -> (Keymap, Vec<String>) {
        let mut warnings = Vec::new();
        let mut bindings: Vec<(Action, Vec<KeyBinding>)> = ACTIONS
            .iter()
            .map(|s| (s.action, default_keys(s)))
            .collect();
        let mut rebound = Vec::new();
        for (name, value) in keys {
            let Some(spec) = ACTIONS.iter().find(|s| s.name == name.as_str()) else {
                warnings.push(format!(
                    "[keys] {name}: no such action (see the names with ? in any pane)"
                ));
                continue;
            };
            match parse_list(value) {
                Ok(ref list) if let Some(taken) = list.iter().find(|k| k.always_types()) => {
                    warnings.push(format!(
                        "[keys] {name}: {taken} always types (it goes to the message box from any pane), so {name} keeps {}",
                        described(&default_keys(spec))
                    ));
                }
                Ok(list) if !list.is_empty() => {
                    if let Some(entry) = bindings.iter_mut().find(|(a, _)| *a == spec.action) {
                        entry.1 = list;
                        rebound.push(spec);
                    }
                }
                Ok(_) => warnings.push(format!("[keys] {name}: no key given")),
                Err(e) => warnings.push(format!("[keys] {name}: {e}")),
            }
        }
        let mut map = Keymap { bindings };
        // A rebound action that takes another's key keeps its defaults instead (which
        // may clash with another rebound one in turn, hence the loop).
        while let Some((spec, key, other)) = map.clash(&rebound, scopes) {
            let kept = default_keys(spec);
            warnings.push(format!(
                "[keys] {}: {key} is also {}'s, so {} keeps {}",
                spec.name,
                spec_of(other).name,
                spec.name,
                described(&kept)
            ));
            if let Some(entry) = map.bindings.iter_mut().find(|(a, _)| *a == spec.action) {
                entry.1 = kept;
            }
            rebound.retain(|s| s.action != spec.action);
        }
        (map, warnings)
    }

    /// A rebound action, a key of it, and another action that answers to that key
    /// where the first does.
    fn clash(
        &self,
        rebound: &[&'static ActionSpec],
        scopes: &[&[Action]],
    ) -> Option<(&'static ActionSpec, KeyBinding, Action)> {
        let anywhere = |a: Action| GLOBAL.contains(&a) || scopes.iter().any(|s| s.contains(&a));
        let together = |a: Action, b: Action| {
            (GLOBAL.contains(&a) && anywhere(b))
                || (GLOBAL.contains(&b) && anywhere(a))
                || scopes.iter().any(|s| s.contains(&a) && s.contains(&b))
        };
        rebound.iter().find_map(|spec| {
            ACTIONS
                .iter()
                .filter(|o| o.action != spec.action && together(spec.action, o.action))
                .find_map(|o| {
                    let theirs = self.keys(o.action);
                    let key = self.keys(spec.action).iter().find(|k| theirs.contains(k))?;
                    Some((*spec, *key, o.action))
                })
        })
    }

    /// The action `key` means among `scope` (the pane's own actions first), then the
    /// global actions.
    pub(crate) fn action(&self, key: &KeyEvent, scope: &[Action]) -> Option<Action> {
        let pressed = KeyBinding::of(key);
        scope
            .iter()
            .chain(GLOBAL)
            .copied()
            .find(|action| self.keys(*action).contains(&pressed))
    }

    /// Whether `key` is bound to `action`.
    pub fn is(&self, key: &KeyEvent, action: Action) -> bool {
        self.keys(action).contains(&KeyBinding::of(key))
    }

    pub fn keys(&self, action: Action) -> &[KeyBinding] {
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .map_or(&[], |(_, keys)| keys.as_slice())
    }

    /// `k/↑`: the keys of an action as help shows them.
    pub fn describe(&self, action: Action) -> String {
        self.keys(action)
            .iter()
            .map(|k| match k.to_string().as_str() {
                "up" => "↑".to_string(),
                "down" => "↓".to_string(),
                "left" => "←".to_string(),
                "right" => "→".to_string(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

fn default_keys(spec: &ActionSpec) -> Vec<KeyBinding> {
    parse_list(spec.keys).expect("default keys parse")
}

pub(crate) fn spec_of(action: Action) -> &'static ActionSpec {
    ACTIONS
        .iter()
        .find(|s| s.action == action)
        .expect("every action has a spec")
}

fn parse_list(text: &str) -> Result<Vec<KeyBinding>, UnknownKey> {
    text.split_whitespace().map(KeyBinding::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn parses_the_keys_people_write() {
        let ctrl_j = KeyBinding::parse("ctrl-j").unwrap();
        assert_eq!(ctrl_j.code, KeyCode::Char('j'));
        assert_eq!(ctrl_j.mods, KeyModifiers::CONTROL);
        assert_eq!(
            KeyBinding::parse("shift-tab").unwrap().code,
            KeyCode::BackTab
        );
        assert_eq!(KeyBinding::parse("A").unwrap().code, KeyCode::Char('A'));
        assert_eq!(
            KeyBinding::parse("shift-a").unwrap().code,
            KeyCode::Char('A')
        );
        assert_eq!(KeyBinding::parse("f5").unwrap().code, KeyCode::F(5));
        assert_eq!(KeyBinding::parse("-").unwrap().code, KeyCode::Char('-'));
        let ctrl_minus = KeyBinding::parse("ctrl--").unwrap();
        assert_eq!(
            (ctrl_minus.code, ctrl_minus.mods),
            (KeyCode::Char('-'), KeyModifiers::CONTROL)
        );
        assert_eq!(KeyBinding::parse("ctrl-"), Err(UnknownKey("ctrl-".into())));
        assert_eq!(
            KeyBinding::parse("hyper-x").unwrap_err().to_string(),
            "unknown key \"hyper-x\""
        );
        for spec in ACTIONS {
            for key in spec.keys.split_whitespace() {
                let parsed = KeyBinding::parse(key).unwrap();
                assert_eq!(KeyBinding::parse(&parsed.to_string()), Ok(parsed), "{key}");
            }
        }
    }

    #[test]
    fn shifted_letters_and_backtab_match_however_the_terminal_reports_them() {
        let map = Keymap::default();
        let scope = [Action::AcceptAll, Action::AcceptFile];
        // Legacy terminals: 'A' with SHIFT; kitty protocol: 'a' with SHIFT.
        for event in [
            key(KeyCode::Char('A'), KeyModifiers::SHIFT),
            key(KeyCode::Char('a'), KeyModifiers::SHIFT),
            key(KeyCode::Char('A'), KeyModifiers::NONE),
        ] {
            assert_eq!(map.action(&event, &scope), Some(Action::AcceptAll));
        }
        assert_eq!(
            map.action(&key(KeyCode::Char('a'), KeyModifiers::NONE), &scope),
            Some(Action::AcceptFile)
        );
        assert_eq!(
            map.action(&key(KeyCode::BackTab, KeyModifiers::SHIFT), &[]),
            Some(Action::FocusPrev)
        );
    }

    #[test]
    fn scope_decides_and_globals_follow() {
        let map = Keymap::default();
        let a = key(KeyCode::Char('a'), KeyModifiers::NONE);
        assert_eq!(map.action(&a, &[Action::AddFile]), Some(Action::AddFile));
        assert_eq!(
            map.action(&a, &[Action::AcceptFile]),
            Some(Action::AcceptFile)
        );
        assert_eq!(map.action(&a, &[]), None);
        let esc = key(KeyCode::Esc, KeyModifiers::NONE);
        assert_eq!(map.action(&esc, &[Action::Back]), Some(Action::Back));
        assert_eq!(map.action(&esc, &[]), Some(Action::Cancel));
    }

    #[test]
    fn config_overrides_and_reports_mistakes() {
        let mut keys = BTreeMap::new();
        keys.insert("accept".to_string(), "space ctrl-y".to_string());
        keys.insert("acept".to_string(), "y".to_string());
        keys.insert("reject".to_string(), "ctrl-".to_string());
        keys.insert("reset".to_string(), "hyper-r".to_string());
        let (map, warnings) = Keymap::from_config(&keys, &[]);
        let space = key(KeyCode::Char(' '), KeyModifiers::NONE);
        assert_eq!(map.action(&space, &[Action::Accept]), Some(Action::Accept));
        let y = key(KeyCode::Char('y'), KeyModifiers::NONE);
        assert_eq!(
            map.action(&y, &[Action::Accept]),
            None,
            "replaced, not added"
        );
        assert_eq!(map.describe(Action::Accept), "space/ctrl-y");
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("acept"));
        assert!(warnings[1].contains("reject"));
        assert!(warnings[2].contains("hyper-r"));
        assert_eq!(
            map.describe(Action::Reset),
            "r",
            "a bad entry keeps the default"
        );
    }

    /// Regress-4 #5: `/` and `@` always type, so a binding to them is refused and said,
    /// and the action keeps its default (which `?` then lists).
    #[test]
    fn a_binding_to_slash_or_at_is_refused_and_said() {
        for (name, value, action, kept, listed) in [
            ("accept", "/", Action::Accept, "y", "y"),
            (
                "toggle_mode",
                "ctrl-t @",
                Action::ToggleMode,
                "e space",
                "e/space",
            ),
        ] {
            let keys = BTreeMap::from([(name.to_string(), value.to_string())]);
            let (map, warnings) = Keymap::from_config(&keys, &[]);
            assert_eq!(map.describe(action), listed, "{name}");
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].contains("always types")
                    && warnings[0].ends_with(&format!("keeps {kept}")),
                "{warnings:?}"
            );
        }
        let keys = BTreeMap::from([("accept".to_string(), "ctrl-/".to_string())]);
        assert!(
            Keymap::from_config(&keys, &[]).1.is_empty(),
            "ctrl-/ is no typing"
        );
    }
}
