//! Messages given as one JSON text (C's `outbound_enqueue_json`, and the relay's events),
//! read without building a `serde_json::Value` for their `properties`, `traits` and
//! `context`: the canonical writer writes them straight from the parser, in the same pass
//! that reads the message ([`JsonObject`]).
//!
//! [`Message::from_json`] stays the reference: whatever this reading does not take as it is
//! (an id given as a float, a field of the wrong type, an unknown key, bad JSON, an object
//! with a key repeated or with many keys, a value the writer refuses) is read by it
//! instead, so results and errors are exactly its own. Both read the same text with the
//! same parser, and the objects are written at the depth the encoders write them at.

use crate::error::Error;
use crate::model::message::{Kind, Message, Object};
use crate::wire::canonical_json::{ArrayWriter, WriteJson, Writer};
use crate::wire::encode::part_writer;
use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// Objects with more keys than this are read by `Message::from_json` (repeated keys are
/// found by comparing each key with the ones before it).
pub(crate) const MAX_STREAMED_KEYS: usize = 32;

/// A free-form object (`properties`, `traits`, `context`) of a message read by
/// [`Message::from_json_text`]: already written in canonical form as the message was read
/// (no `serde_json::Value` in between; `context` with its `library` replaced, as every
/// encoder writes it), or parsed, for a message that `Message::from_json` had to read.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonObject(Repr);

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    /// Written already, canonically, at the depth of a message's object.
    Canonical(Vec<u8>),
    /// Parsed (messages read by [`Message::from_json`]).
    Parsed(Object),
}

impl Message<JsonObject> {
    /// Reads a Segment-style JSON object as [`Message::from_json`] does: same fields, same
    /// bytes on the wire, same errors. Enqueue it with
    /// [`Client::enqueue_with`](crate::Client::enqueue_with). Faster than `from_json`
    /// followed by `enqueue` for the usual message, whose `properties` or `traits` are
    /// written in canonical form while they are read; a message with something unusual (a
    /// key repeated within an object, more than 32 keys in one, an id given as a float, a
    /// field of the wrong type, bad JSON) is read by `from_json` instead.
    pub fn from_json_text(json: &str) -> Result<Self, Error> {
        let mut de = serde_json::Deserializer::from_str(json);
        if let Ok(Some(msg)) = de.deserialize_map(Fields) {
            if de.end().is_ok() {
                return Ok(msg);
            }
        }
        Ok(Message::from_json(json)?.map_objects(|o| JsonObject(Repr::Parsed(o))))
    }
}

impl JsonObject {
    /// An object written already, canonically, at the depth of a message's object.
    pub(crate) fn canonical(bytes: Vec<u8>) -> JsonObject {
        JsonObject(Repr::Canonical(bytes))
    }
}

impl WriteJson for JsonObject {
    type Error = Error;

    fn write_json(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        match &self.0 {
            Repr::Canonical(bytes) => {
                w.canonical(bytes);
                Ok(())
            }
            Repr::Parsed(object) => object.write_json(w),
        }
    }
}

/// Writes the next JSON value of the text into `w`; any error sends the message to
/// `Message::from_json`.
pub(crate) struct Stream<'s, 'a> {
    pub(crate) w: &'s mut Writer<'a>,
}

/// The next element of an array: its comma is written only once there is one.
struct Element<'s, 'w, 'a> {
    array: &'s mut ArrayWriter<'w, 'a>,
}

fn refused<E: de::Error>(e: Error) -> E {
    E::custom(e)
}

impl<'de> DeserializeSeed<'de> for Stream<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> DeserializeSeed<'de> for Element<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Stream {
            w: self.array.item(),
        })
    }
}

impl<'de> Visitor<'de> for Stream<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.w.null();
        Ok(())
    }

    fn visit_bool<E>(self, b: bool) -> Result<(), E> {
        self.w.bool(b);
        Ok(())
    }

    fn visit_u64<E>(self, u: u64) -> Result<(), E> {
        self.w.u64(u);
        Ok(())
    }

    fn visit_i64<E>(self, i: i64) -> Result<(), E> {
        self.w.i64(i);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<(), E> {
        self.w.f64(f).map_err(refused)
    }

    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.w.str(s);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut array = self.w.array().map_err(refused)?;
        while seq
            .next_element_seed(Element { array: &mut array })?
            .is_some()
        {}
        array.end();
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut object = self.w.object().map_err(refused)?;
        let mut keys: Vec<Cow<'de, str>> = Vec::with_capacity(8); // no realloc at a 5th key
        while let Some(Text(key)) = map.next_key()? {
            // `JSON.parse` keeps a repeated key's first place and last value: the parsed map
            // does that.
            if keys.len() == MAX_STREAMED_KEYS || keys.contains(&key) {
                return Err(de::Error::custom("a repeated key, or many keys"));
            }
            map.next_value_seed(Stream {
                w: object.key(&key),
            })?;
            keys.push(key);
        }
        object.end();
        Ok(())
    }
}

/// `properties`, `traits` or `context`, written at the depth `encode` writes them at;
/// `context` with its `library` replaced, as the encoders write it.
struct ObjectSeed(&'static str);

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Option<JsonObject>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        // Room for the usual object at once: grown from empty, a 150-byte `properties` took
        // a malloc and 4 reallocs (8, 16, ..., 256 bytes) per message.
        let mut out = Vec::with_capacity(256);
        let mut w = part_writer(&mut out, self.0);
        Stream { w: &mut w }.deserialize(d)?;
        Ok((out.first() == Some(&b'{')).then(|| JsonObject(Repr::Canonical(out))))
    }
}

/// A JSON string, borrowed from the text when it has no escapes.
pub(crate) struct Text<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// An id: a string, or an integer sent as its decimal text (as `Message::from_json`).
pub(crate) struct Id(pub(crate) String);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E>(self, s: &str) -> Result<Id, E> {
                Ok(Id(s.to_owned()))
            }
            fn visit_u64<E>(self, u: u64) -> Result<Id, E> {
                Ok(Id(u.to_string()))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Id, E> {
                Ok(Id(i.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The top-level object; `None` (or an error) for anything `Message::from_json` should
/// read instead.
struct Fields;

impl<'de> Visitor<'de> for Fields {
    type Value = Option<Message<JsonObject>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind = None;
        let mut msg = Message::empty(Kind::Track);
        let text = |t: Text<'_>| Some(t.0.into_owned());
        while let Some(Text(key)) = map.next_key()? {
            match &*key {
                "type" => match Kind::parse(&map.next_value::<Text>()?.0) {
                    Some(k) => kind = Some(k),
                    None => return Ok(None),
                },
                "userId" => msg.user_id = Some(map.next_value::<Id>()?.0),
                "anonymousId" => msg.anonymous_id = Some(map.next_value::<Id>()?.0),
                "groupId" => msg.group_id = Some(map.next_value::<Id>()?.0),
                "previousId" => msg.previous_id = Some(map.next_value::<Id>()?.0),
                "messageId" => msg.message_id = text(map.next_value()?),
                "event" => msg.event = text(map.next_value()?),
                "name" => msg.name = text(map.next_value()?),
                "category" => msg.category = text(map.next_value()?),
                "timestamp" => match crate::model::timestamp::parse(&map.next_value::<Text>()?.0) {
                    Ok(t) => msg.timestamp = Some(t),
                    Err(_) => return Ok(None),
                },
                "integrations" => msg.integrations = Some(map.next_value()?),
                // Written with our `library` already (parsed into a map, it was most of the
                // relay's allocations per event).
                "context" => match map.next_value_seed(ObjectSeed("context"))? {
                    Some(o) => msg.context = Some(o),
                    None => return Ok(None),
                },
                "properties" => match map.next_value_seed(ObjectSeed("properties"))? {
                    Some(o) => msg.properties = Some(o),
                    None => return Ok(None),
                },
                "traits" => match map.next_value_seed(ObjectSeed("traits"))? {
                    Some(o) => msg.traits = Some(o),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        Ok(kind.map(|kind| Message { kind, ..msg }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written<O: WriteJson<Error = Error>>(o: &Option<O>) -> Option<String> {
        let mut out = Vec::new();
        o.as_ref()?
            .write_json(&mut Writer::at_depth(&mut out, 1, "object"))
            .unwrap();
        Some(String::from_utf8(out).unwrap())
    }

    /// `context` as the encoders write it (our `library`).
    fn written_context<O: WriteJson<Error = Error>>(o: &Option<O>) -> Option<String> {
        let mut out = Vec::new();
        o.as_ref()?
            .write_json(&mut part_writer(&mut out, "context"))
            .unwrap();
        Some(String::from_utf8(out).unwrap())
    }

    fn scalars<O>(m: &Message<O>) -> String {
        format!(
            "{:?}",
            (
                m.kind,
                &m.user_id,
                &m.anonymous_id,
                &m.message_id,
                m.timestamp,
                &m.integrations,
                (&m.event, &m.name, &m.category, &m.group_id, &m.previous_id)
            )
        )
    }

    /// `from_json_text` gives what `from_json` gives (fields, the objects' bytes, errors);
    /// true when it wrote an object as it read it.
    fn read_alike(text: &str) -> bool {
        let (fast, reference) = match (Message::from_json_text(text), Message::from_json(text)) {
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{text}");
                return false;
            }
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => panic!("{text}: {a:?} against {b:?}"),
        };
        assert_eq!(scalars(&fast), scalars(&reference), "{text}");
        assert_eq!(
            [
                written_context(&fast.context),
                written(&fast.properties),
                written(&fast.traits)
            ],
            [
                written_context(&reference.context),
                written(&reference.properties),
                written(&reference.traits)
            ],
            "{text}"
        );
        [&fast.properties, &fast.traits, &fast.context]
            .iter()
            .any(|o| matches!(o, Some(JsonObject(Repr::Canonical(_)))))
    }

    fn track(properties: &str) -> String {
        format!(r#"{{"type":"track","userId":"u","event":"e","properties":{properties}}}"#)
    }

    #[test]
    fn objects_are_written_as_the_parsed_map_writes_them() {
        // Written as read.
        for text in [
            r#"{}"#,
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            r#" { "z" : 1 , "10" : 2 , "2" : 3 , "a" : [ ] , "4294967294" : 4 , "4294967295" : 5 } "#,
            r#"{"library":{"name":"theirs"},"ip":"1.2.3.4"}"#,
            r#"{"big":9007199254740993,"neg":-9007199254740993,"u":18446744073709551615}"#,
            r#"{"f":0.1,"g":-0.0,"h":1e300,"i":5e-324,"j":1.5e-7,"k":123456789012345678901234567890}"#,
            r#"{"s":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00 \u2028 \/ \u0001","\u00e9":"key"}"#,
            r#"{"arr":[[[[[]]]],{},[{}],"x",1,-1,1.0]}"#,
        ] {
            assert!(read_alike(&track(text)), "not written as read: {text}");
        }
        let deep = format!("{}1{}", "{\"a\":[".repeat(40), "]}".repeat(40));
        assert!(read_alike(&track(&deep)));
        // Read by from_json: repeated keys (first place, last value), many keys.
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        for text in [
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"x":{"k":1,"j":2,"k":[1,{"k":1,"k":2}]}}"#,
            r#"{"1":"a","1":"b","0":"c"}"#,
            r#"{"esc\"aped":1,"esc\u0022aped":2}"#,
            &format!("{{{}}}", many.join(",")),
        ] {
            assert!(!read_alike(&track(text)), "written as read: {text}");
        }
    }

    /// A random JSON object of few keys, so repeats and index keys are common.
    fn random_value(rng: &mut fastrand::Rng, depth: u32) -> String {
        match rng.u8(0..if depth > 3 { 5 } else { 7 }) {
            0 => "null".into(),
            1 => ["true", "false"][rng.usize(0..2)].into(),
            2 => rng.i64(-(1 << 60)..(1 << 60)).to_string(),
            3 => format!("{:e}", rng.f64() * 10f64.powi(rng.i32(-30..30))),
            4 => format!(
                "\"{}\"",
                ["", "a", "é", "\\n", "\\u0000", "\\\"", "x y"][rng.usize(0..7)]
            ),
            5 => {
                let items: Vec<String> = (0..rng.usize(0..4))
                    .map(|_| random_value(rng, depth + 1))
                    .collect();
                format!("[{}]", items.join(","))
            }
            _ => random_object(rng, depth + 1),
        }
    }

    fn random_object(rng: &mut fastrand::Rng, depth: u32) -> String {
        const KEYS: [&str; 8] = ["a", "b", "0", "1", "10", "library", "é", "a\\u0000"];
        let entries: Vec<String> = (0..rng.usize(0..7))
            .map(|_| {
                let key = KEYS[rng.usize(0..KEYS.len())];
                format!("\"{key}\":{}", random_value(rng, depth))
            })
            .collect();
        format!("{{{}}}", entries.join(","))
    }

    #[test]
    fn random_messages_are_read_as_from_json_reads_them() {
        let mut rng = fastrand::Rng::with_seed(13);
        let mut streamed = 0;
        for _ in 0..3000 {
            let props = random_object(&mut rng, 0);
            let traits = random_object(&mut rng, 0);
            let context = random_object(&mut rng, 0);
            let text = format!(
                r#"{{"type":"identify","userId":"u","traits":{traits},"context":{context},"properties":{props}}}"#
            );
            streamed += usize::from(read_alike(&text));
        }
        // Both ways are exercised: objects without repeated keys, and with.
        assert!((300..2900).contains(&streamed), "{streamed}");
    }

    #[test]
    fn messages_are_read_as_from_json_reads_them() {
        for text in [
            r#"{"type":"group","userId":42,"groupId":-7,"traits":{"n":1},"context":{"ip":"1.2.3.4","library":{"name":"x"}},"integrations":{"All":false},"messageId":"m","timestamp":"2026-11-21T09:30:00.123+01:00","anonymousId":"a"}"#,
            r#" {"properties":{"b":1,"a":2},"event":"e","type":"track","anonymousId":"a\u00e9"} "#,
            r#"{"type":"identify","type":"page","userId":"u","name":"n","category":"c","properties":{}}"#,
            r#"{"type":"screen","userId":"u","properties":{"x":1},"properties":{"y":2}}"#,
        ] {
            assert!(read_alike(text), "not read as text: {text}");
        }
        // Read by from_json: an id given as a float.
        let float_id = r#"{"type":"track","userId":4.5,"event":"e","properties":{"a":1}}"#;
        assert!(!read_alike(float_id));
        // Around the parser's and the writer's limits (128 levels), either way, the same
        // results and errors.
        let mut ways = [0; 2];
        for depth in 120..136 {
            let text = track(&format!(
                "{}1{}",
                "{\"a\":".repeat(depth),
                "}".repeat(depth)
            ));
            ways[usize::from(read_alike(&text))] += 1;
        }
        assert!(ways[0] > 0 && ways[1] > 0, "{ways:?}");
        // Errors: exactly from_json's.
        for text in [
            "".to_string(),
            "[]".into(),
            "null".into(),
            r#"{"userId":"u"}"#.into(),
            r#"{"type":"nope","userId":"u"}"#.into(),
            r#"{"type":7}"#.into(),
            r#"{"type":"track","userId":null,"event":"e"}"#.into(),
            track("[1]"),
            track("null"),
            r#"{"type":"track","userId":"u","event":"e","context":"x"}"#.into(),
            r#"{"type":"track","userId":"u","event":"e","integrations":[]}"#.into(),
            r#"{"type":"track","userId":"u","event":"e","timestamp":"yesterday"}"#.into(),
            r#"{"type":"track","userId":"u","event":"e","extra":1}"#.into(),
            r#"{"type":"track","userId":"u","event":"e"} trailing"#.into(),
            track(r#"{"a":1e400}"#),
            track(r#"{"a":"\ud800"}"#),
            track(r#"{"a":}"#),
            track(&format!("{}1{}", "{\"a\":".repeat(140), "}".repeat(140))),
        ] {
            assert!(!read_alike(&text), "{text}");
        }
    }
}
