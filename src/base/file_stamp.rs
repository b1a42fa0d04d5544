//! A cheap identity of one version of a file, from its metadata alone (symlinks followed):
//! device, inode, length and modification time. A file replaced by rename, or a Kubernetes
//! ConfigMap or Secret volume whose `..data` symlink was swapped, gets a new inode. Used by
//! the counters hot reload and by TLS certificate rotation to decide when to read again.
//!
//! It never reads a file's content.

use std::path::Path;
use std::time::SystemTime;

/// What identifies a file's current version without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    /// The stamp of `path` now (one `stat`, following symlinks).
    pub fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        Ok(Self {
            device: m.dev(),
            inode: m.ino(),
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}
