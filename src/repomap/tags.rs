//! Tag extraction: one tree-sitter parse per file gives what the file defines (with
//! where the source lines are that show each definition in its scope) and what it
//! references. Everything the ranking needs is kept here, so a warm start never parses;
//! the shown lines' text is read from the file when the map is rendered, which keeps
//! the cache and the memory small (most definitions are never shown). The string and
//! number literals on those lines (found by the language's literal query) are kept as
//! byte ranges, and a shown line elides them: the map shows what a definition is, never
//! a secret it holds (`STRIPE_SECRET = "…"`).

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser, Point, Query, QueryCursor, StreamingIterator, Tree};

use super::languages::{Grammar, Role, UNCLOSED};

/// Shown lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 100;

/// A literal whose content (between its quotes) has at most this many characters on one
/// line is shown as it is (`0`, `""`, `"utf8"`, `8080`); a longer one is elided.
pub const SHOWN_LITERAL_CHARS: usize = 4;

/// What replaces an elided literal's content.
pub const ELIDED: &str = "…";

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
    /// The literals to elide that cross shown lines, sorted, none inside another.
    literals: Vec<Literal>,
}

/// A literal a shown line elides: its bytes in the file, and the lengths of its opening
/// and closing delimiters (`r#"` and `"#`, `f"""` and `"""`), which are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Literal {
    start: u32,
    end: u32,
    open: u8,
    close: u8,
}

impl Literal {
    /// The literal `node` is, if it is to be elided: it spans lines, or its content
    /// has more than [`SHOWN_LITERAL_CHARS`] characters.
    fn of(node: Node, source: &[u8]) -> Option<Literal> {
        let text = source.get(node.byte_range())?;
        let (open, close) = delimiters(text);
        let content = text.get(open..text.len() - close)?;
        let short = !content.contains(&b'\n')
            && String::from_utf8_lossy(content).chars().count() <= SHOWN_LITERAL_CHARS;
        (!short).then(|| Literal {
            start: node.start_byte() as u32,
            end: node.end_byte() as u32,
            open: open as u8,
            close: close as u8,
        })
    }

    /// A string that never closes, opened by the quote `node` (or by an error token
    /// that starts with its quote and runs on, as in Haskell): all of its line after the
    /// quote is the string's, so all of it is elided.
    fn unclosed(node: Node, source: &[u8]) -> Literal {
        opened_to_line_end(source, node.start_byte())
    }
}

/// The string that opens at byte `start` and runs to the end of its line, its prefix
/// and opening (`r#"`, `"""`, `[==[`, `{|`) kept.
fn opened_to_line_end(source: &[u8], start: usize) -> Literal {
    let start = start.min(source.len());
    let rest = source.get(start..).unwrap_or_default();
    let end = start + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let (prefix, quotes) = opening(rest);
    let brackets = match quotes {
        0 => rest
            .iter()
            .skip(prefix)
            .take_while(|b| matches!(b, b'[' | b'=' | b'{' | b'|' | b'<' | b'~' | b'('))
            .count(),
        _ => 0,
    };
    Literal {
        start: start as u32,
        end: end as u32,
        open: (prefix + quotes + brackets)
            .min(end - start)
            .min(u8::MAX as usize) as u8,
        close: 0,
    }
}

/// The lengths of what opens a literal's text: an optional prefix (`r#`, `b`, `f`, `@`,
/// `$`, `u8R`), then its quotes.
fn opening(text: &[u8]) -> (usize, usize) {
    let prefix = text
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'@' | b'$' | b'#' | b'_'))
        .count();
    let quotes = text.iter().skip(prefix).take_while(|b| is_quote(b)).count();
    (prefix, quotes)
}

fn is_quote(b: &u8) -> bool {
    matches!(b, b'"' | b'\'' | b'`')
}

/// The opening and closing delimiters of a literal's text, by length: an optional
/// prefix (`r#`, `b`, `f`, `@`, `$`, `u8R`) and quotes, and the quotes (and `#`s) that
/// close them. None (0, 0) for what has no quotes around it (a number, Ruby's `%q()`),
/// so all of it is content.
fn delimiters(text: &[u8]) -> (usize, usize) {
    const MAX_PREFIX: usize = 8;
    let (prefix, quotes) = opening(text);
    let open = prefix + quotes;
    let close = text
        .iter()
        .skip(open)
        .rev()
        .take_while(|b| is_quote(b) || **b == b'#')
        .count();
    // A C++ digit separator (`1'000`) is no quote: a quote opens only what one closes.
    match prefix <= MAX_PREFIX && quotes > 0 && close > 0 {
        true => (open, close),
        false => (0, 0),
    }
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
    pub(crate) fn shown_lines(&self, def: &Def) -> &[u32] {
        &self.shown[def.first as usize..(def.first + def.len) as usize]
    }

    /// Line `i` of the line table: (0-based line number, byte offset of its start).
    pub fn line(&self, i: u32) -> (u32, u32) {
        self.line_index[i as usize]
    }

    /// Line `i` of the line table as the map shows it, from `source` (the content the
    /// tags were taken from): literals elided, without trailing blanks or `\r`, at
    /// most [`MAX_LINE_CHARS`] characters.
    pub(crate) fn shown_line(&self, source: &[u8], i: u32) -> String {
        line_text(source, self.line(i).1, &self.literals)
    }
}

/// Extracts the tags of one source file. Unparseable input gives what tree-sitter could
/// recover (it never fails on bad syntax); a parser failure gives no tags.
pub fn extract(lang: Grammar, source: &[u8]) -> FileTags {
    thread_local! {
        static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
    }
    let tree = PARSER.with_borrow_mut(|parser| {
        parser.set_language(&lang.tree_sitter()).ok()?;
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

    fn run(mut self, lang: Grammar, tree: &'s Tree) -> FileTags {
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
        self.finish(tree, &tag_query.literals)
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

    fn finish(mut self, tree: &Tree, literals: &Query) -> FileTags {
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
        self.tags.literals = shown_literals(literals, tree, self.source, &self.tags.line_index);
        self.tags
    }
}

/// The literals `query` finds on the shown `lines` (sorted by row) that are to be
/// elided, sorted, the outermost of nested ones (a string in a template's substitution)
/// only. The query runs over each run of consecutive shown rows, not the whole file.
fn shown_literals(query: &Query, tree: &Tree, source: &[u8], lines: &[(u32, u32)]) -> Vec<Literal> {
    let mut found = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut rows = lines.iter().map(|&(row, _)| row as usize).peekable();
    while let Some(first) = rows.next() {
        let mut last = first;
        while let Some(&next) = rows.peek().filter(|&&next| next == last + 1) {
            last = next;
            rows.next();
        }
        cursor.set_point_range(Point::new(first, 0)..Point::new(last + 1, 0));
        let mut matches = cursor.matches(query, tree.root_node(), source);
        while let Some(m) = matches.next() {
            for capture in m.captures() {
                found.extend(match query.capture_names()[capture.index as usize] {
                    UNCLOSED => Some(Literal::unclosed(capture.node, source)),
                    _ => Literal::of(capture.node, source),
                });
            }
        }
    }
    found.extend(openers_in_errors(tree.root_node(), source, lines));
    found.sort_by_key(|l| (l.start, std::cmp::Reverse(l.end)));
    let mut outermost: Vec<Literal> = Vec::with_capacity(found.len());
    for literal in found {
        if outermost.last().is_none_or(|l| literal.start >= l.end) {
            outermost.push(literal);
        }
    }
    outermost
}

/// A string that never closes and is no quote token a literal query can name (a raw
/// `r#"`, a `"""`, Lua's `[[`, C#'s `@"`, each grammar recovers differently): on each
/// shown line that a parse error covers, everything from the first opener in the
/// error (a quote, Lua's `[[`/`[=`, OCaml's `{|`, a heredoc's `<<`, a sigil's `~s`)
/// to the end of the line is elided, its prefix and opening kept. A line of a
/// broken file may lose more than its string; it never shows what the string holds.
fn openers_in_errors(root: Node, source: &[u8], lines: &[(u32, u32)]) -> Vec<Literal> {
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if !node.has_error() {
            continue;
        }
        if !node.is_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
            continue;
        }
        let (first, last) = (node.start_position().row, node.end_position().row);
        let start = lines.partition_point(|&(row, _)| (row as usize) < first);
        for &(row, line_start) in lines.get(start..).unwrap_or_default() {
            if row as usize > last {
                break;
            }
            let from = (line_start as usize).max(node.start_byte());
            let rest = source.get(from..node.end_byte()).unwrap_or_default();
            let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
            let opens = |(i, b): &(usize, &u8)| match b {
                b'"' | b'\'' | b'`' => true,
                b'[' | b'{' | b'<' | b'~' => line.get(i + 1).is_some_and(|n| {
                    matches!(n, b'[' | b'=' | b'|' | b'<') || n.is_ascii_alphabetic()
                }),
                _ => false,
            };
            if let Some((at, _)) = line.iter().enumerate().find(opens) {
                let prefix = line
                    .get(..at)
                    .unwrap_or_default()
                    .iter()
                    .rev()
                    .take_while(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'@' | b'$' | b'#' | b'_')
                    })
                    .count();
                found.push(opened_to_line_end(source, from + at - prefix));
            }
        }
    }
    found
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

/// The source line starting at byte `start` as the map shows it: each of `literals`
/// (sorted, none inside another) that crosses it elided to its delimiters around
/// [`ELIDED`] (only the delimiter on this line is kept of one that crosses lines),
/// without trailing blanks or `\r`, at most [`MAX_LINE_CHARS`] characters. Offsets past
/// the end give an empty line rather than a panic.
fn line_text(source: &[u8], start: u32, literals: &[Literal]) -> String {
    let start = (start as usize).min(source.len());
    let rest = source.get(start..).unwrap_or_default();
    let end = start + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let bytes = |from: usize, to: usize| source.get(from..to.max(from)).unwrap_or_default();
    let mut line = Vec::with_capacity(end - start);
    let mut at = start;
    let crossing = literals.partition_point(|l| l.end as usize <= start);
    for literal in literals.get(crossing..).unwrap_or_default() {
        let (from, to) = (literal.start as usize, literal.end as usize);
        if from >= end {
            break;
        }
        line.extend_from_slice(bytes(at, from.max(start)));
        if from >= start {
            line.extend_from_slice(bytes(from, (from + literal.open as usize).min(end)));
        }
        line.extend_from_slice(ELIDED.as_bytes());
        if to <= end {
            let close = to.saturating_sub(literal.close as usize);
            line.extend_from_slice(bytes(close.max(from.max(start)), to));
        }
        at = to.min(end).max(at);
    }
    line.extend_from_slice(bytes(at, end));
    let text = String::from_utf8_lossy(&line);
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

    /// Each HCL block is the kind its keyword says, and only a `locals` block's
    /// attributes are definitions (aider's query, its predicates outside their patterns,
    /// made every attribute of every block a local).
    #[test]
    fn hcl_blocks_are_the_kind_their_keyword_says() {
        let src = "variable \"region\" {\n  default = \"us-west-2\"\n}\n\
                   locals {\n  vpc_name = \"main\"\n}\n\
                   resource \"aws_vpc\" \"main\" {\n  cidr_block = var.region\n}\n";
        let tags = extract(Grammar::Hcl, src.as_bytes());
        assert_eq!(defs(&tags), ["region", "vpc_name", "main"]);
        assert_eq!(refs(&tags), ["region"]);
    }

    /// A Nix binding defines its first attribute (a function when it binds one), nested
    /// sets' bindings too, and every identifier is a reference; an `inherit` defines
    /// nothing.
    #[test]
    fn nix_bindings_are_definitions_and_functions() {
        let src = "{ lib, ... }:\nlet\n  mkPort = n: n + 1;\nin {\n  services.web = {\n    port = mkPort 8080;\n  };\n  inherit lib;\n}\n";
        let tags = extract(Grammar::Nix, src.as_bytes());
        assert_eq!(defs(&tags), ["mkPort", "services", "port"]);
        assert!(refs(&tags).contains(&"mkPort"), "{:?}", refs(&tags));
    }

    /// TOML's table headers and keys and YAML's keys, nested ones too, are the
    /// definitions; an inline table's keys are not (they are its value's shape).
    #[test]
    fn toml_and_yaml_keys_are_definitions() {
        let toml = "name = \"tern\"\n[dependencies]\nserde = { version = \"1\" }\n[[bin]]\npath = \"main.rs\"\n";
        let tags = extract(Grammar::Toml, toml.as_bytes());
        assert_eq!(
            defs(&tags),
            ["name", "dependencies", "serde", "bin", "path"]
        );
        assert!(refs(&tags).is_empty());
        let yaml = "name: ci\njobs:\n  test:\n    runs-on: ubuntu\n    steps:\n      - name: check\n        run: cargo test\n";
        let tags = extract(Grammar::Yaml, yaml.as_bytes());
        assert_eq!(
            defs(&tags),
            ["name", "jobs", "test", "runs-on", "steps", "name", "run"]
        );
    }

    #[test]
    fn rust_definitions_references_and_scopes() {
        let src = "struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> Length {\n        helper(self.x)\n    }\n}\n";
        let tags = extract(Grammar::Rust, src.as_bytes());
        assert_eq!(defs(&tags), ["Point", "norm"]);
        let r = refs(&tags);
        assert!(r.contains(&"Length") && r.contains(&"helper"), "{r:?}");
        assert!(!r.contains(&"norm"));
        let norm = tags.defs[1];
        let shown: Vec<(u32, String)> = tags
            .shown_lines(&norm)
            .iter()
            .map(|&i| (tags.line(i).0, tags.shown_line(src.as_bytes(), i)))
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
        let tags = extract(Grammar::C, src.as_bytes());
        assert_eq!(defs(&tags), ["LIMIT", "area"]);
        let r = refs(&tags);
        assert!(r.contains(&"LIMIT") && r.contains(&"shape") && r.contains(&"w"));
    }

    #[test]
    fn long_lines_are_cut_at_100_characters() {
        let long = format!("fn f() {{ let _ = \"{}\"; }}\n", "é".repeat(300));
        let tags = extract(Grammar::Rust, long.as_bytes());
        let line = line_text(long.as_bytes(), tags.line(0).1, &[]);
        assert_eq!(line.chars().count(), MAX_LINE_CHARS);
        assert_eq!(line_text(long.as_bytes(), 1 << 30, &tags.literals), "");
    }
}

#[cfg(test)]
mod literal_tests {
    use strum::VariantArray;

    use super::*;

    /// What must never reach the map from these snippets.
    const SECRETS: [&str; 6] = [
        "sk_live",
        "hunter2",
        "4111111111111111",
        "4_111",
        "BEGIN KEY",
        "51HvSecret",
    ];

    /// A real snippet per language: secrets in every kind of string it has (raw and
    /// multi-line ones too), long numbers, and short literals that stay; with the
    /// names of what it defines on those lines.
    fn snippet(lang: Grammar) -> (&'static str, &'static [&'static str]) {
        match lang {
            Grammar::Rust => (
                "pub const STRIPE_SECRET: &str = \"sk_live_51HvSecretValue\";\n\
                 pub static DATABASE_URL: &str = r#\"postgres://admin:hunter2@db/prod\"#;\n\
                 const ACCOUNT: u64 = 4111111111111111;\n\
                 const PORT: u16 = 8080;\n\
                 const BYTES: &[u8] = b\"sk_live_bytes\";\n\
                 fn connect(url: &str) -> Pool { Pool::new(url, \"sk_live_inline\", 'x') }\n",
                &[
                    "STRIPE_SECRET",
                    "DATABASE_URL",
                    "ACCOUNT",
                    "8080",
                    "connect",
                ],
            ),
            Grammar::Python => (
                "STRIPE_SECRET = \"sk_live_51HvSecretValue\"\n\
                 DATABASE_URL = f\"postgres://admin:hunter2@{HOST}/prod\"\n\
                 PRIVATE_KEY = \"\"\"-----BEGIN KEY-----\nhunter2\n-----END KEY-----\"\"\"\n\
                 RAW = r'sk_live_raw' 'sk_live_concatenated'\n\
                 ACCOUNT = 4111111111111111\n\
                 PORT = 8080\n\
                 def connect(url=\"postgres://admin:hunter2@db/prod\", retries=3): pass\n",
                &[
                    "STRIPE_SECRET",
                    "DATABASE_URL",
                    "PRIVATE_KEY",
                    "PORT = 8080",
                    "def connect(",
                ],
            ),
            Grammar::JavaScript => (
                "export const handler = (key = 'sk_live_51HvSecretValue') => key;\n\
                 function connect(url = `postgres://admin:${user}:hunter2@db`, n = 4111111111111111n) {}\n\
                 class Banner { render() { return <p>sk_live_in_jsx_text</p>; } }\n\
                 function port(p = 8080) {}\n",
                &["handler", "function connect(", "render()", "p = 8080"],
            ),
            Grammar::TypeScript => (
                "export const STRIPE_SECRET: string = 'sk_live_51HvSecretValue';\n\
                 export const DATABASE_URL = `postgres://admin:hunter2@${host}/prod`;\n\
                 export const ACCOUNT = 4111111111111111;\n\
                 export enum Keys { Live = \"sk_live_enum\", Port = 8080 }\n\
                 function connect(url: string = \"postgres://admin:hunter2@db\"): void {}\n",
                &[
                    "STRIPE_SECRET",
                    "DATABASE_URL",
                    "ACCOUNT",
                    "Keys",
                    "connect",
                ],
            ),
            Grammar::Tsx => (
                "export const STRIPE_SECRET = 'sk_live_51HvSecretValue';\n\
                 export const Banner = () => <p title=\"sk_live_attr\">sk_live_in_jsx_text hunter2</p>;\n\
                 export const ACCOUNT = 4111111111111111;\n\
                 export const PORT = 8080;\n",
                &["STRIPE_SECRET", "Banner", "ACCOUNT", "PORT = 8080"],
            ),
            Grammar::Go => (
                "package main\n\
                 const StripeSecret = \"sk_live_51HvSecretValue\"\n\
                 var DatabaseURL = `postgres://admin:hunter2@db/prod`\n\
                 const Account = 4111111111111111\n\
                 const Port = 8080\n\
                 func Connect(url string) error { return dial(\"sk_live_inline\", 'x', 1.5e300) }\n",
                &["Connect"],
            ),
            Grammar::Java => (
                "class Config {\n\
                 static final String STRIPE_SECRET = \"sk_live_51HvSecretValue\";\n\
                 static final String KEY = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\";\n\
                 static final long ACCOUNT = 4111111111111111L;\n\
                 static final int PORT = 8080;\n\
                 void connect(String url) { open(\"postgres://admin:hunter2@db\"); }\n\
                 }\n",
                &["class Config", "connect"],
            ),
            Grammar::C => (
                "#define STRIPE_SECRET \"sk_live_51HvSecretValue\"\n\
                 #define ACCOUNT 4111111111111111\n\
                 #define PORT 8080\n\
                 static const char *DATABASE_URL = \"postgres://admin:hunter2@db\" \"/prod\";\n\
                 int connect(const char *url) { return dial(url, \"sk_live_inline\"); }\n",
                &["STRIPE_SECRET", "ACCOUNT", "PORT 8080", "connect"],
            ),
            Grammar::Cpp => (
                "#define STRIPE_SECRET \"sk_live_51HvSecretValue\"\n\
                 const char *DATABASE_URL = R\"sql(postgres://admin:hunter2@db/prod)sql\";\n\
                 constexpr long long ACCOUNT = 4'111'111'111'111'111;\n\
                 int connect(const char *url) { return dial(url, u8\"sk_live_inline\", 4111111111111111_id); }\n\
                 class Pool { int port() { return 8080; } };\n",
                &["connect", "class Pool", "port()", "8080"],
            ),
            Grammar::Ruby => (
                "STRIPE_SECRET = 'sk_live_51HvSecretValue'\n\
                 DATABASE_URL = \"postgres://admin:#{user}:hunter2@db\"\n\
                 PRIVATE_KEY = <<~PEM\n  -----BEGIN KEY-----\n  hunter2\nPEM\n\
                 TOKENS = %w[sk_live_a sk_live_b]\n\
                 ACCOUNT = 4_111_111_111_111_111\n\
                 def connect(url = %q(postgres://admin:hunter2@db), port = 8080); end\n",
                &["def connect(", "port = 8080"],
            ),
            Grammar::CSharp => (
                "class Config {\n\
                 const string StripeSecret = \"sk_live_51HvSecretValue\";\n\
                 const string DatabaseUrl = @\"postgres://admin:hunter2@db\";\n\
                 const string Key = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\";\n\
                 const long Account = 4111111111111111L;\n\
                 const int Port = 8080;\n\
                 void Connect(string url) { Open($\"postgres://{user}:hunter2@db\"); }\n\
                 }\n",
                &["class Config", "Connect"],
            ),
            Grammar::Bash => (
                "STRIPE_SECRET=\"sk_live_51HvSecretValue\"\n\
                 DATABASE_URL='postgres://admin:hunter2@db/prod'\n\
                 export API_KEY=sk_live_unquoted\n\
                 ACCOUNT=4111111111111111\n\
                 PORT=8080\n\
                 cat <<EOF > key.pem\n-----BEGIN KEY-----\nhunter2\nEOF\n\
                 connect() { curl -H $'sk_live_ansi' \"$1\" 8080; }\n",
                &[
                    "STRIPE_SECRET",
                    "DATABASE_URL",
                    "API_KEY",
                    "PORT=8080",
                    "connect()",
                ],
            ),
            Grammar::Php => (
                "<?php\n\
                 const STRIPE_SECRET = 'sk_live_51HvSecretValue';\n\
                 $url = \"postgres://admin:{$user}:hunter2@db\";\n\
                 $key = <<<PEM\n-----BEGIN KEY-----\nhunter2\nPEM;\n\
                 $raw = <<<'RAW'\nsk_live_nowdoc\nRAW;\n\
                 const ACCOUNT = 4111111111111111;\n\
                 function connect($url = 'postgres://admin:hunter2@db', $port = 8080) {}\n\
                 class Config { const KEY = \"sk_live_class\"; }\n",
                &["function connect(", "$port = 8080", "class Config"],
            ),
            Grammar::Kotlin => (
                "const val STRIPE_SECRET = \"sk_live_51HvSecretValue\"\n\
                 val DATABASE_URL = \"\"\"postgres://admin:hunter2@db/prod\"\"\"\n\
                 val KEY = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 const val ACCOUNT = 4111111111111111L\n\
                 fun connect(url: String = \"postgres://$user:hunter2@db\", port: Int = 8080) {}\n\
                 class Pool { val c = 'x' }\n",
                &[
                    "STRIPE_SECRET",
                    "DATABASE_URL",
                    "fun connect(",
                    "port: Int = 8080",
                ],
            ),
            Grammar::Scala => (
                "object Config {\n\
                 val StripeSecret = \"sk_live_51HvSecretValue\"\n\
                 val DatabaseUrl = s\"postgres://admin:$user:hunter2@db\"\n\
                 val Key = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 val Account = 4111111111111111L\n\
                 def connect(url: String = \"sk_live_inline\", port: Int = 8080): Unit = ()\n\
                 }\n",
                &[
                    "StripeSecret",
                    "DatabaseUrl",
                    "def connect(",
                    "port: Int = 8080",
                ],
            ),
            Grammar::Swift => (
                "let stripeSecret = \"sk_live_51HvSecretValue\"\n\
                 let databaseUrl = #\"postgres://admin:hunter2@db\"#\n\
                 let key = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 let account = 4111111111111111\n\
                 func connect(url: String = \"postgres://\\(user):hunter2@db\", port: Int = 8080) {}\n",
                &[
                    "stripeSecret",
                    "databaseUrl",
                    "func connect(",
                    "port: Int = 8080",
                ],
            ),
            Grammar::Dart => (
                "const stripeSecret = 'sk_live_51HvSecretValue';\n\
                 final databaseUrl = \"postgres://admin:${user}:hunter2@db\";\n\
                 const key = '''\n-----BEGIN KEY-----\nhunter2\n''';\n\
                 const raw = r'sk_live_raw';\n\
                 const account = 4111111111111111;\n\
                 void connect(String url, {int port = 8080}) {}\n\
                 class Pool { String token() => 'sk_live_inline'; }\n",
                &["void connect(", "port = 8080", "class Pool", "token()"],
            ),
            Grammar::Lua => (
                "local STRIPE_SECRET = \"sk_live_51HvSecretValue\"\n\
                 local KEY = [[\n-----BEGIN KEY-----\nhunter2\n]]\n\
                 local ACCOUNT = 4111111111111111\n\
                 function connect(url, port) return dial(url or 'postgres://admin:hunter2@db', port or 8080) end\n",
                &["function connect(", "8080"],
            ),
            Grammar::Elixir => (
                "defmodule Config do\n\
                 @stripe_secret \"sk_live_51HvSecretValue\"\n\
                 @key \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 @account 4111111111111111\n\
                 def connect(url \\\\ \"postgres://admin:#{user}:hunter2@db\", port \\\\ 8080), do: {url, port, ~s(sk_live_sigil), 'sk_live_chars'}\n\
                 end\n",
                &["defmodule Config", "def connect(", "port \\\\ 8080"],
            ),
            Grammar::Haskell => (
                "module Config where\n\
                 stripeSecret :: String\n\
                 stripeSecret = \"sk_live_51HvSecretValue\"\n\
                 account :: Integer\n\
                 account = 4111111111111111\n\
                 connect :: String -> Int -> IO ()\n\
                 connect url port = dial url \"postgres://admin:hunter2@db\" (port + 8080) 'x'\n",
                &["stripeSecret", "account", "connect url port", "8080"],
            ),
            Grammar::Zig => (
                "const stripe_secret = \"sk_live_51HvSecretValue\";\n\
                 const key =\n    \\\\-----BEGIN KEY-----\n    \\\\hunter2\n;\n\
                 const account: u64 = 4111111111111111;\n\
                 pub fn connect(url: []const u8, port: u16) void { dial(url, \"postgres://admin:hunter2@db\", port + 8080, 'x'); }\n",
                &["stripe_secret", "account", "pub fn connect(", "8080"],
            ),
            Grammar::OCaml => (
                "let stripe_secret = \"sk_live_51HvSecretValue\"\n\
                 let database_url = {|postgres://admin:hunter2@db|}\n\
                 let key = \"-----BEGIN KEY-----\\n\\\nhunter2\"\n\
                 let account = 4111111111111111\n\
                 let connect ?(port = 8080) url = dial url \"sk_live_inline\" port\n",
                &["let connect", "8080"],
            ),
            Grammar::OCamlInterface => (
                "val stripe_secret : string\n\
                 external connect : string -> int -> unit = \"sk_live_external_symbol\"\n\
                 val port : int [@@default 8080]\n\
                 module type POOL = sig val size : int end\n",
                &["external connect", "POOL"],
            ),
            Grammar::Hcl => (
                "variable \"stripe_secret\" {\n  default = \"sk_live_51HvSecretValue\"\n}\n\
                 locals {\n\
                 database_url = \"postgres://admin:${var.user}:hunter2@db\"\n\
                 key = <<EOT\n-----BEGIN KEY-----\nhunter2\nEOT\n\
                 account = 4111111111111111\n\
                 port = 8080\n\
                 }\n\
                 resource \"aws_instance\" \"web\" {\n  user_data = \"sk_live_inline\"\n}\n",
                &[
                    "variable \"stripe_secret\"",
                    "database_url",
                    "port = 8080",
                    "resource \"aws_instance\" \"web\"",
                ],
            ),
            Grammar::R => (
                "stripe_secret <- \"sk_live_51HvSecretValue\"\n\
                 database_url <- r\"(postgres://admin:hunter2@db)\"\n\
                 account <- 4111111111111111\n\
                 connect <- function(url = 'postgres://admin:hunter2@db', port = 8080) dial(url, port)\n",
                &["connect <- function(", "port = 8080"],
            ),
            Grammar::Julia => (
                "const STRIPE_SECRET = \"sk_live_51HvSecretValue\"\n\
                 const DATABASE_URL = raw\"postgres://admin:hunter2@db\"\n\
                 const KEY = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 const ACCOUNT = 4111111111111111\n\
                 function connect(url = \"postgres://$(user):hunter2@db\"; port = 8080)\n    dial(url, port, 'x')\nend\n",
                &[
                    "STRIPE_SECRET",
                    "DATABASE_URL",
                    "ACCOUNT",
                    "function connect(",
                    "port = 8080",
                ],
            ),
            Grammar::Elm => (
                "module Config exposing (..)\n\
                 stripeSecret : String\n\
                 stripeSecret = \"sk_live_51HvSecretValue\"\n\
                 key = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 account = 4111111111111111\n\
                 connect url = dial url \"postgres://admin:hunter2@db\" 8080 'x'\n",
                &["stripeSecret", "account", "connect url", "8080"],
            ),
            Grammar::Solidity => (
                "contract Config {\n\
                 string constant STRIPE_SECRET = \"sk_live_51HvSecretValue\";\n\
                 bytes constant KEY = hex\"4111111111111111\";\n\
                 uint256 constant ACCOUNT = 4111111111111111;\n\
                 function connect(string memory url) public returns (uint) { emit Dial(unicode\"sk_live_unicode\", 8080); return 8080; }\n\
                 }\n",
                &["contract Config", "function connect(", "8080"],
            ),
            Grammar::Nix => (
                "{ pkgs, ... }:\n\
                 let\n\
                 stripeSecret = \"sk_live_51HvSecretValue\";\n\
                 databaseUrl = \"postgres://admin:${user}:hunter2@db\";\n\
                 key = ''\n-----BEGIN KEY-----\nhunter2\n'';\n\
                 account = 4111111111111111;\n\
                 mirror = https://admin:hunter2@mirror.example/nix;\n\
                 connect = { url ? \"sk_live_default\", port ? 8080 }: dial url port 'x';\n\
                 in { inherit connect; }\n",
                &[
                    "stripeSecret",
                    "databaseUrl",
                    "account",
                    "mirror",
                    "connect = { url ?",
                    "8080",
                ],
            ),
            Grammar::Toml => (
                "stripe_secret = \"sk_live_51HvSecretValue\"\n\
                 [database]\n\
                 url = 'postgres://admin:hunter2@db'\n\
                 key = \"\"\"\n-----BEGIN KEY-----\nhunter2\n\"\"\"\n\
                 account = 4111111111111111\n\
                 port = 8080\n\
                 [[mirrors]]\n\
                 auth = { user = \"admin\", token = \"sk_live_inline\" }\n",
                &[
                    "stripe_secret",
                    "[database]",
                    "url",
                    "account",
                    "port = 8080",
                    "[[mirrors]]",
                    "auth = { user",
                ],
            ),
            Grammar::Yaml => (
                "stripe_secret: sk_live_51HvSecretValue\n\
                 database:\n  url: \"postgres://admin:hunter2@db\"\n\
                 \x20 key: |\n    -----BEGIN KEY-----\n    hunter2\n\
                 \x20 account: 4111111111111111\n\
                 \x20 port: 8080\n\
                 mirrors:\n  - token: 'sk_live_item'\n  - [sk_live_flow, 8080]\n\
                 auth: {user: admin, token: sk_live_inline}\n",
                &[
                    "stripe_secret",
                    "database:",
                    "url",
                    "key: ",
                    "account",
                    "port: 8080",
                    "token",
                    "auth: {user",
                ],
            ),
        }
    }

    /// Every line the map could show of `src`'s definitions.
    fn shown(lang: Grammar, src: &str) -> String {
        let tags = extract(lang, src.as_bytes());
        (0..tags.line_index.len() as u32)
            .map(|i| tags.shown_line(src.as_bytes(), i) + "\n")
            .collect()
    }

    #[test]
    fn every_language_elides_its_strings_and_numbers() {
        for &lang in Grammar::VARIANTS {
            let (src, names) = snippet(lang);
            let lines = shown(lang, src);
            for secret in SECRETS {
                assert!(
                    !lines.contains(secret),
                    "{}: {secret} in\n{lines}",
                    lang.name()
                );
            }
            for name in names {
                assert!(
                    lines.contains(name),
                    "{}: no {name} in\n{lines}",
                    lang.name()
                );
            }
            assert!(lines.contains(ELIDED), "{}:\n{lines}", lang.name());
        }
    }

    /// Every line of `src`, as the map would show it if every line were a definition's:
    /// what the literal query finds wherever the tag query shows a line.
    fn every_line(lang: Grammar, src: &str) -> String {
        let mut parser = Parser::new();
        parser.set_language(&lang.tree_sitter()).unwrap();
        let tree = parser.parse(src, None).unwrap();
        let mut lines = vec![(0u32, 0u32)];
        for (i, _) in src.match_indices('\n') {
            lines.push((lines.len() as u32, i as u32 + 1));
        }
        let literals = shown_literals(&lang.tag_query().literals, &tree, src.as_bytes(), &lines);
        lines
            .iter()
            .map(|&(_, start)| line_text(src.as_bytes(), start, &literals) + "\n")
            .collect()
    }

    /// Every kind of string the snippets hold (raw, multi-line, heredoc, interpolated,
    /// verbatim, word arrays) and every long number is elided on every line, whether
    /// or not the language's tag query shows that line.
    #[test]
    fn every_kind_of_literal_is_found_on_every_line() {
        for &lang in Grammar::VARIANTS {
            let (src, _) = snippet(lang);
            let lines = every_line(lang, src);
            for secret in SECRETS {
                assert!(
                    !lines.contains(secret),
                    "{}: {secret} in\n{lines}",
                    lang.name()
                );
            }
            assert!(
                lines.contains("8080"),
                "{}: short numbers stay\n{lines}",
                lang.name()
            );
        }
    }

    /// A file mid-edit: a string that never closes is no literal node, only a quote in
    /// the parser's error; what follows it on the line is elided all the same.
    #[test]
    fn an_unclosed_string_is_elided_to_the_end_of_its_line() {
        for (lang, src) in [
            (Grammar::Python, "KEY = \"sk_live_abc\ndef f(): pass\n"),
            (Grammar::Python, "def f(a=\"sk_live_abc):\n  pass\n"),
            (Grammar::Rust, "const K: &str = \"sk_live_abc;\nfn f() {}\n"),
            (Grammar::Rust, "fn f() { g(\"sk_live_abc) }\nfn h() {}\n"),
            (
                Grammar::JavaScript,
                "function f(a = 'sk_live_abc) {}\nfunction g() {}\n",
            ),
            (
                Grammar::TypeScript,
                "export const K = 'sk_live_abc\nexport function g() {}\n",
            ),
            (
                Grammar::Tsx,
                "export const K = `sk_live_abc\nexport function g() {}\n",
            ),
            (Grammar::Go, "func F() { g(\"sk_live_abc) }\nfunc G() {}\n"),
            (
                Grammar::Java,
                "class A { String K = \"sk_live_abc; void f() {} }\n",
            ),
            (
                Grammar::C,
                "int f() { return g(\"sk_live_abc); }\nint h() {}\n",
            ),
            (
                Grammar::Cpp,
                "int f() { return g(\"sk_live_abc); }\nint h() {}\n",
            ),
            (Grammar::Ruby, "def f(a = 'sk_live_abc)\nend\ndef g; end\n"),
            (
                Grammar::CSharp,
                "class A { string K = \"sk_live_abc; void F() {} }\n",
            ),
            (Grammar::Bash, "f() { g \"sk_live_abc; }\ng() { :; }\n"),
            (
                Grammar::Php,
                "<?php\nfunction f($a = 'sk_live_abc) {}\nfunction g() {}\n",
            ),
            (
                Grammar::Kotlin,
                "fun f() { g(\"sk_live_abc) }\nfun h() {}\n",
            ),
            (Grammar::Scala, "def f() = g(\"sk_live_abc)\ndef h() = 1\n"),
            (
                Grammar::Swift,
                "func f() { g(\"sk_live_abc) }\nfunc h() {}\n",
            ),
            (
                Grammar::Dart,
                "void f() { g('sk_live_abc); }\nvoid h() {}\n",
            ),
            (
                Grammar::Lua,
                "function f() g('sk_live_abc) end\nfunction h() end\n",
            ),
            (
                Grammar::Elixir,
                "def f(), do: g(\"sk_live_abc)\ndef h, do: 1\n",
            ),
            (Grammar::Haskell, "f = g \"sk_live_abc\nh = 1\n"),
            (
                Grammar::Zig,
                "fn f() void { g(\"sk_live_abc); }\nfn h() void {}\n",
            ),
            (Grammar::OCaml, "let f x = g \"sk_live_abc x\nlet h y = y\n"),
            (
                Grammar::OCamlInterface,
                "external f : int -> int = \"sk_live_abc\nval h : int\n",
            ),
            (
                Grammar::Hcl,
                "variable \"x\" {\n  default = \"sk_live_abc\n}\n",
            ),
            (
                Grammar::R,
                "f <- function(a = \"sk_live_abc) a\nh <- function() 1\n",
            ),
            (
                Grammar::Julia,
                "function f() g(\"sk_live_abc) end\nfunction h() end\n",
            ),
            (Grammar::Elm, "f = g \"sk_live_abc\nh = 1\n"),
            (
                Grammar::Solidity,
                "contract A { function f() public { g(\"sk_live_abc); } }\n",
            ),
            (Grammar::Nix, "{\n  f = g \"sk_live_abc;\n  h = 1;\n}\n"),
            (Grammar::Toml, "f = \"sk_live_abc\nh = 1\n"),
            (Grammar::Yaml, "f: \"sk_live_abc\nh: 1\n"),
        ] {
            for lines in [shown(lang, src), every_line(lang, src)] {
                assert!(
                    !lines.contains("sk_live"),
                    "{}: {src:?}\n{lines}",
                    lang.name()
                );
            }
        }
        assert_eq!(
            shown(Grammar::Rust, "fn f() { g(\"sk_live_abc) }\nfn h() {}\n"),
            "fn f() { g(\"…\nfn h() {}\n"
        );
    }

    /// The same for every multi-line, raw and heredoc form: one that never closes
    /// keeps its opening and shows nothing after it on its line.
    #[test]
    fn an_unclosed_multi_line_or_raw_string_is_elided_to_the_end_of_its_line() {
        let mut leaks = Vec::new();
        for (lang, src) in [
            (
                Grammar::Rust,
                "pub const K: &str = r#\"sk_live_abc\npub fn f() {}\n",
            ),
            (
                Grammar::Rust,
                "pub const K: &str = r\"sk_live_abc\npub fn f() {}\n",
            ),
            (
                Grammar::Rust,
                "pub const K: &[u8] = br##\"sk_live_abc\npub fn f() {}\n",
            ),
            (Grammar::Kotlin, "val k = \"\"\"sk_live_abc\nfun f() = 1\n"),
            (
                Grammar::Kotlin,
                "fun f() = g(\"\"\"sk_live_abc)\nfun h() = 1\n",
            ),
            (Grammar::Scala, "val k = \"\"\"sk_live_abc\ndef f() = 1\n"),
            (Grammar::Scala, "val k = s\"\"\"sk_live_abc\ndef f() = 1\n"),
            (Grammar::Julia, "const K = \"\"\"sk_live_abc\nf() = 1\n"),
            (Grammar::Julia, "const K = raw\"sk_live_abc\nf() = 1\n"),
            (Grammar::Python, "K = \"\"\"sk_live_abc\ndef f(): pass\n"),
            (Grammar::Python, "K = r'''sk_live_abc\ndef f(): pass\n"),
            (Grammar::Swift, "let k = \"\"\"sk_live_abc\nfunc f() {}\n"),
            (Grammar::Swift, "let k = #\"sk_live_abc\nfunc f() {}\n"),
            (Grammar::Dart, "var k = '''sk_live_abc\nvoid f() {}\n"),
            (Grammar::Dart, "var k = r'sk_live_abc\nvoid f() {}\n"),
            (
                Grammar::Cpp,
                "const char* k = R\"(sk_live_abc\nint f() { return 1; }\n",
            ),
            (
                Grammar::CSharp,
                "class C { string K = @\"sk_live_abc\nvoid F() {} }\n",
            ),
            (
                Grammar::CSharp,
                "class C { string K = \"\"\"sk_live_abc\nvoid F() {} }\n",
            ),
            (
                Grammar::Go,
                "package m\nvar K = `sk_live_abc\nfunc F() {}\n",
            ),
            (Grammar::Ruby, "K = <<~EOS\nsk_live_abc\ndef f; end\n"),
            (Grammar::Bash, "k=$'sk_live_abc\nf() { :; }\n"),
            (
                Grammar::Elixir,
                "defmodule M do\n  @k ~s(sk_live_abc\n  def f, do: 1\nend\n",
            ),
            (
                Grammar::Elixir,
                "defmodule M do\n  @k \"\"\"sk_live_abc\n  def f, do: 1\nend\n",
            ),
            (Grammar::Lua, "K = [[sk_live_abc\nfunction f() end\n"),
            (Grammar::Lua, "K = [==[sk_live_abc\nfunction f() end\n"),
            (
                Grammar::Zig,
                "const k = \"sk_live_abc\npub fn f() void {}\n",
            ),
            (
                Grammar::JavaScript,
                "const k = `sk_live_abc\nfunction f() {}\n",
            ),
            (
                Grammar::TypeScript,
                "const k = `sk_live_abc\nfunction f() {}\n",
            ),
            (Grammar::OCaml, "let k = {|sk_live_abc\nlet f () = 1\n"),
            (Grammar::Elm, "k = \"\"\"sk_live_abc\nf = 1\n"),
            (Grammar::Haskell, "k = \"sk_live_abc\nf = 1\n"),
        ] {
            let lines = shown(lang, src) + &every_line(lang, src);
            if lines.contains("sk_live") {
                leaks.push(format!("{}: {src:?}\n{lines}", lang.name()));
            }
        }
        assert_eq!(
            shown(
                Grammar::Rust,
                "pub const K: &str = r#\"sk_live_abc\npub fn f() {}\n"
            ),
            "pub const K: &str = r#\"…\n"
        );
        assert_eq!(
            shown(Grammar::Kotlin, "val k = \"\"\"sk_live_abc\nfun f() = 1\n"),
            "val k = \"\"\"…\nfun f() = 1\n"
        );
        assert_eq!(
            every_line(Grammar::Lua, "K = [==[sk_live_abc\nfunction f() end\n"),
            "K = [==[…\nfunction f() end\n\n"
        );
        // A heredoc's content starts on the next line: the map shows no line of it.
        let php = "<?php\n$k = <<<EOT\nsk_live_abc\nfunction f() {}\n";
        assert!(!shown(Grammar::Php, php).contains("sk_live"));
        assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    }

    #[test]
    fn a_literal_keeps_its_delimiters_and_a_short_one_stays() {
        let src = "const A: &str = \"sk_live_51HvSecretValue\";\nconst B: &str = r#\"raw secret\"#;\nconst C: &str = \"utf8\";\nconst D: u32 = 65536;\nconst E: [&str; 2] = [\"\", \"x\"];\n";
        assert_eq!(
            shown(Grammar::Rust, src),
            "const A: &str = \"…\";\nconst B: &str = r#\"…\"#;\nconst C: &str = \"utf8\";\nconst D: u32 = …;\nconst E: [&str; 2] = [\"\", \"x\"];\n"
        );
        let py = "KEY = f'''sk_live\nmore'''\nN = 1_000_000\n";
        assert_eq!(shown(Grammar::Python, py), "KEY = f'''…\nN = …\n");
        assert_eq!(
            shown(
                Grammar::Cpp,
                "int f(int n = 1'000'000) { return g(u8R\"x(secret)x\"); }\n"
            ),
            "int f(int n = …) { return g(u8R\"…\"); }\n"
        );
    }

    /// A multi-line literal shows only its opening on the definition's line, and a
    /// line that starts inside one shows only its end.
    #[test]
    fn a_literal_across_lines_is_elided_on_each_line_it_crosses() {
        let src = "x = \"\"\"one\ntwo\"\"\"; def f(a='sk_live_value'): pass\n";
        let tags = extract(Grammar::Python, src.as_bytes());
        let literals = &tags.literals;
        assert_eq!(line_text(src.as_bytes(), 0, literals), "x = \"\"\"…");
        let second = src.find("two").unwrap() as u32;
        assert_eq!(
            line_text(src.as_bytes(), second, literals),
            "…\"\"\"; def f(a='…'): pass"
        );
    }

    proptest::proptest! {
        // Failures are kept with the integration tests' (the crate root holds only
        // what the project is made of).
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/map_literals.txt",
                ),
            )),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any text in a string on a definition's line, in any language's snippet
        /// shape, never panics and never shows more than a few of its characters.
        #[test]
        fn any_string_content_is_elided(secret in "(\\PC|\r|\t){5,40}", lang in 0..Grammar::VARIANTS.len()) {
            let lang = Grammar::VARIANTS[lang];
            let quoted = secret.replace(['"', '\\', '\n', '\r'], "x");
            let src = match lang {
                Grammar::Python | Grammar::Ruby => format!("def f(a=\"{quoted}\"):\n  pass\n"),
                Grammar::Go => format!("func F() {{ g(\"{quoted}\") }}\n"),
                Grammar::C | Grammar::Cpp => format!("int f() {{ return g(\"{quoted}\"); }}\n"),
                Grammar::Java | Grammar::CSharp => format!("class A {{ void f() {{ g(\"{quoted}\"); }} }}\n"),
                Grammar::Rust => format!("fn f() {{ g(\"{quoted}\") }}\n"),
                Grammar::Bash => format!("f() {{ g \"{quoted}\"; }}\n"),
                Grammar::Php => format!("<?php function f() {{ g(\"{quoted}\"); }}\n"),
                Grammar::Kotlin => format!("fun f() {{ g(\"{quoted}\") }}\n"),
                Grammar::Scala => format!("def f() = g(\"{quoted}\")\n"),
                Grammar::Swift => format!("func f() {{ g(\"{quoted}\") }}\n"),
                Grammar::Dart => format!("void f() {{ g(\"{quoted}\"); }}\n"),
                Grammar::Lua => format!("function f() g(\"{quoted}\") end\n"),
                Grammar::Elixir => format!("def f(), do: g(\"{quoted}\")\n"),
                Grammar::Haskell => format!("f = g \"{quoted}\"\n"),
                Grammar::Zig => format!("fn f() void {{ g(\"{quoted}\"); }}\n"),
                Grammar::OCaml => format!("let f x = g \"{quoted}\" x\n"),
                Grammar::OCamlInterface => format!("external f : int -> int = \"{quoted}\"\n"),
                Grammar::Hcl => format!("locals {{\n  f = \"{quoted}\"\n}}\n"),
                Grammar::R => format!("f <- function() g(\"{quoted}\")\n"),
                Grammar::Elm => format!("f = g \"{quoted}\"\n"),
                Grammar::Julia => format!("function f() g(\"{quoted}\") end\n"),
                Grammar::Solidity => format!("function f() {{ g(\"{quoted}\"); }}\n"),
                Grammar::Nix => format!("{{ f = g \"{quoted}\"; }}\n"),
                Grammar::Toml => format!("f = \"{quoted}\"\n"),
                Grammar::Yaml => format!("f: \"{quoted}\"\n"),
                _ => format!("function f() {{ g(\"{quoted}\") }}\n"),
            };
            let lines = shown(lang, &src);
            let visible: String = quoted.chars().filter(|c| !c.is_whitespace()).collect();
            if visible.chars().count() > 2 * SHOWN_LITERAL_CHARS {
                proptest::prop_assert!(!lines.contains(&visible), "{}: {src:?} -> {lines:?}", lang.name());
            }
        }
    }
}
