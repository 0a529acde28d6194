//! Who commits, by git's rules: `GIT_AUTHOR_NAME`, `GIT_AUTHOR_EMAIL` and
//! `GIT_AUTHOR_DATE` (and the `GIT_COMMITTER_*` ones) first, then the config's
//! `author.*` (`committer.*`), then `user.name` and `user.email`, then `$EMAIL` for the
//! email. Unlike git, tern never guesses a name or an email from the system: without
//! one it refuses, with git's words, before anything is written.

use std::ffi::OsString;

use git2::{Signature, Time};
use time::OffsetDateTime;
use time::format_description::well_known::{Iso8601, Rfc2822};

use super::GitError;

/// The author and the committer of the commits about to be made.
pub(crate) struct Identity {
    pub author: Signature<'static>,
    pub committer: Signature<'static>,
}

impl Identity {
    /// Reads the identity from the process environment and `repo`'s config.
    pub(crate) fn resolve(repo: &git2::Repository) -> Result<Identity, GitError> {
        let config = repo.config()?.snapshot()?;
        let env = |name: &str| std::env::var_os(name);
        Ok(Identity {
            author: person(&config, &env, Role::Author)?,
            committer: person(&config, &env, Role::Committer)?,
        })
    }
}

#[derive(Clone, Copy)]
enum Role {
    Author,
    Committer,
}

impl Role {
    fn word(self) -> &'static str {
        match self {
            Role::Author => "author",
            Role::Committer => "committer",
        }
    }
}

fn person(
    config: &git2::Config,
    env: &dyn Fn(&str) -> Option<OsString>,
    role: Role,
) -> Result<Signature<'static>, GitError> {
    let word = role.word();
    let upper = word.to_ascii_uppercase();
    let var =
        |what: &str| env(&format!("GIT_{upper}_{what}")).map(|v| v.to_string_lossy().into_owned());
    let setting = |key: &str| config.get_string(key).ok();
    let name = var("NAME")
        .or_else(|| setting(&format!("{word}.name")))
        .or_else(|| setting("user.name"));
    let email = var("EMAIL")
        .or_else(|| setting(&format!("{word}.email")))
        .or_else(|| setting("user.email"))
        .or_else(|| env("EMAIL").map(|v| v.to_string_lossy().into_owned()));
    let (Some(given), Some(email)) = (name, email) else {
        return Err(GitError::NoIdentity(word));
    };
    // As git's `fmt_ident`: a newline, `<` or `>` inside would break the commit's
    // author line (an object git cannot parse), so they go, as crud at the ends does.
    let email = without_crud(&email);
    let name = without_crud(&given);
    if given.is_empty() {
        return Err(GitError::BadIdentity(format!(
            "empty ident name (for <{email}>) not allowed"
        )));
    }
    if name.is_empty() {
        return Err(GitError::BadIdentity(format!(
            "name consists only of disallowed characters: {given}"
        )));
    }
    let signature = match var("DATE") {
        None => Signature::now(&name, &email),
        Some(date) => {
            let time = parse_date(&date).ok_or_else(|| {
                GitError::BadIdentity(format!("invalid date format: {date} (GIT_{upper}_DATE)"))
            })?;
            Signature::new(&name, &email, &time)
        }
    };
    signature.map_err(|e| GitError::BadIdentity(e.message().to_string()))
}

/// git's `crud`: what `fmt_ident` strips from the ends of a name or an email.
fn crud(b: u8) -> bool {
    b <= b' ' || b",:;<>\"\\'".contains(&b)
}

/// git's `strbuf_addstr_without_crud`: crud trimmed from both ends, and `\n`, `<`
/// and `>` (an ident line's delimiters) dropped from the rest. Only ASCII bytes go,
/// so the text stays UTF-8.
fn without_crud(text: &str) -> String {
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|&b| !crud(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| !crud(b))
        .map_or(start, |i| i + 1);
    let kept: Vec<u8> = bytes
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\n' | b'<' | b'>'))
        .collect();
    String::from_utf8_lossy(&kept).into_owned()
}

/// A date as git takes it in `GIT_AUTHOR_DATE`: its own format (`1700000000 +0100`,
/// `@1700000000`), RFC 2822 or ISO 8601. None for anything else.
fn parse_date(date: &str) -> Option<Time> {
    // A commit's time is written as 32 bits unsigned by libgit2: anything outside
    // would be committed wrapped (in the year 2106), and git refuses negative times.
    parse_any_date(date).filter(|t| (0..=i64::from(u32::MAX)).contains(&t.seconds()))
}

fn parse_any_date(date: &str) -> Option<Time> {
    let date = date.trim();
    let raw = date.strip_prefix('@').unwrap_or(date);
    let (secs, zone) = raw.split_once(' ').unwrap_or((raw, "+0000"));
    if let (Ok(secs), Some(offset)) = (secs.parse::<i64>(), zone_minutes(zone.trim())) {
        return Some(Time::new(secs, offset));
    }
    let parsed = OffsetDateTime::parse(date, &Rfc2822)
        .or_else(|_| OffsetDateTime::parse(date, &Iso8601::DEFAULT))
        .ok()?;
    Some(Time::new(
        parsed.unix_timestamp(),
        i32::from(parsed.offset().whole_minutes()),
    ))
}

/// `+0130` → 90.
fn zone_minutes(zone: &str) -> Option<i32> {
    let (sign, digits) = match zone.split_at_checked(1)? {
        ("+", d) => (1, d),
        ("-", d) => (-1, d),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i32 = digits.parse().ok()?;
    Some(sign * (n / 100 * 60 + n % 100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_gits_own_format_rfc2822_and_iso8601() {
        let t = parse_date("1700000000 +0130").unwrap();
        assert_eq!((t.seconds(), t.offset_minutes()), (1_700_000_000, 90));
        let t = parse_date("@1700000000").unwrap();
        assert_eq!((t.seconds(), t.offset_minutes()), (1_700_000_000, 0));
        let t = parse_date("Thu, 07 Apr 2005 22:13:13 +0200").unwrap();
        assert_eq!((t.seconds(), t.offset_minutes()), (1_112_904_793, 120));
        let t = parse_date("2005-04-07T22:13:13+02:00").unwrap();
        assert_eq!(t.seconds(), 1_112_904_793);
        assert!(parse_date("yesterday").is_none());
        assert!(parse_date("-5 +0000").is_none(), "never wrapped to 2106");
        assert!(parse_date("9223372036854775807 +0000").is_none());
        assert!(parse_date("1700000000 0100").is_none());
    }

    #[test]
    fn crud_goes_as_git_strips_it() {
        assert_eq!(without_crud("Ev\nil"), "Evil");
        assert_eq!(without_crud("  \"Ann <x> O'Brien\";\n"), "Ann x O'Brien");
        assert_eq!(without_crud("<a@example.com>\n"), "a@example.com");
        assert_eq!(without_crud("Zoë"), "Zoë");
        assert_eq!(without_crud(" ;<>"), "");
    }

    #[test]
    fn the_environment_comes_before_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = git2::Config::open(&dir.path().join("config")).unwrap();
        config.set_str("user.name", "Config Name").unwrap();
        config.set_str("user.email", "config@example.com").unwrap();
        config
            .set_str("committer.email", "committer@example.com")
            .unwrap();
        let config = config.snapshot().unwrap();
        let env = |name: &str| match name {
            "GIT_AUTHOR_NAME" => Some(OsString::from("Env Name")),
            "GIT_AUTHOR_DATE" => Some(OsString::from("1700000000 +0000")),
            _ => None,
        };
        let author = person(&config, &env, Role::Author).unwrap();
        assert_eq!(author.name().ok(), Some("Env Name"));
        assert_eq!(author.email().ok(), Some("config@example.com"));
        assert_eq!(author.when().seconds(), 1_700_000_000);
        let committer = person(&config, &env, Role::Committer).unwrap();
        assert_eq!(committer.name().ok(), Some("Config Name"));
        assert_eq!(committer.email().ok(), Some("committer@example.com"));
        let none = |_: &str| None;
        let empty = git2::Config::new().unwrap();
        assert!(matches!(
            person(&empty, &none, Role::Author),
            Err(GitError::NoIdentity("author"))
        ));
        let bad = |name: &str| (name == "GIT_COMMITTER_DATE").then(|| OsString::from("soon"));
        let Err(err) = person(&config, &bad, Role::Committer) else {
            panic!("a bad date is refused")
        };
        assert!(
            err.to_string().contains("invalid date format: soon"),
            "{err}"
        );
    }
}
