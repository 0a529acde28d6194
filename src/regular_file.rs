//! Reading a file tern did not make — from a repository, its state or its cache — so
//! that nothing there can hang it: a FIFO opened for reading blocks until a writer
//! comes, a character device may never end. Every such file is opened without
//! blocking (`O_NONBLOCK`, and `O_NOCTTY` so a terminal never becomes tern's), checked
//! with `fstat` on what was opened (no race with a rename), refused unless it is a
//! regular file, and read with a size cap.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

/// The most read of a file written by hand or by tern for itself: configuration, the
/// trust list, calibration, a theme, a build file (`Cargo.toml`), `.gitattributes`.
pub const MAX_SETTINGS_BYTES: u64 = 16 << 20;

/// The most read of a file the user works on (in the chat, one an edit lands in, its
/// backup, one under review) or of a saved session: beyond any model's window, short of
/// filling memory.
pub const MAX_TEXT_BYTES: u64 = 256 << 20;

/// Opens `path` for reading if it is a regular file (after symbolic links); anything
/// else is refused with an error that says what it is ("a FIFO, not a file").
pub fn open(path: &Path) -> io::Result<File> {
    regular(std::fs::OpenOptions::new().read(true), path)
}

/// Opens `path` for appending (created if missing) if it is a regular file: the log.
/// Opening a FIFO to write blocks until a reader comes, so it is refused as well.
pub fn append(path: &Path) -> io::Result<File> {
    regular(std::fs::OpenOptions::new().create(true).append(true), path)
}

/// Whether opening `path` to read could block: it is a FIFO, a socket or a device.
/// For files that libraries open themselves (the `ignore` crate, libgit2).
pub(crate) fn would_block(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| {
        let kind = m.file_type();
        kind.is_fifo() || kind.is_socket() || kind.is_char_device() || kind.is_block_device()
    })
}

/// The ignore files the `ignore` crate's walker reads in every directory it enters.
const WALKER_IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Whether the walker can read the ignore files of `dir` (and the `extra` names it was
/// given) without blocking: a directory where it cannot is left out of a walk.
pub(crate) fn walkable(dir: &Path, extra: &[&str]) -> bool {
    !WALKER_IGNORE_FILES
        .iter()
        .chain(extra)
        .any(|name| would_block(&dir.join(name)))
}

/// Sets the modification time of `path` to now, without opening it (opening a FIFO
/// would block): the use time of a cache file.
pub fn touch(path: &Path) -> io::Result<()> {
    use nix::sys::stat::{UtimensatFlags, utimensat};
    use nix::sys::time::TimeSpec;
    utimensat(
        nix::fcntl::AT_FDCWD,
        path,
        &TimeSpec::UTIME_OMIT,
        &TimeSpec::UTIME_NOW,
        UtimensatFlags::FollowSymlink,
    )
    .map_err(io::Error::from)
}

/// Opens `path` with `options`, never blocking, and keeps it only if it is a regular
/// file.
fn regular(options: &mut std::fs::OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a file"),
    ))
}

/// The bytes of the regular file `path`, refused when it holds more than `max_bytes`.
pub fn read(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let file = open(path)?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than {}", size(max_bytes)),
        ));
    }
    Ok(bytes)
}

/// The text of the regular file `path` (UTF-8), refused over `max_bytes`.
pub fn read_to_string(path: &Path, max_bytes: u64) -> io::Result<String> {
    String::from_utf8(read(path, max_bytes)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// `bytes` for a message: `4 MiB`, `64 KiB`, `100 bytes`.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_nothing_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = std::time::Instant::now();
        let e = read(&fifo, 10).unwrap_err();
        assert_eq!(e.to_string(), "a FIFO, not a file");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(
            read(dir.path(), 10).unwrap_err().to_string(),
            "a directory, not a file"
        );
        assert_eq!(
            read(Path::new("/dev/null"), 10).unwrap_err().to_string(),
            "a character device, not a file"
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert_eq!(
            read(&link, 10).unwrap_err().to_string(),
            "a FIFO, not a file"
        );
        let file = dir.path().join("f");
        std::fs::write(&file, "0123456789").unwrap();
        assert_eq!(read_to_string(&file, 10).unwrap(), "0123456789");
        assert_eq!(
            read(&file, 9).unwrap_err().to_string(),
            "larger than 9 bytes"
        );
        let missing = read(&dir.path().join("missing"), 10).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
