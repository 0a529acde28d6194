//! The languages tern knows, by file extension: one table (`KINDS`) for the repo map and
//! branch review alike. A review groups files by their `Language` (and finds function
//! headers with the rules in `branch_review::lang`); the repo map parses the files whose
//! row names a grammar (`Lang`).
//!
//! To add a language: a `Language` variant and its row; for the map also a `Lang`
//! variant, with its tree-sitter grammar and tag query in `repomap::languages`. To add
//! an extension: its row.

use derive_visitor::DriveMut;
use std::path::Path;

use strum::VariantArray;

/// A file's language. Configuration, documentation and data formats are `Other`: in a
/// compressed review they come after all code, and languages with as many changed files
/// come in the order declared here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, VariantArray, DriveMut)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Go,
    Java,
    Kotlin,
    Scala,
    C,
    Cpp,
    CSharp,
    Ruby,
    Php,
    Swift,
    Dart,
    Lua,
    Shell,
    Elixir,
    Haskell,
    Zig,
    Sql,
    Html,
    Css,
    Other,
}

/// A grammar the repo map parses with (TypeScript and TSX are two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum Lang {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
    Ruby,
    CSharp,
}

/// One kind of source file.
struct Kind {
    /// Shown and serialized; a language's name is that of its first kind.
    name: &'static str,
    /// Lowercase, without the dot.
    extensions: &'static [&'static str],
    language: Language,
    /// The grammar the repo map parses these files with; none: the map skips them.
    map: Option<Lang>,
}

const fn kind(
    name: &'static str,
    extensions: &'static [&'static str],
    language: Language,
    map: Option<Lang>,
) -> Kind {
    Kind {
        name,
        extensions,
        language,
        map,
    }
}

#[rustfmt::skip]
const KINDS: &[Kind] = &[
    kind("rust", &["rs"], Language::Rust, Some(Lang::Rust)),
    kind("python", &["py", "pyi"], Language::Python, Some(Lang::Python)),
    kind("javascript", &["js", "mjs", "cjs", "jsx"], Language::JavaScript, Some(Lang::JavaScript)),
    kind("vue", &["vue"], Language::JavaScript, None),
    kind("svelte", &["svelte"], Language::JavaScript, None),
    kind("typescript", &["ts", "mts", "cts"], Language::TypeScript, Some(Lang::TypeScript)),
    kind("tsx", &["tsx"], Language::TypeScript, Some(Lang::Tsx)),
    kind("go", &["go"], Language::Go, Some(Lang::Go)),
    kind("java", &["java"], Language::Java, Some(Lang::Java)),
    kind("kotlin", &["kt", "kts"], Language::Kotlin, None),
    kind("scala", &["scala", "sc"], Language::Scala, None),
    kind("c", &["c", "h"], Language::C, Some(Lang::C)),
    kind("cpp", &["cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "inl"], Language::Cpp, Some(Lang::Cpp)),
    kind("csharp", &["cs"], Language::CSharp, Some(Lang::CSharp)),
    kind("ruby", &["rb", "rake", "gemspec"], Language::Ruby, Some(Lang::Ruby)),
    kind("php", &["php"], Language::Php, None),
    kind("swift", &["swift"], Language::Swift, None),
    kind("dart", &["dart"], Language::Dart, None),
    kind("lua", &["lua"], Language::Lua, None),
    kind("shell", &["sh", "bash", "zsh"], Language::Shell, None),
    kind("elixir", &["ex", "exs"], Language::Elixir, None),
    kind("haskell", &["hs"], Language::Haskell, None),
    kind("zig", &["zig"], Language::Zig, None),
    kind("sql", &["sql"], Language::Sql, None),
    kind("html", &["html", "htm"], Language::Html, None),
    kind("css", &["css", "scss", "sass", "less"], Language::Css, None),
];

/// The kind of files with extension `ext` (any case).
fn kind_of(ext: &str) -> Option<&'static Kind> {
    let ext = ext.to_ascii_lowercase();
    KINDS.iter().find(|k| k.extensions.contains(&ext.as_str()))
}

impl Language {
    /// The language of the file at `path` (`/`-separated); a name without an extension
    /// (`Makefile`, `.bashrc`) is `Other`.
    pub fn of(path: &str) -> Language {
        let name = path.rsplit('/').next().unwrap_or(path);
        match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => {
                kind_of(ext).map_or(Language::Other, |k| k.language)
            }
            _ => Language::Other,
        }
    }

    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|k| k.language == self)
            .map_or("other", |k| k.name)
    }
}

impl Lang {
    /// The grammar for the file at `path`, if the repo map parses such files.
    pub fn from_path(path: &Path) -> Option<Lang> {
        kind_of(path.extension()?.to_str()?)?.map
    }

    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|k| k.map == Some(self))
            .map_or("", |k| k.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_extension_is_in_one_row() {
        let mut extensions: Vec<&str> = KINDS
            .iter()
            .flat_map(|k| k.extensions.iter().copied())
            .collect();
        let count = extensions.len();
        extensions.sort_unstable();
        extensions.dedup();
        assert_eq!(extensions.len(), count, "an extension in two rows");
        for lang in Lang::VARIANTS {
            let rows = KINDS.iter().filter(|k| k.map == Some(*lang)).count();
            assert_eq!(rows, 1, "{lang:?}");
        }
        for language in Language::VARIANTS {
            let rows = KINDS.iter().any(|k| k.language == *language);
            assert_eq!(rows, *language != Language::Other, "{language:?}");
        }
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a name in two rows");
    }

    #[test]
    fn languages_and_grammars_come_from_one_table() {
        assert_eq!(Language::of("web/App.TSX"), Language::TypeScript);
        assert_eq!(Lang::from_path(Path::new("web/App.TSX")), Some(Lang::Tsx));
        assert_eq!(Language::of("ui/App.vue"), Language::JavaScript);
        assert_eq!(Lang::from_path(Path::new("ui/App.vue")), None);
        assert_eq!(Language::of("x.gemspec"), Language::Ruby);
        assert_eq!(Lang::from_path(Path::new("x.gemspec")), Some(Lang::Ruby));
        assert_eq!(Language::of("lib/x.kt"), Language::Kotlin);
        assert_eq!(Lang::from_path(Path::new("lib/x.kt")), None);
        assert_eq!(Language::TypeScript.name(), "typescript");
        assert_eq!(Lang::Tsx.name(), "tsx");
        assert_eq!(Language::Other.name(), "other");
        assert_eq!(Language::CSharp.name(), "csharp");
    }
}
