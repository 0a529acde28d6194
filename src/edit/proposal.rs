//! All edits of one reply applied in memory: each file's original and proposed content,
//! split into hunks the user accepts or rejects one by one. Nothing here writes.
//!
//! Hunk ids are a short hash of the hunk's content (its file, removed and added lines),
//! not its position. So an id shown by `tern apply --dry-run` cannot silently select a
//! different hunk when the file changed before `--accept` (it is simply unknown), and
//! when a file changed on disk during review and is re-diffed, every hunk that did not
//! change keeps its id and the decision already made on it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp};

use super::error::{EditError, Problem};
use super::filename::FileSet;
use super::matching::{Doc, Failure, Occurrence};
use super::parse::{Edit, EditKind};
use super::safety::{self, Target};
use super::scan::ShellSuggestion;
use super::text::{Binary, FileText};
use super::workspace::Workspace;

/// Unchanged lines shown around a hunk; changes closer than twice this are one hunk,
/// as in `git diff`, so hunks never overlap on screen.
pub const CONTEXT: usize = 3;

/// The most time one file's diff may take before it settles for a coarser result.
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

/// A hunk's id: 28 bits of a hash of its content, shown as 7 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HunkId(u32);

impl fmt::Display for HunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:07x}", self.0)
    }
}

impl FromStr for HunkId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.len() == 7 && s.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(s, 16)
                .map(HunkId)
                .map_err(|e| e.to_string())
        } else {
            Err(format!(
                "{s:?} is not a hunk id (7 hex digits, as shown in the diff)"
            ))
        }
    }
}

impl HunkId {
    /// Hashes the hunk's content; `taken` keeps ids unique within a proposal (two
    /// identical hunks in one file get different ids, deterministically by order).
    fn new(path: &Path, old: &[&str], new: &[&str], taken: &mut HashSet<HunkId>) -> HunkId {
        let mut bytes = path.to_string_lossy().into_owned().into_bytes();
        for (mark, lines) in [(0u8, old), (1u8, new)] {
            bytes.push(mark);
            for line in lines {
                bytes.extend_from_slice(line.as_bytes());
            }
        }
        (0u64..)
            .map(|seed| HunkId((xxhash_rust::xxh3::xxh3_64_with_seed(&bytes, seed) >> 36) as u32))
            .find(|id| taken.insert(*id))
            .expect("an unused id exists")
    }
}

/// What the user said about a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    #[default]
    Pending,
    Accept,
    Reject,
}

/// Which hunks a decision is about.
#[derive(Debug, Clone, Copy)]
pub enum Select<'a> {
    Hunk(HunkId),
    File(&'a Path),
    All,
}

/// One contiguous change of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub id: HunkId,
    /// The original lines it replaces (0-based, end exclusive).
    pub old: Range<usize>,
    /// The proposed lines that replace them.
    pub new: Range<usize>,
    pub decision: Decision,
    /// The diff inside the hunk (it may keep a few unchanged lines between changes).
    ops: Vec<DiffOp>,
}

impl Hunk {
    pub(crate) fn ops(&self) -> &[DiffOp] {
        &self.ops
    }
}

/// The proposed change to one file.
#[derive(Debug, Clone)]
pub struct FileProposal {
    pub(crate) path: PathBuf,
    pub(crate) original: FileText,
    pub(crate) existed: bool,
    pub(crate) proposed: String,
    pub(crate) hunks: Vec<Hunk>,
    pub(crate) edits: Vec<Edit>,
    /// A new file git ignores: written only once confirmed.
    pub(crate) ignored_new: bool,
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

    /// The edits (blocks of the reply) this file's proposal came from.
    pub fn edits(&self) -> &[Edit] {
        &self.edits
    }

    /// True for a new file that git ignores and the user has not yet confirmed.
    pub fn needs_confirmation(&self) -> bool {
        self.ignored_new && !self.confirmed
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
                            // Checked when the proposal was built.
                            let _ = self.original.encode_line(line, &mut out);
                        }
                    }
                }
            }
            at = hunk.old.end;
        }
        raw[at..].iter().for_each(|l| out.extend_from_slice(l));
        out
    }

    /// Re-runs this file's edits against `current` (the file changed on disk): the
    /// hunks are recomputed and those with unchanged content keep their decisions.
    pub(crate) fn rebase(
        &mut self,
        current: FileText,
        existed: bool,
        taken: &mut HashSet<HunkId>,
    ) -> Vec<EditError> {
        let ran = run_edits(&self.path, &current, existed, &self.edits);
        let decided: HashMap<HunkId, Decision> =
            self.hunks.iter().map(|h| (h.id, h.decision)).collect();
        let failed: HashSet<usize> = ran.failed.iter().map(|(i, _)| *i).collect();
        let mut index = 0;
        self.edits.retain(|_| {
            index += 1;
            !failed.contains(&(index - 1))
        });
        self.original = current;
        self.existed = existed;
        self.proposed = ran.text;
        self.rediff(&decided, taken);
        ran.failed.into_iter().map(|(_, e)| e).collect()
    }

    /// Recomputes the hunks of original → proposed, keeping decisions by id.
    /// `taken`: the ids of the proposal's other files.
    pub(crate) fn rediff(
        &mut self,
        decided: &HashMap<HunkId, Decision>,
        taken: &mut HashSet<HunkId>,
    ) {
        self.hunks = diff_hunks(
            &self.path,
            self.original.text(),
            &self.proposed,
            self.existed,
            taken,
        );
        for h in &mut self.hunks {
            h.decision = decided.get(&h.id).copied().unwrap_or_default();
        }
    }
}

/// Every file a reply changes, with its hunks and the user's decisions.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub(crate) root: PathBuf,
    pub(crate) files: Vec<FileProposal>,
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
        ReplyReport {
            errors,
            shell: parsed.shell,
            blocks,
        }
    }

    /// Adds `edits` on top of what is proposed already (see [`Proposal::add_reply`]).
    pub fn add_edits(&mut self, ws: &Workspace, edits: &[Edit], files: &FileSet) -> Vec<EditError> {
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
            let index = match self.files.iter().position(|f| f.path == target.rel) {
                Some(index) => index,
                None => match read(&target) {
                    Ok(original) => {
                        self.files.push(FileProposal {
                            ignored_new: !target.exists && ws.is_ignored(&target.rel),
                            path: target.rel,
                            original,
                            existed: target.exists,
                            proposed: String::new(),
                            hunks: Vec::new(),
                            edits: Vec::new(),
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

    /// Runs file `index`'s edits followed by `new` from its original content.
    fn extend_file(
        &mut self,
        index: usize,
        new: Vec<Edit>,
        root: &Path,
        files: &FileSet,
    ) -> Vec<EditError> {
        let mut taken = self.ids_except(index);
        let file = &mut self.files[index];
        let mut all = std::mem::take(&mut file.edits);
        // The earlier edits applied to this same original before, so only new ones fail.
        let applied_before = all.len();
        all.extend(new);
        let mut ran = run_edits(&file.path, &file.original, file.existed, &all);
        add_other_file_hints(root, &file.path, &all, files, &mut ran.failed);
        let nothing_new = ran.failed.len() == all.len() - applied_before;
        let failed: HashSet<usize> = ran.failed.iter().map(|(i, _)| *i).collect();
        file.edits = all
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !failed.contains(i))
            .map(|(_, e)| e)
            .collect();
        // A file only gets hunks when some edit applied (not for a new file whose edits
        // all failed).
        if !(nothing_new && file.edits.is_empty()) {
            let decided = file.hunks.iter().map(|h| (h.id, h.decision)).collect();
            file.proposed = ran.text;
            file.rediff(&decided, &mut taken);
        }
        ran.failed.into_iter().map(|(_, e)| e).collect()
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
    /// it covered.
    pub fn decide(&mut self, select: Select<'_>, decision: Decision) -> Result<usize, Unknown> {
        let mut count = 0;
        for file in &mut self.files {
            let whole = match select {
                Select::All => true,
                Select::File(p) => file.path == p,
                Select::Hunk(_) => false,
            };
            for hunk in &mut file.hunks {
                if whole || matches!(select, Select::Hunk(id) if id == hunk.id) {
                    hunk.decision = decision;
                    count += 1;
                }
            }
        }
        match (count, select) {
            (0, Select::Hunk(id)) => Err(Unknown(id.to_string())),
            (0, Select::File(p)) => Err(Unknown(p.display().to_string())),
            _ => Ok(count),
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

    /// For the model's next turn: the hunks the user rejected (or left undecided) and
    /// so were not applied. None when every hunk was accepted.
    pub fn rejected_summary(&self) -> Option<String> {
        let mut body = String::new();
        for file in &self.files {
            let diff = super::render::unified_diff(file, |h| h.decision != Decision::Accept, false);
            body.push_str(&diff);
        }
        (!body.is_empty()).then(|| {
            format!(
                "The user reviewed your edits and did not accept these hunks, so they were not \
                 applied; the files do not contain them. Do not propose them again unless asked.\n\n\
                 ```diff\n{body}```\n"
            )
        })
    }
}

/// Reads a file tern may write (an absent one is a new, empty file).
fn read(target: &Target) -> Result<FileText, Problem> {
    if !target.exists {
        return Ok(FileText::new_file());
    }
    let raw = std::fs::read(&target.abs).map_err(|e| Problem::Io(e.to_string()))?;
    FileText::decode(raw).map_err(|Binary| Problem::Binary)
}

/// One file's edits run in order: the resulting text and the edits that failed, by
/// index.
pub(crate) struct Ran {
    pub text: String,
    pub failed: Vec<(usize, EditError)>,
}

/// Applies one file's edits in order; a failing edit is reported and skipped.
pub(crate) fn run_edits(path: &Path, original: &FileText, existed: bool, edits: &[Edit]) -> Ran {
    let mut doc = Doc::new(original.text());
    let mut failed = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        if let Err(problem) = run_edit(&mut doc, original, existed, &edit.kind) {
            failed.push((
                i,
                EditError::new(edit.block, Some(path.to_path_buf()), problem, &edit.source),
            ));
        }
    }
    Ran {
        text: doc.text(),
        failed,
    }
}

fn run_edit<'a>(
    doc: &mut Doc<'a>,
    original: &FileText,
    existed: bool,
    kind: &'a EditKind,
) -> Result<(), Problem> {
    match kind {
        EditKind::SearchReplace {
            search,
            replace,
            occurrence,
        } => {
            original
                .check_encodable(replace)
                .map_err(|u| Problem::Unencodable(u.ch))?;
            if search.is_empty() {
                if *occurrence == Occurrence::Unique && !doc.is_empty() {
                    return Err(Problem::NoContext);
                }
                doc.append(replace);
                return Ok(());
            }
            if !existed && doc.is_empty() {
                return Err(Problem::FileNotFound);
            }
            doc.search_replace(search, replace, *occurrence)
                .map(|_| ())
                .map_err(|failure| match failure {
                    Failure::NoMatch => Problem::NoMatch {
                        near: doc.nearest(search),
                        hint: doc.contains(replace).then(|| {
                            "The REPLACE lines are already in the file: was this edit applied already?".to_string()
                        }),
                    },
                    Failure::Ambiguous(lines) => Problem::Ambiguous { lines },
                    Failure::Elision(why) => Problem::Elision(why),
                    Failure::Lazy(line) => Problem::LazyComment { line },
                })
        }
        EditKind::Whole { content, new_file } => {
            original
                .check_encodable(content)
                .map_err(|u| Problem::Unencodable(u.ch))?;
            if *new_file && !doc.is_empty() {
                return Err(Problem::FileExists);
            }
            doc.replace_all(content);
            Ok(())
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
                let raw = std::fs::read(root.join(other)).ok()?;
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

/// The hunks of old → new. A new file that stays empty still gets one (empty) hunk, so
/// that creating it can be accepted.
fn diff_hunks(
    path: &Path,
    old: &str,
    new: &str,
    existed: bool,
    taken: &mut HashSet<HunkId>,
) -> Vec<Hunk> {
    let o: Vec<&str> = old.split_inclusive('\n').collect();
    let n: Vec<&str> = new.split_inclusive('\n').collect();
    // Patience: anchors on unique lines, so hunks follow code structure; similar's
    // histogram degenerates on the repeated `}` and blank lines of code (50x slower).
    // The deadline bounds pathological inputs (the diff stays correct, only coarser).
    let deadline = Instant::now() + DIFF_DEADLINE;
    let ops = similar::capture_diff_slices_deadline(Algorithm::Patience, &o, &n, Some(deadline));
    let mut hunks: Vec<Hunk> = similar::group_diff_ops(ops, CONTEXT)
        .into_iter()
        .filter_map(|group| {
            let first = group
                .iter()
                .position(|op| !matches!(op, DiffOp::Equal { .. }))?;
            let last = group
                .iter()
                .rposition(|op| !matches!(op, DiffOp::Equal { .. }))?;
            let ops = group[first..=last].to_vec();
            let old = ops[0].old_range().start..ops[ops.len() - 1].old_range().end;
            let new = ops[0].new_range().start..ops[ops.len() - 1].new_range().end;
            Some(Hunk {
                id: HunkId::new(path, &o[old.clone()], &n[new.clone()], taken),
                old,
                new,
                decision: Decision::Pending,
                ops,
            })
        })
        .collect();
    if hunks.is_empty() && !existed {
        hunks.push(Hunk {
            id: HunkId::new(path, &[], &[], taken),
            old: 0..0,
            new: 0..0,
            decision: Decision::Pending,
            ops: Vec::new(),
        });
    }
    hunks
}
