//! Segment's tracking API, as the SDKs speak it: `POST /v1/batch`, `/v1/import`, the single
//! calls (`/v1/identify|track|page|screen|group|alias`) and analytics.js's short paths
//! (`/v1/b|i|t|p|s|g|a`), plus the CORS preflight of each.
//!
//! A request goes: body (decoded, limited) → JSON → write key (Basic-auth user, else
//! `writeKey` in the body) → source → origin check → each event read by the core
//! (`Message::from_json_text`) and enqueued on the source's client → one wait for the spool
//! commit that holds them (`Client::when_spooled`) → 200. The relay decides no rule of an
//! event: it takes off the SDKs' transport fields ([`TRANSPORT_KEYS`]) and `null` fields,
//! sets `type` from a
//! single call's path, fills batch-level `context`/`integrations` into events without them,
//! and maps the core's errors to answers.
//!
//! Events accepted and rejected (per source and reason) are counted here, one
//! `crate::metrics` call where each is decided; requests and their latency in `server.rs`.

use crate::auth::basic_user;
use crate::body;
use crate::reply::{self, Answer};
use crate::sources::{Source, Sources};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, ORIGIN};
use hyper::StatusCode;
use outbound::{Error, Message, MAX_BATCH_BYTES};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Fields an SDK adds for the transport, not the event; taken off before the core reads
/// the event (the core refuses fields it does not know): analytics.js's `writeKey`,
/// `sentAt` and `_metadata`, analytics-node's `_metadata`, the mobile SDKs' `_metadata`,
/// and `receivedAt`/`channel`/`version`/`originalTimestamp` that some senders copy from
/// events they received.
pub const TRANSPORT_KEYS: [&str; 7] = [
    "writeKey",
    "sentAt",
    "_metadata",
    "receivedAt",
    "channel",
    "version",
    "originalTimestamp",
];

/// Largest body read, before and after gzip: a batch over this is 413 (Segment's 500 KB).
pub const MAX_BODY_BYTES: usize = MAX_BATCH_BYTES;

/// What a tracking path takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `{"batch":[...]}`: `/v1/batch`, `/v1/import`, `/v1/b`.
    Batch,
    /// One event of this type.
    Single(&'static str),
}

/// The endpoint of `path`, if it is one of the tracking API's.
pub fn endpoint(path: &str) -> Option<Endpoint> {
    let name = path.strip_prefix("/v1/")?.trim_end_matches('/');
    Some(match name {
        "batch" | "import" | "b" => Endpoint::Batch,
        "identify" | "i" => Endpoint::Single("identify"),
        "track" | "t" => Endpoint::Single("track"),
        "page" | "p" => Endpoint::Single("page"),
        "screen" | "s" => Endpoint::Single("screen"),
        "group" | "g" => Endpoint::Single("group"),
        "alias" | "a" => Endpoint::Single("alias"),
        _ => return None,
    })
}

/// The CORS preflight (`OPTIONS`): no write key yet, so any source's `allowed_origins`
/// will do; the POST is checked against its own source.
pub fn preflight(sources: &Sources, headers: &HeaderMap) -> Answer {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return reply::empty(StatusCode::NO_CONTENT);
    };
    if !sources.any_allows_origin(origin) {
        tracing::info!(origin, "CORS preflight refused: origin not allowed");
        return reply::error(StatusCode::FORBIDDEN, "origin not allowed");
    }
    let mut r = reply::empty(StatusCode::NO_CONTENT);
    let h = r.headers_mut();
    allow_origin(h, origin);
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("POST, OPTIONS"),
    );
    // analytics.js sends Content-Type, Authorization and X-Retry-Count; allow what is asked.
    let asked = headers
        .get("access-control-request-headers")
        .cloned()
        .unwrap_or(HeaderValue::from_static(
            "Content-Type, Authorization, X-Retry-Count, Content-Encoding",
        ));
    h.insert("access-control-allow-headers", asked);
    h.insert("access-control-max-age", HeaderValue::from_static("86400"));
    r
}

fn allow_origin(h: &mut HeaderMap, origin: &str) {
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert("access-control-allow-origin", v);
    }
    h.insert("vary", HeaderValue::from_static("Origin"));
}

/// One event refused by the core (or by the relay's own shape checks).
struct Rejected {
    index: usize,
    reason: String,
    too_large: bool,
}

/// `POST` to a tracking path.
pub async fn handle(
    sources: &Sources,
    endpoint: Endpoint,
    headers: &HeaderMap,
    body: Incoming,
) -> Answer {
    let bytes = match body::read(headers, body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(e) => return reply::error(e.status, e.message),
    };
    // The body is read once into its top-level fields, each value left as its text: an event
    // goes to the core as text (`Message::from_json_text`), never through a `Value` tree.
    // A batch's events are read in the same pass, each into its own fields.
    let parsed = match endpoint {
        Endpoint::Batch => parse_object(&bytes, true).or_else(|_| parse_in_passes(&bytes)),
        Endpoint::Single(_) => parse_object(&bytes, false),
    };
    let (mut obj, events) = match parsed {
        Ok(body) => body,
        Err(ParseError::NotJson(e)) => {
            return reply::error(
                StatusCode::BAD_REQUEST,
                format!("body is not valid JSON: {e}"),
            )
        }
        Err(ParseError::NotObject) => {
            return reply::error(StatusCode::BAD_REQUEST, "body must be a JSON object")
        }
    };
    // The write key: Basic auth first (the server SDKs, today's analytics.js), else the
    // body's `writeKey` (analytics.js's `text/plain` requests).
    let key = basic_user(headers).or_else(|| {
        match obj
            .get("writeKey")
            .map(|v| serde_json::from_str::<String>(v.get()))
        {
            Some(Ok(k)) if !k.is_empty() => Some(k),
            _ => None,
        }
    });
    let Some(key) = key else {
        return reply::error(
            StatusCode::UNAUTHORIZED,
            "missing write key (Basic auth user name or writeKey in the body)",
        );
    };
    let Some(source) = sources.by_write_key(&key) else {
        tracing::info!("request refused: unknown write key");
        return reply::error(StatusCode::UNAUTHORIZED, "unknown write key");
    };
    let origin = headers.get(ORIGIN).and_then(|v| v.to_str().ok());
    if let Some(origin) = origin {
        if !source.allows_origin(origin) {
            tracing::info!(source = %source.name, origin, "request refused: origin not allowed");
            return reply::error(StatusCode::FORBIDDEN, "origin not allowed for this source");
        }
    }
    if !source.client.spool_ok() {
        // Acknowledged means stored: while the spool cannot be written (a Redis spool's
        // server unreachable, a failing disk) the SDK keeps its events and retries.
        tracing::warn!(source = %source.name, "request refused: the spool cannot be written");
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the spool cannot be written now; retry later",
        );
    }
    let mut answer = match endpoint {
        Endpoint::Single(kind) => {
            obj.set("type", type_value(kind));
            single(source, obj).await
        }
        Endpoint::Batch => batch(source, obj, events).await,
    };
    if let Some(origin) = origin {
        allow_origin(answer.headers_mut(), origin);
    }
    answer
}

/// Takes off the transport fields and reads the event with the core. A top-level field
/// that is `null` is absent, as in Segment's API (analytics-python sends
/// `"anonymousId": null`, `"name": null`, ...). The event is rebuilt as text from its
/// fields' own text (nested values are copied, not re-parsed) for `Message::from_json_text`.
/// `text` is a buffer for the rebuilt event, kept between the events of a batch.
fn read_event(
    event: &Fields<'_>,
    text: &mut String,
) -> Result<Message<outbound::JsonObject>, Error> {
    text.clear();
    text.reserve(event.text_len() + 16);
    text.push('{');
    for (k, v) in &event.0 {
        if TRANSPORT_KEYS.contains(&k.as_ref()) || v.get() == "null" {
            continue;
        }
        if k == "type" && is_delete(v.get()) {
            // Deletions are the operator's (the admin API), never a tracking client's.
            return Err(Error::InvalidField {
                field: "type".into(),
                reason: "delete is not accepted here; deletions go through the admin API".into(),
            });
        }
        if text.len() > 1 {
            text.push(',');
        }
        push_key(text, k);
        text.push(':');
        text.push_str(v.get());
    }
    text.push('}');
    Message::from_json_text(text)
}

/// Whether a `type` value's text is the string `delete` (borrowed when it has no escape,
/// the usual case: no `String` per event).
fn is_delete(raw: &str) -> bool {
    match serde_json::from_str::<&str>(raw) {
        Ok(t) => t == "delete",
        Err(_) => serde_json::from_str::<String>(raw).is_ok_and(|t| t == "delete"),
    }
}

/// `"key"`, escaped as JSON.
fn push_key(text: &mut String, key: &str) {
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        text.push('"');
        text.push_str(key);
        text.push('"');
    } else {
        text.push_str(&Value::String(key.to_string()).to_string());
    }
}

/// A JSON object's top-level fields in order, each value as its own text (a later duplicate
/// key replaces the earlier value in its place, as `serde_json::Map` does).
struct Fields<'a>(Vec<(Cow<'a, str>, Cow<'a, RawValue>)>);

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    fn contains(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    fn remove(&mut self, key: &str) -> Option<Cow<'a, RawValue>> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    fn set(&mut self, key: &'static str, value: Cow<'a, RawValue>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((Cow::Borrowed(key), value)),
        }
    }

    fn text_len(&self) -> usize {
        self.0
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum()
    }
}

/// Why a body (or an event) is not a JSON object.
enum ParseError {
    NotJson(serde_json::Error),
    NotObject,
}

/// A batch's `batch`: its events, each an object's fields or `None` (not an object: refused
/// alone); `None` when it is not an array.
type Events<'a> = Option<Vec<Option<Fields<'a>>>>;

/// Reads an object into its fields; with `batch`, the value of its `batch` key is read as
/// [`Events`] (kept apart from the fields) instead of kept as text.
struct FieldsVisitor {
    batch: bool,
}

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = (Fields<'de>, Events<'de>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Grown as read: a batch's events are all held at once, and a hostile batch of
        // 100,000 tiny objects must not take room for 12 fields each.
        let mut fields: Vec<(Cow<'de, str>, Cow<'de, RawValue>)> = Vec::new();
        let mut events = None;
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            if self.batch && k == "batch" {
                // A later `batch` replaces an earlier one, as any other repeated key.
                events = map.next_value::<EventsOf<'de>>()?.0;
                continue;
            }
            let v: &'de RawValue = map.next_value()?;
            match fields.iter_mut().find(|(have, _)| *have == k) {
                Some((_, old)) => *old = Cow::Borrowed(v),
                None => fields.push((k, Cow::Borrowed(v))),
            }
        }
        Ok((Fields(fields), events))
    }
}

/// Any JSON value, read as [`Events`]: an array's elements read as events, anything else
/// consumed and `None`.
#[derive(Default)]
struct EventsOf<'a>(Events<'a>);

/// One element of a batch: an object's fields, or anything else consumed and `None`.
#[derive(Default)]
struct EventOf<'a>(Option<Fields<'a>>);

/// What is not the wanted kind of value: consumed, and answered `T::default()`.
macro_rules! consume_the_rest {
    ($t:ty) => {
        fn visit_bool<E>(self, _: bool) -> Result<$t, E> {
            Ok(Default::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<$t, E> {
            Ok(Default::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<$t, E> {
            Ok(Default::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<$t, E> {
            Ok(Default::default())
        }
        fn visit_str<E>(self, _: &str) -> Result<$t, E> {
            Ok(Default::default())
        }
        fn visit_unit<E>(self) -> Result<$t, E> {
            Ok(Default::default())
        }
    };
}

impl<'de> serde::Deserialize<'de> for EventsOf<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EventsOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of events")
            }
            consume_the_rest!(EventsOf<'de>);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut events = Vec::new();
                while let Some(EventOf(event)) = seq.next_element()? {
                    events.push(event);
                }
                Ok(EventsOf(Some(events)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(EventsOf(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> serde::Deserialize<'de> for EventOf<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EventOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an event")
            }
            consume_the_rest!(EventOf<'de>);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(EventOf(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let (fields, _) = FieldsVisitor { batch: false }.visit_map(map)?;
                Ok(EventOf(Some(fields)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A key, borrowed from the text unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// The top-level fields of the JSON object `text`; with `batch`, its `batch` read as events
/// (see [`FieldsVisitor`]).
fn parse_object(text: &[u8], batch: bool) -> Result<(Fields<'_>, Events<'_>), ParseError> {
    // UTF-8 checked once for the whole body: read from bytes, the parser checks the text of
    // every value it keeps (each field of each event) on its own.
    let read = match std::str::from_utf8(text) {
        Ok(text) => one_pass(serde_json::Deserializer::from_str(text), batch),
        Err(_) => one_pass(serde_json::Deserializer::from_slice(text), batch),
    };
    match read {
        Ok(fields) => Ok(fields),
        Err(e) if e.is_data() => {
            // Valid JSON that is not an object, or not valid JSON at all?
            match serde_json::from_slice::<serde::de::IgnoredAny>(text) {
                Ok(_) => Err(ParseError::NotObject),
                Err(e) => Err(ParseError::NotJson(e)),
            }
        }
        Err(e) => Err(ParseError::NotJson(e)),
    }
}

fn one_pass<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    batch: bool,
) -> Result<(Fields<'de>, Events<'de>), serde_json::Error> {
    de.deserialize_map(FieldsVisitor { batch })
        .and_then(|f| de.end().map(|()| f))
}

/// A batch read in passes (the body's fields, the batch's elements as text, each element's
/// fields), for a body the one pass refused: invalid JSON is refused here too, the same way;
/// but an element that is a number beyond a double's range (`1e400`), which the one pass
/// reads as a number and refuses, is here an element that is not an object like any other,
/// refused alone.
fn parse_in_passes(text: &[u8]) -> Result<(Fields<'_>, Events<'_>), ParseError> {
    let (mut fields, _) = parse_object(text, false)?;
    let events =
        match fields.remove("batch") {
            Some(Cow::Borrowed(list)) => serde_json::from_str::<Vec<&RawValue>>(list.get())
                .ok()
                .map(|list| {
                    (list.into_iter())
                        .map(|e| parse_object(e.get().as_bytes(), false).ok().map(|(f, _)| f))
                        .collect()
                }),
            _ => None,
        };
    Ok((fields, events))
}

/// `"identify"` (...) as JSON text, for a single call's `type`.
fn type_value(kind: &str) -> Cow<'static, RawValue> {
    let text = format!("\"{kind}\"");
    Cow::Owned(RawValue::from_string(text).expect("a JSON string"))
}

/// The answer to an enqueue error that is about the relay, not the events: all `events` of the
/// request are refused (and counted so).
fn overloaded(source: &Source, e: &Error, events: usize) -> Option<Answer> {
    let status = match e {
        Error::QueueFull { .. } | Error::SpoolFull { .. } => StatusCode::TOO_MANY_REQUESTS,
        Error::Closed | Error::Spool { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => return None,
    };
    crate::metrics::rejected(&source.name, crate::metrics::reason(e), events);
    tracing::warn!(source = %source.name, "cannot take more: {e}");
    Some(reply::error(status, e.to_string()))
}

async fn single(source: &Arc<Source>, event: Fields<'_>) -> Answer {
    let result =
        read_event(&event, &mut String::new()).and_then(|msg| source.client.enqueue_with(&msg));
    match result {
        Ok(_) => durable(source, 1).await,
        Err(e) => {
            if let Some(answer) = overloaded(source, &e, 1) {
                return answer;
            }
            crate::metrics::rejected(&source.name, crate::metrics::reason(&e), 1);
            tracing::info!(source = %source.name, reason = %e, "event rejected");
            let status = match e {
                Error::MessageTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                _ => StatusCode::BAD_REQUEST,
            };
            reply::error(status, e.to_string())
        }
    }
}

async fn batch(source: &Arc<Source>, mut obj: Fields<'_>, events: Events<'_>) -> Answer {
    let Some(events) = events else {
        return not_a_batch();
    };
    // Segment's batch-level context and integrations apply to events that have none.
    let shared: Vec<(&'static str, Cow<'_, RawValue>)> = ["context", "integrations"]
        .into_iter()
        .filter_map(|k| obj.remove(k).map(|v| (k, v)))
        .collect();
    let mut rejected = Vec::new();
    let mut accepted = 0usize;
    let reject = |rejected: &mut Vec<Rejected>, index: usize, e: Error| {
        crate::metrics::rejected(&source.name, crate::metrics::reason(&e), 1);
        rejected.push(Rejected {
            index,
            too_large: matches!(e, Error::MessageTooLarge { .. }),
            reason: e.to_string(),
        });
    };
    // Each event is read as the core takes it, and dropped once encoded (see
    // `enqueue_each`): the objects among them, with their places in the batch.
    let total = events.len();
    let (mut indexes, mut read_ok) = (Vec::new(), 0);
    let mut text = String::new();
    let objects = events
        .into_iter()
        .enumerate()
        .filter_map(|(index, event)| match event {
            Some(event) => Some((index, event)),
            None => {
                crate::metrics::rejected(&source.name, "not_an_object", 1);
                rejected.push(Rejected {
                    index,
                    reason: "an event must be a JSON object".into(),
                    too_large: false,
                });
                None
            }
        })
        .map(|(index, mut event)| {
            indexes.push(index);
            for (k, v) in &shared {
                if !event.contains(k) {
                    event.0.push((Cow::Borrowed(k), v.clone()));
                }
            }
            let read = read_event(&event, &mut text);
            read_ok += usize::from(read.is_ok());
            read
        });
    // All or none: a 429 must not leave part of the batch queued, to be delivered twice
    // when the SDK sends the whole batch again.
    match source.client.enqueue_each(objects) {
        Ok(answers) => {
            for (index, answer) in indexes.into_iter().zip(answers) {
                match answer {
                    Ok(_) => accepted += 1,
                    Err(e) => reject(&mut rejected, index, e),
                }
            }
        }
        Err(e) => {
            // A closed client refuses before it reads any event: then all count.
            let refused = match indexes.is_empty() && rejected.is_empty() {
                true => total,
                false => read_ok,
            };
            return overloaded(source, &e, refused)
                .unwrap_or_else(|| reply::error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()));
        }
    }
    rejected.sort_by_key(|r| r.index);
    for r in &rejected {
        tracing::info!(
            source = %source.name,
            index = r.index,
            too_large = r.too_large,
            reason = %r.reason,
            "event rejected"
        );
    }
    let answer = durable(source, accepted).await;
    if answer.status() != StatusCode::OK || rejected.is_empty() {
        return answer;
    }
    let list: Vec<Value> = rejected
        .iter()
        .map(|r| json!({"index": r.index, "reason": r.reason}))
        .collect();
    reply::json(
        StatusCode::OK,
        &json!({"success": true, "accepted": accepted, "rejected": list}),
    )
}

fn not_a_batch() -> Answer {
    reply::error(
        StatusCode::BAD_REQUEST,
        "body must be an object with a \"batch\" array",
    )
}

/// 200 once the `accepted` events just enqueued are committed to the source's spool (at
/// once when none were, or without a spool); 503 when the commit failed.
async fn durable(source: &Arc<Source>, accepted: usize) -> Answer {
    if accepted > 0 && !spooled(source).await {
        tracing::warn!(source = %source.name, "spool commit failed: answered 503");
        return reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the events could not be committed to disk; send them again",
        );
    }
    crate::metrics::accepted(&source.name, accepted);
    reply::ok()
}

/// Waits, without holding a worker thread, for the commit that holds everything the
/// source's client accepted so far.
pub async fn spooled(source: &Source) -> bool {
    let (tx, rx) = tokio::sync::oneshot::channel();
    source.client.when_spooled(move |ok| {
        let _ = tx.send(ok);
    });
    rx.await.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object's fields, name and text.
    type Own = Vec<(String, String)>;

    /// The body's fields and its events, each event's fields or `None`.
    type Read = (Own, Option<Vec<Option<Own>>>);

    fn read(text: &str, batch: bool) -> Read {
        let own = |f: &Fields<'_>| -> Own {
            (f.0.iter())
                .map(|(k, v)| (k.to_string(), v.get().to_string()))
                .collect()
        };
        let Ok((fields, events)) = parse_object(text.as_bytes(), batch) else {
            panic!("not read: {text}");
        };
        let events = events.map(|list| list.iter().map(|e| e.as_ref().map(own)).collect());
        (own(&fields), events)
    }

    fn kv(pairs: &[(&str, &str)]) -> Own {
        (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_batch_is_read_in_one_pass_into_each_events_fields() {
        let (fields, events) = read(
            r#"{"sentAt":"x","batch":[{"a":1,"b":{"c":[1,2]},"a":"again"},7,"s",null,true,[1,[2]],{"x":{}},-1.5e3],"context":{"k":"v"}}"#,
            true,
        );
        assert_eq!(
            fields,
            kv(&[("sentAt", "\"x\""), ("context", r#"{"k":"v"}"#)])
        );
        assert_eq!(
            events.unwrap(),
            vec![
                // A repeated key keeps its first place and its last value.
                Some(kv(&[("a", "\"again\""), ("b", r#"{"c":[1,2]}"#)])),
                None,
                None,
                None,
                None,
                None,
                Some(kv(&[("x", "{}")])),
                None,
            ]
        );
    }

    #[test]
    fn a_batch_that_is_not_an_array_is_none_and_a_later_batch_wins() {
        for text in [
            r#"{"batch":{"a":[1]}}"#,
            r#"{"batch":null}"#,
            r#"{"batch":"[]"}"#,
            r#"{"batch":[{}],"batch":1}"#,
            r#"{"x":1}"#,
        ] {
            assert_eq!(read(text, true).1, None, "{text}");
        }
        assert_eq!(
            read(r#"{"batch":1,"batch":[{}]}"#, true).1,
            Some(vec![Some(vec![])])
        );
    }

    #[test]
    fn an_element_beyond_a_doubles_range_is_refused_alone() {
        let text = br#"{"batch":[{"a":1},1e400,[1e400]],"x":2}"#;
        assert!(parse_object(text, true).is_err(), "the one pass refuses it");
        let Ok((fields, Some(events))) = parse_in_passes(text) else {
            panic!("not read in passes");
        };
        assert_eq!(fields.0.len(), 1);
        assert_eq!(fields.get("x").map(|v| v.get()), Some("2"));
        assert_eq!(events.len(), 3);
        assert!(events[0].is_some() && events[1].is_none() && events[2].is_none());
        assert!(matches!(
            parse_in_passes(br#"{"batch":1e400}"#),
            Ok((_, None))
        ));
        assert!(matches!(
            parse_in_passes(br#"{"batch":[1,}"#),
            Err(ParseError::NotJson(_))
        ));
    }

    #[test]
    fn delete_is_found_however_it_is_written() {
        for (raw, want) in [
            (r#""delete""#, true),
            (r#""\u0064elete""#, true),
            (r#""delete ""#, false),
            (r#""track""#, false),
            ("7", false),
            ("[\"delete\"]", false),
        ] {
            assert_eq!(is_delete(raw), want, "{raw}");
        }
    }

    #[test]
    fn a_single_event_keeps_batch_as_a_field() {
        let (fields, events) = read(r#"{"event":"E","batch":[1]}"#, false);
        assert_eq!(fields, kv(&[("event", "\"E\""), ("batch", "[1]")]));
        assert_eq!(events, None);
    }

    #[test]
    fn bad_json_anywhere_in_a_batch_is_refused_whole() {
        for text in [
            r#"{"batch":[{"a":1},{"b":}]}"#,
            r#"{"batch":[1,2}"#,
            r#"{"batch":[]} x"#,
        ] {
            assert!(
                matches!(
                    parse_object(text.as_bytes(), true),
                    Err(ParseError::NotJson(_))
                ),
                "{text}"
            );
        }
        assert!(matches!(
            parse_object(b"[1]", true),
            Err(ParseError::NotObject)
        ));
    }
}
