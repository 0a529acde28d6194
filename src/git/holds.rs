//! Whether a file of the work tree holds a given blob (or is absent): the check made
//! before tern writes over a file it wrote, so that a save of the user's since is
//! never lost (a command's changes put back, a rollback of a killed tern's move).

use std::path::Path;

use git2::Oid;

/// Whether the work tree's `path` holds what `tree` has (absent when it has none).
pub(super) fn holds(workdir: &Path, tree: &git2::Tree<'_>, path: &Path) -> bool {
    holds_blob(
        workdir,
        path,
        tree.get_path(path).ok().map(|entry| entry.id()),
    )
}

/// Whether the work tree's `path` holds the blob `blob` (is absent when None). A
/// symlink holds its target, as git stores it, not the content of what it points to.
pub(super) fn holds_blob(workdir: &Path, path: &Path, blob: Option<Oid>) -> bool {
    let full = workdir.join(path);
    let found = match std::fs::symlink_metadata(&full) {
        Err(_) => return blob.is_none(),
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::read_link(&full).ok().and_then(|target| {
                use std::os::unix::ffi::OsStrExt;
                Oid::hash_object(git2::ObjectType::Blob, target.as_os_str().as_bytes()).ok()
            })
        }
        Ok(_) => Oid::hash_file(git2::ObjectType::Blob, &full).ok(),
    };
    blob.is_some() && found == blob
}
