//! A body read into its top-level fields in one pass, each value kept as its own text (an
//! event goes to the core as text, `Message::from_json_text`, never through a `Value` tree);
//! a batch's events are found in the same pass, each kept as its text for the core to read
//! (`Message::collect_in_batch`): no event is read twice.
//!
//! This runs before the write key is looked at, so it is linear in the body's bytes whatever
//! their shape. A repeated key is kept as it came, in its place: [`Fields::get`] reads the
//! last one (JSON's rule, as `serde_json::Map`), and the core, which reads each event's text,
//! resolves repeats itself. (Finding repeats here by comparing each key with every earlier
//! one cost 2.4 s of CPU for a body of 62,498 keys; an index still cost a third of the
//! request.) A batch's elements past Segment's [`MAX_BATCH_EVENTS`] are consumed unread, and
//! a body is parsed a second time only in the one case that needs it (a `batch` beyond a
//! double's range, below).

use outbound::MAX_BATCH_EVENTS;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A JSON object's top-level fields in order, each value as its own text; a repeated key is
/// kept in each of its places, and the last one counts.
pub struct Fields<'a>(pub Vec<(Cow<'a, str>, Cow<'a, RawValue>)>);

impl<'a> Fields<'a> {
    /// The value of `key` (its last, when repeated).
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    pub fn contains(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    /// Takes `key` out (every place it has), and gives its value (the last).
    pub fn remove(&mut self, key: &str) -> Option<Cow<'a, RawValue>> {
        let mut value = None;
        self.0.retain_mut(|(k, v)| {
            if k != key {
                return true;
            }
            value = Some(std::mem::replace(v, Cow::Borrowed(RawValue::NULL)));
            false
        });
        value
    }

    /// Sets `key` to `value`, in place of every value it had.
    pub fn set(&mut self, key: &'static str, value: Cow<'a, RawValue>) {
        self.remove(key);
        self.0.push((Cow::Borrowed(key), value));
    }
}

/// A batch's `batch` array.
#[derive(Default)]
pub struct Batch<'a> {
    /// Its elements that are objects, each with its place, among the first
    /// [`MAX_BATCH_EVENTS`]: their text, which the core reads (no event is read twice).
    pub events: Vec<(usize, &'a RawValue)>,
    /// The places of the elements among the first [`MAX_BATCH_EVENTS`] that are not objects.
    pub not_objects: Vec<usize>,
    /// How many elements it has (those past the limit were consumed, not read).
    pub total: usize,
}

impl<'a> Batch<'a> {
    /// Its next element: an event when it is an object.
    fn push(&mut self, element: &'a RawValue) {
        match element.get().starts_with('{') {
            true => self.events.push((self.total, element)),
            false => self.not_objects.push(self.total),
        }
        self.total += 1;
    }
}

/// A body: its fields and, read on a batch path, its `batch` (`None`: not an array).
pub struct Body<'a> {
    pub fields: Fields<'a>,
    pub batch: Option<Batch<'a>>,
    /// The whole body as text, when its UTF-8 check passed here (a single call's event goes
    /// to the core as it is, not checked again).
    pub text: Option<&'a str>,
}

/// Why a body (or an event) is not a JSON object.
pub enum ParseError {
    NotJson(serde_json::Error),
    NotObject,
}

/// Reads the JSON object `text`; with `batch`, its `batch` read as a [`Batch`].
pub fn parse(text: &[u8], batch: bool) -> Result<Body<'_>, ParseError> {
    match parse_object(text, batch) {
        // A `batch` beyond a double's range (`1e400`) stops the one pass, which reads a batch
        // that is not an array as a value; read in passes, it is a batch that is not an array.
        // No other error is worth a second pass (a trailing comma was parsed twice).
        Err(ParseError::NotJson(e))
            if batch && e.to_string().starts_with("number out of range") =>
        {
            parse_in_passes(text)
        }
        read => read,
    }
}

/// Reads an object into its fields; with `batch`, the value of its `batch` key is read as a
/// [`Batch`] (kept apart from the fields) instead of kept as text.
struct FieldsVisitor {
    batch: bool,
}

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = (Fields<'de>, Option<Batch<'de>>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Grown as read: a hostile batch of 2,500 tiny objects must not take room for 12
        // fields each.
        let mut fields = Vec::new();
        let mut batch = None;
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            if self.batch && k == "batch" {
                // A later `batch` replaces an earlier one, as any other repeated key.
                batch = map.next_value_seed(BatchSeed)?;
                continue;
            }
            let v: &'de RawValue = map.next_value()?;
            fields.push((k, Cow::Borrowed(v)));
        }
        Ok((Fields(fields), batch))
    }
}

/// A `batch` value: an array's elements read as events (the first [`MAX_BATCH_EVENTS`]),
/// anything else consumed and `None`.
struct BatchSeed;

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

impl<'de> DeserializeSeed<'de> for BatchSeed {
    type Value = Option<Batch<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Batch<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of events")
            }
            consume_the_rest!(Option<Batch<'de>>);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut batch = Batch::default();
                while batch.total < MAX_BATCH_EVENTS {
                    match seq.next_element::<&'de RawValue>()? {
                        None => return Ok(Some(batch)),
                        Some(element) => batch.push(element),
                    }
                }
                // Past Segment's limit: counted, never read into fields.
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    batch.total += 1;
                }
                Ok(Some(batch))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(None)
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

/// The top-level fields of the JSON object `text`; with `batch`, its `batch` read as a
/// [`Batch`] (see [`FieldsVisitor`]).
fn parse_object(text: &[u8], batch: bool) -> Result<Body<'_>, ParseError> {
    // UTF-8 checked once for the whole body: read from bytes, the parser checks the text of
    // every value it keeps (each field of each event) on its own.
    let checked = std::str::from_utf8(text).ok();
    let read = match checked {
        Some(text) => one_pass(serde_json::Deserializer::from_str(text), batch),
        None => one_pass(serde_json::Deserializer::from_slice(text), batch),
    };
    match read {
        Ok((fields, batch)) => Ok(Body {
            fields,
            batch,
            text: checked,
        }),
        Err(e) if e.is_data() => {
            // Valid JSON that is not an object, or not valid JSON at all? (Only the top level
            // can be of the wrong type, so this is known from its first byte on; the whole
            // body is checked to tell which, once, linearly.)
            match serde_json::from_slice::<IgnoredAny>(text) {
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
) -> Result<(Fields<'de>, Option<Batch<'de>>), serde_json::Error> {
    de.deserialize_map(FieldsVisitor { batch })
        .and_then(|f| de.end().map(|()| f))
}

/// A batch read in passes (the body's fields, then the batch's elements as text), for a body
/// the one pass refused for a number beyond a double's range: invalid JSON is refused here
/// too, the same way.
fn parse_in_passes(text: &[u8]) -> Result<Body<'_>, ParseError> {
    let Body {
        mut fields, text, ..
    } = parse_object(text, false)?;
    let batch = match fields.remove("batch") {
        Some(Cow::Borrowed(list)) => {
            let mut de = serde_json::Deserializer::from_str(list.get());
            RawElements.deserialize(&mut de).ok().flatten()
        }
        _ => None,
    };
    Ok(Body {
        fields,
        batch,
        text,
    })
}

/// An array's elements as text (the first [`MAX_BATCH_EVENTS`]); anything else `None`.
struct RawElements;

impl<'de> DeserializeSeed<'de> for RawElements {
    type Value = Option<Batch<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Batch<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut batch = Batch::default();
                while let Some(element) = seq.next_element::<&'de RawValue>()? {
                    match batch.total < MAX_BATCH_EVENTS {
                        true => batch.push(element),
                        false => batch.total += 1,
                    }
                }
                Ok(Some(batch))
            }
        }
        // Anything but an array: not a batch (a number beyond range included).
        d.deserialize_any(V).or(Ok(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object's fields, name and text.
    type Own = Vec<(String, String)>;

    /// The body's fields and its batch's elements, each an event's fields or `None`.
    type Read = (Own, Option<Vec<Option<Own>>>);

    fn own(f: &Fields<'_>) -> Own {
        (f.0.iter())
            .map(|(k, v)| (k.to_string(), v.get().to_string()))
            .collect()
    }

    fn elements(batch: &Batch<'_>) -> Vec<Option<Own>> {
        let mut out = vec![None; batch.total.min(MAX_BATCH_EVENTS)];
        for (at, text) in &batch.events {
            let Ok(event) = parse(text.get().as_bytes(), false) else {
                panic!("an element kept that is not an object: {}", text.get());
            };
            out[*at] = Some(own(&event.fields));
        }
        out
    }

    fn read(text: &str, batch: bool) -> Read {
        let Ok(body) = parse(text.as_bytes(), batch) else {
            panic!("not read: {text}");
        };
        (own(&body.fields), body.batch.as_ref().map(elements))
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
                // A repeated key is kept in each place.
                Some(kv(&[
                    ("a", "1"),
                    ("b", r#"{"c":[1,2]}"#),
                    ("a", "\"again\"")
                ])),
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
    fn a_repeated_key_reads_as_its_last_value_and_goes_whole() {
        let text = r#"{"k":1,"writeKey":"a","x":2,"writeKey":"b","k":3}"#;
        let mut fields = parse(text.as_bytes(), false).ok().unwrap().fields;
        assert_eq!(fields.get("writeKey").map(|v| v.get()), Some("\"b\""));
        assert_eq!(
            fields.remove("k").map(|v| v.get().to_string()),
            Some("3".into())
        );
        assert!(!fields.contains("k"));
        fields.set("writeKey", Cow::Borrowed(RawValue::NULL));
        assert_eq!(own(&fields), kv(&[("x", "2"), ("writeKey", "null")]));
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
    fn elements_past_the_limit_are_counted_not_read() {
        let n = MAX_BATCH_EVENTS + 7;
        let text = format!("{{\"batch\":[{}{{}}]}}", "0,".repeat(n - 1));
        let body = parse(text.as_bytes(), true).ok().unwrap();
        let batch = body.batch.unwrap();
        assert_eq!(batch.total, n);
        assert_eq!(batch.not_objects.len(), MAX_BATCH_EVENTS);
        // The last element is an object, past the limit: not read.
        assert!(batch.events.is_empty());
    }

    #[test]
    fn an_element_beyond_a_doubles_range_is_refused_alone() {
        let text = br#"{"batch":[{"a":1},1e400,[1e400]],"x":2}"#;
        // Elements are kept as text, so the one pass reads it.
        assert!(parse_object(text, true).is_ok());
        let Ok(body) = parse(text, true) else {
            panic!("not read in passes");
        };
        assert_eq!(body.fields.0.len(), 1);
        assert_eq!(body.fields.get("x").map(|v| v.get()), Some("2"));
        assert_eq!(
            elements(&body.batch.unwrap()),
            [Some(kv(&[("a", "1")])), None, None]
        );
        assert!(matches!(
            parse(br#"{"batch":1e400}"#, true),
            Ok(Body { batch: None, .. })
        ));
        assert!(matches!(
            parse(br#"{"batch":[1,}"#, true),
            Err(ParseError::NotJson(_))
        ));
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
            r#"{"batch":[],}"#,
        ] {
            assert!(
                matches!(parse(text.as_bytes(), true), Err(ParseError::NotJson(_))),
                "{text}"
            );
        }
        assert!(matches!(parse(b"[1]", true), Err(ParseError::NotObject)));
    }
}
