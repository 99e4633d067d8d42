//! The process's budget of requests in flight. Every client of a process (the relay runs one
//! per source) draws its requests from one budget, so a thousand slow URLs cannot hold
//! connections and buffers without bound. At the budget a request waits at the head of its
//! lane for one of the lane's own requests to come back, and a lane holds at most a fair
//! share.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests in flight at once in one process at most (each holds a connection and its
/// buffers; BENCHMARKS.md, "Budget of requests"). What the budget allows is less while
/// requests wait on the process itself: see [`Gradient`].
pub(crate) const PROCESS_REQUESTS: usize = 16_384;

/// Where the budget of requests starts: a burst to many slow URLs at start would otherwise
/// put most of [`PROCESS_REQUESTS`] out before the first period tells, and it reaches
/// [`PROCESS_REQUESTS`] in 3 s when the process keeps up.
pub(crate) const START_REQUESTS: usize = 4096;
/// The least the budget of requests allows (a lane's first request is never refused anyway).
pub(crate) const FLOOR_REQUESTS: usize = 1024;
/// The process's own delay of a request (from its lane's hand-off to its first turn on the
/// I/O engine, and from its answer to the scheduler's look at it), as the median of a
/// period: above this, the requests wait on the process, and the budget shrinks...
const SHRINK_ABOVE: Duration = Duration::from_millis(32);
/// ...and below this, while the budget holds lanes back, it grows.
const GROW_BELOW: Duration = Duration::from_millis(8);
/// How often the budget is looked at again, given enough answers.
const PERIOD: Duration = Duration::from_millis(250);
const MIN_SAMPLES: u32 = 32;
/// Delays in powers of two of microseconds, up to 2^24 µs (17 s).
const LAG_BUCKETS: usize = 25;

/// Requests out and lanes holding them, against a limit.
pub(crate) struct Budget {
    /// The most it ever allows.
    max: usize,
    /// What it allows now ([`Gradient`] sets it).
    limit: AtomicUsize,
    live: AtomicUsize,
    /// Lanes holding at least one place: the fair share divides the limit among them.
    lanes: AtomicUsize,
    /// A lane was refused a place since the last period (by the limit or its share of it).
    refused: AtomicBool,
    gradient: Mutex<Gradient>,
}

/// One request's place in the budget, given back when the request ends (dropped with it).
pub(crate) struct Ticket(&'static Budget);

/// A lane's place among the lanes holding places, while it holds any.
pub(crate) struct ShareMember(&'static Budget);

/// The budget of requests follows the process's own delays: past what the process can
/// serve, more requests out only wait longer for it, and cost memory and CPU in the waiting
/// (BENCHMARKS.md, "Budget of requests"). How long a request waits for the
/// process (the I/O engine's first turn after its lane handed it over, and the scheduler's
/// look at its answer) says so whatever its receiver does: a slow or stalling receiver, a
/// hang or a timeout does not move it. Above [`SHRINK_ABOVE`] (the median of a period) the
/// budget comes down to under what was out, then by an eighth a period, never below
/// [`FLOOR_REQUESTS`] nor two a lane with requests out; below [`GROW_BELOW`], when it refused
/// a lane in the period, it grows by an eighth, up to [`PROCESS_REQUESTS`]; in between it
/// stays (the band: BENCHMARKS.md, "Budget of requests"). A process not pressed for
/// requests never reaches the budget, whatever its delays.
struct Gradient {
    since: Option<Instant>,
    lags: [u32; LAG_BUCKETS],
    n: u32,
    /// The most requests alive at an answer of this period.
    peak: usize,
}

impl Gradient {
    const fn new() -> Gradient {
        Gradient {
            since: None,
            lags: [0; LAG_BUCKETS],
            n: 0,
            peak: 0,
        }
    }

    fn add(&mut self, lag: Duration, live: usize) {
        let us = lag.as_micros().min(u64::MAX as u128) as u64;
        let b = (64 - us.leading_zeros()) as usize;
        self.lags[b.min(LAG_BUCKETS - 1)] += 1;
        self.n += 1;
        self.peak = self.peak.max(live);
    }

    /// The median delay: the middle of its bucket (bucket `b` holds [2^(b-1), 2^b) µs).
    fn median(&self) -> Duration {
        let mut seen = 0;
        for (b, n) in self.lags.iter().enumerate() {
            seen += n;
            if seen * 2 >= self.n {
                let low = if b == 0 { 0 } else { 1u64 << (b - 1) };
                let high = 1u64 << b;
                return Duration::from_micros((low + high) / 2);
            }
        }
        Duration::ZERO
    }

    /// The next limit from `limit`, for this period; `refused`, whether the budget held a
    /// lane back in it; `lanes`, the lanes with requests out.
    fn next(&self, limit: usize, max: usize, refused: bool, lanes: usize) -> usize {
        let median = self.median();
        if median > SHRINK_ABOVE {
            // Never below two a lane: each lane's first is never refused, so a budget under
            // one a lane would hold nothing back but the lanes' second requests.
            let floor = FLOOR_REQUESTS.max(2 * lanes).min(max);
            let under = limit.min(self.peak);
            return (under - under / 8).max(floor).min(limit.max(floor));
        }
        if median < GROW_BELOW && refused {
            return (limit + (limit / 8).max(64)).min(max);
        }
        limit
    }
}

impl Budget {
    /// A budget that allows `limit` from the start (tests).
    #[cfg(test)]
    pub(crate) const fn new(limit: usize) -> Budget {
        Budget::starting_at(limit, limit)
    }

    /// A budget of at most `max` that allows `start` at first.
    const fn starting_at(max: usize, start: usize) -> Budget {
        Budget {
            max,
            limit: AtomicUsize::new(start),
            live: AtomicUsize::new(0),
            lanes: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
            gradient: Mutex::new(Gradient::new()),
        }
    }

    /// Requests in flight on the I/O engines of the process: each holds a
    /// connection and its buffers, and the lanes with requests out share them fairly.
    pub(crate) fn requests() -> &'static Budget {
        static REQUESTS: Budget = Budget::starting_at(PROCESS_REQUESTS, START_REQUESTS);
        &REQUESTS
    }

    /// What one lane may hold: an equal part of the limit among the lanes holding places,
    /// at least one.
    pub(crate) fn fair_share(&self) -> usize {
        (self.limit() / self.lanes.load(Relaxed).max(1)).max(1)
    }

    /// What it allows now.
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Relaxed)
    }

    /// A request came back at `now` after waiting `lag` for the process: every [`PERIOD`],
    /// with enough of them, the limit follows ([`Gradient`]).
    pub(crate) fn answered(&self, lag: Duration, now: Instant) {
        let live = self.live.load(Relaxed);
        // One scheduler thread per engine answers; another one's period can wait.
        let Ok(mut g) = self.gradient.try_lock() else {
            return;
        };
        g.add(lag, live);
        let since = *g.since.get_or_insert(now);
        if now.saturating_duration_since(since) < PERIOD || g.n < MIN_SAMPLES {
            return;
        }
        let refused = self.refused.swap(false, Relaxed);
        let next = g.next(self.limit(), self.max, refused, self.lanes.load(Relaxed));
        self.limit.store(next, Relaxed);
        *g = Gradient::new();
        g.since = Some(now);
    }

    /// Whether a lane holding `held` places may take one more: its first always (every
    /// lane must move, so the limit is exceeded by at most one request per lane), the next
    /// ones within the limit and the lane's fair share.
    pub(crate) fn may_grow(&self, held: usize) -> bool {
        let ok = self.allows(held, self.live.load(Relaxed));
        if !ok {
            self.refused.store(true, Relaxed);
        }
        ok
    }

    /// The rule of [`may_grow`](Self::may_grow) with `live` places taken.
    fn allows(&self, held: usize, live: usize) -> bool {
        held == 0 || (held < self.fair_share() && live < self.limit())
    }

    /// A place for one more request of a lane holding `held`, if [`may_grow`](Self::may_grow)
    /// (checked again here, atomically: other clients draw from the same budget).
    pub(crate) fn acquire(&'static self, held: usize) -> Option<Ticket> {
        let mut live = self.live.load(Relaxed);
        loop {
            if !self.allows(held, live) {
                self.refused.store(true, Relaxed);
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

    /// Counts a lane among those holding places until its membership is dropped.
    pub(crate) fn member(&'static self) -> ShareMember {
        self.lanes.fetch_add(1, Relaxed);
        ShareMember(self)
    }

    /// Places taken.
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

impl Drop for ShareMember {
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
    fn places_stop_at_the_limit_and_come_back_when_one_ends() {
        let b = budget(4);
        let _member = b.member();
        let tickets: Vec<Ticket> = (0..4).map(|held| b.acquire(held).unwrap()).collect();
        assert!(
            b.acquire(4).is_none(),
            "a fifth request over the limit of 4"
        );
        assert!(!b.may_grow(4));
        drop(tickets);
        assert_eq!(b.live(), 0, "each ended request gives its place back");
        assert!(b.acquire(0).is_some());
    }

    #[test]
    fn a_lane_s_first_request_is_never_refused() {
        let b = budget(2);
        let _members = [b.member(), b.member()];
        let _full: Vec<Ticket> = (0..2).map(|_| b.acquire(0).unwrap()).collect();
        assert!(b.acquire(1).is_none(), "full");
        assert!(
            b.may_grow(0) && b.acquire(0).is_some(),
            "a lane with none still moves"
        );
    }

    #[test]
    fn lanes_holding_places_share_the_limit() {
        let b = budget(12);
        let members: Vec<ShareMember> = (0..3).map(|_| b.member()).collect();
        assert_eq!(b.fair_share(), 4);
        assert!(b.acquire(3).is_some());
        assert!(
            b.acquire(4).is_none(),
            "a lane past its share of 12 among 3"
        );
        drop(members);
        assert_eq!(b.fair_share(), 12, "alone, a lane may hold the whole limit");
    }

    /// Feeds `n` answers that waited `lag` each, with `live` requests out, one period after
    /// `t`; returns the limit after it and the next period's start.
    fn period(b: &'static Budget, t: Instant, n: u32, lag: Duration) -> (usize, Instant) {
        for i in 0..n {
            b.answered(lag, t + PERIOD * u32::from(i + 1 == n));
        }
        (b.limit(), t + PERIOD)
    }

    /// Takes `n` places of `b` (a lane's fair share permitting), as requests out do.
    fn out(b: &'static Budget, n: usize) -> Vec<Ticket> {
        (0..n).map_while(|held| b.acquire(held)).collect()
    }

    #[test]
    fn requests_that_wait_on_the_process_bring_the_budget_down_to_under_what_was_out() {
        let b = budget(PROCESS_REQUESTS);
        let _member = b.member();
        let _out = out(b, 8_000);
        let mut t = Instant::now();
        let (limit, next) = period(b, t, MIN_SAMPLES, Duration::from_millis(100));
        assert_eq!(limit, 8_000 - 8_000 / 8, "under the 8,000 out at once");
        t = next;
        let mut last = limit;
        for _ in 0..40 {
            let (limit, next) = period(b, t, MIN_SAMPLES, Duration::from_millis(100));
            assert!(limit <= last);
            (last, t) = (limit, next);
        }
        assert_eq!(last, FLOOR_REQUESTS, "never below the floor");
    }

    #[test]
    fn prompt_turns_grow_a_budget_that_holds_lanes_back_and_only_then() {
        let b = budget(PROCESS_REQUESTS);
        let _member = b.member();
        b.limit.store(2_000, Relaxed);
        let t = Instant::now();
        // 500 out of 2,000: the budget refused nobody, so it stays.
        let few = out(b, 500);
        let (limit, t) = period(b, t, MIN_SAMPLES, Duration::from_micros(50));
        assert_eq!(limit, 2_000);
        drop(few);
        // Every place taken and one more asked for: it grows by an eighth a period, up to
        // the most.
        let _all = out(b, 2_001);
        let (limit, mut t) = period(b, t, MIN_SAMPLES, Duration::from_micros(50));
        assert_eq!(limit, 2_250);
        let _more = out(b, 250);
        for _ in 0..100 {
            std::mem::forget(out(b, b.limit().saturating_sub(b.live())));
            assert!(!b.may_grow(b.limit()), "full: a lane is refused");
            t = period(b, t, MIN_SAMPLES, Duration::from_micros(50)).1;
        }
        assert_eq!(b.limit(), PROCESS_REQUESTS);
    }

    #[test]
    fn between_the_bounds_or_with_few_answers_the_budget_stays() {
        let b = budget(PROCESS_REQUESTS);
        let _member = b.member();
        let _all = out(b, PROCESS_REQUESTS);
        b.limit.store(4_000, Relaxed);
        let t = Instant::now();
        let (limit, t) = period(b, t, MIN_SAMPLES, Duration::from_millis(12));
        assert_eq!(limit, 4_000, "12 ms: neither prompt nor late");
        let (limit, _) = period(b, t, MIN_SAMPLES - 1, Duration::from_millis(100));
        assert_eq!(limit, 4_000, "too few answers to tell");
    }

    #[test]
    fn the_median_is_not_moved_by_a_few_late_turns() {
        let mut g = Gradient::new();
        for _ in 0..90 {
            g.add(Duration::from_micros(100), 10);
        }
        for _ in 0..10 {
            g.add(Duration::from_secs(3), 10);
        }
        assert!(g.median() < GROW_BELOW, "{:?}", g.median());
    }

    #[test]
    fn the_budget_never_comes_below_two_requests_a_lane() {
        let b = budget(PROCESS_REQUESTS);
        let members: Vec<ShareMember> = (0..3_000).map(|_| b.member()).collect();
        let _out = out(b, 5_000);
        let mut t = Instant::now();
        for _ in 0..40 {
            t = period(b, t, MIN_SAMPLES, Duration::from_millis(100)).1;
        }
        assert_eq!(b.limit(), 6_000, "3,000 lanes with requests out");
        drop(members);
    }
}
