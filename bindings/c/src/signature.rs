//! Signatures for receivers written in C: `X-Signature` (sign and verify raw body bytes),
//! the `hmac-sha256` scheme's `X-Signature-256`, and Standard Webhooks (`webhook-signature`,
//! with the replay tolerance).

use crate::convert::{bytes, req_str, write_text};
use crate::result::{finish, outbound_result, Failure};
use outbound::SignatureError;
use std::ffi::c_char;
use std::time::Duration;

/// Size of a buffer that holds a signature: 40 hex digits and the NUL.
pub const OUTBOUND_SIGNATURE_BUFFER_LEN: usize = 41;

/// Computes the `X-Signature` of `body` with `secret`: the lowercase hex HMAC-SHA1 of the
/// exact body bytes (40 characters), written NUL-terminated to `out`.
///
/// - `secret`, `body`: `secret_len` / `body_len` bytes, borrowed for the call; either may be
///   NULL only when its length is 0. Any bytes are allowed (no NUL termination needed).
/// - `out`: caller-owned buffer of `out_len` bytes, at least
///   `OUTBOUND_SIGNATURE_BUFFER_LEN` (41). Written only on success.
/// - `out_written`: may be NULL; receives 40 on success (the needed length on
///   `OUTBOUND_RESULT_INSUFFICIENT_SIZE`).
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_NULL_ARGUMENT` (`out`, or a NULL with a
/// non-zero length), `OUTBOUND_RESULT_INSUFFICIENT_SIZE`, or `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// Each pointer is NULL or valid for its stated length.
#[no_mangle]
pub unsafe extern "C" fn outbound_sign(
    secret: *const u8,
    secret_len: usize,
    body: *const u8,
    body_len: usize,
    out: *mut c_char,
    out_len: usize,
    out_written: *mut usize,
) -> outbound_result {
    ffi!({
        // SAFETY: the caller's contract for each pointer.
        unsafe {
            sign_with(
                outbound::sign,
                (secret, secret_len),
                (body, body_len),
                (out, out_len),
                out_written,
            )
        }
    })
}

/// Checks an `X-Signature` value against the raw request body, in constant time with
/// respect to the digest. Hex digits of either case are accepted; anything but 40 hex
/// digits is a mismatch.
///
/// - `secret`, `body`, `signature`: byte ranges of the given lengths, borrowed for the
///   call; each may be NULL only when its length is 0. `signature` is the header value as
///   received (no NUL termination needed).
///
/// Returns `OUTBOUND_RESULT_OK` when the signature matches, `OUTBOUND_RESULT_BAD_SIGNATURE`
/// when it does not, `OUTBOUND_RESULT_NULL_ARGUMENT`, or `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// Each pointer is NULL or valid for its stated length.
#[no_mangle]
pub unsafe extern "C" fn outbound_verify(
    secret: *const u8,
    secret_len: usize,
    body: *const u8,
    body_len: usize,
    signature: *const c_char,
    signature_len: usize,
) -> outbound_result {
    ffi!({
        // SAFETY: the caller's contract for each pointer.
        unsafe {
            verify_with(
                outbound::verify,
                (secret, secret_len),
                (body, body_len),
                (signature, signature_len),
            )
        }
    })
}

/// Size of a buffer that holds an `hmac-sha256` signature: `sha256=`, 64 hex digits and the
/// NUL.
pub const OUTBOUND_SIGNATURE_SHA256_BUFFER_LEN: usize = 72;

/// Computes the `hmac-sha256` scheme's signature of `body` with `secret` (the value of
/// `X-Signature-256`, or of the webhook's `outbound_options_set_webhook_signature_header`):
/// `sha256=` and the lowercase hex HMAC-SHA256 of the exact body bytes (71 characters),
/// written NUL-terminated to `out`. The form of GitHub's `X-Hub-Signature-256`.
///
/// - `secret`, `body`: `secret_len` / `body_len` bytes, borrowed for the call; either may be
///   NULL only when its length is 0.
/// - `out`: caller-owned buffer of `out_len` bytes, at least
///   `OUTBOUND_SIGNATURE_SHA256_BUFFER_LEN` (72). Written only on success.
/// - `out_written`: may be NULL; receives 71 on success (the needed length on
///   `OUTBOUND_RESULT_INSUFFICIENT_SIZE`).
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_NULL_ARGUMENT` (`out`, or a NULL with a
/// non-zero length), `OUTBOUND_RESULT_INSUFFICIENT_SIZE`, or `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// Each pointer is NULL or valid for its stated length.
#[no_mangle]
pub unsafe extern "C" fn outbound_sign_sha256(
    secret: *const u8,
    secret_len: usize,
    body: *const u8,
    body_len: usize,
    out: *mut c_char,
    out_len: usize,
    out_written: *mut usize,
) -> outbound_result {
    ffi!({
        // SAFETY: the caller's contract for each pointer.
        unsafe {
            sign_with(
                outbound::sign_sha256,
                (secret, secret_len),
                (body, body_len),
                (out, out_len),
                out_written,
            )
        }
    })
}

/// Checks an `hmac-sha256` signature (`sha256=<hex>`, as `outbound_sign_sha256` writes it;
/// hex digits of either case) against the raw request body, in constant time with respect
/// to the digest. Anything else is a mismatch.
///
/// - `secret`, `body`, `signature`: byte ranges of the given lengths, borrowed for the
///   call; each may be NULL only when its length is 0. `signature` is the header value as
///   received (no NUL termination needed).
///
/// Returns `OUTBOUND_RESULT_OK` when the signature matches, `OUTBOUND_RESULT_BAD_SIGNATURE`
/// when it does not, `OUTBOUND_RESULT_NULL_ARGUMENT`, or `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// Each pointer is NULL or valid for its stated length.
#[no_mangle]
pub unsafe extern "C" fn outbound_verify_sha256(
    secret: *const u8,
    secret_len: usize,
    body: *const u8,
    body_len: usize,
    signature: *const c_char,
    signature_len: usize,
) -> outbound_result {
    ffi!({
        // SAFETY: the caller's contract for each pointer.
        unsafe {
            verify_with(
                outbound::verify_sha256,
                (secret, secret_len),
                (body, body_len),
                (signature, signature_len),
            )
        }
    })
}

/// The replay tolerance most receivers should pass to `outbound_verify_standard`: 300
/// seconds (5 minutes), the core's default and the Standard Webhooks libraries'.
pub const OUTBOUND_STANDARD_TOLERANCE_SECONDS: u64 = 300;

/// Computes a Standard Webhooks `webhook-signature` value: `v1,<base64 HMAC-SHA256 of
/// "webhook_id.timestamp.body">` for each secret of `secrets`, space separated, written
/// NUL-terminated to `out`. The sender does this itself (signature scheme
/// `"standard-webhooks"`); this is for receivers' tests and other senders.
///
/// - `secrets`: one or more `whsec_<base64>` secrets separated by spaces (the `whsec_`
///   prefix and the base64 padding may be left out). Required.
/// - `webhook_id`: the `webhook-id` header value (the message id). Required.
/// - `timestamp`: the `webhook-timestamp` value, Unix seconds.
/// - `body`: `body_len` bytes; NULL only when `body_len` is 0.
/// - `out`: caller-owned buffer of `out_len` bytes: 48 per secret is enough (`v1,`, 44
///   base64 characters, a space or the NUL). Written only on success.
/// - `out_written`: may be NULL; receives the length without the NUL on success (the needed
///   length on `OUTBOUND_RESULT_INSUFFICIENT_SIZE`).
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_CONFIG` (a secret is not a `whsec_`
/// secret; the text says which), `_NULL_ARGUMENT`, `_INVALID_UTF8`, `_INSUFFICIENT_SIZE`,
/// `_PANIC`.
///
/// # Safety
/// `secrets` and `webhook_id` are NULL or NUL-terminated; `body` is NULL or valid for
/// `body_len` bytes; `out` is NULL or valid for `out_len` bytes; `out_written` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_sign_standard(
    secrets: *const c_char,
    webhook_id: *const c_char,
    timestamp: i64,
    body: *const u8,
    body_len: usize,
    out: *mut c_char,
    out_len: usize,
    out_written: *mut usize,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract for each pointer.
            let secrets = unsafe { req_str(secrets, "secrets") }?;
            let id = unsafe { req_str(webhook_id, "webhook_id") }?;
            let body = unsafe { bytes(body, body_len, "body") }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            let signature = outbound::sign_standard(secrets, id, timestamp, body)
                .map_err(|e| secret_error(&e))?;
            unsafe { write_text(&signature, out, out_len, out_written, "out") }
        })())
    })
}

/// Verifies a Standard Webhooks request against the receiver's clock: accepted when
/// `webhook_timestamp` is within `tolerance_seconds` of now (before or after; pass
/// `OUTBOUND_STANDARD_TOLERANCE_SECONDS`) and some `v1` signature of `webhook_signature`
/// matches some secret of `secrets` (constant-time comparison; other versions are skipped).
///
/// - `secrets`: the receiver's `whsec_` secret(s), space separated (during a rotation, the
///   new and the old one).
/// - `webhook_id`, `webhook_timestamp`, `webhook_signature`: the three header values as
///   received, NUL-terminated.
/// - `body`: the raw request body, `body_len` bytes; NULL only when `body_len` is 0.
///
/// Returns `OUTBOUND_RESULT_OK` when authentic and recent; `OUTBOUND_RESULT_BAD_SIGNATURE`
/// when not (the text says whether no signature matched, the timestamp is not a number, or
/// it is outside the tolerance: a replay or a clock far off); `OUTBOUND_RESULT_CONFIG` when
/// a secret is not a `whsec_` secret (the receiver's setup, not the request);
/// `_NULL_ARGUMENT`, `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// The four strings are NULL or NUL-terminated; `body` is NULL or valid for `body_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn outbound_verify_standard(
    secrets: *const c_char,
    webhook_id: *const c_char,
    webhook_timestamp: *const c_char,
    body: *const u8,
    body_len: usize,
    webhook_signature: *const c_char,
    tolerance_seconds: u64,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract for each pointer.
            let secrets = unsafe { req_str(secrets, "secrets") }?;
            let id = unsafe { req_str(webhook_id, "webhook_id") }?;
            let ts = unsafe { req_str(webhook_timestamp, "webhook_timestamp") }?;
            let body = unsafe { bytes(body, body_len, "body") }?;
            let sig = unsafe { req_str(webhook_signature, "webhook_signature") }?;
            let tolerance = Duration::from_secs(tolerance_seconds);
            match outbound::verify_standard(secrets, id, ts, body, sig, tolerance) {
                Ok(()) => Ok(()),
                Err(e @ SignatureError::InvalidSecret(_)) => Err(secret_error(&e)),
                Err(e) => Err(Failure::StandardSignature(e.to_string())),
            }
        })())
    })
}

/// A bad receiver secret is a setting refused (`OUTBOUND_RESULT_CONFIG`), named `secrets`.
fn secret_error(e: &SignatureError) -> Failure {
    let why = match e {
        SignatureError::InvalidSecret(why) => why.clone(),
        other => other.to_string(),
    };
    Failure::Core(outbound::Error::Config {
        setting: "secrets".into(),
        reason: why,
    })
}

/// A signature of the body with the secret, by `sign`, written NUL-terminated to `out`.
///
/// # Safety
/// Each pointer is NULL or valid for its stated length.
unsafe fn sign_with(
    sign: fn(&[u8], &[u8]) -> String,
    (secret, secret_len): (*const u8, usize),
    (body, body_len): (*const u8, usize),
    (out, out_len): (*mut c_char, usize),
    out_written: *mut usize,
) -> outbound_result {
    finish((|| {
        let secret = unsafe { bytes(secret, secret_len, "secret") }?;
        let body = unsafe { bytes(body, body_len, "body") }?;
        if out.is_null() {
            return Err(Failure::Null("out"));
        }
        unsafe { write_text(&sign(secret, body), out, out_len, out_written, "out") }
    })())
}

/// Whether `verify` takes the signature for the body and the secret.
///
/// # Safety
/// Each pointer is NULL or valid for its stated length.
unsafe fn verify_with(
    verify: fn(&[u8], &[u8], &str) -> bool,
    (secret, secret_len): (*const u8, usize),
    (body, body_len): (*const u8, usize),
    (signature, signature_len): (*const c_char, usize),
) -> outbound_result {
    finish((|| {
        let secret = unsafe { bytes(secret, secret_len, "secret") }?;
        let body = unsafe { bytes(body, body_len, "body") }?;
        let signature = unsafe { bytes(signature.cast::<u8>(), signature_len, "signature") }?;
        // Bytes that are not UTF-8 cannot be hex digits: a mismatch, not a text error.
        match std::str::from_utf8(signature) {
            Ok(sig) if verify(secret, body, sig) => Ok(()),
            _ => Err(Failure::BadSignature),
        }
    })())
}
