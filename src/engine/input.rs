//! What a user typed, made into an op: the one parser of slash commands, used where text
//! comes in (the TUI's message box, `-m`, `--script`). The engine itself never reads a
//! `/` in a message.

use super::commands::{Command, UnknownCommand};
use super::protocol::Op;

/// `/name args` is a command (a unique prefix names it: `/tok` is `/tokens`), `!CMD` is
/// `/run CMD`, anything else a message sent as it is.
pub fn parse(text: &str) -> Result<Op, UnknownCommand> {
    let trimmed = text.trim();
    if debug_panic(trimmed) {
        return Ok(Op::Submit { text: text.into() });
    }
    if let Some(command) = trimmed.strip_prefix('!') {
        return Ok(Op::Command {
            command: Command::Run,
            args: command.trim().to_string(),
        });
    }
    match split(trimmed) {
        Some((name, args)) => Ok(Op::Command {
            command: Command::find(name)?,
            args: args.to_string(),
        }),
        None => Ok(Op::Submit { text: text.into() }),
    }
}

/// What sending `text` would tell the model: a message itself, `/ask TEXT` and `/code
/// TEXT` their text, any other command nothing (for `Op::Draft`).
pub fn draft_message(text: &str) -> &str {
    let trimmed = text.trim_start();
    if trimmed.starts_with('!') {
        return "";
    }
    match split(trimmed) {
        None => text,
        Some((name, args)) => match Command::find(name) {
            Ok(Command::Ask | Command::Code) => args,
            _ => "",
        },
    }
}

/// A command line's name and its arguments (trimmed); None for a message.
fn split(trimmed: &str) -> Option<(&str, &str)> {
    if !trimmed.starts_with('/') {
        return None;
    }
    let body = trimmed.trim_start_matches('/');
    Some(match body.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (body, ""),
    })
}

/// How the tests make the engine fail as a bug would (debug builds only): with
/// `TERN_TEST_PANIC` set, `/debug-panic` goes to the engine as it is.
fn debug_panic(trimmed: &str) -> bool {
    cfg!(debug_assertions)
        && trimmed == "/debug-panic"
        && std::env::var_os("TERN_TEST_PANIC").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn command(command: Command, args: &str) -> Op {
        Op::Command {
            command,
            args: args.into(),
        }
    }

    #[test]
    fn commands_runs_and_messages() {
        assert_eq!(parse("/tokens"), Ok(command(Command::Tokens, "")));
        assert_eq!(parse("  /tok "), Ok(command(Command::Tokens, "")));
        assert_eq!(
            parse("/add  src/a.rs b.rs "),
            Ok(command(Command::Add, "src/a.rs b.rs"))
        );
        assert_eq!(parse("!ls -l"), Ok(command(Command::Run, "ls -l")));
        assert_eq!(parse("/run ls -l"), Ok(command(Command::Run, "ls -l")));
        assert_eq!(
            parse("why is a/b slow?\n"),
            Ok(Op::Submit {
                text: "why is a/b slow?\n".into()
            })
        );
        assert_eq!(
            parse("/nope").unwrap_err().to_string(),
            "unknown command /nope: see /help"
        );
    }

    #[test]
    fn a_draft_counts_only_what_goes_to_the_model() {
        assert_eq!(draft_message("fix it"), "fix it");
        assert_eq!(draft_message("/ask why?"), "why?");
        assert_eq!(draft_message("/code  add a flag "), "add a flag");
        assert_eq!(draft_message("/tokens"), "");
        assert_eq!(draft_message("/nope x"), "");
        assert_eq!(draft_message("!ls"), "");
    }

    proptest! {
        /// Text that does not start with `/` or `!` is a message, byte for byte.
        #[test]
        fn other_text_is_a_message_as_typed(text in "\\PC*") {
            let trimmed = text.trim_start();
            prop_assume!(!trimmed.starts_with('/') && !trimmed.starts_with('!'));
            prop_assert_eq!(parse(&text), Ok(Op::Submit { text: text.clone() }));
            prop_assert_eq!(draft_message(&text), text.as_str());
        }

        /// Any text parses to an op or an unknown command, never a panic.
        #[test]
        fn any_text_parses(text in any::<String>()) {
            let _ = parse(&text);
            let _ = draft_message(&text);
        }
    }
}
