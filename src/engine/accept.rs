//! `--yes`'s policy: what the gate lets land without a person's look is accepted and
//! applied; the rest is held back and said so. A front end only reports it.

use std::path::Path;

use super::Engine;
use super::protocol::{Caution, Event, ReviewOp};
use crate::edit::Select;

impl Engine {
    /// `Op::ApplyAllowed`: every hunk without a caution, and with `outside_chat` the
    /// files whose only caution is that they are not in the chat, are accepted and
    /// applied as `/apply all` applies them. The files and hunks held back are named
    /// first; when nothing is left to accept, nothing is applied.
    pub(super) fn apply_allowed(&mut self, outside_chat: bool) {
        let view = self
            .pending
            .as_ref()
            .map(super::proposal_review::view)
            .unwrap_or_default();
        let allowed = |cautions: &[Caution]| {
            outside_chat && cautions.iter().all(|c| *c == Caution::OutsideChat)
        };
        let mut accepted = Vec::new();
        for file in view.files.iter().filter(|f| !f.cautions.is_empty()) {
            if allowed(&file.cautions) {
                accepted.push(file.path.clone());
            } else {
                self.events.send(Event::HeldBack {
                    path: file.path.clone(),
                    hunk: None,
                    cautions: file.cautions.clone(),
                });
            }
        }
        for file in &view.files {
            for hunk in file.hunks.iter().filter(|h| !h.cautions.is_empty()) {
                self.events.send(Event::HeldBack {
                    path: file.path.clone(),
                    hunk: Some(hunk.id.clone()),
                    cautions: hunk.cautions.clone(),
                });
            }
        }
        // Quietly: the events above name what is held back, once.
        if let Some(pending) = self.pending.as_mut() {
            for path in &accepted {
                pending.accept(Select::File(Path::new(path)));
            }
            pending.accept(Select::All);
        }
        self.publish_proposal();
        // Everything held back: the events above say why; there is nothing to apply
        // (and no review key to advise, as `/apply` would).
        if self.pending.as_ref().is_some_and(|p| p.any_accepted()) {
            self.review(ReviewOp::Apply);
        }
    }
}
