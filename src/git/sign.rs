//! Signing commits as git does when `commit.gpgSign` is set, through the program the
//! config names: `gpg.format=openpgp` runs `gpg.program` (`gpg`) as
//! `--status-fd=2 -bsau KEY` with the commit on stdin and trusts only a
//! `[GNUPG:] SIG_CREATED` status line; `gpg.format=ssh` runs `gpg.ssh.program`
//! (`ssh-keygen`) as `-Y sign -n git -f KEYFILE FILE` and reads `FILE.sig`. The key is
//! `user.signingKey` (for ssh a file, or a literal `key::...` key; else the first key
//! `gpg.ssh.defaultKeyCommand` prints), for openpgp the committer's `Name <email>`
//! without one. Refusals carry git's own wording.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::GitError;
use super::child::Cut;

/// How long a signing program (or `gpg.ssh.defaultKeyCommand`) may take: long enough
/// to type a passphrase into a pinentry, short enough that one nobody sees (or a hung
/// agent) does not hold git's lock for ever. git itself waits without limit.
const SIGN_LIMIT: Duration = Duration::from_secs(120);

/// Runs a program of signing's: killed on `cancel` (the landing is cancelled) or after
/// [`SIGN_LIMIT`], said in git's words ("gpg failed to sign the data").
fn run_signing(
    what: &str,
    cmd: std::process::Command,
    input: Option<Vec<u8>>,
    cancel: Option<&AtomicBool>,
) -> Result<std::process::Output, GitError> {
    super::child::run(cmd, input, cancel, Some(SIGN_LIMIT)).map_err(|cut| match cut {
        Cut::Cancelled => GitError::Interrupted,
        Cut::TimedOut(_) => GitError::Sign(format!(
            "{what} failed to sign the data: {cut} (is it waiting for a passphrase or a key agent?)"
        )),
        Cut::Io(e) => GitError::Sign(format!("{what}: cannot run it: {e}")),
    })
}

/// How commits are signed.
#[derive(Debug)]
pub(crate) struct Signer {
    program: String,
    key: Key,
    /// Where the program runs (git runs it from the work tree).
    dir: PathBuf,
}

#[derive(Debug)]
enum Key {
    /// gpg's `-u`: a key id, fingerprint or user id.
    OpenPgp(String),
    /// An ssh key file (private, or public with the private key in an agent).
    SshFile(PathBuf),
    /// An ssh public key given literally (its private key in an agent).
    SshLiteral(String),
}

impl Signer {
    /// The signer the config asks for; None when `commit.gpgSign` is off.
    /// `committer` names the openpgp key when `user.signingKey` does not.
    pub(crate) fn configured(
        repo: &git2::Repository,
        committer: &git2::Signature<'_>,
        cancel: Option<&AtomicBool>,
    ) -> Result<Option<Signer>, GitError> {
        let config = repo.config()?.snapshot()?;
        if !config.get_bool("commit.gpgsign").unwrap_or(false) {
            return Ok(None);
        }
        let setting = |key: &str| config.get_string(key).ok().filter(|v| !v.is_empty());
        let signing_key = setting("user.signingkey");
        let dir = repo.workdir().unwrap_or(repo.path()).to_path_buf();
        let format = setting("gpg.format").unwrap_or_else(|| "openpgp".into());
        let (program, key) = match format.as_str() {
            "openpgp" => {
                let program = setting("gpg.openpgp.program")
                    .or_else(|| setting("gpg.program"))
                    .unwrap_or_else(|| "gpg".into());
                let key = signing_key.unwrap_or_else(|| {
                    super::identity::Identity::as_git_writes(&format!(
                        " {} <{}> ",
                        String::from_utf8_lossy(committer.name_bytes()),
                        String::from_utf8_lossy(committer.email_bytes())
                    ))
                    .trim()
                    .to_string()
                });
                (program, Key::OpenPgp(key))
            }
            "ssh" => {
                let program = setting("gpg.ssh.program").unwrap_or_else(|| "ssh-keygen".into());
                let key = match signing_key {
                    Some(key) => key,
                    None => default_ssh_key(setting("gpg.ssh.defaultkeycommand"), &dir, cancel)?,
                };
                let key = match literal_ssh_key(&key) {
                    Some(literal) => Key::SshLiteral(literal.to_string()),
                    None => Key::SshFile(expand_home(&key)),
                };
                (program, key)
            }
            "x509" => {
                return Err(GitError::Sign(
                    "commit.gpgSign is set with gpg.format=x509, and tern does not sign with gpgsm; sign with openpgp or ssh, or commit yourself".into(),
                ));
            }
            other => {
                return Err(GitError::Sign(format!(
                    "unsupported value for gpg.format: {other}"
                )));
            }
        };
        Ok(Some(Signer { program, key, dir }))
    }

    /// Signs a throwaway buffer: a key that cannot sign (none, a locked agent) is
    /// found before anything is written.
    pub(crate) fn probe(&self, cancel: Option<&AtomicBool>) -> Result<(), GitError> {
        self.sign("tern: checking that commits can be signed\n", cancel)
            .map(|_| ())
    }

    /// The detached signature of `buffer` (a commit object's text); setting `cancel`
    /// stops the signing program.
    pub(crate) fn sign(
        &self,
        buffer: &str,
        cancel: Option<&AtomicBool>,
    ) -> Result<String, GitError> {
        let signature = match &self.key {
            Key::OpenPgp(key) => self.sign_openpgp(key, buffer, cancel)?,
            Key::SshFile(file) => self.sign_ssh(file, false, buffer, cancel)?,
            Key::SshLiteral(literal) => {
                let mut file = tempfile::Builder::new()
                    .prefix(".git_signing_key_tmp")
                    .tempfile()?;
                file.write_all(literal.as_bytes())?;
                file.flush()?;
                self.sign_ssh(file.path(), true, buffer, cancel)?
            }
        };
        // As git does: a signature from Windows tools may end its lines with CR LF.
        Ok(signature.replace("\r\n", "\n"))
    }

    fn sign_openpgp(
        &self,
        key: &str,
        buffer: &str,
        cancel: Option<&AtomicBool>,
    ) -> Result<String, GitError> {
        let failed = |why: String| GitError::Sign(format!("gpg failed to sign the data: {why}"));
        let mut cmd = crate::spawn::command(&self.program);
        cmd.args(["--status-fd=2", "-bsau", key])
            .current_dir(&self.dir);
        let out = run_signing("gpg", cmd, Some(buffer.as_bytes().to_vec()), cancel)?;
        let status = String::from_utf8_lossy(&out.stderr);
        let created = status
            .lines()
            .any(|l| l.starts_with("[GNUPG:] SIG_CREATED "));
        if out.status.success() && created {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let said: Vec<&str> = status
            .lines()
            .filter(|l| !l.starts_with("[GNUPG:]") && !l.trim().is_empty())
            .collect();
        Err(failed(match said.is_empty() {
            true => format!("{} exited with {}", self.program, out.status),
            false => said.join("; "),
        }))
    }

    fn sign_ssh(
        &self,
        key: &Path,
        literal: bool,
        buffer: &str,
        cancel: Option<&AtomicBool>,
    ) -> Result<String, GitError> {
        let mut file = tempfile::Builder::new()
            .prefix(".git_signing_buffer_tmp")
            .tempfile()?;
        file.write_all(buffer.as_bytes())?;
        file.flush()?;
        let sig_path = PathBuf::from(format!("{}.sig", file.path().display()));
        let mut cmd = crate::spawn::command(&self.program);
        cmd.args(["-Y", "sign", "-n", "git", "-f"]).arg(key);
        if literal {
            cmd.arg("-U");
        }
        cmd.arg(file.path()).current_dir(&self.dir);
        let out = run_signing(&self.program, cmd, None, cancel)?;
        let signature = std::fs::read_to_string(&sig_path);
        let _ = std::fs::remove_file(&sig_path);
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(GitError::Sign(match said.contains("usage:") {
                true => "ssh-keygen -Y sign is needed for ssh signing (available in openssh version 8.2p1+)".into(),
                false if said.is_empty() => format!("{} exited with {}", self.program, out.status),
                false => said,
            }));
        }
        signature.map_err(|e| {
            GitError::Sign(format!(
                "failed reading ssh signing data buffer from '{}': {e}",
                sig_path.display()
            ))
        })
    }
}

/// The key a literal `user.signingKey` holds (`key::ssh-ed25519 AAAA...`, or, as git
/// still accepts, one starting `ssh-`).
fn literal_ssh_key(key: &str) -> Option<&str> {
    key.strip_prefix("key::")
        .or_else(|| key.starts_with("ssh-").then_some(key))
}

/// `~/...` in a key path, as git interpolates it.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The first key `gpg.ssh.defaultKeyCommand` prints.
fn default_ssh_key(
    command: Option<String>,
    dir: &Path,
    cancel: Option<&AtomicBool>,
) -> Result<String, GitError> {
    let Some(command) = command else {
        return Err(GitError::Sign(
            "either user.signingkey or gpg.ssh.defaultKeyCommand needs to be configured".into(),
        ));
    };
    let words = shell_words::split(&command)
        .map_err(|e| GitError::Sign(format!("gpg.ssh.defaultKeyCommand: {e}")))?;
    let Some((program, args)) = words.split_first() else {
        return Err(GitError::Sign("gpg.ssh.defaultKeyCommand is empty".into()));
    };
    let mut cmd = crate::spawn::command(program);
    cmd.args(args).current_dir(dir);
    let out = run_signing("gpg.ssh.defaultKeyCommand", cmd, None, cancel)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().map(str::trim).unwrap_or_default();
    let said = format!(
        "{} {}",
        stdout.trim(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    match (out.status.success(), literal_ssh_key(first).is_some()) {
        (true, true) => Ok(first.to_string()),
        (true, false) => Err(GitError::Sign(format!(
            "gpg.ssh.defaultKeyCommand succeeded but returned no keys: {said}"
        ))),
        (false, _) => Err(GitError::Sign(format!(
            "gpg.ssh.defaultKeyCommand failed: {said}"
        ))),
    }
}
