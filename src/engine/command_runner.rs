//! Commands run from the workspace (`/run`, `!CMD`, `/test`, `/lint`) and the auto-test
//! loop. Each is confirmed by the user first (`Event::ConfirmCommand`; turning
//! `auto_test` on is the confirmation for its runs), runs on its own task
//! (`crate::run`: its own session and process group, a timeout, the API key kept out
//! of its environment, output capped), streams into the chat, and its output may join
//! the context as its own section, clipped by tokens, never copied into the history.

use std::time::Duration;

use super::protocol::{ChatMode, CommandPurpose, Event};
use super::turn::TurnKind;
use super::{Engine, EngineRole, Internal};
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

/// A command that ended, back on the loop.
#[derive(Debug)]
pub(crate) struct Ran {
    command: String,
    purpose: CommandPurpose,
    output: Output,
    auto: bool,
}

impl Engine {
    /// `/run CMD` and `!CMD`: asks the user before anything runs.
    pub(super) fn run_command(&mut self, command: &str) {
        self.ask_to_run(command.trim(), CommandPurpose::Run, None);
    }

    /// `/test [CMD]` and `/lint [CMD]`: the given command, else the configured one, else
    /// one proposed from the repository's files (shown with where it came from).
    pub(super) fn check_command(&mut self, purpose: CommandPurpose, given: &str) {
        let (configured, kind, setting) = match purpose {
            CommandPurpose::Lint => (
                &self.model.settings().lint_cmd,
                CommandKind::Lint,
                "lint_cmd",
            ),
            _ => (
                &self.model.settings().test_cmd,
                CommandKind::Test,
                "test_cmd",
            ),
        };
        if !given.trim().is_empty() {
            self.ask_to_run(given.trim(), purpose, None);
        } else if let Some(command) = configured.clone() {
            self.ask_to_run(&command, purpose, Some(format!("{setting} setting")));
        } else if let Some(s) = run::suggest(self.session.root(), kind) {
            self.ask_to_run(
                &s.command,
                purpose,
                Some(format!(
                    "proposed from {}; set {setting} to keep it",
                    s.reason
                )),
            );
        } else {
            self.events.error(format!(
                "no {setting} is set and none could be proposed from the repository: give the command (/{} CMD), or set {setting} in your config{}",
                purpose_name(purpose),
                match purpose {
                    CommandPurpose::Lint => "",
                    _ => " or with --test-cmd",
                }
            ));
        }
    }

    fn ask_to_run(&mut self, command: &str, purpose: CommandPurpose, reason: Option<String>) {
        if let Some(why) = refuse(command) {
            self.events.error(why);
            return;
        }
        if self.run_loop.role() != EngineRole::Conversation {
            self.events
                .error("this tern runs one command; it runs no shell commands".into());
            return;
        }
        if let Some(busy) = self.activity.busy_reason() {
            self.events.error(format!("not run: {busy}"));
            return;
        }
        self.activity = super::activity::Activity::Confirming {
            command: command.to_string(),
            purpose,
        };
        self.events.send(Event::ConfirmCommand {
            command: command.to_string(),
            purpose,
            reason,
        });
    }

    /// `Op::AnswerCommand`.
    pub(super) fn answer_command(&mut self, yes: bool) {
        let Some((command, purpose)) = self.activity.take_confirming() else {
            self.events
                .error("no command is waiting for an answer".into());
            self.idle_if_done();
            return;
        };
        if yes {
            self.start_command(command, purpose, false);
        } else {
            self.events.notice(format!("not run: {command}"));
            self.idle_if_done();
        }
    }

    /// Esc on a question: the command does not run.
    pub(super) fn decline_command(&mut self) -> bool {
        match self.activity.take_confirming() {
            Some((command, _)) => {
                self.events.notice(format!("not run: {command}"));
                true
            }
            None => false,
        }
    }

    fn start_command(&mut self, command: String, purpose: CommandPurpose, auto: bool) {
        let cancel = self.activity.run();
        self.events.send(Event::CommandStarted {
            command: command.clone(),
            purpose,
            auto_round: auto.then(|| {
                (
                    self.runner.auto_rounds.unwrap_or(0),
                    self.model.settings().auto_test_rounds,
                )
            }),
        });
        let options = RunOptions {
            timeout: Duration::from_secs(self.model.settings().command_timeout_secs),
            ..RunOptions::default()
        };
        let root = self.session.root().to_path_buf();
        let events = self.events.clone();
        let done = self.run_loop.done();
        super::run_loop::spawn(done.clone(), async move {
            let mut report = |p: run::Progress| {
                events.send(Event::CommandProgress {
                    text: p.new_text,
                    lines: p.lines,
                    last_line: p.last_line,
                    elapsed_ms: p.elapsed.as_millis() as u64,
                })
            };
            let output = run::run(&command, &root, &options, cancel, &mut report).await;
            let _ = done.send(Internal::Ran(Box::new(Ran {
                command,
                purpose,
                output,
                auto,
            })));
        });
    }

    /// The tokens a command's output may take in the context.
    fn output_budget(&self) -> usize {
        self.model
            .settings()
            .command_output_tokens
            .unwrap_or_else(|| crate::run::default_output_budget(self.model.window().window))
    }

    pub(super) fn finish_command(&mut self, ran: Ran) {
        let cancelled = self.activity.end_run();
        let Ran {
            command,
            purpose,
            output,
            auto,
        } = ran;
        // Redacted already: a key a command printed is neither shown nor sent.
        let clipped = run::clip(&output.text, self.model.counter(), self.output_budget());
        let text = CommandText {
            command: command.clone(),
            outcome: output.describe(),
            text: clipped.text,
        };
        // An earlier output of the same command described a tree that is gone.
        let replaced = self.drop_output_of(&command);
        let tokens = self.added_tokens(&text);
        let check = purpose != CommandPurpose::Run;
        let passed = output.passed();
        let in_context = check && !passed && !cancelled && !could_not_run(&output);
        if in_context {
            self.session.outputs.push(text);
            self.runner.offered = None;
        } else {
            self.runner.offered = (purpose == CommandPurpose::Run).then_some(text);
        }
        self.events.send(Event::CommandFinished {
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
            self.events.notice(format!(
                "the earlier output of `{command}` was removed from the context"
            ));
        }
        self.publish_budget();
        self.save_session();
        if check {
            self.after_check(&command, passed, cancelled, auto, &output);
        }
        self.idle_if_done();
    }

    /// A test or lint run ended: a failure goes to the model (once per run, at most
    /// `auto_test_rounds` times in the loop); a pass or Esc ends the loop.
    fn after_check(
        &mut self,
        command: &str,
        passed: bool,
        cancelled: bool,
        auto: bool,
        output: &Output,
    ) {
        let rounds = self.runner.auto_rounds.take().unwrap_or(0);
        if cancelled {
            if auto {
                self.events.notice("the auto-test loop was stopped".into());
            }
            return;
        }
        if could_not_run(output) {
            // Not failing tests: a runner that is not installed, or not executable.
            // The model cannot fix that by editing code.
            self.events.error(format!(
                "`{command}` could not run ({}): is it installed? Set test_cmd or lint_cmd to the command that runs your checks; the model was not asked to fix anything",
                output.describe()
            ));
            return;
        }
        if passed {
            if auto && rounds > 0 {
                self.events.notice(format!(
                    "`{command}` passes after {}",
                    crate::plural::count(rounds, "fix round")
                ));
            } else {
                self.events.notice(format!("`{command}` passes"));
            }
            return;
        }
        if auto && rounds >= self.model.settings().auto_test_rounds {
            self.events.warning(format!(
                "`{command}` still fails after {} (auto_test_rounds); its output is in the context for your next message",
                crate::plural::count(rounds, "fix round")
            ));
            return;
        }
        if let Some(waiting) = self.undecided_hunks() {
            self.events.notice(format!(
                "`{command}` failed; its output is in the context, but {waiting} proposed hunks still wait for a decision, so the model is not asked to fix it now"
            ));
            return;
        }
        if auto {
            if !self.may_spend(super::spending::Unattended::AutoTest) {
                return;
            }
            self.runner.auto_rounds = Some(rounds + 1);
        }
        let message = crate::prompts::command_failed(command, &output.describe());
        self.end_proposal();
        self.start_turn(message, ChatMode::Code, TurnKind::Fix);
    }

    /// After accepted edits were committed: the auto-test loop's next run, when it is on.
    pub(super) fn auto_test_after_landing(&mut self) {
        if !self.model.settings().auto_test || self.run_loop.role() != EngineRole::Conversation {
            return;
        }
        let Some(command) = self.model.settings().test_cmd.clone() else {
            let hint = run::suggest(self.session.root(), CommandKind::Test)
                .map(|s| format!(" (`{}` would fit, from {})", s.command, s.reason))
                .unwrap_or_default();
            self.events.warning(format!(
                "auto_test is on but test_cmd is not set, so no tests ran{hint}: set test_cmd or pass --test-cmd"
            ));
            return;
        };
        if let Some(why) = refuse(&command) {
            self.events.error(format!("test_cmd: {why}"));
            return;
        }
        self.runner.auto_rounds.get_or_insert(0);
        self.start_command(command, CommandPurpose::Test, true);
    }

    /// A message of the user's own starts a new loop; Esc ends the one under way.
    pub(super) fn end_auto_test(&mut self) {
        // A test run that is stopped says so itself when it ends.
        let running = matches!(self.activity, super::activity::Activity::Running { .. });
        if self.runner.auto_rounds.take().is_some() && !self.activity.is_idle() && !running {
            self.events.notice("the auto-test loop was stopped".into());
        }
    }

    /// `/add-output` and `Op::AddOutput`.
    pub(super) fn add_output(&mut self) {
        let Some(text) = self.runner.offered.take() else {
            let kept = self.outputs_named();
            match kept.is_empty() {
                true => self
                    .events
                    .error("no command output to add: /run a command first".into()),
                false => self.events.notice(format!(
                    "no new command output to add; in the context: {}",
                    kept.join(", ")
                )),
            }
            return;
        };
        self.drop_output_of(&text.command);
        let tokens = self.added_tokens(&text);
        self.events.send(Event::OutputAdded {
            command: text.command.clone(),
            tokens,
        });
        self.session.outputs.push(text);
        self.publish_budget();
        self.save_session();
    }

    /// What adding `text` adds to the request: its block, and the section's intro and
    /// acknowledgement with the first output.
    fn added_tokens(&self, text: &CommandText) -> usize {
        let mut with = self.session.outputs.clone();
        with.push(text.clone());
        crate::context::outputs_tokens(&with, self.model.counter()).saturating_sub(
            crate::context::outputs_tokens(&self.session.outputs, self.model.counter()),
        )
    }

    /// `/drop-output [CMD]`.
    pub(super) fn drop_output(&mut self, command: &str) {
        let command = command.trim();
        let dropped: Vec<String> = match command.is_empty() {
            true => self.session.outputs.drain(..).map(|o| o.command).collect(),
            false if self.drop_output_of(command) => vec![command.to_string()],
            false => {
                let kept = self.outputs_named();
                self.events.error(format!(
                    "no output of `{command}` is in the context (there are: {})",
                    if kept.is_empty() {
                        "none".to_string()
                    } else {
                        kept.join(", ")
                    }
                ));
                return;
            }
        };
        self.events.notice(match dropped.as_slice() {
            [] => "no command output is in the context".to_string(),
            [one] => format!("removed the output of `{one}` from the context"),
            many => format!("removed {} command outputs from the context", many.len()),
        });
        for command in dropped {
            self.events.send(Event::OutputDropped { command });
        }
        self.publish_budget();
        self.save_session();
    }

    /// The commands whose output is in the context, quoted, for messages.
    fn outputs_named(&self) -> Vec<String> {
        self.session
            .outputs
            .iter()
            .map(|o| format!("`{}`", o.command))
            .collect()
    }

    fn drop_output_of(&mut self, command: &str) -> bool {
        let before = self.session.outputs.len();
        self.session.outputs.retain(|o| o.command != command);
        before != self.session.outputs.len()
    }
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
