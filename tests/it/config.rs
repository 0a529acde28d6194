//! Settings layering and strict config files.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use tern::config::{ConfigError, ConfigSources};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn each_layer_overrides_the_one_below() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user/config.toml");
    let repo = dir.path().join("repo");
    let explicit = dir.path().join("explicit.toml");
    write(
        &user,
        "model = \"from-user\"\nweak_model = \"weak-user\"\ntheme = \"light\"\nmap_tokens = 300\n",
    );
    write(
        &repo.join(".tern.toml"),
        "theme = \"from-repo\"\nmap_tokens = 200\n",
    );
    write(&explicit, "model = \"from-explicit\"\n");
    let sources = ConfigSources {
        user_file: Some(user),
        repo_root: Some(repo),
        trust_file: None,
        explicit_file: None,
    };

    let s = crate::support::load_settings(&[], &sources, no_env)
        .unwrap()
        .settings;
    assert_eq!(s.model, "from-user");
    assert_eq!(s.weak_model, "weak-user");
    assert_eq!(s.theme.name, "from-repo");
    assert_eq!(s.map_tokens, Some(200));

    let config_flag = format!("--config={}", explicit.display());
    let s = crate::support::load_settings(&[&config_flag], &sources, no_env)
        .unwrap()
        .settings;
    assert_eq!(s.model, "from-explicit");

    let s = crate::support::load_settings(
        &[&config_flag, "--model", "from-flag", "--map-tokens", "7"],
        &sources,
        no_env,
    )
    .unwrap()
    .settings;
    assert_eq!(s.model, "from-flag");
    assert_eq!(s.map_tokens, Some(7));
}

#[test]
fn env_lies_between_files_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write(
        &repo.join(".tern.toml"),
        "api_base = \"http://from-file:1/v1\"\n",
    );
    let sources = ConfigSources {
        user_file: None,
        repo_root: Some(repo),
        trust_file: None,
        explicit_file: None,
    };
    // OPENAI_API_BASE is the older alias: it beats the file ...
    let env = |k: &str| (k == "OPENAI_API_BASE").then(|| "http://from-env:2/v1".to_string());
    let s = crate::support::load_settings(&[], &sources, env)
        .unwrap()
        .settings;
    assert_eq!(s.api_base, "http://from-env:2/v1");
    // ... and loses to the flag (and to OPENAI_BASE_URL, which clap reads into it).
    let s = crate::support::load_settings(&["--api-base", "http://flag:3/v1"], &sources, env)
        .unwrap()
        .settings;
    assert_eq!(s.api_base, "http://flag:3/v1");
}

#[test]
fn flags_switch_features_off() {
    let s = crate::support::load_settings(
        &[
            "--no-double-buffer",
            "--no-verify",
            "--no-auto-commits",
            "--no-dirty-commits",
        ],
        &ConfigSources::default(),
        no_env,
    )
    .unwrap()
    .settings;
    assert!(!s.double_buffer && !s.verify_hooks && !s.auto_commits && !s.dirty_commits);
}

#[test]
fn unknown_keys_are_errors_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let file = repo.join(".tern.toml");
    write(&file, "model = \"gpt-4o\"\n\nmodle = \"typo\"\n");
    let sources = ConfigSources {
        user_file: None,
        repo_root: Some(repo),
        trust_file: None,
        explicit_file: None,
    };
    let err = crate::support::load_settings(&[], &sources, no_env).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ConfigError::Parse { .. }));
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("line 3"), "{text}");
    assert!(text.contains("modle"), "{text}");
}

#[test]
fn wrong_types_and_bad_values_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    write(&file, "double_buffer = \"yes\"\n");
    let flag = format!("--config={}", file.display());
    let err =
        crate::support::load_settings(&[&flag], &ConfigSources::default(), no_env).unwrap_err();
    assert!(err.to_string().contains("double_buffer"), "{err}");

    write(&file, "checkpoint_threshold = 0.9\nswap_threshold = 0.8\n");
    let err =
        crate::support::load_settings(&[&flag], &ConfigSources::default(), no_env).unwrap_err();
    assert!(matches!(err, ConfigError::Invalid(_)), "{err}");

    let err = crate::support::load_settings(
        &["--api-base", "localhost:11434"],
        &ConfigSources::default(),
        no_env,
    )
    .unwrap_err();
    assert!(err.to_string().contains("http://"), "{err}");

    let missing = format!("--config={}", dir.path().join("missing.toml").display());
    let err =
        crate::support::load_settings(&[&missing], &ConfigSources::default(), no_env).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
}

#[test]
fn the_api_key_never_shows_in_debug_output() {
    let s = crate::support::load_settings(
        &["--api-key", "sk-hidden-123"],
        &ConfigSources::default(),
        no_env,
    )
    .unwrap()
    .settings;
    assert!(!format!("{s:?}").contains("sk-hidden-123"));
    assert_eq!(s.api_key.unwrap().expose(), "sk-hidden-123");
}

/// A flag's number out of its range is a bad flag value like any other (`-1`, `abc`,
/// one past `usize`): exit 2, the usage error, never 1; a config file's stays 1.
#[test]
fn a_flag_out_of_range_exits_2_like_every_other_bad_flag_value() {
    let repo = crate::support::TempRepo::with_files(&[("a.txt", "x\n")]);
    let huge = (tern::config::MAP_TOKENS_MAX + 1).to_string();
    for value in ["-1", "abc", "99999999999999999999", huge.as_str()] {
        let out = repo
            .tern("http://127.0.0.1:9/v1")
            .args(["tokens", "--map-tokens", value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--map-tokens {value}: {stderr}");
    }
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["tokens", "--map-tokens", &huge])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--map-tokens {huge} is out of range")),
        "{stderr}"
    );
    let config = repo.path().join(".git/bad.toml");
    write(&config, &format!("map_tokens = {huge}\n"));
    let out = repo
        .tern("http://127.0.0.1:9/v1")
        .args(["--config", config.to_str().unwrap(), "tokens"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
