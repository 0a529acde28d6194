//! Turning model replies into proposed edits, reviewing them hunk by hunk, and writing
//! only what the user accepted.
//!
//! The flow: [`propose`] parses a reply ([`parse_reply`]) and applies its edits in
//! memory to the files on disk, splitting each file's change into hunks; blocks that
//! fail come back as [`EditError`]s, which [`reflection_message`] turns into the
//! message the model gets to fix them, and its answer goes on top with
//! [`Proposal::add_reply`]. The user decides per hunk, file or all
//! ([`Proposal::decide`]), may split a hunk or write its new lines themselves
//! ([`Proposal::split`], [`Proposal::edit`]), and [`Proposal::apply`] writes the original plus the
//! accepted hunks. Nothing here is async or touches git (see `crate::git`).

mod apply;
mod block;
mod command_lines;
mod doc;
mod editblock;
mod error;
mod filename;
mod hunks;
mod matching;
mod parse;
pub mod prompts;
mod proposal;
mod refine;
mod render;
mod safety;
mod scan;
mod snapshot;
mod udiff;
mod whole;
mod workspace;

pub use crate::edit_format::EditFormat;
pub use apply::{
    Applied, ApplyOutcome, Backup, Planned, Ready, StaleFile, WriteError, WriteFailure, Written,
};
pub use block::{Edit, EditKind};
pub use error::{EditError, NearMatch, Problem, reflection_message};
pub use filename::FileSet;
pub use hunks::{CONTEXT, Decision, Hunk, HunkId};
pub use matching::Occurrence;
pub use parse::ParsedReply;
pub(crate) use parse::parse_reply;
pub use proposal::{Caution, FileProposal, Proposal, ReplyReport, Select, Unknown};
pub use refine::RefineError;
pub use render::unified_diff;
pub use safety::{Refusal, Target, resolve as resolve_path};
pub use scan::ShellSuggestion;
pub use snapshot::{FileSnapshot, HunkSnapshot, Part, ProposalSnapshot};
pub use workspace::{Workspace, not_checked_out};

/// Everything one reply proposes: the proposal to review, the blocks that failed (to
/// show and to send back), and suggested shell commands (to show, never to run).
#[derive(Debug)]
pub struct Proposed {
    pub proposal: Proposal,
    pub errors: Vec<EditError>,
    pub shell: Vec<ShellSuggestion>,
    /// Blocks in the reply; `blocks - errors.len()` applied.
    pub blocks: usize,
    /// The formats its blocks were written in, the one asked for first.
    pub formats: Vec<EditFormat>,
}

/// Parses `reply` and builds its proposal against the workspace's files. The replies
/// to reflections go on top with [`Proposal::add_reply`].
pub fn propose(ws: &Workspace, reply: &str, format: EditFormat, files: &FileSet) -> Proposed {
    let mut proposal = Proposal::new(ws);
    let ReplyReport {
        errors,
        shell,
        blocks,
        formats,
        ..
    } = proposal.add_reply(ws, reply, format, files);
    Proposed {
        proposal,
        errors,
        shell,
        blocks,
        formats,
    }
}
