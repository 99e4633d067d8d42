//! The machinery clients share: one scheduler thread and one I/O engine for any number of
//! clients (tenants). A `Client` made by `Client::new` has an engine of its own; a service
//! with many sources (outbound-relay) makes one [`Engine`] and a client per source on it
//! (`Engine::client`, in `client.rs`), so a source is configuration and queues, not threads.

use crate::delivery::scheduler::{Control, Scheduler, Ways};
use crate::error::Error;
use crate::http::io::Io;
use crate::model::config::Config;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// How an [`Engine`] runs.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Threads of the I/O engine that sends webhook requests (event-driven: a request
    /// waiting for its answer holds none). Default 1; a busy service on several cores may
    /// want one per core.
    pub io_threads: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { io_threads: 1 }
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
    /// Starts an engine's threads.
    pub fn new(config: EngineConfig) -> Result<Engine, Error> {
        Ok(Engine {
            core: Arc::new(Core::start(Some(config.io_threads))?),
        })
    }
}

/// The engine's threads and the ways into them.
pub(crate) struct Core {
    pub(crate) ways: Ways,
    /// The webhooks' I/O threads; `None` for a private engine whose client has no webhook.
    pub(crate) io: Option<Io>,
    scheduler: Mutex<Option<JoinHandle<()>>>,
    scheduler_id: ThreadId,
    next_tenant: AtomicU32,
}

impl Core {
    /// Starts the scheduler thread, and `io_threads` I/O threads when given.
    pub(crate) fn start(io_threads: Option<usize>) -> Result<Core, Error> {
        let (scheduler, ways) = Scheduler::new();
        let io = match io_threads {
            Some(n) => Some(Io::start(n, "outbound-io")?),
            None => None,
        };
        let handle = std::thread::Builder::new()
            .name("outbound-scheduler".into())
            .spawn(move || scheduler.run())
            .map_err(|e| Error::config("workers", format!("cannot start a thread: {e}")))?;
        Ok(Core {
            ways,
            io,
            scheduler_id: handle.thread().id(),
            scheduler: Mutex::new(Some(handle)),
            next_tenant: AtomicU32::new(0),
        })
    }

    /// An engine for one client (what [`Client::new`] makes): I/O threads only when it
    /// has webhooks.
    pub(crate) fn private(config: &Config) -> Result<Core, Error> {
        Core::start((!config.webhooks.is_empty()).then_some(1))
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
        let _ = self.ways.control.send(Control::Stop);
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
