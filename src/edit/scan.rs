//! Line-level recognisers shared by the three reply parsers: SEARCH/REPLACE markers,
//! markdown fences, shell fences, and the lines that name a file.

use super::filename::FileSet;

/// A run of 5 to 9 `ch` followed by one of `words` (`<<<<<<< SEARCH`).
fn marker(line: &str, ch: char, words: &[&str]) -> bool {
    let t = line.trim();
    let run = t.chars().take_while(|&c| c == ch).count();
    if !(5..=9).contains(&run) {
        return false;
    }
    let rest = t.get(run..).unwrap_or_default().trim();
    words.iter().any(|w| rest.eq_ignore_ascii_case(w))
}

/// `<<<<<<< SEARCH` (and the older `ORIGINAL`).
pub(crate) fn is_search(line: &str) -> bool {
    marker(line, '<', &["SEARCH", "ORIGINAL"])
}

/// `=======`.
pub(crate) fn is_divider(line: &str) -> bool {
    marker(line, '=', &[""])
}

/// `>>>>>>> REPLACE` (and the older `UPDATED`).
pub(crate) fn is_replace(line: &str) -> bool {
    marker(line, '>', &["REPLACE", "UPDATED"])
}

/// `--- a/x` followed by `+++ b/x`: a unified diff's file header.
pub(crate) fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// `@@ -1,3 +1,4 @@` (or aider's bare `@@ ... @@`): a unified diff's hunk header.
pub(crate) fn is_hunk_header(line: &str) -> bool {
    line.strip_prefix("@@ ")
        .is_some_and(|rest| rest.contains("@@"))
}

/// An opening markdown fence: ```` ``` ```` or `~~~` (3 or more), with its info string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fence<'a> {
    ch: char,
    len: usize,
    pub info: &'a str,
}

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "shell",
    "zsh",
    "fish",
    "console",
    "shell-session",
    "shellsession",
    "powershell",
    "pwsh",
    "ps1",
    "cmd",
    "bat",
    "batch",
];

impl<'a> Fence<'a> {
    pub(crate) fn open(line: &'a str) -> Option<Fence<'a>> {
        let t = line.trim_start();
        let ch = t.chars().next().filter(|&c| c == '`' || c == '~')?;
        let len = t.chars().take_while(|&c| c == ch).count();
        let info = t.trim_start_matches(ch).trim();
        // A backtick fence's info string cannot contain a backtick (CommonMark).
        (len >= 3 && !(ch == '`' && info.contains('`'))).then_some(Fence { ch, len, info })
    }

    /// Whether `line` closes this fence.
    pub(crate) fn closed_by(&self, line: &str) -> bool {
        let t = line.trim();
        let run = t.chars().take_while(|&c| c == self.ch).count();
        run >= self.len && run == t.chars().count()
    }

    /// Index of the closing line, searching from `from`.
    pub(crate) fn close_in(&self, lines: &[&str], from: usize) -> Option<usize> {
        (from..lines.len()).find(|&i| self.closed_by(lines[i]))
    }

    /// The language word of the info string (`python` in ```` ```python title=x ````).
    pub(crate) fn language(&self) -> &'a str {
        self.info
            .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
            .next()
            .unwrap_or("")
    }

    pub(crate) fn is_shell(&self) -> bool {
        let lang = self.language();
        SHELLS.iter().any(|s| lang.eq_ignore_ascii_case(s))
    }

    /// A path given in the info string: ```` ```src/main.rs ````, ```` ```rust:src/main.rs ````,
    /// ```` ```python title="a.py" ````.
    pub(crate) fn filename(&self, files: &FileSet) -> Option<String> {
        self.info
            .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
            .map(|w| w.trim_start_matches("title=").trim_matches(['"', '\'']))
            .find(|w| looks_like_path(w, files) && (w.contains('/') || has_extension(w)))
            .map(str::to_string)
    }
}

/// A command block the model suggests running. tern shows it; it never runs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShellSuggestion {
    /// The fence's language (`bash`, `sh`, ...).
    pub language: String,
    /// The commands, one per line, as the model wrote them.
    pub commands: String,
}

/// If `lines[i]` opens a shell fence with no SEARCH/REPLACE marker inside, the
/// suggestion and the index of the line after the fence.
pub(crate) fn shell_fence(lines: &[&str], i: usize) -> Option<(ShellSuggestion, usize)> {
    let fence = Fence::open(lines[i]).filter(Fence::is_shell)?;
    let close = fence.close_in(lines, i + 1)?;
    let body = &lines[i + 1..close];
    if body
        .iter()
        .any(|l| is_search(l) || is_divider(l) || is_replace(l))
    {
        return None;
    }
    let commands = body.join("\n");
    (!commands.trim().is_empty()).then(|| {
        let suggestion = ShellSuggestion {
            language: fence.language().to_ascii_lowercase(),
            commands,
        };
        (suggestion, close + 1)
    })
}

/// Lines joined back into text, each ending in `\n`.
pub(crate) fn join_lines(lines: &[&str]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// How many non-blank lines before a SEARCH/REPLACE block may name its file (models
/// put prose or a fence line between the name and the block).
pub(crate) const FILENAME_LOOKBACK: usize = 3;

/// The file named on the nearest [`FILENAME_LOOKBACK`] non-blank lines before `lines[at]`, looking
/// no further back than `floor` (the end of the previous block). Fence lines are looked
/// through (their info string may itself hold the path).
pub(crate) fn filename_before(
    lines: &[&str],
    floor: usize,
    at: usize,
    files: &FileSet,
) -> Option<String> {
    let mut seen = 0;
    for line in lines[floor..at].iter().rev() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(fence) = Fence::open(line) {
            if let Some(name) = fence.filename(files) {
                return Some(name);
            }
            continue;
        }
        if let Some(name) = filename_in_line(line, files) {
            return Some(name);
        }
        seen += 1;
        if seen == FILENAME_LOOKBACK {
            break;
        }
    }
    None
}

/// The path a line names: the whole line once markdown decoration is stripped
/// (`### src/a.py`, `**src/a.py**:`, `` `src/a.py` ``, `File: src/a.py`, `// src/a.py`), or
/// else a backticked path in prose that names a known file (``In `src/a.py`, add:``).
pub(crate) fn filename_in_line(line: &str, files: &FileSet) -> Option<String> {
    if let Some(name) = path_line(line, files) {
        return Some(name);
    }
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .find(|span| looks_like_path(span, files) && files.knows(span))
        .map(str::to_string)
}

/// The path a line is once markdown decoration is stripped (`### src/a.py`,
/// `**src/a.py**:`), and nothing else: a sentence that mentions a path is not one.
pub(crate) fn path_line(line: &str, files: &FileSet) -> Option<String> {
    let stripped = strip_decoration(line);
    looks_like_path(stripped, files).then(|| stripped.to_string())
}

/// The one path a sentence names, in backticks or as its last word
/// (``Here is the new version of `a.txt`:``, `Here is the updated src/app.py:`); `None`
/// when it names none or several. A name from prose must look like a file, not like
/// code (`np.array`, `self.items`): a file the repository has, or a path with a
/// directory or a file extension tern knows.
pub(crate) fn only_path_in_prose(line: &str, files: &FileSet) -> Option<String> {
    let file_like = |s: &str| {
        looks_like_path(s, files) && (files.knows(s) || s.contains('/') || has_known_extension(s))
    };
    let mut found: Vec<&str> = line
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|span| file_like(span))
        .collect();
    // The last word, unless it is (in) a backticked span, counted above.
    let end = line
        .trim_end()
        .trim_end_matches([':', '.', ',', ';', '!', '?', '*', '_']);
    if !end.ends_with('`') {
        let last = end.split_whitespace().last().unwrap_or_default();
        let last = last.trim_matches(['*', '_', '"', '\'']);
        if !last.contains('`') && file_like(last) {
            found.push(last);
        }
    }
    found.sort_unstable();
    found.dedup();
    match found.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// Extensions of files that are not source code but are written whole all the same.
const TEXT_EXTENSIONS: &[&str] = &[
    "md",
    "mdx",
    "txt",
    "rst",
    "adoc",
    "json",
    "jsonc",
    "toml",
    "yaml",
    "yml",
    "xml",
    "ini",
    "cfg",
    "conf",
    "csv",
    "tsv",
    "env",
    "lock",
    "properties",
    "gradle",
    "tf",
    "proto",
    "graphql",
    "svg",
    "ipynb",
    "ps1",
    "bat",
    "mk",
    "cmake",
    "dockerfile",
];

/// Whether the last segment of `s` ends in an extension of source code (the languages
/// tern knows) or of a text file.
fn has_known_extension(s: &str) -> bool {
    let base = s.rsplit('/').next().unwrap_or(s);
    base.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (crate::languages::Language::of(base) != crate::languages::Language::Other
                || TEXT_EXTENSIONS.iter().any(|e| ext.eq_ignore_ascii_case(e)))
    })
}

fn strip_decoration(line: &str) -> &str {
    let mut s = line.trim();
    loop {
        let before = s;
        s = s.trim_start_matches('#').trim();
        for lead in ["//", "-- ", "- ", "* ", "+ ", ">"] {
            s = s.strip_prefix(lead).unwrap_or(s).trim_start();
        }
        for label in ["file:", "filename:", "path:", "file name:"] {
            if let Some(rest) = crate::chars::strip_prefix_ignore_ascii_case(s, label) {
                s = rest.trim_start();
            }
        }
        s = s.trim_end_matches(':').trim();
        for wrap in ["**", "__", "`", "\"", "'", "*"] {
            if let Some(inner) = s.strip_prefix(wrap).and_then(|r| r.strip_suffix(wrap)) {
                s = inner.trim();
            }
        }
        if s == before {
            return s;
        }
    }
}

fn has_extension(s: &str) -> bool {
    let base = s.rsplit('/').next().unwrap_or(s);
    base.rfind('.').is_some_and(|dot| dot + 1 < base.len())
}

/// Whether `s` can be a relative or absolute file path rather than prose or code.
pub(crate) fn looks_like_path(s: &str, files: &FileSet) -> bool {
    if s.is_empty() || s.len() > 4096 || s.starts_with('-') || s.ends_with('.') {
        return false;
    }
    if files.knows(s) {
        return true;
    }
    if s.contains("://") || s.contains(char::is_whitespace) {
        return false;
    }
    if s.contains(|c: char| "{}<>\"'|;,=*?!$&`".contains(c)) {
        return false;
    }
    // `pages/[id].tsx` and `app/(auth)/page.tsx` are paths; `run()` and `a[0].b` are
    // code: brackets are taken only with a plain extension after them.
    if s.contains(['(', ')', '[', ']']) && !has_plain_extension(s) {
        return false;
    }
    s.contains('/') || s.contains('\\') || has_extension(s)
}

/// Whether the last path segment ends in `.ext` with only letters and digits in `ext`.
fn has_plain_extension(s: &str) -> bool {
    let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
    base.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> FileSet {
        FileSet::new(vec!["src/main.rs".into(), "Makefile".into()], vec![])
    }

    #[test]
    fn markers_need_five_to_nine_characters() {
        assert!(is_search("<<<<<<< SEARCH"));
        assert!(is_search("  <<<<< SEARCH  "));
        assert!(is_search("<<<<<<<<< search"));
        assert!(!is_search("<<<< SEARCH"));
        assert!(!is_search("<<<<<<<<<< SEARCH"));
        assert!(is_divider("======="));
        assert!(!is_divider("===="));
        assert!(is_replace(">>>>>>> REPLACE"));
        assert!(is_replace(">>>>>>> UPDATED"));
    }

    #[test]
    fn decorated_filename_lines() {
        let f = files();
        for line in [
            "src/main.rs",
            "### src/main.rs",
            "**src/main.rs**",
            "`src/main.rs`:",
            "File: src/main.rs",
            "// src/main.rs",
            "- `src/main.rs`",
        ] {
            assert_eq!(
                filename_in_line(line, &f).as_deref(),
                Some("src/main.rs"),
                "{line}"
            );
        }
        assert_eq!(
            filename_in_line("Makefile", &f).as_deref(),
            Some("Makefile")
        );
        assert_eq!(
            filename_in_line("In `src/main.rs`, add a flag:", &f).as_deref(),
            Some("src/main.rs")
        );
        assert_eq!(filename_in_line("Here is the change:", &f), None);
        assert_eq!(filename_in_line("Call `foo.bar()` here.", &f), None);
    }

    #[test]
    fn fence_info_may_hold_the_path() {
        let f = files();
        let fence = Fence::open("```rust:src/lib.rs").unwrap();
        assert_eq!(fence.filename(&f).as_deref(), Some("src/lib.rs"));
        assert_eq!(Fence::open("```python").unwrap().filename(&f), None);
        assert!(Fence::open("````").unwrap().closed_by("`````"));
        assert!(!Fence::open("````").unwrap().closed_by("```"));
    }
}
