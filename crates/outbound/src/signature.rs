//! `X-Signature`: lowercase hex HMAC-SHA1 of the exact body bytes, keyed with the shared secret.
//! Receivers verify with [`verify`] (raw body) or [`verify_value`] (an already parsed body).

use crate::canonical_json;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha1::Sha1;

type HmacSha1 = Hmac<Sha1>;

fn mac(secret: &[u8], body: &[u8]) -> HmacSha1 {
    // HMAC takes keys of any length; new_from_slice cannot fail for it.
    let mut mac = HmacSha1::new_from_slice(secret).expect("hmac accepts any key length");
    mac.update(body);
    mac
}

/// The signature of `body`: 40 lowercase hex digits.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let digest = mac(secret, body).finalize().into_bytes();
    let mut out = String::with_capacity(40);
    for b in digest {
        out.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        out.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    out
}

/// True when `signature` is the signature of `body`. The comparison takes the same time
/// whatever the digest's bytes; anything but 40 hex digits (either case) is false. A request
/// without `X-Signature` is not signed: the bindings pass its missing header as `""`.
pub fn verify(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let sig = signature.as_bytes();
    if sig.len() != 40 {
        return false;
    }
    let mut raw = [0u8; 20];
    for (i, pair) in sig.chunks(2).enumerate() {
        match (hex_digit(pair[0]), hex_digit(pair[1])) {
            (Some(h), Some(l)) => raw[i] = (h << 4) | l,
            _ => return false,
        }
    }
    mac(secret, body).verify_slice(&raw).is_ok()
}

/// For receivers that only have the parsed body: re-serializes `body` the way every
/// sender following the spec does (`JSON.stringify`) and verifies that.
pub fn verify_value(secret: &[u8], body: &Value, signature: &str) -> bool {
    match canonical_json::to_vec(body) {
        Ok(bytes) => verify(secret, &bytes, signature),
        Err(_) => false,
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR: &str = "5099cab379b3be52908387457007040cc934ef86";

    #[test]
    fn matches_the_published_vector() {
        assert_eq!(sign(b"abc123", br#"{"cool":true}"#), VECTOR);
    }

    #[test]
    fn verify_accepts_the_right_signature_in_either_case() {
        assert!(verify(b"abc123", br#"{"cool":true}"#, VECTOR));
        assert!(verify(
            b"abc123",
            br#"{"cool":true}"#,
            &VECTOR.to_uppercase()
        ));
    }

    #[test]
    fn a_missing_signature_is_not_valid() {
        assert!(!verify(b"abc123", br#"{"cool":true}"#, ""));
        assert!(!verify(b"", b"", ""));
        let parsed: Value = serde_json::from_str(r#"{"cool":true}"#).unwrap();
        assert!(!verify_value(b"abc123", &parsed, ""));
    }

    #[test]
    fn verify_refuses_wrong_length_non_hex_empty_and_wrong_body() {
        let body = br#"{"cool":true}"#;
        assert!(!verify(b"abc123", body, ""));
        assert!(!verify(b"abc123", body, &VECTOR[..38]));
        assert!(!verify(b"abc123", body, &format!("{VECTOR}00")));
        assert!(!verify(b"abc123", body, &VECTOR.replace('5', "g")));
        assert!(!verify(b"abc123", br#"{"cool":false}"#, VECTOR));
        assert!(!verify(b"other", body, VECTOR));
    }

    #[test]
    fn verify_value_reserializes_canonically() {
        let parsed: Value = serde_json::from_str("{ \"cool\" : true }").unwrap();
        assert!(verify_value(b"abc123", &parsed, VECTOR));
    }
}
