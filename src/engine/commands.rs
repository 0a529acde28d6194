//! Slash commands: the one table front ends parse, complete and list from.

use strum::{EnumIter, EnumMessage, EnumProperty, EnumString, IntoEnumIterator, IntoStaticStr};

/// A slash command: one row each, in the order `/help` lists them. The name is the
/// variant's in kebab case, `args` and the message are what completion and `/help`
/// show, `complete` what the argument completes from (`ArgCompletion`, none when absent).
/// Adding a command is its row here and its arm in `Engine::command` (`mod.rs`).
#[rustfmt::skip]
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumIter, IntoStaticStr, EnumMessage, EnumProperty)]
#[strum(serialize_all = "kebab-case")]
pub enum Command {
    #[strum(props(args = "FILE...", complete = "repo-files"), message = "add files to the chat as editable")]
    Add,
    #[strum(props(args = "FILE...", complete = "repo-files"), message = "add files read-only, or make chat files read-only")]
    ReadOnly,
    #[strum(props(args = "[FILE...]", complete = "chat-files"), message = "remove files from the chat (all without arguments)")]
    Drop,
    #[strum(props(args = "[QUESTION]"), message = "ask without editing; alone, switch to ask mode")]
    Ask,
    #[strum(props(args = "[REQUEST]"), message = "ask for edits; alone, switch to code mode")]
    Code,
    #[strum(props(args = "[all]"), message = "write the accepted hunks and commit them (all: accept every hunk first)")]
    Apply,
    #[strum(props(args = "HUNK [REASON]"), message = "reject a proposed hunk; the reason goes to the model with it")]
    Reject,
    #[strum(props(args = "HUNK"), message = "split a proposed hunk where unchanged lines separate its changes")]
    Split,
    #[strum(props(args = ""), message = "forget the proposed edits; nothing is written")]
    Discard,
    #[strum(props(args = ""), message = "show the proposed edits, or else the uncommitted changes")]
    Diff,
    #[strum(props(args = "[REV]"), message = "show a commit (the last one: what tern just committed)")]
    Show,
    #[strum(props(args = "[turn]"), message = "revert tern's last commit (turn: every commit of the last turn), if it is safe to")]
    Undo,
    #[strum(props(args = "[TURN [code|chat]]"), message = "go back to before a turn: code, conversation or both; `redo` puts it back (alone: the turns)")]
    Rewind,
    #[strum(props(args = "[MESSAGE]"), message = "commit your own uncommitted changes to tracked files")]
    Commit,
    #[strum(props(args = "CMD"), message = "run a shell command in the repository root (after you confirm; also !CMD)")]
    Run,
    #[strum(props(args = "[CMD]"), message = "run the tests (test_cmd, or one proposed from the repository); failures go to the model to fix")]
    Test,
    #[strum(props(args = "[CMD]"), message = "run the linter (lint_cmd, or one proposed from the repository); problems go to the model to fix")]
    Lint,
    #[strum(props(args = ""), message = "add the last command's output to the context (its tokens are shown first)")]
    AddOutput,
    #[strum(props(args = "[CMD]"), message = "remove a command's output from the context (all without arguments)")]
    DropOutput,
    #[strum(props(args = "[REF | --worktree]"), message = "review the branch (or uncommitted changes) with the model")]
    Review,
    #[strum(props(args = ""), message = "show the next request's tokens, section by section")]
    Tokens,
    #[strum(props(args = ""), message = "show the repo map as the model sees it")]
    Map,
    #[strum(props(args = ""), message = "rescan the repository for the repo map")]
    MapRefresh,
    #[strum(props(args = "N"), message = "give the repo map N tokens for the rest of the session (0: no map); says the tokens freed or added")]
    MapTokens,
    #[strum(props(args = ""), message = "forget the conversation history")]
    Clear,
    #[strum(props(args = ""), message = "summarize the conversation history now")]
    Compact,
    #[strum(props(args = "[TURNS | all]"), message = "drop the oldest turns without a summary (when summarizing fails; all: the latest too); the model is told")]
    Forget,
    #[strum(props(args = "[NAME]", complete = "models"), message = "show or switch the main model")]
    Model,
    #[strum(props(args = "[ID]"), message = "list this repository's sessions (a picker in the workspace); with an id, switch to it (this one is saved first)")]
    Sessions,
    #[strum(props(args = "[yes]"), message = "show this repository's .tern.toml; with yes, trust exactly that content")]
    Trust,
    #[strum(props(args = "[TEXT]"), message = "write the message in $VISUAL or $EDITOR (ctrl-g in the message box)")]
    Editor,
    #[strum(props(args = ""), message = "list the commands")]
    Help,
    #[strum(props(args = ""), message = "leave tern")]
    Quit,
}

impl Command {
    /// What is typed after the `/`.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Its arguments as `/help` shows them (`FILE...`, `[all]`).
    pub fn args(self) -> &'static str {
        self.get_str("args").unwrap_or_default()
    }

    /// One line on what it does.
    pub fn help(self) -> &'static str {
        self.get_message().unwrap_or_default()
    }

    /// What its row lets it take, read from `args`: `""` nothing, `[all]` that word or
    /// nothing, `[REV]` anything or nothing, `FILE...` or `HUNK [REASON]` something.
    pub fn takes(self) -> Takes {
        let args = self.args();
        if args.is_empty() {
            return Takes::Nothing;
        }
        match args.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
            Some(word) if !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase()) => {
                Takes::WordOrNothing(word)
            }
            Some(_) => Takes::Anything,
            None => Takes::Something,
        }
    }

    /// Why its row does not allow `args` (trimmed), if it does not.
    pub(crate) fn refuse_args(self, args: &str) -> Option<String> {
        let name = self.name();
        match self.takes() {
            Takes::Nothing if !args.is_empty() => Some(format!("/{name} takes no argument")),
            Takes::WordOrNothing(word) if !args.is_empty() && args != word => {
                Some(format!("/{name} takes `{word}` or nothing"))
            }
            Takes::Something if args.is_empty() => Some(format!(
                "/{name} needs an argument: /{name} {}",
                self.args()
            )),
            _ => None,
        }
    }

    /// What its argument completes from.
    pub fn completion(self) -> ArgCompletion {
        self.get_str("complete")
            .and_then(|name| name.parse().ok())
            .unwrap_or(ArgCompletion::Nothing)
    }

    /// The command named `name`, or the only one it begins (`tok` is `tokens`).
    pub fn find(name: &str) -> Result<Command, UnknownCommand> {
        if let Some(command) = Command::iter().find(|c| c.name() == name) {
            return Ok(command);
        }
        let matching: Vec<Command> = Command::iter()
            .filter(|c| c.name().starts_with(name))
            .collect();
        match matching.as_slice() {
            [only] if !name.is_empty() => Ok(*only),
            // A bare `/` begins every command: /help lists them, not a "did you mean".
            _ if name.is_empty() => Err(UnknownCommand {
                name: String::new(),
                candidates: Vec::new(),
            }),
            _ => Err(UnknownCommand {
                name: name.to_string(),
                candidates: matching.iter().map(|c| c.name()).collect(),
            }),
        }
    }
}

/// What a command takes after its name (from its row's `args`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    Nothing,
    /// That one word, or nothing (`[all]`).
    WordOrNothing(&'static str),
    /// Anything, or nothing (`[REV]`, `[FILE...]`).
    Anything,
    /// At least something (`FILE...`, `HUNK [REASON]`).
    Something,
}

/// What a command's argument completes from (a row's `complete` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString)]
#[strum(serialize_all = "kebab-case")]
pub enum ArgCompletion {
    /// The repository's files.
    RepoFiles,
    /// The chat's files.
    ChatFiles,
    /// The models tern knows.
    Models,
    /// Free text, a ref, or nothing.
    Nothing,
}

/// A name that is no command, or begins more than one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCommand {
    pub name: String,
    /// The commands it begins (none, or several).
    pub candidates: Vec<&'static str>,
}

impl std::fmt::Display for UnknownCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hint = match self.candidates.is_empty() {
            true => "see /help; //… sends a message that starts with /".to_string(),
            false => format!("did you mean /{}?", self.candidates.join(", /")),
        };
        write!(f, "unknown command /{}: {hint}", self.name)
    }
}

/// Commands whose name starts with `prefix`, for completion (none after `//`, which
/// begins a message).
pub fn complete(prefix: &str) -> Vec<Command> {
    let prefix = prefix.strip_prefix('/').unwrap_or(prefix);
    Command::iter()
        .filter(|c| c.name().starts_with(prefix))
        .collect()
}

/// The text of `/help`.
pub fn help() -> String {
    let width = Command::iter()
        .map(|c| c.name().len() + c.args().len() + 2)
        .max()
        .unwrap_or(0);
    Command::iter()
        .map(|c| {
            let usage = format!("/{} {}", c.name(), c.args());
            format!("{usage:<width$}  {}\n", c.help(), width = width + 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_prefixes_and_unknowns() {
        assert_eq!(Command::find("tokens"), Ok(Command::Tokens));
        assert_eq!(Command::find("tok"), Ok(Command::Tokens));
        assert_eq!(Command::find("read-only"), Ok(Command::ReadOnly));
        let unknown = Command::find("nope").unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "unknown command /nope: see /help; //… sends a message that starts with /"
        );
        assert!(Command::find("").unwrap_err().candidates.is_empty());
        // "c" is ambiguous between clear, code, commit and compact.
        let ambiguous = Command::find("c").unwrap_err();
        assert!(ambiguous.candidates.len() >= 2, "{ambiguous:?}");
        assert!(
            ambiguous
                .to_string()
                .starts_with("unknown command /c: did you mean /code, /"),
            "{ambiguous}"
        );
    }

    #[test]
    fn every_row_is_whole_and_found_under_its_own_name() {
        for c in Command::iter() {
            assert_eq!(Command::find(c.name()), Ok(c));
            assert!(!c.help().is_empty(), "{c:?} has no help");
            assert!(c.get_str("args").is_some(), "{c:?} has no args");
            if let Some(name) = c.get_str("complete") {
                assert!(name.parse::<ArgCompletion>().is_ok(), "{c:?}: {name}");
            }
        }
        assert_eq!(Command::AddOutput.name(), "add-output");
        assert_eq!(Command::Drop.completion(), ArgCompletion::ChatFiles);
        assert_eq!(Command::Diff.completion(), ArgCompletion::Nothing);
    }

    #[test]
    fn a_row_says_what_arguments_its_command_takes() {
        assert_eq!(Command::Tokens.takes(), Takes::Nothing);
        assert_eq!(Command::Apply.takes(), Takes::WordOrNothing("all"));
        assert_eq!(Command::Undo.takes(), Takes::WordOrNothing("turn"));
        assert_eq!(Command::Review.takes(), Takes::Anything);
        assert_eq!(Command::Drop.takes(), Takes::Anything);
        assert_eq!(Command::Add.takes(), Takes::Something);
        assert_eq!(Command::Reject.takes(), Takes::Something);
        let refused = |c: Command, args| c.refuse_args(args);
        assert_eq!(
            refused(Command::Apply, "al").as_deref(),
            Some("/apply takes `all` or nothing")
        );
        assert_eq!(refused(Command::Apply, "all"), None);
        assert_eq!(refused(Command::Apply, ""), None);
        assert_eq!(
            refused(Command::Tokens, "x").as_deref(),
            Some("/tokens takes no argument")
        );
        assert_eq!(
            refused(Command::Add, "").as_deref(),
            Some("/add needs an argument: /add FILE...")
        );
        assert_eq!(refused(Command::Add, "a.txt"), None);
        assert_eq!(refused(Command::Show, "HEAD~2"), None);
    }

    #[test]
    fn help_lists_every_command_once() {
        let text = help();
        for c in Command::iter() {
            assert_eq!(
                text.matches(&format!("/{} ", c.name())).count(),
                1,
                "{}",
                c.name()
            );
        }
        assert_eq!(complete("/rea"), [Command::ReadOnly]);
        assert!(complete("//").is_empty());
    }
}
