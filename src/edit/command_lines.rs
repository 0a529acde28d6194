//! A suggested shell block → the single-line commands in it, each one a user could run
//! on its own. A command that only makes sense over several lines (an open quote, a
//! heredoc) is left out rather than cut into lines that would mean something else.

use super::scan::ShellSuggestion;

impl ShellSuggestion {
    /// The commands, one per line: `$ ` prompts stripped (in a block that has them,
    /// the lines without one are output), blank and `#` comment lines skipped, lines
    /// continued with `\` joined with a space.
    pub(crate) fn command_lines(&self) -> Vec<String> {
        let lines: Vec<&str> = self.commands.lines().collect();
        let prompted = lines.iter().any(|l| prompt(l).is_some());
        let mut out = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            i += 1;
            let first = if prompted {
                match prompt(line) {
                    Some(rest) => rest,
                    None => continue,
                }
            } else {
                line
            };
            let first = first.trim();
            if first.is_empty() || first.starts_with('#') {
                continue;
            }
            let mut command = first.to_string();
            while let Some(head) = continued(&command) {
                command = head;
                let Some(next) = lines.get(i) else { break };
                i += 1;
                // A console transcript marks continuation lines with `> `.
                let next = next.trim_start();
                let next = if prompted {
                    next.strip_prefix("> ").unwrap_or(next)
                } else {
                    next
                };
                command.push(' ');
                command.push_str(next.trim());
            }
            match shape(&command) {
                Shape::Whole if opens_compound(&command) => {
                    // A loop, `if`, `case` or function over several lines: its lines
                    // are one command, never runnable one by one.
                    let mut depth = 1;
                    while depth > 0 && i < lines.len() {
                        let line = lines[i];
                        i += 1;
                        if opens_compound(line) {
                            depth += 1;
                        } else if closes_compound(line) {
                            depth -= 1;
                        }
                    }
                }
                // A stray `done` or `fi` is part of something not shown whole.
                Shape::Whole if closes_compound(&command) || continues_compound(&command) => {}
                Shape::Whole => out.push(command.trim_end().to_string()),
                Shape::Heredoc(end) => {
                    // Its body is input, not commands.
                    while i < lines.len() && lines[i].trim() != end {
                        i += 1;
                    }
                    i += 1;
                }
                Shape::OpenQuote => {
                    // The quote runs on over the next lines: not one line's command.
                    let mut text = command;
                    while i < lines.len() {
                        text.push('\n');
                        text.push_str(lines[i]);
                        i += 1;
                        if !matches!(shape(&text), Shape::OpenQuote) {
                            break;
                        }
                    }
                }
            }
        }
        out
    }
}

/// The words of a command line, split at blanks and `;`.
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
}

/// Whether `line` opens a compound command that it does not close: `for …; do` with
/// no `done`, `if` with no `fi`, `case` with no `esac`, a `{` with no `}`.
fn opens_compound(line: &str) -> bool {
    let closer = match words(line).next() {
        Some("for" | "while" | "until" | "select") => "done",
        Some("if") => "fi",
        Some("case") => "esac",
        _ if line.trim_end().ends_with('{') => "}",
        _ => return false,
    };
    !words(line).any(|w| w == closer)
}

/// Whether `line` ends a compound command (`done`, `fi`, `esac`, `}` first).
fn closes_compound(line: &str) -> bool {
    matches!(words(line).next(), Some("done" | "fi" | "esac" | "}"))
}

/// Whether `line` is the middle of a compound command (`do`, `then`, `else`, …).
fn continues_compound(line: &str) -> bool {
    matches!(
        words(line).next(),
        Some("do" | "then" | "else" | "elif" | ";;")
    )
}

/// The command after a `$ ` prompt.
fn prompt(line: &str) -> Option<&str> {
    let t = line.trim_start();
    t.strip_prefix("$ ").or_else(|| (t == "$").then_some(""))
}

/// `command` without its continuation backslash, when it ends with one (an odd run:
/// `\\` is an escaped backslash).
fn continued(command: &str) -> Option<String> {
    let t = command.trim_end();
    let run = t.chars().rev().take_while(|&c| c == '\\').count();
    (run % 2 == 1).then(|| t.strip_suffix('\\').unwrap_or(t).trim_end().to_string())
}

/// Whether a command is whole on its line.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Whole,
    /// A quote is still open at the end.
    OpenQuote,
    /// It starts a heredoc ending at this word.
    Heredoc(String),
}

/// How `command` ends, reading quotes and escapes as a POSIX shell does; a `#` that
/// starts a word outside quotes starts a comment.
fn shape(command: &str) -> Shape {
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                chars.next();
            }
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev.is_none_or(char::is_whitespace) => break,
            (None, '<') if chars.peek() == Some(&'<') => {
                chars.next();
                if chars.peek() == Some(&'<') {
                    // `<<<` is a here-string: one line.
                    chars.next();
                } else {
                    let rest: String = chars.collect();
                    let word = rest
                        .trim_start_matches('-')
                        .trim_start()
                        .split(|c: char| c.is_whitespace() || ";|&<>".contains(c))
                        .next()
                        .unwrap_or("")
                        .trim_matches(['\'', '"']);
                    return Shape::Heredoc(word.to_string());
                }
            }
            (None, _) => {}
        }
        prev = Some(c);
    }
    match quote {
        Some(_) => Shape::OpenQuote,
        None => Shape::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(language: &str, body: &str) -> Vec<String> {
        ShellSuggestion {
            language: language.into(),
            commands: body.into(),
        }
        .command_lines()
    }

    #[test]
    fn one_command_per_line_without_comments_or_blanks() {
        assert_eq!(
            commands(
                "bash",
                "# set up\ncargo build\n\n  cargo test -- --nocapture  # all\n"
            ),
            ["cargo build", "cargo test -- --nocapture  # all"]
        );
    }

    #[test]
    fn prompts_are_stripped_and_their_output_left_out() {
        assert_eq!(
            commands(
                "console",
                "$ pytest -x\n===== 2 failed =====\n$ git status\nOn branch main"
            ),
            ["pytest -x", "git status"]
        );
    }

    #[test]
    fn continued_lines_are_joined() {
        assert_eq!(
            commands(
                "sh",
                "docker run \\\n  --rm \\\n  image\necho 'a\\\\'\necho done"
            ),
            ["docker run --rm image", "echo 'a\\\\'", "echo done"]
        );
        assert_eq!(
            commands("console", "$ cargo test \\\n> --all\nok"),
            ["cargo test --all"]
        );
        // A continuation on the last line keeps what there is.
        assert_eq!(commands("sh", "make \\"), ["make"]);
    }

    #[test]
    fn loops_and_conditions_over_several_lines_are_left_out_whole() {
        assert_eq!(
            commands(
                "sh",
                "for f in *.py; do\n  python -m py_compile \"$f\"\ndone\nif [ -f x ]\nthen\n  while true; do\n    rm x\n  done\nfi\nf() {\n  ls\n}\nfor f in a b; do echo $f; done\necho after"
            ),
            ["for f in a b; do echo $f; done", "echo after"]
        );
    }

    #[test]
    fn multi_line_commands_are_never_cut_into_lines() {
        assert_eq!(
            commands(
                "bash",
                "cat > a.txt <<'EOF'\nrm -rf /\nEOF\necho after\ngit commit -m \"one\ntwo\"\nls"
            ),
            ["echo after", "ls"]
        );
        assert_eq!(
            commands("sh", "grep x <<< \"$v\"\necho 'never closed\nrm -rf /"),
            ["grep x <<< \"$v\""]
        );
        assert_eq!(
            commands("sh", "echo \"it's\" # it's"),
            ["echo \"it's\" # it's"]
        );
    }
}
