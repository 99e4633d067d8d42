//! `outbound-relay --config relay.toml`: the seed's Webhooks destination as a service.
//! Segment's tracking API in (web, mobile and server SDKs), each source's own core `Client`
//! out (its signed webhooks, optionally a forward to a Segment-compatible endpoint), every
//! acknowledged event committed to the spool first.
//!
//! The first line of standard output is the bound address (`127.0.0.1:43211`), flushed at
//! once, so `listen = "127.0.0.1:0"` works in tests; logs go to standard error.
//!
//! Modules, one concern each: `config` (the file), `sources` (write key → source, clients),
//! `auth` (keys and tokens), `body` (reading and decoding bodies), `tracking` (the tracking
//! API), `admin` (the admin API), `records` (a source's attempts, health and dead letters
//! on the admin API), `reply` (answers), `server` (connections, limits,
//! routing, shutdown), `health` (`/healthz`, `/readyz`), `metrics` (`/metrics`), `tls`
//! (the HTTPS listener), `reload` (SIGHUP), `memory` (free heap pages back to the system).

mod admin;
mod auth;
mod body;
mod config;
mod health;
mod memory;
mod metrics;
mod records;
mod reload;
mod reply;
mod server;
mod sources;
mod tls;
mod tracking;

use clap::Parser;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// outbound-relay: Segment's tracking API in, signed webhooks out.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// The config file (TOML); see docs/relay.md.
    #[arg(long, short = 'c')]
    config: PathBuf,
    /// `text` (human-readable lines) or `json` (one JSON object a line); overrides the
    /// file's `log_format`.
    #[arg(long, value_parser = ["text", "json"])]
    log_format: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let relay = match config::Relay::load(&args.config) {
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
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        config::LogFormat::Json => logs.json().flatten_event(true).init(),
        config::LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
    }
    let tls = match tls::acceptor(&relay) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // One engine for every source: its I/O threads, one per core (at most 4).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Err(e) = sources::start_engine(&relay, cores.clamp(1, 4)) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    // Clients start before the server (they open the spools and resume what is in them).
    let sources = match sources::Sources::start(&relay) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("{e}");
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
    memory::start();
    let grace = relay.shutdown_timeout;
    let close_timeout = relay.close_timeout;
    let file = relay.file.clone();
    let listen = relay.listen.clone();
    let state = Arc::new(server::State {
        live: arc_swap::ArcSwap::from_pointee(server::Live {
            sources,
            admin_token: relay.admin_token.clone(),
            metrics_token: relay.metrics_token.clone(),
        }),
        spool_dir: relay.data_dir.join("spool"),
        limits: relay.limits.clone(),
        tls,
    });
    let served = runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(&listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("{file}: listen: cannot listen on {listen:?}: {e}");
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
        let reloader = reload::Reloader::new(args.config.clone(), relay, args.log_format.is_some());
        let reloading = tokio::spawn(reloader.run(state.clone(), hup));
        let finished = server::serve(listener, state.clone(), signals.wait(), grace).await;
        reloading.abort();
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
    let took = state.live.load().sources.close_all(close_timeout);
    tracing::info!(?took, "stopped");
    ExitCode::SUCCESS
}
