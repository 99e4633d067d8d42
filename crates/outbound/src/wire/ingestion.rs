//! The ingestion destination: Segment-compatible `POST {endpoint}/v1/batch` (design §5).

use crate::model::config::Config;
use crate::model::message::{Kind, Message};
use crate::model::timestamp;
use crate::wire::encode::{Obj, Parts};
use crate::wire::frames::Frames;
use crate::wire::Body;
use base64::Engine as _;
use bytes::Bytes;
use std::io::{Read, Write};
use ureq::http::{HeaderName, HeaderValue};

/// A batch body never exceeds this many bytes (before gzip).
pub const MAX_BATCH_BYTES: usize = 500_000;

/// Segment's limit of events in one batch request: the tracking API rejects the events past
/// it (and answers 200 for the rest).
pub const MAX_BATCH_EVENTS: usize = 2_500;

/// Bytes of a body beyond its messages and the commas between them:
/// `{"batch":[` + `],"sentAt":"` + 24 + `"}`.
const OVERHEAD: usize = 10 + 12 + timestamp::LEN + 2;

/// The body size of a batch of `count` messages totalling `sum` bytes.
pub(crate) fn body_len(count: usize, sum: usize) -> usize {
    OVERHEAD + sum + count.saturating_sub(1)
}

/// Writes one message in the ingestion form (returns where the id's text starts):
/// `{"type","messageId","timestamp","userId","anonymousId",<call fields>,"context","integrations"}`.
pub(crate) fn encode<O>(
    msg: &Message<O>,
    parts: &Parts,
    id: &str,
    ts: &[u8],
    out: &mut Vec<u8>,
) -> Option<usize> {
    let mut o = Obj::begin(out);
    o.str("type", msg.kind.as_str());
    let id_at = o.str_at("messageId", id);
    o.ts("timestamp", ts);
    o.opt_str("userId", msg.user_id.as_ref());
    o.opt_str("anonymousId", msg.anonymous_id.as_ref());
    match msg.kind {
        Kind::Track => {
            o.opt_str("event", msg.event.as_ref());
            o.raw("properties", parts.properties_or_empty());
        }
        Kind::Page | Kind::Screen => {
            o.opt_str("name", msg.name.as_ref());
            o.opt_str("category", msg.category.as_ref());
            o.raw("properties", parts.properties_or_empty());
        }
        Kind::Identify => o.raw("traits", parts.traits_or_empty()),
        Kind::Group => {
            o.opt_str("groupId", msg.group_id.as_ref());
            o.raw("traits", parts.traits_or_empty());
        }
        Kind::Alias => o.opt_str("previousId", msg.previous_id.as_ref()),
        Kind::Delete => {}
    }
    o.raw("context", parts.context());
    o.opt_raw("integrations", parts.integrations());
    o.collected(msg.collected.as_deref());
    o.end();
    Some(id_at)
}

/// A message's ingestion element, its bytes stored once: its own bytes, or the message's
/// webhook body (the very bytes the webhook lanes send), which holds every byte of the
/// element in another order. For track, page, identify, group and a screen with properties
/// the webhook body is `{"version":1,"type":K,` + M + `,"messageId":I,"timestamp":T}` and
/// the element is `{"type":K,"messageId":I,"timestamp":T,` + M + `}`, with the same M (the
/// ids, the call's fields, context, integrations).
#[derive(Clone)]
pub(crate) struct Element {
    bytes: Body,
    /// 0: `bytes` is the element. Otherwise `bytes` is the webhook body and this is where
    /// its `,"messageId":` starts.
    id_key: u16,
    kind: Kind,
}

const HOOK_HEAD: &[u8] = b"{\"version\":1,\"type\":\"";
/// The start of an element: `{"type":"`.
const HEAD: &[u8] = b"{\"type\":\"";
const ID_KEY: &[u8] = b",\"messageId\":";
const TS_KEY: &[u8] = b",\"timestamp\":";
/// The end of a webhook body: `,"timestamp":"` + 24 + `"}`.
const HOOK_TAIL: usize = TS_KEY.len() + timestamp::LEN + 3;

impl Element {
    /// An element in bytes of its own.
    pub(crate) fn own(bytes: Body) -> Element {
        Element {
            bytes,
            id_key: 0,
            kind: Kind::Track,
        }
    }

    /// The element of the message whose webhook body is `hook`, when it can be read from
    /// it (see the type); `id_at` is where the id's text starts in `hook`.
    pub(crate) fn in_hook<O>(msg: &Message<O>, hook: &Body, id_at: usize) -> Option<Element> {
        let same = match msg.kind {
            Kind::Track | Kind::Page | Kind::Identify | Kind::Group => true,
            Kind::Screen => msg.properties.is_some(),
            Kind::Alias | Kind::Delete => false,
        };
        let id_key = u16::try_from(id_at.checked_sub(ID_KEY.len() + 1)?).ok()?;
        (same && id_key > 0).then(|| Element {
            bytes: hook.clone(),
            id_key,
            kind: msg.kind,
        })
    }

    /// The bytes the element is read from (its own, or the webhook body).
    pub(crate) fn bytes(&self) -> &Body {
        &self.bytes
    }

    /// Where the message id's text stands in [`bytes`](Self::bytes) of an element in bytes
    /// of its own (`{"type":K,"messageId":"I",...`), as (start, length), when it is there as
    /// it is; `None` for other bytes.
    pub(crate) fn id_span(&self) -> Option<(u16, u16)> {
        if self.id_key != 0 {
            return None;
        }
        let b = &self.bytes[..];
        let kind_end = HEAD.len() + b.get(HEAD.len()..)?.iter().position(|&c| c == b'"')?;
        let at = kind_end + 1 + ID_KEY.len() + 1;
        if b.get(kind_end + 1..at - 1)? != ID_KEY || b.get(at - 1) != Some(&b'"') {
            return None;
        }
        let len = b.get(at..)?.iter().position(|&c| c == b'"')?;
        Some((u16::try_from(at).ok()?, u16::try_from(len).ok()?))
    }

    /// (middle, quoted id, quoted timestamp) of a webhook body.
    fn pieces(&self) -> (&[u8], &[u8], &[u8]) {
        let b = &self.bytes[..];
        let key = usize::from(self.id_key);
        let mid = &b[HOOK_HEAD.len() + self.kind.as_str().len() + 2..key];
        let id = &b[key + ID_KEY.len()..b.len() - HOOK_TAIL];
        let ts = &b[b.len() - timestamp::LEN - 3..b.len() - 1];
        (mid, id, ts)
    }

    pub(crate) fn len(&self) -> usize {
        if self.id_key == 0 {
            return self.bytes.len();
        }
        let (mid, id, ts) = self.pieces();
        HEAD.len()
            + self.kind.as_str().len()
            + 1
            + ID_KEY.len()
            + id.len()
            + TS_KEY.len()
            + ts.len()
            + 1
            + mid.len()
            + 1
    }

    /// Appends the element's bytes to `out`.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        if self.id_key == 0 {
            return out.extend_from_slice(&self.bytes);
        }
        let (mid, id, ts) = self.pieces();
        out.extend_from_slice(HEAD);
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.push(b'"');
        out.extend_from_slice(ID_KEY);
        out.extend_from_slice(id);
        out.extend_from_slice(TS_KEY);
        out.extend_from_slice(ts);
        out.push(b',');
        out.extend_from_slice(mid);
        out.push(b'}');
    }

    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out);
        out
    }

    /// The element's bytes in an allocation of their own: shared when the element has
    /// them already, built from the webhook body otherwise.
    pub(crate) fn to_body(&self) -> Body {
        if self.id_key == 0 {
            return self.bytes.clone();
        }
        Body::from(self.to_vec())
    }
}

/// Where batches go: `{endpoint}/v1/batch`.
pub(crate) fn batch_url(config: &Config) -> String {
    format!("{}/v1/batch", config.endpoint.trim_end_matches('/'))
}

/// Where and how batches are sent.
pub(crate) struct Endpoint {
    url: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    gzip: bool,
}

impl Endpoint {
    /// `None` when the client has no write key.
    pub(crate) fn new(config: &Config) -> Option<Endpoint> {
        let key = config.write_key.as_ref()?;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{key}:"));
        let mut auth = HeaderValue::from_str(&format!("Basic {auth}")).ok()?;
        auth.set_sensitive(true);
        let mut headers = vec![
            (HeaderName::from_static("authorization"), auth),
            (
                HeaderName::from_static("user-agent"),
                HeaderValue::from_static(concat!("outbound/", env!("CARGO_PKG_VERSION"))),
            ),
            (
                HeaderName::from_static("content-type"),
                HeaderValue::from_static("application/json"),
            ),
        ];
        if config.gzip {
            headers.push((
                HeaderName::from_static("content-encoding"),
                HeaderValue::from_static("gzip"),
            ));
        }
        Some(Endpoint {
            url: batch_url(config),
            headers,
            gzip: config.gzip,
        })
    }

    /// Where batches go: `{endpoint}/v1/batch`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The headers of every batch: write key, user agent, content type (and encoding).
    pub(crate) fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }

    /// One batch's body, `{"batch":[...],"sentAt":"<now>"}` (gzip-compressed when set), in
    /// `body`, whose bytes it replaces.
    pub(crate) fn body<'a>(
        &self,
        body: &mut Vec<u8>,
        msgs: impl ExactSizeIterator<Item = &'a Element> + Clone,
    ) {
        let mut reader = BatchReader::new(msgs);
        body.clear();
        body.reserve(reader.len());
        // Reading from memory cannot fail.
        let _ = reader.read_to_end(body);
        if self.gzip {
            *body = gzip(body);
        }
    }

    /// One batch's body for the I/O engine: made whole, as [`body`](Self::body) makes it
    /// (measured under callgrind: a piece per message, each a reference to its chunk, cost
    /// 7 % more instructions than this copy for batches of 250, and saved none at 20).
    pub(crate) fn frames<'a>(
        &self,
        msgs: impl ExactSizeIterator<Item = &'a Element> + Clone,
    ) -> Frames {
        let mut body = Vec::new();
        self.body(&mut body, msgs);
        Frames::one(Bytes::from(body))
    }

    /// One batch's body as a request reads it: the bytes of [`body`](Self::body), never whole
    /// in memory. `None` with gzip, which needs the whole body before its length is known.
    pub(crate) fn reader<'a, I>(&self, msgs: I) -> Option<BatchReader<'a, I>>
    where
        I: ExactSizeIterator<Item = &'a Element> + Clone,
    {
        (!self.gzip).then(|| BatchReader::new(msgs))
    }
}

/// A batch's body read in pieces, straight from the messages' chunks into the reader's buffer
/// (a connection's output buffer). Why: a backlog's requests carry up to 500,000 bytes each,
/// and a copy of each body made before sending held the queue's bytes twice while they were
/// out (6 such bodies at the Go bench's peak: 3 MB beside 3.5 MB of chunks).
pub(crate) struct BatchReader<'a, I> {
    msgs: I,
    len: usize,
    /// Bytes read so far.
    given: usize,
    sent_at: [u8; timestamp::LEN],
    step: Step,
    /// An element whose comma is being read.
    pending: Option<&'a Element>,
    /// What is left of the piece being read.
    piece: Piece<'a>,
    /// Bytes that are not in a chunk as they are sent: the head, a comma, the tail, an
    /// element built from a webhook body.
    stage: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq)]
enum Step {
    Head,
    First,
    Rest,
    Done,
}

enum Piece<'a> {
    /// The rest of an element's own bytes.
    Own(&'a [u8]),
    /// `stage` from this offset.
    Staged(usize),
}

impl<'a, I: ExactSizeIterator<Item = &'a Element> + Clone> BatchReader<'a, I> {
    fn new(msgs: I) -> Self {
        let len = body_len(msgs.len(), msgs.clone().map(Element::len).sum());
        let mut sent_at = [0u8; timestamp::LEN];
        // The clock is always within 0000..9999.
        let _ = timestamp::write(timestamp::now(), &mut sent_at);
        BatchReader {
            msgs,
            len,
            given: 0,
            sent_at,
            step: Step::Head,
            pending: None,
            piece: Piece::Staged(0),
            stage: Vec::new(),
        }
    }

    /// The body's length in bytes (its `Content-Length`).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Moves to the next piece; false at the end.
    fn advance(&mut self) -> bool {
        self.stage.clear();
        self.piece = Piece::Staged(0);
        if let Some(m) = self.pending.take() {
            self.element(m);
            return true;
        }
        match self.step {
            Step::Head => {
                self.stage.extend_from_slice(b"{\"batch\":[");
                self.step = Step::First;
            }
            Step::First | Step::Rest => match self.msgs.next() {
                Some(m) if self.step == Step::Rest => {
                    self.stage.push(b',');
                    self.pending = Some(m);
                }
                Some(m) => {
                    self.step = Step::Rest;
                    self.element(m);
                }
                None => {
                    self.stage.extend_from_slice(b"],\"sentAt\":\"");
                    self.stage.extend_from_slice(&self.sent_at);
                    self.stage.extend_from_slice(b"\"}");
                    self.step = Step::Done;
                }
            },
            Step::Done => return false,
        }
        true
    }

    fn element(&mut self, m: &'a Element) {
        if m.id_key == 0 {
            self.piece = Piece::Own(&m.bytes);
        } else {
            m.write_to(&mut self.stage);
        }
    }
}

impl<'a, I: ExactSizeIterator<Item = &'a Element> + Clone> Read for BatchReader<'a, I> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            let rest = match self.piece {
                Piece::Own(bytes) => bytes,
                Piece::Staged(at) => &self.stage[at..],
            };
            if rest.is_empty() {
                if self.advance() {
                    continue;
                }
                // ureq refuses a body longer than its length, but waits for the rest of a
                // shorter one: a body that ends short is an error, never a hang.
                if self.given + n != self.len {
                    return Err(std::io::Error::other(format!(
                        "a batch body of {} bytes, not the {} its length said",
                        self.given + n,
                        self.len
                    )));
                }
                break;
            }
            let k = rest.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&rest[..k]);
            n += k;
            match &mut self.piece {
                Piece::Own(bytes) => *bytes = &bytes[k..],
                Piece::Staged(at) => *at += k,
            }
        }
        self.given += n;
        Ok(n)
    }
}

/// Out of line: the encoder's state is tens of KiB, and inlined into `Endpoint::send` it
/// made every delivery thread's frame 66 KiB even without gzip (512 stalled threads: +32 MiB
/// of stack touched).
#[inline(never)]
fn gzip(body: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(body);
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_read_from_the_webhook_body_is_the_element() {
        use crate::model::message::Object;
        use crate::wire::encode::Parts;
        let props: Object = serde_json::from_str(r#"{"a":"x\"y","2":[1.5,null]}"#).unwrap();
        let ints: Object = serde_json::from_str(r#"{"All":true}"#).unwrap();
        let mut msgs = [
            Message::track("u1", "E\n"),
            Message::track("u1", "E").properties(props.clone()),
            Message::page("u")
                .name("Home")
                .category("c")
                .properties(props.clone()),
            Message::screen("u").name("S").properties(props.clone()),
            Message::identify("u").trait_("plan", "pro"),
            Message::group("u", "g").integrations(ints),
            Message::new(Kind::Track).anonymous_id("anon").event("E"),
        ];
        msgs[0].context = Some(props);
        let ts = b"2026-11-21T09:30:00.123Z";
        for (i, msg) in msgs.iter().enumerate() {
            for id in ["0b8e2c1e-ff40-4c1c-9a3c-1f2e3d4c5b6a", "q\"uote", "x"] {
                let parts = Parts::write(msg).unwrap();
                let mut hook = Vec::new();
                let at = crate::wire::webhook::encode(msg, &parts, id, ts, &mut hook).unwrap();
                let hook: Body = hook.into();
                let element = Element::in_hook(msg, &hook, at).expect("readable");
                let mut own = Vec::new();
                encode(msg, &parts, id, ts, &mut own);
                assert_eq!(
                    String::from_utf8(element.to_vec()).unwrap(),
                    String::from_utf8(own.clone()).unwrap(),
                    "message {i}, id {id}"
                );
                assert_eq!(element.len(), own.len());
            }
        }
        // A screen without properties, and alias, differ between the two: not read.
        for msg in [Message::screen("u"), Message::alias("a", "b")] {
            let parts = Parts::write(&msg).unwrap();
            let mut hook = Vec::new();
            let at = crate::wire::webhook::encode(&msg, &parts, "x", ts, &mut hook).unwrap();
            assert!(Element::in_hook(&msg, &hook.into(), at).is_none());
        }
    }

    #[test]
    fn a_batch_read_in_pieces_is_the_whole_body() {
        use crate::wire::encode::Parts;
        let ts = b"2026-11-21T09:30:00.123Z";
        let mut elements = Vec::new();
        for (i, msg) in [
            Message::track("u1", "E").property("n", 1),
            Message::identify("u2").trait_("plan", "pro"),
            Message::alias("a", "b"),
            Message::page("u3").name("Home"),
        ]
        .iter()
        .enumerate()
        {
            let parts = Parts::write(msg).unwrap();
            let id = format!("id-{i}");
            let mut own = Vec::new();
            encode(msg, &parts, &id, ts, &mut own);
            elements.push(Element::own(own.into()));
            // The same message as read from its webhook body, where it can be.
            let mut hook = Vec::new();
            let at = crate::wire::webhook::encode(msg, &parts, &id, ts, &mut hook).unwrap();
            if let Some(e) = Element::in_hook(msg, &hook.into(), at) {
                elements.push(e);
            }
        }
        assert!(
            elements.len() > 4,
            "some elements are read from webhook bodies"
        );
        let endpoint = Endpoint::new(&Config {
            write_key: Some("k".into()),
            ..Config::default()
        })
        .unwrap();
        for n in [0, 1, elements.len()] {
            let msgs = &elements[..n];
            let mut whole = Vec::new();
            endpoint.body(&mut whole, msgs.iter());
            let joined: Vec<String> = msgs
                .iter()
                .map(|e| String::from_utf8(e.to_vec()).unwrap())
                .collect();
            let text = String::from_utf8(whole.clone()).unwrap();
            let sent_at = &text[text.len() - timestamp::LEN - 2..text.len() - 2];
            assert_eq!(
                text,
                format!(
                    "{{\"batch\":[{}],\"sentAt\":\"{sent_at}\"}}",
                    joined.join(",")
                )
            );
            for piece in [1, 3, 7, 64, 1 << 20] {
                let mut reader = endpoint.reader(msgs.iter()).expect("no gzip");
                assert_eq!(reader.len(), whole.len(), "{n} messages");
                let mut read = Vec::new();
                let mut buf = vec![0; piece];
                loop {
                    let k = reader.read(&mut buf).unwrap();
                    if k == 0 {
                        break;
                    }
                    read.extend_from_slice(&buf[..k]);
                }
                // The same bytes but the sending time, read anew.
                assert_eq!(read.len(), whole.len(), "{n} messages, pieces of {piece}");
                let cut = whole.len() - timestamp::LEN - 2;
                assert_eq!(read[..cut], whole[..cut], "{n} messages, pieces of {piece}");
                assert!(read.ends_with(b"\"}"));
            }
        }
        // A length that the bytes do not reach is an error, not a wait for more.
        let mut reader = endpoint.reader(elements.iter()).unwrap();
        reader.len += 1;
        let e = reader.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("not the"), "{e}");
        let gzip = Endpoint::new(&Config {
            write_key: Some("k".into()),
            gzip: true,
            ..Config::default()
        })
        .unwrap();
        assert!(
            gzip.reader(elements.iter()).is_none(),
            "gzip needs the whole body"
        );
    }

    #[test]
    fn body_len_counts_every_byte() {
        let parts: [&[u8]; 2] = [b"{\"a\":1}", b"{}"];
        let expected = format!(
            "{{\"batch\":[{},{}],\"sentAt\":\"2026-11-21T09:30:00.123Z\"}}",
            "{\"a\":1}", "{}"
        );
        assert_eq!(
            body_len(2, parts.iter().map(|p| p.len()).sum()),
            expected.len()
        );
    }
}
