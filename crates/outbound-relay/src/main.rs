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
//! API), `admin` (the admin API), `reply` (answers), `server` (connections, routing,
//! shutdown). Issue 25 adds `health`, `metrics` and `tls` beside them (see `server.rs`).

mod admin;
mod auth;
mod body;
mod config;
mod reply;
mod server;
mod sources;
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
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let relay = match config::Relay::load(&args.config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
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
    let grace = relay.shutdown_timeout;
    let state = Arc::new(server::State {
        sources: sources.clone(),
        admin_token: relay.admin_token.clone(),
    });
    let served = runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(&relay.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "{}: listen: cannot listen on {:?}: {e}",
                    relay.file, relay.listen
                );
                return None;
            }
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{}: listen: {e}", relay.file);
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
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{addr}");
        let _ = out.flush();
        drop(out);
        tracing::info!(
            %addr,
            sources = sources.list.len(),
            admin = relay.admin_token.is_some(),
            "outbound-relay listening"
        );
        Some(server::serve(listener, state, signals.wait(), grace).await)
    });
    let Some(finished) = served else {
        return ExitCode::FAILURE;
    };
    if !finished {
        tracing::warn!("requests still in flight after {grace:?}: closing anyway");
    }
    // The runtime's tasks are done or abandoned; the clients close on this thread.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let took = sources.close_all(relay.close_timeout);
    tracing::info!(?took, "stopped");
    ExitCode::SUCCESS
}
