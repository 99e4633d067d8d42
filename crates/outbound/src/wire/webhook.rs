//! The webhooks destination (Segment's classic Webhooks, docs/receivers.md): one signed POST
//! per message to each of up to 5 URLs.

use crate::error::Error;
use crate::model::config::{
    standard_keys, CheckedHook, Config, SendAs, SignatureScheme, StaticHeaders, Webhook,
};
use crate::model::message::{Kind, Message, Object};
use crate::wire::encode::{Obj, Parts};
use crate::wire::signature;
use http::{HeaderName, HeaderValue};
use serde_json::Value;
use std::sync::Arc;

/// True unless `integrations` turns webhooks off: `"Webhooks": false`, or `"All": false`
/// without `"Webhooks": true` (or options). Names are case-sensitive.
pub(crate) fn wanted(integrations: Option<&Object>) -> bool {
    let Some(ints) = integrations else {
        return true;
    };
    match ints.get("Webhooks") {
        Some(Value::Bool(on)) => *on,
        Some(_) => true,
        None => !matches!(ints.get("All"), Some(Value::Bool(false))),
    }
}

/// Writes the webhook body of `msg` (returns where the id's text starts): `version: 1` on all
/// but delete; alias carries `"Previous ID"` and `"User ID"` and no `userId`; delete is
/// exactly `type`, `userId`, `timestamp`.
pub(crate) fn encode<O>(
    msg: &Message<O>,
    parts: &Parts,
    id: &str,
    ts: &[u8],
    out: &mut Vec<u8>,
) -> Option<usize> {
    let mut o = Obj::begin(out);
    if msg.kind == Kind::Delete {
        o.str("type", "delete");
        o.opt_str("userId", msg.user_id.as_ref());
        o.ts("timestamp", ts);
        o.end();
        // A delete body has no messageId.
        return None;
    }
    o.raw("version", b"1");
    o.str("type", msg.kind.as_str());
    if msg.kind == Kind::Alias {
        o.opt_str("Previous ID", msg.previous_id.as_ref());
        o.opt_str("User ID", msg.user_id.as_ref());
    } else {
        o.opt_str("userId", msg.user_id.as_ref());
    }
    o.opt_str("anonymousId", msg.anonymous_id.as_ref());
    match msg.kind {
        Kind::Track => {
            o.opt_str("event", msg.event.as_ref());
            o.raw("properties", parts.properties_or_empty());
        }
        Kind::Page => {
            o.opt_str("name", msg.name.as_ref());
            o.opt_str("category", msg.category.as_ref());
            o.raw("properties", parts.properties_or_empty());
        }
        Kind::Screen => {
            o.opt_str("name", msg.name.as_ref());
            o.opt_str("category", msg.category.as_ref());
            o.opt_raw("properties", parts.properties());
        }
        Kind::Identify => o.raw("traits", parts.traits_or_empty()),
        Kind::Group => {
            o.opt_str("groupId", msg.group_id.as_ref());
            o.raw("traits", parts.traits_or_empty());
        }
        Kind::Alias | Kind::Delete => {}
    }
    o.raw("context", parts.context());
    o.opt_raw("integrations", parts.integrations());
    o.collected(msg.collected.as_deref());
    let id_at = o.str_at("messageId", id);
    o.ts("timestamp", ts);
    o.end();
    Some(id_at)
}

/// With Standard Webhooks the message id travels as `webhook-id` and is signed between
/// dots: it must be a header value and, as the spec asks of ids, hold no `.`. Generated
/// UUIDs always pass; this refuses a caller's `message_id` that would not.
pub(crate) fn check_standard_id(id: &str) -> Result<(), Error> {
    if id.contains('.') || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::invalid(
            "message_id",
            "with signature_scheme \"standard-webhooks\" it is sent as webhook-id: use \
             visible ASCII without spaces or '.'",
        ));
    }
    Ok(())
}

/// How one webhook's requests are signed.
enum Signer {
    None,
    /// `X-Signature` (or the webhook's header) with this key.
    XSignature(Arc<[u8]>, HeaderName),
    /// `X-Signature-256: sha256=...` (or the webhook's header) with this key.
    Sha256(Arc<[u8]>, HeaderName),
    /// Standard Webhooks headers; signed with each key (none: id and timestamp only).
    Standard(Arc<[Vec<u8>]>),
}

/// Headers the transport writes: a subscription's mapping cannot set them.
const TRANSPORT: [&str; 4] = ["content-length", "host", "transfer-encoding", "connection"];

/// A queued request's own headers (mapped per event), ready to send; the transport's are
/// left out, as its to write.
fn mapped_headers(
    headers: Option<Vec<(&[u8], &[u8])>>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut own = Vec::new();
    for (name, value) in headers.unwrap_or_default() {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        else {
            return Err("mapping: a mapped header is not a legal HTTP header".into());
        };
        if !TRANSPORT.contains(&name.as_str()) {
            own.push((name, value));
        }
    }
    Ok(own)
}

/// One webhook: its own headers and its signer.
struct HookSetup {
    headers: StaticHeaders,
    signer: Signer,
    /// Its endpoint's `auth` sets `Authorization`: a subscription's mapped one is left out.
    auth: bool,
}

/// The configured webhooks and how to sign for them.
pub(crate) struct Hooks {
    targets: Vec<HookSetup>,
    /// The client's webhooks (shared with its config) and whether logs show their paths:
    /// what [`label`](Self::label) makes a label of, when a lane is made or a line logged,
    /// rather than a label held for each idle URL.
    webhooks: Arc<Vec<Webhook>>,
    log_url_paths: bool,
    user_agent: HeaderValue,
    /// A subscription's client: its method, headers and per-event requests.
    send_as: Option<Arc<SendAs>>,
}

impl Hooks {
    /// `config` has passed its checks (a Standard Webhooks secret parses); `checked` is
    /// what `Config::check_webhooks` gave.
    pub(crate) fn new(config: &Config, checked: Vec<CheckedHook>) -> Hooks {
        let secret = config.shared_secret.as_deref();
        let key: Option<Arc<[u8]>> = secret.map(|s| Arc::from(s.as_bytes()));
        let standard: Arc<[Vec<u8>]> = secret
            .and_then(|s| standard_keys(s).ok())
            .unwrap_or_default()
            .into();
        let targets = checked
            .into_iter()
            .zip(config.webhooks.iter())
            .map(|(hook, webhook)| {
                let named = |default: &'static str| {
                    (hook.signature_header.clone())
                        .unwrap_or_else(|| HeaderName::from_static(default))
                };
                let signer = match (hook.scheme, &key) {
                    (SignatureScheme::StandardWebhooks, _) => Signer::Standard(standard.clone()),
                    (_, None) => Signer::None,
                    (SignatureScheme::XSignature, Some(k)) => {
                        Signer::XSignature(k.clone(), named("x-signature"))
                    }
                    (SignatureScheme::HmacSha256, Some(k)) => {
                        Signer::Sha256(k.clone(), named("x-signature-256"))
                    }
                };
                // A subscription's fixed headers first, then its endpoint's `Authorization`.
                let headers = match &config.send_as {
                    Some(s) => s.headers.iter().cloned().chain(hook.headers).collect(),
                    None => hook.headers,
                };
                HookSetup {
                    headers,
                    signer,
                    auth: webhook.auth.is_some(),
                }
            })
            .collect::<Vec<_>>();
        Hooks {
            webhooks: config.webhooks.clone(),
            log_url_paths: config.log_url_paths,
            send_as: config.send_as.clone(),
            targets,
            user_agent: HeaderValue::from_str(&config.webhook_user_agent)
                .unwrap_or_else(|_| HeaderValue::from_static("Outbound/1.0")),
        }
    }

    /// Webhook `target` as logs show it (`webhooks[0] https://hooks.example.com/…`: no path
    /// or query, they may hold a token), or a subscription's URL (`subscriptions[vip] …`).
    pub(crate) fn label(&self, target: usize) -> Arc<str> {
        let url = crate::log::url_for_log(&self.webhooks[target].url, self.log_url_paths);
        match &self.send_as {
            Some(s) => format!("subscriptions[{}] {url}", s.name).into(),
            None => format!("webhooks[{target}] {url}").into(),
        }
    }

    /// The headers and body of one request of `body` (message `id`, as queued) to webhook
    /// number `target`. An error is a permanent failure of the message at every URL (its
    /// detail).
    pub(crate) fn request(
        &self,
        target: usize,
        id: &str,
        body: &crate::wire::Body,
    ) -> Result<(Vec<(HeaderName, HeaderValue)>, bytes::Bytes), String> {
        let bytes = bytes::Bytes::from_owner(body.clone());
        let Some(send_as) = &self.send_as else {
            return Ok((self.headers(target, id, body, true, true, &[])?, bytes));
        };
        let framed = crate::wire::subscription::read(body)?;
        let payload = framed.body.clone().map(|r| bytes.slice(r));
        let signed = framed.signed.unwrap_or(send_as.signed) && payload.is_some();
        let own = mapped_headers(framed.headers)?;
        let has_body = payload.is_some();
        let headers = self.headers(
            target,
            id,
            payload.as_deref().unwrap_or(b""),
            has_body,
            signed,
            &own,
        )?;
        Ok((headers, payload.unwrap_or_default()))
    }

    /// Whether this client sends batches of a subscription's events (its lane 0).
    pub(crate) fn batched(&self) -> bool {
        self.send_as.as_ref().is_some_and(|s| s.batch.is_some())
    }

    /// One batch request of a subscription's events (`events`, as queued): a JSON array of
    /// their bodies (`null` for one without), with the first event's headers, signed over
    /// the whole body or, as Segment signs, over the first element alone.
    pub(crate) fn batch_request<'a>(
        &self,
        events: impl Iterator<Item = &'a crate::wire::Body>,
    ) -> Result<(Vec<(HeaderName, HeaderValue)>, bytes::Bytes), String> {
        let send_as = self.send_as.as_ref().ok_or("not a subscription's client")?;
        let first_element =
            send_as.batch == Some(crate::model::subscription::BatchSignature::FirstElement);
        let mut bodies = Vec::new();
        let mut own = Vec::new();
        let mut signed = send_as.signed;
        for (i, bytes) in events.enumerate() {
            let framed = crate::wire::subscription::read(bytes)?;
            if i == 0 {
                signed = framed.signed.unwrap_or(send_as.signed);
                own = mapped_headers(framed.headers)?;
            }
            bodies.push(framed.body.map(|r| &bytes[r]));
        }
        let (body, covered) = crate::model::subscription::request::batch(&bodies, first_element);
        let signed_bytes = covered.clone().map_or(&body[..0], |r| &body[r]);
        // Standard Webhooks signs an id: the batch's own, the same at each retry.
        let id = format!("batch_{}", &signature::sign(b"outbound-batch", &body)[..24]);
        let headers = self.headers(
            0,
            &id,
            signed_bytes,
            true,
            signed && covered.is_some(),
            &own,
        )?;
        Ok((headers, bytes::Bytes::from(body)))
    }

    /// The headers of one request of `body` (message `id`) to webhook number `target`: user
    /// agent (unless `own` or the webhook's set one), content type (with a body), the
    /// webhook's own and `own`, and, when `signed`, the signature of this attempt.
    fn headers(
        &self,
        target: usize,
        id: &str,
        body: &[u8],
        has_body: bool,
        signed: bool,
        own_headers: &[(HeaderName, HeaderValue)],
    ) -> Result<Vec<(HeaderName, HeaderValue)>, &'static str> {
        let own = &self.targets[target];
        let mut headers = Vec::with_capacity(own.headers.len() + own_headers.len() + 5);
        let user_agent = http::header::USER_AGENT;
        let content_type = http::header::CONTENT_TYPE;
        let set =
            |name: &HeaderName| (own.headers.iter().chain(own_headers)).any(|(k, _)| k == name);
        if self.send_as.is_none() || !set(&user_agent) {
            headers.push((user_agent, self.user_agent.clone()));
        }
        if has_body {
            headers.push((
                content_type.clone(),
                HeaderValue::from_static("application/json"),
            ));
        }
        // A subscription's own content type goes out only on a request without a body.
        let kept = |(k, _): &&(HeaderName, HeaderValue)| !has_body || *k != content_type;
        headers.extend(own.headers.iter().filter(kept).cloned());
        // The endpoint's auth wins over an event's mapped Authorization: one is sent.
        let mapped =
            |h: &&(HeaderName, HeaderValue)| !own.auth || h.0 != http::header::AUTHORIZATION;
        headers.extend(own_headers.iter().filter(kept).filter(mapped).cloned());
        if !signed {
            return Ok(headers);
        }
        match &own.signer {
            Signer::None => {}
            Signer::XSignature(secret, name) => {
                let sig = signature::sign(secret, body);
                headers.push((
                    name.clone(),
                    HeaderValue::from_str(&sig).expect("hex is a valid header value"),
                ));
            }
            Signer::Sha256(secret, name) => {
                let sig = signature::sign_sha256(secret, body);
                headers.push((
                    name.clone(),
                    HeaderValue::from_str(&sig).expect("hex is a valid header value"),
                ));
            }
            Signer::Standard(keys) => {
                let Ok(id_value) = HeaderValue::from_str(id) else {
                    // Ids are checked at the call; one resumed from an older spool may not be.
                    return Err("message id is not a valid webhook-id header value");
                };
                // The time of this attempt, not of the event: a retry gets a fresh one, so a
                // receiver's replay tolerance holds for late deliveries too.
                let ts = signature::unix_now();
                headers.push((HeaderName::from_static("webhook-id"), id_value));
                headers.push((
                    HeaderName::from_static("webhook-timestamp"),
                    HeaderValue::from(ts),
                ));
                if !keys.is_empty() {
                    let sig = signature::sign_with_keys(keys, id, ts, body);
                    headers.push((
                        HeaderName::from_static("webhook-signature"),
                        HeaderValue::from_str(&sig).expect("base64 is a valid header value"),
                    ));
                }
            }
        }
        Ok(headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ints(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn integrations_decide_per_design() {
        assert!(wanted(None));
        assert!(!wanted(Some(&ints(json!({"Webhooks": false})))));
        assert!(!wanted(Some(&ints(json!({"All": false})))));
        assert!(wanted(Some(&ints(json!({"All": false, "Webhooks": true})))));
        assert!(wanted(Some(&ints(json!({"webhooks": false})))));
        assert!(wanted(Some(&ints(
            json!({"All": false, "Webhooks": {"opt": 1}})
        ))));
    }
}
