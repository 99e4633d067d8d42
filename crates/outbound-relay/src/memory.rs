//! Gives the heap's free pages back to the system every few seconds (glibc only).
//!
//! Events are allocated on the runtime's threads and freed on the core's lane and spool
//! threads, so glibc's per-thread arenas end up with free pages between live chunks, which
//! its own trimming (only the top of each heap) never returns. Under a steady load the
//! relay's RSS then crept up by the size of every backlog it ever had (the fault soak:
//! 83 -> 125 MiB in 12 minutes, 55 MB of it in use); `malloc_trim(0)` returns those pages
//! (one call in that soak: 106 -> 65 MiB). It walks each arena under that arena's lock, so
//! the pause is short and only for threads allocating from the arena being walked.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::time::{Duration, Instant};

/// How often. Pages given back and wanted again cost a page fault each, about a microsecond:
/// at this pace a few milliseconds of CPU a minute at the soak's rate.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const EVERY: Duration = Duration::from_secs(10);

/// Starts the trimming thread (a no-op where the allocator is not glibc's).
pub fn start() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let started = std::thread::Builder::new()
            .name("relay-trim".into())
            .spawn(|| loop {
                std::thread::sleep(EVERY);
                let t = Instant::now();
                // SAFETY: malloc_trim only walks and advises glibc's own free lists.
                let released = unsafe { libc::malloc_trim(0) } == 1;
                tracing::debug!(took = ?t.elapsed(), released, "malloc_trim");
            });
        if let Err(e) = started {
            // The relay works without it; its memory is then glibc's high-water mark.
            tracing::warn!("cannot start the memory trimming thread: {e}");
        }
    }
}
