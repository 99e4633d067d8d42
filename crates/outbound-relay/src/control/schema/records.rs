//! The delivery records' bodies: a webhook's health and attempts, dead letters and replay.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A webhook's last error.
#[derive(Serialize, ToSchema)]
pub struct LastError {
    pub at: Option<String>,
    pub message: String,
}

/// A webhook's health.
#[derive(Serialize, ToSchema)]
pub struct Health {
    pub webhook: usize,
    /// Scheme, host and port.
    pub url: String,
    /// `healthy`, `failing`, `circuit_open`, `throttled` (messages wait for its rate limit)
    /// or `disabled` (the network guard refuses it).
    pub state: String,
    pub attempts_5m: u64,
    pub delivered_5m: u64,
    pub success_rate_5m: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub consecutive_failures: u64,
    pub last_error: Option<LastError>,
    pub last_success: Option<String>,
    pub waiting: u64,
    /// Requests that waited for its rate limit, since its source's settings last changed
    /// (or the relay started).
    pub throttled: u64,
    pub messages: MessageCounts,
}

/// What became of the messages sent to one webhook, since the relay started (kept across
/// its source's settings changes). Success at any one webhook is success: a message another
/// webhook took is delivered, and a webhook that kept failing it counts it as `abandoned`
/// here, not as delivered.
#[derive(Serialize, ToSchema)]
pub struct MessageCounts {
    /// Answered with 2xx.
    pub delivered: u64,
    /// Refused for good (a status retrying would not mend, a certificate, the network guard),
    /// or failed until the retry window closed.
    pub failed: u64,
    /// Failed, and to be tried again, now.
    pub retrying: u64,
    /// Failed, and not tried again because another webhook took them.
    pub abandoned: u64,
}

/// One webhook's messages in each minute of the source's hour ([`Activity`]'s minutes).
#[derive(Serialize, ToSchema)]
pub struct WebhookActivity {
    pub webhook: usize,
    pub delivered: Vec<u64>,
    pub failed: Vec<u64>,
    pub abandoned: Vec<u64>,
}

/// A source's webhooks' health.
#[derive(Serialize, ToSchema)]
pub struct SourceHealth {
    pub source: String,
    pub webhooks: Vec<Health>,
}

/// A source's last hour, minute by minute, oldest first (the last minute is the one under
/// way); final outcomes (a retry is not a failure).
#[derive(Serialize, ToSchema)]
pub struct Activity {
    pub source: String,
    /// The start of the oldest minute.
    pub from: Option<String>,
    /// The end of the minute under way.
    pub to: Option<String>,
    pub bucket_seconds: u64,
    pub delivered: Vec<u64>,
    pub failed: Vec<u64>,
    /// Each webhook's own: what it took, refused, and gave up on because another webhook
    /// took the message (a webhook refusing everything shows here while the source's
    /// messages read delivered).
    pub webhooks: Vec<WebhookActivity>,
}

/// One attempt to a webhook.
#[derive(Serialize, ToSchema)]
pub struct Attempt {
    pub webhook: usize,
    pub message_id: String,
    pub at: Option<String>,
    pub duration_ms: f64,
    /// `delivered`, `retryable` or `permanent`.
    pub result: String,
    pub status: Option<u16>,
    /// What went wrong without an answer: `timeout`, `refused`, `reset`, `tls`, `dns`,
    /// `blocked`, `connection`, `other`.
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A failure's answer, its first bytes, as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The same when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_base64: Option<String>,
    /// Bytes of the answer kept (up to 64 KiB): a list shows its first 1 KiB, the attempts
    /// of one message (`message_id=`) all of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_bytes: Option<usize>,
    /// A failure's request headers, lower-case, a credential's value `[redacted]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub request_headers: Vec<Header>,
    /// A failure's answer headers (a credential's value `[redacted]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answer_headers: Vec<Header>,
}

/// One header of an attempt.
#[derive(Serialize, ToSchema)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// A webhook's last attempts, newest first.
#[derive(Serialize, ToSchema)]
pub struct Attempts {
    pub source: String,
    pub webhook: usize,
    pub attempts: Vec<Attempt>,
}

/// A dead letter.
#[derive(Serialize, ToSchema)]
pub struct DeadLetter {
    pub message_id: String,
    pub failed_at: Option<String>,
    pub reason: String,
    pub detail: String,
    pub rounds: u32,
    pub first_attempt_at: Option<String>,
    pub size: u64,
    pub replaying: bool,
    pub last_attempts: Vec<Attempt>,
    /// The webhook body as sent (JSON); one dead letter's only, not a page's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// How many dead letters a source keeps.
#[derive(Serialize, ToSchema)]
pub struct DeadLetterStats {
    pub count: u64,
    pub bytes: u64,
    pub evicted: u64,
    pub expired: u64,
}

/// A page of dead letters, newest first.
#[derive(Serialize, ToSchema)]
pub struct DeadLetterPage {
    pub source: String,
    pub dead_letters: Vec<DeadLetter>,
    /// `cursor` of the next page.
    pub next: Option<String>,
    pub stats: DeadLetterStats,
}

/// How a replay goes.
#[derive(Serialize, ToSchema)]
pub struct ReplayProgress {
    pub id: u64,
    pub total: u64,
    pub sent: u64,
    pub delivered: u64,
    pub failed: u64,
    pub skipped: u64,
    pub done: bool,
    pub started_at: Option<String>,
    /// This resource's path.
    pub progress: String,
}

/// A webhook named by its index (from 0) or its URL.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum WebhookRef {
    Index(u64),
    Url(String),
}

/// What a replay sends: every dead letter that failed in a range of time (either end open),
/// to every webhook or one.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// Failed at or after (RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    /// Failed before (RFC 3339).
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    pub webhook: Option<WebhookRef>,
    /// Only count what it would send (200 with `total`), sending nothing: what a console
    /// shows before it asks.
    #[serde(default)]
    pub dry_run: bool,
}

/// What a replay would send (a dry run).
#[derive(Serialize, ToSchema)]
pub struct ReplayCount {
    /// Dead letters of the range not being replayed already.
    pub total: u64,
}

/// One dead letter's replay: to every webhook or one.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayOne {
    #[serde(default)]
    pub webhook: Option<WebhookRef>,
}
