//! `Body`: a message's bytes as the queue, the lanes and the spool share them, and the
//! `BodyArena` that cuts a calling thread's bodies from chunks.
//!
//! Why chunks: with one allocation per body, every message's bytes were freed by the
//! thread that ended it, and glibc takes the allocating (calling) thread's arena lock for
//! such a free, which the next call then waited for. Carved from a 4 KiB chunk, a call
//! allocates once per chunk (none while its chunk's bodies are all gone: it is reused), and
//! the ending thread frees a chunk, not each body.
//!
//! Why not `bytes::Bytes`: its handle is 32 bytes, this one 16 (a thin `Arc` to the chunk,
//! an offset, a length), the size of the `Arc<[u8]>` it replaces. A queued message holds one
//! or two (its batch entry, its `Track`'s id, its webhook round), in maps that a backlog of a
//! million messages makes large.
//!
//! The cost of sharing: a body that outlives the other bodies of its chunk (a retry) keeps
//! the whole chunk, at most 4 KiB, alive. Bodies over a quarter of a chunk get a chunk of
//! their own size.
//!
//! Why spare chunks: a chunk's last body is dropped by the thread that ended it, not the
//! one that carved it, and a Go program's calls run on whichever thread the runtime picks.
//! Freed there, a chunk went back to the glibc arena of the thread that made it, and the
//! next calls, often on another thread, took fresh memory from their own arena (page faults
//! and a growing heap per thread). A chunk whose bodies are all gone is kept instead, up to
//! [`SPARE`] of them, for whichever carver needs one next (never waited for: see
//! [`SPARE_CHUNKS`]).

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

/// A chunk's size: about eight bodies of the usual half kilobyte.
const CHUNK: usize = 4 * 1024;

/// Chunks kept for reuse, process-wide (1 MiB): what a few thousand queued messages churn
/// through; beyond it, a chunk is freed.
const SPARE: usize = 256;

type Cells = Box<[UnsafeCell<MaybeUninit<u8>>]>;

/// The spare chunks' bytes. Only ever `try_lock`ed: a thread that finds it taken allocates
/// or frees as without it, so no call waits here, and a child forked while another thread
/// held it (the lock then stays taken in the child) simply goes without spares.
static SPARE_CHUNKS: Mutex<Vec<Cells>> = Mutex::new(Vec::new());

fn take_spare() -> Option<Cells> {
    SPARE_CHUNKS.try_lock().ok()?.pop()
}

fn give_spare(cells: Cells) {
    if let Ok(mut spare) = SPARE_CHUNKS.try_lock() {
        if spare.len() < SPARE {
            spare.push(cells);
        }
    }
}

/// Bytes that bodies are carved from.
///
/// The rule that makes sharing sound: a byte is written once, by the one `BodyArena` that
/// owns the chunk, before any `Body` covers it, and never again while a `Body` may; a
/// `Body` covers only bytes written before it was made. So no byte is written while it can
/// be read.
struct Chunk {
    bytes: Cells,
}

// SAFETY: shared across threads only through `Body`, which reads bytes that no thread
// writes any more (the rule above); the `BodyArena` writes bytes no `Body` covers.
unsafe impl Sync for Chunk {}

impl Chunk {
    fn new(len: usize) -> Arc<Chunk> {
        let spared = (len == CHUNK).then(take_spare).flatten();
        Arc::new(Chunk {
            bytes: spared.unwrap_or_else(|| {
                (0..len)
                    .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                    .collect()
            }),
        })
    }

    /// Writes `data` at `at`.
    ///
    /// # Safety
    /// `at..at + data.len()` is within the chunk, and no `Body` covers any of it.
    unsafe fn write(&self, at: usize, data: &[u8]) {
        let cells = &self.bytes[at..at + data.len()];
        // SAFETY: the cells are ours to write (the contract); `UnsafeCell` allows writing
        // through a shared reference, and `UnsafeCell<MaybeUninit<u8>>` is laid out as `u8`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                UnsafeCell::raw_get(cells.as_ptr()).cast::<u8>(),
                data.len(),
            );
        }
    }
}

/// The last body of a chunk of the usual size is gone: its bytes are kept for the next
/// chunk, unless enough are.
impl Drop for Chunk {
    fn drop(&mut self) {
        if self.bytes.len() == CHUNK {
            give_spare(std::mem::take(&mut self.bytes));
        }
    }
}

/// A message's bytes: a range of a chunk, shared by reference count. 16 bytes.
#[derive(Clone)]
pub(crate) struct Body {
    chunk: Arc<Chunk>,
    at: u32,
    len: u32,
}

const _: () = assert!(std::mem::size_of::<Body>() == 16);

impl Body {
    /// `data` in a chunk of its own.
    pub(crate) fn copy_from_slice(data: &[u8]) -> Body {
        let len = u32::try_from(data.len()).expect("a message body is far below 4 GiB");
        let chunk = Chunk::new(data.len());
        // SAFETY: the whole of a new chunk, which no `Body` covers yet.
        unsafe { chunk.write(0, data) };
        Body { chunk, at: 0, len }
    }

    /// A static text, for tests.
    #[cfg(test)]
    pub(crate) fn from_static(data: &'static [u8]) -> Body {
        Body::copy_from_slice(data)
    }
}

impl From<Vec<u8>> for Body {
    fn from(data: Vec<u8>) -> Body {
        Body::copy_from_slice(&data)
    }
}

impl Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        let cells = &self.chunk.bytes[self.at as usize..][..self.len as usize];
        // SAFETY: these bytes were written before this body was made and are never written
        // again (`Chunk`'s rule); `UnsafeCell<MaybeUninit<u8>>` is laid out as `u8`.
        unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<u8>(), cells.len()) }
    }
}

/// A request body on the I/O engine is the queue's bytes themselves (`Bytes::from_owner`).
impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// Equal bytes (the spool's records compare in tests).
impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        **self == **other
    }
}

impl Eq for Body {}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Body({} bytes)", self.len)
    }
}

/// A thread's chunk and how much of it is written: its bodies are cut from it.
#[derive(Default)]
pub(crate) struct BodyArena {
    chunk: Option<Arc<Chunk>>,
    filled: usize,
}

impl BodyArena {
    /// `data` as a body: in this carver's chunk (a new one when it is full, the same one
    /// again when every body cut from it is gone), or in a chunk of its own when large.
    #[inline]
    pub(crate) fn carve(&mut self, data: &[u8]) -> Body {
        let n = data.len();
        if n > CHUNK / 4 {
            return Body::copy_from_slice(data);
        }
        // Every body of it gone (`get_mut` sees their drops): start it again.
        let unused = self
            .chunk
            .as_mut()
            .is_some_and(|c| Arc::get_mut(c).is_some());
        if unused {
            self.filled = 0;
        } else if self.chunk.is_none() || CHUNK - self.filled < n {
            (self.chunk, self.filled) = (Some(Chunk::new(CHUNK)), 0);
        }
        let chunk = self.chunk.as_ref().expect("set above");
        // SAFETY: within the chunk (checked above), and beyond `filled`: no body covers it.
        unsafe { chunk.write(self.filled, data) };
        let body = Body {
            chunk: chunk.clone(),
            at: self.filled as u32,
            len: n as u32,
        };
        self.filled += n;
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_read_back_what_was_carved_while_the_chunk_is_written_on() {
        let (tx, rx) = std::sync::mpsc::channel::<(Vec<u8>, Body)>();
        let reader = std::thread::spawn(move || {
            let mut kept = Vec::new();
            for (want, body) in rx {
                assert_eq!(&*body, &want[..]);
                kept.push((want, body));
            }
            // Read again once every later body of their chunks is written.
            for (want, body) in &kept {
                assert_eq!(&**body, &want[..]);
            }
            kept.len()
        });
        let mut carver = BodyArena::default();
        for i in 0..10_000usize {
            let data: Vec<u8> = (0..(i * 7) % 1500).map(|j| (i + j) as u8).collect();
            tx.send((data.clone(), carver.carve(&data))).unwrap();
        }
        drop(tx);
        assert_eq!(reader.join().unwrap(), 10_000);
    }

    #[test]
    fn spare_chunks_pass_between_threads_and_keep_every_body_intact() {
        // Carvers on four threads, their bodies checked and dropped on a fifth: chunks go
        // back to the spares there and are carved again on any of the four.
        let (tx, rx) = std::sync::mpsc::sync_channel::<(u8, usize, Body)>(64);
        let checker = std::thread::spawn(move || {
            let mut held = std::collections::VecDeque::new();
            for (who, i, body) in rx {
                let len = 1 + (i * 13) % 900;
                assert_eq!(body.len(), len);
                assert!(body.iter().all(|&b| b == who ^ (i as u8)), "body {who}/{i}");
                // Some bodies linger while later ones come and go.
                held.push_back(body);
                if held.len() > 100 {
                    held.pop_front();
                }
            }
        });
        let carvers: Vec<_> = (0..4u8)
            .map(|who| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut carver = BodyArena::default();
                    for i in 0..20_000usize {
                        let len = 1 + (i * 13) % 900;
                        tx.send((who, i, carver.carve(&vec![who ^ (i as u8); len])))
                            .unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        for c in carvers {
            c.join().unwrap();
        }
        checker.join().unwrap();
    }

    #[test]
    fn a_taken_spare_lock_is_never_waited_for() {
        // As a child forked while another thread held it finds it: taken for good.
        let held = SPARE_CHUNKS.lock().unwrap_or_else(|e| e.into_inner());
        let mut carvers = [BodyArena::default(), BodyArena::default()];
        let mut kept = Vec::new();
        for i in 0..2_000usize {
            let body = carvers[i % 2].carve(&[i as u8; 700]);
            assert_eq!(&*body, &[i as u8; 700][..]);
            // Every other body lingers a while: chunks are made and freed all along.
            if i % 2 == 0 {
                kept.push(body);
            }
            if kept.len() > 20 {
                kept.remove(0);
            }
        }
        drop(kept);
        drop(carvers);
        drop(held);
    }

    #[test]
    fn a_chunk_is_used_again_once_its_bodies_are_gone() {
        let mut carver = BodyArena::default();
        let first = carver.carve(b"one");
        let chunk = Arc::as_ptr(&first.chunk);
        drop(first);
        let again = carver.carve(b"two");
        assert_eq!(Arc::as_ptr(&again.chunk), chunk);
        assert_eq!(&*again, b"two");
        assert_eq!(again.at, 0, "started again from the front");
    }

    #[test]
    fn a_body_that_lingers_keeps_only_its_own_chunk() {
        let mut carver = BodyArena::default();
        let lingering = carver.carve(&[1; 500]);
        let mut first_chunk = vec![];
        while Arc::ptr_eq(&carver.carve(&[2; 500]).chunk, &lingering.chunk) {
            first_chunk.push(());
        }
        assert_eq!(
            first_chunk.len(),
            CHUNK / 500 - 1,
            "the rest of its chunk was used"
        );
        // The next bodies go to the new chunk, which is reused; the lingering one is intact.
        let later = carver.carve(&[3; 500]);
        assert!(!Arc::ptr_eq(&later.chunk, &lingering.chunk));
        assert_eq!(&*lingering, &[1; 500][..]);
        assert_eq!(Arc::strong_count(&lingering.chunk), 1);
    }

    #[test]
    fn a_large_body_gets_a_chunk_of_its_own_size() {
        let mut carver = BodyArena::default();
        let small = carver.carve(b"small");
        let large = carver.carve(&[7; CHUNK / 4 + 1]);
        assert!(!Arc::ptr_eq(&small.chunk, &large.chunk));
        assert_eq!(large.chunk.bytes.len(), CHUNK / 4 + 1);
        assert_eq!(&*large, &[7; CHUNK / 4 + 1][..]);
        // The small body's chunk goes on being filled.
        assert!(Arc::ptr_eq(&carver.carve(b"next").chunk, &small.chunk));
    }
}
