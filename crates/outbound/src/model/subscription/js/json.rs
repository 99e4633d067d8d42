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

/// A mapping's result as JSON, after mapping-kit's `removeUndefined`: that copies every object
/// with `Object.assign`, whose `__proto__` key sets a prototype instead of a property, so no
/// object of the result keeps one.
pub(crate) fn output<'a>(v: &V<'a>) -> Option<Cow<'a, Value>> {
    let json = to_json(v)?;
    if !has_proto_key(&json) {
        return Some(json);
    }
    let mut owned = json.into_owned();
    drop_proto_keys(&mut owned);
    Some(Cow::Owned(owned))
}

/// The key `Object.assign` and property assignment do not copy.
pub(crate) const PROTO: &str = "__proto__";

/// One pass over the keys, descending only into containers: the default body is the whole
/// event, scanned once per event.
fn has_proto_key(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| {
            (k.len() == PROTO.len() && k == PROTO)
                || (matches!(v, Value::Object(_) | Value::Array(_)) && has_proto_key(v))
        }),
        Value::Array(items) => items
            .iter()
            .any(|v| matches!(v, Value::Object(_) | Value::Array(_)) && has_proto_key(v)),
        _ => false,
    }
}

fn drop_proto_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.shift_remove(PROTO);
            m.values_mut().for_each(drop_proto_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_proto_keys),
        _ => {}
    }
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

/// `JSON.parse(text)`, `None` where it throws. Read by hand rather than by serde_json, whose
/// numbers must be finite (`1e400` is Infinity here) and whose nesting is shallower.
pub(crate) fn parse(text: &str) -> Option<V<'static>> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    p.space();
    let v = p.value(0)?;
    p.space();
    (p.i == p.b.len()).then_some(v)
}

/// Deeper than this, `parse` gives up (JavaScript would go on).
const MAX_DEPTH: usize = 1000;

struct Parser<'t> {
    b: &'t [u8],
    i: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    fn word(&mut self, w: &[u8], v: V<'static>) -> Option<V<'static>> {
        self.b[self.i..].starts_with(w).then(|| {
            self.i += w.len();
            v
        })
    }

    fn value(&mut self, depth: usize) -> Option<V<'static>> {
        if depth > MAX_DEPTH {
            return None;
        }
        match *self.b.get(self.i)? {
            b'n' => self.word(b"null", V::Null),
            b't' => self.word(b"true", V::Bool(true)),
            b'f' => self.word(b"false", V::Bool(false)),
            b'"' => self.string().map(|s| V::Str(std::borrow::Cow::Owned(s))),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.space();
                if self.eat(b']') {
                    return Some(V::Arr(items));
                }
                loop {
                    self.space();
                    items.push(self.value(depth + 1)?);
                    self.space();
                    if self.eat(b']') {
                        return Some(V::Arr(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut o = super::Obj::default();
                self.space();
                if self.eat(b'}') {
                    return Some(V::Obj(o));
                }
                loop {
                    self.space();
                    if self.b.get(self.i) != Some(&b'"') {
                        return None;
                    }
                    let key = self.string()?;
                    self.space();
                    if !self.eat(b':') {
                        return None;
                    }
                    self.space();
                    let v = self.value(depth + 1)?;
                    o.set(std::borrow::Cow::Owned(key), v);
                    self.space();
                    if self.eat(b'}') {
                        return Some(V::Obj(o));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            _ => self.number(),
        }
    }

    /// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`, read as the nearest double.
    fn number(&mut self) -> Option<V<'static>> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let from = p.i;
            while p.i < p.b.len() && p.b[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - from
        };
        self.eat(b'-');
        if self.eat(b'0') {
            if self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                return None;
            }
        } else if digits(self) == 0 {
            return None;
        }
        if self.eat(b'.') && digits(self) == 0 {
            return None;
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if digits(self) == 0 {
                return None;
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        text.parse::<f64>().ok().map(V::Num)
    }

    /// A string's text; a lone surrogate escape becomes U+FFFD.
    fn string(&mut self) -> Option<String> {
        self.i += 1;
        let mut out = String::new();
        let mut pending: Option<u16> = None;
        loop {
            let c = *self.b.get(self.i)?;
            // A high surrogate not followed by a low one's escape is alone.
            if (c != b'\\' || self.b.get(self.i + 1) != Some(&b'u')) && pending.take().is_some() {
                out.push('\u{FFFD}');
            }
            match c {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                0..=0x1f => return None,
                b'\\' => {
                    let e = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    let plain = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = std::str::from_utf8(self.b.get(self.i..self.i + 4)?).ok()?;
                            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                                return None;
                            }
                            let u = u16::from_str_radix(hex, 16).ok()?;
                            self.i += 4;
                            match (pending.take(), u) {
                                (Some(high), 0xDC00..=0xDFFF) => {
                                    let c = 0x10000
                                        + ((u32::from(high) - 0xD800) << 10)
                                        + (u32::from(u) - 0xDC00);
                                    out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                                }
                                (previous, 0xD800..=0xDBFF) => {
                                    if previous.is_some() {
                                        out.push('\u{FFFD}');
                                    }
                                    pending = Some(u);
                                }
                                (previous, _) => {
                                    if previous.is_some() {
                                        out.push('\u{FFFD}');
                                    }
                                    out.push(char::from_u32(u32::from(u)).unwrap_or('\u{FFFD}'));
                                }
                            }
                            continue;
                        }
                        _ => return None,
                    };
                    out.push(plain);
                }
                _ => {
                    let len = match c {
                        0xF0..=0xF7 => 4,
                        0xE0..=0xEF => 3,
                        0xC0..=0xDF => 2,
                        _ => 1,
                    };
                    out.push_str(std::str::from_utf8(self.b.get(self.i..self.i + len)?).ok()?);
                    self.i += len;
                }
            }
        }
    }
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
    fn parse_reads_what_json_parse_reads() {
        let v = parse(r#" {"b": [1e400, -0, 1E2, "\u00e9\ud83d\ude00"], "1": null} "#).unwrap();
        assert_eq!(
            stringify(&v).unwrap(),
            r#"{"1":null,"b":[null,0,100,"é😀"]}"#
        );
        for bad in [
            "",
            "01",
            "1.",
            "[1,]",
            "{\"a\":1,}",
            "\"a\\u00\"",
            "\"\t\"",
            "tru",
            "1 2",
            "{a:1}",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn integral_numbers_become_integers() {
        assert_eq!(number_value(3.0), json!(3));
        assert_eq!(number_value(-0.0), json!(0));
        assert_eq!(number_value(0.5), json!(0.5));
        assert_eq!(number_value(f64::INFINITY), Value::Null);
    }
}
