//! A subscription's request for one event, as the queue keeps it: the mapped body, written
//! canonically, and, when the request differs from what the subscription's settings fix
//! (headers mapped per event, no body, a signature the mapping sets itself), those parts in
//! a frame before it. JSON never starts with a NUL byte, so a frame is told from a body by
//! its first byte; the spool and dead letters keep either as bytes.
//!
//! Frame: `0x00`, flags (bit 0: a body follows; bit 1: signed; bit 2: the event failed the
//! trigger or mapping, and the rest is why), the headers' length (u32, little-endian), the
//! headers (`name NUL value NUL`, each value's characters as Latin-1 bytes), then the body.

use crate::error::Error;
use crate::model::subscription::Mapped;
use crate::wire::canonical_json;

const FRAMED: u8 = 0;
const HAS_BODY: u8 = 1;
const SIGNED: u8 = 2;
const FAILED: u8 = 4;

/// The bytes of an event this subscription cannot send (`why`: its trigger or mapping
/// failed on it): it is queued all the same, so it ends as a failed delivery with its
/// record, outcome and dead letter, as at Segment.
pub(crate) fn failure(why: &str) -> Vec<u8> {
    let mut out = vec![FRAMED, FAILED, 0, 0, 0, 0];
    out.extend_from_slice(why.as_bytes());
    out
}

/// The bytes `mapped` is queued as. `fixed_signed`: whether the subscription's own (fixed)
/// headers leave the signature to the sender; a request that matches that, with a body and
/// the fixed headers, is its body alone.
pub(crate) fn encode(
    mapped: &Mapped<'_>,
    fixed: bool,
    fixed_signed: bool,
) -> Result<Vec<u8>, Error> {
    let body = match &mapped.body {
        Some(value) => Some(canonical_json::to_vec(value)?),
        None => None,
    };
    if let (Some(body), true, true) = (&body, fixed, mapped.signed() == fixed_signed) {
        return Ok(body.clone());
    }
    let mut out = Vec::with_capacity(body.as_ref().map_or(0, Vec::len) + 64);
    out.push(FRAMED);
    let flags =
        if body.is_some() { HAS_BODY } else { 0 } | if mapped.signed() { SIGNED } else { 0 };
    out.push(flags);
    let mut headers = Vec::new();
    if !fixed {
        for (name, value) in mapped.headers.iter() {
            headers.extend_from_slice(name.as_bytes());
            headers.push(0);
            // Node sends each character as one byte (request.rs checks U+0000–U+00FF).
            headers.extend(value.chars().map(|c| c as u32 as u8));
            headers.push(0);
        }
    }
    out.extend_from_slice(&(headers.len() as u32).to_le_bytes());
    out.extend_from_slice(&headers);
    if let Some(body) = body {
        out.extend_from_slice(&body);
    }
    Ok(out)
}

/// A queued request read back: its own headers when mapped per event (`None`: the
/// subscription's), whether it is signed, and where its body is (`None`: it has none).
pub(crate) struct Framed<'a> {
    pub headers: Option<Vec<(&'a [u8], &'a [u8])>>,
    pub signed: Option<bool>,
    pub body: Option<std::ops::Range<usize>>,
}

/// Reads `bytes` as [`encode`] wrote them; `Err` for a frame that does not parse (a spool
/// written by something else).
pub(crate) fn read(bytes: &[u8]) -> Result<Framed<'_>, String> {
    if bytes.first() != Some(&FRAMED) {
        return Ok(Framed {
            headers: None,
            signed: None,
            body: Some(0..bytes.len()),
        });
    }
    let bad = "a subscription's queued request is not in the form this version writes";
    let flags = *bytes.get(1).ok_or(bad)?;
    let len: [u8; 4] = bytes.get(2..6).ok_or(bad)?.try_into().map_err(|_| bad)?;
    let end = 6 + u32::from_le_bytes(len) as usize;
    if flags & FAILED != 0 {
        return Err(String::from_utf8_lossy(&bytes[6..]).into_owned());
    }
    let block = bytes.get(6..end).ok_or(bad)?;
    let mut headers = Vec::new();
    if let Some(pairs) = block.strip_suffix(&[0]) {
        let mut parts = pairs.split(|b| *b == 0);
        while let Some(name) = parts.next() {
            headers.push((name, parts.next().ok_or(bad)?));
        }
    } else if !block.is_empty() {
        return Err(bad.into());
    }
    Ok(Framed {
        headers: (!block.is_empty()).then_some(headers),
        signed: Some(flags & SIGNED != 0),
        body: (flags & HAS_BODY != 0).then_some(end..bytes.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::subscription::{Settings, Subscription};
    use serde_json::json;

    fn mapped_request(settings: Settings, event: serde_json::Value) -> Vec<u8> {
        let sub = Subscription::new(settings).unwrap();
        let mapped = sub.map(&event).unwrap().unwrap();
        let fixed = sub.fixed_headers();
        encode(&mapped, fixed.is_some(), fixed.is_none_or(|(_, own)| !own)).unwrap()
    }

    #[test]
    fn a_request_as_the_settings_fix_it_is_its_body_alone() {
        let s = Settings::new("s", r#"type = "track""#, "http://127.0.0.1/x");
        let bytes = mapped_request(s, json!({"type": "track", "n": 1.0}));
        assert_eq!(bytes, br#"{"type":"track","n":1}"#);
        let read = read(&bytes).unwrap();
        assert!(read.headers.is_none() && read.signed.is_none());
        assert_eq!(read.body, Some(0..bytes.len()));
    }

    #[test]
    fn headers_mapped_per_event_and_a_missing_body_travel_in_a_frame() {
        let mut s = Settings::new("s", r#"type = "track""#, "http://127.0.0.1/x");
        s.headers = Some(json!({"@path": "$.properties.h"}));
        s.data = Some(json!({"@path": "$.properties.none"}));
        let event =
            json!({"type": "track", "properties": {"h": {"X-A": "é", "X-Signature": "own"}}});
        let bytes = mapped_request(s, event);
        let read = read(&bytes).unwrap();
        assert_eq!(
            read.headers.unwrap(),
            [
                (&b"x-a"[..], &[0xe9][..]),
                (&b"x-signature"[..], &b"own"[..])
            ]
        );
        assert_eq!((read.signed, read.body), (Some(false), None));
    }

    #[test]
    fn a_failure_reads_back_as_its_reason_and_a_cut_frame_as_an_error() {
        assert_eq!(
            read(&failure("mapping: headers")).err().unwrap(),
            "mapping: headers"
        );
        assert!(read(&[0, 1, 9, 0, 0, 0, b'x']).is_err());
    }
}
