//! The way into the scheduler: its command channel, and when a send must wake it.
//!
//! Waking a sleeping thread costs a futex call and a context switch, several times the rest
//! of a call. An ingestion message needs the scheduler only when its batch is full or its
//! `flush_interval` is up, so those are sent without waking it ([`Inbox::send_lazy`]): the
//! scheduler publishes how many more messages it can leave unread (those that fill its open
//! batch; while the ingestion lane's fill rule holds batches for a young request, also what
//! the next request could take, since that request's answer wakes it anyway) and when it
//! wakes anyway (a timer), and a send signals only when it reaches that count or is
//! due before that wake. Everything else (webhook messages, flush, shutdown, resumed
//! messages) signals at once.
//!
//! The race (a send reading what the scheduler published before its last look at the
//! channel) is closed on both sides, all with `SeqCst`: the scheduler publishes, then looks
//! at the unread count and the earliest unread deadline ([`WakeState::must_drain`]); a sender
//! counts itself unread, then reads what was published. One of the two sees the other.
//!
//! The spool writer has a way in of the same kind ([`spool_inbox`]): a message or an op
//! needs it only at its next group commit, so a send signals only when no commit is
//! scheduled or the group is full; flush and shutdown signal at once. Ops alone schedule a
//! later commit than messages do (`spooler/`, `PROGRESS_EVERY`): an op signals when no
//! commit at all is scheduled, a message when none of its own is.
//!
//! A [`Waiter`] (`Client::when_spooled`) goes to the writer on a channel of its own, with
//! the number of messages sent before it ([`SpoolWake::sent`]): the writer answers it after
//! the commit that holds that many messages. The channel is first-in first-out, so once
//! the writer has taken that many, it has taken every message sent before the waiter. A
//! waiter signals only when no commit of messages is scheduled: the writer takes waiters
//! before each commit and answers them after it, so a scheduled commit answers it (or the
//! one right after, when more messages were unread than a group holds).

use crate::delivery::command::{Answer, Ask, Command, Request};
use crate::durable::dead::DeadOp;
use crate::durable::{Op, TenantNo};
use crate::error::Error;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Instant;

/// What the scheduler and the senders share to decide on a wake.
pub(crate) struct WakeState {
    epoch: Instant,
    /// Commands sent and not yet taken by the scheduler.
    unread: AtomicU64,
    /// The deadline of the earliest unread lazy message (ns since `epoch`); may be older
    /// (earlier) than the truth, never later, which only makes the scheduler look sooner.
    first_due: AtomicU64,
    /// Unread messages the scheduler can leave before it must look (published by it).
    room: AtomicU64,
    /// When the scheduler wakes by itself (ns since `epoch`, published by the scheduler).
    wakes_at: AtomicU64,
}

impl WakeState {
    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch)
            .as_nanos()
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// The scheduler took `n` commands off the channel.
    pub(crate) fn taken(&self, n: u64) {
        if n > 0 {
            self.unread.fetch_sub(n, SeqCst);
        }
    }

    /// Before sleeping until `wakes_at`: publishes it with `room` (unread messages it can leave), and
    /// says whether unread commands need the scheduler first (then it must not sleep).
    pub(crate) fn must_drain(&self, wakes_at: Instant, room: usize) -> bool {
        let wakes_at = self.ns(wakes_at);
        let room = room.max(1) as u64;
        self.wakes_at.store(wakes_at, SeqCst);
        self.room.store(room, SeqCst);
        let unread = self.unread.load(SeqCst);
        unread > 0 && (unread >= room || self.first_due.load(SeqCst) < wakes_at)
    }
}

/// How a client's inbox wakes the scheduler it shares with other clients (tenants): the
/// tenant's number goes on the scheduler's `woken` channel, once until the scheduler has
/// taken it and is about to read the tenant's commands ([`Mailbox::rearm`]). One pending
/// signal is enough: the scheduler reads everything unread when it wakes for a tenant.
#[derive(Clone)]
pub(crate) struct TenantWaker {
    tenant: u32,
    queued: Arc<AtomicBool>,
    woken: Sender<u32>,
}

impl TenantWaker {
    fn signal(&self) {
        if !self.queued.swap(true, SeqCst) {
            // A gone scheduler needs no signal.
            let _ = self.woken.send(self.tenant);
        }
    }
}

/// The sending side (cloned by the client and the spool writer).
#[derive(Clone)]
pub(crate) struct Inbox {
    tx: Sender<Command>,
    wakeup: TenantWaker,
    wake: Arc<WakeState>,
}

/// The scheduler's side.
pub(crate) struct Mailbox {
    pub commands: Receiver<Command>,
    pub wake: Arc<WakeState>,
    queued: Arc<AtomicBool>,
}

impl Mailbox {
    /// The scheduler took this tenant's signal and reads its commands next: a send after
    /// this signals again.
    pub(crate) fn rearm(&self) {
        self.queued.store(false, SeqCst);
    }
}

/// A new inbox of tenant `tenant` and the scheduler's mailbox for it; its signals go on
/// `woken`.
pub(crate) fn inbox(tenant: u32, woken: Sender<u32>) -> (Inbox, Mailbox) {
    let (tx, commands) = crossbeam_channel::unbounded();
    let queued = Arc::new(AtomicBool::new(false));
    let wake = Arc::new(WakeState {
        epoch: Instant::now(),
        unread: AtomicU64::new(0),
        first_due: AtomicU64::new(u64::MAX),
        room: AtomicU64::new(1),
        wakes_at: AtomicU64::new(0),
    });
    (
        Inbox {
            tx,
            wakeup: TenantWaker {
                tenant,
                queued: queued.clone(),
                woken,
            },
            wake: wake.clone(),
        },
        Mailbox {
            commands,
            wake,
            queued,
        },
    )
}

impl Inbox {
    /// Sends `cmd` and wakes the scheduler.
    pub(crate) fn send_now(&self, cmd: Command) {
        if self.wake.unread.fetch_add(1, SeqCst) == 0 {
            // Due now: a scheduler about to sleep reads it rather than rely on the signal.
            self.wake.first_due.store(0, SeqCst);
        }
        // The scheduler outlives every open client, so this cannot fail while not closed.
        let _ = self.tx.send(cmd);
        self.signal();
    }

    /// Sends a message the scheduler needs only once its batch is full or by `due`.
    pub(crate) fn send_lazy(&self, cmd: Command, due: Instant) {
        // Counted before it is sent, so the count never goes below what the channel holds.
        let before = self.wake.unread.fetch_add(1, SeqCst);
        let due = self.wake.ns(due);
        if before == 0 {
            self.wake.first_due.store(due, SeqCst);
        }
        let _ = self.tx.send(cmd);
        if before + 1 >= self.wake.room.load(SeqCst) || due < self.wake.wakes_at.load(SeqCst) {
            self.signal();
        }
    }

    fn signal(&self) {
        self.wakeup.signal();
    }
}

/// What the spool writer and its senders share to decide on a wake.
pub(crate) struct SpoolWake {
    /// Messages sent and not yet taken.
    unread: AtomicU64,
    /// A commit of messages is scheduled: a message sent now goes with it.
    committing: AtomicBool,
    /// A commit of any kind is scheduled (messages, or progress alone, which is due later):
    /// an op sent now goes with it.
    ops_committing: AtomicBool,
    /// Unread messages that fill the open group.
    room: AtomicU64,
}

impl SpoolWake {
    /// The writer took `n` messages off the channel.
    pub(crate) fn taken(&self, n: u64) {
        if n > 0 {
            self.unread.fetch_sub(n, SeqCst);
        }
    }

    /// Before sleeping: publishes whether a commit of messages (`committing`) or of progress
    /// alone (`ops_committing`) is scheduled and the group's room, and says whether what is
    /// unread needs the writer first (then it must not sleep). `ops` and `waiters`: whether
    /// the op channel, and the waiter channel, hold anything.
    pub(crate) fn must_drain(
        &self,
        committing: bool,
        ops_committing: bool,
        room: usize,
        ops: impl Fn() -> bool,
        waiters: impl Fn() -> bool,
    ) -> bool {
        let room = room.max(1) as u64;
        let ops_committing = ops_committing || committing;
        self.committing.store(committing, SeqCst);
        self.ops_committing.store(ops_committing, SeqCst);
        self.room.store(room, SeqCst);
        let unread = self.unread.load(SeqCst);
        unread >= room || (!committing && (unread > 0 || waiters())) || (!ops_committing && ops())
    }

    fn ring_for_message(&self, unread: u64) -> bool {
        unread >= self.room.load(SeqCst) || !self.committing.load(SeqCst)
    }
}

/// The spool writer's way in, shared by every tenant of its engine: commands and waiters
/// tagged with the tenant's number (one FIFO channel each, so a tenant's come in its order).
#[derive(Clone)]
pub(crate) struct SpoolInbox {
    tx: Sender<(TenantNo, Command)>,
    waiters: Sender<(TenantNo, Waiter)>,
    asks: Sender<Request>,
    wakeup: Sender<()>,
    wake: Arc<SpoolWake>,
}

/// One tenant's way into the spool writer: its messages counted (a waiter's target).
pub(crate) struct TenantSpoolInbox {
    inbox: SpoolInbox,
    tenant: TenantNo,
    /// This tenant's messages ever sent (counted before each send).
    sent: AtomicU64,
}

/// A `when_spooled` callback, answered once the writer has committed `target` messages of
/// its tenant. Dropped unanswered (the writer gone), it is called with `false`.
pub(crate) struct Waiter {
    pub target: u64,
    callback: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl Waiter {
    pub(crate) fn new(target: u64, callback: Box<dyn FnOnce(bool) + Send>) -> Waiter {
        Waiter {
            target,
            callback: Some(callback),
        }
    }

    /// Calls the callback with `committed`.
    pub(crate) fn answer(mut self, committed: bool) {
        if let Some(f) = self.callback.take() {
            f(committed);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(f) = self.callback.take() {
            f(false);
        }
    }
}

/// What the schedulers tell the spool writer: progress and outcomes, and a tenant's end.
pub(crate) enum SpoolNote {
    Op(Op),
    /// A dead letter written, or a replayed one delivered: committed with the ops.
    Dead(DeadOp),
    /// The tenant's scheduler part has ended: every op of it was sent before this.
    Closed(TenantNo),
}

/// A tenant's scheduler part's way to tell the spool writer of progress and outcomes.
/// Kept apart from [`SpoolInbox`]: ops need no order with the messages.
pub(crate) struct SpoolOps {
    tx: Sender<SpoolNote>,
    wakeup: Sender<()>,
    wake: Arc<SpoolWake>,
    /// The tenant's number in the spool.
    pub(crate) tenant: TenantNo,
}

/// The spool writer's side.
pub(crate) struct SpoolMailbox {
    pub commands: Receiver<(TenantNo, Command)>,
    pub ops: Receiver<SpoolNote>,
    pub waiters: Receiver<(TenantNo, Waiter)>,
    /// Clients' requests about their dead letters: answered at once.
    pub asks: Receiver<Request>,
    pub wakeup: Receiver<()>,
    pub wake: Arc<SpoolWake>,
    /// Where new tenants' ways of reporting come from ([`SpoolMailbox::ops_for`]).
    ops_tx: Sender<SpoolNote>,
    wakeup_tx: Sender<()>,
}

impl SpoolMailbox {
    /// The way tenant `tenant`'s scheduler part reports to this writer.
    pub(crate) fn ops_for(&self, tenant: TenantNo) -> SpoolOps {
        SpoolOps {
            tx: self.ops_tx.clone(),
            wakeup: self.wakeup_tx.clone(),
            wake: self.wake.clone(),
            tenant,
        }
    }
}

/// The spool writer's mailbox, and the way in that its engine's tenants share.
pub(crate) fn spool_inbox() -> (SpoolInbox, SpoolMailbox) {
    let (tx, commands) = crossbeam_channel::unbounded();
    let (ops_tx, ops) = crossbeam_channel::unbounded();
    let (waiters_tx, waiters) = crossbeam_channel::unbounded();
    let (asks_tx, asks) = crossbeam_channel::unbounded();
    let (wakeup, wakeup_rx) = crossbeam_channel::bounded(1);
    let wake = Arc::new(SpoolWake {
        unread: AtomicU64::new(0),
        committing: AtomicBool::new(false),
        ops_committing: AtomicBool::new(false),
        room: AtomicU64::new(1),
    });
    (
        SpoolInbox {
            tx,
            waiters: waiters_tx,
            asks: asks_tx,
            wakeup: wakeup.clone(),
            wake: wake.clone(),
        },
        SpoolMailbox {
            commands,
            ops,
            waiters,
            asks,
            wakeup: wakeup_rx,
            wake,
            ops_tx,
            wakeup_tx: wakeup,
        },
    )
}

/// Signals a wake-up; one pending signal is enough, and a gone receiver needs none.
fn signal(wakeup: &Sender<()>) {
    match wakeup.try_send(()) {
        Ok(()) | Err(TrySendError::Full(())) | Err(TrySendError::Disconnected(())) => {}
    }
}

impl SpoolInbox {
    /// Tenant `tenant`'s way in.
    pub(crate) fn for_tenant(&self, tenant: TenantNo) -> TenantSpoolInbox {
        TenantSpoolInbox {
            inbox: self.clone(),
            tenant,
            sent: AtomicU64::new(0),
        }
    }

    /// Wakes the writer (a tenant came or went).
    pub(crate) fn signal(&self) {
        signal(&self.wakeup);
    }
}

impl TenantSpoolInbox {
    /// An accepted message: signals only when no commit is scheduled or the group is full.
    pub(crate) fn message(&self, cmd: Command) {
        // Counted before it is sent, so the count never goes below what the channel holds,
        // and a waiter that reads `sent` after this call returned waits for this message.
        self.sent.fetch_add(1, SeqCst);
        let wake = &self.inbox.wake;
        let unread = wake.unread.fetch_add(1, SeqCst) + 1;
        // The writer outlives every open client, so this cannot fail while not closed.
        let _ = self.inbox.tx.send((self.tenant, cmd));
        if wake.ring_for_message(unread) {
            signal(&self.inbox.wakeup);
        }
    }

    /// A flush or shutdown: signals at once.
    pub(crate) fn send_now(&self, cmd: Command) {
        let _ = self.inbox.tx.send((self.tenant, cmd));
        signal(&self.inbox.wakeup);
    }

    /// Calls `callback` after the commit that holds every message of this tenant sent before
    /// this call (`false` if the writer is gone or the commit failed). Rings only when no
    /// commit of messages is scheduled: a scheduled one holds (or is followed at once by one
    /// that holds) every message sent before, and the writer takes waiters before it
    /// commits.
    pub(crate) fn when_spooled(&self, callback: Box<dyn FnOnce(bool) + Send>) {
        let waiter = Waiter::new(self.sent.load(SeqCst), callback);
        // A gone writer hands the waiter back; dropping it answers false.
        let _ = self.inbox.waiters.send((self.tenant, waiter));
        if !self.inbox.wake.committing.load(SeqCst) {
            signal(&self.inbox.wakeup);
        }
    }
}

impl TenantSpoolInbox {
    /// Asks the writer about this tenant's dead letters and waits (at most `wait`) for its
    /// answer: it answers between commits.
    pub(crate) fn ask(&self, ask: Ask, wait: std::time::Duration) -> Result<Answer, Error> {
        self.inbox.ask(self.tenant, ask, wait)
    }

    /// The tenant's number with its writer.
    pub(crate) fn tenant(&self) -> TenantNo {
        self.tenant
    }
}

impl SpoolInbox {
    /// Asks the writer about tenant `tenant`'s dead letters (or, [`Ask::Counts`], all of
    /// its tenants') and waits (at most `wait`) for its answer: it answers between commits.
    pub(crate) fn ask(
        &self,
        tenant: TenantNo,
        ask: Ask,
        wait: std::time::Duration,
    ) -> Result<Answer, Error> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let request = Request { tenant, ask, reply };
        let gone = || Error::Closed;
        self.asks.send(request).map_err(|_| gone())?;
        signal(&self.wakeup);
        match answer.recv_timeout(wait) {
            Ok(answer) => answer,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(Error::Spool {
                path: String::new(),
                reason: format!("the spool writer did not answer within {wait:?}"),
            }),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }
}

impl SpoolOps {
    /// The same way in, for tenant `tenant`.
    pub(crate) fn for_tenant(&self, tenant: TenantNo) -> SpoolOps {
        SpoolOps {
            tx: self.tx.clone(),
            wakeup: self.wakeup.clone(),
            wake: self.wake.clone(),
            tenant,
        }
    }

    /// Progress or an outcome: signals only when no commit is scheduled.
    pub(crate) fn send(&self, op: Op) {
        let _ = self.tx.send(SpoolNote::Op(op));
        if !self.wake.ops_committing.load(SeqCst) {
            signal(&self.wakeup);
        }
    }

    /// A dead-letter op: as an op.
    pub(crate) fn send_dead(&self, op: DeadOp) {
        let _ = self.tx.send(SpoolNote::Dead(op));
        if !self.wake.ops_committing.load(SeqCst) {
            signal(&self.wakeup);
        }
    }

    /// The tenant's scheduler part has ended: after every op it sent.
    pub(crate) fn closed(&self) {
        let _ = self.tx.send(SpoolNote::Closed(self.tenant));
        signal(&self.wakeup);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_lazy_send_rings_only_when_the_batch_fills_or_falls_due() {
        let (rung_tx, woken) = crossbeam_channel::unbounded();
        let (inbox, mailbox) = inbox(7, rung_tx);
        // What the scheduler does with a signal: takes it, rearms, then reads.
        let rang = || match woken.try_recv() {
            Ok(t) => {
                assert_eq!(t, 7, "the tenant's own number");
                mailbox.rearm();
                true
            }
            Err(_) => false,
        };
        let now = Instant::now();
        let later = now + Duration::from_secs(10);
        let sleeps_until = now + Duration::from_secs(1);
        assert!(!mailbox.wake.must_drain(sleeps_until, 3));
        inbox.send_lazy(Command::Shutdown, later);
        inbox.send_lazy(Command::Shutdown, later);
        assert!(!rang(), "2 of 3: no signal");
        // The scheduler, looking before it sleeps, leaves them too.
        assert!(!mailbox.wake.must_drain(sleeps_until, 3));
        inbox.send_lazy(Command::Shutdown, later);
        assert!(rang(), "the batch is full");
        assert!(mailbox.wake.must_drain(sleeps_until, 3));
        while mailbox.commands.try_recv().is_ok() {
            mailbox.wake.taken(1);
        }
        assert!(!mailbox.wake.must_drain(sleeps_until, 3));
        inbox.send_lazy(Command::Shutdown, now + Duration::from_millis(10));
        assert!(rang(), "due before the scheduler wakes");
        assert!(
            mailbox.wake.must_drain(sleeps_until, 3),
            "and it would not sleep past it"
        );
        inbox.send_now(Command::Shutdown);
        assert!(rang(), "commands signal at once");
    }

    #[test]
    fn the_spool_writer_is_rung_only_when_no_commit_is_scheduled_or_its_group_is_full() {
        let (inbox, mailbox) = spool_inbox();
        let (inbox, ops) = (inbox.for_tenant(0), mailbox.ops_for(0));
        let woken = || mailbox.wakeup.try_recv().is_ok();
        let op = || Op::Remove {
            tenant: 0,
            id: "m".into(),
            bytes: 0,
        };
        // Idle, nothing scheduled: the first message signals.
        assert!(!mailbox.wake.must_drain(false, false, 3, || false, || false));
        inbox.message(Command::Shutdown);
        assert!(woken(), "no commit scheduled: signal");
        assert!(
            mailbox.wake.must_drain(false, false, 3, || false, || false),
            "and it must not sleep"
        );
        // A commit is scheduled: messages wait for it until the group is full.
        assert!(!mailbox.wake.must_drain(true, false, 3, || false, || false));
        inbox.message(Command::Shutdown);
        assert!(!woken(), "2 of 3 while a commit is scheduled: no signal");
        assert!(
            !mailbox.wake.must_drain(true, false, 3, || true, || false),
            "ops wait for the commit too"
        );
        inbox.message(Command::Shutdown);
        assert!(woken(), "the group is full");
        assert!(mailbox.wake.must_drain(true, false, 3, || false, || false));
        while mailbox.commands.try_recv().is_ok() {
            mailbox.wake.taken(1);
        }
        // Ops signal only when no commit is scheduled.
        assert!(!mailbox.wake.must_drain(true, false, 3, || false, || false));
        ops.send(op());
        assert!(!woken(), "a commit is scheduled: the op goes with it");
        assert!(mailbox
            .wake
            .must_drain(false, false, 3, || !mailbox.ops.is_empty(), || false));
        ops.send(op());
        assert!(woken(), "nothing scheduled: signal");
        while mailbox.ops.try_recv().is_ok() {}
        // Progress alone is scheduled (due later): ops wait for it, a message signals.
        assert!(!mailbox.wake.must_drain(false, true, 3, || false, || false));
        ops.send(op());
        assert!(
            !woken(),
            "a progress commit is scheduled: the op goes with it"
        );
        assert!(
            !mailbox.wake.must_drain(false, true, 3, || true, || false),
            "unread ops wait for it"
        );
        inbox.message(Command::Shutdown);
        assert!(woken(), "a message does not wait for a progress commit");
        assert!(mailbox.wake.must_drain(false, true, 3, || true, || false));
        // Flush and shutdown signal at once.
        assert!(!mailbox.wake.must_drain(true, false, 3, || false, || false));
        inbox.send_now(Command::Flush(None));
        assert!(woken());
    }

    #[test]
    fn a_waiter_rings_only_when_no_commit_of_messages_is_scheduled() {
        let (inbox, mailbox) = spool_inbox();
        let inbox = inbox.for_tenant(0);
        let woken = || mailbox.wakeup.try_recv().is_ok();
        let waiters = || !mailbox.waiters.is_empty();
        let take = || while mailbox.waiters.try_recv().is_ok() {};
        // Idle: a waiter may be answerable now (its messages committed), so it signals, and
        // the writer looking before it sleeps sees it.
        assert!(!mailbox.wake.must_drain(false, false, 3, || false, waiters));
        inbox.when_spooled(Box::new(|_| {}));
        assert!(woken(), "no commit scheduled: signal");
        assert!(mailbox.wake.must_drain(false, false, 3, || false, waiters));
        take();
        // A commit of messages is scheduled: the waiter is taken and answered with it.
        assert!(!mailbox.wake.must_drain(true, false, 3, || false, waiters));
        inbox.when_spooled(Box::new(|_| {}));
        assert!(!woken(), "a commit is scheduled: no signal");
        assert!(
            !mailbox.wake.must_drain(true, false, 3, || false, waiters),
            "it waits for the commit"
        );
        take();
        // Progress alone is scheduled (later): a waiter does not wait for it.
        assert!(!mailbox.wake.must_drain(false, true, 3, || false, waiters));
        inbox.when_spooled(Box::new(|_| {}));
        assert!(woken(), "only progress scheduled: signal");
        assert!(mailbox.wake.must_drain(false, true, 3, || false, waiters));
    }
}

#[cfg(test)]
mod wakeup_tests {
    use super::*;

    #[test]
    fn a_tenant_rings_once_until_the_scheduler_takes_its_ring() {
        let (rung_tx, woken) = crossbeam_channel::unbounded();
        let (a, mailbox_a) = inbox(1, rung_tx.clone());
        let (b, _mailbox_b) = inbox(2, rung_tx);
        for _ in 0..3 {
            a.send_now(Command::Shutdown);
        }
        b.send_now(Command::Shutdown);
        assert_eq!(
            woken.try_iter().collect::<Vec<_>>(),
            [1, 2],
            "one signal each"
        );
        a.send_now(Command::Shutdown);
        assert!(woken.try_recv().is_err(), "not taken yet: no second signal");
        mailbox_a.rearm();
        a.send_now(Command::Shutdown);
        assert_eq!(
            woken.try_recv(),
            Ok(1),
            "after the scheduler took it: again"
        );
    }
}
