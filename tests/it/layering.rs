//! The layers of the crate, checked on its sources: which module may use which. Every
//! use counts, `use` items and paths alike (parsed with syn; `crate::`, `super::` and
//! `self::` paths are resolved from the module they are written in). The rules, from
//! the bottom up: no cycle between top-level modules, nor between the submodules of one
//! (`edit::proposal` and `edit::render`, say); nothing below the front ends (`tui`,
//! `headless`, `acp`, `main`) uses `cli`; the engine uses no front end, nor one front
//! end another; the TUI uses only the engine (its protocol), `config` and the leaves in
//! `TUI_USES`, the ACP front end those in `ACP_USES`; the leaves use no other module
//! but leaves.
//!
//! A module's `mod.rs` is its face, not a node of the submodule graph: a name it
//! re-exports (`pub use proposal::Proposal`) counts as a use of the submodule that
//! defines it.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::visit::Visit;

/// Module → the modules it uses.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// A source file: its module path from the crate root (`edit::proposal`; a `mod.rs` is
/// its directory's module, `main.rs` is `main`) and its text.
type Source = (String, String);

/// A path a file uses, from the crate root, with the name a `use` item brings in by it.
struct Used {
    path: Vec<String>,
    name: Option<String>,
}

/// Every path a file uses, resolved from the crate root; paths into other crates are
/// left out.
struct Uses<'a> {
    /// The module being visited (inline `mod` items included).
    module: Vec<String>,
    /// Every module of the crate, for bare paths that start with a child module.
    modules: &'a BTreeSet<Vec<String>>,
    found: Vec<Used>,
}

impl Uses<'_> {
    /// `segments` from the crate root, if they name something of the crate.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, mut rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut base = self.module.clone();
                base.pop()?;
                while let Some((_, after)) = rest.split_first().filter(|(s, _)| *s == "super") {
                    base.pop()?;
                    rest = after;
                }
                base
            }
            // A bare path is the crate's only when it starts with a child module.
            _ => {
                rest = segments;
                let child = [self.module.as_slice(), &segments[..1]].concat();
                if !self.modules.contains(&child) {
                    return None;
                }
                self.module.clone()
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn record(&mut self, segments: &[String], name: Option<String>) {
        if let Some(path) = self.resolve(segments).filter(|p| !p.is_empty()) {
            self.found.push(Used { path, name });
        }
    }
}

impl<'ast> Visit<'ast> for Uses<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.record(&segments, None);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_tree_paths(&item.tree, Vec::new(), &mut paths);
        for (segments, name) in paths {
            self.record(&segments, name);
        }
    }

    /// syn leaves a macro's input as tokens: `format!("{}", crate::tokens::thousands(n))`
    /// would use a module unseen, so the paths in the tokens count too.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let mut paths = Vec::new();
        token_paths(mac.tokens.clone(), &mut paths);
        for segments in paths {
            self.record(&segments, None);
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.module.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.module.pop();
    }
}

/// The full paths of a `use` tree with the name each brings in: `a::{b, c as d, e::*}`
/// gives `a::b` (b), `a::c` (d) and `a::e` (none).
fn use_tree_paths(
    tree: &syn::UseTree,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let with = |name: &syn::Ident| {
        let mut path = prefix.clone();
        if name != "self" {
            path.push(name.to_string());
        }
        path
    };
    match tree {
        syn::UseTree::Path(p) => use_tree_paths(&p.tree, with(&p.ident), out),
        syn::UseTree::Name(n) => out.push((with(&n.ident), Some(n.ident.to_string()))),
        syn::UseTree::Rename(r) => out.push((with(&r.ident), Some(r.rename.to_string()))),
        syn::UseTree::Group(g) => g
            .items
            .iter()
            .for_each(|t| use_tree_paths(t, prefix.clone(), out)),
        syn::UseTree::Glob(_) => out.push((prefix, None)),
    }
}

/// The paths of two or more segments (`a::b::c`) written in `tokens`, inside groups too.
fn token_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    use proc_macro2::TokenTree;
    let mut path: Vec<String> = Vec::new();
    let mut colons = 0;
    let mut end = |path: &mut Vec<String>| {
        if path.len() > 1 {
            out.push(std::mem::take(path));
        }
        path.clear();
    };
    let mut groups = Vec::new();
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                if colons != 2 {
                    end(&mut path);
                }
                path.push(ident.to_string());
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' && colons < 2 => colons += 1,
            other => {
                end(&mut path);
                colons = 0;
                if let TokenTree::Group(group) = other {
                    groups.push(group.stream());
                }
            }
        }
    }
    end(&mut path);
    for group in groups {
        token_paths(group, out);
    }
}

fn module_path(name: &str) -> Vec<String> {
    name.split("::").map(str::to_string).collect()
}

/// The resolved uses of every source, by its module path.
fn uses_of(sources: &[Source]) -> Vec<(Vec<String>, Vec<Used>)> {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|(m, _)| module_path(m)).collect();
    sources
        .iter()
        .map(|(module, text)| {
            let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{module}: {e}"));
            let mut uses = Uses {
                module: module_path(module),
                modules: &modules,
                found: Vec::new(),
            };
            uses.visit_file(&file);
            (module_path(module), uses.found)
        })
        .collect()
}

/// The dependency graph of the top-level modules of `sources`.
fn graph(sources: &[Source]) -> Graph {
    let mut graph = Graph::new();
    for (module, found) in uses_of(sources) {
        let top = &module[0];
        let tos = graph.entry(top.clone()).or_default();
        tos.extend(found.into_iter().map(|used| used.path[0].clone()));
        tos.remove(top);
    }
    graph
}

/// The dependency graph between the submodules of each top-level module
/// (`edit::proposal` → `edit::render`); `mod.rs` files resolve to what they re-export.
fn submodule_graph(sources: &[Source]) -> Graph {
    let uses = uses_of(sources);
    let submodules: BTreeSet<(&str, &str)> = uses
        .iter()
        .filter_map(|(m, _)| Some((m.first()?.as_str(), m.get(1)?.as_str())))
        .collect();
    let submodule_of = |path: &[String]| {
        let (top, sub) = (path.first()?, path.get(1)?);
        submodules
            .contains(&(top.as_str(), sub.as_str()))
            .then(|| format!("{top}::{sub}"))
    };
    // A name a top-level module's face brings in → the submodule it comes from.
    let mut faces: BTreeMap<(String, String), String> = BTreeMap::new();
    for (module, found) in &uses {
        if let [top] = module.as_slice() {
            for Used { path, name } in found {
                if let (Some(name), Some(sub)) = (name, submodule_of(path))
                    && path[0] == *top
                {
                    faces.insert((top.clone(), name.clone()), sub);
                }
            }
        }
    }
    let mut graph = Graph::new();
    for (module, found) in &uses {
        let Some(from) = submodule_of(module) else {
            continue;
        };
        let tos = graph.entry(from.clone()).or_default();
        for Used { path, .. } in found {
            if path[0] != module[0] {
                continue;
            }
            let to = submodule_of(path)
                .or_else(|| faces.get(&(path[0].clone(), path.get(1)?.clone())).cloned());
            if let Some(to) = to.filter(|to| *to != from) {
                tos.insert(to);
            }
        }
    }
    graph
}

/// Every source file of the crate, by its module path (`main` for main.rs).
fn crate_sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module == ["lib"] {
                continue;
            }
            out.push((module.join("::"), std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

const FRONT_ENDS: &[&str] = &["tui", "headless", "acp", "main", "cli"];

/// What the ACP front end may use: as the TUI, the engine's protocol and the config,
/// and the flags (`cli`) it applies to each session, the leaves it writes with, file
/// text as tern reads it (`diff`, to compare an editor's buffer with the file), the
/// texts the model reads (`prompts`: why a hunk it held back did not land) and
/// `terminal_text` (what an editor would not show is marked as the TUI marks it).
const ACP_USES: &[&str] = &[
    "engine",
    "config",
    "cli",
    "egress",
    "plural",
    "diff",
    "prompts",
    "terminal_text",
];

/// Modules with no dependency on the rest of the crate but each other: the vocabulary
/// every layer may share.
const LEAVES: &[&str] = &[
    "chars",
    "diff",
    "digest",
    "edit_format",
    "egress",
    "languages",
    "noise",
    "plural",
    "prompts",
    "regular_file",
    "signals",
    "spawn",
    "terminal_text",
];

/// What the TUI may use: the engine's protocol, the config, and the leaves that show
/// text and diffs, start the editor and read its file, and hear signals.
const TUI_USES: &[&str] = &[
    "engine",
    "config",
    "diff",
    "terminal_text",
    "chars",
    "plural",
    "egress",
    "spawn",
    "regular_file",
    "signals",
];

/// Capabilities that stand on the leaves and on these modules alone, so any layer
/// above can use them: `run` starts commands and clips their output by tokens.
const SELF_CONTAINED: &[(&str, &[&str])] = &[("run", &["tokens"])];

/// What the rules forbid in `graph`, except `known` crossings ("a -> b").
fn violations(graph: &Graph, known: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in graph {
        for to in tos {
            let edge = format!("{from} -> {to}");
            let forbidden = (to == "cli" && !FRONT_ENDS.contains(&from.as_str()))
                || (from == "engine" && (to == "tui" || to == "headless" || to == "acp"))
                || (from == "headless" && (to == "tui" || to == "acp"))
                || (from == "acp" && !ACP_USES.contains(&to.as_str()))
                || (from == "tui" && !TUI_USES.contains(&to.as_str()))
                || (LEAVES.contains(&from.as_str()) && !LEAVES.contains(&to.as_str()))
                || SELF_CONTAINED.iter().any(|(module, uses)| {
                    from == module && !LEAVES.contains(&to.as_str()) && !uses.contains(&to.as_str())
                });
            if forbidden && !known.contains(&edge.as_str()) {
                out.push(edge);
            }
        }
    }
    out
}

/// Crossings that exist today and that the restructuring removes; a line goes when its
/// crossing does (the test fails on one that is gone). None are left.
const KNOWN: &[&str] = &[];

/// The groups of modules that use each other, directly or through others (each group
/// sorted, with more than one module).
fn cycles(graph: &Graph) -> BTreeSet<Vec<String>> {
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_string()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    graph
        .keys()
        .filter_map(|m| {
            let group: Vec<String> = reaches[m]
                .iter()
                .filter(|other| reaches.get(other).is_some_and(|r| r.contains(m)))
                .cloned()
                .collect();
            (group.len() > 1).then_some(group)
        })
        .collect()
}

fn joined(cycles: BTreeSet<Vec<String>>) -> Vec<String> {
    cycles.into_iter().map(|c| c.join(" ")).collect()
}

#[test]
fn the_crate_keeps_its_layers() {
    let sources = crate_sources();
    let graph = graph(&sources);
    assert!(graph.contains_key("engine") && graph.contains_key("tui"));
    let bad = violations(&graph, KNOWN);
    assert!(bad.is_empty(), "forbidden uses: {bad:#?}");
    // A known crossing that is gone must leave the list, so the list only shrinks.
    let stale: Vec<&&str> = KNOWN
        .iter()
        .filter(|edge| {
            let (from, to) = edge.split_once(" -> ").unwrap();
            !graph.get(from).is_some_and(|tos| tos.contains(to))
        })
        .collect();
    assert!(
        stale.is_empty(),
        "no longer crossed, remove from KNOWN: {stale:?}"
    );
    assert_eq!(
        joined(cycles(&graph)),
        Vec::<String>::new(),
        "top-level modules that use each other"
    );
    let inner = submodule_graph(&sources);
    assert!(inner["edit::proposal"].contains("edit::doc"));
    assert_eq!(
        joined(cycles(&inner)),
        Vec::<String>::new(),
        "submodules that use each other: move what they share to a leaf submodule"
    );
}

#[test]
fn the_checker_catches_every_kind_of_use() {
    let fixture = |module: &str, text: &str| (module.to_string(), text.to_string());
    let graph = graph(&[
        fixture("engine", "use crate::tui::App;"),
        fixture("edit", "fn f() { let _ = crate::cli::Cli::parse(); }"),
        fixture("git", "use crate::{edit::Proposal, cli};"),
        fixture("tui", "fn g() -> crate::llm::ModelInfo { todo!() }"),
        fixture(
            "headless",
            "use crate::cli::ApplyArgs; fn f() { vec![super::tui::signals::heard()]; }",
        ),
        // Inside a macro's tokens, nested in a group.
        fixture(
            "digest",
            r#"fn f() -> String { format!("{}", (crate::tokens::thousands(1))) }"#,
        ),
        fixture(
            "run",
            "use crate::{tokens::TokenCounter, chars}; fn f(_: crate::config::Settings) {}",
        ),
        fixture(
            "prompts",
            "use crate::chars; fn f(_: super::llm::Message) {}",
        ),
    ]);
    assert_eq!(joined(cycles(&graph)), Vec::<String>::new());
    let looped = super_graph_with_cycle();
    assert_eq!(joined(cycles(&looped)), ["edit llm"]);
    let mut bad = violations(&graph, &[]);
    bad.sort();
    assert_eq!(
        bad,
        [
            "digest -> tokens",
            "edit -> cli",
            "engine -> tui",
            "git -> cli",
            "headless -> tui",
            "prompts -> llm",
            "run -> config",
            "tui -> llm"
        ]
    );
}

/// Two modules that use each other, one through a fully qualified path.
fn super_graph_with_cycle() -> Graph {
    graph(&[
        (
            "llm".to_string(),
            "use crate::edit::EditFormat;".to_string(),
        ),
        (
            "edit".to_string(),
            "fn f(m: crate::llm::Message) {}".to_string(),
        ),
    ])
}

#[test]
fn the_checker_catches_submodules_that_use_each_other() {
    let fixture = |module: &str, text: &str| (module.to_string(), text.to_string());
    let graph = submodule_graph(&[
        // The face re-exports; its own uses are not edges.
        fixture(
            "edit",
            "mod proposal; mod render; pub use proposal::{Proposal as P, Decision}; \
             fn f() { render::diff(); }",
        ),
        // Through the face's re-export, with a fully qualified path.
        fixture("edit::render", "fn f(_: &crate::edit::P) {}"),
        fixture("edit::proposal", "use super::render::{self, diff};"),
        // A test module's `super` is its file's module; no cycle with render.
        fixture(
            "edit::parse",
            "use super::*; mod tests { use super::super::render::diff; }",
        ),
        // Three in a ring, across a nested directory.
        fixture("tui::app", "use super::layout::Areas;"),
        fixture("tui::layout", "fn f() { crate::tui::panes::draw(); }"),
        fixture("tui::panes", "mod input;"),
        fixture(
            "tui::panes::input",
            "use super::super::app::App; use super::draw;",
        ),
        // Other top-level modules are not this graph's business.
        fixture("git::land", "use crate::edit::render::diff;"),
        fixture("git::commit", "use crate::git::land;"),
    ]);
    assert_eq!(
        graph["edit::parse"],
        BTreeSet::from(["edit::render".to_string()])
    );
    assert_eq!(
        graph["git::land"],
        BTreeSet::new(),
        "another module's submodules are not this one's"
    );
    assert_eq!(
        joined(cycles(&graph)),
        [
            "edit::proposal edit::render",
            "tui::app tui::layout tui::panes"
        ]
    );
}

/// A source that cites a document (`ARCHITECTURE.md`, `README.md`) cites one the
/// repository holds.
#[test]
fn sources_cite_only_documents_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for (module, text) in crate_sources() {
        let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
        for word in words.filter(|w| w.ends_with(".md")) {
            let stem = word.trim_end_matches(".md");
            let cited =
                !stem.is_empty() && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_');
            if cited && !root.join(word).is_file() {
                missing.push(format!("{module}: {word}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cited but not in the repository: {missing:?}"
    );
}
