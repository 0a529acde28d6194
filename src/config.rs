//! Layered settings: defaults < `~/.config/tern/config.toml` < `<repo>/.tern.toml` <
//! `--config FILE` < environment < flags.
//!
//! Files are strict: an unknown key or a wrong type is an error naming the file, the
//! line and the key, never silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cli::{CachePrompts, GlobalArgs};
use crate::edit::EditFormat;

/// An API key. Its `Debug` never shows the key, so it cannot leak into logs.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the Authorization header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Declares `Settings` (every value resolved), `SettingsLayer` (what one config file may
/// set, every key optional and unknown keys refused) and the merge between them, from one
/// list so that the three can never disagree.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $name:ident : $ty:ty = $default:expr ),* $(,)?) => {
        /// Every setting, resolved through all layers.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $( $(#[doc = $doc])* pub $name: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $name: $default, )* }
            }
        }

        /// One config file's worth of settings.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct SettingsLayer {
            $( #[serde(default)] pub $name: Option<$ty>, )*
        }

        impl Settings {
            fn apply(&mut self, layer: SettingsLayer) {
                $( if let Some(v) = layer.$name { self.$name = v; } )*
            }
        }
    };
}

settings! {
    /// Main model name, as the API knows it.
    model: String = "gpt-4o".to_string(),
    /// Model for commit messages and history summaries.
    weak_model: String = "gpt-4o-mini".to_string(),
    /// Base URL of the OpenAI-compatible API.
    api_base: String = "https://api.openai.com/v1".to_string(),
    /// API key; optional for local servers.
    api_key: Option<ApiKey> = None,
    /// Overrides the model table's context window.
    context_window: Option<usize> = None,
    /// Tokens kept free for the reply [default: min(model's max output, 8192)].
    reserve_output: Option<usize> = None,
    /// Overrides the model table's edit format.
    edit_format: Option<EditFormat> = None,
    /// UI theme name or path.
    theme: String = "dark".to_string(),
    /// When to send cache_control breakpoints.
    cache_prompts: CachePrompts = CachePrompts::Auto,
    /// Repo map budget [default: window/8 clamped to 1024..4096].
    map_tokens: Option<usize> = None,
    /// History budget [default: min(max(window/16, 1024), 8192)].
    max_chat_history_tokens: Option<usize> = None,
    /// Summarize history in the background before it is needed.
    double_buffer: bool = true,
    /// Fraction of the history budget at which the background summary starts.
    checkpoint_threshold: f64 = 0.60,
    /// Fraction of the history budget at which the summary replaces the old history.
    swap_threshold: f64 = 0.85,
    /// Commit applied edits.
    auto_commits: bool = true,
    /// Commit the user's own uncommitted changes to a file before applying edits to it.
    dirty_commits: bool = true,
    /// Add `Co-authored-by: tern (<model>)` to commit messages.
    co_author_trailer: bool = true,
    /// Run git hooks when committing.
    verify_hooks: bool = true,
    /// How many times failed edit blocks are sent back to the model in one turn.
    max_reflections: usize = 3,
    /// Seconds to wait for a connection to the API.
    connect_timeout_secs: u64 = 10,
    /// Seconds without a byte from the API before a request is abandoned.
    read_timeout_secs: u64 = 300,
    /// Total seconds spent retrying one request (rate limits, 5xx, connection errors).
    retry_budget_secs: u64 = 60,
    /// Log file [default: <cache dir>/tern/tern.log].
    log_file: Option<PathBuf> = None,
    /// TUI key bindings: action name -> key (for example `accept = "y"`).
    keys: BTreeMap<String, String> = BTreeMap::new(),
}

/// A config file that could not be used, with enough detail to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad config file {path}:\n{message}")]
    Parse { path: PathBuf, message: String },
    #[error("bad setting: {0}")]
    Invalid(String),
}

/// Where settings files are looked for.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// `~/.config/tern/config.toml` or None to skip it (tests).
    pub user_file: Option<PathBuf>,
    /// The repository root, for `.tern.toml`.
    pub repo_root: Option<PathBuf>,
}

impl ConfigSources {
    /// The real locations for this user and the repository containing `cwd`.
    pub fn discover(cwd: &Path) -> Self {
        ConfigSources {
            user_file: dirs::config_dir().map(|d| d.join("tern").join("config.toml")),
            repo_root: git2::Repository::discover(cwd)
                .ok()
                .and_then(|r| r.workdir().map(Path::to_path_buf)),
        }
    }
}

/// Resolves settings through every layer. `env` is a lookup for environment variables
/// that clap does not already read into flags (so tests can pass their own).
pub fn load(
    args: &GlobalArgs,
    sources: &ConfigSources,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Settings, ConfigError> {
    let mut settings = Settings::default();
    if let Some(user) = &sources.user_file
        && user.is_file()
    {
        settings.apply(read_layer(user)?);
    }
    if let Some(root) = &sources.repo_root {
        let repo_file = root.join(".tern.toml");
        if repo_file.is_file() {
            settings.apply(read_layer(&repo_file)?);
        }
    }
    if let Some(explicit) = &args.config {
        settings.apply(read_layer(explicit)?);
    }
    // OPENAI_BASE_URL, OPENAI_API_KEY and TERN_MODEL arrive through clap's `env`;
    // OPENAI_API_BASE is the older alias of OPENAI_BASE_URL.
    if args.api_base.is_none()
        && let Some(base) = env("OPENAI_API_BASE").filter(|s| !s.is_empty())
    {
        settings.api_base = base;
    }
    apply_flags(&mut settings, args);
    validate(&settings)?;
    Ok(settings)
}

fn apply_flags(s: &mut Settings, a: &GlobalArgs) {
    if let Some(v) = &a.model {
        s.model = v.clone();
    }
    if let Some(v) = &a.weak_model {
        s.weak_model = v.clone();
    }
    if let Some(v) = &a.api_base {
        s.api_base = v.clone();
    }
    if let Some(v) = a.api_key.as_ref().filter(|k| !k.is_empty()) {
        s.api_key = Some(ApiKey::new(v.clone()));
    }
    if a.context_window.is_some() {
        s.context_window = a.context_window;
    }
    if a.edit_format.is_some() {
        s.edit_format = a.edit_format;
    }
    if let Some(v) = &a.theme {
        s.theme = v.clone();
    }
    if let Some(v) = a.cache_prompts {
        s.cache_prompts = v;
    }
    if a.map_tokens.is_some() {
        s.map_tokens = a.map_tokens;
    }
    if a.log_file.is_some() {
        s.log_file = a.log_file.clone();
    }
    s.double_buffer &= !a.no_double_buffer;
    s.verify_hooks &= !a.no_verify;
    s.auto_commits &= !a.no_auto_commits;
    s.dirty_commits &= !a.no_dirty_commits;
}

fn read_layer(path: &Path) -> Result<SettingsLayer, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        // toml's message names the line, the column, the offending key and shows the line.
        message: e.to_string(),
    })
}

fn validate(s: &Settings) -> Result<(), ConfigError> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    if !in_unit(s.checkpoint_threshold) || !in_unit(s.swap_threshold) {
        return Err(ConfigError::Invalid(format!(
            "checkpoint_threshold ({}) and swap_threshold ({}) must lie between 0 and 1",
            s.checkpoint_threshold, s.swap_threshold
        )));
    }
    if s.checkpoint_threshold >= s.swap_threshold {
        return Err(ConfigError::Invalid(format!(
            "checkpoint_threshold ({}) must be below swap_threshold ({})",
            s.checkpoint_threshold, s.swap_threshold
        )));
    }
    if let Some(key) = &s.api_key
        && !key.expose().chars().all(|c| c.is_ascii_graphic())
    {
        return Err(ConfigError::Invalid(
            "the API key has spaces or non-ASCII characters in it; check how it was pasted".into(),
        ));
    }
    if s.context_window == Some(0) {
        return Err(ConfigError::Invalid(
            "context_window must be above 0".into(),
        ));
    }
    url_like(&s.api_base)
}

fn url_like(base: &str) -> Result<(), ConfigError> {
    if base.starts_with("http://") || base.starts_with("https://") {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "api_base must start with http:// or https://, got {base:?}"
        )))
    }
}
