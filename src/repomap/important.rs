//! Important files: the README, license, manifests, build files and CI workflows of the
//! repository and of each package in it, which the map lists at the top as bare paths
//! (aider's `filter_important_files`). The list is data: `assets/important-files.txt`.

use std::collections::HashSet;
use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// How deep below its package root an important file may be (`.github/workflows/x.yml`).
const MAX_SEGMENTS: usize = 3;

struct Patterns {
    set: GlobSet,
    /// Per pattern: whether a file matching it makes its directory a package root.
    manifest: Vec<bool>,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let mut set = GlobSetBuilder::new();
        let mut manifest = Vec::new();
        let lines = include_str!("../../assets/important-files.txt")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
        for line in lines {
            let mut words = line.split_whitespace();
            let (Some(kind), Some(pattern)) = (words.next(), words.next()) else {
                continue;
            };
            // The list is embedded and covered by tests: a bad pattern is a build bug.
            let glob = GlobBuilder::new(pattern)
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .unwrap_or_else(|e| panic!("important-files.txt: {pattern}: {e}"));
            set.add(glob);
            manifest.push(kind == "manifest");
        }
        Patterns {
            set: set
                .build()
                .unwrap_or_else(|e| panic!("important-files.txt: {e}")),
            manifest,
        }
    })
}

/// The important files among `paths` (root-relative, `/`-separated), as indices into
/// `paths`: the root's first, then each package root's, shallower packages first; within
/// one package in the list's order. A file counts for its nearest package root only.
pub fn find(paths: &[String]) -> Vec<u32> {
    let patterns = patterns();
    let mut hits = Vec::new();
    let mut roots: HashSet<&str> = HashSet::from([""]);
    for path in paths {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        patterns.set.matches_into(name, &mut hits);
        if hits.iter().any(|&i| patterns.manifest[i]) {
            roots.insert(dir);
        }
    }
    let mut found: Vec<(usize, &str, usize, u32)> = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        // The nearest package root above the file, at most MAX_SEGMENTS up: the cuts
        // are the last slashes, then the root.
        let cuts = path
            .rmatch_indices('/')
            .map(|(at, _)| Some(at))
            .chain(std::iter::once(None))
            .take(MAX_SEGMENTS);
        for cut in cuts {
            let (dir, rel) = match cut {
                Some(at) => (path.get(..at), path.get(at + 1..)),
                None => (Some(""), Some(path.as_str())),
            };
            let (Some(dir), Some(rel)) = (dir, rel) else {
                break;
            };
            if !roots.contains(dir) {
                continue;
            }
            patterns.set.matches_into(rel, &mut hits);
            if let Some(&rank) = hits.iter().min() {
                let depth = if dir.is_empty() {
                    0
                } else {
                    dir.matches('/').count() + 1
                };
                found.push((depth, dir, rank, i as u32));
            }
            break;
        }
    }
    found.sort_unstable();
    found.into_iter().map(|(.., i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn important(paths: &[&str]) -> Vec<String> {
        let mut owned: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        owned.sort();
        find(&owned)
            .into_iter()
            .map(|i| owned[i as usize].clone())
            .collect()
    }

    #[test]
    fn the_root_comes_first_then_packages_by_depth_in_the_lists_order() {
        let found = important(&[
            "src/main.rs",
            "Cargo.toml",
            "README.md",
            "LICENSE",
            ".github/workflows/ci.yml",
            "crates/core/Cargo.toml",
            "crates/core/README.md",
            "crates/core/src/lib.rs",
            "web/package.json",
            "web/src/README.md",
            "docs/README.md",
            "python/requirements-dev.txt",
            "a/b/c/d/Makefile",
        ]);
        assert_eq!(
            found,
            [
                "README.md",
                "Cargo.toml",
                ".github/workflows/ci.yml",
                "LICENSE",
                "web/package.json",
                "crates/core/README.md",
                "crates/core/Cargo.toml",
            ]
        );
    }
}
