//! Commit messages: cleaning what the weak model wrote, the deterministic fallback
//! when no model answers, and the co-author trailer.

/// The longest subject line tern writes.
pub const MAX_SUBJECT: usize = 72;

/// The subject line in a model's answer: the first line that is not a fence or a
/// label, without quotes or backticks, cut to 72 characters at a word boundary. None
/// when nothing usable is left.
pub fn clean(answer: &str) -> Option<String> {
    let line = answer
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))?;
    let mut s = line;
    for label in ["commit message:", "message:", "subject:"] {
        if let Some(rest) = crate::chars::strip_prefix_ignore_ascii_case(s, label) {
            s = rest.trim_start();
        }
    }
    let s = s
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '*'))
        .trim()
        .trim_end_matches('.');
    // A subject is shown by every `git log`: no control or hidden character may reach it.
    let s = crate::terminal_text::without_unsafe(s);
    let s = s.trim();
    (!s.is_empty()).then(|| fit(s))
}

/// `s` cut to [`MAX_SUBJECT`] characters, at the last space that fits when there is one.
pub(crate) fn fit(s: &str) -> String {
    if s.chars().count() <= MAX_SUBJECT {
        return s.to_string();
    }
    let cut: String = s.chars().take(MAX_SUBJECT).collect();
    match cut.rsplit_once(' ') {
        Some((head, _)) if head.chars().count() > MAX_SUBJECT / 2 => head.trim_end().to_string(),
        _ => cut,
    }
}

/// The message with the `Co-authored-by: tern (<model>)` trailer when a model is given.
pub(crate) fn with_trailer(message: &str, co_author: Option<&str>) -> String {
    let message = message.trim_end();
    match co_author {
        Some(model) => format!("{message}\n\nCo-authored-by: tern ({model})\n"),
        None => format!("{message}\n"),
    }
}

/// A subject line from a unified diff alone, for when no model answers: the kind of
/// change from which files were added or touched, and their names when they fit.
pub fn fallback(diff: &str) -> String {
    let files = changed_files(diff);
    if files.is_empty() {
        return "chore: update files".into();
    }
    let all = |pred: fn(&Changed) -> bool| files.iter().all(pred);
    let (kind, verb) = if all(|f| f.added) {
        ("feat", "add")
    } else if all(|f| is_doc(&f.path)) {
        ("docs", "update")
    } else if all(|f| is_test(&f.path)) {
        ("test", "update")
    } else if all(|f| f.plus == 0) {
        ("refactor", "remove code from")
    } else {
        ("chore", "update")
    };
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let bases: Vec<&str> = names
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    let candidates = [
        list(&names),
        list(&bases),
        format!(
            "{}{}",
            crate::plural::count(files.len(), "file"),
            common_dir(&names)
                .map(|d| format!(" in {d}"))
                .unwrap_or_default()
        ),
        crate::plural::count(files.len(), "file"),
    ];
    let subject = candidates
        .iter()
        .map(|what| format!("{kind}: {verb} {what}"))
        .find(|s| s.chars().count() <= MAX_SUBJECT)
        .unwrap_or_else(|| format!("{kind}: {verb} files"));
    fit(&subject)
}

struct Changed {
    path: String,
    added: bool,
    plus: usize,
}

fn changed_files(diff: &str) -> Vec<Changed> {
    let mut files: Vec<Changed> = Vec::new();
    let mut from_null = false;
    for line in diff.lines() {
        if let Some(old) = line.strip_prefix("--- ") {
            from_null = old.trim() == "/dev/null";
        } else if let Some(new) = line.strip_prefix("+++ ") {
            let path = new.trim();
            let path = path.strip_prefix("b/").unwrap_or(path).to_string();
            files.push(Changed {
                path,
                added: from_null,
                plus: 0,
            });
        } else if line.starts_with('+')
            && let Some(f) = files.last_mut()
        {
            f.plus += 1;
        }
    }
    files
}

fn list(names: &[&str]) -> String {
    match names {
        [one] => one.to_string(),
        [a, b] => format!("{a} and {b}"),
        [first @ .., last] => format!("{}, and {last}", first.join(", ")),
        [] => String::new(),
    }
}

fn common_dir(paths: &[&str]) -> Option<String> {
    let mut parts: Vec<&str> = paths.first()?.split('/').collect();
    parts.pop();
    for p in &paths[1..] {
        let other: Vec<&str> = p.split('/').collect();
        let same = parts
            .iter()
            .zip(&other[..other.len() - 1])
            .take_while(|(a, b)| a == b)
            .count();
        parts.truncate(same);
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn is_doc(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".md", ".rst", ".txt", ".adoc"]
        .iter()
        .any(|e| lower.ends_with(e))
        || lower.starts_with("docs/")
}

fn is_test(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.split('/').any(|part| {
        part == "tests"
            || part == "test"
            || part == "spec"
            || part.starts_with("test_")
            || part.contains("_test.")
            || part.contains(".test.")
            || part.contains(".spec.")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_takes_the_subject_line() {
        assert_eq!(
            clean("```\nfeat: add x\n```").as_deref(),
            Some("feat: add x")
        );
        assert_eq!(
            clean("Commit message: \"fix: y.\"").as_deref(),
            Some("fix: y")
        );
        assert_eq!(clean("  \n"), None);
        assert_eq!(
            clean("fix: \u{202e}gnp.exe\u{2066} \x1b[2Jnow\u{200b}").as_deref(),
            Some("fix: gnp.exe [2Jnow")
        );
        let long = format!("feat: {}", "word ".repeat(30));
        assert!(clean(&long).unwrap().chars().count() <= MAX_SUBJECT);
    }

    #[test]
    fn fallback_names_the_kind_and_files() {
        let diff = "--- /dev/null\n+++ b/src/money.py\n@@ -0,0 +1 @@\n+x\n";
        assert_eq!(fallback(diff), "feat: add src/money.py");
        let diff = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(fallback(diff), "docs: update README.md");
        let diff = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +0,0 @@\n-a\n";
        assert_eq!(fallback(diff), "refactor: remove code from src/a.rs");
        let many: String = (0..20)
            .map(|i| format!("--- a/src/edit/f{i}.rs\n+++ b/src/edit/f{i}.rs\n+x\n"))
            .collect();
        assert_eq!(fallback(&many), "chore: update 20 files in src/edit");
        // One file whose path is too long for the subject is counted as one.
        let long = format!("{}.rs", "deep".repeat(20));
        let one = format!("--- a/{long}\n+++ b/{long}\n+x\n");
        assert_eq!(fallback(&one), "chore: update 1 file");
        assert!(is_conventional(&fallback(&many)));
    }

    const TYPES: &[&str] = &[
        "feat", "fix", "refactor", "perf", "docs", "test", "build", "ci", "style", "chore",
    ];

    /// Whether `subject` already reads `type: ...` or `type(scope): ...`.
    pub(crate) fn is_conventional(subject: &str) -> bool {
        let Some((head, rest)) = subject.split_once(':') else {
            return false;
        };
        let kind = head.split('(').next().unwrap_or(head).trim_end_matches('!');
        TYPES.contains(&kind) && rest.starts_with(' ')
    }
}
