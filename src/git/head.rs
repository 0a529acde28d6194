//! HEAD as tern read it, and moving it only from there: the branch it names (or HEAD
//! itself, detached) moves by compare and swap, so a commit made meanwhile by anyone
//! else is never overwritten.

use git2::{ErrorCode, Oid, Repository};

use super::GitError;

/// The reference a commit moves, and where it pointed when read.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// The branch HEAD names (`refs/heads/main`), or `HEAD` when detached.
    pub name: String,
    /// None on an unborn branch.
    pub id: Option<Oid>,
}

impl Head {
    pub(crate) fn read(repo: &Repository) -> Result<Head, GitError> {
        let head = repo.find_reference("HEAD")?;
        let Some(target) = head.symbolic_target()? else {
            return Ok(Head {
                name: "HEAD".into(),
                id: head.target(),
            });
        };
        let id = match repo.refname_to_id(target) {
            Ok(id) => Some(id),
            Err(e) if e.code() == ErrorCode::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        Ok(Head {
            name: target.to_string(),
            id,
        })
    }

    pub(crate) fn is_detached(&self) -> bool {
        self.name == "HEAD"
    }

    /// Moves the reference to `new` if HEAD still names it and it still points where
    /// it did when read; else [`GitError::HeadMoved`], with nothing changed.
    pub(crate) fn swap(&self, repo: &Repository, new: Oid, log: &str) -> Result<(), GitError> {
        let now = Head::read(repo)?;
        if now.name != self.name || now.id != self.id {
            return Err(self.moved(&now));
        }
        let moved = match self.id {
            Some(old) => repo.reference_matching(&self.name, new, true, old, log),
            None => repo.reference(&self.name, new, false, log),
        };
        match moved {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.code(), ErrorCode::Modified | ErrorCode::Exists) => {
                Err(self.moved(&Head::read(repo)?))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Puts the reference back where it was, if it still points at `new` (a rollback
    /// after [`swap`](Head::swap)).
    pub(crate) fn swap_back(&self, repo: &Repository, new: Oid) -> Result<(), GitError> {
        match self.id {
            Some(old) => {
                repo.reference_matching(&self.name, old, true, new, "tern: rolled back")?;
            }
            None => {
                let mut reference = repo.find_reference(&self.name)?;
                if reference.target() == Some(new) {
                    reference.delete()?;
                }
            }
        }
        Ok(())
    }

    fn moved(&self, now: &Head) -> GitError {
        let at = |h: &Head| h.id.map_or("no commit".to_string(), super::short_id);
        GitError::HeadMoved(match now.name == self.name {
            true => format!(
                "{} moved from {} to {} while tern was committing",
                short_name(&self.name),
                at(self),
                at(now)
            ),
            false => format!(
                "HEAD was switched from {} to {} while tern was committing",
                short_name(&self.name),
                short_name(&now.name)
            ),
        })
    }
}

fn short_name(name: &str) -> &str {
    name.strip_prefix("refs/heads/").unwrap_or(name)
}
