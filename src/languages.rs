//! The languages tern knows, by file extension: one table (`KINDS`) for the repo map and
//! branch review alike. A review groups files by their `Language` (and finds function
//! headers with the rules in `branch_review::lang`); the repo map parses the files whose
//! row names a grammar (`Grammar`).
//!
//! To add a language: a `Language` variant and its row; for the map also a `Grammar`
//! variant and its three arms below (grammar crate, tag query, literal query), the
//! grammar crate in Cargo.toml and its queries in `queries/`: three files, four when
//! the crate's own tag query is missing or weak. To add an extension: its row.

use derive_visitor::DriveMut;
use std::path::Path;
use std::sync::LazyLock;

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
    OCaml,
    Hcl,
    R,
    Julia,
    Elm,
    Solidity,
    Nix,
    Sql,
    Html,
    Css,
    Other,
}

/// A grammar the repo map parses with (TypeScript and TSX are two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum Grammar {
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
    Bash,
    Php,
    Kotlin,
    Scala,
    Swift,
    Dart,
    Lua,
    Elixir,
    Haskell,
    Zig,
    OCaml,
    OCamlInterface,
    Hcl,
    R,
    Julia,
    Elm,
    Solidity,
    Nix,
    Toml,
    Yaml,
}

/// What the repo map parses and queries each grammar with (a new grammar is its
/// variant, its row in `KINDS` and these three arms; its queries live in `queries/`).
impl Grammar {
    /// Its tree-sitter grammar.
    pub(crate) fn tree_sitter(self) -> tree_sitter::Language {
        match self {
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            Grammar::Python => tree_sitter_python::LANGUAGE.into(),
            Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
            Grammar::Java => tree_sitter_java::LANGUAGE.into(),
            Grammar::C => tree_sitter_c::LANGUAGE.into(),
            Grammar::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Grammar::Ruby => tree_sitter_ruby::LANGUAGE.into(),
            Grammar::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
            Grammar::Bash => tree_sitter_bash::LANGUAGE.into(),
            Grammar::Php => tree_sitter_php::LANGUAGE_PHP.into(),
            Grammar::Kotlin => tree_sitter_kotlin_ng::LANGUAGE.into(),
            Grammar::Scala => tree_sitter_scala::LANGUAGE.into(),
            Grammar::Swift => tree_sitter_swift::LANGUAGE.into(),
            Grammar::Dart => tree_sitter_dart::LANGUAGE.into(),
            Grammar::Lua => tree_sitter_lua::LANGUAGE.into(),
            Grammar::Elixir => tree_sitter_elixir::LANGUAGE.into(),
            Grammar::Haskell => tree_sitter_haskell::LANGUAGE.into(),
            Grammar::Zig => tree_sitter_zig::LANGUAGE.into(),
            Grammar::OCaml => tree_sitter_ocaml::LANGUAGE_OCAML.into(),
            Grammar::OCamlInterface => tree_sitter_ocaml::LANGUAGE_OCAML_INTERFACE.into(),
            Grammar::Hcl => tree_sitter_hcl::LANGUAGE.into(),
            Grammar::R => tree_sitter_r::LANGUAGE.into(),
            Grammar::Julia => tree_sitter_julia::LANGUAGE.into(),
            Grammar::Elm => tree_sitter_elm::LANGUAGE.into(),
            Grammar::Solidity => tree_sitter_solidity::LANGUAGE.into(),
            Grammar::Nix => tree_sitter_nix::LANGUAGE.into(),
            Grammar::Toml => tree_sitter_toml_ng::LANGUAGE.into(),
            Grammar::Yaml => tree_sitter_yaml::LANGUAGE.into(),
        }
    }

    /// The tag query source for this language.
    pub(crate) fn query_source(self) -> &'static str {
        match self {
            Grammar::Rust => include_str!("../queries/rust-tags.scm"),
            Grammar::Python => tree_sitter_python::TAGS_QUERY,
            Grammar::JavaScript => tree_sitter_javascript::TAGS_QUERY,
            Grammar::TypeScript | Grammar::Tsx => include_str!("../queries/typescript-tags.scm"),
            Grammar::Go => tree_sitter_go::TAGS_QUERY,
            Grammar::Java => include_str!("../queries/java-tags.scm"),
            Grammar::C => include_str!("../queries/c-tags.scm"),
            Grammar::Cpp => tree_sitter_cpp::TAGS_QUERY,
            Grammar::Ruby => tree_sitter_ruby::TAGS_QUERY,
            Grammar::CSharp => include_str!("../queries/csharp-tags.scm"),
            Grammar::Bash => include_str!("../queries/bash-tags.scm"),
            Grammar::Php => tree_sitter_php::TAGS_QUERY,
            Grammar::Kotlin => include_str!("../queries/kotlin-tags.scm"),
            Grammar::Scala => include_str!("../queries/scala-tags.scm"),
            Grammar::Swift => tree_sitter_swift::TAGS_QUERY,
            Grammar::Dart => tree_sitter_dart::TAGS_QUERY,
            Grammar::Lua => tree_sitter_lua::TAGS_QUERY,
            Grammar::Elixir => tree_sitter_elixir::TAGS_QUERY,
            Grammar::Haskell => include_str!("../queries/haskell-tags.scm"),
            Grammar::Zig => include_str!("../queries/zig-tags.scm"),
            Grammar::OCaml => tree_sitter_ocaml::TAGS_QUERY,
            Grammar::OCamlInterface => include_str!("../queries/ocaml_interface-tags.scm"),
            Grammar::Hcl => include_str!("../queries/hcl-tags.scm"),
            Grammar::R => tree_sitter_r::TAGS_QUERY,
            Grammar::Julia => include_str!("../queries/julia-tags.scm"),
            Grammar::Elm => tree_sitter_elm::TAGS_QUERY,
            Grammar::Solidity => tree_sitter_solidity::TAGS_QUERY,
            Grammar::Nix => include_str!("../queries/nix-tags.scm"),
            Grammar::Toml => include_str!("../queries/toml-tags.scm"),
            Grammar::Yaml => include_str!("../queries/yaml-tags.scm"),
        }
    }

    /// The literal query source: every language has one (a language added without it
    /// does not build), so no language's map carries a string's or a number's content.
    pub(crate) fn literal_source(self) -> &'static str {
        match self {
            Grammar::Rust => include_str!("../queries/rust-literals.scm"),
            Grammar::Python => include_str!("../queries/python-literals.scm"),
            Grammar::JavaScript | Grammar::Tsx => {
                include_str!("../queries/javascript-literals.scm")
            }
            Grammar::TypeScript => include_str!("../queries/typescript-literals.scm"),
            Grammar::Go => include_str!("../queries/go-literals.scm"),
            Grammar::Java => include_str!("../queries/java-literals.scm"),
            Grammar::C => include_str!("../queries/c-literals.scm"),
            Grammar::Cpp => concat!(
                include_str!("../queries/c-literals.scm"),
                include_str!("../queries/cpp-literals.scm")
            ),
            Grammar::Ruby => include_str!("../queries/ruby-literals.scm"),
            Grammar::CSharp => include_str!("../queries/csharp-literals.scm"),
            Grammar::Bash => include_str!("../queries/bash-literals.scm"),
            Grammar::Php => include_str!("../queries/php-literals.scm"),
            Grammar::Kotlin => include_str!("../queries/kotlin-literals.scm"),
            Grammar::Scala => include_str!("../queries/scala-literals.scm"),
            Grammar::Swift => include_str!("../queries/swift-literals.scm"),
            Grammar::Dart => include_str!("../queries/dart-literals.scm"),
            Grammar::Lua => include_str!("../queries/lua-literals.scm"),
            Grammar::Elixir => include_str!("../queries/elixir-literals.scm"),
            Grammar::Haskell => include_str!("../queries/haskell-literals.scm"),
            Grammar::Zig => include_str!("../queries/zig-literals.scm"),
            Grammar::OCaml | Grammar::OCamlInterface => {
                include_str!("../queries/ocaml-literals.scm")
            }
            Grammar::Hcl => include_str!("../queries/hcl-literals.scm"),
            Grammar::R => include_str!("../queries/r-literals.scm"),
            Grammar::Julia => include_str!("../queries/julia-literals.scm"),
            Grammar::Elm => include_str!("../queries/elm-literals.scm"),
            Grammar::Solidity => include_str!("../queries/solidity-literals.scm"),
            Grammar::Nix => include_str!("../queries/nix-literals.scm"),
            Grammar::Toml => include_str!("../queries/toml-literals.scm"),
            Grammar::Yaml => include_str!("../queries/yaml-literals.scm"),
        }
    }
}

/// One kind of source file.
struct Kind {
    /// Shown and serialized; a language's name is that of its first kind.
    name: &'static str,
    /// Lowercase, without the dot.
    extensions: &'static [&'static str],
    language: Language,
    /// The grammar the repo map parses these files with; none: the map skips them.
    map: Option<Grammar>,
}

const fn kind(
    name: &'static str,
    extensions: &'static [&'static str],
    language: Language,
    map: Option<Grammar>,
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
    kind("rust", &["rs"], Language::Rust, Some(Grammar::Rust)),
    kind("python", &["py", "pyi"], Language::Python, Some(Grammar::Python)),
    kind("javascript", &["js", "mjs", "cjs", "jsx"], Language::JavaScript, Some(Grammar::JavaScript)),
    kind("vue", &["vue"], Language::JavaScript, None),
    kind("svelte", &["svelte"], Language::JavaScript, None),
    kind("typescript", &["ts", "mts", "cts"], Language::TypeScript, Some(Grammar::TypeScript)),
    kind("tsx", &["tsx"], Language::TypeScript, Some(Grammar::Tsx)),
    kind("go", &["go"], Language::Go, Some(Grammar::Go)),
    kind("java", &["java"], Language::Java, Some(Grammar::Java)),
    kind("kotlin", &["kt", "kts"], Language::Kotlin, Some(Grammar::Kotlin)),
    kind("scala", &["scala", "sc"], Language::Scala, Some(Grammar::Scala)),
    kind("c", &["c", "h"], Language::C, Some(Grammar::C)),
    kind("cpp", &["cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "inl", "ino"], Language::Cpp, Some(Grammar::Cpp)),
    kind("csharp", &["cs"], Language::CSharp, Some(Grammar::CSharp)),
    kind("ruby", &["rb", "rake", "gemspec"], Language::Ruby, Some(Grammar::Ruby)),
    kind("php", &["php"], Language::Php, Some(Grammar::Php)),
    kind("swift", &["swift"], Language::Swift, Some(Grammar::Swift)),
    kind("dart", &["dart"], Language::Dart, Some(Grammar::Dart)),
    kind("lua", &["lua"], Language::Lua, Some(Grammar::Lua)),
    kind("shell", &["sh", "bash", "zsh"], Language::Shell, Some(Grammar::Bash)),
    kind("elixir", &["ex", "exs"], Language::Elixir, Some(Grammar::Elixir)),
    kind("haskell", &["hs"], Language::Haskell, Some(Grammar::Haskell)),
    kind("zig", &["zig"], Language::Zig, Some(Grammar::Zig)),
    kind("ocaml", &["ml"], Language::OCaml, Some(Grammar::OCaml)),
    kind("ocaml-interface", &["mli"], Language::OCaml, Some(Grammar::OCamlInterface)),
    kind("hcl", &["tf", "tfvars", "hcl"], Language::Hcl, Some(Grammar::Hcl)),
    kind("r", &["r"], Language::R, Some(Grammar::R)),
    kind("julia", &["jl"], Language::Julia, Some(Grammar::Julia)),
    kind("elm", &["elm"], Language::Elm, Some(Grammar::Elm)),
    kind("solidity", &["sol"], Language::Solidity, Some(Grammar::Solidity)),
    kind("nix", &["nix"], Language::Nix, Some(Grammar::Nix)),
    // Data formats: their keys are the map's symbols; a review counts them as `Other`.
    kind("toml", &["toml"], Language::Other, Some(Grammar::Toml)),
    kind("yaml", &["yaml", "yml"], Language::Other, Some(Grammar::Yaml)),
    kind("sql", &["sql"], Language::Sql, None),
    kind("html", &["html", "htm"], Language::Html, None),
    kind("css", &["css", "scss", "sass", "less"], Language::Css, None),
];

/// The kind of files with extension `ext` (any case): a table, as a warm repo map asks
/// for each of the tree's files.
fn kind_of(ext: &str) -> Option<&'static Kind> {
    static BY_EXTENSION: LazyLock<foldhash::HashMap<&str, &Kind>> = LazyLock::new(|| {
        // The first kind to name an extension has it.
        let pairs = KINDS
            .iter()
            .flat_map(|k| k.extensions.iter().map(move |&e| (e, k)));
        pairs.rev().collect()
    });
    BY_EXTENSION
        .get(crate::chars::ascii_lowercase(ext, &mut [0; 16])?)
        .copied()
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
            .find(|k| k.language == self && self != Language::Other)
            .map_or("other", |k| k.name)
    }
}

impl Grammar {
    /// The grammar for the file at `path`, if the repo map parses such files.
    pub fn from_path(path: &Path) -> Option<Grammar> {
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
        for lang in Grammar::VARIANTS {
            let rows = KINDS.iter().filter(|k| k.map == Some(*lang)).count();
            assert_eq!(rows, 1, "{lang:?}");
        }
        for language in Language::VARIANTS {
            let rows = KINDS.iter().any(|k| k.language == *language);
            assert!(rows, "{language:?}");
        }
        // `Other` rows are data formats the map parses; anything else is `Other` too.
        assert!(
            KINDS
                .iter()
                .all(|k| k.language != Language::Other || k.map.is_some())
        );
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a name in two rows");
    }

    #[test]
    fn languages_and_grammars_come_from_one_table() {
        assert_eq!(Language::of("web/App.TSX"), Language::TypeScript);
        assert_eq!(
            Grammar::from_path(Path::new("web/App.TSX")),
            Some(Grammar::Tsx)
        );
        assert_eq!(Language::of("ui/App.vue"), Language::JavaScript);
        assert_eq!(Grammar::from_path(Path::new("ui/App.vue")), None);
        assert_eq!(Language::of("x.gemspec"), Language::Ruby);
        assert_eq!(
            Grammar::from_path(Path::new("x.gemspec")),
            Some(Grammar::Ruby)
        );
        assert_eq!(Language::of("db/schema.sql"), Language::Sql);
        assert_eq!(Grammar::from_path(Path::new("db/schema.sql")), None);
        assert_eq!(Language::TypeScript.name(), "typescript");
        assert_eq!(Grammar::Tsx.name(), "tsx");
        assert_eq!(Language::Other.name(), "other");
        assert_eq!(Language::of("Cargo.toml"), Language::Other);
        assert_eq!(
            Grammar::from_path(Path::new("Cargo.toml")),
            Some(Grammar::Toml)
        );
        assert_eq!(
            Grammar::from_path(Path::new(".github/workflows/ci.YML")),
            Some(Grammar::Yaml)
        );
        assert_eq!(Language::of("flake.nix"), Language::Nix);
        assert_eq!(Language::CSharp.name(), "csharp");
    }
}
