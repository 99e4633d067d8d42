//! Keeps `fork()` out of SQLite. SQLite guards its allocator and VFS with process-wide
//! mutexes; a fork while the spool thread holds one leaves it locked for ever in the child,
//! whose first open of a spool then hangs (seen in the pre-fork test, 9 runs out of 10).
//! Our threads hold this gate around every use of SQLite, and a `pthread_atfork` handler
//! takes it before the fork, so the child always starts with SQLite idle.
//!
//! Never log or wait on another thread while holding the gate: the forking thread may hold
//! the GIL or a caller's lock while it waits here.

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::sync::Once;

struct Gate(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: only used through pthread_mutex_lock/unlock, which are thread-safe.
unsafe impl Sync for Gate {}

static GATE: Gate = Gate(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
static AT_FORK: Once = Once::new();

thread_local! {
    /// How many `Held` this thread has: the gate is taken by the outermost only.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread's `prepare` took the gate (it did not when it already held it).
    static TOOK_FOR_FORK: Cell<bool> = const { Cell::new(false) };
}

fn lock() {
    // SAFETY: a statically initialised mutex that is never destroyed.
    unsafe { libc::pthread_mutex_lock(GATE.0.get()) };
}

fn unlock() {
    // SAFETY: called only by the thread that locked it (in the child, that thread's copy).
    unsafe { libc::pthread_mutex_unlock(GATE.0.get()) };
}

extern "C" fn prepare() {
    if DEPTH.with(Cell::get) == 0 {
        lock();
        TOOK_FOR_FORK.with(|t| t.set(true));
    }
}

extern "C" fn release() {
    if TOOK_FOR_FORK.with(|t| t.replace(false)) {
        unlock();
    }
}

/// Proof that this thread holds the gate; released on drop. Not `Send`: the gate belongs
/// to the thread that took it.
pub(crate) struct Held(PhantomData<*const ()>);

/// Takes the gate (re-entrant on one thread) until the returned value is dropped.
pub(crate) fn hold() -> Held {
    AT_FORK.call_once(|| {
        // SAFETY: the handlers only lock and unlock GATE; registered once for the process.
        unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
    });
    DEPTH.with(|d| {
        if d.get() == 0 {
            lock();
        }
        d.set(d.get() + 1);
    });
    Held(PhantomData)
}

impl Drop for Held {
    fn drop(&mut self) {
        DEPTH.with(|d| {
            d.set(d.get() - 1);
            if d.get() == 0 {
                unlock();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_fork_waits_until_no_thread_holds_the_gate_and_the_child_can_take_it() {
        let (held, release_it) = (mpsc::channel(), mpsc::channel::<()>());
        let holder = std::thread::spawn(move || {
            let _g = hold();
            held.0.send(()).unwrap();
            release_it.1.recv().unwrap();
            std::thread::sleep(Duration::from_millis(200));
        });
        held.1.recv().unwrap();
        release_it.0.send(()).unwrap();
        // The holder keeps the gate ~200 ms more: fork must wait for it, not copy it held.
        let start = std::time::Instant::now();
        // SAFETY: the child only takes the gate and exits without unwinding.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                drop(hold());
                let _ = tx.send(());
            });
            let code = if rx.recv_timeout(Duration::from_secs(5)).is_ok() {
                0
            } else {
                1
            };
            unsafe { libc::_exit(code) };
        }
        assert!(
            start.elapsed() >= Duration::from_millis(100),
            "fork did not wait"
        );
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
        holder.join().unwrap();
        // Re-entrant on one thread, and free again afterwards.
        let outer = hold();
        drop(hold());
        drop(outer);
    }
}
