//! Many files of one kind in one directory tree (locale catalogs, fixtures, data) collapse
//! into one line of the map and of its pane: `locale/**/*.po (36 files)`. Only files the
//! map would list as bare paths collapse: untagged, not important, not named by the chat.

use std::borrow::Cow;
use std::collections::HashMap;

use super::important::Packages;

/// Fewer files of a kind than this in one tree stay listed one by one.
pub const MIN_FILES: u32 = 8;

/// Collapses the `eligible` files of `ranked` (best first; indices into `paths`) of
/// which one tree holds at least [`MIN_FILES`] of a kind: the best ranked of each group
/// stands for it. A file's tree is the first directory below its package root (`locale`
/// of `locale/de/LC_MESSAGES/app.po`), or the package root itself for the files
/// directly in it; its kind is its extension.
pub fn collapse(
    paths: &[String],
    packages: &Packages,
    ranked: &[u32],
    eligible: impl Fn(u32) -> bool,
) -> Collapsed {
    struct Group<'p> {
        tree: &'p str,
        ext: Cow<'p, str>,
        count: u32,
        deep: bool,
    }
    let mut index: HashMap<(&str, Cow<str>), u32> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of = vec![u32::MAX; ranked.len()];
    for (at, &f) in ranked.iter().enumerate() {
        if !eligible(f) {
            continue;
        }
        let Some((tree, ext, deep)) = kind(&paths[f as usize], packages.root_of(f)) else {
            continue;
        };
        let g = *index.entry((tree, ext.clone())).or_insert_with(|| {
            groups.push(Group {
                tree,
                ext,
                count: 0,
                deep: false,
            });
            groups.len() as u32 - 1
        });
        let group = &mut groups[g as usize];
        group.count += 1;
        group.deep |= deep;
        group_of[at] = g;
    }
    let mut out = Collapsed::default();
    let mut seen = vec![false; groups.len()];
    for (at, &f) in ranked.iter().enumerate() {
        let g = group_of[at] as usize;
        match groups.get(g) {
            Some(group) if group.count >= MIN_FILES => {
                if !std::mem::replace(&mut seen[g], true) {
                    let line = label(group.tree, &group.ext, group.deep, group.count);
                    out.lines.insert(f, line);
                    out.entries.push(f);
                    out.files += group.count as usize;
                }
            }
            _ => out.entries.push(f),
        }
    }
    out
}

/// The tree and lower-case extension of `path` (under the package root `root`), and
/// whether it is below its tree's top directory; None without an extension.
fn kind<'p>(path: &'p str, root: &'p str) -> Option<(&'p str, Cow<'p, str>, bool)> {
    let under = if root.is_empty() {
        path
    } else {
        path.get(root.len() + 1..)?
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || ext.is_empty() {
        return None;
    }
    let ext = if ext.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(ext.to_ascii_lowercase())
    } else {
        Cow::Borrowed(ext)
    };
    Some(match under.split_once('/') {
        Some((top, rest)) => {
            let tree = path.get(..path.len() - rest.len() - 1).unwrap_or(top);
            (tree, ext, rest.contains('/'))
        }
        None => (root, ext, false),
    })
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
        let ranked: Vec<u32> = (0..paths.len() as u32).rev().collect();
        let collapsed = collapse(&paths, &packages, &ranked, |_| true);
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
        let none = collapse(&paths, &packages, &ranked, |f| {
            !paths[f as usize].ends_with(".po")
        });
        assert!(none.lines.values().all(|l| !l.contains(".po")));
    }
}
