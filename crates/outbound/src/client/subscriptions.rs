//! A client's subscriptions (`Config::subscriptions`): each is delivered by a client of the
//! same engine made for it (its own queue, lane, retries, records and dead letters, on the
//! parent's spool under `<parent>/subscriptions/<name>`). At each call the message, in the
//! shape Segment's tracking API gives it, is matched and mapped on the caller's thread, and
//! each match is queued with that subscription's client, all or none with the message.

use super::Client;
use crate::delivery::command::Item;
use crate::engine::{Core, SpoolWriter};
use crate::error::Error;
use crate::http::recorder::Recorder;
use crate::model::config::Config;
use crate::model::subscription::Subscription;
use crate::wire::ingestion::Element;
use crate::wire::subscription;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// What `sub` queues for `event`: `None` when its trigger does not match; `Err` holds the
/// bytes of an event it cannot send (it fails alone, as at Segment).
pub(crate) fn queued(
    sub: &Subscription,
    event: &serde_json::Value,
) -> Option<Result<Vec<u8>, Vec<u8>>> {
    match sub.map(event) {
        Ok(None) => None,
        Ok(Some(mapped)) => {
            let fixed = sub.fixed_headers();
            let bytes =
                subscription::encode(&mapped, fixed.is_some(), fixed.is_none_or(|(_, own)| !own));
            Some(bytes.map_err(|e| subscription::failure(&e.to_string())))
        }
        Err(e) => Some(Err(subscription::failure(&e.to_string()))),
    }
}

impl Client {
    /// The clients of `config`'s subscriptions, on `core`, tenants of `writer` when the
    /// parent has a spool (named after `tenant`, the parent's name on it); each carries on
    /// the records of `previous`'s subscription of its name (of its URL, if it is the same).
    pub(super) fn start_subscriptions(
        config: &Config,
        core: &Arc<Core>,
        recorder: Option<&Arc<Recorder>>,
        tenant: Option<&str>,
        writer: Option<&SpoolWriter>,
        previous: Option<&Client>,
    ) -> Result<Vec<Client>, Error> {
        let mut subs = Vec::with_capacity(config.subscriptions.len());
        for (i, sub) in config.subscriptions.iter().enumerate() {
            let own = config.for_subscription(i)?;
            let name =
                writer.map(|_| format!("{}/subscriptions/{}", tenant.unwrap_or(""), sub.name()));
            let before = previous.and_then(|p| p.subscription(sub.name()));
            let client =
                Client::on_engine_with(own, core.clone(), recorder.cloned(), name, writer, before)
                    .map_err(|e| crate::model::config::subscription_error(i, e))?;
            subs.push(client);
        }
        Ok(subs)
    }

    /// The client that delivers subscription `name`: its stats, deliveries, health and dead
    /// letters are that subscription's.
    pub fn subscription(&self, name: &str) -> Option<&Client> {
        let i = (self.config.subscriptions.iter()).position(|s| s.name() == name)?;
        self.subs.get(i)
    }

    /// Each subscription's name and client, in the order of `Config::subscriptions`.
    pub fn subscriptions(&self) -> impl Iterator<Item = (&str, &Client)> {
        (self.config.subscriptions.iter().map(|s| s.name())).zip(self.subs.iter())
    }

    /// Messages accepted that no subscription matched (nor had ingestion or a webhook to go
    /// to): they ended there, which is not a failure.
    pub fn unmatched(&self) -> u64 {
        self.unmatched.load(Relaxed)
    }

    /// Each subscription's item for message `id`, whose Segment-shaped JSON is `event`
    /// (`None`: a message subscriptions do not get, such as `delete`). A subscription that
    /// is off, or whose trigger does not match, gets none; one whose trigger or mapping
    /// fails on this event gets it as a failure to deliver (Segment fails such an event).
    pub(super) fn route(&self, id: &Arc<str>, event: Option<&[u8]>) -> Vec<Option<Item>> {
        let mut items: Vec<Option<Item>> = Vec::with_capacity(self.subs.len());
        let value = event.and_then(|e| serde_json::from_slice::<serde_json::Value>(e).ok());
        for sub in &self.config.subscriptions {
            let bytes = match &value {
                Some(event) if sub.enabled() => queued(sub, event),
                _ => None,
            };
            // A batched subscription's events join batches (its lane 0); an event it cannot
            // send fails on its own, as a single request would.
            let batched = sub.batch_size().is_some();
            items.push(bytes.map(|bytes| {
                let (ingest, hook) = match bytes {
                    Ok(b) if batched => (Some(Element::own(b.into())), None),
                    Ok(b) | Err(b) => (None, Some(b.into())),
                };
                Item {
                    id: crate::delivery::command::ItemId::Own(id.clone()),
                    ingest,
                    hook,
                    accepted: Instant::now(),
                }
            }));
        }
        items
    }

    /// Takes room for `items` (one per subscription, in order) in each subscription's
    /// client; all or none: on a refusal, what was taken is given back and the refusal
    /// returned.
    pub(super) fn admit_routed(&self, items: &[Vec<Item>]) -> Result<(), Error> {
        for (i, sub) in self.subs.iter().enumerate() {
            if items[i].is_empty() {
                continue;
            }
            let engine = sub.engine.load();
            if let Err(e) = sub.admit(&engine.shared, engine.spooled, &items[i]) {
                for (j, sub) in self.subs.iter().enumerate().take(i) {
                    let engine = sub.engine.load();
                    sub.unadmit(&engine.shared, engine.spooled, &items[j]);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Hands each subscription's items on (before the message's own, so a commit that
    /// holds the message holds these).
    pub(super) fn send_routed(&self, items: Vec<Vec<Item>>) {
        for (sub, items) in self.subs.iter().zip(items) {
            let engine = sub.engine.load();
            for item in items {
                engine.tx.message(item, sub.config.flush_interval);
            }
        }
    }
}
