//! A recording client for application tests: the real client — same checks, same
//! serialization, same batching, signing and outcomes — with the network replaced by a
//! recorder. Nothing is sent (no DNS lookup, no connection); every request that would have
//! gone out is kept with its exact wire body and the headers outbound sets, and every
//! outcome is kept too, so a test asserts on what would have been sent. With
//! `block_private_networks`, a webhook URL naming an address the guard refuses (an IP
//! literal, or `localhost`) fails as `blocked` and is not recorded, as the real client
//! would refuse it; a host name is not resolved, so it is recorded.
//!
//! ```
//! use outbound::{testing, Config, Message, Webhook};
//!
//! let (client, recording) = testing::recording(
//!     Config::default()
//!         .webhooks(vec![Webhook::new("https://hooks.example.com/in")])
//!         .shared_secret("s3cret"),
//! )?;
//! client.enqueue(&Message::track("u1", "Signed Up"))?;
//! assert!(client.flush(None));
//! let sent = &recording.requests()[0];
//! assert!(outbound::verify(b"s3cret", &sent.body, sent.header("x-signature").unwrap()));
//! # Ok::<(), outbound::Error>(())
//! ```

use crate::client::Client;
use crate::error::Error;
use crate::http::recorder::{lock, Recorder};
pub use crate::http::recorder::{Destination, Request};
use crate::model::config::Config;
use crate::model::outcome::Outcome;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// What a recording client would have sent, and how each message ended. Cheap to clone:
/// clones share one record.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    requests: Arc<Recorder>,
    outcomes: Arc<Mutex<Vec<Outcome>>>,
}

impl Recording {
    /// Every request so far, in the order they would have been sent.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.requests.requests).clone()
    }

    /// Every outcome so far, in the order they were reported.
    pub fn outcomes(&self) -> Vec<Outcome> {
        lock(&self.outcomes).clone()
    }

    /// Answers every later request with `status` instead of 200, to see how the application
    /// copes with failures: `410` fails a webhook message as `gone`, `400` fails it, `503` is
    /// retried (as the real client would, with its backoff) until it expires.
    pub fn respond_with(&self, status: u16) {
        self.requests.status.store(status, Ordering::SeqCst);
    }

    /// Forgets the requests and outcomes recorded so far.
    pub fn clear(&self) {
        lock(&self.requests.requests).clear();
        lock(&self.outcomes).clear();
    }
}

/// A client that records instead of sending (see the module docs). `config` is checked as
/// for [`Client::new`]; its `on_outcome` is still called, after the outcome is recorded.
pub fn recording(mut config: Config) -> Result<(Client, Recording), Error> {
    let recording = Recording {
        requests: Arc::new(Recorder::default()),
        outcomes: Arc::default(),
    };
    let record = recording.outcomes.clone();
    let user = config.on_outcome.take();
    config.on_outcome = Some(Arc::new(move |o: &Outcome| {
        lock(&record).push(o.clone());
        if let Some(cb) = &user {
            cb(o);
        }
    }));
    let client = Client::with_recorder(config, Some(recording.requests.clone()))?;
    Ok((client, recording))
}
