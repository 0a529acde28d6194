//! The files the map leaves out as noise (unless the chat names them): lockfiles, minified
//! bundles and source maps by name, minified or generated text by its long lines, and
//! what `.gitattributes` marks `linguist-generated` or `linguist-vendored` (looked up with
//! git2, as GitHub's linguist reads them).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::noise::Noise;

/// Why a file is left out of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Reason {
    Lockfile,
    Minified,
    SourceMap,
    /// Lines over 1,000 bytes hold most of it (`noise::has_long_lines`).
    LongLines,
    /// `linguist-generated` in `.gitattributes`.
    Generated,
    /// `linguist-vendored` in `.gitattributes`.
    Vendored,
}

impl Reason {
    pub const ALL: [Reason; 6] = [
        Reason::Lockfile,
        Reason::Minified,
        Reason::SourceMap,
        Reason::LongLines,
        Reason::Generated,
        Reason::Vendored,
    ];

    /// What `tern map --stats` calls it.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Lockfile => "lockfiles",
            Reason::Minified => "minified (.min.*)",
            Reason::SourceMap => "source maps",
            Reason::LongLines => "long lines (minified or generated)",
            Reason::Generated => "linguist-generated",
            Reason::Vendored => "linguist-vendored",
        }
    }
}

/// The attributes that leave a file out, in the order they are looked up.
const ATTRIBUTES: [(&str, Reason); 2] = [
    ("linguist-generated", Reason::Generated),
    ("linguist-vendored", Reason::Vendored),
];

/// What git2 said of the files under attribute files that mention the attributes, kept
/// in the checkout's snapshot: a lookup costs about 0.1 ms a file (hundreds of files
/// under a vendored directory), so a warm start asks again only when the attribute
/// files or the index changed.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeMemo {
    /// The digest of the attribute files and the index's time that the answers hold for.
    digest: u64,
    answers: HashMap<String, Option<Reason>>,
}

/// Per path of `paths` (root-relative, of the repository at `root`): why it is left out
/// by its name or its attributes, if it is. `memo` is asked first and kept current; the
/// result says whether it changed.
pub fn by_path(
    root: &Path,
    paths: &[String],
    memo: &mut AttributeMemo,
) -> (Vec<Option<Reason>>, bool) {
    let mut out: Vec<Option<Reason>> = paths
        .iter()
        .map(|p| match Noise::of(p)? {
            Noise::Lockfile => Some(Reason::Lockfile),
            Noise::Minified => Some(Reason::Minified),
            Noise::SourceMap => Some(Reason::SourceMap),
            // Data (CSV, SVG) stays in the map by name.
            Noise::BinaryLike => None,
        })
        .collect();
    let Ok(repo) = git2::Repository::open(root) else {
        return (out, false);
    };
    let words = ATTRIBUTES.map(|(word, _)| word);
    let files = super::files::attribute_dirs(&repo, paths, &words);
    if files.dirs.is_empty() {
        let changed = *memo != AttributeMemo::default();
        *memo = AttributeMemo::default();
        return (out, changed);
    }
    // git2 reads the index's attribute files too.
    let index_ns =
        std::fs::metadata(repo.path().join("index")).map_or(0, |m| super::files::mtime_ns(&m));
    let digest = files.digest ^ index_ns as u64;
    let mut known = std::mem::take(&mut memo.answers);
    if memo.digest != digest {
        known.clear();
    }
    let mut changed = memo.digest != digest;
    let mut answers = HashMap::new();
    for (path, reason) in paths.iter().zip(&mut out) {
        if reason.is_none() && files.dirs.iter().any(|d| path.starts_with(d.as_str())) {
            let answer = match known.remove(path) {
                Some(answer) => answer,
                None => {
                    changed = true;
                    by_attribute(&repo, path)
                }
            };
            *reason = answer;
            answers.insert(path.clone(), answer);
        }
    }
    changed |= !known.is_empty();
    *memo = AttributeMemo { digest, answers };
    (out, changed)
}

fn by_attribute(repo: &git2::Repository, path: &str) -> Option<Reason> {
    ATTRIBUTES.into_iter().find_map(|(name, reason)| {
        let value = repo
            .get_attr(Path::new(path), name, git2::AttrCheckFlags::FILE_THEN_INDEX)
            .ok()?;
        let set = match git2::AttrValue::from_string(value) {
            git2::AttrValue::True => true,
            git2::AttrValue::String(v) => v.eq_ignore_ascii_case("true"),
            _ => false,
        };
        set.then_some(reason)
    })
}
