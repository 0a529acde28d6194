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
//! Packing adds up per-file counts; the final request of every call is then counted
//! whole, and lists shrink (or, in a pathological case, the last file goes) until it
//! fits, so `ReviewCall::tokens <= budget - OUTPUT_BUFFER_HARD` always holds.

use std::cmp::Reverse;
use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use super::ReviewError;
use super::change::{Body, ChangeSet, FileChange, FileStatus, TextDiff};
use super::clip::clip_to_tokens;
use super::extend::{ContextOptions, extend};
use super::lang::{Language, Noise};
use super::prompt::{ADDED_TITLE, DELETED_TITLE, MODIFIED_TITLE, preamble, system_prompt};
use super::render::section;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanMode {
    /// Everything, with extra context.
    Extended,
    /// Cut down to fit the budget.
    Compressed,
}

/// What will be sent, and what happened to every changed file.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct FilePlan {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub language: Language,
    pub added: usize,
    pub removed: usize,
    /// Tokens of the file's section in the form the plan used (0 when never rendered).
    pub tokens: usize,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// Its diff is in `calls[call]`.
    Included { call: usize },
    /// Only named in a list (or not even that, if the list was clipped).
    Omitted { reason: OmitReason },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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
    let bare = planner.request_tokens(
        &planner.compressed_preamble(opts.max_calls, opts.max_calls),
        "",
    );
    if bare + OUTPUT_BUFFER_HARD > opts.budget {
        return Err(ReviewError::BudgetTooSmall {
            budget: opts.budget,
            prompt: bare,
            reserve: OUTPUT_BUFFER_HARD,
        });
    }
    Ok(match planner.extended() {
        Some(plan) => plan,
        None => planner.compressed(),
    })
}

struct Planner<'a> {
    changes: &'a ChangeSet,
    counter: &'a TokenCounter,
    opts: &'a ReviewOptions,
    system: String,
    /// Per file: its language and that language's rank (0 = most changed files).
    langs: Vec<(Language, usize)>,
}

/// A file's section in the compressed form, or why it has none.
enum Compressed {
    Section { text: String, tokens: usize },
    Omitted(OmitReason),
}

impl<'a> Planner<'a> {
    fn new(changes: &'a ChangeSet, counter: &'a TokenCounter, opts: &'a ReviewOptions) -> Self {
        let langs: Vec<Language> = changes
            .files
            .iter()
            .map(|f| Language::of(&f.path))
            .collect();
        let rank = language_ranks(&langs);
        Planner {
            changes,
            counter,
            opts,
            system: system_prompt(opts.line_numbers),
            langs: langs.into_iter().map(|l| (l, rank[&l])).collect(),
        }
    }

    fn files(&self) -> &'a [FileChange] {
        &self.changes.files
    }

    fn compressed_preamble(&self, part: usize, of: usize) -> String {
        let part = (of > 1).then_some((part, of));
        preamble(&self.changes.description, PlanMode::Compressed, part)
    }

    /// Exact tokens of the request made of the system prompt and this user message.
    fn request_tokens(&self, head: &str, body: &str) -> usize {
        self.counter
            .count_request([self.system.as_str(), &user_message(head, body)])
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
        let head = preamble(&self.changes.description, PlanMode::Extended, None);
        let mut total = self.request_tokens(&head, "");
        let mut order: Vec<usize> = (0..self.files().len()).collect();
        order.sort_by(|&a, &b| {
            (self.langs[a].1, &self.files()[a].path).cmp(&(self.langs[b].1, &self.files()[b].path))
        });
        let mut sections = Vec::new();
        let mut shown = Vec::new();
        let mut files = Vec::with_capacity(order.len());
        let mut omitted = Vec::new();
        for i in order {
            let f = &self.files()[i];
            let reason = match &f.body {
                Body::Text(d) if !d.hunks.is_empty() => {
                    let hunks = extend(d, self.langs[i].0, self.opts.context);
                    let text = section(f, d, &hunks, self.opts.line_numbers);
                    let tokens = self.counter.count(&text);
                    total += tokens;
                    if total > limit {
                        return None;
                    }
                    sections.push(text);
                    shown.push(f.path.clone());
                    files.push(self.file_plan(i, tokens, Outcome::Included { call: 0 }));
                    continue;
                }
                Body::Text(_) => OmitReason::Unchanged,
                Body::Binary => OmitReason::Binary,
                Body::Submodule => OmitReason::Submodule,
            };
            omitted.push((i, reason));
            files.push(self.file_plan(i, 0, Outcome::Omitted { reason }));
        }
        let lists = self.lists(&omitted, usize::MAX);
        let diff = join_sections(sections.iter().map(String::as_str));
        let call = self.call(&head, &diff, &lists, shown);
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
    fn compressed(&self) -> ReviewPlan {
        let prepared: Vec<Compressed> = (0..self.files().len())
            .into_par_iter()
            .map(|i| self.compress(i))
            .collect();
        let tokens = |i: usize| match &prepared[i] {
            Compressed::Section { tokens, .. } => *tokens,
            Compressed::Omitted(_) => 0,
        };
        let mut order: Vec<usize> = (0..self.files().len()).collect();
        order.sort_by(|&a, &b| {
            let key = |i: usize| (self.langs[i].1, Reverse(tokens(i)), &self.files()[i].path);
            key(a).cmp(&key(b))
        });

        let max_calls = self.opts.max_calls;
        let base = self.request_tokens(&self.compressed_preamble(max_calls, max_calls), "");
        let mut remaining: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| matches!(prepared[i], Compressed::Section { .. }))
            .collect();
        let mut chunks: Vec<Vec<usize>> = Vec::new();
        while chunks.len() < max_calls {
            let chunk = self.pack(&mut remaining, base, &tokens);
            if chunk.is_empty() && !chunks.is_empty() {
                break;
            }
            chunks.push(chunk);
            if remaining.is_empty() {
                break;
            }
        }

        loop {
            let call_of: HashMap<usize, usize> = chunks
                .iter()
                .enumerate()
                .flat_map(|(c, chunk)| chunk.iter().map(move |&i| (i, c)))
                .collect();
            let omitted: Vec<(usize, OmitReason)> = order
                .iter()
                .filter(|i| !call_of.contains_key(i))
                .map(|&i| match &prepared[i] {
                    Compressed::Omitted(r) => (i, *r),
                    Compressed::Section { .. } => (i, OmitReason::Budget),
                })
                .collect();
            let files: Vec<FilePlan> = order
                .iter()
                .map(|&i| {
                    let outcome = match (call_of.get(&i), &prepared[i]) {
                        (Some(&call), _) => Outcome::Included { call },
                        (None, Compressed::Omitted(reason)) => Outcome::Omitted { reason: *reason },
                        (None, Compressed::Section { .. }) => Outcome::Omitted {
                            reason: OmitReason::Budget,
                        },
                    };
                    self.file_plan(i, tokens(i), outcome)
                })
                .collect();
            let mut calls = Vec::with_capacity(chunks.len());
            let mut overflowing = None;
            for (c, chunk) in chunks.iter().enumerate() {
                let head = self.compressed_preamble(c + 1, chunks.len());
                let diff = join_sections(chunk.iter().filter_map(|&i| match &prepared[i] {
                    Compressed::Section { text, .. } => Some(text.as_str()),
                    Compressed::Omitted(_) => None,
                }));
                let paths = chunk
                    .iter()
                    .map(|&i| self.files()[i].path.clone())
                    .collect();
                match self.fitted_call(&head, &diff, &omitted, paths) {
                    Some(call) => calls.push(call),
                    None => {
                        overflowing = Some(c);
                        break;
                    }
                }
            }
            match overflowing {
                // The per-file sums undercounted the joined text: give up the call's
                // last (smallest in its language) file and build again.
                Some(c) => {
                    chunks[c].pop();
                }
                None => {
                    return ReviewPlan {
                        description: self.changes.description.clone(),
                        mode: PlanMode::Compressed,
                        budget: self.opts.budget,
                        estimated: self.counter.is_estimate(),
                        calls,
                        files,
                    };
                }
            }
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
        let hunks: Vec<_> = d
            .hunks
            .iter()
            .filter(|h| !h.only_removes())
            .cloned()
            .collect();
        if hunks.is_empty() {
            return Compressed::Omitted(OmitReason::OnlyRemovals);
        }
        let text = section(f, d, &hunks, self.opts.line_numbers);
        let tokens = self.counter.count(&text);
        Compressed::Section { text, tokens }
    }

    /// PR-Agent's `generate_full_patch`: takes, in order, every remaining file that fits
    /// under the soft buffer, and stops once the hard buffer is reached.
    fn pack(
        &self,
        remaining: &mut Vec<usize>,
        base: usize,
        tokens: &dyn Fn(usize) -> usize,
    ) -> Vec<usize> {
        let soft = self.opts.budget.saturating_sub(OUTPUT_BUFFER_SOFT);
        let hard = self.opts.budget.saturating_sub(OUTPUT_BUFFER_HARD);
        let mut total = base;
        let mut taken = Vec::new();
        remaining.retain(|&i| {
            if total > hard || total + tokens(i) > soft {
                return true;
            }
            total += tokens(i);
            taken.push(i);
            false
        });
        taken
    }

    /// A call whose lists are clipped until the whole request fits above the hard
    /// buffer; `None` if even the diff alone does not.
    fn fitted_call(
        &self,
        head: &str,
        diff: &str,
        omitted: &[(usize, OmitReason)],
        files: Vec<String>,
    ) -> Option<ReviewCall> {
        let limit = self.opts.budget.saturating_sub(OUTPUT_BUFFER_HARD);
        let without_lists = self.request_tokens(head, diff);
        if without_lists > limit {
            return None;
        }
        let mut allowance = limit - without_lists;
        loop {
            let lists = self.lists(omitted, allowance);
            let call = self.call(head, diff, &lists, files.clone());
            if call.tokens <= limit {
                return Some(call);
            }
            if lists.is_empty() {
                return None;
            }
            allowance = allowance.saturating_sub(call.tokens - limit);
        }
    }

    fn call(&self, head: &str, diff: &str, lists: &str, files: Vec<String>) -> ReviewCall {
        let body = match (diff.is_empty(), lists.is_empty()) {
            (_, true) => diff.to_string(),
            (true, false) => lists.to_string(),
            (false, false) => format!("{diff}\n{lists}"),
        };
        let user = user_message(head, &body);
        let tokens = self.counter.count_request([self.system.as_str(), &user]);
        let diff_tokens = self.counter.count(&user);
        ReviewCall {
            messages: vec![Message::system(self.system.clone()), Message::user(user)],
            tokens,
            diff_tokens,
            files,
        }
    }

    /// The lists of files not shown, each clipped to what is left of `allowance`.
    fn lists(&self, omitted: &[(usize, OmitReason)], allowance: usize) -> String {
        let mut out = String::new();
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
                if !statuses.contains(&f.status) {
                    continue;
                }
                if text.is_empty() {
                    text = format!("{title}\n");
                }
                text.push_str(&list_item(f, reason));
            }
            if text.is_empty() {
                continue;
            }
            let Some(text) = clip_to_tokens(&text, left.saturating_sub(2), self.counter) else {
                break;
            };
            left = left.saturating_sub(self.counter.count(&text) + 2);
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
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

/// The preamble, a blank line, and the diff with its lists.
fn user_message(head: &str, body: &str) -> String {
    if body.is_empty() {
        head.to_string()
    } else {
        format!("{head}\n\n{body}")
    }
}

/// File sections separated by a blank line (each section ends with a newline).
fn join_sections<'s>(sections: impl Iterator<Item = &'s str>) -> String {
    let mut out = String::new();
    for s in sections {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(s);
    }
    out
}

/// Rank of each language: most changed files first (ties by name), `Other` last.
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

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
