//! Webhook signatures, both schemes:
//!
//! - `X-Signature` (the seed's, the default): lowercase hex HMAC-SHA1 of the exact body
//!   bytes, keyed with the shared secret. Receivers verify with [`verify`] (raw body) or
//!   [`verify_value`] (an already parsed body).
//! - Standard Webhooks (opt-in): `webhook-signature: v1,<base64 HMAC-SHA256 of
//!   "{webhook-id}.{webhook-timestamp}.{body}">`, keyed with the base64-decoded `whsec_`
//!   secret; one signature per secret, space separated, for key rotation. Receivers verify
//!   with [`verify_standard`], which also refuses timestamps outside a tolerance (replays).

use crate::model::config::standard_keys;
use crate::wire::canonical_json;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha1::Sha1;
use sha2::Sha256;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type HmacSha1 = Hmac<Sha1>;
type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], body: &[u8]) -> HmacSha1 {
    // HMAC takes keys of any length; new_from_slice cannot fail for it.
    let mut mac = HmacSha1::new_from_slice(secret).expect("hmac accepts any key length");
    mac.update(body);
    mac
}

/// Appends `bytes` as lowercase hex.
fn push_hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        out.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        out.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
}

/// The `N` bytes `hex` spells (either case), or `None` for anything but `2 * N` hex digits.
fn unhex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    let hex = hex.as_bytes();
    if hex.len() != 2 * N {
        return None;
    }
    let mut raw = [0u8; N];
    for (i, pair) in hex.chunks(2).enumerate() {
        raw[i] = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
    }
    Some(raw)
}

/// The signature of `body`: 40 lowercase hex digits.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut out = String::with_capacity(40);
    push_hex(&mut out, &mac(secret, body).finalize().into_bytes());
    out
}

/// True when `signature` is the signature of `body`. The comparison takes the same time
/// whatever the digest's bytes; anything but 40 hex digits (either case) is false. A request
/// without `X-Signature` is not signed: the bindings pass its missing header as `""`.
pub fn verify(secret: &[u8], body: &[u8], signature: &str) -> bool {
    match unhex::<20>(signature) {
        Some(raw) => mac(secret, body).verify_slice(&raw).is_ok(),
        None => false,
    }
}

/// For receivers that only have the parsed body: re-serializes `body` the way every
/// sender following the spec does (`JSON.stringify`) and verifies that.
pub fn verify_value(secret: &[u8], body: &Value, signature: &str) -> bool {
    match canonical_json::to_vec(body) {
        Ok(bytes) => verify(secret, &bytes, signature),
        Err(_) => false,
    }
}

/// The `hmac-sha256` scheme's value for `body`: `sha256=` and 64 lowercase hex digits of
/// HMAC-SHA256 keyed with `secret` (GitHub's `X-Hub-Signature-256` form).
pub fn sign_sha256(secret: &[u8], body: &[u8]) -> String {
    let mut out = String::with_capacity(71);
    out.push_str("sha256=");
    push_hex(&mut out, &mac256(secret, body).finalize().into_bytes());
    out
}

/// True when `signature` (`sha256=<hex>`, either case of hex) is [`sign_sha256`]'s value of
/// `body`, compared in constant time.
pub fn verify_sha256(secret: &[u8], body: &[u8], signature: &str) -> bool {
    match signature.strip_prefix("sha256=").and_then(unhex::<32>) {
        Some(raw) => mac256(secret, body).verify_slice(&raw).is_ok(),
        None => false,
    }
}

fn mac256(secret: &[u8], body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).expect("hmac accepts any key length");
    mac.update(body);
    mac
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// How long before or after the receiver's clock a Standard Webhooks timestamp is accepted
/// by [`verify_standard`] unless told otherwise: 5 minutes, as the spec's libraries do.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

fn standard_mac(key: &[u8], msg_id: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("hmac accepts any key length");
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `webhook-signature` value for one request: `v1,<base64>` for each key, space
/// separated, in the order given.
pub(crate) fn sign_with_keys(
    keys: &[Vec<u8>],
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    let ts = timestamp.to_string();
    let mut out = String::with_capacity(keys.len() * 48);
    for key in keys {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str("v1,");
        BASE64.encode_string(
            standard_mac(key, msg_id, &ts, body).finalize().into_bytes(),
            &mut out,
        );
    }
    out
}

/// The Standard Webhooks `webhook-signature` header value of a request with this
/// `webhook-id` (`msg_id`), `webhook-timestamp` (Unix seconds) and body: `v1,<base64
/// HMAC-SHA256 of "msg_id.timestamp.body">`, one per secret of `secrets` (`whsec_` secrets
/// separated by spaces), space separated.
pub fn sign_standard(
    secrets: &str,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, SignatureError> {
    let keys = standard_keys(secrets).map_err(SignatureError::InvalidSecret)?;
    Ok(sign_with_keys(&keys, msg_id, timestamp, body))
}

/// Why [`verify_standard`] refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// The receiver's secret is not a `whsec_` secret (a setup mistake, not the sender's).
    InvalidSecret(String),
    /// `webhook-timestamp` is not an integer number of seconds.
    InvalidTimestamp,
    /// `webhook-timestamp` is further from the receiver's clock than the tolerance: a replay,
    /// or a clock far off. `age_secs` is negative for a timestamp in the future.
    OutsideTolerance {
        /// The receiver's time minus the timestamp, in seconds.
        age_secs: i64,
    },
    /// No `v1` signature in `webhook-signature` matches the request and any of the secrets.
    NoMatch,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::InvalidSecret(why) => write!(f, "invalid secret: {why}"),
            SignatureError::InvalidTimestamp => {
                f.write_str("webhook-timestamp is not an integer number of seconds")
            }
            SignatureError::OutsideTolerance { age_secs } if *age_secs < 0 => write!(
                f,
                "webhook-timestamp is {} s in the future, outside the tolerance",
                -age_secs
            ),
            SignatureError::OutsideTolerance { age_secs } => write!(
                f,
                "webhook-timestamp is {age_secs} s old, outside the tolerance (a replay?)"
            ),
            SignatureError::NoMatch => {
                f.write_str("no signature in webhook-signature matches the request")
            }
        }
    }
}

impl std::error::Error for SignatureError {}

/// Verifies a Standard Webhooks request against the receiver's clock: `secrets` (one or
/// more `whsec_` secrets, space separated), the `webhook-id`, `webhook-timestamp` and
/// `webhook-signature` header values as received, and the raw body. Accepted when the
/// timestamp is within `tolerance` (see [`DEFAULT_TOLERANCE`]) of now, before or after, and
/// some `v1` signature of the header matches some secret (compared in constant time);
/// signatures of other versions are skipped.
pub fn verify_standard(
    secrets: &str,
    msg_id: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
    tolerance: Duration,
) -> Result<(), SignatureError> {
    verify_standard_at(
        secrets,
        msg_id,
        timestamp,
        body,
        signature,
        tolerance,
        SystemTime::now(),
    )
}

/// [`verify_standard`] with the receiver's clock given (tests, replays of stored requests).
pub fn verify_standard_at(
    secrets: &str,
    msg_id: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
    tolerance: Duration,
    now: SystemTime,
) -> Result<(), SignatureError> {
    let keys = standard_keys(secrets).map_err(SignatureError::InvalidSecret)?;
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| SignatureError::InvalidTimestamp)?;
    let now = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    let age = now.saturating_sub(ts);
    if age.unsigned_abs() > tolerance.as_secs() {
        return Err(SignatureError::OutsideTolerance { age_secs: age });
    }
    let ts = ts.to_string();
    for sig in signature.split_ascii_whitespace() {
        let Some(b64) = sig.strip_prefix("v1,") else {
            continue;
        };
        let Ok(raw) = BASE64.decode(b64) else {
            continue;
        };
        for key in &keys {
            if standard_mac(key, msg_id, &ts, body)
                .verify_slice(&raw)
                .is_ok()
            {
                return Ok(());
            }
        }
    }
    Err(SignatureError::NoMatch)
}

/// The current time in Unix seconds (the `webhook-timestamp` of a request sent now).
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR: &str = "5099cab379b3be52908387457007040cc934ef86";

    #[test]
    fn sha256_matches_github_s_published_vector() {
        // docs.github.com, "Validating webhook deliveries".
        let sig = sign_sha256(b"It's a Secret to Everybody", b"Hello, World!");
        assert_eq!(
            sig,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
        assert!(verify_sha256(
            b"It's a Secret to Everybody",
            b"Hello, World!",
            &sig
        ));
        assert!(!verify_sha256(b"other", b"Hello, World!", &sig));
        assert!(!verify_sha256(
            b"It's a Secret to Everybody",
            b"Hello, World!",
            &sig[7..]
        ));
    }

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

    // The Standard Webhooks reference vector, from the spec's repository
    // (github.com/standard-webhooks/standard-webhooks: libraries/javascript/src/webhook.test.ts
    // "sign function works" and libraries/python/tests/test_webhooks.py test_sign_function;
    // SW_BAD is that file's test_invalid_signature_raises_error value).
    const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SW_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const SW_TS: i64 = 1614265330;
    const SW_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SW_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const SW_BAD: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=";

    fn at(secs: i64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    }

    #[test]
    fn standard_sign_matches_the_published_vector() {
        assert_eq!(
            sign_standard(SW_SECRET, SW_ID, SW_TS, SW_BODY).unwrap(),
            SW_SIG
        );
        // The prefix is optional, as in the spec's libraries.
        assert_eq!(
            sign_standard(&SW_SECRET[6..], SW_ID, SW_TS, SW_BODY).unwrap(),
            SW_SIG
        );
    }

    #[test]
    fn standard_verify_accepts_the_vector_within_the_tolerance_only() {
        let ts = SW_TS.to_string();
        let ok = |now| {
            verify_standard_at(
                SW_SECRET,
                SW_ID,
                &ts,
                SW_BODY,
                SW_SIG,
                DEFAULT_TOLERANCE,
                now,
            )
        };
        assert_eq!(ok(at(SW_TS)), Ok(()));
        assert_eq!(ok(at(SW_TS + 300)), Ok(()));
        assert_eq!(ok(at(SW_TS - 300)), Ok(()));
        assert_eq!(
            ok(at(SW_TS + 301)),
            Err(SignatureError::OutsideTolerance { age_secs: 301 })
        );
        assert_eq!(
            ok(at(SW_TS - 301)),
            Err(SignatureError::OutsideTolerance { age_secs: -301 })
        );
    }

    #[test]
    fn standard_verify_refuses_tampering_and_bad_input() {
        let ts = SW_TS.to_string();
        let now = at(SW_TS);
        let check = |secret: &str, id: &str, ts: &str, body: &[u8], sig: &str| {
            verify_standard_at(secret, id, ts, body, sig, DEFAULT_TOLERANCE, now)
        };
        let no = Err(SignatureError::NoMatch);
        assert_eq!(check(SW_SECRET, SW_ID, &ts, SW_BODY, SW_BAD), no);
        assert_eq!(
            check(SW_SECRET, SW_ID, &ts, br#"{"test": 2432232315}"#, SW_SIG),
            no
        );
        assert_eq!(check(SW_SECRET, "msg_other", &ts, SW_BODY, SW_SIG), no);
        assert_eq!(check(SW_SECRET, SW_ID, &ts, SW_BODY, "v1,"), no);
        assert_eq!(check(SW_SECRET, SW_ID, &ts, SW_BODY, &SW_SIG[..20]), no);
        assert_eq!(check(SW_SECRET, SW_ID, &ts, SW_BODY, ""), no);
        // Only v1 signatures count.
        assert_eq!(
            check(
                SW_SECRET,
                SW_ID,
                &ts,
                SW_BODY,
                &SW_SIG.replace("v1,", "v2,")
            ),
            no
        );
        assert_eq!(
            check(
                "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY",
                SW_ID,
                &ts,
                SW_BODY,
                SW_SIG
            ),
            no
        );
        assert_eq!(
            check(SW_SECRET, SW_ID, "hello", SW_BODY, SW_SIG),
            Err(SignatureError::InvalidTimestamp)
        );
        assert!(matches!(
            check("whsec_not base64!", SW_ID, &ts, SW_BODY, SW_SIG),
            Err(SignatureError::InvalidSecret(_))
        ));
        assert!(matches!(
            check("", SW_ID, &ts, SW_BODY, SW_SIG),
            Err(SignatureError::InvalidSecret(_))
        ));
    }

    #[test]
    fn a_secret_signs_the_same_with_or_without_its_base64_padding() {
        let padded = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let bare = padded.trim_end_matches('=');
        assert_ne!(padded, bare);
        assert_eq!(
            sign_standard(padded, SW_ID, SW_TS, SW_BODY),
            sign_standard(bare, SW_ID, SW_TS, SW_BODY)
        );
    }

    #[test]
    fn several_secrets_sign_once_each_and_any_one_verifies() {
        let old = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY";
        let both = format!("{SW_SECRET} {old}");
        let header = sign_standard(&both, SW_ID, SW_TS, SW_BODY).unwrap();
        let sigs: Vec<&str> = header.split(' ').collect();
        assert_eq!(sigs.len(), 2);
        assert_eq!(sigs[0], SW_SIG);
        assert_eq!(sigs[1], sign_standard(old, SW_ID, SW_TS, SW_BODY).unwrap());
        let ts = SW_TS.to_string();
        let now = at(SW_TS);
        // A receiver with either secret accepts the rotated header...
        for secret in [SW_SECRET, old] {
            assert_eq!(
                verify_standard_at(secret, SW_ID, &ts, SW_BODY, &header, DEFAULT_TOLERANCE, now),
                Ok(())
            );
        }
        // ...and one holding both accepts a request signed with either.
        assert_eq!(
            verify_standard_at(&both, SW_ID, &ts, SW_BODY, sigs[1], DEFAULT_TOLERANCE, now),
            Ok(())
        );
        // Unknown versions and junk around a valid signature are skipped, as the spec's
        // libraries do.
        let mixed = format!("v2,abc v1,@@@ {SW_SIG} v1a,xyz");
        assert_eq!(
            verify_standard_at(
                SW_SECRET,
                SW_ID,
                &ts,
                SW_BODY,
                &mixed,
                DEFAULT_TOLERANCE,
                now
            ),
            Ok(())
        );
    }
}
