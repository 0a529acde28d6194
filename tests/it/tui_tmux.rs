//! The real binary in a real terminal: tern runs in a detached tmux session against the
//! loopback OpenAI server; the test types with `send-keys` and reads the screen with
//! `capture-pane`, as a user would.
//!
//! A scenario: start a `Workspace`, `type_line` a message, `wait_for` the text that
//! proves the screen got there, press keys with `keys`, then check the files and
//! `git log` in the `TempRepo`.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{MockServer, Reply, TempRepo};

/// A tern workspace running in its own tmux server (a private socket, so nothing the
/// developer runs in tmux is touched). The server is killed on drop.
struct Workspace {
    socket: String,
}

impl Workspace {
    /// Starts `tern ARGS` in `repo` at `width`x`height`, talking to `api_base`. None when
    /// tmux is not installed.
    fn start(
        repo: &TempRepo,
        api_base: &str,
        args: &[&str],
        width: u16,
        height: u16,
    ) -> Option<Workspace> {
        Workspace::start_with_env(repo, api_base, args, (width, height), &[])
    }

    /// As `start`, with `env` added to tern's environment.
    fn start_with_env(
        repo: &TempRepo,
        api_base: &str,
        args: &[&str],
        (width, height): (u16, u16),
        env: &[(&str, &str)],
    ) -> Option<Workspace> {
        if crate::support::command("tmux").arg("-V").output().is_err() {
            eprintln!("SKIPPED: tmux is not installed (.ci/run installs it)");
            return None;
        }
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "tern-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        // The binary with the private environment TempRepo gives it, as one shell line;
        // the exit code is printed when it ends so the test can see it.
        let cmd = repo.tern(api_base);
        let mut line = format!(
            "cd {} && env -i TERM=xterm-256color",
            quote(repo.path().as_os_str())
        );
        for (key, value) in cmd.get_envs() {
            if let Some(value) = value {
                line.push_str(&format!(" {}={}", key.to_string_lossy(), quote(value)));
            }
        }
        for (key, value) in env {
            line.push_str(&format!(" {key}={}", quote(OsStr::new(value))));
        }
        line.push(' ');
        line.push_str(&quote(cmd.get_program()));
        for arg in args {
            line.push(' ');
            line.push_str(&quote(OsStr::new(arg)));
        }
        line.push_str("; echo \"[tern exited $?]\"; sleep 600");
        let status = crate::support::command("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .args(["-s", "main", &line])
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Some(Workspace { socket })
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = crate::support::command("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The visible screen, as text.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "main"])
    }

    /// Presses tmux key names: `Enter`, `Tab`, `C-c`, `Escape`, `y`.
    fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", "-t", "main", key]);
        }
    }

    /// Types `text` literally, then Enter.
    fn type_line(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "main", "-l", text]);
        self.keys(&["Enter"]);
    }

    /// Waits until the screen shows `text`; returns the screen.
    fn wait_for(&self, text: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "waited {timeout:?} for {text:?}; the screen is:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ctrl-C twice with hunks still to review: tern asks, `y` quits. Returns the screen
    /// once tern has exited.
    fn quit_leaving_hunks(&self) -> String {
        self.keys(&["C-c", "C-c"]);
        // A session keeps them for `--resume`; the demo keeps nothing, and says so.
        let asked = self.wait_for("[y/N]", WAIT);
        assert!(
            asked.contains("to review: kept for tern --resume [y/N]")
                || asked.contains("to review: the demo keeps nothing [y/N]"),
            "{asked}"
        );
        self.keys(&["y"]);
        self.wait_for("[tern exited 0]", WAIT)
    }

    /// The pid of tern, which runs under the pane's shell.
    fn pid(&self) -> String {
        let shell = self.tmux(&["display", "-p", "-t", "main", "#{pane_pid}"]);
        let children = crate::support::command("pgrep")
            .args(["-P", shell.trim()])
            .output()
            .unwrap();
        let pid = String::from_utf8_lossy(&children.stdout).trim().to_string();
        assert!(!pid.is_empty(), "tern runs under the pane's shell");
        pid
    }

    /// Whether the terminal is still on the alternate screen.
    fn alternate_screen(&self) -> bool {
        self.tmux(&["display", "-p", "-t", "main", "#{alternate_on}"])
            .trim()
            == "1"
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = crate::support::command("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn quote(s: &OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

fn repo() -> TempRepo {
    TempRepo::with_files(tern::tui::demo::PROJECT)
}

const WAIT: Duration = Duration::from_secs(20);

/// The demo reply: an explanation and four SEARCH/REPLACE blocks, two per file.
const REPLY: &str = include_str!("../../assets/demo/reply.md");
const COMMIT: &str = "fix: refuse to remove more than is in stock";
/// The models, and the demo's two files in the chat.
const ARGS: [&str; 6] = [
    "--model",
    "gpt-4o",
    "--weak-model",
    "gpt-4o-mini",
    "shop/inventory.py",
    "shop/cli.py",
];

#[test]
fn a_streamed_reply_is_reviewed_hunk_by_hunk_and_the_accepted_hunk_committed() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(REPLY).at_tokens_per_second(200.0));
    server.push_for_model("gpt-4o-mini", Reply::text(COMMIT));
    let repo = repo();
    let Some(tern) = Workspace::start(&repo, &server.base_url(), &ARGS, 160, 48) else {
        return;
    };
    let screen = tern.wait_for("[E] shop/inventory.py", WAIT);
    assert!(screen.contains("Message the model"), "{screen}");
    tern.wait_for("Budget · gpt-4o", WAIT);

    // Type a message; the reply streams into the chat.
    tern.type_line("make remove safe and add a low command");
    tern.wait_for("2 files · 4 hunks", WAIT);
    let sent: String = server.requests()[0]
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert!(sent.contains("make remove safe and add a low command"));
    assert!(
        sent.contains("def remove(self, sku: str, quantity: int)"),
        "the chat files are sent"
    );

    // The review has the focus on the first hunk (a capture may land between the
    // review's summary and its first hunk being drawn: wait for the hunk): accept it,
    // reject the second, apply.
    tern.wait_for("▶ @@ -23,8 +23,12 @@ · pending", WAIT);
    tern.keys(&["y"]);
    tern.wait_for("✓1 ✗0 ·3", WAIT);
    tern.keys(&["n"]);
    tern.wait_for("✓1 ✗1 ·2", WAIT);
    tern.keys(&["Enter"]);
    let screen = tern.wait_for("Applied 1 hunk to 1 file", WAIT);
    // The banner is cut (with `…`) to the pane; the commit has the whole subject.
    assert!(screen.contains("fix: refuse to remov"), "{screen}");
    let subject = repo.git(&["log", "-1", "--format=%s"]);
    assert!(subject.starts_with("fix: refuse to remove"), "{subject}");

    let inventory = repo.read("shop/inventory.py");
    assert!(
        inventory.contains("never more than there is"),
        "the accepted hunk is written"
    );
    assert!(
        !inventory.contains("def low_stock"),
        "the rejected hunk is not"
    );
    assert!(
        !repo.read("shop/cli.py").contains("\"low\""),
        "pending hunks are not written"
    );
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]).trim(), COMMIT);
    assert_eq!(
        repo.git(&["status", "--porcelain"]).trim(),
        "",
        "everything written is committed"
    );

    // Back to the chat: the reply and its footer, the landing's account under it.
    tern.keys(&["Escape"]);
    let screen = tern.wait_for("completion · $", WAIT);
    assert!(screen.contains("Applied 1 hunk to 1 file"), "{screen}");

    // Quit: two hunks still await review, so tern asks first; then the terminal is
    // given back.
    let screen = tern.quit_leaving_hunks();
    assert!(!tern.alternate_screen(), "the alternate screen was left");
    assert!(
        !screen.contains("Message the model"),
        "the TUI is gone: {screen}"
    );
}

#[test]
fn the_demo_streams_its_recorded_reply_into_a_review_with_no_server() {
    let repo = TempRepo::with_files(&[]);
    let Some(tern) = Workspace::start(&repo, "http://127.0.0.1:9/v1", &["--demo"], 80, 24) else {
        return;
    };
    tern.wait_for("demo: a copy of a small project", WAIT);
    // The reply streams at its recorded pace; its edits open the review.
    let screen = tern.wait_for("2 files · 4 hunks", Duration::from_secs(40));
    assert!(
        screen.contains("Chat │ Files │ Map │ Budget │ Review 4"),
        "{screen}"
    );
    tern.keys(&["Escape"]);
    let screen = tern.wait_for("completion · $", WAIT);
    assert!(
        screen.contains("the reply proposes 4 hunks in 2 files"),
        "{screen}"
    );
    tern.quit_leaving_hunks();
    assert!(
        !Path::new(&repo.path().join("shop")).exists(),
        "the demo works in its own directory"
    );
    // Its session went with its temporary repository.
    let sessions = repo.state_dir().join("sessions");
    let left = std::fs::read_dir(&sessions).map_or(0, |dir| dir.count());
    assert_eq!(left, 0, "{}", sessions.display());
}

/// SIGINT (from `kill`: the keyboard's Ctrl-C is a key in raw mode), SIGTERM and
/// SIGHUP: the terminal is restored and tern exits within a second, 128 + the signal.
#[test]
fn signals_restore_the_terminal_and_exit_within_a_second() {
    for (signal, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let server = MockServer::start_in_thread();
        let repo = repo();
        let Some(tern) = Workspace::start(&repo, &server.base_url(), &[], 80, 24) else {
            return;
        };
        tern.wait_for("Message the model", WAIT);
        assert!(tern.alternate_screen());
        let pid = tern.pid();
        let status = crate::support::command("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success());
        let sent = Instant::now();
        tern.wait_for(&format!("[tern exited {code}]"), WAIT);
        assert!(
            sent.elapsed() < Duration::from_millis(1500),
            "SIG{signal} took {:?}",
            sent.elapsed()
        );
        assert!(!tern.alternate_screen(), "SIG{signal}");
    }
}

/// A signal while the workspace waits for something that does not end (here the
/// editor, which it waits for without reading anything else): the process exits
/// within a second anyway, with the signal's code, and neither the editor nor its
/// temporary file outlives it.
#[test]
fn a_signal_ends_the_workspace_even_while_it_waits_for_the_editor() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let scripts = tempfile::tempdir().unwrap();
    let editor = scripts.path().join("editor.sh");
    let seen = scripts.path().join("seen");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\necho \"$$ $1\" > {}.tmp && mv {}.tmp {}\nexec sleep 60\n",
            seen.display(),
            seen.display(),
            seen.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let visual = editor.display().to_string();
    let Some(tern) = Workspace::start_with_env(
        &repo,
        &server.base_url(),
        &[],
        (100, 30),
        &[("VISUAL", &visual)],
    ) else {
        return;
    };
    tern.wait_for("Message the model", WAIT);
    let pid = tern.pid();
    tern.keys(&["C-g"]);
    let start = Instant::now();
    while tern.alternate_screen() {
        assert!(start.elapsed() < WAIT, "the editor never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = crate::support::command("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let sent = Instant::now();
    tern.wait_for("[tern exited 143]", WAIT);
    assert!(
        sent.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        sent.elapsed()
    );
    let seen = std::fs::read_to_string(&seen).unwrap();
    let (editor_pid, file) = seen.trim().split_once(' ').unwrap();
    assert!(!Path::new(file).exists(), "{file} is left behind");
    let start = Instant::now();
    while Path::new(&format!("/proc/{editor_pid}")).exists() {
        assert!(
            start.elapsed() < WAIT,
            "the editor {editor_pid} outlives tern"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The user's editor gets no form of the API key in its environment.
#[test]
fn the_editor_never_sees_the_key() {
    const KEY: &str = "sk-proj-editorTest0123456789abcdef";
    let server = MockServer::start_in_thread();
    let repo = repo();
    let scripts = tempfile::tempdir().unwrap();
    let editor = scripts.path().join("editor.sh");
    let dump = scripts.path().join("env.txt");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh
env > '{}'
printf 'edited' > \"$1\"\n",
            dump.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bearer = format!("Bearer {KEY}");
    let dressed = "sk-proj-edi\u{200b}torTest0123456789abcdef";
    let visual = editor.display().to_string();
    let Some(tern) = Workspace::start_with_env(
        &repo,
        &server.base_url(),
        &[],
        (100, 30),
        &[
            ("VISUAL", &visual),
            ("OPENAI_API_KEY", KEY),
            ("MY_COPY", KEY),
            ("AUTH_HEADER", &bearer),
            ("DRESSED", dressed),
            ("KEEP_ME", "1"),
        ],
    ) else {
        return;
    };
    tern.wait_for("Message the model", WAIT);
    tern.keys(&["C-g"]);
    tern.wait_for("› edited", WAIT);
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(env.contains("KEEP_ME=1"), "{env}");
    for name in ["OPENAI_API_KEY", "MY_COPY", "AUTH_HEADER", "DRESSED"] {
        assert!(!env.contains(&format!("{name}=")), "the editor got {name}");
    }
    let plain: String = env.chars().filter(|&c| c != '\u{200b}').collect();
    assert!(!plain.contains(KEY), "the editor got the key");
}

#[test]
fn an_engine_panic_restores_the_terminal_says_so_and_exits_non_zero() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    // TERN_TEST_PANIC (debug builds only) makes `/debug-panic` panic in the engine.
    let Some(tern) = Workspace::start_with_env(
        &repo,
        &server.base_url(),
        &[],
        (100, 24),
        &[("TERN_TEST_PANIC", "1")],
    ) else {
        return;
    };
    tern.wait_for("Message the model", WAIT);
    tern.type_line("/debug-panic");
    tern.keys(&["Enter"]);
    let screen = tern.wait_for("[tern exited 1]", WAIT);
    assert!(!tern.alternate_screen(), "the terminal is restored");
    assert!(screen.contains("internal error"), "{screen}");
}

/// A background job's panic (here the turn's stream) ends the workspace the same way:
/// the terminal restored, a message, exit 1, not a spinner forever.
#[test]
fn a_panic_in_a_background_job_restores_the_terminal_and_exits_non_zero() {
    let server = MockServer::start_in_thread();
    let repo = repo();
    let Some(tern) = Workspace::start_with_env(
        &repo,
        &server.base_url(),
        &[],
        (100, 24),
        &[("TERN_TEST_PANIC", "turn")],
    ) else {
        return;
    };
    tern.wait_for("Message the model", WAIT);
    tern.type_line("hello");
    tern.keys(&["Enter"]);
    let screen = tern.wait_for("[tern exited 1]", WAIT);
    assert!(!tern.alternate_screen(), "the terminal is restored");
    assert!(screen.contains("internal error"), "{screen}");
}

/// The user's editor in a real terminal: tern steps aside (the editor reads the keys
/// typed while it runs, so tern's terminal reader must have stopped), then takes the
/// terminal back and shows the edited draft; in the review, `s` splits a hunk and `e`
/// edits one of its parts, and applying writes the user's lines.
#[test]
fn the_users_editor_writes_the_draft_and_a_hunk_between_splits() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(REPLY));
    server.push_for_model("gpt-4o-mini", Reply::text(COMMIT));
    let repo = repo();
    // The draft (a .md file): the script reads a line from the terminal and puts it in
    // front; a hunk (.py): it rewrites a phrase.
    let scripts = tempfile::tempdir().unwrap();
    let editor = scripts.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\ncase \"$1\" in\n  *.md) IFS= read -r typed; printf '%s: %s' \"$typed\" \"$(cat \"$1\")\" > \"$1\" ;;\n  *) sed 's/never more than there is/NEVER MORE THAN THERE IS/' \"$1\" > \"$1.new\" && mv \"$1.new\" \"$1\" ;;\nesac\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let visual = editor.display().to_string();
    let Some(tern) = Workspace::start_with_env(
        &repo,
        &server.base_url(),
        &ARGS,
        (160, 48),
        &[("VISUAL", &visual), ("EDITOR", "false")],
    ) else {
        return;
    };
    tern.wait_for("Budget · gpt-4o", WAIT);
    tern.tmux(&["send-keys", "-t", "main", "-l", "make remove safe"]);
    tern.wait_for("› make remove safe", WAIT);
    tern.keys(&["C-g"]);
    // The editor has the terminal: the workspace left the alternate screen.
    let start = Instant::now();
    while tern.alternate_screen() {
        assert!(start.elapsed() < WAIT, "the editor never got the terminal");
        std::thread::sleep(Duration::from_millis(50));
    }
    tern.type_line("from the editor");
    let screen = tern.wait_for("› from the editor: make remove safe", WAIT);
    assert!(tern.alternate_screen(), "the workspace is back");
    assert!(
        screen.contains("[E] shop/inventory.py"),
        "redrawn in full: {screen}"
    );
    tern.keys(&["Enter"]);
    let screen = tern.wait_for("2 files · 4 hunks", WAIT);
    let sent: String = server.requests()[0]
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert!(sent.contains("from the editor: make remove safe"), "{sent}");

    // The first hunk changes the docstring and adds a check, with an unchanged line
    // between them: `s` makes two hunks of it, the first selected.
    assert!(
        screen.contains("▶ @@ -23,8 +23,12 @@ · pending"),
        "{screen}"
    );
    tern.keys(&["s"]);
    let screen = tern.wait_for("2 files · 5 hunks", WAIT);
    assert!(screen.contains("▶ @@ -23,5 +23,5 @@ · pending"), "{screen}");
    // `e` on it, after a pause (within a second of `s` it would be typing): the
    // editor rewrites its line; the part is accepted as the user's.
    std::thread::sleep(tern::tui::typing::TYPING_WINDOW);
    tern.keys(&["e"]);
    let screen = tern.wait_for("✎ yours", WAIT);
    assert!(screen.contains("the shelf; NEVER MORE THA"), "{screen}");
    assert!(screen.contains("✓1 ✗0 ·4"), "{screen}");
    tern.keys(&["Enter"]);
    tern.wait_for("Applied 1 hunk to 1 file", WAIT);
    let inventory = repo.read("shop/inventory.py");
    assert!(
        inventory.contains("off the shelf; NEVER MORE THAN THERE IS."),
        "the user's line is written: {inventory}"
    );
    assert!(
        !inventory.contains("raise ValueError"),
        "the other part is still pending, not written"
    );
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]).trim(), COMMIT);

    tern.quit_leaving_hunks();
    assert!(!tern.alternate_screen());
}

/// The demo's repository with a pre-commit hook that takes `secs` seconds.
/// A repository whose pre-commit hook holds the landing until the test lets it go
/// (`.git/hook-go`), or a minute has passed: a fixed sleep could end before the keys
/// that quit arrive on a loaded machine.
fn repo_with_held_hook() -> TempRepo {
    let repo = repo();
    repo.hook(
        "pre-commit",
        "i=0; while [ ! -e .git/hook-go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done",
    );
    repo
}

/// Types a message, accepts every hunk of the reply, applies, and at once quits.
fn apply_all_then_quit(tern: &Workspace) {
    tern.wait_for("Budget · gpt-4o", WAIT);
    tern.type_line("make remove safe and add a low command");
    tern.wait_for("2 files · 4 hunks", WAIT);
    tern.keys(&["A"]);
    tern.wait_for("✓4 ✗0 ·0", WAIT);
    tern.keys(&["Enter"]);
    tern.wait_for("applying", WAIT);
    tern.keys(&["C-c", "C-c"]);
    tern.wait_for("landing finishes first", WAIT);
    tern.keys(&["y"]);
}

#[test]
fn quitting_while_the_landing_commits_waits_for_it_and_the_session_keeps_its_commit() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(REPLY).at_tokens_per_second(400.0));
    server.push_for_model("gpt-4o-mini", Reply::text(COMMIT));
    let repo = repo_with_held_hook();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let Some(tern) = Workspace::start(&repo, &server.base_url(), &ARGS, 160, 48) else {
        return;
    };
    apply_all_then_quit(&tern);
    tern.wait_for("waiting for the landing under way", WAIT);
    std::fs::write(repo.path().join(".git/hook-go"), "").unwrap();
    let screen = tern.wait_for("[tern exited 0]", WAIT);
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]).trim(), COMMIT);
    // Its last words, once the terminal is back, say what the landing did.
    let head = repo.git(&["rev-parse", "--short=7", "HEAD"]);
    assert!(
        screen.contains(&format!(
            "tern: Applied 4 hunks to 2 files · commit {} {COMMIT}",
            head.trim()
        )),
        "{screen}"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]).trim(), "");
    // The saved session knows the turn's commit: its undo takes it back.
    let out = repo
        .tern(&server.base_url())
        .args(["undo", "--turn"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), base);
}

#[test]
fn quitting_while_the_commit_message_is_awaited_cancels_the_landing_before_it_writes() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(REPLY).at_tokens_per_second(400.0));
    server.push_for_model(
        "gpt-4o-mini",
        Reply::text(COMMIT).with_start_delay(Duration::from_secs(20)),
    );
    let repo = repo();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let Some(tern) = Workspace::start(&repo, &server.base_url(), &ARGS, 160, 48) else {
        return;
    };
    let started = Instant::now();
    apply_all_then_quit(&tern);
    let screen = tern.wait_for("[tern exited 0]", WAIT);
    let id = repo.sessions().list()[0].id.clone();
    assert!(
        screen.contains(&format!(
            "tern: the landing was cancelled before anything was written; 4 hunks kept for `tern --resume={id}`"
        )),
        "its last words say so: {screen}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "it waited for the commit message"
    );
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), base, "nothing committed");
    assert_eq!(
        repo.git(&["status", "--porcelain"]).trim(),
        "",
        "nothing written"
    );
    // The proposal is saved, decisions and all, for --resume.
    let saved = serde_json::to_string(&repo.newest_session()).unwrap();
    assert!(
        saved.contains("never more than there is"),
        "the proposal is kept"
    );
}

/// Hunks left for review keep their session: the next workspace opened without
/// `--resume` says so first, with the way back (and, quit at once, keeps no session of
/// its own); `tern --resume=ID` brings the review back.
#[test]
fn the_next_workspace_names_a_session_left_with_hunks() {
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(REPLY));
    let repo = repo();
    let Some(tern) = Workspace::start(&repo, &server.base_url(), &ARGS, 160, 48) else {
        return;
    };
    tern.wait_for("Budget · gpt-4o", WAIT);
    tern.type_line("make remove safe and add a low command");
    tern.wait_for("2 files · 4 hunks", WAIT);
    tern.quit_leaving_hunks();
    drop(tern);
    let sessions = repo.sessions().list();
    assert_eq!(sessions.len(), 1);
    let id = sessions[0].id.clone();
    assert_eq!(sessions[0].pending_hunks, 4);

    let args = ["--model", "gpt-4o"];
    let tern = Workspace::start(&repo, &server.base_url(), &args, 160, 48).unwrap();
    let screen = tern.wait_for(&format!("--resume={id}`"), WAIT);
    let first = screen
        .lines()
        .skip_while(|l| !l.contains("╭ Chat"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        first.contains(&format!("session {id} (just now:")),
        "the chat's first line: {screen}"
    );
    // (wrapped in the chat pane: "… has 4 / hunks pending: …")
    assert!(
        first.contains("has 4") && screen.contains("hunks pending: `tern --resume="),
        "{screen}"
    );
    tern.keys(&["C-c", "C-c"]);
    tern.wait_for("[tern exited 0]", WAIT);
    drop(tern);
    assert_eq!(
        repo.sessions().list().len(),
        1,
        "the empty workspace kept none"
    );

    let resume = format!("--resume={id}");
    let tern = Workspace::start(&repo, &server.base_url(), &[&resume], 160, 48).unwrap();
    tern.wait_for("2 files · 4 hunks", WAIT);
    tern.wait_for("[E] shop/inventory.py", WAIT);
}

/// Headless on a terminal, stdout and stderr share the screen: a warning that comes
/// after a reply with no line break of its own starts on its own line, and the reply's
/// last letters (held back while they could begin the key) come before it, not after.
#[test]
fn a_headless_reply_ends_its_line_before_a_warning_on_the_same_screen() {
    let server = MockServer::start_in_thread();
    // More cached tokens than were sent: the run warns once the reply is in.
    server.push(Reply::text("the answer is yes").with_cached_tokens(100_000));
    let repo = TempRepo::with_files(&[("a.txt", "one\n")]);
    let Some(tern) = Workspace::start(
        &repo,
        &server.base_url(),
        &["--model", "gpt-4o", "-m", "go"],
        400,
        20,
    ) else {
        return;
    };
    let screen = tern.wait_for("[tern exited", WAIT);
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let reply = lines
        .iter()
        .position(|l| l.ends_with("the answer is yes"))
        .unwrap_or_else(|| panic!("the reply is not whole on a line of its own:\n{screen}"));
    assert_eq!(lines[reply], "the answer is yes", "{screen}");
    assert!(
        lines[reply + 1].starts_with("tern: warning: the server reported 100000 cached tokens"),
        "{screen}"
    );
    assert!(lines[reply + 2].starts_with("Tokens: "), "{screen}");
    assert!(screen.contains("[tern exited 0]"), "{screen}");
}
