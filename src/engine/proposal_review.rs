//! The edits of a code-mode reply: proposed in memory, refined by reflections when
//! blocks fail, decided hunk by hunk by the user, and landed (written and committed) on
//! a blocking thread.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::activity::Activity;
use super::persist::SavedPending;
use super::protocol::{
    ChatMode, Decision, DiffLine, EditFailureView, Event, FileMode, FileProposalView, FileStatus,
    HunkView, Ignored, NearLines, NotAppliedReason, ProposalView, RequestKind, ReviewOp,
};
use super::spending::Unattended;
use super::turn::{ReplyOrigin, TurnKind};
use super::{Engine, EngineRole, EventSink, Internal};
use crate::edit::{self, ApplyOutcome, EditError, FileSet, HunkId, Proposal, Select, Workspace};
use crate::git::{self, CommitOptions, LandOptions, Landed};
use crate::llm::{ChatRequest, LlmClient, ModelInfo, StreamEvent};
use crate::plural::count;

/// The most a commit message request may take before the fallback is used.
const COMMIT_MESSAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// Edits awaiting the user's decisions.
#[derive(Debug)]
pub(crate) struct Pending {
    proposal: Proposal,
    /// Blocks of the latest reply that still failed, as shown (and saved).
    failures: Vec<EditFailureView>,
    /// Shell commands the model suggested (shown, never run).
    shell: Vec<String>,
    /// Formats other than the one asked for that the replies wrote edits in.
    written_as: Vec<edit::EditFormat>,
    /// Gitignored new files the user confirmed by applying a second time.
    confirm_ignored: Vec<PathBuf>,
    /// Why the user rejected hunks (`/reject ID REASON`), by hunk id; told to the model
    /// for the hunks still rejected when the proposal ends.
    reasons: Vec<(String, String)>,
    /// The turn whose replies proposed the edits: their commits are that turn's.
    turn: usize,
    /// Some of its hunks were written (in this run): a discard leaves them.
    landed: bool,
}

impl Pending {
    /// The pending edits as the session file keeps them.
    pub(super) fn saved(&self) -> SavedPending {
        SavedPending {
            proposal: self.proposal.snapshot(),
            turn: self.turn,
            failures: self.failures.clone(),
            shell: self.shell.clone(),
        }
    }

    /// Accepts `select` without a word: the hunks with a caution stay pending.
    pub(super) fn accept(&mut self, select: Select) {
        let _ = self.proposal.decide(select, Decision::Accept);
    }

    /// Whether the user (or `--yes`'s policy) accepted any hunk.
    pub(super) fn any_accepted(&self) -> bool {
        self.proposal
            .files()
            .iter()
            .any(|f| f.accepted().next().is_some())
    }

    /// What a bulk accept left pending for a look of its own: a file with a caution
    /// (`b.txt: not in the chat`), else each hunk with one of its own.
    fn held_back(&self) -> Vec<Held> {
        let mut held = Vec::new();
        for file in self.proposal.files() {
            let pending = |h: &&edit::Hunk| h.decision == Decision::Pending;
            let cautions = file.cautions();
            if !cautions.is_empty() {
                if file.hunks().iter().any(|h| pending(&h)) {
                    held.push(Held {
                        what: file.path().display().to_string(),
                        cautions,
                    });
                }
                continue;
            }
            for (hunk, cautions) in file.hunks().iter().zip(file.hunk_cautions()) {
                if pending(&hunk) && !cautions.is_empty() {
                    held.push(Held {
                        what: format!("hunk {} of {}", hunk.id, file.path().display()),
                        cautions,
                    });
                }
            }
        }
        held
    }

    /// What the model is told about the hunks not applied, with the user's reasons.
    fn rejected_note(&self) -> Option<String> {
        let summary = self.proposal.rejected_summary()?;
        let rejected: Vec<String> = self
            .proposal
            .files()
            .iter()
            .flat_map(|f| f.hunks())
            .filter(|h| h.decision == Decision::Reject)
            .map(|h| h.id.to_string())
            .collect();
        let reasons: Vec<String> = self
            .reasons
            .iter()
            .filter(|(id, _)| rejected.contains(id))
            .map(|(id, why)| format!("- hunk {id}: {why}"))
            .collect();
        Some(match reasons.is_empty() {
            true => summary,
            false => format!(
                "{summary}\n{}\n{}\n",
                crate::prompts::REJECTED_REASONS,
                reasons.join("\n")
            ),
        })
    }
}

/// A file or hunk a bulk accept left for a look of its own, and why.
struct Held {
    what: String,
    cautions: Vec<edit::Caution>,
}

impl std::fmt::Display for Held {
    /// `b.txt: not in the chat`, `hunk 1a2b3c4 of a.txt: holds invisible characters (U+202E)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why: Vec<String> = self.cautions.iter().map(ToString::to_string).collect();
        write!(f, "{}: {}", self.what, why.join(", "))
    }
}

/// A landing, handed back to the loop with the pending edits it took.
pub(crate) struct LandResult {
    pending: Pending,
    landed: Landed,
    /// The accepted hunks the user wrote, per file, taken before the landing (see
    /// `Proposal::rewritten_diffs`).
    rewritten: Vec<(PathBuf, String)>,
    /// What writing the commit messages cost.
    cost: f64,
}

/// Why a review op on a hunk or a file was not done; its text is what the user is told.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HunkOpError {
    /// An id that does not read as a hunk id (the parser's words).
    #[error("{0}")]
    BadId(String),
    #[error(transparent)]
    Unknown(#[from] edit::Unknown),
    #[error(transparent)]
    Refine(#[from] edit::RefineError),
    #[error("there are no proposed edits")]
    NoProposal,
}

fn parse_id(id: &str) -> Result<HunkId, HunkOpError> {
    id.parse().map_err(HunkOpError::BadId)
}

impl Engine {
    /// Hunks of the pending proposal without a decision, if any.
    pub(super) fn undecided_hunks(&self) -> Option<usize> {
        let pending = self.pending.as_ref()?;
        let n = pending
            .proposal
            .files()
            .iter()
            .flat_map(|f| f.hunks())
            .filter(|h| h.decision == Decision::Pending)
            .count();
        (n > 0).then_some(n)
    }

    /// Parses a code-mode reply into edits on top of what is already proposed this
    /// turn, shows them, and sends failed blocks back to the model (at most
    /// `max_reflections` times per user message, and only when `origin` allows).
    /// Returns how many edit blocks the reply had and how many of them failed (None: the
    /// repository could not be read).
    pub(super) fn propose_edits(
        &mut self,
        reply: &str,
        kind: TurnKind,
        origin: ReplyOrigin,
    ) -> Option<Blocks> {
        let ws = match Workspace::discover(self.session.root()) {
            Ok(ws) => ws,
            Err(e) => {
                self.events
                    .error(format!("cannot read the repository to apply edits: {e}"));
                return None;
            }
        };
        let format = self.model.edit_format();
        let files = FileSet::new(self.editable_paths(&ws), ws.files())
            .with_read_only(self.chat_paths(FileMode::ReadOnly));
        let turn = self.saved.record().turn();
        let pending = self.pending.get_or_insert_with(|| Pending {
            proposal: Proposal::new(&ws),
            failures: Vec::new(),
            shell: Vec::new(),
            written_as: Vec::new(),
            confirm_ignored: Vec::new(),
            reasons: Vec::new(),
            turn,
            landed: false,
        });
        let report = pending.proposal.add_reply(&ws, reply, format, &files);
        let blocks = report.blocks;
        let failed = report.errors.len();
        let counted = Blocks { blocks, failed };
        // An earlier reply's failure stays until a reply answers it: a reflection
        // answered in prose leaves it open, shown and saved (and a headless run fails).
        let unanswered = unanswered(std::mem::take(&mut pending.failures), &report);
        pending.failures = unanswered;
        pending
            .failures
            .extend(report.errors.iter().map(failure_view));
        let open = pending.failures.len();
        if blocks == 0 && pending.proposal.is_empty() && open == 0 {
            self.end_proposal();
            return Some(counted);
        }

        let other: Vec<edit::EditFormat> = report
            .formats
            .iter()
            .copied()
            .filter(|f| *f != format && !pending.written_as.contains(f))
            .collect();
        pending.written_as.extend(other.iter().copied());
        pending
            .shell
            .extend(report.shell.into_iter().map(|s| s.commands));
        let applied = report.blocks - report.errors.len();
        for (named, path) in &report.taken_as {
            self.events.notice(format!(
                "the reply names {named}, which is no file here: its edits are taken as edits to {}",
                path.display()
            ));
        }
        for written in other {
            self.events.notice(format!(
                "the reply wrote its edits as {}, not the {} asked for ({format}); they were read as such",
                written.blocks(),
                format.blocks()
            ));
        }
        let reflections = match kind {
            TurnKind::User | TurnKind::Fix => 0,
            TurnKind::Reflection(n) => n,
        };
        let reflect = !report.errors.is_empty()
            && origin == ReplyOrigin::Model
            && reflections < self.model.settings().max_reflections;
        if reflect && self.may_spend(Unattended::Reflection) {
            let message = edit::reflection_message(&report.errors, applied, format);
            self.publish_proposal();
            self.events.send(Event::Reflection {
                attempt: reflections + 1,
                max: self.model.settings().max_reflections,
                message: message.clone(),
            });
            self.start_turn(
                message,
                ChatMode::Code,
                TurnKind::Reflection(reflections + 1),
            );
            return Some(counted);
        }
        if open == 0 || origin == ReplyOrigin::Given || reflect {
            // Nothing to say, no model to say it to, or a spending cap said why not:
            // the failures are in the view.
        } else if origin == ReplyOrigin::Interrupted {
            self.events.warning(format!(
                "the reply was interrupted: {} failed, not applied and not sent back to the model (each is shown with why)",
                count(open, "edit block")
            ));
        } else {
            self.events.warning(format!(
                "{} still failed after {}; not applied (each is shown with why)",
                count(open, "edit block"),
                count(reflections, "reflection")
            ));
        }
        self.publish_proposal();
        if self.pending.as_ref().is_some_and(|p| p.proposal.is_empty()) {
            self.pending = None;
        }
        Some(counted)
    }

    /// `Op::ProposeReply`: a reply written elsewhere, proposed as if the model had sent
    /// it, but never answered with a reflection (no model wrote it).
    pub(super) fn propose_reply(&mut self, reply: &str) {
        if let Some(busy) = self.activity.busy_reason() {
            self.events.error(busy.into());
        } else if self.undecided_hunks().is_some() {
            self.events.error(
                "proposed hunks still wait for a decision: apply or /discard them first".into(),
            );
        } else {
            self.end_proposal();
            match self.propose_edits(reply, TurnKind::User, ReplyOrigin::Given) {
                Some(Blocks { blocks: 0, .. }) => self.events.error(format!(
                    "no edit blocks found in the reply (tern looked for the {} format's)",
                    self.model.edit_format()
                )),
                // Every block failed: the failures say so, not "nothing to change".
                Some(Blocks { blocks, failed }) if failed == blocks => {}
                Some(_) if self.pending.is_none() => self.events.notice(
                    "nothing to change: the reply's edits leave the files as they are".into(),
                ),
                _ => {}
            }
        }
        self.idle_if_done();
    }

    pub(super) fn review(&mut self, op: ReviewOp) {
        if matches!(self.activity, Activity::Git { .. }) {
            self.events
                .error("still applying the previous edits".into());
            return;
        }
        let Some(pending) = self.pending.as_mut() else {
            self.events
                .error("there are no proposed edits to review".into());
            return;
        };
        let decided = match &op {
            ReviewOp::Split { id } => {
                self.split_hunk(id);
                return;
            }
            ReviewOp::Edit { id, new_lines } => {
                self.edit_hunk(id, new_lines);
                return;
            }
            ReviewOp::Hunk { id, decision } => parse_id(id)
                .and_then(|id| Ok(pending.proposal.decide(Select::Hunk(id), *decision)?)),
            ReviewOp::File { path, decision } => pending
                .proposal
                .decide(Select::File(Path::new(path)), *decision)
                .map_err(HunkOpError::from),
            ReviewOp::All { decision } => pending
                .proposal
                .decide(Select::All, *decision)
                .map_err(HunkOpError::from),
            ReviewOp::Confirm { path } => pending
                .proposal
                .confirm(Path::new(path))
                .map(|()| 0)
                .map_err(HunkOpError::from),
            ReviewOp::Apply => {
                // A reflection still streaming would add hunks to what is being written.
                if let Some(busy) = self.activity.busy_reason() {
                    self.events.error(format!("not applied yet: {busy}"));
                    return;
                }
                match self.accepted_read_only() {
                    Some(path) => self.events.error(format!(
                        "nothing was written: {path} is read-only in the chat now; make it editable to apply its accepted hunks, or reject them"
                    )),
                    None => self.land(),
                }
                return;
            }
            ReviewOp::Discard => {
                self.discard();
                return;
            }
        };
        match decided {
            Ok(_) => {
                if let ReviewOp::File {
                    decision: Decision::Accept,
                    ..
                }
                | ReviewOp::All {
                    decision: Decision::Accept,
                } = &op
                {
                    self.say_held_hunks();
                }
                self.publish_proposal();
            }
            Err(e) => self.events.error(e.to_string()),
        }
    }

    /// After a bulk accept: the files and hunks it left for a caution of their own,
    /// named, so that the user knows which to look at before accepting each by itself.
    fn say_held_hunks(&mut self) {
        let held = self.pending.as_ref().map(Pending::held_back);
        if let Some(held) = held.filter(|h| !h.is_empty()) {
            let held: Vec<String> = held.iter().map(ToString::to_string).collect();
            self.events.warning(format!(
                "not accepted with the others, look at each and accept it by itself: {}",
                held.join("; ")
            ));
        }
    }

    /// `/apply all`: accepts what may be accepted in bulk and applies it. When that
    /// accepts nothing, it says what is held back, why, and the way to apply each with
    /// commands, not review keys the user may not have (a headless run).
    pub(super) fn apply_all(&mut self) {
        let Some(pending) = self.pending.as_mut() else {
            self.review(ReviewOp::Apply);
            return;
        };
        pending.accept(Select::All);
        let held = pending.held_back();
        if pending.any_accepted() || held.is_empty() {
            self.say_held_hunks();
            self.publish_proposal();
            self.review(ReviewOp::Apply);
            return;
        }
        let advice: Vec<String> = held
            .iter()
            .map(|h| match h.cautions.as_slice() {
                [edit::Caution::OutsideChat] => {
                    format!("{h} (/add {} first, then /apply all)", h.what)
                }
                _ => format!("{h} (accept it by itself in the workspace's review)"),
            })
            .collect();
        self.events.error(format!(
            "nothing was applied: /apply all accepts no file or hunk held back for a look of its own, and every one left is: {}",
            advice.join("; ")
        ));
    }

    /// `ReviewOp::Split`: the hunk's parts replace it. The proposal is published either
    /// way, so a front end waiting for the result gets it.
    fn split_hunk(&mut self, id: &str) {
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        match parse_id(id).and_then(|hunk| Ok(pending.proposal.split(hunk)?)) {
            Ok(parts) => {
                let ids: Vec<String> = parts.iter().map(ToString::to_string).collect();
                self.events.notice(format!(
                    "split hunk {id} into {}: {}",
                    parts.len(),
                    ids.join(", ")
                ));
            }
            Err(e) => self.events.error(e.to_string()),
        }
        self.publish_proposal();
    }

    /// `ReviewOp::Edit`: the user's lines become the hunk's, accepted; a refusal gives
    /// the text back.
    fn edit_hunk(&mut self, id: &str, new_lines: &str) {
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        let edited = parse_id(id).and_then(|hunk| Ok(pending.proposal.edit(hunk, new_lines)?));
        match edited {
            Ok(ids) => {
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                self.events.notice(format!(
                    "hunk {id} now holds your lines, accepted (as {})",
                    ids.join(", ")
                ));
            }
            Err(reason) => self.events.send(Event::EditRefused {
                id: id.to_string(),
                new_lines: new_lines.to_string(),
                reason: reason.to_string(),
            }),
        }
        self.publish_proposal();
    }

    /// `Op::HunkText`: a hunk's proposed lines, exactly, for an editor.
    pub(super) fn hunk_text(&mut self, id: &str) {
        let found = self
            .pending
            .as_ref()
            .ok_or(HunkOpError::NoProposal)
            .and_then(|p| {
                let hunk = parse_id(id)?;
                let text = p.proposal.hunk_text(hunk)?;
                let path = p
                    .proposal
                    .files()
                    .iter()
                    .find(|f| f.hunks().iter().any(|h| h.id == hunk))
                    .map(|f| f.path().display().to_string())
                    .unwrap_or_default();
                Ok((path, text))
            });
        match found {
            Ok((path, text)) => self.events.send(Event::HunkText {
                id: id.to_string(),
                path,
                text,
            }),
            Err(e) => self.events.error(e.to_string()),
        }
    }

    /// A file the user made read-only after its hunks were proposed and accepted:
    /// tern never writes a read-only chat file, whoever accepted the edit.
    fn accepted_read_only(&self) -> Option<String> {
        let pending = self.pending.as_ref()?;
        let root = self.session.root().to_path_buf();
        let chat = FileSet::new(Vec::new(), Vec::new())
            .with_read_only(self.chat_paths(FileMode::ReadOnly));
        pending
            .proposal
            .files()
            .iter()
            .find(|f| f.accepted().next().is_some() && chat.is_read_only(&root, f.path()))
            .map(|f| f.path().display().to_string())
    }

    /// The files the model may edit: the editable chat files, or every file of the
    /// repository for an engine that lands a reply for any file.
    fn editable_paths(&self, ws: &Workspace) -> Vec<PathBuf> {
        match self.run_loop.role() {
            EngineRole::LandReply { any_file: true } => ws.files(),
            _ => self.chat_paths(FileMode::Editable),
        }
    }

    /// The chat files in `mode`, as paths.
    fn chat_paths(&self, mode: FileMode) -> Vec<PathBuf> {
        self.session
            .paths(mode)
            .into_iter()
            .map(PathBuf::from)
            .collect()
    }

    /// `--resume`: the saved proposal (made in `turn`), placed in the files as they are
    /// now. Hunks that no longer apply are listed as failed with their lines (after the
    /// failures `shown` with it); a changed file's decisions are pending.
    pub(super) fn restore_pending(
        &mut self,
        snapshot: edit::ProposalSnapshot,
        turn: usize,
        mut shown: Vec<EditFailureView>,
        shell: Vec<String>,
    ) {
        let ws = match Workspace::discover(self.session.root()) {
            Ok(ws) => ws,
            Err(e) => {
                self.events
                    .error(format!("cannot restore the pending edits: {e}"));
                return;
            }
        };
        let (proposal, failures) = Proposal::restore(&ws, &snapshot);
        shown.extend(failures.iter().map(failure_view));
        // Failed hunks stay, with their lines, until the user dismisses them (even
        // when no hunk is left to review), and each resume says so.
        if proposal.is_empty() && shown.is_empty() {
            return;
        }
        let failed: Vec<String> = shown
            .iter()
            .filter(|f| f.hunk.is_some())
            .map(|f| format!("\n  ✗ {f}"))
            .collect();
        if !failed.is_empty() {
            // Said after the resumed conversation, where the user looks, each one named
            // (the review may have no room to show them all).
            let (verb, they, their, them) = match failed.len() {
                1 => ("applies", "it is", "its", "it"),
                _ => ("apply", "they are", "their", "them"),
            };
            self.saved.warn_at_start(format!(
                "{} of the saved session's proposed hunks no longer {verb} to the files as they are now: {they} listed as failed in the review, with {their} lines (/discard dismisses {them}):{}",
                failed.len(),
                failed.concat()
            ));
        }
        self.pending = Some(Pending {
            proposal,
            failures: shown,
            shell,
            // Not saved: the notice said it when the reply came.
            written_as: Vec::new(),
            confirm_ignored: Vec::new(),
            reasons: Vec::new(),
            turn,
            landed: false,
        });
        // Marked (files outside the chat) and shown by `run`, after `Ready`.
    }

    /// A file dropped from the chat (or made read-only) while its edits are pending:
    /// they stay, marked, and are no longer accepted in bulk.
    pub(super) fn mark_files_outside_chat(&mut self) {
        let Some(ws) = self
            .pending
            .as_ref()
            .and_then(|_| Workspace::discover(self.session.root()).ok())
        else {
            return;
        };
        let chat = self.editable_paths(&ws);
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        pending
            .proposal
            .set_chat_files(&FileSet::new(chat, Vec::new()));
        self.publish_proposal();
    }

    /// The pending edits as a unified diff with hunk ids, if there are any.
    pub(super) fn pending_diff(&self) -> Option<String> {
        let diff = view(self.pending.as_ref()?).unified_diff(false);
        (!diff.is_empty()).then_some(diff)
    }

    /// Forgets the proposal; the model is told none of it was applied.
    pub(super) fn discard(&mut self) {
        let Some((left, landed)) = self
            .pending
            .as_ref()
            .map(|p| (p.proposal.hunk_count(), p.landed))
        else {
            self.events
                .error("there are no proposed edits to discard".into());
            return;
        };
        self.end_proposal();
        let hunks = match left {
            1 => "the 1 hunk".to_string(),
            n => format!("the {n} hunks"),
        };
        // Hunks of this proposal applied earlier stay applied: only what is left goes.
        self.events.notice(match landed {
            true => {
                format!("discarded {hunks} not applied (not written); hunks applied earlier stay")
            }
            false => format!("discarded {hunks} (nothing was written)"),
        });
        self.publish_budget();
    }

    /// Ends the proposal, however it ends (discarded, replaced by a new reply or a new
    /// request): its hunks not applied are rejected and the model is told so with the
    /// next message, and front ends get the empty view at once, so no pane or badge
    /// shows edits that are gone.
    pub(super) fn end_proposal(&mut self) {
        let Some(mut pending) = self.pending.take() else {
            return;
        };
        let _ = pending.proposal.decide(Select::All, Decision::Reject);
        if let Some(note) = pending.rejected_note() {
            self.session.notes_for_next_turn.push(note);
        }
        self.publish_proposal();
    }

    /// `/reject ID [REASON]`: rejects a hunk; the reason goes to the model with it.
    pub(super) fn reject_with_reason(&mut self, args: &str) {
        let (id, reason) = args
            .trim()
            .split_once(char::is_whitespace)
            .unwrap_or((args.trim(), ""));
        self.review(ReviewOp::Hunk {
            id: id.to_string(),
            decision: Decision::Reject,
        });
        // An id the hunk had before it was split or edited names what it became.
        let decided = self.pending.as_ref().is_some_and(|p| {
            let named = id.parse().map_or(Vec::new(), |id| p.proposal.resolve(id));
            p.proposal
                .files()
                .iter()
                .flat_map(|f| f.hunks())
                .any(|h| named.contains(&h.id) && h.decision == Decision::Reject)
        });
        let reason = reason.trim();
        if let Some(pending) = self
            .pending
            .as_mut()
            .filter(|_| decided && !reason.is_empty())
        {
            pending.reasons.retain(|(hunk, _)| hunk != id);
            pending.reasons.push((id.to_string(), reason.to_string()));
            self.events
                .notice(format!("rejected hunk {id}; the model will be told why"));
        }
    }

    /// Writes the accepted hunks and commits them, on a blocking thread (hooks may take
    /// a while); the commit message comes from the weak model, or the fallback.
    fn land(&mut self) {
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        if pending.proposal.is_empty() {
            let failed = pending.failures.iter().filter(|f| f.hunk.is_some()).count();
            self.events.error(match failed {
                0 => "nothing to apply: no proposed hunk is left; /discard dismisses the failures listed".into(),
                1 => "nothing to apply: the 1 proposed hunk left no longer applies (listed as failed, with its lines); /discard dismisses it".into(),
                n => format!("nothing to apply: the {n} proposed hunks left no longer apply (listed as failed, with their lines); /discard dismisses them"),
            });
            return;
        }
        if !pending.any_accepted() {
            self.events
                .error("no hunk is accepted yet: y accepts a hunk, a a file, A all".into());
            return;
        }
        for path in std::mem::take(&mut pending.confirm_ignored) {
            let _ = pending.proposal.confirm(&path);
        }
        let mut pending = self.pending.take().expect("checked above");
        let rewritten = pending.proposal.rewritten_diffs();
        let root = self.session.root().to_path_buf();
        let settings = self.model.settings().clone();
        let client =
            (self.run_loop.role() == EngineRole::Conversation).then(|| self.model.client().clone());
        let asking = Asking::new(&self.model, &self.events);
        let done = self.run_loop.done();
        let runtime = tokio::runtime::Handle::current();
        let cancel = self.activity.git();
        self.events.notice("applying the accepted hunks…".into());
        tokio::task::spawn_blocking(move || {
            // No repository is the landing's to say; git's refusal of one is said here.
            let (repo, refused) = match git::discover(&root) {
                Ok(repo) => (Some(repo), None),
                Err(e @ git::GitError::NotOwned(_)) => (None, Some(e)),
                Err(_) => (None, None),
            };
            let options = LandOptions {
                commit: settings.auto_commits,
                dirty_commits: settings.dirty_commits,
                commit_options: CommitOptions::from(&settings),
                backup_root: Some(crate::config::backup_root(&root)),
                cancel: Some(&cancel),
            };
            let cancelled = || cancel.load(std::sync::atomic::Ordering::SeqCst);
            // What the weak model's commit messages cost, for the session's spending.
            let spent = std::cell::Cell::new(0.0);
            // A panic here must not leave the engine waiting forever for this result.
            let landed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if let Some(refused) = refused {
                    return Landed::Refused(refused);
                }
                git::land(
                    repo.as_ref(),
                    &mut pending.proposal,
                    options,
                    |diff| match &client {
                        Some(client) if !cancelled() => {
                            let (message, cost) =
                                runtime.block_on(commit_message(client, &asking, diff, &cancelled));
                            spent.set(spent.get() + cost);
                            message
                        }
                        _ => git::message::fallback(diff),
                    },
                )
            }))
            .unwrap_or_else(|panic| {
                Landed::Refused(git::GitError::Io(std::io::Error::other(format!(
                    "applying the edits failed unexpectedly ({}); check the files with git status",
                    super::run_loop::panic_text(&*panic)
                ))))
            });
            let _ = done.send(Internal::Landed(Box::new(LandResult {
                pending,
                landed,
                rewritten,
                cost: spent.get(),
            })));
        });
    }

    pub(super) fn finish_landing(&mut self, result: Box<LandResult>) {
        self.activity.end_git();
        let LandResult {
            pending,
            landed,
            rewritten,
            cost,
        } = *result;
        self.session.session_cost += cost;
        self.pending = Some(pending);
        let not_applied = match landed {
            Landed::Refused(e @ git::GitError::Interrupted) => {
                self.events.warning(e.to_string());
                Some(NotAppliedReason::Cancelled)
            }
            Landed::Refused(e) => {
                self.events.error(format!("nothing was written: {e}"));
                Some(NotAppliedReason::Refused)
            }
            Landed::DirtyCommitFailed(e) => {
                self.events.error(format!(
                    "nothing was written: your own uncommitted changes to these files could not be committed first: {e}"
                ));
                Some(NotAppliedReason::DirtyCommitFailed)
            }
            Landed::RolledBack {
                error,
                not_restored,
            } => {
                self.events.error(format!(
                    "the commit failed: {error}; nothing was committed (not even your own changes) and the files tern had written were put back as they were"
                ));
                for f in &not_restored {
                    self.events.error(format!(
                        "{} was not put back: {}",
                        f.path.display(),
                        f.error
                    ));
                }
                self.publish_proposal();
                Some(NotAppliedReason::CommitFailed)
            }
            Landed::NotWritten(ApplyOutcome::Stale(stale)) => {
                let said = self.restaled(&stale);
                self.events.warning(format!("nothing was written: {said}"));
                self.publish_proposal();
                Some(NotAppliedReason::Stale)
            }
            Landed::NotWritten(ApplyOutcome::NeedsConfirmation(paths)) => {
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                self.events.warning(format!(
                    "git ignores {}: apply again to write it anyway (it is never committed; an existing file is backed up first), or reject its hunks",
                    names.join(", ")
                ));
                if let Some(pending) = self.pending.as_mut() {
                    pending.confirm_ignored = paths;
                }
                Some(NotAppliedReason::NeedsConfirmation)
            }
            Landed::NotWritten(ApplyOutcome::Applied(_)) => None,
            // Nothing written, nothing committed (not the user's changes either): no
            // word may say "applied" or "written".
            Landed::Written { applied, .. } if applied.written.is_empty() => {
                for f in &applied.failed {
                    self.events
                        .error(format!("could not write {}: {}", f.path.display(), f.error));
                }
                if applied.stale.is_empty() {
                    Some(NotAppliedReason::WriteFailed)
                } else {
                    let said = self.restaled(&applied.stale);
                    self.events.warning(format!("nothing was written: {said}"));
                    self.publish_proposal();
                    Some(NotAppliedReason::Stale)
                }
            }
            Landed::Written {
                dirty,
                applied,
                commit,
            } => {
                if let Some(pending) = self.pending.as_mut() {
                    pending.landed = true;
                }
                let turn = self.pending.as_ref().map_or(0, |p| p.turn);
                if let Some(c) = dirty {
                    self.saved
                        .record_mut()
                        .committed(turn, c.id.to_string(), true);
                    self.events
                        .notice(format!("committed your own changes first: {}", c.line()));
                }
                for f in &applied.failed {
                    self.events
                        .error(format!("could not write {}: {}", f.path.display(), f.error));
                }
                if !applied.stale.is_empty() {
                    let said = self.restaled(&applied.stale);
                    self.events.warning(format!("not written: {said}"));
                }
                for b in &applied.backups {
                    self.events.notice(format!(
                        "{} is ignored by git, so its previous content was saved to {} (undo restores it)",
                        b.path.display(),
                        b.saved_at.display()
                    ));
                }
                let accepted: usize = applied.written.iter().map(|w| w.hunks.len()).sum();
                let rewritten: String = rewritten
                    .iter()
                    .filter(|(path, _)| applied.written.iter().any(|w| &w.path == path))
                    .map(|(_, diff)| diff.as_str())
                    .collect();
                if !rewritten.is_empty() {
                    self.session.notes_for_next_turn.push(format!(
                        "{}\n\n```diff\n{rewritten}```\n",
                        crate::prompts::USER_EDITED_HUNKS
                    ));
                }
                let detached = commit
                    .as_ref()
                    .and_then(|c| Some(format!("{} is {}", c.short_id(), c.detached_note()?)));
                let (commit_id, message) = match commit {
                    Some(c) => {
                        self.session.turns.landed(c.id);
                        self.saved
                            .record_mut()
                            .committed(turn, c.id.to_string(), false);
                        (Some(c.short_id()), c.summary)
                    }
                    None => (None, "written, not committed".to_string()),
                };
                let (held, lost) = self.pending.as_ref().map_or((0, 0), |p| {
                    let shown = view(p);
                    let held = shown
                        .files
                        .iter()
                        .flat_map(|f| f.hunks.iter().map(move |h| (f, h)))
                        .filter(|(f, h)| {
                            h.decision == Decision::Pending
                                && !(f.cautions.is_empty() && h.cautions.is_empty())
                        })
                        .count();
                    (held, shown.failures.len())
                });
                let remaining = self.close_if_decided();
                let written: Vec<String> = applied
                    .written
                    .iter()
                    .map(|w| w.path.display().to_string())
                    .collect();
                self.map
                    .refresh(written.clone(), &self.model, &self.events, &self.run_loop);
                self.events.send(Event::Applied {
                    files: written,
                    accepted,
                    rejected: remaining,
                    commit: commit_id,
                    message,
                    failed: applied
                        .failed
                        .iter()
                        .map(|f| f.path.display().to_string())
                        .chain(applied.stale.iter().map(|s| s.path.display().to_string()))
                        .collect(),
                    held,
                    lost,
                });
                if let Some(detached) = detached {
                    self.events.warning(detached);
                }
                self.publish_files();
                let (runner, mut parts) = self.commands();
                runner.auto_test_after_landing(&mut parts);
                None
            }
        };
        if let Some(reason) = not_applied {
            self.events.send(Event::NotApplied { reason });
        }
        // The saved session holds what the landing did (its commit, for `undo --turn`),
        // even when the user quit while it ran.
        self.save_session();
        self.publish_budget();
        self.idle_if_done();
    }

    /// Says which files changed on disk under a landing (their hunks were looked for
    /// again in the new content and only their decisions are back to pending), and
    /// lists the hunks that no longer apply as failures of the proposal.
    fn restaled(&mut self, stale: &[edit::StaleFile]) -> String {
        let names: Vec<String> = stale.iter().map(|s| s.path.display().to_string()).collect();
        let failed: usize = stale.iter().map(|s| s.errors.len()).sum();
        let lost = match failed {
            0 => String::new(),
            1 => "; 1 no longer applies and is listed as failed".into(),
            n => format!("; {n} no longer apply and are listed as failed"),
        };
        let others = match self.pending.as_ref().is_some_and(|p| {
            p.proposal
                .files()
                .iter()
                .any(|f| !stale.iter().any(|s| s.path == f.path()))
        }) {
            true => " (the other files keep theirs)",
            false => "",
        };
        if let Some(pending) = self.pending.as_mut() {
            pending
                .failures
                .extend(stale.iter().flat_map(|s| &s.errors).map(failure_view));
        }
        format!(
            "{} changed on disk since the edits were proposed; each of its hunks was looked for in the new content and their decisions are back to pending{others}: review them again{lost}",
            names.join(", ")
        )
    }

    /// After a landing: a proposal with nothing left to decide is closed, and the hunks
    /// the user rejected become a note for the model's next turn. Returns how many
    /// hunks were not applied.
    fn close_if_decided(&mut self) -> usize {
        let Some(pending) = self.pending.as_ref() else {
            return 0;
        };
        let left = pending.proposal.hunk_count();
        if self.undecided_hunks().is_some() {
            self.publish_proposal();
            return left;
        }
        let pending = self.pending.take().expect("checked above");
        if let Some(note) = pending.rejected_note() {
            self.session.notes_for_next_turn.push(note);
        }
        self.publish_proposal();
        left
    }

    /// Shows the proposal as it is now, and saves it with the session (so that quitting
    /// or a crash loses no decision).
    pub(super) fn publish_proposal(&mut self) {
        let view = match &self.pending {
            Some(p) => view(p),
            None => ProposalView::default(),
        };
        self.events.send(Event::Proposal(Box::new(view)));
        self.save_session();
    }
}

/// How many edit blocks a reply had, and how many of them failed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Blocks {
    pub(super) blocks: usize,
    pub(super) failed: usize,
}

/// Who writes commit messages (the weak model), the counter its requests are
/// predicted with, and where their `Request` events go.
struct Asking {
    model: ModelInfo,
    counter: crate::tokens::TokenCounter,
    /// The counter is the main model's, calibrated by its server's reports.
    main: bool,
    events: EventSink,
}

impl Asking {
    fn new(model: &super::model::Model, events: &EventSink) -> Self {
        let weak = ModelInfo::lookup(&model.settings().weak_model);
        let main = weak.name == model.info().name;
        Asking {
            counter: match main {
                true => model.counter().quiet(),
                false => weak.token_counter(),
            },
            model: weak,
            main,
            events: events.clone(),
        }
    }
}

/// A commit message for `diff` from the weak model (the fallback when it gives none, or
/// when `cancelled` says the landing is being given up), and what asking cost. Its
/// request is predicted, said and learned from as a turn's is.
async fn commit_message(
    client: &LlmClient,
    asking: &Asking,
    diff: &str,
    cancelled: &dyn Fn() -> bool,
) -> (String, f64) {
    let model = asking.model.clone();
    let messages = edit::prompts::commit_message_request(diff);
    let prediction = asking
        .counter
        .predict(messages.iter().map(|m| m.content.as_str()));
    let request = ChatRequest {
        model: model.clone(),
        messages,
        cache_control: false,
        reply_limit: crate::llm::ReplyLimit::Output { max_tokens: 100 },
        predicted_prompt: Some(prediction.total),
        counting: Some(asking.counter.provenance(&prediction)),
        one_at_a_time: false,
        known_window: None,
    };
    let cancel = CancellationToken::new();
    let watch = async {
        while !cancelled() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cancel.cancel();
    };
    let mut said = |event| {
        if let StreamEvent::Request {
            model,
            predicted_prompt_tokens,
            max_tokens,
            counting,
        } = event
        {
            asking.events.send(Event::Request {
                purpose: RequestKind::CommitMessage,
                model,
                predicted_prompt_tokens,
                max_tokens,
                counting: counting.unwrap_or(asking.counter.counting()),
            });
        }
    };
    let answer = tokio::select! {
        answer = tokio::time::timeout(
            COMMIT_MESSAGE_TIMEOUT,
            client.chat(&request, &cancel, &mut said),
        ) => answer,
        () = watch => return (git::message::fallback(diff), 0.0),
    };
    let (message, cost) = match answer {
        Ok(Ok(reply)) => {
            if reply.usage_reported {
                let reported = reply.usage.prompt_tokens;
                if let Some(counting) = request.counting {
                    asking.events.send(Event::Drift {
                        purpose: RequestKind::CommitMessage,
                        drift: crate::tokens::Drift {
                            predicted: prediction.total,
                            reported,
                            counting,
                        },
                    });
                }
                if asking.main
                    && let Err(implausible) = asking.counter.observe(&prediction, reported)
                {
                    tracing::warn!("commit message: {implausible}");
                }
            }
            (git::message::clean(&reply.text), model.cost(&reply.usage))
        }
        Ok(Err(e)) => {
            tracing::warn!("no commit message from {}: {e}", model.name);
            (None, 0.0)
        }
        Err(_) => {
            tracing::warn!("the commit message request timed out");
            (None, 0.0)
        }
    };
    (
        message.unwrap_or_else(|| git::message::fallback(diff)),
        cost,
    )
}

pub(super) fn view(pending: &Pending) -> ProposalView {
    let files = pending
        .proposal
        .files()
        .iter()
        .filter(|f| !f.hunks().is_empty())
        .map(|file| {
            let lines = file.all_hunk_lines(edit::CONTEXT);
            let hunk_cautions = file.hunk_cautions();
            FileProposalView {
                cautions: file.cautions(),
                ignored: match (file.needs_confirmation(), file.is_ignored_existing()) {
                    (false, _) => None,
                    (true, false) => Some(Ignored::New),
                    (true, true) => Some(Ignored::Existing),
                },
                path: file.path().display().to_string(),
                change: if file.is_new() {
                    FileStatus::Added
                } else {
                    FileStatus::Modified
                },
                hunks: file
                    .hunks()
                    .iter()
                    .zip(lines)
                    .zip(hunk_cautions)
                    .map(|((hunk, lines), cautions)| HunkView {
                        id: hunk.id.to_string(),
                        old_start: hunk.old.start + 1,
                        old_len: hunk.old.len(),
                        new_start: hunk.new.start + 1,
                        new_len: hunk.new.len(),
                        lines: lines.into_iter().map(DiffLine::into_owned).collect(),
                        decision: hunk.decision,
                        edited: hunk.edited,
                        cautions,
                    })
                    .collect(),
            }
        })
        .collect();
    ProposalView {
        files,
        failures: pending.failures.clone(),
        shell_commands: pending.shell.clone(),
        written_as: pending.written_as.clone(),
    }
}

/// The failures of earlier replies that `report`'s reply left unanswered: those for a
/// file it has no block for (a block without a file is answered by any block).
fn unanswered(earlier: Vec<EditFailureView>, report: &edit::ReplyReport) -> Vec<EditFailureView> {
    earlier
        .into_iter()
        .filter(|f| match &f.path {
            Some(path) => !report.paths.iter().any(|p| p == Path::new(path)),
            None => report.blocks == 0,
        })
        .collect()
}

/// A failed edit block as the review shows it and the session saves it.
fn failure_view(e: &EditError) -> EditFailureView {
    EditFailureView {
        path: e.path.as_ref().map(|p| p.display().to_string()),
        block: e.block,
        message: e.reason(),
        hunk: e.is_stale().then(|| e.source.clone()),
        near: match &e.problem {
            edit::Problem::NoMatch {
                near: Some(near), ..
            } => Some(NearLines {
                line: near.line,
                text: near.text.clone(),
            }),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hunk_op_error_says_what_the_error_it_carries_says() {
        let bad = "h?".parse::<HunkId>().unwrap_err();
        let parsed = parse_id("h?").unwrap_err();
        assert!(matches!(&parsed, HunkOpError::BadId(text) if *text == bad));
        assert_eq!(parsed.to_string(), bad);
        let unknown = edit::Unknown("h9".into());
        assert_eq!(
            HunkOpError::from(unknown.clone()).to_string(),
            unknown.to_string()
        );
        let id = "00a1b2c".parse::<HunkId>().unwrap();
        let refused = edit::RefineError::CannotSplit(id);
        assert!(matches!(
            HunkOpError::from(refused.clone()),
            HunkOpError::Refine(edit::RefineError::CannotSplit(_))
        ));
        assert_eq!(
            HunkOpError::from(refused.clone()).to_string(),
            refused.to_string()
        );
        assert_eq!(
            HunkOpError::NoProposal.to_string(),
            "there are no proposed edits"
        );
    }
}
