//! `tern -m TEXT`: one turn without the TUI. The reply streams to stdout; everything
//! else (notices, retries, the token line) goes to stderr so stdout stays the reply.

use std::io::Write;
use std::process::ExitCode;

use crate::engine::{EngineConfig, Event, Op};
use crate::llm::Finish;

/// Runs the given messages in turn and exits. Returns a failure exit code when a turn
/// fails or a reply is incomplete.
pub async fn run(
    config: EngineConfig,
    messages: Vec<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut engine = crate::engine::spawn(config)?;
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let mut queue = messages.into_iter();
    let mut ok = true;
    let mut at_line_start = true;

    let Some(first) = queue.next() else {
        return Ok(ExitCode::SUCCESS);
    };
    engine.ops.send(Op::Submit { text: first })?;
    let ops = engine.ops.clone();
    let ctrl_c = tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if ops.send(Op::Cancel).is_err() {
                break;
            }
        }
    });

    while let Some(event) = engine.events.recv().await {
        if json {
            super::print_json(&mut stdout, &event)?;
        }
        let turn_over = matches!(event, Event::TurnFinished { .. } | Event::TurnFailed { .. });
        match &event {
            Event::Delta { text } if !json => {
                stdout.write_all(text.as_bytes())?;
                stdout.flush()?;
                at_line_start = text.ends_with('\n');
            }
            Event::TurnFinished {
                finish,
                usage,
                cost,
                session_cost,
                ..
            } if !json => {
                if !at_line_start {
                    writeln!(stdout)?;
                    at_line_start = true;
                }
                match finish {
                    Finish::Stop => {}
                    Finish::Length => {
                        ok = false;
                        writeln!(stderr, "tern: the reply hit the model's output limit")?;
                    }
                    Finish::CutOff(why) => {
                        ok = false;
                        writeln!(stderr, "tern: the reply was cut off: {why}")?;
                    }
                    Finish::Cancelled => {
                        ok = false;
                        writeln!(stderr, "tern: interrupted; the partial reply is above")?;
                    }
                }
                let (sent, cached, received) = usage.map_or((0, 0, 0), |u| {
                    (u.prompt_tokens, u.cached_tokens, u.completion_tokens)
                });
                writeln!(
                    stderr,
                    "Tokens: {sent} sent ({cached} cached), {received} received. Cost: ${cost:.4} message, ${session_cost:.4} session."
                )?;
            }
            Event::TurnFailed { error, .. } => {
                ok = false;
                if !json {
                    writeln!(stderr, "tern: {error}")?;
                }
            }
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } if !json => {
                writeln!(
                    stderr,
                    "tern: {reason}; retry {attempt} in {:.2} s",
                    *delay_ms as f64 / 1000.0
                )?;
            }
            Event::Notice { text } if !json => writeln!(stderr, "tern: {text}")?,
            Event::Warning { text } if !json => writeln!(stderr, "tern: warning: {text}")?,
            Event::Error { text } if !json => {
                ok = false;
                writeln!(stderr, "tern: error: {text}")?;
            }
            Event::Output { text, .. } if !json => write!(stderr, "{text}")?,
            Event::Exited => break,
            _ => {}
        }
        if turn_over {
            match queue.next() {
                Some(next) if ok => engine.ops.send(Op::Submit { text: next })?,
                _ => engine.ops.send(Op::Shutdown)?,
            }
        }
    }
    ctrl_c.abort();
    let _ = engine.task.await;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
