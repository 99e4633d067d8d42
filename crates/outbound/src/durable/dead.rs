//! Dead letters in the store: the vocabulary both engines share ([`DeadOp`], [`DeadRecord`],
//! [`Replay`]) and the trait they implement ([`DeadLetters`]: `sqlite/dead.rs` in the spool's
//! file, `redis/dead.rs` under keys of its own). A dead letter is written in the same commit
//! as the progress of its message where the engine allows (SQLite: one transaction), so a
//! crash neither loses it nor keeps a message both pending and dead.
//!
//! **Replays.** A replay marks its dead letters as replaying (one statement, however many):
//! from then on the row itself is the pending message. The spool writer reads marked rows in
//! order (`replaying`) and hands them to delivery a few at a time; a replay delivered removes
//! the row ([`DeadOp::Delivered`]), one that fails again rewrites it ([`DeadOp::Put`], the mark
//! cleared). A process that dies mid-replay leaves the marks: the next one on the store (an
//! adopter of the file) replays them, so nothing is lost, and nothing is sent twice beyond
//! the at-least-once of any pending message.

use crate::error::Error;
use crate::model::attempts::{AttemptResult, ErrorClass, WebhookAttempt};
use crate::model::dead_letter::{DeadLetter, DeadLetterPage, DeadLetterQuery, DeadLetterStats};
use crate::wire::Body;
use base64::Engine as _;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::TenantNo;

/// A message that failed, as its dead letter is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeadRecord {
    pub tenant: TenantNo,
    pub id: Arc<str>,
    pub failed_ms: i64,
    /// `model::dead_letter::reason_code`.
    pub reason: String,
    pub detail: String,
    pub rounds: u32,
    pub first_ms: Option<i64>,
    /// Each URL's last attempt, as [`attempts_json`] writes them.
    pub attempts: String,
    pub body: Body,
    /// The replay it failed again in, if any (its progress counts it).
    pub job: Option<u64>,
}

impl DeadRecord {
    /// What `dead_letter_max_bytes` counts of it.
    pub(crate) fn bytes(&self) -> u64 {
        (self.id.len() + self.body.len() + self.attempts.len() + self.detail.len()) as u64
    }
}

/// A change to the dead letters, committed with the spool's ops.
#[derive(Clone, Debug)]
pub(crate) enum DeadOp {
    /// A message failed (again): its dead letter, replacing one of the same id.
    Put(Box<DeadRecord>),
    /// A replay delivered it: the dead letter leaves.
    Delivered {
        tenant: TenantNo,
        id: Arc<str>,
        job: Option<u64>,
    },
}

/// A tenant's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeadLimits {
    pub retention: Duration,
    pub max_bytes: u64,
}

/// Which dead letters a replay takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    One(String),
    /// Failed at or after `since`, before `until` (Unix ms).
    Range {
        since: i64,
        until: i64,
    },
}

/// What [`DeadLetters::mark_replay`] marked: `count` rows, whose marks are `(after, upto]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marked {
    pub count: u64,
    pub after: i64,
    pub upto: i64,
}

/// A dead letter marked as replaying, to hand to delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replay {
    pub id: Arc<str>,
    pub body: Body,
    /// The URLs it goes to (bit `i`: webhook `i`), as chosen when it was marked; 0: all.
    pub mask: u8,
    /// Its place in the order marked rows are handed out ([`DeadLetters::replaying`]).
    pub seq: i64,
    /// Not to be handed out by this store (another one replays it), only passed.
    pub skip: bool,
}

/// Dead letters kept by a store. Used from the spool writer's thread.
pub(crate) trait DeadLetters: Send {
    /// Tenant `no` (named `name`) keeps dead letters within `limits`.
    fn configure(&mut self, no: TenantNo, name: &str, limits: DeadLimits) -> Result<(), Error>;

    /// Applies `ops` in a commit of their own (durable when it returns).
    fn apply_dead(&mut self, ops: &[DeadOp]) -> Result<(), Error>;

    /// One page, newest first.
    fn list(&mut self, no: TenantNo, q: &DeadLetterQuery) -> Result<DeadLetterPage, Error>;

    /// One dead letter, with its body.
    fn get(&mut self, no: TenantNo, id: &str) -> Result<Option<DeadLetter>, Error>;

    /// Removes one; whether it was there.
    fn delete(&mut self, no: TenantNo, id: &str) -> Result<bool, Error>;

    /// Marks what `pick` names as replaying to the URLs of `mask` (0: all), leaving those
    /// already marked. Marks are above every mark given before.
    fn mark_replay(&mut self, no: TenantNo, pick: &Pick, mask: u8) -> Result<Marked, Error>;

    /// Rows marked as replaying, in the order they were marked, after `after` (a
    /// [`Replay::seq`]; `None`: from the first), at most `limit`.
    fn replaying(
        &mut self,
        no: TenantNo,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Replay>, Error>;

    /// Drops what is past its tenant's retention.
    fn expire(&mut self, now_ms: i64) -> Result<(), Error>;

    /// Tenant `no`'s counts.
    fn stats(&mut self, no: TenantNo) -> Result<DeadLetterStats, Error>;

    /// The counts of each of `nos`, in their order, at once (a service's scrape of all its
    /// tenants). Default: [`stats`](Self::stats) of each, which the store keeps counted.
    fn stats_of(&mut self, nos: &[TenantNo]) -> Result<Vec<DeadLetterStats>, Error> {
        nos.iter().map(|no| self.stats(*no)).collect()
    }
}

pub(crate) fn unix_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis().min(i64::MAX as u128) as i64,
        Err(e) => -(e.duration().as_millis().min(i64::MAX as u128) as i64),
    }
}

pub(crate) fn time_of(ms: i64) -> SystemTime {
    match u64::try_from(ms) {
        Ok(ms) => UNIX_EPOCH + Duration::from_millis(ms),
        Err(_) => UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs()),
    }
}

/// The URLs' last attempts as a dead letter keeps them (JSON: the answer in base64, times in
/// Unix ms, durations in µs).
pub(crate) fn attempts_json(attempts: &[WebhookAttempt]) -> String {
    let list: Vec<Value> = attempts
        .iter()
        .map(|a| {
            let mut o = Map::new();
            o.insert("webhook".into(), json!(a.webhook));
            o.insert("at".into(), json!(unix_ms(a.at)));
            o.insert("us".into(), json!(a.duration.as_micros() as u64));
            o.insert("result".into(), json!(a.result.as_str()));
            if let Some(s) = a.status {
                o.insert("status".into(), json!(s));
            }
            if let Some(e) = a.error {
                o.insert("error".into(), json!(e.as_str()));
            }
            if !a.detail.is_empty() {
                o.insert("detail".into(), json!(a.detail));
            }
            if let Some(b) = &a.answer {
                let b64 = base64::engine::general_purpose::STANDARD.encode(b);
                o.insert("answer".into(), json!(b64));
            }
            Value::Object(o)
        })
        .collect();
    Value::Array(list).to_string()
}

/// [`attempts_json`] read back, for message `id` (what cannot be read is left out: a row
/// is never refused for it).
pub(crate) fn attempts_of(text: &str, id: &str) -> Vec<WebhookAttempt> {
    let Ok(Value::Array(list)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let id: Arc<str> = Arc::from(id);
    list.iter()
        .filter_map(|o| {
            Some(WebhookAttempt {
                webhook: o.get("webhook")?.as_u64()? as usize,
                message_id: id.clone(),
                at: time_of(o.get("at")?.as_i64()?),
                duration: Duration::from_micros(o.get("us")?.as_u64()?),
                result: AttemptResult::parse(o.get("result")?.as_str()?)?,
                status: o
                    .get("status")
                    .and_then(Value::as_u64)
                    .and_then(|s| u16::try_from(s).ok()),
                error: o
                    .get("error")
                    .and_then(Value::as_str)
                    .and_then(ErrorClass::parse),
                detail: o
                    .get("detail")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                answer: o
                    .get("answer")
                    .and_then(Value::as_str)
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                    .map(Arc::from),
                request_headers: Vec::new(),
                answer_headers: Vec::new(),
            })
        })
        .collect()
}

/// The window of a query in Unix ms: `[since, until)`.
pub(crate) fn window(q: &DeadLetterQuery) -> (i64, i64) {
    (
        q.since.map_or(i64::MIN, unix_ms),
        q.until.map_or(i64::MAX, unix_ms),
    )
}

/// A search's pages across [`SEARCH_SCAN`](crate::model::dead_letter::SEARCH_SCAN), run
/// against each engine's store (`sqlite/tests.rs`, `redis/tests.rs`).
#[cfg(test)]
pub(crate) mod search_check {
    use super::*;
    use crate::model::dead_letter::SEARCH_SCAN;

    const EXTRA: usize = 400;
    /// Letters at one failure time: more than a fetch reads at once, so ties span fetches.
    const TIES: usize = 300;

    fn id(i: usize) -> String {
        format!("m-{i:05}")
    }

    /// Tenant `no` (already configured) gets `SEARCH_SCAN + EXTRA` letters, newest last; two
    /// hold the searched text, one past the bound from the first.
    pub(crate) fn a_search_pages_across_the_scan_bound(store: &mut dyn DeadLetters, no: TenantNo) {
        let n = SEARCH_SCAN + EXTRA;
        let (near, far) = (3, SEARCH_SCAN + 100); // places, newest first
        let ops: Vec<DeadOp> = (0..n)
            .map(|i| {
                let place = n - 1 - i;
                let order = match place == near || place == far {
                    true => "\"orderId\":\"ord-7\"",
                    false => "\"orderId\":\"ord-70\"",
                };
                DeadOp::Put(Box::new(DeadRecord {
                    tenant: no,
                    id: Arc::from(id(i)),
                    failed_ms: 1_000 + (i / TIES) as i64,
                    reason: "status:400".into(),
                    detail: "webhooks: status 400".into(),
                    rounds: 1,
                    first_ms: None,
                    attempts: "[]".into(),
                    body: Body::from(format!("{{\"userId\":\"u{i}\",{order}}}").into_bytes()),
                    job: None,
                }))
            })
            .collect();
        store.apply_dead(&ops).unwrap();
        let newest_first: Vec<String> = (0..n).rev().map(id).collect();
        let pages = |store: &mut dyn DeadLetters, mut q: DeadLetterQuery| {
            let mut out = Vec::new();
            loop {
                let page = store.list(no, &q).unwrap();
                out.push(
                    page.letters
                        .iter()
                        .map(|l| l.message_id.clone())
                        .collect::<Vec<_>>(),
                );
                match page.next {
                    Some(next) => q.cursor = Some(next),
                    None => return out,
                }
            }
        };
        // A plain list: every letter once, in order, ties and all.
        let all = pages(
            store,
            DeadLetterQuery {
                limit: 1000,
                ..Default::default()
            },
        );
        assert_eq!(all.concat(), newest_first);
        // The first page reads to the bound and finds one: short, with a next.
        let search = DeadLetterQuery {
            limit: 10,
            contains: Some("\"ord-7\"".into()),
            ..Default::default()
        };
        let found = pages(store, search.clone());
        let want = vec![newest_first[near].clone(), newest_first[far].clone()];
        assert_eq!(found, vec![vec![want[0].clone()], vec![want[1].clone()]]);
        // One at a time: a page between them reads its bound and finds none, yet goes on.
        let one = pages(
            store,
            DeadLetterQuery {
                limit: 1,
                ..search.clone()
            },
        );
        assert_eq!(one.concat(), want);
        assert!(one.iter().any(Vec::is_empty), "{one:?}");
        // The window applies: the far one alone before the time of the near one's tie group.
        let near_ms = 1_000 + ((n - 1 - near) / TIES) as u64;
        let until = UNIX_EPOCH + Duration::from_millis(near_ms);
        let before = pages(
            store,
            DeadLetterQuery {
                until: Some(until),
                ..search.clone()
            },
        );
        assert_eq!(before.concat(), vec![want[1].clone()]);
        let since = pages(
            store,
            DeadLetterQuery {
                since: Some(until),
                ..search
            },
        );
        assert_eq!(since.concat(), vec![want[0].clone()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_attempts_read_back_as_written() {
        let a = WebhookAttempt {
            webhook: 2,
            message_id: Arc::from("m"),
            at: time_of(1_700_000_000_123),
            duration: Duration::from_micros(1234),
            result: AttemptResult::Permanent,
            status: Some(400),
            error: None,
            detail: "status 400".into(),
            answer: Some(Arc::from(&b"{\"error\":\"bad\"}\xff"[..])),
            request_headers: Vec::new(),
            answer_headers: Vec::new(),
        };
        let b = WebhookAttempt {
            webhook: 0,
            status: None,
            error: Some(ErrorClass::Refused),
            answer: None,
            result: AttemptResult::Retryable,
            ..a.clone()
        };
        let text = attempts_json(&[a.clone(), b.clone()]);
        assert_eq!(attempts_of(&text, "m"), vec![a, b]);
        assert!(attempts_of("not json", "m").is_empty());
    }
}
