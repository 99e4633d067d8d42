//! Who calls the admin API, and what each route lets them reach. Every `/admin/` request is
//! authenticated first ([`authenticate`]: the admin API off is 404, no valid token 401); then
//! each route declares what it needs by the extractor it takes:
//!
//! - [`Caller`]: any valid token (the document, `whoami`);
//! - [`Admin`]: the admin token alone (the list of sources, deleting a source, making tokens,
//!   deletions, audiences);
//! - [`OwnSource`]: the admin token, or the token of the source the path names.
//!
//! A refusal of either (403) is logged at most once every 10 s per kind and source.

use super::{log_refused, refusal, tokens, Api, Control, Denied};
use crate::http::auth::{bearer_is, bearer_token};
use crate::http::reply::Answer;
use crate::operations::log_rate::LogRate;
use crate::sources::Sources;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;

/// Who is calling.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    Admin,
    /// A token of this source (its id).
    Source(String, String),
}

/// The caller of `headers`: the admin token, or a token of a source running now that was made
/// for that very source (its id), not an earlier one of its name.
pub(super) fn caller_of(
    control: &Control,
    headers: &HeaderMap,
    admin_token: &str,
    sources: &Sources,
) -> Option<Caller> {
    if bearer_is(headers, admin_token) {
        return Some(Caller::Admin);
    }
    let token = bearer_token(headers)?;
    let (id, secret) = tokens::parse(token)?;
    let tokens = control.tokens.read().unwrap_or_else(|e| e.into_inner());
    let record = tokens.get(id)?;
    let own = sources.by_name(&record.source)?;
    (tokens::matches(record, secret) && own.spec.id == record.source_id)
        .then(|| Caller::Source(record.source.clone(), id.to_string()))
}

/// Every `/admin/` request: the admin API on and a valid token, or it goes no further. The
/// caller is handed to the route's extractor.
pub async fn authenticate(State(api): State<Api>, mut req: Request, next: Next) -> Response {
    let live = api.live.load();
    let Some(admin_token) = live.admin_token.as_deref() else {
        return refusal(
            StatusCode::NOT_FOUND,
            "path",
            "the admin API is off (no admin_token)",
        )
        .into_response();
    };
    let sources = api.sources();
    let Some(caller) = api.control.caller(req.headers(), admin_token, &sources) else {
        let path = req.uri().path();
        log_refused(
            &api.ops.log_rate,
            "admin_unauthorized",
            "",
            path,
            "admin request refused: bad or missing token",
        );
        return refusal(
            StatusCode::UNAUTHORIZED,
            "authorization",
            "admin token or source token required",
        )
        .into_response();
    };
    req.extensions_mut().insert(caller);
    // For the extractors' refusals.
    req.extensions_mut().insert(api.ops.log_rate.clone());
    next.run(req).await
}

/// A refusal of a source token where it may not go.
fn forbidden(parts: &Parts, own: &str) -> Denied {
    let rate = parts
        .extensions
        .get::<LogRate>()
        .cloned()
        .unwrap_or_default();
    log_refused(
        &rate,
        "admin_forbidden",
        own,
        parts.uri.path(),
        "admin request refused: a source token reaches its own source only",
    );
    let why = "this token reaches its own source only";
    Denied(StatusCode::FORBIDDEN, "authorization".into(), why.into())
}

fn caller(parts: &Parts) -> Result<Caller, Denied> {
    // `authenticate` runs before every route: a caller is always there.
    (parts.extensions.get::<Caller>().cloned()).ok_or_else(|| {
        let why = "admin token or source token required";
        Denied(StatusCode::UNAUTHORIZED, "authorization".into(), why.into())
    })
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Denied;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        caller(parts)
    }
}

/// The admin token.
pub struct Admin;

impl<S: Send + Sync> FromRequestParts<S> for Admin {
    type Rejection = Denied;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        match caller(parts)? {
            Caller::Admin => Ok(Admin),
            Caller::Source(own, _) => Err(forbidden(parts, &own)),
        }
    }
}

/// The source the path names (`{name}`), reached by the admin token or its own token.
pub struct OwnSource {
    pub name: String,
    pub caller: Caller,
    /// The path's other parameters (`{subscription}`, `{message_id}`, ...).
    pub params: HashMap<String, String>,
}

impl OwnSource {
    /// The path's parameter `key` (empty when it has none).
    pub fn param(&self, key: &str) -> String {
        self.params.get(key).cloned().unwrap_or_default()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for OwnSource {
    type Rejection = Denied;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let caller = caller(parts)?;
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|e| Denied(StatusCode::BAD_REQUEST, "path".into(), e.body_text()))?;
        let name = params.get("name").cloned().unwrap_or_default();
        match &caller {
            Caller::Source(own, _) if *own != name => Err(forbidden(parts, own)),
            _ => Ok(OwnSource {
                name,
                caller,
                params,
            }),
        }
    }
}

/// An `/admin/` path no route takes: authenticated as every other (404 with the admin API
/// off, 401 without a valid token), then 404.
pub fn unknown(
    rate: &LogRate,
    control: &Control,
    sources: &Sources,
    admin_token: Option<&str>,
    headers: &HeaderMap,
    path: &str,
) -> Answer {
    let Some(admin_token) = admin_token else {
        return refusal(
            StatusCode::NOT_FOUND,
            "path",
            "the admin API is off (no admin_token)",
        );
    };
    if control.caller(headers, admin_token, sources).is_none() {
        log_refused(
            rate,
            "admin_unauthorized",
            "",
            path,
            "admin request refused: bad or missing token",
        );
        return refusal(
            StatusCode::UNAUTHORIZED,
            "authorization",
            "admin token or source token required",
        );
    }
    refusal(
        StatusCode::NOT_FOUND,
        "path",
        "no such admin resource (see /admin/openapi.json)",
    )
}
