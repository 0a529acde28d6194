//! The repository configs the user trusts, as direnv and Codex's trusted projects do:
//! one entry per repository path with the SHA-256 of the `.tern.toml` the user
//! reviewed, so a config that changes (a pull, a checkout) is untrusted again until the
//! user looks at it. A list that cannot be read (not valid TOML, say) trusts nothing
//! and says why; before it is rewritten it is moved aside, never silently lost.

use std::io;
use std::path::{Path, PathBuf};

/// The content hash trust is given to.
pub(crate) fn config_hash(text: &str) -> String {
    crate::digest::sha256_hex(text.as_bytes())
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Entries {
    #[serde(default)]
    trusted: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Entry {
    path: PathBuf,
    sha256: String,
}

/// The trust list in a file of the user's config directory.
pub struct TrustStore {
    file: PathBuf,
    entries: Entries,
    /// Why the file could not be used, when it could not.
    damage: Option<String>,
    /// Where the unusable file was moved before a new list replaced it.
    kept: Option<PathBuf>,
}

impl TrustStore {
    /// Reads the list; a missing file trusts nothing, and so does one that cannot be
    /// used ([`damage`](TrustStore::damage) says why).
    pub fn open(file: &Path) -> TrustStore {
        let read =
            crate::regular_file::read_to_string(file, crate::regular_file::MAX_SETTINGS_BYTES);
        let (entries, damage) = match read {
            Ok(text) => match toml::from_str(&text) {
                Ok(entries) => (entries, None),
                Err(e) => (
                    Entries::default(),
                    Some(format!(
                        "{} is not valid TOML: {}",
                        file.display(),
                        e.to_string().trim_end()
                    )),
                ),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => (Entries::default(), None),
            Err(e) => (
                Entries::default(),
                Some(format!("cannot read {}: {e}", file.display())),
            ),
        };
        TrustStore {
            file: file.to_path_buf(),
            entries,
            damage,
            kept: None,
        }
    }

    /// What to tell the user when the list could not be used: why, and where it was
    /// kept if a new list replaced it.
    pub(crate) fn damage(&self) -> Option<String> {
        let damage = self.damage.as_ref()?;
        Some(match &self.kept {
            Some(kept) => format!("{damage}; a copy was kept at {}", kept.display()),
            None => format!(
                "{damage}; no repository config is trusted until it is fixed (`tern trust` moves it aside and writes a new list)"
            ),
        })
    }

    /// Whether the user trusts the config `text` of the repository at `root`.
    pub fn trusts(&self, root: &Path, text: &str) -> bool {
        let entry = Entry {
            path: canonical(root),
            sha256: config_hash(text),
        };
        self.entries.trusted.contains(&entry)
    }

    /// Trusts `text` as the config of `root`, replacing what was trusted there before.
    pub fn trust(&mut self, root: &Path, text: &str) -> io::Result<()> {
        let path = canonical(root);
        self.entries.trusted.retain(|e| e.path != path);
        self.entries.trusted.push(Entry {
            path,
            sha256: config_hash(text),
        });
        self.save()
    }

    /// Forgets `root`; returns whether it was trusted.
    pub fn revoke(&mut self, root: &Path) -> io::Result<bool> {
        let path = canonical(root);
        let before = self.entries.trusted.len();
        self.entries.trusted.retain(|e| e.path != path);
        let removed = self.entries.trusted.len() != before;
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    /// Writes the list; an unusable file is first moved aside (renamed: whatever it
    /// is, nothing of it is lost), once.
    fn save(&mut self) -> io::Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        if self.damage.is_some() && self.kept.is_none() {
            let kept = aside(&self.file);
            std::fs::rename(&self.file, &kept)?;
            self.kept = Some(kept);
        }
        let text = toml::to_string(&self.entries).map_err(io::Error::other)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        io::Write::write_all(&mut tmp, text.as_bytes())?;
        tmp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }
}

/// A free name beside `file` for its unusable copy: `trusted.toml.damaged`, then
/// `trusted.toml.damaged-2`, ….
fn aside(file: &Path) -> PathBuf {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    (1..)
        .map(|n| match n {
            1 => file.with_file_name(format!("{name}.damaged")),
            n => file.with_file_name(format!("{name}.damaged-{n}")),
        })
        .find(|p| p.symlink_metadata().is_err())
        .unwrap_or_else(|| file.with_file_name(format!("{name}.damaged")))
}

fn canonical(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}
