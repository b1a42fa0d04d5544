//! The exporter's own process, as Prometheus client libraries report theirs (`process_*`
//! families, for `--enable-exporter-metrics`): CPU time, resident and virtual memory, open
//! and maximum file descriptors, start time and threads, read from `/proc/self` through the
//! `procfs` crate.
//!
//! Also [`trim_heap`]: the allocator's free pages handed back to the kernel; and
//! [`heap_settings`]: one malloc arena for all threads, large blocks mapped on their own.
//!
//! It reads only this process's own `/proc` entries; it must not format exposition text.

use procfs::process::{LimitValue, Process};

/// One reading of the process's figures.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcessFigures {
    /// User and system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Resident set size, bytes.
    pub resident_bytes: f64,
    /// Virtual memory size, bytes.
    pub virtual_bytes: f64,
    /// The address-space limit, bytes; `None` when unlimited.
    pub virtual_max_bytes: Option<f64>,
    /// Open file descriptors.
    pub open_fds: f64,
    /// The soft limit on open file descriptors; `None` when unlimited.
    pub max_fds: Option<f64>,
    /// Start time, seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// Threads.
    pub threads: f64,
}

/// Why `/proc/self` could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reading /proc/self: {0}")]
pub struct ProcessError(#[from] procfs::ProcError);

/// Reads the figures of the calling process.
pub fn read_self() -> Result<ProcessFigures, ProcessError> {
    let me = Process::myself()?;
    let stat = me.stat()?;
    let ticks = procfs::ticks_per_second() as f64;
    let limits = me.limits()?;
    let limit = |v: LimitValue| match v {
        LimitValue::Value(n) => Some(n as f64),
        LimitValue::Unlimited => None,
    };
    Ok(ProcessFigures {
        cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
        resident_bytes: stat.rss as f64 * procfs::page_size() as f64,
        virtual_bytes: stat.vsize as f64,
        virtual_max_bytes: limit(limits.max_address_space.soft_limit),
        open_fds: me.fd_count()? as f64,
        max_fds: limit(limits.max_open_files.soft_limit),
        start_time_seconds: procfs::boot_time_secs()? as f64 + stat.starttime as f64 / ticks,
        threads: stat.num_threads as f64,
    })
}

/// Hands the allocator's free pages back to the kernel: glibc's malloc keeps freed memory in
/// its arenas otherwise, and the resident size stays at its peak. Elsewhere it does nothing.
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Blocks of this size and larger are mapped on their own by the allocator and unmapped when
/// freed (see [`heap_settings`]).
pub const MAPPED_BLOCK: usize = 256 << 10;

/// The allocator's settings for a daemon that is idle between ticks (glibc's malloc):
/// - every thread allocates from one arena (`M_ARENA_MAX` = 1). glibc gives a thread that meets
///   a busy arena one of its own, and each arena keeps its own free memory; the exporter's
///   threads (sampler, runtime workers, event waiter) seldom allocate at the same moment, and
///   small allocations come from each thread's cache without the lock. Measured on a simulated
///   node: 390 KiB less anonymous memory at idle, the same CPU time (BENCHMARKS.md).
/// - blocks of [`MAPPED_BLOCK`] and more are mapped on their own (`M_MMAP_THRESHOLD`), so that
///   one freed goes back to the kernel at once. By default glibc raises that threshold to the
///   largest mapped block freed so far, after which blocks of that size stay in the heap: the
///   gzip compressor that each tick makes and drops (about 370 KiB of tables) would stay
///   resident between ticks.
///
/// Must run before the first thread is started. `false` where the allocator refuses either;
/// elsewhere than glibc it does nothing and says `true`.
pub fn heap_settings() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and changes a setting of the allocator's own.
    unsafe {
        let arenas = libc::mallopt(libc::M_ARENA_MAX, 1) == 1;
        let mapped = libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_BLOCK as libc::c_int) == 1;
        arenas && mapped
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocator_takes_the_settings() {
        assert!(heap_settings());
        // Allocation and release still work across threads.
        let v: Vec<Vec<u8>> = std::thread::spawn(|| (0..100).map(|i| vec![0u8; i * 100]).collect())
            .join()
            .unwrap();
        assert_eq!(v.iter().map(Vec::len).sum::<usize>(), 495_000);
    }

    /// A large block is mapped on its own each time, not only the first time: glibc's default
    /// would keep the second one in the heap after the first was freed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn large_blocks_stay_mapped_on_their_own() {
        assert!(heap_settings());
        for round in 0..3 {
            let block = std::hint::black_box(vec![1u8; MAPPED_BLOCK + (100 << 10)]);
            // SAFETY: mallinfo2 only reads the allocator's counters.
            let mapped = unsafe { libc::mallinfo2() }.hblkhd;
            assert!(
                mapped >= block.len(),
                "round {round}: {mapped} bytes in mapped blocks while one of {} is held",
                block.len()
            );
            drop(block);
        }
    }

    #[test]
    fn figures_of_this_process_are_plausible() {
        let before = read_self().unwrap();
        // Burn some CPU and open a file: both must show.
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        // Other tests of this binary open and close files meanwhile (the count is the
        // process's): open enough that their churn cannot hide these.
        let files: Vec<_> = (0..64)
            .map(|_| std::fs::File::open("/proc/self/stat").unwrap())
            .collect();
        let after = read_self().unwrap();
        drop(files);
        assert!(
            after.cpu_seconds > before.cpu_seconds,
            "{before:?} {after:?}"
        );
        assert!(
            after.open_fds >= before.open_fds + 32.0,
            "{before:?} {after:?}"
        );
        assert!(after.resident_bytes > 1e6, "{after:?}");
        assert!(after.virtual_bytes >= after.resident_bytes, "{after:?}");
        assert!(after.threads >= 1.0);
        let now = crate::base::clock::unix_now();
        assert!(
            after.start_time_seconds > now - 3600.0 && after.start_time_seconds <= now + 1.0,
            "start {} now {now}",
            after.start_time_seconds
        );
        if let Some(max) = after.max_fds {
            assert!(max >= after.open_fds);
        }
    }
}
