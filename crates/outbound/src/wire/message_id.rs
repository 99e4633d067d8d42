//! Default message ids: UUIDv4 from a fast per-thread generator that is safe across `fork()`.
//!
//! A per-thread generator is ~15× cheaper than asking the OS per id, but a forked child
//! inherits the forking thread's generator state and would repeat the parent's ids, which
//! receivers that deduplicate on `messageId` would drop. So a `pthread_atfork` child handler
//! bumps a generation counter, and a generator from an older generation reseeds from the OS.
//!
//! Also `MsgId`: how an accepted message's id is kept, without an allocation of its own.

use crate::wire::Body;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Once};

/// A message's id as the scheduler and the lanes keep it until the outcome: inside its body
/// when the body holds it as it is (always for the ids we make), so it costs no allocation.
#[derive(Clone, Debug)]
pub(crate) enum MsgId {
    /// The body, and where the id's text stands in it (start, length).
    In(Body, u16, u16),
    Own(Arc<str>),
}

impl MsgId {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            MsgId::In(body, at, len) => {
                let at = usize::from(*at);
                std::str::from_utf8(&body[at..at + usize::from(*len)]).unwrap_or("")
            }
            MsgId::Own(id) => id,
        }
    }

    pub(crate) fn to_arc(&self) -> Arc<str> {
        match self {
            MsgId::In(..) => self.as_str().into(),
            MsgId::Own(id) => id.clone(),
        }
    }
}

static GENERATION: AtomicU64 = AtomicU64::new(0);
static AT_FORK: Once = Once::new();

extern "C" fn in_child() {
    // Async-signal-safe: one atomic add.
    GENERATION.fetch_add(1, Relaxed);
}

thread_local! {
    static RNG: RefCell<Option<(u64, fastrand::Rng)>> = const { RefCell::new(None) };
}

fn seeded() -> fastrand::Rng {
    // uuid's v4 without `fast-rng` draws from the OS (getrandom).
    fastrand::Rng::with_seed(uuid::Uuid::new_v4().as_u64_pair().0)
}

/// A fresh UUIDv4, lower-case hyphenated, into `buf`.
pub(crate) fn new_v4(buf: &mut [u8; uuid::fmt::Hyphenated::LENGTH]) -> &str {
    AT_FORK.call_once(|| {
        // SAFETY: registers a handler that only does an atomic add; it lives for the process.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
    let generation = GENERATION.load(Relaxed);
    let bytes = RNG.with(|cell| {
        let mut slot = cell.borrow_mut();
        let (g, rng) = slot.get_or_insert_with(|| (generation, seeded()));
        if *g != generation {
            *g = generation;
            *rng = seeded();
        }
        rng.u128(..).to_le_bytes()
    });
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .encode_lower(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> String {
        new_v4(&mut [0; 36]).to_string()
    }

    #[test]
    fn ids_are_version_4_and_distinct() {
        let a = id();
        let b = id();
        assert_ne!(a, b);
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 4);
    }

    #[test]
    fn a_forked_child_does_not_repeat_the_parents_ids() {
        let _ = id(); // the generator of this thread exists before the fork
        let mut fds = [0; 2];
        // SAFETY: plain pipe + fork; the child only computes an id, writes it and exits.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let child = id();
                libc::write(fds[1], child.as_ptr().cast(), child.len());
                libc::_exit(0);
            }
            let parent = id();
            let mut buf = [0u8; 36];
            assert_eq!(libc::read(fds[0], buf.as_mut_ptr().cast(), 36), 36);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
            assert_ne!(std::str::from_utf8(&buf).unwrap(), parent);
        }
    }
}
