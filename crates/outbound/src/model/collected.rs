//! A message as a collector of Segment's tracking API receives it from an SDK (the relay's
//! events; a library's own calls have none of this): Segment's server-side fields and the
//! rules that make them, and the fields the core does not know, kept as they came.
//!
//! - `receivedAt`: when the collector took the request.
//! - `sentAt`: the SDK's, as sent (the event's own, else its batch's).
//! - `originalTimestamp`: the SDK's `timestamp`, as sent.
//! - `timestamp`: corrected for the device's clock when `sentAt` is there:
//!   `receivedAt − (sentAt − originalTimestamp)` (Segment's "Spec: Common Fields"); kept as
//!   sent otherwise; `receivedAt` when the SDK sent none (or one that cannot be read).
//! - `context.library`: the SDK's, kept (ours only when it has none).
//! - `context.ip`: the client's address, for events of browser and mobile SDKs (by
//!   `context.library.name`) or with `context.direct: true`, unless the event has one.
//! - every other top-level field is kept as sent, except the SDKs' transport fields and the
//!   fields written here ([`DROPPED`]), and a `null` (absent, as in Segment's API).

use std::net::IpAddr;
use time::{Duration, OffsetDateTime};

/// What a collector knows of a request beyond its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// When the request was taken: `receivedAt`.
    pub at: OffsetDateTime,
    /// The client's address, for `context.ip` (`None`: not known, none is filled).
    pub client_ip: Option<IpAddr>,
}

/// What [`Message::collect`](crate::Message::collect) adds to a message, written into its
/// bodies after `integrations`: `originalTimestamp`, `sentAt`, `receivedAt`, then the
/// message's other fields in their order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collected {
    /// `receivedAt`, written (`2026-11-27T10:00:00.123Z`).
    pub(crate) received_at: [u8; crate::model::timestamp::LEN],
    /// The SDK's `sentAt`, canonical JSON.
    pub(crate) sent_at: Option<Vec<u8>>,
    /// The SDK's `timestamp`, canonical JSON.
    pub(crate) original_timestamp: Option<Vec<u8>>,
    /// The other fields, canonical JSON, each led by a comma: `,"sessionId":5,...`.
    pub(crate) extra: Vec<u8>,
}

impl Collected {
    /// `receivedAt` as written.
    pub fn received_at(&self) -> &str {
        std::str::from_utf8(&self.received_at).unwrap_or_default()
    }

    /// The other top-level fields kept, as canonical JSON entries (`"k":v,...`).
    pub fn extra(&self) -> &str {
        std::str::from_utf8(self.extra.get(1..).unwrap_or_default()).unwrap_or_default()
    }
}

/// Top-level fields never kept: the SDKs' transport fields (`writeKey`, `_metadata`) and the
/// fields a body gets from the core or the collector itself (`version`, `receivedAt`,
/// `originalTimestamp`; `Previous ID` and `User ID`, an alias's in a webhook body). `sentAt`
/// is read, then written as sent.
pub(crate) const DROPPED: [&str; 7] = [
    "writeKey",
    "_metadata",
    "version",
    "receivedAt",
    "originalTimestamp",
    "Previous ID",
    "User ID",
];

/// `context.library.name` of the SDKs that run on the user's device (Segment fills
/// `context.ip` for client-side events only).
const CLIENT_LIBRARIES: [&str; 8] = [
    "analytics.js",
    "analytics-kotlin",
    "analytics-swift",
    "analytics-react-native",
    "analytics-flutter",
    "analytics_flutter",
    "analytics-android",
    "analytics-ios",
];

/// Whether an event of the library `name` comes from the user's device.
pub(crate) fn client_library(name: &str) -> bool {
    CLIENT_LIBRARIES.contains(&name)
}

/// The message's `timestamp`: `original` corrected by the device's clock error
/// `sent − received` when both are known, as sent otherwise, `received` without one. A
/// correction that would leave the writable years is not made.
pub(crate) fn corrected(
    received: OffsetDateTime,
    original: Option<OffsetDateTime>,
    sent: Option<OffsetDateTime>,
) -> OffsetDateTime {
    let Some(original) = original else {
        return received;
    };
    let Some(sent) = sent else {
        return original;
    };
    let skew: Duration = sent - original;
    match received.checked_sub(skew) {
        Some(t) if writable(t) => t,
        _ => original,
    }
}

/// A time the wire format can carry (years 0000..9999).
pub(crate) fn writable(t: OffsetDateTime) -> bool {
    (0..=9999).contains(&t.to_offset(time::UtcOffset::UTC).year())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::timestamp::parse;

    #[test]
    fn a_fast_clock_is_corrected_by_the_gap_between_sent_and_received() {
        let received = parse("2026-11-27T10:00:00.500Z").unwrap();
        // The phone's clock is an hour fast: it stamped the event 10 s before sending it.
        let original = parse("2026-11-27T10:59:50.000Z").unwrap();
        let sent = parse("2026-11-27T11:00:00.000Z").unwrap();
        assert_eq!(
            corrected(received, Some(original), Some(sent)),
            parse("2026-11-27T09:59:50.500Z").unwrap()
        );
        assert_eq!(corrected(received, Some(original), None), original);
        assert_eq!(corrected(received, None, Some(sent)), received);
        // Out of the writable years: not corrected.
        let far = parse("9000-01-01T00:00:00Z").unwrap();
        assert_eq!(corrected(received, Some(original), Some(far)), original);
    }
}
