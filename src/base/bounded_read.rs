//! Reading a file the operator points at (counters CSV, web config, YAML config, PEM files)
//! without letting the path freeze or exhaust the process: only regular files (after following
//! symlinks) are read, the open never blocks (a FIFO or a device is refused, not waited on),
//! and at most a fixed number of bytes are read. A file that is handed to someone else (the
//! NVML library, which the dynamic loader opens) is checked the same way without being opened
//! ([`check_regular`]).
//!
//! It owns no parsing and no retry policy; callers name the file in their own errors.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest configuration file read (counters CSV, web config, YAML config): far above any
/// real one (dcgm-exporter's largest shipped CSV is under 20 KiB).
pub const MAX_CONFIG_FILE: u64 = 4 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The open, the `stat` or the read failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The path (after symlinks) is not a regular file.
    #[error("not a regular file but a {0}: give the path of a file")]
    NotRegular(&'static str),
    /// The file is larger than the limit for its kind.
    #[error("{size} bytes or more, over the {limit}-byte limit for this file")]
    TooLarge {
        /// Its size (or what was read before giving up).
        size: u64,
        /// The limit.
        limit: u64,
    },
}

impl From<ReadError> for std::io::Error {
    /// For callers whose errors carry an `io::Error`: the message is kept.
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io(io) => io,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other),
        }
    }
}

/// What kind of file `t` is, as messages name it.
pub fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_file() {
        "regular file"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else {
        "special file"
    }
}

/// Refuses anything but a regular file.
fn regular(meta: &std::fs::Metadata) -> Result<(), ReadError> {
    let t = meta.file_type();
    if t.is_file() {
        Ok(())
    } else {
        Err(ReadError::NotRegular(kind(t)))
    }
}

/// Checks, with one `stat` and without opening it, that `path` (symlinks followed) is a
/// regular file. A missing file is an `Io` error of kind `NotFound`.
pub fn check_regular(path: &Path) -> Result<(), ReadError> {
    regular(&std::fs::metadata(path)?)
}

/// [`check_regular`], refusing only a path that is there but is not a regular file (a FIFO, a
/// device, a directory): a missing or unreadable one passes, for the dynamic loader to report
/// (a library may arrive later). How library paths an operator names are checked.
pub fn refuse_not_regular(path: &Path) -> Result<(), ReadError> {
    match check_regular(path) {
        Err(e @ ReadError::NotRegular(_)) => Err(e),
        _ => Ok(()),
    }
}

/// Opens the regular file at `path` (symlinks followed) without waiting on it: checked before
/// the open (a device is never opened) and again on the open file (it may have been replaced).
fn open_regular(path: &Path) -> Result<(File, std::fs::Metadata), ReadError> {
    check_regular(path)?;
    let f = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    regular(&meta)?;
    Ok((f, meta))
}

/// Reads the regular file at `path` (symlinks followed), at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (mut f, meta) = open_regular(path)?;
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&mut f).take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        // It grew while being read.
        return Err(ReadError::TooLarge {
            size: buf.len() as u64,
            limit,
        });
    }
    Ok(buf)
}

/// As [`read_regular`], as UTF-8 text.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_regular(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            not_utf8(&e.as_bytes()[..at]),
        ))
    })
}

/// The message for text that is not UTF-8, `valid` being the bytes before the first bad one:
/// it names the line (1-based) and the byte offset.
pub fn not_utf8(valid: &[u8]) -> String {
    let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
    format!(
        "not UTF-8 text: invalid byte on line {line} (offset {})",
        valid.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        std::fs::write(&p, "0123456789").unwrap();
        assert_eq!(read_regular(&p, 10).unwrap(), b"0123456789");
        let e = read_regular(&p, 9).unwrap_err().to_string();
        assert_eq!(e, "10 bytes or more, over the 9-byte limit for this file");
        // Through a symlink.
        let l = dir.path().join("link");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert_eq!(read_regular_text(&l, 100).unwrap(), "0123456789");
        std::fs::write(&p, b"ok\xff").unwrap();
        let e = read_regular_text(&p, 100).unwrap_err().to_string();
        assert!(
            e.contains("not UTF-8 text: invalid byte on line 1 (offset 2)"),
            "{e}"
        );
        std::fs::write(&p, b"a\nb\nok\xff").unwrap();
        let e = read_regular_text(&p, 100).unwrap_err().to_string();
        assert!(e.contains("invalid byte on line 3 (offset 6)"), "{e}");
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // No writer: a blocking open would wait forever.
        let e = read_regular(&fifo, 100).unwrap_err().to_string();
        assert_eq!(e, "not a regular file but a FIFO: give the path of a file");
        let e = read_regular(Path::new("/dev/zero"), 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("character device"), "{e}");
        let e = read_regular(dir.path(), 100).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let e = read_regular(&dir.path().join("none"), 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("No such file"), "{e}");
        // The same without reading: a library path handed to the dynamic loader.
        for (path, what) in [
            (fifo.as_path(), "FIFO"),
            (Path::new("/dev/zero"), "character device"),
            (dir.path(), "directory"),
        ] {
            let e = check_regular(path).unwrap_err().to_string();
            assert!(
                e.contains(&format!("not a regular file but a {what}")),
                "{e}"
            );
        }
        let missing = check_regular(&dir.path().join("none")).unwrap_err();
        assert!(
            matches!(&missing, ReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound),
            "{missing}"
        );
        let lib = dir.path().join("lib.so");
        std::fs::write(&lib, [7u8; 1000]).unwrap();
        check_regular(&lib).unwrap();
    }
}
