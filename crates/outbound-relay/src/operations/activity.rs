//! Each source's last hour, minute by minute: how many of its messages were delivered and
//! how many failed (the core's final outcomes, as `/metrics` counts them: a retry is not a
//! failure, a webhook's failing attempts are in its health). The console draws it; the
//! admin API serves it (`GET /admin/sources/{name}/activity`).
//!
//! Fed by the outcome hook (`metrics::on_outcome`), so it costs an outcome one
//! compare-and-swap on one word, no lock and no allocation. A source's ring is 60 words of
//! 8 bytes (480 bytes), made at the source's first outcome (10,000 idle sources have none)
//! and kept while a client of its name runs (a settings change keeps its hour); the index of
//! rings holds weak references, pruned as it grows, so a removed source's ring goes with
//! its last client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

/// Minutes kept: one hour.
pub const MINUTES: usize = 60;

// One minute in one word: its minute (since the epoch, mod 2^16) in the top 16 bits, then
// 24 bits of delivered and 24 of failed (16,777,215 a minute a source at most: saturates).
const COUNT_BITS: u32 = 24;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const STAMP_SHIFT: u32 = 2 * COUNT_BITS;

/// One source's ring of minutes.
pub struct Activity {
    minutes: [AtomicU64; MINUTES],
}

/// What happened to a message, as the ring counts it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ended {
    Delivered,
    Failed,
}

/// A source's last hour, oldest minute first; the last is the minute under way.
#[derive(Debug, PartialEq)]
pub struct Series {
    /// The start of the oldest minute, in minutes since the Unix epoch.
    pub first_minute: u64,
    pub delivered: Vec<u64>,
    pub failed: Vec<u64>,
}

fn stamp(minute: u64) -> u64 {
    minute & 0xFFFF
}

fn unpack(word: u64) -> (u64, u64, u64) {
    (
        word >> STAMP_SHIFT,
        (word >> COUNT_BITS) & COUNT_MAX,
        word & COUNT_MAX,
    )
}

fn pack(stamp: u64, delivered: u64, failed: u64) -> u64 {
    (stamp << STAMP_SHIFT) | (delivered.min(COUNT_MAX) << COUNT_BITS) | failed.min(COUNT_MAX)
}

/// Minutes since the Unix epoch, now.
pub fn now_minute() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

impl Activity {
    fn new() -> Activity {
        Activity {
            minutes: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one message that ended in `minute`.
    pub fn record_at(&self, ended: Ended, minute: u64) {
        let slot = &self.minutes[(minute % MINUTES as u64) as usize];
        let mut word = slot.load(Ordering::Relaxed);
        loop {
            let (s, d, f) = unpack(word);
            // A slot last written an hour (or more) ago starts over.
            let (d, f) = if s == stamp(minute) { (d, f) } else { (0, 0) };
            let next = match ended {
                Ended::Delivered => pack(stamp(minute), d + 1, f),
                Ended::Failed => pack(stamp(minute), d, f + 1),
            };
            match slot.compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }

    pub fn record(&self, ended: Ended) {
        self.record_at(ended, now_minute());
    }

    /// The hour up to `minute` (included).
    pub fn series_at(&self, minute: u64) -> Series {
        let first = minute.saturating_sub(MINUTES as u64 - 1);
        let (mut delivered, mut failed) =
            (Vec::with_capacity(MINUTES), Vec::with_capacity(MINUTES));
        for m in first..=minute {
            let (s, d, f) =
                unpack(self.minutes[(m % MINUTES as u64) as usize].load(Ordering::Relaxed));
            let this = s == stamp(m);
            delivered.push(if this { d } else { 0 });
            failed.push(if this { f } else { 0 });
        }
        Series {
            first_minute: first,
            delivered,
            failed,
        }
    }
}

#[derive(Default)]
struct Index {
    rings: HashMap<String, Weak<Activity>>,
    /// The index's size after the last pruning: it is pruned again at twice that.
    pruned_at: usize,
}

/// Every source's ring, by tenant: the relay's own (no process global), shared by the
/// outcome hooks that fill them and the admin API that reads them.
#[derive(Clone, Default)]
pub struct Activities(Arc<Mutex<Index>>);

impl Activities {
    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The ring of `tenant` if one is alive (a client of it holds it).
    pub fn existing(&self, tenant: &str) -> Option<Arc<Activity>> {
        self.index().rings.get(tenant).and_then(Weak::upgrade)
    }

    /// The ring of `tenant`, made if none is alive (a client's outcome hook holds it).
    pub fn of(&self, tenant: &str) -> Arc<Activity> {
        let mut index = self.index();
        if let Some(ring) = index.rings.get(tenant).and_then(Weak::upgrade) {
            return ring;
        }
        if index.rings.len() >= 2 * index.pruned_at.max(64) {
            index.rings.retain(|_, w| w.strong_count() > 0);
            index.pruned_at = index.rings.len();
        }
        let ring = Arc::new(Activity::new());
        index
            .rings
            .insert(tenant.to_string(), Arc::downgrade(&ring));
        ring
    }

    /// The last hour of `tenant` (every minute 0 when nothing of it ended, or it has no ring).
    pub fn series(&self, tenant: &str) -> Series {
        let ring = self.existing(tenant);
        let minute = now_minute();
        match ring {
            Some(r) => r.series_at(minute),
            None => Activity::new().series_at(minute),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_counts_what_ended_in_it_and_the_hour_slides() {
        let a = Activity::new();
        let t = 29_000_000; // a minute of 2025
        a.record_at(Ended::Delivered, t);
        a.record_at(Ended::Delivered, t);
        a.record_at(Ended::Failed, t);
        a.record_at(Ended::Failed, t + 1);
        let s = a.series_at(t + 1);
        assert_eq!(s.first_minute, t + 1 - 59);
        assert_eq!(s.delivered.len(), MINUTES);
        assert_eq!((s.delivered[58], s.failed[58]), (2, 1));
        assert_eq!((s.delivered[59], s.failed[59]), (0, 1));
        // An hour on, minute t's slot is reused and starts from zero.
        a.record_at(Ended::Delivered, t + 60);
        let s = a.series_at(t + 60);
        assert_eq!((s.delivered[59], s.failed[59]), (1, 0));
        assert_eq!(
            s.failed[0], 1,
            "minute t+1 is still in the hour, its oldest"
        );
        assert_eq!(s.delivered.iter().sum::<u64>(), 1);
        // Two hours on, nothing of it shows.
        let s = a.series_at(t + 200);
        assert_eq!(s.delivered.iter().chain(&s.failed).sum::<u64>(), 0);
    }

    #[test]
    fn counts_saturate_instead_of_spilling_into_each_other() {
        let a = Activity::new();
        let t = 29_000_000;
        a.minutes[(t % 60) as usize].store(pack(stamp(t), COUNT_MAX, 5), Ordering::Relaxed);
        a.record_at(Ended::Delivered, t);
        let s = a.series_at(t);
        assert_eq!((s.delivered[59], s.failed[59]), (COUNT_MAX, 5));
    }

    #[test]
    fn a_ring_lives_while_a_hook_holds_it() {
        let all = Activities::default();
        let ring = all.of("activity-test-a");
        ring.record(Ended::Failed);
        assert_eq!(all.series("activity-test-a").failed.iter().sum::<u64>(), 1);
        assert!(Arc::ptr_eq(&ring, &all.of("activity-test-a")));
        drop(ring);
        assert_eq!(all.series("activity-test-a").failed.iter().sum::<u64>(), 0);
    }

    #[test]
    fn concurrent_outcomes_are_all_counted() {
        let a = Arc::new(Activity::new());
        let t = 29_000_000;
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        a.record_at(Ended::Delivered, t);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(a.series_at(t).delivered[59], 40_000);
    }
}
