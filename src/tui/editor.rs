//! Text edited in the user's own editor, as in Codex CLI and Claude Code (Ctrl-G) and
//! `git add -p`'s `e`: `$VISUAL`, else `$EDITOR`, else `vi`, run on a temporary file
//! that holds the text, with the terminal's stdio; when it exits successfully the file's
//! content is the new text. The workspace steps aside meanwhile (see
//! `tui::TerminalInput::run_editor`); this module only runs the editor.

use std::path::PathBuf;

/// What the text in the editor is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditTarget {
    /// The message box's draft.
    Draft,
    /// A pending hunk's new lines.
    Hunk { id: String },
}

/// Text for the editor, asked for by the app and run by the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditRequest {
    pub target: EditTarget,
    pub text: String,
    /// The temporary file's suffix (`.py`), so the editor can pick a syntax.
    pub suffix: String,
}

/// Why the editor gave no text; whatever was being edited stays as it was.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    #[error("cannot read the editor command {command:?}: {error}")]
    BadCommand { command: String, error: String },
    #[error("could not start the editor {program:?}: {error}")]
    Start { program: String, error: String },
    #[error("the editor {program:?} exited with {status}")]
    Failed { program: String, status: String },
    #[error("the edited text is not UTF-8; it is kept in {}", .0.display())]
    NotUtf8(PathBuf),
    #[error("the editor's temporary file: {0}")]
    Io(#[from] std::io::Error),
    /// The blocking task that runs the editor did not finish (it panicked).
    #[error("the editor could not be run: {0}")]
    NotRun(tokio::task::JoinError),
}

/// The editor command: `visual`, else `editor` (unset or blank ones are skipped), else
/// `vi`, split as a shell splits words, so `code --wait` or `"my editor" -f` work.
pub fn command(visual: Option<&str>, editor: Option<&str>) -> Result<Vec<String>, EditorError> {
    let chosen = [visual, editor]
        .into_iter()
        .flatten()
        .find(|c| !c.trim().is_empty())
        .unwrap_or("vi");
    let words = shell_words::split(chosen).map_err(|e| EditorError::BadCommand {
        command: chosen.to_string(),
        error: e.to_string(),
    })?;
    if words.is_empty() {
        return Err(EditorError::BadCommand {
            command: chosen.to_string(),
            error: "no program named".into(),
        });
    }
    Ok(words)
}

/// The editor command from the environment (`$VISUAL`, `$EDITOR`).
pub(crate) fn command_from_env() -> Result<Vec<String>, EditorError> {
    let var = |name| std::env::var(name).ok();
    command(var("VISUAL").as_deref(), var("EDITOR").as_deref())
}

/// Runs `command` with a temporary file holding `text` (named `tern-…{suffix}`) as its
/// last argument, with this process's stdio and no API key in its environment, and
/// waits for it. Returns the file's
/// content once the editor exits successfully; the file is removed unless its content
/// could not be used.
pub fn edit(command: &[String], text: &str, suffix: &str) -> Result<String, EditorError> {
    let Some((program, args)) = command.split_first() else {
        return Err(EditorError::BadCommand {
            command: String::new(),
            error: "no program named".into(),
        });
    };
    let mut file = tempfile::Builder::new()
        .prefix("tern-")
        .suffix(suffix)
        .tempfile()?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    // Closed before the editor opens it: some editors replace the file by renaming.
    let path = file.into_temp_path();
    let mut child = crate::spawn::command(program)
        .args(args)
        .arg(&path)
        .spawn()
        .map_err(|e| EditorError::Start {
            program: program.clone(),
            error: e.to_string(),
        })?;
    // A signal's exit does not wait for the editor: it is stopped (it shares tern's
    // process group, which the terminal's foreground needs, so by its pid) and the
    // file with the hunk's lines removed, rather than left behind with the shell.
    let pid = child.id();
    let file = path.to_path_buf();
    let _on_exit = crate::signals::at_exit(move || {
        if let Ok(pid) = i32::try_from(pid) {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        }
        let _ = std::fs::remove_file(&file);
    });
    let status = child.wait()?;
    if !status.success() {
        return Err(EditorError::Failed {
            program: program.clone(),
            status: status.to_string(),
        });
    }
    let bytes = crate::regular_file::read(&path, crate::regular_file::MAX_TEXT_BYTES)?;
    String::from_utf8(bytes).map_err(|_| match path.keep() {
        Ok(kept) => EditorError::NotUtf8(kept),
        Err(e) => EditorError::Io(e.error),
    })
}

/// The suffix for a file at `path`: its extension, so the editor highlights it.
pub(crate) fn suffix_of(path: &str) -> String {
    std::path::Path::new(path)
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default()
}
