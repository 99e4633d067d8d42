//! Sources as resources: `GET`/`PUT`/`DELETE /admin/sources/{name}` (the list is
//! `listing.rs`'s), and `GET /admin/whoami`. A change is stored first, then applied live,
//! and answered once it applies: events accepted after the answer go by the new settings.
//!
//! - PUT: 201 created or 200 replaced, with the source as GET shows it; 400 naming the field
//!   (nothing stored, nothing changed); 409 for a source of `relay.toml`; a source's token
//!   may not change its write keys or the operator's settings (403 naming the field).
//! - DELETE: 204; its write keys are refused from then on, and it keeps delivering what it
//!   accepted (it drains, `sources/registry.rs`), kept so across restarts until the end
//!   of its retry window and 10 minutes.

use super::audit::Record;
use super::auth::{Admin, OwnSource};
use super::conditional::{with_etag, Condition, Stale};
use super::schema::{self, AuditDetail, Refusal, Whoami};
use super::{answer, refusal, resource, store, tokens, Api, Caller, Control, Denied};
use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::sources::registry::{drain_for, Refused, Registry};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Fields a source's own token may change (besides repeating the rest unchanged).
pub(crate) const SELF_SERVICE: [&str; 7] = [
    "webhooks",
    "subscriptions",
    "shared_secret",
    "signature_scheme",
    "allowed_origins",
    "forward",
    "name",
];

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
    responses((status = 200, description = "The source", body = schema::Source,
            headers(("etag" = String, description = "Its revision: send it back in `If-Match` to change or delete it only if nobody did since"))),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn get(State(api): State<Api>, own: OwnSource) -> Answer {
    let Some(s) = api.sources().by_name(&own.name).cloned() else {
        return not_a_source(&own.name);
    };
    let shown = resource::view(&s.spec);
    let tag = etag_of(&api.control, &own.name, &shown);
    with_etag(answer(StatusCode::OK, &shown), tag.as_deref())
}

/// The ETag of source `name` as `shown`: its stored revision (the API's), or a hash of what
/// is shown (relay.toml's).
fn etag_of(control: &Control, name: &str, shown: &schema::Source) -> Option<String> {
    match shown.managed_by {
        schema::ManagedBy::File => Some(resource::shown_etag(shown)),
        schema::ManagedBy::Api => control.stored_source(name).map(|s| resource::etag(&s)),
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
#[utoipa::path(put, path = "/admin/sources/{name}", operation_id = "put_source", tag = "sources",
    params(("name" = String, Path), ("if-match" = Option<String>, Header, description = "The ETag of a GET: applied only if the source is still at it (else 412); `*`: only if it exists"),
        ("if-none-match" = Option<String>, Header, description = "`*`: created only, never replacing a source of this name (else 412)")),
    request_body = schema::SourceInput,
    responses((status = 200, description = "Replaced", body = schema::Source,
            headers(("etag" = String, description = "Its new revision"))),
        (status = 201, description = "Created", body = schema::Source,
            headers(("etag" = String, description = "Its revision"))),
        (status = 400, description = "A value the core refuses, named by `field`; nothing changed", body = Refusal),
        (status = 409, description = "The source is managed by relay.toml", body = Refusal),
        (status = 412, description = "`If-Match` names a revision the source is no longer at (or `If-None-Match: *` and it exists): nothing changed; the `ETag` header gives its revision now", body = Refusal),
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
    let condition = Condition::of(&headers);
    let _one = control.changing.lock().await;
    let (me, reg) = (control.clone(), registry.clone());
    let name2 = name.to_string();
    let done = tokio::task::spawn_blocking(move || {
        apply_put(&me, &reg, &name2, &body, own_token, &condition)
    })
    .await;
    match done {
        Ok(Ok(put)) => {
            tracing::info!(source = %name, created = put.created, "source set through the admin API");
            let action = match put.created {
                true => "source.created",
                false => "source.updated",
            };
            let detail = AuditDetail {
                changed: Some(put.changed),
                ..AuditDetail::default()
            };
            let record = Record::new(action, Some((name, &put.id)), detail);
            api.audit(&own.caller, record).await;
            let status = if put.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let shown = match registry.current().by_name(name) {
                Some(s) => answer(status, &resource::view(&s.spec)),
                None => reply::ok(),
            };
            with_etag(shown, Some(&put.etag))
        }
        Ok(Err(NotApplied::Denied(denied))) => denied.answer(),
        Ok(Err(NotApplied::Stale(stale))) => stale.answer(),
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

/// Why a PUT was not applied.
enum NotApplied {
    Denied(Denied),
    Stale(Stale),
}

/// A PUT applied.
struct Put {
    created: bool,
    /// The source's ETag now.
    etag: String,
    /// Its id.
    id: String,
    /// The fields it changed, by name (`resource::changed_fields`).
    changed: Vec<String>,
}

/// The PUT of source `name`, under the change lock: its condition checked against the
/// store (a fleet's change made a moment ago at another relay included), read, checked by
/// the core, applied, stored.
fn apply_put(
    control: &Control,
    registry: &Registry,
    name: &str,
    body: &[u8],
    own_token: bool,
    condition: &Condition,
) -> Result<Put, NotApplied> {
    let cannot = |e: String| Denied::invalid((String::new(), format!("cannot store: {e}")));
    let current = (control.store.source(name)).map_err(|e| NotApplied::Denied(cannot(e)))?;
    (condition.check(name, current.as_ref().map(resource::etag).as_deref()))
        .map_err(NotApplied::Stale)?;
    apply_checked(control, registry, name, body, own_token, current).map_err(NotApplied::Denied)
}

fn apply_checked(
    control: &Control,
    registry: &Registry,
    name: &str,
    body: &[u8],
    own_token: bool,
    current: Option<Value>,
) -> Result<Put, Denied> {
    // Again under the lock: the source may have changed since.
    allowed(control, name, body, own_token)?;
    let fields = resource::Fields::scan(body).map_err(Denied::invalid)?;
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
    let text = store::body(&stored);
    control
        .store
        .put_source(name, &text)
        .map_err(|e| Denied::invalid((String::new(), format!("cannot store: {e}"))))?;
    let etag = resource::etag(&stored);
    let changed = resource::changed_fields(current.as_ref(), &stored);
    // The revision is left as it was: the follower reloads (a fleet's change made meanwhile
    // at another relay is not skipped), and finds ours applied already.
    control.held().sources.insert(name.to_string(), text);
    Ok(Put {
        created,
        etag,
        id,
        changed,
    })
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
#[utoipa::path(delete, path = "/admin/sources/{name}", operation_id = "delete_source", tag = "sources",
    params(("name" = String, Path),
        ("if-match" = Option<String>, Header, description = "The ETag of a GET: deleted only if the source is still at it (else 412)")),
    responses((status = 204, description = "Deleted; draining"),
        (status = 404, description = "No such source", body = Refusal),
        (status = 409, description = "The source is managed by relay.toml", body = Refusal),
        (status = 412, description = "`If-Match` names a revision the source is no longer at: nothing deleted", body = Refusal)))]
pub async fn delete(
    State(api): State<Api>,
    _: Admin,
    headers: HeaderMap,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Answer {
    let (control, registry, name) = (&api.control, &api.registry, name.as_str());
    if let Some(file) = registry.file_source(name) {
        return refused(Refused::File(file));
    }
    let condition = Condition::of(&headers);
    let _one = control.changing.lock().await;
    let (me, name2) = (control.clone(), name.to_string());
    let stored = match tokio::task::spawn_blocking(move || me.store.source(&name2)).await {
        Ok(Ok(stored)) => stored,
        Ok(Err(e)) => {
            let why = format!("cannot read the store: {e}");
            return reply::error(StatusCode::SERVICE_UNAVAILABLE, why);
        }
        Err(e) => return reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    if let Err(stale) = condition.check(name, stored.as_ref().map(resource::etag).as_deref()) {
        return stale.answer();
    }
    let Some(stored) = stored else {
        return refusal(
            StatusCode::NOT_FOUND,
            "",
            &format!("{name:?} is not a source"),
        );
    };
    let id = (stored.get("id").and_then(Value::as_str).unwrap_or("")).to_string();
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
            let record = Record::new("source.deleted", Some((name, &id)), AuditDetail::default());
            api.audit(&Caller::Admin, record).await;
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
