//! tern's events and views as ACP `session/update`s: text chunks, the budget (as
//! `usage_update` and, for clients that show no usage, as a plan of its sections),
//! the commands an editor offers, a resumed conversation.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk,
    Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, StopReason, TextContent,
    UnstructuredCommandInput, UsageUpdate,
};

use crate::engine::protocol::{BudgetReport, Command, Finish, Shown, ShownKind, thousands};

/// The slash commands that make sense in an editor, advertised to it; a prompt that
/// starts with one runs it (`engine::input`, the one parser).
const EDITOR_COMMANDS: &[Command] = &[
    Command::Tokens,
    Command::Undo,
    Command::Rewind,
    Command::Test,
    Command::Run,
    Command::MapRefresh,
    Command::Ask,
    Command::Code,
    Command::Add,
    Command::ReadOnly,
];

pub(super) fn text(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(chunk(text))
}

pub(super) fn thought(text: String) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(chunk(text))
}

/// Text as tern's own front ends show it: invisible and control characters (bidi
/// overrides, escape sequences) as markers, never for the client to render.
fn chunk(text: String) -> ContentChunk {
    let text = crate::terminal_text::visible(&text).into_owned();
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// A message of a resumed conversation, replayed as the client would have seen it.
pub(super) fn shown(shown: &Shown) -> SessionUpdate {
    match shown.kind {
        ShownKind::User => SessionUpdate::UserMessageChunk(chunk(shown.text.clone())),
        ShownKind::Assistant => text(shown.text.clone()),
        ShownKind::Note => text(format!("tern told the model: {}\n", shown.text)),
        ShownKind::Summary => text(format!(
            "Summary of the earlier conversation (what the model sees of it):\n{}\n",
            shown.text
        )),
    }
}

/// The next request's size against the window.
pub(super) fn usage(report: &BudgetReport) -> SessionUpdate {
    let used = u64::try_from(report.total).unwrap_or(u64::MAX);
    let size = u64::try_from(report.window).unwrap_or(u64::MAX);
    SessionUpdate::UsageUpdate(UsageUpdate::new(used, size))
}

/// The budget by section as a plan, one entry a section, then the total: what the
/// next request holds, which every client can show.
pub(super) fn budget_plan(report: &BudgetReport) -> SessionUpdate {
    let mut entries: Vec<PlanEntry> = report
        .sections
        .iter()
        .filter(|row| row.tokens > 0)
        .map(|row| {
            PlanEntry::new(
                format!(
                    "{}: {} tokens ({:.0}%)",
                    row.label,
                    thousands(row.tokens),
                    row.percent
                ),
                PlanEntryPriority::Low,
                PlanEntryStatus::Completed,
            )
        })
        .collect();
    entries.push(PlanEntry::new(
        format!(
            "next request: {} of {} tokens the window of {} leaves for the prompt",
            thousands(report.total),
            thousands(report.prompt_limit),
            report.model
        ),
        PlanEntryPriority::Medium,
        PlanEntryStatus::Completed,
    ));
    SessionUpdate::Plan(Plan::new(entries))
}

pub(super) fn commands() -> SessionUpdate {
    let commands = EDITOR_COMMANDS
        .iter()
        .map(|command| {
            let listed = AvailableCommand::new(command.name(), command.help());
            match command.args() {
                "" => listed,
                args => listed.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(args),
                )),
            }
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

/// How a reply ended, as ACP says it.
pub(super) fn stop_reason(finish: &Finish) -> StopReason {
    match finish {
        Finish::Cancelled => StopReason::Cancelled,
        Finish::Length(_) | Finish::ContextFull { .. } => StopReason::MaxTokens,
        _ => StopReason::EndTurn,
    }
}
