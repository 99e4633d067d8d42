//! Who may call: write keys (Basic-auth user name, or `writeKey` in the body) and the admin
//! and metrics tokens (`Authorization: Bearer`). Tokens are compared in constant time; write
//! keys are looked up by their SHA-256 (`Sources::by_write_key`); none is ever logged.
//!
//! `ct_eq` takes a time set by the length of what the client sent, not by the secret. Per-key
//! rate limits and any future key store land here.

use base64::Engine as _;
use hyper::header::{HeaderMap, AUTHORIZATION};

/// `given` equals `secret`, in a time that depends only on the length of `given` (the
/// caller's own input): neither how much of the secret matched nor the secret's length shows.
pub fn ct_eq(secret: &[u8], given: &[u8]) -> bool {
    let mut diff = secret.len() ^ given.len();
    if !secret.is_empty() {
        for (i, g) in given.iter().enumerate() {
            // Wraps round a shorter secret: always one read and one xor per given byte.
            diff |= usize::from(secret[i % secret.len()] ^ g);
        }
    }
    // Keep the compiler from cutting the fold short.
    std::hint::black_box(diff) == 0
}

/// The user name of `Authorization: Basic base64(user:password)` (Segment's SDKs send the
/// write key as the user name and an empty password).
pub fn basic_user(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let user = text.split_once(':').map_or(text.as_str(), |(u, _)| u);
    (!user.is_empty()).then(|| user.to_string())
}

/// The token of `Authorization: Bearer <token>`, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, given) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| given.trim())
}

/// True when `headers` carry `Authorization: Bearer <token>` for exactly `token`.
pub fn bearer_is(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, given)) = value.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && ct_eq(token.as_bytes(), given.trim().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_user_is_the_write_key_before_the_colon() {
        let mut h = HeaderMap::new();
        // base64("wk_1:")
        h.insert(AUTHORIZATION, "Basic d2tfMTo=".parse().unwrap());
        assert_eq!(basic_user(&h).as_deref(), Some("wk_1"));
        h.insert(AUTHORIZATION, "Bearer d2tfMTo=".parse().unwrap());
        assert_eq!(basic_user(&h), None);
    }

    #[test]
    fn bearer_needs_the_exact_token() {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, "Bearer t0ken".parse().unwrap());
        assert!(bearer_is(&h, "t0ken"));
        assert!(!bearer_is(&h, "t0ke"));
        assert!(!bearer_is(&h, "t0ken2"));
        assert!(ct_eq(b"", b""));
    }

    #[test]
    fn ct_eq_is_exact_whatever_the_lengths() {
        assert!(ct_eq(b"wk_web", b"wk_web"));
        assert!(!ct_eq(b"wk_web", b"wk_we"));
        assert!(!ct_eq(b"wk_web", b"wk_webwk_web"));
        assert!(!ct_eq(b"abc", b"abcabc"));
        assert!(!ct_eq(b"wk_web", b"Wk_web"));
        assert!(!ct_eq(b"wk_web", b""));
        assert!(!ct_eq(b"", b"x"));
    }
}
