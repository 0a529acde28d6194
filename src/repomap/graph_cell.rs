//! The reference graph of one state of the file set, built when first asked for: a
//! warm start whose fitted map is reused never needs it (it is a quarter of such a
//! start's work at 17k files), and a result explains its map later with the graph of
//! the files it was fitted from, not of what the map holds by then
//! (ARCHITECTURE.md, *The repo map*).

use std::sync::{Arc, OnceLock};

use super::cache::Words;
use super::interner::Names;
use super::rank::{FileIdents, Graph};

/// A file's defined identifiers and its references.
type Lists = (Words<u32>, Words<(u32, u32)>);

/// The files' identifiers (shared with the slots, so making one costs a reference
/// count per list) and the graph once built from them.
#[derive(Default)]
pub(super) struct GraphCell {
    files: Vec<Lists>,
    names: Arc<Names>,
    graph: OnceLock<Graph>,
}

impl GraphCell {
    /// `files`: each file's defined identifiers and references, in file order.
    pub(super) fn new(files: impl Iterator<Item = Lists>, names: Arc<Names>) -> GraphCell {
        GraphCell {
            files: files.collect(),
            names,
            graph: OnceLock::new(),
        }
    }

    pub(super) fn get(&self) -> &Graph {
        self.graph.get_or_init(|| {
            let files: Vec<FileIdents> = self
                .files
                .iter()
                .map(|(defines, refs)| FileIdents { defines, refs })
                .collect();
            Graph::build(&files, self.names.len(), |i| self.names.get(i))
        })
    }
}
