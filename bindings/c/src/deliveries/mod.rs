//! A client's delivery records, read from C: each webhook URL's last attempts and health, its
//! dead letters (listed, read, deleted, replayed) and their replays. The core decides
//! (`outbound::Client::webhook_attempts`, `dead_letters`, ...); this module converts its values
//! into lists of C structs owned by the library (read with `_len` / `_get`, released with
//! `_free`, as `outbound_recording` is) and its times into Unix milliseconds.
//!
//! `webhooks.rs` has each URL's attempts and health, `dead_letters.rs` the dead letters and
//! their replays; here are the storage their lists point into and the conversions they share.

use crate::client::outbound_client;
use crate::convert::{c_string, req_str};
use crate::panic::PanicValue;
use crate::recording::outbound_recorded_header;
use crate::result::{fail, finish, outbound_result, Failure};
use outbound::{
    AttemptQuery, AttemptResult, Client, DeadLetter, DeadLetterQuery, ReplayProgress,
    WebhookAttempt, WebhookHealth,
};
use std::ffi::{c_char, CString};
use std::ptr::null;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod dead_letters;
mod webhooks;

pub use dead_letters::*;
pub use webhooks::*;

/// A time given or returned as Unix milliseconds that is not there: an open end of a range
/// (`since_ms`, `until_ms`), or a time a record does not have (`first_attempt_ms` of a dead
/// letter never attempted, `last_success_ms` of a URL that never succeeded). `INT64_MIN`.
pub const OUTBOUND_TIME_NONE: i64 = i64::MIN;

/// A duration in microseconds that is not there (the latencies of a URL without attempts in
/// the last five minutes). `UINT64_MAX`.
pub const OUTBOUND_DURATION_NONE: u64 = u64::MAX;

/// The `webhook` of a replay that goes to every webhook of the client (`SIZE_MAX`).
pub const OUTBOUND_ALL_WEBHOOKS: usize = u64::MAX as usize;

/// The storage a list's pointers point into: heap buffers, which stay put when a list moves.
#[derive(Default)]
struct Keep {
    texts: Vec<CString>,
    bytes: Vec<Vec<u8>>,
    headers: Vec<Vec<outbound_recorded_header>>,
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

    /// `pairs` as an array of headers; NULL and 0 for none.
    fn headers(&mut self, pairs: &[(String, String)]) -> (*const outbound_recorded_header, usize) {
        if pairs.is_empty() {
            return (null(), 0);
        }
        let array: Vec<_> = (pairs.iter())
            .map(|(name, value)| outbound_recorded_header {
                name: self.text(name),
                value: self.text(value),
            })
            .collect();
        let p = array.as_ptr();
        self.headers.push(array);
        (p, pairs.len())
    }

    fn attempt_headers(&mut self, a: &WebhookAttempt) -> outbound_webhook_attempt_headers {
        let (request_headers, request_headers_len) = self.headers(&a.request_headers);
        let (answer_headers, answer_headers_len) = self.headers(&a.answer_headers);
        outbound_webhook_attempt_headers {
            request_headers,
            request_headers_len,
            answer_headers,
            answer_headers_len,
        }
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
            throttled: h.throttled,
            messages: outbound_message_counts {
                delivered: h.messages.delivered,
                failed: h.messages.failed,
                retrying: h.messages.retrying,
                abandoned: h.messages.abandoned,
            },
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
