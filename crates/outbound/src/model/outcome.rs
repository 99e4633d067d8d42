//! How each accepted message ends, and the counters that add them up.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Delivered, failed or dropped: every accepted message ends in exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeKind {
    /// Every destination of the message accepted it (2xx).
    Delivered,
    /// A destination refused it for good, or retries ran out.
    Failed,
    /// It was never sent: closed before delivery, sending disabled, or filtered by integrations.
    Dropped,
}

impl OutcomeKind {
    /// `"delivered"`, `"failed"` or `"dropped"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Delivered => "delivered",
            OutcomeKind::Failed => "failed",
            OutcomeKind::Dropped => "dropped",
        }
    }
}

/// Why a message failed or was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The receiver answered with this status (3xx, or a 4xx that is not retried).
    Status(u16),
    /// The receiver answered `410 Gone`: it says this URL no longer wants messages. Not
    /// retried; the URL should be removed from the configuration (for a customer's webhook,
    /// by that customer), since every later message to it will fail the same way.
    Gone,
    /// `block_private_networks` refused the webhook URL's address (loopback, private,
    /// link-local, ...): nothing was sent, and it is not retried.
    Blocked,
    /// The receiver did not answer within `timeout` (only final via `Expired`).
    Timeout,
    /// Could not connect, or the connection broke (only final via `Expired`).
    Connection,
    /// The HTTPS receiver's certificate is not trusted (self-signed, unknown CA, wrong name).
    Certificate,
    /// Retryable failures went on past `max_retry_duration`.
    Expired,
    /// The client was closed before the message could be delivered.
    Closed,
    /// The client was built with `send = false`.
    SendDisabled,
    /// `integrations` excluded every destination of the client.
    Filtered,
    /// Anything else the transport reported (invalid request, ...).
    Other,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Status(s) => write!(f, "status {s}"),
            Reason::Gone => f.write_str("gone"),
            Reason::Blocked => f.write_str("blocked"),
            Reason::Timeout => f.write_str("timeout"),
            Reason::Connection => f.write_str("connection"),
            Reason::Certificate => f.write_str("certificate"),
            Reason::Expired => f.write_str("expired"),
            Reason::Closed => f.write_str("closed"),
            Reason::SendDisabled => f.write_str("send disabled"),
            Reason::Filtered => f.write_str("filtered by integrations"),
            Reason::Other => f.write_str("error"),
        }
    }
}

/// The end of one accepted message, as given to the `on_outcome` callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The id returned when the message was enqueued.
    pub message_id: Arc<str>,
    /// Delivered, failed or dropped.
    pub kind: OutcomeKind,
    /// Why, when not delivered.
    pub reason: Option<Reason>,
    /// Human-readable detail (`"ingestion: status 400"`, `"webhooks: expired after 12 attempts; last: status 503"`).
    pub detail: String,
    /// The subscription this outcome is of (`Config::subscriptions`): a message has one per
    /// subscription it matched, besides its own (`None`: ingestion and webhooks).
    pub subscription: Option<Arc<str>>,
}

/// A snapshot of the client's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages accepted by enqueue calls, in all.
    pub accepted: u64,
    /// Accepted and waiting (for a batch, a worker or a retry), now.
    pub queued: u64,
    /// Being sent, now.
    pub in_flight: u64,
    /// Outcomes: delivered.
    pub delivered: u64,
    /// Outcomes: failed.
    pub failed: u64,
    /// Outcomes: dropped, plus calls refused because the queue was full.
    pub dropped: u64,
    /// Of `dropped`, the calls refused because the queue was full (never accepted).
    pub queue_full: u64,
    /// Requests made again after a retryable failure.
    pub retries: u64,
    /// Accepted messages left in the spool by `close` (no outcome yet: the next client on
    /// the spool delivers them). Always 0 without a spool.
    pub spooled: u64,
    /// Messages taken over from the spool (left by an earlier client, or by a process that
    /// died), delivered by this client as if accepted here. After `close`:
    /// `accepted + resumed = delivered + failed + dropped - queue_full + spooled`.
    pub resumed: u64,
}

/// The live counters, shared by the caller's side and the scheduler.
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub accepted: AtomicU64,
    pub in_flight: AtomicU64,
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
    pub dropped: AtomicU64,
    pub queue_full: AtomicU64,
    pub retries: AtomicU64,
    pub spooled: AtomicU64,
    pub resumed: AtomicU64,
    /// Outcomes that make `flush` return false: failed, and dropped except by the message's
    /// own `integrations`.
    pub losses: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self, pending: u64) -> Stats {
        let in_flight = self.in_flight.load(Relaxed);
        Stats {
            accepted: self.accepted.load(Relaxed),
            queued: pending.saturating_sub(in_flight),
            in_flight,
            delivered: self.delivered.load(Relaxed),
            failed: self.failed.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            queue_full: self.queue_full.load(Relaxed),
            retries: self.retries.load(Relaxed),
            spooled: self.spooled.load(Relaxed),
            resumed: self.resumed.load(Relaxed),
        }
    }

    /// One message fewer in flight (never below zero: `close` may have zeroed it).
    pub(crate) fn landed(&self) {
        let _ = self
            .in_flight
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    pub(crate) fn count(&self, kind: OutcomeKind) {
        match kind {
            OutcomeKind::Delivered => &self.delivered,
            OutcomeKind::Failed => &self.failed,
            OutcomeKind::Dropped => &self.dropped,
        }
        .fetch_add(1, Relaxed);
    }
}
