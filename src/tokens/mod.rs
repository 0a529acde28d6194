//! Token counting for the budget, the repo map and every fit-to-budget decision.
//!
//! Counting uses `bpe-openai`, which produces the same token sequence as tiktoken
//! (checked against `tiktoken-rs` in `tests/tokens.rs`) several times faster. Counts are
//! cached by a 64-bit hash of the text, so the live gauge only re-counts what changed.

pub mod calibration;
mod chat_format;
pub mod clip;
mod drift;

pub use calibration::{Calibration, Calibrations, Counting, Implausible, Local, Prediction};
pub use chat_format::{MESSAGE_OVERHEAD, REPLY_PRIMING};
pub use drift::Drift;

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

/// The most texts waiting for the server to count them; older ones are forgotten.
const WANTED_LIMIT: usize = 512;

/// A shareable, thread-safe counter for one model, with a content-hash cache. For a
/// model whose tokenizer tern has not (`fit` is set), counts are the server's where it
/// counted the text and tern's scaled by the calibration elsewhere.
#[derive(Clone)]
pub struct TokenCounter {
    encoding: Encoding,
    /// tern's counts by text hash: tokens, and for a stand-in counter the digits and
    /// digit tokens (`Local`).
    cache: Arc<Mutex<HashMap<u64, [u32; 3]>>>,
    fit: Option<Arc<Mutex<Fit>>>,
    /// Texts counted here without the server's count are noted for it to count (off for
    /// the repo map's and the summarizer's many pieces, which are never sent alone).
    notes_misses: bool,
    /// Counts a summary request's texts, with the rates learned from summaries.
    summaries: bool,
}

/// What a stand-in counter learned from the server.
#[derive(Default)]
struct Fit {
    calibration: Calibration,
    /// What summary requests taught: their rates (a transcript is chat prose, where
    /// turns are mostly code and tern's prompts: one rate for both put summaries 8–22%
    /// off), with the template's tokens the turns taught.
    summaries: Calibration,
    /// The server can count (it has a tokenize endpoint).
    server: bool,
    /// The server's counts, by text hash.
    exact: HashMap<u64, u32>,
    /// Texts counted without the server's count, for it to count.
    wanted: Vec<(u64, String)>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .field("counting", &self.counting())
            .finish()
    }
}

impl TokenCounter {
    /// `estimate` marks counts for models whose real tokenizer is not this encoding
    /// (Claude, Qwen, Llama, ...): they are calibrated against the server's reports.
    pub fn new(encoding: Encoding, estimate: bool) -> Self {
        TokenCounter {
            encoding,
            cache: Arc::new(Mutex::new(HashMap::new())),
            fit: estimate.then(Default::default),
            notes_misses: true,
            summaries: false,
        }
    }

    /// The same counter (sharing what it learns) for a summary request's texts: it
    /// notes none for the server, estimates with the rates summaries taught, and learns
    /// into them.
    pub fn summarizing(&self) -> Self {
        TokenCounter {
            summaries: true,
            ..self.quiet()
        }
    }

    /// The same counter (sharing what it learns) that notes no texts for the server.
    pub fn quiet(&self) -> Self {
        TokenCounter {
            notes_misses: false,
            ..self.clone()
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn is_estimate(&self) -> bool {
        self.counting().is_estimate()
    }

    /// How counts are made now.
    pub fn counting(&self) -> Counting {
        match &self.fit {
            None => Counting::Exact,
            Some(fit) => {
                let fit = lock(fit);
                fit.calibration.counting(fit.server)
            }
        }
    }

    /// Tokens in `text`: the server's count if it made one, else tern's (scaled by the
    /// calibration for a stand-in tokenizer).
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        let Some(fit) = &self.fit else {
            return self.local(key, text).tokens;
        };
        {
            let mut fit = lock(fit);
            if let Some(&n) = fit.exact.get(&key) {
                return n as usize;
            }
            if fit.server && self.notes_misses && !fit.wanted.iter().any(|(k, _)| *k == key) {
                if fit.wanted.len() >= WANTED_LIMIT {
                    fit.wanted.remove(0);
                }
                fit.wanted.push((key, text.to_string()));
            }
        }
        let local = self.local(key, text);
        self.rates(&lock(fit)).estimate(local)
    }

    /// The calibration this counter's estimates are made with.
    fn rates<'a>(&self, fit: &'a Fit) -> &'a Calibration {
        match self.summaries {
            true => &fit.summaries,
            false => &fit.calibration,
        }
    }

    /// tern's own count, cached by the text's hash; with the text's digits for a
    /// stand-in counter, whose calibration scales them apart.
    fn local(&self, key: u64, text: &str) -> Local {
        let unpack = |[tokens, digits, digit_tokens]: [u32; 3]| Local {
            tokens: tokens as usize,
            digits: digits as usize,
            digit_tokens: digit_tokens as usize,
        };
        if let Some(&packed) = lock(&self.cache).get(&key) {
            return unpack(packed);
        }
        let tokens = self.encoding.count(text);
        let local = match self.fit {
            Some(_) => Local::of(text, tokens),
            None => Local {
                tokens,
                ..Local::default()
            },
        };
        let mut cache = lock(&self.cache);
        if cache.len() >= CACHE_LIMIT_ENTRIES {
            cache.clear();
        }
        let packed = [local.tokens, local.digits, local.digit_tokens].map(|n| n as u32);
        cache.insert(key, packed);
        local
    }

    /// `tokens` of the server's (as this counter counts them) in tern's own tokens, for
    /// text like `like` (the last map fitted): what a budget in the server's counts
    /// allows a text counted with tern's tokenizer, so the repo map is fitted with no
    /// request to the server per candidate. The rate is `like`'s count (the server's,
    /// once it counted it: the check with the server) over tern's; with nothing like
    /// it yet, the learned rate for text; unchanged until a rate was learned.
    pub fn in_own_tokens(&self, tokens: usize, like: Option<&str>) -> usize {
        let Some(fit) = &self.fit else {
            return tokens;
        };
        let own = like.map_or(0, |text| self.encoding.count(text));
        let rate = match like {
            Some(text) if own > 0 => self.count(text) as f64 / own as f64,
            _ => {
                let fit = lock(fit);
                match fit.calibration.samples {
                    0 => return tokens,
                    _ => fit.calibration.per_token,
                }
            }
        };
        (tokens as f64 / rate.max(f64::MIN_POSITIVE)).floor() as usize
    }

    /// Tokens one message adds to a request beyond its content.
    pub fn per_message(&self) -> usize {
        self.fit
            .as_ref()
            .map_or(MESSAGE_OVERHEAD, |f| lock(f).calibration.per_message)
    }

    /// Tokens a request adds once (the primed reply).
    pub(crate) fn per_request(&self) -> usize {
        self.fit
            .as_ref()
            .map_or(REPLY_PRIMING, |f| lock(f).calibration.per_request)
    }

    /// Tokens of one chat message as the API bills it: content plus the format overhead.
    pub(crate) fn count_message(&self, content: &str) -> usize {
        self.per_message() + self.count(content)
    }

    /// Predicted `usage.prompt_tokens` for a request made of these message contents.
    pub fn count_request<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> usize {
        self.per_request()
            + contents
                .into_iter()
                .map(|c| self.count_message(c))
                .sum::<usize>()
    }

    /// The prediction for a request of these message contents, with what it is made
    /// of, to compare with the server's report (`observe`).
    pub(crate) fn predict<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> Prediction {
        let contents: Vec<&str> = contents.into_iter().collect();
        let local = contents
            .iter()
            .map(|c| self.local(xxhash_rust::xxh3::xxh3_64(c.as_bytes()), c))
            .fold(Local::default(), |sum, l| sum + l);
        let exact = self.fit.as_ref().and_then(|fit| {
            let fit = lock(fit);
            contents
                .iter()
                .filter(|c| !c.is_empty())
                .map(|c| fit.exact.get(&xxhash_rust::xxh3::xxh3_64(c.as_bytes())))
                .try_fold(0, |sum, n| n.map(|&n| sum + n as usize))
        });
        Prediction {
            total: self.count_request(contents.iter().copied()),
            messages: contents.len(),
            local,
            exact,
            learned: self
                .fit
                .as_ref()
                .is_some_and(|f| self.rates(&lock(f)).samples > 0),
        }
    }

    /// How `prediction` was made, as its request says it: exact with the model's own
    /// tokenizer; "via server" only when the server counted every message it sends;
    /// otherwise an estimate, calibrated (with the recent error) or not. A request
    /// whose texts the server never counted (a summary's transcript, a commit
    /// message's diff) is an estimate even when the server counts other requests.
    pub fn provenance(&self, prediction: &Prediction) -> Counting {
        match &self.fit {
            None => Counting::Exact,
            Some(fit) => {
                let fit = lock(fit);
                let counted = fit.server && prediction.exact.is_some();
                self.rates(&fit).counting(counted)
            }
        }
    }

    /// Learns from the server's count of a predicted request (exact counters learn
    /// nothing); returns the prediction's relative error, or why the report is not
    /// one a tokenizer gives (then nothing is learned, for exact counters as well).
    pub(crate) fn observe(
        &self,
        prediction: &Prediction,
        reported: usize,
    ) -> Result<Option<f64>, calibration::Implausible> {
        match &self.fit {
            Some(fit) if self.summaries => {
                let fit = &mut *lock(fit);
                let summaries = &mut fit.summaries;
                (summaries.per_message, summaries.per_request) =
                    (fit.calibration.per_message, fit.calibration.per_request);
                summaries.observe(prediction, reported).map(Some)
            }
            Some(fit) => lock(fit)
                .calibration
                .observe(prediction, reported)
                .map(Some),
            None => calibration::check(prediction, reported).map(|()| None),
        }
    }

    /// Learns the chat template's tokens from the framing probe: (messages, tokens).
    pub(crate) fn learn_framing(&self, framing: &[(usize, usize)]) {
        if let Some(fit) = &self.fit {
            let mut fit = lock(fit);
            for &(messages, tokens) in framing {
                fit.calibration.learn_template(messages, tokens);
            }
        }
    }

    /// What was learned, to be saved; None for exact counters.
    pub fn calibration(&self) -> Option<Calibration> {
        self.fit.as_ref().map(|f| lock(f).calibration.clone())
    }

    /// Starts from what an earlier session learned.
    pub(crate) fn set_calibration(&self, calibration: Calibration) {
        if let Some(fit) = &self.fit {
            lock(fit).calibration = calibration;
        }
    }

    /// Whether the server counts for this counter (from now on, misses are noted).
    pub(crate) fn set_server(&self, server: bool) {
        if let Some(fit) = &self.fit {
            let mut fit = lock(fit);
            fit.server = server;
            if !server {
                fit.wanted.clear();
            }
        }
    }

    /// True when the server counted `text` (or counts are exact anyway).
    pub fn knows(&self, text: &str) -> bool {
        self.fit.as_ref().is_none_or(|fit| {
            text.is_empty() || {
                let fit = lock(fit);
                !fit.server
                    || fit
                        .exact
                        .contains_key(&xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
            }
        })
    }

    /// True when texts wait for the server to count them.
    pub(crate) fn has_wanted(&self) -> bool {
        self.fit
            .as_ref()
            .is_some_and(|f| !lock(f).wanted.is_empty())
    }

    /// The texts counted since the last call that the server has not counted.
    pub(crate) fn take_wanted(&self) -> Vec<(u64, String)> {
        self.fit
            .as_ref()
            .map(|f| std::mem::take(&mut lock(f).wanted))
            .unwrap_or_default()
    }

    /// Records the server's counts of texts by their hashes (from `take_wanted`).
    pub(crate) fn learn_exact(&self, counts: impl IntoIterator<Item = (u64, usize)>) {
        if let Some(fit) = &self.fit {
            let mut fit = lock(fit);
            if fit.exact.len() >= CACHE_LIMIT_ENTRIES {
                fit.exact.clear();
            }
            fit.exact
                .extend(counts.into_iter().map(|(k, n)| (k, n as u32)));
        }
    }
}

/// A poisoned lock only means another thread panicked mid-insert; the maps are still
/// valid caches.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
