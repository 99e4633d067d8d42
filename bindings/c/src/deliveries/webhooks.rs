//! Each webhook URL's last attempts and its health, as lists C reads (`_len`, `_get`,
//! `_free`).

use super::*;

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
    /// For a failure: the first bytes of the answer's body (up to 64 KiB in a URL's log, 1 KiB
    /// in a dead letter's `last_attempts`), followed by a NUL byte not counted in
    /// `answer_len`; NULL when it kept none.
    pub answer: *const u8,
    /// The length of `answer` in bytes (0 when NULL).
    pub answer_len: usize,
}

/// The headers of one attempt of a URL's log (`outbound_webhook_attempt_list_headers`): apart
/// from `outbound_webhook_attempt`, whose layout is fixed within a series. Every pointer in it
/// is owned by the list it came from. Later releases may add fields at the end.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_webhook_attempt_headers {
    /// For a failure: the request's headers, names in lowercase, the value of any that
    /// authorizes or signs (`authorization`, `x-signature`, `webhook-signature`, a name
    /// holding `token`, `secret`, `key`, `auth`, `cookie`, `password`) as `"[redacted]"`;
    /// NULL for a delivery.
    pub request_headers: *const outbound_recorded_header,
    /// How many `request_headers` holds.
    pub request_headers_len: usize,
    /// For a failure that got an answer: the answer's headers, names in lowercase (a
    /// credential's value redacted as above); NULL otherwise.
    pub answer_headers: *const outbound_recorded_header,
    /// How many `answer_headers` holds.
    pub answer_headers_len: usize,
}

/// Which of a URL's kept attempts `outbound_client_webhook_attempts_where` returns. The
/// caller owns it; its layout is fixed within a series. Zero it, then set `limit`.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_attempt_query {
    /// Only those with this result (`"delivered"`, `"retryable"`, `"permanent"`); NULL: any.
    pub result: *const c_char,
    /// Only those answered with this status; 0: any.
    pub status: u16,
    /// Only those of this message, NUL-terminated; NULL: any.
    pub message_id: *const c_char,
    /// Only those sent at or after this time, in Unix milliseconds; `OUTBOUND_TIME_NONE`
    /// (not 0) leaves it open.
    pub since_ms: i64,
    /// Only those sent before this time, in Unix milliseconds; `OUTBOUND_TIME_NONE` leaves it
    /// open.
    pub until_ms: i64,
    /// At most this many, newest first: 1 to 10,000.
    pub limit: usize,
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
    /// `"healthy"`, `"failing"`, `"circuit_open"` (its lane sends one probe at a time),
    /// `"throttled"` (its last requests succeeded, and messages wait for its rate limit,
    /// `outbound_options_set_webhook_rate_limit`) or `"disabled"` (`block_private_networks`
    /// refuses its address whatever DNS says).
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
    /// Requests that waited for its rate limit before going out, since the client started
    /// (0 without `outbound_options_set_webhook_rate_limit`).
    pub throttled: u64,
    /// What became of the messages sent to it, since the client started.
    pub messages: outbound_message_counts,
}

/// What became of the messages sent to one webhook URL (`outbound_webhook_health`'s
/// `messages`), since the client started. Success at any one URL is success: a message this
/// URL failed and another took is delivered, yet counted here as `failed` or `abandoned`,
/// never `delivered`. Its layout is fixed within a series (it is held by value).
#[repr(C)]
#[derive(Debug)]
pub struct outbound_message_counts {
    /// Messages it answered with 2xx.
    pub delivered: u64,
    /// Messages it refused for good (a status retrying would not mend, a certificate, the
    /// network guard), or kept failing until their retry window closed.
    pub failed: u64,
    /// Messages it has failed and will try again, now.
    pub retrying: u64,
    /// Messages it had failed and was to try again when another URL took them: not tried
    /// here again.
    pub abandoned: u64,
}

/// A client's last attempts to one webhook URL, newest first, from
/// `outbound_client_webhook_attempts`; read with `outbound_webhook_attempt_list_len` /
/// `_get`, release with `outbound_webhook_attempt_list_free`. A copy: it does not change and
/// does not depend on the client.
pub struct outbound_webhook_attempt_list {
    items: Vec<outbound_webhook_attempt>,
    headers: Vec<outbound_webhook_attempt_headers>,
    _keep: Keep,
}

impl outbound_webhook_attempt_list {
    fn new(attempts: &[WebhookAttempt]) -> Self {
        let mut keep = Keep::default();
        let items = attempts.iter().map(|a| keep.attempt(a)).collect();
        let headers = attempts.iter().map(|a| keep.attempt_headers(a)).collect();
        outbound_webhook_attempt_list {
            items,
            headers,
            _keep: keep,
        }
    }
}

/// Each webhook URL's health, in the order of the webhooks, from
/// `outbound_client_webhook_health`; read with `outbound_webhook_health_list_len` / `_get`,
/// release with `outbound_webhook_health_list_free`. A copy, as the attempt list.
pub struct outbound_webhook_health_list {
    items: Vec<outbound_webhook_health>,
    _keep: Keep,
}

impl PanicValue for *const outbound_webhook_attempt {
    fn on_panic() -> Self {
        null()
    }
}

impl PanicValue for *const outbound_webhook_attempt_headers {
    fn on_panic() -> Self {
        null()
    }
}

impl PanicValue for *const outbound_webhook_health {
    fn on_panic() -> Self {
        null()
    }
}

/// Webhook `webhook`'s last attempts (up to 100, any outcome), newest first: message id, time,
/// duration, status or error class, and for failures the first 64 KiB of the answer and the
/// headers (`outbound_webhook_attempt_list_headers`). Kept in
/// memory for URLs with recent traffic (`outbound_options_set_attempt_log_size`,
/// `_set_attempt_retention_ms`): an empty list for a URL with none. Needs no spool.
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
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, outbound_webhook_attempt_list::new(&attempts)) };
            Ok(())
        })())
    })
}

/// [`outbound_client_webhook_attempts`] keeping only the attempts `query` asks for: by result,
/// status, message and time, at most `query->limit`, newest first.
///
/// Ownership: as `outbound_client_webhook_attempts`; `query` stays the caller's.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, query or out), `_INVALID_UTF8`
/// (result, message_id), `_INVALID_FIELD` (no webhook of that index, naming `webhook`; a
/// `limit` outside 1 to 10,000, naming `limit`; an unknown `result`, naming `result`; a time
/// out of range, naming `since` or `until`), `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `query` is NULL or readable, its texts NULL or NUL-terminated;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_webhook_attempts_where(
    client: *const outbound_client,
    webhook: usize,
    query: *const outbound_attempt_query,
    out: *mut *mut outbound_webhook_attempt_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            // SAFETY: the caller's contract.
            let q = unsafe { query.as_ref() }.ok_or(Failure::Null("query"))?;
            check_out(out, "out")?;
            // SAFETY: the caller's contract.
            let result = unsafe { crate::convert::opt_string(q.result, "result") }?;
            let result = (result.as_deref())
                .map(|r| {
                    AttemptResult::parse(r).ok_or_else(|| {
                        Failure::Core(outbound::Error::InvalidField {
                            field: "result".into(),
                            reason: format!("must be delivered, retryable or permanent, got {r:?}"),
                        })
                    })
                })
                .transpose()?;
            let query = AttemptQuery {
                result,
                status: (q.status != 0).then_some(q.status),
                // SAFETY: the caller's contract.
                message_id: unsafe { crate::convert::opt_string(q.message_id, "message_id") }?,
                since: time_of(q.since_ms, "since")?,
                until: time_of(q.until_ms, "until")?,
                limit: q.limit,
            };
            let attempts = client.webhook_attempts_where(webhook, &query)?;
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, outbound_webhook_attempt_list::new(&attempts)) };
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

/// The headers of attempt `index` of the list (empty for a delivery), or NULL when `index`
/// is not below `outbound_webhook_attempt_list_len` or `list` is NULL (`outbound_last_error`
/// says which).
///
/// Ownership: the headers belong to the list; valid until `outbound_webhook_attempt_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_webhook_attempt_list_headers(
    list: *const outbound_webhook_attempt_list,
    index: usize,
) -> *const outbound_webhook_attempt_headers {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { nth(list, index, |l| &l.headers) } })
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
/// open, throttled or disabled; success rate and p50/p99 latency over the last five minutes;
/// failures in a row, last error, last success, messages waiting, requests that waited for its
/// rate limit, and what became of the messages sent to it. Needs no spool.
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
