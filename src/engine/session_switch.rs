//! `/sessions`: the repository's sessions (the list `tern sessions` prints), and going
//! on in another one without leaving tern. The session left is saved first and keeps
//! its pending hunks; a session another tern has open is refused, as `--resume`
//! refuses it.

use std::path::Path;

use super::persist::{self, OpenError, Resume, Store, StoreError};
use super::protocol::Event;
use super::{Engine, EngineRole, command_runner, conversation, proposal_review};

/// Where `/sessions ID` leads from session `own`.
#[derive(Debug, PartialEq, Eq)]
pub enum SwitchTarget {
    /// The session open here (its id).
    Here(String),
    /// Another session (its whole id).
    Other(String),
}

/// The session `id` (or the one whose id it begins) names, seen from session `own`, or
/// why no switch can go there: none such, or open in another tern. The workspace checks
/// this before it asks about pending hunks; the switch checks again (and takes the lock).
pub fn switch_target(root: &Path, id: &str, own: Option<&str>) -> Result<SwitchTarget, String> {
    let here = |given: &str| own.filter(|own| own.starts_with(given)).map(str::to_string);
    match Store::for_repo(root).pick(&Resume::Id(id.to_string())) {
        Ok(listed) => match (here(&listed.id), listed.holder()) {
            (Some(own), _) => Ok(SwitchTarget::Here(own)),
            (None, Some(pid)) => Err(StoreError::Open {
                id: listed.id,
                why: persist::LockError::Held { pid },
            }
            .to_string()),
            (None, None) => Ok(SwitchTarget::Other(listed.id)),
        },
        // Not listed before its first save.
        Err(StoreError::NotFound(given)) if here(&given).is_some() => {
            Ok(SwitchTarget::Here(here(&given).unwrap_or(given)))
        }
        Err(e) => Err(e.to_string()),
    }
}

impl Engine {
    /// `/sessions`: the list, for a picker (or the lines of `tern sessions`).
    pub(super) fn list_sessions(&mut self) {
        self.events.send(Event::Sessions {
            sessions: Store::for_repo(self.session.root()).list(),
            current: self.saved.id().map(str::to_string),
        });
    }

    /// `/sessions ID` and `Op::SwitchSession`: goes on in session `id` (or the one
    /// whose id it begins), once this one is saved.
    pub(super) fn switch_session(&mut self, id: &str, keep_pending: bool) {
        if let Err(why) = self.may_switch(keep_pending) {
            return self.events.error(why);
        }
        let root = self.session.root().to_path_buf();
        let left = self.saved.id().map(str::to_string);
        let target = match switch_target(&root, id, left.as_deref()) {
            Ok(SwitchTarget::Other(target)) => target,
            Ok(SwitchTarget::Here(own)) => {
                return self
                    .events
                    .notice(format!("session {own} is the one open here"));
            }
            Err(why) => return self.events.error(why),
        };
        // Taken first: refused, nothing has changed.
        let opened = match persist::open(&root, Some(&Resume::Id(target.clone())), &self.events) {
            Ok(opened) => opened,
            // Not "start a new session": in the workspace that is no advice.
            Err(OpenError::InUse(e)) => return self.events.error(e.to_string()),
            Err(e) => {
                return self
                    .events
                    .error(format!("cannot switch to session {}: {e}", target));
            }
        };
        let parts = persist::SaveParts {
            session: &self.session,
            model: &self.model,
            history: self.conversation.history().marks(),
            pending: self.pending.as_ref().map(proposal_review::Pending::saved),
            map_tokens: self.map.chosen(),
        };
        let kept = match self.saved.hand_over(parts) {
            Ok(kept) => kept,
            // `opened` goes: its lock with it.
            Err(why) => {
                return self.events.error(format!(
                    "did not switch to session {}: this session could not be saved first ({why}); you are still in it",
                    target
                ));
            }
        };
        let Some(restored) = opened.restored else {
            // `persist::open` restores every session it opens by id.
            return self
                .events
                .error(format!("session {} has no state", target));
        };
        self.saved = opened.saved;
        self.start_over();
        // First: what restoring says belongs to the session switched to.
        self.events.send(Event::Ready {
            root: root.display().to_string(),
            model: self.model.info().name.clone(),
            mode: self.session.mode,
            session: self.saved.id().map(str::to_string),
        });
        self.restore_session(restored, false);
        self.events.send(Event::Mode {
            mode: self.session.mode,
        });
        self.events.send(Event::Resumed {
            transcript: self.session.transcript.clone(),
            unsent: self.saved.unsent().map(str::to_string),
        });
        let (notices, warnings) = self.saved.take_start_notes();
        for text in notices {
            self.events.notice(text);
        }
        for text in warnings {
            self.events.warning(text);
        }
        self.events.notice(match (left, kept) {
            (Some(left), true) => format!(
                "switched to session {}; session {left} is saved as you left it (`/sessions` or `tern --resume={left}` brings it back)",
                target
            ),
            (Some(left), false) => format!(
                "switched to session {}; session {left} held nothing and is gone",
                target
            ),
            (None, _) => format!("switched to session {}", target),
        });
        self.publish_proposal();
        self.files_changed();
        if self.saved.resumed() {
            self.change_history(|history, parts| history.resumed(parts));
        }
    }

    /// Whether the engine may leave its session now: a conversation, nothing under
    /// way, and no pending hunks unless the user said to keep them with it.
    fn may_switch(&self, keep_pending: bool) -> Result<(), String> {
        if self.run_loop.role() != EngineRole::Conversation {
            return Err("this tern runs one command; it has no sessions to switch".into());
        }
        if !self.activity.is_idle() || self.conversation.history().holds_turns() {
            return Err(
                "tern is busy (a reply, a command, a landing or a summary): switch sessions once it is done, or after Esc"
                    .into(),
            );
        }
        // As `tern sessions` counts them: proposed, and failed ones not dismissed.
        let hunks = self.pending.as_ref().map_or(0, |p| {
            let saved = p.saved();
            saved.proposal.hunk_count() + saved.failures.iter().filter(|f| f.hunk.is_some()).count()
        });
        if hunks > 0 && !keep_pending {
            return Err(format!(
                "this session has {} not dealt with: review them first, or switch from the workspace's /sessions, which asks and keeps them with this session for `tern --resume`",
                crate::plural::count(hunks, "hunk")
            ));
        }
        Ok(())
    }

    /// Forgets the session left: its conversation, files, proposal and command outputs
    /// (the model, the settings and the repo map stay).
    fn start_over(&mut self) {
        let root = self.session.root().to_path_buf();
        let cwd = self.conversation.cwd().to_path_buf();
        self.session = super::Session::new(root);
        self.conversation = conversation::Conversation::new(self.model.settings(), cwd);
        self.pending = None;
        self.runner = command_runner::CommandRunner::default();
    }
}
