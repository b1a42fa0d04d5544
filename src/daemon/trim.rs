//! Gives back, once start-up is over, the memory that only start-up used: the pages of the
//! program's and its libraries' code and constants that were read while starting (argument
//! parsing, NVML's and the clients' set-up, the first encode) and the allocator's free pages.
//!
//! Start-up touches code all over the binary and the libraries, and the kernel maps each page
//! read from a file together with its neighbours (fault-around, 64 kB), so a process that
//! idles in a few hundred kilobytes of code keeps megabytes of read-only file pages mapped.
//! [`release`] unmaps them with `madvise(MADV_DONTNEED)`: the kernel may drop such pages at
//! any time under memory pressure, because a clean page of a file mapping is read back from
//! the page cache (or the file) on its next use, unchanged. Steady state then maps back only
//! what it uses. Only mappings where that holds are touched: private, not writable, backed by
//! a regular file (never a device: NVML maps `/dev/nvidia*`), and without a page of its own
//! (no `Anonymous` or `Swap` pages in `/proc/self/smaps`: nothing copied on write), which
//! excludes relocated data (RELRO). The heap is trimmed with glibc's
//! `malloc_trim`, which returns free pages and keeps every live allocation.
//!
//! The program's own file gets more. Fault-around maps only pages already in the page cache,
//! and start-up read most of the binary into it, so each page steady state touches would bring
//! its 64 kB window back, and the cache would keep the whole binary. Its mappings are marked
//! `MADV_RANDOM` (a page then read from the file comes without read-ahead) and the file's pages
//! that no mapping uses are dropped from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`
//! on `/proc/self/exe`, which skips mapped and dirty pages), once with the release and once
//! more a moment later ([`EVICT_AFTER`]), when the kernel has let go of what the release
//! unmapped. What stays cached is what steady state maps (in large folios: a folio with one
//! page mapped stays whole), and a code path run later for the first time maps little beyond
//! its own pages. The price is a read from the file the first time such a path runs. Shared
//! libraries keep their page cache: other processes on the node read the same files.
//!
//! This file must not decide when start-up is over (the daemon does) nor touch a mapping that
//! holds data written by the process.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use procfs::process::{MMPermissions, MMapPath, MemoryMap, Process};
use tracing::{debug, info};

use crate::base::process::trim_heap;

/// Why the release could not run at all (a mapping that refuses `madvise` is only counted).
#[derive(Debug, thiserror::Error)]
pub enum TrimError {
    /// `/proc/self/smaps` cannot be read (not Linux, or `/proc` not mounted).
    #[error("cannot read /proc/self/smaps: {0}")]
    Smaps(#[source] procfs::ProcError),
}

/// What one release did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Mappings given back.
    pub mappings: usize,
    /// Their resident size before, in KiB.
    pub kib: u64,
    /// Mappings that refused `madvise` (locked pages, for example); they stay as they were.
    pub refused: usize,
}

/// One figure of a mapping's `smaps` entry, in bytes; `None` when the entry lacks it.
fn figure(m: &MemoryMap, key: &str) -> Option<u64> {
    m.extension.map.get(key).copied()
}

/// Whether `m` may be unmapped without losing anything: a private, read-only mapping of a
/// regular file, with something resident and no page of its own (`Anonymous` and `Swap` both
/// 0: no page copied on write, resident or swapped out; a mapping whose figures are missing
/// counts as having some). Its pages are then the file's own page-cache pages, which the next
/// access maps again as they are, even when they are dirty (a file written moments ago, not yet
/// on disk: `Private_Dirty` counts those too). `is_file` says whether a path is a regular file.
pub fn releasable(m: &MemoryMap, is_file: impl Fn(&Path) -> bool) -> bool {
    let MMapPath::Path(path) = &m.pathname else {
        return false;
    };
    let shown = path.to_string_lossy();
    m.perms
        .contains(MMPermissions::READ | MMPermissions::PRIVATE)
        && !m.perms.contains(MMPermissions::WRITE)
        && figure(m, "Anonymous") == Some(0)
        && figure(m, "Swap") == Some(0)
        && figure(m, "Rss").is_some_and(|r| r > 0)
        && !shown.starts_with("/dev/")
        && !shown.ends_with(" (deleted)")
        && is_file(path)
}

/// Gives back the clean file pages and the allocator's free memory (see the file's header).
pub fn release() -> Result<Released, TrimError> {
    trim_heap();
    let maps = Process::myself()
        .and_then(|p| p.smaps())
        .map_err(TrimError::Smaps)?;
    let exe = std::fs::read_link("/proc/self/exe").ok();
    let mut done = Released::default();
    for m in maps {
        if !releasable(&m, |p| p.metadata().is_ok_and(|md| md.is_file())) {
            continue;
        }
        let own = matches!((&m.pathname, &exe), (MMapPath::Path(p), Some(e)) if p == e);
        let (start, end) = m.address;
        let len = end.saturating_sub(start);
        let (Ok(addr), Ok(len)) = (usize::try_from(start), usize::try_from(len)) else {
            continue;
        };
        let addr = addr as *mut libc::c_void;
        // SAFETY: the range is a whole mapping of this process, read-only and private, none of
        // whose pages was ever written: MADV_RANDOM only changes how the kernel reads ahead,
        // MADV_DONTNEED only unmaps the pages, and the next access reads the same bytes back
        // from the file, as after the kernel's own reclaim.
        let rc = unsafe {
            if own {
                libc::madvise(addr, len, libc::MADV_RANDOM);
            }
            libc::madvise(addr, len, libc::MADV_DONTNEED)
        };
        if rc == 0 {
            done.mappings += 1;
            done.kib += figure(&m, "Rss").unwrap_or(0) / 1024;
        } else {
            done.refused += 1;
        }
    }
    Ok(done)
}

/// The pause before the program file's pages are dropped from the page cache a second time:
/// the kernel lets go of some folios that were just unmapped only some time later (on Linux
/// 6.18, a quarter of the binary's code stayed cached when dropped right after the release,
/// and all but the 2 MB that steady state maps went 2 s later).
pub const EVICT_AFTER: Duration = Duration::from_secs(3);

/// Drops the pages of the program file (`/proc/self/exe`) that no process maps and that are
/// written back from the page cache. `false` when the file cannot be opened or the kernel
/// refuses the advice.
fn drop_program_cache() -> bool {
    let Ok(f) = std::fs::File::open("/proc/self/exe") else {
        return false;
    };
    // SAFETY: the descriptor is open for the call; the advice changes no byte of the file, it
    // only lets the kernel forget cached copies that it can read again.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}

/// How long after the first publish the release waits: a few ticks, so that the first scrapes,
/// the pod join and the clients' first round trips have run once (their code would come back
/// at once), within 5 to 60 s.
pub fn settle_after(tick: Duration) -> Duration {
    (tick * 3).clamp(Duration::from_secs(5), Duration::from_secs(60))
}

/// Waits for the end of start-up (the first publish, then [`settle_after`]), releases once and
/// drops the program file's unmapped pages from the page cache, then drops them again
/// [`EVICT_AFTER`] later.
pub async fn after_start_up(published: impl Fn() -> bool, tick: Duration) {
    while !published() {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(settle_after(tick)).await;
    let (released, first) =
        match tokio::task::spawn_blocking(|| release().map(|r| (r, drop_program_cache()))).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return debug!("start-up memory not given back: {e}"),
            Err(e) => return debug!("start-up memory not given back: {e}"),
        };
    tokio::time::sleep(EVICT_AFTER).await;
    let again = tokio::task::spawn_blocking(drop_program_cache)
        .await
        .unwrap_or(false);
    info!(
        mappings = released.mappings,
        kib = released.kib,
        refused = released.refused,
        cache_dropped = first && again,
        "start-up over: gave back the code and constant pages only start-up used"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0c0000000-55d0c0100000 r--p 00000000 fd:01 1234                       /usr/bin/gpu-exporter
Size:               1024 kB
Rss:                 512 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
55d0c0100000-55d0c0200000 r-xp 00100000 fd:01 1234                       /usr/bin/gpu-exporter
Rss:                 900 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
55d0c0200000-55d0c0300000 r--p 00200000 fd:01 1234                       /usr/bin/gpu-exporter
Rss:                 684 kB
Private_Dirty:       684 kB
Anonymous:           684 kB
Swap:                  0 kB
55d0c0300000-55d0c0301000 rw-p 00300000 fd:01 1234                       /usr/bin/gpu-exporter
Rss:                   4 kB
Private_Dirty:         4 kB
Anonymous:             4 kB
Swap:                  0 kB
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
Rss:                 132 kB
Private_Dirty:       132 kB
Anonymous:           132 kB
Swap:                  0 kB
7f0000100000-7f0000200000 rw-s 00000000 00:05 77                         /dev/nvidiactl
Rss:                  64 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000300000-7f0000400000 r--s 00000000 00:05 78                         /dev/nvidia0
Rss:                  64 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000500000-7f0000600000 r-xp 00000000 fd:01 99                         /usr/lib/libold.so (deleted)
Rss:                  64 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000700000-7f0000800000 r-xp 00000000 fd:01 98                         /usr/lib/libnvidia-ml.so.1
Rss:                 300 kB
7f0000900000-7f0000a00000 r-xp 00000000 fd:01 97                         /usr/lib/libfresh.so
Rss:                  64 kB
Private_Dirty:        64 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000b00000-7f0000c00000 r--p 00000000 fd:01 96                         /usr/lib/libswapped.so
Rss:                  64 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  8 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  96 kB
Private_Dirty:        96 kB
Anonymous:            96 kB
Swap:                  0 kB
7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   4 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
";

    fn maps() -> Vec<MemoryMap> {
        use procfs::FromBufRead;
        procfs::process::MemoryMaps::from_buf_read(SMAPS.as_bytes())
            .unwrap()
            .into_iter()
            .collect()
    }

    #[test]
    fn only_clean_read_only_file_mappings_are_released() {
        let maps = maps();
        assert_eq!(maps.len(), 13);
        let chosen: Vec<String> = maps
            .iter()
            .filter(|m| releasable(m, |_| true))
            .map(|m| format!("{:?} {:?}", m.perms, m.pathname))
            .collect();
        // Code and constants of the binary, and a library whose page-cache pages are dirty
        // (written moments ago); not the binary's relocated data (copied on write), its
        // writable data, anonymous memory, device mappings, a deleted file, a mapping whose
        // figures are missing (libnvidia-ml above), one with a page swapped out, the stack or
        // the vDSO.
        assert_eq!(chosen.len(), 3, "{chosen:?}");
        assert!(chosen[0].contains("/usr/bin/gpu-exporter"), "{chosen:?}");
        assert!(chosen[1].contains("/usr/bin/gpu-exporter"), "{chosen:?}");
        assert!(chosen[2].contains("/usr/lib/libfresh.so"), "{chosen:?}");
        assert_eq!(maps[1].address.0, 0x55d0c0100000);
    }

    #[test]
    fn a_path_that_is_not_a_regular_file_is_left_alone() {
        let maps = maps();
        assert!(!releasable(&maps[0], |_| false));
        assert!(releasable(&maps[0], |_| true));
    }

    #[test]
    fn nothing_resident_is_nothing_to_release() {
        let mut maps = maps();
        maps[0].extension.map.insert("Rss".into(), 0);
        assert!(!releasable(&maps[0], |_| true));
    }

    #[test]
    fn settling_is_a_few_ticks_within_bounds() {
        assert_eq!(
            settle_after(Duration::from_millis(100)),
            Duration::from_secs(5)
        );
        assert_eq!(
            settle_after(Duration::from_secs(10)),
            Duration::from_secs(30)
        );
        assert_eq!(
            settle_after(Duration::from_secs(30)),
            Duration::from_secs(60)
        );
    }

    /// The release on this very process: the test binary keeps running (its code comes back
    /// from the file).
    #[test]
    fn releasing_keeps_the_process_working() {
        let Ok(r) = release() else {
            return; // no /proc here: nothing to check
        };
        assert!(r.mappings > 0, "{r:?}");
        assert_eq!(r.refused, 0, "{r:?}");
        // Code runs after the release: a closure, a format, an allocation.
        let s: String = (0..100).map(|i| format!("{i}")).collect();
        assert_eq!(s.len(), 190);
    }
}
