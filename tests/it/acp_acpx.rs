//! `tern acp` end to end with a published ACP client: `acpx` from the npm registry
//! (0.19.1), which `.ci/run` installs outside the repository and names in `TERN_ACPX`.
//! Skipped, saying so, where it is not installed. acpx answers permission requests
//! non-interactively by policy, matching a tool call's title: so it accepts one hunk
//! and rejects the other, as a user in an editor would.

use crate::acp::{TWO_FILE_EDIT, only_the_hunk_of_a_landed, repo};
use crate::support::{MockServer, Reply, texts};

/// The `acpx` to run, if one is installed.
fn acpx() -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(std::env::var_os("TERN_ACPX")?);
    path.is_file().then_some(path)
}

#[test]
fn acpx_accepts_one_hunk_and_rejects_the_other_and_git_holds_exactly_the_accepted_one() {
    let Some(acpx) = acpx() else {
        eprintln!(
            "skipped: acpx is not installed (`npm install acpx@0.19.1` in a directory outside the repository, then TERN_ACPX=<it>/node_modules/.bin/acpx; .ci/run does this)"
        );
        return;
    };
    let server = MockServer::start_in_thread();
    server.push_for_model("gpt-4o", Reply::text(TWO_FILE_EDIT));
    server.push_for_model("gpt-4o-mini", Reply::text("Shout alpha"));
    let repo = repo();
    let private = repo.state_dir().parent().unwrap().to_path_buf();
    let agent = format!("{} --model gpt-4o acp", env!("CARGO_BIN_EXE_tern"));
    // The titles carry the hunks' cautions, as the review's: the files are not in the
    // chat.
    let policy = serde_json::json!({
        "autoApprove": ["Edit a.txt (hunk 1 of 2): not in the chat"],
        "autoDeny": ["Edit b.txt (hunk 2 of 2): not in the chat"],
    });
    let out = crate::support::command(&acpx)
        .current_dir(repo.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &private)
        .env("XDG_CONFIG_HOME", private.join("config"))
        .env("XDG_CACHE_HOME", private.join("cache"))
        .env("TERN_STATE_DIR", repo.state_dir())
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-never-shown")
        .env("NO_COLOR", "1")
        .args(["--agent", &agent, "--cwd"])
        .arg(repo.path())
        .args([
            "--permission-policy",
            &policy.to_string(),
            "--timeout",
            "60",
        ])
        .args(["exec", "shout the greek letters"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    only_the_hunk_of_a_landed(&repo);
    assert!(stdout.contains("applied 1 hunk to a.txt"), "{stdout}");
    assert!(
        !stdout.contains("sk-test-key-never-shown") && !stderr.contains("sk-test-key-never-shown")
    );
}
