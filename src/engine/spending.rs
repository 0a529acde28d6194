//! The spending caps: `max_cost` (per session) and `max_loop_cost` (per automatic loop:
//! what one user message led to) stop the requests tern sends by itself — never the
//! user's own messages. Every kind of unattended work asks [`Spending::may_spend`] first.
//!
//! A cap is checked before each request, against what was spent so far: the request
//! that crosses it still finishes, so the spending can pass a cap by one request. Costs
//! tern cannot price (local models, unknown prices: cost 0) never reach a cap.

use crate::config::Settings;

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

impl Spending {
    /// Whether unattended work of this kind may send a request now, the session having
    /// spent `spent`. When a cap is reached it is refused, with (once per kind and user
    /// message) the warning that says so.
    pub(crate) fn may_spend(
        &mut self,
        what: Unattended,
        spent: f64,
        settings: &Settings,
    ) -> Result<(), Option<String>> {
        let Some(reason) = self.cap_reached(spent, settings) else {
            return Ok(());
        };
        if self.refused.contains(&what) {
            return Err(None);
        }
        self.refused.push(what);
        Err(Some(format!(
            "{reason}: {}; raise it (in the config file or with the flag) to let tern go on by itself",
            what.what()
        )))
    }

    /// [`Spending::may_spend`], its warning sent on `events`.
    pub(crate) fn allows(
        &mut self,
        what: Unattended,
        spent: f64,
        settings: &Settings,
        events: &super::EventSink,
    ) -> bool {
        match self.may_spend(what, spent, settings) {
            Ok(()) => true,
            Err(warning) => {
                if let Some(text) = warning {
                    events.warning(text);
                }
                false
            }
        }
    }

    /// Which cap is reached, said with what was spent.
    fn cap_reached(&self, spent: f64, settings: &Settings) -> Option<String> {
        let in_loop = spent - self.loop_start;
        if let Some(cap) = settings.max_cost
            && spent > 0.0
            && spent >= cap
        {
            return Some(format!(
                "max_cost ${cap} reached (${spent:.4} spent this session)"
            ));
        }
        match settings.max_loop_cost {
            Some(cap) if in_loop > 0.0 && in_loop >= cap => Some(format!(
                "max_loop_cost ${cap} reached (${in_loop:.4} spent since your last message)"
            )),
            _ => None,
        }
    }

    /// A user message is on its way, the session having spent `spent`: a new loop
    /// starts. It is never refused; past the session cap the user hears once (the
    /// warning returned) that tern now waits for them.
    pub(crate) fn user_spends(&mut self, spent: f64, settings: &Settings) -> Option<String> {
        self.loop_start = spent;
        self.refused.clear();
        match settings.max_cost {
            Some(cap)
                if spent > 0.0
                    && spent >= cap
                    && !std::mem::replace(&mut self.warned_user, true) =>
            {
                Some(format!(
                    "this session has spent ${spent:.4}, past max_cost ${cap}: your messages still go, but tern sends nothing by itself (reflections, summaries, resends, auto-test rounds) until max_cost is raised"
                ))
            }
            _ => None,
        }
    }
}
