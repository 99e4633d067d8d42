//! The scheduler thread: owns every accepted message until its outcome. It batches
//! ingestion messages (`batch.rs`), runs webhook rounds (`fanout.rs`), keeps the retry
//! timers, hands requests to the delivery lanes (`lane/`), and joins the results of both
//! destinations into exactly one outcome per message. It never touches the network.

use crate::delivery::batch::Batcher;
use crate::delivery::command::Command;
use crate::delivery::inbox::{Mailbox, SpoolOps, Wake};
use crate::delivery::job::{Batch, Job};
use crate::delivery::lane::{Delivery, Lane, Report};
use crate::delivery::shared::Shared;
use crate::http::transport::Attempt;
use crate::log::Logger;
use crate::model::config::Config;
use crate::model::outcome::Reason;
use crate::model::retry::{after, RetryPolicy};
use crate::wire::ingestion::Element;
use crossbeam_channel::{select, Receiver, Sender, TryRecvError};
use foldhash::HashMap;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often idle lane threads are let go and waiting requests of a down destination are
/// checked against their retry window.
const HOUSEKEEPING: Duration = Duration::from_secs(1);
/// Lane threads idle for this long exit.
const TRIM_EVERY: u32 = 5;
/// Commands read in one go before the scheduler hands work to the lanes.
const READ_AHEAD: usize = 512;

mod dispatch;
mod ending;
mod intake;
mod results;
mod shutdown;
mod track;
mod watermark;

use track::Track;
use watermark::Watermark;

/// What a retry timer starts when it falls due.
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
    on_outcome: Option<crate::model::config::OutcomeCallback>,
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
        for i in 0..config.webhooks.len() {
            lanes.push(lane(1 + i, config.webhook_label(i), &report_tx));
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
            tracks: HashMap::default(),
            flying: HashMap::default(),
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
            let (room, filling_until) = self.room(now);
            let deadline = self.next_deadline();
            let deadline = filling_until.map_or(deadline, |t| deadline.min(t));
            // Senders ring only for what cannot wait until `deadline` (see `inbox`).
            if self.wake.must_drain(deadline, room) {
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

    /// Unread ingestion messages the scheduler may leave in the channel before a sender
    /// must wake it: those that fill the open batch, and while the ingestion lane holds
    /// closed batches for a young request (its fill rule), as many more as that request's
    /// successor could take. The young request's answer wakes the scheduler anyway, and so
    /// does its turning slow (the instant returned, a deadline then): it reads everything
    /// at once, one wake instead of one per batch.
    fn room(&self, now: Instant) -> (usize, Option<Instant>) {
        let room = self.batcher.room();
        match self.lanes[0].fill_room(now) {
            Some((bytes, turns)) => (room + self.batcher.messages_in(bytes), Some(turns)),
            None => (room, None),
        }
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
        if self.ticks.is_multiple_of(TRIM_EVERY) {
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
                Job::Batch(b) => b
                    .first
                    .is_none_or(|f| now < after(f, policy.max_retry_duration)),
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

    fn schedule(&mut self, at: Instant, due: Due) {
        self.timer_n += 1;
        self.timers.push(Timer {
            at,
            n: self.timer_n,
            due,
        });
    }
}
