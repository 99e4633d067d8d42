//! The scheduler thread: owns every accepted message until its outcome. It batches
//! ingestion messages (`batch.rs`), runs webhook rounds (`fanout.rs`), keeps the retry
//! timers, hands requests to the delivery lanes (`lane.rs`), and joins the results of both
//! destinations into exactly one outcome per message. It never touches the network.

use crate::batch::Batcher;
use crate::config::Config;
use crate::fanout::{Round, Settled};
use crate::inbox::{Mailbox, SpoolOps, Wake};
use crate::ingestion::Element;
use crate::lane::{Batch, Delivery, Job, Lane, Report};
use crate::log::{redact_url, Level, Logger};
use crate::outcome::{Outcome, OutcomeKind, Reason};
use crate::retry::{after, RetryPolicy};
use crate::shared::Shared;
use crate::spool::Op;
use crate::spooler::wall_ms;
use crate::transport::Attempt;
use crossbeam_channel::{select, Receiver, Sender, TryRecvError};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often idle lane threads are let go and waiting requests of a down destination are
/// checked against their retry window.
const HOUSEKEEPING: Duration = Duration::from_secs(1);
/// Lane threads idle for this long exit.
const TRIM_EVERY: u32 = 5;
/// Commands read in one go before the scheduler hands work to the lanes.
const READ_AHEAD: usize = 512;

/// One accepted message, already in the bytes of each destination it goes to.
pub(crate) struct Item {
    pub id: Arc<str>,
    /// Where `id` stands as it is (no escapes) in `ingest`, or in `hook` when there is no
    /// `ingest`: the scheduler keeps the id there rather than in an allocation of its own.
    pub id_at: Option<u16>,
    pub ingest: Option<Element>,
    pub hook: Option<Arc<[u8]>>,
    /// When the call accepted it: its batch's `flush_interval` counts from here, however
    /// late the scheduler reads it.
    pub accepted: Instant,
}

/// A message taken over from the spool: what is left of it to deliver.
pub(crate) struct Resumed {
    pub id: Arc<str>,
    pub ingest: Option<Arc<[u8]>>,
    pub hook: Option<Arc<[u8]>>,
    /// Webhook URLs still worth trying.
    pub hook_mask: u8,
    /// Its first attempt, in an earlier life: the retry window goes on from there.
    pub first: Option<Instant>,
}

pub(crate) enum Command {
    Message(Item),
    Resume(Resumed),
    /// Close the open batch now; the scheduler writes into the barrier the number below
    /// which every message was accepted before the flush.
    Flush(Option<Arc<AtomicU64>>),
    /// End what is left (outcome: dropped, closed) and stop.
    Shutdown,
}

/// A message's id as the scheduler keeps it until the outcome: inside its body when the
/// body holds it as it is (always for the ids we make), so it costs no allocation.
#[derive(Clone)]
enum MsgId {
    In(Arc<[u8]>, u16, u16),
    Own(Arc<str>),
}

impl MsgId {
    fn of(item: &Item) -> MsgId {
        let body = item
            .ingest
            .as_ref()
            .map(Element::bytes)
            .or(item.hook.as_ref());
        match (body, item.id_at) {
            (Some(body), Some(at)) if item.id.len() <= usize::from(u16::MAX) => {
                MsgId::In(body.clone(), at, item.id.len() as u16)
            }
            _ => MsgId::Own(item.id.clone()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            MsgId::In(body, at, len) => {
                let at = usize::from(*at);
                std::str::from_utf8(&body[at..at + usize::from(*len)]).unwrap_or("")
            }
            MsgId::Own(id) => id,
        }
    }

    fn to_arc(&self) -> Arc<str> {
        match self {
            MsgId::In(..) => self.as_str().into(),
            MsgId::Own(id) => id.clone(),
        }
    }
}

/// A lone message's id, read from its ingestion bytes: a message is lone only when this
/// reads back its id (see [`Scheduler::accept`]).
fn lone_id(bytes: &Element) -> Option<MsgId> {
    let (at, len) = bytes.id_span()?;
    Some(MsgId::In(bytes.bytes().clone(), at, len))
}

/// [`lone_id`] of a message accepted as lone, which reads back by construction.
fn lone(bytes: &Element) -> MsgId {
    lone_id(bytes).unwrap_or_else(|| MsgId::Own(Arc::from("")))
}

struct Track {
    id: MsgId,
    /// What few messages have: boxed, since every accepted message has a `Track` until its
    /// outcome (the queue's memory is mostly these and the bytes).
    more: Option<Box<More>>,
    /// Requests out for this message now.
    requests: u32,
    /// Destinations still to finish.
    remaining: u8,
    /// Outcome already reported; kept only until its last request returns.
    finished: bool,
}

/// A `Track`'s rarer parts: a webhook round under way, a failure to report, an earlier life.
#[derive(Default)]
struct More {
    failure: Option<(Reason, String)>,
    hook: Option<Round>,
    /// A resumed message's first attempt (its ingestion retry window goes on from there).
    since: Option<Instant>,
}

impl Track {
    fn new(id: MsgId, remaining: u8, hook: Option<Round>, since: Option<Instant>) -> Track {
        let more = (hook.is_some() || since.is_some()).then(|| {
            Box::new(More {
                failure: None,
                hook,
                since,
            })
        });
        Track {
            id,
            more,
            requests: 0,
            remaining,
            finished: false,
        }
    }

    fn round(&self) -> Option<&Round> {
        self.more.as_ref()?.hook.as_ref()
    }

    fn round_mut(&mut self) -> Option<&mut Round> {
        self.more.as_mut()?.hook.as_mut()
    }

    fn end_round(&mut self) {
        if let Some(more) = &mut self.more {
            more.hook = None;
        }
    }

    fn since(&self) -> Option<Instant> {
        self.more.as_ref()?.since
    }

    /// Keeps the first failure of its destinations.
    fn fail(&mut self, failure: (Reason, String)) {
        self.more
            .get_or_insert_with(Box::default)
            .failure
            .get_or_insert(failure);
    }

    fn take_failure(&mut self) -> Option<(Reason, String)> {
        self.more.as_mut()?.failure.take()
    }
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

// A `Track` lives for every queued message: keep it small.
const _: () = assert!(std::mem::size_of::<Track>() <= 40);

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

/// Which messages have ended, in acceptance order, for `flush` barriers.
#[derive(Default)]
struct Watermark {
    base: u64,
    ended: VecDeque<bool>,
}

impl Watermark {
    fn accept(&mut self) {
        self.ended.push_back(false);
    }

    /// Marks `seq` ended; true when the low water mark moved.
    fn end(&mut self, seq: u64) -> bool {
        let Some(slot) = seq
            .checked_sub(self.base)
            .and_then(|i| self.ended.get_mut(i as usize))
        else {
            return false;
        };
        *slot = true;
        let before = self.base;
        while self.ended.front() == Some(&true) {
            self.ended.pop_front();
            self.base += 1;
        }
        self.base != before
    }
}

pub(crate) struct Scheduler {
    shared: Arc<Shared>,
    commands: Receiver<Command>,
    bell: Receiver<()>,
    wake: Arc<Wake>,
    reports: Receiver<Report>,
    /// Lane 0 is ingestion, lane 1 + i is webhook i.
    lanes: Vec<Lane>,
    batcher: Batcher,
    policy: RetryPolicy,
    send: bool,
    hook_mask: u8,
    has_ingestion: bool,
    /// Progress and outcomes for the spool writer, when there is a spool.
    spool: Option<SpoolOps>,
    on_outcome: Option<crate::config::OutcomeCallback>,
    logger: Logger,
    tracks: HashMap<u64, Track>,
    /// Lone messages (see [`Scheduler::accept`]) while a request carries them: what close
    /// needs to end them, since their batch is then with a lane's thread.
    flying: HashMap<u64, Element>,
    next_seq: u64,
    watermark: Watermark,
    timers: BinaryHeap<Timer>,
    timer_n: u64,
    next_housekeeping: Instant,
    ticks: u32,
}

impl Scheduler {
    pub(crate) fn new(
        config: &Config,
        shared: Arc<Shared>,
        mailbox: Mailbox,
        delivery: Arc<Delivery>,
        spool: Option<SpoolOps>,
        logger: Logger,
    ) -> Self {
        let (report_tx, reports) = crossbeam_channel::unbounded();
        let lane = |index: usize, label: String, tx: &Sender<Report>| {
            Lane::new(
                index,
                label.into(),
                delivery.clone(),
                tx.clone(),
                config.workers,
                config.max_in_flight,
                config.retry,
            )
        };
        let mut lanes = vec![lane(0, "ingestion".into(), &report_tx)];
        for (i, hook) in config.webhooks.iter().enumerate() {
            let label = format!("webhooks[{i}] {}", redact_url(&hook.url));
            lanes.push(lane(1 + i, label, &report_tx));
        }
        Scheduler {
            shared,
            commands: mailbox.commands,
            bell: mailbox.bell,
            wake: mailbox.wake,
            reports,
            lanes,
            batcher: Batcher::new(config.flush_at, config.flush_interval),
            policy: config.retry,
            send: config.send,
            hook_mask: ((1u16 << config.webhooks.len()) - 1) as u8,
            has_ingestion: config.write_key.is_some(),
            spool,
            on_outcome: config.on_outcome.clone(),
            logger,
            tracks: HashMap::new(),
            flying: HashMap::new(),
            next_seq: 0,
            watermark: Watermark::default(),
            timers: BinaryHeap::new(),
            timer_n: 0,
            next_housekeeping: Instant::now() + HOUSEKEEPING,
            ticks: 0,
        }
    }

    pub(crate) fn run(mut self) {
        loop {
            let now = Instant::now();
            self.fire_timers(now);
            self.dispatch(now);
            let deadline = self.next_deadline();
            // Senders ring only for what cannot wait until `deadline` (see `inbox`).
            if self.wake.must_drain(deadline, self.batcher.room()) {
                if !self.read_commands() {
                    return self.shutdown();
                }
                // Results must not wait behind a caller that keeps the scheduler busy.
                while let Ok(report) = self.reports.try_recv() {
                    self.on_report(report);
                }
                continue;
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            select! {
                recv(self.bell) -> rung => {
                    // Every sender is gone (the client was leaked or dropped): stop.
                    if rung.is_err() {
                        return self.shutdown();
                    }
                },
                recv(self.reports) -> report => {
                    if let Ok(report) = report {
                        self.on_report(report);
                        while let Ok(report) = self.reports.try_recv() {
                            self.on_report(report);
                        }
                    }
                },
                default(wait) => {},
            }
            // Whatever woke us, take what is waiting: one wake for many calls.
            if !self.read_commands() {
                return self.shutdown();
            }
        }
    }

    /// Reads up to `READ_AHEAD` waiting commands; false on shutdown.
    fn read_commands(&mut self) -> bool {
        let mut taken = 0;
        let mut go_on = true;
        while taken < READ_AHEAD as u64 {
            let cmd = match self.commands.try_recv() {
                Ok(cmd) => cmd,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    go_on = false;
                    break;
                }
            };
            taken += 1;
            if !self.command(cmd) {
                go_on = false;
                break;
            }
        }
        self.wake.taken(taken);
        go_on
    }

    /// Handles one command; false on shutdown.
    fn command(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Message(item) => self.accept(item),
            Command::Resume(r) => self.resume(r),
            Command::Flush(barrier) => {
                self.close_batch(Instant::now());
                if let Some(b) = barrier {
                    b.store(self.next_seq, SeqCst);
                    self.shared.notify();
                }
            }
            Command::Shutdown => return false,
        }
        true
    }

    fn next_deadline(&self) -> Instant {
        let now = Instant::now();
        let mut at = self.next_housekeeping;
        if let Some(t) = self.timers.peek() {
            at = at.min(t.at);
        }
        if let Some(d) = self.batcher.deadline() {
            at = at.min(d);
        }
        for lane in &self.lanes {
            if let Some(w) = lane.wake_at(now) {
                at = at.min(w);
            }
        }
        at
    }

    fn fire_timers(&mut self, now: Instant) {
        if self.batcher.deadline().is_some_and(|d| d <= now) {
            self.close_batch(now);
        }
        while self.timers.peek().is_some_and(|t| t.at <= now) {
            let timer = self.timers.pop().expect("peeked");
            match timer.due {
                Due::Batch(batch) => self.lanes[0].push(Job::Batch(batch)),
                Due::HookRound(seq) => self.start_round(seq, now),
            }
        }
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + HOUSEKEEPING;
            self.housekeeping(now);
        }
    }

    /// Lets idle threads go, and ends requests waiting on a down destination whose
    /// message's retry window has closed (they would otherwise wait for the destination).
    fn housekeeping(&mut self, now: Instant) {
        self.ticks += 1;
        if self.ticks % TRIM_EVERY == 0 {
            for lane in &mut self.lanes {
                lane.trim();
            }
        }
        let policy = self.policy;
        for i in 0..self.lanes.len() {
            if !self.lanes[i].is_down() {
                continue;
            }
            let tracks = &self.tracks;
            let expired = self.lanes[i].drain_waiting(|job| match job {
                Job::Batch(b) => !b
                    .first
                    .is_some_and(|f| now >= after(f, policy.max_retry_duration)),
                Job::Hook { seq, .. } => !tracks
                    .get(seq)
                    .and_then(Track::round)
                    .is_some_and(|r| r.expired(now, &policy)),
                Job::Exit => true,
            });
            let down = Attempt::Retryable {
                reason: Reason::Connection,
                detail: "destination down; not sent".into(),
                retry_after: None,
            };
            for job in expired {
                self.result(i, job, down.clone(), now);
            }
        }
    }

    /// Hands each lane the requests it may send now.
    fn dispatch(&mut self, now: Instant) {
        crate::lane::share_brisk(&mut self.lanes);
        for i in 0..self.lanes.len() {
            while let Some(job) = self.lanes[i].take(now) {
                let seqs: Vec<u64> = match &job {
                    Job::Batch(b) => b
                        .msgs
                        .iter()
                        .map(|(seq, bytes)| {
                            self.request_started(*seq, Some(bytes));
                            *seq
                        })
                        .collect(),
                    Job::Hook { seq, first, .. } => {
                        // Every URL gets each message's first request, even when another URL
                        // has delivered it meanwhile (design §6: the message goes to every
                        // webhook); a retry of a round another URL settled is not sent.
                        let target = (i - 1) as u8;
                        let wanted = self
                            .tracks
                            .get(seq)
                            .and_then(Track::round)
                            .is_some_and(|r| r.wants(target));
                        if !wanted && !*first {
                            continue;
                        }
                        self.request_started(*seq, None);
                        vec![*seq]
                    }
                    Job::Exit => continue,
                };
                if let Err(e) = self.lanes[i].start(job, now) {
                    // No thread could be started: what this request carried ends as failed
                    // rather than waiting for a thread that will never come.
                    self.logger.log(Level::Warn, || {
                        format!("{}: cannot start a thread: {e}", self.lanes[i].label)
                    });
                    for seq in seqs {
                        let failure = Some((Reason::Other, format!("cannot start a thread: {e}")));
                        match self.request_ended(seq) {
                            Some(lone) => self.lone_done(seq, &lone, failure),
                            None => self.dest_done(seq, failure),
                        }
                    }
                    return;
                }
            }
        }
    }

    /// A request carrying message `seq` goes out; `bytes` is its batch entry (ingestion).
    fn request_started(&mut self, seq: u64, bytes: Option<&Element>) {
        match self.tracks.get_mut(&seq) {
            Some(t) => {
                t.requests += 1;
                if t.requests == 1 && !t.finished {
                    self.shared.counters.in_flight.fetch_add(1, Relaxed);
                }
            }
            None => {
                if let Some(bytes) = bytes {
                    self.flying.insert(seq, bytes.clone());
                    self.shared.counters.in_flight.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// A request carrying message `seq` came back (or never left); a lone message's bytes.
    fn request_ended(&mut self, seq: u64) -> Option<Element> {
        if let Some(bytes) = self.flying.remove(&seq) {
            self.shared.counters.landed();
            return Some(bytes);
        }
        if let Some(t) = self.tracks.get_mut(&seq) {
            t.requests -= 1;
            if t.requests == 0 {
                if t.finished {
                    self.tracks.remove(&seq);
                } else {
                    self.shared.counters.landed();
                }
            }
        }
        None
    }

    /// Takes an accepted message. One for ingestion alone, on a client without a spool, whose
    /// id reads back from its bytes, is *lone*: it gets no `Track` (40 bytes and the map's
    /// slot, a fifth of a queued message's memory). Its batch entry is all the scheduler
    /// keeps, its outcome is reported from the batch's result with the id read from its
    /// bytes, and `flying` holds it while a request carries it, so close can end it.
    fn accept(&mut self, item: Item) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.watermark.accept();
        if !self.send {
            return self.report(
                Some(seq),
                &MsgId::Own(item.id.clone()),
                OutcomeKind::Dropped,
                Some(Reason::SendDisabled),
                "send is disabled".into(),
            );
        }
        let remaining = u8::from(item.ingest.is_some()) + u8::from(item.hook.is_some());
        if remaining == 0 {
            return self.report(
                Some(seq),
                &MsgId::Own(item.id.clone()),
                OutcomeKind::Dropped,
                Some(Reason::Filtered),
                "integrations exclude every destination of this client".into(),
            );
        }
        let has_hook = item.hook.is_some();
        let now = Instant::now();
        if let (Some(bytes), None, None) = (&item.ingest, &item.hook, &self.spool) {
            if lone_id(bytes).is_some_and(|id| id.as_str() == &*item.id) {
                // A lone message: its batch entry is all the scheduler keeps of it.
                let closed: Vec<Batch> = self
                    .batcher
                    .add(seq, bytes.clone(), item.accepted)
                    .collect();
                for batch in closed {
                    self.queue_batch(batch, now);
                }
                return;
            }
        }
        let id = MsgId::of(&item);
        let round = item.hook.map(|body| Round::new(body, self.hook_mask, None));
        self.tracks
            .insert(seq, Track::new(id, remaining, round, None));
        if let Some(bytes) = item.ingest {
            let closed: Vec<Batch> = self.batcher.add(seq, bytes, item.accepted).collect();
            for batch in closed {
                self.queue_batch(batch, now);
            }
        }
        if has_hook {
            self.start_round(seq, now);
        }
    }

    /// A message from the spool: goes on where its earlier life left it. A part this client
    /// has no destination for fails with a reason.
    fn resume(&mut self, r: Resumed) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.watermark.accept();
        let mut failure = None;
        let ingest = match r.ingest {
            Some(_) if !self.has_ingestion => {
                failure =
                    Some("resumed from the spool for ingestion, but this client has no write key");
                None
            }
            other => other,
        };
        let hook = match r.hook {
            Some(_) if self.hook_mask == 0 => {
                failure
                    .get_or_insert("resumed from the spool for webhooks, but this client has none");
                None
            }
            Some(body) if r.hook_mask != 0 => Some(Round::new(body, r.hook_mask, r.first)),
            _ => None,
        };
        let remaining = u8::from(ingest.is_some()) + u8::from(hook.is_some());
        if remaining == 0 {
            self.spool(|| Op::Remove { id: r.id.clone() });
            return match failure {
                Some(why) => self.report(
                    Some(seq),
                    &MsgId::Own(r.id.clone()),
                    OutcomeKind::Failed,
                    Some(Reason::Other),
                    why.into(),
                ),
                None => self.report(
                    Some(seq),
                    &MsgId::Own(r.id.clone()),
                    OutcomeKind::Dropped,
                    Some(Reason::Other),
                    "resumed from the spool with nothing left to send".into(),
                ),
            };
        }
        let has_hook = hook.is_some();
        let mut track = Track::new(MsgId::Own(r.id), remaining, hook, r.first);
        if let Some(why) = failure {
            track.fail((Reason::Other, why.to_string()));
        }
        self.tracks.insert(seq, track);
        let now = Instant::now();
        if let Some(bytes) = ingest {
            let closed: Vec<Batch> = self.batcher.add(seq, Element::own(bytes), now).collect();
            for batch in closed {
                self.queue_batch(batch, now);
            }
        }
        if has_hook {
            self.start_round(seq, now);
        }
    }

    /// Tells the spool writer, if any.
    fn spool(&self, op: impl FnOnce() -> Op) {
        if let Some(tx) = &self.spool {
            tx.send(op());
        }
    }

    fn close_batch(&mut self, now: Instant) {
        if let Some(batch) = self.batcher.close() {
            self.queue_batch(batch, now);
        }
    }

    fn queue_batch(&mut self, mut batch: Batch, now: Instant) {
        // A resumed message's window started in its earlier life.
        let earliest = batch
            .msgs
            .iter()
            .filter_map(|(seq, _)| self.tracks.get(seq).and_then(Track::since))
            .min();
        batch.first = Some(earliest.map_or(now, |e| e.min(now)));
        self.lanes[0].push(Job::Batch(batch));
    }

    /// Sends the message to every webhook still worth trying.
    fn start_round(&mut self, seq: u64, now: Instant) {
        let Some(track) = self.tracks.get_mut(&seq) else {
            return;
        };
        // One copy per round for the requests (Standard Webhooks sends and signs it).
        let id: Arc<str> = Arc::from(track.id.as_str());
        let Some(round) = track.round_mut() else {
            return;
        };
        let mask = round.start(now);
        if round.attempts > 1 {
            self.shared
                .counters
                .retries
                .fetch_add(u64::from(mask.count_ones()), Relaxed);
        }
        let body = round.body.clone();
        let first = round.attempts == 1;
        for target in 0..8u8 {
            if mask & (1 << target) != 0 {
                self.lanes[1 + target as usize].push(Job::Hook {
                    seq,
                    id: id.clone(),
                    body: body.clone(),
                    first,
                });
            }
        }
    }

    fn on_report(&mut self, report: Report) {
        let now = Instant::now();
        let Report {
            lane,
            job,
            attempt,
            started,
        } = report;
        self.lanes[lane].finished(&attempt, started, now);
        match &job {
            Job::Batch(b) => {
                for (seq, _) in &b.msgs {
                    self.request_ended(*seq);
                }
            }
            Job::Hook { seq, .. } => {
                self.request_ended(*seq);
            }
            Job::Exit => return,
        }
        self.result(lane, job, attempt, now);
    }

    /// What a request's result (or a request that will not be sent) means for its messages.
    fn result(&mut self, lane: usize, job: Job, attempt: Attempt, now: Instant) {
        match job {
            Job::Batch(batch) => self.batch_result(batch, attempt, now),
            Job::Hook { seq, .. } => self.hook_result(seq, (lane - 1) as u8, attempt, now),
            Job::Exit => {}
        }
    }

    fn batch_result(&mut self, mut batch: Batch, attempt: Attempt, now: Instant) {
        let first = *batch.first.get_or_insert(now);
        batch.attempts += 1;
        if self.spool.is_some() {
            self.batch_progress(&batch, &attempt, first);
        }
        match attempt {
            Attempt::Success => {
                for (seq, bytes) in &batch.msgs {
                    self.ingest_done(*seq, bytes, None);
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
                self.lanes[0].push_front(half(tail));
                self.lanes[0].push_front(half(batch.msgs));
            }
            Attempt::Permanent { reason, detail } => {
                self.logger.log(Level::Warn, || {
                    format!("ingestion: batch of {} failed: {detail}", batch.msgs.len())
                });
                for (seq, bytes) in &batch.msgs {
                    let failure = Some((reason.clone(), format!("ingestion: {detail}")));
                    self.ingest_done(*seq, bytes, failure);
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
                            at.saturating_duration_since(now)
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
                    for (seq, bytes) in &batch.msgs {
                        self.ingest_done(*seq, bytes, Some((Reason::Expired, detail.clone())));
                    }
                }
            },
        }
    }

    /// What the spool must remember of a batch's result: its first attempt when it will be
    /// retried, and that the ingestion part is over for messages still waiting on webhooks.
    fn batch_progress(&self, batch: &Batch, attempt: &Attempt, first: Instant) {
        let over = !matches!(attempt, Attempt::Retryable { .. });
        let split = matches!(
            attempt,
            Attempt::Permanent {
                reason: Reason::Status(413),
                ..
            }
        ) && batch.msgs.len() > 1;
        for (seq, _) in &batch.msgs {
            let Some(t) = self.tracks.get(seq) else {
                continue;
            };
            if batch.attempts == 1 && !over {
                let at_ms = wall_ms(first);
                self.spool(|| Op::FirstAttempt {
                    id: t.id.to_arc(),
                    at_ms,
                });
            }
            if over && !split && t.remaining > 1 && !t.finished {
                self.spool(|| Op::IngestDone { id: t.id.to_arc() });
            }
        }
    }

    fn hook_result(&mut self, seq: u64, target: u8, attempt: Attempt, now: Instant) {
        let Some(t) = self.tracks.get_mut(&seq) else {
            return;
        };
        if t.finished {
            return;
        }
        // The fields themselves, not `round_mut`: `t.id` is read while the round is held.
        let Some(round) = t.more.as_mut().and_then(|m| m.hook.as_mut()) else {
            // Already delivered through another URL.
            return;
        };
        if let Attempt::Permanent { detail, .. } = &attempt {
            let label = &self.lanes[1 + target as usize].label;
            self.logger.log(Level::Warn, || {
                format!("{label}: permanent failure: {detail}")
            });
        }
        let before = round.live_mask();
        let settled = round.record(target, attempt, now, &self.policy);
        if let Some(tx) = &self.spool {
            let id = &t.id.to_arc();
            let over = matches!(settled, Settled::Delivered | Settled::Failed(..));
            if over && t.remaining > 1 {
                // Webhooks done, ingestion not yet: the body leaves the spool.
                tx.send(Op::HookMask {
                    id: id.clone(),
                    mask: 0,
                });
            } else if !over && round.live_mask() != before {
                // A URL refused for good: a resumed round skips it.
                tx.send(Op::HookMask {
                    id: id.clone(),
                    mask: round.live_mask(),
                });
            }
            if matches!(settled, Settled::Retry(_)) && round.attempts == 1 {
                let at_ms = wall_ms(round.first.unwrap_or(now));
                tx.send(Op::FirstAttempt {
                    id: id.clone(),
                    at_ms,
                });
            }
        }
        match settled {
            Settled::Pending => {}
            Settled::Retry(at) => self.schedule(at, Due::HookRound(seq)),
            Settled::Delivered => {
                t.end_round();
                self.dest_done(seq, None);
            }
            Settled::Failed(reason, detail) => {
                t.end_round();
                let detail = format!("webhooks: {detail}");
                if reason == Reason::Expired {
                    self.logger.log(Level::Warn, || detail.clone());
                }
                self.dest_done(seq, Some((reason, detail)));
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

    /// Message `seq`'s ingestion is done; `failure` when it failed.
    fn ingest_done(&mut self, seq: u64, bytes: &Element, failure: Option<(Reason, String)>) {
        if self.tracks.contains_key(&seq) {
            self.dest_done(seq, failure);
        } else {
            self.lone_done(seq, bytes, failure);
        }
    }

    /// A lone message's one destination is done: its outcome.
    fn lone_done(&mut self, seq: u64, bytes: &Element, failure: Option<(Reason, String)>) {
        let id = lone(bytes);
        match failure {
            None => self.report(Some(seq), &id, OutcomeKind::Delivered, None, String::new()),
            Some((reason, detail)) => {
                self.report(Some(seq), &id, OutcomeKind::Failed, Some(reason), detail)
            }
        }
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
            t.fail(f);
        }
        t.remaining -= 1;
        if t.remaining > 0 {
            return;
        }
        t.finished = true;
        let id = t.id.clone();
        let failure = t.take_failure();
        if t.requests == 0 {
            self.tracks.remove(&seq);
        } else {
            // Its other requests are still out; stop counting it as in flight.
            self.shared.counters.landed();
        }
        match failure {
            None => self.report(Some(seq), &id, OutcomeKind::Delivered, None, String::new()),
            Some((reason, detail)) => {
                self.report(Some(seq), &id, OutcomeKind::Failed, Some(reason), detail)
            }
        }
        // After the callback: a crash in between makes the next client report it again (at
        // least once), never leaves a message that no process reported.
        self.spool(|| Op::Remove { id: id.to_arc() });
    }

    /// Counts the outcome, hands it to `on_outcome`, then releases the message's slot.
    fn report(
        &mut self,
        seq: Option<u64>,
        id: &MsgId,
        kind: OutcomeKind,
        reason: Option<Reason>,
        detail: String,
    ) {
        let loss = kind != OutcomeKind::Delivered && reason != Some(Reason::Filtered);
        if self.shared.tally(kind, loss) {
            if let Some(cb) = &self.on_outcome {
                let _gate = self.shared.gate.lock().unwrap_or_else(|e| e.into_inner());
                if !self.shared.callbacks_off.load(SeqCst) {
                    let outcome = Outcome {
                        message_id: id.to_arc(),
                        kind,
                        reason,
                        detail,
                    };
                    // A panicking callback must not take the scheduler down with it.
                    let call = std::panic::AssertUnwindSafe(|| cb(&outcome));
                    if std::panic::catch_unwind(call).is_err() {
                        self.logger
                            .log(Level::Warn, || "on_outcome callback panicked".into());
                    }
                }
            }
            self.shared.release();
        }
        let moved = seq.is_some_and(|s| self.watermark.end(s));
        if moved {
            self.shared.low_water.store(self.watermark.base, SeqCst);
        }
        if moved || self.shared.pending.load(Acquire) == 0 {
            self.shared.notify();
        }
    }

    fn shutdown(mut self) {
        // Threads finish the request they are on (bounded by `timeout`) and exit.
        let mut waiting: Vec<Job> = Vec::new();
        for lane in &mut self.lanes {
            waiting.extend(lane.stop());
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        for lane in &mut self.lanes {
            lane.join_idle(deadline);
        }
        let mut left: Vec<(u64, MsgId, bool)> = self
            .tracks
            .iter()
            .filter(|(_, t)| !t.finished)
            .map(|(seq, t)| (*seq, t.id.clone(), t.requests > 0))
            .collect();
        // Lone messages: in flight, in the open batch, waiting in the lane, waiting to retry.
        left.extend(self.flying.drain().map(|(seq, b)| (seq, lone(&b), true)));
        let timers = std::mem::take(&mut self.timers).into_iter();
        let batches = waiting
            .into_iter()
            .filter_map(|job| match job {
                Job::Batch(b) => Some(b),
                _ => None,
            })
            .chain(timers.filter_map(|t| match t.due {
                Due::Batch(b) => Some(b),
                Due::HookRound(_) => None,
            }))
            .chain(self.batcher.close());
        for batch in batches {
            for (seq, bytes) in batch.msgs {
                if !self.tracks.contains_key(&seq) {
                    left.push((seq, lone(&bytes), false));
                }
            }
        }
        left.sort_by_key(|(seq, _, _)| *seq);
        self.tracks.clear();
        for (seq, id, in_flight) in left {
            if in_flight {
                self.shared.counters.landed();
            }
            if self.spool.is_some() {
                // On disk: the next client on the spool delivers it (at least once).
                self.shared.leave_spooled(true);
                continue;
            }
            let detail = if in_flight {
                "client closed while the request was in flight; delivery unknown"
            } else {
                "client closed before delivery"
            };
            self.report(
                Some(seq),
                &id,
                OutcomeKind::Dropped,
                Some(Reason::Closed),
                detail.into(),
            );
        }
        // Messages enqueued before close took effect but not yet read.
        while let Ok(cmd) = self.commands.try_recv() {
            if let Command::Resume(_) = cmd {
                self.shared.leave_spooled(true);
            }
            if let Command::Message(item) = cmd {
                if self.spool.is_some() {
                    let spooled = item.ingest.is_some() || item.hook.is_some();
                    self.shared.leave_spooled(spooled);
                    continue;
                }
                self.report(
                    None,
                    &MsgId::Own(item.id.clone()),
                    OutcomeKind::Dropped,
                    Some(Reason::Closed),
                    "client closed before delivery".into(),
                );
            }
        }
        self.shared.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_message_id_reads_back_from_its_ingestion_bytes() {
        let el = |b: &[u8]| Element::own(Arc::from(b));
        let id = lone_id(&el(
            br#"{"type":"track","messageId":"m-1","timestamp":"t"}"#,
        ));
        assert_eq!(id.map(|id| id.as_str().to_owned()).as_deref(), Some("m-1"));
        let id = lone_id(&el(br#"{"type":"identify","messageId":"","x":1}"#));
        assert_eq!(id.map(|id| id.as_str().to_owned()).as_deref(), Some(""));
        // Not the shape of an ingestion element: no id, and such a message keeps a `Track`.
        assert!(lone_id(&el(br#"{"type":"track","userId":"u","messageId":"m"}"#)).is_none());
        assert!(lone_id(&el(br#"{"type":"track","messageId":"unterminated"#)).is_none());
        assert!(lone_id(&el(b"")).is_none());
    }

    #[test]
    fn an_id_kept_in_the_body_reads_back_as_given() {
        let body: Arc<[u8]> = Arc::from(&br#"{"type":"track","messageId":"m-1","x":1}"#[..]);
        let item = |id: &str, id_at| Item {
            id: id.into(),
            id_at,
            ingest: Some(Element::own(body.clone())),
            hook: None,
            accepted: Instant::now(),
        };
        let kept = MsgId::of(&item("m-1", Some(29)));
        assert!(matches!(kept, MsgId::In(..)));
        assert_eq!(kept.as_str(), "m-1");
        assert_eq!(&*kept.to_arc(), "m-1");
        let own = MsgId::of(&item("q\"", None));
        assert!(matches!(own, MsgId::Own(_)));
        assert_eq!(own.as_str(), "q\"");
    }

    #[test]
    fn the_watermark_moves_past_ended_messages_in_order() {
        let mut w = Watermark::default();
        for _ in 0..4 {
            w.accept();
        }
        assert!(!w.end(2));
        assert_eq!(w.base, 0);
        assert!(w.end(0));
        assert_eq!(w.base, 1);
        assert!(w.end(1));
        assert_eq!(w.base, 3, "2 had ended already");
        assert!(!w.end(1), "twice is harmless");
        assert!(w.end(3));
        assert_eq!(w.base, 4);
    }
}
