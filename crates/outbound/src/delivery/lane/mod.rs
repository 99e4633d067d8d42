//! Delivery lanes: one per destination (ingestion, and each webhook URL). A lane owns its
//! queue of requests and the destination's health, and its requests go out on the I/O
//! engine (`requests.rs`), so a slow or failing destination never delays another one.
//!
//! - Requests out grow with demand, up to `max_in_flight`, as long as fewer than its share
//!   of [`BRISK`] (see [`share_brisk`]) of the requests out are younger than [`SLOW_AFTER`]
//!   or unanswered by a receiver that has answered nothing since they left. A receiver
//!   that answers quickly is kept busy by a few requests at once (hundreds on one fast
//!   receiver cost more CPU in switching than they gain; too few leave both sides waking up
//!   for every request); requests that hang or take long while the receiver answers others
//!   count as slow and make room for more, so a receiver that stalls some requests still
//!   gets the others. A receiver that has never answered (a black hole, a port that accepts
//!   and stays silent) gets [`SILENT`]: more would only pile up stalled requests and their
//!   bodies.
//! - Batches fill requests, within the [`RequestLimit`] (`max_batch_messages`, `flush_at`
//!   unless set): while a request out is younger than [`SLOW_AFTER`], new batches that one
//!   request could still join wait for it, then go out together (see `fill_room`).
//! - Every lane of every client in the process draws its requests from one [`Budget`]
//!   ([`budget`]): past it, or past its fair share of it, a lane waits for its own requests
//!   to come back instead of starting more, so many slow destinations slow down rather than
//!   exhaust the process.
//! - Health: after [`TRIP_AFTER`] retryable failures in a row and no success for
//!   [`TRIP_QUIET`], the lane holds back and sends one probe at a time, spaced by a
//!   growing, jittered backoff, until a request succeeds. A dead receiver then sees a
//!   trickle of probes, not every queued message's retries (no retry storm).
//! - `Retry-After` on a response pauses the whole lane: the server spoke for itself, not for
//!   one message.

use crate::delivery::batch::{RequestLimit, Room};
use crate::delivery::job::Job;
use crate::http::attempt::{Attempt, Seen};
use crate::http::exchange::Exchange;
use crate::log::{Level, Logger};
use crate::model::outcome::Reason;
use crate::model::retry::{after, RetryPolicy};
use crate::wire::ingestion::Endpoint;
use crate::wire::webhook::Hooks;
pub(crate) use budget::Budget;
use budget::{Seat, Ticket};
use crossbeam_channel::Sender;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Retryable failures in a row after which a lane holds back to one probe at a time...
pub(crate) const TRIP_AFTER: u32 = 20;
/// ...when nothing succeeded for this long either: timeouts of requests that stalled together
/// come back together, and must not hold back a receiver that answers everything else.
pub(crate) const TRIP_QUIET: Duration = Duration::from_secs(1);
/// Requests out at once, not counting slow ones, beyond which a client's lanes start no
/// more, shared by the lanes with work, at least [`SILENT`] each ([`share_brisk`])...
/// (measured: BENCHMARKS.md, "Requests out per destination").
pub(crate) const BRISK: usize = 16;
/// ...and what a lane gets before its destination has answered anything.
pub(crate) const SILENT: usize = 8;

/// Shares [`BRISK`] among the lanes with work (requests out or waiting), at least
/// [`SILENT`] each: what costs CPU is every brisk request of the client, not each lane's.
pub(crate) fn share_brisk(lanes: &mut [Lane]) {
    let with_work = lanes
        .iter()
        .filter(|l| l.busy > 0 || !l.ready.is_empty())
        .count();
    let share = (BRISK / with_work.max(1)).max(SILENT);
    for lane in lanes {
        lane.share = share;
    }
}
/// ...where a request out for this long counts as slow.
pub(crate) const SLOW_AFTER: Duration = Duration::from_millis(25);

/// What every lane of a client shares: how requests are made and sent.
pub(crate) struct Delivery {
    pub ingestion: Option<Endpoint>,
    pub hooks: Hooks,
    pub logger: Logger,
    /// Where requests hold their place while out: [`Budget::requests`] but in tests.
    pub budget: &'static Budget,
    /// Backoff and retry window (the lanes' probes and `Retry-After` caps).
    pub policy: RetryPolicy,
    /// Webhook requests on the I/O engine.
    pub hooks_out: Option<HooksOut>,
    /// Ingestion batches on the I/O engine. Boxed: most of a relay's sources have none.
    pub batches_out: Option<Box<BatchesOut>>,
}

/// How the ingestion lane sends on the I/O engine: to `{endpoint}/v1/batch`, with its own
/// network guard (`Exchange::ingestion`).
pub(crate) struct BatchesOut {
    pub io: tokio::runtime::Handle,
    pub exchange: Exchange,
}

impl Delivery {
    /// Where requests on the I/O engine are spawned.
    pub(crate) fn io(&self) -> Option<&tokio::runtime::Handle> {
        (self.hooks_out.as_ref().map(|o| &o.io)).or(self.batches_out.as_ref().map(|o| &o.io))
    }
}

/// How webhook lanes send: requests spawned on the I/O engine, each holding a place in the
/// budget of requests in flight ([`Budget::requests`]) while it is out; webhook `i` is the
/// exchange's URL `i`.
pub(crate) struct HooksOut {
    pub io: tokio::runtime::Handle,
    pub exchange: Exchange,
}

/// A finished request, back to the scheduler.
pub(crate) struct Report {
    /// The tenant whose lane sent it.
    pub tenant: u32,
    pub lane: usize,
    pub job: Job,
    pub attempt: Attempt,
    /// What the exchange showed beside its classification (for the URL's attempt log).
    pub seen: Seen,
    /// When the lane handed it to the I/O engine ([`Lane::start`]).
    pub started: Instant,
    /// How long it waited for its first turn on the I/O engine.
    pub lag: Duration,
    /// When it was sent back.
    pub sent: Instant,
}

#[derive(Debug, PartialEq, Eq)]
enum Health {
    /// Requests flow freely.
    Up,
    /// Failing: nothing is sent before `until`, then one probe.
    Down { until: Instant, opens: u32 },
    /// One probe is out; its result decides.
    Probing { opens: u32 },
}

pub(crate) struct Lane {
    /// The destination as logs show it (no query string).
    pub label: Arc<str>,
    tenant: u32,
    index: usize,
    delivery: Arc<Delivery>,
    reports: Sender<Report>,
    ready: VecDeque<Job>,
    /// What one request may carry when batches waiting together join (ingestion).
    limit: RequestLimit,
    busy: usize,
    /// When each request out was started (a count per instant).
    out: BTreeMap<Instant, u32>,
    /// The process's budget of requests, shared with every client ([`budget`]).
    budget: &'static Budget,
    /// Counts this lane among those with requests out, while it has any.
    seat: Option<Seat>,
    /// A place in the budget for the next request (taken by `make_room`, kept by the
    /// request while it is out).
    ticket: Option<Ticket>,
    /// This lane's part of [`BRISK`] ([`share_brisk`]).
    share: usize,
    /// Requests out at once the lane always allows (`workers`), within `cap`.
    floor: usize,
    cap: usize,
    failures: u32,
    last_success: Option<Instant>,
    /// When the destination last answered anything (a timeout is no answer).
    last_answer: Option<Instant>,
    health: Health,
    paused_until: Option<Instant>,
}

impl Lane {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        tenant: u32,
        index: usize,
        label: Arc<str>,
        delivery: Arc<Delivery>,
        reports: Sender<Report>,
        floor: usize,
        cap: usize,
        limit: RequestLimit,
    ) -> Lane {
        let budget = delivery.budget;
        Lane {
            label,
            tenant,
            index,
            delivery,
            reports,
            ready: VecDeque::new(),
            limit,
            busy: 0,
            out: BTreeMap::new(),
            budget,
            seat: None,
            ticket: None,
            share: BRISK,
            floor: floor.min(cap),
            cap,
            failures: 0,
            last_success: None,
            last_answer: None,
            health: Health::Up,
            paused_until: None,
        }
    }

    /// Queues a request behind the others.
    pub(crate) fn push(&mut self, job: Job) {
        self.ready.push_back(job);
    }

    /// Queues a request ahead of the others (the halves of a split batch).
    pub(crate) fn push_front(&mut self, job: Job) {
        self.ready.push_front(job);
    }

    /// The next request this lane may send now: under the in-flight cap, not paused, and one
    /// probe at a time while the destination is down.
    pub(crate) fn take(&mut self, now: Instant) -> Option<Job> {
        if self.ready.is_empty() || self.busy >= self.cap {
            return None;
        }
        if self.paused_until.is_some_and(|t| now < t) {
            return None;
        }
        match self.health {
            Health::Up => {}
            // The probe's turn; `start` marks it out (a request taken but not started, its
            // message settled meanwhile, must not leave the lane waiting for a result).
            Health::Down { until, .. } if now >= until => {}
            Health::Down { .. } | Health::Probing { .. } => return None,
        }
        if self.held_back(now) || self.fill_room(now).is_some() {
            // Enough requests are moving, or the young one out will take what waits: this
            // one waits for a request to come back.
            return None;
        }
        let mut job = self.ready.pop_front()?;
        if let Job::Batch(batch) = &mut job {
            // The batches behind it go with it, within what one request may carry.
            self.limit.join_waiting(batch, &mut self.ready);
        }
        Some(job)
    }

    /// The fill rule of batches: while a request out is younger than [`SLOW_AFTER`] and
    /// every new batch waiting fits in one request with room to spare (the lane's
    /// [`RequestLimit`]), they wait for it to come back and then go out together, instead
    /// of a request each. With `max_batch_messages` above `flush_at`, a receiver that
    /// answers quickly then gets a few full requests rather than many of `flush_at`
    /// messages (measured with the Go bench's ingestion: a fifth of the requests, a third
    /// less CPU per message on both sides); by default only batches closed short of
    /// `flush_at` can wait, and a full one never does. A slow request out (past
    /// [`SLOW_AFTER`]) and a backlog of more than one request start more requests as
    /// before, so neither a stalled request nor a burst is held up. `Some((room, t))`:
    /// held until `t` (when the youngest request out turns slow), or an answer, whichever
    /// comes first; `room`, what that request's successor could still take beyond what
    /// waits ([`RequestLimit::room`]): the scheduler's room.
    pub(crate) fn fill_room(&self, now: Instant) -> Option<(Room, Instant)> {
        let (newest, _) = self.out.last_key_value()?;
        let turns = after(*newest, SLOW_AFTER);
        if turns <= now {
            return None;
        }
        Some((self.limit.room(&self.ready)?, turns))
    }

    /// Whether the next request waits: [`brisk`](Self::brisk) requests out are moving
    /// (not known to be slow), or the process's [`Budget`] has no place for it. The moving
    /// ones are counted only when it matters (fewer out than the brisk share cannot be too
    /// many moving): the count walks the requests out, and this runs at every turn of the
    /// scheduler.
    fn held_back(&self, now: Instant) -> bool {
        let moving = match self.busy < self.brisk() {
            true => self.busy,
            false => self.moving(now),
        };
        moving >= self.brisk() || !self.budget.may_grow(self.busy)
    }

    /// Requests out that are not slow beyond which the lane starts no more: its share of
    /// [`BRISK`], or [`SILENT`] while the destination has answered nothing.
    fn brisk(&self) -> usize {
        let n = if self.last_answer.is_some() {
            self.share
        } else {
            SILENT
        };
        n.max(self.floor)
    }

    /// Before this instant, a request out is slow: out for [`SLOW_AFTER`], and answered
    /// around (the destination answered since it left). `None`: none is.
    fn slow_before(&self, now: Instant) -> Option<Instant> {
        Some(now.checked_sub(SLOW_AFTER)?.min(self.last_answer?))
    }

    /// Requests out that are not slow (see [`slow_before`](Self::slow_before)).
    fn moving(&self, now: Instant) -> usize {
        match self.slow_before(now) {
            Some(cutoff) => self
                .out
                .range((Excluded(cutoff), Unbounded))
                .map(|(_, n)| *n as usize)
                .sum(),
            None => self.busy,
        }
    }

    /// Requests out now.
    pub(crate) fn busy(&self) -> usize {
        self.busy
    }

    /// Whether housekeeping has anything to do here: requests waiting on a down destination
    /// to check against their window.
    pub(crate) fn needs_housekeeping(&self) -> bool {
        self.is_down() && !self.ready.is_empty()
    }

    /// Takes out the waiting requests that `keep` refuses (messages past their window while
    /// the destination is down).
    pub(crate) fn drain_waiting(&mut self, mut keep: impl FnMut(&Job) -> bool) -> Vec<Job> {
        let mut out = Vec::new();
        for job in std::mem::take(&mut self.ready) {
            match keep(&job) {
                true => self.ready.push_back(job),
                false => out.push(job),
            }
        }
        out
    }

    /// Ends the lane: what was still waiting (the requests out are the I/O engine's).
    pub(crate) fn stop(&mut self) -> Vec<Job> {
        self.ready.drain(..).collect()
    }
}

pub(crate) mod budget;
mod health;
mod requests;
#[cfg(test)]
mod tests;
