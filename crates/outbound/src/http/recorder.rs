//! Where a recording client's requests go instead of the network ([`crate::testing`]): each
//! request kept with its exact body and the headers outbound sets, at the place it would be
//! sent (`exchange.rs`). A request first meets the network guard its exchange has, judged on
//! the addresses its URL names (no lookup): refused, it is not recorded, as nothing would be
//! sent.

use crate::http::attempt::{classify_status, Attempt, Seen};
use crate::http::frames::Frames;
use crate::model::network_guard::NetworkGuard;
use crate::model::outcome::Reason;
use ::http::{HeaderName, HeaderValue};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// A recording client's record of requests, shared by its exchanges and its `Recording`.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) requests: Mutex<Vec<Request>>,
    /// The status every recorded request is answered with (0: 200).
    pub(crate) status: AtomicU16,
}

impl Recorder {
    /// Records one request and gives the status it is answered with.
    fn record(&self, request: Request) -> u16 {
        lock(&self.requests).push(request);
        match self.status.load(Ordering::SeqCst) {
            0 => 200,
            s => s,
        }
    }
}

/// Where one exchange's requests are recorded: the client's record, what they are for, the
/// exchange's network guard, and its URLs as the client was given them.
pub(crate) struct Record {
    recorder: Arc<Recorder>,
    destination: Destination,
    guard: Option<NetworkGuard>,
    urls: Vec<Box<str>>,
}

impl Record {
    pub(crate) fn new(
        recorder: Arc<Recorder>,
        destination: Destination,
        guard: Option<NetworkGuard>,
        urls: &[&str],
    ) -> Record {
        Record {
            recorder,
            destination,
            guard,
            urls: urls.iter().map(|u| Box::from(*u)).collect(),
        }
    }

    /// Records a POST of `body` to URL `to`, unless the guard refuses the addresses the URL
    /// names (then nothing is recorded, as nothing would be sent).
    pub(crate) fn post(
        &self,
        to: usize,
        headers: &[(HeaderName, HeaderValue)],
        mut body: Frames,
    ) -> (Attempt, Seen) {
        let url = &self.urls[to];
        if let Some(blocked) = self.guard.as_ref().and_then(|g| g.check_url(url).err()) {
            let attempt = Attempt::Permanent {
                reason: Reason::Blocked,
                detail: blocked.to_string(),
            };
            let seen = Seen::of(&attempt, Duration::ZERO);
            return (attempt, seen);
        }
        let mut bytes = Vec::with_capacity(body.len() as usize);
        while let Some(piece) = body.pop() {
            bytes.extend_from_slice(&piece);
        }
        let headers = headers
            .iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_owned(), value)
            })
            .collect();
        let status = self.recorder.record(Request {
            destination: self.destination,
            url: url.to_string(),
            headers,
            body: bytes,
        });
        let attempt = classify_status(status, None);
        let seen = Seen::of(&attempt, Duration::ZERO);
        (attempt, seen)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
