//! Delivery lanes: one per destination (ingestion, and each webhook URL). A lane owns its
//! queue of requests and the destination's health, and its requests go out on the I/O
//! engine (`requests.rs`), so a slow or failing destination never delays another one.
//!
//! - Requests out grow with demand, up to `max_in_flight`, as long as fewer than its share
//!   of [`BRISK`] (see [`Lanes::share_brisk`]) of the requests out are younger than [`SLOW_AFTER`]
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
//! - An endpoint's rate limit (`rate.rs`) holds its requests at the head of the lane until a
//!   token is there.

use crate::delivery::batch::{RequestLimit, Room};
use crate::delivery::job::Job;
use crate::http::attempt::{Attempt, Seen};
use crate::http::exchange::Exchange;
use crate::log::Logger;
use crate::model::config::RateLimit;
use crate::model::retry::{after, RetryPolicy};
use crate::wire::ingestion::Endpoint;
use crate::wire::webhook::Hooks;
pub(crate) use budget::Budget;
use crossbeam_channel::Sender;
use health::Health;
pub(crate) use lanes::Lanes;
use rate::Rate;
use requests::Requests;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Retryable failures in a row after which a lane holds back to one probe at a time...
pub(crate) const TRIP_AFTER: u32 = 20;
/// ...when nothing succeeded for this long either: timeouts of requests that stalled together
/// come back together, and must not hold back a receiver that answers everything else.
pub(crate) const TRIP_QUIET: Duration = Duration::from_secs(1);
/// Requests out at once, not counting slow ones, beyond which a client's lanes start no
/// more, shared by the lanes with work, at least [`SILENT`] each ([`Lanes::share_brisk`])...
/// (measured: BENCHMARKS.md, "Requests out per destination").
pub(crate) const BRISK: usize = 16;
/// ...and what a lane gets before its destination has answered anything.
pub(crate) const SILENT: usize = 8;

/// [`Lanes::share_brisk`] of lanes made one by one.
#[cfg(test)]
pub(crate) fn share_brisk(lanes: &mut [Lane]) {
    let share = brisk_share(lanes.iter().filter(|l| l.has_work()).count());
    for lane in lanes {
        lane.requests.share = share;
    }
}

/// Each lane's part of [`BRISK`] when `with_work` lanes have work (requests out or
/// waiting), at least [`SILENT`]: what costs CPU is every brisk request of the client, not
/// each lane's.
fn brisk_share(with_work: usize) -> usize {
    (BRISK / with_work.max(1)).max(SILENT)
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

/// One destination's queue of requests, its requests out ([`Requests`]) and its health as
/// its answers show it ([`Health`]).
pub(crate) struct Lane {
    /// The destination as logs show it (no query string).
    pub label: Arc<str>,
    tenant: u32,
    index: usize,
    delivery: Arc<Delivery>,
    reports: Sender<Report>,
    /// Requests not sent yet, in order.
    waiting: VecDeque<Job>,
    /// What one request may carry when batches waiting together join (ingestion).
    limit: RequestLimit,
    requests: Requests,
    health: Health,
    /// The endpoint's rate limit, when it has one.
    rate: Option<Box<Rate>>,
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
        rate: Option<RateLimit>,
    ) -> Lane {
        let requests = Requests::new(delivery.budget, floor, cap);
        let rate = rate.map(|r| Box::new(Rate::new(r, Instant::now())));
        Lane {
            label,
            tenant,
            index,
            delivery,
            reports,
            waiting: VecDeque::new(),
            limit,
            requests,
            health: Health::default(),
            rate,
        }
    }

    /// Requests out or waiting.
    fn has_work(&self) -> bool {
        self.requests.busy > 0 || !self.waiting.is_empty()
    }

    /// Queues a request behind the others.
    pub(crate) fn push(&mut self, job: Job) {
        self.waiting.push_back(job);
    }

    /// Queues a request ahead of the others (the halves of a split batch).
    pub(crate) fn push_front(&mut self, job: Job) {
        self.waiting.push_front(job);
    }

    /// The next request this lane may send now: under the in-flight cap, not paused, one
    /// probe at a time while the destination is down, and not held for the requests out.
    pub(crate) fn take(&mut self, now: Instant) -> Option<Job> {
        if self.waiting.is_empty() || self.requests.at_cap() || !self.health.may_send(now) {
            return None;
        }
        let answered = self.health.last_answer;
        if self.requests.held_back(now, answered) || self.fill_room(now).is_some() {
            // Enough requests are moving, or the young one out will take what waits: this
            // one waits for a request to come back.
            return None;
        }
        if let Some(rate) = &mut self.rate {
            if !rate.ready(now) {
                return None;
            }
        }
        let mut job = self.waiting.pop_front()?;
        if let Job::Batch(batch) = &mut job {
            // The batches behind it go with it, within what one request may carry.
            self.limit.join_waiting(batch, &mut self.waiting);
        }
        Some(job)
    }

    /// The fill rule of batches: while a request out is younger than [`SLOW_AFTER`] and
    /// every new batch waiting fits in one request with room to spare (the lane's
    /// [`RequestLimit`]), they wait for it to come back and then go out together, instead
    /// of a request each. With `max_batch_messages` above `flush_at`, a receiver that
    /// answers quickly then gets a few full requests rather than many of `flush_at`
    /// messages (fewer requests, less CPU per message on both sides: BENCHMARKS.md,
    /// "Joined batches"); by default only batches closed short of `flush_at` can wait, and
    /// a full one never does. A slow request out (past [`SLOW_AFTER`]) and a backlog of
    /// more than one request start more requests as before, so neither a stalled request
    /// nor a burst is held up. `Some((room, t))`: held until `t` (when the youngest request
    /// out turns slow), or an answer, whichever comes first; `room`, what that request's
    /// successor could still take beyond what waits ([`RequestLimit::room`]): the
    /// scheduler's room.
    pub(crate) fn fill_room(&self, now: Instant) -> Option<(Room, Instant)> {
        let turns = after(self.requests.newest()?, SLOW_AFTER);
        if turns <= now {
            return None;
        }
        Some((self.limit.room(&self.waiting)?, turns))
    }

    /// Takes a place in the process's budget for a request from [`take`](Self::take); false
    /// when there is none for this lane now: the request should wait, and the lane's own
    /// answers give it another chance.
    pub(crate) fn make_room(&mut self) -> bool {
        self.requests.reserve()
    }

    /// Sends a request from [`take`](Self::take), given a place by
    /// [`make_room`](Self::make_room), on the I/O engine; its [`Report`] comes back on the
    /// scheduler's channel.
    pub(crate) fn start(&mut self, job: Job, now: Instant) {
        self.health.probe_sent();
        if let Some(rate) = &mut self.rate {
            rate.spend(now);
        }
        let ticket = self.requests.started(now);
        requests::send(
            self.delivery.clone(),
            self.reports.clone(),
            (self.tenant, self.index),
            job,
            now,
            ticket,
        );
    }

    /// A request of this lane, started at `started`, came back at `now`: frees its place
    /// and updates the destination's health.
    pub(crate) fn finished(&mut self, attempt: &Attempt, started: Instant, now: Instant) {
        self.requests.ended(started);
        let policy = &self.delivery.policy;
        self.health
            .answered(attempt, now, policy, &self.delivery.logger, &self.label);
    }

    /// A request of this lane waited `lag` for the process: the budget of requests follows
    /// such delays ([`Budget::answered`]).
    pub(crate) fn answered(&self, lag: Duration, now: Instant) {
        self.requests.budget.answered(lag, now);
    }

    /// When this lane may send again although nothing else happens (a pause, a probe, or
    /// requests out turning slow, which makes room for another).
    pub(crate) fn wake_at(&self, now: Instant) -> Option<Instant> {
        if self.waiting.is_empty() {
            return None;
        }
        let answered = self.health.last_answer;
        let up = !self.health.is_down();
        if up && !self.requests.at_cap() && self.requests.held_back(now, answered) {
            // The next request out answered around to turn slow; the rest wait for an
            // answer, and an answer wakes the scheduler anyway.
            if let Some(t) = self.requests.turns_slow(now, answered) {
                return Some(self.health.paused_until.map_or(t, |p| p.max(t)));
            }
        }
        let probe = match self.health.probe_at() {
            Some(until) => Some(until),
            None => self.fill_room(now).map(|(_, turns)| turns),
        };
        let token = (self.rate.as_ref())
            .filter(|r| r.holding)
            .map(|r| r.next_at());
        [probe, self.health.paused_until, token]
            .into_iter()
            .flatten()
            .max()
    }

    /// With a rate limit: whether a request waits for it now, and how many went out after
    /// such a wait since the last call.
    pub(crate) fn throttled(&mut self) -> Option<(bool, u64)> {
        let rate = self.rate.as_mut()?;
        Some((
            rate.holding && !self.waiting.is_empty(),
            std::mem::take(&mut rate.waited),
        ))
    }

    /// Starts down after `failures` in a row, as a predecessor's lane to the destination
    /// ended; one probe goes at once.
    pub(crate) fn tripped(&mut self, failures: u32, now: Instant) {
        self.health.tripped(failures, now);
    }

    /// True while the destination is taken as down.
    pub(crate) fn is_down(&self) -> bool {
        self.health.is_down()
    }

    /// Requests out now.
    pub(crate) fn busy(&self) -> usize {
        self.requests.busy
    }

    /// Whether housekeeping has anything to do here: requests waiting on a down destination
    /// to check against their window.
    pub(crate) fn needs_housekeeping(&self) -> bool {
        self.is_down() && !self.waiting.is_empty()
    }

    /// Takes out the waiting requests that `keep` refuses (messages past their window while
    /// the destination is down).
    pub(crate) fn drain_waiting(&mut self, mut keep: impl FnMut(&Job) -> bool) -> Vec<Job> {
        let mut out = Vec::new();
        for job in std::mem::take(&mut self.waiting) {
            match keep(&job) {
                true => self.waiting.push_back(job),
                false => out.push(job),
            }
        }
        out
    }

    /// Ends the lane: what was still waiting (the requests out are the I/O engine's).
    pub(crate) fn stop(&mut self) -> Vec<Job> {
        self.waiting.drain(..).collect()
    }
}

pub(crate) mod budget;
mod health;
mod lanes;
mod rate;
mod requests;
#[cfg(test)]
mod tests;
