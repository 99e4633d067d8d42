//! A recording client for application tests: the real client — same checks, same
//! serialization, same batching, signing and outcomes — with the network replaced by a
//! recorder. Nothing is sent (no DNS lookup, no connection); every request that would have
//! gone out is kept with its exact wire body and the headers outbound sets, and every
//! outcome is kept too, so a test asserts on what would have been sent.
//!
//! ```
//! use outbound::{testing, Config, Message, Webhook};
//!
//! let (client, recording) = testing::recording(Config {
//!     webhooks: vec![Webhook::new("https://hooks.example.com/in")],
//!     shared_secret: Some("s3cret".into()),
//!     ..Config::default()
//! })?;
//! client.enqueue(&Message::track("u1", "Signed Up"))?;
//! assert!(client.flush(None));
//! let sent = &recording.requests()[0];
//! assert!(outbound::verify(b"s3cret", &sent.body, sent.header("x-signature").unwrap()));
//! # Ok::<(), outbound::Error>(())
//! ```

use crate::client::Client;
use crate::error::Error;
use crate::model::config::Config;
use crate::model::outcome::Outcome;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
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

/// What a recording client would have sent, and how each message ended. Cheap to clone:
/// clones share one record.
#[derive(Clone, Debug, Default)]
pub struct Recording(Arc<Recorder>);

#[derive(Debug, Default)]
pub(crate) struct Recorder {
    requests: Mutex<Vec<Request>>,
    outcomes: Mutex<Vec<Outcome>>,
    /// The status every recorded request is answered with (0: 200).
    status: AtomicU16,
}

impl Recorder {
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recording {
    /// Every request so far, in the order they would have been sent.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.0.requests).clone()
    }

    /// Every outcome so far, in the order they were reported.
    pub fn outcomes(&self) -> Vec<Outcome> {
        lock(&self.0.outcomes).clone()
    }

    /// Answers every later request with `status` instead of 200, to see how the application
    /// copes with failures: `410` fails a webhook message as `gone`, `400` fails it, `503` is
    /// retried (as the real client would, with its backoff) until it expires.
    pub fn respond_with(&self, status: u16) {
        self.0.status.store(status, Ordering::SeqCst);
    }

    /// Forgets the requests and outcomes recorded so far.
    pub fn clear(&self) {
        lock(&self.0.requests).clear();
        lock(&self.0.outcomes).clear();
    }
}

/// A client that records instead of sending (see the module docs). `config` is checked as
/// for [`Client::new`]; its `on_outcome` is still called, after the outcome is recorded.
pub fn recording(mut config: Config) -> Result<(Client, Recording), Error> {
    let recording = Recording::default();
    let record = recording.0.clone();
    let user = config.on_outcome.take();
    config.on_outcome = Some(Arc::new(move |o: &Outcome| {
        lock(&record.outcomes).push(o.clone());
        if let Some(cb) = &user {
            cb(o);
        }
    }));
    let client = Client::with_recorder(config, Some(recording.0.clone()))?;
    Ok((client, recording))
}
