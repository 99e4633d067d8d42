//! One event's fields → the core's `Message`: the SDKs' transport fields and `null` fields
//! taken off, a single call's `type` set from its path, `delete` refused; the event rebuilt as
//! text from its fields' own text (nested values copied, not re-parsed) for
//! `Message::from_json_text`, which decides everything else.

use super::fields::Fields;
use outbound::{Error, Message};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

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

/// Takes off the transport fields and reads the event with the core. A top-level field
/// that is `null` is absent, as in Segment's API (analytics-python sends
/// `"anonymousId": null`, `"name": null`, ...). `text` is a buffer for the rebuilt event,
/// kept between the events of a batch.
pub fn read_event(
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

/// `"identify"` (...) as JSON text, for a single call's `type`.
pub fn type_value(kind: &str) -> Cow<'static, RawValue> {
    let text = format!("\"{kind}\"");
    Cow::Owned(RawValue::from_string(text).expect("a JSON string"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
