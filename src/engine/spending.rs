//! The spending caps: `max_cost` (per session) and `max_loop_cost` (per automatic loop:
//! what one user message led to) stop the requests tern sends by itself — never the
//! user's own messages. Every kind of unattended work asks [`Engine::may_spend`] first.
//!
//! A cap is checked before each request, against what was spent so far: the request
//! that crosses it still finishes, so the spending can pass a cap by one request. Costs
//! tern cannot price (local models, unknown prices: cost 0) never reach a cap.

use super::Engine;

/// Work tern sends to the model by itself, unattended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unattended {
    /// Failed edit blocks sent back to the model.
    Reflection,
    /// A history summary made without the user asking (`/compact` is asked for).
    Summary,
    /// A request the server refused as too long, sent again smaller.
    Resend,
    /// A round of the auto-test loop: failing tests sent back.
    AutoTest,
}

impl Unattended {
    fn what(self) -> &'static str {
        match self {
            Unattended::Reflection => "the failed edit blocks were not sent back to the model",
            Unattended::Summary => "the history was not summarized",
            Unattended::Resend => "the refused request was not sent again",
            Unattended::AutoTest => "the failing tests were not sent back to the model",
        }
    }
}

/// What the caps need to remember.
#[derive(Debug, Default)]
pub(crate) struct Spending {
    /// The session's spending when the last user message was sent: the loop's own
    /// spending is measured from there.
    loop_start: f64,
    /// Kinds of work already refused since the last user message (each is said once).
    refused: Vec<Unattended>,
    /// The user was told their messages go on past `max_cost`.
    warned_user: bool,
}

impl Engine {
    /// Whether unattended work of this kind may send a request now. When a cap is
    /// reached it says so once per kind and user message, and returns false.
    pub(crate) fn may_spend(&mut self, what: Unattended) -> bool {
        let Some(reason) = self.cap_reached() else {
            return true;
        };
        if !self.conversation.spending.refused.contains(&what) {
            self.conversation.spending.refused.push(what);
            self.warning(format!(
                "{reason}: {}; raise it (in the config file or with the flag) to let tern go on by itself",
                what.what()
            ));
        }
        false
    }

    /// Which cap is reached, said with what was spent.
    fn cap_reached(&self) -> Option<String> {
        let spent = self.session.session_cost;
        let in_loop = spent - self.conversation.spending.loop_start;
        if let Some(cap) = self.model.settings().max_cost
            && spent > 0.0
            && spent >= cap
        {
            return Some(format!(
                "max_cost ${cap} reached (${spent:.4} spent this session)"
            ));
        }
        match self.model.settings().max_loop_cost {
            Some(cap) if in_loop > 0.0 && in_loop >= cap => Some(format!(
                "max_loop_cost ${cap} reached (${in_loop:.4} spent since your last message)"
            )),
            _ => None,
        }
    }

    /// A user message is on its way: a new loop starts. It is never refused; past the
    /// session cap the user hears once that tern now waits for them.
    pub(super) fn user_spends(&mut self) {
        self.conversation.spending.loop_start = self.session.session_cost;
        self.conversation.spending.refused.clear();
        let spent = self.session.session_cost;
        if let Some(cap) = self.model.settings().max_cost
            && spent > 0.0
            && spent >= cap
            && !std::mem::replace(&mut self.conversation.spending.warned_user, true)
        {
            self.warning(format!(
                "this session has spent ${spent:.4}, past max_cost ${cap}: your messages still go, but tern sends nothing by itself (reflections, summaries, resends, auto-test rounds) until max_cost is raised"
            ));
        }
    }
}
