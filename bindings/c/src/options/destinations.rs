//! Where messages go: the ingestion write key and endpoint, the webhooks (each on or off)
//! and the bounds of their static headers, their secret, signature scheme, user agent and
//! extra trusted roots.

use super::*;

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
///   Names and values are checked by `outbound_client_new`, as are their number
///   (`outbound_options_set_max_webhook_headers`, 20 by default) and bytes
///   (`outbound_options_set_max_webhook_header_bytes`, 8192 by default).
///
/// Both texts are copied. On failure nothing is added. How its endpoint wants to be called
/// is set on it by its index afterwards: `outbound_options_set_webhook_auth_basic` (`_bearer`,
/// `_oauth2`), `outbound_options_set_webhook_tls`, `outbound_options_set_webhook_signature_header`,
/// `outbound_options_set_webhook_signature_scheme`, `outbound_options_set_webhook_rate_limit`.
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
                std::sync::Arc::make_mut(&mut c.webhooks).push(hook);
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
                webhook_mut(c, webhook, "enabled")?.enabled = enabled;
                Ok(())
            })
        }
    })
}

/// Static headers one webhook may have at most (default 20). `outbound_client_new` refuses a
/// webhook with more: `OUTBOUND_RESULT_CONFIG`, the text naming `webhooks[i].headers` and
/// `max_webhook_headers`. 0: no webhook may have a static header.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_webhook_headers(
    options: *mut outbound_options,
    max_webhook_headers: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.max_webhook_headers = max_webhook_headers) } })
}

/// Bytes of one webhook's static headers at most, names and values together (default 8192):
/// every request to the webhook carries them. `outbound_client_new` refuses a webhook with
/// more: `OUTBOUND_RESULT_CONFIG`, the text naming `webhooks[i].headers` and
/// `max_webhook_header_bytes`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_max_webhook_header_bytes(
    options: *mut outbound_options,
    bytes: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.max_webhook_header_bytes = bytes) } })
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
/// HMAC-SHA1 of the body), `"standard-webhooks"` (headers `webhook-id` (the message id),
/// `webhook-timestamp` (Unix seconds of the attempt) and, with a shared secret,
/// `webhook-signature`; see <https://www.standardwebhooks.com>) or `"hmac-sha256"`
/// (`X-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, verified with
/// `outbound_verify_sha256`). The body is the same bytes under each. A webhook may have a
/// scheme of its own (`outbound_options_set_webhook_signature_scheme`). With `"standard-webhooks"`, a caller's message id must be visible ASCII
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
