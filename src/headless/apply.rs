//! `tern apply REPLY_FILE [FILES...]`: parse a saved model reply, print its hunks as a
//! unified diff with their ids, write the accepted ones and commit them.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cli::{ApplyArgs, GlobalArgs};
use crate::config::Settings;
use crate::edit::{
    self, Applied, ApplyOutcome, Decision, EditError, FileSet, HunkId, Problem, Proposal, Proposed,
    Select, ShellSuggestion, Workspace,
};
use crate::git::{self, CommitOptions, LandOptions, Landed};
use crate::llm::ModelInfo;

/// Every block applied and every accepted hunk was written (and committed).
pub const EXIT_OK: u8 = 0;
/// Some blocks did not apply, or some accepted hunks could not be written; the rest
/// were applied.
pub const EXIT_PARTIAL: u8 = 1;
/// Nothing was done: bad arguments, unreadable reply, unknown hunk id, or nothing could
/// be written (not a repository, another tern is writing, a merge in progress).
pub const EXIT_USAGE: u8 = 2;
/// The edits were written but the commit failed (a hook refused it, no identity).
pub const EXIT_COMMIT: u8 = 3;
/// A signal (Ctrl-C, SIGTERM) arrived; the landing under way was finished first.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs `tern apply` from `cwd`.
pub fn run(args: &ApplyArgs, global: &GlobalArgs, settings: &Settings, cwd: &Path) -> ExitCode {
    match apply(args, global, settings, cwd) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("tern apply: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn apply(
    args: &ApplyArgs,
    global: &GlobalArgs,
    settings: &Settings,
    cwd: &Path,
) -> Result<u8, String> {
    let cwd = &cwd
        .canonicalize()
        .map_err(|e| format!("cannot open {}: {e}", cwd.display()))?;
    if args.git_init && git2::Repository::discover(cwd).is_err() {
        git2::Repository::init(cwd).map_err(|e| format!("git init {}: {e}", cwd.display()))?;
        eprintln!("tern apply: created a git repository in {}", cwd.display());
    }
    let ws = Workspace::discover(cwd).map_err(|e| format!("cannot open {}: {e}", cwd.display()))?;
    let reply = read_reply(&args.reply)?;
    let format = args
        .format
        .or(settings.edit_format)
        .unwrap_or_else(|| ModelInfo::lookup(&settings.model).edit_format);
    let repo_files = ws.files();
    let chat = if args.files.is_empty() {
        repo_files.clone()
    } else {
        repo_paths(&ws, cwd, &args.files, "FILES")?
    };
    let Proposed {
        mut proposal,
        errors,
        shell,
        blocks,
    } = edit::propose(&ws, &reply, format, &FileSet::new(chat, repo_files));
    show(&proposal, &errors, &shell);
    let mut code = if errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_PARTIAL
    };
    if blocks == 0 {
        eprintln!("tern apply: no {format} edit blocks found in the reply");
        return Ok(EXIT_PARTIAL);
    }
    if proposal.is_empty() {
        eprintln!("tern apply: nothing to change");
        return Ok(code);
    }
    if args.dry_run {
        return Ok(code);
    }
    decide(&mut proposal, &args.accept, ws.root(), cwd)?;
    if proposal.files().iter().any(|f| {
        !f.cautions().is_empty() && f.hunks().iter().any(|h| h.decision == Decision::Pending)
    }) {
        code = EXIT_PARTIAL;
    }
    let write_ignored = repo_paths(&ws, cwd, &args.write_ignored, "--write-ignored")?;
    if !confirm_ignored(&mut proposal, global.yes, &write_ignored) {
        code = EXIT_PARTIAL;
    }

    // SIGINT, SIGTERM and SIGHUP wait until the landing is done: killed halfway, it
    // would leave files written but not committed, and temporary files behind. While
    // waiting for another tern, one cancels the landing instead.
    let interrupted = SignalsDeferred::new();
    let options = LandOptions {
        commit: !args.no_commit && settings.auto_commits,
        dirty_commits: settings.dirty_commits,
        commit_options: CommitOptions::from(settings),
        backup_root: Some(crate::config::backup_root(ws.root())),
        cancel: Some(&interrupted.arrived),
    };
    let landed = git::land(ws.repo(), &mut proposal, options, git::message::fallback);
    if interrupted.arrived() {
        match &landed {
            Landed::Refused(e @ git::GitError::Interrupted) => eprintln!("tern apply: {e}"),
            _ => {
                report_landed_quietly(&landed);
                eprintln!("tern apply: interrupted; the landing that was under way finished first");
            }
        }
        return Ok(EXIT_INTERRUPTED);
    }
    match landed {
        Landed::Refused(e) => {
            eprintln!("tern apply: nothing was written: {e}");
            return Ok(EXIT_USAGE);
        }
        Landed::DirtyCommitFailed(e) => {
            eprintln!(
                "tern apply: could not commit your uncommitted changes first, so nothing was written: {e}"
            );
            return Ok(EXIT_COMMIT);
        }
        Landed::NotWritten(outcome) => {
            report_not_written(&outcome);
            return Ok(EXIT_PARTIAL);
        }
        Landed::Written {
            dirty,
            applied,
            commit,
        } => {
            if let Some(c) = dirty {
                eprintln!(
                    "committed your own changes first: {} {}",
                    c.short_id(),
                    c.summary
                );
            }
            report_written(&proposal, &applied);
            if !applied.failed.is_empty() {
                code = EXIT_PARTIAL;
            }
            match commit {
                Ok(Some(c)) => eprintln!("committed {} {}", c.short_id(), c.summary),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("tern apply: the edits were written but not committed: {e}");
                    return Ok(EXIT_COMMIT);
                }
            }
        }
    }
    Ok(code)
}

/// The hunks on stdout as a unified diff; failed blocks and suggested commands on stderr.
fn show(proposal: &Proposal, errors: &[EditError], shell: &[ShellSuggestion]) {
    let tty = std::io::stdout().is_terminal();
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    for file in proposal.files() {
        let diff = edit::unified_diff(file, |_| true, color);
        print!(
            "{}",
            crate::terminal_text::for_terminal(&diff, tty && !color)
        );
        for caution in file.cautions() {
            eprintln!(
                "caution: {}: {caution}; `--accept all` leaves it out, accept it by its path or hunk ids",
                file.path().display()
            );
        }
    }
    let err_tty = std::io::stderr().is_terminal();
    let shown = |text: &str| crate::terminal_text::for_terminal(text, err_tty).into_owned();
    for e in errors {
        eprintln!("error: {}", shown(&e.to_string()));
        if let Problem::NoMatch {
            near: Some(near), ..
        } = &e.problem
        {
            eprintln!("  did you mean (line {}):", near.line);
            for line in near.text.lines() {
                eprintln!("  | {}", shown(line));
            }
        }
    }
    for s in shell {
        eprintln!("suggested {} command (not run):", s.language);
        for line in s.commands.lines() {
            eprintln!("  {line}");
        }
    }
}

/// Gitignored files with accepted hunks: a new one is created with `--yes`; an
/// existing one (`.env`) only when named by `--write-ignored` (it may hold secrets or
/// local settings git cannot restore; `--yes` is too broad a yes for that). The others
/// are rejected with a note. False when one was rejected.
fn confirm_ignored(proposal: &mut Proposal, yes: bool, named: &[PathBuf]) -> bool {
    let ignored: Vec<(PathBuf, bool)> = proposal
        .files()
        .iter()
        .filter(|f| f.needs_confirmation() && f.accepted().next().is_some())
        .map(|f| (f.path().to_path_buf(), f.is_ignored_existing()))
        .collect();
    let mut all = true;
    for (path, existing) in &ignored {
        if named.contains(path) || (yes && !existing) {
            let _ = proposal.confirm(path);
            continue;
        }
        all = false;
        if *existing {
            eprintln!(
                "tern apply: not writing {}: it exists and git ignores it (such files hold secrets and local settings git cannot restore, so --yes is not enough); rerun with --write-ignored {} to replace it (its content is backed up first)",
                path.display(),
                path.display()
            );
        } else {
            eprintln!(
                "tern apply: not creating {}: git ignores it (rerun with --yes or --write-ignored {} to create it)",
                path.display(),
                path.display()
            );
        }
        let _ = proposal.decide(Select::File(path), Decision::Reject);
    }
    all
}

/// Why nothing was written.
fn report_not_written(outcome: &ApplyOutcome) {
    match outcome {
        ApplyOutcome::Stale(stale) => {
            for s in stale {
                eprintln!(
                    "tern apply: {} changed on disk while applying; nothing was written",
                    s.path.display()
                );
            }
        }
        ApplyOutcome::NeedsConfirmation(paths) => {
            for p in paths {
                eprintln!(
                    "tern apply: {} needs confirmation; nothing was written",
                    p.display()
                );
            }
        }
        ApplyOutcome::Applied(_) => {}
    }
}

/// What was written and what was not.
fn report_written(proposal: &Proposal, applied: &Applied) {
    for w in &applied.written {
        let verb = if w.created { "created" } else { "wrote" };
        eprintln!(
            "{verb} {} (hunks {})",
            w.path.display(),
            id_list(w.hunks.iter().copied())
        );
    }
    for b in &applied.backups {
        eprintln!(
            "git ignores {}, so its previous content was saved to {} (tern undo restores it; it was not committed)",
            b.path.display(),
            b.saved_at.display()
        );
    }
    for f in &applied.failed {
        eprintln!(
            "tern apply: could not write {}: {}",
            f.path.display(),
            f.error
        );
    }
    if proposal.hunk_count() > 0 {
        eprintln!("not applied: hunks {}", id_list(proposal.hunk_ids()));
    }
}

fn read_reply(path: &Path) -> Result<String, String> {
    let mut bytes = Vec::new();
    let read = if path == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|b| bytes = b)
    };
    read.map_err(|e| format!("cannot read the reply {}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("the reply {} is not UTF-8 text", path.display()))
}

/// Paths given on the command line (relative to `cwd`) → relative to the repository
/// root; `what` names the argument in errors.
fn repo_paths(
    ws: &Workspace,
    cwd: &Path,
    given: &[PathBuf],
    what: &str,
) -> Result<Vec<PathBuf>, String> {
    given
        .iter()
        .map(|f| {
            edit::resolve_path(ws.root(), &cwd.join(f))
                .map(|t| t.rel)
                .map_err(|r| format!("{what}: {r}"))
        })
        .collect()
}

/// Applies `--accept`: `all`, `none`, or hunk ids and file paths separated by commas
/// (those accepted, everything else rejected).
fn decide(proposal: &mut Proposal, accept: &str, root: &Path, cwd: &Path) -> Result<(), String> {
    match accept.trim() {
        "all" => {
            let _ = proposal.decide(Select::All, Decision::Accept);
        }
        "none" => {
            let _ = proposal.decide(Select::All, Decision::Reject);
        }
        list => {
            for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let found = match item.parse::<HunkId>() {
                    Ok(id) => proposal.decide(Select::Hunk(id), Decision::Accept),
                    Err(_) => {
                        let path = cwd
                            .join(item)
                            .strip_prefix(root)
                            .map(Path::to_path_buf)
                            .unwrap_or_else(|_| PathBuf::from(item));
                        proposal.decide(Select::File(&path), Decision::Accept)
                    }
                };
                if found.is_err() {
                    return Err(format!(
                        "--accept: {item} is not a hunk id or file of this reply (hunks: {})",
                        id_list(proposal.hunk_ids())
                    ));
                }
            }
            // Everything not named is rejected.
            let rest: Vec<HunkId> = proposal
                .files()
                .iter()
                .flat_map(|f| f.hunks())
                .filter(|h| h.decision == Decision::Pending)
                .map(|h| h.id)
                .collect();
            for id in rest {
                let _ = proposal.decide(Select::Hunk(id), Decision::Reject);
            }
        }
    }
    Ok(())
}

fn id_list(ids: impl Iterator<Item = HunkId>) -> String {
    ids.map(|id| id.to_string()).collect::<Vec<_>>().join(", ")
}

/// Signals that would end the process, held back while it lands edits.
struct SignalsDeferred {
    arrived: Arc<AtomicBool>,
    landed: Arc<AtomicBool>,
}

impl SignalsDeferred {
    fn new() -> SignalsDeferred {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let arrived = Arc::new(AtomicBool::new(false));
        let landed = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            let _ = signal_hook::flag::register(sig, arrived.clone());
            // Unregistering would leave the signal ignored (signal-hook does not bring
            // the default back), so once landed, a signal ends the process as usual.
            let _ = signal_hook::flag::register_conditional_shutdown(
                sig,
                i32::from(EXIT_INTERRUPTED),
                landed.clone(),
            );
        }
        SignalsDeferred { arrived, landed }
    }

    /// Whether one arrived; from here on a signal ends the process at once.
    fn arrived(self) -> bool {
        self.landed.store(true, Ordering::SeqCst);
        self.arrived.load(Ordering::SeqCst)
    }
}

/// One line on what an interrupted landing did.
fn report_landed_quietly(landed: &Landed) {
    if let Landed::Written {
        applied,
        commit: Ok(Some(c)),
        ..
    } = landed
    {
        eprintln!(
            "tern apply: wrote {} files; committed {} {}",
            applied.written.len(),
            c.short_id(),
            c.summary
        );
    }
}
