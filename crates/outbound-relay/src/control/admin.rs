//! What the admin API sends through the sources (admin token only):
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
//! The routes and who may call them are `mod.rs`'s.

use crate::http::reply::{self, Answer};
use crate::sources::Sources;
use hyper::StatusCode;
use outbound::{Error, Message};
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn deletions(sources: &Arc<Sources>, body: Value) -> Answer {
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
    let mut commits = Vec::new();
    for source in &targets {
        // A source whose settings are changing is waited for (moments).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let Some(u) = source.slot.enter_blocking(deadline) else {
            return reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{}: changing; retry", source.name),
            );
        };
        match u.client.enqueue(&Message::delete(user_id.as_str())) {
            Ok(id) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                u.client.when_spooled(move |ok| {
                    let _ = tx.send(ok);
                });
                commits.push(rx);
                sent.push((source.clone(), id))
            }
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
    for ((source, _), commit) in sent.iter().zip(commits) {
        if !commit.await.unwrap_or(false) {
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

pub async fn audiences(sources: &Arc<Sources>, name: &str, audience: &str, body: Value) -> Answer {
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
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let Some(u) = source.slot.enter_blocking(deadline) else {
            return Err(Error::Closed);
        };
        let client = u.client.clone();

        source.slot.with_audiences(|sync| {
            let pending = sync.emit_audience(&client, &audience, &members)?;
            let (tx, rx) = std::sync::mpsc::channel();
            client.when_spooled(move |ok| {
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
