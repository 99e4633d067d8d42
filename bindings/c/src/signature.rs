//! `X-Signature` for receivers written in C: sign and verify raw body bytes.

use crate::convert::{bytes, write_text};
use crate::result::{finish, outbound_result, Failure};
use std::ffi::c_char;

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
        finish((|| {
            // SAFETY: the caller's contract for each pointer.
            let secret = unsafe { bytes(secret, secret_len, "secret") }?;
            let body = unsafe { bytes(body, body_len, "body") }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            let signature = outbound::sign(secret, body);
            unsafe { write_text(&signature, out, out_len, out_written, "out") }
        })())
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
        finish((|| {
            // SAFETY: the caller's contract for each pointer.
            let secret = unsafe { bytes(secret, secret_len, "secret") }?;
            let body = unsafe { bytes(body, body_len, "body") }?;
            let signature = unsafe { bytes(signature.cast::<u8>(), signature_len, "signature") }?;
            // Bytes that are not UTF-8 cannot be hex digits: a mismatch, not a text error.
            match std::str::from_utf8(signature) {
                Ok(sig) if outbound::verify(secret, body, sig) => Ok(()),
                _ => Err(Failure::BadSignature),
            }
        })())
    })
}
