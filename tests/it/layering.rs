//! The layers of the crate, checked on its sources: which top-level module may use
//! which. Every use counts, `use` items and fully qualified `crate::…` paths alike
//! (parsed with syn). The rules, from the bottom up: no cycle between top-level
//! modules; nothing below the front ends (`tui`, `headless`, `main`) uses `cli`; the
//! engine uses neither front end; the TUI uses only the engine (its protocol) and the
//! leaves `config`, `terminal_text` and `chars`.

// A failed unwrap here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::visit::Visit;

/// Top-level module → the top-level modules it uses.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Collects the first segment after `crate::` of every path and `use` tree.
struct Uses(BTreeSet<String>);

impl<'ast> Visit<'ast> for Uses {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let mut segments = path.segments.iter();
        if let (Some(first), Some(second)) = (segments.next(), segments.next())
            && first.ident == "crate"
        {
            self.0.insert(second.ident.to_string());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if let syn::UseTree::Path(path) = &item.tree
            && path.ident == "crate"
        {
            let mut below = Vec::new();
            use_tree_heads(&path.tree, &mut below);
            self.0.extend(below);
        }
    }
}

/// The first names of a `use` tree: `{a::b, c}` gives a and c.
fn use_tree_heads(tree: &syn::UseTree, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(p) => out.push(p.ident.to_string()),
        syn::UseTree::Name(n) => out.push(n.ident.to_string()),
        syn::UseTree::Rename(r) => out.push(r.ident.to_string()),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_tree_heads(t, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// The dependency graph of `sources` (module name, source text).
fn graph(sources: &[(String, String)]) -> Graph {
    let mut graph = Graph::new();
    for (module, text) in sources {
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{module}: {e}"));
        let mut uses = Uses(BTreeSet::new());
        uses.visit_file(&file);
        uses.0.remove(module);
        graph.entry(module.clone()).or_default().extend(uses.0);
    }
    graph
}

/// Every source file of the crate, by its top-level module (`main` for main.rs).
fn crate_sources() -> Vec<(String, String)> {
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
            let rel = path.strip_prefix(&src).unwrap();
            let top = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let module = top.trim_end_matches(".rs").to_string();
            if module == "lib" {
                continue;
            }
            out.push((module, std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

const FRONT_ENDS: &[&str] = &["tui", "headless", "main", "cli"];

/// What the rules forbid in `graph`, except `known` crossings ("a -> b").
fn violations(graph: &Graph, known: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in graph {
        for to in tos {
            let edge = format!("{from} -> {to}");
            let forbidden = (to == "cli" && !FRONT_ENDS.contains(&from.as_str()))
                || (from == "engine" && (to == "tui" || to == "headless"))
                || (from == "tui"
                    && !["engine", "config", "terminal_text", "chars"].contains(&to.as_str()));
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

#[test]
fn the_crate_keeps_its_layers() {
    let graph = graph(&crate_sources());
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
    let cycles: Vec<String> = cycles(&graph).into_iter().map(|c| c.join(" ")).collect();
    assert_eq!(
        cycles, KNOWN_CYCLES,
        "modules that use each other (a new cycle, or one that is gone: update KNOWN_CYCLES)"
    );
}

/// Modules that use each other today; the restructuring moves their shared vocabulary
/// to a leaf so that this becomes empty.
const KNOWN_CYCLES: &[&str] = &[];

#[test]
fn the_checker_catches_every_kind_of_use() {
    let fixture = |module: &str, text: &str| (module.to_string(), text.to_string());
    let graph = graph(&[
        fixture("engine", "use crate::tui::App;"),
        fixture("edit", "fn f() { let _ = crate::cli::Cli::parse(); }"),
        fixture("git", "use crate::{edit::Proposal, cli};"),
        fixture("tui", "fn g() -> crate::llm::ModelInfo { todo!() }"),
        fixture("headless", "use crate::cli::ApplyArgs;"),
    ]);
    assert_eq!(
        cycles(&graph).into_iter().collect::<Vec<_>>(),
        Vec::<Vec<String>>::new()
    );
    let looped = super_graph_with_cycle();
    assert_eq!(
        cycles(&looped).into_iter().collect::<Vec<_>>(),
        [vec!["edit".to_string(), "llm".to_string()]]
    );
    let mut bad = violations(&graph, &[]);
    bad.sort();
    assert_eq!(
        bad,
        ["edit -> cli", "engine -> tui", "git -> cli", "tui -> llm",]
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
