//! The scheduler thread: owns the queue, the open batch, the flush timer and the retry
//! timers; hands requests to a pool of delivery workers; turns their results into one
//! outcome per message. Nothing here blocks on the network.

use crate::config::Config;
use crate::ingestion::{self, Endpoint, MAX_BATCH_BYTES};
use crate::log::{Level, Logger};
use crate::outcome::{Counters, Outcome, OutcomeKind, Reason};
use crate::retry::{after, RetryPolicy};
use crate::transport::{Attempt, Transport};
use crate::webhook::Hooks;
use crossbeam_channel::{select, Receiver, Sender};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One accepted message, already in the bytes of each destination it goes to.
pub(crate) struct Item {
    pub id: Arc<str>,
    pub ingest: Option<Vec<u8>>,
    pub hook: Option<Arc<[u8]>>,
}

pub(crate) enum Command {
    Message(Item),
    /// Close the open batch now.
    Flush,
    /// Drop what is left (outcome: dropped, closed) and stop.
    Shutdown,
}

/// State shared by the client handle and the scheduler.
#[derive(Default)]
pub(crate) struct Shared {
    pub counters: Counters,
    /// Accepted messages without an outcome yet: the queue's size for `max_queue_size`.
    pub pending: AtomicU64,
    /// Enqueue calls under way, so `close` can wait them out before its last drain.
    pub calls: AtomicUsize,
    pub closed: AtomicBool,
    /// Outcome callbacks run holding `gate`, and only while this is false; `close` sets it
    /// under the gate, so no callback runs after `close` returns (C `userdata` may be freed).
    pub callbacks_off: AtomicBool,
    pub gate: Mutex<()>,
    idle: Mutex<()>,
    idle_cv: Condvar,
}

impl Shared {
    /// Waits until no message is pending, or `deadline`. True when none is.
    pub(crate) fn wait_idle(&self, deadline: Instant) -> bool {
        let mut guard = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.pending.load(Acquire) == 0 {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            guard = self
                .idle_cv
                .wait_timeout(guard, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn finish_one(&self) {
        if self.pending.fetch_sub(1, AcqRel) == 1 {
            let _g = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            self.idle_cv.notify_all();
        }
    }
}

/// What the workers share: the transport and both destinations.
pub(crate) struct Delivery {
    pub transport: Transport,
    pub ingestion: Option<Endpoint>,
    pub hooks: Hooks,
    pub logger: Logger,
}

/// A batch of ingestion messages: (message seq, bytes).
pub(crate) struct Batch {
    msgs: Vec<(u64, Vec<u8>)>,
    first: Option<Instant>,
    attempts: u32,
}

/// Work for a delivery worker.
pub(crate) enum Job {
    Batch(Batch),
    Hook {
        seq: u64,
        target: u8,
        body: Arc<[u8]>,
    },
}

/// A worker's report.
pub(crate) enum Done {
    Batch(Batch, Attempt),
    Hook {
        seq: u64,
        target: u8,
        attempt: Attempt,
    },
}

pub(crate) fn run_worker(delivery: Arc<Delivery>, jobs: Receiver<Job>, done: Sender<Done>) {
    while let Ok(job) = jobs.recv() {
        let report = match job {
            Job::Batch(batch) => {
                let endpoint = delivery
                    .ingestion
                    .as_ref()
                    .expect("batches only with a write key");
                let attempt = endpoint.send(
                    &delivery.transport,
                    batch.msgs.iter().map(|(_, m)| m.as_slice()),
                );
                let n = batch.msgs.len();
                delivery.logger.log(Level::Debug, || {
                    format!("ingestion: batch of {n}: {attempt:?}")
                });
                Done::Batch(batch, attempt)
            }
            Job::Hook { seq, target, body } => {
                let attempt = delivery
                    .hooks
                    .send(&delivery.transport, target as usize, &body);
                delivery.logger.log(Level::Debug, || {
                    format!(
                        "webhook {}: {attempt:?}",
                        delivery.hooks.url(target as usize)
                    )
                });
                Done::Hook {
                    seq,
                    target,
                    attempt,
                }
            }
        };
        if done.send(report).is_err() {
            return;
        }
    }
}

/// Per-message webhook state: which URLs are being tried this round and how they went.
struct HookState {
    body: Arc<[u8]>,
    first: Option<Instant>,
    attempts: u32,
    outstanding: u8,
    retry_mask: u8,
    retry_after: Option<Duration>,
    last_error: Option<(Reason, String)>,
    permanent: Option<(Reason, String)>,
}

struct Track {
    id: Arc<str>,
    /// Destinations still to finish.
    remaining: u8,
    failure: Option<(Reason, String)>,
    /// Requests out for this message.
    requests: u32,
    /// Outcome already reported; kept only until its last request returns.
    finished: bool,
    hook: Option<HookState>,
}

enum Due {
    Batch(Batch),
    HookRound(u64),
}

struct Timer {
    at: Instant,
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

pub(crate) struct Scheduler {
    shared: Arc<Shared>,
    commands: Receiver<Command>,
    jobs: Sender<Job>,
    done: Receiver<Done>,
    workers: usize,
    busy: usize,
    flush_at: usize,
    flush_interval: Duration,
    policy: RetryPolicy,
    send: bool,
    hook_count: u8,
    on_outcome: Option<crate::config::OutcomeCallback>,
    logger: Logger,
    tracks: HashMap<u64, Track>,
    next_seq: u64,
    open: Vec<(u64, Vec<u8>)>,
    open_bytes: usize,
    open_deadline: Option<Instant>,
    ready: VecDeque<Job>,
    timers: BinaryHeap<Timer>,
    timer_n: u64,
}

impl Scheduler {
    pub(crate) fn new(
        config: &Config,
        shared: Arc<Shared>,
        commands: Receiver<Command>,
        jobs: Sender<Job>,
        done: Receiver<Done>,
        workers: usize,
        logger: Logger,
    ) -> Self {
        Scheduler {
            shared,
            commands,
            jobs,
            done,
            workers,
            busy: 0,
            flush_at: config.flush_at,
            flush_interval: config.flush_interval,
            policy: config.retry,
            send: config.send,
            hook_count: config.webhooks.len() as u8,
            on_outcome: config.on_outcome.clone(),
            logger,
            tracks: HashMap::new(),
            next_seq: 0,
            open: Vec::new(),
            open_bytes: 0,
            open_deadline: None,
            ready: VecDeque::new(),
            timers: BinaryHeap::new(),
            timer_n: 0,
        }
    }

    pub(crate) fn run(mut self) {
        loop {
            self.dispatch();
            let now = Instant::now();
            let wait = self.next_deadline().map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(now)
            });
            select! {
                recv(self.commands) -> cmd => match cmd {
                    Ok(Command::Message(item)) => self.accept(item),
                    Ok(Command::Flush) => self.close_batch(),
                    Ok(Command::Shutdown) | Err(_) => return self.shutdown(),
                },
                recv(self.done) -> done => {
                    if let Ok(done) = done {
                        self.busy -= 1;
                        self.on_done(done);
                    }
                },
                default(wait) => {},
            }
            self.fire_timers(Instant::now());
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let timer = self.timers.peek().map(|t| t.at);
        match (timer, self.open_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        if self.open_deadline.is_some_and(|d| d <= now) {
            self.close_batch();
        }
        while self.timers.peek().is_some_and(|t| t.at <= now) {
            let timer = self.timers.pop().expect("peeked");
            match timer.due {
                Due::Batch(batch) => self.ready.push_back(Job::Batch(batch)),
                Due::HookRound(seq) => self.start_round(seq),
            }
        }
    }

    fn dispatch(&mut self) {
        while self.busy < self.workers {
            let Some(job) = self.ready.pop_front() else {
                return;
            };
            match &job {
                Job::Batch(b) => {
                    for (seq, _) in &b.msgs {
                        self.request_started(*seq);
                    }
                }
                Job::Hook { seq, .. } => self.request_started(*seq),
            }
            if self.jobs.send(job).is_err() {
                return;
            }
            self.busy += 1;
        }
    }

    fn request_started(&mut self, seq: u64) {
        if let Some(t) = self.tracks.get_mut(&seq) {
            t.requests += 1;
            if t.requests == 1 && !t.finished {
                self.shared.counters.in_flight.fetch_add(1, Relaxed);
            }
        }
    }

    fn request_ended(&mut self, seq: u64) {
        if let Some(t) = self.tracks.get_mut(&seq) {
            t.requests -= 1;
            if t.requests == 0 {
                if t.finished {
                    self.tracks.remove(&seq);
                } else {
                    self.shared.counters.in_flight.fetch_sub(1, Relaxed);
                }
            }
        }
    }

    fn accept(&mut self, item: Item) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if !self.send {
            return self.report(
                &item.id,
                OutcomeKind::Dropped,
                Some(Reason::SendDisabled),
                "send is disabled".into(),
            );
        }
        let remaining = u8::from(item.ingest.is_some()) + u8::from(item.hook.is_some());
        if remaining == 0 {
            return self.report(
                &item.id,
                OutcomeKind::Dropped,
                Some(Reason::Filtered),
                "integrations exclude every destination of this client".into(),
            );
        }
        let hook = item.hook.map(|body| HookState {
            body,
            first: None,
            attempts: 0,
            outstanding: 0,
            retry_mask: (1u8 << self.hook_count) - 1,
            retry_after: None,
            last_error: None,
            permanent: None,
        });
        let has_hook = hook.is_some();
        self.tracks.insert(
            seq,
            Track {
                id: item.id,
                remaining,
                failure: None,
                requests: 0,
                finished: false,
                hook,
            },
        );
        if let Some(bytes) = item.ingest {
            self.add_to_batch(seq, bytes);
        }
        if has_hook {
            self.start_round(seq);
        }
    }

    fn add_to_batch(&mut self, seq: u64, bytes: Vec<u8>) {
        let len = bytes.len();
        if !self.open.is_empty()
            && ingestion::body_len(self.open.len() + 1, self.open_bytes + len) > MAX_BATCH_BYTES
        {
            self.close_batch();
        }
        if self.open.is_empty() {
            self.open_deadline = Some(after(Instant::now(), self.flush_interval));
        }
        self.open.push((seq, bytes));
        self.open_bytes += len;
        if self.open.len() >= self.flush_at {
            self.close_batch();
        }
    }

    fn close_batch(&mut self) {
        self.open_deadline = None;
        if self.open.is_empty() {
            return;
        }
        self.open_bytes = 0;
        let msgs = std::mem::take(&mut self.open);
        self.ready.push_back(Job::Batch(Batch {
            msgs,
            first: None,
            attempts: 0,
        }));
    }

    /// Sends the message to every webhook still worth trying.
    fn start_round(&mut self, seq: u64) {
        let Some(t) = self.tracks.get_mut(&seq) else {
            return;
        };
        let Some(h) = t.hook.as_mut() else { return };
        h.first.get_or_insert_with(Instant::now);
        h.attempts += 1;
        let mask = std::mem::take(&mut h.retry_mask);
        h.retry_after = None;
        h.outstanding = mask.count_ones() as u8;
        if h.attempts > 1 {
            self.shared
                .counters
                .retries
                .fetch_add(u64::from(h.outstanding), Relaxed);
        }
        for target in 0..8u8 {
            if mask & (1 << target) != 0 {
                self.ready.push_back(Job::Hook {
                    seq,
                    target,
                    body: h.body.clone(),
                });
            }
        }
    }

    fn on_done(&mut self, done: Done) {
        match done {
            Done::Batch(batch, attempt) => self.batch_done(batch, attempt),
            Done::Hook {
                seq,
                target,
                attempt,
            } => self.hook_done(seq, target, attempt),
        }
    }

    fn batch_done(&mut self, mut batch: Batch, attempt: Attempt) {
        for (seq, _) in &batch.msgs {
            self.request_ended(*seq);
        }
        let now = Instant::now();
        let first = *batch.first.get_or_insert(now);
        batch.attempts += 1;
        match attempt {
            Attempt::Success => {
                for (seq, _) in &batch.msgs {
                    self.dest_done(*seq, None);
                }
            }
            Attempt::Permanent {
                reason: Reason::Status(413),
                ..
            } if batch.msgs.len() > 1 => {
                // Too large for this receiver: halve it and send both halves now.
                let tail = batch.msgs.split_off(batch.msgs.len() / 2);
                let half = |msgs| {
                    Job::Batch(Batch {
                        msgs,
                        first: Some(first),
                        attempts: batch.attempts,
                    })
                };
                self.ready.push_front(half(tail));
                self.ready.push_front(half(batch.msgs));
            }
            Attempt::Permanent { reason, detail } => {
                self.logger.log(Level::Warn, || {
                    format!("ingestion: batch of {} failed: {detail}", batch.msgs.len())
                });
                for (seq, _) in &batch.msgs {
                    self.dest_done(*seq, Some((reason.clone(), format!("ingestion: {detail}"))));
                }
            }
            Attempt::Retryable {
                detail,
                retry_after,
                ..
            } => match self.policy.next(batch.attempts, first, now, retry_after) {
                Some(at) => {
                    self.logger.log(Level::Debug, || {
                        format!(
                            "ingestion: retrying a batch of {} in {:?} after {detail}",
                            batch.msgs.len(),
                            at - now
                        )
                    });
                    self.shared.counters.retries.fetch_add(1, Relaxed);
                    self.schedule(at, Due::Batch(batch));
                }
                None => {
                    let detail = format!(
                        "ingestion: expired after {} attempts; last: {detail}",
                        batch.attempts
                    );
                    self.logger.log(Level::Warn, || detail.clone());
                    for (seq, _) in &batch.msgs {
                        self.dest_done(*seq, Some((Reason::Expired, detail.clone())));
                    }
                }
            },
        }
    }

    fn hook_done(&mut self, seq: u64, target: u8, attempt: Attempt) {
        self.request_ended(seq);
        let now = Instant::now();
        let Some(t) = self.tracks.get_mut(&seq) else {
            return;
        };
        if t.finished {
            return;
        }
        let Some(h) = t.hook.as_mut() else { return };
        if h.outstanding == 0 {
            // Already settled by a success in this round.
            return;
        }
        h.outstanding -= 1;
        match attempt {
            Attempt::Success => {
                // One URL took it: the message is delivered; the others are not retried.
                h.outstanding = 0;
                h.retry_mask = 0;
                t.hook = None;
                return self.dest_done(seq, None);
            }
            Attempt::Retryable {
                reason,
                detail,
                retry_after,
            } => {
                h.retry_mask |= 1 << target;
                h.retry_after = h.retry_after.max(retry_after);
                h.last_error = Some((reason, detail));
            }
            Attempt::Permanent { reason, detail } => {
                self.logger.log(Level::Warn, || {
                    format!("webhooks[{target}]: permanent failure: {detail}")
                });
                h.permanent.get_or_insert((reason, detail));
            }
        }
        if h.outstanding > 0 {
            return;
        }
        if h.retry_mask == 0 {
            let (reason, detail) = h
                .permanent
                .take()
                .unwrap_or((Reason::Other, "no webhook accepted".into()));
            return self.dest_done(seq, Some((reason, format!("webhooks: {detail}"))));
        }
        let first = h.first.unwrap_or(now);
        match self.policy.next(h.attempts, first, now, h.retry_after) {
            Some(at) => self.schedule(at, Due::HookRound(seq)),
            None => {
                let last = h.last_error.as_ref().map_or("", |(_, d)| d.as_str());
                let detail = format!(
                    "webhooks: expired after {} attempts; last: {last}",
                    h.attempts
                );
                self.logger.log(Level::Warn, || detail.clone());
                self.dest_done(seq, Some((Reason::Expired, detail)));
            }
        }
    }

    fn schedule(&mut self, at: Instant, due: Due) {
        self.timer_n += 1;
        self.timers.push(Timer {
            at,
            n: self.timer_n,
            due,
        });
    }

    /// One destination of message `seq` is done; `failure` when it failed.
    fn dest_done(&mut self, seq: u64, failure: Option<(Reason, String)>) {
        let Some(t) = self.tracks.get_mut(&seq) else {
            return;
        };
        if t.finished {
            return;
        }
        if let Some(f) = failure {
            t.failure.get_or_insert(f);
        }
        t.remaining -= 1;
        if t.remaining > 0 {
            return;
        }
        t.finished = true;
        let id = t.id.clone();
        let failure = t.failure.take();
        if t.requests == 0 {
            self.tracks.remove(&seq);
        } else {
            // Its other requests are still out; stop counting it as in flight.
            self.shared.counters.in_flight.fetch_sub(1, Relaxed);
        }
        match failure {
            None => self.report(&id, OutcomeKind::Delivered, None, String::new()),
            Some((reason, detail)) => self.report(&id, OutcomeKind::Failed, Some(reason), detail),
        }
    }

    fn report(&self, id: &Arc<str>, kind: OutcomeKind, reason: Option<Reason>, detail: String) {
        self.shared.counters.count(kind);
        if let Some(cb) = &self.on_outcome {
            let _gate = self.shared.gate.lock().unwrap_or_else(|e| e.into_inner());
            if self.shared.callbacks_off.load(SeqCst) {
                return self.shared.finish_one();
            }
            let outcome = Outcome {
                message_id: id.clone(),
                kind,
                reason,
                detail,
            };
            // A panicking callback must not take the scheduler down with it.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(&outcome))).is_err() {
                self.logger
                    .log(Level::Warn, || "on_outcome callback panicked".into());
            }
        }
        self.shared.finish_one();
    }

    fn shutdown(mut self) {
        let mut left: Vec<(u64, Arc<str>, bool)> = self
            .tracks
            .iter()
            .filter(|(_, t)| !t.finished)
            .map(|(seq, t)| (*seq, t.id.clone(), t.requests > 0))
            .collect();
        left.sort_by_key(|(seq, _, _)| *seq);
        for (_, id, in_flight) in left {
            if in_flight {
                self.shared.counters.in_flight.fetch_sub(1, Relaxed);
            }
            let detail = if in_flight {
                "client closed while the request was in flight; delivery unknown"
            } else {
                "client closed before delivery"
            };
            self.report(
                &id,
                OutcomeKind::Dropped,
                Some(Reason::Closed),
                detail.into(),
            );
        }
        self.tracks.clear();
        // Messages enqueued before close took effect but not yet read.
        while let Ok(cmd) = self.commands.try_recv() {
            if let Command::Message(item) = cmd {
                self.report(
                    &item.id,
                    OutcomeKind::Dropped,
                    Some(Reason::Closed),
                    "client closed before delivery".into(),
                );
            }
        }
    }
}
