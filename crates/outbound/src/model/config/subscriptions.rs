//! A client's subscriptions (Segment's Webhooks (Actions)): checked with the client's
//! settings, and each delivered as a destination of its own by a client the core makes for
//! it from the parent's settings ([`Config::for_subscription`]): its own queue, retries in
//! the same window, records, health, circuit and dead letters.

use super::{check_url, Config, StaticHeaders, Webhook};
use crate::error::Error;
use crate::model::outcome::Outcome;
use crate::model::subscription::BatchSignature;
use http::{HeaderName, HeaderValue, Method};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// At most this many subscriptions per client.
pub const MAX_SUBSCRIPTIONS: usize = 50;

/// A subscription's request timeout: Segment's for its actions.
pub const SUBSCRIPTION_TIMEOUT: Duration = Duration::from_secs(10);

/// How the client made for one subscription sends: what a classic webhook's settings do not
/// say. Set only by [`Config::for_subscription`].
#[derive(Debug)]
pub(crate) struct SendAs {
    /// The subscription's name, as records and logs show it.
    pub name: Arc<str>,
    pub method: Method,
    /// Its fixed headers (none when mapped per event: each request carries its own).
    pub headers: StaticHeaders,
    /// Whether a request with the fixed headers is signed by the sender (they do not set
    /// `X-Signature` themselves).
    pub signed: bool,
    /// Batched (`batch_size`, as the client's `flush_at`): what a batch's signature covers.
    pub batch: Option<BatchSignature>,
}

impl Config {
    /// Checks the subscriptions: how many, and names that are given and unique (a name keys
    /// a subscription's records and what it left in the spool).
    pub(crate) fn check_subscriptions(&self) -> Result<(), Error> {
        if self.subscriptions.len() > MAX_SUBSCRIPTIONS {
            return Err(Error::config(
                "subscriptions",
                format!(
                    "{} given, at most {MAX_SUBSCRIPTIONS} allowed",
                    self.subscriptions.len()
                ),
            ));
        }
        let mut names = HashSet::new();
        for (i, sub) in self.subscriptions.iter().enumerate() {
            let name = sub.name();
            if name.is_empty() {
                return Err(Error::config(
                    format!("subscriptions[{i}].name"),
                    "is required: it keys the subscription's records",
                ));
            }
            if name.len() > 100 || name.chars().any(char::is_control) {
                return Err(Error::config(
                    format!("subscriptions[{i}].name"),
                    "must be at most 100 bytes, without control characters",
                ));
            }
            if !names.insert(name) {
                return Err(Error::config(
                    format!("subscriptions[{i}].name"),
                    format!("{name:?} is the name of an earlier subscription"),
                ));
            }
            check_url(&format!("subscriptions[{i}].url"), sub.url())?;
            if let Some((headers, _)) = sub.fixed_headers() {
                fixed_headers(i, headers)?;
            }
        }
        Ok(())
    }

    /// The settings of the client that delivers subscription `i`: the parent's, with the
    /// subscription's URL and endpoint settings as its one webhook, Segment's 10 s timeout, no ingestion and no
    /// spool of its own (it is a tenant of the parent's), and outcomes reported with the
    /// subscription's name.
    pub(crate) fn for_subscription(&self, i: usize) -> Result<Config, Error> {
        let sub = &self.subscriptions[i];
        let (headers, signed) = match sub.fixed_headers() {
            Some((headers, own)) => (fixed_headers(i, headers)?, !own),
            None => (Vec::new(), true),
        };
        let name: Arc<str> = sub.name().into();
        let on_outcome = self.on_outcome.clone().map(|cb| {
            let name = name.clone();
            Arc::new(move |o: &Outcome| {
                let mut o = o.clone();
                o.subscription = Some(name.clone());
                cb(&o)
            }) as super::OutcomeCallback
        });
        let method = Method::from_bytes(sub.method().as_str().as_bytes())
            .expect("POST, PUT and PATCH are methods");
        let mut c = self.clone();
        c.write_key = None;
        // The subscription's endpoint settings on its one webhook: delivery, tokens, TLS,
        // signature and rate limit are a webhook's, checked and named as one.
        let endpoint = sub.endpoint().clone();
        let mut hook = Webhook::new(sub.url()).enabled(sub.enabled());
        hook.auth = endpoint.auth;
        hook.tls = endpoint.tls;
        hook.signature_header = endpoint.signature_header;
        hook.signature_scheme = endpoint.signature_scheme;
        hook.rate_limit = endpoint.rate_limit;
        c.webhooks = Arc::new(vec![hook]);
        c.subscriptions = Vec::new();
        c.timeout = SUBSCRIPTION_TIMEOUT;
        c.spool = None;
        c.on_outcome = on_outcome;
        // A batch closes at `batch_size` events, at 500,000 bytes, or `flush_interval` after
        // its first event, as the ingestion destination's do.
        if let Some(n) = sub.batch_size() {
            c.flush_at = n;
            c.max_batch_messages = None;
        }
        c.send_as = Some(Arc::new(SendAs {
            name,
            method,
            headers,
            signed,
            batch: sub.batch_size().map(|_| sub.batch_signature()),
        }));
        Ok(c)
    }
}

/// An error of subscription `i`'s client, named as the subscription's (its one webhook is
/// the subscription's endpoint).
pub(crate) fn named(i: usize, e: Error) -> Error {
    match e {
        Error::Config { setting, reason } if setting.starts_with("webhooks[0]") => Error::config(
            setting.replacen("webhooks[0]", &format!("subscriptions[{i}]"), 1),
            reason,
        ),
        e => e,
    }
}

/// A subscription's fixed headers, ready to send: values as Node sends them (each character
/// one byte). Names are checked by the mapping's rules already; the transport's own are
/// refused here as for webhooks.
fn fixed_headers(i: usize, headers: &[(String, String)]) -> Result<StaticHeaders, Error> {
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let setting = || format!("subscriptions[{i}].headers.{name}");
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Error::config(setting(), "is not a legal HTTP header name"))?;
        if matches!(
            parsed.as_str(),
            "content-length" | "host" | "transfer-encoding" | "connection"
        ) {
            return Err(Error::config(setting(), "is set by the transport"));
        }
        let bytes: Vec<u8> = value.chars().map(|c| c as u32 as u8).collect();
        let value = HeaderValue::from_bytes(&bytes)
            .map_err(|_| Error::config(setting(), "is not a legal HTTP header value"))?;
        out.push((parsed, value));
    }
    Ok(out)
}
