//! What a reply asks for beyond the chat: the repository files it names that the model
//! has not seen (offered with their cost, added with one op that asks the question
//! again) and the shell commands it suggests (listed; running one is `/run`'s job,
//! which asks the user first).

use std::collections::BTreeSet;
use std::path::Path;

use super::Session;
use super::model::Model;
use super::protocol::{ChatMode, Event, FileMode, NeededFile};
use crate::edit::{EditFormat, FileSet, Workspace, parse_reply};
use crate::repomap::MAX_FILE_BYTES;
use crate::tokens::TokenCounter;

/// How many files, and how many commands, an event lists (a reply may name thousands).
pub const SHOWN: usize = 20;

/// What a reply names beyond the chat.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Named {
    /// Tracked files it mentions that are not in the chat and that it does not create,
    /// sorted.
    pub files: Vec<String>,
    /// The commands of its shell blocks (outside edit blocks), in order, once each.
    pub commands: Vec<String>,
}

/// Finds what `reply` names: files among `tracked` (sorted root-relative paths) that
/// are not in `chat`, and its suggested commands. Paths come only from `tracked`, so
/// nothing outside the repository is ever named.
pub fn named(reply: &str, format: EditFormat, tracked: &[String], chat: &[String]) -> Named {
    let mentioned = crate::repomap::mentions::find(reply, tracked, |_| false).files;
    let files = FileSet::new(
        chat.iter().map(Into::into).collect(),
        tracked.iter().map(Into::into).collect(),
    );
    let parsed = parse_reply(reply, format, &files);
    let created: BTreeSet<String> = parsed
        .edits
        .iter()
        .filter(|e| e.kind.creates())
        .map(|e| e.path.to_string_lossy().replace('\\', "/"))
        .collect();
    let mut seen = BTreeSet::new();
    let commands = parsed
        .shell
        .iter()
        .flat_map(|s| s.command_lines())
        .filter(|c| seen.insert(c.clone()))
        .collect();
    Named {
        files: mentioned
            .into_iter()
            .filter(|p| !chat.contains(p) && !created.contains(p))
            .collect(),
        commands,
    }
}

/// After a turn: `Event::Needed` when the reply names files the chat lacks or
/// suggests commands.
pub(super) fn report(session: &Session, model: &Model, reply: &str) -> Option<Event> {
    let Ok(ws) = Workspace::discover(session.root()) else {
        return None;
    };
    let mut tracked: Vec<String> = ws
        .files()
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    tracked.sort_unstable();
    tracked.dedup();
    let chat = [FileMode::Editable, FileMode::ReadOnly]
        .iter()
        .flat_map(|m| session.paths(*m))
        .collect::<Vec<_>>();
    let Named {
        files: paths,
        mut commands,
    } = named(reply, model.edit_format(), &tracked, &chat);
    let mut files = Vec::new();
    let mut more_files = 0;
    for path in paths {
        if files.len() == SHOWN {
            more_files += 1;
        } else if let Some(file) = offer(session, model.counter(), &ws, &path) {
            files.push(file);
        }
    }
    let more_commands = commands.len().saturating_sub(SHOWN);
    commands.truncate(SHOWN);
    if files.is_empty() && commands.is_empty() {
        return None;
    }
    Some(Event::Needed {
        files,
        more_files,
        commands,
        more_commands,
    })
}

/// A tracked file as offered, with its cost; none when git ignores it, it leads
/// outside the repository (a symlink), or it is not text tern would send.
fn offer(
    session: &Session,
    counter: &TokenCounter,
    ws: &Workspace,
    path: &str,
) -> Option<NeededFile> {
    let root = session.root();
    if ws.is_ignored(Path::new(path)) || session.resolve(path, root).ok()? != path {
        return None;
    }
    let full = root.join(path);
    let meta = std::fs::metadata(&full).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let bytes = crate::regular_file::read(&full, MAX_FILE_BYTES).ok()?;
    if crate::diff::is_binary(&bytes) {
        return None;
    }
    let text = String::from_utf8_lossy(&bytes);
    Some(NeededFile {
        path: path.to_string(),
        tokens: super::session::file_tokens(counter, path, &text),
    })
}

/// The question a `Needed` offer asks again: the user's last message and its mode.
pub(super) type Question = (String, ChatMode);

#[cfg(test)]
mod tests {
    use super::*;

    fn tracked() -> Vec<String> {
        ["README.md", "src/db.rs", "src/lib.rs", "src/pool.rs"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn names_tracked_files_outside_the_chat_and_not_created() {
        let reply = "Look at src/pool.rs and db.rs (and src/lib.rs, which you gave me).\n\
            src/new.rs\n```rust\n<<<<<<< SEARCH\n=======\nfn f() {}\n>>>>>>> REPLACE\n```\n\
            README.md\n```\n<<<<<<< SEARCH\n=======\n# new\n>>>>>>> REPLACE\n```\n";
        let found = named(
            reply,
            EditFormat::Editblock,
            &tracked(),
            &["src/lib.rs".into()],
        );
        assert_eq!(found.files, ["src/db.rs", "src/pool.rs"]);
        assert!(found.commands.is_empty());
    }

    #[test]
    fn commands_come_once_each_and_never_from_edit_blocks() {
        let reply = "Run:\n```bash\ncargo test\n```\nthen\n```sh\n$ cargo test\n$ cargo fmt\n```\n\
            src/lib.rs\n```sh\n<<<<<<< SEARCH\nold\n=======\nrm -rf /\n>>>>>>> REPLACE\n```\n";
        let found = named(reply, EditFormat::Editblock, &tracked(), &[]);
        assert_eq!(found.commands, ["cargo test", "cargo fmt"]);
        assert_eq!(found.files, ["src/lib.rs"]);
    }
}
