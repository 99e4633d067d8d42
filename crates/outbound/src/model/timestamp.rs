//! Timestamps on the wire: UTC, millisecond precision, `2026-11-21T09:30:00.123Z`.

use crate::error::Error;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// Length of every timestamp we emit.
pub(crate) const LEN: usize = 24;

/// Formats `t` in UTC with milliseconds (truncated, never rounded up into the next second).
/// Years outside 0000..=9999 cannot be written in this form and are refused.
pub fn format(t: OffsetDateTime) -> Result<String, Error> {
    let mut buf = [0u8; LEN];
    write(t, &mut buf)?;
    Ok(String::from_utf8(buf.to_vec()).expect("ascii"))
}

pub(crate) fn write(t: OffsetDateTime, buf: &mut [u8; LEN]) -> Result<(), Error> {
    let t = t.to_offset(UtcOffset::UTC);
    let year = t.year();
    if !(0..=9999).contains(&year) {
        return Err(Error::invalid(
            "timestamp",
            format!("year {year} is outside 0000..9999"),
        ));
    }
    let ms = t.nanosecond() / 1_000_000;
    let parts: [(usize, u32, usize); 7] = [
        (0, year as u32, 4),
        (5, u8::from(t.month()) as u32, 2),
        (8, t.day() as u32, 2),
        (11, t.hour() as u32, 2),
        (14, t.minute() as u32, 2),
        (17, t.second() as u32, 2),
        (20, ms, 3),
    ];
    *buf = *b"0000-00-00T00:00:00.000Z";
    for (at, mut v, width) in parts {
        for i in (0..width).rev() {
            buf[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    Ok(())
}

/// The current time.
pub(crate) fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// Parses an RFC 3339 / ISO 8601 timestamp with an offset (`Z`, `+02:00`, or ISO 8601's
/// basic `+0200`, which analytics-go v2 wrote: `2009-11-10T23:00:00+0000`).
pub fn parse(text: &str) -> Result<OffsetDateTime, Error> {
    OffsetDateTime::parse(text, &Rfc3339)
        .or_else(|e| match with_offset_colon(text) {
            Some(t) => OffsetDateTime::parse(&t, &Rfc3339).map_err(|_| e),
            None => Err(e),
        })
        .map_err(|e| {
            Error::invalid(
                "timestamp",
                format!("{text:?} is not an RFC 3339 timestamp with an offset ({e})"),
            )
        })
}

/// `...+hhmm` as `...+hh:mm`; None when `text` does not end in a basic offset.
fn with_offset_colon(text: &str) -> Option<String> {
    let (head, offset) = text.split_at_checked(text.len().checked_sub(5)?)?;
    // Checked: the fifth byte from the end may sit inside a multi-byte character.
    let (sign, digits) = offset.split_at_checked(1)?;
    (matches!(sign, "+" | "-") && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("{head}{sign}{}:{}", &digits[..2], &digits[2..]))
}

/// Unix milliseconds of `at` (an `Instant` of this process).
pub(crate) fn wall_ms(at: Instant) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    now - Instant::now().saturating_duration_since(at).as_millis() as i64
}

/// The `Instant` of a Unix-milliseconds time (clamped to now: never in the future).
pub(crate) fn instant_of(ms: i64) -> Instant {
    let now = Instant::now();
    let ago = (wall_ms(now) - ms).max(0) as u64;
    now.checked_sub(Duration::from_millis(ago)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_ending_inside_a_multibyte_character_is_an_error_not_a_panic() {
        // Found by the C ABI fuzzer (bytes 40 ca 9a 3b 6c 41).
        for text in [
            "@\u{29a};lA",
            "\u{29a}0000",
            "2026-11-21T09:30:00\u{e9}0000",
            "é",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn formats_in_utc_with_milliseconds_whatever_the_offset() {
        let t = parse("2026-11-21T11:30:00.123987+02:00").unwrap();
        assert_eq!(format(t).unwrap(), "2026-11-21T09:30:00.123Z");
    }

    #[test]
    fn pads_small_fields() {
        let t = parse("0042-01-02T03:04:05Z").unwrap();
        assert_eq!(format(t).unwrap(), "0042-01-02T03:04:05.000Z");
    }

    #[test]
    fn reads_the_basic_offset_analytics_go_v2_wrote() {
        let t = parse("2009-11-10T23:00:00+0000").unwrap();
        assert_eq!(format(t).unwrap(), "2009-11-10T23:00:00.000Z");
        let t = parse("2009-11-10T23:00:00.5-0130").unwrap();
        assert_eq!(format(t).unwrap(), "2009-11-11T00:30:00.500Z");
        for bad in [
            "2009-11-10T23:00:00+00000",
            "2009-11-10T23:00:00+0a00",
            "+0000",
            "0000",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_text_without_offset() {
        let e = parse("2026-11-21T09:30:00").unwrap_err();
        assert!(e.to_string().contains("timestamp"), "{e}");
    }
}
