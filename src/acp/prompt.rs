//! A prompt's content blocks as tern takes them: the text, as the message box takes
//! what is typed, and the files the user attached (links to them, or their content
//! embedded), which join the chat read-only. tern reads a chat file from disk: a file
//! whose embedded content differs from disk has unsaved changes in the editor, and
//! the user is asked to save it first. A file outside the repository is not taken
//! (tern reads and writes only inside it), nor is binary content.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

/// What a prompt says.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Read {
    pub(super) text: String,
    /// Files inside the repository it attached, relative to its root.
    pub(super) files: Vec<String>,
    /// Those of them it linked to (not embedded).
    pub(super) linked: Vec<String>,
    /// Those of them whose embedded text is not what the file on disk holds.
    pub(super) unsaved: Vec<String>,
    /// What it attached that tern cannot take, each with why (outside the
    /// repository, not a file, binary, an image), for the user to hear.
    pub(super) skipped: Vec<String>,
}

pub(super) fn read(blocks: &[ContentBlock], root: &Path) -> Read {
    let mut read = Read::default();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => read.text.push_str(&text.text),
            ContentBlock::ResourceLink(link) => read.attach(&link.uri, None, root),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    read.attach(&text.uri, Some(&text.text), root);
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    read.skip(format!("{} (binary content)", blob.uri));
                }
                _ => read.skip("an embedded resource of a kind tern does not know".into()),
            },
            _ => read.skip("an image or audio (tern sends text only)".into()),
        }
    }
    read
}

impl Read {
    /// Something not taken, said once however often it was attached.
    fn skip(&mut self, what: String) {
        if !self.skipped.contains(&what) {
            self.skipped.push(what);
        }
    }

    fn attach(&mut self, uri: &str, embedded: Option<&str>, root: &Path) {
        let Some(path) = in_repository(uri, root) else {
            self.skip(format!(
                "{uri} (not a file inside the repository, where tern reads and writes)"
            ));
            return;
        };
        let shown = path.display().to_string();
        match embedded {
            Some(text)
                if super::buffers::differs(
                    std::fs::read(root.join(&path)).ok().as_deref(),
                    text,
                ) =>
            {
                self.unsaved.push(shown.clone());
            }
            Some(_) => {}
            None => self.linked.push(shown.clone()),
        }
        if !self.files.contains(&shown) {
            self.files.push(shown);
        }
    }
}

/// A `file://` URI's path relative to `root`, if it is inside it.
fn in_repository(uri: &str, root: &Path) -> Option<PathBuf> {
    let path = url::Url::parse(uri).ok()?.to_file_path().ok()?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let path = path.canonicalize().unwrap_or(path);
    path.strip_prefix(&root).ok().map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn links_and_embedded_files_inside_the_repository_join_the_chat() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a b.rs"), "saved\n").unwrap();
        std::fs::write(root.join("c.rs"), "on disk\n").unwrap();
        let link = url::Url::from_file_path(root.join("src/a b.rs")).unwrap();
        let embedded = url::Url::from_file_path(root.join("c.rs")).unwrap();
        let blocks = vec![
            ContentBlock::Text(TextContent::new("look at ")),
            ContentBlock::ResourceLink(ResourceLink::new("a b.rs", link.as_str())),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "in the editor\n",
                    embedded.as_str(),
                )),
            )),
            ContentBlock::ResourceLink(ResourceLink::new("x", "file:///etc/hostname")),
            ContentBlock::Text(TextContent::new("these")),
        ];
        let read = read(&blocks, &root);
        assert_eq!(read.text, "look at these");
        assert_eq!(read.files, ["src/a b.rs", "c.rs"]);
        assert_eq!(read.linked, ["src/a b.rs"]);
        assert_eq!(read.unsaved, ["c.rs"]);
        assert_eq!(
            read.skipped,
            [
                "file:///etc/hostname (not a file inside the repository, where tern reads and writes)"
            ]
        );
    }
}
