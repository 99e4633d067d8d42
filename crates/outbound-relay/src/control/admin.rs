//! What the admin API sends through the sources (admin token only):
//!
//! - `POST /admin/deletions` `{"user_id":"u1","sources":["web"]}`: a core `delete` to each
//!   named source (every source with webhooks when `sources` is left out), answered once
//!   each is committed to its spool;
//! - `PUT /admin/sources/{name}/audiences/{audience}` `{"members":["u1",...]}`: the core's
//!   `AudienceSync` for that source (state in `data_dir/audiences/<name>.db`). The state is
//!   saved only after the identifies it emitted are committed to the spool, so a crash
//!   between the two sends them again (never loses them) and a restart after it sends
//!   nothing twice.
//!
//! The routes and who may call them are `mod.rs`'s.

use super::audit::Record;
use super::auth::Admin;
use super::schema::{Audience, AudienceSynced, AuditDetail, Deletion, DeletionSent, Refusal};
use super::{answer, read_json, refusal, Api, Caller};
use crate::http::reply::{self, Answer};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use outbound::{Error, Message};
use serde_json::json;

/// Largest body of an audience's members (only the admin sends one).
const MAX_AUDIENCE_BODY: usize = 64 * 1024 * 1024;
/// Largest body of a deletion.
const MAX_DELETION_BODY: usize = 64 * 1024;

/// `POST /admin/deletions` (the admin token): a user's deletion to the sources' webhooks,
/// answered once committed to each source's spool.
#[utoipa::path(post, path = "/admin/deletions", operation_id = "delete_user", tag = "deletions", request_body = Deletion,
    responses((status = 200, description = "Committed to each source's spool", body = DeletionSent),
        (status = 400, description = "A bad user id or source", body = Refusal)))]
pub async fn deletions(
    State(api): State<Api>,
    _: Admin,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let asked: Deletion = match read_json(&headers, body, MAX_DELETION_BODY).await {
        Ok(d) => d,
        Err(a) => return a,
    };
    let sources = api.sources();
    if asked.user_id.is_empty() {
        return refusal(StatusCode::BAD_REQUEST, "user_id", "must not be empty");
    }
    let user_id = asked.user_id;
    let targets = match asked.sources {
        None => sources
            .iter()
            .filter(|s| s.has_webhooks)
            .cloned()
            .collect::<Vec<_>>(),
        Some(names) => {
            let mut targets = Vec::new();
            for (i, n) in names.iter().enumerate() {
                let field = format!("sources[{i}]");
                let Some(source) = sources.by_name(n) else {
                    return refusal(
                        StatusCode::BAD_REQUEST,
                        &field,
                        &format!("{n:?} is not a source"),
                    );
                };
                if !source.has_webhooks {
                    let why = format!("{n:?} has no webhooks to notify");
                    return refusal(StatusCode::BAD_REQUEST, &field, &why);
                }
                targets.push(source.clone());
            }
            targets
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
    let names: Vec<String> = sent.iter().map(|(s, _)| s.name.clone()).collect();
    tracing::info!(sources = ?names, "deletion sent");
    // One entry per source: each source's own trail shows the deletion sent to it.
    for (source, id) in &sent {
        let detail = AuditDetail {
            user_id: Some(user_id.clone()),
            message_id: Some(id.clone()),
            ..AuditDetail::default()
        };
        let key = Some((source.name.as_str(), source.spec.id.as_str()));
        api.audit(&Caller::Admin, Record::new("user.deleted", key, detail))
            .await;
    }
    let done = DeletionSent {
        success: true,
        sources: names,
        message_ids: (sent.iter())
            .map(|(s, id)| (s.name.clone(), id.clone()))
            .collect(),
    };
    answer(StatusCode::OK, &done)
}

/// `PUT /admin/sources/{name}/audiences/{audience}` (the admin token): the audience's members
/// now; an identify for each change of membership.
#[utoipa::path(put, path = "/admin/sources/{name}/audiences/{audience}", operation_id = "sync_audience", tag = "audiences",
    params(("name" = String, Path), ("audience" = String, Path)), request_body = Audience,
    responses((status = 200, description = "Synced", body = AudienceSynced),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn audiences(
    State(api): State<Api>,
    _: Admin,
    Path(params): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let (name, audience) = params;
    let Some(source) = api.sources().by_name(&name).cloned() else {
        return reply::error(StatusCode::NOT_FOUND, format!("{name:?} is not a source"));
    };
    let body: serde_json::Value = match read_json(&headers, body, MAX_AUDIENCE_BODY).await {
        Ok(v) => v,
        Err(a) => return a,
    };
    // The core reads the member list (strings or integers) and names a bad entry; a list of
    // up to 64 MiB is work for a blocking thread, not a runtime worker.
    let members = tokio::task::spawn_blocking(move || {
        let members = body.get("members")?;
        Some(outbound::parse_members("members", &members.to_string()))
    })
    .await;
    let members = match members {
        Ok(Some(Ok(m))) => m,
        Ok(Some(Err(e))) => return reply::error(StatusCode::BAD_REQUEST, e.to_string()),
        Ok(None) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "members",
                "an array of user ids is required",
            )
        }
        Err(e) => return reply::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let audience = audience.to_string();
    let audience_name = audience.clone();
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
            let detail = AuditDetail {
                audience: Some(audience_name.clone()),
                joined: Some(counts.joined),
                left: Some(counts.left),
                ..AuditDetail::default()
            };
            let (source, id) = api.source_key(&name);
            let record = Record::new("audience.synced", Some((&source, &id)), detail);
            api.audit(&Caller::Admin, record).await;
            let synced = AudienceSynced {
                success: true,
                source: name,
                trait_key: key,
                joined: counts.joined,
                left: counts.left,
                unchanged: counts.unchanged,
            };
            answer(StatusCode::OK, &synced)
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
