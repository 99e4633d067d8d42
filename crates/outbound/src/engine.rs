//! The machinery clients share: one scheduler thread and one I/O engine for any number of
//! clients (tenants). A `Client` made by `Client::new` has an engine of its own; a service
//! with many sources (outbound-relay) makes one [`Engine`] and a client per source on it
//! (`Engine::client`, in `client/start.rs`), so a source is configuration and queues, not threads.

use crate::delivery::command::{Answer, Ask};
use crate::delivery::scheduler::{Control, Scheduler, SchedulerChannels};
use crate::delivery::spooler::{SpoolHandle, Spooler};
use crate::durable::{open, Store};
use crate::error::Error;
use crate::http::io::Io;
use crate::log::Logger;
use crate::model::config::Config;
use crate::model::dead_letter::DeadLetterStats;
use crate::model::spool::Spool;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// The most I/O threads an engine may have (more would only add contention on 2 to 64
/// cores: a request waiting for its answer holds no thread).
pub const MAX_IO_THREADS: usize = 256;

/// How an [`Engine`] runs.
#[derive(Clone)]
pub struct EngineConfig {
    /// Threads of the I/O engine that sends webhook requests (event-driven: a request
    /// waiting for its answer holds none). Default 1; a busy service on several cores may
    /// want one per core. 1 to [`MAX_IO_THREADS`].
    pub io_threads: usize,
    /// The spool its tenants share ([`Engine::tenant`]): a directory (SQLite: one file for
    /// every tenant of the process, one group commit per interval for all of them), or a
    /// `redis://` / `rediss://` URL (`?prefix=P`; Redis Streams shared by a fleet: one
    /// owner per engine, one transaction per interval for all of its tenants). Left by a
    /// process that died, their records are taken over by the next engine on the directory
    /// (on Redis: by a living engine of the fleet, once the dead one has been silent for
    /// `max_timeout` + 10 s), each tenant's by the tenant of its name. The per-client
    /// spools of earlier versions are taken over too: subdirectories named after their
    /// client, or on Redis the prefixes `P:NAME` (as outbound-relay named a source's).
    pub spool: Option<Spool>,
    /// On a Redis spool: the longest `timeout` its tenants may have (default 5 s, the
    /// core's default), which bounds each round trip to Redis too. Nothing a dead engine
    /// sent can still be in flight once it has been silent this long plus 10 s, and only
    /// then are its records taken over, so [`Engine::tenant`] refuses a tenant with a
    /// longer `timeout`.
    pub max_timeout: Duration,
    /// On a Redis spool: when a commit counts as acknowledged, for every tenant
    /// ([`RedisAck`](crate::RedisAck); default `Auto`, the safe one the deployment allows).
    pub redis_ack: crate::RedisAck,
    /// How often the tenants' accepted messages are committed to the spool, together.
    pub spool_commit_interval: Duration,
    /// Messages the engine holds in memory at once, all tenants on its spool together
    /// (default 100,000; each tenant with messages gets an equal share, at least 256): what
    /// a backlog has beyond its tenant's share waits in the spool and is read back as
    /// messages end, so a burst costs the window's memory, not the burst's. At least 1.
    pub memory_window: usize,
    /// Bytes of message bodies the window holds at most, all tenants together (default
    /// 80 MiB, what 100,000 events of ~800 bytes take; each tenant with messages gets an equal
    /// share, at least 256 KiB, and always room for one message): events up to 32 KiB cannot
    /// make [`memory_window`](Self::memory_window) messages hold gigabytes. At least 1.
    pub memory_window_bytes: u64,
    /// Bytes the spool may hold for all its tenants together (`None`, the default: no bound
    /// but each tenant's own `spool_max_bytes`); past it every tenant's new calls are refused
    /// ([`Error::SpoolFull`]) until deliveries free room. At least 1.
    pub spool_max_bytes: Option<u64>,
    /// Logging of the engine's spool (takeovers, failing commits); `None` follows `DEBUG`.
    pub debug: Option<bool>,
    /// Where those log lines go (stderr when `None`).
    pub log_sink: Option<crate::LogSink>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            io_threads: 1,
            spool: None,
            max_timeout: Config::default().timeout,
            redis_ack: crate::RedisAck::Auto,
            spool_commit_interval: Duration::from_millis(20),
            memory_window: crate::delivery::spooler::WINDOW as usize,
            memory_window_bytes: crate::delivery::spooler::WINDOW_BYTES,
            spool_max_bytes: None,
            debug: None,
            log_sink: None,
        }
    }
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("io_threads", &self.io_threads)
            .field("spool", &self.spool)
            .field("max_timeout", &self.max_timeout)
            .field("redis_ack", &self.redis_ack)
            .field("spool_commit_interval", &self.spool_commit_interval)
            .field("memory_window", &self.memory_window)
            .field("memory_window_bytes", &self.memory_window_bytes)
            .field("spool_max_bytes", &self.spool_max_bytes)
            .field("debug", &self.debug)
            .finish_non_exhaustive()
    }
}

/// Shared delivery machinery: clients made with [`Engine::client`](Engine::client) share its scheduler
/// thread and I/O threads, however many there are. Each client keeps its own settings,
/// queue, counters, outcomes and `close`. Cheap to clone (a handle); the threads stop when
/// the engine and every client on it are gone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) core: Arc<Core>,
}

impl Engine {
    /// Starts an engine's threads (and its spool writer, with `spool`).
    /// Refuses `io_threads` outside 1 to 256 and a `memory_window` or `memory_window_bytes`
    /// of 0, naming the setting.
    pub fn new(config: EngineConfig) -> Result<Engine, Error> {
        if !(1..=MAX_IO_THREADS).contains(&config.io_threads) {
            return Err(Error::Config {
                setting: "io_threads".into(),
                reason: format!(
                    "{} is not between 1 and {MAX_IO_THREADS}",
                    config.io_threads
                ),
            });
        }
        if config.memory_window == 0 {
            return Err(Error::Config {
                setting: "memory_window".into(),
                reason: "must be at least 1".into(),
            });
        }
        if config.memory_window_bytes == 0 {
            return Err(Error::Config {
                setting: "memory_window_bytes".into(),
                reason: "must be at least 1".into(),
            });
        }
        if config.spool_max_bytes == Some(0) {
            return Err(Error::Config {
                setting: "spool_max_bytes".into(),
                reason: "must be at least 1".into(),
            });
        }
        let mut core = Core::start(Some(config.io_threads))?;
        if let Some(spool) = &config.spool {
            let (store, max_timeout) = open::engines(spool, config.max_timeout, config.redis_ack)?;
            let logger = Logger::new(config.debug, config.log_sink.clone());
            let mut writer = SpoolWriter::start(
                store,
                config.spool_commit_interval,
                (config.memory_window as u64, config.memory_window_bytes),
                logger,
                false,
                config.spool_max_bytes.unwrap_or(u64::MAX),
            )?;
            writer.max_timeout = max_timeout;
            core.spool = Some(writer);
        }
        Ok(Engine {
            core: Arc::new(core),
        })
    }

    /// Each tenant on the engine's spool that keeps dead letters, by name, with its counts
    /// (as [`Client::dead_letter_stats`](crate::Client::dead_letter_stats) gives one
    /// tenant's), in one question to the spool writer: on SQLite what it keeps counted,
    /// with no query; on Redis one round trip for all of them. For a service's metrics,
    /// however many tenants there are. Empty without a spool.
    pub fn dead_letter_counts(&self) -> Result<Vec<(String, DeadLetterStats)>, Error> {
        self.counts(None)
    }

    /// [`Engine::dead_letter_counts`] of these tenants only (those on this engine's spool
    /// that keep dead letters; any other client is left out): for a page of a service's
    /// tenants, at the cost of the page, not of every tenant's counts.
    pub fn dead_letter_counts_of(
        &self,
        tenants: &[&crate::Client],
    ) -> Result<Vec<(String, DeadLetterStats)>, Error> {
        let Some(spool) = &self.core.spool else {
            return Ok(Vec::new());
        };
        let total = &spool.handle.total;
        self.counts(Some(
            tenants
                .iter()
                .filter_map(|c| c.spool_tenant(total))
                .collect(),
        ))
    }

    fn counts(
        &self,
        nos: Option<Vec<crate::durable::TenantNo>>,
    ) -> Result<Vec<(String, DeadLetterStats)>, Error> {
        let Some(spool) = &self.core.spool else {
            return Ok(Vec::new());
        };
        match spool.handle.inbox.ask(0, Ask::Counts(nos), COUNTS_WAIT)? {
            Answer::Counts(counts) => Ok(counts),
            _ => Err(Error::Spool {
                path: String::new(),
                reason: "the spool writer gave an unexpected answer".into(),
            }),
        }
    }

    /// Dead letters the spool's store refused (on Redis: a key of the wrong type, a full
    /// server) and holds in memory, tried again at each commit; each one's message stays
    /// pending in the spool until its letter is written. 0 normally, and without a spool.
    /// Read without asking the spool writer: as of its last commit.
    pub fn dead_letters_unwritten(&self) -> usize {
        (self.core.spool.as_ref()).map_or(0, |s| s.handle.unwritten.load(Relaxed))
    }
}

/// How long [`Engine::dead_letter_counts`] waits for the spool writer (it answers between
/// commits).
const COUNTS_WAIT: Duration = Duration::from_secs(10);

/// A spool writer thread and its store: an engine's (its tenants share it), or a client's
/// own (its `spool` setting).
pub(crate) struct SpoolWriter {
    pub(crate) handle: SpoolHandle,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// An SQLite store's lock: a forked child closes its inherited copy, so the lock goes
    /// with the parent.
    pub(crate) lock_fd: Option<std::os::fd::RawFd>,
    /// On Redis: the longest `timeout` a tenant may have (`EngineConfig::max_timeout`).
    pub(crate) max_timeout: Option<Duration>,
}

impl SpoolWriter {
    /// The writer over `store` on a thread of its own; `stop_when_empty` for a client's own
    /// (it stops, and closes the store, with its client).
    pub(crate) fn start(
        store: Box<dyn Store>,
        commit_every: Duration,
        window: (u64, u64),
        logger: Logger,
        stop_when_empty: bool,
        max_bytes: u64,
    ) -> Result<SpoolWriter, Error> {
        let lock_fd = store.lock_fd();
        let (writer, handle) = Spooler::new(
            store,
            commit_every,
            window,
            logger,
            stop_when_empty,
            max_bytes,
        );
        let thread = std::thread::Builder::new()
            .name("outbound-spool".into())
            .spawn(move || writer.run())
            .map_err(|e| Error::config("spool", format!("cannot start a thread: {e}")))?;
        Ok(SpoolWriter {
            handle,
            thread: Mutex::new(Some(thread)),
            lock_fd,
            max_timeout: None,
        })
    }

    /// A client's own spool, as its `spool` setting names it.
    pub(crate) fn own(
        config: &Config,
        spool: &Spool,
        logger: &Logger,
    ) -> Result<SpoolWriter, Error> {
        let store = open::clients(spool, config.timeout, config.redis_ack, config.dead_letters)?;
        SpoolWriter::start(
            store,
            config.spool_commit_interval,
            (
                crate::delivery::spooler::WINDOW,
                crate::delivery::spooler::WINDOW_BYTES,
            ),
            logger.clone(),
            true,
            // Its client's `spool_max_bytes` is the whole spool's.
            u64::MAX,
        )
    }

    /// Waits (at most until `deadline`) for the thread to end: its last commit and the
    /// store's close. Not from inside an outcome callback.
    pub(crate) fn join(&self, deadline: Instant) {
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }
}

/// The engine's threads and the channels into them.
pub(crate) struct Core {
    pub(crate) channels: SchedulerChannels,
    /// An engine of one client (`Client::new`), not an [`Engine`]'s.
    pub(crate) private: bool,
    /// The I/O threads; `None` for a private engine whose client sends nowhere.
    pub(crate) io: Option<Io>,
    /// The spool its tenants share.
    pub(crate) spool: Option<SpoolWriter>,
    scheduler: Mutex<Option<JoinHandle<()>>>,
    scheduler_id: ThreadId,
    next_tenant: AtomicU32,
}

impl Core {
    /// Starts the scheduler thread, and `io_threads` I/O threads when given.
    pub(crate) fn start(io_threads: Option<usize>) -> Result<Core, Error> {
        let (scheduler, channels) = Scheduler::new();
        let io = match io_threads {
            Some(n) => Some(Io::start(n, "outbound-io")?),
            None => None,
        };
        let handle = std::thread::Builder::new()
            .name("outbound-scheduler".into())
            .spawn(move || scheduler.run())
            .map_err(|e| Error::config("workers", format!("cannot start a thread: {e}")))?;
        Ok(Core {
            channels,
            private: false,
            io,
            spool: None,
            scheduler_id: handle.thread().id(),
            scheduler: Mutex::new(Some(handle)),
            next_tenant: AtomicU32::new(0),
        })
    }

    /// An engine for one client (what `Client::new` makes): one I/O thread.
    pub(crate) fn private(config: &Config) -> Result<Core, Error> {
        let sends = !config.webhooks.is_empty()
            || config.write_key.is_some()
            || !config.subscriptions.is_empty();
        let mut core = Core::start(sends.then_some(1))?;
        core.private = true;
        Ok(core)
    }

    /// A number for a new tenant.
    pub(crate) fn next_tenant(&self) -> u32 {
        self.next_tenant.fetch_add(1, Relaxed)
    }

    /// True on the scheduler's own thread, i.e. inside an `on_outcome` callback, where
    /// waiting for the scheduler would wait for ourselves.
    pub(crate) fn on_scheduler(&self) -> bool {
        std::thread::current().id() == self.scheduler_id
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if let Some(spool) = &self.spool {
            // Every tenant is gone: its last commit, and the store's close.
            spool.handle.stop();
            if !self.on_scheduler() {
                spool.join(Instant::now() + Duration::from_secs(5));
            }
        }
        let _ = self.channels.control.send(Control::Stop);
        let handle = self
            .scheduler
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // Every client on it is closed by now, so it stops at once; joined (bounded), its
        // thread-locals are freed before the engine is gone. Never from its own thread.
        if let Some(handle) = handle.filter(|_| !self.on_scheduler()) {
            let end = Instant::now() + Duration::from_secs(1);
            while !handle.is_finished() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(1));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }
}
