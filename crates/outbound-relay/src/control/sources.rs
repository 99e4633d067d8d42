//! Sources as resources: `GET /admin/sources`, `GET`/`PUT`/`DELETE /admin/sources/{name}`,
//! and `GET /admin/whoami`. A change is stored first, then applied live, and answered once it
//! applies: events accepted after the answer go by the new settings.
//!
//! - PUT: 201 created or 200 replaced, with the source as GET shows it; 400 naming the field
//!   (nothing stored, nothing changed); 409 for a source of `relay.toml`; a source's token
//!   may not change its write keys or the operator's settings (403 naming the field).
//! - DELETE: 204; its write keys are refused from then on, and it keeps delivering what it
//!   accepted (it drains, `sources/registry.rs`), kept so across restarts until the end
//!   of its retry window and 10 minutes.

use super::auth::{Admin, OwnSource};
use super::schema::{self, Listed, Refusal, SourceList, Summary, Whoami};
use super::{answer, refusal, resource, store, tokens, Api, Caller, Control, Denied};
use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::sources::registry::{drain_for, Refused, Registry};
use crate::sources::Source;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use outbound::HealthState;
use serde_json::Value;
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

/// The query of `GET /admin/sources` (any of them makes it a page).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListQuery {
    /// 1 to 1,000 (default 50).
    limit: Option<usize>,
    /// The name after which the page starts (`next` of the page before).
    after: Option<String>,
    /// Only sources whose name or a webhook URL contains this, ignoring case.
    q: Option<String>,
}

/// `GET /admin/sources`: with no parameter, every source (the file's in its order, then the
/// API's). With any of `limit`, `after`, `q`, a page in name order: the sources whose name
/// (or a webhook URL) contains `q`, ignoring case, after the name `after`, at most `limit`,
/// each with its `summary`; `next` is the `after` of the next page, `matched` how many match
/// in all. A console with 10,000 sources reads 50.
#[utoipa::path(get, path = "/admin/sources", operation_id = "list_sources", tag = "sources", params(ListQuery),
    responses((status = 200, description = "The sources", body = SourceList),
        (status = 400, description = "A bad parameter", body = Refusal)))]
pub async fn list(State(api): State<Api>, _: Admin, RawQuery(query): RawQuery) -> Answer {
    let sources = api.sources();
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        let all: Vec<Listed> = (sources.iter())
            .map(|s| Listed {
                source: resource::view(&s.spec),
                summary: None,
            })
            .collect();
        let matched = all.len();
        let list = SourceList {
            sources: all,
            next: None,
            matched,
        };
        return answer(StatusCode::OK, &list);
    };
    let (mut limit, mut after, mut q) = (DEFAULT_PAGE, String::new(), String::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = body::percent_decode(&v.replace('+', " "));
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
    let page = sources.page(&after, &q, limit);
    let items = (page.sources.iter())
        .map(|s| Listed {
            source: resource::view(&s.spec),
            summary: summary(s),
        })
        .collect();
    let list = SourceList {
        sources: items,
        next: page.next,
        matched: page.matched,
    };
    answer(StatusCode::OK, &list)
}

/// A source at a glance: its webhooks (all, and on), the worst state of those on, how many
/// of them are not healthy, and its messages waiting. None while its settings change.
fn summary(s: &Source) -> Option<Summary> {
    let client = s.slot.current()?;
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
    Some(Summary {
        webhooks: hooks.len(),
        enabled: hooks.iter().filter(|w| w.enabled).count(),
        state: worst.map(|w| w.as_str().to_string()),
        unhealthy: on.iter().filter(|s| **s != HealthState::Healthy).count(),
        waiting: client.stats().queued,
    })
}

/// `GET /admin/whoami`: what the token in hand reaches (the console signs in with it).
#[utoipa::path(get, path = "/admin/whoami", operation_id = "whoami", tag = "sources",
    responses((status = 200, description = "The caller", body = Whoami)))]
pub async fn whoami(caller: Caller) -> Answer {
    let who = match caller {
        Caller::Admin => Whoami {
            caller: schema::CallerKind::Admin,
            source: None,
            token: None,
        },
        Caller::Source(source, id) => Whoami {
            caller: schema::CallerKind::Source,
            source: Some(source),
            token: Some(id),
        },
    };
    answer(StatusCode::OK, &who)
}

/// `GET /admin/sources/{name}`.
#[utoipa::path(get, path = "/admin/sources/{name}", operation_id = "get_source", tag = "sources", params(("name" = String, Path)),
    responses((status = 200, description = "The source", body = schema::Source),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn get(State(api): State<Api>, own: OwnSource) -> Answer {
    match api.sources().by_name(&own.name) {
        Some(s) => answer(StatusCode::OK, &resource::view(&s.spec)),
        None => not_a_source(&own.name),
    }
}

pub(super) fn not_a_source(name: &str) -> Answer {
    refusal(
        StatusCode::NOT_FOUND,
        "",
        &format!("{name:?} is not a source"),
    )
}

fn refused(e: Refused) -> Answer {
    Denied::from(e).answer()
}

/// `PUT /admin/sources/{name}`. What the body may hold and what the caller may change are
/// settled first, on the body's keys and values as sent (`resource::Fields`); only then is it
/// read into a source and applied, off the runtime's threads. The body may be 1 MiB once
/// inflated.
#[utoipa::path(put, path = "/admin/sources/{name}", operation_id = "put_source", tag = "sources", params(("name" = String, Path)),
    request_body = schema::SourceInput,
    responses((status = 200, description = "Replaced", body = schema::Source),
        (status = 201, description = "Created", body = schema::Source),
        (status = 400, description = "A value the core refuses, named by `field`; nothing changed", body = Refusal),
        (status = 409, description = "The source is managed by relay.toml", body = Refusal),
        (status = 413, description = "Over 1 MiB", body = Refusal)))]
pub async fn put(
    State(api): State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let body = match body::read(&headers, body, resource::MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => return refusal(e.status, "", &e.message),
    };
    let (control, registry) = (&api.control, &api.registry);
    let (caller, name) = (&own.caller, own.name.as_str());
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
                Some(s) => answer(status, &resource::view(&s.spec)),
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
    let stored = store::body(&stored);
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

/// `DELETE /admin/sources/{name}` (the admin token): its write keys are refused at once, what
/// it accepted is still delivered.
#[utoipa::path(delete, path = "/admin/sources/{name}", operation_id = "delete_source", tag = "sources", params(("name" = String, Path)),
    responses((status = 204, description = "Deleted; draining"),
        (status = 404, description = "No such source", body = Refusal),
        (status = 409, description = "The source is managed by relay.toml", body = Refusal)))]
pub async fn delete(
    State(api): State<Api>,
    _: Admin,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Answer {
    let (control, registry, name) = (&api.control, &api.registry, name.as_str());
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
