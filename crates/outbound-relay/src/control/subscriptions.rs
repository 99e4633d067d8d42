//! A source's subscriptions on the admin API (the admin token or the source's own): each
//! one's state, its records and dead letters (the routes of `records.rs`, on the
//! subscription's client), and a preview of what it would send for an event. The core keeps
//! and decides everything; this module maps it to HTTP and JSON.
//!
//! - `GET  /admin/sources/{name}/subscriptions/{subscription}`: its counts and health;
//! - `GET  .../subscriptions/{subscription}/attempts`: its last 100 attempts;
//! - `GET  .../subscriptions/{subscription}/dead-letters`, `GET | DELETE .../{message_id}`,
//!   `POST .../{message_id}/replay`, `POST .../dead-letters/replay`,
//!   `GET .../dead-letters/replays/{id}`: as the source's own;
//! - `POST /admin/sources/{name}/subscriptions/preview` `{"subscription", "event"}` and
//!   `POST .../subscriptions/{subscription}/preview` `{"event"}`: whether it matches, and
//!   the request it would make. Nothing is sent.

use super::auth::OwnSource;
use super::records::{self, health_of, source};
use super::schema::{self, PreviewAsk, Refusal, ReplayOne, ReplayRequest};
use super::{answer, read_json, refusal, Api};
use crate::http::reply::Answer;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use outbound::subscription::Subscription;

/// Largest body of a preview: an event is at most 32 KB, its settings a few.
const MAX_PREVIEW: usize = 256 * 1024;

/// `GET /admin/sources/{name}/subscriptions/{subscription}`: its counts and its endpoint's
/// health.
#[utoipa::path(get, path = "/admin/sources/{name}/subscriptions/{subscription}", operation_id = "get_subscription", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path)),
    responses((status = 200, description = "Its state", body = schema::SubscriptionState),
        (status = 404, description = "No such source or subscription", body = Refusal)))]
pub async fn state(State(api): State<Api>, own: OwnSource) -> Answer {
    let source = match source(&api, &own) {
        Ok(s) => s,
        Err(denied) => return denied.answer(),
    };
    let client = source.client();
    let stats = client.stats();
    let Some(health) = client.webhook_health().first().map(health_of) else {
        return refusal(
            StatusCode::NOT_FOUND,
            "subscription",
            "no such subscription",
        );
    };
    let state = schema::SubscriptionState {
        source: source.name.clone(),
        subscription: own.param("subscription"),
        enabled: client.config().webhooks.first().is_some_and(|w| w.enabled),
        accepted: stats.accepted + stats.resumed,
        delivered: stats.delivered,
        failed: stats.failed,
        waiting: stats.queued + stats.in_flight,
        retries: stats.retries,
        health,
    };
    answer(StatusCode::OK, &state)
}

/// `GET .../subscriptions/{subscription}/attempts`: its kept attempts, newest first, chosen
/// as a webhook's are.
#[utoipa::path(get, path = "/admin/sources/{name}/subscriptions/{subscription}/attempts", operation_id = "list_subscription_attempts", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path), records::AttemptsQuery),
    responses((status = 200, description = "Its attempts", body = schema::Attempts),
        (status = 400, description = "A bad parameter", body = Refusal),
        (status = 404, description = "No such source or subscription", body = Refusal)))]
pub async fn attempts(api: State<Api>, mut own: OwnSource, query: RawQuery) -> Answer {
    // A subscription's client has one endpoint: its webhook 0.
    own.params.insert("index".into(), "0".into());
    records::attempts(api, own, query).await
}

/// `GET .../subscriptions/{subscription}/dead-letters`: a page of its dead letters.
#[utoipa::path(get, path = "/admin/sources/{name}/subscriptions/{subscription}/dead-letters", operation_id = "list_subscription_dead_letters", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path), records::PageQuery),
    responses((status = 200, description = "A page", body = schema::DeadLetterPage),
        (status = 400, description = "A bad parameter", body = Refusal),
        (status = 404, description = "No such source or subscription, or no dead letters kept", body = Refusal)))]
pub async fn dead_letters(api: State<Api>, own: OwnSource, query: RawQuery) -> Answer {
    records::dead_letters(api, own, query).await
}

/// `GET .../subscriptions/{subscription}/dead-letters/{message_id}`.
#[utoipa::path(get, path = "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/{message_id}", operation_id = "get_subscription_dead_letter", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path), ("message_id" = String, Path)),
    responses((status = 200, description = "The dead letter", body = schema::DeadLetter),
        (status = 404, description = "No such dead letter", body = Refusal)))]
pub async fn dead_letter(api: State<Api>, own: OwnSource) -> Answer {
    records::dead_letter(api, own).await
}

/// `DELETE .../subscriptions/{subscription}/dead-letters/{message_id}`.
#[utoipa::path(delete, path = "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/{message_id}", operation_id = "delete_subscription_dead_letter", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path), ("message_id" = String, Path)),
    responses((status = 200, description = "Deleted", body = schema::Done),
        (status = 404, description = "No such dead letter", body = Refusal)))]
pub async fn delete_dead_letter(api: State<Api>, own: OwnSource) -> Answer {
    records::delete_dead_letter(api, own).await
}

/// `POST .../subscriptions/{subscription}/dead-letters/{message_id}/replay`: sent to the
/// subscription again.
#[utoipa::path(post, path = "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/{message_id}/replay", operation_id = "replay_subscription_dead_letter", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path), ("message_id" = String, Path)), request_body = ReplayOne,
    responses((status = 202, description = "Replaying; its progress", body = schema::ReplayProgress),
        (status = 404, description = "No such dead letter", body = Refusal),
        (status = 409, description = "Being replayed already", body = Refusal)))]
pub async fn replay_one(
    api: State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    records::replay_one(api, own, headers, body).await
}

/// `POST .../subscriptions/{subscription}/dead-letters/replay`: every dead letter of a
/// range of time again, in the background.
#[utoipa::path(post, path = "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/replay", operation_id = "replay_subscription_dead_letters", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path)), request_body = ReplayRequest,
    responses((status = 202, description = "Started; its progress", body = schema::ReplayProgress),
        (status = 200, description = "A dry run: how many it would send", body = schema::ReplayCount),
        (status = 400, description = "A bad time", body = Refusal),
        (status = 404, description = "No such source or subscription", body = Refusal)))]
pub async fn replay_range(
    api: State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    records::replay_range(api, own, headers, body).await
}

/// `GET .../subscriptions/{subscription}/dead-letters/replays/{id}`: a replay's progress.
#[utoipa::path(get, path = "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/replays/{id}", operation_id = "get_subscription_replay", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path), ("id" = u64, Path)),
    responses((status = 200, description = "Its progress", body = schema::ReplayProgress),
        (status = 404, description = "No such replay", body = Refusal)))]
pub async fn replay_progress(api: State<Api>, own: OwnSource) -> Answer {
    records::replay_progress(api, own).await
}

/// `POST /admin/sources/{name}/subscriptions/preview`: what the given settings would send
/// for the event (nothing is saved or sent; their `auth` and `tls` are not read).
#[utoipa::path(post, path = "/admin/sources/{name}/subscriptions/preview", operation_id = "preview_subscription", tag = "subscriptions",
    params(("name" = String, Path)), request_body = PreviewAsk,
    responses((status = 200, description = "Whether it matches, and the request", body = schema::Preview),
        (status = 400, description = "Settings refused, named by `field` (`subscription.trigger`, ...)", body = Refusal),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn preview(
    State(api): State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let ask = match asked(&api, &own, headers, body).await {
        Ok(a) => a,
        Err(a) => return a,
    };
    let Some(settings) = &ask.subscription else {
        return refusal(StatusCode::BAD_REQUEST, "subscription", "is required here");
    };
    // Auth and TLS change nothing a preview shows, and their secrets may come back
    // write-only (`{"has_value": true}`, as GET shows them): not read.
    let mut settings = settings.clone();
    if let Some(o) = settings.as_object_mut() {
        o.remove("auth");
        o.remove("tls");
    }
    match Subscription::from_json(&settings) {
        Ok(sub) => answer(StatusCode::OK, &preview_of(&sub, &ask.event)),
        Err(outbound::Error::Config { setting, reason }) => refusal(
            StatusCode::BAD_REQUEST,
            &format!("subscription.{setting}"),
            &reason,
        ),
        Err(e) => refusal(StatusCode::BAD_REQUEST, "subscription", &e.to_string()),
    }
}

/// `POST .../subscriptions/{subscription}/preview`: what the saved subscription would send
/// for the event.
#[utoipa::path(post, path = "/admin/sources/{name}/subscriptions/{subscription}/preview", operation_id = "preview_saved_subscription", tag = "subscriptions",
    params(("name" = String, Path), ("subscription" = String, Path)), request_body = PreviewAsk,
    responses((status = 200, description = "Whether it matches, and the request", body = schema::Preview),
        (status = 404, description = "No such source or subscription", body = Refusal)))]
pub async fn preview_saved(
    State(api): State<Api>,
    own: OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let ask = match asked(&api, &own, headers, body).await {
        Ok(a) => a,
        Err(a) => return a,
    };
    match source_settings(&api, &own, &own.param("subscription")) {
        Some(sub) => answer(StatusCode::OK, &preview_of(&sub, &ask.event)),
        None => refusal(
            StatusCode::NOT_FOUND,
            "subscription",
            "no such subscription",
        ),
    }
}

/// A preview's ask, once the path's source (and subscription) is known to the caller.
async fn asked(
    api: &Api,
    own: &OwnSource,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<PreviewAsk, Answer> {
    source(api, own).map_err(|denied| denied.answer())?;
    read_json(&headers, body, MAX_PREVIEW).await
}

/// Subscription `name` of the source the path names, as configured.
fn source_settings(api: &Api, own: &OwnSource, name: &str) -> Option<Subscription> {
    let sources = api.sources();
    let running = sources.by_name(&own.name)?;
    let client = running.slot.current()?;
    let found = client
        .config()
        .subscriptions
        .iter()
        .find(|s| s.name() == name);
    found.cloned()
}

fn preview_of(sub: &Subscription, event: &serde_json::Value) -> schema::Preview {
    match sub.preview(event) {
        Ok(None) => schema::Preview {
            matches: false,
            request: None,
            error: None,
        },
        Ok(Some(p)) => schema::Preview {
            matches: true,
            request: Some(schema::PreviewRequest {
                method: p.method.as_str().into(),
                url: p.url,
                headers: p.headers,
                body: p
                    .body
                    .and_then(|b| outbound::canonical_json::to_string(&b).ok()),
                signed: p.signed,
            }),
            error: None,
        },
        Err(e) => schema::Preview {
            matches: !matches!(e, outbound::subscription::EventError::Trigger(_)),
            request: None,
            error: Some(e.to_string()),
        },
    }
}
