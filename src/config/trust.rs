//! The repository configs the user trusts, as direnv and Codex's trusted projects do:
//! one entry per repository path with the SHA-256 of the `.tern.toml` the user
//! reviewed, so a config that changes (a pull, a checkout) is untrusted again until the
//! user looks at it.

use std::io;
use std::path::{Path, PathBuf};

/// The content hash trust is given to.
pub fn config_hash(text: &str) -> String {
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
}

impl TrustStore {
    /// Reads the list; a missing or unreadable file trusts nothing.
    pub fn open(file: &Path) -> TrustStore {
        let entries =
            crate::regular_file::read_to_string(file, crate::regular_file::MAX_SETTINGS_BYTES)
                .ok()
                .and_then(|text| toml::from_str(&text).ok())
                .unwrap_or_default();
        TrustStore {
            file: file.to_path_buf(),
            entries,
        }
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

    fn save(&self) -> io::Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = toml::to_string(&self.entries).map_err(io::Error::other)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        io::Write::write_all(&mut tmp, text.as_bytes())?;
        tmp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }
}

fn canonical(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}
