//! The review gate in ACP terms: each pending hunk is a tool call whose content is a
//! `diff` of that hunk alone (its old and new lines, with their context) and whose
//! location is its first line; the user accepts or rejects it once through
//! `session/request_permission`. tern writes the files itself afterwards (the
//! engine's landing), never through the client, so the commit holds exactly what was
//! accepted.

use std::path::Path;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Diff, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Client, Error};

use crate::engine::Op;
use crate::engine::protocol::{
    Command, Decision, HunkView, Ignored, LineKind, ProposalView, ReviewOp,
};

const ACCEPT: &str = "accept";
const REJECT: &str = "reject";

/// What the user decided about a proposal's hunks.
#[derive(Debug, Default)]
pub(super) struct Decided {
    hunks: Vec<Asked>,
    /// Files git ignores that the user agreed to write (`ReviewOp::Confirm`).
    confirmed: Vec<String>,
    /// The client answered a question `cancelled` (the prompt was cancelled).
    pub(super) cancelled: bool,
}

impl Decided {
    /// The ops that carry the decisions out: each hunk's, then the landing of the
    /// accepted ones, or, with none accepted or after a cancel, the proposal's end
    /// (the model hears which hunks were rejected either way).
    pub(super) fn ops(&self, cancelled: bool) -> Vec<Op> {
        let discard = Op::Command {
            command: Command::Discard,
            args: String::new(),
        };
        if cancelled {
            return vec![discard];
        }
        let mut ops: Vec<Op> = self
            .hunks
            .iter()
            .map(|asked| match asked.unsaved {
                // Not the user's rejection: the model is told why it did not land.
                true => Op::Command {
                    command: Command::Reject,
                    args: format!("{} {}", asked.hunk, crate::prompts::UNSAVED_IN_EDITOR),
                },
                false => Op::Review(ReviewOp::Hunk {
                    id: asked.hunk.clone(),
                    decision: asked.decision,
                }),
            })
            .collect();
        ops.extend(
            self.confirmed
                .iter()
                .map(|path| Op::Review(ReviewOp::Confirm { path: path.clone() })),
        );
        let any = self.hunks.iter().any(|a| a.decision == Decision::Accept);
        ops.push(match any {
            true => Op::Review(ReviewOp::Apply),
            false => discard,
        });
        ops
    }

    /// The tool calls of the accepted hunks once the landing wrote them (those of a
    /// file in `failed` were not written).
    pub(super) fn landed(&self, failed: &[String]) -> Vec<SessionUpdate> {
        self.accepted()
            .map(|(call, path)| {
                let status = match failed.contains(path) {
                    true => ToolCallStatus::Failed,
                    false => ToolCallStatus::Completed,
                };
                status_update(call, status)
            })
            .collect()
    }

    /// The tool calls of the accepted hunks when the landing wrote nothing.
    pub(super) fn not_landed(&self) -> Vec<SessionUpdate> {
        self.accepted()
            .map(|(call, _)| status_update(call, ToolCallStatus::Failed))
            .collect()
    }

    /// The files of the accepted hunks.
    pub(super) fn accepted_files(&self) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for (_, path) in self.accepted() {
            if !files.contains(path) {
                files.push(path.clone());
            }
        }
        files
    }

    /// The accepted hunks of `files`, whose text in the editor has unsaved changes, do
    /// not land (they were made against the file on disk): their tool calls fail.
    pub(super) fn hold_back(&mut self, files: &[String]) -> Vec<SessionUpdate> {
        self.reject_accepted(files, true)
    }

    /// The accepted hunks of `files` do not land after all: held back for the
    /// editor's `unsaved` changes, or rejected (the user would not write a file git
    /// ignores). Their tool calls fail.
    fn reject_accepted(&mut self, files: &[String], unsaved: bool) -> Vec<SessionUpdate> {
        let mut failed = Vec::new();
        for asked in &mut self.hunks {
            if asked.decision == Decision::Accept && files.contains(&asked.path) {
                asked.decision = Decision::Reject;
                asked.unsaved = unsaved;
                failed.push(status_update(&asked.call, ToolCallStatus::Failed));
            }
        }
        failed
    }

    fn accepted(&self) -> impl Iterator<Item = (&String, &String)> {
        self.hunks
            .iter()
            .filter(|a| a.decision == Decision::Accept)
            .map(|a| (&a.call, &a.path))
    }
}

/// A hunk the user was asked about.
#[derive(Debug)]
struct Asked {
    /// Its tool call's id.
    call: String,
    /// The hunk's id in the proposal.
    hunk: String,
    path: String,
    decision: Decision,
    /// Accepted, but held back: the editor has unsaved changes to its file.
    unsaved: bool,
}

/// A tool call id unique in the connection (a hunk proposed again in a later turn has
/// the same hunk id, but is asked about again).
fn call_id(what: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{what}-{n}")
}

fn status_update(call: &str, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call.to_string(),
        ToolCallUpdateFields::new().status(status),
    ))
}

/// Shows each pending hunk of `view` as a tool call and asks about it; stops asking
/// once the client says the prompt was cancelled.
pub(super) async fn ask(
    cx: &ConnectionTo<Client>,
    session: &str,
    root: &Path,
    view: &ProposalView,
) -> Result<Decided, Error> {
    let mut decided = Decided::default();
    let total: usize = view.files.iter().map(|f| f.hunks.len()).sum();
    let mut n = 0;
    for file in &view.files {
        for hunk in file
            .hunks
            .iter()
            .filter(|h| h.decision == Decision::Pending)
        {
            n += 1;
            let call = call_id(&format!("hunk-{}", hunk.id));
            let cautions: Vec<String> = (hunk.cautions.iter())
                .chain(&file.cautions)
                .map(ToString::to_string)
                .collect();
            let title = match cautions.is_empty() {
                true => format!("Edit {} (hunk {n} of {total})", file.path),
                false => format!(
                    "Edit {} (hunk {n} of {total}): {}",
                    file.path,
                    cautions.join("; ")
                ),
            };
            let path = root.join(&file.path);
            let (diff, marked) = diff(&path, hunk);
            let mut content = vec![ToolCallContent::Diff(diff)];
            if marked {
                content.insert(0, ToolCallContent::from(MARKED));
            }
            let locations = vec![ToolCallLocation::new(path).line(first_line(hunk))];
            let tool = ToolCall::new(call.clone(), title.clone())
                .kind(ToolKind::Edit)
                .status(ToolCallStatus::Pending)
                .content(content.clone())
                .locations(locations.clone());
            update(cx, session, SessionUpdate::ToolCall(tool))?;
            // The question carries the whole call, for clients that match on it
            // (acpx's permission policies match its title).
            let asked = ToolCallUpdateFields::new()
                .title(title)
                .kind(ToolKind::Edit)
                .content(content)
                .locations(locations);
            let decision = match permission(cx, session, &call, asked).await? {
                Some(true) => Decision::Accept,
                Some(false) => Decision::Reject,
                None => {
                    decided.cancelled = true;
                    return Ok(decided);
                }
            };
            if decision == Decision::Reject {
                update(cx, session, status_update(&call, ToolCallStatus::Failed))?;
            }
            decided.hunks.push(Asked {
                call,
                hunk: hunk.id.clone(),
                path: file.path.clone(),
                decision,
                unsaved: false,
            });
        }
        if let Some(ignored) = file.ignored
            && decided.accepted_files().contains(&file.path)
        {
            match permission(
                cx,
                session,
                &call_id("ignored"),
                ignored_question(&file.path, ignored),
            )
            .await?
            {
                Some(true) => decided.confirmed.push(file.path.clone()),
                Some(false) => {
                    let rejected = decided.reject_accepted(std::slice::from_ref(&file.path), false);
                    for failed in rejected {
                        update(cx, session, failed)?;
                    }
                }
                None => {
                    decided.cancelled = true;
                    return Ok(decided);
                }
            }
        }
    }
    Ok(decided)
}

/// The second question a file git ignores gets once a hunk of it was accepted, as the
/// workspace asks to apply again: git cannot bring such a file back.
fn ignored_question(path: &str, ignored: Ignored) -> ToolCallUpdateFields {
    let what = match ignored {
        Ignored::New => "it would be created and never committed",
        Ignored::Existing => {
            "it is never committed; its content is backed up first (/undo restores it)"
        }
    };
    ToolCallUpdateFields::new()
        .title(format!("Write {path} anyway? git ignores it: {what}"))
        .kind(ToolKind::Edit)
}

/// Asks whether to run a command the model suggested (typed ones run at once, as in
/// the workspace).
pub(super) async fn ask_command(
    cx: &ConnectionTo<Client>,
    session: &str,
    command: &str,
    reason: Option<&str>,
) -> Result<bool, Error> {
    let call = call_id("command");
    let title = match reason {
        Some(reason) => format!("Run `{command}` ({reason})"),
        None => format!("Run `{command}`"),
    };
    let tool = ToolCall::new(call.clone(), title.clone())
        .kind(ToolKind::Execute)
        .status(ToolCallStatus::Pending);
    update(cx, session, SessionUpdate::ToolCall(tool))?;
    let asked = ToolCallUpdateFields::new()
        .title(title)
        .kind(ToolKind::Execute);
    let run = permission(cx, session, &call, asked).await? == Some(true);
    let status = match run {
        true => ToolCallStatus::InProgress,
        false => ToolCallStatus::Failed,
    };
    update(cx, session, status_update(&call, status))?;
    Ok(run)
}

fn update(cx: &ConnectionTo<Client>, session: &str, update: SessionUpdate) -> Result<(), Error> {
    cx.send_notification(agent_client_protocol::v1::schema::SessionNotification::new(
        session.to_string(),
        update,
    ))
}

/// Asks about tool call `call` (`asked`: what it is): accept (Some(true)) or reject
/// (Some(false)) once; None when the prompt was cancelled.
async fn permission(
    cx: &ConnectionTo<Client>,
    session: &str,
    call: &str,
    asked: ToolCallUpdateFields,
) -> Result<Option<bool>, Error> {
    let options = vec![
        PermissionOption::new(ACCEPT, "Accept", PermissionOptionKind::AllowOnce),
        PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
    ];
    let request = RequestPermissionRequest::new(
        session.to_string(),
        ToolCallUpdate::new(call.to_string(), asked),
        options,
    );
    let answer = cx.send_request(request).block_task().await?;
    Ok(match answer.outcome {
        RequestPermissionOutcome::Selected(selected) => Some(&*selected.option_id.0 == ACCEPT),
        _ => None,
    })
}

/// Said beside a diff whose text [`diff`] made visible.
const MARKED: &str = "Caution: this hunk holds characters an editor may not show \
    (invisible ones, or control characters such as escape sequences). The diff shows \
    each as tern's review does, as a marker like `⟨U+202E⟩` or `\\u{1b}`; the file gets \
    the characters themselves.";

/// The hunk as a diff of its own: the old lines (context and removed) and the new
/// (context and added), each ending as in the file. Every invisible or control
/// character is shown as its marker (`terminal_text::visible`), so an editor shows
/// what the file will hold rather than render it; true when any was.
fn diff(path: &Path, hunk: &HunkView) -> (Diff, bool) {
    let mut marked = false;
    let mut side = |keep: LineKind| {
        let mut text = String::new();
        for line in hunk
            .lines
            .iter()
            .filter(|l| l.kind == LineKind::Context || l.kind == keep)
        {
            let shown = crate::terminal_text::visible(&line.text);
            marked |= matches!(shown, std::borrow::Cow::Owned(_));
            text.push_str(&shown);
            if !line.no_newline {
                text.push('\n');
            }
        }
        text
    };
    let old = side(LineKind::Removed);
    let diff = Diff::new(path, side(LineKind::Added));
    let diff = match hunk.old_len {
        0 if hunk.old_start == 0 => diff,
        _ => diff.old_text(old),
    };
    (diff, marked)
}

/// The hunk's first line in the new file (1-based), where an editor shows it.
fn first_line(hunk: &HunkView) -> u32 {
    u32::try_from(hunk.new_start.max(1)).unwrap_or(u32::MAX)
}
