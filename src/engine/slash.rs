//! Running slash commands. The command table is in `commands.rs`; `input.rs` parses
//! what the user typed into them.

use super::commands::{self, Command};
use super::git_job::{GitDone, GitJobError};
use super::protocol::{ChatMode, CommandPurpose, Event, FileMode, ReviewOp};
use super::{Engine, Internal};
use crate::branch_review::ReviewOptions;

impl Engine {
    pub(super) fn command(&mut self, command: Command, args: &str) {
        let args = args.trim().to_string();
        let words: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        match command {
            Command::Add => {
                self.add_files(&words, FileMode::Editable);
                self.files_changed();
            }
            Command::ReadOnly => {
                self.add_files(&words, FileMode::ReadOnly);
                self.files_changed();
            }
            Command::Drop => self.drop_files(&words),
            Command::Ask | Command::Code => {
                let mode = if command == Command::Ask {
                    ChatMode::Ask
                } else {
                    ChatMode::Code
                };
                if args.is_empty() {
                    self.session.mode = mode;
                    self.events.send(Event::Mode { mode });
                    self.publish_budget();
                    self.save_session();
                } else {
                    self.start_user_turn(args, mode);
                }
            }
            Command::Apply if args == "all" => self.apply_all(),
            Command::Apply => self.review(ReviewOp::Apply),
            Command::Reject => self.reject_with_reason(&args),
            Command::Discard => self.discard(),
            Command::Diff => self.show_diff(),
            Command::Show => self.show_commit(&args),
            Command::Undo => self.undo_command(&args),
            Command::Commit => {
                let settings = self.model.settings().clone();
                let message = (!args.trim().is_empty()).then(|| args.trim().to_string());
                self.git_job("commit", move |repo| {
                    commit_all(repo, &settings, message.as_deref()).map(GitDone::said)
                });
            }
            Command::Run => self.run_command(&args),
            Command::Test => self.check_command(CommandPurpose::Test, &args),
            Command::Lint => self.check_command(CommandPurpose::Lint, &args),
            Command::AddOutput => self.add_output(),
            Command::DropOutput => self.drop_output(&args),
            Command::Tokens => {
                let report = self.report(&self.conversation.draft().to_string());
                self.events.send(Event::Output {
                    title: "tokens".into(),
                    text: report.render_table(),
                });
            }
            Command::Review => {
                let source = super::branch_review::source(&args);
                let options = ReviewOptions::from(self.model.settings());
                self.start_review(source, options, true);
            }
            Command::Map => {
                let text = self.map.shown(
                    self.conversation.draft(),
                    &self.model,
                    &self.session,
                    &self.events,
                );
                self.events.send(Event::Output {
                    title: "repo map".into(),
                    text,
                });
            }
            Command::MapRefresh => self.map.refresh_now(&self.events, &self.run_loop),
            Command::Clear => {
                self.session.history.clear();
                self.history_cleared();
                self.events.notice("history cleared".into());
                self.publish_budget();
            }
            Command::Compact => self.compact(),
            Command::Forget => self.forget(&args),
            Command::Model => {
                if args.is_empty() {
                    self.events.notice(format!(
                        "model {} (window {}, weak model {})",
                        self.model.info().name, self.model.window().window, self.model.settings().weak_model
                    ));
                } else {
                    self.switch_model(&args);
                }
            }
            Command::Help => self.events.send(Event::Output {
                title: "commands".into(),
                text: commands::help(),
            }),
            Command::Trust => self.trust_command(&args),
            Command::Quit => self.run_loop.quit(),
            Command::Split => self.review(ReviewOp::Split {
                id: args.trim().to_string(),
            }),
            // Only a front end with a terminal can hand it to an editor.
            Command::Editor => self.events.error(
                "/editor opens an editor in the workspace (ctrl-g in the message box); there is none here"
                    .into(),
            ),
        }
    }

    fn drop_files(&mut self, words: &[String]) {
        if words.is_empty() {
            self.session.drop_all();
            self.events
                .notice("dropped every file from the chat".into());
        }
        for word in words {
            let dropped = self
                .session
                .resolve(word, self.conversation.cwd())
                .map_err(|e| e.to_string())
                .and_then(|rel| self.session.drop_file(&rel).map_err(|e| e.to_string()));
            if let Err(e) = dropped {
                self.events.error(e);
            }
        }
        self.files_changed();
    }

    /// The proposed edits as a unified diff, or else the work tree's uncommitted changes.
    fn show_diff(&mut self) {
        let text = match self.pending_diff() {
            Some(diff) => diff,
            None => match crate::git::worktree_diff(self.session.root()) {
                Ok(diff) if diff.is_empty() => {
                    "no proposed edits and no uncommitted changes\n".into()
                }
                Ok(diff) => diff,
                Err(e) => {
                    self.events.error(e.to_string());
                    return;
                }
            },
        };
        self.events.send(Event::Output {
            title: "diff".into(),
            text,
        });
    }

    /// `/show [REV]`: a commit and its diff (HEAD by default: what tern just landed).
    fn show_commit(&mut self, rev: &str) {
        let rev = if rev.trim().is_empty() {
            "HEAD"
        } else {
            rev.trim()
        };
        let shown = git2::Repository::discover(self.session.root())
            .map_err(|e| e.to_string())
            // libgit2's words without its class and code (`class=Reference (4)`).
            .and_then(|repo| crate::git::show(&repo, rev).map_err(|e| e.message().to_string()));
        match shown {
            Ok((title, text)) => self.events.send(Event::Output { title, text }),
            Err(e) => self.events.error(format!("/show {rev}: {e}")),
        }
    }

    /// Runs a git command on a blocking thread (hooks may take a while).
    pub(super) fn git_job(
        &mut self,
        what: &'static str,
        job: impl FnOnce(&git2::Repository) -> Result<GitDone, GitJobError> + Send + 'static,
    ) {
        if let Some(busy) = self.activity.busy_reason() {
            self.events.error(format!("/{what} waits: {busy}"));
            return;
        }
        let root = self.session.root().to_path_buf();
        let done = self.run_loop.done();
        self.activity.git();
        super::run_loop::spawn_blocking(done.clone(), move || {
            let result = git2::Repository::open(&root)
                .map_err(|source| GitJobError::NotARepository { what, source })
                .and_then(|repo| job(&repo));
            let _ = done.send(Internal::Git(result));
        });
    }

    /// `/undo [turn]`.
    fn undo_command(&mut self, args: &str) {
        let turn = self.session.turns.last();
        match args.trim() {
            "" => self.git_job("undo", move |repo| super::undo_commits::undo_one(repo, &turn)),
            "turn" => self.git_job("undo", move |repo| {
                let done = crate::git::undo_turn(repo, &turn)?;
                super::undo_commits::turn_done(repo, done)
            }),
            other => self.events.error(format!(
                "/undo takes nothing (tern's last commit) or `turn` (all of the last turn's commits), not {other:?}"
            )),
        }
    }

    /// `/trust`: shows the repository's `.tern.toml` and what in it waits for trust;
    /// `/trust yes` trusts exactly that content (as `tern trust` does), for the next
    /// start.
    fn trust_command(&mut self, args: &str) {
        let root = self.session.root().to_path_buf();
        let repo = match crate::config::RepoConfig::read(&root) {
            Ok(Some(repo)) => repo,
            Ok(None) => {
                return self
                    .events
                    .notice("this repository has no .tern.toml".into());
            }
            Err(e) => return self.events.error(e.to_string()),
        };
        let Some(file) = crate::config::trust_file() else {
            return self
                .events
                .error("no user config directory to keep trusted repositories in".into());
        };
        let mut store = crate::config::TrustStore::open(&file);
        let needing = repo.needing_trust().join(", ");
        let note = crate::config::never_from_repository_note();
        let damaged = store.damage();
        if args.trim() != "yes" {
            if let Some(damage) = damaged {
                self.events.warning(damage);
            }
            let state = if store.trusts(&root, &repo.text) {
                "trusted"
            } else {
                "not trusted"
            };
            self.events.send(Event::Output {
                title: repo.path.display().to_string(),
                text: format!(
                    "{}\nThis content is {state}. Waiting for trust: {}. Type /trust yes to trust exactly this content; it applies when tern starts next. {note}\n",
                    repo.text,
                    if needing.is_empty() { "nothing" } else { &needing }
                ),
            });
            return;
        }
        let trusted = store.trust(&root, &repo.text);
        if let Some(damage) = store.damage() {
            self.events.warning(damage);
        }
        match trusted {
            Ok(()) => self.events.notice(format!(
                "trusted this .tern.toml ({}); restart tern to use it; a change to the file needs /trust again",
                repo.trust_effect()
            )),
            Err(e) => self.events.error(format!("cannot write {}: {e}", file.display())),
        }
    }
}

/// `/commit [MESSAGE]`: the user's own uncommitted changes to tracked files, in one
/// commit.
fn commit_all(
    repo: &git2::Repository,
    settings: &crate::config::Settings,
    message: Option<&str>,
) -> Result<String, GitJobError> {
    let paths = crate::git::modified_tracked_paths(repo)?;
    let options = crate::git::CommitOptions::from(settings);
    Ok(
        match crate::git::commit_user_changes(repo, &paths, message, &options)? {
            Some(c) => format!("committed {} {}", c.short_id(), c.summary),
            None => "nothing to commit".into(),
        },
    )
}
