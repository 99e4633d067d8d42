//! Messages in the packed form of `outbound_enqueue_packed`: the fields of a message as
//! tagged, length-prefixed values instead of JSON text, for bindings that hold the message
//! as typed values already (the Go package). Nothing is parsed from text: the strings are
//! borrowed from the caller's buffer, and `properties`, `traits` and `context` are walked
//! straight into the core's canonical writer ([`WriteJson`]), which applies every rule of the
//! byte format (escapes, numbers, key order, depth). Which fields a call needs, the
//! timestamp, the 32 KB limit and every other rule stay the core's, as for the JSON entry
//! point.
//!
//! The form (integers little-endian):
//!
//! ```text
//! message := field*                 each field at most once; tag TYPE required
//! field   := tag:u8 payload
//!            1 type, 2 messageId, 3 anonymousId, 4 userId, 5 previousId, 6 groupId,
//!            7 event, 8 name, 9 category, 10 timestamp: a str
//!            11 context, 13 properties, 14 traits: len:u32, then a value of len bytes (an
//!            object)
//!            12 integrations: a str holding the object as JSON text
//! str     := len:u32 bytes          UTF-8
//! value   := 'n' | 't' | 'f'         null, true, false
//!          | 'i' i64 | 'u' u64 | 'd' f64 (8 bytes each)
//!          | 's' str
//!          | '[' count:u32 value*
//!          | '{' count:u32 (str value)*   keys distinct
//! ```
//!
//! The objects are checked as they are written (bounds, tags, UTF-8, distinct keys); the
//! writer refuses what it refuses for JSON text (too deep, a number that is not finite).

use crate::result::Failure;
use outbound::canonical_json::{WriteJson, Writer};
use outbound::{Error, Kind, Message};

/// Objects with up to this many keys are checked for a repeated key by comparing each key
/// with the ones before it; larger ones with a hash set.
const FEW_KEYS: usize = 16;

fn malformed(reason: impl Into<String>) -> Error {
    Error::InvalidJson {
        what: "packed message".into(),
        reason: reason.into(),
    }
}

/// Where a read found the form broken. An [`Error`] only once returned: 8 bytes, so a
/// read's result comes back in registers (a read happens for every field, key and value of
/// every call; with `Error` in its result, each one went through memory).
#[derive(Debug, Clone, Copy)]
struct Bad {
    at: u32,
    not_utf8: bool,
}

impl Bad {
    fn at(pos: usize, not_utf8: bool) -> Bad {
        Bad {
            at: u32::try_from(pos).unwrap_or(u32::MAX),
            not_utf8,
        }
    }
}

impl From<Bad> for Error {
    fn from(b: Bad) -> Error {
        match b.not_utf8 {
            false => malformed(format!("truncated at byte {}", b.at)),
            true => malformed(format!("the text at byte {} is not valid UTF-8", b.at)),
        }
    }
}

impl From<Bad> for Failure {
    fn from(b: Bad) -> Failure {
        Error::from(b).into()
    }
}

/// Reads the form; every read is bounds-checked.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(Bad::at(self.pos, false))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, Bad> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<usize, Bad> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn u64(&mut self) -> Result<u64, Bad> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self) -> Result<&'a str, Bad> {
        let at = self.pos;
        let n = self.u32()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| Bad::at(at, true))
    }
}

/// One value of the form (its bytes); checked as it is written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packed<'a>(&'a [u8]);

impl Packed<'_> {
    /// JSON's name for the value's type, for errors.
    fn type_name(&self) -> &'static str {
        match self.0.first() {
            Some(b'n') => "null",
            Some(b't' | b'f') => "a boolean",
            Some(b'i' | b'u' | b'd') => "a number",
            Some(b's') => "a string",
            Some(b'[') => "an array",
            _ => "an object",
        }
    }
}

impl WriteJson for Packed<'_> {
    type Error = Error;

    fn write_json(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let mut c = Cursor {
            buf: self.0,
            pos: 0,
        };
        write_value(&mut c, w)?;
        if !c.at_end() {
            return Err(malformed(format!(
                "{} bytes after a value",
                self.0.len() - c.pos
            )));
        }
        Ok(())
    }
}

fn write_value(c: &mut Cursor<'_>, w: &mut Writer<'_>) -> Result<(), Error> {
    match c.byte()? {
        b'n' => w.null(),
        b't' => w.bool(true),
        b'f' => w.bool(false),
        b'i' => w.i64(c.u64()? as i64),
        b'u' => w.u64(c.u64()?),
        b'd' => w.f64(f64::from_bits(c.u64()?))?,
        b's' => w.str(c.str()?),
        b'[' => {
            let n = c.u32()?;
            let mut a = w.array()?;
            for _ in 0..n {
                write_value(c, a.item())?;
            }
            a.end();
        }
        b'{' => {
            let n = c.u32()?;
            let mut o = w.object()?;
            let mut few = [""; FEW_KEYS];
            let mut many = std::collections::HashSet::new();
            for i in 0..n {
                let key = c.str()?;
                let repeated = if n <= FEW_KEYS {
                    let r = few[..i].contains(&key);
                    few[i] = key;
                    r
                } else {
                    !many.insert(key)
                };
                if repeated {
                    return Err(malformed(format!(
                        "the key {key:?} is repeated in an object"
                    )));
                }
                write_value(c, o.key(key))?;
            }
            o.end();
        }
        tag => return Err(malformed(format!("unknown value tag {tag}"))),
    }
    Ok(())
}

/// An object field (its length, then the value): anything else is refused as the JSON
/// entry point refuses it.
fn object<'a>(c: &mut Cursor<'a>, field: &str) -> Result<Packed<'a>, Error> {
    let n = c.u32()?;
    let v = Packed(c.take(n)?);
    if v.0.first() != Some(&b'{') {
        return Err(Error::WrongType {
            field: field.into(),
            expected: "an object",
            got: v.type_name(),
        });
    }
    Ok(v)
}

/// Reads a packed message into the core's message; the caller enqueues it.
pub(crate) fn message(buf: &[u8]) -> Result<Message<Packed<'_>>, Failure> {
    let mut c = Cursor { buf, pos: 0 };
    let mut kind = None;
    let mut msg = Message {
        kind: Kind::Track,
        user_id: None,
        anonymous_id: None,
        message_id: None,
        timestamp: None,
        context: None,
        integrations: None,
        event: None,
        name: None,
        category: None,
        group_id: None,
        previous_id: None,
        properties: None,
        traits: None,
        collected: None,
    };
    let mut seen = 0u16;
    while !c.at_end() {
        let tag = c.byte()?;
        if !(1..=14).contains(&tag) {
            return Err(malformed(format!("unknown field tag {tag}")).into());
        }
        if seen & (1 << tag) != 0 {
            return Err(malformed(format!("the field tag {tag} is repeated")).into());
        }
        seen |= 1 << tag;
        let text = |c: &mut Cursor<'_>| c.str().map(|s| Some(s.to_owned()));
        match tag {
            1 => {
                let t = c.str()?;
                // The JSON entry point's words.
                kind = Some(Kind::parse(t).ok_or_else(|| Error::InvalidField {
                    field: "type".into(),
                    reason: format!(
                        "{t:?} is not one of identify, track, page, screen, group, alias, delete"
                    ),
                })?);
            }
            2 => msg.message_id = text(&mut c)?,
            3 => msg.anonymous_id = text(&mut c)?,
            4 => msg.user_id = text(&mut c)?,
            5 => msg.previous_id = text(&mut c)?,
            6 => msg.group_id = text(&mut c)?,
            7 => msg.event = text(&mut c)?,
            8 => msg.name = text(&mut c)?,
            9 => msg.category = text(&mut c)?,
            10 => msg.timestamp = Some(outbound::timestamp::parse(c.str()?)?),
            11 => msg.context = Some(object(&mut c, "context")?),
            12 => msg.integrations = Some(outbound::parse_object("integrations", c.str()?)?),
            13 => msg.properties = Some(object(&mut c, "properties")?),
            _ => msg.traits = Some(object(&mut c, "traits")?),
        }
    }
    let kind = kind.ok_or(Error::MissingField {
        call: "message",
        field: "type",
    })?;
    Ok(Message { kind, ..msg })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::outbound_result as R;

    fn s(b: &mut Vec<u8>, t: &[u8]) {
        b.extend_from_slice(&(t.len() as u32).to_le_bytes());
        b.extend_from_slice(t);
    }

    fn written(v: &[u8]) -> Result<String, Error> {
        let mut out = Vec::new();
        Packed(v).write_json(&mut Writer::new(&mut out))?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn object(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut v = vec![b'{'];
        v.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (k, val) in entries {
            s(&mut v, k);
            v.extend_from_slice(val);
        }
        v
    }

    #[test]
    fn values_are_written_by_the_canonical_writer() {
        let mut u = vec![b'u'];
        u.extend_from_slice(&7u64.to_le_bytes());
        let mut d = vec![b'd'];
        d.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
        let mut st = vec![b's'];
        s(&mut st, "x\"\n\u{2028}".as_bytes());
        let mut list = vec![b'[', 2, 0, 0, 0, b't', b'i'];
        list.extend_from_slice(&(-2i64).to_le_bytes());
        let v = object(&[
            (b"b", b"n"),
            (b"10", &u),
            (b"a", &d),
            (b"s", &st),
            (b"l", &list),
        ]);
        assert_eq!(
            written(&v).unwrap(),
            "{\"10\":7,\"b\":null,\"a\":1.5,\"s\":\"x\\\"\\n\u{2028}\",\"l\":[true,-2]}"
        );
    }

    #[test]
    fn what_does_not_follow_the_form_is_refused() {
        let mut nan = vec![b'd'];
        nan.extend_from_slice(&f64::NAN.to_bits().to_le_bytes());
        for (v, why) in [
            (vec![b'{', 1, 0, 0, 0], "truncated"),
            (vec![b'x'], "unknown value tag"),
            (object(&[(b"k", b"n"), (b"k", b"t")]), "repeated"),
            (object(&[(b"\xff", b"n")]), "not valid UTF-8"),
            ([object(&[]), vec![b'n']].concat(), "bytes after a value"),
            (object(&[(b"k", &nan)]), ""),
        ] {
            let e = written(&v).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        let many: Vec<(Vec<u8>, &[u8])> = (0..40)
            .map(|i| (format!("k{}", i % 39).into_bytes(), &b"n"[..]))
            .collect();
        let many: Vec<(&[u8], &[u8])> = many.iter().map(|(k, v)| (&k[..], *v)).collect();
        assert!(written(&object(&many))
            .unwrap_err()
            .to_string()
            .contains("repeated"));
    }

    fn field(tag: u8, text: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        s(&mut v, text);
        v
    }

    fn code(buf: &[u8]) -> R {
        match message(buf) {
            Ok(_) => R::Ok,
            Err(f) => f.code(),
        }
    }

    #[test]
    fn messages_are_read_as_the_json_entry_point_reads_them() {
        let track = field(1, b"track");
        let buf = [track.clone(), field(4, b"u1"), field(7, b"E")].concat();
        let m = message(&buf).unwrap();
        assert_eq!(m.kind, Kind::Track);
        assert_eq!(
            (m.user_id.as_deref(), m.event.as_deref()),
            (Some("u1"), Some("E"))
        );
        let props = object(&[(b"a", b"t")]);
        let mut with_props = [track.clone(), vec![13]].concat();
        with_props.extend_from_slice(&(props.len() as u32).to_le_bytes());
        with_props.extend_from_slice(&props);
        assert!(message(&with_props).unwrap().properties.is_some());

        assert_eq!(code(&field(4, b"u1")), R::MissingField);
        assert_eq!(code(&field(1, b"purchase")), R::InvalidField);
        assert_eq!(
            code(&[track.clone(), track.clone()].concat()),
            R::InvalidJson
        );
        assert_eq!(
            code(&[track.clone(), field(15, b"x")].concat()),
            R::InvalidJson
        );
        assert_eq!(
            code(&[track.clone(), field(10, b"yesterday")].concat()),
            R::InvalidField
        );
        assert_eq!(
            code(&[track.clone(), vec![4, 9, 0]].concat()),
            R::InvalidJson
        );
        let mut list = [track, vec![13]].concat();
        list.extend_from_slice(&5u32.to_le_bytes());
        list.extend_from_slice(&[b'[', 0, 0, 0, 0]);
        assert_eq!(code(&list), R::WrongType);
    }
}
