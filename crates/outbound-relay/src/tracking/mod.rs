//! Segment's tracking API, as the SDKs speak it: `POST /v1/batch`, `/v1/import`, the single
//! calls (`/v1/identify|track|page|screen|group|alias`) and analytics.js's short paths
//! (`/v1/b|i|t|p|s|g|a`), plus the CORS preflight of each.
//!
//! A request goes: body (decoded, limited: `body.rs`) → its fields, in one pass linear in its
//! bytes (`fields.rs`) → write key (Basic-auth user, else `writeKey` in the body) → source →
//! origin check (`cors.rs`) → each event read by the core from the body's own text, once, and
//! enqueued on the source's client → one wait for the spool commit that holds them
//! (`Client::when_spooled`) → 200, naming rejected events within bounds (`rejected.rs`). The
//! relay decides no rule of an event: it hands the core a single call's path
//! (`Message::collect_call`) or its batch's `context`, `integrations` and `sentAt`
//! (`Message::collect_in_batch`) and the request's facts (when it came, the client's address:
//! the core adds Segment's server-side fields and keeps the rest), and maps the core's errors
//! to answers.
//!
//! Everything between the body and the commit wait is CPU work on the body. A body over
//! [`INLINE_BYTES`] is taken on the runtime's blocking pool: the workers go on answering
//! other requests (`/healthz`), and `request_timeout` answers 408 while it runs; work that
//! finds the deadline passed enqueues nothing.
//!
//! Events accepted and rejected (per source and reason) are counted here; requests and their
//! latency in `server/layers.rs`. While someone looks at a source's recent events, what it accepts
//! is copied for them (`capture.rs`, `operations::recent`); otherwise that costs a request
//! one relaxed load of its source's flag.

mod capture;
mod cors;
mod fields;
pub mod forwarded;
mod rejected;
pub mod settings;
pub mod telemetry;

pub use cors::{allow_for_any_source, preflight};

use crate::http::auth::basic_user;
use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::operations::metrics::reason;
use crate::operations::Ops;
use crate::sources::{Source, Sources};
use fields::{Batch, Body, Fields, ParseError};
use hyper::body::Bytes;
use hyper::header::HeaderMap;
use hyper::StatusCode;
use outbound::{
    BatchFields, Client, Error, Kind, Message, Received, MAX_BATCH_BYTES, MAX_BATCH_EVENTS,
};
use rejected::Rejections;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

/// Largest body read, before and after gzip: a batch over this is 413 (Segment's 500 KB).
pub const MAX_BODY_BYTES: usize = MAX_BATCH_BYTES;

/// Bodies up to this size are taken on the worker that read them (a few hundred µs of CPU at
/// most); larger ones on the blocking pool (up to ~20 ms for the worst 500 KB:
/// bench/relay/hostile_cost.py).
const INLINE_BYTES: usize = 64 * 1024;

/// What a tracking path takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `{"batch":[...]}`: `/v1/batch`, `/v1/import`, `/v1/b`.
    Batch,
    /// One event of this call.
    Single(Kind),
}

/// Every name of Segment's tracking paths, under `/v1/` (see [`endpoint`]).
pub const PATH_NAMES: [&str; 15] = [
    "batch", "import", "b", "identify", "i", "track", "t", "page", "p", "screen", "s", "group",
    "g", "alias", "a",
];

/// The endpoint of `path`, if it is one of the tracking API's.
pub fn endpoint(path: &str) -> Option<Endpoint> {
    let name = path.strip_prefix("/v1/")?.trim_end_matches('/');
    Some(match name {
        "batch" | "import" | "b" => Endpoint::Batch,
        "identify" | "i" => Endpoint::Single(Kind::Identify),
        "track" | "t" => Endpoint::Single(Kind::Track),
        "page" | "p" => Endpoint::Single(Kind::Page),
        "screen" | "s" => Endpoint::Single(Kind::Screen),
        "group" | "g" => Endpoint::Single(Kind::Group),
        "alias" | "a" => Endpoint::Single(Kind::Alias),
        _ => return None,
    })
}

/// A request, its body read: what its CPU work needs, owned (it may run on another thread).
struct Request {
    /// The relay's counters and log rate.
    ops: Ops,
    endpoint: Endpoint,
    bytes: Bytes,
    /// The Basic-auth user name, if any.
    key: Option<String>,
    origin: Option<String>,
    /// When it came and from whom: what the core adds to its events.
    received: Received,
    /// `request_timeout` from the request's head.
    deadline: Instant,
}

/// What a request's events came to, before the commit wait.
struct Enqueued {
    source: Arc<Source>,
    accepted: usize,
    /// A batch's refused events (`None` for a single call).
    rejected: Option<Rejections>,
    /// The commit that holds them (registered while the source's client was in use).
    commit: Option<tokio::sync::oneshot::Receiver<bool>>,
}

/// How a request's CPU work ended: its events enqueued (the answer waits for their commit),
/// its answer already, or its source in the middle of a settings change (wait, then again).
enum Handled {
    Enqueued(Enqueued),
    Answered(Answer),
    Changing(Arc<crate::sources::slot::Slot>),
}

/// `POST` to a tracking path.
pub async fn handle(
    ops: &Ops,
    sources: Arc<Sources>,
    endpoint: Endpoint,
    headers: &HeaderMap,
    body: axum::body::Body,
    received: Received,
    deadline: Instant,
) -> Answer {
    let origin = match cors::origin(headers) {
        Ok(origin) => origin.map(str::to_owned),
        Err(cors::Unreadable) => return cors::refused(&ops.log_rate),
    };
    let bytes = match body::read(headers, body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(e) => return reply::error(e.status, e.message),
    };
    let request = Request {
        ops: ops.clone(),
        endpoint,
        bytes,
        key: basic_user(headers),
        origin,
        received,
        deadline,
    };
    let origin = request.origin.clone();
    let request = Arc::new(request);
    let sources = &sources;
    let mut taken;
    loop {
        taken = if request.bytes.len() <= INLINE_BYTES {
            take(sources, &request)
        } else {
            let (sources, request) = (sources.clone(), request.clone());
            tokio::task::spawn_blocking(move || take(&sources, &request))
                .await
                .unwrap_or_else(|_| {
                    Handled::Answered(reply::error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the request could not be handled",
                    ))
                })
        };
        // A source whose settings change this moment: its new client comes in moments.
        let Handled::Changing(slot) = &taken else {
            break;
        };
        if !slot.ready(request.deadline).await {
            taken = Handled::Answered(reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the source is changing or was removed; retry",
            ));
            break;
        }
    }
    let mut answer = match taken {
        Handled::Enqueued(enqueued) => finish(ops, enqueued).await,
        Handled::Answered(answer) => return answer,
        Handled::Changing(_) => unreachable!("waited above"),
    };
    if let Some(origin) = origin {
        cors::allow_origin(answer.headers_mut(), &origin);
    }
    answer
}

/// The request's CPU work: its body read into fields, its write key and origin checked, its
/// events read by the core and enqueued; an answer when it ends there.
fn take(sources: &Sources, r: &Request) -> Handled {
    let Body {
        fields,
        batch: events,
        text,
    } = match fields::parse(&r.bytes, r.endpoint == Endpoint::Batch) {
        Ok(body) => body,
        Err(ParseError::NotJson(e)) => {
            return Handled::Answered(reply::error(
                StatusCode::BAD_REQUEST,
                format!("body is not valid JSON: {e}"),
            ))
        }
        Err(ParseError::NotObject) => {
            return Handled::Answered(reply::error(
                StatusCode::BAD_REQUEST,
                "body must be a JSON object",
            ))
        }
    };
    // The write key: Basic auth first (the server SDKs, today's analytics.js), else the
    // body's `writeKey` (analytics.js's `text/plain` requests).
    let key = r.key.clone().or_else(|| {
        match fields
            .get("writeKey")
            .map(|v| serde_json::from_str::<String>(v.get()))
        {
            Some(Ok(k)) if !k.is_empty() => Some(k),
            _ => None,
        }
    });
    let Some(key) = key else {
        return Handled::Answered(reply::error(
            StatusCode::UNAUTHORIZED,
            "missing write key (Basic auth user name or writeKey in the body)",
        ));
    };
    let Some(source) = sources.by_write_key(&key) else {
        if let Some(held) = r.ops.log_rate.allow("unknown_write_key", "") {
            tracing::info!(held_back = held, "request refused: unknown write key");
        }
        return Handled::Answered(reply::error(StatusCode::UNAUTHORIZED, "unknown write key"));
    };
    if let Some(origin) = &r.origin {
        if !source.allows_origin(origin) {
            if let Some(held) = r.ops.log_rate.allow("origin_not_allowed", &source.name) {
                tracing::info!(source = %source.name, origin, held_back = held, "request refused: origin not allowed");
            }
            return Handled::Answered(reply::error(
                StatusCode::FORBIDDEN,
                "origin not allowed for this source",
            ));
        }
    }
    let Some(using) = source.slot.enter() else {
        return Handled::Changing(source.slot.clone());
    };
    let client = &using.client;
    if !client.spool_ok() {
        // Acknowledged means stored: while the spool cannot be written (a Redis spool's
        // server unreachable, a failing disk) the SDK keeps its events and retries.
        if let Some(held) = r.ops.log_rate.allow("spool_not_writable", &source.name) {
            tracing::warn!(source = %source.name, held_back = held, "request refused: the spool cannot be written");
        }
        return Handled::Answered(reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the spool cannot be written now; retry later",
        ));
    }
    if Instant::now() >= r.deadline {
        // `request_timeout` has answered 408 already: enqueue nothing, the SDK sends again.
        return Handled::Answered(reply::error(
            StatusCode::REQUEST_TIMEOUT,
            "the request took longer than request_timeout",
        ));
    }
    let capturing = source.slot.capturing();
    match r.endpoint {
        Endpoint::Single(kind) => single(
            &r.ops,
            source,
            client,
            (kind, text, &r.bytes, fields),
            &r.received,
            capturing,
        ),
        Endpoint::Batch => batch(
            &r.ops,
            source,
            client,
            fields,
            events,
            &r.received,
            capturing,
        ),
    }
}

/// The answer once the events taken are committed, with a batch's rejected events.
async fn finish(ops: &Ops, t: Enqueued) -> Answer {
    let answer = durable(ops, &t.source, t.accepted, t.commit).await;
    let Some(rejected) = t.rejected else {
        return answer;
    };
    rejected.count_in_metrics(&ops.metrics, &t.source.name);
    rejected.log(&ops.log_rate, &t.source.name, t.accepted);
    if answer.status() != StatusCode::OK || rejected.is_empty() {
        return answer;
    }
    reply::json(StatusCode::OK, &rejected.answer(t.accepted))
}

/// The answer to an enqueue error that is about the relay, not the events: all `events` of the
/// request are refused (and counted so).
fn overloaded(ops: &Ops, source: &Source, e: &Error, events: usize) -> Option<Answer> {
    let status = match e {
        Error::QueueFull { .. } | Error::SpoolFull { .. } => StatusCode::TOO_MANY_REQUESTS,
        Error::Closed | Error::Spool { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => return None,
    };
    ops.metrics.rejected(&source.name, reason(e), events);
    if let Some(held) = ops.log_rate.allow("cannot_take_more", &source.name) {
        tracing::warn!(source = %source.name, held_back = held, "cannot take more: {e}");
    }
    Some(reply::error(status, e.to_string()))
}

/// `event`: its call (the path's), the body (as text when `fields::parse` checked it), its
/// fields (for a capture).
fn single(
    ops: &Ops,
    source: &Arc<Source>,
    client: &Client,
    (kind, text, body, fields): (Kind, Option<&str>, &[u8], Fields<'_>),
    received: &Received,
    capturing: bool,
) -> Handled {
    // Its fields were read from it, so it is UTF-8: borrowed, not copied.
    let text = text.map_or_else(|| String::from_utf8_lossy(body), Cow::Borrowed);
    let result = Message::collect_call(&text, kind, received).and_then(|msg| {
        client.enqueue_with(&msg)?;
        Ok(capturing.then(|| capture::captured_call(fields, kind, &msg, received)))
    });
    let e = match result {
        Ok(copy) => {
            if let Some(copy) = copy {
                ops.recent.record(&source.spec.tenant, [copy]);
            }
            return Handled::Enqueued(Enqueued {
                source: source.clone(),
                accepted: 1,
                rejected: None,
                commit: Some(commit_of(client)),
            });
        }
        Err(e) => e,
    };
    if let Some(answer) = overloaded(ops, source, &e, 1) {
        return Handled::Answered(answer);
    }
    ops.metrics.rejected(&source.name, reason(&e), 1);
    let why = rejected::bounded(&e);
    if let Some(held) = ops.log_rate.allow("event_rejected", &source.name) {
        tracing::info!(source = %source.name, reason = %why, held_back = held, "event rejected");
    }
    let status = match e {
        Error::MessageTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    Handled::Answered(reply::error(status, why))
}

fn batch(
    ops: &Ops,
    source: &Arc<Source>,
    client: &Client,
    mut obj: Fields<'_>,
    batch: Option<Batch<'_>>,
    received: &Received,
    capturing: bool,
) -> Handled {
    let Some(batch) = batch else {
        return Handled::Answered(reply::error(
            StatusCode::BAD_REQUEST,
            "body must be an object with a \"batch\" array",
        ));
    };
    // Segment's batch-level context, integrations and sentAt apply to events that have none.
    let shared: Vec<(&'static str, Cow<'_, RawValue>)> = ["context", "integrations", "sentAt"]
        .into_iter()
        .filter_map(|k| obj.remove(k).map(|v| (k, v)))
        .collect();
    let text_of = |key| shared.iter().find(|(k, _)| *k == key).map(|(_, v)| v.get());
    let fields = BatchFields::read(
        text_of("context"),
        text_of("integrations"),
        text_of("sentAt"),
        received,
    );
    let mut rejected = Rejections::default();
    for &index in &batch.not_objects {
        rejected.add(index, "not_an_object", &"an event must be a JSON object");
    }
    if batch.total > MAX_BATCH_EVENTS {
        rejected.add_all(
            MAX_BATCH_EVENTS..batch.total,
            "batch_limit",
            &format_args!("over Segment's limit of {MAX_BATCH_EVENTS} events in a batch"),
        );
    }
    // Each event is read as the core takes it, and dropped once encoded (see
    // `enqueue_each`): the objects among them, with their places in the batch.
    let (mut accepted, mut read, mut read_ok) = (0, 0, 0);
    let indexes: Vec<usize> = batch.events.iter().map(|(index, _)| *index).collect();
    // While captured, each event's copy in its place (none for one the core refused).
    let mut copies = Vec::new();
    let objects = batch.events.into_iter().map(|(_, event)| {
        let message = Message::collect_in_batch(event.get(), &fields, received);
        read += 1;
        read_ok += usize::from(message.is_ok());
        if capturing {
            let copy = message.as_ref().ok();
            copies.push(copy.map(|m| capture::captured_in_batch(event, &shared, m, received)));
        }
        message
    });
    // All or none: a 429 must not leave part of the batch queued, to be delivered twice
    // when the SDK sends the whole batch again.
    match client.enqueue_each(objects) {
        Ok(answers) => {
            let mut kept = Vec::new();
            for (at, (index, answer)) in indexes.into_iter().zip(answers).enumerate() {
                match answer {
                    Ok(_) => {
                        accepted += 1;
                        if capturing {
                            kept.extend(copies.get_mut(at).and_then(Option::take));
                        }
                    }
                    Err(e) => rejected.add(index, reason(&e), &e),
                }
            }
            if capturing {
                ops.recent.record(&source.spec.tenant, kept);
            }
        }
        Err(e) => {
            rejected.count_in_metrics(&ops.metrics, &source.name);
            // A closed client refuses before it reads any event: then every object counts.
            let refused = if read == 0 { indexes.len() } else { read_ok };
            return Handled::Answered(
                overloaded(ops, source, &e, refused).unwrap_or_else(|| {
                    reply::error(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
                }),
            );
        }
    }
    Handled::Enqueued(Enqueued {
        source: source.clone(),
        accepted,
        rejected: Some(rejected),
        commit: (accepted > 0).then(|| commit_of(client)),
    })
}

/// 200 once the `accepted` events just enqueued are committed to the source's spool (at
/// once when none were, or without a spool); 503 when the commit failed.
async fn durable(
    ops: &Ops,
    source: &Arc<Source>,
    accepted: usize,
    commit: Option<tokio::sync::oneshot::Receiver<bool>>,
) -> Answer {
    let committed = match commit {
        Some(rx) if accepted > 0 => rx.await.unwrap_or(false),
        _ => true,
    };
    if !committed {
        if let Some(held) = ops.log_rate.allow("commit_failed", &source.name) {
            tracing::warn!(source = %source.name, held_back = held, "spool commit failed: answered 503");
        }
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the events could not be committed to disk; send them again",
        );
    }
    ops.metrics.accepted(&source.name, accepted);
    reply::ok()
}

/// The commit that holds everything `client` accepted so far, awaited without holding a
/// worker thread.
fn commit_of(client: &Client) -> tokio::sync::oneshot::Receiver<bool> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    client.when_spooled(move |ok| {
        let _ = tx.send(ok);
    });
    rx
}
