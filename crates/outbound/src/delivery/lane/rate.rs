//! An endpoint's rate limit (`Webhook::rate_limit`): a token bucket of `burst` requests that
//! refills at `per_second`. A request without a token waits at the head of its lane; none is
//! dropped for it.

use crate::model::config::RateLimit;
use std::time::{Duration, Instant};

pub(super) struct Rate {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
    /// A request is waiting for a token now.
    pub(super) holding: bool,
    /// Requests that went out after waiting for a token, not yet reported.
    pub(super) waited: u64,
}

impl Rate {
    pub(super) fn new(limit: RateLimit, now: Instant) -> Rate {
        let burst = f64::from(limit.burst.max(1));
        Rate {
            per_second: f64::from(limit.per_second.max(1)),
            burst,
            tokens: burst,
            at: now,
            holding: false,
            waited: 0,
        }
    }

    fn refill(&mut self, now: Instant) {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + gained).min(self.burst);
        self.at = now;
    }

    /// Whether a request may go now; if not, the lane is held until [`next_at`](Self::next_at).
    pub(super) fn ready(&mut self, now: Instant) -> bool {
        self.refill(now);
        let ready = self.tokens >= 1.0;
        self.holding |= !ready;
        ready
    }

    /// A request went out: it spends a token.
    pub(super) fn spend(&mut self, now: Instant) {
        self.refill(now);
        self.tokens -= 1.0;
        if std::mem::take(&mut self.holding) {
            self.waited += 1;
        }
    }

    /// When the next token is there.
    pub(super) fn next_at(&self) -> Instant {
        let missing = (1.0 - self.tokens).max(0.0);
        self.at + Duration::from_secs_f64(missing / self.per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_goes_at_once_then_one_request_per_token() {
        let t0 = Instant::now();
        let mut r = Rate::new(RateLimit::per_second(10).burst(3), t0);
        for _ in 0..3 {
            assert!(r.ready(t0));
            r.spend(t0);
        }
        assert!(!r.ready(t0));
        let next = r.next_at();
        assert!(
            next > t0 && next <= t0 + Duration::from_millis(101),
            "{:?}",
            next - t0
        );
        assert!(!r.ready(t0 + Duration::from_millis(50)));
        assert!(r.ready(next));
        r.spend(next);
        assert_eq!(r.waited, 1);
        // A second of quiet refills the burst, never more.
        let later = next + Duration::from_secs(5);
        let mut sent = 0;
        while r.ready(later) {
            r.spend(later);
            sent += 1;
        }
        assert_eq!(sent, 3);
    }
}
