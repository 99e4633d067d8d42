//! outbound-relay as a library: the seed's Webhooks destination as a service. Segment's
//! tracking API in (web, mobile and server SDKs), each source's own core `Client` out (its
//! signed webhooks, optionally a forward to a Segment-compatible endpoint), every
//! acknowledged event committed to the spool first.
//!
//! [`App::start`] builds a relay from its config (the sources' engine, every source's client
//! with its spool opened and resumed, the admin API's store); [`App::serve`] answers on a
//! listener until told to stop; [`App::close`] ends the clients. Everything a relay keeps is
//! its own (no process globals), so tests run relays in their own process. The binary
//! (`main.rs`) adds what belongs to a process: arguments, logging, signals, limits.
//!
//! Folders by concern, each using only those below it (ARCHITECTURE.md, "outbound-relay"):
//! `server` (connections, routing, shutdown) over `tracking` (Segment's tracking API) and
//! `control` (the admin API) and `console` (its pages for a browser) over `operations`
//! (health, metrics, reload, logging) over `sources` (the running sources and their live
//! changes) over `http` (answers, bodies, tokens, TLS) over `config` (relay.toml).

pub mod config;
mod console;
mod control;
mod http;
pub mod operations;
mod server;
mod sources;
mod tracking;

pub use config::{ConfigError, Relay};
pub use server::Signals;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A relay, started: its sources run and deliver, nothing listens yet.
pub struct App {
    state: Arc<server::State>,
    grace: Duration,
    close_timeout: Duration,
}

impl App {
    /// The sources' engine, every source's client (their spools opened and what they hold
    /// resumed), the admin API's store and its sources; blocking. An error is a message for
    /// the operator, naming the file and the key.
    pub fn start(relay: &Relay) -> Result<App, String> {
        let tls = http::tls::acceptor(relay).map_err(|e| e.to_string())?;
        // One engine for every source (`io_threads`, `memory_window`).
        let engine = Arc::new(sources::engine::start_engine(relay).map_err(|e| e.to_string())?);
        let recent = test_capture_lease().map(operations::recent::Recent::with_lease);
        let ops = operations::Ops {
            recent: recent.unwrap_or_default(),
            ..operations::Ops::default()
        };
        ops.metrics.set_per_source(operations::metrics::PerSource {
            named: relay.metrics_sources.iter().cloned().collect(),
            top: relay.metrics_top_sources,
        });
        let hook_ops = ops.clone();
        let outcomes: sources::registry::OutcomeHook =
            Arc::new(move |source: &str, tenant: &str| hook_ops.on_outcome(source, tenant));
        // The file's sources, then the admin API's from its store.
        let registry = sources::registry::Registry::start(relay, engine.clone(), outcomes)
            .map_err(|e| e.to_string())?;
        let registry = Arc::new(registry);
        if let Some(settings) = &relay.alerts {
            (ops.alerts.start(settings, &engine))
                .map_err(|e| format!("{}: alert_url: the alerts cannot start: {e}", relay.file))?;
        }
        let fleet =
            Some(engine.spool().to_string_lossy().into_owned()).filter(|p| config::is_redis_url(p));
        // Named by the setting that says where it is: the fleet's Redis, or data_dir.
        let at = if fleet.is_some() { "spool" } else { "data_dir" };
        let control = control::Control::open(relay.base.clone(), relay.audit, &registry, fleet)
            .map_err(|e| {
                format!(
                    "{}: {at}: the admin API's store cannot be opened: {e}",
                    relay.file
                )
            })?;
        let state = Arc::new(server::State {
            registry,
            control: Arc::new(control),
            live: Arc::new(arc_swap::ArcSwap::from_pointee(server::Live {
                admin_token: relay.admin_token.clone(),
                metrics_token: relay.metrics_token.clone(),
            })),
            spool_dir: relay.data_dir.join("spool"),
            limits: relay.limits.clone(),
            tls,
            trusted_proxies: relay.trusted_proxies.clone(),
            public_url: relay.public_url.clone(),
            ops,
            engine,
        });
        Ok(App {
            state,
            grace: relay.shutdown_timeout,
            close_timeout: relay.close_timeout,
        })
    }

    /// Answers on `listener` until `stop` resolves, then waits at most `shutdown_timeout` for
    /// the requests in flight; whether they all finished. Meanwhile removed sources drain, and
    /// on a fleet's Redis the admin API follows the changes made at other relays.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        stop: impl std::future::Future<Output = ()>,
    ) -> bool {
        let state = &self.state;
        let following = match state.control.shared() {
            true => Some(tokio::spawn(
                (state.control.clone()).follow(state.registry.clone()),
            )),
            false => None,
        };
        // Removed sources drain; each second the ones done are closed, and the captures of
        // recent events nobody looks at any more end.
        let (reg, recent) = (state.registry.clone(), state.ops.recent.clone());
        let draining = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                recent.sweep();
                let reg = reg.clone();
                let _ = tokio::task::spawn_blocking(move || reg.tick()).await;
            }
        });
        let alerting = tokio::spawn(state.ops.alerts.clone().run(state.registry.clone()));
        let finished = server::serve(listener, state.clone(), stop, self.grace).await;
        draining.abort();
        alerting.abort();
        if let Some(f) = following {
            f.abort();
        }
        finished
    }

    /// What `SIGHUP` reloads from `path` (the config this relay started from): the file's
    /// sources, the tokens, and the top level the admin API's sources inherit.
    /// `log_format_given`: the command line chose the log format.
    pub fn reloader(
        &self,
        path: Option<PathBuf>,
        current: Relay,
        log_format_given: bool,
    ) -> (
        operations::reload::Reloader,
        operations::reload::ReloadTarget,
    ) {
        let (reg, ctl) = (self.state.registry.clone(), self.state.control.clone());
        let target = operations::reload::ReloadTarget {
            registry: self.state.registry.clone(),
            live: self.state.live.clone(),
            applied: Arc::new(move |new: &Relay| ctl.reload(new.base.clone(), new.audit, &reg)),
        };
        let reloader = operations::reload::Reloader::new(path, current, log_format_given);
        (reloader, target)
    }

    /// Closes every source's client within `close_timeout` (what is not delivered by then
    /// stays in the spool for the next start); blocking. How long it took.
    pub fn close(&self) -> Duration {
        let took = self.state.registry.close_all(self.close_timeout);
        let left = self.close_timeout.saturating_sub(took);
        self.state
            .ops
            .alerts
            .close(left.max(Duration::from_millis(100)));
        took
    }
}

/// `OUTBOUND_RELAY_TEST_CAPTURE_SECONDS`: a shorter lease for a look at a source's recent
/// events, for tests that see a capture end. It can only shorten it (to 1 s at least).
fn test_capture_lease() -> Option<Duration> {
    let text = std::env::var("OUTBOUND_RELAY_TEST_CAPTURE_SECONDS").ok()?;
    text.trim().parse::<u64>().ok().map(Duration::from_secs)
}
