//! A tenant's retry timers: what starts again when (a batch, or a message's webhook round),
//! earliest first.

use crate::delivery::job::Batch;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

/// What a retry timer starts when it falls due.
pub(super) enum Due {
    Batch(Batch),
    HookRound(u64),
}

struct Timer {
    at: Instant,
    /// Tells timers of one instant apart, first set first.
    n: u64,
    due: Due,
}

impl PartialEq for Timer {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.n) == (o.at, o.n)
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timer {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.n).cmp(&(self.at, self.n))
    }
}

#[derive(Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Timer>,
    set: u64,
}

impl Timers {
    /// Starts `due` again at `at`.
    pub(super) fn set(&mut self, at: Instant, due: Due) {
        self.set += 1;
        self.heap.push(Timer {
            at,
            n: self.set,
            due,
        });
    }

    /// When the earliest falls due.
    pub(super) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|t| t.at)
    }

    /// The earliest timer, when it is due at `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<Due> {
        match self.heap.peek() {
            Some(t) if t.at <= now => self.heap.pop().map(|t| t.due),
            _ => None,
        }
    }

    /// Every timer, due or not (close).
    pub(super) fn take_all(&mut self) -> impl Iterator<Item = Due> {
        std::mem::take(&mut self.heap).into_iter().map(|t| t.due)
    }
}
