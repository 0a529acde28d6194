//! `tern trust [--revoke]`: shows the repository's `.tern.toml` and trusts exactly that
//! content (or stops trusting it), so its model, key bindings and git settings apply.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::TrustArgs;
use crate::config::{ConfigError, ConfigSources, RepoConfig, TrustStore, config_hash};
use crate::egress::{errln, outln};

/// Runs `tern trust`; exit 0 when done, 2 when there is nothing to trust or the list
/// cannot be written, 128 + the signal (said) when one stopped it.
pub fn run(args: &TrustArgs, sources: &ConfigSources) -> ExitCode {
    let signals = super::StopLine::watch("tern trust");
    signals.end(match trust(args, sources) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            errln!("tern trust: {message}");
            ExitCode::from(2)
        }
    })
}

/// Why `tern trust` did nothing.
#[derive(Debug, thiserror::Error)]
enum TrustError {
    #[error("not inside a git repository: there is no repository config to trust")]
    NoRepository,
    #[error("no user config directory to keep the list of trusted repositories in")]
    NoConfigDir,
    #[error("{} has no .tern.toml", .0.display())]
    NoRepoConfig(PathBuf),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The list of trusted repositories could not be written.
    #[error("cannot write {}: {source}", file.display())]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
}

fn trust(args: &TrustArgs, sources: &ConfigSources) -> Result<(), TrustError> {
    let root = sources.repo_root.as_ref().ok_or(TrustError::NoRepository)?;
    let file = sources.trust_file.as_ref().ok_or(TrustError::NoConfigDir)?;
    let cannot_write = |source| TrustError::Write {
        file: file.clone(),
        source,
    };
    let mut store = TrustStore::open(file);
    if args.revoke {
        let was = store.revoke(root).map_err(cannot_write)?;
        match was {
            true => outln!("no longer trusting the config of {}", root.display()),
            false => outln!("the config of {} was not trusted", root.display()),
        }
        warn_damage(&store);
        return Ok(());
    }
    let repo = RepoConfig::read(root)?.ok_or_else(|| TrustError::NoRepoConfig(root.clone()))?;
    outln!("{}:", repo.path.display());
    for line in repo.text.lines() {
        outln!("  {line}");
    }
    let trusted = store.trust(root, &repo.text);
    warn_damage(&store);
    trusted.map_err(cannot_write)?;
    outln!(
        "trusted this content (sha256 {}): {}; when the file changes, tern ignores those settings again until you run `tern trust` again. {}",
        config_hash(&repo.text),
        repo.trust_effect(),
        crate::config::never_from_repository_note()
    );
    Ok(())
}

/// The trust list could not be used: say so (and where it was kept, if replaced).
fn warn_damage(store: &TrustStore) {
    if let Some(damage) = store.damage() {
        errln!("tern trust: warning: {damage}");
    }
}
