//! The open ingestion batch: it closes at `flush_at` messages, before it would pass
//! 500,000 body bytes (Segment's limit), or `flush_interval` after its first message; and what
//! one request carries ([`RequestLimit`]): at most `max_batch_messages` messages (`flush_at`
//! unless set) and 500,000 bytes, when closed batches wait ([`RequestLimit::join_waiting`],
//! and the lane's fill rule, [`RequestLimit::room`]).

use crate::delivery::job::{Batch, Job};
use crate::model::config::Config;
use crate::model::retry::after;
use crate::wire::ingestion::{body_len, Element, MAX_BATCH_BYTES};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The most one ingestion request carries: `messages` (`max_batch_messages`, which is
/// `flush_at` unless set: every peer's batch size is the most one request carries, and
/// receivers that take fewer than 500,000 bytes rely on it) and
/// [`MAX_BATCH_BYTES`] of body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RequestLimit {
    pub messages: usize,
}

/// What one request could still take beyond what waits: messages and body bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Room {
    pub messages: usize,
    pub bytes: usize,
}

impl RequestLimit {
    /// The limit a client's settings give (checked: `max_batch_messages` >= `flush_at`).
    pub(crate) fn of(config: &Config) -> RequestLimit {
        RequestLimit {
            messages: config.max_batch_messages.unwrap_or(config.flush_at),
        }
    }

    /// Batches that waited go out together: the first attempts queued right behind `batch`
    /// (a first attempt itself) join it while the request stays within the limit. By
    /// default (`messages` = `flush_at`) only batches closed short of `flush_at` (by
    /// `flush_interval`, a flush or the byte limit) can join; with `max_batch_messages`
    /// set higher, a backlog costs fewer, larger requests (the receiver's cost, and ours,
    /// is mostly per request), at the price of one bad answer failing more messages.
    /// Retries and the halves of a split batch keep their own requests (a split must not
    /// join again).
    pub(crate) fn join_waiting(self, batch: &mut Batch, ready: &mut VecDeque<Job>) {
        if batch.attempts > 0 {
            return;
        }
        while let Some(Job::Batch(next)) = ready.front() {
            let (count, bytes) = (batch.msgs.len() + next.msgs.len(), batch.bytes + next.bytes);
            if next.attempts > 0 || !self.fits(count, bytes) {
                return;
            }
            let Some(Job::Batch(next)) = ready.pop_front() else {
                return;
            };
            batch.bytes = bytes;
            batch.first = match (batch.first, next.first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            batch.msgs.extend(next.msgs);
        }
    }

    /// What one request could still take after every request in `ready`, when
    /// [`join_waiting`](Self::join_waiting) would put them all into one (all new batches,
    /// together within the limit: the lane's fill rule); `None` when it would not, or when
    /// that request is full (then nothing is gained by waiting). It runs at every turn of
    /// the scheduler while a young request is out, so it reads each batch's kept byte count,
    /// not its messages, and stops at the first batch that fills a request: at most one
    /// request's worth, however long the backlog (reading all of it was a fifth to a third
    /// of the process's instructions behind a receiver answering in 1 ms).
    pub(crate) fn room(self, ready: &VecDeque<Job>) -> Option<Room> {
        let (mut count, mut sum) = (0, 0);
        for job in ready {
            let Job::Batch(b) = job else { return None };
            if b.attempts > 0 {
                return None;
            }
            count += b.msgs.len();
            sum += b.bytes;
            if count >= self.messages || body_len(count, sum) >= MAX_BATCH_BYTES {
                return None;
            }
        }
        Some(Room {
            messages: self.messages - count,
            bytes: MAX_BATCH_BYTES - body_len(count, sum),
        })
    }

    /// Whether `count` messages of `sum` bytes together go in one request.
    fn fits(self, count: usize, sum: usize) -> bool {
        count <= self.messages && body_len(count, sum) <= MAX_BATCH_BYTES
    }
}

pub(crate) struct Batcher {
    flush_at: usize,
    interval: Duration,
    open: Vec<(u64, Element)>,
    bytes: usize,
    deadline: Option<Instant>,
    /// The mean message size of the last batch closed (what the scheduler's room guesses by).
    mean: usize,
}

impl Batcher {
    pub(crate) fn new(flush_at: usize, interval: Duration) -> Batcher {
        Batcher {
            flush_at,
            interval,
            open: Vec::new(),
            bytes: 0,
            deadline: None,
            mean: 0,
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
        if self.open.is_empty() {
            return None;
        }
        self.mean = self.bytes / self.open.len();
        // The next batch gets room for a full batch at once: growing by doubling would
        // leave up to half of each queued batch's list unused.
        let next = Vec::with_capacity(self.flush_at.min(1024));
        Some(Batch {
            msgs: std::mem::replace(&mut self.open, next),
            bytes: std::mem::take(&mut self.bytes),
            first: None,
            attempts: 0,
        })
    }

    /// Messages that would fill the open batch.
    pub(crate) fn room(&self) -> usize {
        self.flush_at.saturating_sub(self.open.len())
    }

    /// Unread messages the scheduler may leave in its channel: those that fill the open
    /// batch, or, while the lane's fill rule holds batches for a young request, as many as
    /// that request's successor could take beyond the open batch (`next`: its
    /// [`RequestLimit::room`]), whichever is more.
    pub(crate) fn unread_room(&self, next: Option<Room>) -> usize {
        let Some(next) = next else {
            return self.room();
        };
        let by_count = next.messages.saturating_sub(self.open.len());
        self.room().max(by_count.min(self.messages_in(next.bytes)))
    }

    /// How many more messages a request could take, beyond the open batch, when it has
    /// `bytes` left (a guess by the mean size of the last batch closed).
    fn messages_in(&self, bytes: usize) -> usize {
        let open_mean = self.bytes.checked_div(self.open.len()).unwrap_or(0);
        let mean = self.mean.max(open_mean).max(1);
        bytes.saturating_sub(self.bytes) / (mean + 1)
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

    /// The limit of a client that sets `max_batch_messages` this high (joining on).
    const JOINING: RequestLimit = RequestLimit { messages: 100_000 };

    #[test]
    fn closes_at_flush_at() {
        let mut b = Batcher::new(3, Duration::from_secs(5));
        let now = Instant::now();
        assert_eq!(b.add(0, msg(10), now).count(), 0);
        assert_eq!(b.add(1, msg(10), now).count(), 0);
        let full: Vec<_> = b.add(2, msg(10), now).collect();
        assert_eq!(full.len(), 1);
        assert_eq!(full[0].msgs.len(), 3);
        assert_eq!(full[0].bytes, 30, "its messages' bytes, counted");
        assert!(b.deadline().is_none());
    }

    #[test]
    fn the_limit_is_flush_at_unless_max_batch_messages_is_set() {
        let config = Config {
            flush_at: 7,
            ..Config::default()
        };
        assert_eq!(RequestLimit::of(&config).messages, 7);
        let config = Config {
            max_batch_messages: Some(300),
            ..config
        };
        assert_eq!(RequestLimit::of(&config).messages, 300);
    }

    #[test]
    fn guesses_how_many_messages_fill_a_request() {
        let mut b = Batcher::new(3, Duration::from_secs(5));
        let now = Instant::now();
        assert_eq!(
            b.messages_in(1000),
            500,
            "nothing seen yet: a byte each, plus a comma"
        );
        let closed: Vec<_> = (0..3).flat_map(|i| b.add(i, msg(99), now)).collect();
        assert_eq!(closed.len(), 1);
        assert_eq!(b.messages_in(10_000), 100, "by the last batch's mean size");
        b.add(3, msg(199), now).for_each(drop);
        // The open batch's bytes are taken first, then its larger mean counts.
        assert_eq!(b.messages_in(10_199), 50);
        let ready = VecDeque::from([Job::Batch(closed.into_iter().next().unwrap())]);
        assert_eq!(
            JOINING.room(&ready),
            Some(Room {
                messages: JOINING.messages - 3,
                bytes: MAX_BATCH_BYTES - body_len(3, 297)
            })
        );
    }

    #[test]
    fn the_scheduler_leaves_unread_what_the_next_request_could_take() {
        let mut b = Batcher::new(3, Duration::from_secs(5));
        let now = Instant::now();
        b.add(0, msg(99), now).for_each(drop);
        assert_eq!(b.unread_room(None), 2, "what fills the open batch");
        let next = Room {
            messages: 50,
            bytes: 10_099,
        };
        assert_eq!(
            b.unread_room(Some(next)),
            49,
            "by count, beyond the open batch"
        );
        let next = Room {
            messages: 5_000,
            bytes: 10_099,
        };
        assert_eq!(b.unread_room(Some(next)), 100, "by bytes");
        let next = Room {
            messages: 2,
            bytes: 10_099,
        };
        assert_eq!(
            b.unread_room(Some(next)),
            2,
            "never less than the open batch's room"
        );
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

    fn waiting(sizes: &[(usize, u32)]) -> VecDeque<Job> {
        let mut seq = 0;
        sizes
            .iter()
            .map(|&(n, attempts)| {
                let msgs = (0..n)
                    .map(|_| {
                        seq += 1;
                        (seq, msg(1_000))
                    })
                    .collect();
                Job::Batch(Batch::new(msgs, None, attempts))
            })
            .collect()
    }

    fn take(limit: RequestLimit, ready: &mut VecDeque<Job>) -> Batch {
        let Some(Job::Batch(mut b)) = ready.pop_front() else {
            panic!("a batch");
        };
        limit.join_waiting(&mut b, ready);
        b
    }

    /// The requests `limit` makes of what waits: (messages, attempts) each.
    fn requests(limit: RequestLimit, mut ready: VecDeque<Job>) -> Vec<(usize, u32)> {
        std::iter::from_fn(|| {
            (!ready.is_empty()).then(|| {
                let b = take(limit, &mut ready);
                (b.msgs.len(), b.attempts)
            })
        })
        .collect()
    }

    #[test]
    fn by_default_full_batches_waiting_keep_a_request_each() {
        let flush_at = RequestLimit { messages: 5 };
        let sent = requests(flush_at, waiting(&[(5, 0), (5, 0), (2, 0)]));
        assert_eq!(sent, vec![(5, 0), (5, 0), (2, 0)]);
    }

    #[test]
    fn by_default_batches_closed_short_of_flush_at_join_up_to_it() {
        let flush_at = RequestLimit { messages: 5 };
        let sent = requests(flush_at, waiting(&[(2, 0), (2, 0), (2, 0), (5, 0)]));
        assert_eq!(sent, vec![(4, 0), (2, 0), (5, 0)]);
    }

    #[test]
    fn with_flush_at_1_each_message_keeps_its_own_request() {
        let flush_at = RequestLimit { messages: 1 };
        let sent = requests(flush_at, waiting(&[(1, 0); 6]));
        assert_eq!(sent, vec![(1, 0); 6]);
    }

    #[test]
    fn joined_batches_never_pass_max_batch_messages() {
        let limit = RequestLimit { messages: 50 };
        let sent = requests(limit, waiting(&[(20, 0); 5]));
        assert_eq!(sent, vec![(40, 0), (40, 0), (20, 0)]);
    }

    #[test]
    fn batches_waiting_for_a_connection_go_out_in_one_request() {
        let mut ready = waiting(&[(20, 0), (20, 0), (20, 0)]);
        let b = take(JOINING, &mut ready);
        assert_eq!(b.msgs.len(), 60);
        let seqs: Vec<u64> = b.msgs.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, (1..=60).collect::<Vec<_>>(), "in their order");
        assert_eq!(b.bytes, 60_000, "the joined batches' bytes, counted");
        assert!(ready.is_empty());
    }

    #[test]
    fn joined_batches_never_pass_the_byte_limit() {
        // 1,000-byte messages: 498 fit in 500,000 bytes of body.
        let mut ready = waiting(&[(20, 0); 60]);
        let mut sent = Vec::new();
        while !ready.is_empty() {
            let b = take(JOINING, &mut ready);
            let sum = b.msgs.iter().map(|(_, m)| m.len()).sum();
            assert!(body_len(b.msgs.len(), sum) <= MAX_BATCH_BYTES);
            sent.push(b.msgs.len());
        }
        assert_eq!(sent, vec![480, 480, 240]);
    }

    #[test]
    fn retries_and_split_halves_keep_their_own_requests() {
        let ready = waiting(&[(10, 1), (10, 0), (10, 0), (10, 2), (10, 0)]);
        assert_eq!(
            requests(JOINING, ready),
            vec![(10, 1), (20, 0), (10, 2), (10, 0)]
        );
    }

    #[test]
    fn a_joined_batch_keeps_the_earliest_start_of_its_window() {
        let t = Instant::now();
        let mut ready = waiting(&[(5, 0), (5, 0)]);
        if let Some(Job::Batch(b)) = ready.get_mut(1) {
            b.first = Some(t);
        }
        if let Some(Job::Batch(b)) = ready.get_mut(0) {
            b.first = Some(t + Duration::from_secs(1));
        }
        assert_eq!(take(JOINING, &mut ready).first, Some(t));
    }

    #[test]
    fn a_full_request_waiting_leaves_no_room_to_wait_for() {
        let flush_at = RequestLimit { messages: 5 };
        assert_eq!(flush_at.room(&waiting(&[(5, 0)])), None);
        assert_eq!(flush_at.room(&waiting(&[(3, 0), (3, 0)])), None);
        assert_eq!(
            flush_at.room(&waiting(&[(3, 0)])),
            Some(Room {
                messages: 2,
                bytes: MAX_BATCH_BYTES - body_len(3, 3_000)
            })
        );
        assert_eq!(JOINING.room(&waiting(&[(3, 1)])), None, "a retry");
        assert_eq!(
            JOINING.room(&waiting(&[(500, 0)])),
            None,
            "past 500,000 bytes"
        );
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
