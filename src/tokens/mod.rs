//! Token counting for the budget, the repo map and every fit-to-budget decision.
//!
//! Counting uses `bpe-openai`, which produces the same token sequence as tiktoken
//! (checked against `tiktoken-rs` in `tests/tokens.rs`) several times faster. Counts are
//! cached by a 64-bit hash of the text, so the live gauge only re-counts what changed.

mod chat_format;

pub use chat_format::{MESSAGE_OVERHEAD, REPLY_PRIMING};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// A BPE vocabulary tern knows how to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    #[serde(rename = "o200k_base")]
    O200kBase,
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }

    /// Counts without the cache. Special-token text such as `<|endoftext|>` is ordinary
    /// text here: files may contain it and it must never be an error. Large texts are
    /// cut at piece boundaries and counted on all cores.
    pub fn count(self, text: &str) -> usize {
        if text.len() < PARALLEL_MIN_BYTES {
            return self.count_serial(text);
        }
        use rayon::prelude::*;
        split_at_piece_boundaries(text, PARALLEL_CHUNK_BYTES)
            .par_iter()
            .map(|part| self.count_serial(part))
            .sum()
    }

    /// Pre-tokenizes and counts each piece, remembering the counts of short pieces:
    /// code repeats its indentation, keywords and identifiers endlessly, and a lookup is
    /// several times cheaper than running BPE on the piece again.
    fn count_serial(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let tokenizer = self.tokenizer();
        PIECES.with_borrow_mut(|cache| {
            let cache = &mut cache[self as usize];
            if cache.len() > PIECE_CACHE_ENTRIES {
                cache.clear();
            }
            tokenizer
                .split(text)
                .map(|piece| {
                    if piece.len() > PIECE_CACHE_MAX_BYTES {
                        return tokenizer.bpe.count(piece.as_bytes());
                    }
                    if let Some(&n) = cache.get(piece) {
                        return n as usize;
                    }
                    let n = tokenizer.bpe.count(piece.as_bytes());
                    cache.insert(piece.into(), n as u32);
                    n
                })
                .sum()
        })
    }
}

/// Pieces longer than this are rare repeats; they are counted, not remembered.
const PIECE_CACHE_MAX_BYTES: usize = 24;
/// Bounds each thread's piece cache (about 5 MB per encoding when full).
const PIECE_CACHE_ENTRIES: usize = 100_000;

type PieceCache = std::collections::HashMap<Box<str>, u32, foldhash::fast::RandomState>;

thread_local! {
    /// Per-thread piece counts, one map per encoding (indexed by `Encoding as usize`).
    static PIECES: std::cell::RefCell<[PieceCache; 2]> = std::cell::RefCell::new(Default::default());
}

/// A count as people read it: `1234567` as `1,234,567`.
pub fn thousands(n: usize) -> String {
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

/// Texts at least this large are counted in parallel.
const PARALLEL_MIN_BYTES: usize = 128 * 1024;
const PARALLEL_CHUNK_BYTES: usize = 32 * 1024;

/// Cuts `text` into parts of about `target` bytes whose token counts add up to the
/// whole's. BPE never merges across pre-tokenizer pieces, so any cut between two pieces
/// is safe. A cut right after `\n` before an ASCII letter is always one in both
/// encodings: no piece pattern continues from a newline into a letter (the letter
/// patterns only take a non-newline prefix), and the newline run before it ends there.
pub fn split_at_piece_boundaries(text: &str, target: usize) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let mut cut = None;
        let mut from = (start + target).min(bytes.len());
        while let Some(offset) = bytes[from..].iter().position(|&b| b == b'\n') {
            let after = from + offset + 1;
            if bytes.get(after).is_some_and(u8::is_ascii_alphabetic) {
                cut = Some(after);
                break;
            }
            from = after;
        }
        let end = cut.unwrap_or(bytes.len());
        parts.push(text.get(start..end).unwrap_or_default());
        start = end;
    }
    parts
}

/// Counting texts larger than this is not worth caching: they rarely repeat and would
/// pin a lot of memory through their hash entries only if we kept them, which we don't,
/// but the hash itself is cheap either way. Small texts (map snippets, messages) repeat.
const CACHE_LIMIT_ENTRIES: usize = 200_000;

/// A shareable, thread-safe counter for one encoding, with a content-hash cache.
#[derive(Clone)]
pub struct TokenCounter {
    encoding: Encoding,
    estimate: bool,
    cache: Arc<Mutex<HashMap<u64, u32>>>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .field("estimate", &self.estimate)
            .finish()
    }
}

impl TokenCounter {
    /// `estimate` marks counts for models whose real tokenizer is not this encoding
    /// (Claude, Qwen, Llama, ...): the UI shows them with "≈".
    pub fn new(encoding: Encoding, estimate: bool) -> Self {
        TokenCounter {
            encoding,
            estimate,
            cache: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn is_estimate(&self) -> bool {
        self.estimate
    }

    /// Tokens in `text`, served from the cache when the same text was counted before.
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        if let Some(&n) = self.lock().get(&key) {
            return n as usize;
        }
        let n = self.encoding.count(text);
        let mut cache = self.lock();
        if cache.len() >= CACHE_LIMIT_ENTRIES {
            cache.clear();
        }
        cache.insert(key, n as u32);
        n
    }

    /// Tokens of one chat message as the API bills it: content plus the format overhead.
    pub fn count_message(&self, content: &str) -> usize {
        MESSAGE_OVERHEAD + self.count(content)
    }

    /// Predicted `usage.prompt_tokens` for a request made of these message contents.
    pub fn count_request<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> usize {
        REPLY_PRIMING
            + contents
                .into_iter()
                .map(|c| self.count_message(c))
                .sum::<usize>()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, u32>> {
        // A poisoned cache only means another thread panicked mid-insert; the map is
        // still a valid cache.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}
