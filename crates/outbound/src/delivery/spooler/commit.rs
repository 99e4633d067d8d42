//! The write path: messages taken into a group (or parked past their tenant's share of the
//! window), the group committed and settled, its messages passed on and its waiters answered;
//! flushes and shutdowns passed on after the commit.

use super::{Group, InFlight, Spooler, MIN_WINDOW, MIN_WINDOW_BYTES};
use crate::delivery::command::{Command, Item};
use crate::durable::{Op, Record, TenantNo, Ticket};
use crate::log::Level;
use crate::model::timestamp::wall_ms;
use crate::wire::ingestion::Element;
use std::sync::atomic::Ordering::*;
use std::time::Instant;

impl Spooler {
    /// One accepted message of tenant `no`: written to the group, and passed on after the
    /// commit; or parked when the tenant holds its share of the window already.
    pub(super) fn take_message(&mut self, no: TenantNo, mut item: Item, group: &mut Group) {
        let parks = self.store.parks();
        let (share, share_bytes) = (self.share(), self.share_bytes());
        let Some(t) = self.tenants.get_mut(&no) else {
            // Registered before its first message is sent: only a bug gets here. Delivered
            // from memory all the same.
            return;
        };
        let size = item.spool_size();
        t.taken += 1;
        t.taken_bytes += size;
        if group.took.last() != Some(&no) {
            group.took.push(no);
        }
        if item.ingest.is_none() && item.hook.is_none() {
            // Nowhere to go: the scheduler ends it at once; it waits for the commit all
            // the same (order is kept).
            group.waiting.push((no, item));
            return;
        }
        let record = Record {
            tenant: no,
            // Shared with the scheduler's record of it: the spool's ops need it as an `Arc`.
            id: item.share_id(),
            accepted_ms: wall_ms(item.accepted),
            first_ms: None,
            ingest: item.ingest.as_ref().map(Element::to_body),
            hook: item.hook.clone(),
            hook_mask: t.hook_mask,
            hooks_key: t.hooks_key,
            adopted: false,
        };
        group.touched.push(no);
        // A tenant always has room for one message, however large.
        let full_bytes = t.in_memory > 0 && t.in_memory_bytes + size > share_bytes;
        if parks && (t.in_memory >= share.min(t.capacity) || full_bytes || t.parked > 0) {
            // Behind what is parked already, in its order: read back as messages end.
            t.parked += 1;
            t.parked_bytes += size;
            t.parked_ever += 1;
            group.writes.push(Op::Park(record));
            return;
        }
        if t.in_memory == 0 {
            self.active += 1;
        }
        t.in_memory += 1;
        t.in_memory_bytes += size;
        group.writes.push(Op::Put(record));
        group.waiting.push((no, item));
    }

    /// A tenant's share of the window: equal parts among the tenants with messages in
    /// memory (counting one more: the asker).
    pub(super) fn share(&self) -> u64 {
        (self.window / (self.active + 1)).max(MIN_WINDOW.min(self.window))
    }

    /// A tenant's share of the window's bytes, as [`Spooler::share`] divides its messages.
    pub(super) fn share_bytes(&self) -> u64 {
        (self.window_bytes / (self.active + 1)).max(MIN_WINDOW_BYTES.min(self.window_bytes))
    }

    /// What an op means for its tenant: a removal frees a place in its window.
    pub(super) fn note_op(&mut self, op: &Op, group: &mut Group) {
        let no = op.tenant();
        if group.touched.last() != Some(&no) {
            group.touched.push(no);
        }
        if let Op::Remove { bytes, .. } = op {
            if let Some(t) = self.tenants.get_mut(&no) {
                if t.in_memory > 0 {
                    t.in_memory -= 1;
                    t.in_memory_bytes = t.in_memory_bytes.saturating_sub(u64::from(*bytes));
                    if t.in_memory == 0 {
                        self.active = self.active.saturating_sub(1);
                        t.in_memory_bytes = 0;
                    }
                }
                if t.parked > 0 {
                    t.resume_due = true;
                    self.due_tenants.push(no);
                }
            }
        }
    }

    /// When a group that starts `now` is committed: one interval after the last commit
    /// began, and not before `now`.
    pub(super) fn due(&self, last_commit: Instant, now: Instant) -> Instant {
        (last_commit + self.commit_every).max(now)
    }

    /// Starts the commit of what was written since the last commit (the group's messages
    /// wait for it), then settles the group before it: with a store that pipelines (Redis),
    /// this group's transaction is on the wire while the last one's reply comes back.
    pub(super) fn commit(&mut self, group: &mut Group) {
        let any = !group.writes.is_empty() || !group.dead.is_empty();
        let ticket = any.then(|| self.store.submit_with(&group.writes, &group.dead));
        if any {
            self.dead_refused_now();
        }
        group.writes.clear();
        group.dead.clear();
        // Known at once (SQLite, nothing to write, or nothing sent): nothing to overlap.
        let known = ticket.as_ref().is_none_or(Ticket::is_known);
        let taken = (group.took.drain(..))
            .filter_map(|no| Some((no, self.tenants.get(&no)?.taken)))
            .collect();
        let mut touched = std::mem::take(&mut group.touched);
        touched.sort_unstable();
        touched.dedup();
        self.note_sent(&touched);
        let mut next = InFlight {
            ticket,
            items: std::mem::take(&mut group.waiting),
            taken,
            touched,
            after_failure: false,
        };
        next.after_failure = !self.settle();
        self.in_flight = Some(next);
        if known {
            self.settle();
        }
    }

    /// Waits for the outcome of the group in flight, then passes its messages on and answers
    /// the waiters it completes. When the disk refuses, they go on all the same (delivery
    /// matters more than durability), logged. Whether it reached the disk (true with none).
    pub(super) fn settle(&mut self) -> bool {
        let Some(group) = self.in_flight.take() else {
            return true;
        };
        let mut ok = true;
        if let Some(ticket) = group.ticket {
            let result = self.store.settle(ticket);
            self.failing_now(result.is_err());
            if let Err(e) = result {
                ok = false;
                let n = group.items.len();
                self.logger.log(Level::Warn, || {
                    format!("{e}; {n} message(s) go on without being on disk")
                });
            }
            for no in &group.touched {
                self.publish_bytes(*no);
            }
        }
        let good = ok && !group.after_failure;
        for (no, taken) in group.taken {
            if let Some(t) = self.tenants.get_mut(&no) {
                t.shared.settled(taken.saturating_sub(t.committed));
                (t.committed, t.last_ok) = (taken, good);
            }
            self.answer_waiters(no);
        }
        for (no, item) in group.items {
            if let Some(t) = self.tenants.get(&no) {
                t.scheduler.send_now(Command::Message(item));
            }
        }
        ok
    }

    /// Logs when the store starts or stops holding dead letters it could not write: an
    /// operator learns why failed events stay pending, and that nothing is lost meanwhile.
    pub(super) fn dead_refused_now(&mut self) {
        let now = self.store.dead_unwritten();
        (self.unwritten).store(now.as_ref().map_or(0, |(n, _)| *n), Relaxed);
        if now.is_some() == self.dead_refused {
            return;
        }
        self.dead_refused = now.is_some();
        match now {
            Some((n, why)) => self.logger.log(Level::Warn, || {
                format!(
                    "{why}; {n} dead-letter op(s) kept in memory and tried again at each \
                     commit; their events stay pending in the spool until they are written"
                )
            }),
            // A warning too: it ends one (and the library has no level between).
            None => self.logger.log(Level::Warn, || {
                "dead letters are written again; the events held for them leave the spool".into()
            }),
        }
    }

    /// Tells every tenant when the spool starts or stops failing.
    pub(super) fn failing_now(&mut self, failing: bool) {
        if failing != self.failing {
            self.failing = failing;
            for t in self.tenants.values() {
                t.shared.spool_failing.store(failing, Relaxed);
            }
        }
    }

    /// Answers tenant `no`'s waiters whose messages are all committed, with whether the
    /// last commit reached the disk.
    pub(super) fn answer_waiters(&mut self, no: TenantNo) {
        let Some(t) = self.tenants.get_mut(&no) else {
            return;
        };
        if t.waiters.iter().all(|w| w.target > t.committed) {
            return;
        }
        let committed = t.committed;
        let (done, rest) = std::mem::take(&mut t.waiters)
            .into_iter()
            .partition(|w| w.target <= committed);
        t.waiters = rest;
        for waiter in done {
            waiter.answer(t.last_ok);
        }
    }

    /// Passes a flush or shutdown on to the tenant's scheduler part (after the commit).
    pub(super) fn forward(&mut self, no: TenantNo, cmd: Command) {
        if let Command::Shutdown | Command::HandOver = cmd {
            if let Some(t) = self.tenants.get_mut(&no) {
                t.closing = true;
                // Every message it sent was taken and committed: its waiters are answered.
                t.shared.settled(t.taken.saturating_sub(t.committed));
                t.committed = t.taken;
            }
            self.answer_waiters(no);
            if let Some(t) = self.tenants.get_mut(&no) {
                // A waiter for more than was ever taken cannot be answered (dropped: false).
                t.waiters.clear();
            }
        }
        if matches!(cmd, Command::Flush(_))
            && self
                .tenants
                .get(&no)
                .is_some_and(|t| t.resume_due && !t.closing)
        {
            // What this tenant may take over now goes before the flush (a client's first
            // flush waits for what the last one left, when it fits in the window).
            self.resume(no);
        }
        if let Some(t) = self.tenants.get_mut(&no) {
            if matches!(cmd, Command::Flush(_)) && t.unparked_ever < t.parked_ever {
                // After the messages parked before it, once they are read back.
                t.flushes.push((t.parked_ever, cmd));
                return;
            }
            t.scheduler.send_now(cmd);
        }
    }

    /// Tenant `no`'s scheduler part has ended and its last ops are committed: its parked
    /// messages stay in the store (spooled, for the next client of its name), and it goes.
    pub(super) fn end_tenant(&mut self, no: TenantNo) {
        let Some(t) = self.tenants.remove(&no) else {
            return;
        };
        if t.in_memory > 0 {
            self.active = self.active.saturating_sub(1);
        }
        // Its records stay for the next tenant of its name, counted again when it comes;
        // what its calls reserved goes with it.
        let reserved = t.in_total(t.taken_bytes + t.sent_bytes);
        self.total.bytes.fetch_sub(t.bytes + reserved, Relaxed);
        for _ in 0..t.parked {
            t.shared.leave_spooled(true);
        }
        if let Err(e) = self.store.release(no) {
            self.logger.log(Level::Warn, || e.to_string());
        }
        self.replays.forget(no);
        t.shared.spool_done.store(true, SeqCst);
        t.shared.notify();
        if self.stop_when_empty && self.tenants.is_empty() {
            self.stopping = true;
        }
    }
}
