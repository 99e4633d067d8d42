//! Dead letters as the public API gives them: a message whose webhook delivery failed for
//! good, kept (with `dead_letters` on) with its body and each URL's last attempt, listed in
//! pages, replayed one by one or all of a time range (`durable/dead.rs` keeps them,
//! `delivery/replay.rs` replays them).

use crate::error::Error;
use crate::model::attempts::WebhookAttempt;
use crate::model::outcome::Reason;
use std::time::{Duration, SystemTime};

/// The most dead letters one page lists.
pub const MAX_PAGE: usize = 1000;

/// The most dead letters one page of a search ([`DeadLetterQuery::contains`]) reads after its
/// cursor: a text that few or no letters hold answers in bounded time, and the caller pages
/// on from where the reading stopped.
pub const SEARCH_SCAN: usize = 10_000;

/// The longest [`DeadLetterQuery::contains`] text, in bytes.
pub const MAX_CONTAINS: usize = 256;

/// Default of `dead_letter_retention`: 14 days.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(14 * 24 * 3600);

/// A message whose webhook delivery failed for good (its retry window closed, a permanent
/// 4xx, a 410, the network guard's refusal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    /// Its `messageId`: a replay sends it again under the same one (receivers deduplicate).
    pub message_id: String,
    /// When it failed.
    pub failed_at: SystemTime,
    /// Why: the outcome's reason (`Status(400)`, `Gone`, `Blocked`, `Expired`, ...).
    pub reason: Reason,
    /// The outcome's detail (`"webhooks: status 400"`, `"webhooks: expired after 14
    /// attempts; last: status 503"`).
    pub detail: String,
    /// Webhook rounds it was sent in.
    pub rounds: u32,
    /// When its first attempt went out.
    pub first_attempt: Option<SystemTime>,
    /// Each URL's last attempt (index, time, duration, status or error class, the start of
    /// the answer).
    pub last_attempts: Vec<WebhookAttempt>,
    /// The webhook body's length in bytes.
    pub size: u64,
    /// A replay of it is under way: it leaves the dead letters when the replay delivers it,
    /// and comes back (with the new attempts) if the replay fails.
    pub replaying: bool,
    /// The webhook body as it was sent (signatures are made per attempt, so a replay signs
    /// it with the current secret). Only in [`Client::dead_letter`](crate::Client::dead_letter);
    /// `None` in lists.
    pub body: Option<Vec<u8>>,
}

/// Which dead letters to list: newest first, `limit` at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetterQuery {
    /// Only those that failed at or after this time.
    pub since: Option<SystemTime>,
    /// Only those that failed before this time.
    pub until: Option<SystemTime>,
    /// At most this many (1 to [`MAX_PAGE`]; default 100).
    pub limit: usize,
    /// Where the page starts: the `next` of the page before (`None`: the newest). A text
    /// that is no page's `next` is refused ([`Error::InvalidField`] naming `cursor`).
    pub cursor: Option<String>,
    /// Only those whose body (the event's JSON text as it was sent) contains this text:
    /// exact bytes, case-sensitive, so `"userId":"u7"` finds user `u7` and not `u70`. 1 to
    /// [`MAX_CONTAINS`] bytes. A page reads at most [`SEARCH_SCAN`] letters after its cursor:
    /// when it stops there, it may hold fewer than `limit` (none, even) while its `next` is
    /// set, and the caller pages on.
    pub contains: Option<String>,
}

impl Default for DeadLetterQuery {
    fn default() -> Self {
        DeadLetterQuery {
            since: None,
            until: None,
            limit: 100,
            cursor: None,
            contains: None,
        }
    }
}

/// One page of dead letters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadLetterPage {
    /// Newest first, without their bodies.
    pub letters: Vec<DeadLetter>,
    /// The cursor of the next page, when there may be one. A search
    /// ([`DeadLetterQuery::contains`]) that read [`SEARCH_SCAN`] letters stops there: its
    /// page may hold fewer than `limit` while `next` is set.
    pub next: Option<String>,
}

/// A client's dead letters in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeadLetterStats {
    /// Dead letters kept now.
    pub count: u64,
    /// Their bytes, as `dead_letter_max_bytes` counts them (bodies, ids, attempts).
    pub bytes: u64,
    /// Dropped, oldest first, to stay within `dead_letter_max_bytes` (since the store was
    /// opened).
    pub evicted: u64,
    /// Dropped after `dead_letter_retention` (since the store was opened).
    pub expired: u64,
}

/// How a replay of many dead letters goes ([`Client::replay_dead_letters`](crate::Client::replay_dead_letters)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayProgress {
    /// The replay's number, for [`Client::replay_progress`](crate::Client::replay_progress).
    pub id: u64,
    /// Dead letters it took (those of its range not already replaying).
    pub total: u64,
    /// Handed to delivery so far (a few at a time, as the queue has room).
    pub sent: u64,
    /// Delivered: they left the dead letters.
    pub delivered: u64,
    /// Failed again: back in the dead letters with their new attempts.
    pub failed: u64,
    /// Gone before their turn (deleted, or dropped by the limits).
    pub skipped: u64,
    /// When it started.
    pub started: SystemTime,
}

impl ReplayProgress {
    /// Every dead letter it took has an outcome.
    pub fn done(&self) -> bool {
        self.delivered + self.failed + self.skipped >= self.total
    }
}

/// The refusal of a `cursor` that no page gave.
pub(crate) fn bad_cursor(text: &str) -> Error {
    Error::invalid(
        "cursor",
        format!("{text:?} is not a page's next (give the next of the page before, or none)"),
    )
}

/// A reason as a dead letter's row keeps it (`"status:400"`, `"gone"`, ...).
pub(crate) fn reason_code(reason: &Reason) -> String {
    match reason {
        Reason::Status(s) => format!("status:{s}"),
        Reason::Gone => "gone".into(),
        Reason::Blocked => "blocked".into(),
        Reason::Timeout => "timeout".into(),
        Reason::Connection => "connection".into(),
        Reason::Certificate => "certificate".into(),
        Reason::Expired => "expired".into(),
        Reason::Closed => "closed".into(),
        Reason::SendDisabled => "send_disabled".into(),
        Reason::Filtered => "filtered".into(),
        Reason::Other => "other".into(),
    }
}

/// The reason of a code written by [`reason_code`] (`Other` for anything else).
pub(crate) fn reason_of(code: &str) -> Reason {
    if let Some(s) = code.strip_prefix("status:") {
        return s.parse().map_or(Reason::Other, Reason::Status);
    }
    match code {
        "gone" => Reason::Gone,
        "blocked" => Reason::Blocked,
        "timeout" => Reason::Timeout,
        "connection" => Reason::Connection,
        "certificate" => Reason::Certificate,
        "expired" => Reason::Expired,
        "closed" => Reason::Closed,
        "send_disabled" => Reason::SendDisabled,
        "filtered" => Reason::Filtered,
        _ => Reason::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_back_as_written() {
        for r in [
            Reason::Status(400),
            Reason::Gone,
            Reason::Blocked,
            Reason::Expired,
            Reason::Certificate,
            Reason::Other,
        ] {
            assert_eq!(reason_of(&reason_code(&r)), r);
        }
    }
}
