//! All edits of one reply applied in memory: each file's original and proposed content,
//! split into hunks the user accepts or rejects one by one. Nothing here writes.
//!
//! Hunk ids are a short hash of the hunk's content (its file, removed and added lines),
//! not its position. So an id shown by `tern apply --dry-run` cannot silently select a
//! different hunk when the file changed before `--accept` (it is simply unknown), and
//! when a file changed on disk during review and is re-diffed, every hunk that did not
//! change keeps its id and the decision already made on it.

use derive_visitor::DriveMut;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use similar::DiffOp;

use super::block::{Edit, EditKind};
use super::doc::Span;
use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::hunks::{CONTEXT, Decision, Hunk, HunkId, Marks};
use super::matching::{Doc, Failure, Occurrence, lines_of, whole_placeholder};
use super::safety::{self, Target};
use super::scan::ShellSuggestion;
use super::snapshot::{self, FileSnapshot, HunkSnapshot, Part, ProposalSnapshot};
use super::workspace::Workspace;
use crate::diff::{Binary, FileText};

/// Why hunks are never accepted in bulk (`A`, `/apply all`, `--yes`): the user accepts
/// them having seen the reason. A file's cautions hold all its hunks, which are accepted
/// file by file or hunk by hunk; a hunk's own ([`FileProposal::hunk_cautions`]) hold
/// that hunk, which is accepted only by itself.
#[derive(Debug, Clone, PartialEq, Eq, DriveMut)]
pub enum Caution {
    /// An existing file that is not (or no longer) an editable chat file.
    OutsideChat,
    /// The proposal removes most of the file.
    DeletesMost { removed: usize, total: usize },
    /// The hunk's new lines hold hidden characters (`terminal_text::is_hidden`, as
    /// `U+202E`): the file will not read as the review shows it without their markers.
    Invisible { characters: Vec<String> },
}

impl std::fmt::Display for Caution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Caution::OutsideChat => f.write_str("not in the chat"),
            Caution::DeletesMost { removed, total } => {
                write!(f, "deletes {removed} of its {total} lines")
            }
            Caution::Invisible { characters } => {
                write!(f, "holds invisible characters ({})", characters.join(", "))
            }
        }
    }
}

/// Which hunks a decision is about.
#[derive(Debug, Clone, Copy)]
pub enum Select<'a> {
    Hunk(HunkId),
    File(&'a Path),
    All,
}

/// The proposed change to one file.
#[derive(Debug, Clone)]
pub struct FileProposal {
    pub(crate) path: PathBuf,
    pub(crate) original: FileText,
    pub(crate) existed: bool,
    pub(crate) proposed: String,
    /// The proposed content as runs of original and new lines (see `doc.rs`), which
    /// the hunks come from and further edits start from.
    pub(crate) spans: Vec<Span<'static>>,
    pub(crate) final_newline: bool,
    pub(crate) hunks: Vec<Hunk>,
    /// Original lines where a hunk starts because the user split one there (see
    /// `hunks_of`); kept while the original is, and redrawn from the hunks when it
    /// changes.
    pub(crate) cuts: BTreeSet<usize>,
    /// An existing file that is not an editable chat file (see [`Caution`]).
    pub(crate) outside_chat: bool,
    /// A file git ignores and does not track (a new one, or `.env`): written only once
    /// confirmed, never committed, backed up before it is replaced.
    pub(crate) ignored: bool,
    pub(crate) confirmed: bool,
}

impl FileProposal {
    /// Relative to the repository root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_new(&self) -> bool {
        !self.existed
    }

    pub fn original(&self) -> &FileText {
        &self.original
    }

    /// The content with every hunk applied (decoded text, `\n` endings).
    pub fn proposed(&self) -> &str {
        &self.proposed
    }

    pub fn hunks(&self) -> &[Hunk] {
        &self.hunks
    }

    /// How many of the original's lines the proposal removes, when that is most of
    /// them (at least 5 and more than half): a reply that would gut a file, worth a
    /// warning and never accepted without the user looking.
    pub fn deletes_most(&self) -> Option<usize> {
        self.removal().map(|(removed, _)| removed)
    }

    /// (lines removed, lines in the original) when the proposal removes most of it.
    fn removal(&self) -> Option<(usize, usize)> {
        let total = self.original.text().lines().count();
        let kept: usize = self
            .spans
            .iter()
            .map(|s| match s {
                Span::Orig(r) => r.len(),
                Span::New(_) => 0,
            })
            .sum();
        let removed = total.saturating_sub(kept);
        (self.existed && removed >= 5 && removed * 2 > total).then_some((removed, total))
    }

    /// Why this file's hunks must be accepted explicitly, if they must.
    pub fn cautions(&self) -> Vec<Caution> {
        let mut out = Vec::new();
        if self.outside_chat {
            out.push(Caution::OutsideChat);
        }
        if let Some((removed, total)) = self.removal() {
            out.push(Caution::DeletesMost { removed, total });
        }
        out
    }

    /// Each hunk's own cautions, in order: the hidden characters its new lines add.
    pub fn hunk_cautions(&self) -> Vec<Vec<Caution>> {
        let new: Vec<&str> = self.proposed.split_inclusive('\n').collect();
        self.hunks
            .iter()
            .map(|hunk| {
                let mut found = BTreeSet::new();
                for op in &hunk.ops {
                    if matches!(op, DiffOp::Insert { .. } | DiffOp::Replace { .. }) {
                        for line in &new[op.new_range()] {
                            found.extend(crate::terminal_text::hidden(line));
                        }
                    }
                }
                let characters: Vec<String> = found
                    .iter()
                    .map(|c| format!("U+{:04X}", u32::from(*c)))
                    .collect();
                match characters.is_empty() {
                    true => Vec::new(),
                    false => vec![Caution::Invisible { characters }],
                }
            })
            .collect()
    }

    /// True for a file that git ignores and the user has not yet confirmed.
    pub fn needs_confirmation(&self) -> bool {
        self.ignored && !self.confirmed
    }

    /// An existing file git ignores (`.env`): its current content is backed up before
    /// it is replaced, since git cannot bring it back.
    pub(crate) fn is_ignored_existing(&self) -> bool {
        self.ignored && self.existed
    }

    pub fn accepted(&self) -> impl Iterator<Item = &Hunk> {
        self.hunks.iter().filter(|h| h.decision == Decision::Accept)
    }

    /// The file's bytes with the original kept everywhere except the hunks `take`
    /// selects. Kept lines are copied byte for byte; new lines get the file's encoding
    /// and dominant line ending.
    pub fn content_with(&self, take: impl Fn(&Hunk) -> bool) -> Vec<u8> {
        let raw: Vec<&[u8]> = self.original.raw_lines().collect();
        let new: Vec<&str> = self.proposed.split_inclusive('\n').collect();
        let mut out = Vec::with_capacity(self.original.raw().len() + 64);
        out.extend_from_slice(self.original.prefix());
        let mut at = 0;
        for hunk in self.hunks.iter().filter(|h| take(h)) {
            raw[at..hunk.old.start]
                .iter()
                .for_each(|l| out.extend_from_slice(l));
            for op in &hunk.ops {
                match *op {
                    DiffOp::Equal { old_index, len, .. } => {
                        raw[old_index..old_index + len]
                            .iter()
                            .for_each(|l| out.extend_from_slice(l));
                    }
                    DiffOp::Delete { .. } => {}
                    DiffOp::Insert {
                        new_index, new_len, ..
                    }
                    | DiffOp::Replace {
                        new_index, new_len, ..
                    } => {
                        for line in &new[new_index..new_index + new_len] {
                            self.original.encode_line(line, &mut out);
                        }
                    }
                }
            }
            at = hunk.old.end;
        }
        raw[at..].iter().for_each(|l| out.extend_from_slice(l));
        out
    }

    /// Follows the file to its `current` content (it changed on disk): each hunk is
    /// found again by its own lines; those that cannot be are dropped and returned as
    /// errors with the reason. Every decision goes back to pending, so the user reviews
    /// the new state.
    pub(crate) fn rebase(
        &mut self,
        current: FileText,
        existed: bool,
        taken: &mut HashSet<HunkId>,
    ) -> Vec<EditError> {
        let hunks = self.hunk_snapshots();
        let errors = self.place(current, existed, &hunks, taken);
        for h in &mut self.hunks {
            h.decision = Decision::Pending;
        }
        errors
    }

    /// Replaces the original by `current` and the proposal by `hunks` placed in it.
    /// Only hunks placed are proposed: a file deleted (or created) since, or one where
    /// no hunk could be placed, is left with none, never with an empty "new file" hunk
    /// standing in for them (accepting it would commit the deletion and an empty file).
    fn place(
        &mut self,
        current: FileText,
        existed: bool,
        hunks: &[HunkSnapshot],
        taken: &mut HashSet<HunkId>,
    ) -> Vec<EditError> {
        if existed != self.existed {
            let why = match self.existed {
                true => "the file was deleted since the edits were proposed",
                false => "a file was made at this path since the edits were proposed",
            };
            self.original = current;
            self.existed = existed;
            return self.fail_all(hunks, why);
        }
        let lines: Vec<&str> = current.text().split_inclusive('\n').collect();
        let mut placed = Vec::new();
        let mut errors = Vec::new();
        for (hunk, at) in hunks.iter().zip(snapshot::place(&lines, hunks)) {
            match at {
                Ok(start) => placed.push((start, hunk)),
                Err(why) => errors.push(stale(&self.path, hunk, why.to_string())),
            }
        }
        if placed.is_empty() {
            drop(lines);
            self.original = current;
            self.existed = existed;
            self.hunks.clear();
            return errors;
        }
        let (spans, final_newline) = snapshot::spans_of(&lines, &placed);
        let decided = placed
            .iter()
            .map(|(_, h)| (h.decision, h.edited))
            .collect::<Vec<_>>();
        drop(lines);
        self.original = current;
        self.existed = existed;
        self.spans = spans;
        self.final_newline = final_newline;
        self.cuts = cuts_between(placed.iter().map(|(start, _)| *start));
        self.rebuild(&HashMap::new(), taken);
        // The hunks come back in order, one per placed hunk, unless a placed one made
        // no change at all (then decisions are left pending).
        if self.hunks.len() == decided.len() {
            for (h, (decision, edited)) in self.hunks.iter_mut().zip(decided) {
                h.decision = decision;
                h.edited = edited;
            }
        }
        errors
    }

    /// Takes every hunk out of the proposal as failed, with its lines and `why` (the
    /// file can take none of them now).
    pub(crate) fn fail_all(&mut self, hunks: &[HunkSnapshot], why: &str) -> Vec<EditError> {
        self.hunks.clear();
        self.spans.clear();
        self.cuts.clear();
        hunks
            .iter()
            .map(|h| stale(&self.path, h, why.to_string()))
            .collect()
    }

    /// After the accepted hunks were written (`written`): that is the original now,
    /// and the hunks not accepted remain, moved by what was written before them.
    pub(crate) fn settle(&mut self, written: FileText, taken: &mut HashSet<HunkId>) {
        let snapshots = self.hunk_snapshots();
        let mut shift: isize = 0;
        let mut remaining = Vec::new();
        for (hunk, snap) in self.hunks.iter().zip(&snapshots) {
            if hunk.decision == Decision::Accept {
                shift += hunk.new.len() as isize - hunk.old.len() as isize;
            } else {
                remaining.push(((hunk.old.start as isize + shift) as usize, snap));
            }
        }
        let lines: Vec<&str> = written.text().split_inclusive('\n').collect();
        let (spans, final_newline) = snapshot::spans_of(&lines, &remaining);
        let marks = self.marks();
        self.cuts = cuts_between(remaining.iter().map(|(start, _)| *start));
        drop(lines);
        self.original = written;
        self.existed = true;
        self.spans = spans;
        self.final_newline = final_newline;
        self.rebuild(&marks, taken);
    }

    /// Each hunk's decision and whether the user edited it, by id.
    pub(crate) fn marks(&self) -> Marks {
        self.hunks
            .iter()
            .map(|h| (h.id, (h.decision, h.edited)))
            .collect()
    }

    /// Recomputes the proposed text and the hunks from the spans, keeping what the user
    /// made of each hunk by id. `taken`: the ids of the proposal's other files.
    pub(crate) fn rebuild(&mut self, marks: &Marks, taken: &mut HashSet<HunkId>) {
        let doc = Doc::with_spans(
            self.original.text(),
            &[],
            Some((self.spans.clone(), self.final_newline)),
        );
        self.proposed = doc.text();
        let old: Vec<&str> = self.original.text().split_inclusive('\n').collect();
        let new: Vec<&str> = self.proposed.split_inclusive('\n').collect();
        self.hunks = super::hunks::hunks_of(
            &self.path,
            &old,
            &new,
            &self.spans,
            self.existed,
            &self.cuts,
            taken,
        );
        for h in &mut self.hunks {
            (h.decision, h.edited) = marks.get(&h.id).copied().unwrap_or_default();
        }
    }

    /// Each hunk by its own content (see `snapshot.rs`).
    pub(crate) fn hunk_snapshots(&self) -> Vec<HunkSnapshot> {
        let old: Vec<&str> = self.original.text().split_inclusive('\n').collect();
        let new: Vec<&str> = self.proposed.split_inclusive('\n').collect();
        let owned = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        let mut out = Vec::with_capacity(self.hunks.len());
        for h in &self.hunks {
            // The context may reach into a neighbour's lines (parts of a split hunk are
            // close): they are the original's lines all the same, and a full context
            // keeps a small part from matching several places.
            let before = h.old.start.saturating_sub(CONTEXT);
            let after = (h.old.end + CONTEXT).min(old.len());
            let parts = h
                .ops
                .iter()
                .flat_map(|op| match *op {
                    DiffOp::Equal { len, .. } => vec![Part::Keep(len)],
                    DiffOp::Delete { old_len, .. } => vec![Part::Remove(old_len)],
                    DiffOp::Insert {
                        new_index, new_len, ..
                    } => vec![Part::Add(owned(&new[new_index..new_index + new_len]))],
                    DiffOp::Replace {
                        old_len,
                        new_index,
                        new_len,
                        ..
                    } => vec![
                        Part::Remove(old_len),
                        Part::Add(owned(&new[new_index..new_index + new_len])),
                    ],
                })
                .collect();
            out.push(HunkSnapshot {
                before: owned(&old[before..h.old.start]),
                at_start: before == 0,
                old: owned(&old[h.old.clone()]),
                after: owned(&old[h.old.end..after]),
                at_end: after == old.len(),
                parts,
                decision: h.decision,
                edited: h.edited,
            });
        }
        out
    }
}

/// The cuts that keep hunks starting at `starts` (in order) apart: every start but the
/// first.
fn cuts_between(starts: impl Iterator<Item = usize>) -> BTreeSet<usize> {
    starts.skip(1).collect()
}

/// A hunk as diff lines, to show why it failed.
/// A proposed hunk of `path` that no longer applies, for `why`, with its lines.
fn stale(path: &Path, hunk: &HunkSnapshot, why: String) -> EditError {
    EditError::new(
        0,
        Some(path.to_path_buf()),
        Problem::Stale(why),
        &hunk_text(hunk),
    )
}

fn hunk_text(hunk: &HunkSnapshot) -> String {
    let mut out = String::new();
    let mut old = hunk.old.iter();
    for part in &hunk.parts {
        match part {
            Part::Keep(n) => old
                .by_ref()
                .take(*n)
                .for_each(|l| out.push_str(&format!(" {l}"))),
            Part::Remove(n) => old
                .by_ref()
                .take(*n)
                .for_each(|l| out.push_str(&format!("-{l}"))),
            Part::Add(new) => new.iter().for_each(|l| out.push_str(&format!("+{l}"))),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Every file a reply changes, with its hunks and the user's decisions.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub(crate) root: PathBuf,
    pub(crate) files: Vec<FileProposal>,
    /// Ids that split or edited hunks had, with the ids they became: the old id keeps
    /// naming them (`/reject ID` typed from an earlier screen) until the proposal ends.
    pub(crate) aliases: Vec<(HunkId, Vec<HunkId>)>,
}

/// What adding one reply to a proposal found besides the edits.
#[derive(Debug, Clone, Default)]
pub struct ReplyReport {
    /// Blocks that could not be parsed or applied.
    pub errors: Vec<EditError>,
    /// Commands the model suggests; shown, never run.
    pub shell: Vec<ShellSuggestion>,
    /// Blocks in the reply; `blocks - errors.len()` applied.
    pub blocks: usize,
    /// The formats its blocks were written in, the one asked for first (see
    /// `parse_reply`).
    pub formats: Vec<super::EditFormat>,
    /// The files its blocks name (applied or not): a failure of an earlier reply for
    /// one of them is answered by this one.
    pub paths: Vec<PathBuf>,
    /// File names it gave that name no file, each with the file taken instead.
    pub taken_as: Vec<(String, PathBuf)>,
}

/// A hunk id or file that is not part of the proposal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no hunk or file {0} in this proposal")]
pub struct Unknown(pub String);

impl Proposal {
    /// An empty proposal for the workspace's files.
    pub fn new(ws: &Workspace) -> Proposal {
        Proposal {
            root: ws.root().to_path_buf(),
            files: Vec::new(),
            aliases: Vec::new(),
        }
    }

    /// Applies `edits` in memory to the files under the workspace root. Blocks that
    /// fail are returned as errors (with "did you mean" lines); the rest form the
    /// proposal. `files` are the chat files, for hints when a SEARCH text is in another
    /// file than the one named.
    pub fn build(ws: &Workspace, edits: &[Edit], files: &FileSet) -> (Proposal, Vec<EditError>) {
        let mut proposal = Proposal::new(ws);
        let errors = proposal.add_edits(ws, edits, files);
        (proposal, errors)
    }

    /// Adds the edits of a further reply (the model's answer to a reflection) on top
    /// of what is proposed already: they match against the proposed content, not the
    /// disk, and decisions on hunks that did not change are kept.
    pub fn add_reply(
        &mut self,
        ws: &Workspace,
        reply: &str,
        format: super::EditFormat,
        files: &FileSet,
    ) -> ReplyReport {
        let parsed = super::parse_reply(reply, format, files);
        let blocks = parsed.blocks();
        let mut errors = self.add_edits(ws, &parsed.edits, files);
        errors.extend(parsed.errors);
        errors.sort_by_key(|e| e.block);
        let mut paths: Vec<PathBuf> = parsed.edits.iter().map(|e| e.path.clone()).collect();
        paths.extend(errors.iter().filter_map(|e| e.path.clone()));
        paths.dedup();
        ReplyReport {
            errors,
            shell: parsed.shell,
            blocks,
            formats: parsed.formats,
            paths,
            taken_as: parsed.taken_as,
        }
    }

    /// Adds `edits` on top of what is proposed already (see [`Proposal::add_reply`]).
    pub(crate) fn add_edits(
        &mut self,
        ws: &Workspace,
        edits: &[Edit],
        files: &FileSet,
    ) -> Vec<EditError> {
        let mut order: Vec<&Path> = Vec::new();
        for e in edits {
            if !order.contains(&e.path.as_path()) {
                order.push(&e.path);
            }
        }
        let mut errors = Vec::new();
        for path in order {
            let new: Vec<Edit> = edits.iter().filter(|e| e.path == path).cloned().collect();
            let fail_all = |problem: Problem| {
                new.iter()
                    .map(|e| {
                        EditError::new(
                            e.block,
                            Some(path.to_path_buf()),
                            problem.clone(),
                            &e.source,
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let target = match safety::resolve(ws.root(), path) {
                Ok(target) => target,
                Err(refusal) => {
                    errors.extend(fail_all(Problem::Refused(refusal)));
                    continue;
                }
            };
            if files.is_read_only(ws.root(), &target.rel) {
                errors.extend(fail_all(Problem::Refused(safety::Refusal::ReadOnly(
                    target.rel,
                ))));
                continue;
            }
            if let Some(repo) = ws.submodule_of(&target.rel) {
                errors.extend(fail_all(Problem::Refused(safety::Refusal::NestedRepo {
                    path: target.rel,
                    repo,
                })));
                continue;
            }
            if ws.is_not_checked_out(&target.rel) {
                let dir = target
                    .rel
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(&target.rel)
                    .to_path_buf();
                errors.extend(fail_all(Problem::Refused(safety::Refusal::NotCheckedOut {
                    path: target.rel,
                    dir,
                })));
                continue;
            }
            let index = match self.files.iter().position(|f| f.path == target.rel) {
                Some(index) => index,
                None => match read(&target) {
                    Ok(original) => {
                        let (spans, final_newline) = Doc::new(original.text()).into_owned_spans();
                        self.files.push(FileProposal {
                            outside_chat: target.exists && !files.in_chat(&target.rel),
                            ignored: ws.is_ignored_untracked(&target.rel),
                            path: target.rel,
                            proposed: original.text().to_string(),
                            original,
                            existed: target.exists,
                            spans,
                            final_newline,
                            hunks: Vec::new(),
                            cuts: BTreeSet::new(),
                            confirmed: false,
                        });
                        self.files.len() - 1
                    }
                    Err(problem) => {
                        errors.extend(fail_all(problem));
                        continue;
                    }
                },
            };
            errors.extend(self.extend_file(index, new, ws.root(), files));
        }
        self.files.retain(|f| !f.hunks.is_empty());
        errors.sort_by_key(|e| e.block);
        errors
    }

    /// Runs `new` edits on top of what file `index` proposes already.
    fn extend_file(
        &mut self,
        index: usize,
        new: Vec<Edit>,
        root: &Path,
        files: &FileSet,
    ) -> Vec<EditError> {
        let mut taken = self.ids_except(index);
        let file = &mut self.files[index];
        let mut doc = Doc::with_spans(
            file.original.text(),
            file.original.invalid_lines(),
            Some((file.spans.clone(), file.final_newline)),
        );
        let mut failed = run_edits(&mut doc, &file.path, file.existed, &new);
        add_other_file_hints(root, &file.path, &new, files, &mut failed);
        keep_unseen_file_private(&file.path, files, &mut failed);
        // A file only changes when some edit applied (a new file whose edits all
        // failed gets no hunk).
        if failed.len() < new.len() {
            let (spans, final_newline) = doc.into_owned_spans();
            file.spans = spans;
            file.final_newline = final_newline;
            let marks = file.marks();
            file.rebuild(&marks, &mut taken);
        }
        failed.into_iter().map(|(_, e)| e).collect()
    }

    /// The proposal as data, to save with a session (see [`Proposal::restore`]).
    pub fn snapshot(&self) -> ProposalSnapshot {
        ProposalSnapshot {
            files: self
                .files
                .iter()
                .map(|f| FileSnapshot {
                    path: f.path.clone(),
                    existed: f.existed,
                    original_hash: xxhash_rust::xxh3::xxh3_64(f.original.raw()),
                    confirmed: f.confirmed,
                    hunks: f.hunk_snapshots(),
                })
                .collect(),
            aliases: self
                .aliases
                .iter()
                .map(|(old, became)| {
                    (
                        old.to_string(),
                        became.iter().map(ToString::to_string).collect(),
                    )
                })
                .collect(),
        }
    }

    /// A saved proposal over the workspace's files as they are now: each hunk is
    /// placed in its file's current content, and those that no longer apply come back
    /// as errors. Decisions are kept only for files that did not change since.
    pub fn restore(ws: &Workspace, saved: &ProposalSnapshot) -> (Proposal, Vec<EditError>) {
        let mut proposal = Proposal::new(ws);
        // A hunk placed again gets the id its content gives, as before: the old ids
        // name the same hunks.
        proposal.aliases = saved
            .aliases
            .iter()
            .filter_map(|(old, became)| {
                let became = became.iter().filter_map(|id| id.parse().ok()).collect();
                Some((old.parse().ok()?, became))
            })
            .collect();
        let mut errors = Vec::new();
        for file in &saved.files {
            // A file that cannot take its hunks now fails each of them, with its lines.
            let failed = |problem| {
                let why = EditError::new(0, None, problem, "").reason();
                file.hunks
                    .iter()
                    .map(move |h| stale(&file.path, h, why.clone()))
            };
            let target = match safety::resolve(ws.root(), &file.path) {
                Ok(target) => target,
                Err(refusal) => {
                    errors.extend(failed(Problem::Refused(refusal)));
                    continue;
                }
            };
            let current = match read(&target) {
                Ok(current) => current,
                Err(problem) => {
                    errors.extend(failed(problem));
                    continue;
                }
            };
            let unchanged = target.exists == file.existed
                && xxhash_rust::xxh3::xxh3_64(current.raw()) == file.original_hash;
            let mut hunks = file.hunks.clone();
            if !unchanged {
                hunks
                    .iter_mut()
                    .for_each(|h| h.decision = Decision::Pending);
            }
            let mut restored = FileProposal {
                // Re-marked by the engine from the restored chat files.
                outside_chat: false,
                ignored: ws.is_ignored_untracked(&target.rel),
                path: target.rel,
                original: FileText::new_file(),
                // As when proposed: `place` fails every hunk of a file made or deleted since.
                existed: file.existed,
                proposed: String::new(),
                spans: Vec::new(),
                final_newline: true,
                hunks: Vec::new(),
                cuts: BTreeSet::new(),
                confirmed: file.confirmed && unchanged,
            };
            let mut taken = proposal.hunk_ids().collect();
            errors.extend(restored.place(current, target.exists, &hunks, &mut taken));
            if !restored.hunks.is_empty() {
                proposal.files.push(restored);
            }
        }
        (proposal, errors)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The hunk ids of every file but `except`, for re-diffing that one.
    pub(crate) fn ids_except(&self, except: usize) -> HashSet<HunkId> {
        self.files
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != except)
            .flat_map(|(_, f)| f.hunks.iter().map(|h| h.id))
            .collect()
    }

    pub fn files(&self) -> &[FileProposal] {
        &self.files
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The files `apply` would write now (those with accepted hunks): the paths for
    /// `git::commit_dirty` before applying.
    pub fn paths_to_write(&self) -> Vec<PathBuf> {
        self.files
            .iter()
            .filter(|f| f.accepted().next().is_some())
            .map(|f| f.path.clone())
            .collect()
    }

    /// Every hunk's id, file by file.
    pub fn hunk_ids(&self) -> impl Iterator<Item = HunkId> + '_ {
        self.files.iter().flat_map(|f| f.hunks.iter().map(|h| h.id))
    }

    pub fn hunk_count(&self) -> usize {
        self.files.iter().map(|f| f.hunks.len()).sum()
    }

    pub fn file(&self, path: &Path) -> Option<&FileProposal> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Sets the decision of one hunk, one file's hunks, or all; returns how many hunks
    /// it set. Accepting a file or everything leaves the hunks the user rejected
    /// rejected ([`Decision::applies_in_bulk_to`]) and the hunks with a caution of
    /// their own pending; accepting everything also skips the files with a caution.
    pub fn decide(&mut self, select: Select<'_>, decision: Decision) -> Result<usize, Unknown> {
        let named = match select {
            Select::Hunk(id) => self.resolve(id),
            _ => Vec::new(),
        };
        let mut count = 0;
        let mut matched = 0;
        let bulk_accept = !matches!(select, Select::Hunk(_)) && decision == Decision::Accept;
        for file in &mut self.files {
            let whole = match select {
                Select::All => true,
                Select::File(p) => file.path == p,
                Select::Hunk(_) => false,
            };
            // Accepting everything skips the files that need a look of their own.
            let held = matches!(select, Select::All) && bulk_accept && !file.cautions().is_empty();
            let hunk_held: Vec<bool> = match bulk_accept && whole {
                true => file.hunk_cautions().iter().map(|c| !c.is_empty()).collect(),
                false => vec![false; file.hunks.len()],
            };
            for (hunk, hunk_held) in file.hunks.iter_mut().zip(hunk_held) {
                let chosen = match select {
                    Select::Hunk(_) => named.contains(&hunk.id),
                    _ => whole,
                };
                if !chosen {
                    continue;
                }
                matched += 1;
                let bulk = !matches!(select, Select::Hunk(_));
                if bulk && (held || hunk_held || !decision.applies_in_bulk_to(hunk.decision)) {
                    continue;
                }
                hunk.decision = decision;
                count += 1;
            }
        }
        match (matched, select) {
            (0, Select::Hunk(id)) => Err(Unknown(id.to_string())),
            (0, Select::File(p)) => Err(Unknown(p.display().to_string())),
            _ => Ok(count),
        }
    }

    /// The hunks `id` names now: itself, or what it became when it was split or
    /// edited (and what those became, in turn).
    pub fn resolve(&self, id: HunkId) -> Vec<HunkId> {
        let mut named = vec![id];
        let mut i = 0;
        while let Some(&at) = named.get(i) {
            if let Some((_, became)) = self.aliases.iter().find(|(old, _)| *old == at) {
                for b in became {
                    if !named.contains(b) {
                        named.push(*b);
                    }
                }
            }
            i += 1;
        }
        named
    }

    /// The editable chat files changed (a file was dropped or made read-only while the
    /// proposal was pending): existing files outside them are marked.
    pub(crate) fn set_chat_files(&mut self, files: &FileSet) {
        for file in &mut self.files {
            file.outside_chat = file.existed && !files.in_chat(&file.path);
        }
    }

    /// The user's yes to creating a gitignored new file.
    pub fn confirm(&mut self, path: &Path) -> Result<(), Unknown> {
        let file = self
            .files
            .iter_mut()
            .find(|f| f.path == path)
            .ok_or_else(|| Unknown(path.display().to_string()))?;
        file.confirmed = true;
        Ok(())
    }
}

/// Reads a file tern may write (an absent one is a new, empty file).
fn read(target: &Target) -> Result<FileText, Problem> {
    if !target.exists {
        return Ok(FileText::new_file());
    }
    let raw = crate::regular_file::read(&target.abs, crate::regular_file::MAX_TEXT_BYTES)
        .map_err(|e| Problem::Io(e.to_string()))?;
    FileText::decode(raw).map_err(|Binary| Problem::Binary)
}

/// Applies one file's edits in order to `doc`; a failing edit is reported (with its
/// index) and skipped.
pub(crate) fn run_edits<'a>(
    doc: &mut Doc<'a>,
    path: &Path,
    existed: bool,
    edits: &'a [Edit],
) -> Vec<(usize, EditError)> {
    let mut failed = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        if let Err(problem) = run_edit(doc, existed, &edit.kind) {
            failed.push((
                i,
                EditError::new(edit.block, Some(path.to_path_buf()), problem, &edit.source),
            ));
        }
    }
    failed
}

fn run_edit<'a>(doc: &mut Doc<'a>, existed: bool, kind: &'a EditKind) -> Result<(), Problem> {
    match kind {
        EditKind::SearchReplace {
            search,
            replace,
            occurrence,
        } => {
            FileText::check_encodable(replace).map_err(|_| Problem::Nul)?;
            if search.is_empty() {
                if *occurrence == Occurrence::Unique && !doc.is_empty() {
                    return Err(Problem::NoContext);
                }
                return doc
                    .append(replace)
                    .map_err(|f| problem(doc, search, replace, f));
            }
            if !existed && doc.is_empty() {
                return Err(Problem::FileNotFound);
            }
            doc.search_replace(search, replace, *occurrence)
                .map(|_| ())
                .map_err(|f| problem(doc, search, replace, f))
        }
        EditKind::Whole { content, new_file } => {
            FileText::check_encodable(content).map_err(|_| Problem::Nul)?;
            if *new_file && !doc.is_empty() {
                return Err(Problem::FileExists);
            }
            let current: Vec<&str> = doc.lines(0..doc.len()).collect();
            if let Some(line) = whole_placeholder(&current, &lines_of(content)) {
                return Err(Problem::LazyComment {
                    line: line.to_string(),
                });
            }
            if content.trim().is_empty() && current.iter().any(|l| !l.trim().is_empty()) {
                return Err(Problem::EmptyWholeFile {
                    lines: current.len(),
                });
            }
            drop(current);
            doc.replace_all(content)
                .map_err(|f| problem(doc, "", content, f))
        }
    }
}

/// The problem to report for a failed match, with "did you mean" lines.
fn problem(doc: &Doc<'_>, search: &str, replace: &str, failure: Failure) -> Problem {
    match failure {
        Failure::NoMatch => Problem::NoMatch {
            near: doc.nearest(search),
            hint: doc.contains(replace).then(|| {
                "The REPLACE lines are already in the file: was this edit applied already?"
                    .to_string()
            }),
        },
        Failure::Ambiguous(lines) => Problem::Ambiguous { lines },
        Failure::Elision(why) => Problem::Elision(why),
        Failure::Lazy(line) => Problem::LazyComment { line },
        Failure::InvalidUtf8(line) => Problem::InvalidUtf8 { line },
    }
}

/// A file that is not in the chat is not the model's to read (it may be `.env`): a
/// failed block aimed at it gets no "did you mean" lines from it, only the advice to
/// ask for it.
fn keep_unseen_file_private(path: &Path, files: &FileSet, failed: &mut [(usize, EditError)]) {
    if files.in_chat(path) || files.is_read_only_chat_file(path) {
        return;
    }
    let slashed = path.display();
    for (_, err) in failed.iter_mut() {
        if let Problem::NoMatch { near, hint } = &mut err.problem {
            *near = None;
            *hint = Some(format!(
                "{slashed} is not in the chat, so its content is not shown to you; ask the user to add it if you need to edit it."
            ));
        }
    }
}

/// Above this many chat files, a SEARCH text that fails is not looked for in the others.
const HINT_MAX_FILES: usize = 200;

/// A SEARCH text not found in its file may be in another chat file: say so.
fn add_other_file_hints(
    root: &Path,
    path: &Path,
    edits: &[Edit],
    files: &FileSet,
    failed: &mut [(usize, EditError)],
) {
    if files.chat().count() > HINT_MAX_FILES {
        return;
    }
    let mut cache: HashMap<&str, Option<String>> = HashMap::new();
    for (i, err) in failed.iter_mut() {
        let (
            Problem::NoMatch {
                hint: hint @ None, ..
            },
            EditKind::SearchReplace { search, .. },
        ) = (&mut err.problem, &edits[*i].kind)
        else {
            continue;
        };
        for other in files.chat().filter(|f| Path::new(f) != path) {
            let text = cache.entry(other).or_insert_with(|| {
                let raw = crate::regular_file::read(
                    &root.join(other),
                    crate::regular_file::MAX_TEXT_BYTES,
                )
                .ok()?;
                FileText::decode(raw).ok().map(|t| t.text().to_string())
            });
            if text
                .as_deref()
                .is_some_and(|t| Doc::new(t).contains(search))
            {
                *hint = Some(format!(
                    "The SEARCH text is in {other}: is that the file you meant?"
                ));
                break;
            }
        }
    }
}
