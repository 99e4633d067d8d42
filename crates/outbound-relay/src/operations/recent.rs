//! A source's recent events, captured while someone looks at them (the subscription
//! editor's "Recent events", `GET /admin/sources/{name}/recent-events`): a live capture, as
//! Segment's source debugger, not a store.
//!
//! A look starts or extends the source's *lease* ([`LEASE`]). While it runs, the tracking
//! handler copies each event the source accepts into the source's ring (the last [`RING`]);
//! an event over [`MAX_EVENT_BYTES`] is noted without its body. A lapsed lease is ended
//! within a second (`sweep`, on the relay's one-second tick) and its ring freed.
//!
//! A source nobody looks at costs one flag on its slot (`Slot::capturing`), read with one
//! relaxed load per request: no lock, no allocation, no lookup. Copies are made off the
//! lock and never delay or refuse an event. At most [`MAX_CAPTURING`] sources capture at
//! once (a look at one more ends the lease looked at least recently), so the whole is at
//! most `MAX_CAPTURING × RING × MAX_EVENT_BYTES`. What is captured is this process's own: in
//! a fleet each relay captures the events it receives.

use crate::sources::slot::Slot;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

/// Events kept per source: the last ones accepted.
pub const RING: usize = 20;

/// An event's text over this is noted (its size, type and name), not kept.
pub const MAX_EVENT_BYTES: usize = 32 * 1024;

/// Sources capturing at once, relay-wide.
pub const MAX_CAPTURING: usize = 32;

/// How long a look keeps the capture on.
pub const LEASE: Duration = Duration::from_secs(600);

/// An accepted event, as captured.
#[derive(Debug)]
pub struct Captured {
    /// When its request came.
    pub received_at: outbound::OffsetDateTime,
    /// Its `type`.
    pub kind: &'static str,
    /// A track's event name, a page's or screen's name.
    pub name: Option<String>,
    /// Its text's length in bytes.
    pub size: usize,
    /// Its JSON text; `None` when over [`MAX_EVENT_BYTES`].
    pub text: Option<Box<str>>,
}

/// What a look finds.
pub struct Look {
    /// When the capture ends unless looked at again.
    pub until: SystemTime,
    /// The events captured, newest first.
    pub events: Vec<Arc<Captured>>,
}

struct Lease {
    slot: Weak<Slot>,
    until: Instant,
    until_wall: SystemTime,
    ring: VecDeque<Arc<Captured>>,
}

impl Lease {
    fn end(self) {
        if let Some(slot) = self.slot.upgrade() {
            slot.set_capturing(false);
        }
    }
}

/// The leases and rings of the sources captured now, by tenant. Cheap to clone.
#[derive(Clone)]
pub struct Recent(Arc<Inner>);

struct Inner {
    leases: Mutex<HashMap<String, Lease>>,
    lease: Duration,
}

impl Default for Recent {
    fn default() -> Recent {
        Recent::with_lease(LEASE)
    }
}

impl Recent {
    /// Leases of `lease`, at most [`LEASE`] (tests end them sooner).
    pub fn with_lease(lease: Duration) -> Recent {
        Recent(Arc::new(Inner {
            leases: Mutex::default(),
            lease: lease.clamp(Duration::from_secs(1), LEASE),
        }))
    }

    fn leases(&self) -> MutexGuard<'_, HashMap<String, Lease>> {
        self.0.leases.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A look at `tenant`'s events (its slot `slot`): what was captured, and the capture
    /// started or extended.
    pub fn look(&self, tenant: &str, slot: &Arc<Slot>) -> Look {
        let now = Instant::now();
        let until = now + self.0.lease;
        let until_wall = SystemTime::now() + self.0.lease;
        let mut leases = self.leases();
        let lapsed = leases.get(tenant).is_some_and(|l| l.until <= now);
        if lapsed {
            if let Some(old) = leases.remove(tenant) {
                old.end();
            }
        }
        if !leases.contains_key(tenant) && leases.len() >= MAX_CAPTURING {
            let oldest = (leases.iter())
                .min_by_key(|(_, l)| l.until)
                .map(|(t, _)| t.clone());
            if let Some(old) = oldest.and_then(|t| leases.remove(&t)) {
                old.end();
            }
        }
        let lease = leases.entry(tenant.to_string()).or_insert_with(|| Lease {
            slot: Arc::downgrade(slot),
            until,
            until_wall,
            ring: VecDeque::new(),
        });
        // The tenant's slot is made again only when it was closed: the new one captures.
        if !std::ptr::eq(lease.slot.as_ptr(), Arc::as_ptr(slot)) {
            if let Some(old) = lease.slot.upgrade() {
                old.set_capturing(false);
            }
            lease.slot = Arc::downgrade(slot);
        }
        lease.until = until;
        lease.until_wall = until_wall;
        slot.set_capturing(true);
        Look {
            until: until_wall,
            events: lease.ring.iter().rev().cloned().collect(),
        }
    }

    /// Keeps `events` (in the order accepted) for `tenant`, when a lease is running.
    pub fn record(&self, tenant: &str, events: impl IntoIterator<Item = Captured>) {
        let mut leases = self.leases();
        let Some(lease) = leases.get_mut(tenant) else {
            return;
        };
        if lease.until <= Instant::now() {
            if let Some(old) = leases.remove(tenant) {
                old.end();
            }
            return;
        }
        for event in events {
            if lease.ring.len() == RING {
                lease.ring.pop_front();
            }
            lease.ring.push_back(Arc::new(event));
        }
    }

    /// Ends the leases that lapsed, freeing their rings.
    pub fn sweep(&self) {
        let now = Instant::now();
        let mut leases = self.leases();
        let lapsed: Vec<String> = (leases.iter())
            .filter(|(_, l)| l.until <= now)
            .map(|(t, _)| t.clone())
            .collect();
        for tenant in lapsed {
            if let Some(old) = leases.remove(&tenant) {
                old.end();
            }
        }
    }

    /// How many sources capture now.
    pub fn capturing(&self) -> usize {
        self.leases().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(dir: &std::path::Path) -> Arc<Slot> {
        let config = outbound::Config::default().write_key("k");
        let client = outbound::Client::new(config).expect("a client");
        Arc::new(Slot::new("s", client, false, dir.join("audiences")))
    }

    fn event(n: usize) -> Captured {
        Captured {
            received_at: outbound::OffsetDateTime::now_utc(),
            kind: "track",
            name: Some(format!("e{n}")),
            size: 2,
            text: Some("{}".into()),
        }
    }

    #[test]
    fn a_look_captures_the_last_events_newest_first_until_its_lease_lapses() {
        let dir = tempfile::tempdir().unwrap();
        let (recent, s) = (Recent::with_lease(Duration::from_secs(1)), slot(dir.path()));
        recent.record("t", (0..3).map(event));
        assert!(!s.capturing(), "nobody looked yet");
        assert!(recent.look("t", &s).events.is_empty());
        assert!(s.capturing());
        recent.record("t", (0..25).map(event));
        recent.record("other", (0..5).map(event));
        let names: Vec<String> = (recent.look("t", &s).events.iter())
            .map(|e| e.name.clone().unwrap())
            .collect();
        let want: Vec<String> = (5..25).rev().map(|n| format!("e{n}")).collect();
        assert_eq!(names, want);
        std::thread::sleep(Duration::from_millis(1100));
        recent.sweep();
        assert!(!s.capturing());
        assert_eq!(recent.capturing(), 0);
        assert!(
            recent.look("t", &s).events.is_empty(),
            "freed, started again"
        );
    }

    #[test]
    fn a_look_at_one_source_too_many_ends_the_oldest_lease() {
        let dir = tempfile::tempdir().unwrap();
        let recent = Recent::default();
        // The first two sources' own slots; the others share one (a client each is costly).
        let (first, second, rest) = (slot(dir.path()), slot(dir.path()), slot(dir.path()));
        for i in 0..=MAX_CAPTURING {
            let s = [&first, &second].get(i).copied().unwrap_or(&rest);
            recent.look(&format!("t{i}"), s);
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(recent.capturing(), MAX_CAPTURING);
        assert!(!first.capturing(), "the oldest ended");
        assert!(second.capturing() && rest.capturing());
        // Its events are no longer kept; a look at it again ends the next oldest.
        recent.record("t0", (0..1).map(event));
        assert!(recent.look("t0", &first).events.is_empty());
        assert!(first.capturing() && !second.capturing());
    }
}
