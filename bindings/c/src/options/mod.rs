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

/// Called once per accepted message with how it ended (and, with subscriptions, once more
/// per subscription the message matched: `outbound_outcome_callback_ex` tells them apart).
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

/// How one accepted message ended, at one of its destinations, as
/// `outbound_outcome_callback_ex` is told. Every text is NUL-terminated and borrowed for the
/// duration of the call only: copy what you keep. Later releases may add fields at the end
/// (it is only ever handed out by pointer).
#[repr(C)]
#[derive(Debug)]
pub struct outbound_outcome {
    /// The id returned when the message was enqueued.
    pub message_id: *const c_char,
    /// `"delivered"`, `"failed"` or `"dropped"`.
    pub outcome: *const c_char,
    /// Why, when not delivered (`"webhooks: status 400"`, `"client closed before delivery"`,
    /// ...); `""` when delivered.
    pub detail: *const c_char,
    /// The name of the subscription this outcome is of, or NULL for the message's own
    /// outcome (its ingestion and webhooks). A message has its own outcome when it has a
    /// destination of its own, and one per subscription it matched
    /// (`outbound_options_add_subscription_json`).
    pub subscription: *const c_char,
}

/// The outcome callback with every field of the outcome (the subscription's name included):
/// called once per accepted message and once per subscription it matched.
///
/// - `outcome`: the outcome, valid for the duration of the call only.
/// - `userdata`: the pointer given to `outbound_options_set_outcome_callback_ex`.
///
/// It runs as `outbound_outcome_callback` does: on the client's background scheduler thread,
/// one call at a time per client, under the same rules.
pub type outbound_outcome_callback_ex =
    Option<unsafe extern "C" fn(outcome: *const outbound_outcome, userdata: *mut c_void)>;

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

/// Webhook `webhook` of `c`, or a config error naming `webhooks[i].<field>` when no webhook of
/// that index has been added.
fn webhook_mut<'a>(
    c: &'a mut Config,
    webhook: usize,
    field: &str,
) -> Result<&'a mut Webhook, Failure> {
    let added = c.webhooks.len();
    std::sync::Arc::make_mut(&mut c.webhooks)
        .get_mut(webhook)
        .ok_or_else(|| {
            Failure::Core(outbound::Error::Config {
                setting: format!("webhooks[{webhook}].{field}"),
                reason: format!("no webhook {webhook}: {added} added"),
            })
        })
}

/// [`with_config`] for a setter that cannot fail: `f` sets its field.
///
/// # Safety
/// As [`with_config`].
unsafe fn set(options: *mut outbound_options, f: impl FnOnce(&mut Config)) -> outbound_result {
    // SAFETY: the caller's contract.
    unsafe {
        with_config(options, |c| {
            f(c);
            Ok(())
        })
    }
}

/// Creates options with every default: no destination (set a write key, a webhook or
/// both; each webhook with at most 20 static headers of 8192 bytes), endpoint
/// `https://api.segment.io`, flush_at 20 (also the most messages one request carries:
/// max_batch_messages unset), flush_interval 5000 ms,
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

// In the order of the header (cbindgen follows it): destinations (webhooks, their endpoints,
// subscriptions), then the spool, then batching and retries, then the network, then callbacks.
mod destinations;

mod endpoint;

mod subscriptions;

mod spool;

mod batching;

mod network;

mod callbacks;

pub use batching::*;
pub use callbacks::*;
pub use destinations::*;
pub use endpoint::*;
pub use network::*;
pub use spool::*;
pub use subscriptions::*;
