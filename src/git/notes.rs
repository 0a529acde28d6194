//! tern's notes (`refs/notes/tern`): the mark on each commit tern made, written with
//! the commits and put back when they are not made (or a killed landing is rolled back).

use git2::{Oid, Repository};

use super::GitError;
use super::identity::Identity;

/// The notes ref that marks commits tern made, so `undo` recognizes them whatever
/// their message says (the trailer can be turned off).
pub const NOTES_REF: &str = "refs/notes/tern";

pub(super) fn write_notes(repo: &Repository, notes: &[(Oid, String)]) -> Result<(), GitError> {
    let identity = Identity::resolve(repo)?;
    for (id, note) in notes {
        repo.note(
            &identity.committer,
            &identity.committer,
            Some(NOTES_REF),
            *id,
            note,
            true,
        )?;
        as_git_writes_notes(repo)?;
    }
    Ok(())
}

/// The notes commit libgit2 just made, written again as git writes it (an empty
/// email as `<>`) when it differs; the next note's commit then has it as parent.
fn as_git_writes_notes(repo: &Repository) -> Result<(), GitError> {
    let tip = repo.refname_to_id(NOTES_REF)?;
    let odb = repo.odb()?;
    let object = odb.read(tip)?;
    let Ok(text) = std::str::from_utf8(object.data()) else {
        return Ok(());
    };
    let written = Identity::as_git_writes(text);
    if written != text {
        let id = odb.write(git2::ObjectType::Commit, written.as_bytes())?;
        repo.reference_matching(NOTES_REF, id, true, tip, "notes: as git writes them")?;
    }
    Ok(())
}

/// Puts tern's notes ref back to `before` (None: it did not exist).
pub(super) fn restore_notes(repo: &Repository, before: Option<Oid>) {
    let now = repo.refname_to_id(NOTES_REF).ok();
    if now == before {
        return;
    }
    let restored = match (before, now) {
        (Some(old), Some(new)) => repo
            .reference_matching(NOTES_REF, old, true, new, "tern: rolled back")
            .map(|_| ()),
        (None, Some(_)) => repo.find_reference(NOTES_REF).and_then(|mut r| r.delete()),
        (Some(old), None) => repo
            .reference(NOTES_REF, old, false, "tern: rolled back")
            .map(|_| ()),
        (None, None) => Ok(()),
    };
    if let Err(e) = restored {
        tracing::warn!("could not put {NOTES_REF} back: {e}");
    }
}
