//! Calls: each message validated and written once on the caller's thread, checked against
//! the queue's and the spool's room, and handed on without blocking.

use super::{Answers, Client, MAX_MESSAGE_BYTES};
use crate::delivery::command::Item;
use crate::delivery::shared::Shared;
use crate::error::Error;
use crate::log::Level;
use crate::model::message::Message;
use crate::model::retry::after;
use crate::model::{timestamp, validate};
use crate::wire::canonical_json::{self, WriteJson};
use crate::wire::encode::{Parts, Scratch};
use crate::wire::ingestion::{self, Element};
use crate::wire::webhook;
use std::borrow::Borrow;
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::Instant;

/// Counts an enqueue call as under way while it lives.
struct CallGuard<'a>(&'a Shared);

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, SeqCst);
    }
}

/// Gives back `size` spool bytes a call took and did not use: the tenant's and, on an
/// engine's spool, all tenants' together.
fn give_back(shared: &Shared, size: u64) {
    shared.spool_bytes.fetch_sub(size, Relaxed);
    if let Some(total) = &shared.spool_total {
        total.bytes.fetch_sub(size, Relaxed);
    }
}

/// The spool bytes `items` take (0 without a spool).
fn spool_size(spooled: bool, items: &[Item]) -> u64 {
    match spooled {
        true => items.iter().map(Item::spool_size).sum(),
        false => 0,
    }
}

impl Client {
    /// Validates `msg`, writes the body of each destination it goes to, and queues it. Returns the
    /// message id. Never blocks: a full queue is an immediate [`Error::QueueFull`].
    pub fn enqueue(&self, msg: &Message) -> Result<String, Error> {
        self.enqueue_with(msg)
    }

    /// [`enqueue`](Self::enqueue) for a message whose objects are the caller's own
    /// ([`WriteJson`]): they are written straight into the bodies, with no intermediate
    /// JSON value. Errors are the walker's own type, which carries this crate's.
    pub fn enqueue_with<O: WriteJson>(&self, msg: &Message<O>) -> Result<String, O::Error> {
        self.enqueue_then(msg, str::to_owned)
    }

    /// [`enqueue_with`](Self::enqueue_with) that lends the id to `with_id` (called once, on
    /// success, before the call returns) instead of returning a `String`: a binding that
    /// copies the id into its caller's buffer allocates nothing for it.
    pub fn enqueue_then<O: WriteJson, R>(
        &self,
        msg: &Message<O>,
        with_id: impl FnOnce(&str) -> R,
    ) -> Result<R, O::Error> {
        let engine = self.engine.load();
        let shared = &*engine.shared;
        shared.calls.fetch_add(1, SeqCst);
        let _call = CallGuard(shared);
        if shared.closed.load(SeqCst) {
            return Err(Error::Closed.into());
        }
        if !self.subs.is_empty() {
            let mut event = Vec::new();
            let item = self.encode(msg, Some(&mut event))?;
            let id: Arc<str> = item.id().into();
            let answer = with_id(&id);
            self.admit_with_subscriptions(&engine, vec![(item, event)])?;
            return Ok(answer);
        }
        let item = self.encode(msg, None)?;
        self.admit(shared, engine.spooled, std::slice::from_ref(&item))?;
        let answer = with_id(item.id());
        engine.tx.message(item, self.config.flush_interval);
        Ok(answer)
    }

    /// Enqueues `msgs` as one: each is validated and encoded on its own (its answer is its
    /// id, or its error as from [`enqueue_with`](Self::enqueue_with)), and the valid
    /// ones are taken all or none. When the queue (or the spool) has no room for all of
    /// them, none is taken and the error says which limit: a relay answering a batch 429
    /// then leaves no part of it queued, to be sent twice when the SDK sends it again.
    /// Never blocks.
    pub fn enqueue_all<O: WriteJson>(
        &self,
        msgs: &[Message<O>],
    ) -> Result<Answers<O::Error>, Error> {
        self.enqueue_each(msgs.iter().map(Ok))
    }

    /// [`enqueue_all`](Self::enqueue_all) for messages made one at a time (a relay reading
    /// a batch's events): each is encoded and dropped before the next is taken, so one
    /// message is held at a time rather than all of them, and the next one's allocations
    /// reuse what the last one freed. An `Err` given is that entry's answer as it is.
    pub fn enqueue_each<O, M, I>(&self, msgs: I) -> Result<Answers<O::Error>, Error>
    where
        O: WriteJson,
        M: Borrow<Message<O>>,
        I: IntoIterator<Item = Result<M, O::Error>>,
    {
        let engine = self.engine.load();
        let shared = &*engine.shared;
        shared.calls.fetch_add(1, SeqCst);
        let _call = CallGuard(shared);
        if shared.closed.load(SeqCst) {
            return Err(Error::Closed);
        }
        let msgs = msgs.into_iter();
        if !self.subs.is_empty() {
            let mut items = Vec::with_capacity(msgs.size_hint().0);
            let answers: Answers<O::Error> = msgs
                .map(|msg| {
                    let mut event = Vec::new();
                    let item = self.encode(msg?.borrow(), Some(&mut event))?;
                    let id: Arc<str> = item.id().into();
                    items.push((item, event));
                    Ok(id)
                })
                .collect();
            self.admit_with_subscriptions(&engine, items)?;
            return Ok(answers);
        }
        let mut items = Vec::with_capacity(msgs.size_hint().0);
        let answers: Answers<O::Error> = msgs
            .map(|msg| {
                let item = self.encode(msg?.borrow(), None)?;
                // Shared with the queued message: no copy per message of a batch.
                let id: Arc<str> = item.id().into();
                items.push(item);
                Ok(id)
            })
            .collect();
        self.admit(shared, engine.spooled, &items)?;
        for item in items {
            engine.tx.message(item, self.config.flush_interval);
        }
        Ok(answers)
    }

    /// Takes room for `items` in the spool's bytes and the queue, all or none; counts them
    /// accepted, or dropped as queue-full with the limit that refused them. With
    /// `queue_full_wait`, a full queue or spool is waited on (room comes back at outcomes)
    /// until that long has passed or the client closes.
    pub(super) fn admit(
        &self,
        shared: &Shared,
        spooled: bool,
        items: &[Item],
    ) -> Result<(), Error> {
        let n = items.len() as u64;
        let size = spool_size(spooled, items);
        let wait = self.config.queue_full_wait;
        let mut deadline = None;
        let refusal = loop {
            let refusal = match self.reserve(shared, spooled, n, size) {
                Ok(()) => {
                    shared.counters.accepted.fetch_add(n, Relaxed);
                    return Ok(());
                }
                Err(refusal) => refusal,
            };
            if wait.is_zero() {
                break refusal;
            }
            let deadline = *deadline.get_or_insert_with(|| after(Instant::now(), wait));
            let mut wait_for_room =
                || shared.wait_for_room(deadline, || self.fits(shared, spooled, n, size));
            let room = match &self.config.room_wait {
                Some(hook) => hook(&mut wait_for_room),
                None => wait_for_room(),
            };
            if !room {
                break refusal;
            }
            if shared.closed.load(SeqCst) {
                return Err(Error::Closed);
            }
        };
        shared.counters.dropped.fetch_add(n, Relaxed);
        shared.counters.queue_full.fetch_add(n, Relaxed);
        self.logger.log(Level::Warn, || {
            let what = match &refusal {
                Error::SpoolFull { limit } => format!("spool full ({limit} bytes)"),
                _ => format!("queue full ({})", self.config.max_queue_size),
            };
            match items {
                [one] => format!("{what}: dropped message {}", one.id()),
                _ => format!("{what}: dropped {n} messages"),
            }
        });
        Err(refusal)
    }

    /// Gives back what [`admit`](Self::admit) took for `items` (a subscription refused
    /// them): they count as refused for a full queue, as the call that took them fails.
    pub(super) fn unadmit(&self, shared: &Shared, spooled: bool, items: &[Item]) {
        let n = items.len() as u64;
        give_back(shared, spool_size(spooled, items));
        if spooled {
            shared.unsettled.fetch_sub(n, SeqCst);
        }
        shared.pending.fetch_sub(n, SeqCst);
        shared.counters.accepted.fetch_sub(n, Relaxed);
        shared.counters.dropped.fetch_add(n, Relaxed);
        shared.counters.queue_full.fetch_add(n, Relaxed);
        shared.wake_room();
    }

    /// One try at [`admit`](Self::admit)'s room: `n` queue slots and `size` spool bytes.
    /// With a spool, the queue's slots are the messages not committed yet: what is on disk
    /// waits there, bounded by `spool_max_bytes` (while the spool's commits fail, by
    /// everything without an outcome, as without a spool).
    fn reserve(&self, shared: &Shared, spooled: bool, n: u64, size: u64) -> Result<(), Error> {
        if spooled {
            // Taken before it is checked, in the tenant's count and the engine's alike, so
            // calls at once (within one commit) cannot pass either bound together.
            let limit = self.config.spool_max_bytes;
            let before = shared.spool_bytes.fetch_add(size, Relaxed);
            let total =
                (shared.spool_total.as_ref()).map(|t| (t, t.bytes.fetch_add(size, Relaxed)));
            if before + size > limit {
                give_back(shared, size);
                return Err(Error::SpoolFull { limit });
            }
            if let Some((total, before)) = total {
                if before.saturating_add(size) > total.limit {
                    give_back(shared, size);
                    return Err(Error::SpoolFull { limit: total.limit });
                }
            }
        }
        let capacity = self.config.max_queue_size as u64;
        let full = || {
            give_back(shared, size);
            Error::QueueFull {
                capacity: self.config.max_queue_size,
            }
        };
        // SeqCst: a waiter's look at the queue pairs with `Shared::release` (see there).
        let pending = shared.pending.fetch_add(n, SeqCst) + n;
        if !spooled {
            if pending > capacity {
                shared.pending.fetch_sub(n, SeqCst);
                return Err(full());
            }
            return Ok(());
        }
        let unsettled = shared.unsettled.fetch_add(n, SeqCst) + n;
        let by_count = match shared.spool_failing.load(Relaxed) {
            true => pending,
            false => unsettled,
        };
        if by_count > capacity {
            shared.unsettled.fetch_sub(n, SeqCst);
            shared.pending.fetch_sub(n, SeqCst);
            return Err(full());
        }
        Ok(())
    }

    /// Whether `n` messages of `size` spool bytes would find room now (a waiter's check).
    fn fits(&self, shared: &Shared, spooled: bool, n: u64, size: u64) -> bool {
        let capacity = self.config.max_queue_size as u64;
        if shared.closed.load(SeqCst) {
            return true;
        }
        if !spooled {
            return shared.pending.load(SeqCst) + n <= capacity;
        }
        let by_count = match shared.spool_failing.load(Relaxed) {
            true => shared.pending.load(SeqCst),
            false => shared.unsettled.load(SeqCst),
        };
        by_count + n <= capacity
            && shared.spool_bytes.load(Relaxed) + size <= self.config.spool_max_bytes
            && (shared.spool_total.as_ref())
                .is_none_or(|t| t.bytes.load(Relaxed).saturating_add(size) <= t.limit)
    }

    /// Takes `items` (each with its message in Segment's shape, empty for one subscriptions
    /// do not get) and each subscription's share of them, all or none, and hands them on.
    fn admit_with_subscriptions(
        &self,
        engine: &super::start::TenantHandle,
        items: Vec<(Item, Vec<u8>)>,
    ) -> Result<(), Error> {
        let mut routed: Vec<Vec<Item>> = (0..self.subs.len()).map(|_| Vec::new()).collect();
        let mut own = Vec::with_capacity(items.len());
        let mut unmatched = 0;
        for (item, event) in items {
            let id: Arc<str> = item.id().into();
            let event = (!event.is_empty()).then_some(event.as_slice());
            let mut matched = false;
            for (i, sub) in self.route(&id, event).into_iter().enumerate() {
                if let Some(sub) = sub {
                    routed[i].push(sub);
                    matched = true;
                }
            }
            // A message with no destination of the client's own ends here.
            if item.ingest.is_some() || item.hook.is_some() {
                own.push(item);
            } else if !matched {
                unmatched += 1;
            }
        }
        self.admit_routed(&routed)?;
        if let Err(e) = self.admit(&engine.shared, engine.spooled, &own) {
            for (sub, items) in self.subs.iter().zip(&routed) {
                let engine = sub.engine.load();
                sub.unadmit(&engine.shared, engine.spooled, items);
            }
            return Err(e);
        }
        self.unmatched.fetch_add(unmatched, Relaxed);
        self.send_routed(routed);
        for item in own {
            engine.tx.message(item, self.config.flush_interval);
        }
        Ok(())
    }

    /// Validates `msg` and writes its bodies; with `event`, also the message in the shape
    /// Segment's tracking API gives it (its ingestion element), for subscriptions (left
    /// empty for a `delete`, which they do not get).
    fn encode<O: WriteJson>(
        &self,
        msg: &Message<O>,
        event: Option<&mut Vec<u8>>,
    ) -> Result<Item, O::Error> {
        // Webhooks that are all off take no body: the message is not theirs.
        let hooks_on = self.hook_mask != 0;
        let no_webhooks = match (hooks_on, self.config.webhooks.is_empty()) {
            (true, _) => None,
            (false, true) => Some("this client has no webhooks"),
            (false, false) => Some("every webhook of this client is off (enabled: false)"),
        };
        validate::validate(msg, no_webhooks)?;
        let mut made = [0u8; 36];
        let id: &str = match &msg.message_id {
            Some(id) => {
                if hooks_on && self.signs_standard {
                    webhook::check_standard_id(id)?;
                }
                id
            }
            None => crate::wire::message_id::new_v4(&mut made),
        };
        let mut ts = [0u8; timestamp::LEN];
        timestamp::write(msg.timestamp.unwrap_or_else(timestamp::now), &mut ts)?;
        let check = |len: usize| -> Result<(), Error> {
            if len > MAX_MESSAGE_BYTES {
                Err(Error::MessageTooLarge {
                    size: len,
                    limit: MAX_MESSAGE_BYTES,
                })
            } else {
                Ok(())
            }
        };
        // The bodies are written into this thread's buffers and copied once into the bytes
        // the queue shares (one allocation per body, none for the buffers).
        let mut scratch = Scratch::take();
        let parts = Parts::write_in(std::mem::take(&mut scratch.objects), msg)?;
        let to_ingestion = self.config.write_key.is_some() && msg.kind != crate::Kind::Delete;
        let mut id_at = None;
        let hook = match hooks_on && webhook::wanted(msg.integrations.as_ref()) {
            true => {
                let out = &mut scratch.body;
                out.clear();
                out.reserve(parts.len() + 200);
                id_at = webhook::encode(msg, &parts, id, &ts, out);
                check(out.len())?;
                Some(scratch.body_bytes())
            }
            false => None,
        };
        // With both destinations, the ingestion element is read from the webhook body when
        // it holds every byte of it: the message's bytes are stored once.
        let shared = match (&hook, id_at) {
            (Some(body), Some(at)) if to_ingestion => Element::in_hook(msg, body, at),
            _ => None,
        };
        let ingest = match (to_ingestion, shared) {
            (true, Some(element)) => {
                debug_assert_eq!(element.to_vec(), {
                    let mut own = Vec::new();
                    ingestion::encode(msg, &parts, id, &ts, &mut own);
                    own
                });
                Some(element)
            }
            (true, None) => {
                let out = &mut scratch.body;
                out.clear();
                out.reserve(parts.len() + 200);
                id_at = ingestion::encode(msg, &parts, id, &ts, out);
                check(out.len())?;
                Some(Element::own(scratch.body_bytes()))
            }
            (false, _) => None,
        };
        if let (Some(event), false) = (event, msg.kind == crate::Kind::Delete) {
            match &ingest {
                Some(element) => *event = element.to_vec(),
                None => {
                    ingestion::encode(msg, &parts, id, &ts, event);
                }
            }
        }
        scratch.objects = parts.into_buf();
        scratch.keep();
        // The id is kept in the bytes only where they hold it unescaped: the ingestion
        // element's, or the webhook body when there is none.
        let id_at = id_at
            .filter(|_| canonical_json::is_plain(id))
            .and_then(|at| u16::try_from(at).ok());
        let body = ingest.as_ref().map(Element::bytes).or(hook.as_ref());
        Ok(Item {
            id: Item::id_of(id, body, id_at),
            ingest,
            hook,
            accepted: Instant::now(),
        })
    }
}
