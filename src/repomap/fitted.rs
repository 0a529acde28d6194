//! The last map a checkout fitted, kept beside its snapshot (`<stem>.fitted`) and keyed
//! on everything the map is made of, so a warm start whose inputs did not change
//! reuses it instead of ranking and fitting again (aider keeps such a cache too).
//!
//! The key is a 128-bit digest of: the file set as the refresh left it (every path, its
//! content key, which names the content, its language and the tags version, its kind,
//! and why its path leaves it out, which covers the attribute files), the chat files,
//! the mentioned files and identifiers, the budget, how tokens are counted, and the
//! build of tern that fitted it. A map whose key differs in anything is fitted again,
//! and so is one that rendered a file whose stat data no longer proves it unchanged
//! (the map shows file content read when it is fitted, which may be newer than the
//! refresh); a missing, damaged or foreign file is no cache (`cache.rs` checks the
//! header and checksum).

use std::hash::Hash;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::left_out::Reason;
use crate::tokens::TokenCounter;

/// A fitted map as kept on disk: `MapResult` without its timings and the graph that
/// explains it.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    pub key: u128,
    /// The tagged files whose content the fit read (to render their definitions): the
    /// map is reused only while their stat data proves them unchanged.
    pub read: Vec<u32>,
    /// Whether each of them still was what its tags were taken from (a map that showed
    /// a changed file as a bare path is not kept).
    #[serde(skip)]
    pub all_current: bool,
    pub text: String,
    pub tokens: usize,
    pub ranked_files: Vec<(String, f64)>,
    pub left_out: Vec<(Reason, usize)>,
    pub shown_defs: usize,
    pub shown_files: usize,
    pub collapsed: usize,
    pub collapsed_files: usize,
    pub important: Vec<String>,
}

/// What a map is fitted from, besides the file set.
pub struct Inputs<'a> {
    /// Indices of the chat files and of the mentioned files, in the order given.
    pub chat: &'a [u32],
    pub mentioned_files: &'a [u32],
    /// The mentioned identifiers the map knows, in the order given.
    pub mentioned_idents: &'a [&'a str],
    pub budget: usize,
    pub counter: &'a TokenCounter,
}

/// The digest of the file set, given per file what the map reads of it: its path, its
/// content key and kind, and why its path leaves it out.
pub fn state_digest(files: impl Iterator<Item = impl Hash>) -> u128 {
    let mut h = Xxh3::new();
    for file in files {
        file.hash(&mut h);
    }
    h.digest128()
}

/// The key of a map fitted from the file set of `state` (its [`state_digest`]) and
/// `inputs` by this build of tern.
pub fn key(state: u128, inputs: &Inputs) -> u128 {
    let mut h = Xxh3::new();
    build_identity().hash(&mut h);
    state.hash(&mut h);
    inputs.chat.hash(&mut h);
    inputs.mentioned_files.hash(&mut h);
    inputs.mentioned_idents.hash(&mut h);
    inputs.budget.hash(&mut h);
    counting(inputs.counter).hash(&mut h);
    h.digest128()
}

/// How `counter` counts what the fit measures: blocks by its encoding, a whole map by
/// the counter itself (whose counts for a stand-in tokenizer follow what it learned).
fn counting(counter: &TokenCounter) -> String {
    format!("{} {:?}", counter.encoding().name(), counter.counting())
}

/// tern's version and its executable's size and time: a rebuilt tern (other ranking or
/// rendering code) never serves the map an older one fitted.
fn build_identity() -> &'static (String, u64, i64) {
    static IDENTITY: OnceLock<(String, u64, i64)> = OnceLock::new();
    IDENTITY.get_or_init(|| {
        let exe = std::env::current_exe().and_then(std::fs::metadata);
        let (size, time) = exe.map_or((0, 0), |m| (m.len(), super::files::mtime_ns(&m)));
        (env!("CARGO_PKG_VERSION").to_string(), size, time)
    })
}
