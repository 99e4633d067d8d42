//! The open ingestion batch: it closes at `flush_at` messages, before it would pass
//! 500,000 body bytes, or `flush_interval` after its first message (design §5).

use crate::ingestion::{body_len, Element, MAX_BATCH_BYTES};
use crate::lane::Batch;
use crate::retry::after;
use std::time::{Duration, Instant};

pub(crate) struct Batcher {
    flush_at: usize,
    interval: Duration,
    open: Vec<(u64, Element)>,
    bytes: usize,
    deadline: Option<Instant>,
}

impl Batcher {
    pub(crate) fn new(flush_at: usize, interval: Duration) -> Batcher {
        Batcher {
            flush_at,
            interval,
            open: Vec::new(),
            bytes: 0,
            deadline: None,
        }
    }

    /// Adds a message; returns the batches it closed (the previous one when this message
    /// would push it past the byte limit, and this one when it is full).
    pub(crate) fn add(
        &mut self,
        seq: u64,
        bytes: Element,
        now: Instant,
    ) -> impl Iterator<Item = Batch> {
        let len = bytes.len();
        let mut closed = [None, None];
        if !self.open.is_empty()
            && body_len(self.open.len() + 1, self.bytes + len) > MAX_BATCH_BYTES
        {
            closed[0] = self.close();
        }
        if self.open.is_empty() {
            self.deadline = Some(after(now, self.interval));
        }
        self.open.push((seq, bytes));
        self.bytes += len;
        if self.open.len() >= self.flush_at {
            closed[1] = self.close();
        }
        closed.into_iter().flatten()
    }

    /// Closes the open batch, if it has anything.
    pub(crate) fn close(&mut self) -> Option<Batch> {
        self.deadline = None;
        self.bytes = 0;
        if self.open.is_empty() {
            return None;
        }
        // The next batch gets room for a full batch at once: growing by doubling would
        // leave up to half of each queued batch's list unused.
        let next = Vec::with_capacity(self.flush_at.min(1024));
        Some(Batch {
            msgs: std::mem::replace(&mut self.open, next),
            first: None,
            attempts: 0,
        })
    }

    /// Messages that would fill the open batch.
    pub(crate) fn room(&self) -> usize {
        self.flush_at.saturating_sub(self.open.len())
    }

    /// When the open batch must close.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(len: usize) -> Element {
        Element::own(vec![b'x'; len].into())
    }

    #[test]
    fn closes_at_flush_at() {
        let mut b = Batcher::new(3, Duration::from_secs(5));
        let now = Instant::now();
        assert_eq!(b.add(0, msg(10), now).count(), 0);
        assert_eq!(b.add(1, msg(10), now).count(), 0);
        let full: Vec<_> = b.add(2, msg(10), now).collect();
        assert_eq!(full.len(), 1);
        assert_eq!(full[0].msgs.len(), 3);
        assert!(b.deadline().is_none());
    }

    #[test]
    fn never_passes_the_byte_limit() {
        let mut b = Batcher::new(1000, Duration::from_secs(5));
        let now = Instant::now();
        let mut sizes = Vec::new();
        for seq in 0..40 {
            for batch in b.add(seq, msg(30_000), now) {
                sizes.push(body_len(batch.msgs.len(), batch.msgs.len() * 30_000));
            }
        }
        assert!(!sizes.is_empty());
        assert!(sizes.iter().all(|s| *s <= MAX_BATCH_BYTES), "{sizes:?}");
    }

    #[test]
    fn deadline_counts_from_the_first_message() {
        let mut b = Batcher::new(10, Duration::from_secs(5));
        let t = Instant::now();
        let _ = b.add(0, msg(1), t).count();
        let _ = b.add(1, msg(1), t + Duration::from_secs(1)).count();
        assert_eq!(b.deadline(), Some(t + Duration::from_secs(5)));
        assert_eq!(b.close().unwrap().msgs.len(), 2);
        assert!(b.close().is_none());
    }
}
