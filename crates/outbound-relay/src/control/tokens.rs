//! Per-source tokens, for self-service: `obt_<id>_<secret>`, shown once when made; the store
//! keeps the id, the source (its name and id) and the SHA-256 of the secret, never the token.
//! A token reads and changes its own source (not its write keys, nor the operator's settings)
//! and nothing else: a later source of the same name is not its own.

use crate::http::auth::ct_eq;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TokenRecord {
    pub id: String,
    pub source: String,
    /// The id of the source it was made for (empty for a source of relay.toml, and for the
    /// admin API's made before sources had ids).
    #[serde(default)]
    pub source_id: String,
    /// Hex SHA-256 of the secret part.
    pub hash: String,
    /// Unix milliseconds.
    pub created_ms: u64,
}

const PREFIX: &str = "obt_";

/// `bytes` random bytes from the OS, in hex.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new token of source `source` (whose id is `source_id`): its record, and the token itself
/// (shown once).
pub fn make(source: &str, source_id: &str, now_ms: u64) -> std::io::Result<(TokenRecord, String)> {
    let (id, secret) = (random_hex(8)?, random_hex(32)?);
    let token = format!("{PREFIX}{id}_{secret}");
    let record = TokenRecord {
        id,
        source: source.to_string(),
        source_id: source_id.to_string(),
        hash: hash(&secret),
        created_ms: now_ms,
    };
    Ok((record, token))
}

/// The id and secret of a token's text, if it has a token's shape.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    token.strip_prefix(PREFIX)?.split_once('_')
}

/// Whether `secret` is the one `record` was made with (constant time in its length).
pub fn matches(record: &TokenRecord, secret: &str) -> bool {
    ct_eq(record.hash.as_bytes(), hash(secret).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_only_its_own_secret_and_is_not_stored() {
        let (record, token) = make("web", "", 1).unwrap();
        let (id, secret) = parse(&token).unwrap();
        assert_eq!(id, record.id);
        assert!(matches(&record, secret));
        assert!(!matches(&record, &secret[1..]));
        assert!(!serde_json::to_string(&record).unwrap().contains(secret));
    }
}
