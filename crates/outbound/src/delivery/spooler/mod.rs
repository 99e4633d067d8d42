//! The spool writer thread (only with a spool): one per engine, for every tenant on its
//! spool; it stands between the calls and the scheduler. Every accepted message is written
//! to the store (`durable::Store`) in a group commit before it is passed on, so it is on
//! disk before its first attempt; one commit per interval holds every tenant's messages.
//! The scheduler's progress and outcomes come back here and leave the store in the next
//! commit (the next group of messages, or at most `PROGRESS_EVERY` later when none comes).
//! At start and every few seconds it takes over what earlier clients and dead processes
//! left and passes it on as resumed messages, tenant by tenant, no more at once than the
//! tenant has room for. The caller's thread never touches the disk. `Client::when_spooled`
//! waiters are answered right after the commit that holds every message of their tenant
//! sent before them.
//!
//! **Memory holds a window of a backlog, the store the rest.** The messages the scheduler
//! holds, all tenants together, stay within a window ([`WINDOW`] messages and
//! [`WINDOW_BYTES`] of their bodies by default): each tenant with messages in memory gets an
//! equal share of both (at least [`MIN_WINDOW`] and [`MIN_WINDOW_BYTES`]), never more
//! messages than its `max_queue_size`, and always room for one message, whatever its size.
//! A message accepted past its tenant's share is committed
//! and *parked* (`Op::Park`): its bytes leave memory, and it is read back, in order, as the
//! tenant's messages end (`Store::resumable`). A burst of a million messages to one source
//! costs the window's memory, not the million's; what bounds a tenant's backlog is its
//! `spool_max_bytes` (the calls count only what is not committed yet against its queue).
//!
//! Commits are pipelined: a group's commit is started (`Store::submit`) and the group before
//! it is settled (`Store::settle`) only then, so with Redis one transaction is on the wire
//! while the last one's reply comes back; at most one group is unsettled, and it is settled
//! at once when the writer has nothing else to do, before a flush or shutdown is passed on,
//! and before an adoption pass. A group's messages go on to delivery, and its waiters are
//! answered, only when it is settled: after its commit, or after its commit failed (then
//! logged: they go on all the same). When a commit fails after the next one was sent, what
//! it carried goes with the commit after that: the waiters of the one sent in between are
//! answered `false`, as not everything before them is on disk.

use crate::delivery::command::{Answer, Ask, Command, Item};
use crate::delivery::inbox::{Inbox, SpoolInbox, SpoolMailbox, SpoolNote, SpoolOps, Waiter};
use crate::delivery::replay::Replays;
use crate::delivery::shared::{Shared, SpoolTotal};
use crate::durable::dead::{DeadLimits, DeadOp};
use crate::durable::{Cursor, Op, Store, TenantNo, Ticket};
use crate::error::Error;
use crate::log::{Level, Logger};
use crossbeam_channel::{select, Receiver, Sender, TryRecvError};
use foldhash::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod commit;
mod resume;

/// How often the directory is checked for files of dead processes.
const ADOPT_EVERY: Duration = Duration::from_secs(5);
/// Messages that make a commit group full before its interval ends: in a burst, the first
/// messages go on to delivery while later ones are still being written.
const GROUP_MAX: usize = 2048;
/// How long progress and outcomes wait for a commit when no message is waiting (they go
/// with the next group of messages when one comes sooner). Nothing is lost when a crash
/// loses them: a removal not on disk costs a duplicate delivery after a restart, a first
/// attempt a longer retry window. Committed every `spool_commit_interval`, a backlog's
/// deliveries cost a commit (an fsync and a rewritten page) per few messages: most of the
/// spool writer's time while a burst was delivered (BENCHMARKS.md).
const PROGRESS_EVERY: Duration = Duration::from_millis(50);
/// Messages the schedulers hold at once, all tenants of the writer together (about 80 MiB
/// of queued bodies at ~800 bytes each), by default; the rest of a backlog is parked in the
/// store.
pub(crate) const WINDOW: u64 = 100_000;
/// The least a tenant may hold in memory, however many tenants share the window.
pub(crate) const MIN_WINDOW: u64 = 256;
/// Bytes of message bodies the schedulers hold at once, all tenants of the writer together,
/// by default: what [`WINDOW`] holds of events of ~800 bytes, and the bound when they are
/// larger (a message's two bodies are up to 32 KiB each).
pub(crate) const WINDOW_BYTES: u64 = 80 << 20;
/// The least a tenant may hold in memory in bytes, however many tenants share the window
/// ([`MIN_WINDOW`] messages of about 1 KiB).
pub(crate) const MIN_WINDOW_BYTES: u64 = 256 << 10;
/// Resumed records read at once for one tenant.
const RESUME_PAGE: u64 = 1024;

/// The sooner of two deadlines, either of which may be unset.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    a.into_iter().chain(b).min()
}

/// The tenant a dead-letter op is about.
fn dead_tenant(op: &DeadOp) -> TenantNo {
    match op {
        DeadOp::Put(r) => r.tenant,
        DeadOp::Delivered { tenant, .. } => *tenant,
    }
}

/// A stable hash of the webhook URL list: a spooled URL mask only means something under the
/// same list.
pub(crate) fn hooks_key(urls: &[String]) -> u64 {
    // FNV-1a: stable across processes and versions (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for url in urls {
        for b in url.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// What the writer keeps of one tenant.
pub(crate) struct TenantSpool {
    /// The name its records are kept under.
    pub name: String,
    pub shared: Arc<Shared>,
    /// Its part of the scheduler.
    pub scheduler: Inbox,
    /// `max_queue_size`: the most it holds in memory (the rest of its backlog is parked), and
    /// adopted records are taken no faster than the queue has room.
    pub capacity: u64,
    pub hook_mask: u8,
    pub hooks_key: u64,
    /// Keeps dead letters, within these limits.
    pub dead: Option<DeadLimits>,
    waiters: Vec<Waiter>,
    /// Messages taken off the channel, ever.
    taken: u64,
    /// Messages taken and then committed, ever.
    committed: u64,
    /// Whether the last commit of its messages reached the disk.
    last_ok: bool,
    /// Its bytes in the store as of its last commit (its part of the writer's total).
    bytes: u64,
    /// The bytes its calls reserved for the messages taken into the open group, and for
    /// those sent to the store since its bytes were last published: given back then, as
    /// the store counts them itself from their write on.
    taken_bytes: u64,
    sent_bytes: u64,
    /// Messages passed on to its scheduler part whose removal has not come back, and their
    /// bytes (`Item::spool_size`).
    in_memory: u64,
    in_memory_bytes: u64,
    /// Its messages parked in the store, not read back yet, and their bytes.
    parked: u64,
    parked_bytes: u64,
    /// Messages it ever parked, and ever read back: parked messages come back in order.
    parked_ever: u64,
    unparked_ever: u64,
    /// Flushes that wait for the messages parked before them to be read back (a flush
    /// passes the scheduler after every message accepted before it).
    flushes: Vec<(u64, Command)>,
    /// Where reading back goes on from, and whether there may be more to read.
    cursor: Option<Cursor>,
    resume_due: bool,
    /// Its shutdown was passed on; its end comes as `SpoolNote::Closed`.
    closing: bool,
}

impl TenantSpool {
    /// What of `reserved` (bytes its calls took) is in the writer's total: all of it on an
    /// engine's spool, none on a private one (its calls take nothing there).
    fn in_total(&self, reserved: u64) -> u64 {
        match self.shared.spool_total.is_some() {
            true => reserved,
            false => 0,
        }
    }

    pub(crate) fn new(
        name: String,
        shared: Arc<Shared>,
        scheduler: Inbox,
        capacity: u64,
        hook_mask: u8,
        hooks_key: u64,
        dead: Option<DeadLimits>,
    ) -> TenantSpool {
        TenantSpool {
            name,
            shared,
            scheduler,
            capacity,
            hook_mask,
            hooks_key,
            dead,
            waiters: Vec::new(),
            taken: 0,
            committed: 0,
            last_ok: true,
            bytes: 0,
            taken_bytes: 0,
            sent_bytes: 0,
            in_memory: 0,
            in_memory_bytes: 0,
            parked: 0,
            parked_bytes: 0,
            parked_ever: 0,
            unparked_ever: 0,
            flushes: Vec::new(),
            cursor: None,
            resume_due: true,
            closing: false,
        }
    }
}

/// What an engine tells its writer besides messages.
pub(crate) enum SpoolControl {
    /// A tenant, under its number; from then on its messages come.
    Add(TenantNo, Box<TenantSpool>),
    /// The engine is gone: commit, close the store, stop.
    Stop,
}

/// The engine's hold on its writer: the way in its tenants share, and its control.
pub(crate) struct SpoolHandle {
    pub inbox: SpoolInbox,
    control: Sender<SpoolControl>,
    /// How tenants' scheduler parts report (given out per tenant by [`SpoolHandle::add`]).
    ops: SpoolOps,
    /// Dead letters the store refused and holds in memory now (set by the writer).
    pub unwritten: Arc<AtomicUsize>,
    /// The spool's bytes, all tenants together ([`SpoolTotal`]).
    pub total: Arc<SpoolTotal>,
}

impl SpoolHandle {
    /// Registers tenant `no` with the writer; returns how its scheduler part reports.
    pub(crate) fn add(&self, no: TenantNo, tenant: TenantSpool) -> SpoolOps {
        let _ = self.control.send(SpoolControl::Add(no, Box::new(tenant)));
        self.inbox.signal();
        self.ops.for_tenant(no)
    }

    /// Tells the writer to stop once its tenants are gone.
    pub(crate) fn stop(&self) {
        let _ = self.control.send(SpoolControl::Stop);
        self.inbox.signal();
    }
}

pub(crate) struct Spooler {
    store: Box<dyn Store>,
    mailbox: SpoolMailbox,
    control: Receiver<SpoolControl>,
    /// Boxed: a map's spare slots then cost a pointer each.
    tenants: HashMap<TenantNo, Box<TenantSpool>>,
    /// The tenants whose `resume_due` may be set (each one that is, and is not closing, is
    /// here; some here may not be): what [`Spooler::resume_all`] looks at, so a turn of the
    /// writer costs the tenants with something to read back, not every tenant (a pass over
    /// 100,000 of them at each turn was most of the relay's time while sources were made).
    due_tenants: Vec<TenantNo>,
    commit_every: Duration,
    logger: Logger,
    /// A private engine's writer stops with its one client.
    stop_when_empty: bool,
    stopping: bool,
    /// The group whose commit was started and not yet settled (at most one).
    in_flight: Option<InFlight>,
    /// Messages the schedulers may hold, all tenants together ([`WINDOW`] by default), and
    /// bytes of their bodies ([`WINDOW_BYTES`]).
    window: u64,
    window_bytes: u64,
    /// Tenants with messages in memory (their shares of the window).
    active: u64,
    /// Whether the last commit failed (told to every tenant when it changes).
    failing: bool,
    /// Whether the store holds dead letters it could not write (logged when it changes).
    dead_refused: bool,
    /// How many it holds, for the engine to read without asking ([`SpoolHandle::unwritten`]).
    unwritten: Arc<AtomicUsize>,
    /// Every tenant's bytes in the store and what its calls took for messages not in it yet.
    total: Arc<SpoolTotal>,
    /// Tenants whose end came and whose ops are to be committed before they go.
    ending: Vec<TenantNo>,
    /// Dead letters: clients' requests, replays under way (`replay.rs`).
    replays: Replays,
}

/// A group whose commit was started ([`Store::submit`]) and whose messages wait for its
/// outcome.
pub(crate) struct InFlight {
    /// `None`: nothing to write (messages with nowhere to go wait all the same, for order).
    ticket: Option<Ticket>,
    items: Vec<(TenantNo, Item)>,
    /// Each tenant's `taken` when it was started, for the tenants with messages taken
    /// since the group before: every message up to there is in it or before it.
    taken: Vec<(TenantNo, u64)>,
    /// Tenants whose spool bytes changed in it.
    touched: Vec<TenantNo>,
    /// The group before it failed after it was sent: what that one carried goes with the
    /// next commit, not this one, so this one's waiters are answered `false` all the same.
    after_failure: bool,
}

/// What one open group collects until its commit.
#[derive(Default)]
struct Group {
    writes: Vec<Op>,
    /// Dead letters written and replays settled, in the same commit as `writes`.
    dead: Vec<DeadOp>,
    waiting: Vec<(TenantNo, Item)>,
    /// Tenants that took messages (their `taken` is noted at the commit), and tenants
    /// whose spool bytes the writes change.
    took: Vec<TenantNo>,
    touched: Vec<TenantNo>,
}

/// Adds `up` and takes `down` from `count` at once, never below 0.
fn adjust(count: &AtomicU64, up: u64, down: u64) {
    if up == down {
        return;
    }
    let _ = count.fetch_update(Relaxed, Relaxed, |n| Some((n + up).saturating_sub(down)));
}

impl Spooler {
    /// Tenant `no`'s bytes in the store now, for its calls (`spool_max_bytes`) and in the
    /// engine's total: the store's change since the last time, less what its calls had
    /// reserved for the messages sent to the store since (their bytes are in the change).
    /// What calls reserved for messages not in the store yet stays counted.
    pub(super) fn publish_bytes(&mut self, no: TenantNo) {
        let Some(t) = self.tenants.get_mut(&no) else {
            return;
        };
        let bytes = self.store.pending(no).1;
        let was = std::mem::replace(&mut t.bytes, bytes);
        let sent = std::mem::take(&mut t.sent_bytes);
        let (up, down) = (bytes.saturating_sub(was), was.saturating_sub(bytes) + sent);
        adjust(&t.shared.spool_bytes, up, down);
        let total_down = was.saturating_sub(bytes) + t.in_total(sent);
        adjust(&self.total.bytes, up, total_down);
    }

    /// Moves what calls reserved for the messages of a group from taken to sent, as the
    /// group goes to the store.
    pub(super) fn note_sent(&mut self, touched: &[TenantNo]) {
        for no in touched {
            if let Some(t) = self.tenants.get_mut(no) {
                t.sent_bytes += std::mem::take(&mut t.taken_bytes);
            }
        }
    }

    /// A writer over `store`; `stop_when_empty` for a private engine's (it stops with its
    /// one client).
    pub(crate) fn new(
        store: Box<dyn Store>,
        commit_every: Duration,
        window: (u64, u64),
        logger: Logger,
        stop_when_empty: bool,
        max_bytes: u64,
    ) -> (Spooler, SpoolHandle) {
        let (inbox, mailbox) = crate::delivery::inbox::spool_inbox();
        let (control_tx, control) = crossbeam_channel::unbounded();
        let ops = mailbox.ops_for(0);
        let unwritten = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(SpoolTotal {
            bytes: AtomicU64::new(0),
            limit: max_bytes,
        });
        (
            Spooler {
                store,
                mailbox,
                control,
                tenants: HashMap::default(),
                due_tenants: Vec::new(),
                commit_every,
                logger,
                stop_when_empty,
                stopping: false,
                in_flight: None,
                window: window.0,
                window_bytes: window.1,
                active: 0,
                failing: false,
                dead_refused: false,
                unwritten: unwritten.clone(),
                total: total.clone(),
                ending: Vec::new(),
                replays: Replays::default(),
            },
            SpoolHandle {
                inbox,
                control: control_tx,
                ops,
                unwritten,
                total,
            },
        )
    }

    pub(crate) fn run(mut self) {
        let mut group = Group::default();
        // When the open group is due: `commit_at` once it holds a message, `progress_at`
        // while it holds progress alone (later, see `PROGRESS_EVERY`).
        let mut commit_at: Option<Instant> = None;
        let mut progress_at: Option<Instant> = None;
        // When the last commit began (or the thread started): the next one is due one
        // interval after it, not one interval after it ended (a commit as long as the
        // interval, i.e. one slow fsync, would otherwise double the wait of every
        // `when_spooled`), and at once when the spool has been idle for an interval or more.
        let mut last_commit = Instant::now();
        let mut next_adopt = Instant::now();
        self.logger.log(Level::Debug, || {
            format!("spool: writing to {}", self.store.location())
        });
        loop {
            self.take_control();
            let now = Instant::now();
            if now >= next_adopt {
                next_adopt = now + ADOPT_EVERY;
                self.settle();
                self.adopt();
            }
            self.resume_all();
            let wake = earliest(commit_at, progress_at).map_or(next_adopt, |t| t.min(next_adopt));
            let wait = wake.saturating_duration_since(Instant::now());
            // Sleep unless what is unread needs us now: senders signal only when no commit
            // is scheduled or the group is full (`inbox.rs`), not once per message.
            let room = GROUP_MAX.saturating_sub(group.waiting.len());
            let mailbox = &self.mailbox;
            let scheduled = (commit_at.is_some(), progress_at.is_some());
            if !mailbox.wake.must_drain(
                scheduled.0,
                scheduled.1,
                room,
                || !mailbox.ops.is_empty(),
                || !mailbox.waiters.is_empty(),
            ) && self.ending.is_empty()
                && !self.stopping
                && self.control.is_empty()
                && self.mailbox.asks.is_empty()
            {
                if self.in_flight.is_some() {
                    // Nothing else to do: the group in flight is settled now rather than
                    // with the next one, so no message waits longer than without pipelining.
                    self.settle();
                    continue;
                }
                select! {
                    recv(self.mailbox.wakeup) -> _ => {},
                    default(wait) => {},
                }
            }
            self.take_control();
            let now = Instant::now();
            let mut taken = 0;
            while group.waiting.len() < GROUP_MAX {
                match self.mailbox.commands.try_recv() {
                    Ok((no, Command::Message(item))) => {
                        taken += 1;
                        self.take_message(no, item, &mut group);
                        commit_at.get_or_insert(self.due(last_commit, now));
                    }
                    Ok((no, other)) => {
                        // A flush or shutdown goes after every message before it.
                        last_commit = Instant::now();
                        self.commit(&mut group);
                        self.settle();
                        (commit_at, progress_at) = (None, None);
                        self.forward(no, other);
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.stopping = true;
                        break;
                    }
                }
            }
            self.mailbox.wake.taken(taken);
            // Taken after the messages: a waiter's messages were sent before it.
            self.take_waiters();
            if self.take_notes(&mut group) {
                progress_at.get_or_insert((last_commit + PROGRESS_EVERY).max(now));
            }
            self.answer_asks();
            let now = Instant::now();
            let must = !self.ending.is_empty() || self.stopping;
            if must
                || group.waiting.len() >= GROUP_MAX
                || group.writes.len() >= GROUP_MAX
                || earliest(commit_at, progress_at).is_some_and(|t| now >= t)
            {
                last_commit = now;
                self.commit(&mut group);
                (commit_at, progress_at) = (None, None);
            }
            if !self.ending.is_empty() {
                self.settle();
                for no in std::mem::take(&mut self.ending) {
                    self.end_tenant(no);
                }
            }
            if self.stopping && self.tenants.is_empty() {
                return self.stop();
            }
        }
    }

    /// Takes the `when_spooled` waiters sent, each answered once its messages are on disk.
    fn take_waiters(&mut self) {
        let waiters: Vec<(TenantNo, Waiter)> = self.mailbox.waiters.try_iter().collect();
        for (no, waiter) in waiters {
            match self.tenants.get_mut(&no) {
                Some(t) => t.waiters.push(waiter),
                None => waiter.answer(false),
            }
            self.answer_waiters(no);
        }
    }

    /// Takes the notes sent (progress, dead letters, closed tenants) into `group`; whether
    /// any is progress for the next commit to write.
    fn take_notes(&mut self, group: &mut Group) -> bool {
        let mut progress = false;
        while let Ok(note) = self.mailbox.ops.try_recv() {
            match note {
                SpoolNote::Op(op) => {
                    self.note_op(&op, group);
                    group.writes.push(op);
                    progress = true;
                }
                SpoolNote::Dead(op) => {
                    self.replays.noted(dead_tenant(&op), &op);
                    group.dead.push(op);
                    progress = true;
                }
                SpoolNote::Closed(no) => self.ending.push(no),
            }
        }
        progress
    }

    /// Answers the questions asked of the store (dead letters, replays, counts).
    fn answer_asks(&mut self) {
        while let Ok(request) = self.mailbox.asks.try_recv() {
            if let Ask::Counts(nos) = &request.ask {
                let _ = request.reply.send(self.dead_counts(nos.as_deref()));
                continue;
            }
            let tenant = self.tenants.get(&request.tenant);
            let keeps = tenant.is_some_and(|t| t.dead.is_some());
            let name = tenant.map_or("", |t| t.name.as_str());
            self.replays.answer(&mut *self.store, keeps, name, request);
        }
    }

    /// Registrations and the engine's stop, taken before any message of the tenant.
    fn take_control(&mut self) {
        while let Ok(c) = self.control.try_recv() {
            match c {
                SpoolControl::Add(no, tenant) => {
                    self.store.register(no, &tenant.name);
                    if let Some(limits) = tenant.dead {
                        let kept = match self.store.dead_letters() {
                            Some(dead) => dead.configure(no, &tenant.name, limits),
                            None => Ok(()),
                        };
                        match kept {
                            Ok(()) => self.replays.start(no),
                            Err(e) => self.logger.log(Level::Warn, || e.to_string()),
                        }
                    }
                    tenant.shared.spool_failing.store(self.failing, Relaxed);
                    if tenant.resume_due {
                        self.due_tenants.push(no);
                    }
                    self.tenants.insert(no, tenant);
                }
                SpoolControl::Stop => self.stopping = true,
            }
        }
    }

    /// Every tenant that keeps dead letters, by name, with its counts ([`Ask::Counts`]), or
    /// those of `nos` (looked up, not searched for): what the store keeps counted, at once.
    fn dead_counts(&mut self, nos: Option<&[TenantNo]>) -> Result<Answer, Error> {
        let keeps = |no: TenantNo, t: &TenantSpool| t.dead.is_some().then(|| (no, t.name.clone()));
        let keeping: Vec<(TenantNo, String)> = match nos {
            None => (self.tenants.iter())
                .filter_map(|(no, t)| keeps(*no, t))
                .collect(),
            Some(nos) => (nos.iter())
                .filter_map(|no| keeps(*no, self.tenants.get(no)?))
                .collect(),
        };
        let Some(dead) = self.store.dead_letters() else {
            return Ok(Answer::Counts(Vec::new()));
        };
        let nos: Vec<TenantNo> = keeping.iter().map(|(no, _)| *no).collect();
        let stats = dead.stats_of(&nos)?;
        let names = keeping.into_iter().map(|(_, name)| name);
        Ok(Answer::Counts(names.zip(stats).collect()))
    }

    /// The engine is gone: what is left is committed, and the store closed.
    fn stop(mut self) {
        self.settle();
        let (mut writes, mut dead) = (Vec::new(), Vec::new());
        while let Ok(note) = self.mailbox.ops.try_recv() {
            match note {
                SpoolNote::Op(op) => writes.push(op),
                SpoolNote::Dead(op) => dead.push(op),
                SpoolNote::Closed(_) => {}
            }
        }
        let ticket = self.store.submit_with(&writes, &dead);
        if let Err(e) = self.store.settle(ticket) {
            self.logger.log(Level::Warn, || e.to_string());
        }
        if let Err(e) = self.store.close() {
            self.logger.log(Level::Warn, || e.to_string());
        }
    }
}
