//! How messages are batched, queued, sent and retried: flush_at, max_batch_messages,
//! flush_interval, the queue, timeouts, backoff, gzip, threads and requests in flight, debug.

use super::*;

/// A batch closes, and is sent, at this many messages (default 20; 1: each message closes
/// its own, and goes in a request of its own). It is also the most messages one request
/// carries, unless `outbound_options_set_max_batch_messages` sets more.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_flush_at(
    options: *mut outbound_options,
    flush_at: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.flush_at = flush_at) } })
}

/// The most messages one ingestion request may carry when closed batches waiting together
/// are joined (default, or 0: `flush_at`, so nothing joins past it). Set higher, batches
/// that wait for a connection, or for the answer to a request sent less than 25 ms ago, go
/// out together in one request of up to this many messages, within 500,000 bytes: fewer,
/// larger requests, but one bad answer (a 400) fails every message the request carried,
/// and a receiver that takes less per request may refuse them (a 413 still splits a batch
/// until it fits).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`: below `flush_at` is `OUTBOUND_RESULT_CONFIG` naming
/// `max_batch_messages`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_batch_messages(
    options: *mut outbound_options,
    max_batch_messages: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            set(options, |c| {
                c.max_batch_messages = (max_batch_messages > 0).then_some(max_batch_messages)
            })
        }
    })
}

/// A batch closes this many milliseconds after its first message (default 5000).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_flush_interval_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.flush_interval = millis(ms)) } })
}

/// Most messages held in memory at once, including those waiting to retry (default 10000).
/// When full, calls return `OUTBOUND_RESULT_QUEUE_FULL` without blocking (unless
/// `outbound_options_set_queue_full_wait_ms` says to wait). With a spool, a backlog past it
/// waits on disk and only `outbound_options_set_spool_max_bytes` bounds it; this bounds the
/// messages not yet committed and those read back for delivery.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_queue_size(
    options: *mut outbound_options,
    max_queue_size: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.max_queue_size = max_queue_size) } })
}

/// How long a call waits for room when the queue (`max_queue_size`) or the spool
/// (`spool_max_bytes`) is full, in milliseconds, before it returns
/// `OUTBOUND_RESULT_QUEUE_FULL` (either limit). 0, the default: it returns at once and
/// never blocks. A waiting call holds its thread; room comes back as messages reach their
/// outcome, and `outbound_client_close` ends the wait with `OUTBOUND_RESULT_CLOSED`. At most
/// 3600000 (1 hour).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_queue_full_wait_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.queue_full_wait = millis(ms)) } })
}

/// Bound on one whole HTTP exchange, in milliseconds (default 5000).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_timeout_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.timeout = millis(ms)) } })
}

/// First retry backoff ceiling in milliseconds, doubled per attempt (default 500).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_retry_base_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.retry.base = millis(ms)) } })
}

/// Largest retry backoff ceiling in milliseconds (default 10000). A destination that fails
/// every request is probed one request at a time, at most this far apart.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_backoff_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.retry.max_backoff = millis(ms)) } })
}

/// Largest `Retry-After` honoured, in milliseconds (default 600000).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_retry_after_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.retry.max_retry_after = millis(ms)) } })
}

/// How long after its first attempt a message is retried at most, in milliseconds
/// (default 4 h); then it fails with detail "expired".
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_retry_duration_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.retry.max_retry_duration = millis(ms)) } })
}

/// Gzip ingestion bodies (default false).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_gzip(
    options: *mut outbound_options,
    gzip: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.gzip = gzip) } })
}

/// Delivery threads each destination keeps ready when idle (default 2); more start on
/// demand, up to the `max_in_flight` setting.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_workers(
    options: *mut outbound_options,
    workers: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.workers = workers) } })
}

/// Most requests in flight at once to each destination: the ingestion endpoint, and each
/// webhook URL on its own (default 512). Each destination grows its delivery threads with
/// demand up to this, so a slow or failing one never takes another's budget. All clients
/// of a process together run at most 4,096 delivery threads (plus one per destination),
/// each destination at most an equal share: past that, requests wait for a thread.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_in_flight(
    options: *mut outbound_options,
    max_in_flight: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.max_in_flight = max_in_flight) } })
}

/// Turns runtime logging on or off. Unset, it follows the `DEBUG` environment variable
/// (`analytics` or `*`). Lines go to the log callback, or to stderr without one.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_debug(
    options: *mut outbound_options,
    debug: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.debug = Some(debug)) } })
}
