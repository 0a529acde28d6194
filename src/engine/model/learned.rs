//! Windows servers proved by refusing a request (llama.cpp's `n_ctx`), kept per server
//! (base URL, as shown: without credentials) and model in the state directory, so that a
//! new run, resumed or not, starts with the window instead of relearning it by
//! overflowing. A writer holds an exclusive lock on `windows.json.lock` while it reads,
//! adds and atomically replaces `windows.json`: two terns writing at once lose nothing
//! and leave no torn file.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

/// Every server's learned windows: base URL → model → tokens.
type Learned = BTreeMap<String, BTreeMap<String, usize>>;

/// Where the learned windows are kept.
pub(crate) fn file() -> PathBuf {
    crate::config::state_dir().join("windows.json")
}

fn read(path: &Path) -> Learned {
    crate::regular_file::read_to_string(path, crate::regular_file::MAX_SETTINGS_BYTES)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The window the server at `base` proved for `model`, if one did.
pub(crate) fn load(path: &Path, base: &str, model: &str) -> Option<usize> {
    read(path).get(base)?.get(model).copied()
}

/// Keeps `tokens` as the window the server at `base` proved for `model`.
pub(crate) fn save(path: &Path, base: &str, model: &str, tokens: usize) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path)?;
    lock.lock()?;
    let mut all = read(path);
    all.entry(base.to_string())
        .or_default()
        .insert(model.to_string(), tokens);
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut file, &all)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many writers at once, each with its own server and model (each opens the lock
    /// file itself, as another process would): every window is kept, the file parses.
    #[test]
    fn writers_at_once_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("windows.json");
        std::thread::scope(|s| {
            for i in 0..16 {
                let path = &path;
                s.spawn(move || {
                    let base = format!("http://127.0.0.1:{}/v1", 8000 + i % 4);
                    save(path, &base, &format!("model-{i}"), 1024 + i).unwrap();
                });
            }
        });
        for i in 0..16 {
            let base = format!("http://127.0.0.1:{}/v1", 8000 + i % 4);
            assert_eq!(load(&path, &base, &format!("model-{i}")), Some(1024 + i));
        }
        assert_eq!(load(&path, "http://127.0.0.1:8000/v1", "model-1"), None);
    }
}
