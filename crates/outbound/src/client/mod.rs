//! The client handle: validates and serializes on the caller's thread, then hands the bytes
//! to the scheduler without ever blocking.

use crate::delivery::command::{Answer, Ask};
use crate::delivery::watch::UrlWatch;
use crate::engine::Core;
use crate::error::Error;
use crate::http::recorder::Recorder;
use crate::log::{Level, Logger};
use crate::model::config::{Config, MAX_WEBHOOKS};
use crate::model::outcome::Stats;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

pub use crate::wire::ingestion::MAX_MESSAGE_BYTES;

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
    /// The webhooks that are on (`Config::hook_mask`), and whether one of them signs with
    /// Standard Webhooks: read at every call, fixed with the config.
    hook_mask: u8,
    signs_standard: bool,
    logger: Logger,
    engine: ArcSwap<TenantHandle>,
    /// A recording client's record ([`crate::testing`]): requests go there, not out.
    recorder: Option<Arc<Recorder>>,
    /// A client per subscription (`subscriptions.rs`), in the order of the config's.
    subs: Vec<Client>,
    /// Messages that went nowhere: no subscription matched and no destination of its own.
    unmatched: AtomicU64,
}

mod admit;
mod ending;
mod start;
mod subscriptions;

use start::{CommandSink, TenantHandle};
pub(crate) use subscriptions::queued;

impl Client {
    /// Checks `config` and starts the client's threads.
    pub fn new(config: Config) -> Result<Client, Error> {
        Client::with_recorder(config, None)
    }

    /// Checks `config` as [`Client::new`] would and starts nothing (no thread, no connection,
    /// no spool): a service checks its customers' settings with it before it builds their
    /// clients. The same error `Client::new` gives, or `Ok`. Whether `dead_letters` has a
    /// spool to keep them in depends on where the client is built, and is not checked.
    pub fn validate(config: &Config) -> Result<(), Error> {
        start::validate(config)
    }

    pub(crate) fn with_recorder(
        config: Config,
        recorder: Option<Arc<Recorder>>,
    ) -> Result<Client, Error> {
        config.check()?;
        let core = Arc::new(Core::private(&config)?);
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
        Client::on_engine_with(config, core, recorder, tenant, None, None)
    }

    /// [`on_engine`](Self::on_engine), a tenant of `writer` when given (a subscription's
    /// client, on its parent's spool); `previous`, the client whose records it carries on
    /// ([`crate::Engine::client_after`]).
    fn on_engine_with(
        config: Config,
        core: Arc<Core>,
        recorder: Option<Arc<Recorder>>,
        tenant: Option<String>,
        writer: Option<&crate::engine::SpoolWriter>,
        previous: Option<&Client>,
    ) -> Result<Client, Error> {
        config.check()?;
        let logger = Logger::new(config.debug, config.log_sink.clone());
        let engine = TenantHandle::start(
            core.clone(),
            &config,
            &logger,
            recorder.clone(),
            tenant.clone(),
            writer,
            previous,
        )?;
        let subs = match config.subscriptions.is_empty() {
            true => Vec::new(),
            false => {
                let writer = (engine.own_spool.as_deref())
                    .or(core.spool.as_ref().filter(|_| tenant.is_some()));
                Client::start_subscriptions(
                    &config,
                    &core,
                    recorder.as_ref(),
                    tenant.as_deref(),
                    writer,
                    previous,
                )?
            }
        };
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
            hook_mask: config.hook_mask(),
            signs_standard: config.signs_standard(),
            config: Arc::new(config),
            logger,
            engine: ArcSwap::from_pointee(engine),
            recorder,
            subs,
            unmatched: AtomicU64::new(0),
        })
    }

    /// The configuration the client runs with.
    pub fn config(&self) -> &Config {
        &self.config
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

    /// Its webhook URLs' attempts and health (`delivery_records.rs`).
    pub(crate) fn watched(&self) -> Arc<[UrlWatch]> {
        self.engine.load().shared.watch.urls.clone()
    }

    /// Asks the spool writer about this client's dead letters (`delivery_records.rs`).
    pub(crate) fn ask(&self, ask: Ask) -> Result<Answer, Error> {
        let engine = self.engine.load();
        match &engine.tx {
            CommandSink::Spooler(inbox) if self.config.dead_letters => {
                inbox.ask(ask, self.config.timeout.max(DEFAULT_WAIT))
            }
            _ => Err(Error::config("dead_letters", "off for this client")),
        }
    }

    /// Its number with the spool writer whose total is `total` (an engine's), when it is
    /// one of that writer's tenants.
    pub(crate) fn spool_tenant(
        &self,
        total: &Arc<crate::delivery::shared::SpoolTotal>,
    ) -> Option<crate::durable::TenantNo> {
        let engine = self.engine.load();
        let ours = (engine.shared.spool_total.as_ref()).is_some_and(|t| Arc::ptr_eq(t, total));
        match &engine.tx {
            CommandSink::Spooler(inbox) if ours => Some(inbox.tenant()),
            _ => None,
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
        let core = Arc::new(Core::private(&self.config)?);
        // A tenant of a shared spool gets a spool of its own neither: memory only, as the
        // parent's spool is the parent's.
        let fresh = TenantHandle::start(
            core,
            &self.config,
            &self.logger,
            self.recorder.clone(),
            None,
            None,
            None,
        )?;
        for sub in &self.subs {
            sub.reset_after_fork()?;
        }
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
