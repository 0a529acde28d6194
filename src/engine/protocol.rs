//! The only way in and out of the engine: front ends send `Op`s and read `Event`s.
//! The TUI and the headless front end are two consumers of the same stream.

use derive_visitor::DriveMut;
use serde::Serialize;

/// The slash commands, one row each.
pub use super::commands::{ArgCompletion, Command, UnknownCommand};

/// A turn of the `/rewind` timeline, and how front ends write it.
pub use super::timeline::{TimelineTurn, preview as rewind_preview, timeline_text, turn_line};
/// A branch review: what to compare, how to fit it, its plan (as the Review pane lists
/// it) and its replies.
pub use crate::branch_review::{
    CallReply, DiffSource, Outcome, PlanMode, ReviewOptions, ReviewPlan,
};
/// Where the window's size comes from.
pub use crate::context::WindowSource;
/// The command a command output's row in the budget names.
pub use crate::context::output_command;
/// The budget view the gauge draws.
pub use crate::context::{BudgetReport, HistoryStatus, Section};
/// How a reply ended, and what it cost.
pub use crate::llm::{Finish, ReplyLimit, Usage};
/// How front ends write token counts (`12,345`).
pub use crate::tokens::thousands;
/// How token counts are made (the gauge says it).
pub use crate::tokens::{Counting, Drift};

/// The models tern knows (its model table): name and context window, for completion.
pub(crate) fn known_models() -> impl Iterator<Item = (&'static str, usize)> {
    crate::llm::models::all()
        .iter()
        .map(|m| (m.name.as_str(), m.context_window))
}

/// Whether a chat file may be edited by the model.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    serde::Deserialize,
    DriveMut,
)]
#[serde(rename_all = "snake_case")]
pub enum FileMode {
    Editable,
    ReadOnly,
}

pub use crate::diff::{DiffLine, FileStatus, LineKind};
/// Whether a turn may propose edits.
pub use crate::edit::prompts::Mode as ChatMode;
/// Why a hunk waits for a look, and what the user decided about it.
pub use crate::edit::{Caution, Decision};
/// A front end that starts no engine where git refuses the repository says why.
pub use crate::git::owner_refusal;

/// What a request to the model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum RequestKind {
    /// A chat turn (or a reflection on failed edits).
    Turn,
    /// A history summary.
    Summary,
    /// A branch review.
    Review,
    /// A commit message for landed edits (the weak model's).
    CommitMessage,
}

/// An op's id, given by the front end's sender (`OpSender::send`); every event the op
/// causes carries it (`Envelope`), so a front end can match a prompt to its updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct OpId(pub u64);

/// An op as it reaches the engine (codex-rs's `Submission`).
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub id: OpId,
    pub op: Op,
}

/// An event as it leaves the engine: `op` is the op that caused it, directly or through
/// the work it started (a reply's stream, its reflections, a landing); None for what the
/// engine reports on its own (start-up, the map it keeps fresh).
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub op: Option<OpId>,
    pub event: Event,
}

/// A request from a front end.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A chat message, sent to the model as it is (a `/` or `!` at its start is
    /// text: `input::parse` made commands of what was typed as one).
    Submit {
        text: String,
    },
    /// A slash command (`/tokens`, `/apply all`; `!CMD` is `/run CMD`), its arguments
    /// trimmed.
    Command {
        command: Command,
        args: String,
    },
    /// What the message being typed would send the model (`input::draft`), and the
    /// mode it names (`/ask TEXT`), so the gauge can show the `cur` section live and
    /// count the prompt that message would be sent with.
    Draft {
        text: String,
        mode: Option<ChatMode>,
    },
    /// Add files (paths relative to the working directory or the repository root).
    AddFiles {
        paths: Vec<String>,
        mode: FileMode,
    },
    SetFileMode {
        path: String,
        mode: FileMode,
    },
    DropFile {
        path: String,
    },
    /// Propose the edits of a reply written elsewhere (`tern apply`), as if the model
    /// had just sent it; nothing is sent back to the model about its failed blocks.
    ProposeReply {
        reply: String,
    },
    /// Interrupt the running turn (its partial reply is kept), or a landing that still
    /// waits for another tern.
    Cancel,
    /// Decide on the hunks of the pending proposal, or apply / discard it.
    Review(ReviewOp),
    /// Review a branch (or the work tree) within `options`' budget: `ReviewPlan`, then,
    /// when `send` is set, the streamed review, `BranchReviewed` and `TurnFinished`.
    ReviewBranch {
        source: DiffSource,
        options: ReviewOptions,
        send: bool,
    },
    /// Add the files a reply asked for (`Event::Needed`) and ask the last question
    /// again with them; refused while a reply streams or edits wait for review.
    AddNeeded {
        paths: Vec<String>,
        mode: FileMode,
    },
    /// `--yes`: accept what may land without a person's look and apply it, as `/apply
    /// all` does. A file or hunk with a caution is held back (`Event::HeldBack`),
    /// except, with `outside_chat`, a file whose only caution is that it is not in the
    /// chat.
    ApplyAllowed {
        outside_chat: bool,
    },
    /// Ask for the repository's files (for `@` completion and the file picker).
    ListRepoFiles,
    /// Ask why a file is in the repo map (answered with `Event::MapWhy`).
    MapWhy {
        path: String,
    },
    /// Ask for a pending hunk's proposed lines, exactly (answered with
    /// `Event::HunkText`), for the user to edit them.
    HunkText {
        id: String,
    },
    /// Run a shell command a reply suggested (`Event::Needed`): the model proposed it,
    /// so it asks first (`Event::ConfirmCommand`), unlike `/run` typed by the user.
    RunSuggested {
        command: String,
    },
    /// The answer to `Event::ConfirmCommand`: run the command the engine asked about
    /// (exactly as it holds it), or not.
    AnswerCommand {
        run: bool,
    },
    /// Add the last command's output to the context (`/add-output`).
    AddOutput,
    /// The session's turns and what a rewind to before each would change
    /// (`Event::Timeline`); changes nothing.
    Timeline,
    /// Rewind to before turn `to` (1-based, as the chat numbers turns): the code (every
    /// commit tern made since), the conversation, or both (`engine::rewind`).
    Rewind {
        to: usize,
        code: bool,
        chat: bool,
    },
    /// Put back what the last rewind took away, until a message is sent.
    RewindRedo,
    /// No message follows the ones sent (a one-shot `-m`, a script's end): no summary
    /// starts after them; the next start makes one if the history needs it.
    NoMoreMessages,
    /// Go on in another of the repository's sessions (`/sessions`): this one is saved
    /// first (a save that fails stops the switch), and one a tern has open is refused,
    /// as `--resume` refuses it. `keep_pending`: the user was asked, and said yes, to
    /// leave this session's pending hunks with it; without it a session with pending
    /// hunks is not left.
    SwitchSession {
        id: String,
        keep_pending: bool,
    },
    Shutdown,
}

impl Op {
    /// Whether it starts a model turn (rather than running a command).
    pub fn starts_turn(&self) -> bool {
        match self {
            Op::Submit { text } => !text.trim().is_empty(),
            Op::Command {
                command: Command::Ask | Command::Code,
                args,
            } => !args.is_empty(),
            _ => false,
        }
    }
}

/// A review action on the pending proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewOp {
    Hunk {
        id: String,
        decision: Decision,
    },
    File {
        path: String,
        decision: Decision,
    },
    All {
        decision: Decision,
    },
    /// The user's yes to writing a file git ignores (never committed; an existing one
    /// is backed up first). Applying twice confirms the files the first apply named.
    Confirm {
        path: String,
    },
    /// Split a hunk where unchanged lines separate its changes (`git add -p`'s `s`);
    /// each part gets its own id and keeps the hunk's decision.
    Split {
        id: String,
    },
    /// The user's own version of a hunk's new lines (`git add -p`'s `e`): it becomes
    /// the hunk's proposed content, accepted. Refused with `Event::EditRefused`, which
    /// gives the text back.
    Edit {
        id: String,
        new_lines: String,
    },
    /// Write the accepted hunks (and commit them, unless auto-commits are off).
    Apply,
    /// Forget the proposal; nothing is written.
    Discard,
}

/// A hunk as the review pane shows it.
#[derive(Debug, Clone, PartialEq, Eq, DriveMut)]
pub struct HunkView {
    /// Stable id, also used by `tern apply --accept`.
    pub id: String,
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<DiffLine>,
    pub decision: Decision,
    /// The user wrote its new lines (`ReviewOp::Edit`).
    pub edited: bool,
    /// Why this hunk is accepted only by itself (its new lines hold invisible
    /// characters); empty: it goes with its file.
    pub cautions: Vec<Caution>,
}

#[derive(Debug, Clone, PartialEq, Eq, DriveMut)]
pub struct FileProposalView {
    pub path: String,
    pub change: FileStatus,
    pub hunks: Vec<HunkView>,
    /// Why its hunks are not accepted in bulk (empty: they are).
    pub cautions: Vec<Caution>,
    /// Git ignores the file and the user has not confirmed writing it yet
    /// (`ReviewOp::Confirm`).
    pub ignored: Option<Ignored>,
}

/// A gitignored file a proposal writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum Ignored {
    /// It would be created.
    New,
    /// It exists (`.env`): its content is backed up before it is replaced, since git
    /// cannot bring it back.
    Existing,
}

/// An edit block that could not be applied, as shown to the user (and sent back to the
/// model as a reflection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, DriveMut)]
pub struct EditFailureView {
    pub path: Option<String>,
    /// Which block of the reply (1-based); 0 for a proposed hunk that went stale.
    pub block: usize,
    /// Why it failed.
    pub message: String,
    /// The lines of the file most like a SEARCH text that did not match.
    #[serde(default)]
    pub near: Option<NearLines>,
    /// A stale hunk's lines, as a diff without line numbers (` ` kept, `-` removed,
    /// `+` added): what the model proposed, for the user to redo by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunk: Option<String>,
}

impl std::fmt::Display for EditFailureView {
    /// `block 2 (src/a.rs): why`, or for a stale hunk `src/a.rs: why`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.path, self.hunk.is_some()) {
            (Some(path), true) => write!(f, "{path}: {}", self.message),
            (Some(path), false) => write!(f, "block {} ({path}): {}", self.block, self.message),
            (None, _) => write!(f, "block {}: {}", self.block, self.message),
        }
    }
}

/// Lines of a file, from a 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, DriveMut)]
pub struct NearLines {
    pub line: usize,
    pub text: String,
}

/// The edits a reply proposes, with the user's decisions so far. An empty view (no
/// files, no failures) means nothing is left to review.
#[derive(Debug, Clone, PartialEq, Eq, Default, DriveMut)]
pub struct ProposalView {
    pub files: Vec<FileProposalView>,
    pub failures: Vec<EditFailureView>,
    /// Shell commands the model suggested; shown, never run.
    pub shell_commands: Vec<String>,
    /// The formats other than the one asked for that the replies wrote edits in: they
    /// were read all the same (`edit::parse_reply`).
    pub written_as: Vec<crate::edit::EditFormat>,
}

impl Event {
    /// This event with every text redacted: what the engine sends.
    pub fn redacted(self) -> Event {
        crate::egress::redacted(self)
    }

    /// This event as a terminal may show it: every text redacted, then its control
    /// characters made visible.
    pub fn visible(self) -> Event {
        crate::egress::visible(self)
    }
}

impl ProposalView {
    /// The proposal as a unified diff, each hunk header naming its id (as `tern apply
    /// --accept` takes it), each file with cautions (its own or its hunks') preceded by
    /// `#` lines (where `git apply` and `patch` skip text). `color` is for a terminal:
    /// ANSI colours, and control and hidden characters made visible.
    pub fn unified_diff(&self, color: bool) -> String {
        let mut out = String::new();
        for file in &self.files {
            if !file.cautions.is_empty() {
                let why: Vec<String> = file.cautions.iter().map(ToString::to_string).collect();
                let line = format!(
                    "# caution: {}: {} (never accepted in bulk)",
                    file.path,
                    why.join(", ")
                );
                out.push_str(&crate::terminal_text::for_terminal(&line, color));
                out.push('\n');
            }
            for hunk in file.hunks.iter().filter(|h| !h.cautions.is_empty()) {
                let why: Vec<String> = hunk.cautions.iter().map(ToString::to_string).collect();
                let line = format!(
                    "# caution: {}: hunk {} {} (accepted only by itself)",
                    file.path,
                    hunk.id,
                    why.join(", ")
                );
                out.push_str(&crate::terminal_text::for_terminal(&line, color));
                out.push('\n');
            }
            let hunks = file.hunks.iter().map(|hunk| crate::diff::HunkText {
                label: format!("hunk {}", hunk.id),
                old_first: hunk.old_start,
                new_first: hunk.new_start,
                lines: hunk.lines.clone(),
            });
            let created = file.change == FileStatus::Added;
            crate::diff::write_unified(
                &mut out,
                &file.path,
                created,
                hunks,
                color,
                crate::diff::Counts::Git,
            );
        }
        out
    }
}

/// The repo map as the map pane shows it (empty when there is no map).
#[derive(Debug, Clone, PartialEq, Default, DriveMut)]
pub struct MapView {
    pub tokens: usize,
    pub budget: usize,
    /// Ranked files, best first, with their scores.
    pub ranked: Vec<(String, f64)>,
    pub text: String,
}

/// Why a file is in the map: an identifier it defines, referenced from another file.
#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct MapEdge {
    pub ident: String,
    pub from: String,
    pub weight: f64,
}

/// A message of the conversation as the chat showed it, kept with the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, DriveMut)]
pub struct Shown {
    pub kind: ShownKind,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, DriveMut)]
#[serde(rename_all = "snake_case")]
pub enum ShownKind {
    /// What the user wrote.
    User,
    /// What tern told the model with it.
    Note,
    Assistant,
    /// A summary that replaced the earlier conversation in what the model sees.
    Summary,
}

impl Event {
    /// What a landing left undone, when it left something: nothing written, a file not
    /// written, hunks held back or no longer applying. The one rule a headless run's
    /// exit code follows, whatever applied (`--yes`, `/apply all`, a script's line).
    pub(crate) fn landing_shortfall(&self) -> Option<String> {
        match self {
            Event::NotApplied { reason } => Some(format!("nothing was applied: {reason}")),
            Event::Applied {
                failed, held, lost, ..
            } => {
                let mut said = Vec::new();
                if !failed.is_empty() {
                    said.push(format!("{} could not be written", failed.join(", ")));
                }
                if *held > 0 {
                    said.push(format!("{held} held back for a look of their own"));
                }
                if *lost > 0 {
                    said.push(format!(
                        "{lost} of the proposal's hunks and edit blocks could not be applied"
                    ));
                }
                (!said.is_empty()).then(|| said.join("; "))
            }
            _ => None,
        }
    }
}

/// Why a landing wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum NotAppliedReason {
    /// Nothing could be written: not a repository, a merge in progress, a file tern will
    /// not write, another tern holding the lock.
    Refused,
    /// Cancelled while waiting for another tern.
    Cancelled,
    /// The user's own uncommitted changes to those files could not be committed first.
    DirtyCommitFailed,
    /// The commit failed after the files were written (a hook refused it, signing
    /// failed, HEAD moved): they were put back, and nothing was committed.
    CommitFailed,
    /// A file changed on disk since the edits were proposed: review them again.
    Stale,
    /// No accepted hunk could be written (the errors before it say why).
    WriteFailed,
    /// Gitignored files wait for the user's confirmation.
    NeedsConfirmation,
}

impl std::fmt::Display for NotAppliedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotAppliedReason::Refused => "the landing was refused",
            NotAppliedReason::Cancelled => "the landing was cancelled",
            NotAppliedReason::DirtyCommitFailed => {
                "the user's own changes to those files could not be committed first"
            }
            NotAppliedReason::CommitFailed => "the commit failed and the files were put back",
            NotAppliedReason::Stale => "a file changed on disk since the edits were proposed",
            NotAppliedReason::NeedsConfirmation => "a file git ignores waits for confirmation",
            NotAppliedReason::WriteFailed => "no file could be written",
        })
    }
}

/// What a command is run for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum CommandPurpose {
    /// `/run`, `!CMD`: the user's own command; its output is offered for the context.
    Run,
    /// `/test` and the auto-test loop: a failure goes to the model to fix.
    Test,
    /// `/lint`: like a test.
    Lint,
}

/// A chat file as the front ends list it.
#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct FileEntry {
    pub path: String,
    pub mode: FileMode,
    pub tokens: usize,
    /// False for a file that does not exist yet (the model may create it).
    pub exists: bool,
}

/// A repository file a reply names that is not in the chat, with what it would cost.
#[derive(Debug, Clone, PartialEq, Eq, DriveMut)]
pub struct NeededFile {
    pub path: String,
    /// Its tokens as the chat would send it (as `FileEntry::tokens`).
    pub tokens: usize,
}

/// A session as `tern sessions` lists it and `Event::Sessions` carries it (its
/// methods, which read the session's lock, are `persist::store`'s).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: String,
    pub dir: std::path::PathBuf,
    pub last_active: std::time::SystemTime,
    /// The first message (empty when none was sent).
    pub title: String,
    pub pending_hunks: usize,
    /// Proposed hunks that no longer apply, kept with their lines until dismissed.
    pub failed_hunks: usize,
    pub cost: f64,
    /// Why its state cannot be read, if it cannot.
    pub unreadable: Option<String>,
}

/// What `/map-tokens N` changed (`Event::MapBudget`): the map's budget and its tokens
/// before and after (`tokens` None: the map is being built, so its size is not known
/// yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub struct MapBudget {
    pub budget_before: usize,
    pub budget: usize,
    pub tokens_before: usize,
    pub tokens: Option<usize>,
}

impl std::fmt::Display for MapBudget {
    /// `the repo map's budget: 1,024 → 2,048 tokens; the map went from 1,008 to 1,950
    /// tokens (942 added)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::tokens::thousands;
        let budget = match (self.budget_before, self.budget) {
            (_, 0) => "the repo map is off".to_string(),
            (0, new) => format!("the repo map is on, with {} tokens", thousands(new)),
            (old, new) => format!(
                "the repo map's budget: {} → {} tokens",
                thousands(old),
                thousands(new)
            ),
        };
        let Some(tokens) = self.tokens else {
            return write!(
                f,
                "{budget}; the map is being built: the gauge shows its size when it is"
            );
        };
        let change = match tokens.cmp(&self.tokens_before) {
            std::cmp::Ordering::Less => {
                format!("{} freed", thousands(self.tokens_before - tokens))
            }
            std::cmp::Ordering::Greater => {
                format!("{} added", thousands(tokens - self.tokens_before))
            }
            std::cmp::Ordering::Equal => "no change".to_string(),
        };
        write!(
            f,
            "{budget}; the map went from {} to {} tokens ({change})",
            thousands(self.tokens_before),
            thousands(tokens)
        )
    }
}

/// Something the engine reports (`COUNT`: how many kinds, which `--json`'s snapshot
/// test checks it covers).
#[derive(Debug, Clone, PartialEq, strum::EnumCount, DriveMut)]
pub enum Event {
    /// The engine is up; sent first, and again when it goes on in another session
    /// (`Op::SwitchSession`: what was shown before belongs to the session left).
    /// `session`: the id of the session it saves to (None: it saves none).
    Ready {
        root: String,
        model: String,
        mode: ChatMode,
        session: Option<String>,
    },
    /// A user message was accepted and a request is on its way. `text` is what the
    /// user wrote (empty for tern's own turns, such as a reflection); `notes` are what
    /// tern tells the model with it (rejected hunks, an undone commit, failed blocks).
    TurnStarted {
        text: String,
        notes: Vec<String>,
        mode: ChatMode,
    },
    /// Reply text as it streams.
    Delta {
        text: String,
    },
    /// Reasoning text from models that stream it separately.
    Reasoning {
        text: String,
    },
    /// A request failed and will be retried.
    Retrying {
        attempt: usize,
        delay_ms: u64,
        reason: String,
    },
    /// The reply hit the output limit and is being continued.
    Continuing {
        continuation: usize,
    },
    /// A request is on its way to the model (one event per request: turns, their
    /// continuations and retries, summaries), with tern's prediction of its prompt.
    Request {
        purpose: RequestKind,
        model: String,
        predicted_prompt_tokens: Option<usize>,
        max_tokens: Option<usize>,
        counting: Counting,
    },
    /// The server counted a request's prompt (any kind): against tern's prediction,
    /// and whether it was off by more than its counting claims.
    Drift {
        purpose: RequestKind,
        #[drive(skip)]
        drift: Drift,
    },
    /// The reply is complete (or was cut off or cancelled: `finish` says which).
    TurnFinished {
        reply: String,
        finish: Finish,
        usage: Option<Usage>,
        /// The server reported no usage (or a prompt count no tokenizer gives):
        /// `usage` is tern's count of the prompt it sent and of the reply it received.
        usage_estimated: bool,
        cost: f64,
        session_cost: f64,
    },
    /// After `TurnFinished`, when the reply names tracked files that are not in the
    /// chat (`Op::AddNeeded` adds them) or suggests shell commands (shown, never run
    /// here). Each list holds at most a screenful; `more_*` count the rest.
    Needed {
        files: Vec<NeededFile>,
        more_files: usize,
        commands: Vec<String>,
        more_commands: usize,
    },
    /// The turn failed; the user's message is returned so nothing is lost.
    TurnFailed {
        error: String,
        message: String,
    },
    /// The next request's budget changed.
    Budget(Box<BudgetReport>),
    /// The repository's sessions, the one active last first (`/sessions`, as `tern
    /// sessions` lists them); `current`: the one this engine saves to.
    Sessions {
        #[drive(skip)]
        sessions: Vec<Listed>,
        current: Option<String>,
    },
    /// A resumed session's conversation, as the chat showed it (sent after `Ready`).
    Resumed {
        transcript: Vec<Shown>,
        /// A message that waited for the repo map when it was cancelled or tern quit:
        /// never sent, given back (the workspace puts it in the input box).
        unsent: Option<String>,
    },
    /// The chat files changed.
    Files {
        files: Vec<FileEntry>,
    },
    /// The mode changed.
    Mode {
        mode: ChatMode,
    },
    /// The model changed.
    Model {
        model: String,
    },
    /// Text a command produced for the user to read (`/tokens`, `/help`, ...).
    Output {
        title: String,
        text: String,
    },
    Notice {
        text: String,
    },
    Warning {
        text: String,
    },
    Error {
        text: String,
    },
    /// A reply proposed edits (sent again whenever a decision changes them; empty once
    /// nothing is left to review).
    Proposal(Box<ProposalView>),
    /// Failed edit blocks are being sent back to the model (`attempt` of `max`).
    Reflection {
        attempt: usize,
        max: usize,
        message: String,
    },
    /// Accepted hunks were written (and committed when `commit` is set).
    Applied {
        files: Vec<String>,
        accepted: usize,
        rejected: usize,
        commit: Option<String>,
        message: String,
        /// Files whose accepted hunks could not be written (the others were).
        failed: Vec<String>,
        /// Hunks left pending for a caution of their own (a bulk accept skips them).
        held: usize,
        /// Hunks of the proposal listed as failed (no longer apply) and edit blocks of
        /// its reply that failed: never applied.
        lost: usize,
    },
    /// A hunk's proposed lines exactly as they are (control characters included), for
    /// an editor; `path` is its file, whose extension the editor may use.
    HunkText {
        id: String,
        path: String,
        /// Goes to an editor's file, never to a screen or a log: it stays exactly the
        /// file's lines (a key in them is the user's file's).
        #[drive(skip)]
        text: String,
    },
    /// `ReviewOp::Edit` was refused (`reason`); the proposal is unchanged and the
    /// user's text comes back in `new_lines`, so nothing typed is lost.
    EditRefused {
        id: String,
        /// Goes back to the user's editor as typed, like `HunkText`'s text.
        #[drive(skip)]
        new_lines: String,
        reason: String,
    },
    /// `Op::ApplyAllowed` left a file (`hunk` None) or a hunk unaccepted, for these
    /// cautions: it waits for a person's look.
    HeldBack {
        path: String,
        hunk: Option<String>,
        cautions: Vec<Caution>,
    },
    /// `ReviewOp::Apply` wrote nothing; the errors or warnings before it say why.
    NotApplied {
        reason: NotAppliedReason,
    },
    /// A review's plan: what is compared, and which files were included, compressed or
    /// left out (sent before the review streams).
    ReviewPlan(Box<crate::branch_review::ReviewPlan>),
    /// A branch review's replies, with the plan as it was last made (the server may
    /// have asked for a smaller one), their total usage and cost; `TurnFinished`
    /// follows with the merged review.
    BranchReviewed {
        plan: Box<ReviewPlan>,
        replies: Vec<CallReply>,
        usage: Usage,
        cost: f64,
    },
    /// Tags are being extracted for the repo map.
    MapProgress {
        done: usize,
        total: usize,
    },
    Map(Box<MapView>),
    /// `/map-tokens N` changed the map's budget (and so its size, when it is known).
    MapBudget(MapBudget),
    MapWhy {
        path: String,
        edges: Vec<MapEdge>,
    },
    /// The repository's files, for completion.
    RepoFiles {
        files: Vec<String>,
    },
    /// The history sub-budget or the summarizer's phase changed.
    History(HistoryStatus),
    /// The session's turns, for the `/rewind` picker (`Op::Timeline`); `redo`: what
    /// `/rewind redo` would put back, if a rewind can still be redone.
    Timeline {
        turns: Vec<TimelineTurn>,
        redo: Option<String>,
    },
    /// A rewind (or its redo, `redo`) was done: `to` the turn it went back to before,
    /// `commits` taken back (or brought back),
    /// `text` what it did, as the user reads it, and `transcript` the conversation as
    /// the chat shows it now when it changed (as `Event::Resumed` gives it).
    Rewound {
        to: usize,
        redo: bool,
        commits: Vec<String>,
        transcript: Option<Vec<Shown>>,
        text: String,
    },
    /// Commits tern made were taken back (`/undo`, `/undo turn`): their full ids, so a
    /// front end stops showing them as applied.
    Undone {
        commits: Vec<String>,
    },
    /// A summary replaced part of the history.
    Summarized {
        replaced_messages: usize,
        replaced_tokens: usize,
        summary_tokens: usize,
    },
    /// Nothing is under way: no reply streaming, no reflection or landing pending. The
    /// engine waits for the front end.
    Idle,
    /// A command waits for the user's yes (`Op::AnswerCommand`) before it runs: nothing
    /// runs unconfirmed. `reason` says where a command tern proposed came from ("from
    /// Cargo.toml").
    ConfirmCommand {
        command: String,
        purpose: CommandPurpose,
        reason: Option<String>,
    },
    /// A command started, in the repository root.
    CommandStarted {
        command: String,
        purpose: CommandPurpose,
        /// The auto-test loop's fix rounds so far and its most.
        auto_round: Option<(usize, usize)>,
    },
    /// What a running command printed since the last report (visible text), for the
    /// chat block and the status bar.
    CommandProgress {
        text: String,
        lines: usize,
        last_line: String,
        elapsed_ms: u64,
    },
    /// A command ended. `tokens` is what its output costs in the context (clipped to
    /// its budget); `in_context` says it was added (a failed test or lint run is, for
    /// the model to fix), else `Op::AddOutput` adds it.
    CommandFinished {
        command: String,
        purpose: CommandPurpose,
        passed: bool,
        outcome: String,
        lines: usize,
        elapsed_ms: u64,
        tokens: usize,
        in_context: bool,
    },
    /// A command's output joined the context (`Op::AddOutput`); `tokens` is what it
    /// added to the request.
    OutputAdded {
        command: String,
        tokens: usize,
    },
    /// A command's output left the context (`/drop-output`).
    OutputDropped {
        command: String,
    },
    /// The engine stopped on an internal error (a bug); `Exited` follows.
    Crashed {
        text: String,
    },
    /// The engine stopped; no events follow.
    Exited,
}
