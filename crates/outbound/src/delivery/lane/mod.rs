//! Delivery lanes: one per destination (ingestion, and each webhook URL). A lane owns its
//! queue of requests, its own worker threads and the destination's health, so a slow or
//! failing destination never delays another one (design §9).
//!
//! - Threads grow with demand: a request waiting while every thread of the lane is busy
//!   starts a new one, up to `max_in_flight`, as long as fewer than its share of [`BRISK`]
//!   (see [`share_brisk`]) of the requests out are younger than [`SLOW_AFTER`] or
//!   unanswered by a receiver that has answered nothing since they left. A receiver that
//!   answers quickly is kept busy by a few threads (hundreds of threads on one fast
//!   receiver cost more CPU in switching than they gain; too few leave both sides waking up
//!   for every request); requests that hang or take long while the receiver answers others
//!   count as slow and make room for more, so a receiver that stalls some requests still
//!   gets the others. A receiver that has never answered (a black hole, a port that accepts
//!   and stays silent) gets [`SILENT`]: more would only pile up stalled requests, their
//!   threads and their bodies. Threads idle for a whole trim period exit.
//! - Health: after [`TRIP_AFTER`] retryable failures in a row and no success for
//!   [`TRIP_QUIET`], the lane
//!   holds back and sends one probe at a time, spaced by a growing, jittered backoff, until a
//!   request succeeds. A dead receiver then sees a trickle of probes, not every queued
//!   message's retries (no retry storm).
//! - `Retry-After` on a response pauses the whole lane: the server spoke for itself, not for
//!   one message.

use crate::delivery::job::Job;
use crate::http::transport::{Attempt, Transport};
use crate::log::{Level, Logger};
use crate::model::outcome::Reason;
use crate::model::retry::{after, RetryPolicy};
use crate::wire::ingestion::Endpoint;
use crate::wire::webhook::Hooks;
use crossbeam_channel::{Receiver, Sender};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Retryable failures in a row after which a lane holds back to one probe at a time...
pub(crate) const TRIP_AFTER: u32 = 20;
/// ...when nothing succeeded for this long either: timeouts of requests that stalled together
/// come back together, and must not hold back a receiver that answers everything else.
pub(crate) const TRIP_QUIET: Duration = Duration::from_secs(1);
/// Requests out at once, not counting slow ones, beyond which a client's lanes add no
/// thread, shared by the lanes with work, at least [`SILENT`] each ([`share_brisk`])...
/// (Signed webhooks on loopback, alternating: to one URL 16 delivered 10-26 % more per
/// second than 8, at less CPU per delivery on both sides, and 32 was no better; to five
/// URLs 8 each did 4-9 % better than 16 each.)
pub(crate) const BRISK: usize = 16;
/// ...and what a lane gets before its destination has answered anything.
pub(crate) const SILENT: usize = 8;

/// Shares [`BRISK`] among the lanes with work (requests out or waiting), at least
/// [`SILENT`] each: what costs CPU is every brisk thread of the client switching, not each
/// lane's.
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

/// What every lane's workers share: the transport and both destinations.
pub(crate) struct Delivery {
    pub transport: Transport,
    pub ingestion: Option<Endpoint>,
    pub hooks: Hooks,
    pub logger: Logger,
}

/// A finished request, back to the scheduler.
pub(crate) struct Report {
    pub lane: usize,
    pub job: Job,
    pub attempt: Attempt,
    /// When the lane handed it to a worker ([`Lane::start`]).
    pub started: Instant,
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
    index: usize,
    delivery: Arc<Delivery>,
    jobs: Sender<(Instant, Job)>,
    jobs_rx: Receiver<(Instant, Job)>,
    reports: Sender<Report>,
    ready: VecDeque<Job>,
    busy: usize,
    /// When each request out was started (a count per instant).
    out: BTreeMap<Instant, u32>,
    threads: usize,
    /// The lane's threads not yet joined (some may have exited after a trim).
    handles: Vec<std::thread::JoinHandle<()>>,
    /// Most requests out at once since the last trim.
    peak: usize,
    /// This lane's part of [`BRISK`] ([`share_brisk`]).
    share: usize,
    min_threads: usize,
    cap: usize,
    failures: u32,
    last_success: Option<Instant>,
    /// When the destination last answered anything (a timeout is no answer).
    last_answer: Option<Instant>,
    health: Health,
    paused_until: Option<Instant>,
    policy: RetryPolicy,
    logger: Logger,
}

impl Lane {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        index: usize,
        label: Arc<str>,
        delivery: Arc<Delivery>,
        reports: Sender<Report>,
        min_threads: usize,
        cap: usize,
        policy: RetryPolicy,
    ) -> Lane {
        let (jobs, jobs_rx) = crossbeam_channel::unbounded();
        let logger = delivery.logger.clone();
        Lane {
            label,
            index,
            delivery,
            jobs,
            jobs_rx,
            reports,
            ready: VecDeque::new(),
            busy: 0,
            out: BTreeMap::new(),
            threads: 0,
            handles: Vec::new(),
            peak: 0,
            share: BRISK,
            min_threads: min_threads.min(cap),
            cap,
            failures: 0,
            last_success: None,
            last_answer: None,
            health: Health::Up,
            paused_until: None,
            policy,
            logger,
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
        if self.held_back(now) {
            // Enough requests are moving: this one waits for a thread to come back.
            return None;
        }
        let mut job = self.ready.pop_front()?;
        if let Job::Batch(batch) = &mut job {
            if !self.room_behind(now) {
                // The batches behind it would wait for a connection: they go with it.
                crate::delivery::batch::join_waiting(batch, &mut self.ready);
            }
        }
        Some(job)
    }

    /// Whether a request behind the one being taken could start at once too (under the
    /// cap, the destination up, and not held back once this one is out).
    fn room_behind(&self, now: Instant) -> bool {
        let busy = self.busy + 1;
        busy < self.cap && self.health == Health::Up && !self.holds(busy, self.moving(now) + 1)
    }

    /// Whether the next request would need a new thread that the lane does not add yet.
    fn held_back(&self, now: Instant) -> bool {
        self.holds(self.busy, self.moving(now))
    }

    /// The rule of both: with `busy` requests out, `moving` of them not known to be slow, a
    /// further one waits when every thread is busy and [`brisk`](Self::brisk) are moving.
    fn holds(&self, busy: usize, moving: usize) -> bool {
        busy >= self.threads && moving >= self.brisk()
    }

    /// Requests out that are not slow beyond which the lane adds no thread: its share of
    /// [`BRISK`], or [`SILENT`] while the destination has answered nothing.
    fn brisk(&self) -> usize {
        let n = if self.last_answer.is_some() {
            self.share
        } else {
            SILENT
        };
        n.max(self.min_threads)
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

    /// Hands a request from [`take`](Self::take) to a worker, starting one when every thread
    /// of the lane is busy.
    pub(crate) fn start(&mut self, job: Job, now: Instant) -> Result<(), std::io::Error> {
        if self.busy >= self.threads {
            self.spawn()?;
        }
        if let Health::Down { opens, .. } = self.health {
            self.health = Health::Probing { opens };
        }
        self.busy += 1;
        *self.out.entry(now).or_default() += 1;
        self.peak = self.peak.max(self.busy);
        // The lane holds a receiver, so the channel is open.
        let _ = self.jobs.send((now, job));
        Ok(())
    }

    fn spawn(&mut self) -> Result<(), std::io::Error> {
        let (delivery, jobs, reports, index) = (
            self.delivery.clone(),
            self.jobs_rx.clone(),
            self.reports.clone(),
            self.index,
        );
        let handle = std::thread::Builder::new()
            .name(format!("outbound-lane-{index}"))
            .spawn(move || work(index, &delivery, &jobs, &reports))?;
        self.handles.push(handle);
        self.threads += 1;
        Ok(())
    }

    /// A request of this lane came back: frees its slot and updates the destination's health.
    pub(crate) fn finished(&mut self, attempt: &Attempt, started: Instant, now: Instant) {
        self.busy -= 1;
        if let Some(n) = self.out.get_mut(&started) {
            *n -= 1;
            if *n == 0 {
                self.out.remove(&started);
            }
        }
        let retry_after = match attempt {
            Attempt::Retryable { retry_after, .. } => *retry_after,
            _ => None,
        };
        if let Some(wait) = retry_after {
            let until = after(now, wait.min(self.policy.max_retry_after));
            if !self.paused_until.is_some_and(|t| t >= until) {
                self.logger.log(Level::Debug, || {
                    format!("{}: paused {wait:?} (Retry-After)", self.label)
                });
                self.paused_until = Some(until);
            }
        }
        let timed_out = matches!(
            attempt,
            Attempt::Retryable {
                reason: Reason::Timeout,
                ..
            }
        );
        if !timed_out {
            self.last_answer = Some(now);
        }
        match attempt {
            // A success, or an answer that retrying will not change: the receiver is there.
            Attempt::Success | Attempt::Permanent { .. } => {
                self.failures = 0;
                self.last_success = Some(now);
                if self.health != Health::Up {
                    self.logger
                        .log(Level::Warn, || format!("{}: recovered", self.label));
                    self.health = Health::Up;
                }
            }
            Attempt::Retryable { .. } => {
                self.failures = self.failures.saturating_add(1);
                let quiet = !matches!(self.last_success,
                    Some(t) if now.saturating_duration_since(t) < TRIP_QUIET);
                let opens = match self.health {
                    Health::Up if self.failures >= TRIP_AFTER && quiet => 1,
                    Health::Probing { opens } => opens + 1,
                    _ => return,
                };
                let wait = self.probe_backoff(opens);
                self.logger.log(Level::Warn, || {
                    format!(
                        "{}: {} failures in a row; next probe in {wait:?}",
                        self.label, self.failures
                    )
                });
                self.health = Health::Down {
                    until: after(now, wait),
                    opens,
                };
            }
        }
    }

    /// Half of the doubling ceiling fixed, half jittered: probes never come in a burst.
    fn probe_backoff(&self, opens: u32) -> Duration {
        let ceiling = self
            .policy
            .base
            .saturating_mul(1u32 << opens.saturating_sub(1).min(20))
            .min(self.policy.max_backoff);
        ceiling / 2 + (ceiling / 2).mul_f64(fastrand::f64())
    }

    /// When this lane may send again although nothing else happens (a pause, a probe, or
    /// requests out turning slow, which makes room for another thread).
    pub(crate) fn wake_at(&self, now: Instant) -> Option<Instant> {
        if self.ready.is_empty() {
            return None;
        }
        if self.busy < self.cap && self.health == Health::Up && self.held_back(now) {
            // The next request out answered around to turn slow; the rest wait for an answer,
            // and an answer wakes the scheduler anyway.
            let cutoff = now.checked_sub(SLOW_AFTER).unwrap_or(now);
            let turns = self.last_answer.and_then(|answer| {
                self.out
                    .range((Excluded(cutoff), Unbounded))
                    .next()
                    .filter(|(t, _)| **t <= answer)
                    .map(|(t, _)| after(*t, SLOW_AFTER))
            });
            if let Some(t) = turns {
                return Some(self.paused_until.map_or(t, |p| p.max(t)));
            }
        }
        let probe = match self.health {
            Health::Down { until, .. } => Some(until),
            _ => None,
        };
        match (probe, self.paused_until) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// True while the destination is taken as down.
    pub(crate) fn is_down(&self) -> bool {
        self.health != Health::Up
    }

    /// Takes out the waiting requests that `keep` refuses (messages past their window while
    /// the destination is down).
    pub(crate) fn drain_waiting(&mut self, mut keep: impl FnMut(&Job) -> bool) -> Vec<Job> {
        let mut out = Vec::new();
        self.ready.retain_mut(|job| {
            if keep(job) {
                true
            } else {
                out.push(std::mem::replace(job, Job::Exit));
                false
            }
        });
        out
    }

    /// Called periodically: lets threads that were not needed since the last call go.
    pub(crate) fn trim(&mut self) {
        let want = self.peak.max(self.busy).max(self.min_threads);
        while self.threads > want {
            let _ = self.jobs.send((Instant::now(), Job::Exit));
            self.threads -= 1;
        }
        self.peak = self.busy;
        self.join_finished();
    }

    /// Joins the threads that have exited, so none outlives the client unseen.
    fn join_finished(&mut self) {
        let (done, live): (Vec<_>, Vec<_>) = std::mem::take(&mut self.handles)
            .into_iter()
            .partition(|h| h.is_finished());
        for h in done {
            let _ = h.join();
        }
        self.handles = live;
    }

    /// Stops every thread of the lane (each after its current request) and returns what was
    /// still waiting.
    pub(crate) fn stop(&mut self) -> Vec<Job> {
        for _ in 0..self.threads {
            let _ = self.jobs.send((Instant::now(), Job::Exit));
        }
        self.threads = 0;
        self.ready.drain(..).collect()
    }

    /// After [`stop`](Self::stop): waits until the threads that were idle have exited and
    /// joins them (at most until `deadline`); a thread still on a request (a hung receiver)
    /// is left to finish it on its own, so close stays bounded. Joined, a thread's stack and
    /// thread-locals are freed before the client is gone.
    pub(crate) fn join_idle(&mut self, deadline: Instant) {
        let idle = self.handles.len().saturating_sub(self.busy);
        loop {
            let finished = self.handles.iter().filter(|h| h.is_finished()).count();
            if finished >= idle || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.join_finished();
        // The rest are detached.
        self.handles.clear();
    }
}

/// A worker: sends requests of one lane until told to exit or the scheduler is gone.
fn work(
    lane: usize,
    delivery: &Delivery,
    jobs: &Receiver<(Instant, Job)>,
    reports: &Sender<Report>,
) {
    while let Ok((started, job)) = jobs.recv() {
        let attempt = match &job {
            Job::Exit => return,
            Job::Batch(batch) => {
                let Some(endpoint) = delivery.ingestion.as_ref() else {
                    return;
                };
                let body = endpoint.body(batch.msgs.iter().map(|(_, m)| m));
                let attempt = delivery
                    .transport
                    .post(endpoint.url(), endpoint.headers(), &body);
                delivery.logger.log(Level::Debug, || {
                    format!("ingestion: batch of {}: {attempt:?}", batch.msgs.len())
                });
                attempt
            }
            Job::Hook { id, body, .. } => {
                let target = lane - 1;
                let hooks = &delivery.hooks;
                let attempt = match hooks.headers(target, id.as_str(), body) {
                    Ok(headers) => delivery
                        .transport
                        .post_hook(hooks.url(target), &headers, body),
                    Err(why) => Attempt::Permanent {
                        reason: Reason::Other,
                        detail: why.into(),
                    },
                };
                delivery.logger.log(Level::Debug, || {
                    format!("{}: {attempt:?}", delivery.hooks.label(target))
                });
                attempt
            }
        };
        let report = Report {
            lane,
            job,
            attempt,
            started,
        };
        if reports.send(report).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::job::Batch;
    use crate::wire::ingestion::Element;
    use crate::wire::message_id::MsgId;

    fn lane(cap: usize) -> (Lane, Receiver<Report>) {
        let config = crate::Config {
            webhooks: vec![crate::Webhook::new("http://127.0.0.1:9/x?token=secret")],
            ..Default::default()
        };
        let targets = config.check_targets().unwrap();
        let delivery = Arc::new(Delivery {
            transport: Transport::new(&config).unwrap(),
            ingestion: None,
            hooks: Hooks::new(&config, targets),
            logger: Logger::new(Some(false), None),
        });
        let (tx, rx) = crossbeam_channel::unbounded();
        let lane = Lane::new(
            1,
            "test".into(),
            delivery,
            tx,
            1,
            cap,
            RetryPolicy::default(),
        );
        (lane, rx)
    }

    fn hook(seq: u64) -> Job {
        Job::Hook {
            seq,
            id: MsgId::Own(Arc::from("m")),
            body: Arc::from(&b"{}"[..]),
            first: true,
        }
    }

    fn fail() -> Attempt {
        Attempt::Retryable {
            reason: crate::Reason::Status(503),
            detail: "status 503".into(),
            retry_after: None,
        }
    }

    #[test]
    fn take_respects_the_in_flight_cap() {
        let (mut l, _rx) = lane(2);
        let now = Instant::now();
        for i in 0..3 {
            l.push(hook(i));
        }
        for _ in 0..2 {
            let j = l.take(now).unwrap();
            l.busy += 1; // as `start` would, without a thread
            drop(j);
        }
        assert!(l.take(now).is_none(), "third request over the cap of 2");
        l.finished(&Attempt::Success, now, now);
        assert!(l.take(now).is_some());
    }

    #[test]
    fn a_run_of_failures_holds_the_lane_to_one_probe() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        for i in 0..50 {
            l.push(hook(i));
        }
        for _ in 0..TRIP_AFTER {
            l.busy += 1;
            l.finished(&fail(), now, now);
        }
        assert!(l.is_down());
        assert!(l.take(now).is_none(), "nothing while down");
        let probe_at = l.wake_at(now).unwrap();
        assert!(probe_at > now && probe_at <= now + RetryPolicy::default().base);
        let skipped = l.take(probe_at);
        assert!(skipped.is_some(), "one probe when the wait is over");
        drop(skipped); // its message settled meanwhile: never started
        let probe = l
            .take(probe_at)
            .expect("a skip does not use up the probe's turn");
        l.start(probe, now).unwrap();
        assert!(l.take(probe_at).is_none(), "only one probe at a time");
        l.finished(&fail(), probe_at, probe_at);
        let next = l.wake_at(now).unwrap();
        assert!(
            next - probe_at >= RetryPolicy::default().base / 2,
            "backoff grows"
        );
        let probe = l.take(next).unwrap();
        l.start(probe, now).unwrap();
        l.finished(&Attempt::Success, next, next);
        assert!(!l.is_down());
        assert!(
            l.take(next).is_some() && l.take(next).is_some(),
            "flows again"
        );
    }

    #[test]
    fn successes_between_failures_keep_the_lane_up() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        for round in 0..100 {
            l.busy += 1;
            if round % 10 == 9 {
                l.finished(&Attempt::Success, now, now);
            } else {
                l.finished(&fail(), now, now);
            }
        }
        assert!(!l.is_down());
    }

    #[test]
    fn a_burst_of_timeouts_beside_successes_does_not_hold_the_lane() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        l.busy += 1;
        l.finished(&Attempt::Success, now, now);
        for _ in 0..(TRIP_AFTER * 5) {
            l.busy += 1;
            l.finished(&fail(), now + TRIP_QUIET / 2, now + TRIP_QUIET / 2);
        }
        assert!(
            !l.is_down(),
            "a success half a second ago: the receiver answers"
        );
        l.busy += 1;
        l.finished(&fail(), now + TRIP_QUIET, now + TRIP_QUIET);
        assert!(l.is_down(), "nothing but failures for a whole second");
    }

    #[test]
    fn retry_after_pauses_the_lane() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        l.push(hook(1));
        l.busy += 1;
        l.finished(
            &Attempt::Retryable {
                reason: crate::Reason::Status(429),
                detail: "status 429".into(),
                retry_after: Some(Duration::from_secs(3)),
            },
            now,
            now,
        );
        assert!(l.take(now + Duration::from_secs(2)).is_none());
        assert_eq!(l.wake_at(now), Some(now + Duration::from_secs(3)));
        assert!(l.take(now + Duration::from_secs(3)).is_some());
    }

    #[test]
    fn threads_grow_with_demand_and_trim_when_idle() {
        let (mut l, rx) = lane(8);
        let now = Instant::now();
        for i in 0..5 {
            l.push(hook(i));
        }
        while let Some(job) = l.take(now) {
            l.start(job, now).unwrap();
        }
        assert_eq!(l.threads, 5, "one thread per request out");
        for _ in 0..5 {
            let report = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            l.finished(&report.attempt, report.started, now);
        }
        l.trim();
        assert_eq!(l.threads, 5, "busy peak since the last trim is kept");
        l.trim();
        assert_eq!(l.threads, 1, "idle for a whole period: back to the minimum");
        l.stop();
    }

    /// What [`Lane::start`] does to the counts, without threads (`threads` follows `busy`):
    /// true when the lane let a request go.
    fn start(l: &mut Lane, at: Instant) -> bool {
        match l.take(at) {
            Some(_) => {
                l.busy += 1;
                l.threads = l.threads.max(l.busy);
                *l.out.entry(at).or_default() += 1;
                true
            }
            None => false,
        }
    }

    /// Starts requests at `at` until the lane holds back; how many it started.
    fn burst(l: &mut Lane, at: Instant) -> usize {
        std::iter::from_fn(|| start(l, at).then_some(())).count()
    }

    fn batch(seq: u64) -> Job {
        Job::Batch(Batch {
            msgs: vec![(seq, Element::own(Arc::from(&b"{}"[..])))],
            first: None,
            attempts: 0,
        })
    }

    fn carried(job: &Job) -> usize {
        match job {
            Job::Batch(b) => b.msgs.len(),
            _ => 1,
        }
    }

    #[test]
    fn batches_join_only_when_they_would_wait_for_a_connection() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        l.last_answer = Some(now); // a receiver that answers
        for i in 0..40 {
            l.push(batch(i));
        }
        // A lane with room: each batch its own request, up to BRISK out; the one that
        // fills the last brisk slot takes everything still waiting with it.
        let mut sizes = Vec::new();
        while let Some(job) = l.take(now) {
            sizes.push(carried(&job));
            l.start(job, now).unwrap();
        }
        let mut want = vec![1; BRISK - 1];
        want.push(40 - (BRISK - 1));
        assert_eq!(sizes, want);
        // Held back, more wait; a request back takes them all in one.
        for i in 40..60 {
            l.push(batch(i));
        }
        assert!(l.take(now).is_none());
        l.finished(&Attempt::Success, now, now);
        let job = l.take(now).unwrap();
        assert_eq!(carried(&job), 20);
    }

    #[test]
    fn a_lane_adds_threads_beyond_brisk_only_while_requests_out_are_slow() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        for i in 0..40 {
            l.push(hook(i));
        }
        let n = burst(&mut l, now);
        assert_eq!(
            n, SILENT,
            "before any answer a burst starts SILENT requests, not one per waiting request"
        );
        assert_eq!(
            l.wake_at(now),
            None,
            "nothing answered yet: the next answer wakes the scheduler, not the clock"
        );
        // One comes back quickly: the receiver answers, so the lane goes up to BRISK.
        l.finished(&Attempt::Success, now, now);
        l.threads = SILENT;
        assert_eq!(burst(&mut l, now), BRISK - (SILENT - 1));
        assert_eq!(l.busy, BRISK);
        assert!(!start(&mut l, now), "BRISK out, none slow");
        assert_eq!(
            l.wake_at(now),
            Some(now + SLOW_AFTER),
            "answered around: the lane looks again when they turn slow"
        );
        // Those requests are now slow (a stalling receiver): room for BRISK more threads.
        let later = now + SLOW_AFTER;
        let more = burst(&mut l, later);
        assert_eq!(more, BRISK);
        assert_eq!(l.busy, 2 * BRISK);
        // The slow ones come back: the brisk ones hold the lane at BRISK again.
        for _ in 0..BRISK {
            l.finished(&Attempt::Success, now, later);
        }
        l.threads = l.busy;
        assert!(
            !start(&mut l, later),
            "BRISK brisk requests out: no new thread"
        );
    }

    #[test]
    fn lanes_with_work_share_brisk_at_least_silent_each() {
        let lanes = |n: usize| (0..n).map(|_| lane(100).0).collect::<Vec<_>>();
        let mut ls = lanes(6);
        share_brisk(&mut ls);
        assert!(ls.iter().all(|l| l.share == BRISK), "no work: a lane alone");
        ls[2].push(hook(1));
        share_brisk(&mut ls);
        assert!(
            ls.iter().all(|l| l.share == BRISK),
            "one lane with work has it all"
        );
        ls[4].busy = 1;
        share_brisk(&mut ls);
        assert!(ls.iter().all(|l| l.share == BRISK / 2));
        for l in &mut ls {
            l.busy = 1;
        }
        share_brisk(&mut ls);
        assert!(ls.iter().all(|l| l.share == SILENT), "never below SILENT");
        // The share is what an answering lane holds to.
        let (mut l, _rx) = lane(100);
        l.last_answer = Some(Instant::now());
        l.share = SILENT;
        for i in 0..40 {
            l.push(hook(i));
        }
        assert_eq!(burst(&mut l, Instant::now()), SILENT);
    }

    #[test]
    fn a_receiver_that_answers_nothing_gets_silent_requests_and_no_more() {
        let (mut l, _rx) = lane(100);
        let now = Instant::now();
        for i in 0..40 {
            l.push(hook(i));
        }
        let n = burst(&mut l, now);
        assert_eq!(n, SILENT);
        // Long past SLOW_AFTER, still no answer: a hung receiver or a black hole.
        let later = now + Duration::from_secs(2);
        assert!(
            !start(&mut l, later),
            "no answer since they left: no more threads"
        );
        assert_eq!(
            l.wake_at(later),
            None,
            "an answer, not the clock, opens the lane"
        );
        // A timeout is no answer either.
        let timeout = Attempt::Retryable {
            reason: Reason::Timeout,
            detail: "timed out".into(),
            retry_after: None,
        };
        l.finished(&timeout, now, later);
        l.threads = SILENT;
        assert!(start(&mut l, later), "its thread takes the next request");
        assert!(!start(&mut l, later), "and the lane stays at SILENT");
        // Any answer (a 503 here) shows the receiver alive: the requests that left before it
        // count as slow and make room.
        let answer = Attempt::Retryable {
            reason: Reason::Status(503),
            detail: "503".into(),
            retry_after: None,
        };
        let answered = later + Duration::from_millis(1);
        l.finished(&answer, now, answered);
        let more = burst(&mut l, answered);
        // One request left after the timeout and is still young: BRISK - 1 more.
        assert_eq!(
            more,
            BRISK - 1,
            "BRISK moving again, beside the stalled ones"
        );
    }
}
