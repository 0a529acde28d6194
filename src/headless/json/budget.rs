//! The budget of the next request: the `budget` event and `tern tokens --json`.

use serde::Serialize;

use super::reply::Usage;
use crate::context::{self, Section};
use crate::engine::protocol as p;

/// What the gauge draws, section by section and file by file.
#[derive(Serialize)]
pub struct Budget<'a> {
    model: &'a str,
    known_model: bool,
    counting: Counting,
    counts_pending: bool,
    encoding: &'static str,
    window: usize,
    window_source: &'static str,
    reserved_output: usize,
    prompt_limit: usize,
    sections: Vec<SectionRow>,
    files: Vec<FileRow<'a>>,
    total: usize,
    remaining: i64,
    history: History,
    map: Option<MapStatus>,
    /// The repo map is still being built: `total` is without it.
    map_pending: bool,
    last_usage: Option<Usage>,
    last_usage_estimated: bool,
    /// The last turn's predicted prompt against the server's count of it.
    last_drift: Option<Drift>,
    last_cost: f64,
    session_cost: f64,
    cost_cap: Option<f64>,
}

impl<'a> From<&'a p::BudgetReport> for Budget<'a> {
    fn from(r: &'a p::BudgetReport) -> Self {
        Budget {
            model: &r.model,
            known_model: r.known_model,
            counting: Counting::from(r.counting),
            counts_pending: r.counts_pending,
            encoding: r.encoding,
            window: r.window,
            window_source: match r.window_source {
                p::WindowSource::Table => "table",
                p::WindowSource::Assumed => "assumed",
                p::WindowSource::Setting => "setting",
                p::WindowSource::Server => "server",
                p::WindowSource::Reported => "reported",
                p::WindowSource::ServerDefault => "server_default",
            },
            reserved_output: r.reserved_output,
            prompt_limit: r.prompt_limit,
            sections: r.sections.iter().map(SectionRow::from).collect(),
            files: r.files.iter().map(FileRow::from).collect(),
            total: r.total,
            remaining: r.remaining,
            history: History::from(&r.history),
            map: r.map.as_ref().map(MapStatus::from),
            map_pending: r.map_pending,
            last_usage: r.last_usage.as_ref().map(Usage::from),
            last_usage_estimated: r.last_usage_estimated,
            last_drift: r.last_drift.map(Drift::from),
            last_cost: r.last_cost,
            session_cost: r.session_cost,
            cost_cap: r.cost_cap,
        }
    }
}

/// A section's name as `--json` writes it.
fn section(s: Section) -> &'static str {
    match s {
        Section::System => "system",
        Section::Examples => "examples",
        Section::ReadonlyFiles => "readonly_files",
        Section::Repo => "repo",
        Section::Done => "done",
        Section::ChatFiles => "chat_files",
        Section::CommandOutput => "command_output",
        Section::ReviewDiff => "review_diff",
        Section::Cur => "cur",
        Section::Reminder => "reminder",
    }
}

#[derive(Serialize)]
struct SectionRow {
    section: &'static str,
    label: &'static str,
    tokens: usize,
    percent: f64,
    cost: f64,
}

impl From<&context::budget::SectionRow> for SectionRow {
    fn from(r: &context::budget::SectionRow) -> Self {
        SectionRow {
            section: section(r.section),
            label: r.label,
            tokens: r.tokens,
            percent: r.percent,
            cost: r.cost,
        }
    }
}

#[derive(Serialize)]
struct FileRow<'a> {
    path: &'a str,
    section: &'static str,
    tokens: usize,
    percent: f64,
    cost: f64,
}

impl<'a> From<&'a context::FileRow> for FileRow<'a> {
    fn from(r: &'a context::FileRow) -> Self {
        FileRow {
            path: &r.path,
            section: section(r.section),
            tokens: r.tokens,
            percent: r.percent,
            cost: r.cost,
        }
    }
}

/// How token counts are made: `{"kind": "exact" | "server" | "calibrated" |
/// "uncalibrated"}`, `calibrated` with its `error_percent`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Counting {
    Exact,
    Server,
    Calibrated { error_percent: Option<f64> },
    Uncalibrated,
}

impl From<p::Counting> for Counting {
    fn from(c: p::Counting) -> Self {
        match c {
            p::Counting::Exact => Counting::Exact,
            p::Counting::Server => Counting::Server,
            p::Counting::Calibrated { error_percent } => Counting::Calibrated { error_percent },
            p::Counting::Uncalibrated => Counting::Uncalibrated,
        }
    }
}

/// The history sub-budget and where the summarizer is.
#[derive(Serialize)]
pub struct History {
    budget: usize,
    tokens: usize,
    checkpoint_mark: usize,
    swap_mark: usize,
    phase: &'static str,
    summary_tokens: usize,
    summaries: usize,
}

impl From<&p::HistoryStatus> for History {
    fn from(h: &p::HistoryStatus) -> Self {
        History {
            budget: h.budget,
            tokens: h.tokens,
            checkpoint_mark: h.checkpoint_mark,
            swap_mark: h.swap_mark,
            phase: h.phase.label(),
            summary_tokens: h.summary_tokens,
            summaries: h.summaries,
        }
    }
}

/// The repo map's share (`refresh` is the `map_refresh` setting's value).
#[derive(Serialize)]
struct MapStatus {
    tokens: usize,
    budget: usize,
    files: usize,
    refresh: &'static str,
    kept_stale: bool,
}

impl From<&context::MapStatus> for MapStatus {
    fn from(m: &context::MapStatus) -> Self {
        MapStatus {
            tokens: m.tokens,
            budget: m.budget,
            files: m.files,
            refresh: m.refresh.label(),
            kept_stale: m.kept_stale,
        }
    }
}

/// A request's predicted prompt against the server's count, as the `drift` event and
/// the budget's `last_drift` say it.
#[derive(Serialize)]
pub struct Drift {
    predicted_prompt_tokens: usize,
    reported_prompt_tokens: usize,
    /// predicted - reported.
    difference: i64,
    /// What the counting claims a prediction may be off by.
    margin: usize,
    beyond_margin: bool,
}

impl From<crate::tokens::Drift> for Drift {
    fn from(d: crate::tokens::Drift) -> Self {
        Drift {
            predicted_prompt_tokens: d.predicted,
            reported_prompt_tokens: d.reported,
            difference: d.difference(),
            margin: d.margin(),
            beyond_margin: d.beyond_margin(),
        }
    }
}
