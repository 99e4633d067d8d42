//! A message read as a collector of Segment's tracking API receives it from an SDK
//! ([`Message::collect`], the relay's events), with the rules of `model/collected.rs`: what
//! is added (`receivedAt`, `originalTimestamp`, the corrected `timestamp`, `context.ip`) and
//! what is kept as it came (`sentAt`, `context.library`, every other top-level field).
//!
//! As in `json_text.rs`, the usual event is read in one pass, its objects and its other
//! fields written in canonical form as they are read. Anything unusual (a top-level key
//! repeated, or more than 32 of them; a known field of an unusual type; an object with a key
//! repeated or many keys; a field named like an array index; bad JSON) sends the event to
//! [`reference`], which reads it through a `serde_json::Map` and whose results and errors
//! count: the one pass gives exactly what it gives, and both end in the same [`finish`]
//! (tested on random events).
//!
//! A field the call does not carry (a `track`'s `traits`, an `identify`'s `event`) is kept
//! as one of the other fields. An event is refused only when it cannot be delivered as a
//! Segment call: not an object; no `type`, a `type` that is not a call, or `delete`; a known
//! field of the wrong type; a top-level field named like an array index (JavaScript would
//! move it before `type`, so no body could keep it canonical). The client refuses the rest
//! when the event is enqueued: no `userId`/`anonymousId`, a `track` without `event`, over
//! 32 KB.

use crate::error::Error;
use crate::model::collected::{self, Collected, Received, DROPPED};
use crate::model::message::{id_text, object, text, wrong, Kind, Message, Object};
use crate::model::timestamp;
use crate::wire::canonical_json::{array_index, write_str, WriteJson, Writer};
use crate::wire::encode::LIBRARY;
use crate::wire::json_text::{Id, JsonObject, Stream, Text, MAX_STREAMED_KEYS};
use serde::de::{self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use time::OffsetDateTime;

impl Message<JsonObject> {
    /// Reads a Segment-style event as Segment's tracking API receives it from an SDK: the
    /// event's `timestamp` kept as `originalTimestamp` and corrected for the device's clock
    /// when it has a `sentAt` (`receivedAt − (sentAt − originalTimestamp)`), `sentAt` kept,
    /// `receivedAt` added (`received.at`), `context.library` kept, `context.ip` filled from
    /// `received.client_ip` for events of browser and mobile SDKs, and every other top-level
    /// field kept as sent, in the bodies of both destinations (JS-canonical, signed). A
    /// top-level `null` is absent; `writeKey` and `_metadata` are dropped. Library calls
    /// never go through this: their bodies are unchanged.
    pub fn collect(json: &str, received: &Received) -> Result<Self, Error> {
        Self::collect_with(json, None, &BatchFields::NONE, received)
    }

    /// [`Message::collect`] for an event sent to a call's own path (`/v1/track`): its call
    /// is `kind`, whatever its `type` says (read from the body as it came, not written again).
    pub fn collect_call(json: &str, kind: Kind, received: &Received) -> Result<Self, Error> {
        Self::collect_with(json, Some(kind), &BatchFields::NONE, received)
    }

    /// [`Message::collect`] for an event of a batch (its text as it lies in the body): the
    /// batch's `context`, `integrations` and `sentAt` count for an event without that key,
    /// as if the event ended with it. Each event is read once, from the body's own bytes.
    pub fn collect_in_batch(
        json: &str,
        batch: &BatchFields,
        received: &Received,
    ) -> Result<Self, Error> {
        Self::collect_with(json, None, batch, received)
    }

    /// `kind`: the call, in place of the event's `type`.
    fn collect_with(
        json: &str,
        kind: Option<Kind>,
        batch: &BatchFields,
        received: &Received,
    ) -> Result<Self, Error> {
        let mut de = serde_json::Deserializer::from_str(json);
        match de.deserialize_map(OnePass { received, kind }) {
            // Every field read as the reference reads it: its `finish`, errors included.
            Ok((mut read, has)) if de.end().is_ok() => {
                batch.fill(&mut read, has)?;
                finish(read, received)
            }
            _ => reference(json, kind, batch, received),
        }
    }
}

/// A batch's `context`, `integrations` and `sentAt`, read once for the events that lack them
/// (Segment's batch-level fields); a `null` or an absent one gives nothing.
pub struct BatchFields {
    context: Option<Result<Vec<u8>, Error>>,
    integrations: Option<Result<Object, Error>>,
    sent_at: Option<Result<Stamp, Error>>,
}

/// The shared fields an event has its own key for (a `null` counts: it is the event's).
#[derive(Clone, Copy, Default)]
struct Has {
    context: bool,
    integrations: bool,
    sent_at: bool,
}

impl Has {
    fn note(&mut self, key: &str) {
        match key {
            "context" => self.context = true,
            "integrations" => self.integrations = true,
            "sentAt" => self.sent_at = true,
            _ => {}
        }
    }
}

impl BatchFields {
    /// None: a single event's.
    pub const NONE: BatchFields = BatchFields {
        context: None,
        integrations: None,
        sent_at: None,
    };

    /// Reads a batch's `context`, `integrations` and `sentAt` (each its JSON text, as sent).
    /// A value an event cannot take (a `context` that is not an object) is the error of
    /// every event that takes it, as it would be of an event that had it.
    pub fn read(
        context: Option<&str>,
        integrations: Option<&str>,
        sent_at: Option<&str>,
        received: &Received,
    ) -> BatchFields {
        fn value(text: Option<&str>) -> Option<Result<Value, Error>> {
            let value = serde_json::from_str::<Value>(text?)
                .map_err(|e| Error::json("message", e.to_string()));
            (!matches!(value, Ok(Value::Null))).then_some(value)
        }
        BatchFields {
            context: value(context).map(|v| v.and_then(|v| context_of(v, received))),
            integrations: value(integrations).map(|v| v.and_then(|v| object("integrations", v))),
            sent_at: value(sent_at).map(|v| v.and_then(|v| stamp(&v))),
        }
    }

    /// Gives `read` what it lacks (`has`: the keys it had).
    fn fill(&self, read: &mut Read, has: Has) -> Result<(), Error> {
        if let (false, Some(c)) = (has.context, &self.context) {
            read.context = Some(c.clone()?);
        }
        if let (false, Some(i)) = (has.integrations, &self.integrations) {
            read.integrations = Some(i.clone()?);
        }
        if let (false, Some(s)) = (has.sent_at, &self.sent_at) {
            read.sent_at = Some(s.clone()?);
        }
        Ok(())
    }
}

/// A `timestamp` or `sentAt`: canonical, and the time it says when it can be written.
type Stamp = (Vec<u8>, Option<OffsetDateTime>);

/// The fields whose place depends on the call: carried by it, or kept as other fields.
const CALL_FIELDS: [&str; 5] = ["event", "name", "category", "groupId", "previousId"];

/// Whether a call of `kind` carries `field` (the core's own rule: `model/validate.rs`).
fn carries(kind: Kind, field: &str) -> bool {
    use Kind::*;
    match field {
        "event" => kind == Track,
        "name" | "category" => matches!(kind, Page | Screen),
        "groupId" => kind == Group,
        "previousId" => kind == Alias,
        "properties" => matches!(kind, Track | Page | Screen),
        "traits" => matches!(kind, Identify | Group),
        _ => true,
    }
}

/// An event's fields as read, before its call is known.
#[derive(Default)]
struct Read {
    kind: Option<Kind>,
    user_id: Option<String>,
    anonymous_id: Option<String>,
    message_id: Option<String>,
    /// [`CALL_FIELDS`], as sent.
    calls: [Option<Value>; 5],
    /// `timestamp` and `sentAt`: canonical, and read when a writable time.
    timestamp: Option<Stamp>,
    sent_at: Option<Stamp>,
    /// Canonical, with our additions (`context_additions`).
    context: Option<Vec<u8>>,
    /// Canonical, of any type (`null`: absent).
    properties: Option<Vec<u8>>,
    traits: Option<Vec<u8>>,
    integrations: Option<Object>,
    /// Every other field, canonical, each led by a comma.
    extra: Vec<u8>,
}

/// The message of `read`: its call's fields in their places, the rest kept as other fields.
fn finish(read: Read, received: &Received) -> Result<Message<JsonObject>, Error> {
    let kind = read.kind.ok_or(Error::MissingField {
        call: "message",
        field: "type",
    })?;
    let mut msg = Message::empty(kind);
    msg.user_id = read.user_id;
    msg.anonymous_id = read.anonymous_id;
    msg.message_id = read.message_id;
    msg.integrations = read.integrations;
    let mut extra = read.extra;
    for (field, value) in CALL_FIELDS.into_iter().zip(read.calls) {
        let Some(value) = value else { continue };
        if !carries(kind, field) {
            push_extra(&mut extra, field, &canonical(&value)?);
            continue;
        }
        match field {
            "event" => msg.event = Some(text(field, value)?),
            "name" => msg.name = Some(text(field, value)?),
            "category" => msg.category = Some(text(field, value)?),
            "groupId" => msg.group_id = Some(id_text(field, value)?),
            _ => msg.previous_id = Some(id_text(field, value)?),
        }
    }
    for (field, bytes) in [("properties", read.properties), ("traits", read.traits)] {
        let Some(bytes) = bytes.filter(|b| b != b"null") else {
            continue;
        };
        if !carries(kind, field) {
            push_extra(&mut extra, field, &bytes);
        } else if bytes.first() == Some(&b'{') {
            let object = Some(JsonObject::canonical(bytes));
            match field {
                "properties" => msg.properties = object,
                _ => msg.traits = object,
            }
        } else {
            let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Err(wrong(field, "an object", &value));
        }
    }
    msg.context = read.context.map(JsonObject::canonical);
    let original = read.timestamp.as_ref().and_then(|(_, t)| *t);
    let sent = read.sent_at.as_ref().and_then(|(_, t)| *t);
    msg.timestamp = Some(collected::corrected(received.at, original, sent));
    let mut received_at = [0u8; timestamp::LEN];
    timestamp::write(received.at, &mut received_at)?;
    msg.collected = Some(Box::new(Collected {
        received_at,
        sent_at: read.sent_at.map(|(b, _)| b),
        original_timestamp: read.timestamp.map(|(b, _)| b),
        extra,
    }));
    Ok(msg)
}

/// `,"key":value` onto `extra`.
fn push_extra(extra: &mut Vec<u8>, key: &str, value: &[u8]) {
    extra.push(b',');
    write_str(extra, key);
    extra.push(b':');
    extra.extend_from_slice(value);
}

/// `value` written canonically, at the depth of a message's field.
fn canonical(value: &Value) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    value.write_json(&mut Writer::at_depth(&mut out, 1, "message"))?;
    Ok(out)
}

/// A `timestamp` or `sentAt`: canonical, and the time it says when it is one that can be
/// written.
fn stamp(value: &Value) -> Result<Stamp, Error> {
    Ok((canonical(value)?, value.as_str().and_then(time_of)))
}

/// The time `text` says, when it is one that can be written.
fn time_of(text: &str) -> Option<OffsetDateTime> {
    timestamp::parse(text)
        .ok()
        .filter(|t| collected::writable(*t))
}

/// [`time_of`] a `sentAt`, read once for the events of a batch: they share their batch's.
fn sent_at_of(text: &str) -> Option<OffsetDateTime> {
    thread_local! {
        static LAST: std::cell::RefCell<(String, Option<OffsetDateTime>)> =
            const { std::cell::RefCell::new((String::new(), None)) };
    }
    LAST.with_borrow_mut(|(last, time)| {
        if last.as_str() != text || last.is_empty() {
            *time = time_of(text);
            last.clear();
            last.push_str(text);
        }
        *time
    })
}

/// The call of a `type` value.
fn call(value: Value) -> Result<Kind, Error> {
    let name = text("type", value)?;
    match Kind::parse(&name) {
        Some(Kind::Delete) => Err(Error::invalid(
            "type",
            "delete is not a call of the tracking API",
        )),
        Some(kind) => Ok(kind),
        None => Err(Error::invalid(
            "type",
            format!("{name:?} is not one of identify, track, page, screen, group, alias"),
        )),
    }
}

/// What a `context` gets here, given what it holds: `ip` for a client-side event (its
/// library's name, or `direct: true`) without one, and our `library` when it has none.
/// `library`: absent (`None`), or whether it names a client-side SDK.
fn context_additions(
    received: &Received,
    has_ip: bool,
    library: Option<bool>,
    direct: bool,
) -> (Option<String>, bool) {
    let ip = match (has_ip, direct || library == Some(true), received.client_ip) {
        (false, true, Some(ip)) => Some(ip.to_string()),
        _ => None,
    };
    (ip, library.is_none())
}

/// Whether a `context.library` value (its canonical bytes) names a client-side SDK.
fn library_of(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Library<'a> {
        #[serde(borrow)]
        name: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Library>(bytes)
        .ok()
        .and_then(|l| l.name)
        .is_some_and(|name| collected::client_library(&name))
}

/// Reads `json` through a `serde_json::Map` (a repeated key keeps its first place and its
/// last value, as `JSON.parse` does): the reference [`Message::collect`] is held to.
fn reference(
    json: &str,
    kind: Option<Kind>,
    batch: &BatchFields,
    received: &Received,
) -> Result<Message<JsonObject>, Error> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| Error::json("message", e.to_string()))?;
    let Value::Object(fields) = value else {
        return Err(wrong("message", "an object", &value));
    };
    let mut read = Read {
        kind,
        ..Read::default()
    };
    let mut has = Has::default();
    for key in fields.keys() {
        has.note(key);
    }
    for (key, value) in fields {
        if value.is_null() || DROPPED.contains(&key.as_str()) || (kind.is_some() && key == "type") {
            continue;
        }
        match key.as_str() {
            "type" => read.kind = Some(call(value)?),
            "userId" => read.user_id = Some(id_text("userId", value)?),
            "anonymousId" => read.anonymous_id = Some(id_text("anonymousId", value)?),
            "messageId" => read.message_id = Some(text("messageId", value)?),
            "timestamp" => read.timestamp = Some(stamp(&value)?),
            "sentAt" => read.sent_at = Some(stamp(&value)?),
            "properties" => read.properties = Some(canonical(&value)?),
            "traits" => read.traits = Some(canonical(&value)?),
            "integrations" => read.integrations = Some(object("integrations", value)?),
            "context" => read.context = Some(context_of(value, received)?),
            field => match CALL_FIELDS.iter().position(|f| *f == field) {
                Some(i) => read.calls[i] = Some(value),
                None if array_index(field).is_some() => {
                    return Err(Error::invalid(
                        field,
                        "a top-level field named like an array index cannot be kept in its \
                         place (JavaScript puts it first)",
                    ))
                }
                None => push_extra(&mut read.extra, field, &canonical(&value)?),
            },
        }
    }
    batch.fill(&mut read, has)?;
    finish(read, received)
}

/// A `context` value written canonically, with what it gets here ([`context_additions`]).
fn context_of(value: Value, received: &Received) -> Result<Vec<u8>, Error> {
    let mut context = object("context", value)?;
    let direct = context.get("direct") == Some(&Value::Bool(true));
    let library = context
        .get("library")
        .map(|l| (l.get("name").and_then(Value::as_str)).is_some_and(collected::client_library));
    let (ip, library) = context_additions(received, context.contains_key("ip"), library, direct);
    if let Some(ip) = ip {
        context.insert("ip".into(), Value::String(ip));
    }
    if library {
        let ours = serde_json::from_str(LIBRARY).expect("our library is JSON");
        context.insert("library".into(), ours);
    }
    let mut out = Vec::new();
    context.write_json(&mut Writer::at_depth(&mut out, 1, "context"))?;
    Ok(out)
}

/// Not read in one pass: [`reference`] reads it.
fn unusual<E: de::Error>() -> E {
    E::custom("read by the reference")
}

/// The event's fields, read in one pass (`kind`: the call, whatever its `type` says).
struct OnePass<'r> {
    received: &'r Received,
    kind: Option<Kind>,
}

impl<'de> Visitor<'de> for OnePass<'_> {
    type Value = (Read, Has);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(Read, Has), A::Error> {
        let mut read = Read {
            kind: self.kind,
            ..Read::default()
        };
        let mut has = Has::default();
        let mut seen: Vec<Cow<'de, str>> = Vec::with_capacity(16);
        while let Some(Text(key)) = map.next_key()? {
            if seen.len() == MAX_STREAMED_KEYS || seen.contains(&key) {
                return Err(unusual());
            }
            match &*key {
                k if DROPPED.contains(&k) || (self.kind.is_some() && k == "type") => {
                    map.next_value::<IgnoredAny>()?;
                }
                "type" => {
                    if let Some(t) = map.next_value::<Option<Text>>()? {
                        match Kind::parse(&t.0) {
                            Some(Kind::Delete) | None => return Err(unusual()),
                            kind => read.kind = kind,
                        }
                    }
                }
                "userId" => read.user_id = map.next_value::<Option<Id>>()?.map(|i| i.0),
                "anonymousId" => read.anonymous_id = map.next_value::<Option<Id>>()?.map(|i| i.0),
                "messageId" => {
                    read.message_id = map.next_value::<Option<Text>>()?.map(|t| t.0.into_owned())
                }
                "timestamp" | "sentAt" => {
                    // A string, read where it lies (anything else: the reference).
                    if let Some(Text(t)) = map.next_value::<Option<Text>>()? {
                        let mut bytes = Vec::with_capacity(t.len() + 2);
                        write_str(&mut bytes, &t);
                        match &*key {
                            "timestamp" => read.timestamp = Some((bytes, time_of(&t))),
                            _ => read.sent_at = Some((bytes, sent_at_of(&t))),
                        }
                    }
                }
                "properties" | "traits" => {
                    let mut out = Vec::with_capacity(256);
                    map.next_value_seed(Stream {
                        w: &mut Writer::at_depth(&mut out, 1, "message"),
                    })?;
                    match &*key {
                        "properties" => read.properties = Some(out),
                        _ => read.traits = Some(out),
                    }
                }
                "integrations" => read.integrations = map.next_value::<Option<Object>>()?,
                "context" => {
                    read.context = map.next_value_seed(ContextSeed {
                        received: self.received,
                    })?
                }
                field => match CALL_FIELDS.iter().position(|f| *f == field) {
                    Some(i) => {
                        let value: Value = map.next_value()?;
                        read.calls[i] = (!value.is_null()).then_some(value);
                    }
                    None if array_index(field).is_some() => return Err(unusual()),
                    None => {
                        let mark = read.extra.len();
                        read.extra.push(b',');
                        write_str(&mut read.extra, field);
                        read.extra.push(b':');
                        let at = read.extra.len();
                        map.next_value_seed(Stream {
                            w: &mut Writer::at_depth(&mut read.extra, 1, "message"),
                        })?;
                        if &read.extra[at..] == b"null" {
                            read.extra.truncate(mark);
                        }
                    }
                },
            }
            has.note(&key);
            seen.push(key);
        }
        Ok((read, has))
    }
}

/// `context`, written canonically as it is read, with its additions; `None` for `null`.
struct ContextSeed<'r> {
    received: &'r Received,
}

impl<'de> DeserializeSeed<'de> for ContextSeed<'_> {
    type Value = Option<Vec<u8>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContextSeed<'_> {
    type Value = Option<Vec<u8>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a context object")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(512);
        let mut w = Writer::at_depth(&mut out, 1, "context");
        let mut object = w.object().map_err(de::Error::custom)?;
        let mut keys: Vec<Cow<'de, str>> = Vec::with_capacity(16);
        let (mut has_ip, mut library, mut direct) = (false, None, false);
        while let Some(Text(key)) = map.next_key()? {
            if keys.len() == MAX_STREAMED_KEYS || keys.contains(&key) {
                return Err(unusual());
            }
            match &*key {
                // Its name, read back from what was written (no `Value` per event).
                "library" => {
                    let w = object.key(&key);
                    let at = w.len();
                    map.next_value_seed(Stream { w: &mut *w })?;
                    library = Some(library_of(w.written_since(at)));
                }
                "direct" => {
                    let value: Value = map.next_value()?;
                    value
                        .write_json(object.key(&key))
                        .map_err(de::Error::custom)?;
                    direct = value == Value::Bool(true);
                }
                _ => {
                    has_ip |= key == "ip";
                    map.next_value_seed(Stream {
                        w: object.key(&key),
                    })?;
                }
            }
            keys.push(key);
        }
        let (ip, ours) = context_additions(self.received, has_ip, library, direct);
        if let Some(ip) = ip {
            object.key("ip").str(&ip);
        }
        if ours {
            object.key("library").canonical(LIBRARY.as_bytes());
        }
        object.end();
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode::part_writer;

    fn received() -> Received {
        Received {
            at: timestamp::parse("2026-11-27T10:00:00.500Z").unwrap(),
            client_ip: Some("203.0.113.7".parse().unwrap()),
        }
    }

    fn written(o: &Option<JsonObject>, field: &'static str) -> Option<String> {
        let mut out = Vec::new();
        o.as_ref()?
            .write_json(&mut part_writer(&mut out, field))
            .unwrap();
        Some(String::from_utf8(out).unwrap())
    }

    /// Everything a collected message carries, comparable.
    fn shown(m: &Message<JsonObject>) -> String {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            m.kind,
            (&m.user_id, &m.anonymous_id, &m.message_id),
            m.timestamp,
            (&m.event, &m.name, &m.category, &m.group_id, &m.previous_id),
            written(&m.context, "context"),
            written(&m.properties, "properties"),
            written(&m.traits, "traits"),
            m.integrations,
            m.collected.as_ref().map(|c| c.received_at()),
            m.collected
                .as_ref()
                .and_then(|c| c.sent_at.clone())
                .map(String::from_utf8),
            m.collected
                .as_ref()
                .and_then(|c| c.original_timestamp.clone())
                .map(String::from_utf8),
            m.collected.as_ref().map(|c| c.extra()),
        )
    }

    /// `collect` gives what the reference gives (fields, bytes, errors); true when the one
    /// pass read it (and it is a message).
    fn alike(text: &str) -> bool {
        let r = received();
        let mut de = serde_json::Deserializer::from_str(text);
        let one_pass = de
            .deserialize_map(OnePass {
                received: &r,
                kind: None,
            })
            .ok()
            .filter(|_| de.end().is_ok())
            .is_some_and(|(read, _)| finish(read, &r).is_ok());
        match (
            Message::collect(text, &r),
            reference(text, None, &BatchFields::NONE, &r),
        ) {
            (Ok(a), Ok(b)) => assert_eq!(shown(&a), shown(&b), "{text}"),
            (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
            (a, b) => panic!("{text}: {a:?} against {b:?}"),
        }
        one_pass
    }

    fn collect(text: &str) -> Message<JsonObject> {
        Message::collect(text, &received()).unwrap()
    }

    #[test]
    fn unknown_fields_and_fields_of_other_calls_are_kept_as_sent() {
        let m = collect(
            r#"{"type":"identify","userId":"u","sessionId":42,"event":"E","traits":{"a":1},"properties":[1],"channel":"mobile","nested":{"b":2,"1":0}}"#,
        );
        assert_eq!(m.event, None);
        assert_eq!(
            m.collected.unwrap().extra(),
            r#""sessionId":42,"channel":"mobile","nested":{"1":0,"b":2},"event":"E","properties":[1]"#
        );
    }

    #[test]
    fn the_clock_is_corrected_from_sent_at_and_the_sdks_values_kept() {
        let m = collect(
            r#"{"type":"track","userId":"u","event":"E","timestamp":"2026-11-27T11:59:50+01:00","sentAt":"2026-11-27T11:00:00.000Z"}"#,
        );
        // Sent an hour fast, 10 s after the event: received at 10:00:00.5.
        assert_eq!(
            m.timestamp,
            Some(timestamp::parse("2026-11-27T09:59:50.500Z").unwrap())
        );
        let c = m.collected.unwrap();
        assert_eq!(c.received_at(), "2026-11-27T10:00:00.500Z");
        assert_eq!(
            c.original_timestamp.as_deref(),
            Some(&br#""2026-11-27T11:59:50+01:00""#[..])
        );
        assert_eq!(
            c.sent_at.as_deref(),
            Some(&br#""2026-11-27T11:00:00.000Z""#[..])
        );
        // No timestamp: received; an unreadable one is kept as sent and not used.
        let m = collect(r#"{"type":"track","userId":"u","event":"E","timestamp":"yesterday"}"#);
        assert_eq!(m.timestamp, Some(received().at));
        assert_eq!(
            m.collected.unwrap().original_timestamp.as_deref(),
            Some(&br#""yesterday""#[..])
        );
    }

    #[test]
    fn a_client_side_event_gets_the_clients_ip_unless_it_has_one() {
        let ctx = |text: &str| written(&collect(text).context, "context").unwrap();
        let ours = LIBRARY;
        assert_eq!(
            ctx(
                r#"{"type":"page","anonymousId":"a","context":{"library":{"name":"analytics.js","version":"next-1.84.3"},"page":{"path":"/"}}}"#
            ),
            r#"{"library":{"name":"analytics.js","version":"next-1.84.3"},"page":{"path":"/"},"ip":"203.0.113.7"}"#
        );
        assert_eq!(
            ctx(
                r#"{"type":"page","anonymousId":"a","context":{"ip":"0.0.0.0","library":{"name":"analytics-kotlin"}}}"#
            ),
            r#"{"ip":"0.0.0.0","library":{"name":"analytics-kotlin"}}"#
        );
        // A server library: no ip; none: ours, and an ip only when `direct`.
        assert_eq!(
            ctx(
                r#"{"type":"page","userId":"u","context":{"library":{"name":"analytics-python"}}}"#
            ),
            r#"{"library":{"name":"analytics-python"}}"#
        );
        assert_eq!(
            ctx(r#"{"type":"page","userId":"u","context":{"direct":true}}"#),
            format!(r#"{{"direct":true,"ip":"203.0.113.7","library":{ours}}}"#)
        );
    }

    #[test]
    fn transport_fields_nulls_and_our_own_fields_are_not_kept() {
        let m = collect(
            r#"{"type":"track","userId":"u","event":"E","writeKey":"wk","_metadata":{},"version":2,"receivedAt":"x","originalTimestamp":"y","anonymousId":null,"other":null}"#,
        );
        assert_eq!(m.anonymous_id, None);
        assert_eq!(m.collected.unwrap().extra(), "");
    }

    #[test]
    fn only_undeliverable_events_are_refused_each_named() {
        let e = |text: &str| Message::collect(text, &received()).unwrap_err().to_string();
        assert_eq!(e("[1]"), "message must be an object, got an array");
        assert_eq!(e(r#"{"userId":"u"}"#), "message requires type");
        assert_eq!(
            e(r#"{"type":"delete","userId":"u"}"#),
            "invalid type: delete is not a call of the tracking API"
        );
        assert_eq!(
            e(r#"{"type":"track","userId":"u","event":5}"#),
            "event must be a string, got a number"
        );
        assert!(e(r#"{"type":"track","userId":"u","event":"E","0":1}"#).starts_with("invalid 0: "));
        assert_eq!(
            e(r#"{"type":"identify","userId":"u","traits":[]}"#),
            "traits must be an object, got an array"
        );
    }

    #[test]
    fn events_are_read_in_one_pass_as_the_reference_reads_them() {
        for text in [
            r#"{"type":"track","userId":"u","event":"E","properties":{"a":1},"context":{"library":{"name":"analytics.js"},"ip":null},"sessionId":"s","timestamp":"2026-11-27T09:00:00Z","sentAt":"2026-11-27T09:00:01Z"}"#,
            r#"{"userId":7,"type":"group","groupId":8,"traits":{"10":1,"2":2},"integrations":{"All":true},"messageId":"m"}"#,
            r#"{"type":"alias","userId":"u","previousId":"p","event":{"x":[1,2]},"properties":null}"#,
            r#"{"type":"screen","anonymousId":"a","name":"N","category":"C","context":{"direct":true,"library":{"name":"analytics-swift","v":[1]}}}"#,
        ] {
            assert!(alike(text), "not read in one pass: {text}");
        }
        for text in [
            r#"{"type":"track","userId":"u","event":"E","userId":"v"}"#,
            r#"{"type":"track","userId":"u","event":"E","x":{"a":1,"a":2}}"#,
            r#"{"type":"track","userId":"u","event":"E","context":{"ip":"1","ip":"2"}}"#,
            r#"{"type":"screen","anonymousId":"a","context":{"library":{"name":"x","name":"analytics-swift"}}}"#,
            r#"{"type":"track","userId":"u","event":"E","timestamp":5}"#,
            r#"{"type":"track","userId":4.5,"event":"E"}"#,
            r#"{"type":"nope","userId":"u"}"#,
            r#"{"type":"track","userId":"u","event":"E","3":1}"#,
            r#"{"type":"track","messageId":5,"userId":"u","event":"E"}"#,
            r#"{"type":"track","userId":"u","event":"E","context":[]}"#,
            r#"{"type":"track","userId":"u","event":"E"} trailing"#,
        ] {
            assert!(!alike(text), "read in one pass: {text}");
        }
    }

    #[test]
    fn random_events_are_read_as_the_reference_reads_them() {
        let mut rng = fastrand::Rng::with_seed(44);
        let keys = [
            "type",
            "userId",
            "anonymousId",
            "event",
            "name",
            "groupId",
            "previousId",
            "properties",
            "traits",
            "context",
            "timestamp",
            "sentAt",
            "messageId",
            "sessionId",
            "x",
            "0",
            "writeKey",
            "channel",
        ];
        let values = [
            r#""track""#,
            r#""identify""#,
            r#""page""#,
            r#""group""#,
            r#""alias""#,
            "null",
            "1",
            r#""u""#,
            r#""2026-11-27T09:00:00Z""#,
            r#"{"a":1}"#,
            r#"{"library":{"name":"analytics.js"}}"#,
            r#"{"ip":"1.2.3.4","direct":true}"#,
            "[1]",
            r#"{"b":{"b":1,"b":2}}"#,
            "true",
        ];
        let calls = ["track", "identify", "page", "screen", "group", "alias"];
        let mut one_pass = 0;
        for i in 0..4000u32 {
            let mut picked = keys.to_vec();
            rng.shuffle(&mut picked);
            // Mostly distinct keys and a call; a key repeated now and then.
            picked.truncate(rng.usize(1..9));
            if i.is_multiple_of(5) {
                picked.push(picked[0]);
            }
            let mut fields: Vec<String> = picked
                .iter()
                .map(|k| format!("\"{k}\":{}", values[rng.usize(..values.len())]))
                .collect();
            if !i.is_multiple_of(7) {
                let call = calls[rng.usize(..calls.len())];
                fields.insert(0, format!("\"type\":\"{call}\""));
                fields.retain(|f| !f.starts_with("\"type\":") || f.contains(call));
            }
            one_pass += usize::from(alike(&format!("{{{}}}", fields.join(","))));
        }
        // Both ways are exercised.
        assert!((500..3500).contains(&one_pass), "{one_pass}");
    }

    #[test]
    fn a_call_s_path_sets_its_type_as_if_the_event_ended_with_it() {
        let mut rng = fastrand::Rng::with_seed(46);
        let fields = [
            r#""type":"track""#,
            r#""type":"delete""#,
            r#""type":5"#,
            r#""type":null"#,
            r#""userId":"u""#,
            r#""userId":4.5"#,
            r#""event":"E""#,
            r#""name":"N""#,
            r#""groupId":"g""#,
            r#""previousId":"p""#,
            r#""properties":{"a":1,"a":2}"#,
            r#""traits":{"t":true}"#,
            r#""context":{"library":{"name":"analytics.js"}}"#,
            r#""writeKey":"wk""#,
            r#""x":[1]"#,
        ];
        // The tracking API's calls: every kind but delete.
        let calls = &Kind::ALL[..6];
        let r = received();
        for _ in 0..3000 {
            let picked: Vec<&str> = (0..rng.usize(0..8))
                .map(|_| fields[rng.usize(..fields.len())])
                .collect();
            let kind = calls[rng.usize(..calls.len())];
            let text = format!("{{{}}}", picked.join(","));
            // As the relay once made it: every `type` taken out, the path's put last.
            let mut rest: Vec<&str> = picked
                .iter()
                .copied()
                .filter(|f| !f.starts_with(r#""type":"#))
                .collect();
            let typed = format!(r#""type":"{}""#, kind.as_str());
            rest.push(&typed);
            let made = format!("{{{}}}", rest.join(","));
            match (
                Message::collect_call(&text, kind, &r),
                Message::collect(&made, &r),
            ) {
                (Ok(a), Ok(b)) => assert_eq!(shown(&a), shown(&b), "{text}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
                (a, b) => panic!("{text}: {a:?} against {b:?}"),
            }
        }
    }

    #[test]
    fn a_batch_s_fields_count_as_the_last_fields_of_the_events_without_them() {
        let mut rng = fastrand::Rng::with_seed(45);
        let events = [
            r#"{"type":"track","userId":"u","event":"E"}"#,
            r#"{"type":"page","anonymousId":"a","context":{"library":{"name":"analytics.js"}}}"#,
            r#"{"type":"identify","userId":"u","context":null,"sentAt":"2026-11-27T09:00:00Z"}"#,
            r#"{"type":"track","userId":"u","event":"E","integrations":{"All":false},"x":1}"#,
            r#"{"type":"track","userId":"u","event":"E","timestamp":"2026-11-27T08:59:00Z"}"#,
            r#"{"type":"track","userId":"u","event":"E","userId":"v"}"#,
            r#"{"type":"group","userId":4.5,"groupId":"g"}"#,
            r#"{"userId":"u","event":"E"}"#,
            r#"{"type":"track","userId":"u","event":"E","context":{"ip":"1","ip":"2"}}"#,
            "{}",
        ];
        let contexts = [
            None,
            Some("null"),
            Some(r#"{"library":{"name":"analytics.js"},"page":{"path":"/"}}"#),
            Some(r#"{"direct":true}"#),
            Some(r#"{"a":1,"a":2}"#),
            Some("[1]"),
        ];
        let integrations = [None, Some("null"), Some(r#"{"All":true}"#), Some("5")];
        let sent = [
            None,
            Some("null"),
            Some(r#""2026-11-27T09:00:10Z""#),
            Some(r#""soon""#),
            Some("7"),
        ];
        let r = received();
        for _ in 0..2000 {
            let event = events[rng.usize(..events.len())];
            let shared = [
                ("context", contexts[rng.usize(..contexts.len())]),
                (
                    "integrations",
                    integrations[rng.usize(..integrations.len())],
                ),
                ("sentAt", sent[rng.usize(..sent.len())]),
            ];
            // As the relay once made it: each shared key the event lacks, appended.
            let own: Value = serde_json::from_str(event).unwrap();
            let mut text = event[..event.len() - 1].to_string();
            for (key, value) in shared {
                if let (Some(value), None) = (value, own.get(key)) {
                    if text.len() > 1 {
                        text.push(',');
                    }
                    text.push_str(&format!("\"{key}\":{value}"));
                }
            }
            text.push('}');
            let batch = BatchFields::read(shared[0].1, shared[1].1, shared[2].1, &r);
            match (
                Message::collect_in_batch(event, &batch, &r),
                Message::collect(&text, &r),
            ) {
                (Ok(a), Ok(b)) => assert_eq!(shown(&a), shown(&b), "{text}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
                (a, b) => panic!("{text}: {a:?} against {b:?}"),
            }
        }
    }
}
