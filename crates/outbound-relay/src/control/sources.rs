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
use hyper::body::Bytes;
use hyper::StatusCode;
use outbound::HealthState;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Fields a source's own token may change (besides repeating the rest unchanged).
pub(crate) const SELF_SERVICE: [&str; 6] = [
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
        let all: Vec<Value> = (sources.iter()).map(|s| resource::view(&s.spec)).collect();
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
    // In name order from `after`: a page costs its own length, and counting the matches a
    // pass over the names (none when nothing is searched).
    let page: Vec<&Arc<Source>> = sources
        .after(&after)
        .filter(|s| matches(s))
        .take(limit)
        .collect();
    let matched = match q.is_empty() {
        true => sources.len(),
        false => sources.iter().filter(|s| matches(s)).count(),
    };
    let more = (page.last()).is_some_and(|last| sources.after(&last.name).any(|s| matches(s)));
    let next = more.then(|| page.last().map(|s| s.name.clone()));
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
    Denied::from(e).answer()
}

/// `PUT /admin/sources/{name}`. What the body may hold and what the caller may change are
/// settled first, on the body's keys and values as sent (`resource::Fields`); only then is it
/// read into a source and applied, off the runtime's threads.
pub async fn put(
    control: &Arc<Control>,
    registry: &Arc<Registry>,
    caller: &Caller,
    name: &str,
    body: Bytes,
) -> Answer {
    if let Err(why) = crate::config::check_name(name) {
        return refusal(StatusCode::BAD_REQUEST, "name", &why);
    }
    if let Some(file) = registry.file_source(name) {
        return refused(Refused::File(file));
    }
    let own_token = matches!(caller, Caller::Source(..));
    if let Err(denied) = allowed(control, name, &body, own_token) {
        return denied.answer();
    }
    let _one = control.changing.lock().await;
    let (me, reg) = (control.clone(), registry.clone());
    let name2 = name.to_string();
    let done =
        tokio::task::spawn_blocking(move || apply_put(&me, &reg, &name2, &body, own_token)).await;
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
        Ok(Err(denied)) => denied.answer(),
        Err(e) => reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the change failed: {e}"),
        ),
    }
}

/// A PUT refused before anything changed: its status, the field at fault and why.
struct Denied(StatusCode, String, String);

impl Denied {
    fn invalid((field, why): resource::Refusal) -> Denied {
        Denied(StatusCode::BAD_REQUEST, field, why)
    }

    fn answer(self) -> Answer {
        refusal(self.0, &self.1, &self.2)
    }
}

impl From<Refused> for Denied {
    fn from(e: Refused) -> Denied {
        match e {
            Refused::File(file) => Denied(
                StatusCode::CONFLICT,
                String::new(),
                format!("this source is managed by {file}: change it there (and SIGHUP)"),
            ),
            Refused::Invalid(field, why) => Denied(StatusCode::BAD_REQUEST, field, why),
        }
    }
}

/// The PUT of source `name`, under the change lock: read, checked by the core, applied,
/// stored. True when it made the source.
fn apply_put(
    control: &Control,
    registry: &Registry,
    name: &str,
    body: &[u8],
    own_token: bool,
) -> Result<bool, Denied> {
    // Again under the lock: the source may have changed since.
    allowed(control, name, body, own_token)?;
    let fields = resource::Fields::scan(body).map_err(Denied::invalid)?;
    let current = control.stored_source(name);
    let id = match &current {
        Some(c) => c
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        None => tokens::random_hex(8)
            .map_err(|e| Denied::invalid((String::new(), format!("no randomness: {e}"))))?,
    };
    let keep = own_token.then_some(&SELF_SERVICE[..]);
    let base = control.base();
    let (stored, spec) = resource::read(name, &id, &fields, current.as_ref(), keep, &base)
        .map_err(Denied::invalid)?;
    // The registry checks the values with the core before anything is stored.
    let created = registry.put(spec)?;
    control
        .store
        .put_source(name, &stored)
        .map_err(|e| Denied::invalid((String::new(), format!("cannot store: {e}"))))?;
    // The revision is left as it was: the follower reloads (a fleet's change made meanwhile
    // at another relay is not skipped), and finds ours applied already.
    control.held().sources.insert(name.to_string(), stored);
    Ok(created)
}

/// Whether `body` is a source's, and one its caller may send: a source's own token changes
/// only what `SELF_SERVICE` names and creates nothing. Cheap: nothing is built from the body.
fn allowed(control: &Control, name: &str, body: &[u8], own_token: bool) -> Result<(), Denied> {
    let fields = resource::Fields::scan(body).map_err(Denied::invalid)?;
    if !own_token {
        return Ok(());
    }
    let Some(current) = control.stored_source(name) else {
        return Err(Denied(
            StatusCode::FORBIDDEN,
            String::new(),
            "a source token cannot create a source".into(),
        ));
    };
    resource::changes_forbidden(&fields, &current, &SELF_SERVICE)
        .map_err(|(field, why)| Denied(StatusCode::FORBIDDEN, field, why))
}

pub async fn delete(control: &Arc<Control>, registry: &Arc<Registry>, name: &str) -> Answer {
    if let Some(file) = registry.file_source(name) {
        return refused(Refused::File(file));
    }
    let _one = control.changing.lock().await;
    let Some(stored) = control.stored_source(name) else {
        return refusal(
            StatusCode::NOT_FOUND,
            "",
            &format!("{name:?} is not a source"),
        );
    };
    let (drain, tenant) = match resource::load(&stored, &control.base()) {
        Ok(spec) => (drain_for(&spec), spec.tenant),
        Err(_) => (Duration::from_secs(4 * 3600 + 600), name.to_string()),
    };
    let (me, reg, name2) = (control.clone(), registry.clone(), name.to_string());
    let done = tokio::task::spawn_blocking(move || {
        let until_ms = store::now_ms() + drain.as_millis() as u64;
        me.store.delete_source(&name2, &tenant, &stored, until_ms)?;
        let _ = reg.remove(&name2, Instant::now() + drain);
        let mut held = me.held();
        held.sources.remove(&name2);
        held.deleted.insert(tenant, (stored, until_ms));
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
    let Some(source) = registry.current().by_name(name).cloned() else {
        return refusal(
            StatusCode::NOT_FOUND,
            "",
            &format!("{name:?} is not a source"),
        );
    };
    let (record, token) = match tokens::make(name, &source.spec.id, store::now_ms()) {
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
