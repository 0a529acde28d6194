//! `tern trust [--revoke]`: shows the repository's `.tern.toml` and trusts exactly that
//! content (or stops trusting it), so its model, key bindings and git settings apply.

use std::process::ExitCode;

use crate::cli::TrustArgs;
use crate::config::{ConfigSources, RepoConfig, TrustStore, config_hash};
use crate::egress::{errln, outln};

/// Runs `tern trust`; exit 0 when done, 2 when there is nothing to trust or the list
/// cannot be written.
pub fn run(args: &TrustArgs, sources: &ConfigSources) -> ExitCode {
    match trust(args, sources) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            errln!("tern trust: {message}");
            ExitCode::from(2)
        }
    }
}

fn trust(args: &TrustArgs, sources: &ConfigSources) -> Result<(), String> {
    let root = sources
        .repo_root
        .as_ref()
        .ok_or("not inside a git repository: there is no repository config to trust")?;
    let file = sources
        .trust_file
        .as_ref()
        .ok_or("no user config directory to keep the list of trusted repositories in")?;
    let mut store = TrustStore::open(file);
    if args.revoke {
        let was = store
            .revoke(root)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        match was {
            true => outln!("no longer trusting the config of {}", root.display()),
            false => outln!("the config of {} was not trusted", root.display()),
        }
        warn_damage(&store);
        return Ok(());
    }
    let repo = RepoConfig::read(root)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} has no .tern.toml", root.display()))?;
    outln!("{}:", repo.path.display());
    for line in repo.text.lines() {
        outln!("  {line}");
    }
    let trusted = store.trust(root, &repo.text);
    warn_damage(&store);
    trusted.map_err(|e| format!("cannot write {}: {e}", file.display()))?;
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
