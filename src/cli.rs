//! Command-line definitions. Every flag that is also a setting overrides the config
//! files; `main` hands the parsed `Cli` to `config::load` and then to a front end.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::{CachePrompts, ConfigSources, SettingsLayer};
use crate::edit::EditFormat;
use crate::engine::persist::Resume;
use crate::repomap::MapRefresh;

#[derive(Debug, Parser)]
#[command(
    name = "tern",
    version,
    about = "A terminal workspace for AI pair programming: see what the model sees, review every hunk.",
    long_about = "A terminal workspace for AI pair programming.\n\n\
        Run `tern` inside a git repository to open the workspace, `tern -m TEXT` for one \
        headless turn, or one of the subcommands below. Settings come from, in rising \
        order: defaults, ~/.config/tern/config.toml, <repo>/.tern.toml, --config FILE, \
        environment variables, flags."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parses the process's arguments, exiting on an error (or on --help) as
    /// `Cli::parse` does, except that an error's usage line names only what was typed:
    /// clap lists an option an environment variable gave (`--api-key <KEY>`) there as if
    /// it were required.
    pub fn parse_args() -> Cli {
        Self::parse_from_args(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// `Cli::try_parse_from`, its errors rendered as `parse_args` says.
    pub fn parse_from_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let args: Vec<T> = args.into_iter().collect();
        let matches = match Self::command().try_get_matches_from(args.iter().cloned()) {
            Ok(matches) => matches,
            // --help and --version are no errors: their text keeps the `[env: …]` notes.
            Err(e) if !e.use_stderr() => return Err(e),
            Err(e) => {
                // The same arguments without the environment fail the same way (no
                // option tern reads from one is required); only the usage differs.
                let without_env = Self::command()
                    .mut_args(|arg| arg.env(None))
                    .try_get_matches_from(args);
                return Err(match without_env {
                    Err(plain) if plain.kind() == e.kind() => plain,
                    _ => e,
                });
            }
        };
        Self::from_arg_matches(&matches).map_err(|e| e.format(&mut Self::command()))
    }
}

/// Options shared by the workspace, headless turns and every subcommand.
#[derive(Debug, Args, Default, Clone)]
pub struct GlobalArgs {
    /// Files to add to the chat as editable.
    #[arg(value_name = "FILES")]
    pub files: Vec<PathBuf>,

    /// Add a file to the chat read-only (repeatable).
    #[arg(long = "read", value_name = "FILE", global = true)]
    pub read: Vec<PathBuf>,

    /// Main model [default: gpt-4o].
    #[arg(long, env = "TERN_MODEL", global = true)]
    pub model: Option<String>,

    /// Cheaper model for commit messages and history summaries [default: gpt-4o-mini].
    #[arg(long, value_name = "MODEL", global = true)]
    pub weak_model: Option<String>,

    /// Base URL of an OpenAI-compatible API (also read from OPENAI_API_BASE)
    /// [default: https://api.openai.com/v1].
    #[arg(long, value_name = "URL", env = "OPENAI_BASE_URL", global = true)]
    pub api_base: Option<String>,

    /// API key. Never printed or logged, but a key given as this flag is visible to
    /// other users in `ps`: prefer OPENAI_API_KEY, or `api_key_cmd` in your config (a
    /// command that prints the key, e.g. from a password manager).
    #[arg(
        long,
        value_name = "KEY",
        env = "OPENAI_API_KEY",
        hide_env_values = true,
        global = true
    )]
    pub api_key: Option<String>,

    /// Override the model's context window in tokens [default: from the model table,
    /// 32768 for unknown models].
    #[arg(long, value_name = "TOKENS", global = true)]
    pub context_window: Option<usize>,

    /// Stop tern's own requests (reflections, summaries, resends, auto-test rounds)
    /// once the session has spent this many US dollars; your messages still go.
    #[arg(long, value_name = "USD", global = true)]
    pub max_cost: Option<f64>,

    /// Stop tern's own requests once what one message of yours led to has spent this
    /// many US dollars.
    #[arg(long, value_name = "USD", global = true)]
    pub max_loop_cost: Option<f64>,

    /// How the model writes edits [default: from the model table].
    #[arg(long, value_parser = edit_format(), global = true)]
    pub edit_format: Option<EditFormat>,

    /// Read settings from this TOML file, above the user and repository config files.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Append every model exchange to FILE as JSON lines (API key redacted).
    #[arg(long, value_name = "FILE", global = true)]
    pub record: Option<PathBuf>,

    /// Answer model requests from a file written by --record instead of the network.
    #[arg(long, value_name = "FILE", global = true)]
    pub replay: Option<PathBuf>,

    /// Send one message headlessly, stream the reply to stdout, and exit.
    #[arg(short = 'm', long = "message", value_name = "TEXT", global = true, value_parser = message_text)]
    pub message: Option<String>,

    /// Send the messages of FILE in turn, headlessly: messages are separated by a line
    /// `---` (write `\---` for a literal one); a message starting with `/` is a command
    /// (`//` sends one that starts with `/`).
    #[arg(long, value_name = "FILE", global = true)]
    pub script: Option<PathBuf>,

    /// Emit machine-readable JSON (one engine event per line for -m).
    #[arg(long, global = true)]
    pub json: bool,

    /// Apply proposed edits without asking (headless turns). Edits to existing files
    /// outside the chat, and edits that delete most of a file, are still not applied.
    #[arg(long, global = true)]
    pub yes: bool,

    /// With --yes, also apply edits to existing files that are not in the chat (the
    /// `edit_outside_chat` setting of the user's config).
    #[arg(long, global = true)]
    pub allow_outside_chat: bool,

    /// Let headless runs execute the commands they are asked to (`/run`, `/test`,
    /// `/lint`, `!CMD` in a script); without it each is refused. The workspace asks each
    /// time instead.
    #[arg(long, global = true)]
    pub allow_commands: bool,

    /// After accepted edits land, run `test_cmd` and send failures back to the model,
    /// at most `auto_test_rounds` times (the `auto_test` setting). With --yes, runs the
    /// loop end to end; the exit code says whether the tests pass at the end.
    #[arg(long, global = true)]
    pub auto_test: bool,

    /// The command /test and --auto-test run (the `test_cmd` setting).
    #[arg(long, value_name = "CMD", global = true)]
    pub test_cmd: Option<String>,
    /// Headless: when a reply names repository files that are not in the chat, add
    /// them (read-only unless `=editable`) and ask the same question again, at most
    /// once per message.
    #[arg(
        long,
        global = true,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "read-only",
        value_parser = PossibleValuesParser::new(["read-only", "editable"])
    )]
    pub add_needed: Option<String>,

    /// Continue a saved session of this repository instead of starting a new one: the
    /// one active last, or `--resume=ID` (an id `tern sessions` lists, or the start of
    /// one). With `tern undo`: the session whose turn is undone.
    #[arg(
        long,
        global = true,
        value_name = "ID",
        num_args = 0..=1,
        require_equals = true
    )]
    pub resume: Option<Option<String>>,

    /// Open the workspace on a copy of a demo project with a recorded session; needs no
    /// API key.
    #[arg(long)]
    pub demo: bool,

    /// UI theme: a name from themes/ or a path to a theme file [default: dark].
    #[arg(long, value_name = "NAME", global = true)]
    pub theme: Option<String>,

    /// Summarize history only when it overflows (no background checkpoint).
    #[arg(long, global = true)]
    pub no_double_buffer: bool,

    /// Do not run git hooks when committing.
    #[arg(long, global = true)]
    pub no_verify: bool,

    /// Do not commit applied edits.
    #[arg(long, global = true)]
    pub no_auto_commits: bool,

    /// Do not commit the user's own uncommitted changes before applying edits to a file.
    #[arg(long, global = true)]
    pub no_dirty_commits: bool,

    /// Send cache_control breakpoints: auto (OpenRouter and Anthropic models), on, off.
    #[arg(long, value_parser = cache_prompts(), value_name = "WHEN", global = true)]
    pub cache_prompts: Option<CachePrompts>,

    /// Token budget of the repo map [default: window/8, clamped to 1024..4096].
    #[arg(long, value_name = "TOKENS", global = true)]
    pub map_tokens: Option<usize>,

    /// When the repo map is rebuilt: auto (when the chat or files change, reusing the
    /// last map when a rebuild would take over a second and nothing the chat references
    /// changed), always (before every message), files (when the chat files, mentions or
    /// budget change), manual (on /map-refresh) [default: auto].
    #[arg(long, value_parser = map_refresh(), value_name = "WHEN", global = true)]
    pub map_refresh: Option<MapRefresh>,

    /// Write logs to this file [default: the user cache dir's tern/tern.log].
    #[arg(long, value_name = "FILE", global = true)]
    pub log_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what the next request would cost, section by section and file by file.
    Tokens(TokensArgs),
    /// Print the repository map the model would see.
    Map(MapArgs),
    /// Parse a model reply into edits, show the hunks, and apply the accepted ones.
    #[command(after_help = APPLY_EXIT_CODES)]
    Apply(ApplyArgs),
    /// Revert the last commit tern made (or every commit of the last turn of the newest
    /// session, or of `--resume=ID`'s), if it is safe to.
    #[command(after_help = UNDO_EXIT_CODES)]
    Undo(UndoArgs),
    /// Go back to before a turn of the newest session (or of `--resume=ID`): its code
    /// (every commit tern made since), its conversation, or both; without --to, list
    /// the turns and what each choice would change.
    #[command(after_help = REWIND_EXIT_CODES)]
    Rewind(RewindArgs),
    /// Review the branch diff (or the work tree) with the model, within a token budget.
    Review(ReviewArgs),
    /// List this repository's saved sessions, the one active last first: id, last
    /// active, first message, pending hunks, cost, and which are open in a tern.
    Sessions(SessionsArgs),
    /// Trust this repository's `.tern.toml` (after reading it): its model, key bindings
    /// and git settings take effect until the file changes. Where the API key goes and
    /// where tern writes outside the repository are never taken from it.
    Trust(TrustArgs),
    /// Serve the Agent Client Protocol on stdin and stdout, for an editor (Zed, a
    /// JetBrains IDE, Neovim) to run tern as its agent: each session an engine in the
    /// editor's directory, each proposed hunk accepted or rejected in the editor before
    /// tern commits it. The flags given here apply to every session.
    Acp,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Remove the old sessions (beyond the newest 50 and inactive for 30 days) now,
    /// those with pending hunks too once you confirm (a y/N question on a terminal,
    /// else --yes). Old sessions without pending hunks are removed at every start.
    #[arg(long)]
    pub prune: bool,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Stop trusting this repository's config.
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Args)]
pub struct TokensArgs {
    /// Files to count as editable chat files.
    #[arg(value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// First forget what was learned about the model's token counts from the server's
    /// reports (the state directory's calibration.json), then count without it.
    #[arg(long)]
    pub recalibrate: bool,
    /// With --recalibrate: forget it for every model.
    #[arg(long, requires = "recalibrate")]
    pub all_models: bool,
}

#[derive(Debug, Args)]
pub struct MapArgs {
    /// Token budget for the map [default: as in a chat with the given chat files].
    #[arg(long, value_name = "N")]
    pub tokens: Option<usize>,
    /// Treat FILE as a chat file: it is left out of the map and personalizes the rank.
    #[arg(long = "chat", value_name = "FILE")]
    pub chat: Vec<PathBuf>,
    /// Treat NAME as mentioned in the chat (a file name or an identifier).
    #[arg(long = "mention", value_name = "NAME")]
    pub mention: Vec<String>,
    /// Print counts and timings to stderr.
    #[arg(long)]
    pub stats: bool,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// Undo every commit of the last turn (its reply, reflections and auto-test rounds)
    /// of the newest session, or of the one `--resume=ID` names, newest first; the model
    /// hears of it on `--resume`.
    #[arg(long)]
    pub turn: bool,
}

#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The turn to go back to before, numbered from 1 as the chat shows them.
    #[arg(long, value_name = "TURN", allow_hyphen_values = true)]
    pub to: Option<String>,
    /// Only the code: every commit tern made since (the conversation stays).
    #[arg(long, requires = "to", conflicts_with = "chat")]
    pub code: bool,
    /// Only the conversation: the history, the notes owed to the model and the
    /// command outputs as they were before the turn (the code stays).
    #[arg(long, requires = "to")]
    pub chat: bool,
    /// Put back what the last rewind took away (until a message is sent).
    #[arg(long, conflicts_with_all = ["to", "list"])]
    pub redo: bool,
    /// List the turns: first line, commits, cost, and what a rewind to before each
    /// would change (also what plain `tern rewind` does).
    #[arg(long, conflicts_with = "to")]
    pub list: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// File holding the model reply, or `-` for stdin.
    #[arg(value_name = "REPLY_FILE")]
    pub reply: PathBuf,
    /// Chat files the reply's file names are matched against [default: every tracked
    /// file].
    #[arg(value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// Edit format of the reply [default: the model's].
    #[arg(long, value_parser = edit_format())]
    pub format: Option<EditFormat>,
    /// Show the hunks, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Which hunks to apply: all, none, or a comma-separated list of hunk ids.
    #[arg(long, value_name = "all|none|ID,..", default_value = "all")]
    pub accept: String,
    /// Write the accepted hunks but do not commit.
    #[arg(long)]
    pub no_commit: bool,
    /// Outside a git repository, create one here first (tern writes only inside a
    /// repository, so that every change can be undone).
    #[arg(long)]
    pub git_init: bool,
    /// Also replace this existing gitignored file (`.env`, say); repeat for more. Its
    /// previous content is backed up in tern's state directory and `tern undo` restores
    /// it; it is never committed. `--yes` alone never replaces one.
    #[arg(long, value_name = "PATH")]
    pub write_ignored: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Compare HEAD against the merge base with REF [default: the upstream branch, else
    /// main or master].
    #[arg(long, value_name = "REF", conflicts_with = "worktree")]
    pub base: Option<String>,
    /// Review uncommitted changes instead of the branch.
    #[arg(long)]
    pub worktree: bool,
    /// Token budget for the whole review request [default: the model's input window].
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Print exactly what would be sent, and a summary on stderr; no model needed.
    #[arg(long)]
    pub print_diff: bool,
    /// Split a diff that does not fit into at most N requests.
    #[arg(long, value_name = "N", default_value_t = crate::branch_review::DEFAULT_MAX_CALLS)]
    pub max_calls: usize,
    /// Show hunks with new-file line numbers (`__new hunk__` / `__old hunk__`).
    #[arg(long)]
    pub line_numbers: bool,
    /// Extra context lines before each hunk, beyond git's 3 (after: 1 more), at most 10.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub context: usize,
}

/// `--edit-format` / `--format`: the names `EditFormat` parses, listed in `--help`.
fn edit_format() -> impl TypedValueParser<Value = EditFormat> {
    PossibleValuesParser::new(["editblock", "udiff", "whole"]).try_map(|s| s.parse::<EditFormat>())
}

/// `-m TEXT`: a message with nothing to send is refused before anything starts.
fn message_text(text: &str) -> Result<String, EmptyMessage> {
    match text.trim().is_empty() {
        true => Err(EmptyMessage),
        false => Ok(text.to_string()),
    }
}

/// `-m` with nothing to send.
#[derive(Debug, thiserror::Error)]
#[error("a message needs text (it is empty or only spaces)")]
struct EmptyMessage;

/// `--map-refresh`.
fn map_refresh() -> impl TypedValueParser<Value = MapRefresh> {
    PossibleValuesParser::new(["auto", "always", "files", "manual"])
        .try_map(|s| s.parse::<MapRefresh>())
}

/// `--cache-prompts`.
fn cache_prompts() -> impl TypedValueParser<Value = CachePrompts> {
    PossibleValuesParser::new(["auto", "on", "off"]).try_map(|s| s.parse::<CachePrompts>())
}

impl GlobalArgs {
    /// The session `--resume[=ID]` names, if it was given.
    pub fn resume(&self) -> Option<Resume> {
        self.resume.as_ref().map(|id| match id {
            None => Resume::Newest,
            Some(id) => Resume::Id(id.clone()),
        })
    }

    /// The engine's configuration for a conversation in `cwd` (of the repository at
    /// `root`), with the files, recording and session these flags name.
    pub fn engine_config(
        &self,
        settings: crate::config::Settings,
        root: PathBuf,
        cwd: PathBuf,
    ) -> crate::engine::EngineConfig {
        let paths = |files: &[PathBuf]| files.iter().map(|p| p.display().to_string()).collect();
        crate::engine::EngineConfig {
            settings,
            root,
            cwd,
            record: self.record.clone(),
            replay: self.replay.clone(),
            editable: paths(&self.files),
            read_only: paths(&self.read),
            map_cache: crate::repomap::CacheLocation::UserCacheDir,
            resume: self.resume(),
            role: Default::default(),
            model_chosen: self.model.is_some(),
        }
    }

    /// `sources` with the `--config FILE` given here.
    pub fn config_sources(&self, sources: ConfigSources) -> ConfigSources {
        ConfigSources {
            explicit_file: self.config.clone(),
            ..sources
        }
    }

    /// The flags as a settings layer, the top one (`config::load` merges it last).
    pub fn settings_layer(&self) -> SettingsLayer {
        let off = |flag: bool| flag.then_some(false);
        SettingsLayer {
            model: self.model.clone(),
            weak_model: self.weak_model.clone(),
            api_base: self.api_base.clone(),
            api_key: self
                .api_key
                .as_ref()
                .filter(|k| !k.is_empty())
                .map(|k| Some(crate::config::ApiKey::new(k.clone()))),
            context_window: self.context_window.map(Some),
            edit_format: self.edit_format.map(Some),
            max_cost: self.max_cost.map(Some),
            max_loop_cost: self.max_loop_cost.map(Some),
            theme: self.theme.clone().map(crate::config::ThemeChoice::from),
            cache_prompts: self.cache_prompts,
            map_tokens: self.map_tokens.map(Some),
            map_refresh: self.map_refresh,
            log_file: self.log_file.clone().map(Some),
            double_buffer: off(self.no_double_buffer),
            verify_hooks: off(self.no_verify),
            auto_commits: off(self.no_auto_commits),
            dirty_commits: off(self.no_dirty_commits),
            edit_outside_chat: self.allow_outside_chat.then_some(true),
            auto_test: self.auto_test.then_some(true),
            test_cmd: self.test_cmd.clone().map(Some),
            ..SettingsLayer::default()
        }
    }
}

/// `tern apply --help`: the exit codes (`headless::apply::EXIT_*`).
const APPLY_EXIT_CODES: &str = "\
Exit codes:
  0  every block of the reply applied; the accepted hunks were written (and committed)
  1  some blocks failed to parse or match (each is reported), or an accepted hunk could
     not be written; everything else was applied
  2  nothing was done: unreadable reply, bad argument, unknown hunk id, or nothing
     could be written (not a git repository, another tern or git process holds its
     lock, a merge or rebase in progress, no identity to commit with, a signing key
     that does not sign)
  3  a commit failed (e.g. a hook refused it): nothing was committed, and the files
     written were put back as they were
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP): a landing under way was finished first; one that
     had not written anything yet was given up, nothing written";

/// `tern undo --help`: the exit codes.
const REWIND_EXIT_CODES: &str = "\
Exit codes:
  0  done: the turns were listed, the rewind was made, or the last one redone
  1  refused or failed, with what was not changed: no such turn (or the record no
     longer has it), the record is damaged, hunks await review, the session is open
     in another tern, your own changes to a file a rewound commit touches or a commit
     not made by tern on top, nothing to redo (a message was sent since) or what the
     redo would bring back moved; or git failed";

const UNDO_EXIT_CODES: &str = "\
Exit codes:
  0  the last tern commit (with --turn: every commit of the last turn) was undone
  1  refused: HEAD is not a tern commit, is a merge or the first commit, its files
     changed since, or a remote branch already contains it; with --turn, the turn's
     commits are no longer the newest, or one of them was refused: the newer ones
     were undone, the rest left as they were (the output says which), or the session
     has no such turn, cannot be found, or is open in another tern
  2  error: not in a git repository, another tern or git process holds its lock
     (.git/index.lock), or git failed (nothing was changed)";
