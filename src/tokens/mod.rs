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
    /// text here: files may contain it and it must never be an error.
    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.tokenizer().count(text)
    }
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
