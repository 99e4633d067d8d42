//! A request's rejected events, bounded whatever their number: the first [`NAMED`] (by place
//! in the batch) are kept with their reasons (each at most [`REASON_BYTES`]), the rest only
//! counted, by kind. The answer names those kept and gives the count, the request logs one
//! line that summarizes them, and the metrics get one call per kind.
//!
//! A batch of 250,000 zeros (500 KB, or 547 bytes gzipped, with a browser's write key) used to
//! be answered with 14.6 MB naming each, and logged in 250,000 lines.

use serde_json::{json, Value};
use std::fmt::{self, Write as _};
use std::ops::Range;

/// How many rejected events an answer names.
pub const NAMED: usize = 20;
/// How many the request's log line names.
const LOGGED: usize = 3;
/// A reason is cut to this many bytes: the core's reasons can carry a client's text (a field
/// name), as long as the body.
pub const REASON_BYTES: usize = 200;

/// The events of one request that were refused.
#[derive(Default)]
pub struct Rejections {
    /// The first [`NAMED`], by place, each with its reason.
    named: Vec<(usize, String)>,
    /// All of them.
    count: usize,
    /// How many of each kind (a metrics label: `missing_field`, `not_an_object`, ...).
    kinds: Vec<(&'static str, usize)>,
}

impl Rejections {
    /// The event at `index` is refused, of `kind`, for `reason` (written only when it is kept).
    pub fn add(&mut self, index: usize, kind: &'static str, reason: &dyn fmt::Display) {
        self.count_kind(kind, 1);
        self.name(index, reason);
    }

    /// The events at `places` are all refused, of `kind`, for `reason`.
    pub fn add_all(&mut self, places: Range<usize>, kind: &'static str, reason: &dyn fmt::Display) {
        self.count_kind(kind, places.len());
        for index in places.take(NAMED) {
            if !self.name(index, reason) {
                break;
            }
        }
    }

    /// Keeps `index` among the named if it is one of the first [`NAMED`]; false when not.
    fn name(&mut self, index: usize, reason: &dyn fmt::Display) -> bool {
        if self.named.len() == NAMED && self.named.last().is_some_and(|(i, _)| *i < index) {
            return false;
        }
        let at = self.named.partition_point(|(i, _)| *i < index);
        self.named.insert(at, (index, bounded(reason)));
        self.named.truncate(NAMED);
        true
    }

    fn count_kind(&mut self, kind: &'static str, n: usize) {
        self.count += n;
        match self.kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, have)) => *have += n,
            None => self.kinds.push((kind, n)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Counts them in the metrics, one call per kind.
    pub fn count_in_metrics(&self, metrics: &crate::operations::metrics::Metrics, source: &str) {
        for (kind, n) in &self.kinds {
            metrics.rejected(source, kind, *n);
        }
    }

    /// One log line for the request: how many, of which kinds, and the first few by place and
    /// reason (logs escape what a reason holds: `logging.rs`).
    pub fn log(&self, rate: &crate::operations::log_rate::LogRate, source: &str, accepted: usize) {
        if self.is_empty() {
            return;
        }
        // Requests with rejected events, one line every 10 s a source (the metrics count all).
        let Some(held) = rate.allow("events_rejected", source) else {
            return;
        };
        let mut kinds = String::new();
        for (kind, n) in &self.kinds {
            let _ = write!(
                kinds,
                "{}{kind}={n}",
                if kinds.is_empty() { "" } else { " " }
            );
        }
        let mut first = String::new();
        for (index, reason) in self.named.iter().take(LOGGED) {
            let sep = if first.is_empty() { "" } else { "; " };
            let _ = write!(first, "{sep}[{index}] {reason}");
        }
        tracing::info!(
            source,
            rejected = self.count,
            accepted,
            kinds = %kinds,
            first = %first,
            held_back = held,
            "events rejected"
        );
    }

    /// The answer's body: `{"success":true,"accepted":N,"rejected":[{"index":i,"reason":r},
    /// ...],"rejectedCount":M}`, the first [`NAMED`] listed.
    pub fn answer(&self, accepted: usize) -> Value {
        let list: Vec<Value> = (self.named.iter())
            .map(|(index, reason)| json!({"index": index, "reason": reason}))
            .collect();
        json!({"success": true, "accepted": accepted, "rejected": list, "rejectedCount": self.count})
    }
}

/// `reason` written, cut to at most [`REASON_BYTES`] (at a character, with `…`); a reason
/// longer than that is not even written whole.
pub fn bounded(reason: &dyn fmt::Display) -> String {
    struct Cut(String, bool);
    impl fmt::Write for Cut {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let room = REASON_BYTES - self.0.len();
            if s.len() <= room {
                self.0.push_str(s);
                return Ok(());
            }
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.0.push_str(&s[..end]);
            self.1 = true;
            Err(fmt::Error)
        }
    }
    let mut out = Cut(String::new(), false);
    let _ = write!(out, "{reason}");
    if out.1 {
        out.0.push('…');
    }
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_named_are_kept_by_place_whatever_the_order_they_come_in() {
        let mut r = Rejections::default();
        for i in (0..50).rev() {
            r.add(i * 2, "missing_field", &format!("r{i}"));
        }
        r.add(1, "not_an_object", &"odd");
        let a = r.answer(3);
        let listed: Vec<u64> = (a["rejected"].as_array().unwrap().iter())
            .map(|e| e["index"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = [0, 1].into_iter().chain((2..38).step_by(2)).collect();
        assert_eq!(listed, want);
        assert_eq!(a["rejectedCount"], 51);
        assert_eq!(a["accepted"], 3);
        assert_eq!(r.kinds, [("missing_field", 50), ("not_an_object", 1)]);
    }

    #[test]
    fn a_range_counts_every_event_and_names_only_what_fits() {
        let mut r = Rejections::default();
        r.add(3, "missing_field", &"x");
        r.add_all(2_500..250_000, "batch_limit", &"over");
        assert_eq!(r.count, 247_501);
        assert_eq!(r.kinds, [("missing_field", 1), ("batch_limit", 247_500)]);
        assert_eq!(r.named.len(), NAMED);
        assert_eq!(r.named[1], (2_500, "over".to_string()));
    }

    #[test]
    fn a_long_reason_is_cut_at_a_character() {
        let long = format!("invalid {}: is not a field", "é".repeat(400));
        let cut = bounded(&long);
        assert!(cut.len() <= REASON_BYTES + '…'.len_utf8(), "{}", cut.len());
        assert!(cut.ends_with('…') && cut.starts_with("invalid é"));
        assert_eq!(bounded(&"short"), "short");
    }
}
