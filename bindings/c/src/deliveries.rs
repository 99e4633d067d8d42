//! A client's delivery records, read from C: each webhook URL's last attempts and health, its
//! dead letters (listed, read, deleted, replayed) and their replays. The core decides
//! (`outbound::Client::webhook_attempts`, `dead_letters`, ...); this module converts its values
//! into lists of C structs owned by the library (read with `_len` / `_get`, released with
//! `_free`, as `outbound_recording` is) and its times into Unix milliseconds.

use crate::client::outbound_client;
use crate::convert::{c_string, req_str};
use crate::panic::PanicValue;
use crate::result::{fail, finish, outbound_result, Failure};
use outbound::{
    Client, DeadLetter, DeadLetterQuery, ReplayProgress, WebhookAttempt, WebhookHealth,
};
use std::ffi::{c_char, CString};
use std::ptr::null;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A time given or returned as Unix milliseconds that is not there: an open end of a range
/// (`since_ms`, `until_ms`), or a time a record does not have (`first_attempt_ms` of a dead
/// letter never attempted, `last_success_ms` of a URL that never succeeded). `INT64_MIN`.
pub const OUTBOUND_TIME_NONE: i64 = i64::MIN;

/// A duration in microseconds that is not there (the latencies of a URL without attempts in
/// the last five minutes). `UINT64_MAX`.
pub const OUTBOUND_DURATION_NONE: u64 = u64::MAX;

/// The `webhook` of a replay that goes to every webhook of the client (`SIZE_MAX`).
pub const OUTBOUND_ALL_WEBHOOKS: usize = u64::MAX as usize;

/// One request to a webhook URL (`outbound_webhook_attempt_list_get`, or a dead letter's
/// `last_attempts`). Every pointer in it is owned by the list it came from. Its layout is
/// fixed within a series (it is handed out in arrays, `last_attempts`).
#[repr(C)]
#[derive(Debug)]
pub struct outbound_webhook_attempt {
    /// The webhook's index (0 for the first `outbound_options_add_webhook`).
    pub webhook: usize,
    /// The message it carried, NUL-terminated.
    pub message_id: *const c_char,
    /// When the request went out, in Unix milliseconds.
    pub at_ms: i64,
    /// How long the exchange took (connect, send, answer), in microseconds.
    pub duration_us: u64,
    /// What it meant for the message: `"delivered"` (2xx), `"retryable"` (5xx, 408, 429,
    /// timeouts, connection errors) or `"permanent"` (other 4xx, 3xx, certificates, blocked).
    pub result: *const c_char,
    /// The answer's status; 0 when no answer came.
    pub status: u16,
    /// How it failed when no status came (or the network guard refused it): `"timeout"`,
    /// `"refused"`, `"reset"`, `"tls"`, `"dns"`, `"blocked"`, `"connection"` or `"other"`;
    /// NULL otherwise.
    pub error: *const c_char,
    /// What went wrong, in words (`"status 503"`); `""` for a delivery.
    pub detail: *const c_char,
    /// For a failure: the first 1 KiB of the answer's body, followed by a NUL byte not counted
    /// in `answer_len`; NULL when it kept none.
    pub answer: *const u8,
    /// The length of `answer` in bytes (0 when NULL).
    pub answer_len: usize,
}

/// A webhook URL's health (`outbound_webhook_health_list_get`): its state and its last five
/// minutes. Every pointer in it is owned by the list it came from. Later releases may add
/// fields at the end.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_webhook_health {
    /// The webhook's index (0 for the first `outbound_options_add_webhook`).
    pub webhook: usize,
    /// Its URL as logs show it, NUL-terminated: scheme, host and port, anything after them as
    /// `/…` (a path or query string can carry a token).
    pub url: *const c_char,
    /// `"healthy"`, `"failing"`, `"circuit_open"` (its lane sends one probe at a time) or
    /// `"disabled"` (`block_private_networks` refuses its address whatever DNS says).
    pub state: *const c_char,
    /// Requests answered (or failed) in the last five minutes.
    pub attempts_5m: u64,
    /// Of those, the ones that delivered.
    pub delivered_5m: u64,
    /// `delivered_5m / attempts_5m`; -1 when `attempts_5m` is 0.
    pub success_rate_5m: f64,
    /// The median duration of those exchanges in microseconds (within 10 %);
    /// `OUTBOUND_DURATION_NONE` without attempts.
    pub p50_5m_us: u64,
    /// The 99th percentile, as `p50_5m_us`.
    pub p99_5m_us: u64,
    /// Failed requests since its last success.
    pub consecutive_failures: u32,
    /// When its last request failed, in Unix milliseconds; `OUTBOUND_TIME_NONE` if none did.
    pub last_error_ms: i64,
    /// Why its last request failed; NULL if none did.
    pub last_error: *const c_char,
    /// When its last request succeeded, in Unix milliseconds; `OUTBOUND_TIME_NONE` if none
    /// did.
    pub last_success_ms: i64,
    /// Messages still to be delivered to it (queued, in flight, or waiting to be retried).
    pub waiting: u64,
}

/// A message whose webhook delivery failed for good (`outbound_dead_letter_list_get`). Every
/// pointer in it is owned by the list it came from. Later releases may add fields at the end.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_dead_letter {
    /// Its `messageId`, NUL-terminated: a replay sends it again under the same one.
    pub message_id: *const c_char,
    /// When it failed, in Unix milliseconds.
    pub failed_at_ms: i64,
    /// Why, as the outcome said it: `"status 400"`, `"gone"`, `"blocked"`, `"expired"`, ...
    pub reason: *const c_char,
    /// The outcome's detail (`"webhooks: status 400"`).
    pub detail: *const c_char,
    /// Webhook rounds it was sent in.
    pub rounds: u32,
    /// When its first attempt went out, in Unix milliseconds; `OUTBOUND_TIME_NONE` if never.
    pub first_attempt_ms: i64,
    /// Each URL's last attempt.
    pub last_attempts: *const outbound_webhook_attempt,
    /// How many `last_attempts` holds.
    pub last_attempts_len: usize,
    /// The webhook body's length in bytes.
    pub size: u64,
    /// A replay of it is under way: it leaves the dead letters when the replay delivers it,
    /// and comes back (with the new attempts) if the replay fails.
    pub replaying: bool,
    /// The webhook body as it was sent, followed by a NUL byte not counted in `body_len` (so
    /// it can be read as a C string): only from `outbound_client_dead_letter`; NULL in a page
    /// of `outbound_client_dead_letters`.
    pub body: *const u8,
    /// The length of `body` in bytes (0 when NULL).
    pub body_len: usize,
}

/// A client's dead letters in all (`outbound_client_dead_letter_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_dead_letter_stats {
    /// Dead letters kept now.
    pub count: u64,
    /// Their bytes, as `outbound_options_set_dead_letter_max_bytes` counts them.
    pub bytes: u64,
    /// Dropped, oldest first, to stay within the max bytes (since the spool was opened).
    pub evicted: u64,
    /// Dropped after the retention (since the spool was opened).
    pub expired: u64,
}

/// How a replay goes (`outbound_client_replay_dead_letter`, `_replay_dead_letters`,
/// `_replay_progress`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_replay_progress {
    /// The replay's number, for `outbound_client_replay_progress` (0: a range with nothing to
    /// replay).
    pub id: u64,
    /// Dead letters it took (those of its range not already replaying).
    pub total: u64,
    /// Handed to delivery so far.
    pub sent: u64,
    /// Delivered: they left the dead letters.
    pub delivered: u64,
    /// Failed again: back in the dead letters with their new attempts.
    pub failed: u64,
    /// Gone before their turn (deleted, or dropped by the limits).
    pub skipped: u64,
    /// When it started, in Unix milliseconds.
    pub started_ms: i64,
    /// Every dead letter it took has an outcome.
    pub done: bool,
}

/// A client's last attempts to one webhook URL, newest first, from
/// `outbound_client_webhook_attempts`; read with `outbound_webhook_attempt_list_len` /
/// `_get`, release with `outbound_webhook_attempt_list_free`. A copy: it does not change and
/// does not depend on the client.
pub struct outbound_webhook_attempt_list {
    items: Vec<outbound_webhook_attempt>,
    _keep: Keep,
}

/// Each webhook URL's health, in the order of the webhooks, from
/// `outbound_client_webhook_health`; read with `outbound_webhook_health_list_len` / `_get`,
/// release with `outbound_webhook_health_list_free`. A copy, as the attempt list.
pub struct outbound_webhook_health_list {
    items: Vec<outbound_webhook_health>,
    _keep: Keep,
}

/// Dead letters: a page, newest first (`outbound_client_dead_letters`), or the one
/// `outbound_client_dead_letter` found (0 or 1). Read with `outbound_dead_letter_list_len` /
/// `_get` / `_next`, release with `outbound_dead_letter_list_free`. A copy, as the attempt
/// list.
pub struct outbound_dead_letter_list {
    items: Vec<outbound_dead_letter>,
    next: *const c_char,
    // The arrays each letter's `last_attempts` points into.
    _attempts: Vec<Vec<outbound_webhook_attempt>>,
    _keep: Keep,
}

/// The storage a list's pointers point into: heap buffers, which stay put when a list moves.
#[derive(Default)]
struct Keep {
    texts: Vec<CString>,
    bytes: Vec<Vec<u8>>,
}

impl Keep {
    fn text(&mut self, text: &str) -> *const c_char {
        let c = c_string(text);
        let p = c.as_ptr();
        self.texts.push(c);
        p
    }

    fn opt_text(&mut self, text: Option<&str>) -> *const c_char {
        text.map_or(null(), |t| self.text(t))
    }

    /// `bytes` and a NUL not counted in the length; NULL and 0 for none.
    fn bytes(&mut self, bytes: Option<&[u8]>) -> (*const u8, usize) {
        let Some(bytes) = bytes else {
            return (null(), 0);
        };
        let mut copy = Vec::with_capacity(bytes.len() + 1);
        copy.extend_from_slice(bytes);
        copy.push(0);
        let p = copy.as_ptr();
        self.bytes.push(copy);
        (p, bytes.len())
    }

    fn attempt(&mut self, a: &WebhookAttempt) -> outbound_webhook_attempt {
        let (answer, answer_len) = self.bytes(a.answer.as_deref());
        outbound_webhook_attempt {
            webhook: a.webhook,
            message_id: self.text(&a.message_id),
            at_ms: unix_ms(a.at),
            duration_us: micros(a.duration),
            result: self.text(a.result.as_str()),
            status: a.status.unwrap_or(0),
            error: self.opt_text(a.error.map(|e| e.as_str())),
            detail: self.text(&a.detail),
            answer,
            answer_len,
        }
    }

    fn health(&mut self, h: &WebhookHealth) -> outbound_webhook_health {
        let (last_error_ms, last_error) = match &h.last_error {
            Some((at, why)) => (unix_ms(*at), self.text(why)),
            None => (OUTBOUND_TIME_NONE, null()),
        };
        outbound_webhook_health {
            webhook: h.webhook,
            url: self.text(&h.url),
            state: self.text(h.state.as_str()),
            attempts_5m: h.attempts_5m,
            delivered_5m: h.delivered_5m,
            success_rate_5m: h.success_rate_5m.unwrap_or(-1.0),
            p50_5m_us: h.p50_5m.map_or(OUTBOUND_DURATION_NONE, micros),
            p99_5m_us: h.p99_5m.map_or(OUTBOUND_DURATION_NONE, micros),
            consecutive_failures: h.consecutive_failures,
            last_error_ms,
            last_error,
            last_success_ms: h.last_success.map_or(OUTBOUND_TIME_NONE, unix_ms),
            waiting: h.waiting,
        }
    }
}

impl outbound_dead_letter_list {
    fn new(letters: &[DeadLetter], next: Option<&str>) -> outbound_dead_letter_list {
        let mut keep = Keep::default();
        let attempts: Vec<Vec<outbound_webhook_attempt>> = letters
            .iter()
            .map(|l| l.last_attempts.iter().map(|a| keep.attempt(a)).collect())
            .collect();
        let items = letters
            .iter()
            .zip(&attempts)
            .map(|(l, last)| {
                let (body, body_len) = keep.bytes(l.body.as_deref());
                outbound_dead_letter {
                    message_id: keep.text(&l.message_id),
                    failed_at_ms: unix_ms(l.failed_at),
                    reason: keep.text(&l.reason.to_string()),
                    detail: keep.text(&l.detail),
                    rounds: l.rounds,
                    first_attempt_ms: l.first_attempt.map_or(OUTBOUND_TIME_NONE, unix_ms),
                    last_attempts: if last.is_empty() {
                        null()
                    } else {
                        last.as_ptr()
                    },
                    last_attempts_len: last.len(),
                    size: l.size,
                    replaying: l.replaying,
                    body,
                    body_len,
                }
            })
            .collect();
        outbound_dead_letter_list {
            items,
            next: keep.opt_text(next),
            _attempts: attempts,
            _keep: keep,
        }
    }
}

impl outbound_replay_progress {
    fn of(p: &ReplayProgress) -> outbound_replay_progress {
        outbound_replay_progress {
            id: p.id,
            total: p.total,
            sent: p.sent,
            delivered: p.delivered,
            failed: p.failed,
            skipped: p.skipped,
            started_ms: unix_ms(p.started),
            done: p.done(),
        }
    }
}

/// Unix milliseconds of `t` (negative before 1970), saturating.
fn unix_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN + 1, |ms| -ms),
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(OUTBOUND_DURATION_NONE - 1)
}

/// The time of Unix milliseconds `ms` given as `what`; `None` for `OUTBOUND_TIME_NONE`.
fn time_of(ms: i64, what: &str) -> Result<Option<SystemTime>, Failure> {
    if ms == OUTBOUND_TIME_NONE {
        return Ok(None);
    }
    let d = Duration::from_millis(ms.unsigned_abs());
    let t = match ms >= 0 {
        true => UNIX_EPOCH.checked_add(d),
        false => UNIX_EPOCH.checked_sub(d),
    };
    t.map(Some).ok_or_else(|| {
        Failure::Core(outbound::Error::InvalidField {
            field: what.into(),
            reason: format!("{ms} ms is out of range"),
        })
    })
}

/// The core's webhook index of a replay (`OUTBOUND_ALL_WEBHOOKS`: every webhook).
fn webhook_of(webhook: usize) -> Option<usize> {
    (webhook != OUTBOUND_ALL_WEBHOOKS).then_some(webhook)
}

/// # Safety
/// `client` is NULL or a live client.
unsafe fn client_ref<'a>(client: *const outbound_client) -> Result<&'a Client, Failure> {
    // SAFETY: per the contract.
    unsafe { client.as_ref() }
        .map(|c| &c.inner)
        .ok_or(Failure::Null("client"))
}

/// Refuses a NULL out-parameter, before the call is made (so a NULL one never leaves work
/// done that the caller cannot see).
fn check_out<T>(out: *mut T, what: &'static str) -> Result<(), Failure> {
    match out.is_null() {
        true => Err(Failure::Null(what)),
        false => Ok(()),
    }
}

/// Hands a list to C: `*out` receives it.
///
/// # Safety
/// `out` is non-NULL and writable.
unsafe fn give<T>(out: *mut *mut T, list: T) {
    // SAFETY: per the contract.
    unsafe { *out = Box::into_raw(Box::new(list)) };
}

/// Frees a list handed out by [`give`]. NULL is a no-op.
///
/// # Safety
/// `list` is NULL or from [`give`] and not freed yet.
unsafe fn free<T>(list: *mut T) {
    if !list.is_null() {
        // SAFETY: per the contract, we own it now.
        drop(unsafe { Box::from_raw(list) });
    }
}

/// The length of a list; 0 (and the last error) for NULL.
///
/// # Safety
/// `list` is NULL or live.
unsafe fn len_of<L>(list: *const L, items: impl Fn(&L) -> usize) -> usize {
    // SAFETY: per the contract.
    match unsafe { list.as_ref() } {
        Some(l) => items(l),
        None => {
            fail(Failure::Null("list"));
            0
        }
    }
}

/// Item `index` of a list, or NULL with the thread's last error set.
///
/// # Safety
/// `list` is NULL or live.
unsafe fn nth<L, V>(list: *const L, index: usize, items: impl Fn(&L) -> &[V]) -> *const V {
    // SAFETY: per the contract.
    let Some(l) = (unsafe { list.as_ref() }) else {
        fail(Failure::Null("list"));
        return null();
    };
    let items = items(l);
    match items.get(index) {
        Some(item) => item,
        None => {
            crate::result::set_last_error(format!(
                "index {index} is out of range: the list holds {}",
                items.len()
            ));
            null()
        }
    }
}

impl PanicValue for *const outbound_webhook_attempt {
    fn on_panic() -> Self {
        null()
    }
}

impl PanicValue for *const outbound_webhook_health {
    fn on_panic() -> Self {
        null()
    }
}

impl PanicValue for *const outbound_dead_letter {
    fn on_panic() -> Self {
        null()
    }
}

/// Webhook `webhook`'s last attempts (up to 100, any outcome), newest first: message id, time,
/// duration, status or error class, and for failures the first 1 KiB of the answer. Kept in
/// memory for URLs with recent traffic: an empty list for a URL with none. Needs no spool.
///
/// Ownership: on success `*out` receives a list the caller owns and must release with
/// `outbound_webhook_attempt_list_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_INVALID_FIELD` (no
/// webhook of that index; the text names `webhook`), `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_webhook_attempts(
    client: *const outbound_client,
    webhook: usize,
    out: *mut *mut outbound_webhook_attempt_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let attempts = client.webhook_attempts(webhook)?;
            let mut keep = Keep::default();
            let items = attempts.iter().map(|a| keep.attempt(a)).collect();
            let list = outbound_webhook_attempt_list { items, _keep: keep };
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, list) };
            Ok(())
        })())
    })
}

/// How many attempts the list holds (0 for NULL).
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_attempt_list_len(
    list: *const outbound_webhook_attempt_list,
) -> usize {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { len_of(list, |l| l.items.len()) } })
}

/// Attempt `index` of the list (0 is the newest), or NULL when `index` is not below
/// `outbound_webhook_attempt_list_len` or `list` is NULL (`outbound_last_error` says which).
///
/// Ownership: the attempt belongs to the list; valid until `outbound_webhook_attempt_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_attempt_list_get(
    list: *const outbound_webhook_attempt_list,
    index: usize,
) -> *const outbound_webhook_attempt {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { nth(list, index, |l| &l.items) } })
}

/// Frees an attempt list; every pointer read from it becomes invalid. NULL is a no-op.
///
/// # Safety
/// `list` is NULL or from `outbound_client_webhook_attempts` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_attempt_list_free(
    list: *mut outbound_webhook_attempt_list,
) {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { free(list) } })
}

/// Each webhook URL's health, in the order the webhooks were added: healthy, failing, circuit
/// open or disabled; success rate and p50/p99 latency over the last five minutes; failures in
/// a row, last error, last success, messages waiting. Needs no spool.
///
/// Ownership: on success `*out` receives a list the caller owns and must release with
/// `outbound_webhook_health_list_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_webhook_health(
    client: *const outbound_client,
    out: *mut *mut outbound_webhook_health_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let mut keep = Keep::default();
            let items = (client.webhook_health().iter())
                .map(|h| keep.health(h))
                .collect();
            let list = outbound_webhook_health_list { items, _keep: keep };
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, list) };
            Ok(())
        })())
    })
}

/// How many webhooks the health list holds (0 for NULL).
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_health_list_len(
    list: *const outbound_webhook_health_list,
) -> usize {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { len_of(list, |l| l.items.len()) } })
}

/// Webhook `index`'s health, or NULL when `index` is not below
/// `outbound_webhook_health_list_len` or `list` is NULL (`outbound_last_error` says which).
///
/// Ownership: the health belongs to the list; valid until `outbound_webhook_health_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_health_list_get(
    list: *const outbound_webhook_health_list,
    index: usize,
) -> *const outbound_webhook_health {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { nth(list, index, |l| &l.items) } })
}

/// Frees a health list; every pointer read from it becomes invalid. NULL is a no-op.
///
/// # Safety
/// `list` is NULL or from `outbound_client_webhook_health` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_health_list_free(
    list: *mut outbound_webhook_health_list,
) {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { free(list) } })
}

/// One page of dead letters (`outbound_options_set_dead_letters` on), newest first, without
/// their bodies.
///
/// - `since_ms`, `until_ms`: only those that failed at or after `since_ms` and before
///   `until_ms` (Unix milliseconds); `OUTBOUND_TIME_NONE` leaves that end open.
/// - `limit`: at most this many, 1 to 1000 (100 is the other APIs' default).
/// - `cursor`: NULL for the newest, or the `outbound_dead_letter_list_next` of the page
///   before (copied during the call).
///
/// Ownership: on success `*out` receives a list the caller owns and must release with
/// `outbound_dead_letter_list_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_INVALID_UTF8` (cursor),
/// `_INVALID_FIELD` (`limit` 0 or above 1000, a `cursor` no page gave; the text names the
/// field), `_CONFIG` (dead letters are off for this client), `_SPOOL` (the spool could not
/// be read), `_CLOSED`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `cursor` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_dead_letters(
    client: *const outbound_client,
    since_ms: i64,
    until_ms: i64,
    limit: usize,
    cursor: *const c_char,
    out: *mut *mut outbound_dead_letter_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let query = DeadLetterQuery {
                since: time_of(since_ms, "since")?,
                until: time_of(until_ms, "until")?,
                limit,
                cursor: unsafe { crate::convert::opt_string(cursor, "cursor") }?,
            };
            let page = client.dead_letters(&query)?;
            let list = outbound_dead_letter_list::new(&page.letters, page.next.as_deref());
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, list) };
            Ok(())
        })())
    })
}

/// The dead letter of message `message_id`, with its body: `*out` receives a list holding it,
/// or an empty list when there is none.
///
/// Ownership: on success `*out` receives a list the caller owns and must release with
/// `outbound_dead_letter_list_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, message_id or out),
/// `_INVALID_UTF8`, `_CONFIG` (dead letters are off), `_SPOOL`, `_CLOSED`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `message_id` is NULL or NUL-terminated; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_dead_letter(
    client: *const outbound_client,
    message_id: *const c_char,
    out: *mut *mut outbound_dead_letter_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            let id = unsafe { req_str(message_id, "message_id") }?;
            check_out(out, "out")?;
            let found = client.dead_letter(id)?;
            let list = outbound_dead_letter_list::new(found.as_slice(), None);
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, list) };
            Ok(())
        })())
    })
}

/// How many dead letters the list holds (0 for NULL).
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_len(
    list: *const outbound_dead_letter_list,
) -> usize {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { len_of(list, |l| l.items.len()) } })
}

/// Dead letter `index` of the list (0 is the newest), or NULL when `index` is not below
/// `outbound_dead_letter_list_len` or `list` is NULL (`outbound_last_error` says which).
///
/// Ownership: the dead letter belongs to the list; valid until `outbound_dead_letter_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_get(
    list: *const outbound_dead_letter_list,
    index: usize,
) -> *const outbound_dead_letter {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { nth(list, index, |l| &l.items) } })
}

/// The cursor of the next page (give it to `outbound_client_dead_letters`), NUL-terminated;
/// NULL when there is no next page, for the list of `outbound_client_dead_letter`, and for a
/// NULL `list` (then `outbound_last_error` says so).
///
/// Ownership: the text belongs to the list; valid until `outbound_dead_letter_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_next(
    list: *const outbound_dead_letter_list,
) -> *const c_char {
    ffi!({
        // SAFETY: the caller's contract.
        match unsafe { list.as_ref() } {
            Some(l) => l.next,
            None => {
                fail(Failure::Null("list"));
                null()
            }
        }
    })
}

/// Frees a dead letter list; every pointer read from it becomes invalid. NULL is a no-op.
///
/// # Safety
/// `list` is NULL or from `outbound_client_dead_letters` / `outbound_client_dead_letter` and
/// not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_free(list: *mut outbound_dead_letter_list) {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { free(list) } })
}

/// Discards the dead letter of message `message_id`; `*found` receives whether there was one.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, message_id or found),
/// `_INVALID_UTF8`, `_CONFIG` (dead letters are off), `_SPOOL`, `_CLOSED`, `_PANIC`.
/// `*found` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `message_id` is NULL or NUL-terminated; `found` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_delete_dead_letter(
    client: *const outbound_client,
    message_id: *const c_char,
    found: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            let id = unsafe { req_str(message_id, "message_id") }?;
            check_out(found, "found")?;
            let deleted = client.delete_dead_letter(id)?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *found = deleted };
            Ok(())
        })())
    })
}

/// Sends the dead letter of message `message_id` again through the normal path: the same
/// `messageId`, a fresh retry window, signed with the current secret, to every webhook
/// (`webhook` = `OUTBOUND_ALL_WEBHOOKS`) or to webhook `webhook` alone. It stays listed (as
/// replaying) until the replay has an outcome: delivered, it leaves the dead letters; failed,
/// it is back with its new attempts. Its outcome reaches the outcome callback and the
/// counters as a resumed message's.
///
/// `*found` receives false when there is no such dead letter or it is being replayed already
/// (then `*out` is not written); true with the replay's progress in `*out` otherwise.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, message_id, out or found),
/// `_INVALID_UTF8`, `_INVALID_FIELD` (no webhook of that index; the text names `webhook`),
/// `_CONFIG` (dead letters are off), `_SPOOL`, `_CLOSED`, `_PANIC`. Nothing is written on
/// failure.
///
/// # Safety
/// `client` is NULL or live; `message_id` is NULL or NUL-terminated; `out` and `found` are
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_replay_dead_letter(
    client: *const outbound_client,
    message_id: *const c_char,
    webhook: usize,
    out: *mut outbound_replay_progress,
    found: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            let id = unsafe { req_str(message_id, "message_id") }?;
            check_out(out, "out")?;
            check_out(found, "found")?;
            let progress = client.replay_dead_letter(id, webhook_of(webhook))?;
            // SAFETY: both non-NULL and writable per the contract.
            unsafe {
                if let Some(p) = &progress {
                    *out = outbound_replay_progress::of(p);
                }
                *found = progress.is_some();
            }
            Ok(())
        })())
    })
}

/// Replays every dead letter that failed at or after `since_ms` and before `until_ms` (Unix
/// milliseconds; `OUTBOUND_TIME_NONE` leaves an end open), to every webhook
/// (`OUTBOUND_ALL_WEBHOOKS`) or to webhook `webhook` alone, in the background, a window at a
/// time. `*out` receives its progress (follow it with `outbound_client_replay_progress`); a
/// range with nothing to replay gives a replay of id 0 and total 0, done. Dead letters being
/// replayed already are left to that replay.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_INVALID_FIELD` (no
/// webhook of that index; the text names `webhook`), `_CONFIG` (dead letters are off),
/// `_SPOOL`, `_CLOSED`, `_PANIC`. `*out` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_replay_dead_letters(
    client: *const outbound_client,
    since_ms: i64,
    until_ms: i64,
    webhook: usize,
    out: *mut outbound_replay_progress,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let (since, until) = (time_of(since_ms, "since")?, time_of(until_ms, "until")?);
            let progress = client.replay_dead_letters(since, until, webhook_of(webhook))?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out = outbound_replay_progress::of(&progress) };
            Ok(())
        })())
    })
}

/// How replay `replay_id` goes (the newest 256 replays of the process are kept): `*found`
/// receives whether it is known, and when it is, `*out` its progress.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, out or found), `_CONFIG` (dead
/// letters are off), `_CLOSED`, `_PANIC`. Nothing is written on failure.
///
/// # Safety
/// `client` is NULL or live; `out` and `found` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_replay_progress(
    client: *const outbound_client,
    replay_id: u64,
    out: *mut outbound_replay_progress,
    found: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            check_out(found, "found")?;
            let progress = client.replay_progress(replay_id)?;
            // SAFETY: both non-NULL and writable per the contract.
            unsafe {
                if let Some(p) = &progress {
                    *out = outbound_replay_progress::of(p);
                }
                *found = progress.is_some();
            }
            Ok(())
        })())
    })
}

/// Writes to `*out` how many dead letters are kept, their bytes, and how many the limits
/// dropped.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_CONFIG` (dead letters are
/// off), `_SPOOL`, `_CLOSED`, `_PANIC`. `*out` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_dead_letter_stats(
    client: *const outbound_client,
    out: *mut outbound_dead_letter_stats,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let s = client.dead_letter_stats()?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe {
                *out = outbound_dead_letter_stats {
                    count: s.count,
                    bytes: s.bytes,
                    evicted: s.evicted,
                    expired: s.expired,
                }
            };
            Ok(())
        })())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_milliseconds_go_both_ways() {
        let t = UNIX_EPOCH + Duration::from_millis(1_790_000_000_123);
        assert_eq!(unix_ms(t), 1_790_000_000_123);
        assert_eq!(time_of(1_790_000_000_123, "since").unwrap(), Some(t));
        let before = UNIX_EPOCH - Duration::from_millis(5);
        assert_eq!(unix_ms(before), -5);
        assert_eq!(time_of(-5, "since").unwrap(), Some(before));
        assert_eq!(time_of(OUTBOUND_TIME_NONE, "since").unwrap(), None);
    }

    #[test]
    fn all_webhooks_is_none_for_the_core() {
        assert_eq!(webhook_of(OUTBOUND_ALL_WEBHOOKS), None);
        assert_eq!(webhook_of(2), Some(2));
    }
}
