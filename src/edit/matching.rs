//! Finding a SEARCH text in a file and replacing it, tolerating the ways models copy
//! text imperfectly, in this order: exact; a uniform indentation offset (the
//! replacement is re-indented by the same offset); spurious blank lines at the ends of
//! the SEARCH; `...` elision, where each piece must match exactly one place.
//!
//! SEARCH/REPLACE blocks replace the first occurrence only. Diff hunks
//! ([`Occurrence::Unique`]) are refused when their context matches several places.

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp};

pub(crate) use super::doc::{Doc, lines_of};
use super::doc::{Line, TouchesInvalid};
use super::error::NearMatch;

/// Which match a search takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    /// The first place in the file (SEARCH/REPLACE blocks).
    First,
    /// The only place; several matches are an error (diff hunks).
    Unique,
}

/// How a SEARCH text was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    Exact,
    /// Every line shifted by the same indentation (trailing whitespace ignored).
    Indent,
    /// After dropping blank lines the model added at the start or end of the SEARCH.
    BlankTrimmed,
    /// Pieces between `...` lines, each matched once.
    Elision,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    NoMatch,
    /// 1-based first lines of the matches.
    Ambiguous(Vec<usize>),
    Elision(String),
    Lazy(String),
    /// The edit would replace this (1-based) line, which holds bytes that are not UTF-8.
    InvalidUtf8(usize),
}

/// The most time a whole-file edit's diff against the current text may take before it
/// settles for a coarser result (the lines it cannot pair become new lines).
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

impl<'a> Doc<'a> {
    /// Replaces everything (a whole-file edit). Lines a diff pairs with the current ones
    /// stay references to them, so they keep their bytes.
    pub(crate) fn replace_all(&mut self, content: &'a str) -> Result<(), Failure> {
        let new = lines_of(content);
        let old: Vec<&str> = self.lines(0..self.len()).collect();
        let deadline = Instant::now() + DIFF_DEADLINE;
        let ops =
            similar::capture_diff_slices_deadline(Algorithm::Patience, &old, &new, Some(deadline));
        drop(old);
        let mut with = Vec::with_capacity(new.len());
        for op in ops {
            match op {
                DiffOp::Equal { old_index, len, .. } => {
                    with.extend((old_index..old_index + len).map(|i| self.line_ref(i)))
                }
                op => with.extend(op.new_range().map(|j| Line::New(Cow::Borrowed(new[j])))),
            }
        }
        self.replace(0..self.len(), with).map_err(invalid)?;
        self.set_final_newline(content.is_empty() || content.ends_with('\n'));
        Ok(())
    }

    /// Adds `text` at the end, on lines of its own (an empty SEARCH).
    pub(crate) fn append(&mut self, text: &'a str) -> Result<(), Failure> {
        if self.is_empty() {
            return self.replace_all(text);
        }
        let lines = lines_of(text)
            .into_iter()
            .map(|l| Line::New(Cow::Borrowed(l)))
            .collect();
        self.push_lines(lines, text.ends_with('\n'));
        Ok(())
    }

    /// Replaces the SEARCH text by the REPLACE text, trying each strategy in turn.
    pub(crate) fn search_replace(
        &mut self,
        search: &'a str,
        replace: &'a str,
        occurrence: Occurrence,
    ) -> Result<Strategy, Failure> {
        let s = lines_of(search);
        let r = lines_of(replace);
        if let Some(lazy) = lazy_placeholder(&s, &r) {
            return Err(Failure::Lazy(lazy.to_string()));
        }
        if let Some(place) = self.locate(&s, occurrence)? {
            let strategy = place.strategy();
            self.put(&place, &s, &r)?;
            return Ok(strategy);
        }
        let (lead, trail) = blank_ends(&s);
        if lead + trail > 0 && lead + trail < s.len() {
            let core = &s[lead..s.len() - trail];
            if let Some(place) = self.locate(core, occurrence)? {
                let (r_lead, r_trail) = blank_ends(&r);
                let r_core = &r[r_lead.min(lead)..r.len() - r_trail.min(trail)];
                self.put(&place, core, r_core)?;
                return Ok(Strategy::BlankTrimmed);
            }
        }
        if s.iter().any(|l| is_dots(l)) {
            return self.elide(&s, &r).map(|()| Strategy::Elision);
        }
        Err(Failure::NoMatch)
    }

    /// The first (or only) place `pat` matches: exactly, else with an indentation offset.
    fn locate(&self, pat: &[&str], occurrence: Occurrence) -> Result<Option<Place>, Failure> {
        if pat.iter().all(|l| l.trim().is_empty()) {
            return Ok(None);
        }
        for cmp in [Cmp::Exact, Cmp::Indent] {
            let found = self.find(pat, cmp, occurrence);
            match found.as_slice() {
                [] => continue,
                [_] => return Ok(found.into_iter().next()),
                many if occurrence == Occurrence::First => {
                    return Ok(many.first().cloned());
                }
                many => {
                    return Err(Failure::Ambiguous(
                        many.iter().map(|p| p.start + 1).collect(),
                    ));
                }
            }
        }
        Ok(None)
    }

    /// Places where `pat` matches; stops at the first for [`Occurrence::First`]. Only
    /// windows whose first non-blank line matches (trimmed) are compared.
    fn find(&self, pat: &[&str], cmp: Cmp, occurrence: Occurrence) -> Vec<Place> {
        let n = pat.len();
        let mut found = Vec::new();
        if n == 0 || n > self.len() {
            return found;
        }
        let anchor = pat.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
        for at in self.positions_of(pat[anchor]) {
            let Some(start) = at.checked_sub(anchor) else {
                continue;
            };
            if start + n > self.len() {
                break;
            }
            let window: Vec<&str> = self.lines(start..start + n).collect();
            let indent = match cmp {
                Cmp::Exact => (window.as_slice() == pat).then_some(Indent::Same),
                Cmp::Indent => indent_offset(&window, pat),
            };
            if let Some(indent) = indent {
                found.push(Place {
                    start,
                    len: n,
                    indent,
                    exact: cmp == Cmp::Exact,
                });
                if occurrence == Occurrence::First {
                    break;
                }
            }
        }
        found
    }

    /// Replaces the matched lines by `with`. Lines of `with` that the edit keeps from
    /// `pat` (its unchanged lines, as a diff of the two says) stay the file's own lines,
    /// byte for byte; only the others are new, re-indented like the match.
    fn put(&mut self, place: &Place, pat: &[&str], with: &[&'a str]) -> Result<(), Failure> {
        let kept = kept_from(pat, with);
        let lines = with
            .iter()
            .zip(kept)
            .map(|(line, from)| match from {
                Some(i) => self.line_ref(place.start + i),
                None => Line::New(place.indent.apply(line)),
            })
            .collect();
        self.replace(place.start..place.start + place.len, lines)
            .map_err(invalid)
    }

    /// `...` elision: the SEARCH and REPLACE split at their `...` lines into the same
    /// number of pieces; each SEARCH piece must match exactly one place and is replaced
    /// by its REPLACE piece.
    fn elide(&mut self, s: &[&'a str], r: &[&'a str]) -> Result<(), Failure> {
        let s_pieces: Vec<&[&str]> = s.split(|l| is_dots(l)).collect();
        let r_pieces: Vec<&[&'a str]> = r.split(|l| is_dots(l)).collect();
        if s_pieces.len() != r_pieces.len() {
            return Err(Failure::Elision(format!(
                "the SEARCH has {} `...` lines but the REPLACE has {}; they must have the same number",
                s_pieces.len() - 1,
                r_pieces.len() - 1
            )));
        }
        // Check every piece before changing anything, so a failure leaves the file as it was.
        let mut work = self.clone();
        for (sp, rp) in s_pieces.into_iter().zip(r_pieces) {
            if sp.iter().all(|l| l.trim().is_empty()) {
                if rp.iter().any(|l| !l.trim().is_empty()) {
                    return Err(Failure::Elision(
                        "a REPLACE piece adds lines where the SEARCH has only `...`; \
                         include the lines around that spot in the SEARCH"
                            .into(),
                    ));
                }
                continue;
            }
            match work.locate(sp, Occurrence::Unique) {
                Ok(Some(place)) => work.put(&place, sp, rp)?,
                Ok(None) => return Err(Failure::NoMatch),
                Err(Failure::Ambiguous(lines)) => {
                    return Err(Failure::Elision(format!(
                        "the piece starting `{}` matches {} places; with `...` each piece must match exactly one",
                        sp.iter()
                            .find(|l| !l.trim().is_empty())
                            .map_or("", |l| l.trim()),
                        lines.len()
                    )));
                }
                Err(other) => return Err(other),
            }
        }
        *self = work;
        Ok(())
    }

    /// The lines most like `search`, for "did you mean".
    pub(crate) fn nearest(&self, search: &str) -> Option<NearMatch> {
        let lines: Vec<&str> = self.lines(0..self.len()).collect();
        nearest(&lines, &lines_of(search))
    }

    /// Whether `text`'s lines occur exactly, in order, somewhere in the document.
    pub(crate) fn contains(&self, text: &str) -> bool {
        let pat = lines_of(text);
        !pat.is_empty() && !self.find(&pat, Cmp::Exact, Occurrence::First).is_empty()
    }
}

/// For each line of `with`, the line of `pat` it keeps unchanged (a diff of the two,
/// which are both the model's text), if any.
fn kept_from(pat: &[&str], with: &[&str]) -> Vec<Option<usize>> {
    let mut kept = vec![None; with.len()];
    let deadline = Instant::now() + DIFF_DEADLINE;
    for op in similar::capture_diff_slices_deadline(Algorithm::Patience, pat, with, Some(deadline))
    {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for k in 0..len {
                kept[new_index + k] = Some(old_index + k);
            }
        }
    }
    kept
}

fn invalid(TouchesInvalid(line): TouchesInvalid) -> Failure {
    Failure::InvalidUtf8(line + 1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Exact,
    Indent,
}

#[derive(Debug, Clone)]
struct Place {
    start: usize,
    len: usize,
    indent: Indent,
    exact: bool,
}

impl Place {
    fn strategy(&self) -> Strategy {
        if self.exact {
            Strategy::Exact
        } else {
            Strategy::Indent
        }
    }
}

/// How the file's lines differ in indentation from the SEARCH lines.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Indent {
    Same,
    /// The file has this much more indentation.
    Add(String),
    /// The file has this much less.
    Remove(String),
}

impl Indent {
    fn apply<'a>(&self, line: &'a str) -> Cow<'a, str> {
        match self {
            _ if line.trim().is_empty() => Cow::Borrowed(line),
            Indent::Same => Cow::Borrowed(line),
            Indent::Add(extra) => Cow::Owned(format!("{extra}{line}")),
            Indent::Remove(extra) => Cow::Borrowed(
                line.strip_prefix(extra.as_str())
                    .unwrap_or_else(|| outdent(line, extra.len())),
            ),
        }
    }
}

/// `line` without up to `width` bytes of leading whitespace (a line outdented further
/// than the offset loses what indentation it has).
fn outdent(line: &str, width: usize) -> &str {
    let mut cut = 0;
    for c in line.chars() {
        if !c.is_whitespace() || cut + c.len_utf8() > width {
            break;
        }
        cut += c.len_utf8();
    }
    line.get(cut..).unwrap_or(line)
}

/// `s` split into its leading whitespace and the rest.
fn split_indent(s: &str) -> (&str, &str) {
    let rest = s.trim_start();
    (s.strip_suffix(rest).unwrap_or(""), rest)
}

/// The indentation offset that makes `window` equal `pat` line for line (ignoring
/// trailing whitespace; blank lines match blank lines), if there is one.
fn indent_offset(window: &[&str], pat: &[&str]) -> Option<Indent> {
    let mut offset: Option<Indent> = None;
    for (f, p) in window.iter().zip(pat) {
        let (f, p) = (f.trim_end(), p.trim_end());
        if f.is_empty() || p.is_empty() {
            if f.is_empty() && p.is_empty() {
                continue;
            }
            return None;
        }
        let same = match &offset {
            Some(Indent::Add(extra)) => f.strip_prefix(extra.as_str()) == Some(p),
            Some(Indent::Remove(extra)) => p.strip_prefix(extra.as_str()) == Some(f),
            Some(Indent::Same) => f == p,
            None => {
                let ((fi, f_rest), (pi, p_rest)) = (split_indent(f), split_indent(p));
                if f_rest != p_rest {
                    return None;
                }
                offset = Some(if fi == pi {
                    Indent::Same
                } else if let Some(extra) = fi.strip_suffix(pi) {
                    Indent::Add(extra.to_string())
                } else if let Some(extra) = pi.strip_suffix(fi) {
                    Indent::Remove(extra.to_string())
                } else {
                    return None;
                });
                true
            }
        };
        if !same {
            return None;
        }
    }
    offset
}

/// Counts of blank lines at the start and the end.
fn blank_ends(lines: &[&str]) -> (usize, usize) {
    let lead = lines.iter().take_while(|l| l.trim().is_empty()).count();
    let trail = lines[lead..]
        .iter()
        .rev()
        .take_while(|l| l.trim().is_empty())
        .count();
    (lead, trail)
}

fn is_dots(line: &str) -> bool {
    line.trim() == "..."
}

/// Phrases that mark a comment as standing for code the model did not write out.
const LAZY_WORDS: &[&str] = &[
    "existing",
    "unchanged",
    "rest of",
    "remaining",
    "as before",
    "omitted",
    "same as",
    "previous code",
    "other code",
    "other methods",
    "other functions",
];

/// A REPLACE line like `// ... existing code ...` that is not in the SEARCH: the model
/// meant "keep what was here", but applying it would delete that code.
fn lazy_placeholder<'a>(search: &[&str], replace: &[&'a str]) -> Option<&'a str> {
    let searched: HashSet<&str> = search.iter().map(|l| l.trim()).collect();
    replace.iter().copied().find(|line| {
        let t = line.trim();
        !searched.contains(t) && comment_body(t).is_some_and(elides)
    })
}

/// Phrases that, alone on a comment line of a whole file, stand for code left out.
const PLACEHOLDER_PHRASES: &[&str] = &[
    "existing code",
    "existing code unchanged",
    "keep existing code",
    "rest of the file",
    "rest of file",
    "rest of the file unchanged",
    "rest of file unchanged",
    "rest of the code",
    "rest of code",
    "rest of the code unchanged",
    "remaining code",
    "remaining code unchanged",
    "unchanged",
    "unchanged code",
    "code unchanged",
    "same as before",
    "previous code",
    "other code",
    "other methods",
    "other functions",
];

/// A line of a whole-file block (`original`: the file's current lines) that stands for
/// code the model left out: what [`lazy_placeholder`] finds, a comment that is only a
/// placeholder phrase (`// existing code`), or prose like `... rest unchanged ...`.
/// Written out, the file would lose that code.
pub(crate) fn whole_placeholder<'a>(original: &[&str], content: &[&'a str]) -> Option<&'a str> {
    let present: HashSet<&str> = original.iter().map(|l| l.trim()).collect();
    content.iter().copied().find(|line| {
        let t = line.trim();
        if present.contains(t) {
            return false;
        }
        match comment_body(t) {
            Some(body) => elides(body) || is_placeholder_phrase(body),
            None => has_dots(t) && has_lazy_word(t),
        }
    })
}

/// The text of a comment line, without its comment markers.
fn comment_body(t: &str) -> Option<&str> {
    let body = ["//", "#", "--", "/*", "<!--", ";", "{/*"]
        .iter()
        .find_map(|lead| t.strip_prefix(lead))?;
    Some(
        body.trim()
            .trim_end_matches("*/}")
            .trim_end_matches("*/")
            .trim_end_matches("-->")
            .trim(),
    )
}

/// `...`, or dots together with words like "existing" or "unchanged".
fn elides(body: &str) -> bool {
    body.starts_with("...") || body.starts_with('…') || (has_dots(body) && has_lazy_word(body))
}

fn has_dots(s: &str) -> bool {
    s.contains("...") || s.contains('…')
}

fn has_lazy_word(s: &str) -> bool {
    let lower = s.to_lowercase();
    LAZY_WORDS.iter().any(|w| lower.contains(w))
}

fn is_placeholder_phrase(body: &str) -> bool {
    let phrase = body
        .trim_matches(|c: char| c == '.' || c == '…' || c.is_whitespace())
        .to_lowercase();
    PLACEHOLDER_PHRASES.contains(&phrase.as_str())
}

/// How similar a window must be to the SEARCH text to be offered as "did you mean".
const NEAR_CUTOFF: f32 = 0.6;
/// How many best-scoring windows are compared character by character.
const NEAR_CANDIDATES: usize = 5;

/// The window of the file most like `pat`: windows are scored by how many of the
/// SEARCH's words their lines share, and the best few compared character by character
/// (indentation aside).
fn nearest(lines: &[&str], pat: &[&str]) -> Option<NearMatch> {
    let wanted: HashSet<&str> = pat.iter().flat_map(|l| words(l)).collect();
    let n = pat.len().min(lines.len());
    if wanted.is_empty() || n == 0 {
        return None;
    }
    let score: Vec<usize> = lines
        .iter()
        .map(|l| words(l).filter(|w| wanted.contains(w)).count())
        .collect();
    let mut sums: Vec<(usize, usize)> = Vec::with_capacity(lines.len() - n + 1);
    let mut sum: usize = score[..n].iter().sum();
    sums.push((sum, 0));
    for start in 1..=lines.len() - n {
        sum = sum + score[start + n - 1] - score[start - 1];
        sums.push((sum, start));
    }
    sums.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    // Indentation is compared separately by the ladder; here it would only hide a
    // match that differs in nothing else (tabs for spaces).
    let trimmed =
        |lines: &mut dyn Iterator<Item = &str>| lines.map(str::trim).collect::<Vec<_>>().join("\n");
    let pat_text = trimmed(&mut pat.iter().copied());
    let mut best: Option<(f32, usize)> = None;
    for &(s, start) in sums.iter().take(NEAR_CANDIDATES) {
        if s == 0 {
            break;
        }
        let text = trimmed(&mut lines[start..start + n].iter().copied());
        let ratio = similar::TextDiff::configure()
            .timeout(std::time::Duration::from_millis(50))
            .diff_chars(pat_text.as_str(), text.as_str())
            .ratio();
        if best.is_none_or(|(r, _)| ratio > r) {
            best = Some((ratio, start));
        }
    }
    let (ratio, start) = best?;
    (ratio >= NEAR_CUTOFF).then(|| NearMatch {
        line: start + 1,
        text: lines[start..start + n].join("\n"),
    })
}

/// Identifier-like words of a line (two characters or more).
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, search: &str, replace: &str) -> Result<(String, Strategy), Failure> {
        let mut doc = Doc::new(text);
        let s = doc.search_replace(search, replace, Occurrence::First)?;
        Ok((doc.text(), s))
    }

    #[test]
    fn indentation_offset_reindents_the_replacement() {
        let text = "fn f() {\n    if x {\n        y();\n    }\n}\n";
        let (out, how) = edit(text, "if x {\n    y();\n}\n", "if x {\n    z();\n}\n").unwrap();
        assert_eq!(how, Strategy::Indent);
        assert_eq!(out, "fn f() {\n    if x {\n        z();\n    }\n}\n");
    }

    #[test]
    fn lazy_comment_is_refused() {
        let r = edit("a\nb\n", "a\n", "// ... existing code ...\nc\n");
        assert_eq!(r, Err(Failure::Lazy("// ... existing code ...".into())));
        assert!(edit("a\n", "a\n", "# wait for it...\n").is_ok());
    }
}
