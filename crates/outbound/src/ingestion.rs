//! The ingestion destination: Segment-compatible `POST {endpoint}/v1/batch` (design §5).

use crate::config::Config;
use crate::encode::{Obj, Parts};
use crate::message::{Kind, Message};
use crate::timestamp;
use crate::transport::{Attempt, Transport};
use base64::Engine as _;
use std::io::Write;
use ureq::http::{HeaderName, HeaderValue};

/// A batch body never exceeds this many bytes (before gzip).
pub const MAX_BATCH_BYTES: usize = 500_000;

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
    o.end();
    Some(id_at)
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
            url: format!("{}/v1/batch", config.endpoint.trim_end_matches('/')),
            headers,
            gzip: config.gzip,
        })
    }

    /// Sends one batch: `{"batch":[...],"sentAt":"<now>"}`.
    pub(crate) fn send<'a>(
        &self,
        transport: &Transport,
        msgs: impl ExactSizeIterator<Item = &'a [u8]> + Clone,
    ) -> Attempt {
        let sum: usize = msgs.clone().map(<[u8]>::len).sum();
        let mut body = Vec::with_capacity(body_len(msgs.len(), sum));
        body.extend_from_slice(b"{\"batch\":[");
        for (i, m) in msgs.enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(m);
        }
        body.extend_from_slice(b"],\"sentAt\":\"");
        let mut ts = [0u8; timestamp::LEN];
        // The clock is always within 0000..9999.
        let _ = timestamp::write(timestamp::now(), &mut ts);
        body.extend_from_slice(&ts);
        body.extend_from_slice(b"\"}");
        if self.gzip {
            let mut enc = flate2::write::GzEncoder::new(
                Vec::with_capacity(body.len() / 4),
                flate2::Compression::fast(),
            );
            // Writing to a Vec cannot fail.
            let _ = enc.write_all(&body);
            body = enc.finish().unwrap_or_default();
        }
        transport.post(&self.url, &self.headers, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
