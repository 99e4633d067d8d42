//! Gives the heap's free pages back to the system every few seconds (glibc only).
//!
//! Events are allocated on the runtime's threads and freed on the core's lane and spool
//! threads, so glibc's per-thread arenas end up with free pages between live chunks, which
//! its own trimming (only the top of each heap) never returns. Under a steady load the
//! relay's RSS then kept the high-water mark of every backlog (the fault soak: 98.5 MB taken
//! from the system, 55 MB in use); `malloc_trim(0)` returns those pages (one call at the
//! end of that soak: 106 -> 65 MiB). It walks each arena under that arena's lock, so only
//! threads allocating from the arena being walked wait, and only for the walk.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::time::{Duration, Instant};

/// How often. A page given back and wanted again costs a page fault, so not much more often.
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
