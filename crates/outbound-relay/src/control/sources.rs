//! Sources as resources: `GET /admin/sources`, `GET`/`PUT`/`DELETE /admin/sources/{name}`,
//! and the source's tokens. A change is stored first, then applied live, and answered once
//! it applies: events accepted after the answer go by the new settings.
//!
//! - PUT: 201 created or 200 replaced, with the source as GET shows it; 400 naming the field
//!   (nothing stored, nothing changed); 409 for a source of `relay.toml`; a source's token
//!   may not change its write keys or the operator's settings (403 naming the field).
//! - DELETE: 204; its write keys are refused from then on, and it keeps delivering what it
//!   accepted (it drains, `sources/registry.rs`), kept so across restarts until the end
//!   of its retry window and 10 minutes.

use super::{refusal, resource, store, tokens, Caller, Control};
use crate::http::reply::{self, Answer};
use crate::sources::registry::{drain_for, Refused, Registry};
use crate::sources::{Source, Sources};
use hyper::StatusCode;
use outbound::HealthState;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Fields a source's own token may change (besides repeating the rest unchanged).
const SELF_SERVICE: [&str; 6] = [
    "webhooks",
    "shared_secret",
    "signature_scheme",
    "allowed_origins",
    "forward",
    "name",
];

/// The most sources one page of `GET /admin/sources?limit=` holds.
pub const MAX_PAGE: usize = 1000;
/// A page's size when `limit` is left out of a paged request.
const DEFAULT_PAGE: usize = 50;

/// `GET /admin/sources`: with no parameter, every source as before (the file's in its
/// order, then the API's). With any of `limit`, `after`, `q`, a page in name order: the
/// sources whose name (or a webhook URL) contains `q`, ignoring case, after the name
/// `after`, at most `limit`, each with its `summary`; `next` is the `after` of the next
/// page, `matched` how many match in all. A console with 10,000 sources reads 50.
pub fn list(sources: &Sources, query: Option<&str>) -> Answer {
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        let all: Vec<Value> = (sources.list.iter())
            .map(|s| resource::view(&s.spec))
            .collect();
        return reply::json(StatusCode::OK, &json!({"sources": all}));
    };
    let (mut limit, mut after, mut q) = (DEFAULT_PAGE, String::new(), String::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = crate::http::body::percent_decode(&v.replace('+', " "));
        match k {
            "limit" => match v.parse::<usize>() {
                Ok(n @ 1..=MAX_PAGE) => limit = n,
                _ => {
                    let why = format!("must be 1 to {MAX_PAGE}");
                    return refusal(StatusCode::BAD_REQUEST, "limit", &why);
                }
            },
            "after" => after = v,
            "q" => q = v.to_lowercase(),
            _ => {
                let why = "not a parameter (limit, after, q)";
                return refusal(StatusCode::BAD_REQUEST, k, why);
            }
        }
    }
    let matches = |s: &Source| {
        q.is_empty()
            || s.name.to_lowercase().contains(&q)
            || (s.spec.core.webhooks.iter()).any(|w| w.url.to_lowercase().contains(&q))
    };
    let mut found: Vec<&Arc<Source>> = sources.list.iter().filter(|s| matches(s)).collect();
    found.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    let matched = found.len();
    let start = found.partition_point(|s| s.name.as_str() <= after.as_str());
    let page = &found[start..(start + limit).min(matched)];
    let next = (start + limit < matched).then(|| page.last().map(|s| s.name.clone()));
    let items: Vec<Value> = (page.iter())
        .map(|s| {
            let mut v = resource::view(&s.spec);
            v["summary"] = summary(s);
            v
        })
        .collect();
    reply::json(
        StatusCode::OK,
        &json!({"sources": items, "next": next.flatten(), "matched": matched}),
    )
}

/// A source at a glance: its webhooks (all, and on), the worst state of those on, how many
/// of them are not healthy, and its messages waiting. Null while its settings change.
fn summary(s: &Source) -> Value {
    let Some(client) = s.slot.current() else {
        return Value::Null;
    };
    let hooks = &s.spec.core.webhooks;
    let on: Vec<HealthState> = (client.webhook_health().iter())
        .filter(|h| hooks.get(h.webhook).is_some_and(|w| w.enabled))
        .map(|h| h.state)
        .collect();
    let worst = [
        HealthState::Disabled,
        HealthState::CircuitOpen,
        HealthState::Failing,
        HealthState::Healthy,
    ]
    .into_iter()
    .find(|w| on.contains(w));
    json!({
        "webhooks": hooks.len(),
        "enabled": hooks.iter().filter(|w| w.enabled).count(),
        "state": worst.map(|w| w.as_str()),
        "unhealthy": on.iter().filter(|s| **s != HealthState::Healthy).count(),
        "waiting": client.stats().queued,
    })
}

/// `GET /admin/whoami`: what the token in hand reaches (the console signs in with it).
pub fn whoami(caller: &Caller) -> Answer {
    let who = match caller {
        Caller::Admin => json!({"caller": "admin", "source": null}),
        Caller::Source(source, id) => json!({"caller": "source", "source": source, "token": id}),
    };
    reply::json(StatusCode::OK, &who)
}

pub fn get(registry: &Registry, name: &str) -> Answer {
    match registry.current().by_name(name) {
        Some(s) => reply::json(StatusCode::OK, &resource::view(&s.spec)),
        None => refusal(
            StatusCode::NOT_FOUND,
            "",
            &format!("{name:?} is not a source"),
        ),
    }
}

fn refused(e: Refused) -> Answer {
    match e {
        Refused::File(file) => refusal(
            StatusCode::CONFLICT,
            "",
            &format!("this source is managed by {file}: change it there (and SIGHUP)"),
        ),
        Refused::Invalid(field, reason) => refusal(StatusCode::BAD_REQUEST, &field, &reason),
    }
}

pub async fn put(
    control: &Arc<Control>,
    registry: &Arc<Registry>,
    caller: &Caller,
    name: &str,
    body: Value,
) -> Answer {
    if let Err(why) = crate::config::check_name(name) {
        return refusal(StatusCode::BAD_REQUEST, "name", &why);
    }
    if let Some(file) = registry.file_source(name) {
        return refused(Refused::File(file));
    }
    let _one = control.changing.lock().await;
    let current = super::stored(control).get(name).cloned();
    let (stored, spec) = match resource::read(name, &body, current.as_ref(), &control.base) {
        Ok(read) => read,
        Err((field, reason)) => return refusal(StatusCode::BAD_REQUEST, &field, &reason),
    };
    if let Caller::Source(..) = caller {
        // What the operator set stays: the write keys and every delivery setting.
        let Some(current) = &current else {
            return refusal(
                StatusCode::FORBIDDEN,
                "",
                "a source token cannot create a source",
            );
        };
        let keys = |v: &Value| {
            v.as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let mut fields = keys(&stored);
        fields.extend(keys(current));
        for f in fields {
            if !SELF_SERVICE.contains(&f.as_str()) && stored.get(&f) != current.get(&f) {
                return refusal(
                    StatusCode::FORBIDDEN,
                    &f,
                    "a source token cannot change this (the admin token can)",
                );
            }
        }
    }
    let (me, reg) = (control.clone(), registry.clone());
    let name2 = name.to_string();
    let done = tokio::task::spawn_blocking(move || {
        // The registry checks the values with the core before anything is stored.
        let created = reg.put(spec)?;
        me.store
            .put_source(&name2, &stored)
            .map_err(|e| Refused::Invalid(String::new(), format!("cannot store: {e}")))?;
        // The revision is left as it was: the follower reloads (a fleet's change made
        // meanwhile at another relay is not skipped), and finds ours applied already.
        let mut held = me.held();
        held.sources.insert(name2.clone(), stored);
        held.deleted.remove(&name2);
        Ok::<_, Refused>(created)
    })
    .await;
    match done {
        Ok(Ok(created)) => {
            tracing::info!(source = %name, created, "source set through the admin API");
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            match registry.current().by_name(name) {
                Some(s) => reply::json(status, &resource::view(&s.spec)),
                None => reply::ok(),
            }
        }
        Ok(Err(e)) => refused(e),
        Err(e) => reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the change failed: {e}"),
        ),
    }
}

pub async fn delete(control: &Arc<Control>, registry: &Arc<Registry>, name: &str) -> Answer {
    if let Some(file) = registry.file_source(name) {
        return refused(Refused::File(file));
    }
    let _one = control.changing.lock().await;
    let Some(stored) = super::stored(control).get(name).cloned() else {
        return refusal(
            StatusCode::NOT_FOUND,
            "",
            &format!("{name:?} is not a source"),
        );
    };
    let drain = match resource::load(&stored, &control.base) {
        Ok(spec) => drain_for(&spec),
        Err(_) => Duration::from_secs(4 * 3600 + 600),
    };
    let (me, reg, name2) = (control.clone(), registry.clone(), name.to_string());
    let done = tokio::task::spawn_blocking(move || {
        let until_ms = store::now_ms() + drain.as_millis() as u64;
        me.store.delete_source(&name2, &stored, until_ms)?;
        let _ = reg.remove(&name2, Instant::now() + drain);
        let mut held = me.held();
        held.sources.remove(&name2);
        held.deleted.insert(name2.clone(), (stored, until_ms));
        held.tokens.retain(|_, t| t.source != name2);
        let mut tokens = me.tokens.write().unwrap_or_else(|e| e.into_inner());
        tokens.retain(|_, t| t.source != name2);
        Ok::<_, String>(())
    })
    .await;
    match done {
        Ok(Ok(())) => {
            tracing::info!(source = %name, "source deleted through the admin API: draining");
            reply::empty(StatusCode::NO_CONTENT)
        }
        Ok(Err(e)) => reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot store: {e}"),
        ),
        Err(e) => reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the change failed: {e}"),
        ),
    }
}

fn token_view(t: &tokens::TokenRecord) -> Value {
    json!({"id": t.id, "source": t.source, "created_ms": t.created_ms})
}

pub async fn new_token(control: &Arc<Control>, registry: &Registry, name: &str) -> Answer {
    if registry.current().by_name(name).is_none() {
        return refusal(
            StatusCode::NOT_FOUND,
            "",
            &format!("{name:?} is not a source"),
        );
    }
    let (record, token) = match tokens::make(name, store::now_ms()) {
        Ok(made) => made,
        Err(e) => {
            return reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("no randomness: {e}"),
            )
        }
    };
    let me = control.clone();
    let r = record.clone();
    let stored = tokio::task::spawn_blocking(move || me.store.put_token(&r)).await;
    if !matches!(stored, Ok(Ok(()))) {
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the token could not be stored",
        );
    }
    (control.tokens.write().unwrap_or_else(|e| e.into_inner()))
        .insert(record.id.clone(), record.clone());
    control
        .held()
        .tokens
        .insert(record.id.clone(), record.clone());
    tracing::info!(source = %name, id = %record.id, "source token made");
    let mut view = token_view(&record);
    view["token"] = Value::String(token);
    reply::json(StatusCode::CREATED, &view)
}

pub fn list_tokens(control: &Control, name: &str) -> Answer {
    let tokens = control.tokens.read().unwrap_or_else(|e| e.into_inner());
    let mut own: Vec<&tokens::TokenRecord> = tokens.values().filter(|t| t.source == name).collect();
    own.sort_by_key(|t| (t.created_ms, t.id.clone()));
    let own: Vec<Value> = own.into_iter().map(token_view).collect();
    reply::json(StatusCode::OK, &json!({"tokens": own}))
}

pub async fn revoke_token(control: &Arc<Control>, name: &str, id: &str) -> Answer {
    let known = (control.tokens.read().unwrap_or_else(|e| e.into_inner()))
        .get(id)
        .is_some_and(|t| t.source == name);
    if !known {
        return refusal(StatusCode::NOT_FOUND, "", "no such token of this source");
    }
    let (me, id2) = (control.clone(), id.to_string());
    let gone = tokio::task::spawn_blocking(move || me.store.delete_token(&id2)).await;
    if !matches!(gone, Ok(Ok(_))) {
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the token could not be revoked",
        );
    }
    (control.tokens.write().unwrap_or_else(|e| e.into_inner())).remove(id);
    control.held().tokens.remove(id);
    tracing::info!(source = %name, id, "source token revoked");
    reply::empty(StatusCode::NO_CONTENT)
}
