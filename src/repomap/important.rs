//! Important files: the README, manifests, build files and CI workflows of the
//! repository and of each package in it (licences and changelogs of the root only), which
//! the map lists at the top as bare paths (aider's `filter_important_files`), packages in
//! the order of their rank. The list is data: `assets/important-files.txt`.

use std::collections::HashMap;
use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// How deep below its package root an important file may be (`.github/workflows/x.yml`).
const MAX_SEGMENTS: usize = 3;

/// What a pattern of the list says about the files it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Makes its directory a package root.
    Manifest,
    /// Counts at the repository root only.
    Root,
    Other,
}

struct Patterns {
    set: GlobSet,
    kind: Vec<Kind>,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let mut set = GlobSetBuilder::new();
        let mut kinds = Vec::new();
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
            kinds.push(match kind {
                "manifest" => Kind::Manifest,
                "root" => Kind::Root,
                _ => Kind::Other,
            });
        }
        Patterns {
            set: set
                .build()
                .unwrap_or_else(|e| panic!("important-files.txt: {e}")),
            kind: kinds,
        }
    })
}

/// The packages of a file set (directories holding a manifest, and the repository root)
/// and their important files.
#[derive(Debug, Default)]
pub struct Packages {
    /// Package root directories, sorted: `""` (the repository root) is first.
    roots: Vec<String>,
    /// Per file: the index in `roots` of its nearest package root.
    of_file: Vec<u32>,
    /// The important files as (package, the first pattern of the list they match, file).
    important: Vec<(u32, u32, u32)>,
}

impl Packages {
    /// Finds the packages and important files of `paths` (root-relative, `/`-separated,
    /// sorted). An important file counts for its nearest package root only, and at most
    /// `MAX_SEGMENTS` below it.
    pub fn find(paths: &[String]) -> Packages {
        let patterns = patterns();
        let mut hits = Vec::new();
        let mut roots = vec![String::new()];
        for path in paths {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            patterns.set.matches_into(name, &mut hits);
            if hits.iter().any(|&i| patterns.kind[i] == Kind::Manifest) && !dir.is_empty() {
                roots.push(dir.to_string());
            }
        }
        roots.sort_unstable();
        roots.dedup();
        let root_of: HashMap<&str, u32> = roots
            .iter()
            .enumerate()
            .map(|(k, r)| (r.as_str(), k as u32))
            .collect();
        // The nearest package root of a directory: itself or its nearest ancestor that
        // is one. Sorted paths come directory by directory, so each is looked up once.
        let nearest = |dir: &str| {
            let mut d = dir;
            loop {
                if let Some(&p) = root_of.get(d) {
                    return p;
                }
                match d.rsplit_once('/') {
                    Some((up, _)) => d = up,
                    None => return 0,
                }
            }
        };
        let mut of_file = Vec::with_capacity(paths.len());
        let mut important = Vec::new();
        let mut last: Option<(&str, u32)> = None;
        for (i, path) in paths.iter().enumerate() {
            let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
            let package = match last {
                Some((d, p)) if d == dir => p,
                _ => nearest(dir),
            };
            last = Some((dir, package));
            of_file.push(package);
            let root = &roots[package as usize];
            let rel = if root.is_empty() {
                Some(path.as_str())
            } else {
                path.get(root.len() + 1..)
            };
            let Some(rel) = rel.filter(|r| r.matches('/').count() < MAX_SEGMENTS) else {
                continue;
            };
            patterns.set.matches_into(rel, &mut hits);
            let first = hits
                .iter()
                .filter(|&&k| package == 0 || patterns.kind[k] != Kind::Root)
                .min();
            if let Some(&first) = first {
                important.push((package, first as u32, i as u32));
            }
        }
        Packages {
            roots,
            of_file,
            important,
        }
    }

    /// The package root (`""` for the repository root) of a file.
    pub fn root_of(&self, file: u32) -> &str {
        self.of_file
            .get(file as usize)
            .and_then(|&p| self.roots.get(p as usize))
            .map_or("", String::as_str)
    }

    /// The important files, best first: the repository root's, then those of the
    /// packages holding a chat file, then by the rank their files have in the graph
    /// (`file_rank` summed over the package; equal sums by `in_degree` summed, then by
    /// path); within a package in the list's order.
    pub fn important(
        &self,
        file_rank: &[f64],
        chat: &[bool],
        in_degree: impl Fn(u32) -> u32,
    ) -> Vec<u32> {
        let n = self.roots.len();
        let mut score = vec![0.0f64; n];
        let mut degree = vec![0u64; n];
        let mut has_chat = vec![false; n];
        for (f, &p) in self.of_file.iter().enumerate() {
            let p = p as usize;
            score[p] += file_rank.get(f).copied().unwrap_or(0.0);
            degree[p] += u64::from(in_degree(f as u32));
            has_chat[p] |= chat.get(f).copied().unwrap_or(false);
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            (a != 0)
                .cmp(&(b != 0))
                .then(has_chat[b].cmp(&has_chat[a]))
                .then(score[b].total_cmp(&score[a]))
                .then(degree[b].cmp(&degree[a]))
                .then(a.cmp(&b))
        });
        let mut place = vec![0usize; n];
        for (at, &p) in order.iter().enumerate() {
            place[p] = at;
        }
        let mut found = self.important.clone();
        found.sort_unstable_by_key(|&(p, first, f)| (place[p as usize], first, f));
        found.into_iter().map(|(.., f)| f).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(paths: &[&str]) -> Vec<String> {
        let mut owned: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        owned.sort();
        owned
    }

    /// The important files of `paths` with every file's rank from `rank` (by path) and
    /// the chat files `chat`.
    fn important(paths: &[String], rank: impl Fn(&str) -> f64, chat: &[&str]) -> Vec<String> {
        let ranks: Vec<f64> = paths.iter().map(|p| rank(p)).collect();
        let chat: Vec<bool> = paths.iter().map(|p| chat.contains(&p.as_str())).collect();
        Packages::find(paths)
            .important(&ranks, &chat, |_| 0)
            .into_iter()
            .map(|i| paths[i as usize].clone())
            .collect()
    }

    #[test]
    fn the_root_comes_first_in_the_lists_order_then_packages_by_rank() {
        let paths = sorted(&[
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
            "web/src/app.js",
            "docs/README.md",
            "python/requirements-dev.txt",
            "a/b/c/d/Makefile",
        ]);
        let web_first = |p: &str| if p == "web/src/app.js" { 0.5 } else { 0.01 };
        assert_eq!(
            important(&paths, web_first, &[]),
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
        // A chat file's package comes before a better ranked one.
        assert_eq!(
            important(&paths, web_first, &["crates/core/src/lib.rs"])[4..],
            [
                "crates/core/README.md",
                "crates/core/Cargo.toml",
                "web/package.json",
            ]
        );
        // Equal ranks go by path, never by depth or by whose name sorts first alone.
        assert_eq!(
            important(&paths, |_| 0.0, &[])[4..],
            [
                "crates/core/README.md",
                "crates/core/Cargo.toml",
                "web/package.json",
            ]
        );
    }

    #[test]
    fn licences_and_changelogs_count_at_the_root_only_in_any_case() {
        let paths = sorted(&[
            "crates/a/Cargo.toml",
            "crates/a/README.md",
            "crates/a/LICENSE-MIT",
            "crates/a/LICENSE-APACHE",
            "crates/a/COPYING",
            "crates/a/Changelog.md",
            "crates/a/contributing.md",
            "COPYING",
            "changelog.md",
        ]);
        assert_eq!(
            important(&paths, |_| 0.0, &[]),
            [
                "COPYING",
                "changelog.md",
                "crates/a/README.md",
                "crates/a/Cargo.toml"
            ]
        );
    }
}
