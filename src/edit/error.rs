//! Why a block of a reply was not applied, precisely enough for the user to see and for
//! the model to fix it (the reflection message).

use std::fmt;
use std::path::PathBuf;

use super::EditFormat;
use super::safety::Refusal;
use crate::prompts;

/// One block of a reply that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditError {
    /// 1-based position of the block in the reply.
    pub block: usize,
    /// The file the block was for, when it is known.
    pub path: Option<PathBuf>,
    pub problem: Problem,
    /// The block as the model wrote it, quoted back in the reflection.
    pub source: String,
}

/// Lines of the file that look most like a SEARCH text that did not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearMatch {
    /// 1-based line number of the first line.
    pub line: usize,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The block's structure is broken: a marker is missing or out of place.
    Malformed(String),
    /// No file name before the block and no earlier block to inherit one from.
    MissingFilename,
    /// The SEARCH text (or diff context) is not in the file.
    NoMatch {
        near: Option<NearMatch>,
        hint: Option<String>,
    },
    /// A diff hunk's context occurs at several places (1-based first lines).
    Ambiguous { lines: Vec<usize> },
    /// `...` elision that cannot be applied (counts differ, a piece is not unique, ...).
    Elision(String),
    /// The new text stands for code with a comment instead of writing it out.
    LazyComment { line: String },
    /// A whole-file block with nothing in it, for a file that has content: applying it
    /// would empty the file.
    EmptyWholeFile { lines: usize },
    /// A diff hunk with no context or removed lines for an existing non-empty file.
    NoContext,
    /// The file does not exist and the block does not create it.
    FileNotFound,
    /// A new-file diff for a file that already has content.
    FileExists,
    /// A diff that deletes a file.
    Delete,
    /// A path tern will not write (outside the repository, `.git/`, ...).
    Refused(Refusal),
    /// The file is binary.
    Binary,
    /// The new text has a NUL character, which would make the file binary.
    Nul,
    /// The edit would replace this 1-based line, which holds bytes that are not UTF-8.
    InvalidUtf8 { line: usize },
    /// A proposed hunk no longer applies to the file, which changed on disk.
    Stale(String),
    /// The file could not be read.
    Io(String),
}

impl EditError {
    pub(crate) fn new(block: usize, path: Option<PathBuf>, problem: Problem, source: &str) -> Self {
        EditError {
            block,
            path,
            problem,
            source: source.to_string(),
        }
    }

    fn what(&self) -> String {
        match &self.problem {
            Problem::Malformed(why) => why.clone(),
            Problem::MissingFilename => {
                "no file name: put the file's path on the line before the block".into()
            }
            Problem::NoMatch { .. } => {
                "the SEARCH text does not match any lines of the file exactly".into()
            }
            Problem::Ambiguous { lines } => format!(
                "the hunk's context matches {} places (lines {}); add more unchanged lines so it matches one",
                lines.len(),
                join_numbers(lines)
            ),
            Problem::Elision(why) => why.clone(),
            Problem::LazyComment { line } => format!(
                "the new text has the placeholder `{}` instead of the code it stands for; applying it would delete that code, so write the code out",
                line.trim()
            ),
            Problem::EmptyWholeFile { lines } => format!(
                "the file block is empty, which would delete all {lines} lines of the file; give the file's complete new content, or ask the user to delete it"
            ),
            Problem::NoContext => {
                "the hunk has no unchanged or removed lines, so there is no way to place it; include the lines around it".into()
            }
            Problem::FileNotFound => {
                "the file does not exist; to create it, use an empty SEARCH section".into()
            }
            Problem::FileExists => {
                "the diff creates the file but it already exists; diff against its current content".into()
            }
            Problem::Delete => "tern does not delete files; ask the user to delete it".into(),
            Problem::Refused(why) => format!("refused: {why}"),
            Problem::Binary => "the file is binary; tern edits text files only".into(),
            Problem::Nul => "the new text has a NUL character, which would make the file binary".into(),
            Problem::InvalidUtf8 { line } => format!(
                "line {line} of the file holds bytes that are not UTF-8 (shown as U+FFFD); tern keeps such lines exactly and does not edit them, so leave that line out of the edit"
            ),
            Problem::Stale(why) => format!("a proposed hunk no longer applies: {why}"),
            Problem::Io(e) => format!("cannot read the file: {e}"),
        }
    }

    /// What the model needs to fix this block: the problem, the block itself, and the
    /// lines of the file it probably meant.
    pub fn for_model(&self, format: EditFormat) -> String {
        let mut out = format!("## {}: {}\n", self.title(format), self.what());
        if !self.source.is_empty() {
            out.push_str(&fenced(&self.source));
        }
        if let Problem::NoMatch { near, hint } = &self.problem {
            if let (Some(near), Some(path)) = (near, &self.path) {
                out.push_str(&prompts::reflection_near(
                    &path.display().to_string(),
                    near.line,
                ));
                out.push('\n');
                out.push_str(&fenced(&near.text));
            }
            if let Some(hint) = hint {
                out.push_str(hint);
                out.push('\n');
            }
        }
        out
    }

    fn title(&self, format: EditFormat) -> String {
        let unit = match format {
            EditFormat::Editblock => "SEARCH/REPLACE block",
            EditFormat::Udiff => "diff hunk",
            EditFormat::Whole => "file block",
        };
        match &self.path {
            Some(p) => format!("{unit} {} for {}", self.block, p.display()),
            None => format!("{unit} {}", self.block),
        }
    }
}

impl EditError {
    /// What went wrong, without saying which block (the `Display` form says that too).
    pub fn reason(&self) -> String {
        let mut out = self.what();
        if let Problem::NoMatch { near, hint } = &self.problem {
            if let Some(near) = near {
                out.push_str(&format!("; closest lines start at line {}", near.line));
            }
            if let Some(hint) = hint {
                out.push_str("; ");
                out.push_str(&continued(hint));
            }
        }
        out
    }

    /// A proposed hunk that no longer applies (not a block of a reply).
    pub(crate) fn is_stale(&self) -> bool {
        matches!(self.problem, Problem::Stale(_))
    }
}

/// A hint written as a sentence for the model, continuing the user's line after `; `:
/// its first letter in lower case (`The REPLACE lines …` → `the REPLACE lines …`).
fn continued(sentence: &str) -> String {
    let mut chars = sentence.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.path, self.is_stale()) {
            (Some(p), true) => write!(f, "{}: {}", p.display(), self.reason()),
            (Some(p), false) => write!(
                f,
                "block {} ({}): {}",
                self.block,
                p.display(),
                self.reason()
            ),
            (None, _) => write!(f, "block {}: {}", self.block, self.reason()),
        }
    }
}

impl std::error::Error for EditError {}

/// The message sent back to the model when blocks of its reply failed: each failure with
/// its block and the lines it probably meant, and what to send next. `applied` is how
/// many blocks did apply (they are not to be sent again).
pub fn reflection_message(errors: &[EditError], applied: usize, format: EditFormat) -> String {
    let failed = errors.len();
    let mut out = if applied == 0 {
        prompts::reflection_none_applied(failed)
    } else {
        prompts::reflection_some_applied(failed, applied)
    };
    out.push_str("\n\n");
    for e in errors {
        out.push_str(&e.for_model(format));
        out.push('\n');
    }
    out.push_str(prompts::reflection_retry(format));
    out
}

fn fenced(text: &str) -> String {
    let fence = if text.contains("```") { "````" } else { "```" };
    let nl = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{text}{nl}{fence}\n")
}

fn join_numbers(lines: &[usize]) -> String {
    lines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A hint for the model is a sentence; after `; ` in the user's line it goes on in
    /// lower case.
    #[test]
    fn a_hint_continues_the_reason_in_lower_case() {
        let error = EditError::new(
            1,
            Some("a.txt".into()),
            Problem::NoMatch {
                near: None,
                hint: Some(
                    "The REPLACE lines are already in the file: was this edit applied already?"
                        .into(),
                ),
            },
            "",
        );
        assert_eq!(
            error.reason(),
            "the SEARCH text does not match any lines of the file exactly; the REPLACE lines are already in the file: was this edit applied already?"
        );
    }

    proptest! {
        /// Only the first character changes, and only to its lower case.
        #[test]
        fn continued_lowers_the_first_character_only(first in any::<char>(), rest in "\\PC*") {
            let sentence = format!("{first}{rest}");
            let lowered: String = first.to_lowercase().collect();
            prop_assert_eq!(continued(&sentence), format!("{lowered}{rest}"));
        }
    }
}
