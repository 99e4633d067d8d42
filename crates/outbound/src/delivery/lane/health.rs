//! A destination's health as its lane sees it: answers free slots, a run of failures holds the
//! lane to one probe at a time, `Retry-After` pauses it.

use super::*;

impl Lane {
    /// A request of this lane came back: frees its slot and updates the destination's health.
    pub(crate) fn finished(&mut self, attempt: &Attempt, started: Instant, now: Instant) {
        self.busy -= 1;
        self.request_ended();
        if let Some(n) = self.out.get_mut(&started) {
            *n -= 1;
            if *n == 0 {
                self.out.remove(&started);
            }
        }
        let retry_after = match attempt {
            Attempt::Retryable { retry_after, .. } => *retry_after,
            _ => None,
        };
        if let Some(wait) = retry_after {
            let until = after(now, wait.min(self.delivery.policy.max_retry_after));
            if self.paused_until.is_none_or(|t| t < until) {
                self.delivery.logger.log(Level::Debug, || {
                    format!("{}: paused {wait:?} (Retry-After)", self.label)
                });
                self.paused_until = Some(until);
            }
        }
        let timed_out = matches!(
            attempt,
            Attempt::Retryable {
                reason: Reason::Timeout,
                ..
            }
        );
        if !timed_out {
            self.last_answer = Some(now);
        }
        match attempt {
            // A success, or an answer that retrying will not change: the receiver is there.
            Attempt::Success | Attempt::Permanent { .. } => {
                self.failures = 0;
                self.last_success = Some(now);
                if self.health != Health::Up {
                    self.delivery
                        .logger
                        .log(Level::Warn, || format!("{}: recovered", self.label));
                    self.health = Health::Up;
                }
            }
            Attempt::Retryable { .. } => {
                self.failures = self.failures.saturating_add(1);
                let quiet = !matches!(self.last_success,
                    Some(t) if now.saturating_duration_since(t) < TRIP_QUIET);
                let opens = match self.health {
                    Health::Up if self.failures >= TRIP_AFTER && quiet => 1,
                    Health::Probing { opens } => opens + 1,
                    _ => return,
                };
                let wait = self.probe_backoff(opens);
                self.delivery.logger.log(Level::Warn, || {
                    format!(
                        "{}: {} failures in a row; next probe in {wait:?}",
                        self.label, self.failures
                    )
                });
                self.health = Health::Down {
                    until: after(now, wait),
                    opens,
                };
            }
        }
    }

    /// Half of the doubling ceiling fixed, half jittered: probes never come in a burst.
    fn probe_backoff(&self, opens: u32) -> Duration {
        let ceiling = self
            .delivery
            .policy
            .base
            .saturating_mul(1u32 << opens.saturating_sub(1).min(20))
            .min(self.delivery.policy.max_backoff);
        ceiling / 2 + (ceiling / 2).mul_f64(fastrand::f64())
    }

    /// When this lane may send again although nothing else happens (a pause, a probe, or
    /// requests out turning slow, which makes room for another thread).
    pub(crate) fn wake_at(&self, now: Instant) -> Option<Instant> {
        if self.ready.is_empty() {
            return None;
        }
        if self.busy < self.cap && self.health == Health::Up && self.held_back(now) {
            // The next request out answered around to turn slow; the rest wait for an answer,
            // and an answer wakes the scheduler anyway.
            let cutoff = now.checked_sub(SLOW_AFTER).unwrap_or(now);
            let turns = self.last_answer.and_then(|answer| {
                self.out
                    .range((Excluded(cutoff), Unbounded))
                    .next()
                    .filter(|(t, _)| **t <= answer)
                    .map(|(t, _)| after(*t, SLOW_AFTER))
            });
            if let Some(t) = turns {
                return Some(self.paused_until.map_or(t, |p| p.max(t)));
            }
        }
        let probe = match self.health {
            Health::Down { until, .. } => Some(until),
            _ => self.fill_room(now).map(|(_, turns)| turns),
        };
        match (probe, self.paused_until) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// True while the destination is taken as down.
    pub(crate) fn is_down(&self) -> bool {
        self.health != Health::Up
    }
}
