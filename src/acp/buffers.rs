//! What the editor holds against what is on disk. tern reads and edits files on disk;
//! an editor may hold one with unsaved changes (its text comes embedded in a prompt,
//! or through `fs/read_text_file`), and an edit computed from disk must not land over
//! them unseen. Editors keep text as they show it, so the two are compared as text:
//! a byte-order mark and CRLF line endings are the file's, not changes, and a line of
//! bytes that are not UTF-8 is the editor's to decode (it is not compared).

use std::path::Path;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::ReadTextFileRequest;
use agent_client_protocol::{Client, Error};

use crate::diff::FileText;

/// True when `buffer`, the editor's text of a file, is not what `disk` holds (None: no
/// such file). A binary file is never the editor's text: not compared.
pub(super) fn differs(disk: Option<&[u8]>, buffer: &str) -> bool {
    let Some(disk) = disk else {
        return !buffer.is_empty();
    };
    let (Ok(disk), Ok(buffer)) = (
        FileText::decode(disk.to_vec()),
        FileText::decode(buffer.as_bytes().to_vec()),
    ) else {
        return false;
    };
    let lines = disk.line_count();
    lines != buffer.line_count()
        || disk.text().ends_with('\n') != buffer.text().ends_with('\n')
        || (1..=lines).any(|n| {
            let undecodable = disk.invalid_lines().contains(&(n as usize - 1));
            !undecodable && disk.line(n) != buffer.line(n)
        })
}

/// Those of `paths` (relative to `root`) whose text in the editor is not the file's on
/// disk, asked of the client one by one; a file it cannot read is not open there.
pub(super) async fn unsaved(
    cx: &ConnectionTo<Client>,
    session: &str,
    root: &Path,
    paths: impl IntoIterator<Item = &String>,
) -> Vec<String> {
    let mut unsaved = Vec::new();
    for path in paths {
        let absolute = root.join(path);
        let request = ReadTextFileRequest::new(session.to_string(), absolute.clone());
        let answer: Result<_, Error> = cx.send_request(request).block_task().await;
        let Ok(editor) = answer else {
            continue;
        };
        if differs(std::fs::read(&absolute).ok().as_deref(), &editor.content) {
            unsaved.push(path.clone());
        }
    }
    unsaved
}

#[cfg(test)]
mod tests {
    use super::differs;
    use proptest::prelude::*;

    #[test]
    fn line_endings_and_a_bom_are_the_file_s_not_changes() {
        assert!(!differs(Some(b"one\r\ntwo\r\n"), "one\ntwo\n"));
        assert!(!differs(Some(b"\xEF\xBB\xBFone\n"), "one\n"));
        assert!(differs(Some(b"one\ntwo\n"), "one\ntwo"));
        assert!(differs(Some(b"one\ntwo\n"), "one\nTWO\n"));
        assert!(differs(Some(b"one\n"), "one\ntwo\n"));
        assert!(differs(None, "new\n"));
        assert!(!differs(None, ""));
    }

    #[test]
    fn a_line_that_is_not_utf8_is_the_editor_s_to_decode() {
        // Latin-1 "café", as an editor that guessed the encoding shows it.
        assert!(!differs(Some(b"caf\xE9\nau lait\n"), "café\nau lait\n"));
        assert!(differs(Some(b"caf\xE9\nau lait\n"), "café\nau LAIT\n"));
        assert!(!differs(Some(b"bin\0ary"), "anything"));
    }

    proptest! {
        /// Any text is the same as itself on disk, with LF or CRLF endings.
        #[test]
        fn text_equals_itself_on_disk(text in "(\\PC|\t|\u{202E}|\u{200B}){0,40}(\n(\\PC|\t){0,20}){0,6}\n?") {
            prop_assume!(!text.contains('\0') && !text.contains('\r'));
            prop_assert!(!differs(Some(text.as_bytes()), &text));
            let crlf = text.replace('\n', "\r\n");
            prop_assert!(!differs(Some(crlf.as_bytes()), &text));
        }

        /// A line changed is a difference.
        #[test]
        fn a_changed_line_differs(lines in proptest::collection::vec("[^\n\r\0]{0,20}", 1..8), at in 0usize..8, extra in "[^\n\r\0\u{FEFF}]{1,5}") {
            let at = at % lines.len();
            let disk = lines.join("\n") + "\n";
            let mut changed = lines.clone();
            changed[at].push_str(&extra);
            prop_assert!(differs(Some(disk.as_bytes()), &(changed.join("\n") + "\n")));
        }
    }
}
