//! `tern::run` with real processes: process groups stopped on cancel, timeout and drop
//! (grandchildren and SIGTERM-ignoring ones included), the scrubbed environment, output
//! capped and made visible, clipping by real token count, and commands suggested from
//! real repository files.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::kill;
use nix::unistd::Pid;
use proptest::prelude::*;
use tern::run::{
    Clipped, CommandKind, Outcome, Output, Progress, RunOptions, Suggestion, clip, run, suggest,
};
use tern::tokens::{Encoding, TokenCounter};
use tokio_util::sync::CancellationToken;

/// Long enough for any of these commands on a loaded machine; only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `command` in `cwd` to the end, with every progress report kept.
fn run_here(command: &str, cwd: &Path, options: &RunOptions) -> (Output, Vec<Progress>) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let output = runtime().block_on(async {
        let running = run(command, cwd, options, CancellationToken::new(), move |p| {
            seen.lock().unwrap().push(p)
        });
        tokio::time::timeout(HANG, running).await.unwrap()
    });
    let reports = std::mem::take(&mut *reports.lock().unwrap());
    (output, reports)
}

fn run_in_tmp(command: &str, options: &RunOptions) -> (Output, Vec<Progress>) {
    let dir = tempfile::tempdir().unwrap();
    run_here(command, dir.path(), options)
}

/// Whether `pid` is gone: no such process, or a zombie waiting for whoever reaps
/// orphans (it runs no more). Waits a little, as a killed process takes a moment.
fn gone(pid: i32) -> bool {
    for _ in 0..250 {
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| Some(stat.rsplit_once(") ")?.1.starts_with('Z')));
        if kill(Pid::from_raw(pid), None).is_err() || zombie == Some(true) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Starts `command`, waits until it has printed `pids` process ids (one a line), then
/// cancels it; returns the output and the ids.
fn cancel_once_printed(command: &str, pids: usize, options: &RunOptions) -> (Output, Vec<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let printed = Arc::new(Mutex::new(String::new()));
    let seen = printed.clone();
    let cancel = CancellationToken::new();
    let output = runtime().block_on(async {
        let running = run(command, dir.path(), options, cancel.clone(), move |p| {
            seen.lock().unwrap().push_str(&p.new_text)
        });
        let canceller = async {
            while printed.lock().unwrap().lines().count() < pids {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        };
        let (output, ()) = tokio::time::timeout(HANG, async { tokio::join!(running, canceller) })
            .await
            .unwrap();
        output
    });
    let pids = pid_lines(&output.text);
    (output, pids)
}

fn pid_lines(text: &str) -> Vec<i32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[test]
fn stdout_and_stderr_interleave_in_order_and_the_exit_code_is_told() {
    let (out, reports) = run_in_tmp(
        "echo one; sleep 0.05; echo two >&2; sleep 0.05; echo three; exit 3",
        &RunOptions::default(),
    );
    assert_eq!(out.text, "one\ntwo\nthree\n");
    assert_eq!(out.outcome, Outcome::Exited(3));
    assert_eq!(out.lines, 3);
    assert!(!out.passed());
    assert!(
        out.describe().starts_with("exit 3 after "),
        "{}",
        out.describe()
    );
    let streamed: String = reports.iter().map(|p| p.new_text.as_str()).collect();
    assert_eq!(streamed, out.text);
    let last = reports.last().unwrap();
    assert_eq!((last.lines, last.last_line.as_str()), (3, "three"));

    let (out, _) = run_in_tmp("true", &RunOptions::default());
    assert!(out.passed() && out.text.is_empty() && out.lines == 0);
    let (out, _) = run_in_tmp("kill -9 $$", &RunOptions::default());
    assert_eq!(out.outcome, Outcome::Signalled(9));
    assert!(out.describe().starts_with("killed by signal 9"));
}

#[test]
fn progress_comes_while_the_command_runs_with_its_last_line() {
    let (out, reports) = run_in_tmp(
        "for i in 1 2 3; do echo \"step $i\"; sleep 0.3; done; printf 'last, unfinished'",
        &RunOptions::default(),
    );
    assert!(out.passed());
    assert!(reports.len() >= 3, "{reports:?}");
    let steps: Vec<&str> = reports.iter().map(|p| p.last_line.as_str()).collect();
    assert!(
        steps.contains(&"step 1") && steps.contains(&"step 2"),
        "{steps:?}"
    );
    assert_eq!(steps.last(), Some(&"last, unfinished"));
    assert!(reports.windows(2).all(|w| w[0].elapsed <= w[1].elapsed));
    assert_eq!(out.lines, 4);
    assert_eq!(reports.last().unwrap().lines, 4);
}

#[test]
fn cancel_kills_the_whole_group_grandchild_included() {
    let (out, pids) = cancel_once_printed(
        "sleep 300 & echo $!; echo $$; sleep 300",
        2,
        &RunOptions::default(),
    );
    assert_eq!(out.outcome, Outcome::Cancelled);
    assert!(out.describe().starts_with("cancelled after "));
    assert_eq!(pids.len(), 2, "{}", out.text);
    for pid in pids {
        assert!(gone(pid), "{pid} still runs");
    }
}

#[test]
fn a_process_that_ignores_sigterm_is_killed_after_the_grace() {
    let options = RunOptions {
        kill_grace: Duration::from_millis(300),
        ..RunOptions::default()
    };
    // Ignored signals stay ignored in children: both sleeps and the shell ignore it.
    let (out, pids) = cancel_once_printed(
        "trap '' TERM; sleep 300 & echo $!; echo $$; sleep 300",
        2,
        &options,
    );
    assert_eq!(out.outcome, Outcome::Cancelled);
    assert_eq!(pids.len(), 2, "{}", out.text);
    for pid in pids {
        assert!(gone(pid), "{pid} survived SIGKILL");
    }
}

#[test]
fn a_timeout_stops_the_group_and_says_so() {
    let options = RunOptions {
        timeout: Duration::from_millis(500),
        ..RunOptions::default()
    };
    let (out, _) = run_in_tmp("sleep 300 & echo $!; echo $$; sleep 300", &options);
    assert_eq!(out.outcome, Outcome::TimedOut);
    assert!(
        out.describe().starts_with("timed out after 0."),
        "{}",
        out.describe()
    );
    let pids = pid_lines(&out.text);
    assert_eq!(pids.len(), 2, "{}", out.text);
    for pid in pids {
        assert!(gone(pid), "{pid} outlived the timeout");
    }
}

#[test]
fn it_returns_when_the_command_exits_though_a_background_child_holds_the_pipe() {
    // Without the drain's end this would wait for the background sleep: HANG fails it.
    let (out, _) = run_in_tmp("sleep 300 & echo $!; echo done", &RunOptions::default());
    assert!(out.passed(), "{}", out.describe());
    assert!(out.text.ends_with("done\n"));
    let pid = pid_lines(&out.text)[0];
    assert!(gone(pid), "the background {pid} outlived the command");
}

#[test]
fn dropping_the_run_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let printed = Arc::new(Mutex::new(String::new()));
    let seen = printed.clone();
    let options = RunOptions::default();
    runtime().block_on(async {
        let running = run(
            "sleep 300 & echo $!; echo $$; sleep 300",
            dir.path(),
            &options,
            CancellationToken::new(),
            move |p| seen.lock().unwrap().push_str(&p.new_text),
        );
        tokio::pin!(running);
        let waited = tokio::time::timeout(HANG, async {
            while printed.lock().unwrap().lines().count() < 2 {
                tokio::select! {
                    out = &mut running => panic!("ended early: {out:?}"),
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
        });
        waited.await.unwrap();
    });
    let pids = pid_lines(&printed.lock().unwrap());
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(gone(pid), "{pid} outlived the dropped run");
    }
}

/// The environment a command gets: the test's own (which variables hold the API key
/// is `tests/it/egress.rs`'s business, with the real binary), and the fixed settings.
#[test]
fn the_command_gets_the_environment_and_the_fixed_settings() {
    let home = std::env::var("HOME").unwrap();
    let (out, _) = run_in_tmp("/usr/bin/env", &RunOptions::default());
    assert!(out.passed(), "{}: {}", out.describe(), out.text);
    assert!(out.text.contains(&format!("HOME={home}\n")), "{}", out.text);
    for set in [
        "NO_COLOR=1",
        "CARGO_TERM_COLOR=never",
        "TERM=dumb",
        "GIT_TERMINAL_PROMPT=0",
    ] {
        assert!(out.text.lines().any(|l| l == set), "{set} missing");
    }
}

#[test]
fn a_huge_output_stays_within_the_cap_and_says_what_it_left_out() {
    let options = RunOptions {
        max_bytes: 1 << 20,
        ..RunOptions::default()
    };
    // 20 times the cap: enough to overflow it many times over, quick in a debug build.
    let (out, reports) = run_in_tmp("yes | head -c 20000000", &options);
    assert!(out.passed(), "{}", out.describe());
    assert_eq!(out.lines, 10_000_000);
    assert!(
        out.text.len() <= options.max_bytes + 100,
        "{}",
        out.text.len()
    );
    let note = out
        .text
        .lines()
        .find(|l| l.starts_with("[… "))
        .unwrap()
        .to_string();
    // Head and tail keep whole lines; the note counts the rest exactly.
    let kept = out.text.lines().filter(|l| *l == "y").count();
    let left_out = 10_000_000 - kept;
    assert_eq!(
        note,
        format!("[… {left_out} lines, {} bytes left out …]", 2 * left_out)
    );
    assert!(out.text.ends_with("y\ny\n"));
    for report in &reports {
        assert!(
            report.new_text.len() <= 64 * 1024 + 100,
            "{}",
            report.new_text.len()
        );
    }
    assert!(
        reports
            .iter()
            .any(|r| r.new_text.contains("bytes not shown"))
    );
}

#[test]
fn hostile_bytes_come_out_visible() {
    let (out, _) = run_in_tmp(
        r"printf 'a\033]52;c;aGk=\007b\033[2Jc\r\nd\000e\377f\n'",
        &RunOptions::default(),
    );
    assert!(out.passed());
    assert_eq!(
        out.text,
        "a\\u{1b}]52;c;aGk=\\u{7}b\\u{1b}[2Jc\nd\\u{0}e\u{fffd}f\n"
    );
    assert_eq!(out.lines, 2);
}

/// A progress bar rewrites its line with `\r`: what it showed last is kept (a CRLF is
/// a line end), not every frame as `\u{d}` noise.
#[test]
fn a_progress_bar_keeps_what_it_showed_last() {
    let (out, reports) = run_in_tmp(
        r"printf 'building\r 10%%\r 50%%\r100%% done\nnext\r\nlast\rLAST\n'",
        &RunOptions::default(),
    );
    assert!(out.passed());
    assert_eq!(out.text, "100% done\nnext\nLAST\n");
    let shown: String = reports.iter().map(|r| r.new_text.as_str()).collect();
    assert_eq!(shown, out.text);
    // The last line says what the text says: the line as it was shown last.
    assert_eq!(reports.last().unwrap().last_line, "LAST");
    let (_, reports) = run_in_tmp(
        r"printf 'done\nbar\r 10%%\r 50%%\r'",
        &RunOptions::default(),
    );
    assert_eq!(reports.last().unwrap().last_line, "50%");
}

#[test]
fn a_missing_directory_fails_to_start_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let (out, reports) = run_here("true", &missing, &RunOptions::default());
    assert!(
        matches!(&out.outcome, Outcome::FailedToStart(why) if why.contains("nowhere") && why.contains("not a directory")),
        "{:?}",
        out.outcome
    );
    assert!(out.describe().starts_with("could not start: "));
    assert!(reports.is_empty() && !out.passed());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any bytes, printed in pieces, come out as the same lines with nothing a
    /// terminal would act on, whether or not the cap cut them.
    #[test]
    fn any_bytes_are_captured_visible(bytes in proptest::collection::vec(any::<u8>(), 0..3000), cap in prop_oneof![0usize..4, 64usize..4096]) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out"), &bytes).unwrap();
        let options = RunOptions { max_bytes: cap, ..RunOptions::default() };
        let (out, reports) = run_here("cat out", dir.path(), &options);
        prop_assert!(out.passed());
        let breaks = bytes.iter().filter(|&&b| b == b'\n').count();
        let unfinished = bytes.last().is_some_and(|&b| b != b'\n');
        prop_assert_eq!(out.lines, breaks + usize::from(unfinished));
        prop_assert!(!out.text.chars().any(tern::terminal_text::is_unsafe));
        let streamed: String = reports.iter().map(|p| p.new_text.as_str()).collect();
        prop_assert!(!streamed.chars().any(tern::terminal_text::is_unsafe));
        // A lone `\r` starts its line over (see `a_progress_bar_keeps_what_it_showed_last`),
        // within each report: the exact text is compared where there is none.
        if bytes.contains(&b'\r') {
            return Ok(());
        }
        let whole = tern::terminal_text::visible(&String::from_utf8_lossy(&bytes)).into_owned();
        prop_assert_eq!(&streamed, &whole);
        if bytes.len() <= cap / 2 * 2 {
            prop_assert_eq!(&out.text, &whole);
        } else {
            prop_assert!(out.text.contains(" bytes left out …]"));
        }
    }
}

// Clipping.

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase, false)
}

fn note(lines: usize) -> String {
    format!("[… {lines} lines left out …]\n")
}

const CARGO_TEST: &str = include_str!("../fixtures/run/cargo_test_failure.txt");

#[test]
fn a_failing_cargo_test_keeps_its_summary_when_clipped() {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let counter = TokenCounter::new(encoding, false);
        let total = counter.count(CARGO_TEST);
        for budget in [2000, 4000] {
            let fits = clip(CARGO_TEST, &counter, budget);
            assert_eq!(
                fits,
                Clipped {
                    text: CARGO_TEST.to_string(),
                    tokens: total,
                    omitted_lines: 0
                },
                "{total} tokens fit {budget}"
            );
        }
        for budget in [150, 300, total / 2, total - 1] {
            let clipped = clip(CARGO_TEST, &counter, budget);
            assert!(clipped.tokens <= budget, "{} > {budget}", clipped.tokens);
            assert_eq!(clipped.tokens, counter.count(&clipped.text));
            assert!(clipped.omitted_lines > 0);
            assert!(clipped.text.contains(&note(clipped.omitted_lines)));
            assert!(
                clipped
                    .text
                    .ends_with("error: test failed, to rerun pass `--lib`\n")
            );
            if budget >= 300 {
                assert!(
                    clipped
                        .text
                        .contains("test result: FAILED. 25 passed; 5 failed")
                );
            }
            // Whole lines: the original's first and last ones.
            let lines: Vec<&str> = clipped.text.lines().collect();
            let at = lines.iter().position(|l| l.starts_with("[… ")).unwrap();
            let (head, tail) = (&lines[..at], &lines[at + 1..]);
            let original: Vec<&str> = CARGO_TEST.lines().collect();
            assert!(original.starts_with(head) && original.ends_with(tail));
            assert_eq!(
                head.len() + tail.len() + clipped.omitted_lines,
                original.len()
            );
        }
    }
}

#[test]
fn a_last_line_too_long_for_the_budget_keeps_its_end() {
    let counter = counter();
    let text = format!("first\n{}THE END", "word ".repeat(5000));
    let clipped = clip(&text, &counter, 100);
    assert!(clipped.tokens <= 100);
    assert_eq!(clipped.omitted_lines, 1);
    assert!(clipped.text.starts_with(&note(1)));
    assert!(clipped.text.ends_with("word word THE END"));
    assert!(clipped.text.contains("\n…"));
    // A budget below the note's own cost gets the note alone.
    let tiny = clip(&text, &counter, 2);
    assert_eq!(tiny.text, note(2));
    assert_eq!(tiny.omitted_lines, 2);
}

#[test]
fn a_five_megabyte_output_is_clipped_to_its_budget() {
    let counter = counter();
    let failing: String = (0..60_000)
        .map(|i| format!("test module_{}::case_{i} ... ok\n", i % 97))
        .chain(["test result: FAILED. 59999 passed; 1 failed\n".to_string()])
        .collect();
    assert!(failing.len() > 2_000_000);
    let clipped = clip(&failing, &counter, 4000);
    assert!(
        clipped.tokens <= 4000 && clipped.tokens > 3800,
        "{}",
        clipped.tokens
    );
    assert!(clipped.text.starts_with("test module_0::case_0 ... ok\n"));
    assert!(
        clipped
            .text
            .ends_with("test result: FAILED. 59999 passed; 1 failed\n")
    );
}

/// Text of lines that are anything: Unicode, controls, CR, CRLF, long runs.
fn any_output() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[a-z ]{0,40}",
        "\\PC{0,30}",
        "[\\x00-\\x1f\\x7f\u{80}-\u{9f}]{0,10}",
        "(ab|\u{1F600}|\r|\t|é){0,400}",
        "x{0,3000}",
    ];
    (
        proptest::collection::vec((line, prop_oneof!["\n", "\r\n", ""]), 0..60),
        any::<bool>(),
    )
        .prop_map(|(lines, end)| {
            let mut text: String = lines.into_iter().map(|(l, e)| l + &e).collect();
            if end {
                text.push('\n');
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Within the budget by the counter (unless the budget is below the note), the
    /// last line kept whenever it fits beside the note, whole lines otherwise.
    #[test]
    fn clip_keeps_to_the_budget_and_the_last_line(text in any_output(), budget in 0usize..400) {
        let counter = counter();
        let clipped = clip(&text, &counter, budget);
        prop_assert_eq!(clipped.tokens, counter.count(&clipped.text));
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        if clipped.text == text {
            prop_assert!(clipped.tokens <= budget && clipped.omitted_lines == 0);
            return Ok(());
        }
        let below_note = counter.count(&note(lines.len())) > budget;
        prop_assert!(clipped.tokens <= budget || below_note, "{} > {}", clipped.tokens, budget);
        let last = lines.last().copied().unwrap_or_default();
        if counter.count(&format!("{}{last}", note(lines.len() - 1))) <= budget {
            prop_assert!(clipped.text.ends_with(last));
        }
        prop_assert!(clipped.text.contains(&note(clipped.omitted_lines)));
    }
}

// Suggestions.

fn suggested(files: &[(&str, &str)], kind: CommandKind) -> Option<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    suggest(dir.path(), kind).map(|Suggestion { command, reason }| (command, reason))
}

fn pair(command: &str, reason: &str) -> Option<(String, String)> {
    Some((command.to_string(), reason.to_string()))
}

#[test]
fn commands_are_suggested_from_the_repository_files() {
    use CommandKind::{Lint, Test};
    let cargo = [("Cargo.toml", "[package]\nname = \"x\"\n")];
    assert_eq!(suggested(&cargo, Test), pair("cargo test", "Cargo.toml"));
    assert_eq!(
        suggested(&cargo, Lint),
        pair("cargo clippy --all-targets -- -D warnings", "Cargo.toml")
    );

    let pyproject = "[project]\nname = \"x\"\n[project.optional-dependencies]\ntest = [\"pytest>=8\"]\n[tool.ruff]\nline-length = 100\n";
    assert_eq!(
        suggested(&[("pyproject.toml", pyproject)], Test),
        pair("pytest", "pyproject.toml")
    );
    assert_eq!(
        suggested(&[("pyproject.toml", pyproject)], Lint),
        pair("ruff check .", "pyproject.toml")
    );
    let pytest_ish = "[project]\nname = \"x\"\ndependencies = [\"pytest-cov-not-pytest\"]\n";
    assert_eq!(
        suggested(
            &[("pyproject.toml", "[project]\nname = \"pytester\"\n")],
            Test
        ),
        None
    );
    assert_eq!(suggested(&[("pyproject.toml", pytest_ish)], Test), None);
    assert_eq!(
        suggested(&[("pytest.ini", "[pytest]\n")], Test),
        pair("pytest", "pytest.ini")
    );
    let setup_cfg =
        "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n[flake8]\nmax-line-length = 100\n";
    assert_eq!(
        suggested(&[("setup.cfg", setup_cfg)], Test),
        pair("pytest", "setup.cfg [tool:pytest]")
    );
    assert_eq!(
        suggested(&[("setup.cfg", setup_cfg)], Lint),
        pair("flake8", "setup.cfg [flake8]")
    );
    assert_eq!(
        suggested(&[("setup.cfg", "[metadata]\nname = x\n")], Lint),
        None
    );

    let npm_default = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
    assert_eq!(suggested(&[("package.json", npm_default)], Test), None);
    let npm = r#"{"scripts": {"test": "vitest run", "lint": "eslint ."}}"#;
    assert_eq!(
        suggested(&[("package.json", npm)], Test),
        pair("npm test", "package.json scripts.test")
    );
    assert_eq!(
        suggested(&[("package.json", npm)], Lint),
        pair("npm run lint", "package.json scripts.lint")
    );
    assert_eq!(suggested(&[("package.json", "{ not json")], Test), None);

    let go = [("go.mod", "module example.com/x\n\ngo 1.22\n")];
    assert_eq!(suggested(&go, Test), pair("go test ./...", "go.mod"));
    assert_eq!(suggested(&go, Lint), pair("go vet ./...", "go.mod"));

    let makefile = "CFLAGS := -O2\ntest := no\nall: build\n\ntest: build\n\t./run-tests\n";
    assert_eq!(
        suggested(&[("Makefile", makefile)], Test),
        pair("make test", "Makefile test target")
    );
    assert_eq!(
        suggested(&[("Makefile", "test := 1\n\techo test: no\n")], Test),
        None
    );

    assert_eq!(suggested(&[("README.md", "# x\n")], Test), None);
    assert_eq!(suggested(&[], Lint), None);
}

#[test]
fn the_live_view_keeps_the_end_of_a_flood() {
    let (out, reports) = run_in_tmp(
        "head -c 300000 /dev/zero | tr '\\0' a; echo; seq 1 5; echo END",
        &RunOptions::default(),
    );
    assert!(out.passed());
    let shown: String = reports.iter().map(|r| r.new_text.as_str()).collect();
    assert!(shown.ends_with("\n1\n2\n3\n4\n5\nEND\n"), "{}", shown.len());
    assert!(shown.contains("bytes not shown"));
}

/// A command runs in its own session: it cannot reach the workspace's terminal (to
/// draw on it or change its modes), and its whole group is still what is killed.
#[test]
fn a_command_has_no_controlling_terminal_and_leads_its_own_session() {
    let (out, _) = run_in_tmp(
        "if (exec 3</dev/tty) 2>/dev/null; then echo opened; else echo refused; fi; \
         [ \"$(cut -d' ' -f6 /proc/$$/stat)\" = \"$$\" ] && echo leader",
        &RunOptions::default(),
    );
    assert!(out.text.contains("refused"), "{}", out.text);
    assert!(!out.text.contains("opened"), "{}", out.text);
    assert!(out.text.contains("leader"), "{}", out.text);
}
