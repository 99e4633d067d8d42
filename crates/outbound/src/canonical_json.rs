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
    write_value(&mut out, value, 0)?;
    Ok(out)
}

/// Serializes `value` canonically into a `String`.
pub fn to_string(value: &Value) -> Result<String, Error> {
    to_vec(value).map(|v| String::from_utf8(v).expect("writer emits UTF-8"))
}

pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), Error> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            check_depth(depth)?;
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            check_depth(depth)?;
            write_object(out, map, depth, None)?;
        }
    }
    Ok(())
}

fn check_depth(depth: usize) -> Result<(), Error> {
    if depth >= MAX_DEPTH {
        return Err(Error::invalid(
            "value",
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(())
}

/// Writes `map` as an object. `replace` names a key whose value is written as the given
/// raw canonical bytes instead (appended when the map lacks it): used for `context.library`.
pub(crate) fn write_object(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    depth: usize,
    replace: Option<(&str, &[u8])>,
) -> Result<(), Error> {
    out.push(b'{');
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    // Index keys are rare: only pay for sorting when one is present.
    if map.keys().any(|k| array_index(k).is_some()) {
        let mut indexed: Vec<(u32, &String, &Value)> = map
            .iter()
            .filter_map(|(k, v)| array_index(k).map(|i| (i, k, v)))
            .collect();
        indexed.sort_unstable_by_key(|(i, _, _)| *i);
        for (_, k, v) in indexed {
            sep(out);
            write_str(out, k);
            out.push(b':');
            write_value(out, v, depth + 1)?;
        }
    }
    for (k, v) in map {
        if array_index(k).is_some() || replace.is_some_and(|(r, _)| r == k) {
            continue;
        }
        sep(out);
        write_str(out, k);
        out.push(b':');
        write_value(out, v, depth + 1)?;
    }
    if let Some((k, raw)) = replace {
        sep(out);
        write_str(out, k);
        out.push(b':');
        out.extend_from_slice(raw);
    }
    out.push(b'}');
    Ok(())
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

pub(crate) fn write_number(out: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        if u <= MAX_SAFE {
            out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
        } else {
            write_f64(out, u as f64);
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_SAFE {
            out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
        } else {
            write_f64(out, i as f64);
        }
    } else {
        // serde_json never holds NaN or infinity in a Number.
        write_f64(out, n.as_f64().unwrap_or(0.0));
    }
}

pub(crate) fn write_f64(out: &mut Vec<u8>, f: f64) {
    // ryu-js follows Number.prototype.toString, so -0.0 prints as "0".
    out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `s` as a JSON string the way `JSON.stringify` does.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]);
        } else {
            out.extend_from_slice(esc);
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
        write_object(
            &mut out,
            map.as_object().unwrap(),
            0,
            Some(("library", b"{\"x\":1}")),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"3":0,"a":1,"library":{"x":1}}"#
        );
    }
}
