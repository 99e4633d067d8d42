//! Whether and how requests go out: sending on or off, recording, the proxy from the
//! environment, and the network guard.

use super::*;

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
    ffi!({ unsafe { set(options, |c| c.send = send) } })
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
    ffi!({ unsafe { set(options, |c| c.proxy_from_env = proxy_from_env) } })
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
    ffi!({ unsafe { set(options, |c| c.block_private_networks = block) } })
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
