//! The process's budget of lane threads. Every client of a process (the relay runs one per
//! source) draws its lane threads from one budget, so a thousand slow URLs cannot start
//! threads until the system refuses: on a stock Linux the memory-map limit (65,530 maps,
//! about four per thread) is reached near 16,000 threads, and the next allocation anywhere
//! in the process aborts it. At the budget a request waits at the head of its lane for one
//! of the lane's own threads to come back, and a lane holds at most a fair share.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Lane threads one process runs at most: 100 ms answers at 40,000 requests/s, at about
/// 75 KiB of memory each (the touched stack and the connection's buffers; 9,135 threads
/// were 693 MiB in the relay's tenants benchmark).
pub(crate) const PROCESS_LANE_THREADS: usize = 4096;

/// Webhook requests in flight at once in one process (each a connection: ~20 KiB with its
/// buffers): 100 ms answers at 40,000 requests/s.
pub(crate) const PROCESS_REQUESTS: usize = 16_384;

/// Threads alive and lanes holding them, against a limit.
pub(crate) struct Budget {
    limit: usize,
    live: AtomicUsize,
    /// Lanes holding at least one thread: the fair share divides the limit among them.
    lanes: AtomicUsize,
}

/// One thread's place in the budget, given back when the thread ends (dropped with it).
pub(crate) struct Ticket(&'static Budget);

/// A lane's place among the lanes holding threads, while it holds any.
pub(crate) struct Seat(&'static Budget);

impl Budget {
    pub(crate) const fn new(limit: usize) -> Budget {
        Budget {
            limit,
            live: AtomicUsize::new(0),
            lanes: AtomicUsize::new(0),
        }
    }

    /// The one every client of the process shares.
    pub(crate) fn process() -> &'static Budget {
        static PROCESS: Budget = Budget::new(PROCESS_LANE_THREADS);
        &PROCESS
    }

    /// Webhook requests in flight on the I/O engines of the process: each holds a
    /// connection and its buffers, and the lanes with requests out share them fairly.
    pub(crate) fn requests() -> &'static Budget {
        static REQUESTS: Budget = Budget::new(PROCESS_REQUESTS);
        &REQUESTS
    }

    /// What one lane may hold: an equal part of the limit among the lanes holding threads,
    /// at least one.
    pub(crate) fn fair_share(&self) -> usize {
        (self.limit / self.lanes.load(Relaxed).max(1)).max(1)
    }

    /// Whether a lane holding `held` threads may start one more: its first always (every
    /// lane must move, so the limit is exceeded by at most one thread per lane), the next
    /// ones within the limit and the lane's fair share.
    pub(crate) fn may_grow(&self, held: usize) -> bool {
        self.allows(held, self.live.load(Relaxed))
    }

    /// The rule of [`may_grow`](Self::may_grow) with `live` threads alive.
    fn allows(&self, held: usize, live: usize) -> bool {
        held == 0 || (held < self.fair_share() && live < self.limit)
    }

    /// A place for one more thread of a lane holding `held`, if [`may_grow`](Self::may_grow)
    /// (checked again here, atomically: other clients draw from the same budget).
    pub(crate) fn acquire(&'static self, held: usize) -> Option<Ticket> {
        let mut live = self.live.load(Relaxed);
        loop {
            if !self.allows(held, live) {
                return None;
            }
            match self
                .live
                .compare_exchange_weak(live, live + 1, Relaxed, Relaxed)
            {
                Ok(_) => return Some(Ticket(self)),
                Err(now) => live = now,
            }
        }
    }

    /// Counts a lane among those holding threads until the seat is dropped.
    pub(crate) fn seat(&'static self) -> Seat {
        self.lanes.fetch_add(1, Relaxed);
        Seat(self)
    }

    /// Threads alive.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.live.load(Relaxed)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Relaxed);
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.lanes.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limit: usize) -> &'static Budget {
        Box::leak(Box::new(Budget::new(limit)))
    }

    #[test]
    fn threads_stop_at_the_limit_and_come_back_when_one_ends() {
        let b = budget(4);
        let _seat = b.seat();
        let tickets: Vec<Ticket> = (0..4).map(|held| b.acquire(held).unwrap()).collect();
        assert!(b.acquire(4).is_none(), "a fifth thread over the limit of 4");
        assert!(!b.may_grow(4));
        drop(tickets);
        assert_eq!(b.live(), 0, "each ended thread gives its place back");
        assert!(b.acquire(0).is_some());
    }

    #[test]
    fn a_lane_s_first_thread_is_never_refused() {
        let b = budget(2);
        let _seats = [b.seat(), b.seat()];
        let _full: Vec<Ticket> = (0..2).map(|_| b.acquire(0).unwrap()).collect();
        assert!(b.acquire(1).is_none(), "full");
        assert!(
            b.may_grow(0) && b.acquire(0).is_some(),
            "a lane with none still moves"
        );
    }

    #[test]
    fn lanes_holding_threads_share_the_limit() {
        let b = budget(12);
        let seats: Vec<Seat> = (0..3).map(|_| b.seat()).collect();
        assert_eq!(b.fair_share(), 4);
        assert!(b.acquire(3).is_some());
        assert!(
            b.acquire(4).is_none(),
            "a lane past its share of 12 among 3"
        );
        drop(seats);
        assert_eq!(b.fair_share(), 12, "alone, a lane may hold the whole limit");
    }
}
