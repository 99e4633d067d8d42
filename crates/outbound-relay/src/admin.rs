//! The admin API (on only with `admin_token`; every request needs
//! `Authorization: Bearer <admin_token>`, anything else is 401 and sends nothing):
//!
//! - `POST /admin/deletions` `{"userId":"u1","sources":["web"]}`: a core `delete` to each
//!   named source (every source with webhooks when `sources` is left out), answered once
//!   each is committed to its spool;
//! - `PUT /admin/sources/{name}/audiences/{audience}` `{"members":["u1",...]}`: the core's
//!   `AudienceSync` for that source (state in `data_dir/audiences/<name>.db`). The state is
//!   saved only after the identifies it emitted are committed to the spool, so a crash
//!   between the two sends them again (never loses them) and a restart after it sends
//!   nothing twice.
//!
//! Issue 25's config reload and readiness belong to the operations side (`server.rs`), not
//! here; new admin resources get a function each below.

use crate::auth::bearer_is;
use crate::body;
use crate::reply::{self, Answer};
use crate::sources::Sources;
use crate::tracking::spooled;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};
use outbound::{Error, Message};
use serde_json::{json, Value};
use std::sync::Arc;

/// Largest admin body (an audience of many members).
const MAX_ADMIN_BODY: usize = 64 * 1024 * 1024;

/// Routes a request under `/admin/`.
pub async fn handle(
    sources: &Arc<Sources>,
    token: Option<&str>,
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Incoming,
) -> Answer {
    let Some(token) = token else {
        return reply::error(
            StatusCode::NOT_FOUND,
            "the admin API is off (no admin_token)",
        );
    };
    if !bearer_is(headers, token) {
        tracing::info!(path, "admin request refused: bad or missing token");
        return reply::error(StatusCode::UNAUTHORIZED, "admin token required");
    }
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        (&Method::POST, ["", "admin", "deletions"]) => match read_json(headers, body).await {
            Ok(v) => deletions(sources, v).await,
            Err(a) => a,
        },
        (&Method::PUT, ["", "admin", "sources", name, "audiences", audience]) => {
            let (name, audience) = (name.to_string(), percent_decode(audience));
            match read_json(headers, body).await {
                Ok(v) => audiences(sources, &name, &audience, v).await,
                Err(a) => a,
            }
        }
        (_, ["", "admin", "sources", name, rest @ ..]) if crate::records::serves(rest) => {
            crate::records::handle(sources, method, name, rest, query, headers, body).await
        }
        _ => reply::error(StatusCode::NOT_FOUND, "no such admin resource"),
    }
}

async fn read_json(headers: &HeaderMap, body: Incoming) -> Result<Value, Answer> {
    let bytes = body::read(headers, body, MAX_ADMIN_BODY)
        .await
        .map_err(|e| reply::error(e.status, e.message))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(reply::error(
            StatusCode::BAD_REQUEST,
            "body must be a JSON object",
        )),
        Err(e) => Err(reply::error(
            StatusCode::BAD_REQUEST,
            format!("body is not valid JSON: {e}"),
        )),
    }
}

async fn deletions(sources: &Arc<Sources>, body: Value) -> Answer {
    let user_id = match body.get("userId") {
        Some(Value::String(u)) if !u.is_empty() => u.clone(),
        _ => {
            return reply::error(
                StatusCode::BAD_REQUEST,
                "userId (a non-empty string) is required",
            )
        }
    };
    let targets = match body.get("sources") {
        None | Some(Value::Null) => sources
            .list
            .iter()
            .filter(|s| s.has_webhooks)
            .cloned()
            .collect::<Vec<_>>(),
        Some(Value::Array(names)) => {
            let mut targets = Vec::new();
            for n in names {
                let Some(source) = n.as_str().and_then(|n| sources.by_name(n)) else {
                    return reply::error(
                        StatusCode::BAD_REQUEST,
                        format!("sources: {n} is not a source"),
                    );
                };
                if !source.has_webhooks {
                    return reply::error(
                        StatusCode::BAD_REQUEST,
                        format!("sources: {:?} has no webhooks to notify", source.name),
                    );
                }
                targets.push(source.clone());
            }
            targets
        }
        Some(_) => {
            return reply::error(
                StatusCode::BAD_REQUEST,
                "sources must be an array of source names",
            )
        }
    };
    // Sources and user id were checked above: a bad request has sent nothing.
    let mut sent = Vec::new();
    for source in &targets {
        match source.client.enqueue(&Message::delete(user_id.as_str())) {
            Ok(id) => sent.push((source.clone(), id)),
            Err(e) => {
                tracing::warn!(source = %source.name, "deletion not accepted: {e}");
                let status = match e {
                    Error::QueueFull { .. } | Error::SpoolFull { .. } => {
                        StatusCode::TOO_MANY_REQUESTS
                    }
                    Error::Closed | Error::Spool { .. } => StatusCode::SERVICE_UNAVAILABLE,
                    _ => StatusCode::BAD_REQUEST,
                };
                let done: Vec<&str> = sent.iter().map(|(s, _)| s.name.as_str()).collect();
                return reply::json(
                    status,
                    &json!({"success": false, "message": format!("{}: {e}", source.name), "sources": done}),
                );
            }
        }
    }
    for (source, _) in &sent {
        if !spooled(source).await {
            return reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{}: the deletion could not be committed to disk",
                    source.name
                ),
            );
        }
    }
    let names: Vec<&str> = sent.iter().map(|(s, _)| s.name.as_str()).collect();
    let ids: serde_json::Map<String, Value> = sent
        .iter()
        .map(|(s, id)| (s.name.clone(), Value::String(id.clone())))
        .collect();
    tracing::info!(sources = ?names, "deletion sent");
    reply::json(
        StatusCode::OK,
        &json!({"success": true, "sources": names, "messageIds": ids}),
    )
}

async fn audiences(sources: &Arc<Sources>, name: &str, audience: &str, body: Value) -> Answer {
    let Some(source) = sources.by_name(name).cloned() else {
        return reply::error(StatusCode::NOT_FOUND, format!("{name:?} is not a source"));
    };
    let Some(members) = body.get("members") else {
        return reply::error(
            StatusCode::BAD_REQUEST,
            "members (an array of user ids) is required",
        );
    };
    // The core reads the member list (strings or integers) and names a bad entry.
    let members = match outbound::parse_members("members", &members.to_string()) {
        Ok(m) => m,
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let audience = audience.to_string();
    // SQLite and the queue-room waits are blocking: off the async workers.
    let run = tokio::task::spawn_blocking(move || {
        let mut sync = source.audiences.lock().unwrap_or_else(|e| e.into_inner());
        let pending = sync.emit_audience(&source.client, &audience, &members)?;
        let (tx, rx) = std::sync::mpsc::channel();
        source.client.when_spooled(move |ok| {
            let _ = tx.send(ok);
        });
        if !rx.recv().unwrap_or(false) {
            return Err(Error::Spool {
                path: "spool".into(),
                reason: "the identifies could not be committed to disk".into(),
            });
        }
        let counts = pending.commit()?;
        Ok((counts, outbound::trait_key(&audience)?))
    })
    .await;
    match run {
        Ok(Ok((counts, key))) => {
            tracing::info!(
                source = %name,
                trait_ = %key,
                joined = counts.joined,
                left = counts.left,
                "audience synced"
            );
            reply::json(
                StatusCode::OK,
                &json!({
                    "success": true,
                    "source": name,
                    "trait": key,
                    "joined": counts.joined,
                    "left": counts.left,
                    "unchanged": counts.unchanged,
                }),
            )
        }
        Ok(Err(e)) => {
            let status = match e {
                Error::QueueFull { .. } | Error::SpoolFull { .. } => StatusCode::TOO_MANY_REQUESTS,
                Error::Closed | Error::Spool { .. } | Error::Config { .. } => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                _ => StatusCode::BAD_REQUEST,
            };
            reply::error(status, e.to_string())
        }
        Err(e) => reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("audience sync failed: {e}"),
        ),
    }
}

/// `%XX` escapes of a path segment decoded (audience names have spaces).
pub(crate) fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
