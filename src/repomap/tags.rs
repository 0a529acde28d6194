//! Tag extraction: one tree-sitter parse per file gives what the file defines (with
//! where the source lines are that show each definition in its scope) and what it
//! references. Everything the ranking needs is kept here, so a warm start never parses;
//! the shown lines' text is read from the file when the map is rendered, which keeps
//! the cache and the memory small (most definitions are never shown).

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser, QueryCursor, StreamingIterator, Tree};

use super::languages::{Lang, Role};

/// Shown lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 100;

/// Names longer than this are generated code, not identifiers worth ranking.
const MAX_NAME_BYTES: usize = 200;

/// The tags of one file. Strings are packed into a few buffers so that loading tens of
/// thousands of files from the cache costs a few allocations per file, not one per tag.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileTags {
    /// The distinct names the file defines or references, each followed by `\n`.
    names: String,
    /// Definitions in source order.
    pub defs: Vec<Def>,
    /// (name index, number of references), one entry per referenced name.
    pub refs: Vec<(u32, u32)>,
    /// Source lines the map may show (definition lines and their scope headers):
    /// (0-based line number, byte offset of the line's start), sorted by line number.
    line_index: Vec<(u32, u32)>,
    /// Indices into `line_index`: every definition's `shown` range points here.
    shown: Vec<u32>,
    /// Lines in the file, so the renderer knows whether anything follows the last shown
    /// line.
    pub line_count: u32,
}

/// One definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Def {
    /// Index of its name (see [`FileTags::names`]).
    pub name: u32,
    /// `FileTags::shown[first..first + len]`: the definition's line and the headers of
    /// the scopes around it, as indices into the file's line table.
    first: u32,
    len: u32,
}

impl FileTags {
    /// The names, in index order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.split_terminator('\n')
    }

    /// The lines (as indices into the line table) that show `def` in its scopes.
    pub fn shown_lines(&self, def: &Def) -> &[u32] {
        &self.shown[def.first as usize..(def.first + def.len) as usize]
    }

    /// Line `i` of the line table: (0-based line number, byte offset of its start).
    pub fn line(&self, i: u32) -> (u32, u32) {
        self.line_index[i as usize]
    }
}

/// Extracts the tags of one source file. Unparseable input gives what tree-sitter could
/// recover (it never fails on bad syntax); a parser failure gives no tags.
pub fn extract(lang: Lang, source: &[u8]) -> FileTags {
    thread_local! {
        static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
    }
    let tree = PARSER.with_borrow_mut(|parser| {
        parser.set_language(&lang.grammar()).ok()?;
        parser.parse(source, None)
    });
    match tree {
        Some(tree) => Extractor::new(source).run(lang, &tree),
        None => FileTags::default(),
    }
}

/// Builds a [`FileTags`] while walking one tree.
struct Extractor<'s> {
    source: &'s [u8],
    tags: FileTags,
    name_ids: HashMap<&'s str, u32>,
    /// Line number -> index in the line table, for lines already taken.
    line_ids: HashMap<u32, u32>,
    /// Taken lines before sorting: (line number, start offset).
    pending_lines: Vec<(u32, u32)>,
    ref_counts: HashMap<u32, u32>,
    /// Byte ranges of definition names, so they are not also counted as references.
    def_ranges: Vec<(usize, usize)>,
    refs: Vec<Node<'s>>,
}

impl<'s> Extractor<'s> {
    fn new(source: &'s [u8]) -> Self {
        Extractor {
            source,
            tags: FileTags::default(),
            name_ids: HashMap::new(),
            line_ids: HashMap::new(),
            pending_lines: Vec::new(),
            ref_counts: HashMap::new(),
            def_ranges: Vec::new(),
            refs: Vec::new(),
        }
    }

    fn run(mut self, lang: Lang, tree: &'s Tree) -> FileTags {
        let tag_query = lang.tag_query();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(&tag_query.query, tree.root_node(), self.source);
        while let Some(m) = matches.next() {
            let mut name = None;
            let mut kind = None;
            for c in m.captures() {
                match tag_query.roles[c.index as usize] {
                    Role::DefName => self.add_def(c.node),
                    Role::RefName => self.refs.push(c.node),
                    Role::Name => name = Some(c.node),
                    Role::Def => kind = Some(Role::Def),
                    Role::Ref => kind = Some(Role::Ref),
                    Role::Other => {}
                }
            }
            match (name, kind) {
                (Some(node), Some(Role::Def)) => self.add_def(node),
                (Some(node), Some(Role::Ref)) => self.refs.push(node),
                _ => {}
            }
        }
        if tag_query.identifier_refs {
            collect_identifiers(tree.root_node(), &mut self.refs);
        }
        self.finish(tree)
    }

    fn text(&self, node: Node<'s>) -> Option<&'s str> {
        let text = std::str::from_utf8(&self.source[node.byte_range()]).ok()?;
        (!text.is_empty() && text.len() <= MAX_NAME_BYTES && !text.contains(['\n', '\r']))
            .then_some(text)
    }

    fn name_id(&mut self, name: &'s str) -> u32 {
        let next = self.name_ids.len() as u32;
        *self.name_ids.entry(name).or_insert_with(|| {
            self.tags.names.push_str(name);
            self.tags.names.push('\n');
            next
        })
    }

    fn add_def(&mut self, name_node: Node<'s>) {
        let Some(name) = self.text(name_node) else {
            return;
        };
        let range = (name_node.start_byte(), name_node.end_byte());
        if self.def_ranges.contains(&range) {
            return; // two patterns matched the same definition
        }
        self.def_ranges.push(range);
        let name = self.name_id(name);
        let def_line = name_node.start_position().row as u32;
        // The scope headers: enclosing declarations that start on an earlier line.
        let mut rows = vec![def_line];
        let mut ancestor = name_node.parent();
        // The root (`module`, `program`, ...) is the whole file, not a scope to show.
        while let Some(node) = ancestor
            && let Some(parent) = node.parent()
        {
            let row = node.start_position().row as u32;
            if row < def_line && is_scope(node.kind()) && rows.last() != Some(&row) {
                rows.push(row);
            }
            ancestor = Some(parent);
        }
        rows.reverse();
        let first = self.tags.shown.len() as u32;
        for row in rows {
            let id = self.line_id(row, name_node);
            self.tags.shown.push(id);
        }
        let len = self.tags.shown.len() as u32 - first;
        self.tags.defs.push(Def { name, first, len });
    }

    /// The (provisional) line-table index of `row`, finding its start in the source.
    fn line_id(&mut self, row: u32, near: Node<'s>) -> u32 {
        if let Some(&id) = self.line_ids.get(&row) {
            return id;
        }
        // Find the line's bytes by walking from a node on or below that row.
        let mut node = near;
        while node.start_position().row as u32 > row {
            match node.parent() {
                Some(p) => node = p,
                None => break,
            }
        }
        let at = node.start_byte().min(self.source.len());
        let start = self.source[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let id = self.pending_lines.len() as u32;
        self.pending_lines.push((row, start as u32));
        self.line_ids.insert(row, id);
        id
    }

    fn finish(mut self, tree: &Tree) -> FileTags {
        let refs = std::mem::take(&mut self.refs);
        for node in refs {
            let range = (node.start_byte(), node.end_byte());
            if self.def_ranges.contains(&range) {
                continue;
            }
            if let Some(name) = self.text(node) {
                let id = self.name_id(name);
                *self.ref_counts.entry(id).or_insert(0) += 1;
            }
        }
        let mut refs: Vec<(u32, u32)> = self.ref_counts.into_iter().collect();
        refs.sort_unstable();
        self.tags.refs = refs;

        // Sort the line table by line number and renumber the definitions' references.
        let mut order: Vec<u32> = (0..self.pending_lines.len() as u32).collect();
        order.sort_by_key(|&i| self.pending_lines[i as usize].0);
        let mut new_id = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
            self.tags.line_index.push(self.pending_lines[old as usize]);
        }
        for id in &mut self.tags.shown {
            *id = new_id[*id as usize];
        }
        self.tags.line_count = tree.root_node().end_position().row as u32 + 1;
        self.tags
    }
}

/// Whether a node kind is a declaration whose first line is worth showing above the
/// definitions inside it (`impl Foo {`, `class Bar:`, `namespace baz {`), as opposed to
/// a body, block or list that merely contains them.
fn is_scope(kind: &str) -> bool {
    const CONTAINERS: [&str; 4] = ["_list", "body", "block", "statement"];
    const SCOPES: [&str; 14] = [
        "item",
        "declaration",
        "definition",
        "class",
        "module",
        "namespace",
        "impl",
        "trait",
        "interface",
        "struct",
        "enum",
        "specifier",
        "function",
        "method",
    ];
    !CONTAINERS.iter().any(|c| kind.ends_with(c)) && SCOPES.iter().any(|s| kind.contains(s))
}

/// Every identifier-like leaf, for languages whose query has no reference patterns.
fn collect_identifiers<'t>(root: Node<'t>, out: &mut Vec<Node<'t>>) {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.child_count() == 0 {
            if node.is_named() && node.kind().ends_with("identifier") {
                out.push(node);
            }
        } else if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// The source line starting at byte `start` as the map shows it: without trailing
/// blanks or `\r`, at most [`MAX_LINE_CHARS`] characters. Offsets past the end give an
/// empty line rather than a panic.
pub fn line_text(source: &[u8], start: u32) -> String {
    let rest = source.get(start as usize..).unwrap_or_default();
    let line = &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())];
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end();
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => text.get(..i).unwrap_or(text).to_string(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(tags: &FileTags) -> Vec<&str> {
        let names: Vec<&str> = tags.names().collect();
        tags.defs.iter().map(|d| names[d.name as usize]).collect()
    }

    fn refs(tags: &FileTags) -> Vec<&str> {
        let names: Vec<&str> = tags.names().collect();
        tags.refs.iter().map(|r| names[r.0 as usize]).collect()
    }

    #[test]
    fn rust_definitions_references_and_scopes() {
        let src = "struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> Length {\n        helper(self.x)\n    }\n}\n";
        let tags = extract(Lang::Rust, src.as_bytes());
        assert_eq!(defs(&tags), ["Point", "norm"]);
        let r = refs(&tags);
        assert!(r.contains(&"Length") && r.contains(&"helper"), "{r:?}");
        assert!(!r.contains(&"norm"));
        let norm = tags.defs[1];
        let shown: Vec<(u32, String)> = tags
            .shown_lines(&norm)
            .iter()
            .map(|&i| {
                let (row, start) = tags.line(i);
                (row, line_text(src.as_bytes(), start))
            })
            .collect();
        assert_eq!(
            shown,
            [
                (2, "impl Point {".to_string()),
                (3, "    fn norm(&self) -> Length {".to_string())
            ]
        );
        assert_eq!(tags.line_count, 8);
    }

    #[test]
    fn c_without_reference_patterns_counts_every_identifier() {
        let src = "#define LIMIT 4\nint area(struct shape *s) { return s->w * LIMIT; }\n";
        let tags = extract(Lang::C, src.as_bytes());
        assert_eq!(defs(&tags), ["LIMIT", "area"]);
        let r = refs(&tags);
        assert!(r.contains(&"LIMIT") && r.contains(&"shape") && r.contains(&"w"));
    }

    #[test]
    fn long_lines_are_cut_at_100_characters() {
        let long = format!("fn f() {{ let _ = \"{}\"; }}\n", "é".repeat(300));
        let tags = extract(Lang::Rust, long.as_bytes());
        let line = line_text(long.as_bytes(), tags.line(0).1);
        assert_eq!(line.chars().count(), MAX_LINE_CHARS);
        assert_eq!(line_text(long.as_bytes(), 1 << 30), "");
    }
}
