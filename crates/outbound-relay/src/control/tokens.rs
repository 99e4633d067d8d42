//! Per-source tokens, for self-service: `obt_<id>_<secret>`, shown once when made; the store
//! keeps the id, the source (its name and id) and the SHA-256 of the secret, never the token.
//! A token reads and changes its own source (not its write keys, nor the operator's settings)
//! and nothing else: a later source of the same name is not its own.

use super::audit::Record;
use super::auth::OwnSource;
use super::schema::{AuditDetail, NewToken, Refusal, Token, TokenList};
use super::{answer, refusal, sources::not_a_source, store, Api};
use crate::http::auth::ct_eq;
use crate::http::reply::{self, Answer};
use axum::extract::{Path, State};
use axum::http::StatusCode;
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

fn view(t: &TokenRecord) -> Token {
    Token {
        id: t.id.clone(),
        source: t.source.clone(),
        created_ms: t.created_ms,
    }
}

/// `POST /admin/sources/{name}/tokens` (the admin token, or a token of that source: a
/// customer makes its own, say to rotate): a new token, shown once.
#[utoipa::path(post, path = "/admin/sources/{name}/tokens", operation_id = "create_token", tag = "tokens",
    params(("name" = String, Path)),
    responses((status = 201, description = "The token, in `token`: shown this once", body = NewToken),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn create(State(api): State<Api>, own: OwnSource) -> Answer {
    let name = own.name.clone();
    let Some(source) = api.sources().by_name(&name).cloned() else {
        return not_a_source(&name);
    };
    let (record, token) = match make(&name, &source.spec.id, store::now_ms()) {
        Ok(made) => made,
        Err(e) => {
            return reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("no randomness: {e}"),
            )
        }
    };
    let control = api.control.clone();
    let r = record.clone();
    let one = api.control.changing.lock().await;
    let stored = tokio::task::spawn_blocking(move || control.store.put_token(&r)).await;
    if !matches!(stored, Ok(Ok(()))) {
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the token could not be stored",
        );
    }
    let control = &api.control;
    control
        .tokens_mut()
        .insert(record.id.clone(), record.clone());
    (control.held().tokens).insert(record.id.clone(), record.clone());
    drop(one);
    tracing::info!(source = %name, id = %record.id, "source token made");
    let detail = AuditDetail {
        token: Some(record.id.clone()),
        ..AuditDetail::default()
    };
    let audit = Record::new("token.created", Some((&name, &source.spec.id)), detail);
    api.audit(&own.caller, audit).await;
    let made = NewToken {
        id: record.id,
        source: record.source,
        created_ms: record.created_ms,
        token,
    };
    answer(StatusCode::CREATED, &made)
}

/// `GET /admin/sources/{name}/tokens`: its tokens (never the token itself).
#[utoipa::path(get, path = "/admin/sources/{name}/tokens", operation_id = "list_tokens", tag = "tokens",
    params(("name" = String, Path)),
    responses((status = 200, description = "Its tokens", body = TokenList)))]
pub async fn list(State(api): State<Api>, own: OwnSource) -> Answer {
    let tokens = api.control.tokens.read().unwrap_or_else(|e| e.into_inner());
    let mut mine: Vec<&TokenRecord> = (tokens.values()).filter(|t| t.source == own.name).collect();
    mine.sort_by_key(|t| (t.created_ms, t.id.clone()));
    let list = TokenList {
        tokens: mine.into_iter().map(view).collect(),
    };
    answer(StatusCode::OK, &list)
}

/// `DELETE /admin/sources/{name}/tokens/{id}`: revoked (by the admin token, or a token of
/// that source).
#[utoipa::path(delete, path = "/admin/sources/{name}/tokens/{id}", operation_id = "revoke_token", tag = "tokens",
    params(("name" = String, Path), ("id" = String, Path)),
    responses((status = 204, description = "Revoked"),
        (status = 404, description = "No such token of this source", body = Refusal)))]
pub async fn revoke(
    State(api): State<Api>,
    own: OwnSource,
    Path(params): Path<(String, String)>,
) -> Answer {
    let (_, id) = params;
    let control = &api.control;
    let known = (control.tokens.read().unwrap_or_else(|e| e.into_inner()))
        .get(&id)
        .is_some_and(|t| t.source == own.name);
    if !known {
        return refusal(StatusCode::NOT_FOUND, "", "no such token of this source");
    }
    let (me, id2) = (control.clone(), id.clone());
    let one = control.changing.lock().await;
    let gone = tokio::task::spawn_blocking(move || me.store.delete_token(&id2)).await;
    if !matches!(gone, Ok(Ok(_))) {
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the token could not be revoked",
        );
    }
    control.tokens_mut().remove(&id);
    control.held().tokens.remove(&id);
    drop(one);
    tracing::info!(source = %own.name, id, "source token revoked");
    let detail = AuditDetail {
        token: Some(id.clone()),
        ..AuditDetail::default()
    };
    let (name, source_id) = api.source_key(&own.name);
    let audit = Record::new("token.revoked", Some((&name, &source_id)), detail);
    api.audit(&own.caller, audit).await;
    reply::empty(StatusCode::NO_CONTENT)
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
