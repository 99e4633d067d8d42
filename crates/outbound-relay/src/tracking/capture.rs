//! An accepted event as a look at the source's recent events keeps it
//! (`operations::recent`): its text as the relay gave it to the core (a single call's
//! `type` set, its batch's `context`, `integrations` and `sentAt` filled in) without the
//! write key, which is no part of the event, and its type and name as the core read them.
//! Made only while the source is captured.

use super::fields::{self, Body, Fields};
use crate::operations::recent::{Captured, MAX_EVENT_BYTES};
use outbound::{JsonObject, Kind, Message, Received};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// Top-level fields not kept: the transport's, not the event's.
const LEFT_OUT: [&str; 1] = ["writeKey"];

/// A batch's `event` (its text), read by the core as `msg` with its batch's `shared` fields,
/// for the capture: those it lacks filled in, as the core took them.
pub fn captured_in_batch(
    event: &RawValue,
    shared: &[(&'static str, Cow<'_, RawValue>)],
    msg: &Message<JsonObject>,
    received: &Received,
) -> Captured {
    // The core read it as an object, so it is one.
    let mut fields = match fields::parse(event.get().as_bytes(), false) {
        Ok(Body { fields, .. }) => fields,
        Err(_) => Fields(Vec::new()),
    };
    for (k, v) in shared {
        if !fields.contains(k) {
            fields.0.push((Cow::Borrowed(k), v.clone()));
        }
    }
    captured(&fields, msg, received)
}

/// A single call's `event`, its `type` set to the path's `kind`, read by the core as `msg`,
/// for the capture.
pub fn captured_call(
    mut event: Fields<'_>,
    kind: Kind,
    msg: &Message<JsonObject>,
    received: &Received,
) -> Captured {
    let text = format!("\"{}\"", kind.as_str());
    let value = RawValue::from_string(text).expect("a JSON string");
    event.set("type", Cow::Owned(value));
    captured(&event, msg, received)
}

/// `event`, read by the core as `msg`, for the capture.
fn captured(event: &Fields<'_>, msg: &Message<JsonObject>, received: &Received) -> Captured {
    let kept = || {
        event
            .0
            .iter()
            .filter(|(k, _)| !LEFT_OUT.contains(&k.as_ref()))
    };
    // Its length before it is written: one over the bound is not copied.
    let size = 2 + kept()
        .map(|(k, v)| k.len() + 2 + 1 + v.get().len() + 1)
        .sum::<usize>()
        .saturating_sub(1);
    let text = (size <= MAX_EVENT_BYTES).then(|| {
        let mut text = String::with_capacity(size + 16);
        text.push('{');
        for (k, v) in kept() {
            if text.len() > 1 {
                text.push(',');
            }
            push_key(&mut text, k);
            text.push(':');
            text.push_str(v.get());
        }
        text.push('}');
        text.into_boxed_str()
    });
    let name = match msg.kind {
        Kind::Track => msg.event.clone(),
        Kind::Page | Kind::Screen => msg.name.clone(),
        _ => None,
    };
    Captured {
        received_at: received.at,
        kind: msg.kind.as_str(),
        name,
        size: text.as_ref().map_or(size, |t| t.len()),
        text,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Received {
        Received {
            at: outbound::OffsetDateTime::now_utc(),
            client_ip: None,
        }
    }

    /// `text` read as the tracking handler reads a single call's body, then captured.
    fn capture(text: &str) -> Captured {
        let Ok(body) = fields::parse(text.as_bytes(), false) else {
            panic!("not a JSON object: {text}");
        };
        let msg = Message::collect(text, &now()).unwrap();
        captured(&body.fields, &msg, &now())
    }

    #[test]
    fn the_event_is_kept_as_read_without_its_write_key() {
        let c = capture(
            r#"{"type":"track","event":"Order \"Done\"","writeKey":"wk","userId":"u","properties":{"a":[1,2]}}"#,
        );
        let kept = c.text.as_deref().unwrap();
        let want =
            r#"{"type":"track","event":"Order \"Done\"","userId":"u","properties":{"a":[1,2]}}"#;
        assert_eq!(kept, want);
        assert_eq!(c.size, kept.len());
        assert_eq!(
            (c.kind, c.name.as_deref()),
            ("track", Some("Order \"Done\""))
        );
    }

    #[test]
    fn an_event_over_the_bound_is_noted_not_kept() {
        let big = "x".repeat(MAX_EVENT_BYTES);
        let text =
            format!(r#"{{"type":"page","name":"Home","userId":"u","properties":{{"b":"{big}"}}}}"#);
        let c = capture(&text);
        assert!(c.text.is_none());
        assert_eq!(c.size, text.len());
        assert_eq!((c.kind, c.name.as_deref()), ("page", Some("Home")));
    }
}
