//! What a user typed, made into an op: the one parser of slash commands, used where text
//! comes in (the TUI's message box, `-m`, `--script`). The engine itself never reads a
//! `/` in a message.

use super::commands::{Command, UnknownCommand};
use super::protocol::{ChatMode, Op};

/// Why typed text is no op: nothing is done, and the text is the user's to mend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("{0}")]
    Unknown(UnknownCommand),
    /// A command is one line: what follows a line break would become its arguments.
    #[error(
        "/{} is one line: the lines after it would be its arguments; send them as a message of their own (/ask and /code take text of many lines)",
        .0.name()
    )]
    LineBreak(Command),
    /// What its row in the command table does not allow (`/apply al`, `/add` alone).
    #[error("{0}")]
    Arguments(String),
}

/// `/name args` is a command (a unique prefix names it: `/tok` is `/tokens`), `!CMD` is
/// `/run CMD`, anything else a message sent as it is; `//text` and `!!text` send the
/// message `/text` and `!text`. A command is one line, except `/ask TEXT` and `/code
/// TEXT`, whose text is a message.
pub fn parse(text: &str) -> Result<Op, InputError> {
    if debug_panic(text.trim()) {
        return Ok(Op::Submit { text: text.into() });
    }
    let (command, rest) = match classify(text) {
        Typed::Message(message) => {
            return Ok(Op::Submit {
                text: message.into(),
            });
        }
        Typed::Command { name: "!", rest } => (Command::Run, rest),
        Typed::Command { name, rest } => (Command::find(name).map_err(InputError::Unknown)?, rest),
    };
    if !matches!(command, Command::Ask | Command::Code) && rest.contains(['\n', '\r']) {
        return Err(InputError::LineBreak(command));
    }
    let args = rest.trim();
    if let Some(why) = command.refuse_args(args) {
        return Err(InputError::Arguments(why));
    }
    Ok(Op::Command {
        command,
        args: args.to_string(),
    })
}

/// What sending `text` would tell the model: a message itself, `/ask TEXT` and `/code
/// TEXT` their text, any other command nothing (for `Op::Draft`).
pub fn draft_message(text: &str) -> &str {
    draft(text).0
}

/// `draft_message`, with the mode the message would be sent in when the text names
/// one (`/ask TEXT` asks, `/code TEXT` codes; a plain message goes in the session's).
pub fn draft(text: &str) -> (&str, Option<ChatMode>) {
    match classify(text) {
        Typed::Message(message) => (message, None),
        Typed::Command { name, rest } => match Command::find(name) {
            Ok(Command::Ask) => (rest.trim(), Some(ChatMode::Ask)),
            Ok(Command::Code) => (rest.trim(), Some(ChatMode::Code)),
            _ => ("", None),
        },
    }
}

/// What typed text is, before the command's name is looked up.
enum Typed<'a> {
    /// Sent to the model as it is.
    Message(&'a str),
    /// A command's name (`!` for `!CMD`) and the rest of the text after it, untrimmed:
    /// the line break that may end the name is in it.
    Command { name: &'a str, rest: &'a str },
}

fn classify(text: &str) -> Typed<'_> {
    let start = text.trim_start();
    // A doubled `/` or `!` stands for one at the start of a message.
    if start.starts_with("//") || start.starts_with("!!") {
        return Typed::Message(start.get(1..).unwrap_or(start));
    }
    let line = start.trim_end();
    if let Some(rest) = line.strip_prefix('!') {
        return Typed::Command { name: "!", rest };
    }
    let Some(body) = line.strip_prefix('/') else {
        return Typed::Message(text);
    };
    let at = body.find(char::is_whitespace).unwrap_or(body.len());
    let (name, rest) = body.split_at_checked(at).unwrap_or((body, ""));
    Typed::Command { name, rest }
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
    use strum::IntoEnumIterator;

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
            "unknown command /nope: see /help; //… sends a message that starts with /"
        );
    }

    #[test]
    fn a_doubled_slash_or_bang_sends_a_message_that_starts_with_one() {
        let message = |text: &str| Ok(Op::Submit { text: text.into() });
        assert_eq!(parse("//usr/bin is where"), message("/usr/bin is where"));
        assert_eq!(parse("  //help\nplease"), message("/help\nplease"));
        assert_eq!(parse("!!important: read"), message("!important: read"));
        assert_eq!(draft_message("//usr/bin"), "/usr/bin");
        assert_eq!(draft_message("!!x"), "!x");
        assert_eq!(
            parse("/usr/bin is where").unwrap_err().to_string(),
            "unknown command /usr/bin: see /help; //… sends a message that starts with /"
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

    #[test]
    fn a_command_is_one_line_but_ask_and_code_take_many() {
        let refused = parse("/add a.txt\nplease fix the bug").unwrap_err();
        assert_eq!(refused, InputError::LineBreak(Command::Add));
        assert_eq!(
            refused.to_string(),
            "/add is one line: the lines after it would be its arguments; send them as a message of their own (/ask and /code take text of many lines)"
        );
        assert_eq!(
            parse("/tokens\r\nwhy?"),
            Err(InputError::LineBreak(Command::Tokens))
        );
        assert_eq!(
            parse("!ls\nrm -rf x"),
            Err(InputError::LineBreak(Command::Run))
        );
        assert_eq!(
            parse("/code\nfix it:\n- a\n- b\n"),
            Ok(command(Command::Code, "fix it:\n- a\n- b"))
        );
        assert_eq!(draft_message("/ask why\nnot?"), "why\nnot?");
        assert_eq!(draft_message("/add a.txt\nplease"), "");
    }

    #[test]
    fn arguments_a_row_does_not_allow_are_refused() {
        let refused = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(refused("/apply al"), "/apply takes `all` or nothing");
        assert_eq!(refused("/tok x"), "/tokens takes no argument");
        assert_eq!(refused("/add "), "/add needs an argument: /add FILE...");
        assert_eq!(
            refused("/read-only"),
            "/read-only needs an argument: /read-only FILE..."
        );
        assert_eq!(refused("!"), "/run needs an argument: /run CMD");
        assert_eq!(parse("/apply all"), Ok(command(Command::Apply, "all")));
        assert_eq!(parse("/drop"), Ok(command(Command::Drop, "")));
    }

    proptest! {
        /// Every command is parsed, or refused, by what its row allows.
        #[test]
        fn a_command_parses_only_with_what_its_row_allows(
            name in prop::sample::select(Command::iter().map(Command::name).collect::<Vec<_>>()),
            args in "[^\\s/!][^\\n\\r]*|",
        ) {
            let c = Command::find(name).unwrap();
            let allowed = c.refuse_args(args.trim()).is_none();
            match parse(&format!("/{name} {args}")) {
                Ok(op) => {
                    prop_assert!(allowed);
                    prop_assert_eq!(op, command(c, args.trim()));
                }
                Err(e) => {
                    prop_assert!(!allowed);
                    prop_assert_eq!(e, InputError::Arguments(c.refuse_args(args.trim()).unwrap()));
                }
            }
        }

        /// Whatever follows a line break after a command is never made its arguments:
        /// `/ask` and `/code` send it all, any other command is refused.
        #[test]
        fn lines_after_a_command_are_never_its_arguments(
            name in prop::sample::select(Command::iter().map(Command::name).collect::<Vec<_>>()),
            first in "[^\\n\\r]*",
            brk in prop::sample::select(vec!["\n", "\r\n", "\r"]),
            rest in "\\PC*[^\\s]\\PC*",
        ) {
            let text = format!("/{name} {first}{brk}{rest}");
            match parse(&text) {
                Ok(Op::Command { command: c @ (Command::Ask | Command::Code), args }) => {
                    prop_assert_eq!(c.name(), name);
                    prop_assert!(args.contains(rest.trim()));
                }
                Err(InputError::LineBreak(c)) => prop_assert_eq!(c.name(), name),
                other => prop_assert!(false, "{:?}", other),
            }
        }


        /// Text that does not start with `/` or `!` is a message, byte for byte.
        #[test]
        fn other_text_is_a_message_as_typed(text in "\\PC*") {
            let trimmed = text.trim_start();
            prop_assume!(!trimmed.starts_with('/') && !trimmed.starts_with('!'));
            prop_assert_eq!(parse(&text), Ok(Op::Submit { text: text.clone() }));
            prop_assert_eq!(draft_message(&text), text.as_str());
        }

        /// `//` and `!!` escape the text after them, whatever it holds.
        #[test]
        fn a_doubled_prefix_is_a_message_byte_for_byte(text in "\\PC*", bang in any::<bool>()) {
            let prefix = if bang { '!' } else { '/' };
            let typed = format!("{prefix}{prefix}{text}");
            let sent = format!("{prefix}{text}");
            prop_assert_eq!(parse(&typed), Ok(Op::Submit { text: sent.clone() }));
            prop_assert_eq!(draft_message(&typed), sent.as_str());
        }

        /// Any text parses to an op or an unknown command, never a panic.
        #[test]
        fn any_text_parses(text in any::<String>()) {
            let _ = parse(&text);
            let _ = draft_message(&text);
        }
    }
}
