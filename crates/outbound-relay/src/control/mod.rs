//! The control plane: the admin API under `/admin/` (on only with `admin_token`).
//!
//! - `mod.rs`: who calls (the admin token, or a source's own token: `tokens.rs`), what each
//!   may reach, and the routes (one table, [`ROUTES`], that the OpenAPI document covers);
//! - `sources.rs`: sources as resources (list, get, put, delete), applied live by the
//!   registry (`sources/registry.rs`) and kept in the store (`store/`);
//! - `resource.rs`: a source's body read as a `[[sources]]` table, and shown;
//! - `admin.rs`: deletions and audiences;
//! - `records.rs`: a source's delivery records (each webhook's health and attempts, the
//!   dead letters and their replay);
//! - `openapi.rs`: `GET /admin/openapi.json`.
//!
//! Every answer is JSON; a refusal is `{"success": false, "message": "...", "field": ...}`,
//! `field` naming the body's field when one is at fault (a browser console shows it there).
//! Every route under `/admin/sources/{name}/` is reached with the same rule: the admin
//! token, or that source's token.

pub mod admin;
pub mod openapi;
pub mod records;
#[cfg(test)]
mod reference;
pub mod resource;
pub mod sources;
pub mod store;
pub mod tokens;

use crate::config::Base;
use crate::http::auth::{bearer_is, bearer_token};
use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::sources::registry::Registry;
use crate::sources::Sources;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use store::{Snapshot, Store};
use tokens::TokenRecord;

/// Largest body of an audience's members (only the admin sends one).
const MAX_AUDIENCE_BODY: usize = 64 * 1024 * 1024;
/// Largest body of a deletion.
const MAX_DELETION_BODY: usize = 64 * 1024;
/// Paths in log lines: their first bytes (a path is the caller's, and can be kilobytes).
const LOGGED_PATH: usize = 100;

/// Every route of the admin API: method and path template. The router answers these and no
/// other (a test checks each is in the OpenAPI document).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/admin/openapi.json"),
    ("GET", "/admin/whoami"),
    ("GET", "/admin/sources"),
    ("GET", "/admin/sources/{name}"),
    ("PUT", "/admin/sources/{name}"),
    ("DELETE", "/admin/sources/{name}"),
    ("GET", "/admin/sources/{name}/tokens"),
    ("POST", "/admin/sources/{name}/tokens"),
    ("DELETE", "/admin/sources/{name}/tokens/{id}"),
    ("PUT", "/admin/sources/{name}/audiences/{audience}"),
    ("GET", "/admin/sources/{name}/health"),
    ("GET", "/admin/sources/{name}/activity"),
    ("GET", "/admin/sources/{name}/webhooks/{index}/attempts"),
    ("GET", "/admin/sources/{name}/dead-letters"),
    ("POST", "/admin/sources/{name}/dead-letters/replay"),
    ("GET", "/admin/sources/{name}/dead-letters/replays/{id}"),
    ("GET", "/admin/sources/{name}/dead-letters/{messageId}"),
    ("DELETE", "/admin/sources/{name}/dead-letters/{messageId}"),
    (
        "POST",
        "/admin/sources/{name}/dead-letters/{messageId}/replay",
    ),
    ("POST", "/admin/deletions"),
];

/// Who is calling.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    Admin,
    /// A token of this source (its id).
    Source(String, String),
}

/// The admin API's state: its store, and what it holds, in memory.
pub struct Control {
    store: Box<dyn Store>,
    /// What the API's sources take from relay.toml's top level (a reload replaces it).
    base: arc_swap::ArcSwap<Base>,
    /// What the store held at the last load or change.
    held: Mutex<Snapshot>,
    tokens: RwLock<BTreeMap<String, TokenRecord>>,
    /// One change at a time (the store and the registry in step).
    changing: tokio::sync::Mutex<()>,
}

/// A refusal as JSON: `message` (`field: reason` when a field is at fault) and `field`.
pub fn refusal(status: StatusCode, field: &str, reason: &str) -> Answer {
    let message = match field.is_empty() {
        true => reason.to_string(),
        false => format!("{field}: {reason}"),
    };
    let field = (!field.is_empty()).then_some(field);
    reply::json(
        status,
        &json!({"success": false, "message": message, "field": field}),
    )
}

impl Control {
    /// The store (the fleet's Redis when the relay's spool is one, else `data_dir`), its
    /// sources applied and its tokens loaded.
    pub fn open(base: Base, registry: &Registry, fleet: Option<String>) -> Result<Control, String> {
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
            base: arc_swap::ArcSwap::from_pointee(base),
            held: Mutex::new(Snapshot::default()),
            tokens: RwLock::new(BTreeMap::new()),
            changing: tokio::sync::Mutex::new(()),
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
    pub fn reload(&self, base: Base, registry: &Registry) {
        self.base.store(Arc::new(base));
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
                    let api_id = api.map(|b| b.get("id").and_then(Value::as_str).unwrap_or(""));
                    let file = registry.file_source(&t.source).is_some();
                    !file && api_id != Some(t.source_id.as_str())
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
        self.held().sources.get(name).cloned()
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
            .filter_map(|(n, b)| read(n, b))
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
            let (me, reg) = (self.clone(), registry.clone());
            let polled = tokio::task::spawn_blocking(move || {
                let held = me.held.lock().unwrap_or_else(|e| e.into_inner()).revision;
                match me.store.revision()? {
                    rev if rev != held => me.store.load().map(|snap| me.adopt(snap, &reg)),
                    _ => Ok(()),
                }
            })
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
        if bearer_is(headers, admin_token) {
            return Some(Caller::Admin);
        }
        let token = bearer_token(headers)?;
        let (id, secret) = tokens::parse(token)?;
        let tokens = self.tokens.read().unwrap_or_else(|e| e.into_inner());
        let record = tokens.get(id)?;
        let own = sources.by_name(&record.source)?;
        (tokens::matches(record, secret) && own.spec.id == record.source_id)
            .then(|| Caller::Source(record.source.clone(), id.to_string()))
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

/// The template of `path` for `method` among [`ROUTES`], with the path's parameters.
pub fn route_of<'p>(method: &Method, path: &'p str) -> Option<(&'static str, Vec<&'p str>)> {
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    ROUTES.iter().find_map(|(m, template)| {
        if *m != method.as_str() {
            return None;
        }
        let t: Vec<&str> = template.split('/').collect();
        if t.len() != parts.len() {
            return None;
        }
        let mut params = Vec::new();
        for (a, b) in t.iter().zip(&parts) {
            if a.starts_with('{') {
                if b.is_empty() {
                    return None;
                }
                params.push(*b);
            } else if a != b {
                return None;
            }
        }
        Some((*template, params))
    })
}

/// A request under `/admin/`.
#[allow(clippy::too_many_arguments)]
pub async fn handle(
    control: &Arc<Control>,
    registry: &Arc<Registry>,
    sources: &Arc<Sources>,
    admin_token: Option<&str>,
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Incoming,
) -> Answer {
    let Some(admin_token) = admin_token else {
        return refusal(
            StatusCode::NOT_FOUND,
            "path",
            "the admin API is off (no admin_token)",
        );
    };
    let Some(caller) = control.caller(headers, admin_token, sources) else {
        log_refused(
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
    };
    // What a source's token may reach: its own source and what is under it.
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let scope = match parts.as_slice() {
        ["", "admin", "sources", name, ..] => Some(crate::http::body::percent_decode(name)),
        _ => None,
    };
    if let Caller::Source(own, _) = &caller {
        // Its own source, but not deleting it, its audiences or making tokens.
        let own_source = scope.as_deref() == Some(own.as_str());
        let admin_only = parts.get(4) == Some(&"audiences")
            || (parts.len() == 4 && *method == Method::DELETE)
            || (parts.get(4) == Some(&"tokens") && *method == Method::POST);
        let anyone = ["/admin/openapi.json", "/admin/whoami"].contains(&path);
        let allowed = anyone || (own_source && !admin_only);
        if !allowed {
            log_refused(
                "admin_forbidden",
                own,
                path,
                "admin request refused: a source token reaches its own source only",
            );
            return refusal(
                StatusCode::FORBIDDEN,
                "authorization",
                "this token reaches its own source only",
            );
        }
    }
    let Some((route, params)) = route_of(method, path) else {
        return refusal(
            StatusCode::NOT_FOUND,
            "path",
            "no such admin resource (see /admin/openapi.json)",
        );
    };
    let name = scope.unwrap_or_default();
    match route {
        "/admin/openapi.json" => reply::json(StatusCode::OK, &openapi::document()),
        "/admin/whoami" => sources::whoami(&caller),
        "/admin/sources" => sources::list(sources, query),
        "/admin/sources/{name}" => match *method {
            Method::GET => sources::get(registry, &name),
            Method::PUT => match body::read(headers, body, resource::MAX_BODY).await {
                Ok(bytes) => sources::put(control, registry, &caller, &name, bytes).await,
                Err(e) => refusal(e.status, "", &e.message),
            },
            _ => sources::delete(control, registry, &name).await,
        },
        "/admin/sources/{name}/tokens" => match *method {
            Method::POST => sources::new_token(control, registry, &name).await,
            _ => sources::list_tokens(control, &name),
        },
        "/admin/sources/{name}/tokens/{id}" => {
            sources::revoke_token(control, &name, params.get(1).copied().unwrap_or("")).await
        }
        "/admin/sources/{name}/audiences/{audience}" => {
            let audience = body::percent_decode(params.get(1).copied().unwrap_or(""));
            match read_json(headers, body, MAX_AUDIENCE_BODY).await {
                Ok(v) => admin::audiences(sources, &name, &audience, v).await,
                Err(a) => a,
            }
        }
        records
            if records.starts_with("/admin/sources/{name}/health")
                || records.starts_with("/admin/sources/{name}/activity")
                || records.starts_with("/admin/sources/{name}/webhooks/")
                || records.starts_with("/admin/sources/{name}/dead-letters") =>
        {
            let rest: Vec<&str> = parts.get(4..).unwrap_or_default().to_vec();
            records::handle(sources, method, &name, &rest, query, headers, body).await
        }
        "/admin/deletions" => match read_json(headers, body, MAX_DELETION_BODY).await {
            Ok(v) => admin::deletions(sources, v).await,
            Err(a) => a,
        },
        _ => reply::error(StatusCode::NOT_FOUND, "no such admin resource"),
    }
}

/// A JSON object of at most `limit` bytes (after gzip), parsed off the runtime's threads.
async fn read_json(headers: &HeaderMap, body: Incoming, limit: usize) -> Result<Value, Answer> {
    let bytes = body::read(headers, body, limit)
        .await
        .map_err(|e| refusal(e.status, "", &e.message))?;
    let parsed = tokio::task::spawn_blocking(move || serde_json::from_slice::<Value>(&bytes))
        .await
        .map_err(|e| reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    match parsed {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(refusal(
            StatusCode::BAD_REQUEST,
            "",
            "body must be a JSON object",
        )),
        Err(e) => Err(refusal(
            StatusCode::BAD_REQUEST,
            "",
            &format!("body is not valid JSON: {e}"),
        )),
    }
}

/// A line about a refused request: at most one of a `kind` (and `source`) every few seconds,
/// with how many were held back, and at most the path's first bytes.
pub fn log_refused(kind: &'static str, source: &str, path: &str, what: &str) {
    let Some(held_back) = crate::operations::log_rate::allow(kind, source) else {
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
