//! The control plane: the admin API under `/admin/` (on only with `admin_token`), one axum
//! router per resource, merged here:
//!
//! - `auth.rs`: who calls (the admin token, or a source's own token: `tokens.rs`), checked for
//!   every `/admin/` request before its route; each route declares what it needs as an
//!   extractor (`Admin`, `OwnSource`, `Caller`);
//! - `sources.rs`: sources as resources (list, get, put, delete), applied live by the registry
//!   (`sources/registry.rs`) and kept in the store (`store/`); `resource.rs` reads a source's
//!   body and shows a source, `endpoint.rs` a webhook's endpoint settings, `write_only.rs`
//!   a secret as a PUT gives it;
//! - `tokens.rs`: a source's tokens;
//! - `admin.rs`: deletions and audiences;
//! - `records.rs`: a source's delivery records (each webhook's health and attempts, the dead
//!   letters and their replay);
//! - `recent.rs`: a source's recent events, captured while someone looks (a preview's
//!   events);
//! - `schema.rs`: every body as a type; `openapi.rs`: the document generated from them and
//!   from each route's declaration (`GET /admin/openapi.json`).
//!
//! Every answer is JSON; a refusal is `{"success": false, "message": "...", "field": ...}`,
//! `field` naming what is at fault: the body's field (as relay.toml names it), `authorization`
//! or `path`.

pub mod admin;
pub mod alerts;
pub mod audit;
pub mod auth;
pub mod conditional;
mod endpoint;
mod follow;
pub mod listing;
pub mod openapi;
pub mod recent;
pub mod records;
#[cfg(test)]
mod reference;
pub mod resource;
pub mod schema;
pub mod sources;
pub mod store;
pub mod subscriptions;
pub mod tokens;
mod write_only;

use crate::config::{AuditLimits, Base};
use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::operations::log_rate::LogRate;
use crate::operations::reload::Live;
use crate::operations::Ops;
use crate::sources::registry::Registry;
use crate::sources::Sources;
use arc_swap::ArcSwap;
use axum::http::{HeaderMap, StatusCode};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use store::{Snapshot, Store};
use tokens::TokenRecord;

pub use auth::{unknown, Caller};

/// Paths in log lines: their first bytes (a path is the caller's, and can be kilobytes).
const LOGGED_PATH: usize = 100;

/// What the admin API's handlers share.
#[derive(Clone)]
pub struct Api {
    pub control: Arc<Control>,
    pub registry: Arc<Registry>,
    /// The admin token now (a reload replaces it).
    pub live: Arc<ArcSwap<Live>>,
    /// The relay's counters, log rate and activity.
    pub ops: Ops,
    /// `GET /admin/openapi.json`'s answer, made once.
    pub document: Arc<str>,
}

impl Api {
    /// The running sources, as this request sees them.
    pub fn sources(&self) -> Arc<Sources> {
        self.registry.current()
    }
}

/// The admin API's state: its store, and what it holds, in memory.
pub struct Control {
    store: Box<dyn Store>,
    /// What the API's sources take from relay.toml's top level (a reload replaces it).
    base: ArcSwap<Base>,
    /// What the store held at the last load or change.
    held: Mutex<Snapshot>,
    tokens: RwLock<BTreeMap<String, TokenRecord>>,
    /// One change at a time (the store and the registry in step).
    changing: tokio::sync::Mutex<()>,
    /// What the audit trail keeps (a reload replaces it).
    audit_limits: ArcSwap<AuditLimits>,
}

/// A refusal as JSON: `message` (`field: reason` when a field is at fault) and `field`.
pub fn refusal(status: StatusCode, field: &str, reason: &str) -> Answer {
    let message = match field.is_empty() {
        true => reason.to_string(),
        false => format!("{field}: {reason}"),
    };
    let field = (!field.is_empty()).then(|| field.to_string());
    let body = schema::Refusal {
        success: false,
        message,
        field,
    };
    answer(status, &body)
}

/// A request refused before its route's work: the status, what is at fault (the body's
/// field, `authorization`, `path`; empty: nothing in particular) and why.
pub struct Denied(pub StatusCode, pub String, pub String);

impl Denied {
    /// A 400 naming `field`.
    pub fn invalid((field, why): (String, String)) -> Denied {
        Denied(StatusCode::BAD_REQUEST, field, why)
    }

    pub fn answer(self) -> Answer {
        refusal(self.0, &self.1, &self.2)
    }
}

impl axum::response::IntoResponse for Denied {
    fn into_response(self) -> axum::response::Response {
        self.answer().into_response()
    }
}

/// `status` with `body` as JSON.
pub fn answer<T: Serialize>(status: StatusCode, body: &T) -> Answer {
    match serde_json::to_value(body) {
        Ok(v) => reply::json(status, &v),
        Err(e) => reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

impl Control {
    /// The store (the fleet's Redis when the relay's spool is one, else `data_dir`), its
    /// sources applied and its tokens loaded.
    pub fn open(
        base: Base,
        audit: AuditLimits,
        registry: &Registry,
        fleet: Option<String>,
    ) -> Result<Control, String> {
        let store: Box<dyn Store> = match fleet {
            Some(url) if crate::config::is_redis_url(&url) => {
                let fleet = store::RedisStore::open(&url)?;
                store::import_local(&fleet, &base.data_dir)?;
                Box::new(fleet)
            }
            _ => Box::new(store::SqliteStore::open(&base.data_dir)?),
        };
        let control = Control {
            store,
            base: ArcSwap::from_pointee(base),
            held: Mutex::new(Snapshot::default()),
            tokens: RwLock::new(BTreeMap::new()),
            changing: tokio::sync::Mutex::new(()),
            audit_limits: ArcSwap::from_pointee(audit),
        };
        let snap = control.store.load()?;
        control.adopt(snap, registry);
        control.revoke_orphans(registry);
        tracing::info!(store = %control.store.location(), "admin API store open");
        Ok(control)
    }

    /// What the API's sources take from relay.toml's top level now.
    pub fn base(&self) -> Arc<Base> {
        self.base.load_full()
    }

    /// A reload: the API's sources are read again with relay.toml's new top level (those it
    /// changes switch to their new settings), and the tokens of the file's sources that left
    /// it are revoked.
    pub fn reload(&self, base: Base, audit: AuditLimits, registry: &Registry) {
        self.base.store(Arc::new(base));
        self.audit_limits.store(Arc::new(audit));
        let snap = self.held().clone();
        self.adopt(snap, registry);
        self.revoke_orphans(registry);
    }

    /// Revokes the tokens whose source is gone: a source of relay.toml that left it (at a
    /// reload, or while the relay was stopped). Each is logged. The API's sources' tokens go
    /// with their source's DELETE, and name their source's id besides.
    fn revoke_orphans(&self, registry: &Registry) {
        let orphans: Vec<TokenRecord> = {
            let held = self.held();
            (held.tokens.values())
                .filter(|t| {
                    let api = held.sources.get(&t.source);
                    let api_id = api.map(stored_id);
                    let file = registry.file_source(&t.source).is_some();
                    !file && api_id.as_deref() != Some(t.source_id.as_str())
                })
                .cloned()
                .collect()
        };
        for t in orphans {
            match self.store.delete_token(&t.id) {
                Ok(_) => {
                    self.tokens_mut().remove(&t.id);
                    self.held().tokens.remove(&t.id);
                    tracing::warn!(source = %t.source, id = %t.id, "source token revoked: its source is no longer in relay.toml nor the admin API");
                    let detail = schema::AuditDetail {
                        token: Some(t.id.clone()),
                        reason: Some(
                            "its source is no longer in relay.toml nor the admin API".into(),
                        ),
                        ..schema::AuditDetail::default()
                    };
                    let source = Some((t.source.as_str(), t.source_id.as_str()));
                    self.record(
                        &audit::By::Relay,
                        audit::Record::new("token.revoked", source, detail),
                    );
                }
                Err(e) => {
                    tracing::error!(source = %t.source, id = %t.id, "source token of a source that is gone, not revoked: {e}")
                }
            }
        }
    }

    fn tokens_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, TokenRecord>> {
        self.tokens.write().unwrap_or_else(|e| e.into_inner())
    }

    /// What the store holds of the API's source `name` (secrets included).
    pub fn stored_source(&self, name: &str) -> Option<Value> {
        let held = self.held();
        let body = held.sources.get(name)?;
        // It was JSON when stored: a body read back always parses.
        serde_json::from_str(body.get()).ok()
    }

    /// Applies what the store holds: sources, deletions still draining, tokens.
    fn adopt(&self, snap: Snapshot, registry: &Registry) {
        let now = store::now_ms();
        let base = self.base();
        let read = |name: &String, body: &Value| match resource::load(body, &base) {
            Ok(spec) => Some(spec),
            Err((k, r)) => {
                tracing::error!(source = %name, "stored source not started: {k}: {r}");
                None
            }
        };
        let specs = (snap.sources.iter())
            .filter_map(|(n, b)| match serde_json::from_str(b.get()) {
                Ok(body) => read(n, &body),
                Err(e) => {
                    tracing::error!(source = %n, "stored source not started: {e}");
                    None
                }
            })
            .collect();
        let drains = (snap.deleted.iter())
            .filter(|(_, (_, until))| *until > now)
            .filter_map(|(n, (b, until))| {
                let left = std::time::Duration::from_millis(until - now);
                read(n, b).map(|s| (s, std::time::Instant::now() + left))
            })
            .collect();
        registry.sync(specs, drains);
        *self.tokens.write().unwrap_or_else(|e| e.into_inner()) = snap.tokens.clone();
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = snap;
    }

    /// Polls the store for changes made at another relay of the fleet (Redis only: a local
    /// store changes only here).
    /// Logged when it starts failing and when it is back, not at every poll (a Redis down
    /// for an hour would write 7,200 lines).
    pub async fn follow(self: Arc<Self>, registry: Arc<Registry>) {
        let mut failing = false;
        loop {
            tokio::time::sleep(store::POLL).await;
            // `poll` takes the change lock itself: not between a change's write to the store
            // and its note in memory, where a read would undo the change until the next poll.
            let (me, reg) = (self.clone(), registry.clone());
            let polled = tokio::task::spawn_blocking(move || me.poll(&reg))
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
            match polled {
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(
                        "admin API store: {e}; changes made at other relays wait until it answers"
                    );
                }
                Err(e) => tracing::debug!("admin API store: {e}"),
                Ok(()) if failing => {
                    failing = false;
                    tracing::info!("admin API store answers again; following the fleet's changes");
                }
                Ok(()) => {}
            }
        }
    }

    /// Whether the store is a fleet's (followed).
    pub fn shared(&self) -> bool {
        self.store.location().starts_with("redis")
    }

    /// The caller of `headers`: the admin token, or a token of a source running now (of
    /// `sources`) that was made for that very source, not an earlier one of its name.
    pub fn caller(
        &self,
        headers: &HeaderMap,
        admin_token: &str,
        sources: &Sources,
    ) -> Option<Caller> {
        auth::caller_of(self, headers, admin_token, sources)
    }

    /// Whether `headers` carry a valid token of some source (a `/metrics` call with one is
    /// 403, not 401).
    pub fn is_source_token(&self, headers: &HeaderMap, sources: &Sources) -> bool {
        self.caller(headers, "\u{0}", sources)
            .is_some_and(|c| c != Caller::Admin)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Snapshot> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `id` of a stored body (empty for a source made before sources had ids).
fn stored_id(body: &store::Body) -> String {
    #[derive(serde::Deserialize)]
    struct Id {
        #[serde(default)]
        id: Option<String>,
    }
    let id = serde_json::from_str::<Id>(body.get()).ok();
    id.and_then(|i| i.id).unwrap_or_default()
}

/// The admin API's routes, with the document made from their declarations: paths under
/// `/admin/`, every request authenticated first (`auth::authenticate`).
pub fn router(
    control: Arc<Control>,
    registry: Arc<Registry>,
    live: Arc<ArcSwap<Live>>,
    ops: Ops,
) -> axum::Router {
    let (routes, document) = openapi::routes();
    let api = Api {
        control,
        registry,
        live,
        ops,
        document: document.into(),
    };
    routes
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            auth::authenticate,
        ))
        .with_state(api)
}

/// A JSON object of at most `limit` bytes (after gzip), parsed off the runtime's threads
/// into `T`; a refusal names the field at fault (`webhook`, `since`).
pub async fn read_json<T: serde::de::DeserializeOwned + Send + 'static>(
    headers: &HeaderMap,
    body: axum::body::Body,
    limit: usize,
) -> Result<T, Answer> {
    let bytes = body::read(headers, body, limit)
        .await
        .map_err(|e| refusal(e.status, "", &e.message))?;
    let parsed = tokio::task::spawn_blocking(move || -> Result<T, (String, String)> {
        // An empty body is an empty object (a replay with no range).
        let text: &[u8] = match bytes.iter().all(u8::is_ascii_whitespace) {
            true => b"{}",
            false => &bytes,
        };
        let mut de = serde_json::Deserializer::from_slice(text);
        let v: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { path };
            (field, e.into_inner().to_string())
        })?;
        de.end()
            .map_err(|e| (String::new(), format!("body is not valid JSON: {e}")))?;
        Ok(v)
    })
    .await
    .map_err(|e| reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    parsed.map_err(|(field, why)| refusal(StatusCode::BAD_REQUEST, &field, &why))
}

/// A line about a refused request: at most one of a `kind` (and `source`) every few seconds,
/// with how many were held back, and at most the path's first bytes.
pub fn log_refused(rate: &LogRate, kind: &'static str, source: &str, path: &str, what: &str) {
    let Some(held_back) = rate.allow(kind, source) else {
        return;
    };
    let mut end = path.len().min(LOGGED_PATH);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < path.len() { "…" } else { "" };
    let path = format!("{}{cut}", &path[..end]);
    match source {
        "" => tracing::info!(path, held_back, "{what}"),
        _ => tracing::info!(path, source, held_back, "{what}"),
    }
}
