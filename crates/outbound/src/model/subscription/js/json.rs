//! `JSON.stringify` and `JSON.parse` of JavaScript values. A mapped body is what Segment's code
//! would send, `JSON.stringify(value)`; as a `serde_json::Value` that is
//! `JSON.parse(JSON.stringify(value))`: `undefined` and functions leave objects and become
//! `null` in arrays, NaN and the infinities become `null`.

use super::{js_entries, number, Proto, V};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// The JSON number JavaScript would write for `f` (`null` when it is not finite). Integers
/// stay integers, so the value compares equal to one parsed from the same text.
pub(crate) fn number_value(f: f64) -> Value {
    if !f.is_finite() {
        return Value::Null;
    }
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        return Value::Number(Number::from(f as i64));
    }
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// `JSON.parse(JSON.stringify(v))`, borrowing JSON that is already there; `None` where
/// `JSON.stringify` gives `undefined`.
pub(crate) fn to_json<'a>(v: &V<'a>) -> Option<Cow<'a, Value>> {
    Some(match v {
        V::Ref(r) => Cow::Borrowed(*r),
        V::Undefined | V::Func(_) => return None,
        other => Cow::Owned(owned(other)?),
    })
}

fn owned(v: &V<'_>) -> Option<Value> {
    Some(match v {
        V::Undefined | V::Func(_) => return None,
        V::Null => Value::Null,
        V::Bool(b) => Value::Bool(*b),
        V::Num(n) => number_value(*n),
        V::Str(s) => Value::String(s.to_string()),
        V::Lone(_) => Value::String(super::string::LONE.to_owned()),
        V::Ref(r) => (*r).clone(),
        V::Arr(items) => Value::Array(
            items
                .iter()
                .map(|i| owned(i).unwrap_or(Value::Null))
                .collect(),
        ),
        V::Obj(o) => {
            let mut map = Map::with_capacity(o.len());
            for (k, item) in o.iter() {
                if let Some(j) = owned(item) {
                    map.insert(k.to_string(), j);
                }
            }
            Value::Object(map)
        }
        V::Proto(p) => match p {
            Proto::Object => Value::Object(Map::new()),
            Proto::Array => Value::Array(Vec::new()),
            Proto::String => Value::String(String::new()),
            Proto::Number => Value::from(0),
            Proto::Boolean => Value::Bool(false),
        },
    })
}

/// `JSON.stringify(v)`: `None` where JavaScript gives `undefined`.
pub(crate) fn stringify(v: &V<'_>) -> Option<String> {
    let json = to_json(v)?;
    let mut out = String::new();
    write(&json, &mut out);
    Some(out)
}

/// `JSON.stringify` of a JSON value: compact, keys in JavaScript's order, numbers as
/// JavaScript prints them, only `"`, `\` and control characters escaped.
pub(crate) fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => number::write(out, f),
            _ => out.push_str("null"),
        },
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in js_entries(map).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `JSON.parse(text)`, `None` where it throws.
pub(crate) fn parse(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stringify_writes_javascripts_bytes() {
        let v = json!({"b": [1.0, 1e21, "é\u{1}\n\"\\"], "10": null, "2": true});
        assert_eq!(
            stringify(&V::Ref(&v)).unwrap(),
            r#"{"2":true,"10":null,"b":[1,1e+21,"é\u0001\n\"\\"]}"#
        );
    }

    #[test]
    fn undefined_and_functions_leave_objects_and_become_null_in_arrays() {
        let mut o = super::super::Obj::default();
        o.set(Cow::Borrowed("a"), V::Undefined);
        o.set(
            Cow::Borrowed("f"),
            V::Func(super::super::Builtin {
                name: "x",
                length: 0,
            }),
        );
        o.set(Cow::Borrowed("n"), V::Num(f64::NAN));
        o.set(Cow::Borrowed("l"), V::Arr(vec![V::Undefined, V::Num(1.5)]));
        assert_eq!(
            stringify(&V::Obj(o)).unwrap(),
            r#"{"n":null,"l":[null,1.5]}"#
        );
        assert_eq!(stringify(&V::Undefined), None);
    }

    #[test]
    fn integral_numbers_become_integers() {
        assert_eq!(number_value(3.0), json!(3));
        assert_eq!(number_value(-0.0), json!(0));
        assert_eq!(number_value(0.5), json!(0.5));
        assert_eq!(number_value(f64::INFINITY), Value::Null);
    }
}
