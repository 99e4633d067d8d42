//! When to try again: exponential backoff with full jitter, `Retry-After` honoured up to a
//! cap, and never past the message's retry window.

use std::time::{Duration, Instant};

/// The retry rules of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// First backoff ceiling; doubled per attempt.
    pub base: Duration,
    /// Largest backoff ceiling (default 10 s). Short on purpose: a destination that fails
    /// every request is held to one probe at a time by its lane (`delivery/lane/`), so a long
    /// per-message backoff would only delay messages to receivers that fail some requests.
    pub max_backoff: Duration,
    /// Largest `Retry-After` we wait for.
    pub max_retry_after: Duration,
    /// How long after its first attempt a message is retried at most.
    pub max_retry_duration: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(600),
            max_retry_duration: Duration::from_secs(4 * 3600),
        }
    }
}

impl RetryPolicy {
    /// When to retry after the `attempts`-th failed attempt, or `None` when the window that
    /// opened at `first` has closed. A retry never lands past the window's end, so the last
    /// attempt is made at the end rather than skipped.
    pub fn next(
        &self,
        attempts: u32,
        first: Instant,
        now: Instant,
        retry_after: Option<Duration>,
    ) -> Option<Instant> {
        let deadline = after(first, self.max_retry_duration);
        if now >= deadline {
            return None;
        }
        let ceiling = self
            .base
            .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
            .min(self.max_backoff);
        let jitter = ceiling.mul_f64(fastrand::f64());
        let wait = match retry_after {
            Some(asked) => jitter.max(asked.min(self.max_retry_after)),
            None => jitter,
        };
        Some(after(now, wait).min(deadline))
    }
}

/// `t + d`, saturating far in the future instead of overflowing on absurd durations
/// (a timeout of `u64::MAX` ms from C, say).
pub(crate) fn after(t: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    t.checked_add(d.min(FAR)).unwrap_or(t)
}

/// Reads a `Retry-After` value given in seconds. (The HTTP-date form is rare from APIs and
/// is ignored: the backoff applies instead.)
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_stays_under_the_doubling_ceiling() {
        let p = RetryPolicy::default();
        let t = Instant::now();
        for attempt in 1..10 {
            let at = p.next(attempt, t, t, None).unwrap();
            let ceiling = p.base * (1 << (attempt - 1));
            assert!(at - t <= ceiling.min(p.max_backoff));
        }
    }

    #[test]
    fn retry_after_is_a_floor_up_to_its_cap() {
        let p = RetryPolicy::default();
        let t = Instant::now();
        assert!(
            p.next(1, t, t, Some(Duration::from_secs(3))).unwrap() - t >= Duration::from_secs(3)
        );
        assert_eq!(
            p.next(1, t, t, Some(Duration::from_secs(99_999))).unwrap() - t,
            p.max_retry_after
        );
    }

    #[test]
    fn nothing_after_the_window_and_never_past_its_end() {
        let p = RetryPolicy {
            max_retry_duration: Duration::from_secs(1),
            ..Default::default()
        };
        let t = Instant::now();
        assert_eq!(p.next(1, t, t + Duration::from_secs(1), None), None);
        let at = p
            .next(
                1,
                t,
                t + Duration::from_millis(900),
                Some(Duration::from_secs(5)),
            )
            .unwrap();
        assert_eq!(at, t + Duration::from_secs(1));
    }

    #[test]
    fn huge_durations_saturate_instead_of_panicking() {
        let p = RetryPolicy {
            max_retry_duration: Duration::MAX,
            max_retry_after: Duration::MAX,
            ..Default::default()
        };
        let t = Instant::now();
        assert!(p.next(1, t, t, Some(Duration::MAX)).unwrap() > t);
        assert!(after(t, Duration::MAX) > t);
    }

    #[test]
    fn retry_after_in_seconds_parses() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
