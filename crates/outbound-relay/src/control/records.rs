//! Delivery records of a source, on the admin API (the admin token or the source's own, as
//! `mod.rs` checks them):
//! each webhook's attempts and health, the dead letters and their replay. The core keeps
//! and decides everything (`Client::webhook_attempts`, `webhook_health`, `dead_letters`,
//! `replay_dead_letters`, ...); this module maps it to HTTP and JSON.
//!
//! - `GET  /admin/sources/{name}/health`: each webhook's health (until `GET
//!   /admin/sources/{name}` carries it);
//! - `GET  /admin/sources/{name}/activity`: its messages delivered and failed in each
//!   minute of the last hour (`operations/activity.rs`);
//! - `GET  /admin/sources/{name}/webhooks/{index}/attempts`: its last 100 attempts;
//! - `GET  /admin/sources/{name}/dead-letters?limit=&cursor=&since=&until=`: a page, newest
//!   first, with the source's counts;
//! - `GET | DELETE /admin/sources/{name}/dead-letters/{messageId}`;
//! - `POST /admin/sources/{name}/dead-letters/{messageId}/replay` `{"webhook"?}`;
//! - `POST /admin/sources/{name}/dead-letters/replay` `{"since"?, "until"?, "webhook"?}`: in
//!   the background, 202 with the progress resource
//!   `GET /admin/sources/{name}/dead-letters/replays/{id}`.

use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::sources::Sources;
use base64::Engine as _;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};
use outbound::{
    DeadLetter, DeadLetterQuery, DeadLetterStats, Error, ReplayProgress, WebhookAttempt,
    WebhookHealth, MAX_DEAD_LETTER_PAGE,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::SystemTime;

/// A source as these routes use it: its name, its tenant and its client now.
struct Source {
    name: String,
    tenant: String,
    client: Arc<outbound::Client>,
}

/// Largest body of a replay request.
const MAX_BODY: usize = 64 * 1024;

/// Answers a request under `/admin/sources/{name}/` (`rest`: the segments after the name).
pub async fn handle(
    sources: &Arc<Sources>,
    method: &Method,
    name: &str,
    rest: &[&str],
    query: Option<&str>,
    headers: &HeaderMap,
    body: Incoming,
) -> Answer {
    let Some(running) = sources.by_name(name) else {
        return reply::error(StatusCode::NOT_FOUND, format!("{name:?} is not a source"));
    };
    // Its client now (a live change swaps it; these calls read, or replay through, either).
    let Some(client) = running.slot.current() else {
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{name:?} is being changed; ask again"),
        );
    };
    let source = Arc::new(Source {
        name: running.name.clone(),
        tenant: running.spec.tenant.clone(),
        client,
    });
    let id = |s: &str| body::percent_decode(s);
    match (method, rest) {
        (&Method::GET, ["health"]) => health(&source),
        (&Method::GET, ["activity"]) => activity(&source.name, &source.tenant),
        (&Method::GET, ["webhooks", index, "attempts"]) => attempts(&source, index),
        (&Method::GET, ["dead-letters"]) => match list_query(query) {
            Ok(q) => blocking(source, move |s| list(s, &q)).await,
            Err(why) => bad(why),
        },
        (&Method::POST, ["dead-letters", "replay"]) => match read(headers, body).await {
            Ok(v) => blocking(source, move |s| replay_range(s, &v)).await,
            Err(a) => a,
        },
        (&Method::GET, ["dead-letters", "replays", job]) => {
            let Ok(job) = job.parse::<u64>() else {
                return reply::error(StatusCode::NOT_FOUND, "no such replay");
            };
            blocking(source, move |s| match s.client.replay_progress(job) {
                Ok(Some(p)) => reply::json(StatusCode::OK, &progress(&s.name, &p)),
                Ok(None) => reply::error(StatusCode::NOT_FOUND, "no such replay"),
                Err(e) => failed(e),
            })
            .await
        }
        (&Method::GET, ["dead-letters", message]) => {
            let message = id(message);
            blocking(source, move |s| match s.client.dead_letter(&message) {
                Ok(Some(d)) => reply::json(StatusCode::OK, &letter(&d)),
                Ok(None) => reply::error(StatusCode::NOT_FOUND, "no such dead letter"),
                Err(e) => failed(e),
            })
            .await
        }
        (&Method::DELETE, ["dead-letters", message]) => {
            let message = id(message);
            blocking(source, move |s| {
                match s.client.delete_dead_letter(&message) {
                    Ok(true) => reply::ok(),
                    Ok(false) => reply::error(StatusCode::NOT_FOUND, "no such dead letter"),
                    Err(e) => failed(e),
                }
            })
            .await
        }
        (&Method::POST, ["dead-letters", message, "replay"]) => {
            let message = id(message);
            match read(headers, body).await {
                Ok(v) => blocking(source, move |s| replay_one(s, &message, &v)).await,
                Err(a) => a,
            }
        }
        (_, ["health"] | ["activity"] | ["webhooks", _, "attempts"]) => {
            reply::error(StatusCode::METHOD_NOT_ALLOWED, "use GET")
        }
        _ => reply::error(StatusCode::NOT_FOUND, "no such admin resource"),
    }
}

/// Runs a call of the core that waits (on the spool writer) off the async workers.
async fn blocking(
    source: Arc<Source>,
    f: impl FnOnce(&Source) -> Answer + Send + 'static,
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
        Error::Config { setting, .. } if setting == "dead_letters" => reply::error(
            StatusCode::NOT_FOUND,
            "this source keeps no dead letters (dead_letters = false, or no spool)",
        ),
        // As this module's own refusals: the parameter, then why (`cursor: ...`).
        Error::InvalidField { field, reason } => bad(format!("{field}: {reason}")),
        _ => reply::error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// A JSON object body; an empty body is `{}`.
async fn read(headers: &HeaderMap, body: Incoming) -> Result<Value, Answer> {
    let bytes = body::read(headers, body, MAX_BODY)
        .await
        .map_err(|e| reply::error(e.status, e.message))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(reply::error(
            StatusCode::BAD_REQUEST,
            "body must be a JSON object",
        )),
    }
}

fn time(t: SystemTime) -> Value {
    outbound::timestamp::format(outbound::OffsetDateTime::from(t))
        .map_or(Value::Null, Value::String)
}

/// Why a request is refused (400).
type Bad = String;

fn bad(why: Bad) -> Answer {
    reply::error(StatusCode::BAD_REQUEST, why)
}

fn parse_time(key: &str, text: &str) -> Result<SystemTime, Bad> {
    outbound::timestamp::parse(text)
        .map(SystemTime::from)
        .map_err(|_| format!("{key}: {text:?} is not an RFC 3339 time (2026-11-27T09:30:00Z)"))
}

fn ms(d: std::time::Duration) -> Value {
    json!((d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0)
}

/// An attempt as JSON: the answer as text when it is UTF-8, else in base64.
fn attempt(a: &WebhookAttempt) -> Value {
    let mut o = Map::new();
    o.insert("webhook".into(), json!(a.webhook));
    o.insert("messageId".into(), json!(&*a.message_id));
    o.insert("at".into(), time(a.at));
    o.insert("durationMs".into(), ms(a.duration));
    o.insert("result".into(), json!(a.result.as_str()));
    o.insert("status".into(), json!(a.status));
    o.insert("error".into(), json!(a.error.map(|e| e.as_str())));
    if !a.detail.is_empty() {
        o.insert("detail".into(), json!(a.detail));
    }
    if let Some(answer) = &a.answer {
        match std::str::from_utf8(answer) {
            Ok(text) => o.insert("answer".into(), json!(text)),
            Err(_) => o.insert(
                "answerBase64".into(),
                json!(base64::engine::general_purpose::STANDARD.encode(answer)),
            ),
        };
    }
    Value::Object(o)
}

fn health_json(h: &WebhookHealth) -> Value {
    json!({
        "webhook": h.webhook,
        "url": h.url,
        "state": h.state.as_str(),
        "attempts5m": h.attempts_5m,
        "delivered5m": h.delivered_5m,
        "successRate5m": h.success_rate_5m,
        "p50Ms": h.p50_5m.map(ms),
        "p99Ms": h.p99_5m.map(ms),
        "consecutiveFailures": h.consecutive_failures,
        "lastError": h.last_error.as_ref().map(|(at, why)| json!({"at": time(*at), "message": why})),
        "lastSuccess": h.last_success.map(time),
        "waiting": h.waiting,
    })
}

fn health(source: &Source) -> Answer {
    let webhooks: Vec<Value> = source
        .client
        .webhook_health()
        .iter()
        .map(health_json)
        .collect();
    reply::json(
        StatusCode::OK,
        &json!({"source": source.name, "webhooks": webhooks}),
    )
}

/// The last hour of source `name` (kept under its `tenant`), minute by minute, oldest first (the
/// last minute is the one under way).
fn activity(name: &str, tenant: &str) -> Answer {
    let s = crate::operations::activity::series(tenant);
    let minute = |m: u64| time(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(m * 60));
    let last = s.first_minute + s.delivered.len() as u64 - 1;
    reply::json(
        StatusCode::OK,
        &json!({
            "source": name,
            "from": minute(s.first_minute),
            "to": minute(last + 1),
            "bucketSeconds": 60,
            "delivered": s.delivered,
            "failed": s.failed,
        }),
    )
}

fn attempts(source: &Source, index: &str) -> Answer {
    let Ok(index) = index.parse::<usize>() else {
        return reply::error(StatusCode::NOT_FOUND, "no such webhook");
    };
    match source.client.webhook_attempts(index) {
        Ok(list) => {
            let list: Vec<Value> = list.iter().map(attempt).collect();
            reply::json(
                StatusCode::OK,
                &json!({"source": source.name, "webhook": index, "attempts": list}),
            )
        }
        Err(_) => reply::error(StatusCode::NOT_FOUND, "no such webhook"),
    }
}

/// A dead letter; with its body (as JSON, it is the webhook body as sent) when it has one.
fn letter(d: &DeadLetter) -> Value {
    let mut o = Map::new();
    o.insert("messageId".into(), json!(d.message_id));
    o.insert("failedAt".into(), time(d.failed_at));
    o.insert("reason".into(), json!(d.reason.to_string()));
    o.insert("detail".into(), json!(d.detail));
    o.insert("rounds".into(), json!(d.rounds));
    o.insert(
        "firstAttemptAt".into(),
        d.first_attempt.map_or(Value::Null, time),
    );
    o.insert("size".into(), json!(d.size));
    o.insert("replaying".into(), json!(d.replaying));
    let last: Vec<Value> = d.last_attempts.iter().map(attempt).collect();
    o.insert("lastAttempts".into(), Value::Array(last));
    if let Some(body) = &d.body {
        let v =
            serde_json::from_slice(body).unwrap_or_else(|_| json!(String::from_utf8_lossy(body)));
        o.insert("body".into(), v);
    }
    Value::Object(o)
}

fn stats(s: &DeadLetterStats) -> Value {
    json!({"count": s.count, "bytes": s.bytes, "evicted": s.evicted, "expired": s.expired})
}

fn progress(source: &str, p: &ReplayProgress) -> Value {
    json!({
        "id": p.id,
        "total": p.total,
        "sent": p.sent,
        "delivered": p.delivered,
        "failed": p.failed,
        "skipped": p.skipped,
        "done": p.done(),
        "startedAt": time(p.started),
        "progress": format!("/admin/sources/{source}/dead-letters/replays/{}", p.id),
    })
}

fn list_query(query: Option<&str>) -> Result<DeadLetterQuery, Bad> {
    let mut q = DeadLetterQuery::default();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = body::percent_decode(&v.replace('+', " "));
        match k {
            "limit" => {
                q.limit = match v.parse::<usize>() {
                    Ok(n @ 1..=MAX_DEAD_LETTER_PAGE) => n,
                    _ => return Err(format!("limit: must be 1 to {MAX_DEAD_LETTER_PAGE}")),
                }
            }
            // Any text: the core refuses one no page gave (`cursor: ...`, a 400).
            "cursor" => q.cursor = Some(v),
            "since" => q.since = Some(parse_time("since", &v)?),
            "until" => q.until = Some(parse_time("until", &v)?),
            _ => {
                return Err(format!(
                    "{k}: not a parameter (limit, cursor, since, until)"
                ))
            }
        }
    }
    Ok(q)
}

fn list(source: &Source, q: &DeadLetterQuery) -> Answer {
    let page = match source.client.dead_letters(q) {
        Ok(page) => page,
        Err(e) => return failed(e),
    };
    let counts = match source.client.dead_letter_stats() {
        Ok(s) => stats(&s),
        Err(e) => return failed(e),
    };
    let letters: Vec<Value> = page.letters.iter().map(letter).collect();
    reply::json(
        StatusCode::OK,
        &json!({"source": source.name, "deadLetters": letters, "next": page.next, "stats": counts}),
    )
}

/// The webhook a replay names: its index, or its URL.
fn webhook(source: &Source, body: &Value) -> Result<Option<usize>, Bad> {
    let hooks = &source.client.config().webhooks;
    match body.get("webhook") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64().map(|i| i as usize) {
            Some(i) if i < hooks.len() => Ok(Some(i)),
            _ => Err(format!(
                "webhook: {n} is not a webhook of this source (it has {})",
                hooks.len()
            )),
        },
        Some(Value::String(url)) => match hooks.iter().position(|h| &h.url == url) {
            Some(i) => Ok(Some(i)),
            None => Err("webhook: not a URL of this source's webhooks".into()),
        },
        Some(_) => Err("webhook: an index (0-based) or one of the source's webhook URLs".into()),
    }
}

fn replay_one(source: &Source, id: &str, body: &Value) -> Answer {
    let hook = match webhook(source, body) {
        Ok(h) => h,
        Err(why) => return bad(why),
    };
    match source.client.replay_dead_letter(id, hook) {
        Ok(Some(p)) => {
            tracing::info!(source = %source.name, message_id = %id, "dead letter replayed");
            reply::json(StatusCode::ACCEPTED, &progress(&source.name, &p))
        }
        Ok(None) => match source.client.dead_letter(id) {
            Ok(Some(_)) => reply::error(StatusCode::CONFLICT, "this dead letter is being replayed"),
            Ok(None) => reply::error(StatusCode::NOT_FOUND, "no such dead letter"),
            Err(e) => failed(e),
        },
        Err(e) => failed(e),
    }
}

fn replay_range(source: &Source, body: &Value) -> Answer {
    let at = |key: &str| -> Result<Option<SystemTime>, Bad> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(t)) => parse_time(key, t).map(Some),
            Some(_) => Err(format!("{key}: an RFC 3339 time (2026-11-27T09:30:00Z)")),
        }
    };
    let (since, until) = match (at("since"), at("until")) {
        (Ok(s), Ok(u)) => (s, u),
        (Err(why), _) | (_, Err(why)) => return bad(why),
    };
    let hook = match webhook(source, body) {
        Ok(h) => h,
        Err(why) => return bad(why),
    };
    match source.client.replay_dead_letters(since, until, hook) {
        Ok(p) => {
            tracing::info!(source = %source.name, total = p.total, "dead letters replayed");
            reply::json(StatusCode::ACCEPTED, &progress(&source.name, &p))
        }
        Err(e) => failed(e),
    }
}
