//! A test or lint command proposed from the repository's own files, for when none is
//! configured; the user sees it, and why, before it runs.

use std::path::Path;

/// Which command is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    Test,
    Lint,
}

/// A command proposed from the repository's files when none is configured, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub command: String,
    /// The file that suggested it: "Cargo.toml", "package.json scripts.test".
    pub reason: String,
}

/// The first of Cargo, Python, npm, Go and make that the repository at `root` uses and
/// that has a command of this kind; `None` when nothing matches.
pub fn suggest(root: &Path, kind: CommandKind) -> Option<Suggestion> {
    [cargo, python, npm, go, make]
        .iter()
        .find_map(|ecosystem| ecosystem(root, kind))
}

fn found(command: &str, reason: &str) -> Option<Suggestion> {
    Some(Suggestion {
        command: command.to_string(),
        reason: reason.to_string(),
    })
}

fn read(root: &Path, name: &str) -> Option<String> {
    crate::regular_file::read_to_string(&root.join(name), crate::regular_file::MAX_SETTINGS_BYTES)
        .ok()
}

fn cargo(root: &Path, kind: CommandKind) -> Option<Suggestion> {
    root.join("Cargo.toml").is_file().then_some(())?;
    match kind {
        CommandKind::Test => found("cargo test", "Cargo.toml"),
        CommandKind::Lint => found("cargo clippy --all-targets -- -D warnings", "Cargo.toml"),
    }
}

fn python(root: &Path, kind: CommandKind) -> Option<Suggestion> {
    let pyproject = read(root, "pyproject.toml").and_then(|t| t.parse::<toml::Table>().ok());
    let setup_cfg = read(root, "setup.cfg").unwrap_or_default();
    let uses = |tool: &str| pyproject.as_ref().is_some_and(|doc| mentions(doc, tool));
    match kind {
        CommandKind::Test => {
            if root.join("pytest.ini").is_file() {
                return found("pytest", "pytest.ini");
            }
            if uses("pytest") {
                return found("pytest", "pyproject.toml");
            }
            has_section(&setup_cfg, "tool:pytest").then_some(())?;
            found("pytest", "setup.cfg [tool:pytest]")
        }
        CommandKind::Lint => {
            for config in ["ruff.toml", ".ruff.toml"] {
                if root.join(config).is_file() {
                    return found("ruff check .", config);
                }
            }
            if uses("ruff") {
                return found("ruff check .", "pyproject.toml");
            }
            if root.join(".flake8").is_file() {
                return found("flake8", ".flake8");
            }
            let tox = read(root, "tox.ini").unwrap_or_default();
            for (text, file) in [
                (&setup_cfg, "setup.cfg [flake8]"),
                (&tox, "tox.ini [flake8]"),
            ] {
                if has_section(text, "flake8") {
                    return found("flake8", file);
                }
            }
            uses("flake8").then_some(())?;
            found("flake8", "pyproject.toml")
        }
    }
}

/// Whether a TOML document configures `tool` (`[tool.pytest.ini_options]`) or lists
/// it as a dependency anywhere (`"pytest>=8"`, `pytest = "^8"`).
fn mentions(doc: &toml::Table, tool: &str) -> bool {
    let names = |s: &str| {
        let name = s.trim_start();
        name.strip_prefix(tool).is_some_and(|rest| {
            !rest.starts_with(|c: char| c.is_alphanumeric() || c == '-' || c == '_')
        })
    };
    doc.iter().any(|(key, value)| {
        names(key)
            || match value {
                toml::Value::String(s) => names(s),
                toml::Value::Array(items) => items.iter().any(|item| match item {
                    toml::Value::String(s) => names(s),
                    toml::Value::Table(t) => mentions(t, tool),
                    _ => false,
                }),
                toml::Value::Table(t) => mentions(t, tool),
                _ => false,
            }
    })
}

/// Whether an INI text has a `[section]`.
fn has_section(ini: &str, section: &str) -> bool {
    ini.lines()
        .filter_map(|line| line.trim().strip_prefix('[')?.strip_suffix(']'))
        .any(|name| name.trim() == section)
}

fn npm(root: &Path, kind: CommandKind) -> Option<Suggestion> {
    let package: serde_json::Value = serde_json::from_str(&read(root, "package.json")?).ok()?;
    let script = |name: &str| {
        package
            .get("scripts")?
            .get(name)?
            .as_str()
            .map(str::to_string)
    };
    match kind {
        CommandKind::Test => {
            // `npm init` writes a test script that only fails.
            script("test").filter(|s| !s.contains("no test specified"))?;
            found("npm test", "package.json scripts.test")
        }
        CommandKind::Lint => {
            script("lint")?;
            found("npm run lint", "package.json scripts.lint")
        }
    }
}

fn go(root: &Path, kind: CommandKind) -> Option<Suggestion> {
    root.join("go.mod").is_file().then_some(())?;
    match kind {
        CommandKind::Test => found("go test ./...", "go.mod"),
        CommandKind::Lint => found("go vet ./...", "go.mod"),
    }
}

fn make(root: &Path, kind: CommandKind) -> Option<Suggestion> {
    let target = match kind {
        CommandKind::Test => "test",
        CommandKind::Lint => "lint",
    };
    let (file, text) = ["GNUmakefile", "makefile", "Makefile"]
        .iter()
        .find_map(|name| Some((*name, read(root, name)?)))?;
    // `test: build` at the start of a line; not a recipe line, not `test := 1`.
    let defines = |line: &str| {
        !line.starts_with(char::is_whitespace)
            && line.split_once(':').is_some_and(|(targets, rest)| {
                !rest.starts_with('=') && targets.split_whitespace().any(|t| t == target)
            })
    };
    text.lines().any(defines).then_some(())?;
    found(
        &format!("make {target}"),
        &format!("{file} {target} target"),
    )
}
