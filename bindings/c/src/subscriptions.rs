//! A client's subscriptions as C sees them: each one's counters, and the messages none
//! matched.

use crate::client::{client_ref, outbound_client, outbound_stats, stats_of};
use crate::result::{finish, outbound_result, Failure};
use std::ffi::c_char;

/// Writes a snapshot of subscription `name`'s counters to `*out`: the messages it was given
/// (those its trigger matched), delivered, failed, retried, ... on their own (a client's own
/// counters, `outbound_client_stats`, are its ingestion's and webhooks').
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, name or out), `_INVALID_UTF8`,
/// `_INVALID_FIELD` (the client has no subscription of that name; the text names `name`),
/// `_PANIC`. `*out` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_subscription_stats(
    client: *const outbound_client,
    name: *const c_char,
    out: *mut outbound_stats,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            // SAFETY: the caller's contract.
            let name = unsafe { crate::convert::req_str(name, "name") }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            let sub = client.subscription(name).ok_or_else(|| {
                Failure::Core(outbound::Error::InvalidField {
                    field: "name".into(),
                    reason: format!("the client has no subscription named {name:?}"),
                })
            })?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out = stats_of(sub.stats()) };
            Ok(())
        })())
    })
}

/// Writes to `*out` how many accepted messages no subscription matched and that had no
/// destination of the client's own (no write key, no webhook on): they ended there, which is
/// not a failure, and have no outcome.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_PANIC`. `*out` is
/// written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_unmatched(
    client: *const outbound_client,
    out: *mut u64,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out = client.unmatched() };
            Ok(())
        })())
    })
}
