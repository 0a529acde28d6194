//! Slash commands: the table front ends complete from, and parsing.

/// One slash command, with what completion and `/help` show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

/// Every command, in the order `/help` lists them.
#[rustfmt::skip]
pub const COMMANDS: &[CommandSpec] = &[
    cmd("add", "FILE...", "add files to the chat as editable"),
    cmd("read-only", "FILE...", "add files read-only, or make chat files read-only"),
    cmd("drop", "[FILE...]", "remove files from the chat (all without arguments)"),
    cmd("ask", "[QUESTION]", "ask without editing; alone, switch to ask mode"),
    cmd("code", "[REQUEST]", "ask for edits; alone, switch to code mode"),
    cmd("apply", "[all]", "write the accepted hunks and commit them (all: accept every hunk first)"),
    cmd("discard", "", "forget the proposed edits; nothing is written"),
    cmd("diff", "", "show the proposed edits, or else the uncommitted changes"),
    cmd("undo", "", "revert tern's last commit, if it is safe to"),
    cmd("commit", "", "commit your own uncommitted changes to tracked files"),
    cmd("review", "[REF | --worktree]", "review the branch (or uncommitted changes) with the model"),
    cmd("tokens", "", "show the next request's tokens, section by section"),
    cmd("map", "", "show the repo map as the model sees it"),
    cmd("map-refresh", "", "rescan the repository for the repo map"),
    cmd("clear", "", "forget the conversation history"),
    cmd("compact", "", "summarize the conversation history now"),
    cmd("model", "[NAME]", "show or switch the main model"),
    cmd("trust", "[yes]", "show this repository's .tern.toml; with yes, trust exactly that content"),
    cmd("help", "", "list the commands"),
    cmd("quit", "", "leave tern"),
];

const fn cmd(name: &'static str, args: &'static str, help: &'static str) -> CommandSpec {
    CommandSpec { name, args, help }
}

/// A line the user typed, understood as a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    Command {
        spec: &'static CommandSpec,
        args: &'a str,
    },
    /// The name matched no command, or more than one by prefix.
    Unknown {
        name: &'a str,
        candidates: Vec<&'static str>,
    },
}

/// Parses `/name args`. A unique prefix is enough (`/tok` is `/tokens`).
pub fn parse(line: &str) -> Parsed<'_> {
    let body = line.trim_start().trim_start_matches('/');
    let (name, args) = match body.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (body, ""),
    };
    if let Some(spec) = COMMANDS.iter().find(|c| c.name == name) {
        return Parsed::Command { spec, args };
    }
    let candidates: Vec<&'static str> = COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(name))
        .map(|c| c.name)
        .collect();
    match candidates.as_slice() {
        [only] if !name.is_empty() => Parsed::Command {
            spec: COMMANDS.iter().find(|c| c.name == *only).expect("listed"),
            args,
        },
        _ => Parsed::Unknown { name, candidates },
    }
}

/// Commands whose name starts with `prefix`, for completion.
pub fn complete(prefix: &str) -> Vec<&'static CommandSpec> {
    let prefix = prefix.trim_start_matches('/');
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(prefix))
        .collect()
}

/// The text of `/help`.
pub fn help() -> String {
    let width = COMMANDS
        .iter()
        .map(|c| c.name.len() + c.args.len() + 2)
        .max()
        .unwrap_or(0);
    COMMANDS
        .iter()
        .map(|c| {
            let usage = format!("/{} {}", c.name, c.args);
            format!("{usage:<width$}  {}\n", c.help, width = width + 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_prefixes_and_unknowns() {
        assert!(
            matches!(parse("/tokens"), Parsed::Command { spec, args: "" } if spec.name == "tokens")
        );
        assert!(matches!(parse("/tok"), Parsed::Command { spec, .. } if spec.name == "tokens"));
        assert!(
            matches!(parse("/add  src/a.rs b.rs "), Parsed::Command { spec, args: "src/a.rs b.rs" } if spec.name == "add")
        );
        assert!(matches!(
            parse("/nope"),
            Parsed::Unknown { name: "nope", .. }
        ));
        // "c" is ambiguous between clear, code, commit and compact.
        assert!(
            matches!(parse("/c"), Parsed::Unknown { ref candidates, .. } if candidates.len() >= 2)
        );
    }

    #[test]
    fn help_lists_every_command_once() {
        let text = help();
        for c in COMMANDS {
            assert_eq!(
                text.matches(&format!("/{} ", c.name)).count(),
                1,
                "{}",
                c.name
            );
        }
        assert_eq!(complete("/rea").len(), 1);
    }
}
