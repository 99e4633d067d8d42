//! The audit trail: every change and destructive action of the admin API (a source set or
//! deleted, a token made or revoked, a dead letter discarded, a replay, a user's deletion,
//! an audience synced) kept with who did it (the admin token, or a source's token: its id
//! and source; the relay itself for tokens it revokes), when, and what: for a source's PUT
//! the names of the fields that changed, never a value of a secret. Each is one log line
//! too. Kept in the admin API's store (`control.db`, or the fleet's Redis) within
//! `audit_max_entries` and `audit_retention`, the oldest going first.
//!
//! `GET /admin/audit?limit=&before=&source=`: a page, newest first. The admin token reads
//! every entry (or one source's); a source's token reads its own source's only (those of the
//! very source it was made for, not of an earlier one of its name), and another source's is
//! 403.
//!
//! An entry that cannot be stored (the store unreachable) is logged as an error and the
//! action stands: it was done already.

use super::auth::Caller;
use super::schema::{Actor, AuditBy, AuditDetail, AuditEntry, AuditPage, Refusal};
use super::store::{now_ms, AuditQuery};
use super::{answer, refusal, Api, Control};
use crate::http::body;
use crate::http::reply::{self, Answer};
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde_json::{json, Value};

/// The most entries one page holds.
pub const MAX_PAGE: usize = 1000;
const DEFAULT_PAGE: usize = 50;

/// Who did it.
pub enum By<'a> {
    Caller(&'a Caller),
    /// The relay itself (a token revoked because its source left relay.toml).
    Relay,
}

/// What was done, to which source (its name and id), with its facts.
pub struct Record {
    pub action: &'static str,
    pub source: Option<(String, String)>,
    pub detail: AuditDetail,
}

impl Record {
    pub fn new(action: &'static str, source: Option<(&str, &str)>, detail: AuditDetail) -> Record {
        Record {
            action,
            source: source.map(|(n, id)| (n.to_string(), id.to_string())),
            detail,
        }
    }
}

fn by_of(by: &By<'_>) -> AuditBy {
    match by {
        By::Caller(Caller::Admin) => AuditBy {
            caller: Actor::Admin,
            source: None,
            token: None,
        },
        By::Caller(Caller::Source(source, token)) => AuditBy {
            caller: Actor::Source,
            source: Some(source.clone()),
            token: Some(token.clone()),
        },
        By::Relay => AuditBy {
            caller: Actor::Relay,
            source: None,
            token: None,
        },
    }
}

impl Control {
    /// Keeps `record` (blocking: the store is written) and logs it.
    pub fn record(&self, by: &By<'_>, record: Record) {
        let who = by_of(by);
        let (source, source_id) = record.source.clone().unzip();
        let d = &record.detail;
        let changed = d.changed.as_ref().map(|c| c.join(", "));
        tracing::info!(
            action = record.action,
            by = ?who.caller,
            token = who.token.as_deref(),
            source = source.as_deref(),
            changed = changed.as_deref(),
            message_id = d.message_id.as_deref(),
            total = d.total,
            "audit: {}",
            record.action
        );
        let entry = json!({
            "at_ms": now_ms(),
            "by": who,
            "action": record.action,
            "source": source,
            "source_id": source_id,
            "detail": record.detail,
        });
        let limits = *self.audit_limits.load_full();
        if let Err(e) = self.store.append_audit(&entry, &limits) {
            tracing::error!(action = record.action, "audit entry not stored: {e}");
        }
    }
}

impl Api {
    /// Keeps `record`, done by `caller`, off the runtime's threads; answered once stored.
    pub async fn audit(&self, caller: &Caller, record: Record) {
        let (control, caller) = (self.control.clone(), caller.clone());
        let _ = tokio::task::spawn_blocking(move || {
            control.record(&By::Caller(&caller), record);
        })
        .await;
    }

    /// The name and id of running source `name` (its id empty for relay.toml's).
    pub fn source_key(&self, name: &str) -> (String, String) {
        let id = (self.sources().by_name(name)).map_or(String::new(), |s| s.spec.id.clone());
        (name.to_string(), id)
    }
}

/// The query of `GET /admin/audit`.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AuditParams {
    /// 1 to 1,000 (default 50).
    limit: Option<usize>,
    /// `next` of the page before.
    before: Option<String>,
    /// One source's entries only (a source token: its own, the default).
    source: Option<String>,
}

/// `GET /admin/audit`: the audit trail, newest first, a page at a time.
#[utoipa::path(get, path = "/admin/audit", operation_id = "list_audit", tag = "audit", params(AuditParams),
    responses((status = 200, description = "A page of the audit trail, newest first", body = AuditPage),
        (status = 400, description = "A bad parameter, named by `field`", body = Refusal),
        (status = 503, description = "The store cannot be read", body = Refusal)))]
pub async fn list(State(api): State<Api>, caller: Caller, RawQuery(query): RawQuery) -> Answer {
    let (mut limit, mut before, mut source) = (DEFAULT_PAGE, None, None);
    for (k, v) in body::query_pairs(query.as_deref()) {
        match k {
            "limit" => match body::page_limit(&v, MAX_PAGE) {
                Ok(n) => limit = n,
                Err(why) => return refusal(StatusCode::BAD_REQUEST, "limit", &why),
            },
            "before" => before = Some(v),
            "source" => source = Some(v),
            _ => {
                let why = "not a parameter (limit, before, source)";
                return refusal(StatusCode::BAD_REQUEST, k, why);
            }
        }
    }
    let source = match (&caller, source) {
        (Caller::Admin, None) => None,
        // Every source of that name, those deleted included.
        (Caller::Admin, Some(name)) => Some((name, None)),
        (Caller::Source(own, _), asked) => {
            if asked.as_deref().is_some_and(|a| a != own) {
                let why = "this token reaches its own source only";
                return refusal(StatusCode::FORBIDDEN, "source", why);
            }
            // The very source it was made for, not an earlier one of its name.
            let (name, id) = api.source_key(own);
            Some((name, Some(id)))
        }
    };
    let q = AuditQuery {
        before,
        limit: limit + 1,
        source,
    };
    let control = api.control.clone();
    let read = tokio::task::spawn_blocking(move || control.store.audit(&q)).await;
    let mut rows = match read {
        Ok(Ok(Some(rows))) => rows,
        Ok(Ok(None)) => {
            let why = "not the `next` of a page of this relay's audit trail";
            return refusal(StatusCode::BAD_REQUEST, "before", why);
        }
        Ok(Err(e)) => {
            let why = format!("the audit trail cannot be read: {e}");
            return reply::error(StatusCode::SERVICE_UNAVAILABLE, why);
        }
        Err(e) => return reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = more
        .then(|| rows.last().map(|(id, _)| id.clone()))
        .flatten();
    let page = AuditPage {
        entries: rows.into_iter().map(|(id, v)| entry(id, v)).collect(),
        next,
    };
    answer(StatusCode::OK, &page)
}

/// A stored entry as the API shows it.
fn entry(id: String, v: Value) -> AuditEntry {
    let at =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(v["at_ms"].as_u64().unwrap_or(0));
    AuditEntry {
        id,
        at: outbound::timestamp::format(outbound::OffsetDateTime::from(at)).ok(),
        by: serde_json::from_value(v["by"].clone()).unwrap_or(AuditBy {
            caller: Actor::Relay,
            source: None,
            token: None,
        }),
        action: v["action"].as_str().unwrap_or("").to_string(),
        source: v["source"].as_str().map(str::to_string),
        detail: serde_json::from_value(v["detail"].clone()).unwrap_or_default(),
    }
}
