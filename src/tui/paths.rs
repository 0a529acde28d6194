//! Repository paths cut to fit a column without losing what tells them apart: a list
//! of `locale/de/LC_MESSAGES/humanize.po`, `locale/fr/…` cut from the left reads
//! `…umanize.po` on every row. Here a path keeps its file name and the directories in
//! which it differs from the listed paths with the same file name, and an ellipsis
//! stands for the directories left out (`…/de/…/humanize.po`).

use std::collections::HashMap;

use unicode_segmentation::UnicodeSegmentation;

use super::text;

/// The most directories kept to tell a path from its namesakes.
const MAX_TELLING: usize = 3;

/// For each path, the indexes of the directories that tell it from the other paths
/// with its file name (none when no other has it), fewest first chosen greedily.
pub(crate) fn telling_dirs(paths: &[&str]) -> Vec<Vec<usize>> {
    let split: Vec<Vec<&str>> = paths.iter().map(|p| p.split('/').collect()).collect();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, parts) in split.iter().enumerate() {
        by_name
            .entry(parts.last().copied().unwrap_or(""))
            .or_default()
            .push(i);
    }
    split
        .iter()
        .enumerate()
        .map(|(i, parts)| {
            let name = parts.last().copied().unwrap_or("");
            let mut others: Vec<&Vec<&str>> = by_name
                .get(name)
                .into_iter()
                .flatten()
                .filter(|&&j| j != i)
                .map(|&j| &split[j])
                .collect();
            let dirs = parts.len().saturating_sub(1);
            let mut telling = Vec::new();
            while !others.is_empty() && telling.len() < MAX_TELLING {
                // The directory that tells this path from the most namesakes left.
                let differs = |d: usize, other: &Vec<&str>| other.get(d) != parts.get(d);
                let best = (0..dirs)
                    .filter(|d| !telling.contains(d))
                    .max_by_key(|&d| (others.iter().filter(|o| differs(d, o)).count(), d));
                let Some(best) = best.filter(|&d| others.iter().any(|o| differs(d, o))) else {
                    break;
                };
                telling.push(best);
                others.retain(|o| !differs(best, o));
            }
            telling.sort_unstable();
            telling
        })
        .collect()
}

/// `path` in `max` columns: whole if it fits; else its file name and the `telling`
/// directories, with as many of the others as fit (the deepest first) and `…` for
/// each run left out; at the narrowest the telling directories and the end of the
/// file name (`de/…nize.po`).
pub(crate) fn fit(path: &str, telling: &[usize], max: usize) -> String {
    if text::width(path) <= max {
        return path.to_string();
    }
    let parts: Vec<&str> = path.split('/').collect();
    let last = parts.len() - 1;
    let mut kept: Vec<bool> = (0..parts.len())
        .map(|i| i == last || telling.contains(&i))
        .collect();
    let shown = |kept: &[bool]| -> String {
        let mut out: Vec<&str> = Vec::new();
        for (part, keep) in parts.iter().zip(kept) {
            match (keep, out.last()) {
                (true, _) => out.push(part),
                (false, Some(&"…")) => {}
                (false, _) => out.push("…"),
            }
        }
        out.join("/")
    };
    if text::width(&shown(&kept)) > max {
        let dirs: Vec<&str> = telling
            .iter()
            .filter_map(|&d| parts.get(d).copied())
            .collect();
        let head = match dirs.is_empty() {
            true => String::new(),
            false => format!("{}/", dirs.join("/")),
        };
        // The `…` for what is left out, and at least a character of the name.
        let room = max.saturating_sub(text::width(&head) + 1);
        if room < 1 {
            return text::truncate_left(path, max);
        }
        return format!("{head}…{}", tail(parts[last], room));
    }
    for i in (0..last).rev() {
        if kept[i] {
            continue;
        }
        kept[i] = true;
        if text::width(&shown(&kept)) > max {
            kept[i] = false;
        }
    }
    shown(&kept)
}

/// The last `max` columns of `s`, whole graphemes only.
fn tail(s: &str, max: usize) -> &str {
    let mut used = 0;
    let mut start = s.len();
    for (i, g) in s.grapheme_indices(true).rev() {
        used += text::grapheme_width(g);
        if used > max {
            break;
        }
        start = i;
    }
    s.get(start..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locales() -> Vec<String> {
        ["de", "fr", "pt_BR", "zh_Hans"]
            .iter()
            .map(|l| format!("django/contrib/humanize/locale/{l}/LC_MESSAGES/humanize.po"))
            .chain(["django/contrib/admin/locale/de/LC_MESSAGES/django.po".into()])
            .chain(["django/contrib/auth/locale/de/LC_MESSAGES/django.po".into()])
            .chain(["django/utils/text.py".into()])
            .collect()
    }

    #[test]
    fn namesakes_keep_the_directory_that_tells_them_apart() {
        let paths = locales();
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let telling = telling_dirs(&refs);
        assert_eq!(telling[0], [4], "the locale");
        assert_eq!(
            telling[4],
            [2],
            "admin or auth: the app, not the shared locale"
        );
        assert!(telling[6].is_empty(), "no namesake");
        let cut: Vec<String> = refs
            .iter()
            .zip(&telling)
            .map(|(p, t)| fit(p, t, 24))
            .collect();
        assert_eq!(cut[0], "…/de/…/humanize.po");
        assert_eq!(cut[2], "…/pt_BR/…/humanize.po");
        assert_eq!(cut[4], "…/admin/…/de/…/django.po");
        assert_eq!(cut[6], "django/utils/text.py");
        for (w, expected) in [
            (15, "de/…humanize.po"),
            (14, "de/…umanize.po"),
            (10, "de/…ize.po"),
        ] {
            assert_eq!(fit(refs[0], &telling[0], w), expected);
        }
        // Distinct at every width.
        for w in 10..60 {
            let cut: Vec<String> = refs
                .iter()
                .zip(&telling)
                .map(|(p, t)| fit(p, t, w))
                .collect();
            for c in &cut {
                assert!(text::width(c) <= w, "{c} in {w}");
            }
            let humanize = &cut[..4];
            let distinct: std::collections::HashSet<&String> = humanize.iter().collect();
            assert_eq!(distinct.len(), 4, "{humanize:?} at {w}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/tui_paths.txt",
                ),
            )),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any paths (wide, combining and invisible characters too) at any width: a cut
        /// path fits, and keeps the end of its file name.
        #[test]
        fn a_cut_path_fits(
            paths in proptest::collection::vec("[a-zé漢\u{301}\u{200b}]{1,6}(/[a-zé漢\u{301}\u{200b}]{1,6}){0,5}", 1..8),
            width in 2usize..40,
        ) {
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            for (p, t) in refs.iter().zip(telling_dirs(&refs)) {
                let cut = fit(p, &t, width);
                proptest::prop_assert!(text::width(&cut) <= width, "{cut:?} in {width}");
            }
        }
    }
}
