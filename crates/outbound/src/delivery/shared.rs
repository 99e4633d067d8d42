//! What the client handle and the scheduler share: the counters, the count of messages
//! without an outcome, the waits of `flush`/`close`, and the gates that keep callbacks from
//! running after `close`.

use crate::model::outcome::{Counters, OutcomeKind};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The bytes an engine's spool holds for all its tenants, as of each tenant's last commit,
/// plus what their calls took for messages not counted there yet; and the most it may
/// (`EngineConfig::spool_max_bytes`; `u64::MAX`: no bound but each tenant's).
pub(crate) struct SpoolTotal {
    pub bytes: AtomicU64,
    pub limit: u64,
}

#[derive(Default)]
pub(crate) struct Shared {
    pub counters: Counters,
    /// Accepted messages without an outcome yet: the queue's size for `max_queue_size`
    /// without a spool (with one, those parked in the spool count here too, but not there).
    pub pending: AtomicU64,
    /// With a spool: accepted messages the spool writer has not committed yet, the part of
    /// a backlog that is in memory on its way to the disk: `max_queue_size` bounds these,
    /// and `spool_max_bytes` what waits in the spool.
    pub unsettled: AtomicU64,
    /// Every message the scheduler numbered below this has its outcome (flush barriers).
    pub low_water: AtomicU64,
    /// Outcomes reported so far (close watches it to tell a slow drain from a stuck callback).
    pub reported: AtomicU64,
    /// Losses (failed or dropped messages) that a returned flush or close has answered for:
    /// the next one answers for those after them, wherever they fell (before its call too).
    pub answered_losses: AtomicU64,
    /// Bytes in the spool as of the last commit, plus what calls took for messages not
    /// counted there yet: `spool_max_bytes`.
    pub spool_bytes: AtomicU64,
    /// A tenant's: its engine's spool, all tenants together.
    pub spool_total: Option<std::sync::Arc<SpoolTotal>>,
    /// The spool's last commit or takeover pass failed (its engine unreachable, its disk
    /// full): messages accepted since may be in memory only.
    pub spool_failing: AtomicBool,
    /// Enqueue calls under way, so `close` can wait them out before its last drain. On a
    /// cache line of its own: every call writes it twice, and the scheduler writes the
    /// fields around it for every message it ends.
    pub calls: CachePadded<AtomicUsize>,
    pub closed: AtomicBool,
    /// The scheduler has ended this client's part (every outcome counted and reported).
    pub stopped: AtomicBool,
    /// With a spool: the writer has committed this client's last progress and outcomes
    /// after its end.
    pub spool_done: AtomicBool,
    /// Outcome callbacks run holding `gate`, and only while this is false; `close` sets it
    /// under the gate, so no callback runs after `close` returns (C `userdata` may be freed).
    pub callbacks_off: AtomicBool,
    pub gate: Mutex<()>,
    /// Set by `close` when it stopped waiting for a callback that blocks: it has counted the
    /// rest as dropped itself, so the scheduler counts nothing more.
    abandoned: AtomicBool,
    tally: Mutex<()>,
    /// Its webhook URLs' attempts and health.
    pub watch: crate::delivery::watch::Watch,
    /// The waits of `flush` and `close`.
    idle: Signal,
    /// Calls waiting for room in the queue or the spool (`queue_full_wait`).
    room: Signal,
}

/// Threads waiting for something other threads change, and their wake. A waiter counts
/// itself before it looks; a change is made before `notify` reads the count (both SeqCst),
/// so one of the two sees the other and no wake is missed. With no one waiting, `notify`
/// is one atomic load.
#[derive(Default)]
struct Signal {
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Signal {
    /// Waits until `done` holds (true) or `deadline` passes (false), looking again at each
    /// `notify` and at least every `recheck`.
    fn wait_until(&self, deadline: Instant, recheck: Duration, done: impl Fn() -> bool) -> bool {
        self.waiters.fetch_add(1, SeqCst);
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let held = loop {
            if done() {
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            guard = self
                .cv
                .wait_timeout(guard, (deadline - now).min(recheck))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(guard);
        self.waiters.fetch_sub(1, SeqCst);
        held
    }

    /// Wakes every waiter, if any.
    fn notify(&self) {
        if self.waiters.load(SeqCst) > 0 {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_all();
        }
    }
}

/// A call waiting for room looks again at least this often: spool bytes come back at a
/// commit, which wakes no one.
const ROOM_RECHECK: Duration = Duration::from_millis(50);

impl Shared {
    /// The shared state of a client whose webhooks `watch` records.
    pub(crate) fn watching(watch: crate::delivery::watch::Watch) -> Shared {
        Shared {
            watch,
            ..Shared::default()
        }
    }

    /// Waits until `done` holds or `deadline` passes; true when it holds. `done` is
    /// re-checked whenever the scheduler calls [`notify`](Self::notify).
    pub(crate) fn wait_until(&self, deadline: Instant, done: impl Fn(&Shared) -> bool) -> bool {
        self.idle.wait_until(deadline, Duration::MAX, || done(self))
    }

    /// A call's wait for room: until `fits` holds (true) or `deadline` passes (false),
    /// looking again when `release` or `wake_room` wakes it and every [`ROOM_RECHECK`].
    pub(crate) fn wait_for_room(&self, deadline: Instant, fits: impl Fn() -> bool) -> bool {
        self.room.wait_until(deadline, ROOM_RECHECK, fits)
    }

    /// Wakes every call waiting for room (a slot was freed, or the client closed).
    pub(crate) fn wake_room(&self) {
        self.room.notify();
    }

    /// `n` messages of this client reached the spool writer's commit (on disk, or going on
    /// without it): their places among the unsettled are free.
    pub(crate) fn settled(&self, n: u64) {
        if n > 0 {
            let _ = (self.unsettled).fetch_update(SeqCst, SeqCst, |u| Some(u.saturating_sub(n)));
            self.wake_room();
        }
    }

    /// Wakes the waits of `flush`/`close`, if any.
    pub(crate) fn notify(&self) {
        self.idle.notify();
    }

    /// Counts one outcome; false when `close` has already counted it (see `abandon`).
    /// `loss` marks outcomes that make `flush` report false.
    pub(crate) fn tally(&self, kind: OutcomeKind, loss: bool) -> bool {
        let _t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        if self.abandoned.load(Relaxed) {
            return false;
        }
        self.counters.count(kind);
        if loss {
            self.counters.losses.fetch_add(1, Relaxed);
        }
        true
    }

    /// A message left for the next client on the spool (at close): counted as spooled, no
    /// callback. `spooled` false: it had nowhere to go and simply ends as dropped.
    pub(crate) fn leave_spooled(&self, spooled: bool) {
        {
            let _t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
            if self.abandoned.load(Relaxed) {
                return;
            }
            if spooled {
                self.counters.spooled.fetch_add(1, Relaxed);
            } else {
                self.counters.count(OutcomeKind::Dropped);
            }
        }
        self.release();
    }

    /// The message counted by `tally` is finished (its callback has returned).
    pub(crate) fn release(&self) {
        let _ = self
            .pending
            .fetch_update(SeqCst, SeqCst, |p| p.checked_sub(1));
        self.reported.fetch_add(1, Relaxed);
        self.wake_room();
    }

    /// For `close` when a callback blocks: counts every accepted message without an outcome
    /// as dropped, so the counters add up when `close` returns. Returns how many.
    pub(crate) fn abandon(&self) -> u64 {
        let _t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        self.abandoned.store(true, SeqCst);
        let c = &self.counters;
        let started = c.accepted.load(Relaxed) + c.resumed.load(Relaxed);
        let ended = c.delivered.load(Relaxed)
            + c.failed.load(Relaxed)
            + c.dropped
                .load(Relaxed)
                .saturating_sub(c.queue_full.load(Relaxed))
            + c.spooled.load(Relaxed);
        let left = started.saturating_sub(ended);
        c.dropped.fetch_add(left, Relaxed);
        c.losses.fetch_add(left, Relaxed);
        self.pending.store(0, SeqCst);
        self.unsettled.store(0, SeqCst);
        c.in_flight.store(0, SeqCst);
        self.notify();
        left
    }
}
