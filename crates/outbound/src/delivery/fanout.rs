//! One message's fan-out to the webhook URLs, where success at any one URL is success: each
//! round sends it to every URL still worth trying; the first 2xx delivers it and no URL is
//! tried again;
//! otherwise the URLs whose failure was retryable get the next round, until the retry window
//! closes.

use crate::http::attempt::Attempt;
use crate::model::attempts::WebhookAttempt;
use crate::model::outcome::Reason;
use crate::model::retry::RetryPolicy;
use crate::wire::Body;
use std::time::{Duration, Instant};

pub(crate) struct Round {
    pub body: Body,
    /// When the first round started: the retry window opens then.
    pub first: Option<Instant>,
    pub attempts: u32,
    /// URLs whose request of this round has not come back.
    outstanding: u8,
    /// URLs for the next round.
    retry: u8,
    /// URLs that have failed it at least once and may still take it: its retries there.
    retrying: u8,
    /// What failed requests said. Boxed: most rounds have none, and every queued message
    /// with webhooks holds a round.
    trouble: Option<Box<RoundFailures>>,
}

#[derive(Default)]
struct RoundFailures {
    retry_after: Option<Duration>,
    last_error: Option<String>,
    permanent: Option<(Reason, String)>,
    /// Each URL's last failed attempt, kept for a dead letter (with `dead_letters` on).
    last: Vec<WebhookAttempt>,
}

/// Where a message's webhook delivery stands after a result.
#[derive(Debug, PartialEq)]
pub(crate) enum Settled {
    /// Requests of this round are still out.
    Pending,
    Delivered,
    Failed(Reason, String),
    /// Start the next round at this time.
    Retry(Instant),
}

impl Round {
    /// A message to send to the URLs of `mask`.
    pub(crate) fn new(body: Body, mask: u8, first: Option<Instant>) -> Round {
        Round {
            body,
            first,
            attempts: 0,
            outstanding: 0,
            retry: mask,
            retrying: 0,
            trouble: None,
        }
    }

    /// Keeps `tried` as its URL's last attempt (for a dead letter).
    pub(crate) fn note(&mut self, tried: WebhookAttempt) {
        let t = self.trouble.get_or_insert_with(Box::default);
        match t.last.iter_mut().find(|l| l.webhook == tried.webhook) {
            Some(l) => *l = tried,
            None => t.last.push(tried),
        }
    }

    /// Each URL's last failed attempt noted, by URL.
    pub(crate) fn last_attempts(&mut self) -> Vec<WebhookAttempt> {
        let mut last = self
            .trouble
            .as_mut()
            .map(|t| std::mem::take(&mut t.last))
            .unwrap_or_default();
        last.sort_by_key(|a| a.webhook);
        last
    }

    /// Starts a round: the URLs to send to now.
    pub(crate) fn start(&mut self, now: Instant) -> u8 {
        self.first.get_or_insert(now);
        self.attempts += 1;
        if let Some(t) = &mut self.trouble {
            t.retry_after = None;
        }
        self.outstanding = std::mem::take(&mut self.retry);
        self.outstanding
    }

    /// True while URL `target`'s request of this round is still wanted.
    pub(crate) fn wants(&self, target: u8) -> bool {
        self.outstanding & (1 << target) != 0
    }

    /// URLs that failed it retryably and are still trying it (a URL's `retrying` count).
    pub(crate) fn retrying(&self) -> u8 {
        self.retrying & self.live_mask()
    }

    /// URLs waiting for the next round: they failed this one retryably.
    pub(crate) fn next_round(&self) -> u8 {
        self.retry
    }

    /// URLs still worth trying (this round's and the next's): what a spool keeps.
    pub(crate) fn live_mask(&self) -> u8 {
        self.outstanding | self.retry
    }

    /// Records URL `target`'s result for this round.
    pub(crate) fn record(
        &mut self,
        target: u8,
        attempt: Attempt,
        now: Instant,
        policy: &RetryPolicy,
    ) -> Settled {
        if !self.wants(target) {
            return Settled::Pending;
        }
        self.outstanding &= !(1 << target);
        match attempt {
            Attempt::Success => return Settled::Delivered,
            Attempt::Retryable {
                detail,
                retry_after,
                ..
            } => {
                self.retry |= 1 << target;
                self.retrying |= 1 << target;
                let t = self.trouble.get_or_insert_with(Box::default);
                t.retry_after = t.retry_after.max(retry_after);
                t.last_error = Some(detail);
            }
            Attempt::Permanent { reason, detail } => {
                let t = self.trouble.get_or_insert_with(Box::default);
                t.permanent.get_or_insert((reason, detail));
            }
        }
        if self.outstanding != 0 {
            return Settled::Pending;
        }
        if self.retry == 0 {
            let (reason, detail) = self
                .trouble
                .as_mut()
                .and_then(|t| t.permanent.take())
                .unwrap_or((Reason::Other, "no webhook accepted".into()));
            return Settled::Failed(reason, detail);
        }
        match policy.next(
            self.attempts,
            self.first.unwrap_or(now),
            now,
            self.trouble.as_ref().and_then(|t| t.retry_after),
        ) {
            Some(at) => Settled::Retry(at),
            None => Settled::Failed(Reason::Expired, self.expired_detail()),
        }
    }

    /// True when the retry window has closed.
    pub(crate) fn expired(&self, now: Instant, policy: &RetryPolicy) -> bool {
        self.first
            .is_some_and(|f| now >= crate::model::retry::after(f, policy.max_retry_duration))
    }

    pub(crate) fn expired_detail(&self) -> String {
        format!(
            "expired after {} attempts; last: {}",
            self.attempts,
            self.trouble
                .as_ref()
                .and_then(|t| t.last_error.as_deref())
                .unwrap_or("none")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retryable() -> Attempt {
        Attempt::Retryable {
            reason: Reason::Status(503),
            detail: "status 503".into(),
            retry_after: None,
        }
    }

    fn permanent(status: u16) -> Attempt {
        Attempt::Permanent {
            reason: Reason::Status(status),
            detail: format!("status {status}"),
        }
    }

    #[test]
    fn one_success_delivers_and_ends_the_round() {
        let p = RetryPolicy::default();
        let now = Instant::now();
        let mut r = Round::new(Body::from_static(b"{}"), 0b111, None);
        assert_eq!(r.start(now), 0b111);
        assert_eq!(r.record(0, retryable(), now, &p), Settled::Pending);
        assert_eq!(r.record(1, Attempt::Success, now, &p), Settled::Delivered);
    }

    #[test]
    fn only_retryable_urls_get_the_next_round() {
        let p = RetryPolicy::default();
        let now = Instant::now();
        let mut r = Round::new(Body::from_static(b"{}"), 0b11, None);
        r.start(now);
        assert_eq!(r.record(0, permanent(404), now, &p), Settled::Pending);
        assert!(matches!(
            r.record(1, retryable(), now, &p),
            Settled::Retry(_)
        ));
        assert_eq!(r.live_mask(), 0b10);
        assert_eq!(r.start(now), 0b10);
        assert_eq!(
            r.record(1, permanent(410), now, &p),
            Settled::Failed(Reason::Status(404), "status 404".into())
        );
    }

    #[test]
    fn the_window_closes_with_expired() {
        let p = RetryPolicy {
            max_retry_duration: Duration::from_secs(1),
            ..Default::default()
        };
        let t = Instant::now();
        let mut r = Round::new(Body::from_static(b"{}"), 0b1, None);
        r.start(t);
        let later = t + Duration::from_secs(2);
        assert!(r.expired(later, &p));
        match r.record(0, retryable(), later, &p) {
            Settled::Failed(Reason::Expired, d) => assert!(d.contains("status 503"), "{d}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_late_result_for_a_url_not_in_the_round_is_ignored() {
        let p = RetryPolicy::default();
        let now = Instant::now();
        let mut r = Round::new(Body::from_static(b"{}"), 0b01, None);
        r.start(now);
        assert_eq!(r.record(1, Attempt::Success, now, &p), Settled::Pending);
        assert!(r.wants(0));
    }
}
