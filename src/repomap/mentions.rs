//! Finding what a chat message mentions: file paths and basenames of the file set, and
//! identifiers the repository defines. The engine feeds the result to `RepoMap::build`
//! as mentioned files and identifiers.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

/// Files and identifiers mentioned in a text, sorted and without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Mentions {
    /// Root-relative paths.
    pub files: Vec<String>,
    pub idents: Vec<String>,
}

/// Scans `text`. A word mentions a file when it is the file's root-relative path, or its
/// basename when the basename has an extension or a separator in it (so `main.rs`
/// counts, `main` does not) and names at most three files; it mentions an identifier
/// when `is_defined` says the repository defines it.
pub fn find(text: &str, paths: &[String], is_defined: impl Fn(&str) -> bool) -> Mentions {
    let mut by_base: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in paths {
        let base = p.rsplit('/').next().unwrap_or(p);
        by_base.entry(base).or_default().push(p);
    }
    let mut files = BTreeSet::new();
    let mut idents = BTreeSet::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || "_-./\\".contains(c))) {
        let word = word.trim_matches(|c: char| ".,-".contains(c));
        if word.is_empty() {
            continue;
        }
        let word_path = word.replace('\\', "/");
        let word_path = word_path.trim_start_matches("./");
        if paths
            .binary_search_by(|p| p.as_str().cmp(word_path))
            .is_ok()
        {
            files.insert(word_path.to_string());
            continue;
        }
        if word_path.contains(['.', '_', '-'])
            && let Some(found) = by_base.get(word_path)
            && found.len() <= 3
        {
            files.extend(found.iter().map(|p| p.to_string()));
            continue;
        }
        // A file name's parts (`util` of `util.rs`) are not identifier mentions.
        for ident in word.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if ident.len() >= 3
                && !ident.starts_with(|c: char| c.is_ascii_digit())
                && is_defined(ident)
            {
                idents.insert(ident.to_string());
            }
        }
    }
    Mentions {
        files: files.into_iter().collect(),
        idents: idents.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_paths_basenames_and_defined_identifiers() {
        let paths: Vec<String> = ["README.md", "src/lib.rs", "src/main.rs", "src/repo_map.rs"]
            .map(String::from)
            .to_vec();
        let text = "Please change `src/lib.rs` and repo_map.rs, see main: call TokenCounter::count(), not main.";
        let m = find(text, &paths, |i| {
            ["TokenCounter", "count", "main"].contains(&i)
        });
        assert_eq!(m.files, ["src/lib.rs", "src/repo_map.rs"]);
        assert_eq!(m.idents, ["TokenCounter", "count", "main"]);
    }
}
