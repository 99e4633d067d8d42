//! C values in and out: strings, JSON objects, byte ranges, caller buffers, durations.

use crate::result::Failure;
use outbound::{Object, OutcomeKind};
use std::ffi::{c_char, CStr, CString};
use std::time::Duration;

/// A NUL-terminated argument that may be NULL (absent).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn opt_str<'a>(
    p: *const c_char,
    what: &'static str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes.to_str().map(Some).map_err(|_| Failure::Utf8(what))
}

/// A NUL-terminated argument that must be given.
///
/// # Safety
/// As [`opt_str`].
pub(crate) unsafe fn req_str<'a>(p: *const c_char, what: &'static str) -> Result<&'a str, Failure> {
    // SAFETY: forwarded contract.
    unsafe { opt_str(p, what) }?.ok_or(Failure::Null(what))
}

/// An owned optional string.
///
/// # Safety
/// As [`opt_str`].
pub(crate) unsafe fn opt_string(
    p: *const c_char,
    what: &'static str,
) -> Result<Option<String>, Failure> {
    // SAFETY: forwarded contract.
    Ok(unsafe { opt_str(p, what) }?.map(str::to_owned))
}

/// An optional JSON object given as text; parsing and its errors are the core's.
///
/// # Safety
/// As [`opt_str`].
pub(crate) unsafe fn opt_object(
    p: *const c_char,
    what: &'static str,
) -> Result<Option<Object>, Failure> {
    // SAFETY: forwarded contract.
    match unsafe { opt_str(p, what) }? {
        None => Ok(None),
        Some(text) => Ok(Some(outbound::parse_object(what, text)?)),
    }
}

/// `len` bytes at `p`; NULL is allowed only with `len == 0`.
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes that live for `'a`.
pub(crate) unsafe fn bytes<'a>(
    p: *const u8,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], Failure> {
    if p.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Failure::Null(what))
        };
    }
    // SAFETY: non-NULL, `len` readable bytes per the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Checks that `text_len` bytes plus a NUL fit in a buffer of `len` (when a buffer is given).
/// On failure the needed length goes to `written`, as documented for
/// `OUTBOUND_RESULT_INSUFFICIENT_SIZE`.
///
/// # Safety
/// `written` is NULL or writable.
pub(crate) unsafe fn check_fits(
    text_len: usize,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
    what: &'static str,
) -> Result<(), Failure> {
    if buf.is_null() || text_len < len {
        return Ok(());
    }
    if !written.is_null() {
        // SAFETY: non-NULL and writable per the contract.
        unsafe { *written = text_len };
    }
    Err(Failure::Size {
        what,
        needed: text_len + 1,
        given: len,
    })
}

/// Copies `text` and a NUL into `buf` (when given) and its length into `written` (when
/// given). Call [`check_fits`] first.
///
/// # Safety
/// `buf` is NULL or points to `len` writable bytes; `written` is NULL or writable.
pub(crate) unsafe fn write_text(
    text: &str,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
    what: &'static str,
) -> Result<(), Failure> {
    // SAFETY: forwarded contract.
    unsafe { check_fits(text.len(), buf, len, written, what) }?;
    if !buf.is_null() {
        // SAFETY: text.len() + 1 <= len bytes are writable at buf (checked just above).
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
            *buf.add(text.len()) = 0;
        }
    }
    if !written.is_null() {
        // SAFETY: non-NULL and writable per the contract.
        unsafe { *written = text.len() };
    }
    Ok(())
}

/// A C string for a callback. Texts that come from JSON may hold U+0000, which C cannot
/// carry: they are cut at the first NUL.
pub(crate) fn c_string(text: &str) -> CString {
    let end = text.find('\0').unwrap_or(text.len());
    CString::new(&text[..end]).unwrap_or_default()
}

/// An outcome's kind as the outcome callback and the recording give it.
pub(crate) fn outcome_kind(kind: OutcomeKind) -> &'static CStr {
    match kind {
        OutcomeKind::Delivered => c"delivered",
        OutcomeKind::Failed => c"failed",
        OutcomeKind::Dropped => c"dropped",
    }
}

/// Milliseconds from C. Capped at 100 years, so "wait practically forever" values such as
/// `UINT64_MAX` cannot overflow a deadline.
pub(crate) fn millis(ms: u64) -> Duration {
    const CAP_MS: u64 = 100 * 365 * 24 * 3600 * 1000;
    Duration::from_millis(ms.min(CAP_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_string_cuts_at_an_interior_nul() {
        assert_eq!(c_string("ab\0cd").to_str().unwrap(), "ab");
        assert_eq!(c_string("abc").to_str().unwrap(), "abc");
    }

    #[test]
    fn huge_waits_are_capped() {
        assert!(millis(u64::MAX) < Duration::from_secs(200 * 365 * 24 * 3600));
        assert_eq!(millis(1500), Duration::from_millis(1500));
    }
}
