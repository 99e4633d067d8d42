//! A small writer for the top level of the message bodies we build. Our own keys are never
//! array indices, so writing them in order keeps the object canonical (see `canonical_json`).

use crate::canonical_json::{write_object, write_str};
use crate::error::Error;
use crate::message::Object;

pub(crate) struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    pub(crate) fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        write_str(self.out, key);
        self.out.push(b':');
    }

    pub(crate) fn raw(&mut self, key: &str, raw: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(raw);
    }

    pub(crate) fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        write_str(self.out, value);
    }

    pub(crate) fn opt_str(&mut self, key: &str, value: Option<&String>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    /// Writes the timestamp (already formatted, ASCII).
    pub(crate) fn ts(&mut self, key: &str, ts: &[u8]) {
        self.key(key);
        self.out.push(b'"');
        self.out.extend_from_slice(ts);
        self.out.push(b'"');
    }

    /// Writes `map` (or `{}` when absent) under `key`; `replace` as in `write_object`.
    pub(crate) fn object(
        &mut self,
        key: &str,
        map: Option<&Object>,
        replace: Option<(&str, &[u8])>,
    ) -> Result<(), Error> {
        self.key(key);
        static EMPTY: std::sync::OnceLock<Object> = std::sync::OnceLock::new();
        let map = map.unwrap_or_else(|| EMPTY.get_or_init(Object::new));
        write_object(self.out, map, 1, replace).map_err(|e| at(key, e))
    }

    pub(crate) fn opt_object(&mut self, key: &str, map: Option<&Object>) -> Result<(), Error> {
        if let Some(m) = map {
            self.key(key);
            write_value_obj(self.out, m).map_err(|e| at(key, e))?;
        }
        Ok(())
    }

    pub(crate) fn end(self) {
        self.out.push(b'}');
    }
}

fn write_value_obj(out: &mut Vec<u8>, map: &Object) -> Result<(), Error> {
    write_object(out, map, 1, None)
}

/// Names the top-level field in a depth error (`properties: nested deeper than 128 levels`).
fn at(key: &str, e: Error) -> Error {
    match e {
        Error::InvalidField { reason, .. } => Error::invalid(key, reason),
        other => other,
    }
}

/// The `context.library` value: who sent this.
pub(crate) const LIBRARY: &str = concat!(
    "{\"name\":\"outbound\",\"version\":\"",
    env!("CARGO_PKG_VERSION"),
    "\"}"
);
