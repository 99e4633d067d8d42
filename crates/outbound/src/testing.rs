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

/// A request as a subscription's client writes it: its headers in order (names in lower case,
/// values as the bytes sent) and its body. The transport adds `host` and `content-length`.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionRequest {
    /// Name (lower case) and value of each header, in the order written.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body (empty: the request has none).
    pub body: Vec<u8>,
}

/// The request the client of `config`'s first subscription sends for `events`, made by the
/// client's own code: each event queued as a call queues it, the request built as the
/// delivery builds it (signature included). Unbatched, `events` is one event; batched, the
/// batch is of those that queue (one that fails is sent alone). `Ok(None)`: nothing is sent;
/// `Err`: why the config is refused or the event fails. For the differential test against
/// Segment's code (`examples/subscriptions_diff.rs`).
#[doc(hidden)]
pub fn subscription_request(
    config: &Config,
    events: &[&serde_json::Value],
) -> Result<Option<SubscriptionRequest>, String> {
    use crate::wire::body::Body;
    Client::validate(config).map_err(|e| e.to_string())?;
    let sub = config.subscriptions.first().ok_or("no subscription")?;
    let own = config.for_subscription(0).map_err(|e| e.to_string())?;
    let checked = own.check_webhooks().map_err(|e| e.to_string())?;
    let hooks = crate::wire::webhook::Hooks::new(&own, checked);
    let (headers, body) = if hooks.batched() {
        let bodies: Vec<Body> = (events.iter())
            .filter_map(|e| crate::client::queued(sub, e)?.ok())
            .map(Body::from)
            .collect();
        if bodies.is_empty() {
            return Ok(None);
        }
        hooks.batch_request(bodies.iter())?
    } else {
        let [event] = events else {
            return Err("an unbatched subscription sends one event a request".into());
        };
        let Some(queued) = crate::client::queued(sub, event) else {
            return Ok(None);
        };
        // A failed event goes to the sender too, which fails it with its reason.
        let body = Body::from(queued.unwrap_or_else(|failed| failed));
        hooks.request(0, "message-id", &body)?
    };
    Ok(Some(SubscriptionRequest {
        headers: (headers.into_iter())
            .map(|(k, v)| (k.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect(),
        body: body.to_vec(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::subscription::{Settings, Subscription};
    use serde_json::json;

    fn config(batch_size: Option<usize>) -> Config {
        let mut s = Settings::new("s", r#"type = "track""#, "http://127.0.0.1:9/in");
        s.headers = Some(json!({"X-A": {"@path": "$.properties.a"}}));
        s.batch_size = batch_size;
        Config {
            subscriptions: vec![Subscription::new(s).unwrap()],
            shared_secret: Some("k".into()),
            ..Config::default()
        }
    }

    #[test]
    fn a_subscription_request_has_the_headers_the_sender_writes() {
        let event = json!({"type": "track", "properties": {"a": "é"}});
        let sent = subscription_request(&config(None), &[&event])
            .unwrap()
            .unwrap();
        let names: Vec<&str> = sent.headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["user-agent", "content-type", "x-a", "x-signature"]);
        assert_eq!(sent.headers[2].1, [0xe9]);
        let signature = crate::sign(b"k", &sent.body);
        assert_eq!(sent.headers[3].1, signature.as_bytes());
        let other = json!({"type": "page"});
        assert_eq!(subscription_request(&config(None), &[&other]), Ok(None));
    }

    #[test]
    fn a_batched_subscription_request_is_of_the_events_that_queue() {
        let (a, b) = (json!({"type": "track"}), json!({"type": "page"}));
        let sent = subscription_request(&config(Some(10)), &[&a, &b, &a])
            .unwrap()
            .unwrap();
        assert_eq!(sent.body, br#"[{"type":"track"},{"type":"track"}]"#);
        assert!(sent.headers.iter().any(|(k, _)| k == "x-signature"));
    }
}
