//! The settings table as a whole: any TOML value of any type for any key, from any
//! source, gives a setting in its range or an error, never a panic; and no number is
//! taken by a row without a range.

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// Any TOML value: numbers of every size and kind (NaN, infinities, the ends of i64),
/// strings, booleans, and small arrays and tables of them.
fn any_value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(toml::Value::Integer),
        prop_oneof![
            Just(i64::MAX),
            Just(i64::MIN),
            Just(0),
            Just(-1),
            0i64..100_000,
            0i64..20_000_000,
        ]
        .prop_map(toml::Value::Integer),
        any::<f64>().prop_map(toml::Value::Float),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(1e300),
            0.0f64..1.0,
            0.0f64..2e6,
        ]
        .prop_map(toml::Value::Float),
        any::<bool>().prop_map(toml::Value::Boolean),
        "\\PC{0,12}".prop_map(toml::Value::String),
        prop_oneof![
            Just("dark"),
            Just("auto"),
            Just("off"),
            Just("udiff"),
            Just("../x")
        ]
        .prop_map(|s| toml::Value::String(s.into())),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(toml::Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..3)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
}

/// `key = value` as a config file holds it.
fn file_text(key: &str, value: &toml::Value) -> String {
    let mut table = toml::Table::new();
    table.insert(key.to_string(), value.clone());
    toml::to_string(&table).expect("a table of one value serializes")
}

/// A number the row could hold: an integer for an integer row (not below zero), any
/// number for a row of fractions.
fn as_number(value: &toml::Value, integer: bool) -> Option<f64> {
    match value {
        toml::Value::Integer(n) if !integer || *n >= 0 => Some(*n as f64),
        toml::Value::Float(x) if !integer => Some(*x),
        _ => None,
    }
}

/// What loaded settings are used for: durations added to the clock, the window and its
/// budgets. None of it may panic for any setting that loads.
fn use_everything(s: &Settings) {
    let options = crate::llm::ClientOptions::from(s);
    let now = Instant::now();
    for d in [
        options.connect_timeout,
        options.read_timeout,
        options.retry_budget,
        Duration::from_secs(s.command_timeout_secs),
    ] {
        assert!(now.checked_add(d).is_some(), "{d:?}");
    }
    let model = crate::llm::ModelInfo::lookup(&s.model);
    let window = crate::context::Window::for_model(&model, s.context_window, s.reserve_output);
    assert!(window.prompt_limit <= window.window);
    let _ = crate::repomap::default_budget(window.window, false);
    let _ = crate::context::history::default_budget(window.window);
    let _ = crate::context::double_buffer::DoubleBuffer::new(
        s.double_buffer,
        s.checkpoint_threshold,
        s.swap_threshold,
    )
    .marks(s.max_chat_history_tokens.unwrap_or(1024));
}

/// How a config reaches `load`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Route {
    UserFile,
    UntrustedRepository,
    Flags,
}

/// Loads `text` as the user's config, as an untrusted repository's, and as flags.
fn every_way(dir: &Path, text: &str) -> Vec<(Route, Result<Settings, ConfigError>)> {
    let user = dir.join("user.toml");
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).expect("a temporary directory");
    std::fs::write(&user, text).expect("a temporary file");
    std::fs::write(root.join(".tern.toml"), text).expect("a temporary file");
    let no_env = |_: &str| None;
    let as_user = ConfigSources {
        user_file: Some(user),
        ..ConfigSources::default()
    };
    let as_repo = ConfigSources {
        repo_root: Some(root),
        ..ConfigSources::default()
    };
    let settings = |loaded: Result<Loaded, ConfigError>| loaded.map(|l| l.settings);
    let mut out = vec![
        (
            Route::UserFile,
            settings(load(&SettingsLayer::default(), &as_user, no_env)),
        ),
        (
            Route::UntrustedRepository,
            settings(load(&SettingsLayer::default(), &as_repo, no_env)),
        ),
    ];
    if let Ok(flags) = toml::from_str::<SettingsLayer>(text) {
        let loaded = load(&flags, &ConfigSources::default(), no_env);
        out.push((Route::Flags, settings(loaded)));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        // Failures are kept with the integration tests' (the crate root holds only
        // what the project is made of).
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/proptest-regressions/settings_table.txt",
            ),
        )),
        ..ProptestConfig::default()
    })]

    /// Every row, any value, every source: a value in the row's range or an error,
    /// never a panic; a number in range is never refused for its range; and a row
    /// without a range takes no number.
    #[test]
    fn any_value_of_any_setting_loads_in_range_or_is_refused(
        row in 0..table().len(),
        value in any_value(),
    ) {
        let row = table()[row];
        let text = file_text(row.name, &value);
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (route, loaded) in every_way(dir.path(), &text) {
            let wanted = row.bounds.and_then(|b| as_number(&value, b.integer).map(|n| (b, n)));
            match (loaded, row.bounds) {
                (Ok(s), Some(bounds)) => {
                    if let Some(n) = s.number(row.name) {
                        prop_assert!(bounds.holds(n), "{route:?} {text}: {n}");
                    }
                    use_everything(&s);
                }
                (Ok(s), None) => {
                    prop_assert!(
                        !matches!(value, toml::Value::Integer(_) | toml::Value::Float(_)),
                        "{} took a number but has no range: {text}", row.name
                    );
                    use_everything(&s);
                }
                (Err(ConfigError::OutOfRange { what, .. }), _) => {
                    let flag = row.name.replace('_', "-");
                    prop_assert!(what.contains(row.name) || what.contains(&flag), "{what}");
                    prop_assert!(!wanted.is_some_and(|(b, n)| b.holds(n)), "{route:?} {text}: {what}");
                }
                // Only how the thresholds relate refuses a number in range.
                (Err(e), _) if wanted.is_some_and(|(b, n)| b.holds(n)) => {
                    prop_assert!(matches!(&e, ConfigError::Invalid(why) if why.contains("threshold")), "{route:?} {text}: {e}");
                }
                (Err(_), _) => {}
            }
        }
    }
}

#[test]
fn the_ends_of_every_range_load_and_are_usable() {
    let dir = tempfile::tempdir().unwrap();
    for row in table() {
        let Some(bounds) = row.bounds else { continue };
        for end in [bounds.min, bounds.max] {
            let value = match bounds.integer {
                true => toml::Value::Integer(end as i64),
                false => toml::Value::Float(end),
            };
            let text = file_text(row.name, &value);
            for (route, loaded) in every_way(dir.path(), &text) {
                match loaded {
                    Ok(s) => {
                        // A repository's config may have been refused the value.
                        if route != Route::UntrustedRepository {
                            assert_eq!(s.number(row.name), Some(end), "{route:?} {text}");
                        }
                        use_everything(&s);
                    }
                    // Only how the two thresholds relate may refuse an end.
                    Err(ConfigError::Invalid(why)) => assert!(why.contains("threshold"), "{why}"),
                    Err(e) => panic!("{route:?} {text}: {e}"),
                }
            }
        }
    }
    assert!(
        table()
            .iter()
            .filter_map(|r| r.bounds)
            .all(|b| b.min <= b.max)
    );
}
