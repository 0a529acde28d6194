//! The budget report: one struct behind the live gauge, `/tokens` and `tern tokens`.

use derive_visitor::DriveMut;
use serde::Serialize;

use super::chunks::{Assembled, Section};
use crate::llm::{ModelInfo, Usage};
use crate::tokens::Counting;

/// Where the double-buffered history summarizer is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, DriveMut)]
pub enum HistoryPhase {
    #[default]
    Idle,
    /// A background summary of the history up to an anchor is being made.
    Checkpointing,
    /// The summary is ready and waits for the swap threshold.
    Ready,
    /// The summary replaced the old history.
    Swapped,
}

impl HistoryPhase {
    pub fn label(self) -> &'static str {
        match self {
            HistoryPhase::Idle => "idle",
            HistoryPhase::Checkpointing => "checkpointing",
            HistoryPhase::Ready => "ready",
            HistoryPhase::Swapped => "swapped",
        }
    }
}

/// The history sub-budget.
#[derive(Debug, Clone, Default, PartialEq, DriveMut)]
pub struct HistoryStatus {
    pub budget: usize,
    pub tokens: usize,
    /// Token counts at which the checkpoint starts and the swap happens.
    pub checkpoint_mark: usize,
    pub swap_mark: usize,
    pub phase: HistoryPhase,
    /// Tokens of the summary message currently in the history, if any.
    pub summary_tokens: usize,
    /// How many summaries this session has made.
    pub summaries: usize,
}

/// The repo map's share, and when it is rebuilt.
#[derive(Debug, Clone, Default, PartialEq, DriveMut)]
pub struct MapStatus {
    pub tokens: usize,
    pub budget: usize,
    pub files: usize,
    pub refresh: crate::repomap::MapRefresh,
    /// Files changed on disk since the map was built, and it is kept anyway (the
    /// refresh mode says so).
    pub kept_stale: bool,
}

#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct SectionRow {
    pub section: Section,
    /// tern's own name for it: no text from outside.
    #[drive(skip)]
    pub label: &'static str,
    pub tokens: usize,
    pub percent: f64,
    pub cost: f64,
}

#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct FileRow {
    pub path: String,
    pub section: Section,
    pub tokens: usize,
    pub percent: f64,
    pub cost: f64,
}

/// Everything the gauge draws.
#[derive(Debug, Clone, PartialEq, DriveMut)]
pub struct BudgetReport {
    pub model: String,
    /// False when the model is not in the table.
    pub known_model: bool,
    /// How the counts are made: exact, by the server, or estimated ("≈").
    pub counting: Counting,
    /// The server has yet to count some of this report's texts (they are estimates
    /// until it has; a new report follows).
    pub counts_pending: bool,
    /// tern's own name for it: no text from outside.
    #[drive(skip)]
    pub encoding: &'static str,
    pub window: usize,
    pub window_source: WindowSource,
    /// What the request as it stands sends as `max_tokens` (the engine sets it), else
    /// the window's reserve.
    pub reserved_output: usize,
    /// The most prompt tokens that may be sent: the window minus the reserve, or the
    /// model's separate input cap if lower.
    pub prompt_limit: usize,
    pub sections: Vec<SectionRow>,
    pub files: Vec<FileRow>,
    pub total: usize,
    /// `prompt_limit - total`; negative when the request does not fit.
    pub remaining: i64,
    pub history: HistoryStatus,
    pub map: Option<MapStatus>,
    /// The repo map is still being built: the total is without it.
    pub map_pending: bool,
    pub last_usage: Option<Usage>,
    /// The server reported no usage (or a prompt count no tokenizer gives):
    /// `last_usage` is tern's count of what was sent and received.
    pub last_usage_estimated: bool,
    /// The last turn's predicted prompt against the server's count of it.
    #[drive(skip)]
    pub last_drift: Option<crate::tokens::Drift>,
    pub last_cost: f64,
    pub session_cost: f64,
    /// The session's spending cap (`max_cost`), if any.
    pub cost_cap: Option<f64>,
}

/// Where the window's size comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, DriveMut)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// The model table.
    Table,
    /// A guess: the model is not in the table and no window was given.
    Assumed,
    /// `--context-window` (or `context_window` in a config file).
    Setting,
    /// Learned from an overflow: the server said so when it refused a request
    /// (llama.cpp's `n_ctx`), in this run or an earlier one.
    Server,
    /// The server said what it allocated before the first request (llama-server's
    /// `/props`, vLLM's `max_model_len`, LM Studio's loaded context, Ollama's).
    Reported,
    /// The server's default for the model (Ollama's, when neither the loaded model
    /// nor its Modelfile says).
    ServerDefault,
}

/// The reply's reserve never goes below this by default, however small the window.
const RESERVE_FLOOR: usize = 256;

/// The model's window and reserve after `--context-window` and `reserve_output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub window: usize,
    pub reserved_output: usize,
    pub prompt_limit: usize,
    pub source: WindowSource,
}

impl Window {
    /// The window, when it was told or reported rather than assumed.
    pub fn known(&self) -> Option<usize> {
        (self.source != WindowSource::Assumed).then_some(self.window)
    }

    /// The reserve defaults to the model's output limit, at most 8192 and at most a
    /// quarter of the window (but not below `RESERVE_FLOOR`), so a 2k window keeps
    /// three quarters of itself for the prompt; it is never more than half the window.
    pub fn for_model(
        model: &ModelInfo,
        window_override: Option<usize>,
        reserve: Option<usize>,
    ) -> Self {
        let window = window_override.unwrap_or(model.context_window);
        let reserved_output = reserve
            .unwrap_or_else(|| {
                model
                    .max_output
                    .min(8192)
                    .min((window / 4).max(RESERVE_FLOOR))
            })
            .min(window / 2);
        let mut prompt_limit = window - reserved_output;
        if let Some(cap) = model.max_input
            && window_override.is_none()
        {
            prompt_limit = prompt_limit.min(cap);
        }
        let source = match (window_override, model.known) {
            (Some(_), _) => WindowSource::Setting,
            (None, true) => WindowSource::Table,
            (None, false) => WindowSource::Assumed,
        };
        Window {
            window,
            reserved_output,
            prompt_limit,
            source,
        }
    }

    /// The window the server says it has (`n_ctx`), with the reserve scaled to it.
    pub(crate) fn from_server(model: &ModelInfo, n_ctx: usize, reserve: Option<usize>) -> Self {
        Window {
            source: WindowSource::Server,
            ..Window::for_model(model, Some(n_ctx), reserve)
        }
    }

    /// The same window, said to come from `source`.
    pub(crate) fn with_source(self, source: WindowSource) -> Self {
        Window { source, ..self }
    }

    /// Where the window comes from, as the user reads it ("" for the model table).
    pub(crate) fn describe_source(&self, model: &str) -> String {
        let window = crate::tokens::thousands(self.window);
        match self.source {
            WindowSource::Table => String::new(),
            WindowSource::Assumed => {
                format!("unknown model {model}: window assumed {window}; set --context-window")
            }
            WindowSource::Setting => format!("window {window} from --context-window"),
            WindowSource::Server => format!("window {window} learned from an overflow"),
            WindowSource::Reported => format!("window {window} from the server"),
            WindowSource::ServerDefault => {
                format!("window {window} default for {model} (the server's)")
            }
        }
    }
}

impl BudgetReport {
    /// Where the window comes from, as the gauge and `/tokens` say it.
    pub fn window_describe(&self) -> String {
        Window {
            window: self.window,
            reserved_output: self.reserved_output,
            prompt_limit: self.prompt_limit,
            source: self.window_source,
        }
        .describe_source(&self.model)
    }

    pub fn new(
        assembled: &Assembled,
        model: &ModelInfo,
        window: Window,
        counting: Counting,
    ) -> Self {
        let percent = |tokens: usize| 100.0 * tokens as f64 / window.window.max(1) as f64;
        BudgetReport {
            model: model.name.clone(),
            known_model: model.known,
            counting,
            counts_pending: false,
            encoding: model.encoding.name(),
            window: window.window,
            window_source: window.source,
            reserved_output: window.reserved_output,
            prompt_limit: window.prompt_limit,
            sections: assembled
                .sections
                .iter()
                .map(|s| SectionRow {
                    section: s.section,
                    label: s.section.label(),
                    tokens: s.tokens,
                    percent: percent(s.tokens),
                    cost: model.input_cost(s.tokens),
                })
                .collect(),
            files: assembled
                .files
                .iter()
                .map(|f| FileRow {
                    path: f.path.clone(),
                    section: f.section,
                    tokens: f.tokens,
                    percent: percent(f.tokens),
                    cost: model.input_cost(f.tokens),
                })
                .collect(),
            total: assembled.total,
            remaining: window.prompt_limit as i64 - assembled.total as i64,
            history: HistoryStatus::default(),
            map: None,
            map_pending: false,
            last_usage: None,
            last_usage_estimated: false,
            last_drift: None,
            last_cost: 0.0,
            session_cost: 0.0,
            cost_cap: None,
        }
    }

    pub fn fits(&self) -> bool {
        self.remaining >= 0
    }

    pub fn section(&self, section: Section) -> usize {
        self.sections
            .iter()
            .find(|s| s.section == section)
            .map_or(0, |s| s.tokens)
    }

    /// Fraction of the window the prompt fills (the gauge colour).
    pub fn fill(&self) -> f64 {
        self.total as f64 / self.window.max(1) as f64
    }

    /// True when counts are estimates ("≈").
    pub fn estimate(&self) -> bool {
        self.counting.is_estimate()
    }

    /// The plain-text table of `/tokens` and `tern tokens`.
    pub(crate) fn render_table(&self) -> String {
        let approx = if self.estimate() { "≈" } else { "" };
        let mut out = String::new();
        let source = self.window_describe();
        let warn = if source.is_empty() {
            String::new()
        } else {
            format!("  ({source})")
        };
        let how = match self.counting {
            Counting::Exact => format!("exactly counted with {}", self.encoding),
            Counting::Server => "counted exactly by the server".to_string(),
            Counting::Uncalibrated => format!("estimated with {} (uncalibrated)", self.encoding),
            calibrated => format!(
                "counts {} ({} scaled to the server's reports)",
                calibrated.label(),
                self.encoding
            ),
        };
        out.push_str(&format!(
            "Model {} — window {} tokens, {how}{warn}\n\n",
            self.model, self.window,
        ));
        out.push_str(&format!(
            "{:>10}  {:>6}  {:>9}  {:<28} {}\n",
            "tokens", "%", "cost", "section / file", "tip"
        ));
        let line = |tokens: usize, percent: f64, cost: f64, label: &str, tip: &str| {
            format!(
                "{:>10}  {:>5.1}%  {:>9}  {label:<28} {tip}\n",
                format!("{approx}{tokens}"),
                percent,
                format!("${cost:.4}"),
            )
        };
        for row in &self.sections {
            if row.tokens == 0 {
                continue;
            }
            out.push_str(&line(
                row.tokens,
                row.percent,
                row.cost,
                row.label,
                tip(row.section),
            ));
            for file in self.files.iter().filter(|f| f.section == row.section) {
                let label = format!("  {}", file.path);
                out.push_str(&line(
                    file.tokens,
                    file.percent,
                    file.cost,
                    &label,
                    match file.section {
                        Section::CommandOutput => "/drop-output to remove",
                        _ => "/drop to remove",
                    },
                ));
            }
        }
        out.push_str(&format!("{:=<70}\n", ""));
        out.push_str(&format!(
            "{:>10}  {:>5.1}%  {:>9}  total prompt\n",
            format!("{approx}{}", self.total),
            100.0 * self.fill(),
            format!("${:.4}", self.sections.iter().map(|s| s.cost).sum::<f64>())
        ));
        out.push_str(&format!(
            "{:>10}          {:>9}  reserved for the reply\n",
            self.reserved_output, ""
        ));
        if self.remaining >= 0 {
            out.push_str(&format!(
                "{:>10}          {:>9}  remaining\n",
                self.remaining, ""
            ));
        } else {
            out.push_str(&format!(
                "{:>10}          {:>9}  OVER the limit of {} — drop files or /clear\n",
                -self.remaining, "", self.prompt_limit
            ));
        }
        let h = &self.history;
        // Rows with no tip end in padding; trailing blanks only trouble copy and paste.
        out = out
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        if self.map_pending {
            out.push_str(
                "\nRepo map: still being built, not counted yet (the total is without it; the next message waits for it)\n",
            );
        }
        if let Some(m) = &self.map {
            out.push_str(&format!(
                "\nRepo map {} of {} tokens, {}, refresh {}{}\n",
                m.tokens,
                m.budget,
                crate::plural::count(m.files, "file"),
                m.refresh.label(),
                if m.kept_stale {
                    " (files changed since it was built; /map-refresh rebuilds it)"
                } else {
                    ""
                }
            ));
        }
        if h.budget > 0 {
            let marks = if h.swap_mark > 0 {
                format!(
                    "checkpoint at {}, swap at {}",
                    h.checkpoint_mark, h.swap_mark
                )
            } else {
                "summarized when full".to_string()
            };
            out.push_str(&format!(
                "\nHistory {} of {} tokens ({marks}), phase {}, summary {} tokens, {} summaries made\n",
                h.tokens,
                h.budget,
                h.phase.label(),
                h.summary_tokens,
                h.summaries
            ));
        }
        if let Some(drift) = self.last_drift {
            out.push_str(&format!("\nLast request: {}\n", drift.describe()));
        }
        if self.cost_cap.is_some() {
            out.push_str(&format!(
                "\nSpent {} this session (max_cost)\n",
                self.session_spending()
            ));
        }
        out
    }

    /// The session's spending, with its cap when there is one: `$0.1200 of $0.50`.
    pub fn session_spending(&self) -> String {
        match self.cost_cap {
            Some(cap) => format!("${:.4} of ${cap}", self.session_cost),
            None => format!("${:.4}", self.session_cost),
        }
    }
}

fn tip(section: Section) -> &'static str {
    match section {
        Section::System | Section::Examples | Section::Reminder => "",
        Section::ReadonlyFiles => "/drop to remove",
        Section::Repo => "/map-tokens to resize",
        Section::Done => "/clear or /compact",
        Section::ChatFiles => "/drop or /read-only",
        Section::CommandOutput => "/drop-output to remove",
        Section::ReviewDiff => "--budget to resize",
        Section::Cur => "",
    }
}
