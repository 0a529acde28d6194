//! Themes as data: UI colours and the syntect theme for code, read from TOML
//! (`themes/dark.toml`, `themes/light.toml`, or a file of the user's). A theme that
//! cannot be used is reported and the default is used instead: a typo in a colour must
//! never keep tern from starting. A theme a repository's config named is an untrusted
//! file: what is said about it never quotes it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use syntect::highlighting::{Theme as SyntaxTheme, ThemeSet};

use crate::config::{ThemeChoice, theme_candidates};

/// The built-in themes, by name. The first is the default and the base every other
/// theme is applied over.
const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
];

/// Declares the colour table once: the struct, and the setter a theme file goes
/// through (so a key in a file and a field here can never disagree).
macro_rules! colors {
    ($( $table:ident . $field:ident ),* $(,)?) => {
        /// Every colour a theme names.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Colors {
            $( pub $field: Color, )*
        }

        impl Colors {
            const UNSET: Colors = Colors { $( $field: Color::Reset, )* };

            /// Sets `[table] key` (one of `keys()`).
            fn set(&mut self, table: &str, key: &str, color: Color) {
                match (table, key) {
                    $( (stringify!($table), stringify!($field)) => self.$field = color, )*
                    _ => {}
                }
            }

            /// Every `table.key` name: what a theme file may set.
            pub fn keys() -> &'static [&'static str] {
                &[$( concat!(stringify!($table), ".", stringify!($field)), )*]
            }
        }
    };
}

colors! {
    ui.bg, ui.fg, ui.dim, ui.accent, ui.border, ui.border_focused, ui.selection,
    ui.user, ui.assistant, ui.notice, ui.warning, ui.error, ui.heading, ui.link,
    ui.inline_code, ui.code_gutter, ui.ok, ui.caution, ui.danger,
    sections.system, sections.examples, sections.readonly_files, sections.repo_map,
    sections.history, sections.editable_files, sections.command_output, sections.review_diff,
    sections.current,
    sections.reminder, sections.reserved, sections.free,
    diff.added, diff.removed, diff.added_bg, diff.removed_bg, diff.context,
    diff.line_number, diff.hunk_header, diff.accepted, diff.rejected, diff.pending,
}

/// A theme file as written: every key optional, unknown keys refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    syntax: Option<String>,
    #[serde(default)]
    ui: BTreeMap<String, String>,
    #[serde(default)]
    sections: BTreeMap<String, String>,
    #[serde(default)]
    diff: BTreeMap<String, String>,
}

/// A resolved theme.
#[derive(Debug, Clone)]
pub struct Theme {
    pub name: String,
    pub c: Colors,
    pub syntax_name: String,
    pub syntax: Arc<SyntaxTheme>,
}

impl Theme {
    /// The default theme (built in, so it always loads).
    pub fn default_theme() -> Theme {
        let (name, text) = BUILTIN[0];
        apply(base(), name, text, None).expect("the built-in default theme is valid")
    }

    /// Loads a theme by built-in name or file path. When it cannot be used, returns the
    /// default theme and says why.
    pub fn load(choice: &ThemeChoice) -> (Theme, Option<String>) {
        match Theme::try_load(choice) {
            Ok(theme) => (theme, None),
            Err(why) => (
                Theme::default_theme(),
                Some(format!(
                    "theme {:?} not used ({why}); using the default theme",
                    choice.name
                )),
            ),
        }
    }

    fn try_load(choice: &ThemeChoice) -> Result<Theme, ThemeError> {
        let wanted = choice.name.as_str();
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == wanted) {
            return apply(base(), name, text, None);
        }
        // A repository's theme file was resolved inside it when settings loaded; its
        // plain names are only looked for among the user's own themes.
        let mut candidates = theme_candidates(wanted, Path::new(""));
        if choice.from_repository && !Path::new(wanted).is_absolute() {
            candidates.drain(..2);
        }
        // A file first; else something else in its place (a FIFO, a directory) is
        // refused for what it is when read, not called missing.
        let path = candidates
            .iter()
            .find(|p| p.is_file())
            .or_else(|| candidates.iter().find(|p| p.exists()))
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                ThemeError::NotFound {
                    builtins: names.join(", "),
                }
            })?;
        let text =
            crate::regular_file::read_to_string(&path, crate::regular_file::MAX_SETTINGS_BYTES)
                .map_err(|source| ThemeError::Read {
                    path: path.clone(),
                    source,
                })?;
        let name = path
            .file_stem()
            .map_or(wanted.to_string(), |s| s.to_string_lossy().into_owned());
        let file = File {
            path: &path,
            quote: !choice.from_repository,
        };
        apply(base(), &name, &text, Some(file))
    }

    pub fn text(&self) -> Style {
        Style::new().fg(self.c.fg).bg(self.c.bg)
    }

    pub(crate) fn dim(&self) -> Style {
        Style::new().fg(self.c.dim)
    }

    pub fn border(&self, focused: bool) -> Style {
        if focused {
            Style::new()
                .fg(self.c.border_focused)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(self.c.border)
        }
    }

    /// A hidden character's marker (`⟨U+202E⟩`): the warning colour, reversed, so that
    /// it never reads as the text around it.
    pub(crate) fn hidden_marker(&self) -> Style {
        Style::new()
            .fg(self.c.warning)
            .add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }

    /// The highlight of the selected row in a list.
    pub fn selected(&self) -> Style {
        Style::new()
            .bg(self.c.selection)
            .add_modifier(Modifier::BOLD)
    }

    /// Green, yellow or red by how full something is (a fraction of 1).
    pub fn fill(&self, fraction: f64) -> Color {
        if fraction < 0.60 {
            self.c.ok
        } else if fraction < 0.85 {
            self.c.caution
        } else {
            self.c.danger
        }
    }
}

/// The base every theme is applied over: the built-in default, parsed once.
fn base() -> Colors {
    static BASE: OnceLock<Colors> = OnceLock::new();
    BASE.get_or_init(|| {
        let (name, text) = BUILTIN[0];
        let file: ThemeFile = toml::from_str(text).expect("the default theme parses");
        let mut colors = Colors::UNSET;
        set_all(&mut colors, &file, name, true).expect("the default theme's colours are valid");
        colors
    })
    .clone()
}

/// A theme file, and whether what is said about it may quote it (not when a
/// repository named it).
#[derive(Clone, Copy)]
struct File<'a> {
    path: &'a Path,
    quote: bool,
}

/// Why a theme cannot be used. What a repository's theme holds is never quoted: its
/// values and unknown keys are left out (`None`), its TOML errors given by position.
#[derive(Debug, thiserror::Error)]
enum ThemeError {
    #[error("no built-in theme of that name ({builtins}) and no such file")]
    NotFound { builtins: String },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: {source}")]
    Toml {
        origin: String,
        source: toml::de::Error,
    },
    /// Not TOML, or not a theme's shape: where, as "line L, column C".
    #[error("{origin}: not a theme file ({position})")]
    NotTheme { origin: String, position: String },
    #[error("{origin}: {}", unknown_key(table, key.as_deref()))]
    UnknownKey {
        origin: String,
        table: &'static str,
        key: Option<String>,
    },
    #[error("{origin}: [{table}] {key}{} is not a colour", quoted(" = ", value))]
    NotAColour {
        origin: String,
        table: &'static str,
        key: String,
        value: Option<String>,
    },
    #[error(
        "{origin}: no syntax theme{} of that name; known: {known}",
        quoted(" ", name)
    )]
    NoSyntaxTheme {
        origin: String,
        name: Option<String>,
        known: String,
    },
}

/// `value` quoted after `before`, or nothing when it may not be quoted.
fn quoted(before: &str, value: &Option<String>) -> String {
    value
        .as_ref()
        .map_or_else(String::new, |v| format!("{before}{v:?}"))
}

fn unknown_key(table: &str, key: Option<&str>) -> String {
    match key {
        Some(key) => format!("unknown key [{table}] {key}"),
        None => format!("a key of [{table}] is not a theme's"),
    }
}

fn apply(
    mut colors: Colors,
    name: &str,
    text: &str,
    file: Option<File>,
) -> Result<Theme, ThemeError> {
    let origin = file.map_or_else(
        || format!("built-in theme {name}"),
        |f| f.path.display().to_string(),
    );
    let quote = file.is_none_or(|f| f.quote);
    let parsed: ThemeFile = toml::from_str(text).map_err(|source| match quote {
        true => ThemeError::Toml {
            origin: origin.clone(),
            source,
        },
        // toml's message shows the line, and a type error the value.
        false => ThemeError::NotTheme {
            origin: origin.clone(),
            position: position(text, &source),
        },
    })?;
    set_all(&mut colors, &parsed, &origin, quote)?;
    let syntax_name = parsed
        .syntax
        .clone()
        .unwrap_or_else(|| default_syntax_name().to_string());
    let syntax = syntax_theme(&syntax_name).ok_or_else(|| {
        let known: Vec<&str> = syntax_themes().themes.keys().map(String::as_str).collect();
        ThemeError::NoSyntaxTheme {
            origin,
            name: quote.then(|| syntax_name.clone()),
            known: known.join(", "),
        }
    })?;
    Ok(Theme {
        name: name.to_string(),
        c: colors,
        syntax_name,
        syntax,
    })
}

/// Sets every colour `file` names. An error names the value only when the file may
/// be quoted, and a key only when it is a theme's own or the file may be quoted.
fn set_all(
    colors: &mut Colors,
    file: &ThemeFile,
    origin: &str,
    quote: bool,
) -> Result<(), ThemeError> {
    for (table, entries) in [
        ("ui", &file.ui),
        ("sections", &file.sections),
        ("diff", &file.diff),
    ] {
        for (key, value) in entries {
            let known = Colors::keys().contains(&format!("{table}.{key}").as_str());
            if !known {
                return Err(ThemeError::UnknownKey {
                    origin: origin.to_string(),
                    table,
                    key: quote.then(|| key.clone()),
                });
            }
            let color: Color = value.parse().map_err(|_| ThemeError::NotAColour {
                origin: origin.to_string(),
                table,
                key: key.clone(),
                value: quote.then(|| value.clone()),
            })?;
            colors.set(table, key, color);
        }
    }
    Ok(())
}

/// Where in `text` a TOML error is, as "line L, column C", without quoting anything.
fn position(text: &str, error: &toml::de::Error) -> String {
    let Some(at) = error.span().map(|s| s.start) else {
        return "not valid TOML".into();
    };
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

fn default_syntax_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let file: ThemeFile = toml::from_str(BUILTIN[0].1).expect("the default theme parses");
        file.syntax.unwrap_or_else(|| "base16-ocean.dark".into())
    })
}

fn syntax_themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

fn syntax_theme(name: &str) -> Option<Arc<SyntaxTheme>> {
    syntax_themes().themes.get(name).cloned().map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_theme_sets_every_key() {
        for (name, text) in BUILTIN {
            let file: ThemeFile = toml::from_str(text).unwrap();
            let mut set: Vec<String> = Vec::new();
            for (table, entries) in [
                ("ui", &file.ui),
                ("sections", &file.sections),
                ("diff", &file.diff),
            ] {
                set.extend(entries.keys().map(|k| format!("{table}.{k}")));
            }
            for key in Colors::keys() {
                assert!(set.iter().any(|s| s == key), "{name} lacks {key}");
            }
            let (theme, warning) = Theme::load(&ThemeChoice::from(*name));
            assert!(warning.is_none(), "{warning:?}");
            assert_eq!(theme.name, *name);
        }
        assert_ne!(
            Theme::load(&"light".into()).0.c,
            Theme::load(&"dark".into()).0.c
        );
    }

    #[test]
    fn a_partial_user_theme_keeps_the_default_for_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        std::fs::write(&path, "[ui]\nuser = \"#ff0000\"\n").unwrap();
        let (theme, warning) = Theme::load(&path.to_str().unwrap().into());
        assert_eq!(warning, None);
        assert_eq!(theme.c.user, Color::Rgb(255, 0, 0));
        assert_eq!(theme.c.assistant, Theme::default_theme().c.assistant);
        assert_eq!(theme.name, "mine");
    }

    /// A FIFO or a directory where the theme file is named is refused for what it is,
    /// not called missing (regression pass 3, finding 7).
    #[test]
    fn a_theme_path_that_is_no_file_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for path in [fifo.as_path(), dir.path()] {
            let (theme, warning) = Theme::load(&path.to_str().unwrap().into());
            let warning = warning.expect("reported");
            assert!(warning.contains(", not a file"), "{warning}");
            assert!(warning.contains(&path.display().to_string()), "{warning}");
            assert_eq!(theme.name, "dark");
        }
    }

    #[test]
    fn a_broken_theme_is_reported_and_the_default_used() {
        let dir = tempfile::tempdir().unwrap();
        type Check = fn(&ThemeError) -> bool;
        let cases: [(&str, &str, Check); 4] = [
            (
                "[ui]\nuser = \"not-a-colour\"\n",
                "is not a colour",
                |e| matches!(e, ThemeError::NotAColour { value: Some(v), .. } if v == "not-a-colour"),
            ),
            (
                "[ui]\nusr = \"red\"\n",
                "unknown key [ui] usr",
                |e| matches!(e, ThemeError::UnknownKey { key: Some(k), .. } if k == "usr"),
            ),
            (
                "syntax = \"Nope\"\n",
                "no syntax theme",
                |e| matches!(e, ThemeError::NoSyntaxTheme { name: Some(n), .. } if n == "Nope"),
            ),
            ("[ui\n", "mine.toml", |e| {
                matches!(e, ThemeError::Toml { .. })
            }),
        ];
        for (text, expected, variant) in cases {
            let path = dir.path().join("mine.toml");
            std::fs::write(&path, text).unwrap();
            let choice = path.to_str().unwrap().into();
            let (theme, warning) = Theme::load(&choice);
            let warning = warning.expect("reported");
            assert!(warning.contains(expected), "{warning}");
            assert_eq!(theme.name, "dark");
            match Theme::try_load(&choice) {
                Ok(_) => panic!("{text:?} loaded"),
                Err(error) => assert!(variant(&error), "{error:?}"),
            }
        }
        let (_, warning) = Theme::load(&"no-such-theme".into());
        assert!(warning.unwrap().contains("dark, light"));
        assert!(matches!(
            Theme::try_load(&"no-such-theme".into()),
            Err(ThemeError::NotFound { .. })
        ));
    }

    /// A repository's theme (already resolved inside it) is reported by position and
    /// by the theme's own key names, never by what the file holds.
    #[test]
    fn a_broken_repository_theme_is_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("theirs.toml");
        let secret = "sk_live_51HvSecretValue";
        for text in [
            format!("STRIPE_SECRET_KEY={secret}\n"),
            format!("{secret} = 1\n"),
            format!("[ui]\nuser = \"{secret}\"\n"),
            format!("[ui]\n{secret} = \"red\"\n"),
            format!("syntax = \"{secret}\"\n"),
            format!("syntax = 1\n[ui]\nuser = \"{secret}\"\n"),
            format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n"),
        ] {
            std::fs::write(&path, &text).unwrap();
            let choice = ThemeChoice {
                name: path.display().to_string(),
                from_repository: true,
            };
            let (theme, warning) = Theme::load(&choice);
            let warning = warning.expect("reported");
            assert!(!warning.contains("sk_live"), "{text:?}: {warning}");
            assert!(!warning.contains("BEGIN"), "{text:?}: {warning}");
            assert!(warning.contains("theirs.toml"), "{warning}");
            assert_eq!(theme.name, "dark");
        }
        std::fs::write(&path, "[ui]\nuser = \"nope\"\n").unwrap();
        let choice = ThemeChoice {
            name: path.display().to_string(),
            from_repository: true,
        };
        let warning = Theme::load(&choice).1.unwrap();
        assert!(warning.contains("[ui] user is not a colour"), "{warning}");
        assert!(matches!(
            Theme::try_load(&choice),
            Err(ThemeError::NotAColour { value: None, .. })
        ));
        std::fs::write(&path, "ok = 1\n[ui\n").unwrap();
        let warning = Theme::load(&choice).1.unwrap();
        assert!(warning.contains("line 2, column"), "{warning}");
        assert!(matches!(
            Theme::try_load(&choice),
            Err(ThemeError::NotTheme { .. })
        ));
    }

    #[test]
    fn fill_colours_change_at_60_and_85_percent() {
        let t = Theme::default_theme();
        assert_eq!(t.fill(0.59), t.c.ok);
        assert_eq!(t.fill(0.60), t.c.caution);
        assert_eq!(t.fill(0.849), t.c.caution);
        assert_eq!(t.fill(0.85), t.c.danger);
    }
}
