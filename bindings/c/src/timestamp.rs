//! The wire form of an instant, for bindings whose own time values sit inside properties or
//! traits (the Go package writes a `time.Time` found in a map this way, as the Python package
//! does for a `datetime`), so the format stays the core's.

use crate::convert::write_text;
use crate::result::{finish, outbound_result, Failure};
use outbound::{Error, OffsetDateTime};
use std::ffi::c_char;

/// Size of a buffer that holds a formatted timestamp (`2026-11-21T09:30:00.123Z`) and its NUL.
pub const OUTBOUND_TIMESTAMP_BUFFER_LEN: usize = 25;

/// Formats an instant the way every body carries timestamps: UTC with milliseconds,
/// `2026-11-21T09:30:00.123Z` (sub-millisecond digits are cut, never rounded up).
///
/// - `unix_seconds`, `nanoseconds`: the instant, as seconds since 1970-01-01T00:00:00Z and
///   the nanoseconds within that second (0..999999999).
/// - `out`: caller-owned buffer of `out_len` bytes, at least `OUTBOUND_TIMESTAMP_BUFFER_LEN`
///   (25). Written only on success.
/// - `out_written`: may be NULL; receives 24 on success (the needed length on
///   `OUTBOUND_RESULT_INSUFFICIENT_SIZE`).
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_NULL_ARGUMENT` (`out`),
/// `OUTBOUND_RESULT_INVALID_FIELD` (nanoseconds out of range, or a year outside 0000..9999),
/// `OUTBOUND_RESULT_INSUFFICIENT_SIZE`, or `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// `out` is NULL or has `out_len` writable bytes; `out_written` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_timestamp_format(
    unix_seconds: i64,
    nanoseconds: u32,
    out: *mut c_char,
    out_len: usize,
    out_written: *mut usize,
) -> outbound_result {
    ffi!({
        finish((|| {
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            if nanoseconds >= 1_000_000_000 {
                return Err(invalid("nanoseconds must be below 1000000000".into()));
            }
            let nanos = i128::from(unix_seconds) * 1_000_000_000 + i128::from(nanoseconds);
            let at = OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .map_err(|e| invalid(format!("{unix_seconds} s is out of range ({e})")))?;
            let text = outbound::timestamp::format(at)?;
            // SAFETY: the caller's contract for the buffer.
            unsafe { write_text(&text, out, out_len, out_written, "out") }
        })())
    })
}

fn invalid(reason: String) -> Failure {
    Failure::Core(Error::InvalidField {
        field: "timestamp".into(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(secs: i64, nanos: u32) -> Result<String, outbound_result> {
        let mut buf = [0 as c_char; OUTBOUND_TIMESTAMP_BUFFER_LEN];
        let mut n = 0usize;
        // SAFETY: a buffer of the documented size and a writable length.
        let rc =
            unsafe { outbound_timestamp_format(secs, nanos, buf.as_mut_ptr(), buf.len(), &mut n) };
        if rc != outbound_result::Ok {
            return Err(rc);
        }
        let bytes: Vec<u8> = buf[..n].iter().map(|&c| c as u8).collect();
        Ok(String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn formats_utc_milliseconds_and_cuts_the_rest() {
        // 2026-11-21T09:30:00Z
        assert_eq!(
            format(1_795_253_400, 123_987_654).unwrap(),
            "2026-11-21T09:30:00.123Z"
        );
        assert_eq!(format(0, 0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(format(-1, 999_999_999).unwrap(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn refuses_what_the_wire_form_cannot_carry() {
        assert_eq!(format(0, 1_000_000_000), Err(outbound_result::InvalidField));
        // Year 10000.
        assert_eq!(
            format(253_402_300_800, 0),
            Err(outbound_result::InvalidField)
        );
        assert_eq!(format(i64::MAX, 0), Err(outbound_result::InvalidField));
    }

    #[test]
    fn a_small_buffer_is_refused_with_the_needed_length() {
        let mut buf = [0 as c_char; 10];
        let mut n = 0usize;
        // SAFETY: as above.
        let rc = unsafe { outbound_timestamp_format(0, 0, buf.as_mut_ptr(), buf.len(), &mut n) };
        assert_eq!(rc, outbound_result::InsufficientSize);
        assert_eq!(n, 24);
    }
}
