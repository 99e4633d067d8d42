//! `outbound-relay --config relay.toml`: the seed's Webhooks destination as a service.
//! Segment's tracking API in (web, mobile and server SDKs), each source's own core `Client`
//! out (its signed webhooks, optionally a forward to a Segment-compatible endpoint), every
//! acknowledged event committed to the spool first.
//!
//! The first line of standard output is the bound address (`127.0.0.1:43211`), flushed at
//! once, so `listen = "127.0.0.1:0"` works in tests; logs go to standard error.
//!
//! Folders by concern, each using only those below it (ARCHITECTURE.md, "outbound-relay"):
//! `server` (connections, routing, shutdown) over `tracking` (Segment's tracking API) and
//! `control` (the admin API) and `console` (its pages for a browser) over `operations` (health, metrics, reload, logging) over
//! `sources` (the running sources and their live changes) over `http` (answers, bodies,
//! tokens, TLS) over `config` (relay.toml).

mod config;
mod console;
mod control;
mod http;
mod operations;
mod server;
mod sources;
mod tracking;

use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// outbound-relay: Segment's tracking API in, signed webhooks out.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// The config file (TOML); see docs/relay.md. `OUTBOUND_RELAY_*` variables override its
    /// top-level keys; without it, they are the whole config (docs/deploy.md).
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// `text` (human-readable lines) or `json` (one JSON object a line); overrides the
    /// file's `log_format`.
    #[arg(long, value_parser = ["text", "json"])]
    log_format: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let relay = match config::Relay::load(args.config.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let format = args
        .log_format
        .as_deref()
        .and_then(config::LogFormat::parse)
        .unwrap_or(relay.log_format);
    operations::logging::init(format);
    config::env::warn_unknown();
    match operations::open_files::fit(relay.limits.max_connections) {
        Ok(operations::open_files::Fitted::Raised(from, to)) => {
            tracing::info!(from, to, "open-files soft limit raised for max_connections")
        }
        Ok(operations::open_files::Fitted::Already(_)) => {}
        Err(reason) => {
            eprintln!(
                "{}",
                config::env::named(&relay.file, "max_connections", reason)
            );
            return ExitCode::from(2);
        }
    }
    let tls = match http::tls::acceptor(&relay) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // One engine for every source (`io_threads`, `memory_window`).
    if let Err(e) = sources::engine::start_engine(&relay) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    // Clients start before the server (they open the spools and resume what is in them):
    // the file's sources, then the admin API's from its store.
    let registry = match sources::registry::Registry::start(&relay, operations::metrics::on_outcome)
    {
        Ok(r) => Arc::new(r),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let fleet = sources::engine::shared_spool()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| config::is_redis_url(p));
    // Named by the setting that says where it is: the fleet's Redis, or data_dir.
    let at = if fleet.is_some() { "spool" } else { "data_dir" };
    let control = match control::Control::open(relay.base.clone(), &registry, fleet) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            let why = format!("the admin API's store cannot be opened: {e}");
            eprintln!("{}", config::env::named(&relay.file, at, why));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("relay-io")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    operations::memory::start();
    let grace = relay.shutdown_timeout;
    let close_timeout = relay.close_timeout;
    let file = relay.file.clone();
    let listen = relay.listen.clone();
    let state = Arc::new(server::State {
        registry: registry.clone(),
        control: control.clone(),
        live: Arc::new(arc_swap::ArcSwap::from_pointee(server::Live {
            admin_token: relay.admin_token.clone(),
            metrics_token: relay.metrics_token.clone(),
        })),
        spool_dir: relay.data_dir.join("spool"),
        limits: relay.limits.clone(),
        tls,
        trusted_proxies: relay.trusted_proxies.clone(),
        public_url: relay.public_url.clone(),
    });
    let served = runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(&listen).await {
            Ok(l) => l,
            Err(e) => {
                let why = format!("cannot listen on {listen:?}: {e}");
                eprintln!("{}", config::env::named(&file, "listen", why));
                return None;
            }
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{file}: listen: {e}");
                return None;
            }
        };
        let signals = match server::Signals::install() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cannot catch SIGTERM/SIGINT: {e}");
                return None;
            }
        };
        let hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("cannot catch SIGHUP: {e}");
                return None;
            }
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{addr}");
        let _ = out.flush();
        drop(out);
        tracing::info!(
            %addr,
            sources = relay.sources.len(),
            admin = relay.admin_token.is_some(),
            tls = relay.tls.is_some(),
            "outbound-relay listening"
        );
        let reloader = operations::reload::Reloader::new(
            args.config.clone(),
            relay,
            args.log_format.is_some(),
        );
        let target = operations::reload::Target {
            registry: registry.clone(),
            live: state.live.clone(),
        };
        let reloading = tokio::spawn(reloader.run(target, hup));
        let following = match control.shared() {
            true => Some(tokio::spawn(control.clone().follow(registry.clone()))),
            false => None,
        };
        // Removed sources drain; each second the ones done are closed.
        let reg = registry.clone();
        let draining = tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let reg = reg.clone();
                let _ = tokio::task::spawn_blocking(move || reg.tick()).await;
            }
        });
        let finished = server::serve(listener, state.clone(), signals.wait(), grace).await;
        reloading.abort();
        draining.abort();
        if let Some(f) = following {
            f.abort();
        }
        Some(finished)
    });
    let Some(finished) = served else {
        return ExitCode::FAILURE;
    };
    if !finished {
        tracing::warn!("requests still in flight after {grace:?}: closing anyway");
    }
    // The runtime's tasks are done or abandoned; the clients close on this thread.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let took = registry.close_all(close_timeout);
    tracing::info!(?took, "stopped");
    ExitCode::SUCCESS
}
