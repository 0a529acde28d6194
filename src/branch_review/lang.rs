//! What kind of file a path is for a review: its language (from the table in
//! `crate::languages`; it orders a compressed review), the function headers of each
//! language, and whether a file is noise a compressed review skips.

pub use crate::languages::Language;
pub use crate::noise::Noise;

/// Whether `line` opens a function, method, class or similar scope in `lang`: a cheap
/// keyword test after stripping modifiers (`pub(crate)`, `export default async`, ...),
/// plus, for C-family languages, "a call-shaped line ending in `{`". Languages without
/// rules (markup, data, `Other`) have no headers: git's fallback of "any line starting
/// at column 0" would make nearly every line of a text file one.
pub(crate) fn is_header(lang: Language, line: &str) -> bool {
    let trimmed = line.trim();
    let Some(rules) = rules(lang).filter(|_| !trimmed.is_empty()) else {
        return false;
    };
    let rest = strip_modifiers(trimmed, rules.modifiers);
    let first = rest
        .split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == ':')
        .next()
        .unwrap_or("");
    if rules.keywords.contains(&first) {
        return true;
    }
    rules.call_shaped && call_shaped(rest, first)
}

struct Rules {
    modifiers: &'static [&'static str],
    keywords: &'static [&'static str],
    /// `name(args) {` and `x = (args) => {` open a scope.
    call_shaped: bool,
}

fn rules(lang: Language) -> Option<&'static Rules> {
    use Language::*;
    const C_LIKE_MODS: &[&str] = &[
        "public",
        "private",
        "protected",
        "internal",
        "static",
        "final",
        "abstract",
        "sealed",
        "open",
        "override",
        "virtual",
        "async",
        "partial",
        "inline",
        "suspend",
        "data",
        "export",
        "default",
        "declare",
        "extern",
        "const",
        "unsafe",
        "readonly",
        "synchronized",
        "native",
        "fileprivate",
        "mutating",
    ];
    const C_LIKE_KEYWORDS: &[&str] = &[
        "class",
        "interface",
        "enum",
        "record",
        "struct",
        "union",
        "namespace",
        "function",
        "function*",
        "fun",
        "func",
        "def",
        "object",
        "trait",
        "impl",
        "extension",
        "protocol",
        "template",
        "module",
    ];
    static RUST: Rules = Rules {
        modifiers: &["pub", "async", "const", "unsafe", "extern", "default"],
        keywords: &[
            "fn",
            "impl",
            "struct",
            "enum",
            "trait",
            "mod",
            "union",
            "macro_rules!",
        ],
        call_shaped: false,
    };
    static PYTHON: Rules = Rules {
        modifiers: &["async"],
        keywords: &["def", "class"],
        call_shaped: false,
    };
    static RUBY: Rules = Rules {
        modifiers: &[],
        keywords: &["def", "class", "module"],
        call_shaped: false,
    };
    static ELIXIR: Rules = Rules {
        modifiers: &[],
        keywords: &[
            "def",
            "defp",
            "defmodule",
            "defmacro",
            "defimpl",
            "defprotocol",
        ],
        call_shaped: false,
    };
    static LUA: Rules = Rules {
        modifiers: &["local"],
        keywords: &["function"],
        call_shaped: false,
    };
    static SHELL: Rules = Rules {
        modifiers: &[],
        keywords: &["function"],
        call_shaped: true,
    };
    static GO: Rules = Rules {
        modifiers: &[],
        keywords: &["func", "type"],
        call_shaped: false,
    };
    static C_LIKE: Rules = Rules {
        modifiers: C_LIKE_MODS,
        keywords: C_LIKE_KEYWORDS,
        call_shaped: true,
    };
    match lang {
        Rust => Some(&RUST),
        Python => Some(&PYTHON),
        Ruby => Some(&RUBY),
        Elixir => Some(&ELIXIR),
        Lua => Some(&LUA),
        Shell => Some(&SHELL),
        Go => Some(&GO),
        JavaScript | TypeScript | Java | Kotlin | Scala | C | Cpp | CSharp | Php | Swift | Dart
        | Zig => Some(&C_LIKE),
        Haskell | OCaml | Hcl | R | Julia | Elm | Solidity | Nix | Sql | Html | Css | Other => None,
    }
}

/// Drops leading modifier words, including Rust's `pub(crate)` and `extern "C"`.
fn strip_modifiers<'a>(mut rest: &'a str, modifiers: &[&str]) -> &'a str {
    loop {
        let word_end = rest
            .find(|c: char| c.is_whitespace() || c == '(')
            .unwrap_or(rest.len());
        let (word, mut after) = rest.split_at_checked(word_end).unwrap_or((rest, ""));
        if !modifiers.contains(&word) {
            return rest;
        }
        if after.starts_with('(') {
            // pub(crate), pub(in path)
            match after.split_once(')') {
                Some((_, closed)) => after = closed,
                None => return rest,
            }
        }
        after = after.trim_start();
        if let Some(abi) = after.strip_prefix('"') {
            // extern "C"
            after = abi
                .split_once('"')
                .map_or(after, |(_, tail)| tail.trim_start());
        }
        if after.len() == rest.len() {
            return rest;
        }
        rest = after;
    }
}

/// `int main(void) {`, `foo(a, b) {`, `const f = (x) => {`: a scope opened by a
/// call-shaped line, unless it is a control statement.
fn call_shaped(rest: &str, first: &str) -> bool {
    const CONTROL: &[&str] = &[
        "if", "else", "for", "foreach", "while", "do", "switch", "case", "catch", "try", "return",
        "with", "when", "using", "lock", "match", "loop", "until", "unless", "elif", "new",
        "throw", "await", "yield", "}",
    ];
    let body = rest.trim_end();
    if !body.ends_with('{') || CONTROL.contains(&first) || first.starts_with('}') {
        return false;
    }
    let Some((head, _)) = body.split_once('(') else {
        return false;
    };
    body.contains("=>") || !head.contains('=')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(Language::of("src/main.rs"), Language::Rust);
        assert_eq!(Language::of("web/App.TSX"), Language::TypeScript);
        assert_eq!(Language::of("README.md"), Language::Other);
        assert_eq!(Language::of(".bashrc"), Language::Other);
        assert_eq!(Language::of("Makefile"), Language::Other);
    }

    #[test]
    fn headers_per_language() {
        use Language::*;
        let yes = [
            (Rust, "    pub(crate) async fn run(&self) {"),
            (Rust, "impl<T> Foo for Bar<T> {"),
            (Rust, "pub unsafe extern \"C\" fn f() {"),
            (Python, "    async def fetch(self):"),
            (Python, "class Parser(Base):"),
            (Go, "func (s *Server) Serve() error {"),
            (JavaScript, "export default async function main() {"),
            (JavaScript, "  render(props) {"),
            (TypeScript, "const handler = (req: Req) => {"),
            (
                Java,
                "    public static int parse(String s) throws IOException {",
            ),
            (C, "static int parse_args(int argc, char **argv) {"),
            (Ruby, "  def call(env)"),
        ];
        for (lang, line) in yes {
            assert!(is_header(lang, line), "{lang:?}: {line}");
        }
        let no = [
            (Rust, "    let x = f(y);"),
            (Rust, "const LIMIT: usize = 3;"),
            (Python, "    return fn(x)"),
            (JavaScript, "  if (x) {"),
            (JavaScript, "  } else {"),
            (Java, "        for (int i = 0; i < n; i++) {"),
            (C, "    x = foo(1);"),
            (Go, "\tif err != nil {"),
            (Other, "section:"),
        ];
        for (lang, line) in no {
            assert!(!is_header(lang, line), "{lang:?}: {line}");
        }
    }
}
