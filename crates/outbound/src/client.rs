//! The client handle: validates and serializes on the caller's thread, then hands the bytes
//! to the scheduler without ever blocking.

use crate::delivery::command::{Answer, Ask};
use crate::delivery::command::{Command, Item};
use crate::delivery::inbox::{self, Inbox, TenantSpoolInbox};
use crate::delivery::lane::{BatchesOut, Budget, Delivery, HooksOut};
use crate::delivery::scheduler::{Control, Tenant};
use crate::delivery::shared::Shared;
use crate::delivery::spooler::{hooks_key, TenantSpool};
use crate::delivery::watch::{UrlWatch, Watch};
use crate::durable::dead::DeadLimits;
use crate::engine::{Core, SpoolWriter};
use crate::error::Error;
use crate::http::connect::Target;
use crate::http::exchange::Exchange;
use crate::http::recorder::Recorder;
use crate::http::transport::Transport;
use crate::log::{redact_url, Level, Logger};
use crate::model::config::{Config, SignatureScheme, MAX_WEBHOOKS};
use crate::model::message::Message;
use crate::model::outcome::Stats;
use crate::model::retry::after;
use crate::model::{timestamp, validate};
use crate::wire::canonical_json::{self, WriteJson};
use crate::wire::encode::{Parts, Scratch};
use crate::wire::ingestion::{self, Element, Endpoint};
use crate::wire::webhook::{self, Hooks};
use arc_swap::ArcSwap;
use std::borrow::Borrow;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest serialized message accepted (spec §8: 32 KB).
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;

/// How long `flush(None)` and `close(None)` wait at most.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// What [`Client::enqueue_all`] and [`Client::enqueue_each`] answer, one entry per message
/// in order: its id (shared with the queued message), or why it was not taken.
pub type Answers<E> = Vec<Result<Arc<str>, E>>;

/// A running client: its part of an engine's scheduler (a tenant) and a delivery lane per
/// destination, fed by the calls. Dropping it closes it, waiting at most `timeout` for what
/// is queued.
pub struct Client {
    config: Arc<Config>,
    logger: Logger,
    engine: ArcSwap<Engine>,
    /// A recording client's record ([`crate::testing`]): requests go there, not out.
    recorder: Option<Arc<Recorder>>,
}

/// One generation of the client's queue and engine (a forked child gets a new one).
struct Engine {
    /// The engine this client is a tenant of.
    core: Arc<Core>,
    /// To the spool writer when there is a spool, else to the scheduler.
    tx: To,
    shared: Arc<Shared>,
    /// Its own spool writer (`config.spool`); a tenant of the engine's spool has none (boxed:
    /// 200 bytes each of 10,000 relay sources for nothing).
    own_spool: Option<Box<SpoolWriter>>,
    /// Whether it has a spool at all.
    spooled: bool,
}

impl Engine {
    /// Adds a tenant for `config` to `core`'s scheduler.
    fn start(
        core: Arc<Core>,
        config: &Config,
        logger: &Logger,
        recorder: Option<Arc<Recorder>>,
        tenant: Option<String>,
    ) -> Result<Engine, Error> {
        let mut targets = config.check_targets()?;
        // Webhooks go out on the I/O engine (a recording client's requests go to its record).
        let hooks_out = match (&core.io, &recorder, config.webhooks.is_empty()) {
            (Some(io), None, false) => Some(HooksOut {
                io: io.handle(),
                exchange: Exchange::new(config, io)?,
                targets: targets_of(config)?,
            }),
            _ => None,
        };
        if hooks_out.is_some() {
            // Its requests are made from `HooksOut::targets`: the hooks keep no second copy
            // of each URL (only worker threads post by URL).
            targets.iter_mut().for_each(|t| t.url = String::new());
        }
        // Batches go out on the I/O engine too (a recording client's go to its record).
        let batches_out = match (&core.io, &recorder, &config.write_key) {
            (Some(io), None, Some(_)) => Some(Box::new(BatchesOut {
                io: io.handle(),
                // The endpoint's own guard (`block_private_endpoint`), not the webhooks'.
                exchange: Exchange::new(
                    &Config {
                        block_private_networks: config.block_private_endpoint,
                        allowed_networks: config.endpoint_allowed_networks.clone(),
                        ..config.clone()
                    },
                    io,
                )?,
                target: Target::parse(&ingestion::batch_url(config))
                    .map_err(|why| Error::config("endpoint", why))?,
            })),
            _ => None,
        };
        let delivery = Arc::new(Delivery {
            // Batches, and a recording client's requests, go through ureq: an agent only
            // for a client that has either.
            transport: match (&recorder, &config.write_key, &batches_out) {
                (None, None, _) | (None, Some(_), Some(_)) => None,
                _ => Some(Transport::new(config)?.recording_into(recorder)),
            },
            ingestion: Endpoint::new(config),
            hooks: Hooks::new(config, targets),
            logger: logger.clone(),
            budget: Budget::process(),
            policy: config.retry,
            hooks_out,
            batches_out,
        });
        let urls = config.webhooks.iter().map(|w| redact_url(&w.url)).collect();
        let blocked: Vec<usize> = config.blocked_webhooks().iter().map(|(i, _)| *i).collect();
        let shared = Arc::new(Shared::watching(Watch::new(urls, &blocked)));
        let id = core.next_tenant();
        let (inbox, mailbox) = inbox::inbox(id, core.ways.rung.clone());
        let inbox: Inbox = inbox;
        // The spool: the engine's, shared by its tenants (under `tenant`'s name), or the
        // client's own (`config.spool`), or none.
        let own = match (&tenant, &config.spool) {
            (None, Some(spool)) => Some(Box::new(SpoolWriter::own(config, spool, logger)?)),
            _ => None,
        };
        let writer = match (&tenant, &own) {
            (Some(_), _) => core.spool.as_ref(),
            (None, Some(own)) => Some(&**own),
            (None, None) => None,
        };
        if config.dead_letters && writer.is_none() {
            return Err(Error::config(
                "dead_letters",
                "dead letters are kept in the spool's store: set spool (or use a tenant of \
                 an engine with one)",
            ));
        }
        let added = match writer {
            None => (To::Scheduler(inbox.clone()), None),
            Some(w) => {
                let urls: Vec<String> = config.webhooks.iter().map(|w| w.url.clone()).collect();
                let spool = TenantSpool::new(
                    tenant.clone().unwrap_or_default(),
                    shared.clone(),
                    inbox.clone(),
                    config.max_queue_size as u64,
                    config.hook_mask(),
                    hooks_key(&urls),
                    config.dead_letters.then_some(DeadLimits {
                        retention: config.dead_letter_retention,
                        max_bytes: config.dead_letter_max_bytes,
                    }),
                );
                let ops = w.handle.add(id, spool);
                (To::Spooler(w.handle.inbox.for_tenant(id)), Some(ops))
            }
        };
        let spooled = writer.is_some();
        let (tx, ops) = added;
        let tenant = Tenant::new(
            id,
            config,
            shared.clone(),
            mailbox,
            delivery,
            core.ways.reports.clone(),
            ops,
            logger.clone(),
        );
        // A gone scheduler (impossible while `core` lives) would leave the tenant unrun.
        let _ = core.ways.control.send(Control::Add(id, Box::new(tenant)));
        Ok(Engine {
            core,
            tx,
            shared,
            own_spool: own,
            spooled,
        })
    }
}

impl Engine {
    /// True on the scheduler's own thread, i.e. inside an `on_outcome` callback, where
    /// waiting for the scheduler would wait for ourselves.
    fn on_scheduler(&self) -> bool {
        self.core.on_scheduler()
    }

    /// Stops outcome callbacks for good; waits for one that is running (unless called
    /// from inside it, or it is known to block).
    fn stop_callbacks(&self, wait: bool) {
        if self.on_scheduler() || !wait {
            self.shared.callbacks_off.store(true, SeqCst);
        } else {
            let _gate = self.shared.gate.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.callbacks_off.store(true, SeqCst);
        }
    }
}

/// The webhooks' URLs, read once (exactly as many as there are: a relay holds thousands).
fn targets_of(config: &Config) -> Result<Vec<Target>, Error> {
    let mut targets = Vec::with_capacity(config.webhooks.len());
    for w in &config.webhooks {
        targets.push(Target::parse(&w.url).map_err(|why| Error::config("webhooks", why))?);
    }
    Ok(targets)
}

/// Where commands go first.
enum To {
    Scheduler(Inbox),
    /// The spool writer, which passes them on once they are on disk.
    Spooler(TenantSpoolInbox),
}

impl To {
    fn send(&self, cmd: Command) {
        match self {
            To::Scheduler(inbox) => inbox.send_now(cmd),
            // The spool writer outlives every open client, so this cannot fail while not closed.
            To::Spooler(inbox) => inbox.send_now(cmd),
        }
    }

    /// An accepted message: a message for ingestion alone waits for its batch to fill or
    /// for `flush_interval` without waking the scheduler; one for webhooks goes at once.
    fn message(&self, item: Item, flush_interval: Duration) {
        match self {
            To::Scheduler(inbox) if item.hook.is_none() => {
                let due = after(item.accepted, flush_interval);
                inbox.send_lazy(Command::Message(item), due);
            }
            To::Scheduler(inbox) => inbox.send_now(Command::Message(item)),
            // A webhook message too: it is not delivered before its group's commit.
            To::Spooler(inbox) => inbox.message(Command::Message(item)),
        }
    }
}

impl crate::Engine {
    /// A client on this engine: checks `config` as [`Client::new`] does and adds it to the
    /// engine's scheduler; no thread is started for it (but a spool writer for its own
    /// `spool`, when set).
    pub fn client(&self, config: Config) -> Result<Client, Error> {
        Client::on_engine(config, self.core.clone(), None, None)
    }

    /// A client on this engine and on its spool (`EngineConfig::spool`), its records kept
    /// under `name`: what a process left of `name`'s messages is resumed by the next tenant
    /// of that name. Adds no thread and opens no file. `config.spool` must be unset, and
    /// names unique among the engine's open tenants.
    pub fn tenant(&self, name: &str, config: Config) -> Result<Client, Error> {
        if self.core.spool.is_none() {
            return Err(Error::config(
                "spool",
                "this engine has no spool (EngineConfig::spool): use Engine::client",
            ));
        }
        if config.spool.is_some() {
            return Err(Error::config(
                "spool",
                "a tenant is spooled on its engine's spool; leave its own spool unset",
            ));
        }
        let max = self.core.spool.as_ref().and_then(|w| w.max_timeout);
        if let Some(max) = max.filter(|max| config.timeout > *max) {
            return Err(Error::config(
                "timeout",
                format!(
                    "{:?} is longer than the engine's max_timeout ({max:?}): on a Redis spool \
                     a dead engine is taken over only once none of its requests can still \
                     be in flight",
                    config.timeout
                ),
            ));
        }
        Client::on_engine(config, self.core.clone(), None, Some(name.to_string()))
    }
}

/// Counts an enqueue call as under way while it lives.
struct CallGuard<'a>(&'a Shared);

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, SeqCst);
    }
}

impl Client {
    /// Checks `config` and starts the client's threads.
    pub fn new(config: Config) -> Result<Client, Error> {
        Client::with_recorder(config, None)
    }

    pub(crate) fn with_recorder(
        config: Config,
        recorder: Option<Arc<Recorder>>,
    ) -> Result<Client, Error> {
        config.check()?;
        let core = Arc::new(Core::private(&config, recorder.is_some())?);
        Client::on_engine(config, core, recorder, None)
    }

    /// A client on `core` (an [`crate::Engine`]'s, or its own); with `tenant`, on the
    /// engine's spool under that name.
    pub(crate) fn on_engine(
        config: Config,
        core: Arc<Core>,
        recorder: Option<Arc<Recorder>>,
        tenant: Option<String>,
    ) -> Result<Client, Error> {
        config.check()?;
        let logger = Logger::new(config.debug, config.log_sink.clone());
        let engine = Engine::start(core, &config, &logger, recorder.clone(), tenant)?;
        logger.log(Level::Debug, || {
            format!(
                "client started: ingestion {}, {} webhook(s), flush_at {}, flush_interval {:?}",
                if config.write_key.is_some() {
                    "on"
                } else {
                    "off"
                },
                config.webhooks.len(),
                config.flush_at,
                config.flush_interval
            )
        });
        Ok(Client {
            config: Arc::new(config),
            logger,
            engine: ArcSwap::from_pointee(engine),
            recorder,
        })
    }

    /// The configuration the client runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

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
        let item = self.encode(msg)?;
        self.admit(shared, std::slice::from_ref(&item))?;
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
        let mut items = Vec::with_capacity(msgs.size_hint().0);
        let answers: Answers<O::Error> = msgs
            .map(|msg| {
                let item = self.encode(msg?.borrow())?;
                // Shared with the queued message: no copy per message of a batch.
                let id: Arc<str> = item.id().into();
                items.push(item);
                Ok(id)
            })
            .collect();
        self.admit(shared, &items)?;
        for item in items {
            engine.tx.message(item, self.config.flush_interval);
        }
        Ok(answers)
    }

    /// Takes room for `items` in the spool's bytes and the queue, all or none; counts them
    /// accepted, or dropped as queue-full with the limit that refused them. With
    /// `queue_full_wait`, a full queue or spool is waited on (room comes back at outcomes)
    /// until that long has passed or the client closes.
    fn admit(&self, shared: &Shared, items: &[Item]) -> Result<(), Error> {
        let n = items.len() as u64;
        let size: u64 = match self.config.spool.is_some() {
            true => items
                .iter()
                .map(|i| {
                    (i.ingest.as_ref().map_or(0, |b| b.len())
                        + i.hook.as_ref().map_or(0, |b| b.len())) as u64
                })
                .sum(),
            false => 0,
        };
        let wait = self.config.queue_full_wait;
        let mut deadline = None;
        let refusal = loop {
            let refusal = match self.reserve(shared, n, size) {
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
                || shared.wait_for_room(deadline, || self.fits(shared, n, size));
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

    /// One try at [`admit`](Self::admit)'s room: `n` queue slots and `size` spool bytes.
    fn reserve(&self, shared: &Shared, n: u64, size: u64) -> Result<(), Error> {
        if self.config.spool.is_some() {
            let limit = self.config.spool_max_bytes;
            let before = shared.spool_bytes.fetch_add(size, Relaxed);
            if before + size > limit {
                shared.spool_bytes.fetch_sub(size, Relaxed);
                return Err(Error::SpoolFull { limit });
            }
        }
        let capacity = self.config.max_queue_size as u64;
        // SeqCst: a waiter's look at the queue pairs with `Shared::release` (see there).
        if shared.pending.fetch_add(n, SeqCst) + n > capacity {
            shared.pending.fetch_sub(n, SeqCst);
            shared.spool_bytes.fetch_sub(size, Relaxed);
            return Err(Error::QueueFull {
                capacity: self.config.max_queue_size,
            });
        }
        Ok(())
    }

    /// Whether `n` messages of `size` spool bytes would find room now (a waiter's check).
    fn fits(&self, shared: &Shared, n: u64, size: u64) -> bool {
        shared.closed.load(SeqCst)
            || (shared.pending.load(SeqCst) + n <= self.config.max_queue_size as u64
                && (self.config.spool.is_none()
                    || shared.spool_bytes.load(Relaxed) + size <= self.config.spool_max_bytes))
    }

    fn encode<O: WriteJson>(&self, msg: &Message<O>) -> Result<Item, O::Error> {
        // Webhooks that are all off take no body: the message is not theirs.
        let hooks_on = self.config.hook_mask() != 0;
        let no_webhooks = match (hooks_on, self.config.webhooks.is_empty()) {
            (true, _) => None,
            (false, true) => Some("this client has no webhooks"),
            (false, false) => Some("every webhook of this client is off (enabled: false)"),
        };
        validate::validate(msg, no_webhooks)?;
        let mut made = [0u8; 36];
        let id: &str = match &msg.message_id {
            Some(id) => {
                if hooks_on && self.config.signature_scheme == SignatureScheme::StandardWebhooks {
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

    /// Calls `callback` once every message this client accepted before the call is committed
    /// to the spool (the group commit that holds the last of them; see `spool_commit_interval`),
    /// so it survives a crash of the process: `true` then. `false` when the commit failed
    /// (the messages go on to delivery, but not from disk) or the client closed first. Each
    /// answer is about its own call: a `true` does not vouch for messages an earlier call
    /// was answered `false` for (on Redis, a commit that ran unconfirmed can be lost with
    /// its primary).
    ///
    /// Never blocks: the callback runs later on the spool writer's thread, so it must be
    /// quick (send on a channel, complete a future). Without a `spool` there is nothing to
    /// wait for and it is called at once, on the caller's thread, with `true` (a closed
    /// client: `false`). This is how a server acknowledges only what is on disk.
    pub fn when_spooled(&self, callback: impl FnOnce(bool) + Send + 'static) {
        let engine = self.engine.load();
        match &engine.tx {
            _ if engine.shared.closed.load(SeqCst) => callback(false),
            To::Scheduler(_) => callback(true),
            To::Spooler(inbox) => inbox.when_spooled(Box::new(callback)),
        }
    }

    /// Sends what is waiting for a batch now, and waits until every message accepted before
    /// the call has an outcome, or `timeout` (default [`DEFAULT_WAIT`]) passes. True when all
    /// of them ended and no message failed or was dropped since the previous `flush`
    /// returned (or the client started), whether before this call or during it: a failure
    /// that lands before the call is not missed (a message that its own `integrations` send
    /// nowhere is not a failure).
    pub fn flush(&self, timeout: Option<Duration>) -> bool {
        let engine = self.engine.load_full();
        let before = engine.shared.answered_losses.load(SeqCst);
        if engine.on_scheduler() {
            // Inside an outcome callback: the scheduler cannot progress while we wait.
            engine.tx.send(Command::Flush(None));
            let idle = engine.shared.pending.load(Acquire) == 0;
            return self.no_losses_since(&engine, before) && idle;
        }
        let barrier = Arc::new(AtomicU64::new(u64::MAX));
        engine.tx.send(Command::Flush(Some(barrier.clone())));
        let deadline = after(Instant::now(), timeout.unwrap_or(DEFAULT_WAIT));
        let ended = engine.shared.wait_until(deadline, |s| {
            let b = barrier.load(SeqCst);
            b != u64::MAX && s.low_water.load(SeqCst) >= b
        });
        if !ended && self.config.spool.is_some() {
            // The flush passes the spool writer after its commit: whatever the timeout, what
            // was accepted before the call is in the spool when flush returns. A commit is
            // bounded by the client's timeout (the store's I/O), so is this wait.
            let committed = after(deadline.max(Instant::now()), self.config.timeout);
            engine
                .shared
                .wait_until(committed, |_| barrier.load(SeqCst) != u64::MAX);
        }
        self.no_losses_since(&engine, before) && ended
    }

    /// True when no message failed or was dropped since `before` losses; the ones counted
    /// now are answered for (the next flush or close looks past them).
    fn no_losses_since(&self, engine: &Engine, before: u64) -> bool {
        let now = engine.shared.counters.losses.load(Relaxed);
        engine.shared.answered_losses.fetch_max(now, SeqCst);
        now == before
    }

    /// Flushes (bounded by `timeout`, default [`DEFAULT_WAIT`]), then stops the threads;
    /// messages still waiting end as dropped (reason: closed). Returns what `flush` would.
    /// Closing twice is [`Error::Closed`].
    ///
    /// When it returns, every accepted message has exactly one outcome in [`stats`](Self::stats)
    /// (`accepted = delivered + failed + dropped - queue_full + spooled`) and each was handed
    /// to `on_outcome`: the wait goes past `timeout` for as long as that takes. The one
    /// exception is a callback that blocks: once a single call has not returned for the
    /// client's `timeout`, `close` stops waiting, counts what is left as dropped, skips the
    /// callbacks not yet made, and returns false. Called from inside a callback, it does not
    /// wait at all. No `on_outcome` or log-sink call starts after `close` returns.
    pub fn close(&self, timeout: Option<Duration>) -> Result<bool, Error> {
        let engine = self.engine.load_full();
        if engine.shared.closed.swap(true, SeqCst) {
            return Err(Error::Closed);
        }
        // Calls waiting for room (`queue_full_wait`) give up now, as closed.
        engine.shared.wake_room();
        let deadline = after(Instant::now(), timeout.unwrap_or(DEFAULT_WAIT));
        // Let enqueue calls that started before `closed` was set land in the channel first.
        while engine.shared.calls.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        let before = engine.shared.answered_losses.load(SeqCst);
        engine.tx.send(Command::Flush(None));
        let on_scheduler = engine.on_scheduler();
        let idle = if on_scheduler {
            engine.shared.pending.load(Acquire) == 0
        } else {
            engine
                .shared
                .wait_until(deadline, |s| s.pending.load(Acquire) == 0)
        };
        engine.tx.send(Command::Shutdown);
        let complete = self.finish(&engine, on_scheduler, true, "closed");
        Ok(self.no_losses_since(&engine, before) && complete && idle)
    }

    /// Closes the client for a successor of its name on the same spool (a service that
    /// changes a tenant's settings live: `Engine::tenant` again with the new ones once this
    /// returns): no new request starts, the requests out are waited for and their results
    /// kept, then everything else is left in the spool, as it stands, for the successor to
    /// resume. Unlike [`close`](Self::close), nothing that was in flight is abandoned, so the
    /// successor sends nothing twice; and nothing waits for retries or batches to finish.
    /// Requests still out after `timeout` (default: the client's `timeout` plus 1 s, by
    /// which each one has its answer or its timeout) are abandoned as `close` abandons them.
    /// Without a spool, what is left ends as dropped (closed). Closing twice is
    /// [`Error::Closed`]. True when no request had to be abandoned.
    pub fn hand_over(&self, timeout: Option<Duration>) -> Result<bool, Error> {
        let engine = self.engine.load_full();
        if engine.shared.closed.swap(true, SeqCst) {
            return Err(Error::Closed);
        }
        engine.shared.wake_room();
        while engine.shared.calls.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        engine.tx.send(Command::HandOver);
        let on_scheduler = engine.on_scheduler();
        let bound = timeout.unwrap_or(self.config.timeout + Duration::from_secs(1));
        let deadline = after(Instant::now(), bound);
        let settled = on_scheduler
            || engine
                .shared
                .wait_until(deadline, |s| s.stopped.load(SeqCst));
        if !settled {
            // Past the answers' bound: end as `close` ends, the requests out abandoned.
            engine.tx.send(Command::Shutdown);
        }
        Ok(self.finish(&engine, on_scheduler, settled, "handed over"))
    }

    /// The end that `close` and `hand_over` share, once the shutdown or hand-over was sent:
    /// waits for the outcomes of what is left, joins the lanes' idle threads (bounded: one
    /// on a hung request is left), waits for the last spool commit (a successor may take
    /// the name only once this one's records are released), then stops callbacks and logs.
    /// Whether everything ended (`complete` so far, and the drain).
    fn finish(&self, engine: &Engine, on_scheduler: bool, mut complete: bool, how: &str) -> bool {
        if !on_scheduler {
            complete &= self.wait_for_drain(engine);
            let threads = std::mem::take(
                &mut *engine
                    .shared
                    .lane_threads
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            let deadline = Instant::now() + Duration::from_secs(1);
            for lane in threads {
                lane.join_idle(deadline);
            }
            if engine.spooled {
                let end = Instant::now() + self.config.timeout;
                engine.shared.wait_until(end, |s| s.spool_done.load(SeqCst));
                if let Some(own) = &engine.own_spool {
                    own.join(end);
                }
            }
        }
        engine.stop_callbacks(complete);
        self.logger
            .log(Level::Debug, || format!("client {how}: {:?}", self.stats()));
        self.logger.stop();
        complete
    }

    /// Waits for the scheduler to report the outcomes of what is left, for as long as its
    /// callbacks keep returning. False when one blocked and the rest was counted here.
    fn wait_for_drain(&self, engine: &Engine) -> bool {
        let stuck_after = self.config.timeout;
        let mut seen = engine.shared.reported.load(Relaxed);
        let mut since = Instant::now();
        loop {
            if engine.shared.stopped.load(SeqCst) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
            let now = engine.shared.reported.load(Relaxed);
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() >= stuck_after {
                let left = engine.shared.abandon();
                self.logger.log(Level::Warn, || {
                    format!(
                        "close: an outcome callback has not returned for {stuck_after:?}; \
                         {left} message(s) counted as dropped without a callback"
                    )
                });
                return false;
            }
        }
    }

    /// False while the spool cannot be written (a Redis spool's server unreachable, an SQLite
    /// spool's disk failing): messages accepted meanwhile are held and delivered from memory
    /// only, until a commit succeeds again (see `Config::spool`; after a failed fsync an
    /// SQLite spool stays failing until the process restarts). True without a spool. A
    /// service that promises "acknowledged = durable" answers 503 while this is false.
    pub fn spool_ok(&self) -> bool {
        let engine = self.engine.load();
        !engine.spooled || !engine.shared.spool_failing.load(Relaxed)
    }

    /// Payload bytes (ids and bodies) this client holds in its spool now, as
    /// `spool_max_bytes` counts them; 0 without a spool.
    pub fn spool_bytes(&self) -> u64 {
        self.engine.load().shared.spool_bytes.load(Relaxed)
    }

    /// Its webhook URLs' attempts and health (`deliveries.rs`).
    pub(crate) fn watched(&self) -> Vec<Arc<UrlWatch>> {
        self.engine.load().shared.watch.urls.to_vec()
    }

    /// Asks the spool writer about this client's dead letters (`deliveries.rs`).
    pub(crate) fn ask(&self, ask: Ask) -> Result<Answer, Error> {
        let engine = self.engine.load();
        match &engine.tx {
            To::Spooler(inbox) if self.config.dead_letters => {
                inbox.ask(ask, self.config.timeout.max(DEFAULT_WAIT))
            }
            _ => Err(Error::config("dead_letters", "off for this client")),
        }
    }

    /// True once `close` was called.
    pub fn is_closed(&self) -> bool {
        self.engine.load().shared.closed.load(SeqCst)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let engine = self.engine.load();
        engine
            .shared
            .counters
            .snapshot(engine.shared.pending.load(Acquire))
    }

    /// Call in the child right after `fork()`: the parent's threads do not exist here, so
    /// the child gets new ones and an empty queue (the parent's queued messages stay the
    /// parent's to send, so nothing is sent twice). The old generation is leaked on purpose:
    /// dropping it could wait for threads that will never run.
    pub fn reset_after_fork(&self) -> Result<(), Error> {
        let closed = self.is_closed();
        let lock = (self.engine.load().own_spool.as_ref()).and_then(|s| s.lock_fd);
        if let Some(fd) = lock {
            // SAFETY: our inherited copy of the parent's lock descriptor; the parent keeps its own.
            unsafe { libc::close(fd) };
        }
        // The parent's engine threads do not exist here: the child's client gets one of its
        // own, whichever engine the parent's was on.
        let core = Arc::new(Core::private(&self.config, self.recorder.is_some())?);
        // A tenant of a shared spool gets a spool of its own neither: memory only, as the
        // parent's spool is the parent's.
        let fresh = Engine::start(
            core,
            &self.config,
            &self.logger,
            self.recorder.clone(),
            None,
        )?;
        fresh.shared.closed.store(closed, SeqCst);
        std::mem::forget(self.engine.swap(Arc::new(fresh)));
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if !self.is_closed() {
            let _ = self.close(Some(self.config.timeout));
        }
    }
}

const _: () = assert!(MAX_WEBHOOKS <= 8, "webhook masks are u8");
