//! Parsing and matching, case by case, on the habits real models have: fences or none,
//! decorated or missing file names, indentation drift, blank lines, elision, new files,
//! several files, first occurrence only, CRLF, unicode.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use tern::edit::{EditFormat, FileSet, Problem, Proposed, Workspace, propose};

struct Run {
    _dir: tempfile::TempDir,
    out: Proposed,
}

impl Run {
    fn proposed(&self, path: &str) -> &str {
        self.out
            .proposal
            .file(Path::new(path))
            .unwrap_or_else(|| panic!("no proposal for {path}; errors: {:?}", self.out.errors))
            .proposed()
    }

    fn clean(&self) -> &Self {
        assert!(
            self.out.errors.is_empty(),
            "unexpected errors: {:#?}",
            self.out.errors
        );
        self
    }

    fn problem(&self, block: usize) -> &Problem {
        &self
            .out
            .errors
            .iter()
            .find(|e| e.block == block)
            .unwrap_or_else(|| panic!("no error for block {block}: {:#?}", self.out.errors))
            .problem
    }

    fn untouched(&self, path: &str) -> bool {
        self.out.proposal.file(Path::new(path)).is_none()
    }
}

fn run(format: EditFormat, files: &[(&str, &str)], reply: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    let ws = Workspace::discover(dir.path()).unwrap();
    let chat: Vec<PathBuf> = files.iter().map(|(p, _)| PathBuf::from(p)).collect();
    let out = propose(&ws, reply, format, &FileSet::new(chat, vec![]));
    Run { _dir: dir, out }
}

fn eb(files: &[(&str, &str)], reply: &str) -> Run {
    run(EditFormat::Editblock, files, reply)
}

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

// ---------------------------------------------------------------- editblock: structure

#[test]
fn bare_block_without_fence() {
    let r = eb(
        &[("calc.py", CALC)],
        "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n",
    );
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

#[test]
fn block_inside_language_fence_with_prose_around() {
    let reply = "I'll swap the operands.\n\ncalc.py\n```python\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n```\n\nThat's it!\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

#[test]
fn decorated_filename_lines() {
    for name_line in [
        "### calc.py",
        "**calc.py**",
        "`calc.py`:",
        "File: calc.py",
        "- `calc.py`",
    ] {
        let reply = format!(
            "{name_line}\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n```\n"
        );
        let r = eb(&[("calc.py", CALC), ("other.py", "x\n")], &reply);
        assert_eq!(
            r.clean().proposed("calc.py"),
            CALC.replace("a - b", "b - a"),
            "{name_line}"
        );
    }
}

#[test]
fn filename_in_the_fence_info_string() {
    for fence in [
        "```python:calc.py",
        "```calc.py",
        "```python title=\"calc.py\"",
    ] {
        let reply = format!(
            "{fence}\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n```\n"
        );
        let r = eb(&[("calc.py", CALC), ("other.py", "x\n")], &reply);
        assert_eq!(
            r.clean().proposed("calc.py"),
            CALC.replace("a - b", "b - a"),
            "{fence}"
        );
    }
}

#[test]
fn filename_mentioned_in_prose_before_the_fence() {
    let reply = "In `calc.py`, flip the subtraction:\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n```\n";
    let r = eb(&[("calc.py", CALC), ("other.py", "x\n")], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a - b", "b - a")
    );
}

#[test]
fn block_without_filename_inherits_the_previous_one() {
    let reply = "calc.py\n```python\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n```\n\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n```\n";
    let r = eb(&[("calc.py", CALC), ("other.py", "x\n")], reply);
    let want = CALC.replace("a + b", "b + a").replace("a - b", "b - a");
    assert_eq!(r.clean().proposed("calc.py"), want);
}

#[test]
fn missing_filename_with_several_chat_files_names_the_block() {
    let reply = "```python\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n```\n";
    let r = eb(&[("calc.py", CALC), ("other.py", "x\n")], reply);
    assert_eq!(r.problem(1), &Problem::MissingFilename);
    assert!(r.untouched("calc.py"));
}

#[test]
fn missing_filename_with_one_chat_file_means_that_file() {
    let reply = "<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

#[test]
fn markers_of_five_to_nine_characters() {
    let reply =
        "calc.py\n<<<<< SEARCH\n    return a + b\n=========\n    return b + a\n>>>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a + b", "b + a")
    );
    let too_short =
        "calc.py\n<<<< SEARCH\n    return a + b\n====\n    return b + a\n>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], too_short);
    assert_eq!(r.out.blocks, 0);
}

#[test]
fn legacy_original_updated_markers_and_indented_markers() {
    let reply = "calc.py\n  <<<<<<< ORIGINAL\n    return a + b\n  =======\n    return b + a\n  >>>>>>> UPDATED  \n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

#[test]
fn unclosed_block_is_an_error_naming_the_line() {
    let reply = "calc.py\n<<<<<<< SEARCH\n    return a + b\n";
    let r = eb(&[("calc.py", CALC)], reply);
    match r.problem(1) {
        Problem::Malformed(why) => {
            assert!(why.contains("reply line 2"), "{why}");
            assert!(why.contains("======="), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn block_missing_its_replace_marker_does_not_swallow_the_next_block() {
    let reply = "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n\ncalc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert!(matches!(r.problem(1), Problem::Malformed(why) if why.contains(">>>>>>> REPLACE")));
    assert_eq!(r.proposed("calc.py"), CALC.replace("a - b", "b - a"));
}

#[test]
fn stray_replace_marker_is_reported() {
    let reply = "calc.py\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert!(matches!(r.problem(1), Problem::Malformed(why) if why.contains("no `<<<<<<< SEARCH`")));
}

#[test]
fn four_backtick_fence_around_markdown_with_fences() {
    let readme = "# Tool\n\n```sh\nmake\n```\n";
    let reply = "README.md\n````markdown\n<<<<<<< SEARCH\n```sh\nmake\n```\n=======\n```sh\nmake install\n```\n>>>>>>> REPLACE\n````\n";
    let r = eb(&[("README.md", readme)], reply);
    assert_eq!(
        r.clean().proposed("README.md"),
        readme.replace("make\n", "make install\n")
    );
}

#[test]
fn shell_fence_is_a_suggestion_never_an_edit() {
    let reply = "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n\nThen run:\n```bash\npip install -e .\npytest -q\n```\n";
    let r = eb(&[("calc.py", CALC)], reply);
    r.clean();
    assert_eq!(r.out.shell.len(), 1);
    assert_eq!(r.out.shell[0].language, "bash");
    assert_eq!(r.out.shell[0].commands, "pip install -e .\npytest -q");
}

#[test]
fn shell_fence_holding_a_block_edits_the_script() {
    let script = "#!/bin/sh\necho hi\n";
    let reply =
        "run.sh\n```bash\n<<<<<<< SEARCH\necho hi\n=======\necho hello\n>>>>>>> REPLACE\n```\n";
    let r = eb(&[("run.sh", script)], reply);
    assert_eq!(r.clean().proposed("run.sh"), "#!/bin/sh\necho hello\n");
    assert!(r.out.shell.is_empty());
}

#[test]
fn several_files_in_one_reply() {
    let reply = "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n\nmain.py\n<<<<<<< SEARCH\nprint(add(1, 2))\n=======\nprint(add(2, 1))\n>>>>>>> REPLACE\n";
    let r = eb(
        &[
            ("calc.py", CALC),
            ("main.py", "from calc import add\nprint(add(1, 2))\n"),
        ],
        reply,
    );
    r.clean();
    assert_eq!(r.proposed("calc.py"), CALC.replace("a + b", "b + a"));
    assert_eq!(
        r.proposed("main.py"),
        "from calc import add\nprint(add(2, 1))\n"
    );
    let order: Vec<&Path> = r.out.proposal.files().iter().map(|f| f.path()).collect();
    assert_eq!(order, [Path::new("calc.py"), Path::new("main.py")]);
}

#[test]
fn basename_resolves_to_the_chat_file() {
    let reply =
        "calc.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n";
    let r = eb(
        &[("src/pkg/calc.py", CALC), ("src/pkg/other.py", "x\n")],
        reply,
    );
    assert_eq!(
        r.clean().proposed("src/pkg/calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

#[test]
fn misspelt_path_resolves_fuzzily() {
    let reply = "src/pkg/clac.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n";
    let r = eb(
        &[("src/pkg/calc.py", CALC), ("src/pkg/other.py", "x\n")],
        reply,
    );
    assert_eq!(
        r.clean().proposed("src/pkg/calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

#[test]
fn crlf_reply_parses_like_lf() {
    let reply = "calc.py\r\n```python\r\n<<<<<<< SEARCH\r\n    return a + b\r\n=======\r\n    return b + a\r\n>>>>>>> REPLACE\r\n```\r\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("a + b", "b + a")
    );
}

// ---------------------------------------------------------------- editblock: new files

#[test]
fn empty_search_creates_a_new_file() {
    let reply = "money.py\n```python\n<<<<<<< SEARCH\n=======\ndef cents(x):\n    return round(x * 100)\n>>>>>>> REPLACE\n```\n";
    let r = eb(&[("calc.py", CALC)], reply);
    let f = r.clean().out.proposal.file(Path::new("money.py")).unwrap();
    assert!(f.is_new());
    assert_eq!(f.proposed(), "def cents(x):\n    return round(x * 100)\n");
}

#[test]
fn new_file_in_a_new_directory_with_a_path_like_a_chat_file() {
    let reply = "tests/calc.py\n<<<<<<< SEARCH\n=======\nimport calc\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(r.clean().proposed("tests/calc.py"), "import calc\n");
    assert!(r.untouched("calc.py"));
}

#[test]
fn empty_search_on_an_existing_file_appends() {
    let reply =
        "calc.py\n<<<<<<< SEARCH\n=======\n\ndef mul(a, b):\n    return a * b\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        format!("{CALC}\ndef mul(a, b):\n    return a * b\n")
    );
}

#[test]
fn search_in_a_missing_file_says_how_to_create_it() {
    let reply = "nope.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(r.problem(1), &Problem::FileNotFound);
}

#[test]
fn a_block_can_edit_what_an_earlier_block_created() {
    let reply = "new.py\n<<<<<<< SEARCH\n=======\nA = 1\n>>>>>>> REPLACE\n\nnew.py\n<<<<<<< SEARCH\nA = 1\n=======\nA = 2\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(r.clean().proposed("new.py"), "A = 2\n");
}

// ---------------------------------------------------------------- matching

#[test]
fn first_occurrence_only() {
    let text = "x = 1\ny = 2\nx = 1\n";
    let reply = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 10\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.clean().proposed("a.py"), "x = 10\ny = 2\nx = 1\n");
}

#[test]
fn exact_match_later_beats_a_fuzzy_match_earlier() {
    let text = "    call()\nfn g() {\ncall()\n}\n";
    let reply = "a.rs\n<<<<<<< SEARCH\ncall()\n=======\nother()\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.rs", text)], reply);
    assert_eq!(
        r.clean().proposed("a.rs"),
        "    call()\nfn g() {\nother()\n}\n"
    );
}

#[test]
fn under_indented_search_is_reindented() {
    let text =
        "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n";
    let reply = "a.py\n<<<<<<< SEARCH\nif x:\n    return 1\n=======\nif x:\n    log()\n    return 1\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(
        r.clean().proposed("a.py"),
        "class A:\n    def f(self):\n        if x:\n            log()\n            return 1\n        return 2\n"
    );
}

#[test]
fn over_indented_search_is_outdented() {
    let text = "def f():\n    return 1\n";
    let reply = "a.py\n<<<<<<< SEARCH\n        def f():\n            return 1\n=======\n        def f():\n            return 2\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.clean().proposed("a.py"), "def f():\n    return 2\n");
}

#[test]
fn tab_indented_file_with_a_shallower_tab_search() {
    let text = "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n";
    let reply =
        "a.go\n<<<<<<< SEARCH\nif x {\n\ty()\n}\n=======\nif x {\n\tz()\n}\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.go", text)], reply);
    assert_eq!(
        r.clean().proposed("a.go"),
        "func f() {\n\tif x {\n\t\tz()\n\t}\n}\n"
    );
}

#[test]
fn spaces_for_tabs_do_not_match_but_suggest_the_lines() {
    let text = "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n";
    let reply = "a.go\n<<<<<<< SEARCH\n    if x {\n        y()\n    }\n=======\n    if x {\n        z()\n    }\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.go", text)], reply);
    match r.problem(1) {
        Problem::NoMatch {
            near: Some(near), ..
        } => {
            assert_eq!(near.line, 2);
            assert_eq!(near.text, "\tif x {\n\t\ty()\n\t}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn trailing_whitespace_in_the_file_is_tolerated() {
    let text = "a = 1   \nb = 2\t\n";
    let reply = "a.py\n<<<<<<< SEARCH\na = 1\nb = 2\n=======\na = 1\nb = 3\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    // The line the block keeps keeps the file's spelling; only the replaced one changes.
    assert_eq!(r.clean().proposed("a.py"), "a = 1   \nb = 3\n");
}

#[test]
fn spurious_leading_blank_line_in_search() {
    let text = "a = 1\nb = 2\nc = 3\n";
    let reply = "a.py\n<<<<<<< SEARCH\n\nb = 2\n=======\n\nb = 20\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.clean().proposed("a.py"), "a = 1\nb = 20\nc = 3\n");
}

#[test]
fn spurious_trailing_blank_line_in_search() {
    let text = "a = 1\nb = 2\nc = 3\n";
    let reply = "a.py\n<<<<<<< SEARCH\nb = 2\n\n=======\nb = 20\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.clean().proposed("a.py"), "a = 1\nb = 20\nc = 3\n");
}

#[test]
fn elision_replaces_each_piece() {
    let text = "def f():\n    a = 1\n    b = 2\n    c = 3\n    return a\n";
    let reply = "a.py\n<<<<<<< SEARCH\ndef f():\n...\n    return a\n=======\ndef f(x):\n...\n    return a + x\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(
        r.clean().proposed("a.py"),
        "def f(x):\n    a = 1\n    b = 2\n    c = 3\n    return a + x\n"
    );
}

#[test]
fn elision_piece_matching_twice_is_refused() {
    let text = "x = 1\nreturn x\ny = 2\nreturn x\n";
    let reply = "a.py\n<<<<<<< SEARCH\nx = 1\n...\nreturn x\n=======\nx = 10\n...\nreturn x\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert!(
        matches!(r.problem(1), Problem::Elision(why) if why.contains("2 places")),
        "{:?}",
        r.problem(1)
    );
    assert!(r.untouched("a.py"), "a failed elision must change nothing");
}

#[test]
fn elision_counts_must_agree() {
    let text = "a\nb\nc\n";
    let reply = "a.txt\n<<<<<<< SEARCH\na\n...\nc\n=======\nA\nB\nC\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.txt", text)], reply);
    assert!(matches!(r.problem(1), Problem::Elision(why) if why.contains("same number")));
}

#[test]
fn python_ellipsis_in_the_file_matches_exactly() {
    let text = "class P(Protocol):\n    def f(self) -> int:\n        ...\n";
    let reply = "p.py\n<<<<<<< SEARCH\n    def f(self) -> int:\n        ...\n=======\n    def f(self) -> str:\n        ...\n>>>>>>> REPLACE\n";
    let r = eb(&[("p.py", text)], reply);
    assert_eq!(r.clean().proposed("p.py"), text.replace("int", "str"));
}

#[test]
fn deleting_lines_with_an_empty_replace() {
    let reply =
        "calc.py\n<<<<<<< SEARCH\n\n\ndef sub(a, b):\n    return a - b\n=======\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        "def add(a, b):\n    return a + b\n"
    );
}

#[test]
fn no_match_reports_the_closest_lines() {
    let reply = "calc.py\n<<<<<<< SEARCH\ndef sub(a, b):\n    return a-b\n=======\ndef sub(a, b):\n    return b-a\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    match r.problem(1) {
        Problem::NoMatch {
            near: Some(near), ..
        } => {
            assert_eq!(near.line, 5);
            assert_eq!(near.text, "def sub(a, b):\n    return a - b");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn already_applied_edit_gets_a_hint() {
    let reply =
        "calc.py\n<<<<<<< SEARCH\n    return a * b\n=======\n    return a + b\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert!(
        matches!(r.problem(1), Problem::NoMatch { hint: Some(h), .. } if h.contains("already in the file"))
    );
}

#[test]
fn search_text_in_another_chat_file_gets_a_hint() {
    let reply =
        "calc.py\n<<<<<<< SEARCH\nprint(add(1, 2))\n=======\nprint(add(2, 1))\n>>>>>>> REPLACE\n";
    let r = eb(
        &[("calc.py", CALC), ("main.py", "print(add(1, 2))\n")],
        reply,
    );
    assert!(
        matches!(r.problem(1), Problem::NoMatch { hint: Some(h), .. } if h.contains("main.py"))
    );
}

#[test]
fn lazy_placeholder_comment_is_refused() {
    let reply = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a + b\n=======\ndef add(a, b):\n    # ... existing code ...\n    return a + b\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert!(
        matches!(r.problem(1), Problem::LazyComment { line } if line.contains("existing code"))
    );
}

#[test]
fn unicode_content_matches() {
    let text = "greeting = \"héllo 👋\"\nname = \"世界\"\n";
    let reply =
        "i18n.py\n<<<<<<< SEARCH\nname = \"世界\"\n=======\nname = \"세계\"\n>>>>>>> REPLACE\n";
    let r = eb(&[("i18n.py", text)], reply);
    assert_eq!(
        r.clean().proposed("i18n.py"),
        "greeting = \"héllo 👋\"\nname = \"세계\"\n"
    );
}

#[test]
fn crlf_file_matches_an_lf_search() {
    let text = "a = 1\r\nb = 2\r\n";
    let reply = "a.py\n<<<<<<< SEARCH\nb = 2\n=======\nb = 3\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.clean().proposed("a.py"), "a = 1\nb = 3\n");
}

#[test]
fn missing_final_newline_is_kept() {
    let text = "a = 1\nb = 2";
    let reply = "a.py\n<<<<<<< SEARCH\na = 1\n=======\na = 0\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.clean().proposed("a.py"), "a = 0\nb = 2");
}

#[test]
fn a_failing_block_does_not_stop_the_others() {
    let reply = "calc.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n\ncalc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n";
    let r = eb(&[("calc.py", CALC)], reply);
    assert_eq!(r.out.errors.len(), 1);
    assert_eq!(r.out.errors[0].block, 1);
    assert_eq!(r.proposed("calc.py"), CALC.replace("a - b", "b - a"));
}

#[test]
fn several_blocks_in_file_order_apply_in_sequence() {
    let text: String = (0..30).map(|i| format!("line {i}\n")).collect();
    let reply: String = [3, 11, 19]
        .iter()
        .map(|i| format!("a.txt\n<<<<<<< SEARCH\nline {i}\n=======\nLINE {i}\n>>>>>>> REPLACE\n"))
        .collect();
    let r = eb(&[("a.txt", &text)], &reply);
    let want = text
        .replace("line 3\n", "LINE 3\n")
        .replace("line 11\n", "LINE 11\n")
        .replace("line 19\n", "LINE 19\n");
    assert_eq!(r.clean().proposed("a.txt"), want);
    // Changes more than 6 lines apart are separate hunks (as in git); closer ones join.
    assert_eq!(r.out.proposal.files()[0].hunks().len(), 3);
}

// ---------------------------------------------------------------- udiff

fn ud(files: &[(&str, &str)], reply: &str) -> Run {
    run(EditFormat::Udiff, files, reply)
}

#[test]
fn udiff_hunk_applies_by_content_ignoring_line_numbers() {
    let reply = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -40,2 +40,3 @@\n def sub(a, b):\n+    \"\"\"Subtract.\"\"\"\n     return a - b\n```\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace(
            "def sub(a, b):\n",
            "def sub(a, b):\n    \"\"\"Subtract.\"\"\"\n"
        )
    );
}

#[test]
fn udiff_blank_context_lines_without_their_space() {
    let reply = "--- calc.py\n+++ calc.py\n@@ ... @@\n     return a + b\n\n\n-def sub(a, b):\n+def minus(a, b):\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        CALC.replace("def sub", "def minus")
    );
}

#[test]
fn udiff_context_matching_twice_is_refused_not_applied_everywhere() {
    let text = "if x:\n    pass\nif x:\n    pass\n";
    let reply = "--- a/a.py\n+++ b/a.py\n@@ @@\n if x:\n-    pass\n+    return\n";
    let r = ud(&[("a.py", text)], reply);
    assert_eq!(r.problem(1), &Problem::Ambiguous { lines: vec![1, 3] });
    assert!(r.untouched("a.py"));
}

#[test]
fn udiff_hunk_not_in_the_file_is_refused_with_a_suggestion() {
    let reply =
        "--- a/calc.py\n+++ b/calc.py\n@@ @@\n def sub(a, b):\n-    return a-b\n+    return b-a\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert!(matches!(r.problem(1), Problem::NoMatch { near: Some(n), .. } if n.line == 5));
}

#[test]
fn udiff_several_hunks_and_files() {
    let reply = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return b + a\n@@ -5,2 +5,2 @@\n def sub(a, b):\n-    return a - b\n+    return b - a\n```\n\n```diff\n--- a/main.py\n+++ b/main.py\n@@ -1 +1 @@\n-print(1)\n+print(2)\n```\n";
    let r = ud(&[("calc.py", CALC), ("main.py", "print(1)\n")], reply);
    r.clean();
    assert_eq!(
        r.proposed("calc.py"),
        CALC.replace("a + b", "b + a").replace("a - b", "b - a")
    );
    assert_eq!(r.proposed("main.py"), "print(2)\n");
    assert_eq!(r.out.blocks, 3);
}

#[test]
fn udiff_from_dev_null_creates_a_file() {
    let reply = "--- /dev/null\n+++ b/money.py\n@@ -0,0 +1,2 @@\n+def cents(x):\n+    return round(x * 100)\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert_eq!(
        r.clean().proposed("money.py"),
        "def cents(x):\n    return round(x * 100)\n"
    );
}

#[test]
fn udiff_new_file_over_an_existing_one_is_refused() {
    let reply = "--- /dev/null\n+++ b/calc.py\n@@ -0,0 +1 @@\n+x = 1\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert_eq!(r.problem(1), &Problem::FileExists);
}

#[test]
fn udiff_deleting_a_file_is_refused() {
    let reply = "--- a/calc.py\n+++ /dev/null\n@@ -1,6 +0,0 @@\n-def add(a, b):\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert_eq!(r.problem(1), &Problem::Delete);
}

#[test]
fn udiff_pure_addition_without_context_is_refused() {
    let reply = "--- a/calc.py\n+++ b/calc.py\n@@ @@\n+import math\n";
    let r = ud(&[("calc.py", CALC)], reply);
    assert_eq!(r.problem(1), &Problem::NoContext);
}

#[test]
fn udiff_with_indentation_drift() {
    let text = "class A:\n    def f(self):\n        return 1\n";
    let reply = "--- a/a.py\n+++ b/a.py\n@@ @@\n def f(self):\n-    return 1\n+    return 2\n";
    let r = ud(&[("a.py", text)], reply);
    assert_eq!(
        r.clean().proposed("a.py"),
        "class A:\n    def f(self):\n        return 2\n"
    );
}

// ---------------------------------------------------------------- whole

fn wh(files: &[(&str, &str)], reply: &str) -> Run {
    run(EditFormat::Whole, files, reply)
}

#[test]
fn whole_file_replaces_the_content() {
    let reply = "Here it is:\n\ncalc.py\n```python\ndef add(a, b):\n    return a + b\n```\n";
    let r = wh(&[("calc.py", CALC), ("main.py", "x\n")], reply);
    assert_eq!(
        r.clean().proposed("calc.py"),
        "def add(a, b):\n    return a + b\n"
    );
}

#[test]
fn whole_new_file_and_a_shell_suggestion() {
    let reply = "money.py\n```python\nX = 1\n```\n\nRun it:\n```sh\npython money.py\n```\n";
    let r = wh(&[("calc.py", CALC)], reply);
    assert_eq!(r.clean().proposed("money.py"), "X = 1\n");
    assert_eq!(r.out.shell[0].commands, "python money.py");
}

#[test]
fn whole_file_with_inner_fences_uses_a_longer_fence() {
    let reply = "README.md\n````markdown\n# T\n\n```sh\nmake\n```\n````\n";
    let r = wh(&[("README.md", "# T\n")], reply);
    assert_eq!(r.clean().proposed("README.md"), "# T\n\n```sh\nmake\n```\n");
}

#[test]
fn whole_reply_with_unnamed_code_only_asks_for_the_name() {
    let reply = "```python\nprint(1)\n```\n";
    let r = wh(&[("calc.py", CALC), ("main.py", "x\n")], reply);
    assert_eq!(r.problem(1), &Problem::MissingFilename);
}

#[test]
fn whole_unclosed_fence_is_an_error() {
    let reply = "calc.py\n```python\nprint(1)\n";
    let r = wh(&[("calc.py", CALC)], reply);
    assert!(matches!(r.problem(1), Problem::Malformed(why) if why.contains("never closed")));
    assert!(r.untouched("calc.py"));
}

#[test]
fn a_second_divider_in_a_block_is_an_error_not_content() {
    let text = "a = 1\nb = 2\n";
    let reply = "a.py\n<<<<<<< SEARCH\na = 1\n=======\na = 2\n=======\nb = 3\n>>>>>>> REPLACE\n\na.py\n<<<<<<< SEARCH\nb = 2\n=======\nb = 20\n>>>>>>> REPLACE\n";
    let r = eb(&[("a.py", text)], reply);
    assert_eq!(r.out.errors.len(), 1, "{:?}", r.out.errors);
    let message = r.out.errors[0].to_string();
    assert!(message.contains("second `=======` on line 6"), "{message}");
    // The next block still applies; nothing of the broken one does.
    assert_eq!(r.proposed("a.py"), "a = 1\nb = 20\n");
}

#[test]
fn whole_file_placeholders_and_empty_bodies_are_refused() {
    let text: String = (0..21).map(|i| format!("line_{i} = {i}\n")).collect();
    for body in [
        "line_0 = 100\n// ... rest of the file unchanged ...\n",
        "line_0 = 100\n# existing code\n",
        "line_0 = 100\n... rest of the file unchanged ...\n",
        "",
        "\n\n",
    ] {
        let reply = format!("a.py\n```python\n{body}```\n");
        let r = run(EditFormat::Whole, &[("a.py", &text)], &reply);
        assert_eq!(r.out.errors.len(), 1, "{body:?}: {:?}", r.out.errors);
        assert!(
            matches!(
                r.out.errors[0].problem,
                Problem::LazyComment { .. } | Problem::EmptyWholeFile { lines: 21 }
            ),
            "{body:?}: {:?}",
            r.out.errors[0].problem
        );
        assert!(r.out.proposal.is_empty(), "{body:?}");
    }
    // A comment the file already has is not a placeholder.
    let commented = "# existing code\nx = 1\n";
    let r = run(
        EditFormat::Whole,
        &[("b.py", commented)],
        "b.py\n```python\n# existing code\nx = 2\n```\n",
    );
    assert!(r.out.errors.is_empty(), "{:?}", r.out.errors);
}

#[test]
fn a_whole_file_fence_takes_its_name_only_from_the_line_right_before_it() {
    let text: String = (0..21).map(|i| format!("line_{i} = {i}\n")).collect();
    // The reply mentions the file in prose, then shows an unrelated snippet.
    let reply = "I looked at `app.py` and here is what I suggest.\n\nFor example:\n```python\nprint('hi')\n```\n";
    let r = run(
        EditFormat::Whole,
        &[("app.py", &text), ("b.py", "x\n")],
        reply,
    );
    assert!(r.out.proposal.is_empty(), "{:?}", r.out.proposal.files());
}

#[test]
fn a_whole_file_fence_is_named_by_the_one_path_on_the_line_before_it() {
    let text: String = (0..21).map(|i| format!("line_{i} = {i}\n")).collect();
    let files = [("app.py", text.as_str()), ("b.py", "x\n")];
    // The line before the fence (blank lines between are fine) names the file when it
    // holds exactly one path: alone, in backticks, or as its last word.
    for line in [
        "app.py",
        "**app.py**:",
        "### `app.py`",
        "File: app.py",
        "Here is the new version of `app.py`:",
        "Here's the modified `app.py` file that implements the `accumulate` function:",
        "Here is the updated app.py:",
        "And the part of `app.py` that matters:",
    ] {
        for gap in ["\n", "\n\n", "\n  \n\n"] {
            let reply = format!("Sure.\n\n{line}{gap}```python\nprint('hi')\n```\n");
            let r = run(EditFormat::Whole, &files, &reply);
            assert_eq!(r.clean().proposed("app.py"), "print('hi')\n", "{line:?}");
        }
    }
    // Two paths, a path further up, a name that is code, a command: no name.
    for reply in [
        "Change `app.py` and `b.py`:\n```python\nprint('hi')\n```\n",
        "Replace `app.py` with b.py:\n```python\nprint('hi')\n```\n",
        "I looked at `app.py`.\n\nFor example:\n```python\nprint('hi')\n```\n",
        "Here is how `np.array` works:\n```python\nprint('hi')\n```\n",
        "Run it with `python app.py`:\n```python\nprint('hi')\n```\n",
    ] {
        let r = run(EditFormat::Whole, &files, reply);
        assert!(r.untouched("app.py"), "{reply:?}");
        assert_eq!(r.problem(1), &Problem::MissingFilename, "{reply:?}");
    }
    // A shell fence after a sentence naming a source file is a command to run.
    let reply = "Then check app.py:\n```sh\npython app.py\n```\n";
    let r = run(EditFormat::Whole, &files, reply);
    assert!(r.untouched("app.py"));
    assert_eq!(r.out.shell[0].commands, "python app.py");
    // ... and the new content of a script the sentence names.
    let reply = "Save this as `run.sh`:\n```sh\necho hi\n```\n";
    let r = run(EditFormat::Whole, &files, reply);
    assert_eq!(r.clean().proposed("run.sh"), "echo hi\n");
}

// Aider's own whole-format cases (tests/basic/test_wholefile.py), on tern.

#[test]
fn aider_no_files_and_unnamed_code_changes_nothing() {
    let reply = "To print \"Hello, World!\" in most programming languages, you can use the following code:\n\n```python\nprint(\"Hello, World!\")\n```\n\nThis code will output \"Hello, World!\" to the console.";
    let r = wh(&[], reply);
    assert!(r.out.proposal.is_empty());
    assert_eq!(r.problem(1), &Problem::MissingFilename);
}

#[test]
fn aider_a_new_file_is_proposed_never_written() {
    let reply = "To print \"Hello, World!\" in most programming languages, you can use the following code:\n\nfoo.js\n```python\nprint(\"Hello, World!\")\n```\n\nThis code will output \"Hello, World!\" to the console.";
    let r = wh(&[], reply);
    let file = r.out.proposal.file(Path::new("foo.js")).unwrap();
    assert!(file.is_new());
    assert!(!r._dir.path().join("foo.js").exists());
}

#[test]
fn aider_update_files_and_a_longer_fence() {
    let r = wh(
        &[("sample.txt", "Original content\n")],
        "sample.txt\n```\nUpdated content\n```",
    );
    assert_eq!(r.clean().proposed("sample.txt"), "Updated content\n");
    let quoted = "\nHere is some quoted text:\n```\nQuote!\n```\n";
    let r = wh(
        &[("sample.txt", quoted)],
        "sample.txt\n````\nUpdated content\n````",
    );
    assert_eq!(r.clean().proposed("sample.txt"), "Updated content\n");
}

#[test]
fn aider_bogus_path_prefix_proposes_that_new_path() {
    // Aider takes `path/to/sample.txt` for the chat's sample.txt; tern proposes the path
    // as written (a new file, shown as such in the review), and leaves sample.txt be.
    let r = wh(
        &[("sample.txt", "Original content\n")],
        "path/to/sample.txt\n```\nUpdated content\n```",
    );
    assert!(r.untouched("sample.txt"));
    assert!(
        r.out
            .proposal
            .file(Path::new("path/to/sample.txt"))
            .unwrap()
            .is_new()
    );
}

#[test]
fn aider_a_file_not_in_the_chat_is_proposed_with_a_caution() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sample.txt"), "Original content\n").unwrap();
    let ws = Workspace::discover(dir.path()).unwrap();
    let out = propose(
        &ws,
        "sample.txt\n```\nUpdated content\n```",
        EditFormat::Whole,
        &FileSet::new(vec![], ws.files()),
    );
    let file = out.proposal.file(Path::new("sample.txt")).unwrap();
    assert_eq!(file.proposed(), "Updated content\n");
    assert_eq!(file.cautions(), [tern::edit::Caution::OutsideChat]);
}

#[test]
fn aider_the_sentence_before_the_fence_names_the_file() {
    let content =
        "def accumulate(collection, operation):\n    return [operation(x) for x in collection]\n";
    let reply = format!(
        "Here's the modified `accumulate.py` file that implements the `accumulate` function as per the given instructions:\n\n```\n{content}```\n\nThis implementation uses a list comprehension to apply the `operation` function to each element of the `collection` and returns the resulting list."
    );
    let r = wh(&[("accumulate.py", "Original content\n")], &reply);
    assert_eq!(r.clean().proposed("accumulate.py"), content);
}

#[test]
fn aider_earlier_filenames_name_each_block() {
    let reply = "\nHere is a new version of `a.txt` for you to consider:\n\n```\nafter a\n```\n\nAnd here is `b.txt`:\n\n```\nafter b\n```\n";
    let r = wh(&[("a.txt", "before a\n"), ("b.txt", "before b\n")], reply);
    assert_eq!(r.clean().proposed("a.txt"), "after a\n");
    assert_eq!(r.proposed("b.txt"), "after b\n");
    let reply = "\n\n### a.txt\n```\nafter a\n```\n\n### b.txt\n```\nafter b\n```\n";
    let r = wh(&[("a.txt", "before a\n"), ("b.txt", "before b\n")], reply);
    assert_eq!(r.clean().proposed("a.txt"), "after a\n");
    assert_eq!(r.proposed("b.txt"), "after b\n");
}

#[test]
fn aider_an_extra_unnamed_code_block_is_not_the_file() {
    let new = "new\ncontent\ngoes\nhere\n";
    let reply = format!(
        "Here's the modified `hello.py` file that implements the `accumulate` function as per the given instructions:\n\n```\n{new}```\n\nThis implementation uses a list comprehension to apply the `operation` function to each element of the `collection` and returns the resulting list.\nRun it like this:\n\n```\npython hello.py\n```\n\n"
    );
    let r = wh(&[("hello.py", "Original content\n")], &reply);
    assert_eq!(r.clean().proposed("hello.py"), new);
}

#[test]
fn aider_full_edit_without_a_final_newline() {
    let r = wh(
        &[("file1.txt", "one\ntwo\nthree\n")],
        "\nDo this:\n\nfile1.txt\n```\nnew\ntwo\nthree\n```\n\n",
    );
    assert_eq!(r.clean().proposed("file1.txt"), "new\ntwo\nthree\n");
}

#[test]
fn udiff_paths_git_quotes_with_octal_escapes_are_decoded() {
    // `git diff` writes non-ASCII paths C-quoted (core.quotePath), and models copy it.
    let reply = "```diff\n--- \"a/docs/caf\\303\\251.md\"\n+++ \"b/docs/caf\\303\\251.md\"\n@@ -1 +1 @@\n-old\n+new\n```\n\n```diff\n--- /dev/null\n+++ \"b/src/\\346\\227\\245\\346\\234\\254.rs\"\n@@ -0,0 +1 @@\n+fn main() {}\n```\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/café.md"), "old\n").unwrap();
    let ws = Workspace::discover(dir.path()).unwrap();
    // Neither file is in the chat: no fuzzy match may rescue a wrong name.
    let out = propose(
        &ws,
        reply,
        EditFormat::Udiff,
        &FileSet::new(vec![], ws.files()),
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let paths: Vec<&Path> = out.proposal.files().iter().map(|f| f.path()).collect();
    assert_eq!(paths, [Path::new("docs/café.md"), Path::new("src/日本.rs")]);
    assert_eq!(
        out.proposal
            .file(Path::new("docs/café.md"))
            .unwrap()
            .proposed(),
        "new\n"
    );
}

// ---------------------------------------------------------------- another format

#[test]
fn a_diff_in_an_editblock_reply_is_read_as_a_diff() {
    let reply = "Here is the change:\n\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return b + a\n```\n";
    let r = eb(&[("calc.py", CALC), ("main.py", "x\n")], reply);
    assert!(r.clean().proposed("calc.py").contains("return b + a"));
    assert_eq!(r.out.formats, [EditFormat::Udiff]);
}

#[test]
fn search_replace_blocks_in_a_udiff_or_whole_reply_are_read_as_such() {
    let reply = "calc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return b - a\n>>>>>>> REPLACE\n```\n";
    for format in [EditFormat::Udiff, EditFormat::Whole] {
        let r = run(format, &[("calc.py", CALC), ("main.py", "x\n")], reply);
        // Never the file's new content: the markers are not the file.
        let proposed = r.clean().proposed("calc.py");
        assert!(
            proposed.contains("return b - a") && proposed.contains("def add"),
            "{format}"
        );
        assert!(!proposed.contains("SEARCH"), "{format}");
        assert_eq!(r.out.formats, [EditFormat::Editblock], "{format}");
    }
}

#[test]
fn each_block_is_read_once_by_the_first_format_that_takes_it() {
    // A SEARCH/REPLACE block that edits a patch file holds a diff: one edit, not two.
    let patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+new\n";
    let reply = format!(
        "fix.patch\n<<<<<<< SEARCH\n{patch}=======\n{}>>>>>>> REPLACE\n",
        patch.replace("+new", "+newer")
    );
    let r = eb(&[("fix.patch", patch), ("x.py", "old\n")], &reply);
    assert_eq!(
        r.clean().proposed("fix.patch"),
        patch.replace("+new", "+newer")
    );
    assert!(r.untouched("x.py"));
    assert_eq!(r.out.blocks, 1);
    // A diff whose context holds a SEARCH marker (a prompt file): one edit, the diff.
    let prompt = "intro\n<<<<<<< SEARCH\nend\n";
    let reply = "```diff\n--- a/p.md\n+++ b/p.md\n@@ -1,3 +1,3 @@\n-intro\n+Intro\n <<<<<<< SEARCH\n end\n```\n";
    let r = ud(&[("p.md", prompt), ("q.md", "x\n")], reply);
    assert_eq!(r.clean().proposed("p.md"), "Intro\n<<<<<<< SEARCH\nend\n");
    assert_eq!(r.out.blocks, 1);
}

#[test]
fn a_code_example_in_an_editblock_reply_is_never_a_whole_file() {
    let reply = "calc.py\n```python\nprint('example')\n```\n";
    let r = eb(&[("calc.py", CALC), ("main.py", "x\n")], reply);
    assert!(r.clean().untouched("calc.py"));
    assert_eq!(r.out.blocks, 0);
}

#[test]
fn diff_like_blocks_that_cannot_be_applied_are_reported() {
    // No file headers, headers without hunks, a bare hunk: each is a broken block.
    for (format, reply) in [
        (
            EditFormat::Editblock,
            "```diff\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return b + a\n```\n",
        ),
        (
            EditFormat::Editblock,
            "```diff\n--- a/calc.py\n+++ b/calc.py\n def add(a, b):\n-    return a + b\n+    return b + a\n```\n",
        ),
        (
            EditFormat::Editblock,
            "Change it:\n\n@@ -1,2 +1,2 @@\n-    return a + b\n+    return b + a\n",
        ),
        (
            EditFormat::Udiff,
            "```diff\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return b + a\n```\n",
        ),
        (
            EditFormat::Whole,
            "calc.py\n```diff\n-    return a + b\n+    return b + a\n```\n",
        ),
    ] {
        let r = run(format, &[("calc.py", CALC), ("main.py", "x\n")], reply);
        assert!(r.untouched("calc.py"), "{format}: {reply}");
        assert_eq!(
            r.out.errors.len(),
            1,
            "{format}: {reply}: {:?}",
            r.out.errors
        );
        let message = r.out.errors[0].to_string();
        assert!(
            message.contains("is not a diff tern can apply"),
            "{message}"
        );
    }
}
