//! Hunk-by-hunk review of the edits a reply proposes: the files with their hunk counts,
//! the selected file as a syntax-highlighted unified diff with line numbers, each hunk
//! pending, accepted or rejected, and the blocks that failed. Decisions are sent as
//! `ReviewOp`s and shown at once; the engine's next `Proposal` confirms them.
//!
//! Only visible rows are drawn and highlighting runs per hunk as far as the view has
//! reached, so a 5,000-line diff opens as fast as a small one.

use std::collections::HashMap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Cx, Draw, Effect, Pane, PaneId};
use crate::engine::Op;
use crate::engine::protocol::{
    Decision, FileProposalView, FileStatus, HunkView, LineKind, ProposalView, ReviewOp,
};
use crate::engine::protocol::{Outcome, PlanMode, ReviewPlan};
use crate::plural;
use crate::tui::editor::{self, EditRequest, EditTarget};
use crate::tui::highlight::{self, Incremental};
use crate::tui::keymap::{Action, Keymap};
use crate::tui::text::{self, thousands};
use crate::tui::theme::Theme;
use crate::tui::word_diff;

/// Where the review stands after the user acted on the whole proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Applying,
    Applied(String),
    Discarded,
}

/// Below this many columns the focused review takes the whole width: beside the other
/// columns its middle one is too narrow for code (54 columns at 120).
pub const AUTO_ZOOM_WIDTH: u16 = 150;

#[derive(Default)]
pub struct ReviewPane {
    proposal: Option<ProposalView>,
    file: usize,
    hunk: usize,
    /// First diff row shown.
    scroll: usize,
    /// Columns of code scrolled past on the left (long lines).
    hscroll: usize,
    /// `z` was pressed (an odd number of times): the focused review's width is the
    /// other one than the terminal's width gives it (`zoomed`).
    zoom_flipped: bool,
    /// Bring the selected hunk into view at the next frame.
    reveal: bool,
    /// Rows of the diff area in the last frame.
    diff_rows: usize,
    /// Row of each hunk header in each file's diff, and the file's row count.
    rows: Vec<(Vec<usize>, usize)>,
    highlights: HashMap<String, HunkHighlight>,
    status: Option<Status>,
    reflections: Vec<String>,
    /// What the last landing applied, while hunks of the proposal are still pending.
    banner: Option<String>,
    /// The commit the last landing made, and whether `/undo` took it back since.
    landed: Option<(String, bool)>,
    /// The last `/review`'s plan, shown while no edits wait: which files the model got
    /// and which were left out, and why.
    plan: Option<ReviewPlan>,
    /// A split or an edit was sent: the next proposal reshapes this one (its hunks may
    /// all have new ids) rather than replacing it.
    reshaping: bool,
    /// The user's text for a hunk that the engine refused (hunk id, text): `e` on that
    /// hunk opens it again instead of the proposed lines, so nothing typed is lost.
    refused: Option<(String, String)>,
    /// The notes (failed edits with their lines, reflections) take the pane, scrolled
    /// to this row: at 80x24 the rows under the diff hold only a few of them.
    notes_open: Option<usize>,
    /// The row the pane is scrolled to when it shows no hunk, only its notes.
    notes_scroll: usize,
    /// A hunk decided outside the review keys (`/reject` typed after `N`, an edit): when
    /// the proposal shows it decided, the selection moves on, as after `y`.
    advance: Option<String>,
}

/// Hunk `id` of proposal `p`.
fn hunk_in<'p>(p: &'p ProposalView, id: &str) -> Option<&'p HunkView> {
    p.files.iter().flat_map(|f| &f.hunks).find(|h| h.id == id)
}

/// The review as it was before a burst of keys (`ReviewPane::undo_point`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UndoPoint {
    decisions: Vec<(String, Decision)>,
    file: usize,
    hunk: usize,
    hscroll: usize,
}

/// Counts of a set of hunks by decision.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub pending: usize,
    pub accepted: usize,
    pub rejected: usize,
}

impl Tally {
    fn of<'a>(hunks: impl IntoIterator<Item = &'a HunkView>) -> Tally {
        let mut t = Tally::default();
        for h in hunks {
            match h.decision {
                Decision::Pending => t.pending += 1,
                Decision::Accept => t.accepted += 1,
                Decision::Reject => t.rejected += 1,
            }
        }
        t
    }

    fn total(&self) -> usize {
        self.pending + self.accepted + self.rejected
    }
}

impl ReviewPane {
    /// A proposal arrived. Returns true when it is a new one (no hunk in common with the
    /// one shown): the pane then opens on its first hunk. An update (decisions
    /// confirmed, hunks added by a reflection, hunks left after a partial landing) keeps
    /// the selected hunk. An empty view means nothing is left to review.
    pub(crate) fn set_proposal(&mut self, proposal: ProposalView) -> bool {
        if proposal.files.is_empty() && proposal.failures.is_empty() {
            self.close();
            return false;
        }
        let ids = |p: &ProposalView| -> Vec<String> {
            p.files
                .iter()
                .flat_map(|f| f.hunks.iter().map(|h| h.id.clone()))
                .collect()
        };
        let old = self.proposal.as_ref().map(ids).unwrap_or_default();
        let new = ids(&proposal);
        let reshaped = std::mem::take(&mut self.reshaping) && self.proposal.is_some();
        let fresh = !reshaped && !new.iter().any(|id| old.contains(id));
        if self
            .refused
            .as_ref()
            .is_some_and(|(id, _)| !new.contains(id))
        {
            self.refused = None;
        }
        let selected = self.current_hunk().map(|h| h.id.clone());
        self.rows = proposal
            .files
            .iter()
            .map(|f| {
                let mut starts = Vec::with_capacity(f.hunks.len());
                let mut row = 0;
                for h in &f.hunks {
                    starts.push(row);
                    row += 1 + h.lines.len();
                }
                (starts, row)
            })
            .collect();
        if fresh {
            self.file = 0;
            self.hunk = 0;
            self.scroll = 0;
            self.hscroll = 0;
            self.highlights.clear();
            self.reflections.clear();
            self.banner = None;
            self.notes_open = None;
            self.notes_scroll = 0;
        } else {
            // A hunk keeps its id when its neighbour is split off or applied, but its
            // context lines may change: only an unchanged hunk keeps its highlighting.
            let keep: Vec<String> = self
                .highlights
                .keys()
                .filter(|id| {
                    self.proposal.as_ref().and_then(|p| hunk_in(p, id)) == hunk_in(&proposal, id)
                })
                .cloned()
                .collect();
            self.highlights.retain(|id, _| keep.contains(id));
            if let Some((file, hunk)) = selected.and_then(|id| find(&proposal, &id)) {
                self.file = file;
                self.hunk = hunk;
            }
        }
        // An edited hunk may come back under a new id, in the place it had.
        let here = (self.file, self.hunk);
        let advance = self
            .advance
            .take()
            .map(|id| find(&proposal, &id).unwrap_or(here));
        // Whatever was being applied is over: this is what is left to decide.
        self.status = None;
        self.proposal = Some(proposal);
        self.clamp();
        if let Some((file, hunk)) = advance {
            let decided = self
                .proposal
                .as_ref()
                .and_then(|p| p.files.get(file)?.hunks.get(hunk))
                .is_some_and(|h| h.decision != Decision::Pending);
            if decided {
                self.select(file, hunk);
                self.next_pending();
            }
        }
        self.reveal = true;
        fresh
    }

    fn close(&mut self) {
        self.proposal = None;
        self.rows.clear();
        self.highlights.clear();
    }

    /// Whether there are hunks to decide on.
    pub(crate) fn is_active(&self) -> bool {
        self.status.is_none()
            && self
                .proposal
                .as_ref()
                .is_some_and(|p| p.files.iter().any(|f| !f.hunks.is_empty()))
    }

    /// The Review tab's badge: the hunks pending and the failed edits kept with the
    /// proposal (`4`, `4 2✗`, `2✗` when every hunk failed); None when there are none.
    pub fn badge(&self) -> Option<String> {
        let p = self.proposal.as_ref().filter(|_| self.status.is_none())?;
        let pending = self.is_active().then(|| self.tally().pending.to_string());
        let failed = (!p.failures.is_empty()).then(|| format!("{}✗", p.failures.len()));
        let badge: Vec<String> = pending.into_iter().chain(failed).collect();
        (!badge.is_empty()).then(|| badge.join(" "))
    }

    /// Whether the failed edits and notes take the pane (`f`) instead of the hunks.
    pub(crate) fn notes_shown(&self) -> bool {
        self.notes_open.is_some() && self.is_active()
    }

    pub fn proposal(&self) -> Option<&ProposalView> {
        self.proposal.as_ref()
    }

    pub fn status(&self) -> Option<&Status> {
        self.status.as_ref()
    }

    /// Applying ended without an `Applied` (the engine said why): decide again.
    pub(crate) fn apply_failed(&mut self) {
        if self.status == Some(Status::Applying) {
            self.status = None;
        }
    }

    /// Accepted hunks were written (and committed as `commit`). Hunks still pending
    /// stay to be decided, under a line saying what was applied; otherwise the review
    /// is over.
    pub fn applied(&mut self, summary: String, commit: Option<String>) {
        self.landed = commit.map(|c| (c, false));
        if self.tally().total() > 0 {
            self.status = None;
            self.banner = Some(summary);
        } else {
            self.close();
            self.status = Some(Status::Applied(summary));
        }
    }

    /// `commits` were taken back (`/undo`): the line saying what was applied says so
    /// when it names one of them.
    pub(crate) fn undone(&mut self, commits: &[String]) {
        if let Some((commit, undone)) = &mut self.landed
            && commits.iter().any(|c| c.starts_with(commit.as_str()))
        {
            *undone = true;
        }
    }

    /// How the line saying what was applied starts, and its style: `✓`, or `↶ undone:`
    /// once its commit was taken back.
    fn landed_mark(&self, theme: &Theme) -> (&'static str, Style) {
        match self.landed {
            Some((_, true)) => ("↶ undone: ", Style::new().fg(theme.c.warning)),
            _ => ("✓ ", Style::new().fg(theme.c.ok)),
        }
    }

    pub(crate) fn set_review_plan(&mut self, plan: ReviewPlan) {
        self.plan = Some(plan);
    }

    pub fn reflection(&mut self, text: String) {
        self.reflections.push(text);
    }

    pub(crate) fn tally(&self) -> Tally {
        Tally::of(
            self.proposal
                .iter()
                .flat_map(|p| p.files.iter().flat_map(|f| &f.hunks)),
        )
    }

    fn clamp(&mut self) {
        let Some(p) = &self.proposal else { return };
        self.file = self.file.min(p.files.len().saturating_sub(1));
        let hunks = p.files.get(self.file).map_or(0, |f| f.hunks.len());
        self.hunk = self.hunk.min(hunks.saturating_sub(1));
    }

    fn current_file(&self) -> Option<&FileProposalView> {
        self.proposal.as_ref()?.files.get(self.file)
    }

    fn current_hunk(&self) -> Option<&HunkView> {
        self.current_file()?.hunks.get(self.hunk)
    }

    /// Moves to the next (or previous) hunk, across files.
    fn move_hunk(&mut self, forward: bool) {
        let Some(p) = &self.proposal else { return };
        let order: Vec<(usize, usize)> = p
            .files
            .iter()
            .enumerate()
            .flat_map(|(f, file)| (0..file.hunks.len()).map(move |h| (f, h)))
            .collect();
        let Some(at) = order.iter().position(|&x| x == (self.file, self.hunk)) else {
            return;
        };
        let next = if forward { at + 1 } else { at.wrapping_sub(1) };
        if let Some(&(f, h)) = order.get(next) {
            self.select(f, h);
        }
    }

    /// Selects the first pending hunk after the selected one, from the top again if
    /// none follows; stays when none is pending.
    fn next_pending(&mut self) {
        let Some(p) = &self.proposal else { return };
        let order: Vec<(usize, usize, bool)> = p
            .files
            .iter()
            .enumerate()
            .flat_map(|(f, file)| {
                file.hunks
                    .iter()
                    .enumerate()
                    .map(move |(h, hunk)| (f, h, hunk.decision == Decision::Pending))
            })
            .collect();
        let at = order
            .iter()
            .position(|&(f, h, _)| (f, h) == (self.file, self.hunk))
            .unwrap_or(0);
        let mut after = order.iter().skip(at + 1).chain(order.iter().take(at));
        if let Some(&(f, h, _)) = after.find(|(_, _, pending)| *pending) {
            self.select(f, h);
        }
    }

    fn select(&mut self, file: usize, hunk: usize) {
        if file != self.file {
            self.scroll = 0;
        }
        self.file = file;
        self.hunk = hunk;
        self.reveal = true;
    }

    fn move_file(&mut self, delta: i32) {
        let files = self.proposal.as_ref().map_or(0, |p| p.files.len());
        let file = super::step(self.file, delta, files);
        if file != self.file {
            self.select(file, 0);
        }
    }

    /// Records a decision locally (the engine's next `Proposal` confirms it), as the
    /// engine does: in bulk, an accept skips the hunks the user rejected and those with
    /// a caution of their own.
    fn set_decision(
        &mut self,
        matches: impl Fn(&str, &HunkView) -> bool,
        decision: Decision,
        bulk: bool,
    ) {
        let held = |h: &HunkView| {
            bulk && (!decision.applies_in_bulk_to(h.decision)
                || (decision == Decision::Accept && !h.cautions.is_empty()))
        };
        if let Some(p) = &mut self.proposal {
            for f in &mut p.files {
                for h in &mut f.hunks {
                    if matches(&f.path, h) && !held(h) {
                        h.decision = decision;
                    }
                }
            }
        }
    }

    /// The decisions and the place in the review as they are now, for [`Self::undo`].
    pub(crate) fn undo_point(&self) -> UndoPoint {
        let decisions = self
            .proposal
            .iter()
            .flat_map(|p| &p.files)
            .flat_map(|f| &f.hunks)
            .map(|h| (h.id.clone(), h.decision))
            .collect();
        UndoPoint {
            decisions,
            file: self.file,
            hunk: self.hunk,
            hscroll: self.hscroll,
        }
    }

    /// Keys that turned out to be typing are taken back: each hunk they decided gets
    /// its decision of `point` again (the engine too), and the selection its place. A
    /// hunk split since is named by its old id, which the engine takes for its parts.
    pub(crate) fn undo(&mut self, point: UndoPoint, cx: &mut Cx<'_>) {
        for (id, before) in point.decisions {
            let now = self.proposal.as_ref().and_then(|p| hunk_in(p, &id));
            if now.is_none_or(|now| now.decision != before) {
                self.set_decision(|_, h| h.id == id, before, false);
                cx.send(Op::Review(ReviewOp::Hunk {
                    id,
                    decision: before,
                }));
            }
        }
        let files = self.proposal.as_ref().map_or(0, |p| p.files.len());
        if point.file < files {
            self.select(point.file, point.hunk);
        }
        self.hscroll = point.hscroll;
    }

    fn decide_hunk(&mut self, decision: Decision, cx: &mut Cx<'_>) {
        let Some(id) = self.current_hunk().map(|h| h.id.clone()) else {
            return;
        };
        self.set_decision(|_, h| h.id == id, decision, false);
        cx.send(Op::Review(ReviewOp::Hunk { id, decision }));
        if decision != Decision::Pending {
            self.move_hunk(true);
        }
    }

    /// `s`: asks the engine to split the selected hunk; the selection stays on its
    /// first part.
    fn split_hunk(&mut self, cx: &mut Cx<'_>) {
        if let Some(id) = self.current_hunk().map(|h| h.id.clone()) {
            self.reshaping = true;
            cx.send(Op::Review(ReviewOp::Split { id }));
        }
    }

    /// `e`: the selected hunk's lines go to the editor: the text the engine refused for
    /// it if there is one, else its proposed lines, asked of the engine (the view's text
    /// has control characters made visible, the file's does not).
    fn edit_hunk(&mut self, cx: &mut Cx<'_>) {
        let Some(hunk) = self.current_hunk() else {
            return;
        };
        let id = hunk.id.clone();
        match &self.refused {
            Some((refused, text)) if *refused == id => {
                let suffix = self
                    .current_file()
                    .map(|f| editor::suffix_of(&f.path))
                    .unwrap_or_default();
                cx.effect(Effect::Edit(EditRequest {
                    target: EditTarget::Hunk { id },
                    text: text.clone(),
                    suffix,
                }));
            }
            _ => cx.send(Op::HunkText { id }),
        }
    }

    /// The engine refused the user's `text` for hunk `id`: kept for the next `e`.
    pub fn edit_refused(&mut self, id: String, text: String) {
        self.refused = Some((id, text));
    }

    /// Whether [`ReviewPane::notes`] has anything to show.
    fn has_notes(&self) -> bool {
        !self.reflections.is_empty()
            || self.proposal.as_ref().is_some_and(|p| {
                !p.written_as.is_empty() || !p.failures.is_empty() || !p.shell_commands.is_empty()
            })
    }

    /// Whether the focused review takes the whole width of a terminal `width` columns
    /// wide: below [`AUTO_ZOOM_WIDTH`] it does, unless `z` says otherwise.
    pub(crate) fn zoomed(&self, width: u16) -> bool {
        (width < AUTO_ZOOM_WIDTH) != self.zoom_flipped
    }

    /// Hunk `id` is being decided from elsewhere (see `advance`).
    pub(crate) fn advance_after(&mut self, id: String) {
        self.advance = Some(id);
    }

    /// The user's edit of a hunk is on its way: the proposal it makes reshapes this one.
    pub(crate) fn reshape(&mut self) {
        self.reshaping = true;
    }

    fn decide_file(&mut self, decision: Decision, cx: &mut Cx<'_>) {
        let Some(path) = self.current_file().map(|f| f.path.clone()) else {
            return;
        };
        self.set_decision(|p, _| p == path, decision, true);
        cx.send(Op::Review(ReviewOp::File { path, decision }));
        if decision != Decision::Pending {
            self.move_file(1);
        }
    }

    fn decide_all(&mut self, decision: Decision, cx: &mut Cx<'_>) {
        if self.proposal.is_none() {
            return;
        }
        // As the engine does: accepting everything skips the files with a caution.
        let held: Vec<String> = self
            .proposal
            .iter()
            .flat_map(|p| &p.files)
            .filter(|f| !f.cautions.is_empty())
            .map(|f| f.path.clone())
            .collect();
        let accept = decision == Decision::Accept;
        self.set_decision(
            |p, _| !(accept && held.iter().any(|h| h == p)),
            decision,
            true,
        );
        cx.send(Op::Review(ReviewOp::All { decision }));
    }

    fn diff_row_count(&self) -> usize {
        self.rows.get(self.file).map_or(0, |(_, n)| *n)
    }

    /// Keeps the selected hunk's header (and as much of the hunk as fits) in view.
    fn reveal_selected(&mut self) {
        let Some((starts, _)) = self.rows.get(self.file) else {
            return;
        };
        let Some(&start) = starts.get(self.hunk) else {
            return;
        };
        let len = self.current_hunk().map_or(0, |h| h.lines.len() + 1);
        let height = self.diff_rows.max(1);
        let end = start + len;
        if start < self.scroll || len > height {
            self.scroll = start;
        } else if end > self.scroll + height {
            self.scroll = end - height;
        }
    }

    fn summary(&self, theme: &Theme) -> Line<'static> {
        let t = self.tally();
        let files = self.proposal.as_ref().map_or(0, |p| p.files.len());
        let mut spans = vec![Span::styled(
            format!(
                "{} · {} ",
                plural::count(files, "file"),
                plural::count(t.total(), "hunk")
            ),
            Style::new().fg(theme.c.fg),
        )];
        spans.extend(tally_spans(&t, theme));
        if self.status == Some(Status::Applying) {
            spans.push(Span::styled("  applying…", Style::new().fg(theme.c.accent)));
        }
        Line::from(spans)
    }

    fn render_files(&self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        let Some(p) = &self.proposal else { return };
        let height = area.height as usize;
        let offset = super::keep_visible(0, self.file, height);
        for (row, (i, f)) in p
            .files
            .iter()
            .enumerate()
            .skip(offset)
            .take(height)
            .enumerate()
        {
            let y = area.y + row as u16;
            let (letter, color) = match f.change {
                FileStatus::Added => ("A", theme.c.added),
                FileStatus::Modified => ("M", theme.c.accent),
                FileStatus::Renamed => ("R", theme.c.accent),
                FileStatus::Deleted => ("D", theme.c.removed),
            };
            let t = Tally::of(&f.hunks);
            let counts = tally_spans(&t, theme);
            let counts_width: usize = counts.iter().map(|s| text::width(&s.content)).sum();
            let marker = if i == self.file { "▸ " } else { "  " };
            // Why `A` skips this file, said where the user decides on it; cut with `…`
            // so that some of the path and the counts still show.
            let caution: String = f.cautions.iter().map(|c| format!(" ⚠ {c}")).collect();
            let caution = text::truncate(
                &caution,
                (area.width as usize)
                    .saturating_sub(counts_width + 5 + text::width(&f.path).min(PATH_KEPT)),
            );
            let path_width =
                (area.width as usize).saturating_sub(counts_width + 5 + text::width(&caution));
            let path = text::truncate_left(&f.path, path_width);
            let pad = path_width.saturating_sub(text::width(&path));
            let mut spans = vec![
                Span::styled(marker, Style::new().fg(theme.c.accent)),
                Span::styled(letter, Style::new().fg(color).add_modifier(Modifier::BOLD)),
                Span::raw(" "),
                Span::styled(path, Style::new().fg(theme.c.fg)),
                Span::styled(caution, Style::new().fg(theme.c.warning)),
                Span::raw(" ".repeat(pad + 1)),
            ];
            spans.extend(counts);
            if i == self.file {
                buf.set_style(Rect::new(area.x, y, area.width, 1), theme.selected());
            }
            let mut line = Line::from(spans);
            if i == self.file {
                line = line.patch_style(theme.selected());
            }
            buf.set_line(area.x, y, &line, area.width);
        }
    }

    fn render_diff(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.diff_rows = area.height as usize;
        if std::mem::take(&mut self.reveal) {
            self.reveal_selected();
        }
        let total = self.diff_row_count();
        self.scroll = self.scroll.min(total.saturating_sub(1));
        let Some(p) = &self.proposal else { return };
        let Some(file) = p.files.get(self.file) else {
            return;
        };
        let Some((starts, _)) = self.rows.get(self.file) else {
            return;
        };
        let max_line = file
            .hunks
            .iter()
            .map(|h| (h.old_start + h.old_len).max(h.new_start + h.new_len))
            .max()
            .unwrap_or(0);
        let digits = max_line.to_string().len().max(3);
        let syntax = highlight::syntax_for_path(&file.path);
        // The hunk holding the first visible row.
        let mut h = starts
            .partition_point(|&s| s <= self.scroll)
            .saturating_sub(1);
        let mut row = self.scroll;
        let mut y = area.y;
        while y < area.bottom() && h < file.hunks.len() {
            let hunk = &file.hunks[h];
            let selected = h == self.hunk;
            let in_hunk = row - starts[h];
            if in_hunk == 0 {
                let line = hunk_header(hunk, selected, theme, area.width as usize);
                if selected {
                    buf.set_style(Rect::new(area.x, y, area.width, 1), theme.selected());
                }
                buf.set_line(area.x, y, &line, area.width);
            } else {
                let index = in_hunk - 1;
                let hl = self
                    .highlights
                    .entry(hunk.id.clone())
                    .or_insert_with(|| HunkHighlight::new(hunk, syntax, &theme.syntax));
                let emphasis = match hunk.lines[index].kind {
                    LineKind::Added => Style::new().fg(theme.c.added_bg).bg(theme.c.added),
                    _ => Style::new().fg(theme.c.removed_bg).bg(theme.c.removed),
                };
                let words = hl.words.get(index).cloned().unwrap_or_default();
                let code = word_diff::emphasize(hl.spans(index), &words, emphasis);
                let code = text::mark_hidden(&code, theme.hidden_marker());
                let code = text::skip_columns(&code, self.hscroll);
                let mut line = diff_line(
                    &hunk.lines[index],
                    &code,
                    selected,
                    hunk.decision,
                    digits,
                    theme,
                );
                // Marks where a line is cut: `‹` scrolled past, `›` more to the right.
                let gutter = digits * 2 + 5;
                let cut = Style::new().fg(theme.c.accent).add_modifier(Modifier::BOLD);
                if self.hscroll > 0
                    && let Some(space) = line.spans.get_mut(3)
                {
                    *space = Span::styled("‹", cut);
                }
                let past_edge = gutter + text::spans_width(&code) > area.width as usize;
                let bg = match hunk.lines[index].kind {
                    LineKind::Added => Some(theme.c.added_bg),
                    LineKind::Removed => Some(theme.c.removed_bg),
                    LineKind::Context => None,
                };
                if let Some(bg) = bg.filter(|_| hunk.decision != Decision::Reject) {
                    buf.set_style(
                        Rect::new(area.x + 1, y, area.width - 1, 1),
                        Style::new().bg(bg),
                    );
                }
                buf.set_line(area.x, y, &line, area.width);
                if past_edge && area.width > 0 {
                    buf.set_string(area.right() - 1, y, "›", cut);
                }
            }
            y += 1;
            row += 1;
            if row >= starts[h] + 1 + hunk.lines.len() {
                h += 1;
            }
        }
    }

    /// Failed blocks, reflections and suggested commands, as lines.
    fn notes(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let err = Style::new().fg(theme.c.error);
        if let Some(p) = &self.proposal {
            for format in &p.written_as {
                let text = format!(
                    "the reply wrote its edits as {}, not the format asked for; read as such",
                    format.blocks()
                );
                out.extend(text::wrap(
                    &[Span::styled(text, theme.dim())],
                    width,
                    &[Span::styled("ℹ ", theme.dim())],
                    &[Span::raw("  ")],
                ));
            }
            for f in &p.failures {
                let said = f.to_string();
                let text = said.lines().next().unwrap_or("").to_string();
                out.extend(text::wrap(
                    &[Span::styled(text, err)],
                    width,
                    &[Span::styled("✗ ", err)],
                    &[Span::raw("  ")],
                ));
                if let Some(hunk) = &f.hunk {
                    out.extend(stale_lines(hunk, theme, width));
                }
            }
            for cmd in &p.shell_commands {
                out.push(Line::from(vec![
                    Span::styled("$ ", theme.dim()),
                    Span::styled(cmd.clone(), Style::new().fg(theme.c.inline_code)),
                    Span::styled("  (suggested, not run)", theme.dim()),
                ]));
            }
        }
        let warn = Style::new().fg(theme.c.warning);
        for r in &self.reflections {
            out.extend(text::wrap(
                &[Span::styled(r.clone(), warn)],
                width,
                &[Span::styled("↻ ", warn)],
                &[Span::raw("  ")],
            ));
        }
        out
    }

    fn render_status(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        let (text, style) = match &self.status {
            Some(Status::Applied(summary)) => match self.landed_mark(theme) {
                ("✓ ", style) => (summary.clone(), style),
                (mark, style) => (format!("{mark}{summary}"), style),
            },
            Some(Status::Discarded) => (
                "Proposal discarded; nothing was written.".to_string(),
                theme.dim(),
            ),
            _ => (
                "No edits to review. Proposed edits open here, hunk by hunk.".to_string(),
                theme.dim(),
            ),
        };
        let width = area.width as usize;
        let mut lines = text::wrap(&[Span::styled(text, style)], width, &[], &[]);
        lines.extend(self.notes(theme, width));
        if let Some(plan) = &self.plan {
            lines.push(Line::raw(""));
            lines.extend(plan_lines(plan, theme, width));
        }
        self.notes_scroll = scrolled(area, buf, &lines, self.notes_scroll, draw);
    }
}

/// The columns of a file's path its row keeps beside a long caution.
const PATH_KEPT: usize = 20;

/// The most lines of a stale hunk the review shows (the chat's `/diff` has none of it:
/// it is no longer part of the proposal).
const STALE_LINES: usize = 12;

/// A stale hunk's lines under its failure, coloured as a diff and cut to `width`.
fn stale_lines(hunk: &str, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let total = hunk.lines().count();
    let mut out: Vec<Line<'static>> = hunk
        .lines()
        .take(STALE_LINES)
        .map(|line| {
            let style = match line.chars().next() {
                Some('+') => Style::new().fg(theme.c.added),
                Some('-') => Style::new().fg(theme.c.removed),
                _ => theme.dim(),
            };
            Line::from(vec![
                Span::raw("    "),
                Span::styled(text::truncate(line, width.saturating_sub(4)), style),
            ])
        })
        .collect();
    if total > STALE_LINES {
        out.push(Line::from(Span::styled(
            format!("    … {} more lines", total - STALE_LINES),
            theme.dim(),
        )));
    }
    out
}

/// The files of a review plan: included ones with the call that carries them, the
/// others with why they were left out.
fn plan_lines(plan: &ReviewPlan, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let included = plan.included().count();
    let mut lines = vec![Line::styled(
        text::truncate(
            &format!(
                "Review of {} · {included} of {} files sent{}",
                plan.description,
                plan.files.len(),
                match plan.mode {
                    PlanMode::Extended => "",
                    PlanMode::Compressed => " · compressed",
                }
            ),
            width,
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    for file in &plan.files {
        let (mark, note, style) = match file.outcome {
            Outcome::Included { call } if plan.calls.len() > 1 => (
                "✓",
                format!("call {}", call + 1),
                Style::new().fg(theme.c.accepted),
            ),
            Outcome::Included { .. } => ("✓", String::new(), Style::new().fg(theme.c.accepted)),
            Outcome::Omitted { reason } => ("–", reason.label().to_string(), theme.dim()),
        };
        let counts = format!("+{} -{}", file.added, file.removed);
        let tail = format!(" {counts} {note}");
        let path = text::truncate_left(&file.path, width.saturating_sub(text::width(&tail) + 3));
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), style),
            Span::styled(path, style),
            Span::styled(tail, theme.dim()),
        ]));
    }
    lines
}

/// Where the hunk `id` is in `proposal`: (file, hunk).
fn find(proposal: &ProposalView, id: &str) -> Option<(usize, usize)> {
    proposal
        .files
        .iter()
        .enumerate()
        .find_map(|(f, file)| file.hunks.iter().position(|h| h.id == id).map(|h| (f, h)))
}

fn tally_spans(t: &Tally, theme: &Theme) -> Vec<Span<'static>> {
    vec![
        Span::styled(
            format!("✓{}", t.accepted),
            Style::new().fg(theme.c.accepted),
        ),
        Span::raw(" "),
        Span::styled(
            format!("✗{}", t.rejected),
            Style::new().fg(theme.c.rejected),
        ),
        Span::raw(" "),
        Span::styled(format!("·{}", t.pending), Style::new().fg(theme.c.pending)),
    ]
}

fn decision_label(decision: Decision, theme: &Theme) -> Span<'static> {
    match decision {
        Decision::Pending => Span::styled("· pending", Style::new().fg(theme.c.pending)),
        Decision::Accept => Span::styled(
            "✓ accepted",
            Style::new()
                .fg(theme.c.accepted)
                .add_modifier(Modifier::BOLD),
        ),
        Decision::Reject => Span::styled(
            "✗ rejected",
            Style::new()
                .fg(theme.c.rejected)
                .add_modifier(Modifier::BOLD),
        ),
    }
}

/// `@@ -a,b +c,d @@` for the lines shown (context included), as git writes it, so the
/// header agrees with the line numbers beside it.
fn range_header(hunk: &HunkView) -> String {
    use crate::diff::{Counts, hunk_header, shown_side};
    hunk_header(
        shown_side(&hunk.lines, |l| l.old_line, hunk.old_start),
        shown_side(&hunk.lines, |l| l.new_line, hunk.new_start),
        Counts::Git,
    )
}

/// A hunk's header in `width` columns: its range, its decision and its cautions (cut
/// with `…`, so a long list of characters does not end mid-list unmarked).
fn hunk_header(hunk: &HunkView, selected: bool, theme: &Theme, width: usize) -> Line<'static> {
    let marker = if selected { "▶ " } else { "  " };
    let mut line = Line::from(vec![
        Span::styled(marker, Style::new().fg(theme.c.accent)),
        Span::styled(
            format!("{} ", range_header(hunk)),
            Style::new().fg(theme.c.hunk_header),
        ),
        decision_label(hunk.decision, theme),
        // The id, for `/reject ID` and `/split ID` typed by hand.
        Span::styled(format!(" · {}", hunk.id), theme.dim()),
    ]);
    if hunk.edited {
        line.push_span(Span::styled(" ✎ yours", Style::new().fg(theme.c.accent)));
    }
    // Why `a` and `A` skip this hunk (`y` accepts it), said where the user decides.
    for caution in &hunk.cautions {
        line.push_span(Span::styled(
            format!(" ⚠ {caution}"),
            Style::new().fg(theme.c.warning),
        ));
    }
    line = Line::from(text::truncate_spans(&line.spans, width));
    if selected {
        line = line.patch_style(Style::new().bg(theme.c.selection));
    }
    line
}

fn diff_line(
    line: &crate::engine::protocol::DiffLine,
    code: &[Span<'static>],
    selected: bool,
    decision: Decision,
    digits: usize,
    theme: &Theme,
) -> Line<'static> {
    let number = |n: Option<usize>| n.map_or(" ".repeat(digits), |n| format!("{n:>digits$}"));
    let (sign, sign_style) = match line.kind {
        LineKind::Added => (
            "+",
            Style::new().fg(theme.c.added).add_modifier(Modifier::BOLD),
        ),
        LineKind::Removed => (
            "-",
            Style::new()
                .fg(theme.c.removed)
                .add_modifier(Modifier::BOLD),
        ),
        LineKind::Context => (" ", Style::new()),
    };
    let mut spans = vec![
        Span::styled(
            if selected { "▌" } else { " " },
            Style::new().fg(theme.c.accent),
        ),
        Span::styled(
            format!("{} {} ", number(line.old_line), number(line.new_line)),
            Style::new().fg(theme.c.line_number),
        ),
        Span::styled(sign, sign_style),
        Span::raw(" "),
    ];
    if decision == Decision::Reject {
        let text: String = code.iter().map(|s| s.content.as_ref()).collect();
        spans.push(Span::styled(
            text,
            Style::new()
                .fg(theme.c.dim)
                .add_modifier(Modifier::CROSSED_OUT),
        ));
    } else if line.kind == LineKind::Context {
        spans.extend(
            code.iter()
                .cloned()
                .map(|s| s.patch_style(Style::new().add_modifier(Modifier::DIM))),
        );
    } else {
        spans.extend(code.iter().cloned());
    }
    Line::from(spans)
}

/// A hunk's highlighting: the new side (context and added lines) and the old side
/// (context and removed lines) each parsed in order, as far as the view has reached.
struct HunkHighlight {
    new: Incremental,
    old: Incremental,
    /// For each hunk line: its side (true: old) and index on that side.
    side: Vec<(bool, usize)>,
    new_lines: Vec<usize>,
    old_lines: Vec<usize>,
    /// Each hunk line as drawn: its tabs expanded (`text::expand_tabs`).
    shown: Vec<crate::engine::protocol::DiffLine>,
    /// For each hunk line, what changed inside it against its pair (`word_diff`), in
    /// the line as drawn.
    words: Vec<Vec<std::ops::Range<usize>>>,
}

/// Lines highlighted ahead of the one asked for, so a scroll does not stop at every row.
const AHEAD: usize = 64;

impl HunkHighlight {
    fn new(
        hunk: &HunkView,
        syntax: Option<&'static syntect::parsing::SyntaxReference>,
        theme: &std::sync::Arc<syntect::highlighting::Theme>,
    ) -> Self {
        let mut side = Vec::with_capacity(hunk.lines.len());
        let mut new_lines = Vec::new();
        let mut old_lines = Vec::new();
        for (i, line) in hunk.lines.iter().enumerate() {
            if line.kind != LineKind::Added {
                old_lines.push(i);
            }
            if line.kind != LineKind::Removed {
                new_lines.push(i);
            }
            side.push(match line.kind {
                LineKind::Removed => (true, old_lines.len() - 1),
                _ => (false, new_lines.len() - 1),
            });
        }
        let shown: Vec<_> = hunk
            .lines
            .iter()
            .map(|l| crate::engine::protocol::DiffLine {
                text: text::expand_tabs(&l.text).into_owned(),
                ..l.clone()
            })
            .collect();
        HunkHighlight {
            new: Incremental::new(syntax, theme),
            old: Incremental::new(syntax, theme),
            side,
            new_lines,
            old_lines,
            words: word_diff::changed_ranges(&shown),
            shown,
        }
    }

    fn spans(&mut self, line: usize) -> &[Span<'static>] {
        let (old, index) = self.side[line];
        let (block, lines) = if old {
            (&mut self.old, &self.old_lines)
        } else {
            (&mut self.new, &self.new_lines)
        };
        if block.lines.len() <= index {
            let upto = (index + AHEAD).min(lines.len());
            let from = block.lines.len();
            block.push_lines(
                lines[from..upto]
                    .iter()
                    .map(|&i| self.shown[i].text.as_str()),
            );
        }
        &block.lines[index]
    }
}

impl Pane for ReviewPane {
    fn title(&self) -> String {
        let t = self.tally();
        if self.proposal.is_some() && t.total() > 0 {
            format!("Review · {} pending", t.pending)
        } else {
            "Review".into()
        }
    }

    fn actions(&self) -> &'static [Action] {
        &[
            Action::Up,
            Action::Down,
            Action::Accept,
            Action::Reject,
            Action::RejectWithReason,
            Action::SplitHunk,
            Action::EditHunk,
            Action::AcceptFile,
            Action::AcceptAll,
            Action::Reset,
            Action::ResetAll,
            Action::Apply,
            Action::Discard,
            Action::NextFile,
            Action::PrevFile,
            Action::ScrollLeft,
            Action::ScrollRight,
            Action::Top,
            Action::Bottom,
            Action::ToggleFailures,
            Action::Zoom,
            Action::Back,
        ]
    }

    fn ask(&self, action: Action) -> Option<String> {
        let t = self.tally();
        (action == Action::Discard && self.is_active()).then(|| {
            format!(
                "discard the proposal of {} (nothing is written)?",
                crate::plural::count(t.pending + t.accepted + t.rejected, "hunk")
            )
        })
    }

    fn on_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        if action == Action::Back {
            cx.effect(Effect::Focus(PaneId::Input));
            return true;
        }
        if action == Action::Zoom {
            self.zoom_flipped = !self.zoom_flipped;
            return true;
        }
        if !self.is_active() {
            // With no hunk to decide on, the notes are the pane: the keys scroll them.
            return self.proposal.is_some() && scroll_notes(&mut self.notes_scroll, action);
        }
        if let Some(at) = &mut self.notes_open {
            // The hunks are out of sight: only the notes' keys act.
            if action == Action::ToggleFailures {
                self.notes_open = None;
                return true;
            }
            return scroll_notes(at, action);
        }
        self.on_hunk_action(action, cx)
    }

    fn scroll(&mut self, lines: i32) {
        let total = self.diff_row_count();
        self.scroll =
            (self.scroll as i64 + lines as i64).clamp(0, total.saturating_sub(1) as i64) as usize;
    }

    fn click(&mut self, row: u16, _cx: &mut Cx<'_>) {
        // The file list starts on the second row.
        let files = self.proposal.as_ref().map_or(0, |p| p.files.len());
        let row = row as usize;
        if (1..=files.min(FILE_ROWS)).contains(&row) {
            let offset = super::keep_visible(0, self.file, files.min(FILE_ROWS));
            let file = offset + row - 1;
            if file < files {
                self.select(file, 0);
            }
        }
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, draw: &Draw<'_>) {
        let theme = draw.theme;
        if area.height == 0 || area.width < 10 {
            return;
        }
        if self.proposal.is_none() || !self.is_active() && self.status.is_some() {
            self.render_status(area, buf, draw);
            return;
        }
        let width = area.width as usize;
        let notes = self.notes(theme, width);
        let files = self.proposal.as_ref().map_or(0, |p| p.files.len());
        if files == 0 {
            // Every block failed: the failures are the review.
            let mut lines = vec![Line::styled(
                "No edit could be applied.",
                Style::new().fg(theme.c.error),
            )];
            lines.extend(notes);
            self.notes_scroll = scrolled(area, buf, &lines, self.notes_scroll, draw);
            return;
        }
        let mut y = area.y;
        row(buf, area, y, &self.summary(theme));
        y += 1;
        if let Some(banner) = &self.banner {
            let (mark, style) = self.landed_mark(theme);
            let banner = text::truncate(&format!("{mark}{banner}"), width);
            let line = Line::styled(banner, style);
            row(buf, area, y, &line);
            y += 1;
        }
        let file_rows = files
            .min(FILE_ROWS)
            .min((area.height as usize).saturating_sub(4) / 3)
            .max(1) as u16;
        let file_rows = file_rows.min(area.bottom().saturating_sub(y));
        self.render_files(Rect::new(area.x, y, area.width, file_rows), buf, draw);
        y += file_rows;
        let hint_rows = u16::from(area.height >= 12);
        if let Some(at) = self.notes_open {
            let label = "─ failed edits and notes ";
            let rule = "─".repeat(width.saturating_sub(text::width(label)));
            row(
                buf,
                area,
                y,
                &Line::styled(format!("{label}{rule}"), theme.dim()),
            );
            y += 1;
            let height = area.bottom().saturating_sub(y + hint_rows);
            let notes_area = Rect::new(area.x, y, area.width, height);
            self.notes_open = Some(scrolled(notes_area, buf, &notes, at, draw));
            if hint_rows > 0 {
                let hint = text::truncate(&notes_keys(draw.keymap), width);
                buf.set_string(area.x, area.bottom() - 1, hint, theme.dim());
            }
            return;
        }
        let note_rows = (notes.len() as u16).min(area.height / 4);
        let diff_height = area.bottom().saturating_sub(y + 1 + note_rows + hint_rows);
        let path = self
            .current_file()
            .map(|f| f.path.clone())
            .unwrap_or_default();
        let sep_label = format!("─ {} ", text::truncate_left(&path, width.saturating_sub(4)));
        let sep = format!(
            "{sep_label}{}",
            "─".repeat(width.saturating_sub(text::width(&sep_label)))
        );
        row(buf, area, y, &Line::styled(sep, theme.dim()));
        y += 1;
        self.render_diff(Rect::new(area.x, y, area.width, diff_height), buf, theme);
        y += diff_height;
        let shown = if note_rows > 0 && notes.len() > note_rows as usize {
            // The last row says what is not drawn, and how to see it.
            let more = notes.len() + 1 - note_rows as usize;
            let mark = format!(
                "… {more} more {}: {} shows every failed edit and note",
                plural::noun_for(more, "line"),
                draw.keymap.describe(Action::ToggleFailures)
            );
            let mark = Line::styled(text::truncate(&mark, width), warning(theme));
            row(buf, area, y + note_rows.saturating_sub(1), &mark);
            note_rows.saturating_sub(1)
        } else {
            note_rows
        };
        for line in notes.iter().take(shown as usize) {
            row(buf, area, y, line);
            y += 1;
        }
        if hint_rows > 0 {
            let k = draw.keymap;
            let hint = format!(
                "{} accept · {} reject · {} file · {} all · {} reset · {} apply · {} back",
                k.describe(Action::Accept),
                k.describe(Action::Reject),
                k.describe(Action::AcceptFile),
                k.describe(Action::AcceptAll),
                k.describe(Action::Reset),
                k.describe(Action::Apply),
                k.describe(Action::Back),
            );
            buf.set_string(
                area.x,
                area.bottom() - 1,
                text::truncate(&hint, width),
                theme.dim(),
            );
        }
    }
}

impl ReviewPane {
    /// A key of the review while its hunks are shown.
    fn on_hunk_action(&mut self, action: Action, cx: &mut Cx<'_>) -> bool {
        match action {
            Action::Up => self.move_hunk(false),
            Action::Down => self.move_hunk(true),
            Action::Top => self.select(0, 0),
            Action::Bottom => {
                let files = self.proposal.as_ref().map_or(0, |p| p.files.len());
                let last = files.saturating_sub(1);
                let hunks = self
                    .proposal
                    .as_ref()
                    .map_or(0, |p| p.files[last].hunks.len());
                self.select(last, hunks.saturating_sub(1));
            }
            Action::NextFile => self.move_file(1),
            Action::PrevFile => self.move_file(-1),
            Action::ScrollLeft => self.hscroll = self.hscroll.saturating_sub(HSCROLL_STEP),
            Action::ScrollRight => {
                let widest = self.current_file().map_or(0, |f| {
                    f.hunks
                        .iter()
                        .flat_map(|h| &h.lines)
                        .map(|l| text::width(&l.text))
                        .max()
                        .unwrap_or(0)
                });
                self.hscroll = (self.hscroll + HSCROLL_STEP).min(widest.saturating_sub(1));
            }
            Action::Accept => self.decide_hunk(Decision::Accept, cx),
            Action::Reject => self.decide_hunk(Decision::Reject, cx),
            Action::RejectWithReason => {
                if let Some(id) = self.current_hunk().map(|h| h.id.clone()) {
                    cx.effect(Effect::Compose(format!("/reject {id} ")));
                }
            }
            Action::SplitHunk => self.split_hunk(cx),
            Action::ToggleFailures if self.has_notes() => self.notes_open = Some(0),
            Action::ToggleFailures => {
                cx.effect(Effect::Flash("no failed edit and no note to show".into()));
            }
            Action::EditHunk => self.edit_hunk(cx),
            Action::Reset => self.decide_hunk(Decision::Pending, cx),
            Action::AcceptFile => self.decide_file(Decision::Accept, cx),
            Action::AcceptAll => self.decide_all(Decision::Accept, cx),
            Action::ResetAll => self.decide_all(Decision::Pending, cx),
            Action::Apply => {
                let t = self.tally();
                if t.accepted == 0 {
                    cx.effect(Effect::Flash(
                        "no hunk accepted: y accepts one, A all; d discards the proposal".into(),
                    ));
                    return true;
                }
                self.status = Some(Status::Applying);
                cx.send(Op::Review(ReviewOp::Apply));
            }
            Action::Discard => {
                self.status = Some(Status::Discarded);
                self.proposal = None;
                cx.send(Op::Review(ReviewOp::Discard));
                cx.effect(Effect::Focus(PaneId::Input));
            }
            _ => return false,
        }
        true
    }
}

/// Draws `lines` in `area` from row `from` (kept so that the last line is on the last
/// row at most); when some do not fit, the last row says how many are below. Returns the
/// row drawn from.
fn scrolled(
    area: Rect,
    buf: &mut Buffer,
    lines: &[Line<'_>],
    from: usize,
    draw: &Draw<'_>,
) -> usize {
    let height = area.height as usize;
    let from = from.min(lines.len().saturating_sub(height));
    let below = lines.len().saturating_sub(from + height);
    let (shown, mark) = match below {
        0 => (height, None),
        n => (height.saturating_sub(1), Some(n + 1)),
    };
    let end = (from + shown).min(lines.len());
    super::draw_lines(area, buf, lines.get(from..end).unwrap_or_default());
    if let (Some(n), true) = (mark, height > 0) {
        let k = draw.keymap;
        let text = format!(
            "… {n} more {} below ({}/{} scroll)",
            plural::noun_for(n, "line"),
            k.describe(Action::Down),
            k.describe(Action::Up)
        );
        let line = Line::styled(
            text::truncate(&text, area.width as usize),
            warning(draw.theme),
        );
        buf.set_line(area.x, area.bottom() - 1, &line, area.width);
    }
    from
}

/// The keys of the review while its notes take the pane.
pub(crate) fn notes_keys(k: &Keymap) -> String {
    format!(
        "{}/{} scroll · {} back to the hunks · {} back",
        k.describe(Action::Down),
        k.describe(Action::Up),
        k.describe(Action::ToggleFailures),
        k.describe(Action::Back),
    )
}

/// Moves `at`, the first row of notes shown, for a scrolling key; false for another key.
fn scroll_notes(at: &mut usize, action: Action) -> bool {
    match action {
        Action::Up => *at = at.saturating_sub(1),
        Action::Down => *at = at.saturating_add(1),
        Action::Top => *at = 0,
        Action::Bottom => *at = usize::MAX,
        _ => return false,
    }
    true
}

fn warning(theme: &Theme) -> Style {
    Style::new().fg(theme.c.warning)
}

/// Columns one sideways scroll moves.
const HSCROLL_STEP: usize = 8;

/// Files listed above the diff at most.
const FILE_ROWS: usize = 6;

/// Draws `line` on row `y` when that row is inside `area`: in a pane a few rows high,
/// the summary, banner and separator alone may not fit.
fn row(buf: &mut Buffer, area: Rect, y: u16, line: &Line<'_>) {
    if (area.top()..area.bottom()).contains(&y) {
        buf.set_line(area.x, y, line, area.width);
    }
}

/// A one-line account of an `Applied` event.
pub(crate) fn applied_summary(
    files: &[String],
    accepted: usize,
    rejected: usize,
    commit: Option<&str>,
    message: &str,
) -> String {
    let mut s = format!(
        "Applied {} {} to {}",
        thousands(accepted),
        plural::noun_for(accepted, "hunk"),
        plural::count(files.len(), "file")
    );
    if rejected > 0 {
        s.push_str(&format!(", {rejected} not applied"));
    }
    match commit {
        Some(id) => {
            let short: String = id.chars().take(7).collect();
            s.push_str(&format!(" · commit {short} {message}"));
        }
        None if !message.is_empty() => s.push_str(&format!(" · {message}")),
        None => s.push_str(" · not committed"),
    }
    s
}
