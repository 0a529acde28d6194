//! `--yes`'s policy: what the gate lets land without a person's look is accepted and
//! applied; the rest is held back and said so. A front end only reports it.

use std::path::Path;

use super::EventSink;
use super::proposal_review::{Pending, view};
use super::protocol::{Caution, Event};
use crate::edit::Select;

impl Pending {
    /// `Op::ApplyAllowed`: every hunk without a caution, and with `outside_chat` the
    /// files whose only caution is that they are not in the chat, are accepted (then
    /// applied as `/apply all` applies them). The files and hunks held back are named
    /// first; when nothing is left to accept, nothing is applied.
    pub(super) fn accept_allowed(&mut self, outside_chat: bool, events: &EventSink) {
        let view = view(self);
        let allowed = |cautions: &[Caution]| {
            outside_chat && cautions.iter().all(|c| *c == Caution::OutsideChat)
        };
        let mut accepted = Vec::new();
        for file in view.files.iter().filter(|f| !f.cautions.is_empty()) {
            if allowed(&file.cautions) {
                accepted.push(file.path.clone());
            } else {
                events.send(Event::HeldBack {
                    path: file.path.clone(),
                    hunk: None,
                    cautions: file.cautions.clone(),
                });
            }
        }
        for file in &view.files {
            for hunk in file.hunks.iter().filter(|h| !h.cautions.is_empty()) {
                events.send(Event::HeldBack {
                    path: file.path.clone(),
                    hunk: Some(hunk.id.clone()),
                    cautions: hunk.cautions.clone(),
                });
            }
        }
        // Quietly: the events above name what is held back, once.
        for path in &accepted {
            self.accept(Select::File(Path::new(path)));
        }
        self.accept(Select::All);
    }
}
