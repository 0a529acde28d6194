//! `tern -m TEXT` and `tern --script FILE`: turns without the TUI. The reply streams to
//! stdout; everything else (notices, retries, the token line) goes to stderr so stdout
//! stays the reply. Both go through `egress` (redacted; on a terminal, control
//! characters made visible). Proposed edits are applied only with `--yes`, and never
//! once Ctrl-C interrupted the reply; otherwise their diff is printed and the tree is
//! left untouched. A signal ends the run (`signals`): SIGINT once what the interrupted
//! reply held is shown, SIGTERM and SIGHUP at once.

use std::io::Write;
use std::process::ExitCode;

use crate::engine::protocol::{
    Caution, Command, EditFailureView, NeededFile, ProposalView, thousands,
};
use crate::engine::{EngineConfig, Event, FileMode, Op};
use crate::llm::Finish;

/// What the user consented to apply without being asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Consent {
    /// `--yes`: the edits to chat files.
    pub yes: bool,
    /// `--allow-outside-chat` or the user's `edit_outside_chat`: also edits to existing
    /// files outside the chat.
    pub outside_chat: bool,
    /// `--allow-commands`: the commands the run asks for (`/run`, `/test`, `/lint`).
    pub commands: bool,
    /// `--add-needed`: add the files a reply names that are not in the chat, in this
    /// mode, and ask again (once per message, so a model cannot loop).
    pub add_needed: Option<FileMode>,
}

/// Runs the given messages in turn and exits. Returns a failure exit code when a turn
/// fails, a reply is incomplete, or edit blocks could not be applied.
pub async fn run(
    config: EngineConfig,
    messages: Vec<String>,
    json: bool,
    consent: Consent,
) -> anyhow::Result<ExitCode> {
    // Without a key no message can be sent: said once, before anything starts (the
    // engine's start warning and the turn's failure said it twice).
    if let Some(e) = crate::llm::ClientOptions::from(&config.settings)
        .unusable(config.replay.as_deref())
        .filter(|_| {
            messages
                .iter()
                .any(|m| crate::engine::input::parse(m).is_ok_and(|op| op.starts_turn()))
        })
    {
        return Err(e.into());
    }
    let auto_test = config.settings.auto_test;
    let signals = crate::signals::watch(crate::signals::Exit::default());
    let mut engine = crate::engine::spawn(config)?;
    let mut io = super::streams::Streams::new(json);
    let total = messages.len();
    // The entries, kept to name those not sent when the run stops early.
    let entries = messages.clone();
    let mut queue = messages.into_iter();
    // Entries (messages and commands) whose turn came.
    let mut sent = 0;
    // Why the run stops early (the first failure), for the exit code and `--json`.
    let mut stopped: Option<String> = None;
    let mut proposal: Option<ProposalView> = None;
    let mut edits_handled = false;
    // Ctrl-C withdraws --yes: what the interrupted reply proposed is shown, not applied.
    let mut interrupted = false;
    // Only what a reply of this run proposed is applied or discarded here; hunks a
    // resumed session kept for review stay as they are.
    let mut replied = false;
    let mut resumed_hunks = 0;
    // The session this run saves to, for the way back to it.
    let mut session: Option<String> = None;
    let mut resumed_failures_shown = false;
    // The last test or lint run: the run fails when it failed (`--auto-test` ends
    // with the tests still failing, or a `/test` was left failing).
    let mut last_check: Option<(String, bool)> = None;
    // Files the last reply needs, to add at the next Idle; whether this message was
    // already asked again with them.
    let mut needed: Option<Vec<NeededFile>> = None;
    let mut asked_again = false;
    // What `--yes` held back, as the run's reason names it.
    let mut held: Vec<String> = Vec::new();

    let Some(first) = queue.next() else {
        return Ok(ExitCode::SUCCESS);
    };
    // What the edge answers itself (a line that names no command), before the engine's.
    let mut answered = std::collections::VecDeque::new();
    if submit(
        &engine.ops,
        &first,
        queue.len() == 0,
        consent.commands,
        &mut answered,
    ) {
        sent += 1;
    }
    // The last entry whose turn came, for the reason a script stopped early.
    let mut last_entry = first;
    // A signal stops the reply (a command running is killed with its whole group).
    // SIGINT then shows what the interrupted reply held; SIGTERM or SIGHUP (a closed
    // terminal, a supervisor) end the run at once.
    let on_signal = signals.clone().map(|mut stop| {
        let ops = engine.ops.clone();
        tokio::spawn(async move {
            let signal = stop.arrived().await;
            let _ = ops.send(Op::Cancel);
            if signal != signal_hook::consts::SIGINT {
                let _ = ops.send(Op::Shutdown);
            }
        })
    });
    let signalled = || signals.as_ref().and_then(crate::signals::Stop::signal);

    // An op the engine no longer takes is not an error of its own: a signal's Shutdown
    // can overtake this loop (a landing finishing under SIGTERM), and the events still
    // queued say how the run ended. So sends below ignore a stopped engine.
    loop {
        let (op, event) = match answered.pop_front() {
            Some(event) => (None, event),
            None => match engine.events.next().await {
                Some(envelope) => (envelope.op, envelope.event),
                None => break,
            },
        };
        if json {
            super::json::print_event(&mut io.stdout, op, &event)?;
        }
        if let Some(why) = event.landing_shortfall() {
            stop(&mut stopped, why);
        }
        match &event {
            Event::Delta { text } if !json => io.reply(text)?,
            Event::TurnFinished {
                finish,
                usage,
                usage_estimated,
                cost,
                session_cost,
                ..
            } => {
                if let Some(why) = finish.incomplete() {
                    stop(&mut stopped, why);
                }
                interrupted |= *finish == Finish::Cancelled;
                replied = true;
                if !json {
                    io.end_reply()?;
                    if let Some(why) = finish.incomplete() {
                        writeln!(io.err()?, "tern: {why}")?;
                    }
                    let u = usage.unwrap_or_default();
                    let tokens = if *usage_estimated {
                        format!(
                            "≈{} sent, ≈{} received (estimated: tern's count, not the server's)",
                            u.prompt_tokens, u.completion_tokens
                        )
                    } else {
                        format!(
                            "{} sent ({} cached), {} received",
                            u.prompt_tokens, u.cached_tokens, u.completion_tokens
                        )
                    };
                    writeln!(
                        io.err()?,
                        "Tokens: {tokens}. Cost: ${cost:.4} message, ${session_cost:.4} session."
                    )?;
                }
            }
            // A new reply may propose new edits (the auto-test loop's fix rounds).
            Event::TurnStarted { .. } => edits_handled = false,
            Event::ConfirmCommand {
                command, reason, ..
            } => {
                let _ = engine.ops.send(Op::AnswerCommand {
                    run: consent.commands,
                });
                // Nobody is asked here: the line says what the question would have.
                if let (true, false, Some(reason)) = (consent.commands, json, reason) {
                    writeln!(
                        io.err()?,
                        "tern: running `{command}` ({reason}), as --allow-commands lets it"
                    )?;
                }
                if !consent.commands {
                    // The engine says "not run"; this says how to let it run.
                    if !json {
                        writeln!(
                            io.err()?,
                            "tern: pass --allow-commands to let tern run the commands a headless run asks for"
                        )?;
                    }
                    stop(&mut stopped, format!("not run: `{command}`"));
                }
            }
            Event::CommandStarted { command, .. } if !json => {
                writeln!(io.err()?, "tern: $ {command}")?;
            }
            Event::CommandProgress { text, .. } if !json => write!(io.err()?, "{text}")?,
            Event::CommandFinished {
                command,
                purpose,
                passed,
                outcome,
                tokens,
                in_context,
                ..
            } => {
                if *purpose == crate::engine::protocol::CommandPurpose::Run {
                    // A command of the run's own that failed fails the run, as in a shell.
                    if !passed {
                        stop(&mut stopped, format!("`{command}`: {outcome}"));
                    }
                } else {
                    last_check = Some((command.clone(), *passed));
                }
                if !json {
                    let context = match in_context {
                        true => format!("; its output is in the context (≈{tokens} tokens)"),
                        false => String::new(),
                    };
                    writeln!(io.err()?, "tern: `{command}`: {outcome}{context}")?;
                }
            }
            Event::OutputDropped { .. } => {}
            Event::OutputAdded { command, tokens } if !json => writeln!(
                io.err()?,
                "tern: the output of `{command}` is in the context (≈{tokens} tokens)"
            )?,
            Event::Needed {
                files, more_files, ..
            } if !files.is_empty() => {
                let adding = consent.add_needed.filter(|_| !asked_again);
                if !json {
                    let more = match more_files {
                        0 => String::new(),
                        n => format!(" and {n} more"),
                    };
                    let advice = match (consent.add_needed, adding) {
                        (None, _) => "; --add-needed adds them and asks again",
                        (Some(_), None) => "; not added: the question was already asked again",
                        (Some(_), Some(_)) => "",
                    };
                    writeln!(
                        io.err()?,
                        "tern: the reply names files that are not in the chat: {}{more}{advice}",
                        costed(files)
                    )?;
                }
                if adding.is_some() {
                    needed = Some(files.clone());
                }
            }
            Event::TurnFailed { error, .. } => {
                stop(&mut stopped, error.clone());
                if !json {
                    writeln!(io.err()?, "tern: {error}")?;
                }
            }
            Event::Ready { session: id, .. } => session.clone_from(id),
            Event::Proposal(view) if !replied => {
                resumed_hunks = view.files.iter().map(|f| f.hunks.len()).sum();
                // Hunks of the resumed proposal that went stale since are shown once.
                if !json && !std::mem::replace(&mut resumed_failures_shown, true) {
                    for failure in view.failures.iter().filter(|f| f.hunk.is_some()) {
                        print_failure(io.err()?, failure)?;
                    }
                }
            }
            Event::Proposal(view) => {
                proposal =
                    (!view.files.is_empty() || !view.failures.is_empty()).then(|| (**view).clone());
            }
            // Each file and hunk `--yes` held back is named, in the run's reason too.
            Event::HeldBack {
                path,
                hunk,
                cautions,
            } => {
                let what = match hunk {
                    Some(id) => format!("hunk {id} of {path}"),
                    None => format!("edits to {path}"),
                };
                let said = held_reason(&held);
                held.push(what);
                if stopped.is_none() || stopped.as_deref() == Some(said.as_str()) {
                    stopped = Some(held_reason(&held));
                }
                if !json {
                    let why: Vec<String> = cautions.iter().map(ToString::to_string).collect();
                    let target = match hunk {
                        Some(id) => format!("hunk {id} of {path}"),
                        None => path.clone(),
                    };
                    writeln!(
                        io.err()?,
                        "tern: not applied to {target} ({}): {}",
                        why.join(", "),
                        held_advice(cautions, session.as_deref())
                    )?;
                }
            }
            Event::Reflection { attempt, max, .. } if !json => writeln!(
                io.err()?,
                "tern: some edit blocks did not apply; asking the model to fix them ({attempt} of {max})"
            )?,
            Event::Applied {
                files,
                accepted,
                commit,
                message,
                ..
            } if !json => {
                let commit = commit
                    .as_ref()
                    .map_or(String::new(), |c| format!("; committed {c} {message}"));
                writeln!(
                    io.err()?,
                    "tern: applied {} to {}{commit}",
                    crate::plural::count(*accepted, "hunk"),
                    files.join(", ")
                )?;
            }
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } if !json => {
                writeln!(
                    io.err()?,
                    "tern: {reason}; retry {attempt} in {:.2} s",
                    *delay_ms as f64 / 1000.0
                )?;
            }
            Event::Notice { text } if !json => writeln!(io.err()?, "tern: {text}")?,
            Event::Rewound { text, .. } if !json => writeln!(io.err()?, "tern: {text}")?,
            Event::Timeline { turns, redo } if !json => write!(
                io.err()?,
                "{}",
                crate::engine::protocol::timeline_text(&turns[..], redo.as_deref())
            )?,
            Event::Summarized {
                replaced_messages,
                replaced_tokens,
                summary_tokens,
            } if !json => writeln!(
                io.err()?,
                "tern: history: {replaced_messages} messages ({replaced_tokens} tokens) replaced by a {summary_tokens}-token summary"
            )?,
            Event::Warning { text } if !json => writeln!(io.err()?, "tern: warning: {text}")?,
            Event::Error { text } => {
                stop(&mut stopped, text.clone());
                if !json {
                    writeln!(io.err()?, "tern: error: {text}")?;
                }
            }
            Event::Output { text, .. } if !json => write!(io.err()?, "{text}")?,
            // `/sessions`: the lines `tern sessions` prints.
            Event::Sessions { sessions, .. } if !json => {
                let now = std::time::SystemTime::now();
                for s in sessions {
                    writeln!(io.err()?, "{}", super::sessions::text_line(s, now))?;
                }
            }
            Event::Idle => {
                if let Some(view) = proposal.take().filter(|_| !edits_handled) {
                    edits_handled = true;
                    if !view.failures.is_empty() {
                        let named: Vec<String> =
                            view.failures.iter().map(ToString::to_string).collect();
                        stop(
                            &mut stopped,
                            format!(
                                "{} could not be applied: {}",
                                crate::plural::count(view.failures.len(), "edit block"),
                                named.join("; ")
                            ),
                        );
                    }
                    if !json {
                        for failure in &view.failures {
                            print_failure(io.err()?, failure)?;
                        }
                        for commands in &view.shell_commands {
                            writeln!(io.err()?, "tern: suggested commands (not run):\n{commands}")?;
                        }
                    }
                    if view.files.is_empty() {
                        // Only failures: nothing to apply.
                    } else if consent.yes && !interrupted {
                        // The engine accepts what may land unlooked-at, says what it
                        // held back, and applies; the next Idle is the landing's.
                        let _ = engine.ops.send(Op::ApplyAllowed {
                            outside_chat: consent.outside_chat,
                        });
                        continue;
                    } else {
                        if !json {
                            write!(io.stdout, "{}", view.unified_diff(false))?;
                            io.stdout.end_text()?;
                            let why = if interrupted {
                                "the reply was interrupted"
                            } else {
                                "pass --yes to apply them"
                            };
                            writeln!(io.err()?, "tern: the edits above were not applied; {why}")?;
                        }
                        // A command, so an Idle follows.
                        let _ = engine.ops.send(Op::Command {
                            command: Command::Discard,
                            args: String::new(),
                        });
                        continue;
                    }
                }
                edits_handled = false;
                if let Some(files) = needed.take()
                    && let Some(mode) = consent.add_needed
                    && stopped.is_none()
                    && !interrupted
                {
                    asked_again = true;
                    if !json {
                        let mode = match mode {
                            FileMode::ReadOnly => "read-only",
                            FileMode::Editable => "editable",
                        };
                        writeln!(
                            io.err()?,
                            "tern: added {} {mode}; asking the question again",
                            costed(&files)
                        )?;
                    }
                    let _ = engine.ops.send(Op::AddNeeded {
                        paths: files.into_iter().map(|f| f.path).collect(),
                        mode,
                    });
                    continue;
                }
                // An entry whose test or lint still fails after its fix rounds has
                // failed, as a failed `/run` has: the entries after it are not run.
                if queue.len() > 0 && stopped.is_none() {
                    still_failing(&mut last_check, &mut stopped, json, &mut io)?;
                }
                match queue.next() {
                    Some(next) if stopped.is_none() && signalled().is_none() => {
                        asked_again = false;
                        if submit(
                            &engine.ops,
                            &next,
                            queue.len() == 0,
                            consent.commands,
                            &mut answered,
                        ) {
                            sent += 1;
                        }
                        last_entry = next;
                    }
                    _ => {
                        let _ = engine.ops.send(Op::Shutdown);
                    }
                }
            }
            Event::Crashed { text } => {
                stop(&mut stopped, text.clone());
                writeln!(io.err()?, "tern: {text}")?;
            }
            Event::Exited => break,
            _ => {}
        }
    }
    if let Some(task) = on_signal {
        task.abort();
    }
    if let Some(signal) = signalled() {
        let why = crate::signals::stopped_by(signal);
        if !json {
            writeln!(io.err()?, "tern: {why}")?;
        }
        stop(&mut stopped, why);
    }
    if sent < total {
        let not_sent = format!(
            "{} not sent: {}",
            crate::plural::count(total - sent, "message"),
            named(entries.get(sent..).unwrap_or_default())
        );
        let at = format!("stopped at message {sent} of {total}");
        match &stopped {
            Some(_) if !json => writeln!(io.err()?, "tern: {at}: {not_sent}")?,
            Some(_) => {}
            // Nothing failed: the engine ended the run itself (`/quit`).
            None => {
                let first_line = last_entry.lines().next().unwrap_or_default();
                let why = format!("{at} (`{first_line}`): {not_sent}");
                if !json {
                    writeln!(io.err()?, "tern: {why}")?;
                }
                stop(&mut stopped, why);
            }
        }
    }
    if resumed_hunks > 0 && !json {
        let resume = session.map_or("--resume".to_string(), |id| format!("--resume={id}"));
        writeln!(
            io.err()?,
            "tern: {} of the resumed session left for review, neither applied nor discarded (review in the workspace: tern {resume})",
            crate::plural::count(resumed_hunks, "proposed hunk"),
        )?;
    }
    let unchecked = "--auto-test: the tests never ran (no edits landed, or no test_cmd is set), so nothing says they pass";
    still_failing(&mut last_check, &mut stopped, json, &mut io)?;
    match &last_check {
        None if auto_test && stopped.is_none() => {
            stop(&mut stopped, unchecked.into());
            if !json {
                writeln!(io.err()?, "tern: {unchecked}")?;
            }
        }
        _ => {}
    }
    if engine.task.await.is_err() {
        stop(
            &mut stopped,
            "the engine stopped on an internal error".into(),
        );
    }
    if json {
        let reason = match &stopped {
            Some(why) => why.clone(),
            None => "every message was sent".into(),
        };
        let end = super::json::Stopped {
            ok: stopped.is_none() && sent == total,
            messages_sent: sent,
            messages: total,
            reason: &reason,
        };
        super::json::print_line(&mut io.stdout, super::json::Event::Stopped(end))?;
    }
    Ok(match (signalled(), &stopped) {
        (Some(signal), _) => ExitCode::from(crate::signals::exit_code(signal)),
        (None, None) => ExitCode::SUCCESS,
        (None, Some(_)) => ExitCode::FAILURE,
    })
}

/// A failed edit block, or a proposed hunk that went stale with its lines.
fn print_failure(out: &mut impl Write, failure: &EditFailureView) -> std::io::Result<()> {
    match (&failure.hunk, &failure.path) {
        (Some(hunk), _) => {
            writeln!(out, "tern: {failure}")?;
            hunk.lines().try_for_each(|line| writeln!(out, "  {line}"))
        }
        (None, Some(path)) => writeln!(
            out,
            "tern: edit block {} failed ({path}): {}",
            failure.block, failure.message
        ),
        (None, None) => writeln!(
            out,
            "tern: edit block {} failed: {}",
            failure.block, failure.message
        ),
    }
}

/// `src/a.rs (1,240 tok), src/b.rs (310 tok)`.
fn costed(files: &[NeededFile]) -> String {
    files
        .iter()
        .map(|f| format!("{} ({} tok)", f.path, thousands(f.tokens)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// When the last test or lint run failed (and no fix round made it pass), says so
/// once and makes it the run's reason to stop.
fn still_failing(
    last_check: &mut Option<(String, bool)>,
    stopped: &mut Option<String>,
    json: bool,
    io: &mut super::streams::Streams,
) -> std::io::Result<()> {
    if let Some((command, false)) = last_check {
        let why = format!("`{command}` still fails");
        if !json {
            writeln!(io.err()?, "tern: {why}")?;
        }
        stop(stopped, why);
        *last_check = None;
    }
    Ok(())
}

/// The first lines of the entries not sent, quoted: `` `/run deploy`, `two` ``, the
/// first three of a longer list and how many more.
fn named(entries: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut quoted: Vec<String> = entries
        .iter()
        .take(SHOWN)
        .map(|e| format!("`{}`", e.lines().next().unwrap_or_default()))
        .collect();
    if entries.len() > SHOWN {
        quoted.push(format!("and {} more", entries.len() - SHOWN));
    }
    quoted.join(", ")
}

/// Records why the run stops (the first reason only).
fn stop(stopped: &mut Option<String>, why: String) {
    stopped.get_or_insert(why);
}

/// Sends a message or a command (parsed here: the engine reads no `/`); before the last
/// one, tells the engine none follows, so it leaves summaries for the next start instead
/// of making the user wait for one at the end. A line that names no command is answered
/// here as the engine answers a command that fails: an error, then idle; so is a shell
/// command without `commands` (`--allow-commands`): the engine runs one typed by the
/// user at once, and text given to a headless run may come from anywhere. False when
/// the engine had already stopped and the entry was not sent.
fn submit(
    ops: &crate::engine::OpSender,
    text: &str,
    last: bool,
    commands: bool,
    answered: &mut std::collections::VecDeque<Event>,
) -> bool {
    if last && ops.send(Op::NoMoreMessages).is_err() {
        return false;
    }
    match crate::engine::input::parse(text) {
        Ok(Op::Command { command, args })
            if !commands && matches!(command, Command::Run | Command::Test | Command::Lint) =>
        {
            let shown = match args.is_empty() {
                true => format!("/{}", command.name()),
                false => format!("/{} {args}", command.name()),
            };
            answered.extend([
                Event::Error {
                    text: format!(
                        "not run: `{shown}`: pass --allow-commands to let tern run the commands a headless run asks for"
                    ),
                },
                Event::Idle,
            ]);
            true
        }
        Ok(op) => ops.send(op).is_ok(),
        Err(unknown) => {
            answered.extend([
                Event::Error {
                    text: unknown.to_string(),
                },
                Event::Idle,
            ]);
            true
        }
    }
}

/// How to get held edits applied.
fn held_advice(cautions: &[Caution], session: Option<&str>) -> String {
    if cautions.iter().all(|c| *c == Caution::OutsideChat) {
        "pass --allow-outside-chat to apply edits to files outside the chat, or add the file".into()
    } else {
        let resume = session.map_or("--resume".to_string(), |id| format!("--resume={id}"));
        format!(
            "look at it and accept it by itself in the workspace's review (tern {resume}), or save the reply and use `tern apply --accept ID`"
        )
    }
}

/// The run's reason for what `--yes` held back: `held back, not applied: edits to
/// b.txt; hunk 1a2b3c4 of a.txt`.
fn held_reason(held: &[String]) -> String {
    format!("held back, not applied: {}", held.join("; "))
}
