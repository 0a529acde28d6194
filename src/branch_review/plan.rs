//! Fit or compress (PR-Agent's `get_pr_diff`), with real token counts throughout.
//!
//! 1. Extended: every file with extra context. If the whole request plus the soft output
//!    buffer fits the budget, that is the plan: one call.
//! 2. Otherwise compressed: git's 3 context lines only; hunks that only remove lines are
//!    dropped; deleted files, lockfiles, minified files, source maps, binary-like
//!    extensions, binaries, submodules and pure renames are only named. The remaining
//!    files are ordered by language (most changed files first, `Other` last) and, within
//!    a language, by tokens, largest first; each call takes every file that still fits
//!    under the soft buffer, until the hard buffer is reached (up to `max_calls` calls).
//!    Files in no call are named in lists (added, modified, deleted) appended to each
//!    call, each list clipped to what is left above the hard buffer.
//!
//! The user message is built from pieces whose counts add up exactly (see `Piece`), so
//! packing decisions use exact totals and `ReviewCall::tokens`, the count of the whole
//! request, never exceeds `budget - OUTPUT_BUFFER_HARD` in a compressed plan.

use derive_visitor::DriveMut;
use std::cmp::Reverse;
use std::collections::HashMap;

use rayon::prelude::*;

use crate::tokens::clip::clip_head;
use crate::tokens::thousands;

use super::change::{Body, ChangeSet, FileChange, FileStatus, TextDiff};
use super::extend::{ContextOptions, extend};
use super::lang::{Language, Noise};
use super::mode::PlanMode;
use super::prompt::{ADDED_TITLE, DELETED_TITLE, MODIFIED_TITLE, preamble, system_prompt};
use super::render::section;
use super::{ReviewError, TRUNCATED};
use crate::llm::Message;
use crate::tokens::TokenCounter;

/// Tokens kept free for the reply when deciding whether a file still fits.
pub const OUTPUT_BUFFER_SOFT: usize = 1500;
/// Tokens always left free for the reply: nothing is added past this line.
pub const OUTPUT_BUFFER_HARD: usize = 1000;

/// How to build a review request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewOptions {
    /// Tokens the whole request (every message, with the chat format's overhead) may
    /// take, output buffer included.
    pub budget: usize,
    /// Extra context for the extended diff (a compressed diff has none).
    pub context: ContextOptions,
    /// PR-Agent's `__new hunk__` / `__old hunk__` format.
    pub line_numbers: bool,
    /// At most this many requests when the compressed diff does not fit in one.
    pub max_calls: usize,
}

/// What will be sent, and what happened to every changed file.
#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct ReviewPlan {
    pub description: String,
    pub mode: PlanMode,
    pub budget: usize,
    /// Counts are estimates: the model's own tokenizer is not the one counted with.
    pub estimated: bool,
    /// One request each; always at least one.
    pub calls: Vec<ReviewCall>,
    /// Every changed file, in the order the plan considered them.
    pub files: Vec<FilePlan>,
}

/// One request of a review.
#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct ReviewCall {
    /// System prompt, then the user message holding the diff.
    pub messages: Vec<Message>,
    /// The whole request as the API counts it (`TokenCounter::count_request`).
    pub tokens: usize,
    /// The user message's content alone: the review diff's share of the budget.
    pub diff_tokens: usize,
    /// Files whose diff this call shows, in order.
    pub files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct FilePlan {
    pub path: String,
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub language: Language,
    pub added: usize,
    pub removed: usize,
    /// Tokens of the file's section in the form the plan used (0 when never rendered).
    pub tokens: usize,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum Outcome {
    /// Its diff is in `calls[call]`.
    Included { call: usize },
    /// Only named in a list (or not even that, if the list was clipped).
    Omitted { reason: OmitReason },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, DriveMut)]
pub enum OmitReason {
    /// No room left in any call.
    Budget,
    /// A deleted file, in a compressed review.
    Deleted,
    /// Every hunk only removes lines, in a compressed review.
    OnlyRemovals,
    /// Renamed (or its mode changed) without a change to its text.
    Unchanged,
    Binary,
    Submodule,
    Lockfile,
    Minified,
    SourceMap,
    BinaryLike,
}

impl OmitReason {
    /// The note after the file's name in a list (the system prompt explains each).
    fn note(self) -> Option<&'static str> {
        match self {
            OmitReason::Budget | OmitReason::Deleted => None,
            OmitReason::OnlyRemovals => Some("only removals"),
            OmitReason::Unchanged => Some("content unchanged"),
            OmitReason::Binary => Some("binary"),
            OmitReason::Submodule => Some("submodule"),
            OmitReason::Lockfile => Some(Noise::Lockfile.label()),
            OmitReason::Minified => Some(Noise::Minified.label()),
            OmitReason::SourceMap => Some(Noise::SourceMap.label()),
            OmitReason::BinaryLike => Some(Noise::BinaryLike.label()),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            OmitReason::Budget => "no room",
            OmitReason::Deleted => "deleted",
            other => other.note().unwrap_or("omitted"),
        }
    }
}

impl From<Noise> for OmitReason {
    fn from(n: Noise) -> Self {
        match n {
            Noise::Lockfile => OmitReason::Lockfile,
            Noise::Minified => OmitReason::Minified,
            Noise::SourceMap => OmitReason::SourceMap,
            Noise::BinaryLike => OmitReason::BinaryLike,
        }
    }
}

/// Builds the review requests for `changes` within `opts.budget`, counting with
/// `counter` (the model's). Fails only when the budget cannot hold the prompt itself.
pub fn plan(
    changes: &ChangeSet,
    counter: &TokenCounter,
    opts: &ReviewOptions,
) -> Result<ReviewPlan, ReviewError> {
    if opts.max_calls == 0 {
        return Err(ReviewError::NoCalls);
    }
    let planner = Planner::new(changes, counter, opts);
    let bare = planner.empty_request
        + planner
            .piece(planner.compressed_preamble(opts.max_calls, opts.max_calls))
            .tokens;
    if bare + OUTPUT_BUFFER_HARD > opts.budget {
        return Err(ReviewError::BudgetTooSmall {
            budget: opts.budget,
            prompt: bare,
            reserve: OUTPUT_BUFFER_HARD,
        });
    }
    let compressed: Vec<Compressed> = (0..changes.files.len())
        .into_par_iter()
        .map(|i| planner.compress(i))
        .collect();
    // An extended section holds every line of its compressed one and more, so when the
    // compressed sections alone are well over the limit (the margin covers hunk headers
    // whose numbers change), the extended diff cannot fit and is not even rendered.
    let floor: usize = compressed.iter().map(Compressed::tokens).sum();
    let limit = opts.budget.saturating_sub(OUTPUT_BUFFER_SOFT);
    let extended = (floor <= limit.saturating_add(limit / 8))
        .then(|| planner.extended())
        .flatten();
    Ok(extended.unwrap_or_else(|| planner.compressed(compressed)))
}

/// A piece of the user message with its token count. Pieces end with a newline and
/// start with a character that is neither whitespace nor `/`, so no pre-token of either
/// tiktoken encoding spans two of them: the count of their concatenation is exactly the
/// sum of their counts, and packing can add counts instead of recounting the message.
struct Piece {
    text: String,
    tokens: usize,
}

/// A file's compressed section, or why it has none.
enum Compressed {
    Section(Piece),
    Omitted(OmitReason),
}

impl Compressed {
    fn tokens(&self) -> usize {
        match self {
            Compressed::Section(p) => p.tokens,
            Compressed::Omitted(_) => 0,
        }
    }
}

struct Planner<'a> {
    changes: &'a ChangeSet,
    counter: &'a TokenCounter,
    opts: &'a ReviewOptions,
    system: String,
    /// The request with an empty user message: system prompt and framing.
    empty_request: usize,
    /// Per file: its language and that language's rank (0 = most changed files).
    langs: Vec<(Language, usize)>,
}

impl<'a> Planner<'a> {
    fn new(changes: &'a ChangeSet, counter: &'a TokenCounter, opts: &'a ReviewOptions) -> Self {
        let langs: Vec<Language> = changes
            .files
            .iter()
            .map(|f| Language::of(&f.path))
            .collect();
        let rank = language_ranks(&langs);
        let system = system_prompt(opts.line_numbers);
        Planner {
            changes,
            counter,
            opts,
            empty_request: counter.count_request([system.as_str(), ""]),
            system,
            langs: langs.into_iter().map(|l| (l, rank[&l])).collect(),
        }
    }

    fn files(&self) -> &'a [FileChange] {
        &self.changes.files
    }

    /// `text` made a piece: trailing newlines normalized to one blank line.
    fn piece(&self, text: String) -> Piece {
        let mut text = text;
        let kept = text.trim_end_matches('\n').len();
        crate::chars::truncate(&mut text, kept);
        text.push_str("\n\n");
        Piece {
            tokens: self.counter.count(&text),
            text,
        }
    }

    fn compressed_preamble(&self, part: usize, of: usize) -> String {
        let part = (of > 1).then_some((part, of));
        preamble(&self.changes.description, PlanMode::Compressed, part)
    }

    fn file_plan(&self, i: usize, tokens: usize, outcome: Outcome) -> FilePlan {
        let f = &self.files()[i];
        let (added, removed) = match &f.body {
            Body::Text(d) => d.line_counts(),
            _ => (0, 0),
        };
        FilePlan {
            path: f.path.clone(),
            old_path: f.old_path.clone(),
            status: f.status,
            language: self.langs[i].0,
            added,
            removed,
            tokens,
            outcome,
        }
    }

    /// The complete, extended diff in one call, if it fits under the soft buffer.
    fn extended(&self) -> Option<ReviewPlan> {
        let limit = self.opts.budget.saturating_sub(OUTPUT_BUFFER_SOFT);
        let mut order: Vec<usize> = (0..self.files().len()).collect();
        order.sort_by(|&a, &b| {
            (self.langs[a].1, &self.files()[a].path).cmp(&(self.langs[b].1, &self.files()[b].path))
        });
        let rendered: Vec<Result<Piece, OmitReason>> = order
            .par_iter()
            .map(|&i| {
                let f = &self.files()[i];
                match &f.body {
                    Body::Text(d) if !d.hunks.is_empty() => {
                        let hunks = extend(d, self.langs[i].0, self.opts.context);
                        Ok(self.piece(section(f, d, &hunks, self.opts.line_numbers)))
                    }
                    Body::Text(_) => Err(OmitReason::Unchanged),
                    Body::Binary => Err(OmitReason::Binary),
                    Body::Submodule => Err(OmitReason::Submodule),
                }
            })
            .collect();
        let mut sections = Vec::new();
        let mut files = Vec::with_capacity(order.len());
        let mut omitted = Vec::new();
        for (&i, r) in order.iter().zip(&rendered) {
            match r {
                Ok(piece) => {
                    sections.push((i, piece));
                    files.push(self.file_plan(i, piece.tokens, Outcome::Included { call: 0 }));
                }
                Err(reason) => {
                    omitted.push((i, *reason));
                    files.push(self.file_plan(i, 0, Outcome::Omitted { reason: *reason }));
                }
            }
        }
        let head = self.piece(preamble(
            &self.changes.description,
            PlanMode::Extended,
            None,
        ));
        let lists = self.lists(&omitted, usize::MAX);
        let call = self.call(&head, &sections, &lists);
        (call.tokens <= limit).then(|| ReviewPlan {
            description: self.changes.description.clone(),
            mode: PlanMode::Extended,
            budget: self.opts.budget,
            estimated: self.counter.is_estimate(),
            calls: vec![call],
            files,
        })
    }

    /// The compressed diff, packed into at most `max_calls` calls.
    fn compressed(&self, prepared: Vec<Compressed>) -> ReviewPlan {
        let mut order: Vec<usize> = (0..self.files().len()).collect();
        order.sort_by(|&a, &b| {
            let key = |i: usize| {
                (
                    self.langs[i].1,
                    Reverse(prepared[i].tokens()),
                    &self.files()[i].path,
                )
            };
            key(a).cmp(&key(b))
        });
        let max_calls = self.opts.max_calls;
        let heads: Vec<Piece> = (1..=max_calls)
            .map(|part| self.piece(self.compressed_preamble(part, max_calls)))
            .collect();
        let mut remaining: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| matches!(prepared[i], Compressed::Section(_)))
            .collect();
        let mut chunks: Vec<Vec<usize>> = Vec::new();
        while chunks.len() < max_calls {
            let base = self.empty_request + heads[chunks.len()].tokens;
            let chunk = self.pack(&mut remaining, base, &prepared);
            if chunk.is_empty() && !chunks.is_empty() {
                break;
            }
            chunks.push(chunk);
            if remaining.is_empty() {
                break;
            }
        }

        let mut call_of = vec![None; self.files().len()];
        for (c, chunk) in chunks.iter().enumerate() {
            for &i in chunk {
                call_of[i] = Some(c);
            }
        }
        let reason = |i: usize| match &prepared[i] {
            Compressed::Omitted(r) => *r,
            Compressed::Section(_) => OmitReason::Budget,
        };
        let omitted: Vec<(usize, OmitReason)> = order
            .iter()
            .filter(|&&i| call_of[i].is_none())
            .map(|&i| (i, reason(i)))
            .collect();
        let files = order
            .iter()
            .map(|&i| {
                let outcome = match call_of[i] {
                    Some(call) => Outcome::Included { call },
                    None => Outcome::Omitted { reason: reason(i) },
                };
                self.file_plan(i, prepared[i].tokens(), outcome)
            })
            .collect();
        let n = chunks.len();
        let calls = chunks
            .iter()
            .enumerate()
            .map(|(c, chunk)| {
                // The preamble names the part only once the number of calls is known.
                let head = if n == max_calls {
                    &heads[c]
                } else {
                    &self.piece(self.compressed_preamble(c + 1, n))
                };
                let sections: Vec<(usize, &Piece)> = chunk
                    .iter()
                    .filter_map(|&i| match &prepared[i] {
                        Compressed::Section(p) => Some((i, p)),
                        Compressed::Omitted(_) => None,
                    })
                    .collect();
                let used = self.empty_request
                    + head.tokens
                    + sections.iter().map(|(_, p)| p.tokens).sum::<usize>();
                let hard = self.opts.budget.saturating_sub(OUTPUT_BUFFER_HARD);
                let lists = self.lists(&omitted, hard.saturating_sub(used));
                self.call(head, &sections, &lists)
            })
            .collect();
        ReviewPlan {
            description: self.changes.description.clone(),
            mode: PlanMode::Compressed,
            budget: self.opts.budget,
            estimated: self.counter.is_estimate(),
            calls,
            files,
        }
    }

    fn compress(&self, i: usize) -> Compressed {
        let f = &self.files()[i];
        let d: &TextDiff = match &f.body {
            Body::Binary => return Compressed::Omitted(OmitReason::Binary),
            Body::Submodule => return Compressed::Omitted(OmitReason::Submodule),
            Body::Text(_) if f.status == FileStatus::Deleted => {
                return Compressed::Omitted(OmitReason::Deleted);
            }
            Body::Text(d) => d,
        };
        if let Some(noise) = Noise::of(&f.path) {
            return Compressed::Omitted(noise.into());
        }
        if d.hunks.is_empty() {
            return Compressed::Omitted(OmitReason::Unchanged);
        }
        let hunks = d.adding_hunks();
        if hunks.is_empty() {
            return Compressed::Omitted(OmitReason::OnlyRemovals);
        }
        Compressed::Section(self.piece(section(f, d, &hunks, self.opts.line_numbers)))
    }

    /// PR-Agent's `generate_full_patch`: takes, in order, every remaining file that fits
    /// under the soft buffer, and stops once the hard buffer is reached.
    fn pack(&self, remaining: &mut Vec<usize>, base: usize, prepared: &[Compressed]) -> Vec<usize> {
        let soft = self.opts.budget.saturating_sub(OUTPUT_BUFFER_SOFT);
        let hard = self.opts.budget.saturating_sub(OUTPUT_BUFFER_HARD);
        let mut total = base;
        let mut taken = Vec::new();
        remaining.retain(|&i| {
            let tokens = prepared[i].tokens();
            if total > hard || total + tokens > soft {
                return true;
            }
            total += tokens;
            taken.push(i);
            false
        });
        taken
    }

    /// One request: the preamble, the file sections, the lists. Its token count is the
    /// sum of its pieces' (checked against a full count in debug builds).
    fn call(&self, head: &Piece, sections: &[(usize, &Piece)], lists: &[Piece]) -> ReviewCall {
        let pieces = || {
            std::iter::once(head)
                .chain(sections.iter().map(|(_, p)| *p))
                .chain(lists)
        };
        let mut user = String::with_capacity(pieces().map(|p| p.text.len()).sum());
        for p in pieces() {
            user.push_str(&p.text);
        }
        let diff_tokens: usize = pieces().map(|p| p.tokens).sum();
        let tokens = self.empty_request + diff_tokens;
        debug_assert_eq!(
            tokens,
            self.counter.count_request([self.system.as_str(), &user]),
            "pieces must count additively"
        );
        ReviewCall {
            messages: vec![Message::system(self.system.clone()), Message::user(user)],
            tokens,
            diff_tokens,
            files: sections
                .iter()
                .map(|(i, _)| self.files()[*i].path.clone())
                .collect(),
        }
    }

    /// The lists of files not shown (added, modified, deleted), each clipped to what is
    /// left of `allowance`.
    fn lists(&self, omitted: &[(usize, OmitReason)], allowance: usize) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut left = allowance;
        for (title, statuses) in [
            (ADDED_TITLE, &[FileStatus::Added][..]),
            (
                MODIFIED_TITLE,
                &[FileStatus::Modified, FileStatus::Renamed][..],
            ),
            (DELETED_TITLE, &[FileStatus::Deleted][..]),
        ] {
            let mut text = String::new();
            for &(i, reason) in omitted {
                let f = &self.files()[i];
                if statuses.contains(&f.status) {
                    if text.is_empty() {
                        text = format!("{title}\n");
                    }
                    text.push_str(&list_item(f, reason));
                }
            }
            if text.is_empty() {
                continue;
            }
            // The piece's blank line may cost a token more than the clipped text.
            let mut max = left;
            let piece = loop {
                let Some(clipped) = clip_head(&text, self.counter, max, TRUNCATED) else {
                    break None;
                };
                let piece = self.piece(clipped.text);
                if piece.tokens <= left {
                    break Some(piece);
                }
                max = max.saturating_sub(piece.tokens - left);
            };
            let Some(piece) = piece else { continue };
            left -= piece.tokens;
            out.push(piece);
        }
        out
    }
}

/// `- path (notes)` and a newline.
fn list_item(f: &FileChange, reason: OmitReason) -> String {
    let mut notes = Vec::new();
    if let Some(old) = &f.old_path {
        notes.push(format!("renamed from '{old}'"));
    }
    notes.extend(reason.note().map(str::to_string));
    if notes.is_empty() {
        format!("- {}\n", f.path)
    } else {
        format!("- {} ({})\n", f.path, notes.join(", "))
    }
}

/// Rank of each language: most changed files first (ties in `Language` order), `Other`
/// last.
fn language_ranks(langs: &[Language]) -> HashMap<Language, usize> {
    let mut counts: HashMap<Language, usize> = HashMap::new();
    for &l in langs {
        *counts.entry(l).or_default() += 1;
    }
    let mut ordered: Vec<(Language, usize)> = counts.into_iter().collect();
    ordered.sort_by_key(|&(l, n)| (l == Language::Other, Reverse(n), l));
    ordered
        .into_iter()
        .enumerate()
        .map(|(rank, (l, _))| (l, rank))
        .collect()
}

impl ReviewPlan {
    /// Files whose diff is in some call.
    pub fn included(&self) -> impl Iterator<Item = &FilePlan> {
        self.files
            .iter()
            .filter(|f| matches!(f.outcome, Outcome::Included { .. }))
    }

    /// Files only named in lists.
    pub fn omitted(&self) -> impl Iterator<Item = (&FilePlan, OmitReason)> {
        self.files.iter().filter_map(|f| match f.outcome {
            Outcome::Omitted { reason } => Some((f, reason)),
            Outcome::Included { .. } => None,
        })
    }

    /// A few lines for a person: what is compared, how the diff was fitted, tokens used
    /// of the budget per call, files included and omitted (by reason).
    pub fn summary(&self) -> String {
        let approx = if self.estimated { "≈" } else { "" };
        let (added, removed) = self
            .files
            .iter()
            .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
        let mut s = format!(
            "review: {}\nchanged: {}, +{} -{} lines\n",
            self.description,
            files(self.files.len()),
            thousands(added),
            thousands(removed)
        );
        s.push_str(match self.mode {
            PlanMode::Extended => "mode: extended (complete, with extra context)\n",
            PlanMode::Compressed => {
                "mode: compressed (the extended diff does not fit; git context only, \
                 removal-only hunks dropped)\n"
            }
        });
        let n = self.calls.len();
        for (i, call) in self.calls.iter().enumerate() {
            let label = if n > 1 {
                format!("call {} of {n}", i + 1)
            } else {
                "tokens".to_string()
            };
            s.push_str(&format!(
                "{label}: {approx}{} of {} (diff {approx}{}), {}\n",
                thousands(call.tokens),
                thousands(self.budget),
                thousands(call.diff_tokens),
                files(call.files.len())
            ));
        }
        let mut reasons: Vec<(OmitReason, usize)> = Vec::new();
        for (_, r) in self.omitted() {
            match reasons.iter_mut().find(|(seen, _)| *seen == r) {
                Some((_, count)) => *count += 1,
                None => reasons.push((r, 1)),
            }
        }
        let omitted: usize = reasons.iter().map(|(_, n)| n).sum();
        s.push_str(&format!("included: {}", files(self.included().count())));
        if self.mode == PlanMode::Compressed {
            s.push_str(" (compressed)");
        }
        s.push_str(&format!("; omitted: {omitted}"));
        if !reasons.is_empty() {
            let parts: Vec<String> = reasons
                .iter()
                .map(|(r, n)| format!("{} {n}", r.label()))
                .collect();
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s.push('\n');
        s
    }
}

fn files(n: usize) -> String {
    if n == 1 {
        "1 file".to_string()
    } else {
        format!("{} files", thousands(n))
    }
}
