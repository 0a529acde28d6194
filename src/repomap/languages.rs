//! The languages the repo map understands (which files are which is in the table of
//! `crate::languages`): their tree-sitter grammar, their tag query (the grammar
//! crate's own where it is good, tern's `queries/<lang>-tags.scm` where it is missing
//! or weak), and their literal query (`queries/<lang>-literals.scm`: the string and
//! number nodes a shown line elides, so the map never carries a constant's value).

use std::sync::OnceLock;

use strum::VariantArray;
use tree_sitter::Query;

pub use crate::languages::Grammar;

/// The capture of a literal query for the opening quote of a string that never closes
/// (the others, `@literal`, are whole literals).
pub(crate) const UNCLOSED: &str = "literal.unclosed";

/// What a capture in a tag query means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `@name.definition.*`: the node is the defined name.
    DefName,
    /// `@name.reference.*`: the node is the referenced name.
    RefName,
    /// `@name`, paired in the same match with a `@definition.*` or `@reference.*`.
    Name,
    /// `@definition.*`: the whole definition; its `@name` is a definition.
    Def,
    /// `@reference.*`: the whole reference; its `@name` is a reference.
    Ref,
    /// Anything else (`@doc`, `@module`, ...).
    Other,
}

/// A compiled tag query with each capture's role resolved once, and the literal query.
pub(crate) struct TagQuery {
    pub query: Query,
    pub roles: Vec<Role>,
    /// The query captures no references: every identifier node is one instead.
    pub identifier_refs: bool,
    /// Every capture is a literal to elide from shown lines.
    pub literals: Query,
}

impl Grammar {
    /// The version of this language's tags, part of every cached entry's key: it
    /// changes when the grammar (its ABI, metadata version, node kinds or parse
    /// states), the tag query or the literal query changes, so a tern built with other
    /// grammars or queries never reads tags it did not make (nor lines rendered with
    /// literals an older tern did not elide).
    pub(crate) fn tags_version(self) -> u64 {
        let grammar = self.tree_sitter();
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(self.query_source().as_bytes());
        h.update(self.literal_source().as_bytes());
        let version = grammar.metadata().map_or([0; 3], |m| {
            [m.major_version, m.minor_version, m.patch_version]
        });
        h.update(&version);
        for n in [
            grammar.abi_version(),
            grammar.node_kind_count(),
            grammar.parse_state_count(),
            grammar.field_count(),
        ] {
            h.update(&(n as u64).to_le_bytes());
        }
        h.digest()
    }

    /// The compiled tag query, built on first use (compiling one costs milliseconds, so
    /// languages the repository does not use are never compiled).
    pub(crate) fn tag_query(self) -> &'static TagQuery {
        static QUERIES: [OnceLock<TagQuery>; Grammar::VARIANTS.len()] =
            [const { OnceLock::new() }; Grammar::VARIANTS.len()];
        QUERIES[self as usize].get_or_init(|| self.compile())
    }

    fn compile(self) -> TagQuery {
        // The queries are embedded and covered by tests: a failure here is a build bug.
        let query = Query::new(&self.tree_sitter(), self.query_source())
            .unwrap_or_else(|e| panic!("{} tag query does not compile: {e}", self.name()));
        let roles: Vec<Role> = query.capture_names().iter().map(|n| role_of(n)).collect();
        let identifier_refs = !roles.iter().any(|r| matches!(r, Role::RefName | Role::Ref));
        let literals = Query::new(&self.tree_sitter(), self.literal_source())
            .unwrap_or_else(|e| panic!("{} literal query does not compile: {e}", self.name()));
        TagQuery {
            query,
            roles,
            identifier_refs,
            literals,
        }
    }
}

fn role_of(capture: &str) -> Role {
    if capture.starts_with("name.definition.") {
        Role::DefName
    } else if capture.starts_with("name.reference.") {
        Role::RefName
    } else if capture == "name" {
        Role::Name
    } else if capture.starts_with("definition.") {
        Role::Def
    } else if capture.starts_with("reference.") {
        Role::Ref
    } else {
        Role::Other
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn every_query_compiles_and_has_definitions() {
        for lang in Grammar::VARIANTS {
            let q = lang.tag_query();
            assert!(
                q.roles
                    .iter()
                    .any(|r| matches!(r, Role::DefName | Role::Def)),
                "{} has no definitions",
                lang.name()
            );
        }
        for lang in Grammar::VARIANTS {
            let literals = &lang.tag_query().literals;
            assert_eq!(
                literals.capture_names(),
                ["literal", UNCLOSED],
                "{}",
                lang.name()
            );
            assert!(literals.pattern_count() >= 4, "{}", lang.name());
        }
        assert!(Grammar::C.tag_query().identifier_refs);
        assert!(Grammar::Cpp.tag_query().identifier_refs);
        assert!(!Grammar::Rust.tag_query().identifier_refs);
    }

    #[test]
    fn extensions_map_to_languages() {
        assert_eq!(Grammar::from_path(Path::new("a/b.RS")), Some(Grammar::Rust));
        assert_eq!(Grammar::from_path(Path::new("x.tsx")), Some(Grammar::Tsx));
        assert_eq!(Grammar::from_path(Path::new("x.hpp")), Some(Grammar::Cpp));
        assert_eq!(
            Grammar::from_path(Path::new("deploy.sh")),
            Some(Grammar::Bash)
        );
        assert_eq!(
            Grammar::from_path(Path::new("build.gradle.kts")),
            Some(Grammar::Kotlin)
        );
        assert_eq!(
            Grammar::from_path(Path::new("a/lib.mli")),
            Some(Grammar::OCamlInterface)
        );
        assert_eq!(
            Grammar::from_path(Path::new("infra/main.tf")),
            Some(Grammar::Hcl)
        );
        assert_eq!(
            Grammar::from_path(Path::new("analysis.R")),
            Some(Grammar::R)
        );
        assert_eq!(Grammar::from_path(Path::new("README.md")), None);
        assert_eq!(Grammar::from_path(Path::new("Makefile")), None);
    }
}
