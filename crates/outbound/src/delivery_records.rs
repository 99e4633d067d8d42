//! What a client shows of its webhook deliveries: each URL's last attempts and health
//! (kept in memory, `delivery/watch.rs`), and its dead letters, with their replay (kept in
//! the spool's store, `durable/dead.rs`; asked of the spool writer, `delivery/replay.rs`).
//! A binding or the relay only converts these.

use crate::client::Client;
use crate::delivery::command::{Answer, Ask};
use crate::delivery::watch::Keep;
use crate::durable::dead::{unix_ms, Pick};
use crate::error::Error;
use crate::model::attempts::{
    AttemptQuery, WebhookAttempt, WebhookHealth, WebhookMinute, MAX_ATTEMPT_LOG_SIZE,
};
use crate::model::dead_letter::{
    DeadLetter, DeadLetterPage, DeadLetterQuery, DeadLetterStats, ReplayProgress, MAX_CONTAINS,
    MAX_PAGE,
};
use std::time::SystemTime;

fn unexpected() -> Error {
    Error::config("dead_letters", "the spool writer gave an unexpected answer")
}

impl Client {
    /// Webhook `webhook`'s last attempts (up to 100, any outcome), newest first: message id,
    /// time, duration, status or error class, and for failures the first 1 KiB of the
    /// answer. Kept in memory for URLs with recent traffic (all of a process's logs within
    /// one budget, the oldest freed first): empty for a URL with none. See
    /// [`webhook_attempts_where`](Self::webhook_attempts_where) to choose.
    pub fn webhook_attempts(&self, webhook: usize) -> Result<Vec<WebhookAttempt>, Error> {
        self.webhook_attempts_where(webhook, &AttemptQuery::default())
    }

    /// Webhook `webhook`'s kept attempts that `query` asks for, newest first: by result,
    /// status, message and time, at most `query.limit` (1 to
    /// [`MAX_ATTEMPT_LOG_SIZE`]). How many are kept is `Config::attempt_log_size` and
    /// `Config::attempt_retention`.
    pub fn webhook_attempts_where(
        &self,
        webhook: usize,
        query: &AttemptQuery,
    ) -> Result<Vec<WebhookAttempt>, Error> {
        if !(1..=MAX_ATTEMPT_LOG_SIZE).contains(&query.limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be 1 to {MAX_ATTEMPT_LOG_SIZE}, got {}", query.limit),
            ));
        }
        let max_age = Keep::of(self.config()).max_age_ms;
        self.watched_url(webhook, |url| url.attempts(query, max_age))
    }

    /// Webhook `webhook`'s messages in each minute of the last hour that had any, oldest
    /// first: delivered, failed and abandoned ([`MessageCounts`](crate::MessageCounts)). Kept
    /// with its attempts (the same budget): empty for a URL with no recent traffic.
    pub fn webhook_minutes(&self, webhook: usize) -> Result<Vec<WebhookMinute>, Error> {
        self.watched_url(webhook, |url| url.hour())
    }

    fn watched_url<T>(
        &self,
        webhook: usize,
        read: impl FnOnce(&crate::delivery::watch::UrlWatch) -> T,
    ) -> Result<T, Error> {
        let urls = self.watched();
        match urls.get(webhook) {
            Some(url) => Ok(read(url)),
            None => Err(Error::invalid(
                "webhook",
                format!(
                    "{webhook} is not a webhook of this client (it has {})",
                    urls.len()
                ),
            )),
        }
    }

    /// Each webhook URL's health, in the order of `webhooks`: healthy, failing, circuit
    /// open or disabled; success rate and p50/p99 latency over the last five minutes;
    /// failures in a row, last error, last success, messages waiting; and what became of
    /// its messages (delivered, failed, retrying, abandoned because another URL took them).
    pub fn webhook_health(&self) -> Vec<WebhookHealth> {
        let urls = self.config().webhooks.iter();
        let urls = urls.map(|w| crate::log::redact_url(&w.url));
        self.watched()
            .iter()
            .zip(urls)
            .map(|(u, url)| u.health(url))
            .collect()
    }

    /// One page of dead letters (`dead_letters` on), newest first, without bodies.
    /// `limit` above 1,000 is refused, and so is a `contains` that is empty or longer than
    /// 256 bytes. A search reads at most
    /// [`DEAD_LETTER_SEARCH_SCAN`](crate::DEAD_LETTER_SEARCH_SCAN) letters a page: its page may be
    /// short (or empty) while `next` is set.
    pub fn dead_letters(&self, query: &DeadLetterQuery) -> Result<DeadLetterPage, Error> {
        if query.limit == 0 || query.limit > MAX_PAGE {
            return Err(Error::invalid(
                "limit",
                format!("must be 1 to {MAX_PAGE}, got {}", query.limit),
            ));
        }
        if let Some(text) = &query.contains {
            if text.is_empty() || text.len() > MAX_CONTAINS {
                return Err(Error::invalid(
                    "contains",
                    format!("must be 1 to {MAX_CONTAINS} bytes, got {}", text.len()),
                ));
            }
        }
        match self.ask(Ask::List(query.clone()))? {
            Answer::Page(page) => Ok(page),
            _ => Err(unexpected()),
        }
    }

    /// The dead letter of message `id`, with its body; `None` when there is none.
    pub fn dead_letter(&self, id: &str) -> Result<Option<DeadLetter>, Error> {
        match self.ask(Ask::Get(id.to_string()))? {
            Answer::Letter(letter) => Ok(letter.map(|l| *l)),
            _ => Err(unexpected()),
        }
    }

    /// Discards the dead letter of message `id`; whether there was one.
    pub fn delete_dead_letter(&self, id: &str) -> Result<bool, Error> {
        match self.ask(Ask::Delete(id.to_string()))? {
            Answer::Deleted(found) => Ok(found),
            _ => Err(unexpected()),
        }
    }

    /// Sends the dead letter of message `id` again through the normal path: the same
    /// `messageId`, a fresh retry window, signed with the current secret, to every webhook
    /// (or to `webhook` alone). It stays listed (as replaying) until the replay has an
    /// outcome: delivered, it leaves the dead letters; failed, it is back with its new
    /// attempts. Its outcome reaches `on_outcome` and the counters as a resumed message's.
    /// `None` when there is no such dead letter, or it is being replayed already.
    pub fn replay_dead_letter(
        &self,
        id: &str,
        webhook: Option<usize>,
    ) -> Result<Option<ReplayProgress>, Error> {
        let mask = self.mask(webhook)?;
        match self.ask(Ask::Replay(Pick::One(id.to_string()), mask))? {
            Answer::Replay(progress) => Ok(progress),
            _ => Err(unexpected()),
        }
    }

    /// Replays every dead letter that failed at or after `since` and before `until` (either
    /// open), to every webhook or to `webhook` alone, in the background, a window at a time:
    /// its progress from [`replay_progress`](Self::replay_progress). Dead letters being
    /// replayed already are left to that replay. A crash midway loses nothing and sends
    /// nothing twice beyond at least once: what it marked is replayed by the next client
    /// on the spool.
    pub fn replay_dead_letters(
        &self,
        since: Option<SystemTime>,
        until: Option<SystemTime>,
        webhook: Option<usize>,
    ) -> Result<ReplayProgress, Error> {
        let mask = self.mask(webhook)?;
        let pick = Pick::Range {
            since: since.map_or(i64::MIN, unix_ms),
            until: until.map_or(i64::MAX, unix_ms),
        };
        match self.ask(Ask::Replay(pick, mask))? {
            Answer::Replay(Some(progress)) => Ok(progress),
            // Nothing in the range: a replay with nothing to do.
            Answer::Replay(None) => Ok(ReplayProgress {
                id: 0,
                total: 0,
                sent: 0,
                delivered: 0,
                failed: 0,
                skipped: 0,
                started: SystemTime::now(),
            }),
            _ => Err(unexpected()),
        }
    }

    /// How replay `id` of this client goes (the newest 256 replays of the process are kept);
    /// another client's replay, or one of a tenant of another name, is not found.
    pub fn replay_progress(&self, id: u64) -> Result<Option<ReplayProgress>, Error> {
        match self.ask(Ask::Progress(id))? {
            Answer::Replay(progress) => Ok(progress),
            _ => Err(unexpected()),
        }
    }

    /// How many dead letters are kept, their bytes, and how many the limits dropped.
    pub fn dead_letter_stats(&self) -> Result<DeadLetterStats, Error> {
        match self.ask(Ask::Stats)? {
            Answer::Stats(stats) => Ok(stats),
            _ => Err(unexpected()),
        }
    }

    /// The URL mask of a replay to `webhook` (0: all).
    fn mask(&self, webhook: Option<usize>) -> Result<u8, Error> {
        match webhook {
            None => Ok(0),
            Some(i) if i < self.config().webhooks.len() => Ok(1 << i),
            Some(i) => Err(Error::invalid(
                "webhook",
                format!(
                    "{i} is not a webhook of this client (it has {})",
                    self.config().webhooks.len()
                ),
            )),
        }
    }
}
