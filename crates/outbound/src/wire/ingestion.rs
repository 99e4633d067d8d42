//! The ingestion destination: Segment-compatible `POST {endpoint}/v1/batch`.

use crate::model::config::Config;
use crate::model::message::{Kind, Message};
use crate::model::timestamp;
use crate::wire::encode::{Obj, Parts};
use crate::wire::frames::Frames;
use crate::wire::Body;
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use std::io::Write;

/// A batch body never exceeds this many bytes (before gzip).
pub const MAX_BATCH_BYTES: usize = 500_000;

/// Largest serialized message accepted: Segment's per-message limit.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;

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

/// How batches are sent: their headers and encoding.
pub(crate) struct Endpoint {
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
            headers,
            gzip: config.gzip,
        })
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
        body.clear();
        body.reserve(body_len(msgs.len(), msgs.clone().map(Element::len).sum()));
        body.extend_from_slice(b"{\"batch\":[");
        for (i, m) in msgs.enumerate() {
            if i > 0 {
                body.push(b',');
            }
            m.write_to(body);
        }
        body.extend_from_slice(b"],\"sentAt\":\"");
        let mut sent_at = [0u8; timestamp::LEN];
        // The clock is always within 0000..9999.
        let _ = timestamp::write(timestamp::now(), &mut sent_at);
        body.extend_from_slice(&sent_at);
        body.extend_from_slice(b"\"}");
        if self.gzip {
            *body = gzip(body);
        }
    }

    /// One batch's body as the I/O engine sends it: made whole, as [`body`](Self::body)
    /// makes it (a piece per message, each a reference to its chunk, cost more
    /// instructions than this copy: BENCHMARKS.md, "Batch bodies").
    pub(crate) fn frames<'a>(
        &self,
        msgs: impl ExactSizeIterator<Item = &'a Element> + Clone,
    ) -> Frames {
        let mut body = Vec::new();
        self.body(&mut body, msgs);
        Frames::one(Bytes::from(body))
    }
}

/// Out of line: the encoder's state is tens of KiB, which inlined would enlarge the stack
/// frame of every batch built, gzip or not.
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
    fn a_batch_body_joins_its_elements_read_from_either_bytes() {
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
            assert_eq!(
                whole.len(),
                body_len(n, msgs.iter().map(Element::len).sum())
            );
        }
        let gzip = Endpoint::new(&Config {
            write_key: Some("k".into()),
            gzip: true,
            ..Config::default()
        })
        .unwrap();
        let mut zipped = Vec::new();
        gzip.body(&mut zipped, elements.iter());
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(&zipped[..]),
            &mut unzipped,
        )
        .unwrap();
        let mut plain = Vec::new();
        endpoint.body(&mut plain, elements.iter());
        let cut = plain.len() - timestamp::LEN - 2;
        assert_eq!(unzipped[..cut], plain[..cut], "the same body, compressed");
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
