//! Running slash commands. Parsing and the command table are in `commands.rs`.

use super::commands::{self, Parsed};
use super::protocol::{ChatMode, Decision, Event, FileMode, ReviewOp};
use super::{Engine, Internal};

impl Engine {
    pub(super) fn command(&mut self, line: &str) {
        let (name, args) = match commands::parse(line) {
            Parsed::Command { spec, args } => (spec.name, args.to_string()),
            Parsed::Unknown { name, candidates } => {
                let hint = if candidates.is_empty() {
                    "see /help".to_string()
                } else {
                    format!("did you mean /{}?", candidates.join(", /"))
                };
                self.error(format!("unknown command /{name}: {hint}"));
                return;
            }
        };
        let words: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        match name {
            "add" => {
                self.add_files(&words, FileMode::Editable);
                self.files_changed();
            }
            "read-only" => {
                self.add_files(&words, FileMode::ReadOnly);
                self.files_changed();
            }
            "drop" => self.drop_files(&words),
            "ask" | "code" => {
                let mode = if name == "ask" {
                    ChatMode::Ask
                } else {
                    ChatMode::Code
                };
                if args.is_empty() {
                    self.session.mode = mode;
                    self.events.send(Event::Mode { mode });
                    self.publish_budget();
                } else {
                    self.start_user_turn(args, mode);
                }
            }
            "apply" => {
                if args == "all" {
                    self.review(ReviewOp::All {
                        decision: Decision::Accept,
                    });
                }
                self.review(ReviewOp::Apply);
            }
            "discard" => self.discard(),
            "diff" => self.show_diff(),
            "undo" => self.git_job("undo", |repo| match crate::git::undo(repo) {
                Ok(undone) => Ok(format!("{undone}")),
                Err(e) => Err(e.to_string()),
            }),
            "commit" => {
                let settings = self.settings.clone();
                self.git_job("commit", move |repo| commit_all(repo, &settings));
            }
            "tokens" => {
                let report = self.report(&self.draft.clone());
                self.events.send(Event::Output {
                    title: "tokens".into(),
                    text: report.render_table(),
                });
            }
            "review" => self.review_command(&args),
            "map" => self.show_map(),
            "map-refresh" => {
                self.refresh_map(Vec::new());
                self.notice("rescanning the repository for the repo map".into());
            }
            "clear" => {
                self.session.history.clear();
                self.notice("history cleared".into());
                self.publish_budget();
            }
            "model" => {
                if args.is_empty() {
                    self.notice(format!(
                        "model {} (window {}, weak model {})",
                        self.model.name, self.window.window, self.settings.weak_model
                    ));
                } else {
                    self.switch_model(&args);
                }
            }
            "help" => self.events.send(Event::Output {
                title: "commands".into(),
                text: commands::help(),
            }),
            "quit" => self.quit = true,
            other => self.error(format!("/{other} is not available here")),
        }
    }

    fn drop_files(&mut self, words: &[String]) {
        if words.is_empty() {
            self.session.drop_all();
            self.notice("dropped every file from the chat".into());
        }
        for word in words {
            let dropped = self
                .session
                .resolve(word, &self.cwd)
                .map_err(|e| e.to_string())
                .and_then(|rel| self.session.drop_file(&rel).map_err(|e| e.to_string()));
            if let Err(e) = dropped {
                self.error(e);
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
                    self.error(e.to_string());
                    return;
                }
            },
        };
        self.events.send(Event::Output {
            title: "diff".into(),
            text,
        });
    }

    /// Runs a git command on a blocking thread (hooks may take a while).
    fn git_job(
        &mut self,
        what: &'static str,
        job: impl FnOnce(&git2::Repository) -> Result<String, String> + Send + 'static,
    ) {
        let root = self.session.root().to_path_buf();
        let done = self.internal_tx.clone();
        self.busy += 1;
        tokio::task::spawn_blocking(move || {
            let result = git2::Repository::open(&root)
                .map_err(|e| format!("/{what}: not a git repository: {e}"))
                .and_then(|repo| job(&repo));
            let _ = done.send(Internal::Git(result));
        });
    }
}

/// `/commit`: the user's own uncommitted changes to tracked files, in one commit.
fn commit_all(
    repo: &git2::Repository,
    settings: &crate::config::Settings,
) -> Result<String, String> {
    let paths = crate::git::modified_tracked_paths(repo).map_err(|e| e.to_string())?;
    let options = crate::git::CommitOptions::from_settings(settings);
    match crate::git::commit_dirty(repo, &paths, &options) {
        Ok(Some(c)) => Ok(format!("committed {} {}", c.short_id(), c.summary)),
        Ok(None) => Ok("nothing to commit".into()),
        Err(e) => Err(e.to_string()),
    }
}
