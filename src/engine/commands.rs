//! Slash commands: the table front ends complete from, and parsing.

/// A slash command. Each place that acts on commands matches on this exhaustively, so a
/// new command does not compile until the table, the engine and completion handle it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Add,
    ReadOnly,
    Drop,
    Ask,
    Code,
    Apply,
    Reject,
    Split,
    Discard,
    Diff,
    Show,
    Undo,
    Commit,
    Run,
    Test,
    Lint,
    AddOutput,
    DropOutput,
    Review,
    Tokens,
    Map,
    MapRefresh,
    Clear,
    Compact,
    Forget,
    Model,
    Trust,
    Editor,
    Help,
    Quit,
}

/// One slash command, with what completion and `/help` show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    pub command: Command,
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

impl Command {
    /// Every command, in the order `/help` lists them.
    pub const ALL: [Command; 30] = [
        Command::Add,
        Command::ReadOnly,
        Command::Drop,
        Command::Ask,
        Command::Code,
        Command::Apply,
        Command::Reject,
        Command::Split,
        Command::Discard,
        Command::Diff,
        Command::Show,
        Command::Undo,
        Command::Commit,
        Command::Run,
        Command::Test,
        Command::Lint,
        Command::AddOutput,
        Command::DropOutput,
        Command::Review,
        Command::Tokens,
        Command::Map,
        Command::MapRefresh,
        Command::Clear,
        Command::Compact,
        Command::Forget,
        Command::Model,
        Command::Trust,
        Command::Editor,
        Command::Help,
        Command::Quit,
    ];

    /// Its name, arguments and help.
    #[rustfmt::skip]
    pub const fn spec(self) -> CommandSpec {
        let (name, args, help) = match self {
            Command::Add => ("add", "FILE...", "add files to the chat as editable"),
            Command::ReadOnly => ("read-only", "FILE...", "add files read-only, or make chat files read-only"),
            Command::Drop => ("drop", "[FILE...]", "remove files from the chat (all without arguments)"),
            Command::Ask => ("ask", "[QUESTION]", "ask without editing; alone, switch to ask mode"),
            Command::Code => ("code", "[REQUEST]", "ask for edits; alone, switch to code mode"),
            Command::Apply => ("apply", "[all]", "write the accepted hunks and commit them (all: accept every hunk first)"),
            Command::Reject => ("reject", "HUNK [REASON]", "reject a proposed hunk; the reason goes to the model with it"),
            Command::Split => ("split", "HUNK", "split a proposed hunk where unchanged lines separate its changes"),
            Command::Discard => ("discard", "", "forget the proposed edits; nothing is written"),
            Command::Diff => ("diff", "", "show the proposed edits, or else the uncommitted changes"),
            Command::Show => ("show", "[REV]", "show a commit (the last one: what tern just committed)"),
            Command::Undo => ("undo", "[turn]", "revert tern's last commit (turn: every commit of the last turn), if it is safe to"),
            Command::Commit => ("commit", "[MESSAGE]", "commit your own uncommitted changes to tracked files"),
            Command::Run => ("run", "CMD", "run a shell command in the repository root (after you confirm; also !CMD)"),
            Command::Test => ("test", "[CMD]", "run the tests (test_cmd, or one proposed from the repository); failures go to the model to fix"),
            Command::Lint => ("lint", "[CMD]", "run the linter (lint_cmd, or one proposed from the repository); problems go to the model to fix"),
            Command::AddOutput => ("add-output", "", "add the last command's output to the context (its tokens are shown first)"),
            Command::DropOutput => ("drop-output", "[CMD]", "remove a command's output from the context (all without arguments)"),
            Command::Review => ("review", "[REF | --worktree]", "review the branch (or uncommitted changes) with the model"),
            Command::Tokens => ("tokens", "", "show the next request's tokens, section by section"),
            Command::Map => ("map", "", "show the repo map as the model sees it"),
            Command::MapRefresh => ("map-refresh", "", "rescan the repository for the repo map"),
            Command::Clear => ("clear", "", "forget the conversation history"),
            Command::Compact => ("compact", "", "summarize the conversation history now"),
            Command::Forget => ("forget", "[TURNS]", "drop the oldest turns without a summary (when summarizing fails); the model is told"),
            Command::Model => ("model", "[NAME]", "show or switch the main model"),
            Command::Trust => ("trust", "[yes]", "show this repository's .tern.toml; with yes, trust exactly that content"),
            Command::Editor => ("editor", "[TEXT]", "write the message in $VISUAL or $EDITOR (ctrl-g in the message box)"),
            Command::Help => ("help", "", "list the commands"),
            Command::Quit => ("quit", "", "leave tern"),
        };
        CommandSpec { command: self, name, args, help }
    }
}

/// Every command's spec, in `/help` order.
pub const COMMANDS: [CommandSpec; Command::ALL.len()] = {
    let mut specs = [Command::Add.spec(); Command::ALL.len()];
    let mut i = 0;
    while i < Command::ALL.len() {
        specs[i] = Command::ALL[i].spec();
        i += 1;
    }
    specs
};

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
    fn every_command_is_listed_once_under_its_own_name() {
        for (i, c) in Command::ALL.iter().enumerate() {
            assert_eq!(COMMANDS[i].command, *c);
            assert_eq!(Command::ALL.iter().filter(|x| *x == c).count(), 1, "{c:?}");
            assert!(
                matches!(parse(&format!("/{}", c.spec().name)), Parsed::Command { spec, .. } if spec.command == *c)
            );
        }
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
