//! Who commits, by git's rules: `GIT_AUTHOR_NAME`, `GIT_AUTHOR_EMAIL` and
//! `GIT_AUTHOR_DATE` (and the `GIT_COMMITTER_*` ones) first, then the config's
//! `author.*` (`committer.*`), then `user.name` and `user.email`, then `$EMAIL` for the
//! email. Unlike git, tern never guesses a name or an email from the system: without
//! one it refuses, with git's words, before anything is written.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use git2::{Signature, Time};

use super::GitError;

/// What stands for an empty email in a signature while libgit2 builds an object: it
/// refuses an empty one, git commits it (`Name <>`). `Identity::as_git_writes` puts
/// the `<>` back.
const NO_EMAIL: &str = "no-email.tern.invalid";

/// The author and the committer of the commits about to be made.
pub(crate) struct Identity {
    pub author: Signature<'static>,
    pub committer: Signature<'static>,
}

impl Identity {
    /// A commit object's text as git writes it for this identity: an empty email as
    /// `<>`.
    pub(crate) fn as_git_writes(object: &str) -> String {
        object.replace(&format!(" <{NO_EMAIL}> "), " <> ")
    }

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
    let raw = |what: &str| env(&format!("GIT_{upper}_{what}"));
    let var = |what: &str| {
        raw(what)
            .map(|v| {
                // git keeps the bytes it is given; git2 writes only UTF-8, so a name
                // or an email that is not is refused, never committed changed.
                v.into_string().map_err(|v| {
                    GitError::BadIdentity(format!(
                        "GIT_{upper}_{what} is not UTF-8 ({}): tern writes only UTF-8 names and emails",
                        v.to_string_lossy()
                    ))
                })
            })
            .transpose()
    };
    let setting = |key: &str| config.get_string(key).ok();
    let name = var("NAME")?
        .or_else(|| setting(&format!("{word}.name")))
        .or_else(|| setting("user.name"));
    let email = var("EMAIL")?
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
    // As git: an empty email (`GIT_AUTHOR_EMAIL=''`, or `<>` once the crud goes) is
    // committed as `<>`.
    let email = match email.is_empty() {
        true => NO_EMAIL.to_string(),
        false => email,
    };
    // As git: an empty date is no date (now).
    let signature = match raw("DATE").filter(|d| !d.is_empty()) {
        None => Signature::now(&name, &email),
        Some(date) => Signature::new(&name, &email, &commit_time(&date, &upper)?),
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

/// `GIT_{who}_DATE` read by git's rules (`date::parse`), as a time tern can write.
fn commit_time(date: &OsStr, who: &str) -> Result<Time, GitError> {
    let shown = date.to_string_lossy();
    let (seconds, offset) = super::date::parse(date.as_bytes()).ok_or_else(|| {
        GitError::BadIdentity(format!("invalid date format: {shown} (GIT_{who}_DATE)"))
    })?;
    // libgit2 writes a commit's time as 32 bits unsigned: a later one (git takes
    // them) would be committed wrapped, so it is refused.
    match i64::try_from(seconds) {
        Ok(seconds) if seconds <= i64::from(u32::MAX) => Ok(Time::new(seconds, offset)),
        _ => Err(GitError::BadIdentity(format!(
            "{shown} (GIT_{who}_DATE) is after 2106-02-07, the last date tern can write in a commit"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_past_what_libgit2_writes_is_refused_not_wrapped() {
        let t = commit_time(OsStr::new("@4294967295 +0000"), "AUTHOR").unwrap();
        assert_eq!(t.seconds(), 4_294_967_295);
        let Err(e) = commit_time(OsStr::new("@4294967296 +0000"), "AUTHOR") else {
            panic!("2106 is past what tern writes")
        };
        assert!(e.to_string().contains("after 2106-02-07"), "{e}");
    }

    #[test]
    fn a_name_that_is_not_utf8_is_refused_not_changed() {
        use std::os::unix::ffi::OsStringExt;
        let config = git2::Config::new().unwrap();
        let env = |name: &str| match name {
            "GIT_AUTHOR_NAME" => Some(OsString::from_vec(vec![0xff, 0xfe])),
            "GIT_AUTHOR_EMAIL" => Some(OsString::from("a@example.com")),
            _ => None,
        };
        let Err(e) = person(&config, &env, Role::Author) else {
            panic!("committed as U+FFFD")
        };
        assert!(
            e.to_string()
                .contains("GIT_AUTHOR_NAME is not UTF-8 (\u{fffd}\u{fffd})"),
            "{e}"
        );
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
