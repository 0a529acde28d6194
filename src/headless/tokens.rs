//! `tern tokens`: the budget of the next request, without sending it. It asks the
//! engine exactly as the TUI's gauge does, so the numbers cannot differ.

use std::io::Write;
use std::process::ExitCode;

use crate::context::BudgetReport;
use crate::egress::errln;
use crate::engine::{EngineConfig, Event, Op};
use crate::tokens::calibration;

pub async fn run(
    config: EngineConfig,
    message: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let signals = super::StopLine::watch("tern tokens");
    let code = budget(config, message, json).await;
    Ok(signals.end(code?))
}

/// Prints the budget; a failure when the request would not fit.
async fn budget(
    config: EngineConfig,
    message: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let report = report(config, message).await?;
    let mut stdout = crate::egress::stdout();
    if json {
        super::json::print_pretty(&mut stdout, super::json::Budget::from(&report))?;
    } else {
        write!(stdout, "{}", report.render_table())?;
    }
    if report.fits() {
        return Ok(ExitCode::SUCCESS);
    }
    if report.counting.is_learned() {
        crate::egress::errln!(
            "tern: {}",
            calibration::refusal_note(&crate::config::calibration_file())
        );
    }
    Ok(ExitCode::FAILURE)
}

/// `--recalibrate`: forgets what was learned about `model`'s counts (every model's
/// when None), and says what it forgot.
pub fn recalibrate(model: Option<&str>) -> anyhow::Result<()> {
    let file = crate::config::calibration_file();
    let forgotten = calibration::forget(&file, model)
        .map_err(|e| anyhow::anyhow!("cannot rewrite {}: {e}", file.display()))?;
    let what = match (model, forgotten.is_empty()) {
        (Some(model), true) => format!("nothing was learned about {model}'s token counts"),
        (Some(model), false) => format!("forgot what was learned about {model}'s token counts"),
        (None, true) => "nothing was learned about any model's token counts".into(),
        (None, false) => format!(
            "forgot what was learned about the token counts of {}",
            forgotten.join(", ")
        ),
    };
    crate::egress::errln!("tern: {what} ({})", file.display());
    Ok(())
}

/// The engine's report for a draft message (empty when None). Engine errors (a file
/// that cannot be read, say) go to stderr.
pub async fn report(config: EngineConfig, message: Option<String>) -> anyhow::Result<BudgetReport> {
    let mut engine = crate::engine::spawn(config)?;
    let mut message = Some(message.unwrap_or_default());
    let mut last = None;
    let mut stopping = false;
    while let Some(event) = engine.events.recv().await {
        match event {
            // The budget counts the map, so ask once the first map is there.
            Event::Map(_) => {
                if let Some(text) = message.take() {
                    let (text, mode) = crate::engine::input::draft(&text);
                    let text = text.to_string();
                    let _ = engine.ops.send(Op::Draft { text, mode });
                }
            }
            // ... and once the server (where it counts) has counted it all.
            Event::Budget(report) => {
                if message.is_none() && !report.counts_pending && !stopping {
                    stopping = true;
                    let _ = engine.ops.send(Op::Shutdown);
                }
                last = Some(report);
            }
            Event::Error { text } => errln!("tern: error: {text}"),
            Event::Warning { text } => errln!("tern: warning: {text}"),
            // A report made before a crash says nothing of what crashed: a failure.
            Event::Crashed { text } => anyhow::bail!("{text}"),
            Event::Exited => break,
            _ => {}
        }
    }
    let _ = engine.task.await;
    last.map(|r| *r)
        .ok_or_else(|| anyhow::anyhow!("the engine stopped before reporting a budget"))
}
