//! Many files of one kind in one directory tree (locale catalogs, fixtures, data) collapse
//! into one line of the map and of its pane: `locale/**/*.po (36 files)`. Only files the
//! map would list as bare paths collapse: untagged, not important, not named by the chat.

use std::borrow::Cow;
use std::collections::HashMap;

use super::important::Packages;

/// Fewer files of a kind than this in one tree stay listed one by one.
pub const MIN_FILES: u32 = 8;

/// The tree and kind each file would collapse into, found when the file set changes.
#[derive(Debug, Default)]
pub struct Groups {
    /// (tree, lower-case extension) of each group.
    keys: Vec<(String, String)>,
    /// Per file: its group, or `u32::MAX` for a file with no extension.
    of_file: Vec<u32>,
    /// Per file: whether it is below its tree's top directory.
    deep: Vec<bool>,
}

impl Groups {
    /// A file's tree is the first directory below its package root (`locale` of
    /// `locale/de/LC_MESSAGES/app.po`), or the package root itself for the files directly
    /// in it; its kind is its extension.
    pub fn new(paths: &[String], packages: &Packages) -> Groups {
        let mut index: HashMap<(&str, Cow<str>), u32> = HashMap::new();
        let mut groups = Groups::default();
        for (f, path) in paths.iter().enumerate() {
            let root = packages.root_of(f as u32);
            let under = if root.is_empty() {
                Some(path.as_str())
            } else {
                path.get(root.len() + 1..)
            };
            let name = path.rsplit('/').next().unwrap_or(path);
            let ext = name
                .rsplit_once('.')
                .filter(|(stem, ext)| !stem.is_empty() && !ext.is_empty())
                .map(
                    |(_, ext)| match ext.bytes().any(|b| b.is_ascii_uppercase()) {
                        true => Cow::Owned(ext.to_ascii_lowercase()),
                        false => Cow::Borrowed(ext),
                    },
                );
            let (Some(under), Some(ext)) = (under, ext) else {
                groups.of_file.push(u32::MAX);
                groups.deep.push(false);
                continue;
            };
            let (tree, deep) = match under.split_once('/') {
                Some((top, rest)) => {
                    let tree = path.get(..path.len() - rest.len() - 1).unwrap_or(top);
                    (tree, rest.contains('/'))
                }
                None => (root, false),
            };
            let keys = &mut groups.keys;
            let group = *index.entry((tree, ext)).or_insert_with_key(|(tree, ext)| {
                keys.push((tree.to_string(), ext.to_string()));
                keys.len() as u32 - 1
            });
            groups.of_file.push(group);
            groups.deep.push(deep);
        }
        groups
    }

    /// Collapses the `eligible` files of `ranked` (best first) whose group holds at least
    /// [`MIN_FILES`] of them: the best ranked of each stands for its group.
    pub fn collapse(&self, ranked: &[u32], eligible: impl Fn(u32) -> bool) -> Collapsed {
        let mut count = vec![0u32; self.keys.len()];
        let mut deep = vec![false; self.keys.len()];
        let member = |f: u32| {
            let g = *self.of_file.get(f as usize)?;
            (g != u32::MAX && eligible(f)).then_some(g as usize)
        };
        for &f in ranked {
            if let Some(g) = member(f) {
                count[g] += 1;
                deep[g] |= self.deep[f as usize];
            }
        }
        let mut out = Collapsed::default();
        let mut seen = vec![false; self.keys.len()];
        for &f in ranked {
            match member(f) {
                Some(g) if count[g] >= MIN_FILES => {
                    if !std::mem::replace(&mut seen[g], true) {
                        let (tree, ext) = &self.keys[g];
                        let line = label(tree, ext, deep[g], count[g]);
                        out.lines.insert(f, line);
                        out.entries.push(f);
                        out.files += count[g] as usize;
                    }
                }
                _ => out.entries.push(f),
            }
        }
        out
    }
}

/// The ranked list with collapsed groups.
#[derive(Debug, Default)]
pub struct Collapsed {
    /// The ranked files, each group's members but its first left out.
    pub entries: Vec<u32>,
    /// The line of each group, by the file that stands for it.
    pub lines: HashMap<u32, String>,
    /// Files collapsed, over all groups.
    pub files: usize,
}

fn label(tree: &str, ext: &str, deep: bool, count: u32) -> String {
    let glob = if deep { "**/*." } else { "*." };
    let sep = if tree.is_empty() { "" } else { "/" };
    format!("{tree}{sep}{glob}{ext} ({count} files)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_one_kind_in_one_tree_collapse_into_their_best_ranked() {
        let mut paths: Vec<String> = (0..9)
            .map(|i| format!("locale/l{i}/LC_MESSAGES/app.po"))
            .chain((0..8).map(|i| format!("web/fixtures/f{i}.JSON")))
            .chain((0..7).map(|i| format!("conf/c{i}.yaml")))
            .chain((0..8).map(|i| format!("n{i}.sql")))
            .chain(["web/package.json".to_string(), "Makefile".to_string()])
            .collect();
        paths.sort();
        let packages = Packages::find(&paths);
        let groups = Groups::new(&paths, &packages);
        let ranked: Vec<u32> = (0..paths.len() as u32).rev().collect();
        let collapsed = groups.collapse(&ranked, |_| true);
        let mut lines: Vec<&str> = collapsed.lines.values().map(String::as_str).collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "*.sql (8 files)",
                "locale/**/*.po (9 files)",
                "web/fixtures/*.json (8 files)",
            ]
        );
        // 32 files: 25 collapsed into 3 lines, 7 yaml and the two others listed.
        assert_eq!(collapsed.entries.len(), 3 + 7 + 2);
        // The best ranked member stands for the group: the last path, as ranked here.
        let last_po = paths.iter().rposition(|p| p.ends_with(".po")).unwrap() as u32;
        assert_eq!(collapsed.lines[&last_po], "locale/**/*.po (9 files)");
        assert_eq!(collapsed.files, 25);
        // Below the threshold when some files are not eligible.
        let none = groups.collapse(&ranked, |f| !paths[f as usize].ends_with(".po"));
        assert!(none.lines.values().all(|l| !l.contains(".po")));
    }
}
