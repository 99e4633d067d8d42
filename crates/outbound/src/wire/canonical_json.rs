//! The one JSON writer used for every body we send.
//!
//! Receivers following the spec verify signatures over `JSON.stringify(JSON.parse(body))`,
//! so every body must already be a fixed point of that round trip, byte for byte:
//!
//! - compact separators, raw UTF-8 (U+2028 and U+2029 too);
//! - strings escape only `"`, `\` and U+0000..U+001F (`\b \f \n \r \t`, others `\u00xx`);
//! - numbers as ECMAScript's `Number.prototype.toString` writes them (`1.0` → `1`,
//!   `-0.0` → `0`, `1e21` → `1e+21`, `1e-7` → `1e-7`);
//! - integers beyond ±(2^53 − 1) are written as the nearest double, which is what
//!   JavaScript reads them as (`9007199254740993` → `9007199254740992`): JavaScript
//!   cannot carry them exactly, so a receiver never sees more precision than that;
//! - object keys keep insertion order, except array-index keys (canonical decimal
//!   integers 0..=4294967294), which come first in ascending numeric order, as in
//!   JavaScript objects.

use crate::error::Error;
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted; deeper values are refused rather than risking the stack.
pub const MAX_DEPTH: usize = 128;

/// Serializes `value` canonically.
pub fn to_vec(value: &Value) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(128);
    value.write_json(&mut Writer::new(&mut out))?;
    Ok(out)
}

/// Serializes `value` canonically into a `String`.
pub fn to_string(value: &Value) -> Result<String, Error> {
    to_vec(value).map(|v| String::from_utf8(v).expect("writer emits UTF-8"))
}

/// A value the encoders write without a [`Value`] of it being built first. Bindings
/// implement it for their own objects (Python's `dict`, ...): they walk the value and call
/// the [`Writer`], which applies every rule of this module (escapes, numbers, key order,
/// depth), so a binding only says what the value is.
pub trait WriteJson {
    /// The walker's own error; it carries this crate's errors too (a NaN, too deep).
    type Error: From<Error>;

    /// Writes this value with `w`: exactly one value (one scalar, or one
    /// [`object`](Writer::object) / [`array`](Writer::array) with its contents).
    fn write_json(&self, w: &mut Writer<'_>) -> Result<(), Self::Error>;
}

impl WriteJson for Value {
    type Error = Error;

    fn write_json(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        match self {
            Value::Null => w.null(),
            Value::Bool(b) => w.bool(*b),
            Value::Number(n) => w.number(n),
            Value::String(s) => w.str(s),
            Value::Array(items) => {
                let mut a = w.array()?;
                for item in items {
                    item.write_json(a.item())?;
                }
                a.end();
            }
            Value::Object(map) => map.write_json(w)?,
        }
        Ok(())
    }
}

impl WriteJson for Map<String, Value> {
    type Error = Error;

    fn write_json(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let mut o = w.object()?;
        for (k, v) in self {
            v.write_json(o.key(k))?;
        }
        o.end();
        Ok(())
    }
}

/// Writes one JSON value canonically into a byte buffer, driven by a [`WriteJson`] walker.
/// Containers are written through the [`ObjectWriter`] / [`ArrayWriter`] they return, which
/// place the separators; an object's keys may come in any order (array-index keys are moved
/// first when the object ends). The keys of one object must be distinct.
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
    /// Nesting of the next value: containers at `MAX_DEPTH` or deeper are refused.
    depth: usize,
    /// Entries of objects being reordered (see `ObjectWriter::end`); empty almost always.
    moved: Vec<Entry>,
    /// What errors name: the top-level field being written (`properties`), or `value`.
    field: &'static str,
    /// Taken by the next object: see `replace_in_next_object`.
    replace_next: Option<(&'static str, &'static [u8])>,
}

/// One entry of an object being reordered: where its key starts, and where it goes.
struct Entry {
    start: usize,
    place: Place,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// An array-index key: first, in numeric order.
    Index(u32),
    /// Any other key: after those, in the order written.
    Plain,
    /// The key being replaced (`context.library`): left out.
    Dropped,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Writer::at_depth(out, 0, "value")
    }

    pub(crate) fn at_depth(out: &'a mut Vec<u8>, depth: usize, field: &'static str) -> Self {
        Writer {
            out,
            depth,
            field,
            moved: Vec::new(),
            replace_next: None,
        }
    }

    /// A value already written canonically by a writer at this depth (see `json_text`).
    pub(crate) fn canonical(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// How many bytes the buffer holds: with [`written_since`](Self::written_since), what a
    /// value just written came to (`read_collected.rs` reads `context.library`'s name from it).
    pub(crate) fn len(&self) -> usize {
        self.out.len()
    }

    /// The bytes written from `at` on.
    pub(crate) fn written_since(&self, at: usize) -> &[u8] {
        &self.out[at..]
    }

    /// `null`.
    pub fn null(&mut self) {
        self.out.extend_from_slice(b"null");
    }

    /// `true` or `false`.
    pub fn bool(&mut self, b: bool) {
        self.out
            .extend_from_slice(if b { b"true" } else { b"false" });
    }

    /// An integer; beyond ±(2^53 − 1) the double JavaScript reads it as.
    pub fn i64(&mut self, i: i64) {
        if i.unsigned_abs() <= MAX_SAFE {
            self.out
                .extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
        } else {
            write_f64(self.out, i as f64);
        }
    }

    /// An integer; beyond 2^53 − 1 the double JavaScript reads it as.
    pub fn u64(&mut self, u: u64) {
        if u <= MAX_SAFE {
            self.out
                .extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
        } else {
            write_f64(self.out, u as f64);
        }
    }

    /// A double as `Number.prototype.toString` writes it; NaN and infinities are refused
    /// (JSON has no such numbers).
    pub fn f64(&mut self, f: f64) -> Result<(), Error> {
        if !f.is_finite() {
            return Err(Error::invalid(
                self.field,
                format!(
                    "{} is not a valid JSON number",
                    if f.is_nan() { "NaN" } else { "infinity" }
                ),
            ));
        }
        write_f64(self.out, f);
        Ok(())
    }

    fn number(&mut self, n: &Number) {
        if let Some(u) = n.as_u64() {
            self.u64(u);
        } else if let Some(i) = n.as_i64() {
            self.i64(i);
        } else {
            // serde_json never holds NaN or infinity in a Number.
            write_f64(self.out, n.as_f64().unwrap_or(0.0));
        }
    }

    /// A string.
    pub fn str(&mut self, s: &str) {
        write_str(self.out, s);
    }

    fn enter(&mut self) -> Result<(), Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::invalid(
                self.field,
                format!("nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    /// Starts an object; write its entries with [`ObjectWriter::key`], then call
    /// [`ObjectWriter::end`].
    pub fn object(&mut self) -> Result<ObjectWriter<'_, 'a>, Error> {
        let replace = self.replace_next.take();
        self.enter()?;
        let start = self.out.len();
        self.out.push(b'{');
        Ok(ObjectWriter {
            start,
            first: true,
            moved_from: None,
            dropped: None,
            replace,
            w: self,
        })
    }

    /// In the next object started, `key` (if written) is left out and `raw` (canonical
    /// bytes) is appended under `key` at the end: `context.library` is always ours.
    pub(crate) fn replace_in_next_object(&mut self, key: &'static str, raw: &'static [u8]) {
        self.replace_next = Some((key, raw));
    }

    /// Starts an array; write each element into [`ArrayWriter::item`], then call
    /// [`ArrayWriter::end`].
    pub fn array(&mut self) -> Result<ArrayWriter<'_, 'a>, Error> {
        self.enter()?;
        self.out.push(b'[');
        Ok(ArrayWriter {
            first: true,
            w: self,
        })
    }
}

/// An object being written (see [`Writer::object`]).
pub struct ObjectWriter<'w, 'a> {
    w: &'w mut Writer<'a>,
    start: usize,
    first: bool,
    /// Set at the first key that must move: entries recorded from there on.
    moved_from: Option<usize>,
    replace: Option<(&'static str, &'static [u8])>,
    /// The replaced key's entry while nothing moves (the usual `context`: its `library`
    /// and no index key): where it starts, and where it ends once another key follows.
    /// Taken out in place at the end, with no entry recorded (no allocation).
    dropped: Option<(usize, Option<usize>)>,
}

impl<'a> ObjectWriter<'_, 'a> {
    /// Writes `key`; write its value into the writer returned.
    pub fn key(&mut self, key: &str) -> &mut Writer<'a> {
        if let Some((_, end @ None)) = &mut self.dropped {
            *end = Some(self.w.out.len());
        }
        if !std::mem::take(&mut self.first) {
            self.w.out.push(b',');
        }
        let index = array_index(key);
        let dropped = self.replace.is_some_and(|(r, _)| r == key);
        if dropped && index.is_none() && self.moved_from.is_none() {
            self.dropped = Some((self.w.out.len(), None));
        } else if index.is_some() || dropped || self.moved_from.is_some() {
            if self.moved_from.is_none() {
                self.moved_from = Some(self.w.moved.len());
                // Entries move from here on: the replaced one, and the plain ones written
                // after it (one span: they keep their order), are recorded first.
                if let Some((at, end)) = self.dropped.take() {
                    self.w.moved.push(Entry {
                        start: at,
                        place: Place::Dropped,
                    });
                    let end = end.expect("a key followed the replaced one");
                    if end + 1 < self.w.out.len() {
                        self.w.moved.push(Entry {
                            start: end + 1,
                            place: Place::Plain,
                        });
                    }
                }
            }
            let place = match index {
                Some(i) => Place::Index(i),
                None if dropped => Place::Dropped,
                None => Place::Plain,
            };
            self.w.moved.push(Entry {
                start: self.w.out.len(),
                place,
            });
        }
        write_str(self.w.out, key);
        self.w.out.push(b':');
        self.w
    }

    /// Ends the object: array-index keys first in numeric order, then the others in the
    /// order written, then the replacement if any.
    pub fn end(self) {
        let ObjectWriter {
            w,
            start,
            mut first,
            moved_from,
            replace,
            dropped,
        } = self;
        if let Some((at, end)) = dropped {
            // Nothing else moves: the entry goes with one comma, the one before it, or
            // after it when it is first.
            match end {
                _ if at > start + 1 => drop(w.out.drain(at - 1..end.unwrap_or(w.out.len()))),
                Some(end) => drop(w.out.drain(at..end + 1)),
                None => w.out.truncate(at),
            }
            first = w.out.len() == start + 1;
        } else if let Some(from) = moved_from {
            let content_end = w.out.len();
            let mut spans: Vec<(Place, usize, usize)> = Vec::with_capacity(w.moved.len() - from);
            let recorded = &w.moved[from..];
            for (i, e) in recorded.iter().enumerate() {
                // Each recorded entry ends at the comma before the next one.
                let end = recorded.get(i + 1).map_or(content_end, |n| n.start - 1);
                spans.push((e.place, e.start, end));
            }
            // Keys before the first moved one are plain and stay in order, ahead of the
            // plain ones after it (a stable sort keeps the written order among equals).
            let lead = (recorded[0].start > start + 1).then(|| (start + 1, recorded[0].start - 1));
            if let Some((s, e)) = lead {
                spans.push((Place::Plain, s, e));
                spans.rotate_right(1);
            }
            spans.sort_by_key(|(place, _, _)| match place {
                Place::Index(i) => (0, *i),
                Place::Plain => (1, 0),
                Place::Dropped => (2, 0),
            });
            let mut body = Vec::with_capacity(content_end - start);
            for (place, s, e) in spans {
                if place == Place::Dropped {
                    continue;
                }
                if !body.is_empty() {
                    body.push(b',');
                }
                body.extend_from_slice(&w.out[s..e]);
            }
            first = body.is_empty();
            w.out.truncate(start + 1);
            w.out.extend_from_slice(&body);
            w.moved.truncate(from);
        }
        if let Some((key, raw)) = replace {
            if !first {
                w.out.push(b',');
            }
            write_str(w.out, key);
            w.out.push(b':');
            w.out.extend_from_slice(raw);
        }
        w.out.push(b'}');
        w.depth -= 1;
    }
}

/// An array being written (see [`Writer::array`]).
pub struct ArrayWriter<'w, 'a> {
    w: &'w mut Writer<'a>,
    first: bool,
}

impl<'a> ArrayWriter<'_, 'a> {
    /// The next element: write it into the writer returned.
    pub fn item(&mut self) -> &mut Writer<'a> {
        if !std::mem::take(&mut self.first) {
            self.w.out.push(b',');
        }
        self.w
    }

    /// Ends the array.
    pub fn end(self) {
        self.w.out.push(b']');
        self.w.depth -= 1;
    }
}

/// `Some(n)` when `key` is a canonical array index: "0", or digits without a leading
/// zero, at most 4294967294 (2^32 − 2).
pub(crate) fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || !b[0].is_ascii_digit() || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    let mut n: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(c - b'0');
    }
    (n <= 4_294_967_294).then_some(n as u32)
}

/// Largest integer JavaScript represents exactly.
const MAX_SAFE: u64 = (1 << 53) - 1;

pub(crate) fn write_f64(out: &mut Vec<u8>, f: f64) {
    // ryu-js follows Number.prototype.toString, so -0.0 prints as "0".
    out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// True when one of the 8 bytes of `w` needs an escape: `"`, `\` or below 0x20.
#[inline]
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = w.wrapping_sub(ONES * 0x20);
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    // A zero byte of `quote`/`backslash` is a match; `below_space` borrows below 0x20.
    // Bytes >= 0x80 (UTF-8) are masked out by `!w`.
    ((below_space | quote.wrapping_sub(ONES) | backslash.wrapping_sub(ONES)) & !w & HIGH) != 0
}

/// Bytes that `JSON.stringify` escapes: `"`, `\\` and U+0000..U+001F.
static ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Where the first byte that needs an escape is (`bytes.len()` when none does).
#[inline]
fn first_escape(bytes: &[u8]) -> usize {
    // 8 bytes at a time while none needs an escape (almost every string), then one by one.
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let w = u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        if needs_escape(w) {
            break;
        }
        i += 8;
    }
    while i < bytes.len() && !ESCAPED[bytes[i] as usize] {
        i += 1;
    }
    i
}

/// True when `s` is written as it is, with no escapes.
pub(crate) fn is_plain(s: &str) -> bool {
    first_escape(s.as_bytes()) == s.len()
}

/// Writes `s` as a JSON string the way `JSON.stringify` does.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let first = first_escape(bytes);
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if first == bytes.len() {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    out.extend_from_slice(&bytes[..first]);
    let mut start = first;
    for (i, &b) in bytes.iter().enumerate().skip(first) {
        if !ESCAPED[b as usize] {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        to_string(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn numbers_print_as_ecmascript() {
        assert_eq!(
            canon("[1.0,-0.0,1e21,1e-7,0.000001,1.5,100,-3]"),
            "[1,0,1e+21,1e-7,0.000001,1.5,100,-3]"
        );
        assert_eq!(
            canon("[123456789012345680000,1e300,5e-324]"),
            "[123456789012345680000,1e+300,5e-324]"
        );
    }

    #[test]
    fn integers_beyond_2_pow_53_become_the_double_javascript_reads() {
        assert_eq!(
            canon("[9007199254740991,9007199254740993,-9007199254740993]"),
            "[9007199254740991,9007199254740992,-9007199254740992]"
        );
        assert_eq!(canon("[18446744073709551615]"), "[18446744073709552000]");
    }

    #[test]
    fn index_keys_come_first_in_numeric_order() {
        let v = canon(r#"{"b":1,"10":2,"a":3,"2":4,"01":5,"4294967295":6,"4294967294":7}"#);
        assert_eq!(
            v,
            r#"{"2":4,"10":2,"4294967294":7,"b":1,"a":3,"01":5,"4294967295":6}"#
        );
    }

    #[test]
    fn strings_escape_only_what_json_stringify_escapes() {
        let v = json!("q\"b\\n\n\u{0}\u{1f}\u{7f}\u{2028}é😀\u{8}\u{c}\t\r");
        assert_eq!(
            to_string(&v).unwrap(),
            "\"q\\\"b\\\\n\\n\\u0000\\u001f\u{7f}\u{2028}é😀\\b\\f\\t\\r\""
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let mut v = json!(1);
        for _ in 0..MAX_DEPTH + 1 {
            v = json!([v]);
        }
        assert!(to_vec(&v).is_err());
    }

    #[test]
    fn replace_appends_or_overrides_a_key() {
        let map = json!({"a": 1, "library": "theirs", "3": 0});
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.replace_in_next_object("library", b"{\"x\":1}");
        let mut o = w.object().unwrap();
        for (k, v) in map.as_object().unwrap() {
            v.write_json(o.key(k)).unwrap();
        }
        o.end();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"3":0,"a":1,"library":{"x":1}}"#
        );
    }

    #[test]
    fn the_replaced_key_leaves_from_any_place() {
        // Without index keys its entry is taken out in place; with one (before or after it),
        // the entries are reordered. Either way the others keep their order and commas.
        let cases: [&[&str]; 14] = [
            &["library"],
            &["library", "a", "3"],
            &["a", "library", "b", "3", "c"],
            &["library", "n", "b", "3"],
            &["n", "library", "a", "3", "4"],
            &["library", "a"],
            &["a", "library"],
            &["a", "library", "b"],
            &["a", "b", "library"],
            &["library", "n", "a"],
            &["n", "library"],
            &["library", "3"],
            &["a", "library", "3", "b"],
            &["n"],
        ];
        for keys in cases {
            let mut out = Vec::new();
            let mut w = Writer::new(&mut out);
            w.replace_in_next_object("library", b"\"ours\"");
            let mut o = w.object().unwrap();
            let (mut index, mut plain) = (Vec::new(), Vec::new());
            for &k in keys {
                match k {
                    // A nested object that reorders its own keys.
                    "n" => {
                        let mut inner = o.key("n").object().unwrap();
                        inner.key("z").null();
                        inner.key("0").u64(2);
                        inner.end();
                        plain.push(r#""n":{"0":2,"z":null}"#.to_string());
                    }
                    "library" => o.key("library").str("theirs"),
                    k if k.parse::<u32>().is_ok() => {
                        o.key(k).i64(3);
                        index.push(format!("\"{k}\":3"));
                    }
                    k => {
                        o.key(k).i64(1);
                        plain.push(format!("\"{k}\":1"));
                    }
                }
            }
            o.end();
            let want: Vec<String> = index
                .into_iter()
                .chain(plain)
                .chain([r#""library":"ours""#.to_string()])
                .collect();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{{{}}}", want.join(",")),
                "{keys:?}"
            );
        }
    }

    #[test]
    fn fast_string_scan_escapes_what_the_byte_loop_escapes() {
        // Escapes at every position around the 8-byte steps, and UTF-8 next to them.
        let specials = [
            "\"", "\\", "\n", "\u{1}", "\u{1f}", "é", "\u{7f}", " ", "\u{2028}",
        ];
        for len in 0..20 {
            for pos in 0..=len {
                for sp in specials {
                    let mut s = "a".repeat(len);
                    s.insert_str(pos, sp);
                    let mut out = Vec::new();
                    write_str(&mut out, &s);
                    assert_eq!(out, serde_json::to_vec(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn a_walker_may_write_keys_in_any_order() {
        // Index keys after plain ones, a nested object that reorders too, the replaced key.
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.replace_in_next_object("library", b"1");
        let mut o = w.object().unwrap();
        o.key("b").i64(1);
        o.key("library").str("theirs");
        o.key("7").bool(true);
        {
            let mut inner = o.key("n").object().unwrap();
            inner.key("z").null();
            inner.key("0").u64(2);
            inner.end();
        }
        o.key("a").f64(0.5).unwrap();
        o.key("2").array().unwrap().end();
        o.end();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"2":[],"7":true,"b":1,"n":{"0":2,"z":null},"a":0.5,"library":1}"#
        );
    }

    #[test]
    fn the_writer_refuses_what_json_cannot_hold() {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        assert!(w.f64(f64::NAN).unwrap_err().to_string().contains("NaN"));
        assert!(w.f64(f64::INFINITY).is_err());
    }
}
