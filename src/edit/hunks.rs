//! Hunks: one contiguous change of a file, its id and the user's decision on it; and
//! how they come from the spans of an edited document. The original's lines it kept
//! are equal by construction, so only the stretches between them are diffed (to find
//! lines an edit rewrote to the same text). No whole-file diff, no deadline that
//! coarsens a large file's hunks.

use derive_visitor::DriveMut;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp};

use super::doc::Span;

/// Unchanged lines shown around a hunk; changes closer than twice this are one hunk,
/// as in `git diff`, so hunks never overlap on screen.
pub const CONTEXT: usize = 3;

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
        match u32::from_str_radix(s, 16) {
            // Seven hex digits always fit.
            Ok(n) if s.len() == 7 && s.chars().all(|c| c.is_ascii_hexdigit()) => Ok(HunkId(n)),
            _ => Err(format!(
                "{s:?} is not a hunk id (7 hex digits, as shown in the diff)"
            )),
        }
    }
}

impl HunkId {
    /// Hashes the hunk's content; `taken` keeps ids unique within a proposal (two
    /// identical hunks in one file get different ids, deterministically by order).
    pub(crate) fn new(
        path: &Path,
        old: &[&str],
        new: &[&str],
        taken: &mut HashSet<HunkId>,
    ) -> HunkId {
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, DriveMut,
)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    #[default]
    Pending,
    Accept,
    Reject,
}

impl Decision {
    /// Whether deciding `self` for a whole file or for everything changes a hunk whose
    /// decision is `current`: accepting in bulk (`A`, `/apply all`, `--yes`) never
    /// overrides a hunk the user rejected; only accepting that hunk itself does.
    pub(crate) fn applies_in_bulk_to(self, current: Decision) -> bool {
        !(self == Decision::Accept && current == Decision::Reject)
    }
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
    /// The user wrote its new lines (`e` in the review): what the model is told about
    /// it must not say the model wrote them.
    pub edited: bool,
    /// The diff inside the hunk (it may keep a few unchanged lines between changes).
    pub(crate) ops: Vec<DiffOp>,
}

impl Hunk {
    pub(crate) fn ops(&self) -> &[DiffOp] {
        &self.ops
    }

    /// Where the parts of this hunk would start if it were split where unchanged lines
    /// separate its changes (git's rule for `s` in `git add -p`): the original line
    /// after each unchanged run inside it. Empty when it cannot be split.
    pub(crate) fn split_points(&self) -> Vec<usize> {
        self.ops
            .iter()
            .filter_map(|op| match *op {
                DiffOp::Equal { old_index, len, .. } => Some(old_index + len),
                _ => None,
            })
            .collect()
    }
}

/// What the user made of each hunk (decision, edited), kept by id when a file's hunks
/// are recomputed.
pub(crate) type Marks = HashMap<HunkId, (Decision, bool)>;

/// The most time the diff of one changed stretch may take before it settles for a
/// coarser result (only whole-file replies have long stretches).
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

/// The hunks turning `old` into `new` (both split after each `\n`), where `spans` says
/// which lines of `new` are which lines of `old`. Changes closer than twice [`CONTEXT`]
/// are one hunk, except where `cuts` (original lines) say a hunk starts: the user split
/// it there. A new file that stays empty still gets one (empty) hunk, so that creating
/// it can be accepted.
pub(crate) fn hunks_of(
    path: &Path,
    old: &[&str],
    new: &[&str],
    spans: &[Span<'_>],
    existed: bool,
    cuts: &BTreeSet<usize>,
    taken: &mut HashSet<HunkId>,
) -> Vec<Hunk> {
    let ops = ops_of(old, new, spans);
    let mut hunks: Vec<Hunk> = similar::group_diff_ops(ops, CONTEXT)
        .into_iter()
        .flat_map(|group| pieces(group, cuts))
        .map(|ops| {
            let o = ops[0].old_range().start..ops[ops.len() - 1].old_range().end;
            let n = ops[0].new_range().start..ops[ops.len() - 1].new_range().end;
            Hunk {
                id: HunkId::new(path, &old[o.clone()], &new[n.clone()], taken),
                old: o,
                new: n,
                decision: Decision::Pending,
                edited: false,
                ops,
            }
        })
        .collect();
    if hunks.is_empty() && !existed {
        hunks.push(Hunk {
            id: HunkId::new(path, &[], &[], taken),
            old: 0..0,
            new: 0..0,
            decision: Decision::Pending,
            edited: false,
            ops: Vec::new(),
        });
    }
    hunks
}

/// A group of ops as hunks: without the unchanged lines around its changes, and cut at
/// each unchanged run that ends where `cuts` say a hunk starts.
fn pieces(group: Vec<DiffOp>, cuts: &BTreeSet<usize>) -> Vec<Vec<DiffOp>> {
    fn finish(piece: &mut Vec<DiffOp>, out: &mut Vec<Vec<DiffOp>>) {
        while matches!(piece.last(), Some(DiffOp::Equal { .. })) {
            piece.pop();
        }
        if !piece.is_empty() {
            out.push(std::mem::take(piece));
        }
    }
    let mut out = Vec::new();
    let mut piece = Vec::new();
    for op in group {
        if let DiffOp::Equal { old_index, len, .. } = op {
            let cut = cuts.range(old_index + 1..=old_index + len).next().is_some();
            if cut || piece.is_empty() {
                finish(&mut piece, &mut out);
                continue;
            }
        }
        piece.push(op);
    }
    finish(&mut piece, &mut out);
    out
}

/// The diff of `old` → `new` as ops covering both, from the spans.
fn ops_of(old: &[&str], new: &[&str], spans: &[Span<'_>]) -> Vec<DiffOp> {
    let mut ops = Ops::default();
    // Where the stretch of changes not yet diffed starts, in old and new.
    let (mut co, mut cn) = (0, 0);
    let mut pos = 0;
    for span in spans {
        match span {
            Span::Orig(r) if r.start >= co && !r.is_empty() => {
                let mut len = r.len();
                // The last line kept may gain or lose its final newline.
                if old[r.end - 1] != new[pos + len - 1] {
                    len -= 1;
                }
                ops.changed(old, new, co..r.start, cn..pos);
                ops.push(DiffOp::Equal {
                    old_index: r.start,
                    new_index: pos,
                    len,
                });
                co = r.start + len;
                cn = pos + len;
                pos += r.len();
            }
            // Never produced by an edit (kept lines stay in order); if it were, these
            // lines would be written as new text, which is still what was proposed.
            Span::Orig(r) => pos += r.len(),
            Span::New(v) => pos += v.len(),
        }
    }
    ops.changed(old, new, co..old.len(), cn..new.len());
    ops.0
}

#[derive(Default)]
struct Ops(Vec<DiffOp>);

impl Ops {
    /// Adds `op`, merging it into the previous one when both are equal runs (the ops
    /// are contiguous, so they join).
    fn push(&mut self, op: DiffOp) {
        match (self.0.last_mut(), op) {
            (_, DiffOp::Equal { len: 0, .. }) => {}
            (Some(DiffOp::Equal { len, .. }), DiffOp::Equal { len: more, .. }) => *len += more,
            (_, op) => self.0.push(op),
        }
    }

    /// Adds the diff of a stretch where the document's lines are not the original's.
    fn changed(
        &mut self,
        old: &[&str],
        new: &[&str],
        o: std::ops::Range<usize>,
        n: std::ops::Range<usize>,
    ) {
        match (o.is_empty(), n.is_empty()) {
            (true, true) => {}
            (false, true) => self.push(DiffOp::Delete {
                old_index: o.start,
                old_len: o.len(),
                new_index: n.start,
            }),
            (true, false) => self.push(DiffOp::Insert {
                old_index: o.start,
                new_index: n.start,
                new_len: n.len(),
            }),
            (false, false) => {
                let deadline = Instant::now() + DIFF_DEADLINE;
                let inner = similar::capture_diff_slices_deadline(
                    Algorithm::Patience,
                    &old[o.clone()],
                    &new[n.clone()],
                    Some(deadline),
                );
                for op in inner {
                    self.push(shift(op, o.start, n.start));
                }
            }
        }
    }
}

fn shift(op: DiffOp, o: usize, n: usize) -> DiffOp {
    match op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => DiffOp::Equal {
            old_index: old_index + o,
            new_index: new_index + n,
            len,
        },
        DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        } => DiffOp::Delete {
            old_index: old_index + o,
            old_len,
            new_index: new_index + n,
        },
        DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        } => DiffOp::Insert {
            old_index: old_index + o,
            new_index: new_index + n,
            new_len,
        },
        DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } => DiffOp::Replace {
            old_index: old_index + o,
            old_len,
            new_index: new_index + n,
            new_len,
        },
    }
}
