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

    /// How many tokens the server's count of a request counted as `tokens` may be
    /// above it: nothing when exact, 2% when the server counted (its template's tokens
    /// are learned), the recent error when calibrated, a quarter when nothing is known
    /// yet; and a few tokens more.
    pub fn margin(self, tokens: usize) -> usize {
        let share = match self {
            Counting::Exact => return 0,
            Counting::Server => 0.02,
            Counting::Calibrated {
                error_percent: Some(e),
            } => (e + 1.0) / 100.0,
            Counting::Calibrated {
                error_percent: None,
            } => 0.05,
            Counting::Uncalibrated => 0.25,
        };
        (tokens as f64 * share).ceil() as usize + 8
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

/// How many recent observations the template overhead and the rates are fitted to,
/// and how many recent errors the "±N%" is the worst of.
const KEPT: usize = 8;
const ERRORS_SHOWN: usize = 5;

/// What the rates are drawn to while the observations cannot tell them apart: the
/// server's tokens as tern's, a digit a third of a token (OpenAI's vocabularies group
/// digits by three). The pull on the digit rate is about that of 10 digits observed.
const PRIOR: (f64, f64) = (1.0, 1.0 / 3.0);
const PRIOR_WEIGHT: (f64, f64) = (1e-3, 100.0);

/// tern's count of a text, split where tokenizers differ most: numbers. OpenAI's
/// vocabularies count up to three digits as one token; Llama 2's, SmolLM's and
/// Mistral's count every digit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Local {
    /// tern's tokens.
    pub tokens: usize,
    /// ASCII digits in the text.
    pub digits: usize,
    /// tern's tokens that are digits (a run of n digits is ceil(n/3) of them).
    pub digit_tokens: usize,
}

impl Local {
    /// `tokens` (tern's count of `text`) with the text's digits.
    pub fn of(text: &str, tokens: usize) -> Local {
        let mut local = Local {
            tokens,
            ..Local::default()
        };
        let mut run = 0;
        for b in text.bytes().chain(std::iter::once(b' ')) {
            if b.is_ascii_digit() {
                run += 1;
            } else if run > 0 {
                local.digits += run;
                local.digit_tokens += run.div_ceil(3);
                run = 0;
            }
        }
        local
    }

    /// tern's tokens outside numbers.
    fn rest(self) -> usize {
        self.tokens.saturating_sub(self.digit_tokens)
    }
}

impl std::ops::Add for Local {
    type Output = Local;

    fn add(self, other: Local) -> Local {
        Local {
            tokens: self.tokens + other.tokens,
            digits: self.digits + other.digits,
            digit_tokens: self.digit_tokens + other.digit_tokens,
        }
    }
}

/// What was learned about one model's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Server tokens per tern token outside numbers, and per digit.
    pub per_token: f64,
    pub per_digit: f64,
    /// How many reports the rates were learned from.
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
    /// Recent (tern's tokens outside numbers, digits, server tokens) of requests'
    /// message contents, which the two rates are fitted to.
    #[serde(default)]
    pub contents: Vec<(usize, usize, usize)>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            per_token: PRIOR.0,
            per_digit: PRIOR.1,
            samples: 0,
            errors: Vec::new(),
            per_message: MESSAGE_OVERHEAD,
            per_request: REPLY_PRIMING,
            template: Vec::new(),
            contents: Vec::new(),
        }
    }
}

/// A request's predicted prompt tokens and what they were made of, to be compared
/// with the server's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prediction {
    pub total: usize,
    pub messages: usize,
    /// tern's own count of the message contents.
    pub local: Local,
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

    /// The server's tokens for a text tern counted as `local` (tern's own count until
    /// something was learned).
    pub fn estimate(&self, local: Local) -> usize {
        if self.samples == 0 {
            return local.tokens;
        }
        let estimate = self.per_token * local.rest() as f64 + self.per_digit * local.digits as f64;
        estimate.round().max(0.0) as usize
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
        if prediction.local.tokens > 0 && content > 0 {
            let local = prediction.local;
            self.contents.push((local.rest(), local.digits, content));
            trim_front(&mut self.contents, KEPT);
            (self.per_token, self.per_digit) = fit_rates(&self.contents);
            self.samples += 1;
        }
        error
    }
}

/// Server tokens = per_token × tern's tokens outside numbers + per_digit × digits,
/// fitted by least squares, drawn to `PRIOR` where the observations cannot tell the
/// two apart (no digits seen yet, say).
fn fit_rates(observations: &[(usize, usize, usize)]) -> (f64, f64) {
    let (mut rr, mut rd, mut dd, mut ry, mut dy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(r, d, y) in observations {
        let (r, d, y) = (r as f64, d as f64, y as f64);
        rr += r * r;
        rd += r * d;
        dd += d * d;
        ry += r * y;
        dy += d * y;
    }
    let (ka, kb) = PRIOR_WEIGHT;
    let (a11, a12, a22) = (rr + ka, rd, dd + kb);
    let (b1, b2) = (ry + ka * PRIOR.0, dy + kb * PRIOR.1);
    let det = a11 * a22 - a12 * a12;
    if det.abs() < f64::EPSILON {
        return PRIOR;
    }
    ((b1 * a22 - a12 * b2) / det, (a11 * b2 - a12 * b1) / det)
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
    crate::regular_file::read_to_string(path, crate::regular_file::MAX_SETTINGS_BYTES)
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

    fn local(rest: usize, digits: usize) -> Local {
        let digit_tokens = digits.div_ceil(3);
        Local {
            tokens: rest + digit_tokens,
            digits,
            digit_tokens,
        }
    }

    fn prediction(total: usize, messages: usize, local: Local, exact: Option<usize>) -> Prediction {
        Prediction {
            total,
            messages,
            local,
            exact,
            learned: true,
        }
    }

    #[test]
    fn digits_are_counted_in_runs_of_three() {
        let l = Local::of("x = 12345 + 7;", 7);
        assert_eq!((l.digits, l.digit_tokens, l.rest()), (6, 3, 4));
    }

    #[test]
    fn the_template_overhead_is_fitted_to_requests_of_different_sizes() {
        let mut c = Calibration::default();
        // ChatML: 5 tokens a message, 3 for the primed reply.
        c.observe(&prediction(0, 4, local(90, 0), Some(100)), 100 + 5 * 4 + 3);
        assert_eq!(c.per_message * 4 + c.per_request, 23);
        c.observe(
            &prediction(0, 10, local(900, 0), Some(1000)),
            1000 + 5 * 10 + 3,
        );
        assert_eq!((c.per_message, c.per_request), (5, 3));
    }

    /// A server whose tokenizer counts 1.2 of tern's tokens outside numbers and one
    /// token per digit, as SmolLM's does.
    fn server(l: Local, messages: usize) -> usize {
        (1.2 * l.rest() as f64 + l.digits as f64).round() as usize + 4 * messages + 3
    }

    #[test]
    fn prose_then_numbers_teach_both_rates() {
        let mut c = Calibration::default();
        assert_eq!(c.counting(false), Counting::Uncalibrated);
        let prose = local(1000, 0);
        let first = Prediction {
            learned: false,
            ..prediction(c.estimate(prose) + 7, 1, prose, None)
        };
        c.observe(&first, server(prose, 1));
        assert!((c.per_token - 1.2).abs() < 1e-3, "{c:?}");
        assert_eq!(
            c.counting(false),
            Counting::Calibrated {
                error_percent: None
            }
        );
        // Numbers are still counted the way tern counts them: far too low.
        let numbers = local(500, 900);
        let guess = c.estimate(numbers) + 7;
        let error = c.observe(&prediction(guess, 1, numbers, None), server(numbers, 1));
        assert!(error > 0.2, "{error}");
        // Now both are known: any mix is predicted.
        assert!((c.per_digit - 1.0).abs() < 0.01, "{c:?}");
        let mixed = local(700, 150);
        let error = relative(c.estimate(mixed) + 7, server(mixed, 1));
        assert!(error < 0.005, "{error}");
        // The miss on numbers is what the gauge's "±N%" shows now.
        assert!(
            matches!(c.counting(false), Counting::Calibrated { error_percent: Some(e) } if e > 20.0),
            "{:?}",
            c.counting(false)
        );
        assert_eq!(c.counting(true).label(), "exact via server");
    }

    fn relative(predicted: usize, reported: usize) -> f64 {
        predicted.abs_diff(reported) as f64 / reported as f64
    }

    #[test]
    fn the_label_shows_the_worst_recent_error() {
        let c = Calibration {
            samples: 3,
            errors: vec![0.5, 0.004, 0.013, 0.002, 0.001, 0.003],
            ..Calibration::default()
        };
        assert_eq!(c.counting(false).label(), "≈ calibrated ±2%");
    }

    #[test]
    fn calibrations_are_kept_per_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/calibration.json");
        assert!(load(&path).is_empty());
        let a = Calibration {
            per_token: 1.3,
            ..Calibration::default()
        };
        save(&path, "smollm2", &a).unwrap();
        save(&path, "qwen", &Calibration::default()).unwrap();
        let all = load(&path);
        assert_eq!(all["smollm2"], a);
        assert_eq!(all.len(), 2);
    }
}
