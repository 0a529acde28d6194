//! Themes as data: UI colours and the syntect theme for code, read from TOML
//! (`themes/dark.toml`, `themes/light.toml`, or a file of the user's). A theme that
//! cannot be used is reported and the default is used instead: a typo in a colour must
//! never keep tern from starting.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use syntect::highlighting::{Theme as SyntaxTheme, ThemeSet};

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

            /// Sets `[table] key`; false when the theme format has no such key.
            fn set(&mut self, table: &str, key: &str, color: Color) -> bool {
                match (table, key) {
                    $( (stringify!($table), stringify!($field)) => self.$field = color, )*
                    _ => return false,
                }
                true
            }

            /// Every `table.key` name, for checking that a built-in theme is complete.
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
    pub fn load(name_or_path: &str) -> (Theme, Option<String>) {
        match Theme::try_load(name_or_path) {
            Ok(theme) => (theme, None),
            Err(why) => (
                Theme::default_theme(),
                Some(format!(
                    "theme {name_or_path:?} not used ({why}); using the default theme"
                )),
            ),
        }
    }

    fn try_load(name_or_path: &str) -> Result<Theme, String> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return apply(base(), name, text, None);
        }
        let path = theme_path(name_or_path).ok_or_else(|| {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            format!(
                "no built-in theme of that name ({}) and no such file",
                names.join(", ")
            )
        })?;
        let text =
            crate::regular_file::read_to_string(&path, crate::regular_file::MAX_SETTINGS_BYTES)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let name = path.file_stem().map_or(name_or_path.to_string(), |s| {
            s.to_string_lossy().into_owned()
        });
        apply(base(), &name, &text, Some(&path))
    }

    pub fn text(&self) -> Style {
        Style::new().fg(self.c.fg).bg(self.c.bg)
    }

    pub fn dim(&self) -> Style {
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
        set_all(&mut colors, &file, name).expect("the default theme's colours are valid");
        colors
    })
    .clone()
}

/// `name` as a file: the path itself, with `.toml` added, or in `~/.config/tern/themes/`.
fn theme_path(name: &str) -> Option<PathBuf> {
    let given = PathBuf::from(name);
    let mut candidates = vec![given.clone(), given.with_extension("toml")];
    if let Some(dir) = dirs::config_dir() {
        let themes = dir.join("tern").join("themes");
        candidates.push(themes.join(name));
        candidates.push(themes.join(format!("{name}.toml")));
    }
    candidates.into_iter().find(|p| p.is_file())
}

fn apply(mut colors: Colors, name: &str, text: &str, path: Option<&Path>) -> Result<Theme, String> {
    let origin = path.map_or_else(
        || format!("built-in theme {name}"),
        |p| p.display().to_string(),
    );
    let file: ThemeFile = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    set_all(&mut colors, &file, &origin)?;
    let syntax_name = file
        .syntax
        .clone()
        .unwrap_or_else(|| default_syntax_name().to_string());
    let syntax = syntax_theme(&syntax_name).ok_or_else(|| {
        let known: Vec<&str> = syntax_themes().themes.keys().map(String::as_str).collect();
        format!(
            "{origin}: no syntax theme {syntax_name:?}; known: {}",
            known.join(", ")
        )
    })?;
    Ok(Theme {
        name: name.to_string(),
        c: colors,
        syntax_name,
        syntax,
    })
}

fn set_all(colors: &mut Colors, file: &ThemeFile, origin: &str) -> Result<(), String> {
    for (table, entries) in [
        ("ui", &file.ui),
        ("sections", &file.sections),
        ("diff", &file.diff),
    ] {
        for (key, value) in entries {
            let color: Color = value
                .parse()
                .map_err(|_| format!("{origin}: [{table}] {key} = {value:?} is not a colour"))?;
            if !colors.set(table, key, color) {
                return Err(format!("{origin}: unknown key [{table}] {key}"));
            }
        }
    }
    Ok(())
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
            let (theme, warning) = Theme::load(name);
            assert!(warning.is_none(), "{warning:?}");
            assert_eq!(theme.name, *name);
        }
        assert_ne!(Theme::load("light").0.c, Theme::load("dark").0.c);
    }

    #[test]
    fn a_partial_user_theme_keeps_the_default_for_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        std::fs::write(&path, "[ui]\nuser = \"#ff0000\"\n").unwrap();
        let (theme, warning) = Theme::load(path.to_str().unwrap());
        assert_eq!(warning, None);
        assert_eq!(theme.c.user, Color::Rgb(255, 0, 0));
        assert_eq!(theme.c.assistant, Theme::default_theme().c.assistant);
        assert_eq!(theme.name, "mine");
    }

    #[test]
    fn a_broken_theme_is_reported_and_the_default_used() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("[ui]\nuser = \"not-a-colour\"\n", "is not a colour"),
            ("[ui]\nusr = \"red\"\n", "unknown key [ui] usr"),
            ("syntax = \"Nope\"\n", "no syntax theme"),
            ("[ui\n", "mine.toml"),
        ];
        for (text, expected) in cases {
            let path = dir.path().join("mine.toml");
            std::fs::write(&path, text).unwrap();
            let (theme, warning) = Theme::load(path.to_str().unwrap());
            let warning = warning.expect("reported");
            assert!(warning.contains(expected), "{warning}");
            assert_eq!(theme.name, "dark");
        }
        let (_, warning) = Theme::load("no-such-theme");
        assert!(warning.unwrap().contains("dark, light"));
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
