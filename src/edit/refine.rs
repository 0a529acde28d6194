//! Finer than a hunk, as `git add -p` users expect: splitting a hunk where unchanged
//! lines separate its changes, and replacing a hunk's new lines by the user's own.
//! Both reshape the proposal itself (its spans and cuts), so applying still writes
//! exactly the accepted hunks, and the result survives a saved session and a file
//! that changed on disk like any other hunk.

use std::collections::HashSet;

use similar::{Algorithm, DiffOp};

use super::doc::{Doc, Line, TouchesInvalid, lines_of};
use super::hunks::{Decision, HunkId};
use super::proposal::{FileProposal, Proposal};
use crate::diff::FileText;

/// Why a hunk could not be split or edited; the proposal is as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefineError {
    #[error("no hunk {0} in this proposal")]
    Unknown(HunkId),
    #[error("hunk {0} cannot be split: no unchanged line separates its changes (edit it instead)")]
    CannotSplit(HunkId),
    #[error("the edited text has a NUL character, which would make the file binary")]
    Nul,
    #[error(
        "line {line} of the file holds bytes that are not UTF-8; tern keeps such a line exactly as it is, so leave it unchanged"
    )]
    TouchesInvalid { line: usize },
    #[error(
        "the edited lines are what the file already has, so nothing would change; reject the hunk instead"
    )]
    NoChange,
}

impl Proposal {
    /// Splits the hunks `id` names ([`Proposal::resolve`]: itself, or what it became
    /// when it was edited or split) into their parts (see [`FileProposal::split`]);
    /// returns the parts' ids, or why none of them could be split.
    pub fn split(&mut self, id: HunkId) -> Result<Vec<HunkId>, RefineError> {
        let named: Vec<HunkId> = self
            .resolve(id)
            .into_iter()
            .filter(|h| self.hunk_ids().any(|present| present == *h))
            .collect();
        let mut parts = Vec::new();
        let mut refused = None;
        for hunk in named {
            match self.split_one(hunk) {
                Ok(made) => parts.extend(made),
                Err(e) => refused = refused.or(Some(e)),
            }
        }
        match (parts.is_empty(), refused) {
            (false, _) => Ok(parts),
            (true, Some(e)) => Err(e),
            (true, None) => Err(RefineError::Unknown(id)),
        }
    }

    fn split_one(&mut self, id: HunkId) -> Result<Vec<HunkId>, RefineError> {
        let (index, mut taken) = self.file_of(id)?;
        let parts = self.files[index].split(id, &mut taken)?;
        self.aliases.push((id, parts.clone()));
        Ok(parts)
    }

    /// Makes `text` the new lines of hunk `id` (see [`FileProposal::edit`]); returns the
    /// ids of the hunks it became.
    pub fn edit(&mut self, id: HunkId, text: &str) -> Result<Vec<HunkId>, RefineError> {
        let (index, mut taken) = self.file_of(id)?;
        let became = self.files[index].edit(id, text, &mut taken)?;
        self.aliases.push((id, became.clone()));
        Ok(became)
    }

    /// The proposed lines of hunk `id` as text, as an editor should show them (the
    /// file's last line keeps its missing newline).
    pub fn hunk_text(&self, id: HunkId) -> Result<String, RefineError> {
        let (index, _) = self.file_of(id)?;
        let file = &self.files[index];
        let hunk = file.hunk(id)?;
        Ok(file
            .proposed
            .split_inclusive('\n')
            .skip(hunk.new.start)
            .take(hunk.new.len())
            .collect())
    }

    /// The file holding hunk `id`, and the ids of the other files' hunks.
    fn file_of(&self, id: HunkId) -> Result<(usize, HashSet<HunkId>), RefineError> {
        let index = self
            .files
            .iter()
            .position(|f| f.hunks.iter().any(|h| h.id == id))
            .ok_or(RefineError::Unknown(id))?;
        Ok((index, self.ids_except(index)))
    }
}

impl FileProposal {
    fn hunk(&self, id: HunkId) -> Result<&super::Hunk, RefineError> {
        self.hunks
            .iter()
            .find(|h| h.id == id)
            .ok_or(RefineError::Unknown(id))
    }

    /// Splits hunk `id` at every run of unchanged lines inside it; each part keeps the
    /// hunk's decision, so applying writes what it wrote before, and gets its own id.
    pub(crate) fn split(
        &mut self,
        id: HunkId,
        taken: &mut HashSet<HunkId>,
    ) -> Result<Vec<HunkId>, RefineError> {
        let hunk = self.hunk(id)?;
        let points = hunk.split_points();
        if points.is_empty() {
            return Err(RefineError::CannotSplit(id));
        }
        let (range, marks) = (hunk.old.clone(), (hunk.decision, hunk.edited));
        self.cuts.extend(points);
        let before = self.marks();
        self.rebuild(&before, taken);
        Ok(self.mark_within(range, marks))
    }

    /// Replaces the new lines of hunk `id` by `text` (lines, a final newline optional,
    /// LF or CRLF: they get the file's ending), accepted and marked as the user's. Lines the user left as they were keep what
    /// they were (an original line stays the file's bytes). Refused, with the proposal
    /// unchanged, when the text has a NUL, changes a line that is not UTF-8, or leaves
    /// the original as it is.
    pub(crate) fn edit(
        &mut self,
        id: HunkId,
        text: &str,
        taken: &mut HashSet<HunkId>,
    ) -> Result<Vec<HunkId>, RefineError> {
        FileText::check_encodable(text).map_err(|_| RefineError::Nul)?;
        let hunk = self.hunk(id)?;
        let (range, new, marks) = (
            hunk.old.clone(),
            hunk.new.clone(),
            (Decision::Accept, hunk.edited),
        );
        // An editor may write the lines back with CRLF (or a CRLF file's with LF): a
        // line takes the file's ending when written, so a CR the editor added goes. A
        // line that held one before (a CRLF line in a mostly-LF file) keeps it.
        let before: Vec<&str> = self.proposed_lines(new.clone()).collect();
        let edited: Vec<&str> = lines_of(text)
            .into_iter()
            .map(|line| match line.strip_suffix('\r') {
                Some(body) if !before.contains(&line) => body,
                _ => line,
            })
            .collect();
        if before == edited {
            // Saved as it was: accepted as proposed.
            return Ok(self.mark_within(range, marks));
        }
        let mut doc = Doc::with_spans(
            self.original.text(),
            self.original.invalid_lines(),
            Some((self.spans.clone(), self.final_newline)),
        );
        let current: Vec<&str> = doc.lines(new.clone()).collect();
        let mut with = Vec::with_capacity(edited.len());
        for op in similar::capture_diff_slices(Algorithm::Patience, &current, &edited) {
            match op {
                DiffOp::Equal { old_index, len, .. } => {
                    with.extend((0..len).map(|i| doc.line_ref(new.start + old_index + i)))
                }
                _ => with.extend(
                    op.new_range()
                        .map(|i| Line::New(edited[i].to_string().into())),
                ),
            }
        }
        doc.replace(new, with)
            .map_err(|TouchesInvalid(line)| RefineError::TouchesInvalid { line: line + 1 })?;
        let (spans, final_newline) = doc.into_owned_spans();
        let saved = self.clone();
        self.spans = spans;
        self.final_newline = final_newline;
        let marks = self.marks();
        self.rebuild(&marks, taken);
        let ids = self.mark_within(range, (Decision::Accept, true));
        if ids.is_empty() {
            *self = saved;
            return Err(RefineError::NoChange);
        }
        Ok(ids)
    }

    /// Proposed lines `range`, without their `\n`.
    fn proposed_lines(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = &str> {
        self.proposed
            .split_inclusive('\n')
            .skip(range.start)
            .take(range.len())
            .map(|l| l.strip_suffix('\n').unwrap_or(l))
    }

    /// Gives every hunk inside the original lines `range` the decision and edited mark
    /// `marks`; returns their ids.
    fn mark_within(
        &mut self,
        range: std::ops::Range<usize>,
        (decision, edited): (Decision, bool),
    ) -> Vec<HunkId> {
        self.hunks
            .iter_mut()
            .filter(|h| h.old.start >= range.start && h.old.end <= range.end)
            .map(|h| {
                h.decision = decision;
                h.edited = edited;
                h.id
            })
            .collect()
    }
}
