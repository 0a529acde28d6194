//! Fitting and rendering: the largest prefix of the ranked items whose rendering fits
//! the token budget, counted with the real tokenizer and never over it.
//!
//! The map is a sequence of per-file blocks sorted by path. Each block ends in a newline
//! and starts with a path, so the tokenizer's pre-splitting never joins two blocks: the
//! map's count is the sum of its blocks' counts. The fit walks the ranked items once,
//! re-rendering and re-counting only the block the item changes (counts come from the
//! `TokenCounter`'s content-hash cache when the block was seen before), then checks the
//! assembled text with one real count.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::tags::FileTags;
use crate::tokens::TokenCounter;

/// Remembered block counts beyond this are dropped (and re-counted when needed).
const MAX_REMEMBERED: usize = 200_000;

/// Token counts of rendered blocks by content hash. The owner persists them, so a new
/// process can fit a map it fitted before without loading the tokenizer at all.
#[derive(Debug, Default)]
pub struct BlockCounts {
    memo: Mutex<HashMap<u64, u32>>,
    added: AtomicBool,
}

impl BlockCounts {
    pub fn new(memo: HashMap<u64, u32>) -> Self {
        BlockCounts {
            memo: Mutex::new(memo),
            added: AtomicBool::new(false),
        }
    }

    fn count(&self, counter: &TokenCounter, block: &str) -> usize {
        let key = xxhash_rust::xxh3::xxh3_64(block.as_bytes());
        if let Some(&n) = self.lock().get(&key) {
            return n as usize;
        }
        // Uncached: this memo already is the cache for blocks.
        let n = counter.encoding().count(block);
        let mut memo = self.lock();
        if memo.len() >= MAX_REMEMBERED {
            memo.clear();
        }
        memo.insert(key, n as u32);
        self.added.store(true, Ordering::Relaxed);
        n
    }

    /// The counts, if any were added since the last call.
    pub(crate) fn take_added(&self) -> Option<HashMap<u64, u32>> {
        self.added
            .swap(false, Ordering::Relaxed)
            .then(|| self.lock().clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, u32>> {
        // A poisoned memo is still a valid memo.
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Marks hidden lines.
pub const ELISION: &str = "⋮";
/// Prefixes shown source lines.
pub const BAR: &str = "│";

/// The most of the budget the important files (README, manifests, ...) may take.
pub const IMPORTANT_SHARE_PERCENT: usize = 15;

/// One step of the ranked list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// File `file` listed in the important files at the top of the map.
    Important { file: u32 },
    /// Definition `def` (index into the file's `defs`) of file `file`.
    Def { file: u32, def: u32 },
    /// File `file` as a bare path (no definitions shown).
    Bare { file: u32 },
}

/// What the renderer needs to know about a file.
pub trait Source {
    /// The file's path, or the line of the collapsed group it stands for.
    fn path(&self, file: u32) -> &str;
    /// The file's tags and the content they were taken from; None shows the file as a
    /// bare path (untagged, or changed since its tags were taken).
    fn tagged(&self, file: u32) -> Option<(&FileTags, Rc<[u8]>)>;
}

/// The fitted map.
#[derive(Debug, Default)]
pub struct Fitted {
    pub text: String,
    pub tokens: usize,
    /// Definitions shown.
    pub defs: usize,
    /// Files shown (with definitions or as bare paths), the important ones too.
    pub files: usize,
    /// Important files listed at the top.
    pub important: usize,
}

/// The selection being grown: the important files in the order taken, then blocks
/// keyed by file index (emitted in path order because file indices follow path order).
#[derive(Default)]
struct Selection {
    important: Vec<(u32, usize)>,
    blocks: BTreeMap<u32, Block>,
    accepted: Vec<Item>,
}

impl Selection {
    fn is_important(&self, file: u32) -> bool {
        self.important.iter().any(|&(f, _)| f == file)
    }
}

#[derive(Default)]
struct Block {
    defs: Vec<u32>,
    tokens: usize,
}

/// Fits `items` (best first) into `budget` tokens. `files` must be indexed in path
/// order.
pub fn fit(
    items: impl Iterator<Item = Item>,
    source: &impl Source,
    counter: &TokenCounter,
    counts: &BlockCounts,
    budget: usize,
) -> Fitted {
    let mut sel = Selection::default();
    let mut total = 0usize;
    let important_cap = budget.saturating_mul(IMPORTANT_SHARE_PERCENT) / 100;
    let mut important_total = 0usize;
    let mut important_full = false;
    for item in items {
        let file = match item {
            Item::Important { file } => {
                if important_full {
                    continue;
                }
                let tokens = counts.count(counter, &format!("{}\n", source.path(file)));
                if important_total + tokens > important_cap || total + tokens > budget {
                    important_full = true;
                    continue;
                }
                important_total += tokens;
                total += tokens;
                sel.important.push((file, tokens));
                sel.accepted.push(item);
                continue;
            }
            Item::Def { file, .. } | Item::Bare { file } => file,
        };
        if sel.is_important(file) {
            continue; // listed at the top already
        }
        let old = sel.blocks.get(&file);
        if matches!(item, Item::Bare { .. }) && old.is_some() {
            continue; // already shown with its definitions
        }
        let mut defs = old.map(|b| b.defs.clone()).unwrap_or_default();
        if let Item::Def { def, .. } = item {
            defs.push(def);
        }
        let tokens = counts.count(counter, &render_block(source, file, &defs));
        let old_tokens = old.map_or(0, |b| b.tokens);
        if total - old_tokens + tokens > budget {
            break;
        }
        total = total - old_tokens + tokens;
        sel.blocks.insert(file, Block { defs, tokens });
        sel.accepted.push(item);
    }

    // The budget is a promise: check the assembled text and drop items from the end
    // until it holds.
    loop {
        let text: String = sel
            .important
            .iter()
            .map(|&(file, _)| format!("{}\n", source.path(file)))
            .chain(
                sel.blocks
                    .iter()
                    .map(|(&file, b)| render_block(source, file, &b.defs)),
            )
            .collect();
        let separable = sel
            .important
            .iter()
            .map(|&(f, _)| f)
            .chain(sel.blocks.keys().copied())
            .all(|f| !source.path(f).starts_with(char::is_whitespace));
        let tokens = if separable {
            sel.important.iter().map(|&(_, t)| t).sum::<usize>()
                + sel.blocks.values().map(|b| b.tokens).sum::<usize>()
        } else {
            counter.count(&text)
        };
        if tokens <= budget {
            return Fitted {
                text,
                tokens,
                defs: sel.blocks.values().map(|b| b.defs.len()).sum(),
                files: sel.important.len() + sel.blocks.len(),
                important: sel.important.len(),
            };
        }
        match sel.accepted.pop() {
            Some(Item::Def { file, .. }) => {
                let block = sel
                    .blocks
                    .get_mut(&file)
                    .expect("accepted items have blocks");
                block.defs.pop();
                if block.defs.is_empty() {
                    sel.blocks.remove(&file);
                }
            }
            Some(Item::Bare { file }) => {
                sel.blocks.remove(&file);
            }
            Some(Item::Important { .. }) => {
                sel.important.pop();
            }
            None => return Fitted::default(),
        }
    }
}

/// One file's block: `path:` and its chosen definitions in their scopes, or the bare
/// path when no definitions are chosen.
pub(crate) fn render_block(source: &impl Source, file: u32, defs: &[u32]) -> String {
    let path = source.path(file);
    let (tags, content) = match source.tagged(file) {
        Some(tagged) if !defs.is_empty() => tagged,
        _ => return format!("{path}\n"),
    };
    let mut lines: Vec<u32> = defs
        .iter()
        .flat_map(|&d| tags.shown_lines(&tags.defs[d as usize]))
        .copied()
        .collect();
    // The line table is sorted by line number, so its indices sort the same way.
    lines.sort_unstable();
    lines.dedup();

    let mut out = String::with_capacity(path.len() + 2 + lines.len() * 48);
    out.push_str(path);
    out.push_str(":\n");
    let mut next_line = 0u32;
    for i in lines {
        let (number, _) = tags.line(i);
        if number > next_line {
            out.push_str(ELISION);
            out.push('\n');
        }
        out.push_str(BAR);
        out.push_str(&tags.shown_line(&content, i));
        out.push('\n');
        next_line = number + 1;
    }
    if next_line < tags.line_count {
        out.push_str(ELISION);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repomap::languages::Grammar;
    use crate::repomap::tags::extract;
    use crate::tokens::Encoding;

    /// (path, tags and content) per file.
    type Tagged = Option<(FileTags, Rc<[u8]>)>;
    struct Files(Vec<(String, Tagged)>);

    impl Source for Files {
        fn path(&self, file: u32) -> &str {
            &self.0[file as usize].0
        }
        fn tagged(&self, file: u32) -> Option<(&FileTags, Rc<[u8]>)> {
            let (tags, content) = self.0[file as usize].1.as_ref()?;
            Some((tags, Rc::clone(content)))
        }
    }

    fn files() -> Files {
        let src = "use std::fmt;\n\npub struct Shape;\n\nimpl Shape {\n    pub fn area(&self) -> f64 {\n        0.0\n    }\n}\n";
        Files(vec![
            ("README.md".into(), None),
            (
                "src/shape.rs".into(),
                Some((
                    extract(Grammar::Rust, src.as_bytes()),
                    src.as_bytes().into(),
                )),
            ),
        ])
    }

    #[test]
    fn block_shows_scopes_elisions_and_bars() {
        let f = files();
        assert_eq!(
            render_block(&f, 1, &[1]),
            "src/shape.rs:\n⋮\n│impl Shape {\n│    pub fn area(&self) -> f64 {\n⋮\n"
        );
        assert_eq!(
            render_block(&f, 1, &[1, 0]),
            "src/shape.rs:\n⋮\n│pub struct Shape;\n⋮\n│impl Shape {\n│    pub fn area(&self) -> f64 {\n⋮\n"
        );
        assert_eq!(render_block(&f, 0, &[]), "README.md\n");
    }

    #[test]
    fn fit_takes_the_largest_prefix_that_fits() {
        let f = files();
        let counter = TokenCounter::new(Encoding::O200kBase, false);
        let items = [
            Item::Def { file: 1, def: 1 },
            Item::Def { file: 1, def: 0 },
            Item::Bare { file: 0 },
        ];
        let counts = BlockCounts::default();
        let all = fit(items.iter().copied(), &f, &counter, &counts, 10_000);
        assert_eq!(all.defs, 2);
        assert_eq!(all.files, 2);
        assert_eq!(all.tokens, counter.count(&all.text));
        assert!(all.text.starts_with("README.md\nsrc/shape.rs:\n"));
        assert!(counts.take_added().is_some_and(|m| m.len() >= 3));
        assert!(counts.take_added().is_none());
        for budget in 0..all.tokens {
            let part = fit(items.iter().copied(), &f, &counter, &counts, budget);
            assert!(part.tokens <= budget);
            assert_eq!(part.tokens, counter.count(&part.text));
        }
    }
}
