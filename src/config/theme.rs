//! The `theme` setting: a built-in theme's name, a theme of the user's themes
//! directory, or a theme file. A repository's config may name a file only inside that
//! repository (resolved through `..` and symlinks when settings load): a theme path is
//! a file tern reads, and a cloned repository must not point it at `~/.ssh/id_rsa`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What `theme` is set to, and whether a repository's config set it (its file is then
/// untrusted: an error about it never quotes its content).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub struct ThemeChoice {
    pub name: String,
    pub from_repository: bool,
}

impl From<String> for ThemeChoice {
    fn from(name: String) -> Self {
        ThemeChoice {
            name,
            from_repository: false,
        }
    }
}

impl From<&str> for ThemeChoice {
    fn from(name: &str) -> Self {
        ThemeChoice::from(name.to_string())
    }
}

/// The files a theme name may be, in the order they are tried: the path itself
/// (relative to `base`), with `.toml` added, then in `~/.config/tern/themes/`. A name
/// from a repository is never a path outside the themes directory this way: it has no
/// separator, and `base` is the repository.
pub(crate) fn candidates(name: &str, base: &Path) -> Vec<PathBuf> {
    let given = base.join(name);
    let mut candidates = vec![given.clone(), given.with_extension("toml")];
    if is_plain_name(name)
        && let Some(dir) = dirs::config_dir()
    {
        let themes = dir.join("tern").join("themes");
        candidates.push(themes.join(name));
        candidates.push(themes.join(format!("{name}.toml")));
    }
    candidates
}

/// A name with no directory in it, which stays inside whatever directory it is
/// looked up in.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\\']) && name != "." && name != ".."
}

/// A repository's `theme` as it may be used: a file inside the repository at `root`
/// becomes its canonical path; a plain name is kept (a built-in theme, or one of the
/// user's own themes). Anything else is refused, with why.
pub fn from_repository(name: &str, root: &Path) -> Result<ThemeChoice, RepoThemeError> {
    let root = root.canonicalize().map_err(RepoThemeError::Root)?;
    let inside = candidates(name, &root)
        .into_iter()
        .take(2)
        .find(|p| p.is_file())
        .map(|p| p.canonicalize().map_err(RepoThemeError::Resolve))
        .transpose()?;
    match inside {
        Some(path) if path.starts_with(&root) => Ok(ThemeChoice {
            name: path.display().to_string(),
            from_repository: true,
        }),
        Some(_) => Err(RepoThemeError::Outside),
        None if is_plain_name(name) => Ok(ThemeChoice {
            name: name.to_string(),
            from_repository: true,
        }),
        None => Err(RepoThemeError::Missing),
    }
}

/// Why a repository's theme is not used.
#[derive(Debug, thiserror::Error)]
pub enum RepoThemeError {
    #[error("cannot resolve the repository's path: {0}")]
    Root(std::io::Error),
    #[error("{0}")]
    Resolve(std::io::Error),
    #[error("it resolves to a file outside the repository")]
    Outside,
    #[error("no such file in the repository")]
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_theme_stays_inside_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("themes")).unwrap();
        std::fs::write(root.join("themes/ours.toml"), "[ui]\n").unwrap();
        std::fs::write(dir.path().join("secret"), "key = \"hunter2\"\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link.toml")).unwrap();

        let ours = from_repository("themes/ours", &root).unwrap();
        assert!(ours.name.ends_with("themes/ours.toml") && ours.from_repository);
        assert!(Path::new(&ours.name).is_absolute());
        for outside in [
            "../secret",
            "link",
            "link.toml",
            "/etc/passwd",
            "themes/../../secret",
        ] {
            let why = from_repository(outside, &root).unwrap_err();
            assert!(
                matches!(why, RepoThemeError::Outside | RepoThemeError::Missing),
                "{outside}: {why}"
            );
            let why = why.to_string();
            assert!(
                why.contains("outside") || why.contains("no such"),
                "{outside}: {why}"
            );
        }
        let light = from_repository("light", &root).unwrap();
        assert_eq!(light.name, "light");
        assert!(matches!(
            from_repository("no/such", &root),
            Err(RepoThemeError::Missing)
        ));
    }
}
