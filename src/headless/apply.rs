//! `tern apply REPLY_FILE [FILES...]`: a saved model reply, proposed, decided and landed
//! by the engine exactly as the workspace does it (`Op::ProposeReply`, then review ops
//! and `ReviewOp::Apply`), with the decisions taken from `--accept` instead of keys.
//! The hunks go to stdout as a unified diff with their ids; everything else to stderr,
//! both through `egress`. A signal lets a landing under way finish (`signals`), then
//! ends the run with `EXIT_INTERRUPTED`.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{ApplyArgs, GlobalArgs};
use crate::config::Settings;
use crate::edit::{self, Workspace};
use crate::egress::errln;
use crate::engine::protocol::{
    Decision, FileStatus, Ignored, NotAppliedReason, ProposalView, ReviewOp,
};
use crate::engine::{EngineConfig, EngineHandle, EngineRole, Event, Op};

/// Every block applied and every accepted hunk was written (and committed).
pub const EXIT_OK: u8 = 0;
/// Some blocks did not apply, or some accepted hunks could not be written; the rest
/// were applied.
pub const EXIT_PARTIAL: u8 = 1;
/// Nothing was done: bad arguments, unreadable reply, unknown hunk id, or nothing could
/// be written (not a repository, another tern is writing, a merge in progress).
pub const EXIT_USAGE: u8 = 2;
/// A commit failed (a hook refused it, signing failed): nothing was committed, and
/// files already written were put back.
pub const EXIT_COMMIT: u8 = 3;
/// A signal (Ctrl-C, SIGTERM, SIGHUP) arrived; the landing under way was finished first.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs `tern apply` from `cwd`.
pub async fn run(
    args: &ApplyArgs,
    global: &GlobalArgs,
    settings: Settings,
    cwd: &Path,
) -> ExitCode {
    match apply(args, global, settings, cwd).await {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            errln!("tern apply: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Why `tern apply` did nothing (it exits with `EXIT_USAGE`).
#[derive(Debug, thiserror::Error)]
enum ApplyError {
    /// The directory could not be resolved, or is in no repository with a work tree.
    #[error("cannot open {}: {source}", dir.display())]
    Open {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Git(crate::git::GitError),
    #[error("git init {}: {source}", dir.display())]
    GitInit { dir: PathBuf, source: git2::Error },
    #[error("cannot read the reply {}: {source}", path.display())]
    ReadReply {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the reply {} is not UTF-8 text", path.display())]
    ReplyNotText { path: PathBuf },
    /// A path on the command line that tern may not touch; `what` names the argument.
    #[error("{what}: {refusal}")]
    Path {
        what: &'static str,
        refusal: edit::Refusal,
    },
    #[error("--accept: {item} is not a hunk id or file of this reply (hunks: {hunks})")]
    UnknownHunk { item: String, hunks: String },
    /// The engine could not start.
    #[error("{0}")]
    Start(anyhow::Error),
    /// The engine refused a decision, in its words.
    #[error("{0}")]
    Refused(String),
    #[error("the engine stopped")]
    EngineStopped,
}

async fn apply(
    args: &ApplyArgs,
    global: &GlobalArgs,
    mut settings: Settings,
    cwd: &Path,
) -> Result<u8, ApplyError> {
    let open = |dir: &Path| {
        let dir = dir.to_path_buf();
        |source| ApplyError::Open { dir, source }
    };
    let cwd = &cwd.canonicalize().map_err(open(cwd))?;
    if let Some(refused) = crate::git::owner_refusal(cwd) {
        return Err(ApplyError::Git(refused));
    }
    if args.git_init && git2::Repository::discover(cwd).is_err() {
        git2::Repository::init(cwd).map_err(|source| ApplyError::GitInit {
            dir: cwd.clone(),
            source,
        })?;
        errln!("tern apply: created a git repository in {}", cwd.display());
    }
    let ws = Workspace::discover(cwd).map_err(open(cwd))?;
    let reply = read_reply(&args.reply)?;
    // A file named read-only is read-only, even when also named as a file to edit.
    let read_only = repo_paths(&ws, cwd, &global.read, "--read")?;
    let files: Vec<PathBuf> = repo_paths(&ws, cwd, &args.files, "FILES")?
        .into_iter()
        .filter(|f| !read_only.contains(f))
        .collect();
    let write_ignored = repo_paths(&ws, cwd, &args.write_ignored, "--write-ignored")?;
    if let Some(format) = args.format {
        settings.edit_format = Some(format);
    }
    settings.auto_commits &= !args.no_commit;
    let mut engine = crate::engine::spawn(EngineConfig {
        settings,
        root: ws.root().to_path_buf(),
        cwd: cwd.clone(),
        record: None,
        replay: None,
        editable: files.iter().map(|p| p.display().to_string()).collect(),
        read_only: read_only.iter().map(|p| p.display().to_string()).collect(),
        map_cache: crate::repomap::CacheLocation::Disabled,
        resume: None,
        model_chosen: false,
        role: EngineRole::LandReply {
            any_file: files.is_empty() && args.files.is_empty(),
        },
    })
    .map_err(ApplyError::Start)?;
    let code = Run {
        engine: &mut engine,
        code: EXIT_OK,
        signals: crate::signals::watch(crate::signals::Exit {
            restore: || {},
            code: |_| EXIT_INTERRUPTED,
        }),
    }
    .drive(args, global.yes, &write_ignored, ws.root(), cwd, reply)
    .await;
    let _ = engine.ops.send(Op::Shutdown);
    while let Some(event) = engine.events.recv().await {
        if let Event::Exited = event {
            break;
        }
    }
    if engine.task.await.is_err() {
        return Ok(EXIT_USAGE);
    }
    code
}

/// One `tern apply` against its engine: the exit code so far.
struct Run<'a> {
    engine: &'a mut EngineHandle,
    code: u8,
    /// Hears Ctrl-C, SIGTERM and SIGHUP.
    signals: Option<crate::signals::Stop>,
}

impl Run<'_> {
    async fn drive(
        &mut self,
        args: &ApplyArgs,
        yes: bool,
        write_ignored: &[PathBuf],
        root: &Path,
        cwd: &Path,
        reply: String,
    ) -> Result<u8, ApplyError> {
        self.send(Op::ProposeReply { reply })?;
        let mut view = ProposalView::default();
        while let Some(event) = self.next().await {
            match event {
                Event::Proposal(v) => view = *v,
                Event::Idle => break,
                other => self.print(&other),
            }
        }
        show(&view);
        if !view.failures.is_empty() {
            self.code = self.code.max(EXIT_PARTIAL);
        }
        if view.files.is_empty() || args.dry_run {
            return Ok(self.code);
        }

        let decisions = decisions(&view, &args.accept, root, cwd)?;
        let view = self.decide(decisions, view).await?;
        if view.files.iter().any(|f| {
            f.hunks.iter().any(|h| {
                h.decision == Decision::Pending && !(f.cautions.is_empty() && h.cautions.is_empty())
            })
        }) {
            self.code = self.code.max(EXIT_PARTIAL);
        }
        let confirmations = self.confirm_ignored(&view, yes, write_ignored);
        let view = self.decide(confirmations, view).await?;
        if !view
            .files
            .iter()
            .flat_map(|f| &f.hunks)
            .any(|h| h.decision == Decision::Accept)
        {
            report_not_applied(&view);
            return Ok(self.code);
        }
        self.land(view).await
    }

    /// Sends review ops and returns the proposal as they left it (`view` when there
    /// are none): the engine answers each decision with the new proposal, or an error.
    async fn decide(
        &mut self,
        ops: Vec<ReviewOp>,
        mut view: ProposalView,
    ) -> Result<ProposalView, ApplyError> {
        let mut waiting = ops.len();
        for op in ops {
            self.send(Op::Review(op))?;
        }
        while waiting > 0 {
            match self.next().await {
                Some(Event::Proposal(v)) => {
                    view = *v;
                    waiting -= 1;
                }
                Some(Event::Error { text }) => return Err(ApplyError::Refused(text)),
                Some(other) => self.print(&other),
                None => return Err(ApplyError::EngineStopped),
            }
        }
        Ok(view)
    }

    /// Gitignored files with accepted hunks: a new one is created with `--yes`; an
    /// existing one (`.env`) only when named by `--write-ignored` (it may hold secrets
    /// or local settings git cannot restore; `--yes` is too broad a yes for that). The
    /// others are rejected with a note.
    fn confirm_ignored(
        &mut self,
        view: &ProposalView,
        yes: bool,
        named: &[PathBuf],
    ) -> Vec<ReviewOp> {
        let mut ops = Vec::new();
        for file in &view.files {
            let Some(ignored) = file.ignored else {
                continue;
            };
            if !file.hunks.iter().any(|h| h.decision == Decision::Accept) {
                continue;
            }
            let path = file.path.clone();
            if named.iter().any(|n| n == Path::new(&path)) || (yes && ignored == Ignored::New) {
                ops.push(ReviewOp::Confirm { path });
                continue;
            }
            self.code = self.code.max(EXIT_PARTIAL);
            if ignored == Ignored::Existing {
                errln!(
                    "tern apply: not writing {path}: it exists and git ignores it (such files hold secrets and local settings git cannot restore, so --yes is not enough); rerun with --write-ignored {path} to replace it (its content is backed up first)"
                );
            } else {
                errln!(
                    "tern apply: not creating {path}: git ignores it (rerun with --yes or --write-ignored {path} to create it)"
                );
            }
            ops.push(ReviewOp::File {
                path,
                decision: Decision::Reject,
            });
        }
        ops
    }

    /// Writes and commits the accepted hunks. Ctrl-C, SIGTERM and SIGHUP wait until
    /// the landing is done (`signals`: the repository lock marks it): killed halfway,
    /// it would leave files written but not committed. Before it writes anything
    /// (waiting for the locks or the commit message), one cancels it.
    async fn land(&mut self, view: ProposalView) -> Result<u8, ApplyError> {
        self.send(Op::Review(ReviewOp::Apply))?;
        let mut cancel_sent = false;
        let mut poll = tokio::time::interval(Duration::from_millis(50));
        loop {
            let event = tokio::select! {
                event = self.engine.events.recv() => event,
                _ = poll.tick() => {
                    if !cancel_sent && self.signalled() {
                        cancel_sent = true;
                        self.send(Op::Cancel)?;
                    }
                    continue;
                }
            };
            match event {
                None | Some(Event::Idle) => break,
                Some(
                    ref event @ Event::Applied {
                        ref files,
                        ref commit,
                        ref message,
                        ..
                    },
                ) => {
                    report_written(&view, files);
                    report_not_applied(&view);
                    if event.landing_shortfall().is_some() {
                        self.code = self.code.max(EXIT_PARTIAL);
                    }
                    if let Some(id) = commit {
                        errln!("committed {id} {message}");
                    }
                }
                Some(Event::NotApplied { reason }) => {
                    self.code = match reason {
                        NotAppliedReason::Refused => EXIT_USAGE,
                        NotAppliedReason::DirtyCommitFailed | NotAppliedReason::CommitFailed => {
                            EXIT_COMMIT
                        }
                        NotAppliedReason::Cancelled => EXIT_INTERRUPTED,
                        NotAppliedReason::Stale
                        | NotAppliedReason::NeedsConfirmation
                        | NotAppliedReason::WriteFailed => EXIT_PARTIAL,
                    };
                }
                Some(other) => self.print(&other),
            }
        }
        if self.signalled() {
            if self.code != EXIT_INTERRUPTED {
                errln!("tern apply: interrupted; the landing that was under way finished first");
            }
            return Ok(EXIT_INTERRUPTED);
        }
        Ok(self.code)
    }

    async fn next(&mut self) -> Option<Event> {
        match self.engine.events.recv().await? {
            Event::Exited => None,
            event => Some(event),
        }
    }

    fn signalled(&self) -> bool {
        self.signals.as_ref().is_some_and(|s| s.signal().is_some())
    }

    fn send(&self, op: Op) -> Result<(), ApplyError> {
        self.engine
            .ops
            .send(op)
            .map(drop)
            .map_err(|_| ApplyError::EngineStopped)
    }

    /// The engine's messages, on stderr; an error makes the run fail.
    fn print(&mut self, event: &Event) {
        match event {
            Event::Notice { text } | Event::Warning { text } => errln!("tern apply: {text}"),
            Event::Error { text } | Event::Crashed { text } => {
                self.code = self.code.max(EXIT_PARTIAL);
                errln!("tern apply: {text}");
            }
            _ => {}
        }
    }
}

/// The hunks on stdout as a unified diff (coloured on a terminal); cautions, failed
/// blocks and suggested commands on stderr.
fn show(view: &ProposalView) {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    // Coloured, the diff made its own text safe to show (it carries escapes of its own).
    let mut out = match color {
        true => crate::egress::stdout_styled(),
        false => crate::egress::stdout(),
    };
    let _ = write!(out, "{}", view.unified_diff(color));
    for file in &view.files {
        for caution in &file.cautions {
            errln!(
                "caution: {}: {caution}; `--accept all` leaves it out, accept it by its path or hunk ids",
                file.path
            );
        }
        for hunk in &file.hunks {
            for caution in &hunk.cautions {
                errln!(
                    "caution: {}: hunk {} {caution}; only `--accept {}` accepts it",
                    file.path,
                    hunk.id,
                    hunk.id
                );
            }
        }
    }
    for failure in &view.failures {
        errln!("error: {failure}");
        if let Some(near) = &failure.near {
            errln!("  did you mean (line {}):", near.line);
            for line in near.text.lines() {
                errln!("  | {line}");
            }
        }
    }
    for commands in &view.shell_commands {
        errln!("suggested command (not run):");
        for line in commands.lines() {
            errln!("  {line}");
        }
    }
}

/// What `--accept` decides: `all`, `none`, or hunk ids and file paths separated by
/// commas (those accepted, every other hunk rejected). A hunk with a caution of its own
/// is accepted only by its id: naming its file or `all` leaves it pending.
fn decisions(
    view: &ProposalView,
    accept: &str,
    root: &Path,
    cwd: &Path,
) -> Result<Vec<ReviewOp>, ApplyError> {
    let all = |decision| Ok(vec![ReviewOp::All { decision }]);
    let list = match accept.trim() {
        "all" => return all(Decision::Accept),
        "none" => return all(Decision::Reject),
        list => list,
    };
    let mut named = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let path = cwd
            .join(item)
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| item.to_string());
        let found = view.files.iter().any(|f| f.path == path)
            || view
                .files
                .iter()
                .flat_map(|f| &f.hunks)
                .any(|h| h.id == item);
        if !found {
            return Err(ApplyError::UnknownHunk {
                item: item.to_string(),
                hunks: id_list(view, |_| true),
            });
        }
        named.push((item.to_string(), path));
    }
    Ok(view
        .files
        .iter()
        .flat_map(|f| f.hunks.iter().map(move |h| (f, h)))
        .filter_map(|(file, hunk)| {
            let by_id = named.iter().any(|(id, _)| *id == hunk.id);
            let by_file = named.iter().any(|(_, path)| *path == file.path);
            let decision = match (by_id, by_file) {
                (true, _) => Decision::Accept,
                (false, true) if hunk.cautions.is_empty() => Decision::Accept,
                (false, true) => return None,
                (false, false) => Decision::Reject,
            };
            Some(ReviewOp::Hunk {
                id: hunk.id.clone(),
                decision,
            })
        })
        .collect())
}

/// What was written, with each file's hunks (from the proposal as it was landed).
fn report_written(view: &ProposalView, written: &[String]) {
    for file in view.files.iter().filter(|f| written.contains(&f.path)) {
        let verb = match file.change {
            FileStatus::Added => "created",
            _ => "wrote",
        };
        let ids: Vec<&str> = file
            .hunks
            .iter()
            .filter(|h| h.decision == Decision::Accept)
            .map(|h| h.id.as_str())
            .collect();
        errln!("{verb} {} (hunks {})", file.path, ids.join(", "));
    }
}

/// The hunks left out (rejected, or held for a look of their own).
fn report_not_applied(view: &ProposalView) {
    let left = id_list(view, |d| d != Decision::Accept);
    if !left.is_empty() {
        errln!("not applied: hunks {left}");
    }
}

fn id_list(view: &ProposalView, pick: impl Fn(Decision) -> bool) -> String {
    let ids: Vec<&str> = view
        .files
        .iter()
        .flat_map(|f| &f.hunks)
        .filter(|h| pick(h.decision))
        .map(|h| h.id.as_str())
        .collect();
    ids.join(", ")
}

fn read_reply(path: &Path) -> Result<String, ApplyError> {
    let mut bytes = Vec::new();
    let read = if path == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|b| bytes = b)
    };
    read.map_err(|source| ApplyError::ReadReply {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| ApplyError::ReplyNotText {
        path: path.to_path_buf(),
    })
}

/// Paths given on the command line (relative to `cwd`) → relative to the repository
/// root; `what` names the argument in errors.
fn repo_paths(
    ws: &Workspace,
    cwd: &Path,
    given: &[PathBuf],
    what: &'static str,
) -> Result<Vec<PathBuf>, ApplyError> {
    given
        .iter()
        .map(|f| {
            edit::resolve_path(ws.root(), &cwd.join(f))
                .map(|t| t.rel)
                .map_err(|refusal| ApplyError::Path { what, refusal })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_tern_apply_refuses_is_told_by_variant_in_the_same_words() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git2::Repository::init(&root).unwrap();
        let ws = Workspace::discover(&root).unwrap();

        let outside = repo_paths(&ws, &root, &["../x".into()], "--read").unwrap_err();
        assert!(
            matches!(
                outside,
                ApplyError::Path {
                    what: "--read",
                    refusal: edit::Refusal::Escapes(_) | edit::Refusal::Outside(_)
                }
            ),
            "{outside:?}"
        );
        assert!(outside.to_string().starts_with("--read: "), "{outside}");

        let reply = root.join("reply.txt");
        std::fs::write(&reply, b"\xff\xfe").unwrap();
        let not_text = read_reply(&reply).unwrap_err();
        assert!(matches!(not_text, ApplyError::ReplyNotText { .. }));
        assert_eq!(
            not_text.to_string(),
            format!("the reply {} is not UTF-8 text", reply.display())
        );
        let missing = read_reply(&root.join("none.txt")).unwrap_err();
        assert!(matches!(missing, ApplyError::ReadReply { .. }));
        assert!(
            missing.to_string().starts_with("cannot read the reply "),
            "{missing}"
        );

        let unknown = decisions(&ProposalView::default(), "abc1234", &root, &root).unwrap_err();
        assert!(
            matches!(&unknown, ApplyError::UnknownHunk { item, .. } if item == "abc1234"),
            "{unknown:?}"
        );
        assert_eq!(
            unknown.to_string(),
            "--accept: abc1234 is not a hunk id or file of this reply (hunks: )"
        );
    }
}
