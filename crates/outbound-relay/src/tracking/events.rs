//! One event's fields → the core's `Message`: the event rebuilt as text from its fields' own
//! text (nested values copied, not re-parsed) and read by `Message::collect` with the
//! request's facts. The core decides the rest: which fields are kept, what Segment's API adds
//! (`receivedAt`, the corrected `timestamp`, `context.ip`), what is refused.

use super::fields::Fields;
use outbound::{Error, JsonObject, Message, Received};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// Reads `event` with the core. `text` is a buffer for the rebuilt event, kept between the
/// events of a batch.
pub fn read_event(
    event: &Fields<'_>,
    text: &mut String,
    received: &Received,
) -> Result<Message<JsonObject>, Error> {
    text.clear();
    text.reserve(event.text_len() + 16);
    text.push('{');
    for (k, v) in &event.0 {
        if text.len() > 1 {
            text.push(',');
        }
        push_key(text, k);
        text.push(':');
        text.push_str(v.get());
    }
    text.push('}');
    Message::collect(text, received)
}

/// `"key"`, escaped as JSON.
pub fn push_key(text: &mut String, key: &str) {
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        text.push('"');
        text.push_str(key);
        text.push('"');
    } else {
        text.push_str(&Value::String(key.to_string()).to_string());
    }
}

/// `"identify"` (...) as JSON text, for a single call's `type`.
pub fn type_value(kind: &str) -> Cow<'static, RawValue> {
    let text = format!("\"{kind}\"");
    Cow::Owned(RawValue::from_string(text).expect("a JSON string"))
}
