//! The options builder: `outbound_options_new`, one setter per client option, then
//! `outbound_client_new` consumes it. Setters store what they are given; the core checks the
//! whole configuration when the client is built.

use crate::convert::{c_string, millis, opt_str, opt_string, outcome_kind, req_str};
use crate::result::{finish, outbound_result, Failure};
use outbound::{Config, Level, Outcome, SignatureScheme, Webhook};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Options for a client. Create with `outbound_options_new`, set with the
/// `outbound_options_set_*` / `outbound_options_add_webhook` functions, then pass to
/// `outbound_client_new` (which takes ownership) or release with `outbound_options_free`.
/// Not thread-safe: use one options object from one thread at a time.
pub struct outbound_options {
    pub(crate) config: Config,
    /// `outbound_options_set_recording`: build a recording client.
    pub(crate) recording: bool,
}

/// Called once per accepted message with how it ended.
///
/// - `message_id`: the id returned when the message was enqueued.
/// - `outcome`: `"delivered"`, `"failed"` or `"dropped"`.
/// - `detail`: why, when not delivered (`"ingestion: status 400"`, `"client closed before
///   delivery"`, ...); `""` when delivered.
/// - `userdata`: the pointer given to `outbound_options_set_outcome_callback`.
///
/// The three strings are borrowed for the duration of the call only: copy what you keep.
/// The callback runs on the client's background scheduler thread (not the caller's), one
/// call at a time per client; it must not block for long, must not call
/// `outbound_client_close` / `outbound_client_free` on its own client, and must not throw
/// (C++) or `longjmp` out.
pub type outbound_outcome_callback = Option<
    unsafe extern "C" fn(
        message_id: *const c_char,
        outcome: *const c_char,
        detail: *const c_char,
        userdata: *mut c_void,
    ),
>;

/// Severity of a log line given to an `outbound_log_callback`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum outbound_log_level {
    /// Progress: batches sent, retries scheduled.
    Debug = 0,
    /// Something to know about: a message failed, the queue was full.
    Warn = 1,
}

/// Receives the client's log lines (only when logging is on: `outbound_options_set_debug`,
/// or the `DEBUG` environment variable containing `analytics` or `*`). `line` is borrowed
/// for the call; it never contains the write key or the shared secret. Called from any of the
/// client's threads, possibly concurrently; the same rules as for the outcome callback apply.
pub type outbound_log_callback = Option<
    unsafe extern "C" fn(level: outbound_log_level, line: *const c_char, userdata: *mut c_void),
>;

/// The caller's `void *userdata`. The C contract (documented on the setters) makes the
/// caller responsible for it being usable from the client's threads.
#[derive(Clone, Copy)]
struct Userdata(*mut c_void);
// SAFETY: liboutbound never dereferences it; it is only handed back to the caller's
// callback, and the caller promised that is fine from any thread.
unsafe impl Send for Userdata {}
unsafe impl Sync for Userdata {}

/// Runs `f` on the options' configuration; NULL options are refused.
///
/// # Safety
/// `options` is NULL or a live `outbound_options` not used concurrently.
unsafe fn with_config(
    options: *mut outbound_options,
    f: impl FnOnce(&mut Config) -> Result<(), Failure>,
) -> outbound_result {
    // SAFETY: per the contract.
    let options = unsafe { options.as_mut() };
    finish(
        options
            .ok_or(Failure::Null("options"))
            .and_then(|o| f(&mut o.config)),
    )
}

/// Creates options with every default: no destination (set a write key, a webhook or
/// both), endpoint `https://api.segment.io`, flush_at 20 (also the most messages one
/// request carries: max_batch_messages unset), flush_interval 5000 ms,
/// max_queue_size 10000 (a full queue refuses at once), timeout 5000 ms, max_retry_duration 4 h, gzip off, 2 workers and
/// at most 512 requests in flight per destination, sending on, proxy from the environment, logging per `DEBUG`.
///
/// Ownership: the caller owns the result and passes it to `outbound_client_new` (which takes
/// it) or `outbound_options_free`. Returns NULL only if a panic occurred (out of memory
/// aborts, as in Rust).
#[no_mangle]
pub extern "C" fn outbound_options_new() -> *mut outbound_options {
    ffi!({
        Box::into_raw(Box::new(outbound_options {
            config: Config::default(),
            recording: false,
        }))
    })
}

/// Frees options that were not given to `outbound_client_new`. NULL is a no-op.
///
/// # Safety
/// `options` is NULL or a pointer from `outbound_options_new` not yet freed or consumed.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_free(options: *mut outbound_options) {
    ffi!({
        if !options.is_null() {
            // SAFETY: per the contract, we own it now.
            drop(unsafe { Box::from_raw(options) });
        }
    })
}

/// Sets the source write key, which turns on the ingestion destination. NULL unsets it.
/// The text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `write_key` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_write_key(
    options: *mut outbound_options,
    write_key: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.write_key = opt_string(write_key, "write_key")?;
                Ok(())
            })
        }
    })
}

/// Sets the ingestion base URL (batches go to `{endpoint}/v1/batch`). NULL restores the
/// default `https://api.segment.io`. Checked by `outbound_client_new`. The text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `endpoint` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_endpoint(
    options: *mut outbound_options,
    endpoint: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.endpoint =
                    opt_string(endpoint, "endpoint")?.unwrap_or_else(|| Config::default().endpoint);
                Ok(())
            })
        }
    })
}

/// Adds a webhook (at most 5; more is refused by `outbound_client_new`), on: each message is
/// POSTed to every webhook that is on (`outbound_options_set_webhook_enabled` turns one off).
///
/// - `url`: absolute `http://` or `https://` URL without credentials. Required.
/// - `headers_json`: NULL, or a JSON object of header name to string value, e.g.
///   `{"Authorization":"Bearer t","X-Team":"growth"}`, added to every request to this URL.
///   Names and values are checked by `outbound_client_new`.
///
/// Both texts are copied. On failure nothing is added.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, url), `_INVALID_UTF8`,
/// `_INVALID_JSON`, `_WRONG_TYPE` (not an object, or a value that is not a string), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `url` and `headers_json` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_add_webhook(
    options: *mut outbound_options,
    url: *const c_char,
    headers_json: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                let mut hook = Webhook::new(req_str(url, "url")?);
                if let Some(text) = opt_str(headers_json, "headers_json")? {
                    hook.headers = outbound::parse_headers("headers_json", text)?;
                }
                c.webhooks.push(hook);
                Ok(())
            })
        }
    })
}

/// Turns webhook `webhook` (its index: 0 for the first `outbound_options_add_webhook`, in the
/// order added) off or on. A webhook is on when added, so callers that never call this keep
/// every webhook on. Off, it stays configured (checked by `outbound_client_new`, counted among
/// the 5, its index kept) but no request goes to it, and a message accepted while it is off
/// is never sent to it.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_CONFIG` (no webhook of that
/// index has been added; the text names `webhooks[i].enabled`), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_enabled(
    options: *mut outbound_options,
    webhook: usize,
    enabled: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                let added = c.webhooks.len();
                let hook = c.webhooks.get_mut(webhook).ok_or_else(|| {
                    Failure::Core(outbound::Error::Config {
                        setting: format!("webhooks[{webhook}].enabled"),
                        reason: format!("no webhook {webhook}: {added} added"),
                    })
                })?;
                hook.enabled = enabled;
                Ok(())
            })
        }
    })
}

/// Sets the shared secret: webhook requests then carry `X-Signature` (HMAC-SHA1 of the
/// body). NULL unsets it (requests are sent unsigned). The text is copied.
///
/// With the signature scheme `"standard-webhooks"` (`outbound_options_set_signature_scheme`)
/// this is one or more `whsec_` secrets separated by spaces, each adding one signature to
/// `webhook-signature` (key rotation: give the new and the old one); checked by
/// `outbound_client_new` (base64 of 24 to 64 bytes).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `secret` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_shared_secret(
    options: *mut outbound_options,
    secret: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.shared_secret = opt_string(secret, "secret")?;
                Ok(())
            })
        }
    })
}

/// Chooses how webhook requests are signed: `"x-signature"` (the default: `X-Signature`, hex
/// HMAC-SHA1 of the body) or `"standard-webhooks"` (headers `webhook-id` (the message id),
/// `webhook-timestamp` (Unix seconds of the attempt) and, with a shared secret,
/// `webhook-signature`; see <https://www.standardwebhooks.com>). The body is the same bytes
/// under both. With `"standard-webhooks"`, a caller's message id must be visible ASCII
/// without spaces or `.` (`OUTBOUND_RESULT_INVALID_FIELD` at the call otherwise). NULL
/// restores the default. Receivers verify with `outbound_verify_standard`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_CONFIG` (an unknown name; nothing changed),
/// `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `scheme` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_signature_scheme(
    options: *mut outbound_options,
    scheme: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.signature_scheme = match opt_str(scheme, "scheme")? {
                    Some(name) => SignatureScheme::parse(name)?,
                    None => SignatureScheme::default(),
                };
                Ok(())
            })
        }
    })
}

/// Sets the `User-Agent` of webhook requests (default `Outbound/1.0`). NULL restores the
/// default. The text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `user_agent` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_user_agent(
    options: *mut outbound_options,
    user_agent: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.webhook_user_agent = opt_string(user_agent, "user_agent")?
                    .unwrap_or_else(|| Config::default().webhook_user_agent);
                Ok(())
            })
        }
    })
}

/// Sets extra trusted root certificates for HTTPS: PEM text (starting with `-----BEGIN`) or
/// the path of a PEM file, read when the client is built. NULL unsets it (web roots only).
/// The text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `pem_or_path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_ca_certs(
    options: *mut outbound_options,
    pem_or_path: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.ca_certs = opt_string(pem_or_path, "pem_or_path")?;
                Ok(())
            })
        }
    })
}

/// Sets the spool directory (created if missing): every accepted message is written there
/// before its first attempt and removed at its outcome, so a restart or a crash loses
/// nothing that was flushed; a new client on the directory, or a live sibling process for the
/// files of a dead one, delivers what is pending. Each process takes its own file in the
/// directory; a second client of the same process on it is refused by `outbound_client_new`
/// (`OUTBOUND_RESULT_SPOOL`, naming the path). NULL unsets it (memory only, the default).
/// The text is copied.
///
/// `path` may instead be a Redis URL, `redis://[:password@]host[:port][/db][?prefix=NAME]`
/// (`rediss://` for TLS): the durable copy then lives in Redis 6.2+ (run it with
/// `appendonly yes`, `appendfsync everysec`), shared by a fleet; a living process on the same
/// server and prefix delivers what a dead one left once it has been silent for the timeout
/// + 10 s. An unreachable server fails `outbound_client_new` with `OUTBOUND_RESULT_SPOOL`.
///
/// Through Sentinel: `redis+sentinel://[:password@]host:port,host:port/MASTER[/db]`
/// (`rediss+sentinel://` for TLS); the primary is asked of the Sentinels at each connection.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_spool(
    options: *mut outbound_options,
    path: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.spool = opt_string(path, "path")?.map(Into::into);
                Ok(())
            })
        }
    })
}

/// Bytes the spool may hold (default 1 GiB); past it calls are refused with
/// `OUTBOUND_RESULT_QUEUE_FULL` and counted in `outbound_stats.queue_full`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_spool_max_bytes(
    options: *mut outbound_options,
    bytes: u64,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.spool_max_bytes = bytes;
                Ok(())
            })
        }
    })
}

/// On a Redis spool: when a commit counts as acknowledged (`outbound_flush`, and
/// `outbound_client_spool_ok` goes false when one is not): `"auto"` (the default: the safe one the deployment allows, looked at
/// on each connection), `"memory"` (in Redis's memory), `"replicas:N"` (`WAIT`: on N
/// replicas) or `"fsync"` (`WAITAOF`: in the primary's AOF on disk; Redis 7.2 or newer,
/// else `outbound_client_new` fails with `OUTBOUND_RESULT_SPOOL` saying so). A commit whose
/// confirmation does not come within half of the timeout is not acknowledged. NULL restores
/// the default.
///
/// Returns `OUTBOUND_RESULT_OK`, `_CONFIG` (not one of those forms; nothing changed),
/// `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `ack` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_redis_ack(
    options: *mut outbound_options,
    ack: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.redis_ack = match opt_str(ack, "ack")? {
                    Some(text) => text.parse()?,
                    None => outbound::RedisAck::default(),
                };
                Ok(())
            })
        }
    })
}

/// How often accepted messages are committed to the spool together, in milliseconds
/// (default 20, at most 1000). A power cut loses at most what was accepted within one
/// interval; `outbound_flush` commits at once.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_spool_commit_interval_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.spool_commit_interval = millis(ms);
                Ok(())
            })
        }
    })
}

/// Keeps dead letters (default false): a message whose webhook delivery fails for good
/// (its retry window closed, a permanent 4xx, a 410, the network guard's refusal) is kept in
/// the spool with its body and each URL's last attempt, to be listed and replayed (the
/// Rust and Python APIs and the relay's admin API). Needs `outbound_options_set_spool`;
/// without one `outbound_client_new` refuses it (`OUTBOUND_RESULT_CONFIG`, naming
/// `dead_letters`). Outcomes and counters are the same either way.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_dead_letters(
    options: *mut outbound_options,
    keep: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.dead_letters = keep;
                Ok(())
            })
        }
    })
}

/// How long a dead letter is kept, in milliseconds (default 14 days).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_dead_letter_retention_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.dead_letter_retention = millis(ms);
                Ok(())
            })
        }
    })
}

/// Bytes of dead letters kept at most (default 256 MiB): past it the oldest are dropped.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_dead_letter_max_bytes(
    options: *mut outbound_options,
    bytes: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.dead_letter_max_bytes = bytes;
                Ok(())
            })
        }
    })
}

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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.flush_at = flush_at;
                Ok(())
            })
        }
    })
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
            with_config(options, |c| {
                c.max_batch_messages = (max_batch_messages > 0).then_some(max_batch_messages);
                Ok(())
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.flush_interval = millis(ms);
                Ok(())
            })
        }
    })
}

/// Most messages held at once, including those waiting to retry (default 10000). When
/// full, calls return `OUTBOUND_RESULT_QUEUE_FULL` without blocking (unless
/// `outbound_options_set_queue_full_wait_ms` says to wait).
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.max_queue_size = max_queue_size;
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.queue_full_wait = millis(ms);
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.timeout = millis(ms);
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.retry.base = millis(ms);
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.retry.max_backoff = millis(ms);
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.retry.max_retry_after = millis(ms);
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.retry.max_retry_duration = millis(ms);
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.gzip = gzip;
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.workers = workers;
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.max_in_flight = max_in_flight;
                Ok(())
            })
        }
    })
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
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.debug = Some(debug);
                Ok(())
            })
        }
    })
}

/// When false, messages are validated, counted and reported as dropped ("send is
/// disabled") but never sent (tests, dry runs). Default true.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_send(
    options: *mut outbound_options,
    send: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.send = send;
                Ok(())
            })
        }
    })
}

/// Makes `outbound_client_new` build a recording client, for your application's tests
/// (default false). It is the real client (the same checks, bodies, batches, signatures and
/// outcomes, from the same code) with the network replaced by a recorder: nothing is sent,
/// no DNS lookup or connection is made. Every request that would have been sent is kept with
/// its exact body and the headers outbound sets, and every outcome too: read them with
/// `outbound_recording_snapshot`; `outbound_recording_respond_with` answers later requests
/// with another status than 200, `outbound_recording_clear` forgets what was recorded. The
/// outcome callback still runs.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_recording(
    options: *mut outbound_options,
    recording: bool,
) -> outbound_result {
    ffi!({
        // SAFETY: the caller's contract.
        let options = unsafe { options.as_mut() };
        finish(options.ok_or(Failure::Null("options")).map(|o| {
            o.recording = recording;
        }))
    })
}

/// Use `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY` from the environment (default true).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_proxy_from_env(
    options: *mut outbound_options,
    proxy_from_env: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.proxy_from_env = proxy_from_env;
                Ok(())
            })
        }
    })
}

/// Refuses to send webhooks to non-public addresses (default false): loopback, private
/// (RFC 1918), link-local (169.254.0.0/16, where cloud metadata services answer),
/// unique-local (fc00::/7), unspecified, shared (100.64.0.0/10), multicast and reserved,
/// checked after DNS resolution and again for the addresses about to be dialled. Such a
/// message fails at once (not retried) with a detail starting `"webhooks: blocked: "` and
/// naming the address; nothing is sent. Recommended when webhook URLs come from customers
/// (server-side request forgery). The ingestion endpoint is never checked, nor a proxy from
/// the environment. Exceptions: `outbound_options_add_allowed_network`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_block_private_networks(
    options: *mut outbound_options,
    block: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.block_private_networks = block;
                Ok(())
            })
        }
    })
}

/// Adds a network exempt from `outbound_options_set_block_private_networks`, in CIDR
/// notation (`"10.1.0.0/16"`, `"fd00::/8"`; a bare address is one host). Checked by
/// `outbound_client_new` (`OUTBOUND_RESULT_CONFIG` naming `allowed_networks`). The text is
/// copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, cidr), `_INVALID_UTF8`,
/// `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `cidr` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_add_allowed_network(
    options: *mut outbound_options,
    cidr: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.allowed_networks.push(req_str(cidr, "cidr")?.to_owned());
                Ok(())
            })
        }
    })
}

/// Sets the outcome callback (see `outbound_outcome_callback`), called once per accepted
/// message. `callback` NULL removes it.
///
/// Ownership: `userdata` is not owned or touched by liboutbound; it is passed back to every
/// call and must stay valid, and be usable from another thread, until the client is freed.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `callback` is NULL or safe to call as documented.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_outcome_callback(
    options: *mut outbound_options,
    callback: outbound_outcome_callback,
    userdata: *mut c_void,
) -> outbound_result {
    ffi!({
        let userdata = Userdata(userdata);
        let hook = callback.map(|cb| -> outbound::OutcomeCallback {
            Arc::new(move |o: &Outcome| {
                let ud = userdata;
                let id = c_string(&o.message_id);
                let detail = c_string(&o.detail);
                let kind = outcome_kind(o.kind);
                // SAFETY: the caller's callback, called as documented.
                unsafe { cb(id.as_ptr(), kind.as_ptr(), detail.as_ptr(), ud.0) }
            })
        });
        // SAFETY: the caller's contract.
        unsafe {
            with_config(options, |c| {
                c.on_outcome = hook;
                Ok(())
            })
        }
    })
}

/// Sets the log callback (see `outbound_log_callback`). `callback` NULL removes it (lines
/// then go to stderr when logging is on).
///
/// Ownership: as for `outbound_options_set_outcome_callback`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `callback` is NULL or safe to call as documented.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_log_callback(
    options: *mut outbound_options,
    callback: outbound_log_callback,
    userdata: *mut c_void,
) -> outbound_result {
    ffi!({
        let userdata = Userdata(userdata);
        let sink = callback.map(|cb| -> outbound::LogSink {
            Arc::new(move |level: Level, line: &str| {
                let ud = userdata;
                let level = match level {
                    Level::Debug => outbound_log_level::Debug,
                    Level::Warn => outbound_log_level::Warn,
                };
                let line = c_string(line);
                // SAFETY: the caller's callback, called as documented.
                unsafe { cb(level, line.as_ptr(), ud.0) }
            })
        });
        // SAFETY: the caller's contract.
        unsafe {
            with_config(options, |c| {
                c.log_sink = sink;
                Ok(())
            })
        }
    })
}
