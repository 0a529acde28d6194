//! Commands run from the workspace (`/run`, `!CMD`, `/test`, `/lint`) and the auto-test
//! loop. What the user typed runs at once (`/run CMD`, `!CMD`, `/test CMD`, and `/test`
//! with the configured `test_cmd`); what tern did not get from the user asks first
//! (`Event::ConfirmCommand`): a command the model suggested, a test command guessed from
//! the repository's files (turning `auto_test` on is the confirmation for its runs).
//! Each runs on its own task
//! (`crate::run`: its own session and process group, a timeout, the API key kept out
//! of its environment, output capped), streams into the chat, and its output may join
//! the context as its own section, clipped by tokens, never copied into the history.

use std::time::Duration;

use super::activity::Activity;
use super::model::Model;
use super::protocol::{CommandPurpose, Event};
use super::run_loop::Loop;
use super::{EngineRole, EventSink, Internal, Session};
use crate::context::CommandText;
use crate::run::{self, CommandKind, Outcome, Output, RunOptions};

/// The commands' state beside the activity: the output on offer, and the loop.
#[derive(Debug, Default)]
pub(crate) struct CommandRunner {
    /// The last finished `/run`'s output, until it is added or another command runs.
    offered: Option<CommandText>,
    /// The auto-test loop under way: the fix rounds made so far.
    auto_rounds: Option<usize>,
}

/// What the commands read and change outside the runner: the engine lends them.
pub(super) struct Parts<'a> {
    pub(super) model: &'a Model,
    pub(super) session: &'a mut Session,
    pub(super) activity: &'a mut Activity,
    pub(super) events: &'a EventSink,
    pub(super) jobs: &'a Loop,
}

/// A test or lint run that ended, for the engine to follow up (`Engine::after_check`).
pub(super) struct Checked {
    pub(super) command: String,
    pub(super) passed: bool,
    pub(super) cancelled: bool,
    pub(super) auto: bool,
    pub(super) output: Output,
}

/// A failed check the model is asked to fix.
pub(super) struct Fix {
    pub(super) message: String,
    /// The auto-test loop's round this fix is (None: the user's own run).
    pub(super) next_round: Option<usize>,
}

/// A command that ended, back on the loop.
#[derive(Debug)]
pub(crate) struct Ran {
    command: String,
    purpose: CommandPurpose,
    output: Output,
    auto: bool,
    /// The work tree's trees before and after it, when it changed files.
    changed: Option<(git2::Oid, git2::Oid)>,
}

impl Ran {
    /// The command, and the trees before and after it, when it changed files.
    pub(super) fn changed(&self) -> Option<(&str, git2::Oid, git2::Oid)> {
        self.changed
            .map(|(before, after)| (self.command.as_str(), before, after))
    }
}

/// A tree of the work tree (None outside a git repository, or when git fails: the
/// command then runs untracked, as it always did).
async fn snapshot(root: &std::path::Path) -> Option<git2::Oid> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || crate::git::snapshot(&root).ok())
        .await
        .ok()
        .flatten()
}

impl CommandRunner {
    /// `/run CMD` and `!CMD`: the user typed it, so it runs at once.
    pub(super) fn run_command(&mut self, command: &str, p: &mut Parts<'_>) {
        self.launch(command.trim(), CommandPurpose::Run, None, p);
    }

    /// `Op::RunSuggested`: a command the model suggested asks first.
    pub(super) fn run_suggested(&mut self, command: &str, p: &mut Parts<'_>) {
        self.launch(
            command.trim(),
            CommandPurpose::Run,
            Some("the model suggested it".into()),
            p,
        );
    }

    /// `/test [CMD]` and `/lint [CMD]`: the given command, else the configured one, else
    /// one proposed from the repository's files (shown with where it came from).
    pub(super) fn check_command(
        &mut self,
        purpose: CommandPurpose,
        given: &str,
        p: &mut Parts<'_>,
    ) {
        let (configured, kind, setting) = match purpose {
            CommandPurpose::Lint => (&p.model.settings().lint_cmd, CommandKind::Lint, "lint_cmd"),
            _ => (&p.model.settings().test_cmd, CommandKind::Test, "test_cmd"),
        };
        if !given.trim().is_empty() {
            self.launch(given.trim(), purpose, None, p);
        } else if let Some(command) = configured.clone() {
            self.launch(&command, purpose, None, p);
        } else if let Some(s) = run::suggest(p.session.root(), kind) {
            self.launch(
                &s.command,
                purpose,
                Some(format!(
                    "proposed from {}; set {setting} to keep it",
                    s.reason
                )),
                p,
            );
        } else {
            p.events.error(format!(
                "no {setting} is set and none could be proposed from the repository: give the command (/{} CMD), or set {setting} in your config{}",
                purpose_name(purpose),
                match purpose {
                    CommandPurpose::Lint => "",
                    _ => " or with --test-cmd",
                }
            ));
        }
    }

    /// Runs `command`, or, with `ask` (where it came from, as the question says),
    /// asks the user first.
    fn launch(
        &mut self,
        command: &str,
        purpose: CommandPurpose,
        ask: Option<String>,
        p: &mut Parts<'_>,
    ) {
        if let Some(why) = refuse(command) {
            p.events.error(why);
            return;
        }
        if p.jobs.role() != EngineRole::Conversation {
            p.events
                .error("this tern runs one command; it runs no shell commands".into());
            return;
        }
        if let Some(busy) = p.activity.busy_reason() {
            p.events.error(format!("not run: {busy}"));
            return;
        }
        let Some(reason) = ask else {
            self.start_command(command.to_string(), purpose, false, p);
            return;
        };
        *p.activity = super::activity::Activity::Confirming {
            command: command.to_string(),
            purpose,
        };
        p.events.send(Event::ConfirmCommand {
            command: command.to_string(),
            purpose,
            reason: Some(reason),
        });
    }

    /// `Op::AnswerCommand`; false when nothing started (the engine is then idle).
    pub(super) fn answer_command(&mut self, yes: bool, p: &mut Parts<'_>) -> bool {
        let Some((command, purpose)) = p.activity.take_confirming() else {
            p.events.error("no command is waiting for an answer".into());
            return false;
        };
        if yes {
            self.start_command(command, purpose, false, p);
        } else {
            p.events.notice(format!("not run: {command}"));
        }
        yes
    }

    /// Esc on a question: the command does not run.
    pub(super) fn decline_command(&mut self, p: &mut Parts<'_>) -> bool {
        match p.activity.take_confirming() {
            Some((command, _)) => {
                p.events.notice(format!("not run: {command}"));
                true
            }
            None => false,
        }
    }

    fn start_command(
        &mut self,
        command: String,
        purpose: CommandPurpose,
        auto: bool,
        p: &mut Parts<'_>,
    ) {
        let cancel = p.activity.run();
        p.events.send(Event::CommandStarted {
            command: command.clone(),
            purpose,
            auto_round: auto.then(|| {
                (
                    self.auto_rounds.unwrap_or(0),
                    p.model.settings().auto_test_rounds,
                )
            }),
        });
        let options = RunOptions {
            timeout: Duration::from_secs(p.model.settings().command_timeout_secs),
            ..RunOptions::default()
        };
        let root = p.session.root().to_path_buf();
        let events = p.events.clone();
        let done = p.jobs.done();
        super::run_loop::spawn(done.clone(), async move {
            let mut report = |p: run::Progress| {
                events.send(Event::CommandProgress {
                    text: p.new_text,
                    lines: p.lines,
                    last_line: p.last_line,
                    elapsed_ms: p.elapsed.as_millis() as u64,
                })
            };
            // What the command changes in the work tree, for a rewind to put back
            // (see ARCHITECTURE.md, *The parts of the engine*: Rewind).
            let before = snapshot(&root).await;
            let output = run::run(&command, &root, &options, cancel, &mut report).await;
            let changed = match (before, snapshot(&root).await) {
                (Some(before), Some(after)) if before != after => Some((before, after)),
                _ => None,
            };
            let _ = done.send(Internal::Ran(Box::new(Ran {
                command,
                purpose,
                output,
                auto,
                changed,
            })));
        });
    }

    /// The tokens a command's output may take in the context.
    fn output_budget(model: &Model) -> usize {
        model
            .settings()
            .command_output_tokens
            .unwrap_or_else(|| crate::run::default_output_budget(model.window().window))
    }

    /// A command ended: its output is shown, kept on offer or (a failed check) put in
    /// the context. Returns the check that ended, for the engine to follow up.
    pub(super) fn finish_command(&mut self, ran: Ran, p: &mut Parts<'_>) -> Option<Checked> {
        let cancelled = p.activity.end_run();
        let Ran {
            command,
            purpose,
            output,
            auto,
            ..
        } = ran;
        // Redacted already: a key a command printed is neither shown nor sent.
        let clipped = run::clip(
            &output.text,
            p.model.counter(),
            Self::output_budget(p.model),
        );
        let text = CommandText {
            command: command.clone(),
            outcome: output.describe(),
            text: clipped.text,
            test: purpose == CommandPurpose::Test,
        };
        let passed = output.passed();
        // An earlier output of the same command described a tree that is gone; the
        // configured tests passing say the same of every earlier test run's.
        let configured = p.model.settings().test_cmd.as_deref() == Some(command.as_str());
        let tests_passed = text.test && passed && configured;
        let replaced = drop_output_of(p.session, &command);
        let tests_replaced = match tests_passed {
            true => drop_test_outputs(p.session),
            false => Vec::new(),
        };
        let tokens = added_tokens(p.session, p.model, &text);
        let check = purpose != CommandPurpose::Run;
        let in_context = check && !passed && !cancelled && !could_not_run(&output);
        if in_context {
            p.session.outputs.push(text);
            self.offered = None;
        } else {
            self.offered = (purpose == CommandPurpose::Run).then_some(text);
        }
        p.events.send(Event::CommandFinished {
            command: command.clone(),
            purpose,
            passed,
            outcome: output.describe(),
            lines: output.lines,
            elapsed_ms: output.elapsed.as_millis() as u64,
            tokens,
            in_context,
        });
        if replaced && !in_context {
            p.events.notice(format!(
                "the earlier output of `{command}` was removed from the context"
            ));
        }
        if !tests_replaced.is_empty() {
            let named: Vec<String> = tests_replaced.iter().map(|c| format!("`{c}`")).collect();
            p.events.notice(format!(
                "`{command}` passed: the earlier output of {} was removed from the context",
                named.join(", ")
            ));
        }
        check.then_some(Checked {
            command,
            passed,
            cancelled,
            auto,
            output,
        })
    }

    /// A test or lint run ended: a failure goes to the model (once per run, at most
    /// `auto_test_rounds` times in the loop); a pass or Esc ends the loop. Returns the
    /// message that asks the model to fix it, with the loop's next round when the run
    /// was the loop's.
    pub(super) fn after_check(&mut self, checked: &Checked, p: &Parts<'_>) -> Option<Fix> {
        let Checked {
            command,
            passed,
            cancelled,
            auto,
            output,
        } = checked;
        let rounds = self.auto_rounds.take().unwrap_or(0);
        if *cancelled {
            if *auto {
                p.events.notice("the auto-test loop was stopped".into());
            }
            return None;
        }
        if could_not_run(output) {
            // Not failing tests: a runner that is not installed, or not executable.
            // The model cannot fix that by editing code.
            p.events.error(format!(
                "`{command}` could not run ({}): is it installed? Set test_cmd or lint_cmd to the command that runs your checks; the model was not asked to fix anything",
                output.describe()
            ));
            return None;
        }
        if *passed {
            if *auto && rounds > 0 {
                p.events.notice(format!(
                    "`{command}` passes after {}",
                    crate::plural::count(rounds, "fix round")
                ));
            } else {
                p.events.notice(format!("`{command}` passes"));
            }
            return None;
        }
        if *auto && rounds >= p.model.settings().auto_test_rounds {
            p.events.warning(format!(
                "`{command}` still fails after {} (auto_test_rounds); its output is in the context for your next message",
                crate::plural::count(rounds, "fix round")
            ));
            return None;
        }
        Some(Fix {
            message: crate::prompts::command_failed(command, &output.describe()),
            next_round: auto.then_some(rounds + 1),
        })
    }

    /// The auto-test loop goes on: its fix round `round` is sent.
    pub(super) fn fix_round(&mut self, round: usize) {
        self.auto_rounds = Some(round);
    }

    /// After accepted edits were committed: the auto-test loop's next run, when it is on.
    pub(super) fn auto_test_after_landing(&mut self, p: &mut Parts<'_>) {
        if !p.model.settings().auto_test || p.jobs.role() != EngineRole::Conversation {
            return;
        }
        let Some(command) = p.model.settings().test_cmd.clone() else {
            let hint = run::suggest(p.session.root(), CommandKind::Test)
                .map(|s| format!(" (`{}` would fit, from {})", s.command, s.reason))
                .unwrap_or_default();
            p.events.warning(format!(
                "auto_test is on but test_cmd is not set, so no tests ran{hint}: set test_cmd or pass --test-cmd"
            ));
            return;
        };
        if let Some(why) = refuse(&command) {
            p.events.error(format!("test_cmd: {why}"));
            return;
        }
        self.auto_rounds.get_or_insert(0);
        self.start_command(command, CommandPurpose::Test, true, p);
    }

    /// A message of the user's own starts a new loop; Esc ends the one under way.
    pub(super) fn end_auto_test(&mut self, p: &mut Parts<'_>) {
        // A test run that is stopped says so itself when it ends.
        let running = matches!(*p.activity, Activity::Running { .. });
        if self.auto_rounds.take().is_some() && !p.activity.is_idle() && !running {
            p.events.notice("the auto-test loop was stopped".into());
        }
    }

    /// `/add-output` and `Op::AddOutput`; true when the context changed.
    pub(super) fn add_output(&mut self, p: &mut Parts<'_>) -> bool {
        let Some(text) = self.offered.take() else {
            let kept = outputs_named(p.session);
            match kept.is_empty() {
                true => p
                    .events
                    .error("no command output to add: /run a command first".into()),
                false => p.events.notice(format!(
                    "no new command output to add; in the context: {}",
                    kept.join(", ")
                )),
            }
            return false;
        };
        drop_output_of(p.session, &text.command);
        let tokens = added_tokens(p.session, p.model, &text);
        p.events.send(Event::OutputAdded {
            command: text.command.clone(),
            tokens,
        });
        p.session.outputs.push(text);
        true
    }

    /// `/drop-output [CMD]`; true when the context changed.
    pub(super) fn drop_output(&mut self, command: &str, p: &mut Parts<'_>) -> bool {
        let command = command.trim();
        let dropped: Vec<String> = match command.is_empty() {
            true => p.session.outputs.drain(..).map(|o| o.command).collect(),
            false if drop_output_of(p.session, command) => vec![command.to_string()],
            false => {
                let kept = outputs_named(p.session);
                p.events.error(format!(
                    "no output of `{command}` is in the context (there are: {})",
                    if kept.is_empty() {
                        "none".to_string()
                    } else {
                        kept.join(", ")
                    }
                ));
                return false;
            }
        };
        p.events.notice(match dropped.as_slice() {
            [] => "no command output is in the context".to_string(),
            [one] => format!("removed the output of `{one}` from the context"),
            many => format!("removed {} command outputs from the context", many.len()),
        });
        for command in dropped {
            p.events.send(Event::OutputDropped { command });
        }
        true
    }
}

/// What adding `text` adds to the request: its block, and the section's intro and
/// acknowledgement with the first output.
fn added_tokens(session: &Session, model: &Model, text: &CommandText) -> usize {
    let mut with = session.outputs.clone();
    with.push(text.clone());
    crate::context::outputs_tokens(&with, model.counter()).saturating_sub(
        crate::context::outputs_tokens(&session.outputs, model.counter()),
    )
}

/// The commands whose output is in the context, quoted, for messages.
fn outputs_named(session: &Session) -> Vec<String> {
    session
        .outputs
        .iter()
        .map(|o| format!("`{}`", o.command))
        .collect()
}

/// Removes the output of `command` from the context; whether there was one.
/// Removes the outputs of test runs from the context; returns their commands.
fn drop_test_outputs(session: &mut Session) -> Vec<String> {
    let (tests, kept) = std::mem::take(&mut session.outputs)
        .into_iter()
        .partition(|o| o.test);
    session.outputs = kept;
    tests.into_iter().map(|o: CommandText| o.command).collect()
}

fn drop_output_of(session: &mut Session, command: &str) -> bool {
    let before = session.outputs.len();
    session.outputs.retain(|o| o.command != command);
    before != session.outputs.len()
}

/// Whether a check's command never ran: the shell could not find or execute it (exit
/// 127 or 126), or it could not be started at all.
fn could_not_run(output: &Output) -> bool {
    matches!(
        output.outcome,
        Outcome::Exited(126 | 127) | Outcome::FailedToStart(_)
    )
}

/// Why a command is not run as given: what the user confirms must be all there is to
/// it, so no line breaks, control characters, or characters that make it read
/// differently from what runs (bidirectional overrides and isolates, invisible ones).
fn refuse(command: &str) -> Option<String> {
    if command.is_empty() {
        return Some("no command given".into());
    }
    let control = |c: char| c.is_control() && c != '\t';
    if command.chars().any(control) || crate::terminal_text::has_hidden(command) {
        return Some(format!(
            "not run: the command holds a line break, a control or an invisible character (\"{}\"); run one line at a time, as it reads",
            command.escape_debug()
        ));
    }
    None
}

fn purpose_name(purpose: CommandPurpose) -> &'static str {
    match purpose {
        CommandPurpose::Run => "run",
        CommandPurpose::Test => "test",
        CommandPurpose::Lint => "lint",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_with_hidden_characters_are_refused() {
        for hidden in [
            "a\nb",
            "a\rb",
            "ls \u{1b}[2K",
            "echo \u{202e}txt.exe",
            "x\u{2066}y",
            "echo ok\u{2028}rm -rf x",
            "\u{3164}=1 sh",
            "ls\u{200b}",
            "echo \u{e0041}",
        ] {
            assert!(refuse(hidden).is_some(), "{hidden:?}");
        }
        assert!(refuse("cargo test -- --nocapture\tx").is_none());
        assert!(refuse("echo héllo wörld 日本").is_none());
        assert!(refuse("echo ⚠️ done").is_none());
    }
}
