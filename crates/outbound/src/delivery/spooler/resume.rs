//! The read-back path: what dead processes and closed clients left is adopted, and parked or
//! resumed messages are read back from the store tenant by tenant, within their room.

use super::{Spooler, TenantSpool, RESUME_PAGE};
use crate::delivery::command::{Command, Resumed};
use crate::delivery::replay;
use crate::durable::TenantNo;
use crate::log::Level;
use crate::model::timestamp::instant_of;
use foldhash::HashMap;
use std::sync::atomic::Ordering::*;

/// The most a record's bodies can take: an event's ingestion and webhook bodies, each up to
/// a message's limit.
const LARGEST_RECORD: u64 = 2 * crate::wire::ingestion::MAX_MESSAGE_BYTES as u64;

impl Spooler {
    /// Takes over the files of dead processes and closed clients.
    pub(super) fn adopt(&mut self) {
        let result = self.store.adopt();
        self.failing_now(result.is_err());
        match result {
            Ok(adopted) => {
                for (path, why) in &adopted.warnings {
                    self.logger
                        .log(Level::Warn, || format!("spool {}: {why}", path.display()));
                }
                if adopted.records > 0 {
                    self.logger.log(Level::Warn, || {
                        format!(
                            "spool: took over {} message(s) from {} file(s)",
                            adopted.records, adopted.files
                        )
                    });
                }
                for no in adopted.tenants {
                    if let Some(t) = self.tenants.get_mut(&no) {
                        t.resume_due = true;
                        self.due_tenants.push(no);
                    }
                }
                self.replays.look_again(adopted.files > 0);
            }
            Err(e) => self.logger.log(Level::Warn, || e.to_string()),
        }
        if let Err(e) = self.replays.expire(&mut *self.store) {
            self.logger.log(Level::Warn, || e.to_string());
        }
    }

    /// Reads back what tenants may take now.
    pub(super) fn resume_all(&mut self) {
        let due_now = |tenants: &HashMap<TenantNo, Box<TenantSpool>>, no| {
            tenants.get(&no).is_some_and(|t| t.resume_due && !t.closing)
        };
        let mut due = std::mem::take(&mut self.due_tenants);
        due.sort_unstable();
        due.dedup();
        for no in due {
            if due_now(&self.tenants, no) {
                self.resume(no);
            }
            // Still due (no room yet, or more to read): looked at again at the next turn.
            if due_now(&self.tenants, no) {
                self.due_tenants.push(no);
            }
        }
        let tenants = &self.tenants;
        let tenant = |no| {
            let t = tenants.get(&no).filter(|t| !t.closing)?;
            Some(replay::Tenant {
                shared: &t.shared,
                scheduler: &t.scheduler,
                capacity: t.capacity,
                hook_mask: t.hook_mask,
            })
        };
        if let Err(e) = self.replays.feed(&mut *self.store, tenant) {
            self.logger.log(Level::Warn, || e.to_string());
        }
    }

    /// Passes on the next page of tenant `no`'s resumable messages, as many as it has room
    /// for (its share of the window; and for adopted ones, its queue).
    pub(super) fn resume(&mut self, no: TenantNo) {
        let (share, share_bytes) = (self.share(), self.share_bytes());
        let Some(t) = self.tenants.get_mut(&no) else {
            return;
        };
        // A record's size is known only once it is read: as many as fit at the mean size
        // of the parked ones (those come back next), else of those in memory, else at the
        // largest a message can be (records taken over after a crash); always one when none
        // is in memory.
        let mean = (t.parked_bytes.checked_div(t.parked))
            .or_else(|| t.in_memory_bytes.checked_div(t.in_memory))
            .unwrap_or(LARGEST_RECORD);
        let fit = share_bytes.saturating_sub(t.in_memory_bytes) / mean.max(1);
        let window_room = (share.min(t.capacity).saturating_sub(t.in_memory))
            .min(fit.max(u64::from(t.in_memory == 0)));
        let queue_room = t.capacity.saturating_sub(t.shared.pending.load(Acquire));
        // Parked messages are in the queue already; adopted ones need a place in it.
        let room = window_room.min(RESUME_PAGE).min(match t.parked {
            0 => queue_room,
            _ => u64::MAX,
        });
        if room == 0 {
            return;
        }
        let (records, next) = match self.store.resumable(no, t.cursor.as_ref(), room as usize) {
            Ok(page) => page,
            Err(e) => {
                t.resume_due = false;
                self.logger.log(Level::Warn, || e.to_string());
                return;
            }
        };
        t.cursor = next;
        t.resume_due = records.len() as u64 == room || t.parked > 0;
        let any = !records.is_empty();
        for r in records {
            if r.adopted {
                t.shared.pending.fetch_add(1, AcqRel);
                t.shared.counters.resumed.fetch_add(1, Relaxed);
            } else {
                t.parked = t.parked.saturating_sub(1);
                t.parked_bytes = t.parked_bytes.saturating_sub(r.body_bytes());
                t.unparked_ever += 1;
            }
            if t.parked == 0 {
                t.parked_bytes = 0;
            }
            if t.in_memory == 0 {
                self.active += 1;
            }
            t.in_memory += 1;
            t.in_memory_bytes += r.body_bytes();
            let mask = if r.hooks_key == t.hooks_key {
                r.hook_mask & t.hook_mask
            } else {
                t.hook_mask
            };
            t.scheduler.send_now(Command::Resume(Resumed {
                id: r.id,
                ingest: r.ingest,
                hook: r.hook,
                hook_mask: mask,
                first: r.first_ms.map(instant_of),
                replay: None,
            }));
        }
        if any {
            // Flushes that waited for these go on after them.
            let unparked = t.unparked_ever;
            let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut t.flushes)
                .into_iter()
                .partition(|(target, _)| *target <= unparked);
            t.flushes = waiting;
            for (_, flush) in ready {
                t.scheduler.send_now(flush);
            }
            // Nothing more of them is coming now: their last batch leaves now, not after
            // flush_interval.
            t.scheduler.send_now(Command::Flush(None));
            self.publish_bytes(no);
        }
    }
}
