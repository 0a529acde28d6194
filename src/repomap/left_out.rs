//! The files the map leaves out as noise (unless the chat names them): lockfiles, minified
//! bundles and source maps by name, minified or generated text by its long lines, and
//! what `.gitattributes` marks `linguist-generated` or `linguist-vendored` (looked up with
//! git2, as GitHub's linguist reads them).

use std::path::Path;

use crate::noise::Noise;

/// Why a file is left out of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

/// Per path of `paths` (root-relative, of the repository at `root`): why it is left out
/// by its name or its attributes, if it is.
pub fn by_path(root: &Path, paths: &[String]) -> Vec<Option<Reason>> {
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
        return out;
    };
    let words = ATTRIBUTES.map(|(word, _)| word);
    let dirs = super::files::attribute_dirs(&repo, paths, &words);
    if dirs.is_empty() {
        return out;
    }
    for (path, reason) in paths.iter().zip(&mut out) {
        if reason.is_none() && dirs.iter().any(|d| path.starts_with(d.as_str())) {
            *reason = by_attribute(&repo, path);
        }
    }
    out
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
