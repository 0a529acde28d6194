//! Fuzzy matching of file paths for `@` completion and the file picker: the pattern's
//! characters in order, scored so that runs, word starts and the file name win.

/// Paths matching `pattern`, best first, at most `limit`. An empty pattern keeps the
/// input order.
pub fn filter<'a>(pattern: &str, candidates: &'a [String], limit: usize) -> Vec<&'a str> {
    if pattern.is_empty() {
        return candidates.iter().take(limit).map(String::as_str).collect();
    }
    let mut scored: Vec<(i64, &str)> = candidates
        .iter()
        .filter_map(|c| score(pattern, c).map(|s| (s, c.as_str())))
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.into_iter().take(limit).map(|(_, c)| c).collect()
}

/// The score of `candidate` for `pattern`, or None when it does not match. Matching is
/// case-insensitive unless the pattern has an upper-case letter.
pub fn score(pattern: &str, candidate: &str) -> Option<i64> {
    let sensitive = pattern.chars().any(char::is_uppercase);
    let fold = |c: char| if sensitive { c } else { c.to_ascii_lowercase() };
    let name_start = candidate.rfind('/').map_or(0, |i| i + 1);
    let chars: Vec<(usize, char)> = candidate.char_indices().collect();
    let mut score = 0i64;
    let mut at = 0;
    let mut previous: Option<usize> = None;
    for p in pattern.chars().map(fold) {
        let found = (at..chars.len()).find(|&i| fold(chars[i].1) == p)?;
        let (byte, c) = chars[found];
        score += 1;
        if previous.is_some_and(|prev| prev + 1 == found) {
            score += 8;
        }
        let boundary = found == 0
            || matches!(chars[found - 1].1, '/' | '_' | '-' | '.' | ' ')
            || (c.is_uppercase() && chars[found - 1].1.is_lowercase());
        if boundary {
            score += 6;
        }
        if byte >= name_start {
            score += 2;
        }
        if let Some(prev) = previous {
            score -= (found - prev - 1).min(8) as i64;
        }
        previous = Some(found);
        at = found + 1;
    }
    Some(score * 4 - candidate.len() as i64 / 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsequences_match_and_names_win() {
        assert!(score("apy", "src/app.py").is_some());
        assert!(score("xyz", "src/app.py").is_none());
        assert!(score("App", "src/app.py").is_none(), "smart case");
        let files: Vec<String> = [
            "docs/mapping/append.md",
            "src/app.py",
            "src/tests/test_app.py",
            "scripts/deploy_all.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(filter("app", &files, 10)[0], "src/app.py");
        assert_eq!(filter("tapp", &files, 10)[0], "src/tests/test_app.py");
        assert_eq!(
            filter("", &files, 2),
            ["docs/mapping/append.md", "src/app.py"]
        );
    }
}
