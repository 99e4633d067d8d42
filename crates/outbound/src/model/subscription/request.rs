//! What Segment's Send action makes of a mapped event before it becomes a request: the
//! pipeline of actions-core (`removeEmptyValues`, then ajv with `coerceTypes: 'array'`) on the
//! `headers` and `data` fields, node-fetch's rules for header names and values, and the body
//! of a batch with the bytes its signature covers.

use super::js::{json, Thrown, V};
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// A problem with a mapped field: the field (or header) and the reason.
pub(crate) struct FieldError {
    pub(crate) field: String,
    pub(crate) reason: String,
}

fn field_error(field: &str, reason: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

/// An object-typed field (`headers`, `data`) as the action receives it: `null` and `''` are
/// dropped, anything else but an object fails the event (ajv coerces scalars, never to an
/// object).
fn object_field<'a>(field: &str, v: V<'a>) -> Result<Option<V<'a>>, FieldError> {
    if v.is_nullish() || v.as_str() == Some("") {
        return Ok(None);
    }
    if is_object(&v) {
        Ok(Some(v))
    } else {
        Err(field_error(
            field,
            format!("must be an object, got {}", v.real_type().name()),
        ))
    }
}

/// ajv's `type: object`: a non-null object that is not an array.
fn is_object(v: &V<'_>) -> bool {
    matches!(v, V::Obj(_) | V::Ref(Value::Object(_)) | V::Proto(_)) && v.items().is_none()
}

/// The request body: `JSON.stringify(data)`, or none when `data` is dropped.
pub(crate) fn body<'a>(data: V<'a>) -> Result<Option<Cow<'a, Value>>, FieldError> {
    Ok(object_field("data", data)?.and_then(|v| json::output(&v)))
}

/// The mapped headers as node-fetch sends them: names in lower case (node-fetch validates
/// them as HTTP tokens), values as `String(value)` (tab and U+0020–U+00FF only), names that
/// differ only in case joined with `, `, a header whose value is the text `undefined` dropped
/// (node-fetch's merge deletes it). Also whether the mapping sets `X-Signature` itself (or
/// removes it): then the sender signs nothing, the mapping's header wins as at Segment.
pub(crate) fn headers(v: V<'_>) -> Result<(Vec<(String, String)>, bool), FieldError> {
    let Some(v) = object_field("headers", v)? else {
        return Ok((Vec::new(), false));
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in v.entries().unwrap_or_default() {
        // Gone with mapping-kit's copy of the result (see `json::output`).
        if name == json::PROTO {
            continue;
        }
        let text = value
            .to_js_string()
            .map_err(|Thrown(m)| field_error(&format!("headers.{name}"), m))?;
        if name.is_empty() || !name.bytes().all(is_token_byte) || !name.is_ascii() {
            return Err(field_error(
                &format!("headers.{name}"),
                format!("{name} is not a legal HTTP header name"),
            ));
        }
        if !text.chars().all(|c| {
            c == '\t' || (' '..='\u{7e}').contains(&c) || ('\u{80}'..='\u{ff}').contains(&c)
        }) {
            return Err(field_error(
                &format!("headers.{name}"),
                format!("{text} is not a legal HTTP header value"),
            ));
        }
        let lower = name.to_ascii_lowercase();
        match out.iter_mut().find(|(n, _)| *n == lower) {
            Some((_, joined)) => {
                joined.push_str(", ");
                joined.push_str(&text);
            }
            None => out.push((lower, text)),
        }
    }
    let own_signature = out.iter().any(|(n, _)| n == "x-signature");
    out.retain(|(_, value)| value != "undefined");
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((out, own_signature))
}

/// HTTP token characters (node-fetch's `invalidTokenRegex` negated).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"^_`-!#$%&'*+.|~".contains(&b)
}

/// A batch body, `[b1,b2,…]` (an event without a body is `null`), and the range of it that
/// the X-Signature covers: all of it, or (Segment's way) the first element's bytes alone,
/// with no signature when the first has no body.
pub(crate) fn batch(
    bodies: &[Option<&[u8]>],
    first_element: bool,
) -> (Vec<u8>, Option<Range<usize>>) {
    let len = bodies
        .iter()
        .map(|b| b.map_or(4, <[u8]>::len) + 1)
        .sum::<usize>()
        + 1;
    let mut out = Vec::with_capacity(len);
    out.push(b'[');
    let mut first = None;
    for (i, b) in bodies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let start = out.len();
        out.extend_from_slice(b.unwrap_or(b"null"));
        if i == 0 && b.is_some() {
            first = Some(start..out.len());
        }
    }
    out.push(b']');
    let signed = if first_element {
        first
    } else {
        Some(0..out.len())
    };
    (out, signed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn h(v: Value) -> Result<Vec<(String, String)>, String> {
        headers(V::Ref(&v))
            .map(|(list, _)| list)
            .map_err(|e| format!("{}: {}", e.field, e.reason))
    }

    #[test]
    fn header_names_are_lower_cased_and_values_made_text() {
        assert_eq!(
            h(json!({"X-Count": 5, "X-On": true, "X-List": [1, 2]})).unwrap(),
            vec![
                ("x-count".into(), "5".into()),
                ("x-list".into(), "1,2".into()),
                ("x-on".into(), "true".into())
            ]
        );
    }

    #[test]
    fn headers_differing_in_case_are_joined() {
        assert_eq!(
            h(json!({"X-A": "1", "x-a": "2"})).unwrap(),
            vec![("x-a".into(), "1, 2".into())]
        );
    }

    #[test]
    fn a_header_whose_value_is_undefined_text_is_dropped() {
        assert_eq!(
            h(json!({"X-A": "undefined", "B": "1"})).unwrap(),
            vec![("b".into(), "1".into())]
        );
    }

    #[test]
    fn a_mapped_signature_header_is_noticed_even_when_dropped() {
        let v = json!({"X-Signature": "undefined"});
        assert_eq!(
            headers(V::Ref(&v)).ok().map(|(l, own)| (l.len(), own)),
            Some((0, true))
        );
    }

    #[test]
    fn illegal_header_names_and_values_fail() {
        assert!(h(json!({"Bad Name": "x"}))
            .unwrap_err()
            .starts_with("headers.Bad Name"));
        assert!(h(json!({"": "x"})).is_err());
        assert!(h(json!({"X": "line\nbreak"})).is_err());
        assert!(h(json!({"X": "€"})).is_err());
        assert!(h(json!({"X": "café"})).is_ok());
    }

    #[test]
    fn empty_and_null_headers_are_none() {
        assert_eq!(h(json!(null)).unwrap(), vec![]);
        assert_eq!(h(json!("")).unwrap(), vec![]);
        assert!(h(json!("x")).is_err());
    }

    #[test]
    fn an_array_is_not_an_object_even_with_one_object_in_it() {
        let v = json!([{"a": 1}]);
        assert!(body(V::Ref(&v)).is_err());
        assert!(h(json!([{"X-A": "1"}])).is_err());
    }

    #[test]
    fn data_must_be_an_object() {
        for bad in [json!(1), json!("x"), json!([1]), json!(true)] {
            assert!(body(V::Ref(&bad)).is_err(), "{bad}");
        }
        assert!(body(V::Ref(&json!(null))).ok().flatten().is_none());
        assert!(body(V::Undefined).ok().flatten().is_none());
    }

    #[test]
    fn a_batch_signs_all_of_its_body_or_only_the_first_element() {
        let (body, whole) = batch(&[Some(br#"{"a":1}"#), None], false);
        assert_eq!(body, br#"[{"a":1},null]"#);
        assert_eq!(whole, Some(0..body.len()));
        let (body, first) = batch(&[Some(br#"{"a":1}"#), Some(b"{}")], true);
        assert_eq!(&body[first.unwrap()], br#"{"a":1}"#);
        assert_eq!(batch(&[None, Some(b"{}")], true).1, None);
    }
}
