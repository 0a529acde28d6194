//! Layered settings: defaults < `~/.config/tern/config.toml` < `<repo>/.tern.toml` <
//! `--config FILE` < environment < flags.
//!
//! Files are strict: an unknown key or a wrong type is an error naming the file, the
//! line and the key, never silently ignored.
//!
//! Every number has a range in the settings table, checked as each layer is applied:
//! a number out of range is an error naming the file (or the flag), the key and the
//! range, before anything uses it.
//!
//! A repository's `.tern.toml` comes with the clone, so it is not trusted like the
//! user's own files: each setting has a [`Scope`] saying whether a repository may set
//! it always, only below what it is without that config (what makes tern spend, retry,
//! wait or hold memory by itself), only once the user trusts that config (`tern
//! trust`), or never (where the API key goes, where tern writes outside the
//! repository).

mod range;
mod theme;
mod trust;

pub use range::Bounds;
pub use theme::ThemeChoice;
pub(crate) use theme::candidates as theme_candidates;
pub use trust::TrustStore;
pub(crate) use trust::config_hash;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::edit_format::EditFormat;

pub use crate::llm::ApiKey;

/// Declares `Settings` (every value resolved), `SettingsLayer` (what one config file may
/// set, every key optional and unknown keys refused), the merge between them, the
/// range of each number and who may set what, from one list so that they can never
/// disagree. A row is `name: type = default ; scope`, then for `RepoLower` the value
/// an unset optional setting stands for (`(fn)`, from the settings without the
/// repository's config), then `in min..=max` for a number.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $name:ident : $ty:ty = $default:expr ; $scope:ident
        $(( $ceiling:path ))? $(in $range:expr)? ),* $(,)?) => {
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

        /// One layer's worth of settings: a config file, or the command line's flags.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct SettingsLayer {
            $( #[serde(default)] pub $name: Option<$ty>, )*
        }

        /// Every setting's row of the table: its name, who may set it, and the range
        /// of a number.
        pub fn table() -> &'static [Row] {
            static TABLE: std::sync::OnceLock<Vec<Row>> = std::sync::OnceLock::new();
            TABLE.get_or_init(|| vec![$(
                Row {
                    name: stringify!($name),
                    scope: Scope::$scope,
                    bounds: None $( .or(Some(Bounds::of::<<$ty as range::Level>::N>(&($range)))) )?,
                },
            )*])
        }

        impl Settings {
            fn apply(&mut self, layer: SettingsLayer) {
                $( if let Some(v) = layer.$name { self.$name = v; } )*
            }

            /// The number setting `name` holds, for a row with a range.
            #[cfg(test)]
            fn number(&self, name: &str) -> Option<f64> {
                match name {
                    $( stringify!($name) => None $( .or({
                        let _ = $range;
                        range::Level::level(&self.$name).map(range::Number::as_f64)
                    }) )?, )*
                    _ => None,
                }
            }
        }

        impl SettingsLayer {
            /// An error for the first number out of its row's range.
            fn check(&self, origin: &range::Origin) -> Result<(), ConfigError> {
                $($(
                    if let Some(v) = &self.$name {
                        range::check(stringify!($name), v, $range, origin)?;
                    }
                )?)*
                Ok(())
            }

            /// Removes what a repository's config may not set (`trusted`: whether the
            /// user trusts this config; `beneath`: the settings without it, which an
            /// untrusted config may only lower); returns what was removed and why.
            fn restrict_to_repo(&mut self, trusted: bool, beneath: &Settings) -> Vec<Removed> {
                let mut removed = Vec::new();
                $(
                    if let Some(v) = &self.$name {
                        let scope = Scope::$scope;
                        let raised = raised!($scope, trusted, v, &beneath.$name, beneath $(, $ceiling)?);
                        if !scope.repo_may_set(trusted) || raised.is_some() {
                            self.$name = None;
                            removed.push(Removed { name: stringify!($name), scope, raised });
                        }
                    }
                )*
                removed
            }

            /// The settings set here that a repository's config may set only once
            /// trusted (`Trusted`), or raise only once trusted (`RepoLower`).
            fn set_with_scope(&self, scope: Scope) -> Vec<&'static str> {
                let mut names = Vec::new();
                $(
                    if self.$name.is_some() && Scope::$scope == scope {
                        names.push(stringify!($name));
                    }
                )*
                names
            }
        }
    };
}

/// For a `RepoLower` row of an untrusted config: the value `v` raises the setting to
/// and the one it has beneath (`value`, or what `ceiling` says an unset one stands
/// for), if it raises it. Nothing for the other scopes.
macro_rules! raised {
    (RepoLower, $trusted:expr, $v:expr, $value:expr, $beneath:expr $(, $ceiling:path)?) => {{
        #[allow(unused_mut)]
        let mut old = range::Level::level($value);
        $( old = old.or_else(|| Some($ceiling($beneath))); )?
        if $trusted { None } else { range::raises($v, old) }
    }};
    ($scope:ident, $trusted:expr, $v:expr, $value:expr, $beneath:expr $(, $ceiling:path)?) => {{
        let _ = $v;
        None
    }};
}

/// One row of the settings table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    pub name: &'static str,
    pub scope: Scope,
    /// A number's range; None for what is not a number.
    pub bounds: Option<Bounds>,
}

/// A setting of a repository's config that was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Removed {
    name: &'static str,
    scope: Scope,
    /// For a `RepoLower` setting: the value it would have raised the setting to, and
    /// the value it has without the repository's config.
    raised: Option<(String, String)>,
}

/// When to send `cache_control` breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CachePrompts {
    /// For the providers known to honour them (OpenRouter, Anthropic).
    Auto,
    On,
    Off,
}

impl std::str::FromStr for CachePrompts {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(CachePrompts::Auto),
            "on" => Ok(CachePrompts::On),
            "off" => Ok(CachePrompts::Off),
            other => Err(format!("{other:?} is not auto, on or off")),
        }
    }
}

/// Who may set a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Any config, a repository's too: it shapes presentation and budgets only.
    Repo,
    /// Any config, but a repository's only below what it is without that config, until
    /// the user trusts it: it makes tern spend, retry, wait or hold memory by itself,
    /// and a cloned repository may ask for less of that, never more.
    RepoLower,
    /// A repository's config only once the user trusts it: it picks the model that
    /// reads the code (and the bill), changes what keys do, or how git is used.
    Trusted,
    /// Never a repository's config: it decides where the API key goes, where tern
    /// writes outside the repository, what it runs or edits unasked, or what it may
    /// spend.
    User,
}

impl Scope {
    fn repo_may_set(self, trusted: bool) -> bool {
        match self {
            Scope::Repo | Scope::RepoLower => true,
            Scope::Trusted => trusted,
            Scope::User => false,
        }
    }
}

/// The window an unset `context_window` stands for: the model table's (within its
/// input limit, when it has one).
pub(crate) fn model_window(s: &Settings) -> usize {
    let model = crate::llm::ModelInfo::lookup(&s.model);
    model
        .max_input
        .map_or(model.context_window, |cap| cap.min(model.context_window))
}

/// The window the budgets' defaults are computed from.
fn window(s: &Settings) -> usize {
    s.context_window
        .unwrap_or_else(|| crate::llm::ModelInfo::lookup(&s.model).context_window)
}

/// What an unset map budget stands for, at most (with chat files: without, it is
/// larger, so a repository's value at or below this never raises it).
fn default_map_tokens(s: &Settings) -> usize {
    crate::repomap::default_budget(window(s), true)
}

fn default_history_tokens(s: &Settings) -> usize {
    crate::context::history::default_budget(window(s))
}

fn default_output_tokens(s: &Settings) -> usize {
    crate::run::default_output_budget(window(s))
}

/// A mebibyte.
const MIB: usize = 1024 * 1024;

/// The largest repo map budget a setting or `/map-tokens` may give.
pub const MAP_TOKENS_MAX: usize = MIB;

settings! {
    /// Main model name, as the API knows it.
    model: String = "gpt-4o".to_string() ; Trusted,
    /// Model for commit messages and history summaries.
    weak_model: String = "gpt-4o-mini".to_string() ; Trusted,
    /// Base URL of the OpenAI-compatible API.
    api_base: String = crate::llm::OPENAI_API_BASE.to_string() ; User,
    /// API key; optional for local servers.
    api_key: Option<ApiKey> = None ; User,
    /// A shell command that prints the API key (a password manager's CLI), run when
    /// no key is set otherwise.
    api_key_cmd: Option<String> = None ; User,
    /// Overrides the model table's context window. Above the model's window, every
    /// request could grow past what the model takes (and costs).
    context_window: Option<usize> = None ; RepoLower(model_window) in 1024..=16 * MIB,
    /// Tokens kept free for the reply [default: min(model's max output, 8192)].
    reserve_output: Option<usize> = None ; Repo in 256..=MIB,
    /// Overrides the model table's edit format.
    edit_format: Option<EditFormat> = None ; Repo,
    /// UI theme name or path.
    theme: ThemeChoice = ThemeChoice::from("dark") ; Repo,
    /// When to send cache_control breakpoints.
    cache_prompts: CachePrompts = CachePrompts::Auto ; Repo,
    /// Repo map budget [default: window/8 clamped to 1024..4096]; sent with every
    /// message.
    map_tokens: Option<usize> = None ; RepoLower(default_map_tokens) in 0..=MAP_TOKENS_MAX,
    /// When the repo map is rebuilt: auto, always, files or manual.
    map_refresh: crate::repomap::MapRefresh = crate::repomap::MapRefresh::Auto ; Repo,
    /// History budget [default: min(max(window/16, 1024), 8192)]; sent with every
    /// message.
    max_chat_history_tokens: Option<usize> = None ; RepoLower(default_history_tokens) in 256..=MIB,
    /// Summarize history in the background before it is needed (a request tern sends
    /// by itself).
    double_buffer: bool = true ; RepoLower,
    /// Fraction of the history budget at which the background summary starts.
    checkpoint_threshold: f64 = 0.60 ; Repo in 0.05..=0.95,
    /// Fraction of the history budget at which the summary replaces the old history.
    swap_threshold: f64 = 0.85 ; Repo in 0.05..=0.95,
    /// Let bulk accepts that need no look (`--yes`; later the coding loop) take edits
    /// to existing files that are not in the chat. Never from a repository's config:
    /// a cloned repository must not widen what the model may change unasked.
    edit_outside_chat: bool = false ; User,
    /// Commit applied edits.
    auto_commits: bool = true ; Trusted,
    /// Commit the user's own uncommitted changes to a file before applying edits to it.
    dirty_commits: bool = true ; Trusted,
    /// Add `Co-authored-by: tern (<model>)` to commit messages.
    co_author_trailer: bool = true ; Repo,
    /// Run git hooks when committing.
    verify_hooks: bool = true ; Trusted,
    /// How many times failed edit blocks are sent back to the model in one turn.
    max_reflections: usize = 3 ; RepoLower in 0..=20,
    /// Seconds to wait for a connection to the API.
    connect_timeout_secs: u64 = 10 ; RepoLower in 1..=600,
    /// Seconds without a byte from the API before a request is abandoned.
    read_timeout_secs: u64 = 300 ; RepoLower in 1..=3600,
    /// Total seconds spent retrying one request (rate limits, 5xx, connection errors).
    retry_budget_secs: u64 = 60 ; RepoLower in 0..=3600,
    /// The most bytes one reply may hold; a server that sends more is cut off there.
    max_reply_bytes: usize = 4 * MIB ; RepoLower in 1024..=64 * MIB,
    /// US dollars this session may spend before tern stops sending requests by itself
    /// (reflections, summaries, resends, auto-test rounds); your own messages still go.
    /// None: no cap. Never from a repository's config: a cloned repository must not
    /// raise what the user allowed to be spent on their key.
    max_cost: Option<f64> = None ; User in 0.0..=1e6,
    /// US dollars one automatic loop (what tern sends by itself after one message of
    /// yours, counted from that message) may spend; None: no cap. User-only, as
    /// `max_cost`.
    max_loop_cost: Option<f64> = None ; User in 0.0..=1e6,
    /// Log file [default: <cache dir>/tern/tern.log].
    log_file: Option<PathBuf> = None ; User,
    /// The command `/test` and the auto-test loop run [default: none; `/test` proposes
    /// one from the repository and asks]. A repository's config sets it only once
    /// trusted: it is a command tern runs.
    test_cmd: Option<String> = None ; Trusted,
    /// The command `/lint` runs (like `test_cmd`).
    lint_cmd: Option<String> = None ; Trusted,
    /// Run `test_cmd` after accepted edits land and send failures back to the model.
    /// Turning it on is the consent to run `test_cmd` unasked, so only the user turns it
    /// on, never a repository's config.
    auto_test: bool = false ; User,
    /// How many fix rounds the auto-test loop makes before it gives up.
    auto_test_rounds: usize = 3 ; RepoLower in 0..=20,
    /// Seconds a command (`/run`, `/test`, `/lint`) may run before it is killed.
    command_timeout_secs: u64 = 600 ; RepoLower in 1..=86_400,
    /// Tokens a command's output may take in the context (head and tail kept)
    /// [default: window/8 clamped to 1024..8192].
    command_output_tokens: Option<usize> = None ; RepoLower(default_output_tokens) in 256..=MIB,
    /// TUI key bindings: action name -> key (for example `accept = "y"`).
    keys: BTreeMap<String, String> = BTreeMap::new() ; Trusted,
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
    /// A number outside its row's range; `what` names the key, the value and the
    /// file (or the flag).
    #[error("{what} is out of range: it must lie within {min}..={max}")]
    OutOfRange {
        what: String,
        min: String,
        max: String,
        /// Given as a flag: a usage error, like any other bad flag value.
        flag: bool,
    },
    #[error("bad setting: {0}")]
    Invalid(String),
}

impl ConfigError {
    /// A bad value given on the command line: exit 2, as for every other bad flag.
    pub fn is_usage(&self) -> bool {
        matches!(self, ConfigError::OutOfRange { flag: true, .. })
    }
}

impl From<&Settings> for crate::llm::ClientOptions {
    fn from(s: &Settings) -> Self {
        crate::llm::ClientOptions {
            api_base: s.api_base.clone(),
            api_key: s.api_key.clone(),
            connect_timeout: std::time::Duration::from_secs(s.connect_timeout_secs),
            read_timeout: std::time::Duration::from_secs(s.read_timeout_secs),
            retry_budget: std::time::Duration::from_secs(s.retry_budget_secs),
            max_reply_bytes: s.max_reply_bytes,
        }
    }
}

impl<'a> From<&'a Settings> for crate::git::CommitOptions<'a> {
    fn from(s: &'a Settings) -> Self {
        crate::git::CommitOptions {
            verify_hooks: s.verify_hooks,
            model: Some(&s.model),
            co_author_trailer: s.co_author_trailer,
            fail_at: fail_at(),
        }
    }
}

/// `TERN_FAIL_AT`: a step of committing to fail on purpose, for tests of the binary
/// (debug builds only; release builds never read it).
fn fail_at() -> Option<crate::git::FailAt> {
    if !cfg!(debug_assertions) {
        return None;
    }
    std::env::var("TERN_FAIL_AT").ok()?.parse().ok()
}

impl From<&Settings> for crate::branch_review::ReviewOptions {
    /// What `/review` uses: the model's input window (`context_window` overrides the
    /// model table; a table `max_input` caps it), default context, plain hunks, up to
    /// `review::DEFAULT_MAX_CALLS` calls.
    fn from(s: &Settings) -> Self {
        let budget = s.context_window.unwrap_or_else(|| model_window(s));
        crate::branch_review::ReviewOptions::with_budget(budget)
    }
}

/// Where what was learned about every model's token counts is kept.
pub fn calibration_file() -> PathBuf {
    state_dir().join("calibration.json")
}

/// Where this repository's backups of replaced gitignored files go (one folder per
/// landing under it).
pub fn backup_root(repo_root: &Path) -> PathBuf {
    state_dir().join("backups").join(repo_key(repo_root))
}

/// The state directory this process was told to use (`use_state_dir`).
static STATE_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes `dir` the state directory for the rest of this process, over
/// `$TERN_STATE_DIR`: for tests that run engines in-process, which must not write
/// sessions into the user's own state directory (setting the environment of a
/// running multi-threaded process is not safe). The first call wins.
pub fn use_state_dir(dir: PathBuf) {
    let _ = STATE_DIR.set(dir);
}

/// Where tern keeps what outlives a process and belongs to the user, not to a
/// repository (sessions, backups of ignored files): `$TERN_STATE_DIR`, else the user's
/// state directory.
pub fn state_dir() -> PathBuf {
    if let Some(dir) = STATE_DIR.get() {
        return dir.clone();
    }
    std::env::var_os("TERN_STATE_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::state_dir().map(|d| d.join("tern")))
        .or_else(|| dirs::data_local_dir().map(|d| d.join("tern")))
        .unwrap_or_else(|| std::env::temp_dir().join("tern"))
}

/// A name for the repository at `root` in the state directory: its directory name and
/// a hash of its path.
pub fn repo_key(root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tag: String = config_hash(&root.to_string_lossy())
        .chars()
        .take(16)
        .collect();
    format!("{name}-{tag}")
}

/// Where settings files are looked for.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// `~/.config/tern/config.toml` or None to skip it (tests).
    pub user_file: Option<PathBuf>,
    /// The repository root, for `.tern.toml`.
    pub repo_root: Option<PathBuf>,
    /// The user's list of trusted repository configs (`~/.config/tern/trusted.toml`);
    /// None: no repository config is trusted.
    pub trust_file: Option<PathBuf>,
    /// `--config FILE`, above the repository's config.
    pub explicit_file: Option<PathBuf>,
}

/// Settings, and what the user should hear about how they were loaded (settings of a
/// repository's config that were ignored, and why).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub settings: Settings,
    pub notices: Vec<String>,
}

impl ConfigSources {
    /// The real locations for this user and the repository containing `cwd`.
    pub fn discover(cwd: &Path) -> Self {
        ConfigSources {
            user_file: dirs::config_dir().map(|d| d.join("tern").join("config.toml")),
            repo_root: git2::Repository::discover(cwd)
                .ok()
                .and_then(|r| r.workdir().map(Path::to_path_buf)),
            trust_file: trust_file(),
            explicit_file: None,
        }
    }
}

/// The user's list of trusted repository configs.
pub fn trust_file() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("tern").join("trusted.toml"))
}

/// Resolves settings through every layer, `flags` last (the command line's, built by
/// the front end). `env` is a lookup for environment variables that the front end does
/// not already read into flags (so tests can pass their own). Every layer's numbers are
/// checked against their ranges before it is used.
pub fn load(
    flags: &SettingsLayer,
    sources: &ConfigSources,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Loaded, ConfigError> {
    let user = match &sources.user_file {
        Some(user) if user.is_file() => read_layer(user)?,
        _ => SettingsLayer::default(),
    };
    let repo = match &sources.repo_root {
        Some(root) => RepoConfig::read(root)?.map(|repo| (root, repo)),
        None => None,
    };
    let mut above = Vec::new();
    if let Some(explicit) = &sources.explicit_file {
        // Named on the command line, so read as given: `--config <(pass show tern)`
        // is a pipe the user asked for.
        let text = std::fs::read_to_string(explicit).map_err(|source| ConfigError::Read {
            path: explicit.clone(),
            source,
        })?;
        above.push(parse_layer(explicit, &text)?);
    }
    // OPENAI_BASE_URL, OPENAI_API_KEY and TERN_MODEL arrive with the flags;
    // OPENAI_API_BASE is the older alias of OPENAI_BASE_URL.
    if flags.api_base.is_none()
        && let Some(base) = env("OPENAI_API_BASE").filter(|s| !s.is_empty())
    {
        above.push(SettingsLayer {
            api_base: Some(base),
            ..SettingsLayer::default()
        });
    }
    flags.check(&range::Origin::Flags)?;
    above.push(flags.clone());

    let layered = |repo: Option<SettingsLayer>| {
        let mut settings = Settings::default();
        settings.apply(user.clone());
        if let Some(repo) = repo {
            settings.apply(repo);
        }
        above.iter().for_each(|layer| settings.apply(layer.clone()));
        settings
    };
    let mut notices = Vec::new();
    let mut settings = match repo {
        Some((root, repo)) => {
            let store = sources.trust_file.as_deref().map(TrustStore::open);
            let trusted = store.as_ref().is_some_and(|s| s.trusts(root, &repo.text));
            notices.extend(store.and_then(|s| s.damage()));
            let mut layer = repo.layer;
            let removed = layer.restrict_to_repo(trusted, &layered(None));
            notices.extend(repo_notices(&repo.path, &removed));
            if let Some(theme) = layer.theme.take() {
                match theme::from_repository(&theme.name, root) {
                    Ok(choice) => layer.theme = Some(choice),
                    Err(why) => notices.push(format!(
                        "{} sets theme {:?}, which is not used: {why}; a repository's theme is a built-in theme, one of yours, or a file inside the repository",
                        repo.path.display(),
                        theme.name
                    )),
                }
            }
            layered(Some(layer))
        }
        None => layered(None),
    };
    if settings.api_key.is_none()
        && let Some(cmd) = &settings.api_key_cmd
    {
        settings.api_key = Some(key_from_command(cmd)?);
    }
    validate(&settings)?;
    Ok(Loaded { settings, notices })
}

/// Runs `api_key_cmd` and takes the first line of what it prints as the key.
fn key_from_command(cmd: &str) -> Result<ApiKey, ConfigError> {
    // Not through `spawn::command`: there is no key yet; this command prints it.
    #[allow(clippy::disallowed_methods)]
    let out = std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ConfigError::Invalid(format!("cannot run api_key_cmd: {e}")))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why.lines().next().unwrap_or("no message");
        return Err(ConfigError::Invalid(format!(
            "api_key_cmd failed ({}): {}",
            out.status,
            crate::terminal_text::visible(why)
        )));
    }
    let printed = String::from_utf8_lossy(&out.stdout);
    match printed
        .lines()
        .next()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        Some(key) => Ok(ApiKey::new(key)),
        None => Err(ConfigError::Invalid(
            "api_key_cmd printed nothing; it must print the API key".into(),
        )),
    }
}

/// A repository's `.tern.toml`: its text (what trust is given to) and its settings.
pub struct RepoConfig {
    pub path: PathBuf,
    pub text: String,
    layer: SettingsLayer,
}

impl RepoConfig {
    /// The config of the repository at `root`, if it has one.
    pub fn read(root: &Path) -> Result<Option<RepoConfig>, ConfigError> {
        let path = root.join(".tern.toml");
        if !path.is_file() {
            return Ok(None);
        }
        let text = read_text(&path)?;
        let layer = parse_layer(&path, &text)?;
        Ok(Some(RepoConfig { path, text, layer }))
    }

    /// The settings it has that take effect only once the user trusts it.
    pub(crate) fn needing_trust(&self) -> Vec<&'static str> {
        self.layer.set_with_scope(Scope::Trusted)
    }

    /// What trusting it changes: the settings that take effect, and those it may then
    /// raise above the user's own (lower, they apply at once).
    pub(crate) fn trust_effect(&self) -> String {
        let needing = self.needing_trust();
        let raising = self.layer.set_with_scope(Scope::RepoLower);
        let mut effect = Vec::new();
        if !needing.is_empty() {
            effect.push(format!("{} now take effect", needing.join(", ")));
        }
        if !raising.is_empty() {
            effect.push(format!(
                "{} may now also be raised above your own settings",
                raising.join(", ")
            ));
        }
        match effect.is_empty() {
            true => "it sets nothing that needed trust".to_string(),
            false => effect.join("; "),
        }
    }
}

/// The settings a repository's config may never set, trusted or not.
pub fn never_from_repository() -> Vec<&'static str> {
    table()
        .iter()
        .filter(|row| row.scope == Scope::User)
        .map(|row| row.name)
        .collect()
}

/// The sentence that says which settings a repository's config may never set.
pub(crate) fn never_from_repository_note() -> String {
    format!(
        "{} are never taken from a repository.",
        never_from_repository().join(", ")
    )
}

/// What to tell the user about the settings of `path` that were ignored.
fn repo_notices(path: &Path, removed: &[Removed]) -> Vec<String> {
    let names = |scope: Scope| {
        removed
            .iter()
            .filter(|r| r.scope == scope && r.raised.is_none())
            .map(|r| r.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    let never = names(Scope::User);
    if !never.is_empty() {
        out.push(format!(
            "{} sets {never}, which a repository's config may never set, trusted or not (they decide where your API key goes, where tern writes outside the repository, what it runs or edits unasked, or what it may spend): ignored; set them in your own config, the environment or a flag",
            path.display()
        ));
    }
    let untrusted = names(Scope::Trusted);
    if !untrusted.is_empty() {
        out.push(format!(
            "{} sets {untrusted}, which take effect only once you trust this repository's config: ignored for now; review it with /trust in the workspace (or `tern trust`) to use them",
            path.display()
        ));
    }
    let raised: Vec<String> = removed
        .iter()
        .filter_map(|r| {
            let (new, old) = r.raised.as_ref()?;
            Some(format!("{} to {new} (above {old})", r.name))
        })
        .collect();
    if !raised.is_empty() {
        out.push(format!(
            "{} raises {}: ignored; until you trust it, a repository's config may lower what tern spends, retries, waits for or holds by itself, never raise it (/trust in the workspace, or `tern trust`, to use them)",
            path.display(),
            raised.join(", ")
        ));
    }
    out
}

/// A config file's settings, their numbers checked.
fn read_layer(path: &Path) -> Result<SettingsLayer, ConfigError> {
    parse_layer(path, &read_text(path)?)
}

fn read_text(path: &Path) -> Result<String, ConfigError> {
    crate::regular_file::read_to_string(path, crate::regular_file::MAX_SETTINGS_BYTES).map_err(
        |source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        },
    )
}

fn parse_layer(path: &Path, text: &str) -> Result<SettingsLayer, ConfigError> {
    let layer: SettingsLayer = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        // toml's message names the line, the column, the offending key and shows the
        // line, which may hold anything: a repository's file can hold escape sequences.
        message: crate::terminal_text::visible(&e.to_string()).into_owned(),
    })?;
    layer.check(&range::Origin::File(path))?;
    Ok(layer)
}

/// What the ranges cannot say: how settings must relate, and what they must look like.
fn validate(s: &Settings) -> Result<(), ConfigError> {
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

#[cfg(test)]
mod tests;
