//! The fsync of our WAL, on a thread of its own (`outbound-fsync`) when the disk's fsyncs are
//! slow, so the spool writer runs the next group's transaction while the last group's fsync
//! is out; on the writer's own thread when they are fast. SQLite commits with
//! `synchronous=NORMAL` (the WAL written, not fsynced); after each commit the store either
//! fsyncs at once ([`Syncer::sync_here`]) or asks the thread ([`Syncer::request`]), and
//! [`Syncer::wait`] returns once an fsync that began after that commit has ended: only then
//! is the group durable (the spool writer settles it, and its acknowledgements are
//! answered). One fsync of the thread covers every commit requested before it began, so
//! commits made while one is out share the next.
//!
//! Which of the two: [`Syncer::slow`], from a running mean of this file's fsync times. The
//! thread saves the writer the fsync's wait, which pays where fsyncs are slow, but costs two
//! thread wake-ups per commit, so where they are fast the fsync is done in place.
//!
//! The descriptor is our own, opened on the WAL SQLite created: SQLite keeps that file for
//! as long as our connection is open (it truncates it after a checkpoint, never replaces
//! it), so an fsync of it is an fsync of what SQLite wrote. A checkpoint (in the writer's
//! thread) fsyncs the WAL and the database file itself (`synchronous=NORMAL`).

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Mean fsync times above this go to the thread. Between the two disks measured (0.12 ms:
/// in place was better; 0.6 ms: the thread was).
const SLOW: Duration = Duration::from_micros(250);

#[derive(Debug, Default)]
struct State {
    /// Commits asked for, ever.
    requested: u64,
    /// Commits covered by an fsync that ended.
    synced: u64,
    /// The last failed fsync: the commits up to here it should have covered, and why.
    failed: Option<(u64, String)>,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// The fsync thread of one store; stopped (after its last fsync) when dropped.
#[derive(Debug)]
pub(crate) struct Syncer {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
    /// The WAL again, for fsyncs in place.
    here: File,
    /// Running mean of the fsync times, nanoseconds (both threads update it).
    mean_ns: Arc<AtomicU64>,
}

/// Folds one fsync's time into the running mean (weight 1/8: one slow fsync does not flip
/// the choice). Not a read-modify-write: when both threads note at once, one sample is lost,
/// which a mean for a choice can afford.
fn note(mean_ns: &AtomicU64, took: Duration) {
    let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    let mean = mean_ns.load(Relaxed);
    mean_ns.store((mean - mean / 8).saturating_add(took / 8), Relaxed);
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.0.lock().unwrap_or_else(|e| e.into_inner())
}

impl Syncer {
    /// Starts the thread that fsyncs `file` (the WAL).
    pub(crate) fn start(file: File) -> io::Result<Syncer> {
        let here = file.try_clone()?;
        let shared: Shared = Arc::default();
        // Starts on the thread's side, until fsyncs are timed.
        let mean_ns = Arc::new(AtomicU64::new(SLOW.as_nanos() as u64 * 2));
        let (theirs, mean) = (shared.clone(), mean_ns.clone());
        let thread = std::thread::Builder::new()
            .name("outbound-fsync".into())
            .spawn(move || run(&file, &theirs, &mean))?;
        Ok(Syncer {
            shared,
            thread: Some(thread),
            here,
            mean_ns,
        })
    }

    /// Whether this file's fsyncs have been slow enough lately to leave to the thread.
    pub(crate) fn slow(&self) -> bool {
        self.mean_ns.load(Relaxed) > SLOW.as_nanos() as u64
    }

    /// Makes the store take this disk for slow (or fast) until fsyncs are timed again.
    #[cfg(test)]
    pub(crate) fn pretend(&self, slow: bool) {
        let ns = SLOW.as_nanos() as u64;
        self.mean_ns.store(if slow { ns * 100 } else { 0 }, Relaxed);
    }

    /// Puts `file` where fsyncs in place go (a test's failing descriptor); returns the old one.
    #[cfg(test)]
    pub(crate) fn swap_here(&mut self, file: File) -> File {
        std::mem::replace(&mut self.here, file)
    }

    /// Fsyncs everything written so far on the calling thread. Commits requested of the
    /// thread before are still settled by [`Syncer::wait`] (this fsync covers them too, but
    /// a waiter needs no such shortcut).
    pub(crate) fn sync_here(&self) -> Result<(), String> {
        fsync(&self.here, &self.mean_ns)
    }

    /// Asks for an fsync of everything written so far; the number to [`Syncer::wait`] for.
    pub(crate) fn request(&self) -> u64 {
        let mut st = lock(&self.shared);
        st.requested += 1;
        self.shared.1.notify_all();
        st.requested
    }

    /// Waits until commit `no` is covered by an fsync that ended: `Err` with the reason when
    /// that fsync (or a later one that covered it) failed.
    pub(crate) fn wait(&self, no: u64) -> Result<(), String> {
        let mut st = lock(&self.shared);
        while st.synced < no {
            st = self.shared.1.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        match &st.failed {
            Some((upto, why)) if *upto >= no => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// [`Syncer::request`] then [`Syncer::wait`]: everything written so far is durable.
    pub(crate) fn sync(&self) -> Result<(), String> {
        let no = self.request();
        self.wait(no)
    }

    /// In a forked child: the thread is the parent's (a child has none), so nothing is
    /// stopped or joined.
    pub(crate) fn forget(mut self) {
        self.thread = None;
        std::mem::forget(self);
    }
}

/// One fsync of the WAL, timed into the running mean. fdatasync: the WAL's size is data (it
/// is written back), its times are not.
fn fsync(file: &File, mean_ns: &AtomicU64) -> Result<(), String> {
    let started = Instant::now();
    let result = file.sync_data();
    note(mean_ns, started.elapsed());
    result.map_err(|e| format!("fsync of the WAL failed: {e}"))
}

fn run(file: &File, shared: &Shared, mean_ns: &AtomicU64) {
    loop {
        let target = {
            let mut st = lock(shared);
            while st.requested == st.synced && !st.stop {
                st = shared.1.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.requested == st.synced {
                return; // stopped, nothing left
            }
            st.requested
        };
        let result = fsync(file, mean_ns);
        let mut st = lock(shared);
        if let Err(why) = result {
            st.failed = Some((target, why));
        }
        st.synced = target;
        shared.1.notify_all();
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        lock(&self.shared).stop = true;
        self.shared.1.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A descriptor whose fsync fails (EINVAL: a socket), as a failing disk's would (EIO).
#[cfg(test)]
pub(crate) fn unsyncable() -> File {
    let (socket, _) = std::os::unix::net::UnixStream::pair().unwrap();
    File::from(std::os::fd::OwnedFd::from(socket))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_wait_returns_once_an_fsync_covers_the_request() {
        let path = std::env::temp_dir().join(format!("outbound-syncer-{}", std::process::id()));
        let mut file = File::create(&path).unwrap();
        file.write_all(b"frames").unwrap();
        let syncer = Syncer::start(file.try_clone().unwrap()).unwrap();
        let (a, b) = (syncer.request(), syncer.request());
        assert_eq!((a, b), (1, 2));
        assert_eq!(syncer.wait(b), Ok(()));
        assert!(lock(&syncer.shared).synced >= 2);
        assert_eq!(syncer.wait(a), Ok(()));
        assert_eq!(syncer.sync(), Ok(()));
        drop(syncer);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn fast_fsyncs_are_made_in_place_and_slow_ones_left_to_the_thread() {
        let path =
            std::env::temp_dir().join(format!("outbound-syncer-mean-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let syncer = Syncer::start(file).unwrap();
        assert!(syncer.slow(), "untimed, the thread's side");
        syncer.pretend(false);
        assert!(!syncer.slow());
        // One fsync of 8 times the threshold moves a mean of 0 to the threshold, not past it.
        note(&syncer.mean_ns, SLOW * 8);
        assert!(!syncer.slow());
        note(&syncer.mean_ns, SLOW * 8);
        assert!(syncer.slow(), "two in a row do");
        for _ in 0..40 {
            note(&syncer.mean_ns, SLOW / 4);
        }
        assert!(!syncer.slow(), "and fast ones bring it back");
        drop(syncer);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_failed_fsync_in_place_is_an_error() {
        let syncer = Syncer::start(unsyncable()).unwrap();
        let err = syncer.sync_here().unwrap_err();
        assert!(err.starts_with("fsync of the WAL failed"), "{err}");
    }

    #[test]
    fn a_failed_fsync_fails_the_commits_it_covers_and_not_later_ones() {
        // The commit a failed fsync covers must not count as durable.
        let syncer = Syncer::start(unsyncable()).unwrap();
        let no = syncer.request();
        let err = syncer.wait(no).unwrap_err();
        assert!(err.starts_with("fsync of the WAL failed"), "{err}");
        // Still failing for the next commit: every fsync of a socket fails.
        assert!(syncer.sync().is_err());
        drop(syncer);

        // A success after a failure covers only the commits it began after.
        let path = std::env::temp_dir().join(format!("outbound-syncer-ok-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let syncer = Syncer::start(file).unwrap();
        {
            let mut st = lock(&syncer.shared);
            (st.requested, st.synced, st.failed) = (3, 3, Some((3, "earlier".into())));
        }
        assert_eq!(syncer.wait(3), Err("earlier".into()));
        assert_eq!(syncer.sync(), Ok(()));
        drop(syncer);
        std::fs::remove_file(&path).unwrap();
    }
}
