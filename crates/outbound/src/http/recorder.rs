//! Where a recording client's requests go instead of the network ([`crate::testing`]):
//! each request kept with its exact body and the headers outbound sets. A webhook request
//! first meets the client's network guard, as a sent one would: refused, it is not recorded.

use crate::model::network_guard::{Blocked, NetworkGuard};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Mutex;
use ureq::http::{HeaderName, HeaderValue};

/// Which destination a recorded request was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A batch to `{endpoint}/v1/batch`.
    Ingestion,
    /// One message to a webhook URL.
    Webhook,
}

/// A request the client would have sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Ingestion or webhook.
    pub destination: Destination,
    /// The URL it would have been POSTed to.
    pub url: String,
    /// The headers outbound sets, names in lowercase, in order (`content-type`,
    /// `authorization`, `x-signature`, `webhook-signature`, the webhook's own headers, ...;
    /// not the HTTP client's `host` and `content-length`).
    pub headers: Vec<(String, String)>,
    /// The body exactly as it would have been sent (gzip-compressed when `gzip` is on).
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (any case), if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) requests: Mutex<Vec<Request>>,
    /// The status every recorded request is answered with (0: 200).
    pub(crate) status: AtomicU16,
    /// The client's `block_private_networks` guard. The recorder resolves no name, so it
    /// judges the addresses a URL names itself (`NetworkGuard::check_url`).
    guard: Option<NetworkGuard>,
}

impl Recorder {
    pub(crate) fn new(guard: Option<NetworkGuard>) -> Recorder {
        Recorder {
            guard,
            ..Recorder::default()
        }
    }

    /// Records a webhook request, unless the network guard refuses its URL (then nothing
    /// is recorded, as nothing would be sent).
    pub(crate) fn record_hook(
        &self,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: &[u8],
    ) -> Result<u16, Blocked> {
        if let Some(guard) = &self.guard {
            guard.check_url(url)?;
        }
        Ok(self.record(Destination::Webhook, url, headers, body))
    }

    /// Records one request and gives the status it is answered with.
    pub(crate) fn record(
        &self,
        destination: Destination,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: &[u8],
    ) -> u16 {
        let headers = headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        lock(&self.requests).push(Request {
            destination,
            url: url.to_owned(),
            headers,
            body: body.to_vec(),
        });
        match self.status.load(Ordering::SeqCst) {
            0 => 200,
            s => s,
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
