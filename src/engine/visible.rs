//! Events made safe for a terminal before a front end draws or prints them: every
//! string in an event can carry text from a model, a repository or a server, so each
//! goes through [`terminal_text::visible`](crate::terminal_text::visible). Events and
//! views are taken apart field by field, without `..`, so that a new field does not
//! compile until it is handled here.

use std::borrow::Cow;

use super::protocol::{
    EditFailureView, Event, FileEntry, FileProposalView, HunkView, MapEdge, MapView, NeededFile,
    ProposalView, Shown,
};
use crate::branch_review::{CallReply, FilePlan, ReviewCall, ReviewPlan};
use crate::context::{BudgetReport, FileRow};
use crate::llm::{Finish, Message};
use crate::terminal_text::visible;

/// A value whose text can be made safe to show.
pub trait Visible {
    fn make_visible(&mut self);
}

impl Event {
    /// This event with every control character made visible.
    pub fn visible(mut self) -> Event {
        self.make_visible();
        self
    }
}

impl Visible for String {
    fn make_visible(&mut self) {
        if let Cow::Owned(clean) = visible(self) {
            *self = clean;
        }
    }
}

impl<T: Visible> Visible for Vec<T> {
    fn make_visible(&mut self) {
        self.iter_mut().for_each(Visible::make_visible);
    }
}

impl<T: Visible> Visible for Option<T> {
    fn make_visible(&mut self) {
        if let Some(value) = self {
            value.make_visible();
        }
    }
}

impl<T: Visible> Visible for Box<T> {
    fn make_visible(&mut self) {
        (**self).make_visible();
    }
}

impl Visible for (String, f64) {
    fn make_visible(&mut self) {
        self.0.make_visible();
    }
}

impl Visible for Event {
    fn make_visible(&mut self) {
        match self {
            Event::Ready {
                root,
                model,
                mode: _,
                session: _,
            } => {
                root.make_visible();
                model.make_visible();
            }
            Event::TurnStarted {
                text,
                notes,
                mode: _,
            } => {
                text.make_visible();
                notes.make_visible();
            }
            Event::Resumed { transcript } => {
                for shown in transcript {
                    let Shown { kind: _, text } = shown;
                    text.make_visible();
                }
            }
            Event::Delta { text }
            | Event::Reasoning { text }
            | Event::Crashed { text }
            | Event::Notice { text }
            | Event::Warning { text }
            | Event::Error { text } => text.make_visible(),
            Event::Retrying {
                attempt: _,
                delay_ms: _,
                reason,
            } => reason.make_visible(),
            Event::Request {
                purpose: _,
                model,
                predicted_prompt_tokens: _,
                max_tokens: _,
                counting: _,
            } => model.make_visible(),
            Event::TurnFinished {
                reply,
                finish,
                usage: _,
                usage_estimated: _,
                cost: _,
                session_cost: _,
            } => {
                reply.make_visible();
                finish.make_visible();
            }
            Event::Needed {
                files,
                more_files: _,
                commands,
                more_commands: _,
            } => {
                files.make_visible();
                commands.make_visible();
            }
            Event::TurnFailed { error, message } => {
                error.make_visible();
                message.make_visible();
            }
            Event::Budget(report) => report.make_visible(),
            Event::Files { files } => files.make_visible(),
            Event::Model { model } => model.make_visible(),
            Event::Output { title, text } => {
                title.make_visible();
                text.make_visible();
            }
            Event::Proposal(view) => view.make_visible(),
            Event::Reflection {
                attempt: _,
                max: _,
                message,
            } => message.make_visible(),
            Event::Applied {
                files,
                accepted: _,
                rejected: _,
                commit,
                message,
                failed,
            } => {
                files.make_visible();
                commit.make_visible();
                message.make_visible();
                failed.make_visible();
            }
            Event::NotApplied { reason: _ } => {}
            // The text goes to an editor's file, never to the screen: it must stay
            // exactly the file's lines.
            Event::HunkText { id, path, text: _ } => {
                id.make_visible();
                path.make_visible();
            }
            Event::EditRefused {
                id,
                new_lines: _,
                reason,
            } => {
                id.make_visible();
                reason.make_visible();
            }
            Event::ReviewPlan(plan) => plan.make_visible(),
            Event::BranchReviewed {
                plan,
                replies,
                usage: _,
                cost: _,
            } => {
                plan.make_visible();
                for reply in replies {
                    let CallReply {
                        files,
                        text,
                        finish,
                        usage: _,
                    } = reply;
                    files.make_visible();
                    text.make_visible();
                    finish.make_visible();
                }
            }
            Event::Map(map) => map.make_visible(),
            Event::MapWhy { path, edges } => {
                path.make_visible();
                edges.make_visible();
            }
            Event::RepoFiles { files } => files.make_visible(),
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
                command.make_visible();
                reason.make_visible();
            }
            Event::CommandStarted {
                command,
                purpose: _,
                auto_round: _,
            }
            | Event::OutputAdded { command, tokens: _ }
            | Event::OutputDropped { command } => command.make_visible(),
            Event::CommandProgress {
                text,
                lines: _,
                last_line,
                elapsed_ms: _,
            } => {
                text.make_visible();
                last_line.make_visible();
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
                command.make_visible();
                outcome.make_visible();
            }
        }
    }
}

impl Visible for BudgetReport {
    fn make_visible(&mut self) {
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
        model.make_visible();
        files.make_visible();
    }
}

impl Visible for FileRow {
    fn make_visible(&mut self) {
        let FileRow {
            path,
            section: _,
            tokens: _,
            percent: _,
            cost: _,
        } = self;
        path.make_visible();
    }
}

impl Visible for NeededFile {
    fn make_visible(&mut self) {
        let NeededFile { path, tokens: _ } = self;
        path.make_visible();
    }
}

impl Visible for FileEntry {
    fn make_visible(&mut self) {
        let FileEntry {
            path,
            mode: _,
            tokens: _,
            exists: _,
        } = self;
        path.make_visible();
    }
}

impl Visible for ProposalView {
    fn make_visible(&mut self) {
        let ProposalView {
            files,
            failures,
            shell_commands,
            written_as: _,
        } = self;
        files.make_visible();
        failures.make_visible();
        shell_commands.make_visible();
    }
}

impl Visible for Finish {
    fn make_visible(&mut self) {
        if let Finish::CutOff(why) = self {
            why.make_visible();
        }
    }
}

impl Visible for FileProposalView {
    fn make_visible(&mut self) {
        let FileProposalView {
            path,
            change: _,
            hunks,
            cautions: _,
            ignored: _,
        } = self;
        path.make_visible();
        hunks.make_visible();
    }
}

impl Visible for HunkView {
    fn make_visible(&mut self) {
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
        id.make_visible();
        for line in lines {
            line.text.make_visible();
        }
    }
}

impl Visible for EditFailureView {
    fn make_visible(&mut self) {
        let EditFailureView {
            path,
            block: _,
            message,
            near,
            hunk,
        } = self;
        path.make_visible();
        message.make_visible();
        if let Some(near) = near {
            near.text.make_visible();
        }
        if let Some(hunk) = hunk {
            hunk.make_visible();
        }
    }
}

impl Visible for MapView {
    fn make_visible(&mut self) {
        let MapView {
            tokens: _,
            budget: _,
            ranked,
            text,
        } = self;
        ranked.make_visible();
        text.make_visible();
    }
}

impl Visible for MapEdge {
    fn make_visible(&mut self) {
        let MapEdge {
            ident,
            from,
            weight: _,
        } = self;
        ident.make_visible();
        from.make_visible();
    }
}

impl Visible for ReviewPlan {
    fn make_visible(&mut self) {
        let ReviewPlan {
            description,
            calls,
            files,
            mode: _,
            budget: _,
            estimated: _,
        } = self;
        description.make_visible();
        calls.make_visible();
        files.make_visible();
    }
}

impl Visible for ReviewCall {
    fn make_visible(&mut self) {
        let ReviewCall {
            messages,
            files,
            tokens: _,
            diff_tokens: _,
        } = self;
        messages.make_visible();
        files.make_visible();
    }
}

impl Visible for Message {
    fn make_visible(&mut self) {
        self.content.make_visible();
    }
}

impl Visible for FilePlan {
    fn make_visible(&mut self) {
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
        path.make_visible();
        old_path.make_visible();
    }
}
