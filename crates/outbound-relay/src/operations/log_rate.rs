//! Log lines about requests, at most one of a kind (and source) every [`EVERY`], with how
//! many were held back since the last one: a client refused at every request (a key revoked
//! in a million installed apps, a hostile sender, a Redis down while SDKs retry) would
//! otherwise write a line per request. The metrics count every one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The shortest time between two lines of a kind and source.
pub const EVERY: Duration = Duration::from_secs(10);

/// When each kind and source last had a line, and how many were held back since.
type Last = HashMap<&'static str, HashMap<String, (Instant, u64)>>;

/// The relay's record of its request lines (its own, no process global).
#[derive(Clone, Default)]
pub struct LogRate(Arc<Mutex<Last>>);

impl LogRate {
    /// `Some(held back)` when a line of `kind` about `source` may be written now (the caller
    /// writes it, saying how many were held back before it); `None` when it is held back.
    pub fn allow(&self, kind: &'static str, source: &str) -> Option<u64> {
        self.allow_at(kind, source, Instant::now())
    }

    fn allow_at(&self, kind: &'static str, source: &str, now: Instant) -> Option<u64> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let of_kind = last.entry(kind).or_default();
        // Found without a new String: this runs for every refused request.
        let Some((at, held)) = of_kind.get_mut(source) else {
            of_kind.insert(source.to_string(), (now, 0));
            return Some(0);
        };
        if now.duration_since(*at) < EVERY {
            *held += 1;
            return None;
        }
        let before = *held;
        (*at, *held) = (now, 0);
        Some(before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_kind_and_source_every_ten_seconds_with_the_count_held_back() {
        let rate = LogRate::default();
        let allow_at = |k, s, t| rate.allow_at(k, s, t);
        let t0 = Instant::now();
        assert_eq!(allow_at("test-kind", "a", t0), Some(0));
        for i in 1..=5 {
            let at = t0 + Duration::from_millis(i);
            assert_eq!(allow_at("test-kind", "a", at), None);
        }
        // Another source, another kind: their own lines.
        assert_eq!(allow_at("test-kind", "b", t0), Some(0));
        assert_eq!(allow_at("test-other", "a", t0), Some(0));
        assert_eq!(allow_at("test-kind", "a", t0 + EVERY), Some(5));
        assert_eq!(allow_at("test-kind", "a", t0 + EVERY), None);
    }
}
