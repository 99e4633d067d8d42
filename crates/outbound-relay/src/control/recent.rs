//! A source's recent events on the admin API (the admin token or the source's own), for a
//! subscription's preview: `GET /admin/sources/{name}/recent-events` answers what was
//! captured so far, newest first, and starts or extends the capture
//! (`operations::recent`: its lease, ring and bounds). A sub-resource of the source, beside
//! its `health` and `activity`: the capture is the source's, whichever subscription is
//! previewed.

use super::auth::OwnSource;
use super::schema::Refusal;
use super::{answer, Api, Denied};
use crate::http::reply::Answer;
use crate::operations::recent::{Captured, MAX_EVENT_BYTES, RING};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use std::time::SystemTime;
use utoipa::ToSchema;

/// The events a source accepted while captured, newest first.
#[derive(Serialize, ToSchema)]
pub struct RecentEvents {
    pub source: String,
    /// When the capture ends unless asked again (RFC 3339): each ask extends it.
    pub capturing_until: Option<String>,
    /// Events kept at most (the last ones accepted).
    pub capacity: usize,
    /// An event's size over this is noted without its body.
    pub max_event_bytes: usize,
    pub events: Vec<RecentEvent>,
}

/// An event as the relay accepted it.
#[derive(Serialize, ToSchema)]
pub struct RecentEvent {
    /// When its request came (RFC 3339).
    pub received_at: Option<String>,
    /// Its `type`: `track`, `page`, `identify`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// A track's event name, a page's or screen's name.
    pub name: Option<String>,
    /// Its size in bytes, as JSON.
    pub size: usize,
    /// Over `max_event_bytes`: its `event` is not kept.
    pub too_large: bool,
    /// The event in Segment's shape as sent (a single call's `type` set, its batch's
    /// `context`, `integrations` and `sentAt` filled in, the write key left out): what a
    /// preview takes as its `event`. Absent when too large.
    #[schema(value_type = Option<Object>)]
    pub event: Option<serde_json::Value>,
}

fn time(t: SystemTime) -> Option<String> {
    outbound::timestamp::format(outbound::OffsetDateTime::from(t)).ok()
}

fn shown(c: &Captured) -> RecentEvent {
    let event = (c.text.as_deref()).and_then(|t| serde_json::from_str(t).ok());
    RecentEvent {
        received_at: outbound::timestamp::format(c.received_at).ok(),
        kind: c.kind.to_string(),
        name: c.name.clone(),
        size: c.size,
        too_large: c.text.is_none(),
        event,
    }
}

/// `GET /admin/sources/{name}/recent-events`: the events captured so far (at most 20,
/// newest first), and the capture on for 10 minutes from now.
#[utoipa::path(get, path = "/admin/sources/{name}/recent-events", operation_id = "list_recent_events", tag = "records",
    params(("name" = String, Path)),
    responses((status = 200, description = "The events captured so far; capture on", body = RecentEvents),
        (status = 404, description = "No such source", body = Refusal)))]
pub async fn list(State(api): State<Api>, own: OwnSource) -> Answer {
    let sources = api.sources();
    let Some(running) = sources.by_name(&own.name) else {
        let why = format!("{:?} is not a source", own.name);
        return Denied(StatusCode::NOT_FOUND, String::new(), why).answer();
    };
    let look = api.ops.recent.look(&running.spec.tenant, &running.slot);
    let recent = RecentEvents {
        source: running.name.clone(),
        capturing_until: time(look.until),
        capacity: RING,
        max_event_bytes: MAX_EVENT_BYTES,
        events: look.events.iter().map(|c| shown(c)).collect(),
    };
    answer(StatusCode::OK, &recent)
}
