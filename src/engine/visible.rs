//! Events made safe to leave tern: every string in an event can carry text from a
//! model, a repository or a server (and the API key, if one of them echoes it), so
//! every string is redacted (`egress`) on its way out of the engine, and made visible
//! (`egress::terminal`: control characters shown as escapes) when a front end shows it
//! on a terminal. Events and views are taken apart field by field, without `..`, so
//! that a new field does not compile until it is handled here.

use super::protocol::{
    EditFailureView, Event, FileEntry, FileProposalView, HunkView, MapEdge, MapView, NeededFile,
    ProposalView, Shown,
};
use crate::branch_review::{CallReply, FilePlan, ReviewCall, ReviewPlan};
use crate::context::{BudgetReport, FileRow};
use crate::egress;
use crate::llm::{Finish, Message};

/// A value made of texts, each of which can be rewritten for where it goes.
pub trait Texts {
    /// Hands `f` every text of this value to rewrite.
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String));
}

impl Event {
    /// This event as a terminal may show it: every text redacted, then its control
    /// characters made visible.
    pub fn visible(mut self) -> Event {
        self.each_text(&mut |text| {
            if let std::borrow::Cow::Owned(shown) = egress::terminal(text) {
                *text = shown;
            }
        });
        self
    }

    /// This event with every text redacted: what the engine sends.
    pub fn redacted(mut self) -> Event {
        self.each_text(&mut egress::redact_in_place);
        self
    }
}

impl Texts for String {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        f(self);
    }
}

impl<T: Texts> Texts for Vec<T> {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.iter_mut().for_each(|v| v.each_text(f));
    }
}

impl<T: Texts> Texts for Option<T> {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        if let Some(value) = self {
            value.each_text(f);
        }
    }
}

impl<T: Texts> Texts for Box<T> {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        (**self).each_text(f);
    }
}

impl Texts for (String, f64) {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.0.each_text(f);
    }
}

impl Texts for Event {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        match self {
            Event::Ready {
                root,
                model,
                mode: _,
                session: _,
            } => {
                root.each_text(f);
                model.each_text(f);
            }
            Event::TurnStarted {
                text,
                notes,
                mode: _,
            } => {
                text.each_text(f);
                notes.each_text(f);
            }
            Event::Resumed { transcript, unsent } => {
                for shown in transcript {
                    let Shown { kind: _, text } = shown;
                    text.each_text(f);
                }
                unsent.each_text(f);
            }
            Event::Delta { text }
            | Event::Reasoning { text }
            | Event::Crashed { text }
            | Event::Notice { text }
            | Event::Warning { text }
            | Event::Error { text } => text.each_text(f),
            Event::Retrying {
                attempt: _,
                delay_ms: _,
                reason,
            } => reason.each_text(f),
            Event::Request {
                purpose: _,
                model,
                predicted_prompt_tokens: _,
                max_tokens: _,
                counting: _,
            } => model.each_text(f),
            Event::TurnFinished {
                reply,
                finish,
                usage: _,
                usage_estimated: _,
                cost: _,
                session_cost: _,
            } => {
                reply.each_text(f);
                finish.each_text(f);
            }
            Event::Needed {
                files,
                more_files: _,
                commands,
                more_commands: _,
            } => {
                files.each_text(f);
                commands.each_text(f);
            }
            Event::TurnFailed { error, message } => {
                error.each_text(f);
                message.each_text(f);
            }
            Event::Budget(report) => report.each_text(f),
            Event::Files { files } => files.each_text(f),
            Event::Model { model } => model.each_text(f),
            Event::Output { title, text } => {
                title.each_text(f);
                text.each_text(f);
            }
            Event::Proposal(view) => view.each_text(f),
            Event::Reflection {
                attempt: _,
                max: _,
                message,
            } => message.each_text(f),
            Event::Applied {
                files,
                accepted: _,
                rejected: _,
                commit,
                message,
                failed,
                held: _,
                lost: _,
            } => {
                files.each_text(f);
                commit.each_text(f);
                message.each_text(f);
                failed.each_text(f);
            }
            Event::NotApplied { reason: _ } => {}
            Event::HeldBack {
                path,
                hunk,
                cautions: _,
            } => {
                path.each_text(f);
                hunk.each_text(f);
            }
            // The text goes to an editor's file, never to the screen or elsewhere: it
            // must stay exactly the file's lines (the key in them is the user's file's).
            Event::HunkText { id, path, text: _ } => {
                id.each_text(f);
                path.each_text(f);
            }
            Event::EditRefused {
                id,
                new_lines: _,
                reason,
            } => {
                id.each_text(f);
                reason.each_text(f);
            }
            Event::ReviewPlan(plan) => plan.each_text(f),
            Event::BranchReviewed {
                plan,
                replies,
                usage: _,
                cost: _,
            } => {
                plan.each_text(f);
                for reply in replies {
                    let CallReply {
                        files,
                        text,
                        finish,
                        usage: _,
                    } = reply;
                    files.each_text(f);
                    text.each_text(f);
                    finish.each_text(f);
                }
            }
            Event::Map(map) => map.each_text(f),
            Event::MapWhy { path, edges } => {
                path.each_text(f);
                edges.each_text(f);
            }
            Event::RepoFiles { files } => files.each_text(f),
            Event::Continuing { continuation: _ }
            | Event::Mode { mode: _ }
            | Event::MapProgress { done: _, total: _ }
            | Event::History(_)
            | Event::Summarized {
                replaced_messages: _,
                replaced_tokens: _,
                summary_tokens: _,
            }
            | Event::Idle
            | Event::Exited => {}
            Event::ConfirmCommand {
                command,
                purpose: _,
                reason,
            } => {
                command.each_text(f);
                reason.each_text(f);
            }
            Event::CommandStarted {
                command,
                purpose: _,
                auto_round: _,
            }
            | Event::OutputAdded { command, tokens: _ }
            | Event::OutputDropped { command } => command.each_text(f),
            Event::CommandProgress {
                text,
                lines: _,
                last_line,
                elapsed_ms: _,
            } => {
                text.each_text(f);
                last_line.each_text(f);
            }
            Event::CommandFinished {
                command,
                purpose: _,
                passed: _,
                outcome,
                lines: _,
                elapsed_ms: _,
                tokens: _,
                in_context: _,
            } => {
                command.each_text(f);
                outcome.each_text(f);
            }
        }
    }
}

impl Texts for BudgetReport {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let BudgetReport {
            model,
            files,
            known_model: _,
            counting: _,
            counts_pending: _,
            encoding: _,
            window: _,
            window_source: _,
            reserved_output: _,
            prompt_limit: _,
            sections: _,
            total: _,
            remaining: _,
            history: _,
            map: _,
            last_usage: _,
            last_usage_estimated: _,
            last_cost: _,
            session_cost: _,
            cost_cap: _,
        } = self;
        model.each_text(f);
        files.each_text(f);
    }
}

impl Texts for FileRow {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let FileRow {
            path,
            section: _,
            tokens: _,
            percent: _,
            cost: _,
        } = self;
        path.each_text(f);
    }
}

impl Texts for NeededFile {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let NeededFile { path, tokens: _ } = self;
        path.each_text(f);
    }
}

impl Texts for FileEntry {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let FileEntry {
            path,
            mode: _,
            tokens: _,
            exists: _,
        } = self;
        path.each_text(f);
    }
}

impl Texts for ProposalView {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let ProposalView {
            files,
            failures,
            shell_commands,
            written_as: _,
        } = self;
        files.each_text(f);
        failures.each_text(f);
        shell_commands.each_text(f);
    }
}

impl Texts for Finish {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        if let Finish::CutOff(why) = self {
            why.each_text(f);
        }
    }
}

impl Texts for FileProposalView {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let FileProposalView {
            path,
            change: _,
            hunks,
            cautions: _,
            ignored: _,
        } = self;
        path.each_text(f);
        hunks.each_text(f);
    }
}

impl Texts for HunkView {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let HunkView {
            id,
            lines,
            old_start: _,
            old_len: _,
            new_start: _,
            new_len: _,
            decision: _,
            edited: _,
            cautions: _,
        } = self;
        id.each_text(f);
        for line in lines {
            line.text.each_text(f);
        }
    }
}

impl Texts for EditFailureView {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let EditFailureView {
            path,
            block: _,
            message,
            near,
            hunk,
        } = self;
        path.each_text(f);
        message.each_text(f);
        if let Some(near) = near {
            near.text.each_text(f);
        }
        if let Some(hunk) = hunk {
            hunk.each_text(f);
        }
    }
}

impl Texts for MapView {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let MapView {
            tokens: _,
            budget: _,
            ranked,
            text,
        } = self;
        ranked.each_text(f);
        text.each_text(f);
    }
}

impl Texts for MapEdge {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let MapEdge {
            ident,
            from,
            weight: _,
        } = self;
        ident.each_text(f);
        from.each_text(f);
    }
}

impl Texts for ReviewPlan {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let ReviewPlan {
            description,
            calls,
            files,
            mode: _,
            budget: _,
            estimated: _,
        } = self;
        description.each_text(f);
        calls.each_text(f);
        files.each_text(f);
    }
}

impl Texts for ReviewCall {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let ReviewCall {
            messages,
            files,
            tokens: _,
            diff_tokens: _,
        } = self;
        messages.each_text(f);
        files.each_text(f);
    }
}

impl Texts for Message {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.content.each_text(f);
    }
}

impl Texts for FilePlan {
    fn each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        let FilePlan {
            path,
            old_path,
            status: _,
            language: _,
            added: _,
            removed: _,
            tokens: _,
            outcome: _,
        } = self;
        path.each_text(f);
        old_path.each_text(f);
    }
}
