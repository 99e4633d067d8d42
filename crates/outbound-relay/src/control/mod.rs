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

/// Largest admin body (an audience of many members).
const MAX_ADMIN_BODY: usize = 64 * 1024 * 1024;

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
    pub base: Base,
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
            base,
            held: Mutex::new(Snapshot::default()),
            tokens: RwLock::new(BTreeMap::new()),
            changing: tokio::sync::Mutex::new(()),
        };
        let snap = control.store.load()?;
        control.adopt(snap, registry);
        tracing::info!(store = %control.store.location(), "admin API store open");
        Ok(control)
    }

    /// Applies what the store holds: sources, deletions still draining, tokens.
    fn adopt(&self, snap: Snapshot, registry: &Registry) {
        let now = store::now_ms();
        let read = |name: &String, body: &Value| match resource::load(body, &self.base) {
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

    /// The caller of `headers`: the admin token, or a source's token.
    pub fn caller(&self, headers: &HeaderMap, admin_token: &str) -> Option<Caller> {
        if bearer_is(headers, admin_token) {
            return Some(Caller::Admin);
        }
        let token = bearer_token(headers)?;
        let (id, secret) = tokens::parse(token)?;
        let tokens = self.tokens.read().unwrap_or_else(|e| e.into_inner());
        let record = tokens.get(id)?;
        tokens::matches(record, secret)
            .then(|| Caller::Source(record.source.clone(), id.to_string()))
    }

    /// Whether `headers` carry a valid token of some source (a `/metrics` call with one is
    /// 403, not 401).
    pub fn is_source_token(&self, headers: &HeaderMap) -> bool {
        self.caller(headers, "\u{0}")
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
        return reply::error(
            StatusCode::NOT_FOUND,
            "the admin API is off (no admin_token)",
        );
    };
    let Some(caller) = control.caller(headers, admin_token) else {
        tracing::info!(path, "admin request refused: bad or missing token");
        return reply::error(
            StatusCode::UNAUTHORIZED,
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
            tracing::info!(path, source = %own, "admin request refused: a source token reaches its own source only");
            return reply::error(
                StatusCode::FORBIDDEN,
                "this token reaches its own source only",
            );
        }
    }
    let Some((route, params)) = route_of(method, path) else {
        return reply::error(
            StatusCode::NOT_FOUND,
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
            Method::PUT => match read_json(headers, body).await {
                Ok(v) => sources::put(control, registry, &caller, &name, v).await,
                Err(a) => a,
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
            match read_json(headers, body).await {
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
        "/admin/deletions" => match read_json(headers, body).await {
            Ok(v) => admin::deletions(sources, v).await,
            Err(a) => a,
        },
        _ => reply::error(StatusCode::NOT_FOUND, "no such admin resource"),
    }
}

async fn read_json(headers: &HeaderMap, body: Incoming) -> Result<Value, Answer> {
    let bytes = body::read(headers, body, MAX_ADMIN_BODY)
        .await
        .map_err(|e| reply::error(e.status, e.message))?;
    match serde_json::from_slice::<Value>(&bytes) {
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

/// Stored bodies by name, as held now.
pub(crate) fn stored(control: &Control) -> BTreeMap<String, Value> {
    control.held().sources.clone()
}
