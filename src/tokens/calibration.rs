//! How tern's counts relate to a server's, for models whose tokenizer tern does not
//! have (Llama, Qwen, SmolLM... behind Ollama, llama.cpp, vLLM): either the server
//! counts each message's content itself (its tokenize endpoint) and the chat template's
//! tokens per message are learned from the reported `usage.prompt_tokens`, or tern's
//! own count is scaled by the ratio observed between its predictions and those reports.
//! What is learned is kept per model across sessions (`load` / `save`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::chat_format::{MESSAGE_OVERHEAD, REPLY_PRIMING};

/// How the counts of a model's requests are made, as the gauge says it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Counting {
    /// With the model's own tokenizer (OpenAI's models).
    Exact,
    /// By the server's tokenize endpoint, plus the chat template's learned overhead.
    Server,
    /// tern's count scaled to what the server reported. `error_percent`: the worst
    /// relative error of the last checked predictions, None until one was checked.
    Calibrated { error_percent: Option<f64> },
    /// tern's count with a stand-in tokenizer, not compared with any report yet.
    Uncalibrated,
}

impl Counting {
    /// True when counts are estimates (shown with "≈").
    pub fn is_estimate(self) -> bool {
        matches!(self, Counting::Calibrated { .. } | Counting::Uncalibrated)
    }

    /// What the gauge and `tern tokens` say about the counts.
    pub fn label(self) -> String {
        match self {
            Counting::Exact => "exact".into(),
            Counting::Server => "exact via server".into(),
            Counting::Calibrated {
                error_percent: Some(e),
            } => format!("≈ calibrated ±{}%", e.ceil().max(1.0)),
            Counting::Calibrated {
                error_percent: None,
            } => "≈ calibrated".into(),
            Counting::Uncalibrated => "≈ uncalibrated".into(),
        }
    }
}

/// How many recent observations the template overhead is fitted to, and how many
/// recent errors the "±N%" is the worst of.
const KEPT: usize = 8;
const ERRORS_SHOWN: usize = 5;

/// Weight of a new observation in the ratio (recent requests resemble the next one).
const NEW_WEIGHT: f64 = 0.7;

/// What was learned about one model's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Server tokens per tern token of message content.
    pub ratio: f64,
    /// How many reports the ratio was learned from.
    pub samples: usize,
    /// Relative errors of the last checked predictions, newest last.
    pub errors: Vec<f64>,
    /// The chat template's tokens per message (its role and markers) and per request
    /// (the primed reply, a BOS token).
    pub per_message: usize,
    pub per_request: usize,
    /// Recent (messages, template tokens) of server-counted requests, which the two
    /// overheads are fitted to.
    #[serde(default)]
    pub template: Vec<(usize, usize)>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            ratio: 1.0,
            samples: 0,
            errors: Vec::new(),
            per_message: MESSAGE_OVERHEAD,
            per_request: REPLY_PRIMING,
            template: Vec::new(),
        }
    }
}

/// A request's predicted prompt tokens and what they were made of, to be compared
/// with the server's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prediction {
    pub total: usize,
    pub messages: usize,
    /// tern's own (unscaled) count of the message contents.
    pub local: usize,
    /// The server's count of the message contents, when it counted every one.
    pub exact: Option<usize>,
    /// Made with something learned: its error says how good the counts are.
    pub learned: bool,
}

impl Calibration {
    pub fn counting(&self, server: bool) -> Counting {
        if server {
            Counting::Server
        } else if self.samples == 0 {
            Counting::Uncalibrated
        } else {
            let worst = self.errors.iter().rev().take(ERRORS_SHOWN).copied();
            Counting::Calibrated {
                error_percent: worst.reduce(f64::max).map(|e| 100.0 * e),
            }
        }
    }

    /// Learns from the server's count of a predicted request; returns the prediction's
    /// relative error.
    pub fn observe(&mut self, prediction: &Prediction, reported: usize) -> f64 {
        let error = prediction.total.abs_diff(reported) as f64 / reported.max(1) as f64;
        if prediction.learned {
            self.errors.push(error);
            trim_front(&mut self.errors, KEPT);
        }
        let content = match prediction.exact {
            Some(exact) => {
                self.template
                    .push((prediction.messages, reported.saturating_sub(exact)));
                trim_front(&mut self.template, KEPT);
                (self.per_message, self.per_request) = fit_template(&self.template);
                exact
            }
            None => {
                reported.saturating_sub(self.per_message * prediction.messages + self.per_request)
            }
        };
        if prediction.local > 0 && content > 0 {
            let observed = content as f64 / prediction.local as f64;
            self.ratio = match self.samples {
                0 => observed,
                _ => NEW_WEIGHT * observed + (1.0 - NEW_WEIGHT) * self.ratio,
            };
            self.samples += 1;
        }
        error
    }
}

fn trim_front<T>(items: &mut Vec<T>, keep: usize) {
    let extra = items.len().saturating_sub(keep);
    items.drain(..extra);
}

/// Template tokens = per_message × messages + per_request, fitted by least squares;
/// while every observation has the same number of messages, the request's part is
/// only what the messages' whole tokens leave over.
fn fit_template(observations: &[(usize, usize)]) -> (usize, usize) {
    let Some(&(last_n, last_t)) = observations.last() else {
        return (MESSAGE_OVERHEAD, REPLY_PRIMING);
    };
    let k = observations.len() as f64;
    let mean_n = observations.iter().map(|o| o.0 as f64).sum::<f64>() / k;
    let mean_t = observations.iter().map(|o| o.1 as f64).sum::<f64>() / k;
    let var: f64 = observations
        .iter()
        .map(|o| (o.0 as f64 - mean_n).powi(2))
        .sum();
    if var == 0.0 {
        let per_message = last_t / last_n.max(1);
        return (per_message, last_t - per_message * last_n);
    }
    let cov: f64 = observations
        .iter()
        .map(|o| (o.0 as f64 - mean_n) * (o.1 as f64 - mean_t))
        .sum();
    let per_message = (cov / var).round().max(0.0);
    let per_request = (mean_t - per_message * mean_n).round().max(0.0);
    (per_message as usize, per_request as usize)
}

/// Every model's calibration, as saved in the state directory.
pub type Calibrations = BTreeMap<String, Calibration>;

/// Reads the saved calibrations; a missing or unreadable file is an empty table (a
/// calibration is relearned from the next request).
pub fn load(path: &Path) -> Calibrations {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Saves `model`'s calibration into the table at `path`, atomically.
pub fn save(path: &Path, model: &str, calibration: &Calibration) -> std::io::Result<()> {
    let mut all = load(path);
    all.insert(model.to_string(), calibration.clone());
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut file, &all)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prediction(total: usize, messages: usize, local: usize, exact: Option<usize>) -> Prediction {
        Prediction {
            total,
            messages,
            local,
            exact,
            learned: true,
        }
    }

    #[test]
    fn the_template_overhead_is_fitted_to_requests_of_different_sizes() {
        let mut c = Calibration::default();
        // ChatML: 5 tokens a message, 3 for the primed reply.
        c.observe(&prediction(0, 4, 90, Some(100)), 100 + 5 * 4 + 3);
        assert_eq!(c.per_message * 4 + c.per_request, 23);
        c.observe(&prediction(0, 10, 900, Some(1000)), 1000 + 5 * 10 + 3);
        assert_eq!((c.per_message, c.per_request), (5, 3));
    }

    #[test]
    fn the_ratio_follows_the_reports_and_the_error_is_shown_once_checked() {
        let mut c = Calibration::default();
        assert_eq!(c.counting(false), Counting::Uncalibrated);
        let first = Prediction {
            learned: false,
            ..prediction(1007, 1, 1000, None)
        };
        // 4 + 3 tokens of the default template around 1200 of content.
        c.observe(&first, 1207);
        assert!((c.ratio - 1.2).abs() < 1e-9, "{}", c.ratio);
        assert_eq!(
            c.counting(false),
            Counting::Calibrated {
                error_percent: None
            }
        );
        c.observe(&prediction(1207, 1, 1000, None), 1207);
        assert_eq!(
            c.counting(false),
            Counting::Calibrated {
                error_percent: Some(0.0)
            }
        );
        assert_eq!(c.counting(false).label(), "≈ calibrated ±1%");
        assert_eq!(c.counting(true).label(), "exact via server");
    }

    #[test]
    fn calibrations_are_kept_per_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/calibration.json");
        assert!(load(&path).is_empty());
        let a = Calibration {
            ratio: 1.3,
            ..Calibration::default()
        };
        save(&path, "smollm2", &a).unwrap();
        save(&path, "qwen", &Calibration::default()).unwrap();
        let all = load(&path);
        assert_eq!(all["smollm2"], a);
        assert_eq!(all.len(), 2);
    }
}
