//! What a client shows of each webhook URL's deliveries, as its public API gives them: one
//! attempt ([`WebhookAttempt`]: when, how long, its status or the kind of error, the start of
//! a failure's answer) and a URL's health ([`WebhookHealth`]). `delivery/watch.rs` keeps them;
//! dead letters carry each URL's last attempt in the same shape.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// At most this much of a failure's answer is kept with a dead letter's attempts.
pub const ANSWER_EXCERPT: usize = 1024;
/// At most this much of a failure's answer is kept in its URL's log (as much as is read of
/// any answer).
pub const ANSWER_KEPT: usize = 64 * 1024;

/// How an attempt that got no status ended: what an operator tells apart at 3 a.m.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// No complete answer within `timeout`.
    Timeout,
    /// The receiver refused the connection (nothing listens on the port).
    Refused,
    /// The connection was reset or closed mid-exchange.
    Reset,
    /// TLS failed: the receiver's certificate, or the handshake.
    Tls,
    /// The host name did not resolve.
    Dns,
    /// `block_private_networks` refused the address: nothing was sent.
    Blocked,
    /// Any other connection failure (a proxy's refusal, ...).
    Connection,
    /// Anything else (an invalid request, ...).
    Other,
}

impl ErrorClass {
    /// `"timeout"`, `"refused"`, `"reset"`, `"tls"`, `"dns"`, `"blocked"`, `"connection"`
    /// or `"other"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Refused => "refused",
            ErrorClass::Reset => "reset",
            ErrorClass::Tls => "tls",
            ErrorClass::Dns => "dns",
            ErrorClass::Blocked => "blocked",
            ErrorClass::Connection => "connection",
            ErrorClass::Other => "other",
        }
    }

    /// The class of a connection failure from its description, as the transports write it
    /// (their own words and the system's: "connect 127.0.0.1:9: Connection refused (os
    /// error 111)", "TLS: ...", "cannot resolve ...").
    pub(crate) fn of_text(detail: &str) -> ErrorClass {
        let d = detail.to_ascii_lowercase();
        if d.contains("refused") && !d.contains("proxy refused") {
            ErrorClass::Refused
        } else if d.contains("reset")
            || d.contains("broken pipe")
            || d.contains("aborted")
            || d.contains("closed before")
            || d.contains("connection closed")
            || d.contains("incomplete")
            || d.contains("unexpected eof")
        {
            ErrorClass::Reset
        } else if d.starts_with("tls") || d.contains("certificate") || d.contains("handshake") {
            ErrorClass::Tls
        } else if d.contains("resolve") || d.contains("has no address") || d.contains("dns") {
            ErrorClass::Dns
        } else if d.contains("timed out") || d.contains("timeout") {
            ErrorClass::Timeout
        } else {
            ErrorClass::Connection
        }
    }

    /// The class named `name` ([`as_str`](Self::as_str)).
    pub fn parse(name: &str) -> Option<ErrorClass> {
        Some(match name {
            "timeout" => ErrorClass::Timeout,
            "refused" => ErrorClass::Refused,
            "reset" => ErrorClass::Reset,
            "tls" => ErrorClass::Tls,
            "dns" => ErrorClass::Dns,
            "blocked" => ErrorClass::Blocked,
            "connection" => ErrorClass::Connection,
            "other" => ErrorClass::Other,
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an attempt meant for its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// 2xx: delivered.
    Delivered,
    /// A failure worth another try (5xx, 408, 429, timeouts, connection errors).
    Retryable,
    /// A failure retrying would not mend (other 4xx, 3xx, certificates, blocked).
    Permanent,
}

impl AttemptResult {
    /// `"delivered"`, `"retryable"` or `"permanent"`.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Delivered => "delivered",
            AttemptResult::Retryable => "retryable",
            AttemptResult::Permanent => "permanent",
        }
    }

    /// The result named `name` ([`as_str`](Self::as_str)).
    pub fn parse(name: &str) -> Option<AttemptResult> {
        Some(match name {
            "delivered" => AttemptResult::Delivered,
            "retryable" => AttemptResult::Retryable,
            "permanent" => AttemptResult::Permanent,
            _ => return None,
        })
    }
}

/// One request to a webhook URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookAttempt {
    /// The webhook's index in the client's `webhooks`.
    pub webhook: usize,
    /// The message it carried.
    pub message_id: Arc<str>,
    /// When the request went out.
    pub at: SystemTime,
    /// How long the exchange took (connect, send, answer).
    pub duration: Duration,
    /// What it meant for the message.
    pub result: AttemptResult,
    /// The answer's status, when one came.
    pub status: Option<u16>,
    /// How it failed, when no status came (or the network guard refused it).
    pub error: Option<ErrorClass>,
    /// What went wrong, in words (`"status 503"`, `"connect 10.0.0.7:443: Connection refused
    /// (os error 111)"`); empty for a delivery.
    pub detail: String,
    /// For a failure: the first bytes of the answer's body ([`ANSWER_KEPT`] in a URL's log,
    /// [`ANSWER_EXCERPT`] in a dead letter's attempts).
    pub answer: Option<Arc<[u8]>>,
    /// For a failure: the request's headers, lower-case, with the value of any that
    /// authorizes or signs (`authorization`, `x-signature`, `webhook-signature`, a name
    /// holding `token`, `secret`, `key`, `auth`, `cookie`, `password`) as `[redacted]`.
    /// Empty for a delivery and in a dead letter's attempts.
    pub request_headers: Vec<(String, String)>,
    /// For a failure that got an answer: its headers, lower-case (a credential's redacted as
    /// above). Empty otherwise.
    pub answer_headers: Vec<(String, String)>,
}

/// Which of a URL's kept attempts to list ([`Client::webhook_attempts_where`]
/// (crate::Client::webhook_attempts_where)); every condition set must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptQuery {
    /// Only those with this result.
    pub result: Option<AttemptResult>,
    /// Only those answered with this status.
    pub status: Option<u16>,
    /// Only those of this message.
    pub message_id: Option<String>,
    /// Only those sent at or after this time.
    pub since: Option<SystemTime>,
    /// Only those sent before this time.
    pub until: Option<SystemTime>,
    /// At most this many, newest first (1 to [`MAX_ATTEMPT_LOG_SIZE`]; default 100).
    pub limit: usize,
}

impl Default for AttemptQuery {
    fn default() -> Self {
        AttemptQuery {
            result: None,
            status: None,
            message_id: None,
            since: None,
            until: None,
            limit: 100,
        }
    }
}

/// The most attempts a URL's log may keep (`Config::attempt_log_size`).
pub const MAX_ATTEMPT_LOG_SIZE: usize = 10_000;
/// Attempts a URL's log keeps by default (`Config::attempt_log_size`).
pub(crate) const DEFAULT_ATTEMPT_LOG_SIZE: usize = 100;

/// Where a webhook URL stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthState {
    /// Its last request succeeded (or none was made).
    Healthy,
    /// Its last requests failed.
    Failing,
    /// So many failed in a row that its lane sends one probe at a time until one succeeds.
    CircuitOpen,
    /// Its last requests succeeded, and messages wait for its rate limit
    /// ([`Webhook::rate_limit`](crate::Webhook::rate_limit)).
    Throttled,
    /// No request is sent to it: `block_private_networks` refuses its address whatever DNS
    /// says ([`Config::blocked_webhooks`](crate::Config::blocked_webhooks)).
    Disabled,
}

impl HealthState {
    /// `"healthy"`, `"failing"`, `"circuit_open"`, `"throttled"` or `"disabled"`.
    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Healthy => "healthy",
            HealthState::Failing => "failing",
            HealthState::CircuitOpen => "circuit_open",
            HealthState::Throttled => "throttled",
            HealthState::Disabled => "disabled",
        }
    }
}

/// A webhook URL's health: its state, and its last five minutes.
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookHealth {
    /// The webhook's index in the client's `webhooks`.
    pub webhook: usize,
    /// Its URL as logs show it: scheme, host and port, anything after them as `/…` (a path
    /// or query string can carry a token: Slack keeps its in the path).
    pub url: String,
    /// Healthy, failing, circuit open or disabled.
    pub state: HealthState,
    /// Requests answered (or failed) in the last five minutes.
    pub attempts_5m: u64,
    /// Of those, the ones that delivered.
    pub delivered_5m: u64,
    /// `delivered_5m / attempts_5m`; `None` without attempts.
    pub success_rate_5m: Option<f64>,
    /// Median and 99th percentile of the exchanges' durations in the last five minutes
    /// (within 10 %); `None` without attempts.
    pub p50_5m: Option<Duration>,
    /// See `p50_5m`.
    pub p99_5m: Option<Duration>,
    /// Failed requests since its last success.
    pub consecutive_failures: u32,
    /// When and why its last request failed.
    pub last_error: Option<(SystemTime, String)>,
    /// When its last request succeeded.
    pub last_success: Option<SystemTime>,
    /// Messages that are still to be delivered to it (queued, in flight, or waiting to be
    /// retried).
    pub waiting: u64,
    /// Requests that waited for its rate limit before going out, since the client started.
    pub throttled: u64,
    /// What became of the messages sent to it.
    pub messages: MessageCounts,
}

/// What became of the messages sent to one webhook URL, since the client started (carried on
/// to a client that takes over with changed settings). Success at any one URL is success:
/// a message another URL took is delivered, and a URL that kept failing it reads as
/// `abandoned` here, not as delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageCounts {
    /// Messages it answered with 2xx.
    pub delivered: u64,
    /// Messages it refused for good (a status retrying would not mend, a certificate, the
    /// network guard), or kept failing until their retry window closed.
    pub failed: u64,
    /// Messages it has failed and will try again, now (a batching subscription's are counted
    /// in `waiting` only).
    pub retrying: u64,
    /// Messages it had failed and was to try again when another URL took them: not tried
    /// here again.
    pub abandoned: u64,
}

/// One minute of a webhook URL's messages ([`MessageCounts`]' ends, minute by minute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebhookMinute {
    /// The minute's start.
    pub start: SystemTime,
    /// Messages it delivered in that minute.
    pub delivered: u64,
    /// Messages it failed for good in that minute.
    pub failed: u64,
    /// Messages it gave up on in that minute because another URL took them.
    pub abandoned: u64,
}
