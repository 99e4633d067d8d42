//! A destination's health as its lane sees it: a run of failures holds the lane to one probe
//! at a time, `Retry-After` pauses it, and any answer shows the receiver is there.

use super::{TRIP_AFTER, TRIP_QUIET};
use crate::http::attempt::Attempt;
use crate::log::{Level, Logger};
use crate::model::outcome::Reason;
use crate::model::retry::{after, RetryPolicy};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub(super) struct Health {
    state: State,
    /// Retryable failures in a row.
    failures: u32,
    last_success: Option<Instant>,
    /// When the destination last answered anything (a timeout is no answer).
    pub(super) last_answer: Option<Instant>,
    /// `Retry-After`: nothing is sent before this.
    pub(super) paused_until: Option<Instant>,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum State {
    /// Requests flow freely.
    #[default]
    Up,
    /// Failing: nothing is sent before `until`, then one probe.
    Down { until: Instant, opens: u32 },
    /// One probe is out; its result decides.
    Probing { opens: u32 },
}

impl Health {
    /// Whether a request may go now: not paused, and up, or down with its probe due.
    pub(super) fn may_send(&self, now: Instant) -> bool {
        if self.paused_until.is_some_and(|t| now < t) {
            return false;
        }
        match self.state {
            State::Up => true,
            // The probe's turn; `probe_sent` marks it out (a request taken but not started,
            // its message settled meanwhile, must not leave the lane waiting for a result).
            State::Down { until, .. } => now >= until,
            State::Probing { .. } => false,
        }
    }

    /// A request went out: while down, it is the probe.
    pub(super) fn probe_sent(&mut self) {
        if let State::Down { opens, .. } = self.state {
            self.state = State::Probing { opens };
        }
    }

    /// When the next probe may go, while down.
    pub(super) fn probe_at(&self) -> Option<Instant> {
        match self.state {
            State::Down { until, .. } => Some(until),
            _ => None,
        }
    }

    /// Starts as a predecessor's lane to the same destination ended: down after `failures`
    /// in a row, its next probe due at once (new settings may be what it needed).
    pub(super) fn tripped(&mut self, failures: u32, now: Instant) {
        self.failures = failures;
        self.state = State::Down {
            until: now,
            opens: 1,
        };
    }

    /// True while the destination is taken as down.
    pub(super) fn is_down(&self) -> bool {
        self.state != State::Up
    }

    /// A request came back at `now` with `attempt`: a pause it asks for (within the policy's
    /// `max_retry_after`), and the run of failures it ends, continues or trips. `label`
    /// names the destination in the log lines.
    pub(super) fn answered(
        &mut self,
        attempt: &Attempt,
        now: Instant,
        policy: &RetryPolicy,
        logger: &Logger,
        label: &str,
    ) {
        let retry_after = match attempt {
            Attempt::Retryable { retry_after, .. } => *retry_after,
            _ => None,
        };
        if let Some(wait) = retry_after {
            let until = after(now, wait.min(policy.max_retry_after));
            if self.paused_until.is_none_or(|t| t < until) {
                logger.log(Level::Debug, || {
                    format!("{label}: paused {wait:?} (Retry-After)")
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
                if self.state != State::Up {
                    logger.log(Level::Warn, || format!("{label}: recovered"));
                    self.state = State::Up;
                }
            }
            Attempt::Retryable { .. } => {
                self.failures = self.failures.saturating_add(1);
                let quiet = !matches!(self.last_success,
                    Some(t) if now.saturating_duration_since(t) < TRIP_QUIET);
                let opens = match self.state {
                    State::Up if self.failures >= TRIP_AFTER && quiet => 1,
                    State::Probing { opens } => opens + 1,
                    _ => return,
                };
                let wait = probe_backoff(policy, opens);
                logger.log(Level::Warn, || {
                    format!(
                        "{label}: {} failures in a row; next probe in {wait:?}",
                        self.failures
                    )
                });
                self.state = State::Down {
                    until: after(now, wait),
                    opens,
                };
            }
        }
    }
}

/// Half of the doubling ceiling fixed, half jittered: probes never come in a burst.
fn probe_backoff(policy: &RetryPolicy, opens: u32) -> Duration {
    let ceiling = policy
        .base
        .saturating_mul(1u32 << opens.saturating_sub(1).min(20))
        .min(policy.max_backoff);
    ceiling / 2 + (ceiling / 2).mul_f64(fastrand::f64())
}
