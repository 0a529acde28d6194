//! How tern's counts relate to a server's, for models whose tokenizer tern does not
//! have (Llama, Qwen, SmolLM... behind Ollama, llama.cpp, vLLM): either the server
//! counts each message's content itself (its tokenize endpoint) and the chat template's
//! tokens per message are learned from the reported `usage.prompt_tokens`, or tern's
//! own count is scaled by the ratio observed between its predictions and those reports.
//! What is learned is kept per model across sessions (`load` / `save`).
//!
//! A server (or a proxy in front of it) may report anything. A report that no
//! tokenizer gives for what was sent, far outside tern's own count, is not learned;
//! newer reports weigh more than older ones; the rates stay within what tokenizers do;
//! and what is read back from an earlier session is held to the same bounds, so one
//! absurd report cannot make every later request look too big.

use derive_visitor::DriveMut;
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::chat_format::{MESSAGE_OVERHEAD, REPLY_PRIMING};

/// How the counts of a model's requests are made, as the gauge says it.
#[derive(Debug, Clone, Copy, PartialEq, DriveMut)]
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
        const UNCALIBRATED: f64 = 0.25;
        let share = match self {
            Counting::Exact => return 0,
            Counting::Server => 0.02,
            // What was learned never calls for more than knowing nothing.
            Counting::Calibrated {
                error_percent: Some(e),
            } => ((e + 1.0) / 100.0).min(UNCALIBRATED),
            Counting::Calibrated {
                error_percent: None,
            } => 0.05,
            Counting::Uncalibrated => UNCALIBRATED,
        };
        (tokens as f64 * share).ceil() as usize + 8
    }

    /// Whether counts use what was learned from the server's reports (and kept in
    /// `calibration.json`).
    pub(crate) fn is_learned(self) -> bool {
        matches!(self, Counting::Calibrated { .. } | Counting::Server)
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

/// The fewest and the most server tokens per tern token outside numbers: tokenizers
/// count from about half to three times what o200k_base does (byte fallback for a
/// script the vocabulary lacks is the worst); the bounds leave room around that.
const RATE: (f64, f64) = (0.25, 4.0);
/// Per digit: o200k_base takes three as a token, Llama's and Mistral's one each.
const DIGIT_RATE: (f64, f64) = (0.2, 1.5);

/// The most tokens a chat template adds per message (role and markers) and per request
/// (a BOS token, the primed reply, a default system line).
const MAX_PER_MESSAGE: usize = 64;
const MAX_PER_REQUEST: usize = 512;

/// Each observation weighs this much of the next newer one: the newest report weighs
/// as much as all the older ones together, so a server that changes is followed within
/// a few requests.
const DECAY: f64 = 0.5;

/// The largest relative error a plausible report leaves (a report at a quarter of the
/// prediction is off by 300%).
const MAX_ERROR: f64 = 3.0;

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

/// A server's report of a request's prompt tokens that no tokenizer gives for what
/// was sent: far outside tern's own count of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Implausible {
    pub reported: usize,
    pub predicted: usize,
    /// The reports a tokenizer could give.
    pub expected: RangeInclusive<usize>,
}

impl std::fmt::Display for Implausible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server reported {} prompt {} for a request tern counted at {}, which no tokenizer gives (a tokenizer gives {} to {}): not learned",
            super::thousands(self.reported),
            crate::plural::noun_for(self.reported, "token"),
            super::thousands(self.predicted),
            super::thousands(*self.expected.start()),
            super::thousands(*self.expected.end())
        )
    }
}

/// The prompt tokens a server could report for a predicted request: its contents at
/// the lowest and highest rates tokenizers have (within half of the server's own count
/// when it counted them), plus from no template tokens to the most a template adds.
pub(crate) fn plausible(prediction: &Prediction) -> RangeInclusive<usize> {
    let template = template_max(prediction.messages);
    let (low, high) = match prediction.exact {
        Some(exact) => (exact / 2, exact),
        None => content_bounds(prediction.local.rest(), prediction.local.digits),
    };
    low..=high.saturating_add(template)
}

/// A report that is [`plausible`], or why it is not.
pub fn check(prediction: &Prediction, reported: usize) -> Result<(), Implausible> {
    let expected = plausible(prediction);
    match expected.contains(&reported) {
        true => Ok(()),
        false => Err(Implausible {
            reported,
            predicted: prediction.total,
            expected,
        }),
    }
}

/// The most tokens a chat template adds to a request of `messages` messages.
fn template_max(messages: usize) -> usize {
    MAX_PER_MESSAGE
        .saturating_mul(messages)
        .saturating_add(MAX_PER_REQUEST)
}

/// The one rule for what is learned, when a report arrives and when a saved
/// calibration is read back: a content of `rest` tern tokens outside numbers and
/// `digits` digits counted as `server` tokens, within the rates tokenizers have.
fn content_plausible(rest: usize, digits: usize, server: usize) -> bool {
    let (low, high) = content_bounds(rest, digits);
    (low..=high).contains(&server)
}

/// The same rule for a chat template's tokens over `messages` messages.
fn template_plausible(messages: usize, tokens: usize) -> bool {
    tokens <= template_max(messages)
}

/// The server tokens a content of `rest` tern tokens outside numbers and `digits`
/// digits can be, at the lowest and the highest rates.
fn content_bounds(rest: usize, digits: usize) -> (usize, usize) {
    let at = |rate: f64, digit_rate: f64| rate * rest as f64 + digit_rate * digits as f64;
    (
        at(RATE.0, DIGIT_RATE.0).floor() as usize,
        at(RATE.1, DIGIT_RATE.1).ceil() as usize,
    )
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

    /// The reports this calibration learns from for `prediction`: those whose
    /// observations hold to the rule a saved calibration is read back by (`sanitize`),
    /// so that what is learned is never forgotten at the next start.
    fn learnable(&self, prediction: &Prediction) -> RangeInclusive<usize> {
        let messages = prediction.messages;
        match prediction.exact {
            // The template's tokens are the report beyond the server's own count.
            Some(exact) => exact / 2..=exact.saturating_add(template_max(messages)),
            // The content's are the report less the template's learned tokens.
            None => {
                let overhead = self.overhead(messages);
                let (low, high) = content_bounds(prediction.local.rest(), prediction.local.digits);
                low.saturating_add(overhead)..=high.saturating_add(overhead)
            }
        }
    }

    /// The template's learned tokens in a request of `messages` messages.
    fn overhead(&self, messages: usize) -> usize {
        self.per_message
            .saturating_mul(messages)
            .saturating_add(self.per_request)
    }

    /// Learns from the server's count of a predicted request; returns the prediction's
    /// relative error. A report no tokenizer gives is not learned.
    pub(crate) fn observe(
        &mut self,
        prediction: &Prediction,
        reported: usize,
    ) -> Result<f64, Implausible> {
        let expected = self.learnable(prediction);
        if !expected.contains(&reported) {
            return Err(Implausible {
                reported,
                predicted: prediction.total,
                expected,
            });
        }
        let error = prediction.total.abs_diff(reported) as f64 / reported.max(1) as f64;
        // The "±N%" says how far estimates are off: a prediction of contents the
        // server counted says nothing about them.
        if prediction.learned && prediction.exact.is_none() {
            self.errors.push(error.min(MAX_ERROR));
            trim_front(&mut self.errors, KEPT);
        }
        let content = match prediction.exact {
            Some(exact) => {
                self.learn_template(prediction.messages, reported.saturating_sub(exact));
                exact
            }
            None => reported.saturating_sub(self.overhead(prediction.messages)),
        };
        let local = prediction.local;
        // The server's own count of the contents (its tokenize endpoint) is learned
        // by the same rule as a report.
        if local.tokens > 0 && content > 0 && content_plausible(local.rest(), local.digits, content)
        {
            self.contents.push((local.rest(), local.digits, content));
            trim_front(&mut self.contents, KEPT);
            (self.per_token, self.per_digit) = fit_rates(&self.contents);
            self.samples += 1;
        }
        Ok(error)
    }

    /// Learns that the chat template added `tokens` to a request of `messages`
    /// messages (a report less the server's count of the contents, or the framing
    /// probe's); a count no template adds is not learned.
    pub(crate) fn learn_template(&mut self, messages: usize, tokens: usize) {
        if !template_plausible(messages, tokens) {
            return;
        }
        self.template.push((messages, tokens));
        trim_front(&mut self.template, KEPT);
        (self.per_message, self.per_request) = fit_template(&self.template);
    }

    /// What an earlier session saved, held to the bounds a report is held to now (it
    /// may have learned an absurd report before there were any): implausible
    /// observations and errors are dropped and the rest refitted. Returns how many
    /// observations were dropped.
    pub(crate) fn sanitize(&mut self) -> usize {
        let (contents, template) = (self.contents.len(), self.template.len());
        self.contents
            .retain(|&(rest, digits, server)| content_plausible(rest, digits, server));
        self.template
            .retain(|&(messages, tokens)| template_plausible(messages, tokens));
        self.errors.retain(|e| (0.0..=MAX_ERROR).contains(e));
        (self.per_message, self.per_request) = match self.template.is_empty() {
            true => bounded_template(self.per_message, self.per_request),
            false => fit_template(&self.template),
        };
        (self.per_token, self.per_digit) = if !self.contents.is_empty() {
            fit_rates(&self.contents)
        } else if contents > 0 {
            // Every report it learned from was absurd: nothing was learned.
            self.samples = 0;
            PRIOR
        } else {
            bounded_rates(self.per_token, self.per_digit)
        };
        contents - self.contents.len() + template - self.template.len()
    }
}

/// The weight of each of `n` observations, oldest first: 1 for the newest.
fn weights(n: usize) -> impl Iterator<Item = f64> {
    (0..n).map(move |i| DECAY.powi((n - 1 - i) as i32))
}

/// Rates within what tokenizers do (the prior where they are not numbers).
fn bounded_rates(per_token: f64, per_digit: f64) -> (f64, f64) {
    if !(per_token.is_finite() && per_digit.is_finite()) {
        return PRIOR;
    }
    (
        per_token.clamp(RATE.0, RATE.1),
        per_digit.clamp(DIGIT_RATE.0, DIGIT_RATE.1),
    )
}

/// Template overheads within what chat templates add.
fn bounded_template(per_message: usize, per_request: usize) -> (usize, usize) {
    (
        per_message.min(MAX_PER_MESSAGE),
        per_request.min(MAX_PER_REQUEST),
    )
}

/// Server tokens = per_token × tern's tokens outside numbers + per_digit × digits,
/// fitted by least squares with newer observations weighing more, drawn to `PRIOR`
/// where the observations cannot tell the two apart (no digits seen yet, say). A rate
/// the fit puts outside what tokenizers do is held at its bound and the other fitted
/// again with it (observations that cannot tell the two apart gave the issue a per-digit
/// rate of -0.056).
fn fit_rates(observations: &[(usize, usize, usize)]) -> (f64, f64) {
    let (mut rr, mut rd, mut dd, mut ry, mut dy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (&(r, d, y), w) in observations.iter().zip(weights(observations.len())) {
        let (r, d, y) = (r as f64, d as f64, y as f64);
        rr += w * r * r;
        rd += w * r * d;
        dd += w * d * d;
        ry += w * r * y;
        dy += w * d * y;
    }
    let (ka, kb) = PRIOR_WEIGHT;
    let (a11, a12, a22) = (rr + ka, rd, dd + kb);
    let (b1, b2) = (ry + ka * PRIOR.0, dy + kb * PRIOR.1);
    let det = a11 * a22 - a12 * a12;
    if det.abs() < f64::EPSILON {
        return PRIOR;
    }
    let (per_token, per_digit) = ((b1 * a22 - a12 * b2) / det, (a11 * b2 - a12 * b1) / det);
    let (token_held, digit_held) = bounded_rates(per_token, per_digit);
    if digit_held != per_digit {
        bounded_rates((b1 - a12 * digit_held) / a11, digit_held)
    } else if token_held != per_token {
        bounded_rates(token_held, (b2 - a12 * token_held) / a22)
    } else {
        (per_token, per_digit)
    }
}

fn trim_front<T>(items: &mut Vec<T>, keep: usize) {
    let extra = items.len().saturating_sub(keep);
    items.drain(..extra);
}

/// Template tokens = per_message × messages + per_request, fitted by least squares
/// with newer observations weighing more; while every observation has the same number
/// of messages, the request's part is only what the messages' whole tokens leave over.
/// Both stay within what chat templates add.
fn fit_template(observations: &[(usize, usize)]) -> (usize, usize) {
    let Some(&(last_n, last_t)) = observations.last() else {
        return (MESSAGE_OVERHEAD, REPLY_PRIMING);
    };
    let weighted: Vec<(f64, f64, f64)> = observations
        .iter()
        .zip(weights(observations.len()))
        .map(|(&(n, t), w)| (n as f64, t as f64, w))
        .collect();
    let total: f64 = weighted.iter().map(|o| o.2).sum();
    let mean_n = weighted.iter().map(|o| o.2 * o.0).sum::<f64>() / total;
    let mean_t = weighted.iter().map(|o| o.2 * o.1).sum::<f64>() / total;
    let var: f64 = weighted.iter().map(|o| o.2 * (o.0 - mean_n).powi(2)).sum();
    if var == 0.0 {
        let per_message = last_t / last_n.max(1);
        return bounded_template(per_message, last_t - per_message * last_n);
    }
    let cov: f64 = weighted
        .iter()
        .map(|o| o.2 * (o.0 - mean_n) * (o.1 - mean_t))
        .sum();
    let per_message = (cov / var).round().max(0.0);
    let per_request = (mean_t - per_message * mean_n).round().max(0.0);
    bounded_template(per_message as usize, per_request as usize)
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
    write(path, &all)
}

/// Forgets what was learned about `model` (every model when None); returns the models
/// forgotten.
pub fn forget(path: &Path, model: Option<&str>) -> std::io::Result<Vec<String>> {
    let mut all = load(path);
    let forgotten: Vec<String> = all
        .keys()
        .filter(|m| model.is_none_or(|wanted| wanted == m.as_str()))
        .cloned()
        .collect();
    if !forgotten.is_empty() {
        all.retain(|m, _| !forgotten.contains(m));
        write(path, &all)?;
    }
    Ok(forgotten)
}

fn write(path: &Path, all: &Calibrations) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut file, all)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What a refusal made with learned counts says: where they are kept and how to forget
/// them.
pub(crate) fn refusal_note(path: &Path) -> String {
    format!(
        "the counts are scaled to what the server reported before, kept in {}; if they look wrong, `tern tokens --recalibrate` forgets them",
        path.display()
    )
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

    /// A server whose tokenizer counts 1.2 of tern's tokens outside numbers, one per
    /// digit, 4 a message and 3 a request.
    fn honest(l: Local) -> usize {
        server(l, 1)
    }

    /// The issue: a proxy reports 693 billion prompt tokens once. It is not learned,
    /// the estimates stay where the honest reports put them, and the next honest
    /// report is learned as before.
    #[test]
    fn an_absurd_report_is_not_learned() {
        let mut c = Calibration::default();
        let prose = local(1000, 0);
        for _ in 0..3 {
            let p = prediction(c.estimate(prose) + 7, 1, prose, None);
            c.observe(&p, honest(prose)).unwrap();
        }
        let before = c.clone();
        let p = prediction(c.estimate(prose) + 7, 1, prose, None);
        let e = c.observe(&p, 693_000_000_000).unwrap_err();
        assert_eq!(c, before);
        assert_eq!(e.reported, 693_000_000_000);
        let text = e.to_string();
        assert!(
            text.contains("693,000,000,000") && text.contains(&thousands(p.total)),
            "{text}"
        );
        // So is one far too low, and one absurd for the template of counted contents.
        assert!(c.observe(&p, 3).is_err());
        let counted = prediction(1000, 2, prose, Some(1200));
        assert!(c.observe(&counted, 1200 + 5_000).is_err());
        assert!(c.observe(&counted, 1200 + 11).is_ok());
        assert!((c.estimate(prose) as f64 - 1200.0).abs() < 12.0, "{c:?}");
    }

    fn thousands(n: usize) -> String {
        crate::tokens::thousands(n)
    }

    /// A model's tokenizer changes behind the same name (a proxy routes it elsewhere):
    /// the newer reports win within a few requests, whatever came before.
    #[test]
    fn later_reports_outweigh_earlier_ones() {
        let mut c = Calibration::default();
        let prose = local(1000, 0);
        for _ in 0..KEPT {
            c.observe(&prediction(1000, 1, prose, None), honest(prose))
                .unwrap();
        }
        let newer = |l: Local| (1.6 * l.rest() as f64).round() as usize + 7;
        for _ in 0..3 {
            c.observe(&prediction(1000, 1, prose, None), newer(prose))
                .unwrap();
        }
        let error = relative(c.estimate(prose) + 7, newer(prose));
        assert!(error < 0.05, "{error}: {c:?}");
    }

    /// Observations that cannot tell digits from the rest may fit a negative rate
    /// (the issue saw -0.056 per digit); the rates stay what a tokenizer can be.
    #[test]
    fn the_rates_stay_physical() {
        let mut c = Calibration::default();
        // The same text with more and more digits, and reports that fall a little as
        // the digits grow (noise, or a tokenizer that merges digits with what is
        // around them): least squares alone makes each digit -0.17 of a token.
        for (rest, digits, reported) in [(1000, 0, 1207), (1000, 300, 1157), (1000, 600, 1107)] {
            let l = local(rest, digits);
            c.observe(&prediction(1, 1, l, None), reported).unwrap();
        }
        assert!(c.per_digit >= DIGIT_RATE.0, "{c:?}");
        assert!((RATE.0..=RATE.1).contains(&c.per_token), "{c:?}");
        let mixed = local(700, 150);
        assert!(c.estimate(mixed) > 0);
    }

    proptest::proptest! {
        /// Whatever a server (or a proxy) reports, in any order, for any request: the
        /// rates stay what a tokenizer can be (never negative: the issue saw -0.056 per
        /// digit), the template's tokens stay within what templates add, every estimate
        /// is finite and grows with the text, and the margin never exceeds knowing
        /// nothing.
        #[test]
        fn adversarial_reports_leave_the_rates_physical(
            reports in proptest::collection::vec(
                (
                    0usize..50_000,
                    0usize..20_000,
                    0usize..40,
                    proptest::option::of(0usize..100_000),
                    proptest::prop_oneof![
                        0usize..10,
                        0usize..200_000,
                        proptest::strategy::Just(usize::MAX),
                        proptest::strategy::Strategy::prop_map(1usize..64, |shift| 1usize << shift),
                    ],
                    proptest::bool::ANY,
                ),
                1..40,
            ),
        ) {
            let mut c = Calibration::default();
            for (rest, digits, messages, exact, reported, learned) in reports {
                let l = local(rest, digits);
                let p = Prediction {
                    learned,
                    ..prediction(c.estimate(l), messages, l, exact)
                };
                let _ = c.observe(&p, reported);
                proptest::prop_assert!((RATE.0..=RATE.1).contains(&c.per_token), "{c:?}");
                proptest::prop_assert!((DIGIT_RATE.0..=DIGIT_RATE.1).contains(&c.per_digit), "{c:?}");
                proptest::prop_assert!(c.per_message <= MAX_PER_MESSAGE && c.per_request <= MAX_PER_REQUEST);
                proptest::prop_assert!(c.errors.iter().all(|e| (0.0..=MAX_ERROR).contains(e)));
                let (small, large) = (local(100, 10), local(1000, 100));
                proptest::prop_assert!(c.estimate(small) <= c.estimate(large));
                let counting = c.counting(false);
                proptest::prop_assert!(counting.margin(1000) <= Counting::Uncalibrated.margin(1000));
            }
        }

        /// One rule: a report learned when it arrives is never forgotten when the
        /// calibration is read back (the attacker's 4,000 for a request counted at 934
        /// was learned, then "forgotten" at every start).
        #[test]
        fn what_is_learned_is_never_forgotten_at_the_next_start(
            history in proptest::collection::vec(
                (1usize..20_000, 0usize..2_000, 1usize..12, 0.1f64..5.0, proptest::option::of(0.3f64..3.0)),
                1..12,
            ),
        ) {
            let mut c = Calibration::default();
            for (rest, digits, messages, ratio, exact) in history {
                let l = local(rest, digits);
                let reported = (rest as f64 * ratio) as usize + 20 * messages;
                let exact = exact.map(|r| (rest as f64 * r) as usize);
                let _ = c.observe(&prediction(rest + digits, messages, l, exact), reported);
            }
            let mut read_back = c.clone();
            proptest::prop_assert_eq!(read_back.sanitize(), 0);
            proptest::prop_assert_eq!(read_back, c);
        }
    }

    /// What the old fit saved after one absurd report (a per-token rate of millions) is
    /// mended when it is read: the absurd observation goes, and with nothing else
    /// learned, so does the calibration.
    #[test]
    fn a_poisoned_calibration_is_mended_when_read() {
        let mut poisoned = Calibration {
            per_token: 693_000_000.0,
            per_digit: -0.056,
            samples: 1,
            errors: vec![0.999_999_99],
            contents: vec![(1000, 0, 693_000_000_000)],
            template: vec![(2, 693_000_000_000)],
            ..Calibration::default()
        };
        assert_eq!(poisoned.sanitize(), 2);
        assert_eq!(poisoned.counting(false), Counting::Uncalibrated);
        assert_eq!(poisoned.estimate(local(1000, 0)), 1000);
        assert!(poisoned.per_message <= MAX_PER_MESSAGE && poisoned.per_request <= MAX_PER_REQUEST);

        // Among honest observations, only the absurd one goes.
        let mut mixed = Calibration {
            samples: 3,
            contents: vec![(1000, 0, 1200), (1000, 0, 693_000_000_000), (800, 0, 960)],
            ..Calibration::default()
        };
        assert_eq!(mixed.sanitize(), 1);
        assert!((mixed.per_token - 1.2).abs() < 0.01, "{mixed:?}");
        assert_eq!(mixed.samples, 3);
        // A sane one is left as it was.
        let mut sane = mixed.clone();
        assert_eq!(sane.sanitize(), 0);
        assert_eq!(sane, mixed);
    }

    #[test]
    fn a_calibrated_margin_is_never_more_than_an_uncalibrated_one() {
        let wild = Counting::Calibrated {
            error_percent: Some(1e12),
        };
        assert_eq!(wild.margin(1000), Counting::Uncalibrated.margin(1000));
        assert!(wild.is_learned() && Counting::Server.is_learned());
        assert!(!Counting::Exact.is_learned() && !Counting::Uncalibrated.is_learned());
    }

    #[test]
    fn forgetting_one_model_or_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calibration.json");
        assert!(forget(&path, None).unwrap().is_empty());
        save(&path, "a", &Calibration::default()).unwrap();
        save(&path, "b", &Calibration::default()).unwrap();
        assert!(forget(&path, Some("c")).unwrap().is_empty());
        assert_eq!(forget(&path, Some("a")).unwrap(), ["a"]);
        assert_eq!(load(&path).keys().collect::<Vec<_>>(), ["b"]);
        save(&path, "c", &Calibration::default()).unwrap();
        assert_eq!(forget(&path, None).unwrap(), ["b", "c"]);
        assert!(load(&path).is_empty());
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
        c.observe(&prediction(0, 4, local(90, 0), Some(100)), 100 + 5 * 4 + 3)
            .unwrap();
        assert_eq!(c.per_message * 4 + c.per_request, 23);
        c.observe(
            &prediction(0, 10, local(900, 0), Some(1000)),
            1000 + 5 * 10 + 3,
        )
        .unwrap();
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
        c.observe(&first, server(prose, 1)).unwrap();
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
        let error = c
            .observe(&prediction(guess, 1, numbers, None), server(numbers, 1))
            .unwrap();
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
