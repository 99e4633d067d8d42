//! Delivery records of a source, on the admin API (the admin token or the source's own):
//! each webhook's attempts and health, its last hour, the dead letters and their replay. The
//! core keeps and decides everything (`Client::webhook_attempts`, `webhook_health`,
//! `dead_letters`, `replay_dead_letters`, ...); this module maps it to HTTP and JSON.
//!
//! - `GET  /admin/sources/{name}/health`: each webhook's health;
//! - `GET  /admin/sources/{name}/activity`: its messages delivered and failed in each
//!   minute of the last hour (`operations/activity.rs`);
//! - `GET  /admin/sources/{name}/webhooks/{index}/attempts`: its last 100 attempts;
//! - `GET  /admin/sources/{name}/dead-letters?limit=&cursor=&since=&until=`: a page, newest
//!   first, with the source's counts;
//! - `GET | DELETE /admin/sources/{name}/dead-letters/{message_id}`;
//! - `POST /admin/sources/{name}/dead-letters/{message_id}/replay` `{"webhook"?}`;
//! - `POST /admin/sources/{name}/dead-letters/replay` `{"since"?, "until"?, "webhook"?}`: in
//!   the background, 202 with the progress resource
//!   `GET /admin/sources/{name}/dead-letters/replays/{id}`.

use super::audit::{By, Record};
use super::auth::OwnSource;
use super::schema::{self, AuditDetail, Refusal, ReplayOne, ReplayRequest, WebhookRef};
use super::{answer, read_json, refusal, Api, Caller, Control, Denied};
use crate::http::body;
use crate::http::reply::{self, Answer};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use outbound::{
    AttemptQuery, AttemptResult, DeadLetter, DeadLetterQuery, DeadLetterStats, Error,
    ReplayProgress, WebhookAttempt, WebhookHealth, MAX_DEAD_LETTER_PAGE,
};
use std::sync::Arc;
use std::time::SystemTime;

/// A source as these routes use it: its name, its tenant and its client now, and the
/// subscription the path names (`/subscriptions/{subscription}/...`), if any.
pub(super) struct SourceRef {
    pub(super) name: String,
    /// Its id (empty for relay.toml's).
    id: String,
    tenant: String,
    source_client: Arc<outbound::Client>,
    subscription: Option<String>,
}

impl SourceRef {
    /// The client whose records these are: the subscription's, or the source's own.
    pub(super) fn client(&self) -> &outbound::Client {
        match &self.subscription {
            Some(name) => {
                (self.source_client.subscription(name)).expect("checked when the path was read")
            }
            None => &self.source_client,
        }
    }
}

impl SourceRef {
    /// Records `action` done to this source by `caller` (blocking: the store is written).
    fn record(
        &self,
        control: &Control,
        caller: &Caller,
        action: &'static str,
        detail: AuditDetail,
    ) {
        let record = Record::new(action, Some((&self.name, &self.id)), detail);
        control.record(&By::Caller(caller), record);
    }
}

/// Largest body of a replay request.
const MAX_BODY: usize = 64 * 1024;

/// The source the path names, with its client now (a live change swaps it; these calls
/// read, or replay through, either).
pub(super) fn source(api: &Api, own: &OwnSource) -> Result<Arc<SourceRef>, Denied> {
    let name = &own.name;
    let sources = api.sources();
    let Some(running) = sources.by_name(name) else {
        let why = format!("{name:?} is not a source");
        return Err(Denied(StatusCode::NOT_FOUND, String::new(), why));
    };
    let Some(client) = running.slot.current() else {
        let why = format!("{name:?} is being changed; ask again");
        return Err(Denied(StatusCode::SERVICE_UNAVAILABLE, String::new(), why));
    };
    let subscription = own.params.get("subscription").cloned();
    if let Some(sub) = &subscription {
        if client.subscription(sub).is_none() {
            let why = format!("{name:?} has no subscription {sub:?}");
            return Err(Denied(StatusCode::NOT_FOUND, "subscription".into(), why));
        }
    }
    Ok(Arc::new(SourceRef {
        name: running.name.clone(),
        id: running.spec.id.clone(),
        tenant: running.spec.tenant.clone(),
        source_client: client,
        subscription,
    }))
}

/// Runs a call of the core that waits (on the spool writer) off the async workers.
async fn blocking(
    source: Arc<SourceRef>,
    f: impl FnOnce(&SourceRef) -> Answer + Send + 'static,
) -> Answer {
    tokio::task::spawn_blocking(move || f(&source))
        .await
        .unwrap_or_else(|e| {
            reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("request failed: {e}"),
            )
        })
}

/// A core error as an answer.
fn failed(e: Error) -> Answer {
    match &e {
        Error::Config { setting, .. } if setting == "dead_letters" => refusal(
            StatusCode::NOT_FOUND,
            "",
            "this source keeps no dead letters (dead_letters = false, or no spool)",
        ),
        Error::InvalidField { field, reason } => refusal(StatusCode::BAD_REQUEST, field, reason),
        _ => reply::error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

fn time(t: SystemTime) -> Option<String> {
    outbound::timestamp::format(outbound::OffsetDateTime::from(t)).ok()
}

/// Why a request is refused (400): the parameter or field, and why.
type Refused = (&'static str, String);

fn bad((field, why): Refused) -> Answer {
    refusal(StatusCode::BAD_REQUEST, field, &why)
}

fn parse_time(key: &'static str, text: &str) -> Result<SystemTime, Refused> {
    outbound::timestamp::parse(text)
        .map(SystemTime::from)
        .map_err(|_| {
            let why = format!("{text:?} is not an RFC 3339 time (2026-11-27T09:30:00Z)");
            (key, why)
        })
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

/// What a list shows of an answer; the attempts of one message show all that is kept.
const LISTED_ANSWER: usize = 1024;

/// An attempt: the answer (its first `answer_max` bytes) as text when it is UTF-8, else in
/// base64.
fn attempt(a: &WebhookAttempt, answer_max: usize) -> schema::Attempt {
    let cut = a.answer.as_deref().map(|b| &b[..b.len().min(answer_max)]);
    let text = cut.map(|b| match std::str::from_utf8(b) {
        Ok(t) => Some(t),
        // Cut in the middle of a character: still text.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&b[..e.valid_up_to()]).ok(),
        Err(_) => None,
    });
    let headers = |list: &[(String, String)]| -> Vec<schema::Header> {
        (list.iter())
            .map(|(name, value)| schema::Header {
                name: name.clone(),
                value: value.clone(),
            })
            .collect()
    };
    schema::Attempt {
        webhook: a.webhook,
        message_id: a.message_id.to_string(),
        at: time(a.at),
        duration_ms: ms(a.duration),
        result: a.result.as_str().to_string(),
        status: a.status,
        error: a.error.map(|e| e.as_str().to_string()),
        detail: (!a.detail.is_empty()).then(|| a.detail.clone()),
        answer: text.flatten().map(str::to_string),
        answer_base64: match (text, cut) {
            (Some(None), Some(bytes)) => {
                Some(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            _ => None,
        },
        answer_bytes: a.answer.as_ref().map(|b| b.len()),
        request_headers: headers(&a.request_headers),
        answer_headers: headers(&a.answer_headers),
    }
}

pub(super) fn health_of(h: &WebhookHealth) -> schema::Health {
    schema::Health {
        webhook: h.webhook,
        url: h.url.clone(),
        state: h.state.as_str().to_string(),
        attempts_5m: h.attempts_5m,
        delivered_5m: h.delivered_5m,
        success_rate_5m: h.success_rate_5m,
        p50_ms: h.p50_5m.map(ms),
        p99_ms: h.p99_5m.map(ms),
        consecutive_failures: u64::from(h.consecutive_failures),
        last_error: (h.last_error.as_ref()).map(|(at, why)| schema::LastError {
            at: time(*at),
            message: why.clone(),
        }),
        last_success: h.last_success.and_then(time),
        waiting: h.waiting,
        throttled: h.throttled,
        messages: schema::MessageCounts {
            delivered: h.messages.delivered,
            failed: h.messages.failed,
            retrying: h.messages.retrying,
            abandoned: h.messages.abandoned,
        },
    }
}

/// `GET /admin/sources/{name}/health`: each webhook's state, the last 5 minutes' success
/// rate and p50/p99, failures in a row, messages waiting.
#[utoipa::path(get, path = "/admin/sources/{name}/health", operation_id = "get_health", tag = "records",
    params(("name" = String, Path)),
    responses((status = 200, description = "Its webhooks' health", body = schema::SourceHealth),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn health(State(api): State<Api>, own: OwnSource) -> Answer {
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let webhooks = source
        .client()
        .webhook_health()
        .iter()
        .map(health_of)
        .collect();
    let health = schema::SourceHealth {
        source: source.name.clone(),
        webhooks,
    };
    answer(StatusCode::OK, &health)
}

/// `GET /admin/sources/{name}/activity`: the source's messages delivered and failed (final
/// outcomes: a retry is not a failure) in each minute of the last hour, oldest first; the
/// last minute is the one under way.
#[utoipa::path(get, path = "/admin/sources/{name}/activity", operation_id = "get_activity", tag = "records",
    params(("name" = String, Path)),
    responses((status = 200, description = "60 minutes", body = schema::Activity),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn activity(State(api): State<Api>, own: OwnSource) -> Answer {
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let s = api.ops.activities.series(&source.tenant);
    let minute = |m: u64| time(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(m * 60));
    let last = s.first_minute + s.delivered.len() as u64 - 1;
    let client = source.client();
    let webhooks = (0..client.webhook_health().len())
        .map(|webhook| webhook_hour(webhook, client, s.first_minute, s.delivered.len()))
        .collect();
    let hour = schema::Activity {
        source: source.name.clone(),
        from: minute(s.first_minute),
        to: minute(last + 1),
        bucket_seconds: 60,
        delivered: s.delivered.to_vec(),
        failed: s.failed.to_vec(),
        webhooks,
    };
    answer(StatusCode::OK, &hour)
}

/// Webhook `webhook`'s minutes placed in the source's `len` minutes from `first_minute`.
fn webhook_hour(
    webhook: usize,
    client: &outbound::Client,
    first_minute: u64,
    len: usize,
) -> schema::WebhookActivity {
    let mut hour = schema::WebhookActivity {
        webhook,
        delivered: vec![0; len],
        failed: vec![0; len],
        abandoned: vec![0; len],
    };
    for m in client.webhook_minutes(webhook).unwrap_or_default() {
        let at = m
            .start
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 60);
        let Some(i) = (at.checked_sub(first_minute)).filter(|i| (*i as usize) < len) else {
            continue;
        };
        let i = i as usize;
        (hour.delivered[i], hour.failed[i], hour.abandoned[i]) =
            (m.delivered, m.failed, m.abandoned);
    }
    hour
}

/// `GET /admin/sources/{name}/webhooks/{index}/attempts`: the webhook's kept attempts,
/// newest first, chosen by result, status, message and time.
#[utoipa::path(get, path = "/admin/sources/{name}/webhooks/{index}/attempts", operation_id = "list_attempts", tag = "records",
    params(("name" = String, Path),
        ("index" = usize, Path, description = "The webhook's place in the source's `webhooks`, from 0"),
        AttemptsQuery),
    responses((status = 200, description = "Its attempts", body = schema::Attempts),
        (status = 400, description = "A bad parameter, named by `field`", body = Refusal),
        (status = 404, description = "No such source or webhook", body = Refusal)))]
pub async fn attempts(State(api): State<Api>, own: OwnSource, RawQuery(query): RawQuery) -> Answer {
    let index = own.param("index");
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let q = match attempts_query(query.as_deref()) {
        Ok(q) => q,
        Err(why) => return bad(why),
    };
    let no_such = || refusal(StatusCode::NOT_FOUND, "index", "no such webhook");
    let Ok(index) = index.parse::<usize>() else {
        return no_such();
    };
    // One message's attempts are few: each with all of its answer.
    let answer_max = match q.message_id {
        Some(_) => usize::MAX,
        None => LISTED_ANSWER,
    };
    match source.client().webhook_attempts_where(index, &q) {
        Ok(list) => {
            let list = schema::Attempts {
                source: source.name.clone(),
                webhook: index,
                attempts: list.iter().map(|a| attempt(a, answer_max)).collect(),
            };
            answer(StatusCode::OK, &list)
        }
        // The query was checked above: what is left is the index.
        Err(_) => no_such(),
    }
}

/// The query of a webhook's attempts.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AttemptsQuery {
    /// `delivered`, `retryable` or `permanent`.
    result: Option<String>,
    /// The answer's status (100 to 599).
    status: Option<u16>,
    /// One message's attempts, each with all of its answer that is kept.
    message_id: Option<String>,
    /// Sent at or after (RFC 3339).
    since: Option<String>,
    /// Sent before (RFC 3339).
    until: Option<String>,
    /// 1 to 10,000 (default 100).
    limit: Option<usize>,
}

fn attempts_query(query: Option<&str>) -> Result<AttemptQuery, Refused> {
    let mut q = AttemptQuery::default();
    for (k, v) in body::query_pairs(query) {
        match k {
            "result" => {
                q.result = Some(AttemptResult::parse(&v).ok_or_else(|| {
                    let why = format!("{v:?} is not a result (delivered, retryable, permanent)");
                    ("result", why)
                })?)
            }
            "status" => {
                let status = v.parse::<u16>().ok().filter(|s| (100..=599).contains(s));
                q.status = Some(
                    status
                        .ok_or_else(|| ("status", format!("{v:?} is not a status (100 to 599)")))?,
                )
            }
            "message_id" => q.message_id = Some(v),
            "since" => q.since = Some(parse_time("since", &v)?),
            "until" => q.until = Some(parse_time("until", &v)?),
            "limit" => {
                q.limit = body::page_limit(&v, outbound::MAX_ATTEMPT_LOG_SIZE)
                    .map_err(|why| ("limit", why))?
            }
            _ => {
                let why = format!(
                    "{k:?} is not a parameter (result, status, message_id, since, until, limit)"
                );
                return Err(("", why));
            }
        }
    }
    Ok(q)
}

/// A dead letter; with its body (as JSON, it is the webhook body as sent) when it has one.
fn letter(d: &DeadLetter) -> schema::DeadLetter {
    schema::DeadLetter {
        message_id: d.message_id.clone(),
        failed_at: time(d.failed_at),
        reason: d.reason.to_string(),
        detail: d.detail.clone(),
        rounds: d.rounds,
        first_attempt_at: d.first_attempt.and_then(time),
        size: d.size,
        replaying: d.replaying,
        last_attempts: (d.last_attempts.iter())
            .map(|a| attempt(a, usize::MAX))
            .collect(),
        body: (d.body.as_ref()).map(|body| {
            serde_json::from_slice(body)
                .unwrap_or_else(|_| serde_json::json!(String::from_utf8_lossy(body)))
        }),
    }
}

fn stats(s: &DeadLetterStats) -> schema::DeadLetterStats {
    schema::DeadLetterStats {
        count: s.count,
        bytes: s.bytes,
        evicted: s.evicted,
        expired: s.expired,
    }
}

fn progress(source: &str, p: &ReplayProgress) -> schema::ReplayProgress {
    schema::ReplayProgress {
        id: p.id,
        total: p.total,
        sent: p.sent,
        delivered: p.delivered,
        failed: p.failed,
        skipped: p.skipped,
        done: p.done(),
        started_at: time(p.started),
        progress: format!("/admin/sources/{source}/dead-letters/replays/{}", p.id),
    }
}

/// The query of a dead-letter page.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PageQuery {
    /// 1 to 1,000 (default 100).
    limit: Option<usize>,
    /// `next` of the page before; any other text is a 400 (`cursor: ...`).
    cursor: Option<String>,
    /// Failed at or after (RFC 3339).
    since: Option<String>,
    /// Failed before (RFC 3339).
    until: Option<String>,
    /// Only those whose event (its JSON as sent) contains this text: exact bytes,
    /// case-sensitive (`"userId":"u7"` finds `u7`, not `u70`), 1 to 256 bytes. A page reads
    /// at most 10,000 letters: it may hold fewer than `limit`, none even, while `next` is set.
    contains: Option<String>,
}

fn list_query(query: Option<&str>) -> Result<DeadLetterQuery, Refused> {
    let mut q = DeadLetterQuery::default();
    for (k, v) in body::query_pairs(query) {
        match k {
            "limit" => {
                q.limit =
                    body::page_limit(&v, MAX_DEAD_LETTER_PAGE).map_err(|why| ("limit", why))?
            }
            // Any text: the core refuses one no page gave (`cursor: ...`, a 400).
            "cursor" => q.cursor = Some(v),
            "since" => q.since = Some(parse_time("since", &v)?),
            "until" => q.until = Some(parse_time("until", &v)?),
            // The core refuses an empty or too long one (`contains: ...`, a 400).
            "contains" => q.contains = Some(v),
            _ => {
                let why =
                    format!("{k:?} is not a parameter (limit, cursor, since, until, contains)");
                return Err(("", why));
            }
        }
    }
    Ok(q)
}

/// `GET /admin/sources/{name}/dead-letters`: a page of the source's dead letters, newest
/// first, with its counts.
#[utoipa::path(get, path = "/admin/sources/{name}/dead-letters", operation_id = "list_dead_letters", tag = "records",
    params(("name" = String, Path), PageQuery),
    responses((status = 200, description = "A page", body = schema::DeadLetterPage),
        (status = 400, description = "A bad parameter, named by `field`: `limit`, `cursor` (not the `next` of a page), `since`, `until`, `contains` (empty or over 256 bytes), or one that is not a parameter", body = Refusal),
        (status = 404, description = "No such source, or it keeps no dead letters", body = Refusal)))]
pub async fn dead_letters(
    State(api): State<Api>,
    own: OwnSource,
    RawQuery(query): RawQuery,
) -> Answer {
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let q = match list_query(query.as_deref()) {
        Ok(q) => q,
        Err(why) => return bad(why),
    };
    blocking(source, move |s| {
        let page = match s.client().dead_letters(&q) {
            Ok(page) => page,
            Err(e) => return failed(e),
        };
        let counts = match s.client().dead_letter_stats() {
            Ok(c) => stats(&c),
            Err(e) => return failed(e),
        };
        let page = schema::DeadLetterPage {
            source: s.name.clone(),
            dead_letters: page.letters.iter().map(letter).collect(),
            next: page.next,
            stats: counts,
        };
        answer(StatusCode::OK, &page)
    })
    .await
}

/// `GET /admin/sources/{name}/dead-letters/{message_id}`: one dead letter, with its body and
/// last attempts.
#[utoipa::path(get, path = "/admin/sources/{name}/dead-letters/{message_id}", operation_id = "get_dead_letter", tag = "records",
    params(("name" = String, Path), ("message_id" = String, Path)),
    responses((status = 200, description = "The dead letter", body = schema::DeadLetter),
        (status = 404, description = "No such dead letter", body = Refusal)))]
pub async fn dead_letter(State(api): State<Api>, own: OwnSource) -> Answer {
    let id = own.param("message_id");
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    blocking(source, move |s| match s.client().dead_letter(&id) {
        Ok(Some(d)) => answer(StatusCode::OK, &letter(&d)),
        Ok(None) => no_such_letter(),
        Err(e) => failed(e),
    })
    .await
}

fn no_such_letter() -> Answer {
    refusal(StatusCode::NOT_FOUND, "message_id", "no such dead letter")
}

/// `DELETE /admin/sources/{name}/dead-letters/{message_id}`: forgotten.
#[utoipa::path(delete, path = "/admin/sources/{name}/dead-letters/{message_id}", operation_id = "delete_dead_letter", tag = "records",
    params(("name" = String, Path), ("message_id" = String, Path)),
    responses((status = 200, description = "Deleted", body = schema::Done),
        (status = 404, description = "No such dead letter", body = Refusal)))]
pub async fn delete_dead_letter(State(api): State<Api>, own: OwnSource) -> Answer {
    let id = own.param("message_id");
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let (control, caller) = (api.control.clone(), own.caller.clone());
    blocking(source, move |s| match s.client().delete_dead_letter(&id) {
        Ok(true) => {
            let detail = AuditDetail {
                message_id: Some(id.clone()),
                ..AuditDetail::default()
            };
            s.record(&control, &caller, "dead_letter.discarded", detail);
            reply::ok()
        }
        Ok(false) => no_such_letter(),
        Err(e) => failed(e),
    })
    .await
}

/// A replay's webhook as the request named it, for the audit trail.
fn named(w: Option<&WebhookRef>) -> Option<String> {
    w.map(|w| match w {
        WebhookRef::Index(i) => i.to_string(),
        WebhookRef::Url(u) => u.clone(),
    })
}

/// The webhook a replay names: its index, or its URL.
fn webhook(source: &SourceRef, named: Option<&WebhookRef>) -> Result<Option<usize>, Refused> {
    let hooks = &source.client().config().webhooks;
    match named {
        None => Ok(None),
        Some(WebhookRef::Index(i)) => match usize::try_from(*i) {
            Ok(i) if i < hooks.len() => Ok(Some(i)),
            _ => {
                let why = format!(
                    "{i} is not a webhook of this source (it has {})",
                    hooks.len()
                );
                Err(("webhook", why))
            }
        },
        Some(WebhookRef::Url(url)) => match hooks.iter().position(|h| &h.url == url) {
            Some(i) => Ok(Some(i)),
            None => Err(("webhook", "not a URL of this source's webhooks".into())),
        },
    }
}

/// `POST /admin/sources/{name}/dead-letters/{message_id}/replay`: one dead letter again (same
/// id, signed with the current secret).
#[utoipa::path(post, path = "/admin/sources/{name}/dead-letters/{message_id}/replay", operation_id = "replay_dead_letter", tag = "records",
    params(("name" = String, Path), ("message_id" = String, Path)), request_body = ReplayOne,
    responses((status = 202, description = "Replaying; its progress", body = schema::ReplayProgress),
        (status = 400, description = "A bad webhook", body = Refusal),
        (status = 404, description = "No such dead letter", body = Refusal),
        (status = 409, description = "Being replayed already", body = Refusal)))]
pub async fn replay_one(
    State(api): State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let id = own.param("message_id");
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let asked: ReplayOne = match read_json(&headers, body, MAX_BODY).await {
        Ok(r) => r,
        Err(a) => return a,
    };
    let (control, caller) = (api.control.clone(), own.caller.clone());
    blocking(source, move |s| {
        let hook = match webhook(s, asked.webhook.as_ref()) {
            Ok(h) => h,
            Err(why) => return bad(why),
        };
        match s.client().replay_dead_letter(&id, hook) {
            Ok(Some(p)) => {
                tracing::info!(source = %s.name, message_id = %id, "dead letter replayed");
                let detail = AuditDetail {
                    message_id: Some(id.clone()),
                    webhook: named(asked.webhook.as_ref()),
                    total: Some(p.total),
                    ..AuditDetail::default()
                };
                s.record(&control, &caller, "dead_letter.replayed", detail);
                answer(StatusCode::ACCEPTED, &progress(&s.name, &p))
            }
            Ok(None) => match s.client().dead_letter(&id) {
                Ok(Some(_)) => refusal(
                    StatusCode::CONFLICT,
                    "message_id",
                    "this dead letter is being replayed",
                ),
                Ok(None) => no_such_letter(),
                Err(e) => failed(e),
            },
            Err(e) => failed(e),
        }
    })
    .await
}

/// `POST /admin/sources/{name}/dead-letters/replay`: every dead letter that failed in a range
/// of time again, in the background.
#[utoipa::path(post, path = "/admin/sources/{name}/dead-letters/replay", operation_id = "replay_dead_letters", tag = "records",
    params(("name" = String, Path)), request_body = ReplayRequest,
    responses((status = 202, description = "Started; its progress", body = schema::ReplayProgress),
        (status = 200, description = "A dry run: how many it would send", body = schema::ReplayCount),
        (status = 400, description = "A bad time or webhook", body = Refusal),
        (status = 404, description = "No such source, or it keeps no dead letters", body = Refusal)))]
pub async fn replay_range(
    State(api): State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let asked: ReplayRequest = match read_json(&headers, body, MAX_BODY).await {
        Ok(r) => r,
        Err(a) => return a,
    };
    let (control, caller) = (api.control.clone(), own.caller.clone());
    blocking(source, move |s| {
        let at = |key: &'static str, t: &Option<String>| -> Result<Option<SystemTime>, Refused> {
            t.as_deref().map(|t| parse_time(key, t)).transpose()
        };
        let (since, until) = match (at("since", &asked.since), at("until", &asked.until)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(why), _) | (_, Err(why)) => return bad(why),
        };
        let hook = match webhook(s, asked.webhook.as_ref()) {
            Ok(h) => h,
            Err(why) => return bad(why),
        };
        if asked.dry_run {
            return match would_replay(s, since, until) {
                Ok(total) => answer(StatusCode::OK, &schema::ReplayCount { total }),
                Err(e) => failed(e),
            };
        }
        match s.client().replay_dead_letters(since, until, hook) {
            Ok(p) => {
                tracing::info!(source = %s.name, total = p.total, "dead letters replayed");
                let detail = AuditDetail {
                    webhook: named(asked.webhook.as_ref()),
                    since: asked.since.clone(),
                    until: asked.until.clone(),
                    total: Some(p.total),
                    ..AuditDetail::default()
                };
                s.record(&control, &caller, "dead_letters.replayed", detail);
                answer(StatusCode::ACCEPTED, &progress(&s.name, &p))
            }
            Err(e) => failed(e),
        }
    })
    .await
}

/// How many dead letters a replay of `since`..`until` would send: those of the range not
/// being replayed already, counted a page at a time (the core keeps no count by time).
fn would_replay(
    s: &SourceRef,
    since: Option<SystemTime>,
    until: Option<SystemTime>,
) -> Result<u64, Error> {
    let mut q = DeadLetterQuery {
        limit: MAX_DEAD_LETTER_PAGE,
        since,
        until,
        ..DeadLetterQuery::default()
    };
    let mut total = 0;
    loop {
        let page = s.client().dead_letters(&q)?;
        total += page.letters.iter().filter(|d| !d.replaying).count() as u64;
        match page.next {
            Some(next) => q.cursor = Some(next),
            None => return Ok(total),
        }
    }
}

/// `GET /admin/sources/{name}/dead-letters/replays/{id}`: a replay's progress (of this
/// source's: another's is not found).
#[utoipa::path(get, path = "/admin/sources/{name}/dead-letters/replays/{id}", operation_id = "get_replay", tag = "records",
    params(("name" = String, Path), ("id" = u64, Path)),
    responses((status = 200, description = "Its progress", body = schema::ReplayProgress),
        (status = 404, description = "No such replay", body = Refusal)))]
pub async fn replay_progress(State(api): State<Api>, own: OwnSource) -> Answer {
    let job = own.param("id");
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let no_such = || refusal(StatusCode::NOT_FOUND, "id", "no such replay");
    let Ok(job) = job.parse::<u64>() else {
        return no_such();
    };
    blocking(source, move |s| match s.client().replay_progress(job) {
        Ok(Some(p)) => answer(StatusCode::OK, &progress(&s.name, &p)),
        Ok(None) => no_such(),
        Err(e) => failed(e),
    })
    .await
}
