//! Each webhook URL's recent attempts and health, as the scheduler records them (one write
//! per answer, under the URL's own lock) and the client reads them (`Client::webhook_attempts`,
//! `Client::webhook_health`).
//!
//! **Memory.** A URL costs ~120 bytes while idle: its health (failures in a row, last error,
//! last success, messages waiting) and its messages' counts; its text is the client's
//! config's, given to [`UrlWatch::health`]. Its log (the last
//! [`LOG_ATTEMPTS`] attempts, with up to 1 KiB of each failure's answer, five one-minute
//! latency histograms, and an hour of its messages' ends a minute each) is made at its
//! first attempt, and all logs of the process together hold at most [`LOG_BUDGET`] bytes:
//! past it, the logs touched longest ago are freed whole (their URLs keep their health), so
//! 10,000 idle tenants of 5 URLs cost ~6 MiB, and a busy process ~[`LOG_BUDGET`] at most,
//! whatever the number of URLs.

use crate::http::attempt::{Attempt, Seen, SeenHeaders};
use crate::model::attempts::{
    AttemptQuery, AttemptResult, ErrorClass, HealthState, MessageCounts, WebhookAttempt,
    WebhookHealth, WebhookMinute, ANSWER_EXCERPT, ANSWER_KEPT, DEFAULT_ATTEMPT_LOG_SIZE,
};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Attempts a URL's log keeps without a setting (`Config::attempt_log_size`).
pub(crate) const LOG_ATTEMPTS: usize = DEFAULT_ATTEMPT_LOG_SIZE;

/// How much of its attempts a URL's log keeps (`Config::attempt_log_size`,
/// `Config::attempt_retention`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keep {
    pub size: usize,
    pub max_age_ms: i64,
}

impl Keep {
    pub(crate) fn of(config: &crate::Config) -> Keep {
        Keep {
            size: config.attempt_log_size,
            max_age_ms: config.attempt_retention.as_millis().min(i64::MAX as u128) as i64,
        }
    }
}

impl Default for Keep {
    fn default() -> Keep {
        Keep::of(&crate::Config::default())
    }
}
/// Bytes every URL log of the process holds at most, together.
pub(crate) const LOG_BUDGET: usize = 32 << 20;
/// The window of a URL's rates and latencies, in one-minute steps.
const MINUTES: usize = 5;
/// The minutes of its messages' ends a log keeps (the console's chart of the last hour).
const HOUR: usize = 60;
/// Latency buckets: a quarter of an octave each from 64 µs (the geometric middle of a bucket
/// is within 10 % of every duration in it), up to ~67 s.
const BUCKETS: usize = 80;
const FIRST_BUCKET_US: f64 = 64.0;
/// An error's words are kept up to this many bytes.
const DETAIL_MAX: usize = 300;

/// Bytes all logs hold now.
static LOG_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Every URL with a log (its watch's URLs and its place among them), for freeing the oldest
/// when the budget is spent.
static LOGS: Mutex<Vec<(Weak<[UrlWatch]>, u8)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn time_of(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// One client's webhook URLs, in the order of its `webhooks`: one allocation for them all,
/// as a relay holds thousands of clients' URLs idle.
#[derive(Default)]
pub(crate) struct Watch {
    pub urls: Arc<[UrlWatch]>,
}

impl Watch {
    /// A watch for `n` URLs; `disabled[i]` when URL `i` can never be reached (the network
    /// guard refuses its address).
    pub(crate) fn new(n: usize, disabled: &[usize]) -> Watch {
        let urls = (0..n)
            .map(|i| UrlWatch {
                index: i as u8,
                disabled: disabled.contains(&i),
                waiting: AtomicU64::new(0),
                throttled: AtomicU64::new(0),
                throttled_now: AtomicBool::new(false),
                retrying: AtomicU64::new(0),
                state: Mutex::new(State::default()),
            })
            .collect();
        Watch { urls }
    }

    /// Counts a message as waiting for each URL of `mask`.
    pub(crate) fn wait(&self, mask: u8) {
        self.each(mask, |u| {
            u.waiting.fetch_add(1, Relaxed);
        });
    }

    /// A message no longer waits for the URLs of `mask`.
    pub(crate) fn unwait(&self, mask: u8) {
        self.each(mask, |u| {
            let _ = u
                .waiting
                .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
        });
    }

    /// Takes over the records of `old`'s URLs that are still here, matched by URL (`urls`,
    /// this watch's in order; `old_urls`, `old`'s), not by place: a successor with changed
    /// settings shows what its predecessor saw of each URL it keeps. A URL listed twice
    /// takes its old namesakes in order. Copied, so `old` keeps them should it run again.
    pub(crate) fn adopt(&self, urls: &[&str], old: &Watch, old_urls: &[&str]) {
        let mut taken = vec![false; old_urls.len()];
        for (mine, url) in self.urls.iter().zip(urls) {
            let found = (old_urls.iter().enumerate()).position(|(j, o)| !taken[j] && o == url);
            if let Some(j) = found {
                taken[j] = true;
                if let Some(from) = old.urls.get(j) {
                    let (listed, over_budget) = mine.adopt(from);
                    self.listed(listed, mine, over_budget);
                }
            }
        }
    }

    /// Records `attempted` at URL `i` (nothing past its URLs); `keep` is how much of the log
    /// stays.
    pub(crate) fn record(&self, i: usize, attempted: Attempted<'_>, keep: Keep) {
        if let Some(u) = self.urls.get(i) {
            let (listed, over_budget) = u.record(attempted, keep);
            self.listed(listed, u, over_budget);
        }
    }

    /// After URL `u` of this watch recorded: lists it in [`LOGS`] when it has just made or
    /// taken a log, then frees the oldest logs when `over_budget`.
    fn listed(&self, listed: bool, u: &UrlWatch, over_budget: bool) {
        if listed {
            lock(&LOGS).push((Arc::downgrade(&self.urls), u.index));
        }
        if over_budget {
            free_oldest();
        }
    }

    /// Messages left the URLs of `mask`, each as `how`.
    pub(crate) fn left(&self, mask: u8, how: Left) {
        self.each(mask, |u| u.left(how, 1));
    }

    /// The URLs of `started` begin retrying a message, those of `ended` stop.
    pub(crate) fn retrying(&self, started: u8, ended: u8) {
        self.each(started, |u| {
            u.retrying.fetch_add(1, Relaxed);
        });
        self.each(ended, |u| {
            let _ = (u.retrying).fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
        });
    }

    fn each(&self, mask: u8, f: impl Fn(&UrlWatch)) {
        if mask == 0 {
            return;
        }
        for (i, u) in self.urls.iter().enumerate().take(8) {
            if mask & (1 << i) != 0 {
                f(u);
            }
        }
    }
}

/// One attempt as a URL's log takes it: message `id`, `attempt` classified, `seen` what its
/// exchange showed, `answer` a failure's excerpt as shared ([`Answers`]), `circuit_open`
/// the lane's state after it.
pub(crate) struct Attempted<'a> {
    pub id: &'a str,
    pub attempt: &'a Attempt,
    pub seen: &'a Seen,
    pub answer: Option<Arc<[u8]>>,
    pub circuit_open: bool,
}

/// One webhook URL: its health, and its log while it has traffic.
pub(crate) struct UrlWatch {
    /// Its place in `webhooks` (at most 5): a byte beside the flags, not a word of its own.
    index: u8,
    disabled: bool,
    /// Messages still to be delivered to it.
    pub waiting: AtomicU64,
    /// Requests that waited for its rate limit; whether one waits now.
    pub throttled: AtomicU64,
    pub throttled_now: AtomicBool,
    /// Messages it has failed that it will try again.
    retrying: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Messages it took, refused for good (or kept failing until their window closed), and
    /// gave up on because another URL took them (see [`Left`]).
    delivered: u64,
    failed: u64,
    abandoned: u64,
    consecutive_failures: u32,
    circuit_open: bool,
    last_success_ms: Option<i64>,
    last_error: Option<(i64, Box<str>)>,
    log: Option<Box<Log>>,
    /// Listed in [`LOGS`] (while it has a log).
    listed: bool,
}

#[derive(Clone)]
struct Log {
    entries: VecDeque<Entry>,
    minutes: [Minute; MINUTES],
    /// How messages left it, a minute each, for the last hour.
    hour: [Ends; HOUR],
    /// What it counts in [`LOG_BYTES`].
    bytes: usize,
    touched_ms: i64,
}

/// One minute of messages leaving a URL.
#[derive(Clone, Copy, Default)]
struct Ends {
    /// Unix minute it counts; 0: none yet.
    minute: i64,
    delivered: u32,
    failed: u32,
    abandoned: u32,
}

/// How a message left a URL: what the URL's accounting counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// It answered 2xx.
    Delivered,
    /// It refused the message for good, or kept failing it until its retry window closed.
    Failed,
    /// It had failed the message and was to try again, but another URL took it (success
    /// at any one URL is success): no more tries here.
    Abandoned,
}

/// A message id as a log keeps it: in place when short (every id we make is 36 bytes), so
/// recording an attempt allocates nothing for it.
#[derive(Clone)]
enum SmallId {
    Inline([u8; 40], u8),
    Shared(Arc<str>),
}

impl SmallId {
    fn of(id: &str) -> SmallId {
        match id.len() {
            n @ 0..=40 => {
                let mut b = [0u8; 40];
                b[..n].copy_from_slice(id.as_bytes());
                SmallId::Inline(b, n as u8)
            }
            _ => SmallId::Shared(Arc::from(id)),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            SmallId::Inline(b, n) => std::str::from_utf8(&b[..usize::from(*n)]).unwrap_or(""),
            SmallId::Shared(s) => s,
        }
    }

    /// Heap bytes it holds.
    fn heap(&self) -> usize {
        match self {
            SmallId::Inline(..) => 0,
            SmallId::Shared(s) => s.len() + 16,
        }
    }
}

#[derive(Clone)]
struct Entry {
    id: SmallId,
    at_ms: i64,
    took: Duration,
    result: AttemptResult,
    status: Option<u16>,
    error: Option<ErrorClass>,
    detail: Option<Box<str>>,
    answer: Option<Arc<[u8]>>,
    headers: Option<Box<SeenHeaders>>,
}

impl Entry {
    fn bytes(&self) -> usize {
        let headers = |list: &[(String, String)]| -> usize {
            list.iter().map(|(k, v)| k.len() + v.len() + 48).sum()
        };
        std::mem::size_of::<Entry>()
            + self.id.heap()
            + self.detail.as_ref().map_or(0, |d| d.len())
            + self.answer.as_ref().map_or(0, |a| a.len() + 16)
            + (self.headers.as_ref()).map_or(0, |h| {
                std::mem::size_of::<SeenHeaders>() + headers(&h.request) + headers(&h.answer)
            })
    }
}

#[derive(Clone, Copy)]
struct Minute {
    /// Unix minute it counts; 0: none yet.
    minute: i64,
    attempts: u32,
    delivered: u32,
    hist: [u32; BUCKETS],
}

impl Default for Minute {
    fn default() -> Self {
        Minute {
            minute: 0,
            attempts: 0,
            delivered: 0,
            hist: [0; BUCKETS],
        }
    }
}

fn bucket(took: Duration) -> usize {
    let us = took.as_secs_f64() * 1e6;
    if us <= FIRST_BUCKET_US {
        return 0;
    }
    ((us / FIRST_BUCKET_US).log2() * 4.0)
        .floor()
        .min((BUCKETS - 1) as f64) as usize
}

/// A bucket's geometric middle.
fn bucket_value(b: usize) -> Duration {
    Duration::from_secs_f64(FIRST_BUCKET_US * 2f64.powf((b as f64 + 0.5) / 4.0) / 1e6)
}

/// `detail` cut to [`DETAIL_MAX`] bytes at a character boundary.
fn clip(detail: &str) -> String {
    let mut end = detail.len().min(DETAIL_MAX);
    while !detail.is_char_boundary(end) {
        end -= 1;
    }
    detail[..end].to_string()
}

/// One attempt to webhook `webhook` as a record: `attempt` classified, `seen` what its
/// exchange showed, `answer` its excerpt as shared (see [`Answers`]).
pub(crate) fn tried(
    webhook: usize,
    id: Arc<str>,
    attempt: &Attempt,
    seen: &Seen,
    answer: Option<Arc<[u8]>>,
) -> WebhookAttempt {
    let now = SystemTime::now();
    let (result, detail) = match attempt {
        Attempt::Success => (AttemptResult::Delivered, String::new()),
        Attempt::Retryable { detail, .. } => (AttemptResult::Retryable, clip(detail)),
        Attempt::Permanent { detail, .. } => (AttemptResult::Permanent, clip(detail)),
    };
    WebhookAttempt {
        webhook,
        message_id: id,
        at: now.checked_sub(seen.took).unwrap_or(now),
        duration: seen.took,
        result,
        status: seen.status,
        error: seen.error,
        detail,
        // A dead letter keeps the start of it: it is written to disk with the letter.
        answer: answer.map(|a| match a.len() > ANSWER_EXCERPT {
            true => Arc::from(&a[..ANSWER_EXCERPT]),
            false => a,
        }),
        request_headers: Vec::new(),
        answer_headers: Vec::new(),
    }
}

/// The last excerpt of each URL's answers, shared by the records of the answers that repeat
/// it (a receiver's error page is the same for every message that waits to be retried).
#[derive(Default)]
pub(crate) struct Answers {
    last: Vec<Option<Arc<[u8]>>>,
}

impl Answers {
    /// `excerpt` (at most [`ANSWER_KEPT`] bytes) of URL `webhook`, shared with its last.
    pub(crate) fn share(&mut self, webhook: usize, excerpt: Option<&[u8]>) -> Option<Arc<[u8]>> {
        let excerpt = excerpt?;
        let excerpt = &excerpt[..excerpt.len().min(ANSWER_KEPT)];
        if self.last.len() <= webhook {
            self.last.resize(webhook + 1, None);
        }
        match &self.last[webhook] {
            Some(last) if **last == *excerpt => Some(last.clone()),
            _ => {
                let new: Arc<[u8]> = Arc::from(excerpt);
                self.last[webhook] = Some(new.clone());
                Some(new)
            }
        }
    }
}

impl UrlWatch {
    /// [`Watch::record`] of this URL; whether it is to be listed in [`LOGS`] now, and
    /// whether the logs are over the budget.
    fn record(&self, attempted: Attempted<'_>, keep: Keep) -> (bool, bool) {
        let Attempted {
            id,
            attempt,
            seen,
            answer,
            circuit_open,
        } = attempted;
        let now_ms = unix_ms(SystemTime::now());
        let (result, detail) = match attempt {
            Attempt::Success => (AttemptResult::Delivered, None),
            Attempt::Retryable { detail, .. } => (AttemptResult::Retryable, Some(clip(detail))),
            Attempt::Permanent { detail, .. } => (AttemptResult::Permanent, Some(clip(detail))),
        };
        let entry = Entry {
            id: SmallId::of(id),
            at_ms: now_ms - seen.took.as_millis() as i64,
            took: seen.took,
            result,
            status: seen.status,
            error: seen.error,
            detail: detail.map(String::into_boxed_str),
            answer,
            headers: seen.headers.clone(),
        };
        let mut over_budget = false;
        let mut listed = false;
        {
            let mut s = lock(&self.state);
            s.circuit_open = circuit_open;
            match (&entry.detail, result) {
                (None, _) => {
                    s.consecutive_failures = 0;
                    s.last_success_ms = Some(now_ms);
                }
                (Some(detail), _) => {
                    s.consecutive_failures = s.consecutive_failures.saturating_add(1);
                    s.last_error = Some((now_ms, detail.clone()));
                }
            }
            let log = s.log.get_or_insert_with(|| {
                let entries = VecDeque::with_capacity(keep.size.min(LOG_ATTEMPTS));
                let log = Box::new(Log {
                    bytes: std::mem::size_of::<Log>()
                        + entries.capacity() * std::mem::size_of::<Entry>(),
                    entries,
                    minutes: [Minute::default(); MINUTES],
                    hour: [Ends::default(); HOUR],
                    touched_ms: now_ms,
                });
                LOG_BYTES.fetch_add(log.bytes, Relaxed);
                log
            });
            log.touched_ms = now_ms;
            let minute = now_ms.div_euclid(60_000);
            let slot = &mut log.minutes[minute.rem_euclid(MINUTES as i64) as usize];
            if slot.minute != minute {
                *slot = Minute {
                    minute,
                    ..Minute::default()
                };
            }
            slot.attempts += 1;
            slot.delivered += u32::from(result == AttemptResult::Delivered);
            slot.hist[bucket(entry.took)] += 1;
            let mut added = entry.bytes() - std::mem::size_of::<Entry>();
            let mut freed = 0;
            // The oldest go: past the count, and past the age.
            let too_old = now_ms.saturating_sub(keep.max_age_ms);
            while log.entries.len() >= keep.size.max(1)
                || log.entries.front().is_some_and(|e| e.at_ms < too_old)
            {
                match log.entries.pop_front() {
                    Some(old) => freed += old.bytes() - std::mem::size_of::<Entry>(),
                    None => break,
                }
            }
            let capacity = log.entries.capacity();
            log.entries.push_back(entry);
            added += (log.entries.capacity() - capacity) * std::mem::size_of::<Entry>();
            if freed > added {
                LOG_BYTES.fetch_sub(freed - added, Relaxed);
                log.bytes -= freed - added;
            } else {
                added -= freed;
                log.bytes += added;
                over_budget = LOG_BYTES.fetch_add(added, Relaxed) + added > LOG_BUDGET;
            }
            if !s.listed {
                s.listed = true;
                listed = true;
            }
        }
        (listed, over_budget)
    }

    /// A copy of `from`'s records (health and log), for a new watch of the same URL nobody
    /// records into yet. What waits is not copied (the successor counts its messages itself
    /// as it resumes them), nor the throttled requests, counted per client as documented.
    /// Whether it is to be listed in [`LOGS`] now, and whether the logs are over the budget.
    fn adopt(&self, from: &UrlWatch) -> (bool, bool) {
        let copy = {
            let s = lock(&from.state);
            State {
                delivered: s.delivered,
                failed: s.failed,
                abandoned: s.abandoned,
                consecutive_failures: s.consecutive_failures,
                circuit_open: s.circuit_open,
                last_success_ms: s.last_success_ms,
                last_error: s.last_error.clone(),
                log: s.log.clone(),
                listed: false,
            }
        };
        let bytes = copy.log.as_ref().map_or(0, |l| l.bytes);
        let over_budget = bytes > 0 && LOG_BYTES.fetch_add(bytes, Relaxed) + bytes > LOG_BUDGET;
        {
            let mut s = lock(&self.state);
            if let Some(log) = s.log.take() {
                LOG_BYTES.fetch_sub(log.bytes, Relaxed);
            }
            *s = copy;
            s.listed = s.log.is_some();
        }
        (bytes > 0, over_budget)
    }

    /// `n` messages left it as `how`: counted, and in its log's minute (while it has a log:
    /// a log freed for the budget starts its hour again).
    pub(crate) fn left(&self, how: Left, n: u64) {
        let now_ms = unix_ms(SystemTime::now());
        let mut s = lock(&self.state);
        match how {
            Left::Delivered => s.delivered += n,
            Left::Failed => s.failed += n,
            Left::Abandoned => s.abandoned += n,
        }
        if let Some(log) = &mut s.log {
            let minute = now_ms.div_euclid(60_000);
            let slot = &mut log.hour[minute.rem_euclid(HOUR as i64) as usize];
            if slot.minute != minute {
                *slot = Ends {
                    minute,
                    ..Ends::default()
                };
            }
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            let count = match how {
                Left::Delivered => &mut slot.delivered,
                Left::Failed => &mut slot.failed,
                Left::Abandoned => &mut slot.abandoned,
            };
            *count = count.saturating_add(n);
        }
    }

    /// Its messages' ends in each minute of the last hour that had any, oldest first.
    pub(crate) fn hour(&self) -> Vec<WebhookMinute> {
        let s = lock(&self.state);
        let now_minute = unix_ms(SystemTime::now()).div_euclid(60_000);
        let mut minutes: Vec<WebhookMinute> = (s.log.iter().flat_map(|l| l.hour.iter()))
            .filter(|m| m.minute > now_minute - HOUR as i64 && m.minute <= now_minute)
            .map(|m| WebhookMinute {
                start: time_of(m.minute * 60_000),
                delivered: u64::from(m.delivered),
                failed: u64::from(m.failed),
                abandoned: u64::from(m.abandoned),
            })
            .collect();
        minutes.sort_by_key(|m| m.start);
        minutes
    }

    /// Its failures in a row while its lane held back to probes at its last answer; `None`
    /// while the lane was up: what a successor's lane starts from.
    pub(crate) fn circuit(&self) -> Option<u32> {
        let s = lock(&self.state);
        s.circuit_open.then_some(s.consecutive_failures)
    }

    /// Its attempts that `query` asks for, newest first, none older than `max_age_ms`.
    pub(crate) fn attempts(&self, query: &AttemptQuery, max_age_ms: i64) -> Vec<WebhookAttempt> {
        let too_old = unix_ms(SystemTime::now()).saturating_sub(max_age_ms);
        let since = query.since.map_or(too_old, |t| unix_ms(t).max(too_old));
        let until = query.until.map(unix_ms);
        let s = lock(&self.state);
        let Some(log) = &s.log else {
            return Vec::new();
        };
        log.entries
            .iter()
            .rev()
            // Logged as answered, which is nearly but not exactly by start: all are looked at.
            .filter(|e| e.at_ms >= since && until.is_none_or(|u| e.at_ms < u))
            .filter(|e| query.result.is_none_or(|r| r == e.result))
            .filter(|e| query.status.is_none_or(|st| Some(st) == e.status))
            .filter(|e| (query.message_id.as_deref()).is_none_or(|id| id == e.id.as_str()))
            .take(query.limit)
            .map(|e| WebhookAttempt {
                webhook: usize::from(self.index),
                message_id: Arc::from(e.id.as_str()),
                at: time_of(e.at_ms),
                duration: e.took,
                result: e.result,
                status: e.status,
                error: e.error,
                detail: e.detail.as_deref().unwrap_or("").to_string(),
                answer: e.answer.clone(),
                request_headers: (e.headers.as_ref()).map_or_else(Vec::new, |h| h.request.clone()),
                answer_headers: (e.headers.as_ref()).map_or_else(Vec::new, |h| h.answer.clone()),
            })
            .collect()
    }

    /// Its health now; `url` is the URL as shown (its webhook's, without path or query),
    /// which a client's config holds already.
    pub(crate) fn health(&self, url: String) -> WebhookHealth {
        let s = lock(&self.state);
        let now_minute = unix_ms(SystemTime::now()).div_euclid(60_000);
        let mut hist = [0u64; BUCKETS];
        let (mut attempts, mut delivered) = (0u64, 0u64);
        for m in s.log.iter().flat_map(|l| l.minutes.iter()) {
            if m.minute > now_minute - MINUTES as i64 && m.minute <= now_minute {
                attempts += u64::from(m.attempts);
                delivered += u64::from(m.delivered);
                for (h, n) in hist.iter_mut().zip(m.hist) {
                    *h += u64::from(n);
                }
            }
        }
        let quantile = |q: f64| -> Option<Duration> {
            if attempts == 0 {
                return None;
            }
            let rank = ((attempts as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            hist.iter().enumerate().find_map(|(b, n)| {
                seen += n;
                (seen >= rank).then(|| bucket_value(b))
            })
        };
        let state = if self.disabled {
            HealthState::Disabled
        } else if s.circuit_open {
            HealthState::CircuitOpen
        } else if s.consecutive_failures > 0 {
            HealthState::Failing
        } else if self.throttled_now.load(Relaxed) {
            HealthState::Throttled
        } else {
            HealthState::Healthy
        };
        WebhookHealth {
            webhook: usize::from(self.index),
            url,
            state,
            attempts_5m: attempts,
            delivered_5m: delivered,
            success_rate_5m: (attempts > 0).then(|| delivered as f64 / attempts as f64),
            p50_5m: quantile(0.5),
            p99_5m: quantile(0.99),
            consecutive_failures: s.consecutive_failures,
            last_error: s
                .last_error
                .as_ref()
                .map(|(ms, d)| (time_of(*ms), d.to_string())),
            last_success: s.last_success_ms.map(time_of),
            waiting: self.waiting.load(Relaxed),
            throttled: self.throttled.load(Relaxed),
            messages: MessageCounts {
                delivered: s.delivered,
                failed: s.failed,
                retrying: self.retrying.load(Relaxed),
                abandoned: s.abandoned,
            },
        }
    }

    /// Frees its log (its health stays); the bytes it held.
    fn free_log(&self) -> usize {
        let mut s = lock(&self.state);
        s.listed = false;
        match s.log.take() {
            Some(log) => {
                LOG_BYTES.fetch_sub(log.bytes, Relaxed);
                log.bytes
            }
            None => 0,
        }
    }

    fn touched_ms(&self) -> Option<i64> {
        lock(&self.state).log.as_ref().map(|l| l.touched_ms)
    }
}

impl Drop for UrlWatch {
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(log) = s.log.take() {
            LOG_BYTES.fetch_sub(log.bytes, Relaxed);
        }
    }
}

/// The budget is spent: frees the logs touched longest ago until a quarter of it is free.
/// Runs on the scheduler's thread, holding no URL's lock.
fn free_oldest() {
    let mut listed = lock(&LOGS);
    let mut logs: Vec<(i64, Arc<[UrlWatch]>, usize)> = listed
        .iter()
        .filter_map(|(w, i)| Some((w.upgrade()?, usize::from(*i))))
        .filter_map(|(urls, i)| Some((urls.get(i)?.touched_ms()?, urls, i)))
        .collect();
    logs.sort_by_key(|(t, ..)| *t);
    let target = LOG_BUDGET / 4 * 3;
    for (_, urls, i) in &logs {
        if LOG_BYTES.load(Relaxed) <= target {
            break;
        }
        urls[*i].free_log();
    }
    listed.retain(|(w, i)| {
        let urls = w.upgrade();
        let u = (urls.as_deref()).and_then(|urls| urls.get(usize::from(*i)));
        u.is_some_and(|u| lock(&u.state).listed)
    });
}

/// Bytes every URL log of the process holds now (tests, and the memory budget's check).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn log_bytes() -> usize {
    LOG_BYTES.load(Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::Reason;

    /// The budget is the process's: a test that spends it must not run beside one that
    /// reads a log back.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn rec(w: &Watch, i: usize, id: Arc<str>, a: &Attempt, seen: &Seen, open: bool) {
        let answer = seen
            .excerpt
            .as_deref()
            .map(|e| Arc::from(&e[..e.len().min(ANSWER_EXCERPT)]));
        let attempted = Attempted {
            id: &id,
            attempt: a,
            seen,
            answer,
            circuit_open: open,
        };
        w.record(i, attempted, Keep::default());
    }

    fn failure(status: u16) -> (Attempt, Seen) {
        let a = Attempt::Retryable {
            reason: Reason::Status(status),
            detail: format!("status {status}"),
            retry_after: None,
        };
        let seen = Seen {
            took: Duration::from_millis(20),
            status: Some(status),
            error: None,
            excerpt: Some(bytes::Bytes::from(vec![b'x'; 4000])),
            headers: None,
        };
        (a, seen)
    }

    #[test]
    fn a_log_keeps_the_last_hundred_attempts_newest_first() {
        let _one = lock(&ONE_AT_A_TIME);
        let w = Watch::new(1, &[]);
        let u = &w.urls[0];
        for i in 0..150 {
            let seen = Seen {
                took: Duration::from_millis(i),
                ..Seen::default()
            };
            rec(
                &w,
                0,
                Arc::from(format!("m{i}")),
                &Attempt::Success,
                &seen,
                false,
            );
        }
        let (a, seen) = failure(503);
        rec(&w, 0, Arc::from("bad"), &a, &seen, false);
        let log = u.attempts(&AttemptQuery::default(), i64::MAX);
        assert_eq!(log.len(), LOG_ATTEMPTS);
        assert_eq!(&*log[0].message_id, "bad");
        assert_eq!(log[0].status, Some(503));
        assert_eq!(
            log[0].answer.as_ref().map(|a| a.len()),
            Some(ANSWER_EXCERPT)
        );
        assert_eq!(&*log[1].message_id, "m149");
        assert_eq!(&*log[99].message_id, "m51");
        let h = u.health(String::new());
        assert_eq!(h.state, HealthState::Failing);
        assert_eq!(h.consecutive_failures, 1);
        assert_eq!((h.attempts_5m, h.delivered_5m), (151, 150));
        // Durations 0..149 ms: the median is ~75 ms, within the buckets' 10 %.
        let p50 = h.p50_5m.unwrap().as_secs_f64() * 1000.0;
        assert!((67.0..=83.0).contains(&p50), "{p50}");
        let p99 = h.p99_5m.unwrap().as_secs_f64() * 1000.0;
        assert!((133.0..=163.0).contains(&p99), "{p99}");
    }

    #[test]
    fn health_moves_with_the_answers_and_the_lane() {
        let _one = lock(&ONE_AT_A_TIME);
        let w = Watch::new(2, &[1]);
        let u = &w.urls[0];
        assert_eq!(u.health(String::new()).state, HealthState::Healthy);
        let (a, seen) = failure(500);
        rec(&w, 0, Arc::from("1"), &a, &seen, false);
        assert_eq!(u.health(String::new()).state, HealthState::Failing);
        rec(&w, 0, Arc::from("2"), &a, &seen, true);
        assert_eq!(u.health(String::new()).state, HealthState::CircuitOpen);
        rec(
            &w,
            0,
            Arc::from("3"),
            &Attempt::Success,
            &Seen::default(),
            false,
        );
        let h = u.health(String::new());
        assert_eq!(h.state, HealthState::Healthy);
        assert!(h.last_success.is_some() && h.last_error.is_some());
        assert_eq!(w.urls[1].health(String::new()).state, HealthState::Disabled);
        w.wait(0b11);
        w.wait(0b01);
        w.unwait(0b01);
        assert_eq!(w.urls[0].health(String::new()).waiting, 1);
        assert_eq!(w.urls[1].health(String::new()).waiting, 1);
    }

    #[test]
    fn a_successor_adopts_each_url_it_keeps_by_url_and_counts_the_copy() {
        let _one = lock(&ONE_AT_A_TIME);
        let start = log_bytes();
        let old = Watch::new(2, &[]);
        let (a, seen) = failure(500);
        rec(&old, 1, Arc::from("1"), &a, &seen, true);
        rec(&old, 0, Arc::from("2"), &Attempt::Success, &seen, false);
        let before = log_bytes();
        let new = Watch::new(2, &[]);
        new.adopt(&["b", "c"], &old, &["a", "b"]);
        let b = new.urls[0].health(String::new());
        assert_eq!((b.webhook, b.state), (0, HealthState::CircuitOpen));
        assert_eq!(b.consecutive_failures, 1);
        assert_eq!(
            &*new.urls[0].attempts(&AttemptQuery::default(), i64::MAX)[0].message_id,
            "1"
        );
        assert_eq!(new.urls[0].circuit(), Some(1));
        assert_eq!(new.urls[1].health(String::new()).attempts_5m, 0);
        assert!(
            log_bytes() > before,
            "the copy is within the budget's count"
        );
        assert_eq!(
            old.urls[1]
                .attempts(&AttemptQuery::default(), i64::MAX)
                .len(),
            1,
            "the old watch keeps its own"
        );
        drop((old, new));
        assert_eq!(log_bytes(), start, "both logs' bytes given back");
    }

    #[test]
    fn idle_urls_cost_their_health_only() {
        let _one = lock(&ONE_AT_A_TIME);
        let before = log_bytes();
        // 10,000 idle tenants of 5 URLs.
        let watches: Vec<Watch> = (0..10_000).map(|_| Watch::new(5, &[])).collect();
        assert_eq!(log_bytes(), before, "no log before a URL's first attempt");
        let per_url = std::mem::size_of::<UrlWatch>();
        assert!(per_url <= 128, "{per_url} bytes per idle URL");
        // A watch's URLs are one allocation (the Arc's counts once); their text is the
        // config's: under 7 MiB for 50,000 URLs.
        let total: usize = watches.iter().map(|w| 16 + w.urls.len() * per_url).sum();
        assert!(total < 7 << 20, "{total} bytes for 50,000 idle URLs");
    }

    #[test]
    fn all_logs_together_stay_within_the_budget() {
        let _one = lock(&ONE_AT_A_TIME);
        // Enough failing URLs, each with a full log of 1 KiB answers, to spend the budget
        // twice over: the oldest logs are freed, their health kept.
        let per_log = LOG_ATTEMPTS * (ANSWER_EXCERPT + 200);
        let n = 2 * LOG_BUDGET / per_log + 1;
        let watches: Vec<Watch> = (0..n).map(|_| Watch::new(1, &[])).collect();
        let (a, seen) = failure(503);
        for w in &watches {
            for j in 0..LOG_ATTEMPTS {
                rec(w, 0, Arc::from(format!("m{j}")), &a, &seen, false);
            }
        }
        assert!(log_bytes() <= LOG_BUDGET, "{} > {LOG_BUDGET}", log_bytes());
        let first = &watches[0].urls[0];
        assert!(
            first
                .attempts(&AttemptQuery::default(), i64::MAX)
                .is_empty(),
            "the oldest log was freed"
        );
        assert_eq!(
            first.health(String::new()).consecutive_failures,
            LOG_ATTEMPTS as u32
        );
        assert_eq!(
            watches[n - 1].urls[0]
                .attempts(&AttemptQuery::default(), i64::MAX)
                .len(),
            LOG_ATTEMPTS
        );
        drop(watches);
    }
}
