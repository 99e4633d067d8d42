//! `outbound-relay --config relay.toml`: the relay as a process (the library, `lib.rs`, is
//! the relay). This file keeps what belongs to a process: its arguments, its logging, its
//! open-files limit and file mode, the signals (SIGTERM/SIGINT stop, SIGHUP reloads), and
//! the address printed on stdout.
//!
//! The first line of standard output is the bound address (`127.0.0.1:43211`), flushed at
//! once, so `listen = "127.0.0.1:0"` works in tests; logs go to standard error.

use clap::{Parser, Subcommand};
use outbound_relay::{config, operations, App, Signals};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// outbound-relay: Segment's tracking API in, signed webhooks out.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The config file (TOML); see docs/relay.md. `OUTBOUND_RELAY_*` variables override its
    /// top-level keys; without it, they are the whole config (docs/deploy.md).
    #[arg(long, short = 'c', global = true)]
    config: Option<PathBuf>,
    /// `text` (human-readable lines) or `json` (one JSON object a line); overrides the
    /// file's `log_format`.
    #[arg(long, value_parser = ["text", "json"])]
    log_format: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Checks the config file as a start would, starting nothing: prints every error (named
    /// by its place in the file) and every warning; exits 0 when the relay would start, 2
    /// when not.
    Check,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let path = args.config.clone();
    if let Some(Command::Check) = args.command {
        let Some(path) = path else {
            eprintln!("outbound-relay check: --config FILE is needed (see --help)");
            return ExitCode::from(2);
        };
        return check(&path);
    }
    let relay = match config::Relay::load(path.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let format = (args.log_format.as_deref())
        .and_then(config::LogFormat::parse)
        .unwrap_or(relay.log_format);
    operations::logging::init(format);
    config::env::warn_unknown();
    if let Err(why) = process_limits(&relay) {
        eprintln!("{why}");
        return ExitCode::from(2);
    }
    // Clients start before the server (they open the spools and resume what is in them).
    let app = match App::start(&relay) {
        Ok(app) => app,
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
    operations::memory::start();
    let served = runtime.block_on(serve(&app, relay, path, args.log_format.is_some()));
    let Some(finished) = served else {
        return ExitCode::FAILURE;
    };
    if !finished {
        tracing::warn!("requests still in flight at the end of shutdown_timeout: closing anyway");
    }
    // The runtime's tasks are done or abandoned; the clients close on this thread.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let took = app.close();
    tracing::info!(?took, "stopped");
    ExitCode::SUCCESS
}

/// The process's open-files limit for `max_connections`, and its file mode for `data_dir`.
fn process_limits(relay: &config::Relay) -> Result<(), String> {
    match operations::open_files::fit(relay.limits.max_connections) {
        Ok(operations::open_files::Fitted::Raised(from, to)) => {
            tracing::info!(from, to, "open-files soft limit raised for max_connections")
        }
        Ok(operations::open_files::Fitted::Already(_)) => {}
        Err(reason) => {
            let named = config::env::named(&relay.file, "max_connections", reason);
            return Err(named.to_string());
        }
    }
    match operations::data_dir::secure(&relay.data_dir) {
        Ok(0) => Ok(()),
        Ok(n) => {
            tracing::warn!(
                tightened = n,
                "data_dir: files and directories readable by others were made the relay's own"
            );
            Ok(())
        }
        Err(e) => Err(format!(
            "{}: data_dir: {}: {e}",
            relay.file,
            relay.data_dir.display()
        )),
    }
}

/// Listens, prints the address, and serves until SIGTERM or SIGINT, reloading at each
/// SIGHUP; `None` when it could not start.
async fn serve(
    app: &App,
    relay: config::Relay,
    path: Option<PathBuf>,
    format_given: bool,
) -> Option<bool> {
    let (file, listen) = (relay.file.clone(), relay.listen.clone());
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
    // Installed before the address is printed: a signal sent right after it is ours.
    let signals = match Signals::install() {
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
    let (reloader, target) = app.reloader(path, relay, format_given);
    let reloading = tokio::spawn(reloader.run(target, hup));
    let finished = app.serve(listener, signals.wait()).await;
    reloading.abort();
    Some(finished)
}

/// `outbound-relay check`: the report on stdout (errors and warnings on stderr), 0 or 2.
fn check(path: &Path) -> ExitCode {
    let report = operations::check::check(path);
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    for e in &report.errors {
        eprintln!("error: {e}");
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match report.errors.len() {
        0 => {
            println!(
                "{}: ok ({} source{} in the file, {} warning{})",
                path.display(),
                report.sources,
                plural(report.sources),
                report.warnings.len(),
                plural(report.warnings.len()),
            );
            ExitCode::SUCCESS
        }
        n => {
            println!(
                "{}: {n} error{}: the relay would not start",
                path.display(),
                plural(n)
            );
            ExitCode::from(2)
        }
    }
}
