//! `SIGHUP`: the config file is read again and, if it is sound, its sources and tokens
//! replace the running ones; a broken file is refused with the reason logged, and the
//! running config stays.
//!
//! The file's sources are handed to the registry (`sources/registry.rs`), which checks every
//! new or changed one with the core first (one refused: nothing changes) and applies the
//! rest live: a request loads the set once, so the requests in flight finish on the one
//! they started with; a source whose settings did not change keeps its client; a changed
//! one hands its client over to one with the new settings (nothing accepted lost, nothing
//! in flight sent twice, requests meanwhile wait instead of being refused); a removed one
//! stops taking events and drains what it accepted. The admin and metrics tokens are
//! swapped in [`Live`].
//!
//! `listen`, the limits, `tls_cert`/`tls_key`, `log_format`, `shutdown_timeout`,
//! `io_threads`, `memory_window` and `redis_ack` are read at start only: an applied reload
//! whose file differs from what the process runs with logs that the change needs a restart,
//! and otherwise ignores it; a refused reload says nothing of them.

use crate::config::{Limits, LogFormat, Relay, Tls};
use crate::sources::registry::Registry;
use arc_swap::ArcSwap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a reload replaces besides the sources: the tokens.
pub struct Live {
    pub admin_token: Option<String>,
    pub metrics_token: Option<String>,
}

/// What a reload changes: the sources, and the tokens.
#[derive(Clone)]
pub struct Target {
    pub registry: Arc<Registry>,
    pub live: Arc<ArcSwap<Live>>,
}

/// What the running relay was started or last reloaded with.
pub struct Reloader {
    /// The config file; none when the environment is the whole config.
    path: Option<PathBuf>,
    current: Relay,
    /// The settings read at start only, as this process runs them: each reload's file is
    /// compared with these, so a change undone by a later reload is no change.
    running: StartOnly,
}

/// The settings a reload cannot apply.
#[derive(PartialEq)]
struct StartOnly {
    listen: String,
    limits: Limits,
    tls: Option<Tls>,
    /// `None` when `--log-format` was given: the file's value is then never used.
    log_format: Option<LogFormat>,
    shutdown_timeout: Duration,
    /// Who may tell the client's and the relay's own address (`forwarded.rs`), and that
    /// public address: read at start.
    forwarded: String,
    /// The sources' engine: `io_threads`, `memory_window`, `redis_ack`.
    engine: String,
}

impl StartOnly {
    fn of(r: &Relay, log_format_given: bool) -> StartOnly {
        StartOnly {
            listen: r.listen.clone(),
            limits: r.limits.clone(),
            tls: r.tls.clone(),
            log_format: (!log_format_given).then_some(r.log_format),
            shutdown_timeout: r.shutdown_timeout,
            forwarded: format!("{:?}|{:?}", r.trusted_proxies, r.public_url),
            engine: format!("{}|{}|{:?}", r.io_threads, r.memory_window, r.redis_ack),
        }
    }
}

impl Reloader {
    /// `log_format_given`: the command line chose the log format, whatever the file says.
    pub fn new(path: Option<PathBuf>, current: Relay, log_format_given: bool) -> Reloader {
        let running = StartOnly::of(&current, log_format_given);
        Reloader {
            path,
            current,
            running,
        }
    }

    /// Waits for SIGHUPs (the stream is installed by the caller before the address is
    /// printed) and reloads at each; runs until the runtime stops.
    pub async fn run(self, state: Target, mut hup: tokio::signal::unix::Signal) {
        let me = Arc::new(std::sync::Mutex::new(self));
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading the config");
            let (me, state) = (me.clone(), state.clone());
            // Clients open and close spools: blocking work, off the runtime's threads.
            let _ = tokio::task::spawn_blocking(move || {
                let mut me = me.lock().unwrap_or_else(|p| p.into_inner());
                me.reload(&state);
            })
            .await;
        }
    }

    /// One reload; every refusal is logged with its reason.
    pub fn reload(&mut self, state: &Target) {
        let new = match Relay::load(self.path.as_deref()) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("config reload refused, the running config stays: {e}");
                return;
            }
        };
        match state.registry.set_file(&new) {
            Ok([added, changed, kept, removed]) => {
                state.live.store(Arc::new(Live {
                    admin_token: new.admin_token.clone(),
                    metrics_token: new.metrics_token.clone(),
                }));
                tracing::info!(added, changed, kept, removed, "config reloaded");
                self.warn_restart_only(&new);
                self.current = new;
            }
            Err(e) => tracing::error!("config reload refused, the running config stays: {e}"),
        }
    }

    /// Logs each start-only setting of the applied file that differs from the running one.
    fn warn_restart_only(&self, new: &Relay) {
        let run = &self.running;
        let file = StartOnly::of(new, run.log_format.is_none());
        let changed = [
            ("listen", run.listen != file.listen),
            ("limits", run.limits != file.limits),
            ("tls_cert/tls_key", run.tls != file.tls),
            ("log_format", run.log_format != file.log_format),
            (
                "trusted_proxies/public_url",
                run.forwarded != file.forwarded,
            ),
            (
                "shutdown_timeout",
                run.shutdown_timeout != file.shutdown_timeout,
            ),
            (
                "io_threads/memory_window/redis_ack",
                run.engine != file.engine,
            ),
        ];
        for (key, _) in changed.iter().filter(|(_, c)| *c) {
            tracing::warn!(
                "{}: {key} changed: it takes effect at the next start",
                new.file
            );
        }
    }
}
