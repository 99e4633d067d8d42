//! A small writer for the top level of the message bodies we build. Our own keys are never
//! array indices, so writing them in order keeps the object canonical (see `canonical_json`).

use crate::model::collected::Collected;
use crate::model::message::{Message, Object};
use crate::wire::body::BodyArena;
use crate::wire::canonical_json::{write_str, WriteJson, Writer};
use crate::wire::Body;
use std::cell::Cell;
use std::ops::Range;

pub(crate) struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    pub(crate) fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// Our keys are ASCII constants that need no escape: written as they are.
    fn key(&mut self, key: &'static str) {
        debug_assert!(!key.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'));
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    pub(crate) fn raw(&mut self, key: &'static str, raw: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(raw);
    }

    pub(crate) fn str(&mut self, key: &'static str, value: &str) {
        self.key(key);
        write_str(self.out, value);
    }

    /// Writes a string value; returns where its text starts (the text as given when it
    /// needs no escapes).
    pub(crate) fn str_at(&mut self, key: &'static str, value: &str) -> usize {
        self.key(key);
        let at = self.out.len() + 1;
        write_str(self.out, value);
        at
    }

    pub(crate) fn opt_str(&mut self, key: &'static str, value: Option<&String>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    /// Writes the timestamp (already formatted, ASCII).
    pub(crate) fn ts(&mut self, key: &'static str, ts: &[u8]) {
        self.key(key);
        self.out.push(b'"');
        self.out.extend_from_slice(ts);
        self.out.push(b'"');
    }

    pub(crate) fn opt_raw(&mut self, key: &'static str, raw: Option<&[u8]>) {
        if let Some(raw) = raw {
            self.raw(key, raw);
        }
    }

    /// A collector's fields, after `integrations`: `originalTimestamp`, `sentAt` and
    /// `receivedAt`, then the message's other fields (canonical entries, each led by a
    /// comma, never an array-index key or one of ours: `wire/read_collected.rs`).
    pub(crate) fn collected(&mut self, c: Option<&Collected>) {
        let Some(c) = c else {
            return;
        };
        self.opt_raw("originalTimestamp", c.original_timestamp.as_deref());
        self.opt_raw("sentAt", c.sent_at.as_deref());
        self.ts("receivedAt", &c.received_at);
        self.out.extend_from_slice(&c.extra);
    }

    pub(crate) fn end(self) {
        self.out.push(b'}');
    }
}

/// A message's free-form objects in canonical bytes, written once and copied into the body
/// of each destination.
/// A call's two buffers, its objects ([`Parts`]) and a body, kept per thread: the body is
/// copied once into the shared bytes the queue holds, and no `Vec` is allocated and freed
/// per call. A nested call on the same thread (a binding's object writing calls back)
/// finds none and allocates its own.
#[derive(Default)]
pub(crate) struct Scratch {
    pub objects: Vec<u8>,
    pub body: Vec<u8>,
    /// The thread's chunk its bodies are carved from ([`Body`]).
    carver: BodyArena,
}

/// Buffers larger than this are not kept (a rare big message does not pin its size).
const SCRATCH_KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: Cell<Scratch> = Cell::new(Scratch::default());
}

impl Scratch {
    /// This thread's buffers (empty ones the first time, or while taken).
    #[inline]
    pub(crate) fn take() -> Scratch {
        SCRATCH.with(Cell::take)
    }

    /// `body` as bytes the queue can share, carved from the thread's chunk.
    #[inline]
    pub(crate) fn body_bytes(&mut self) -> Body {
        self.carver.carve(&self.body)
    }

    /// Gives the buffers back for the thread's next call.
    #[inline]
    pub(crate) fn keep(self) {
        if self.objects.capacity() <= SCRATCH_KEEP && self.body.capacity() <= SCRATCH_KEEP {
            // Ignored while the thread's locals are being torn down.
            let _ = SCRATCH.try_with(|s| s.set(self));
        }
    }
}

pub(crate) struct Parts {
    buf: Vec<u8>,
    properties: Option<Range<usize>>,
    traits: Option<Range<usize>>,
    context: Range<usize>,
    integrations: Option<Range<usize>>,
}

impl Parts {
    /// Writes the objects of `msg` (every one, whether or not a destination will carry it,
    /// so a bad value is refused even when `integrations` send the message nowhere).
    #[cfg(test)]
    pub(crate) fn write<O: WriteJson>(msg: &Message<O>) -> Result<Parts, O::Error> {
        Parts::write_in(Vec::with_capacity(256), msg)
    }

    /// [`write`](Self::write) into `buf` (cleared first): a [`Scratch`] buffer.
    pub(crate) fn write_in<O: WriteJson>(
        mut buf: Vec<u8>,
        msg: &Message<O>,
    ) -> Result<Parts, O::Error> {
        buf.clear();
        let properties = part(&mut buf, "properties", msg.properties.as_ref())?;
        let traits = part(&mut buf, "traits", msg.traits.as_ref())?;
        let context =
            part(&mut buf, "context", msg.context.as_ref())?.expect("context is always written");
        let integrations = part::<Object>(&mut buf, "integrations", msg.integrations.as_ref())
            .map_err(O::Error::from)?;
        Ok(Parts {
            buf,
            properties,
            traits,
            context,
            integrations,
        })
    }

    /// The buffer back, for the next call ([`Scratch`]).
    pub(crate) fn into_buf(self) -> Vec<u8> {
        self.buf
    }

    /// Bytes of all the objects together (a size hint for the bodies).
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn properties(&self) -> Option<&[u8]> {
        self.properties.clone().map(|r| &self.buf[r])
    }

    /// `properties`, or `{}` when absent.
    pub(crate) fn properties_or_empty(&self) -> &[u8] {
        self.properties().unwrap_or(b"{}")
    }

    /// `traits`, or `{}` when absent.
    pub(crate) fn traits_or_empty(&self) -> &[u8] {
        self.traits.clone().map_or(b"{}", |r| &self.buf[r])
    }

    /// `context`, with `library` always ours.
    pub(crate) fn context(&self) -> &[u8] {
        &self.buf[self.context.clone()]
    }

    pub(crate) fn integrations(&self) -> Option<&[u8]> {
        self.integrations.clone().map(|r| &self.buf[r])
    }
}

/// Writes `value` (for `context`: `{}` when absent, with `library` replaced) into `buf`.
fn part<O: WriteJson>(
    buf: &mut Vec<u8>,
    field: &'static str,
    value: Option<&O>,
) -> Result<Option<Range<usize>>, O::Error> {
    let start = buf.len();
    let mut w = part_writer(buf, field);
    match value {
        Some(v) => v.write_json(&mut w)?,
        None if field == "context" => w.object()?.end(),
        None => return Ok(None),
    }
    Ok(Some(start..buf.len()))
}

/// A writer for a message's object `field` as every body carries it: its entries one level
/// down (depth 1, as a nested value), and for `context` our `library` in place of theirs.
/// Also what `json_text` writes an object with as it reads it, so both agree.
pub(crate) fn part_writer<'a>(buf: &'a mut Vec<u8>, field: &'static str) -> Writer<'a> {
    let mut w = Writer::at_depth(buf, 1, field);
    if field == "context" {
        w.replace_in_next_object("library", LIBRARY.as_bytes());
    }
    w
}

/// The `context.library` value: who sent this.
pub(crate) const LIBRARY: &str = concat!(
    "{\"name\":\"outbound\",\"version\":\"",
    env!("CARGO_PKG_VERSION"),
    "\"}"
);
