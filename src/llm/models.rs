//! The model table (`assets/models.toml`, embedded at build time) and lookups in it.

use derive_visitor::DriveMut;
use std::sync::LazyLock;

use serde::Deserialize;

use crate::edit_format::EditFormat;
use crate::tokens::{Encoding, TokenCounter};

const TABLE: &str = include_str!("../../assets/models.toml");

/// The window assumed for a model tern does not know, unless `--context-window` says
/// otherwise: small enough that nothing is sent that most servers would refuse.
pub const UNKNOWN_MODEL_WINDOW: usize = 32_768;

/// What tern knows about one model. Prices are dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    pub name: String,
    pub context_window: usize,
    #[serde(default)]
    pub max_input: Option<usize>,
    pub max_output: usize,
    #[serde(default)]
    pub input_price: f64,
    #[serde(default)]
    pub output_price: f64,
    #[serde(default)]
    pub cache_read_price: Option<f64>,
    #[serde(default)]
    pub cache_write_price: Option<f64>,
    pub encoding: Encoding,
    #[serde(default)]
    pub exact_tokens: bool,
    pub edit_format: EditFormat,
    #[serde(default)]
    pub prefill: bool,
    /// The reply cap is sent as `max_completion_tokens` (OpenAI's reasoning models
    /// refuse `max_tokens`).
    #[serde(default)]
    pub max_completion_tokens: bool,
    /// False for a model missing from the table: the UI warns and the window is a guess.
    #[serde(default = "yes")]
    pub known: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    model: Vec<ModelInfo>,
}

static MODELS: LazyLock<Vec<ModelInfo>> = LazyLock::new(|| {
    toml::from_str::<Table>(TABLE)
        .expect("assets/models.toml is valid (checked by tests)")
        .model
});

/// Every model in the table, in file order.
pub fn all() -> &'static [ModelInfo] {
    &MODELS
}

/// Token usage of one request as the server reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, Deserialize, DriveMut)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Prompt tokens served from the provider's prefix cache (part of `prompt_tokens`).
    pub cached_tokens: usize,
    /// Prompt tokens written to the cache (Anthropic via OpenRouter), part of
    /// `prompt_tokens`.
    pub cache_write_tokens: usize,
}

impl Usage {
    /// Whether the report can be true: a server never serves more prompt tokens from
    /// its cache than it was sent (a proxy that miscounts may say so).
    pub fn cache_is_possible(&self) -> bool {
        self.cached_tokens <= self.prompt_tokens
    }

    /// The cached tokens to believe: none of an impossible report, so that its cost is
    /// never less than the prompt's at the full price.
    pub fn believed_cached(&self) -> usize {
        match self.cache_is_possible() {
            true => self.cached_tokens,
            false => 0,
        }
    }
}

impl ModelInfo {
    /// Looks a model up by name: exact, then without a provider prefix, then by the
    /// longest listed name it starts with. Unknown models get a conservative default.
    pub fn lookup(name: &str) -> ModelInfo {
        let bare = name.rsplit('/').next().unwrap_or(name);
        let found = all()
            .iter()
            .find(|m| m.name == name)
            .or_else(|| all().iter().find(|m| m.name == bare))
            .or_else(|| {
                all()
                    .iter()
                    .filter(|m| {
                        let listed = m.name.rsplit('/').next().unwrap_or(&m.name);
                        bare.strip_prefix(listed)
                            .is_some_and(|rest| rest.starts_with(['-', ':', '@', '.']))
                    })
                    .max_by_key(|m| m.name.len())
            });
        match found {
            Some(m) => ModelInfo {
                name: name.to_string(),
                ..m.clone()
            },
            None => ModelInfo {
                name: name.to_string(),
                context_window: UNKNOWN_MODEL_WINDOW,
                max_input: None,
                max_output: 4096,
                input_price: 0.0,
                output_price: 0.0,
                cache_read_price: None,
                cache_write_price: None,
                encoding: Encoding::O200kBase,
                exact_tokens: false,
                edit_format: EditFormat::Editblock,
                prefill: false,
                max_completion_tokens: false,
                known: false,
            },
        }
    }

    /// The counter for this model's prompts. Non-OpenAI models get estimates.
    pub fn token_counter(&self) -> TokenCounter {
        TokenCounter::new(self.encoding, !self.exact_tokens)
    }

    /// Dollars for one request's usage: cached prompt tokens at the cache-read price,
    /// cache writes at the cache-write price, the rest at the input price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: usize, price: f64| tokens as f64 * price / 1_000_000.0;
        let cached = usage.believed_cached();
        let written = usage.cache_write_tokens.min(usage.prompt_tokens - cached);
        let fresh = usage.prompt_tokens - cached - written;
        per(fresh, self.input_price)
            + per(cached, self.cache_read_price.unwrap_or(self.input_price))
            + per(written, self.cache_write_price.unwrap_or(self.input_price))
            + per(usage.completion_tokens, self.output_price)
    }

    /// Dollars for sending `tokens` prompt tokens uncached (the budget table's column).
    pub(crate) fn input_cost(&self, tokens: usize) -> f64 {
        tokens as f64 * self.input_price / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_has_the_families_tern_promises() {
        let names: Vec<&str> = all().iter().map(|m| m.name.as_str()).collect();
        assert!(names.len() >= 20, "{names:?}");
        for family in [
            "gpt-4o",
            "gpt-4.1",
            "gpt-5",
            "o3",
            "anthropic/",
            "deepseek",
            "qwen",
            "llama",
        ] {
            assert!(
                names.iter().any(|n| n.starts_with(family)),
                "{family} missing"
            );
        }
        for m in all() {
            assert!(m.max_output <= m.context_window, "{}", m.name);
            assert!(m.known);
        }
    }

    #[test]
    fn lookup_strips_provider_and_matches_dated_names() {
        assert_eq!(ModelInfo::lookup("openai/gpt-4o").context_window, 128_000);
        let mini = ModelInfo::lookup("gpt-4o-mini-2024-07-18");
        assert_eq!(mini.input_price, 0.15);
        assert_eq!(mini.name, "gpt-4o-mini-2024-07-18");
        assert_eq!(
            ModelInfo::lookup("gpt-4-0613").encoding,
            Encoding::Cl100kBase
        );
        let unknown = ModelInfo::lookup("my-local-thing");
        assert!(!unknown.known);
        assert_eq!(unknown.context_window, UNKNOWN_MODEL_WINDOW);
        assert!(unknown.token_counter().is_estimate());
    }

    #[test]
    fn cost_prices_cached_tokens_at_the_cache_rate() {
        let m = ModelInfo::lookup("gpt-4o");
        let usage = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 1_000_000,
            cached_tokens: 500_000,
            cache_write_tokens: 0,
        };
        let expected = 0.5 * 2.50 + 0.5 * 1.25 + 10.0;
        assert!((m.cost(&usage) - expected).abs() < 1e-9);
    }

    /// More cached than prompt tokens (no server sends it): none is priced as cached,
    /// wherever the cost is taken (a commit message's, a summary's), not all of them.
    #[test]
    fn an_impossible_cached_count_is_priced_as_no_cache() {
        let m = ModelInfo::lookup("gpt-4o");
        let usage = Usage {
            prompt_tokens: 900,
            completion_tokens: 2,
            cached_tokens: 5000,
            cache_write_tokens: 0,
        };
        assert!(!usage.cache_is_possible());
        let uncached = Usage {
            cached_tokens: 0,
            ..usage
        };
        assert_eq!(m.cost(&usage), m.cost(&uncached));
    }
}
