use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tern::cli::{Cli, Command};
use tern::config::{self, ConfigSources, Settings};

fn main() -> ExitCode {
    // The commands tern runs (`/run`, `/test`) are the user's own uid: they could read
    // the API key from /proc/<tern>/environ or cmdline, or ptrace tern. A process that is
    // not dumpable has those files owned by root (and leaves no core dump with the key).
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_dumpable(false);
    let cli = Cli::parse_args();
    match run(cli) {
        Ok(code) => code,
        // Whoever read the output closed it (`tern -m … | head -1`): it had all it
        // wanted, so the run ends quietly, as git's commands do.
        Err(e) if closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(
                tern::egress::stderr(),
                "tern: {}",
                tern::egress::error_text(&e)
            );
            ExitCode::FAILURE
        }
    }
}

fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let sources = cli.global.config_sources(ConfigSources::discover(&cwd));
    if let Some(Command::Trust(args)) = &cli.command {
        return Ok(tern::headless::trust::run(args, &sources));
    }
    let loaded = match config::load(&cli.global.settings_layer(), &sources, |k| {
        std::env::var(k).ok()
    }) {
        Ok(loaded) => loaded,
        Err(e) if e.is_usage() => {
            writeln!(tern::egress::stderr(), "tern: {e}")?;
            return Ok(ExitCode::from(tern::headless::apply::EXIT_USAGE));
        }
        Err(e) => return Err(e.into()),
    };
    let _log = init_logging(&loaded.settings);
    // The workspace shows them in its chat; everything else prints them first.
    let workspace = cli.command.is_none()
        && !cli.global.demo
        && cli.global.message.is_none()
        && cli.global.script.is_none();
    if !workspace {
        let mut stderr = tern::egress::stderr();
        for notice in &loaded.notices {
            let _ = writeln!(stderr, "tern: {notice}");
        }
    }
    let root = sources.repo_root.clone().unwrap_or_else(|| cwd.clone());
    let runtime = tokio::runtime::Runtime::new()?;
    let code = run_command(&cli, &sources, loaded, (root, cwd), &runtime);
    // Work left on blocking threads (a map scan stuck on a read) is not waited for,
    // unless it is a landing: that finishes.
    tern::signals::wait_for_landings();
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

/// Runs the command `cli` names, on `runtime`; `notices` come with the settings.
fn run_command(
    cli: &Cli,
    sources: &ConfigSources,
    config::Loaded { settings, notices }: config::Loaded,
    (root, cwd): (PathBuf, PathBuf),
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<ExitCode> {
    let global = &cli.global;
    match &cli.command {
        Some(Command::Tokens(args)) => {
            // Counting a file that is not there would count an empty one.
            let mut named = args.files.iter().chain(&global.files).chain(&global.read);
            if let Some(missing) = named.find(|f| !cwd.join(f).exists()) {
                anyhow::bail!("no such file: {}", missing.display());
            }
            if args.recalibrate {
                let model = (!args.all_models).then_some(settings.model.as_str());
                tern::headless::tokens::recalibrate(model)?;
            }
            let mut config = global.engine_config(settings, root, cwd);
            config
                .editable
                .extend(args.files.iter().map(|p| p.display().to_string()));
            runtime.block_on(tern::headless::tokens::run(
                config,
                global.message.clone(),
                global.json,
            ))
        }
        Some(Command::Apply(args)) => {
            Ok(runtime.block_on(tern::headless::apply::run(args, global, settings, &cwd)))
        }
        Some(Command::Map(args)) => Ok(tern::headless::map::run(args, global, &settings, &cwd)),
        Some(Command::Undo(args)) => {
            Ok(tern::headless::undo::run(&cwd, args.turn, global.resume()))
        }
        Some(Command::Rewind(args)) => Ok(tern::headless::rewind::run(
            &cwd,
            args,
            global.resume(),
            global.json,
        )),
        Some(Command::Sessions(args)) => Ok(tern::headless::sessions::run(
            &root,
            args.prune,
            global.yes,
            global.json,
        )),
        Some(Command::Review(args)) => runtime.block_on(tern::headless::review::run(
            args, global, settings, root, cwd,
        )),
        Some(Command::Trust(args)) => Ok(tern::headless::trust::run(args, sources)),
        Some(Command::Acp) => runtime.block_on(tern::acp::run(global.clone())),
        None if global.demo => runtime.block_on(tern::tui::demo::run(settings)),
        None => {
            let mut messages = match &global.script {
                Some(file) => tern::headless::script::load(file)?,
                None => vec![],
            };
            messages.extend(global.message.iter().cloned());
            let config = global.engine_config(settings, root, cwd);
            let outside_chat = config.settings.edit_outside_chat;
            if messages.is_empty() {
                let options = tern::tui::Options {
                    notices: notices
                        .into_iter()
                        .map(|n| (tern::tui::Kind::Warning, n))
                        .collect(),
                    ..tern::tui::Options::default()
                };
                return runtime.block_on(tern::tui::run(config, options));
            }
            runtime.block_on(tern::headless::chat::run(
                config,
                messages,
                global.json,
                tern::headless::chat::Consent {
                    yes: global.yes,
                    outside_chat,
                    commands: global.allow_commands,
                    add_needed: global.add_needed.as_deref().map(|mode| match mode {
                        "editable" => tern::engine::FileMode::Editable,
                        _ => tern::engine::FileMode::ReadOnly,
                    }),
                },
            ))
        }
    }
}

/// Logs go to a file, never to the terminal (the TUI owns it), redacted. Logging that
/// cannot be set up is skipped: it must never stop tern from working.
fn init_logging(settings: &Settings) -> Option<()> {
    let path = settings
        .log_file
        .clone()
        .or_else(|| dirs::cache_dir().map(|d| d.join("tern").join("tern.log")))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ok()?;
    }
    let file = tern::regular_file::append(&path).ok()?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("TERN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("tern=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(tern::egress::LogFile::new(file))
        .with_ansi_sanitization(false)
        .with_ansi(false)
        .try_init()
        .ok()
}
