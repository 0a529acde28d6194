//! What the settings table says of a number: the range it must lie in (checked as each
//! layer is applied, so a config file, the environment and a flag all get it), and
//! its level for the rule that an untrusted repository may lower a setting but not
//! raise it (`Scope::RepoLower`).

use std::fmt::Display;
use std::ops::RangeInclusive;

use super::ConfigError;

/// A number a setting holds.
pub trait Number: Copy + PartialOrd + Display + std::fmt::Debug {
    /// Whether it is a whole number (a TOML integer, not a float).
    const INTEGER: bool = true;
    fn as_f64(self) -> f64;
}

impl Number for usize {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Number for u64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Number for f64 {
    const INTEGER: bool = false;
    fn as_f64(self) -> f64 {
        self
    }
}

/// Off is below on: a repository may switch off what spends by itself, not switch it on.
impl Number for bool {
    fn as_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
}

/// A setting's value as a number: the number it holds, or None when it holds none (an
/// optional setting left to tern's default).
pub trait Level {
    type N: Number;
    fn level(&self) -> Option<Self::N>;
}

impl<N: Number> Level for N {
    type N = N;
    fn level(&self) -> Option<N> {
        Some(*self)
    }
}

impl<N: Number> Level for Option<N> {
    type N = N;
    fn level(&self) -> Option<N> {
        *self
    }
}

/// A row's range, for the table that tests and messages read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub min: f64,
    pub max: f64,
    /// A whole number.
    pub integer: bool,
}

impl Bounds {
    pub fn of<N: Number>(range: &RangeInclusive<N>) -> Bounds {
        Bounds {
            min: range.start().as_f64(),
            max: range.end().as_f64(),
            integer: N::INTEGER,
        }
    }

    /// Whether `n` lies within.
    #[cfg(test)]
    pub fn holds(&self, n: f64) -> bool {
        n >= self.min && n <= self.max
    }
}

/// Where a layer of settings comes from, as an error names it.
#[derive(Debug, Clone)]
pub enum Origin<'a> {
    File(&'a std::path::Path),
    /// The command line (and the environment variables clap reads into its flags).
    Flags,
}

/// An error unless `value` lies in `range` (NaN lies nowhere).
pub fn check<V: Level>(
    key: &str,
    value: &V,
    range: RangeInclusive<V::N>,
    origin: &Origin,
) -> Result<(), ConfigError> {
    match value.level() {
        Some(n) if !range.contains(&n) => Err(ConfigError::OutOfRange {
            what: match origin {
                // Debug: a tiny or huge float in its short form.
                Origin::File(path) => format!("{key} = {n:?} in {}", path.display()),
                Origin::Flags => format!("--{} {n:?}", key.replace('_', "-")),
            },
            min: range.start().to_string(),
            max: range.end().to_string(),
            flag: matches!(origin, Origin::Flags),
        }),
        _ => Ok(()),
    }
}

/// Whether `value` raises the setting above `beneath` (the value it has without the
/// repository's config); `value` and `beneath` as shown in a notice when it does.
pub(crate) fn raises<V: Level>(value: &V, beneath: Option<V::N>) -> Option<(String, String)> {
    let new = value.level()?;
    match beneath {
        Some(old) if new <= old => None,
        Some(old) => Some((new.to_string(), old.to_string())),
        None => Some((new.to_string(), "unset".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_and_the_ends_of_a_range() {
        let file = std::path::Path::new("/r/.tern.toml");
        let origin = Origin::File(file);
        assert!(check("t", &f64::NAN, 0.05..=0.95, &origin).is_err());
        assert!(check("t", &0.95, 0.05..=0.95, &origin).is_ok());
        assert!(check("t", &Some(0usize), 1..=3, &origin).is_err());
        assert!(check("t", &None::<usize>, 1..=3, &origin).is_ok());
        let e = check("read_timeout_secs", &u64::MAX, 1..=3600, &origin).unwrap_err();
        assert_eq!(
            e.to_string(),
            "read_timeout_secs = 18446744073709551615 in /r/.tern.toml is out of range: it must lie within 1..=3600"
        );
        let e = check("map_tokens", &Some(9usize), 10..=20, &Origin::Flags).unwrap_err();
        assert!(
            e.to_string().starts_with("--map-tokens 9 is out of range"),
            "{e}"
        );
    }

    #[test]
    fn raising_is_going_above_what_lies_beneath() {
        assert_eq!(raises(&3usize, Some(3)), None);
        assert_eq!(raises(&2usize, Some(3)), None);
        assert_eq!(raises(&4usize, Some(3)), Some(("4".into(), "3".into())));
        assert_eq!(
            raises(&true, Some(false)),
            Some(("true".into(), "false".into()))
        );
        assert_eq!(raises(&false, Some(true)), None);
        assert_eq!(
            raises(&Some(5usize), None),
            Some(("5".into(), "unset".into()))
        );
    }
}
