//! One client's part of the scheduler (a tenant): every message it accepted until its
//! outcome. It batches ingestion messages (`batch.rs`), runs webhook rounds (`fanout.rs`),
//! keeps the retry timers, hands requests to its delivery lanes (`lane/`), and joins the
//! results of both destinations into exactly one outcome per message. It never touches the
//! network, and never blocks: the scheduler thread runs it in steps between other tenants'.

use super::{HOUSEKEEPING, READ_AHEAD};
use crate::delivery::batch::Batcher;
use crate::delivery::command::Command;
use crate::delivery::inbox::{Mailbox, SpoolOps};
use crate::delivery::job::Job;
use crate::delivery::lane::{Delivery, Lanes, Report};
use crate::delivery::shared::Shared;
use crate::delivery::watch::Answers;
use crate::http::attempt::Attempt;
use crate::log::Logger;
use crate::model::config::Config;
use crate::model::outcome::Reason;
use crate::model::retry::{after, RetryPolicy};
use crate::wire::ingestion::Element;
use crossbeam_channel::{Sender, TryRecvError};
use foldhash::HashMap;
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::Instant;

use super::timers::{Due, Timers};
use super::track::Track;
use super::watermark::Watermark;

/// What a tenant's settings decide, read at every message.
#[derive(Clone, Copy)]
pub(super) struct Rules {
    /// Backoff and retry window.
    pub(super) policy: RetryPolicy,
    /// False: messages are counted and dropped (`Config::send`).
    pub(super) send: bool,
    /// The webhooks a message goes to (the enabled ones).
    pub(super) hook_mask: u8,
    pub(super) has_ingestion: bool,
    /// Lane 0 sends a subscription's batches (records and dead letters as a webhook's).
    pub(super) batched: bool,
    /// Keeps dead letters (in its spool's store).
    pub(super) dead_letters: bool,
    /// How much of each URL's attempts its log keeps.
    pub(super) keep: crate::delivery::watch::Keep,
}

pub(crate) struct Tenant {
    pub(super) shared: Arc<Shared>,
    pub(super) mailbox: Mailbox,
    /// Lane 0 is ingestion, lane 1 + i is webhook i.
    pub(super) lanes: Lanes,
    pub(super) batcher: Batcher,
    pub(super) rules: Rules,
    /// Progress and outcomes for the spool writer, when there is a spool.
    pub(super) spool: Option<SpoolOps>,
    pub(super) on_outcome: Option<crate::model::config::OutcomeCallback>,
    pub(super) logger: Logger,
    pub(super) tracks: HashMap<u64, Track>,
    /// Lone messages (see [`Tenant::accept`]) while a request carries them: what close
    /// needs to end them, since their batch is then with a lane's thread.
    pub(super) flying: HashMap<u64, Element>,
    pub(super) next_seq: u64,
    pub(super) watermark: Watermark,
    pub(super) timers: Timers,
    pub(super) next_housekeeping: Instant,
    /// Handing over to a successor (`Command::HandOver`): no request starts, and the tenant
    /// stops once its requests out are back.
    pub(super) handing_over: bool,
    /// Each URL's last answer excerpt, shared by the records that repeat it.
    pub(super) answers: Answers,
    /// Dead letters being replayed, by seq: their replay job (0: none known). Their record
    /// is the dead letter, so they make no spool ops.
    pub(super) replays: HashMap<u64, u64>,
}

impl Tenant {
    /// Tenant `id`: its lanes report on `reports`, the scheduler's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: u32,
        config: &Config,
        shared: Arc<Shared>,
        mailbox: Mailbox,
        delivery: Arc<Delivery>,
        reports: Sender<Report>,
        spool: Option<SpoolOps>,
        logger: Logger,
    ) -> Self {
        // A batched subscription's events are its lane 0's batches.
        let batched = delivery.hooks.batched();
        let mut lanes = Lanes::new(id, config, delivery, reports);
        // A URL whose records a predecessor left circuit open stays so: one probe first, not
        // a burst at a receiver that was down a moment ago.
        let now = Instant::now();
        for (i, url) in shared.watch.urls.iter().enumerate() {
            let at = if batched { 0 } else { 1 + i };
            if let Some(failures) = url.circuit().filter(|_| at < lanes.len()) {
                lanes.at(at).tripped(failures, now);
            }
        }
        let dead_letters = config.dead_letters && spool.is_some();
        Tenant {
            shared,
            mailbox,
            lanes,
            batcher: Batcher::new(config.flush_at, config.flush_interval),
            rules: Rules {
                policy: config.retry,
                send: config.send,
                hook_mask: config.hook_mask(),
                has_ingestion: config.write_key.is_some() || batched,
                batched,
                dead_letters,
                keep: crate::delivery::watch::Keep::of(config),
            },
            spool,
            on_outcome: config.on_outcome.clone(),
            logger,
            tracks: HashMap::default(),
            flying: HashMap::default(),
            next_seq: 0,
            watermark: Watermark::default(),
            timers: Timers::default(),
            next_housekeeping: Instant::now() + HOUSEKEEPING,
            handing_over: false,
            answers: Answers::default(),
            replays: HashMap::default(),
        }
    }

    /// Reads what is unread, runs what is due, hands out what may go, until the tenant may
    /// wait: returns when it needs the thread again by itself (`None`: only when something
    /// arrives for it), or `Err` once it read its shutdown (then [`Tenant::shutdown`]).
    pub(super) fn step(&mut self) -> Result<Option<Instant>, ()> {
        let mut more = self.read_commands()?;
        loop {
            let now = Instant::now();
            if self.handing_over {
                // Timers and batches stay as they are: the successor resumes from the spool.
                if self.lanes.iter().all(|l| l.busy() == 0) {
                    return Err(());
                }
                // Their answers wake it.
                return Ok(None);
            }
            self.fire_timers(now);
            self.dispatch(now);
            let (room, filling_until) = self.room(now);
            let deadline = match (self.next_deadline(now), filling_until) {
                (Some(d), Some(f)) => Some(d.min(f)),
                (d, f) => d.or(f),
            };
            // Senders ring only for what cannot wait until `deadline` (see `inbox`); a
            // tenant with no deadline is woken by a ring or an answer.
            let published = deadline.unwrap_or_else(|| now + super::IDLE_PUBLISH);
            // A read that stopped at `READ_AHEAD` goes on whatever the room says: a command
            // sent at once (a flush, a close) behind lazy messages rang for all of them, and
            // waits behind them in the channel.
            if !more && !self.mailbox.wake.must_drain(published, room) {
                return Ok(deadline);
            }
            more = self.read_commands()?;
        }
    }

    /// Reads up to `READ_AHEAD` waiting commands: whether it stopped there (more may wait),
    /// or `Err` on shutdown.
    fn read_commands(&mut self) -> Result<bool, ()> {
        let mut taken = 0;
        let mut result = Ok(true);
        while taken < READ_AHEAD as u64 {
            let cmd = match self.mailbox.commands.try_recv() {
                Ok(cmd) => cmd,
                Err(TryRecvError::Empty) => {
                    result = Ok(false);
                    break;
                }
                Err(TryRecvError::Disconnected) => {
                    result = Err(());
                    break;
                }
            };
            taken += 1;
            if !self.command(cmd) {
                result = Err(());
                break;
            }
        }
        self.mailbox.wake.taken(taken);
        result
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
            Command::HandOver => self.handing_over = true,
        }
        true
    }

    /// Unread ingestion messages the scheduler may leave in the channel before a sender
    /// must wake it: those that fill the open batch, or while the ingestion lane holds
    /// closed batches for a young request (its fill rule), as many as that request's
    /// successor could take ([`Batcher::unread_room`]). The young request's answer wakes
    /// the scheduler anyway, and so does its turning slow (the instant returned, a deadline
    /// then): it reads everything at once, one wake instead of one per batch.
    fn room(&self, now: Instant) -> (usize, Option<Instant>) {
        match self.lanes.get(0).and_then(|l| l.fill_room(now)) {
            Some((next, turns)) => (self.batcher.unread_room(Some(next)), Some(turns)),
            None => (self.batcher.unread_room(None), None),
        }
    }

    /// When the tenant must run again by itself: its retry timers, its open batch, its
    /// lanes (a pause, a probe, requests turning slow), and housekeeping while it has
    /// anything to look after. `None` for an idle tenant: it costs the thread nothing.
    fn next_deadline(&mut self, now: Instant) -> Option<Instant> {
        let mut at: Option<Instant> = None;
        let mut sooner = |t: Instant| at = Some(at.map_or(t, |a| a.min(t)));
        if let Some(t) = self.timers.next() {
            sooner(t);
        }
        if let Some(d) = self.batcher.deadline() {
            sooner(d);
        }
        let mut looked_after = false;
        for lane in self.lanes.iter() {
            if let Some(w) = lane.wake_at(now) {
                sooner(w);
            }
            looked_after |= lane.needs_housekeeping();
        }
        if looked_after {
            if self.next_housekeeping <= now {
                self.next_housekeeping = now + HOUSEKEEPING;
            }
            sooner(self.next_housekeeping);
        }
        at
    }

    fn fire_timers(&mut self, now: Instant) {
        if self.batcher.deadline().is_some_and(|d| d <= now) {
            self.close_batch(now);
        }
        while let Some(due) = self.timers.pop_due(now) {
            match due {
                Due::Batch(batch) => self.lanes.at(0).push(Job::Batch(batch)),
                Due::HookRound(seq) => self.start_round(seq, now),
            }
        }
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + HOUSEKEEPING;
            self.housekeeping(now);
        }
    }

    /// Ends requests waiting on a down destination whose message's retry window has closed
    /// (they would otherwise wait for the destination).
    fn housekeeping(&mut self, now: Instant) {
        let policy = self.rules.policy;
        for i in 0..self.lanes.len() {
            let Some(lane) = self.lanes.get_mut(i).filter(|l| l.is_down()) else {
                continue;
            };
            let tracks = &self.tracks;
            let expired = lane.drain_waiting(|job| match job {
                Job::Batch(b) => b
                    .first
                    .is_none_or(|f| now < after(f, policy.max_retry_duration)),
                Job::Hook { seq, .. } => !tracks
                    .get(seq)
                    .and_then(Track::round)
                    .is_some_and(|r| r.expired(now, &policy)),
            });
            let down = Attempt::Retryable {
                reason: Reason::Connection,
                detail: "destination down; not sent".into(),
                retry_after: None,
            };
            for job in expired {
                self.result(i, job, down.clone(), None, now);
            }
        }
    }
}
