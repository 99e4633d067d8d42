//! The engine every source runs on: one scheduler thread and the I/O threads for all of
//! them, however many there are (a source adds no thread), and the spool they share
//! (`data_dir/spool`, or the fleet's Redis): each source a tenant of it, under its name.

use crate::config::{ConfigError, Relay};
use outbound::{Client, Engine, EngineConfig, Level, LogSink};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The engine every source's client runs on: one scheduler thread and the I/O threads for
/// all of them, however many sources there are (a source adds no thread).
static ENGINE: OnceLock<Engine> = OnceLock::new();

/// The spool the engine's tenants share: `data_dir/spool`, or the fleet's Redis URL.
static ENGINE_SPOOL: OnceLock<PathBuf> = OnceLock::new();

/// Starts the sources' engine (before the first source): `io_threads` I/O threads, its
/// `memory_window`, and the spool the sources share. On a fleet's Redis (the first source whose spool is a Redis
/// URL names it) that is one Redis store for every source on that URL, each a tenant under
/// its name, the keys under the URL's prefix (default `outbound-relay`): one owner, one
/// writer, one transaction per interval for all of them. Otherwise `data_dir/spool` (one
/// SQLite file for all of them, one group commit per interval). The per-source spools of
/// earlier versions (`data_dir/spool/<name>`; on Redis the prefixes `P:<name>`) are taken
/// over by the source of that name. Its commit interval is the shortest any source on it
/// asks for; on Redis, its `max_timeout` the longest `timeout` of those sources.
pub fn start_engine(relay: &Relay) -> Result<(), ConfigError> {
    let redis = (relay.sources.iter())
        .find_map(|s| fleet_url(&s.tenant, &s.core))
        .or_else(|| relay.base.fleet_redis());
    let spool = redis.unwrap_or_else(|| relay.data_dir.join("spool"));
    let _ = ENGINE_SPOOL.set(spool.clone());
    let on_it: Vec<&outbound::Config> = (relay.sources.iter())
        .filter(|s| on_shared_spool(&relay.data_dir, &s.tenant, &s.core))
        .map(|s| &s.core)
        .collect();
    let defaults = EngineConfig::default();
    let commit = (on_it.iter().map(|c| c.spool_commit_interval).min())
        .unwrap_or(defaults.spool_commit_interval);
    let max_timeout = (on_it.iter().map(|c| c.timeout))
        .chain([defaults.max_timeout])
        .max()
        .unwrap_or(defaults.max_timeout);
    let engine = Engine::new(EngineConfig {
        io_threads: relay.io_threads,
        memory_window: relay.memory_window,
        spool: Some(spool.clone()),
        max_timeout,
        redis_ack: relay.redis_ack,
        spool_commit_interval: commit,
        debug: Some(true),
        log_sink: Some(log_sink("-")),
    })
    .map_err(|e| ConfigError {
        file: relay.file.clone(),
        key: if redis_spool(&spool) {
            "spool"
        } else {
            "data_dir"
        }
        .into(),
        // The core's error names a Redis spool itself, without its password.
        reason: match redis_spool(&spool) {
            true => e.to_string(),
            false => format!("spool {}: {e}", spool.display()),
        },
    })?;
    let _ = ENGINE.set(engine);
    Ok(())
}

fn engine() -> Result<&'static Engine, outbound::Error> {
    ENGINE.get().ok_or(outbound::Error::Closed)
}

fn redis_spool(p: &std::path::Path) -> bool {
    crate::config::is_redis_url(&p.to_string_lossy())
}

/// The fleet's Redis URL of a source whose spool is on Redis, under `tenant`: its spool
/// setting with the fleet's prefix (`config::source_redis_url` adds `:<tenant>` to it last).
fn fleet_url(tenant: &str, core: &outbound::Config) -> Option<PathBuf> {
    let spool = core.spool.as_ref().filter(|p| redis_spool(p))?;
    let text = spool.to_str()?;
    text.strip_suffix(&format!(":{tenant}")).map(PathBuf::from)
}

/// Whether the client of a source (under `tenant`) goes on the engine's spool: its `spool`
/// is the default, under `data_dir`, on an engine on `data_dir`; or the fleet's Redis, on an
/// engine on that Redis (not memory only, not another Redis).
fn on_shared_spool(data_dir: &std::path::Path, tenant: &str, core: &outbound::Config) -> bool {
    match ENGINE_SPOOL.get() {
        Some(url) if redis_spool(url) => fleet_url(tenant, core).as_ref() == Some(url),
        _ => core.spool.as_ref() == Some(&data_dir.join("spool").join(tenant)),
    }
}

/// The core's log lines, through `tracing` with the source's name (`-` for the engine's
/// own; the core never writes a key or a secret into them). Every client the relay builds
/// logs through it, so nothing reaches stderr around the chosen log format.
pub fn log_sink(source: &str) -> LogSink {
    let source = source.to_string();
    Arc::new(move |level: Level, line: &str| match level {
        Level::Warn => tracing::warn!(target: "outbound", source = %source, "{line}"),
        Level::Debug => tracing::debug!(target: "outbound", source = %source, "{line}"),
    })
}

/// Each source on the shared spool that keeps dead letters, by name, with its counts: one
/// question to the spool writer for all of them (`Engine::dead_letter_counts`).
pub fn dead_letter_counts() -> Result<Vec<(String, outbound::DeadLetterStats)>, outbound::Error> {
    engine()?.dead_letter_counts()
}

/// Dead letters the shared spool's store refused and holds in memory
/// (`Engine::dead_letters_unwritten`); 0 before the engine starts.
pub fn dead_letters_unwritten() -> usize {
    engine().map_or(0, |e| e.dead_letters_unwritten())
}

/// The shared spool: `data_dir/spool`, or the fleet's Redis URL (its prefix as given).
pub fn shared_spool() -> Option<&'static PathBuf> {
    ENGINE_SPOOL.get()
}

/// Starts a source's client with `core`: a tenant of the shared spool under `tenant` when
/// its spool is the shared one; true when it is on a spool.
pub fn start_client(
    data_dir: &std::path::Path,
    tenant: &str,
    mut core: outbound::Config,
) -> Result<(Client, bool), outbound::Error> {
    let shared = on_shared_spool(data_dir, tenant, &core);
    let spooled = shared || core.spool.is_some();
    let client = match shared {
        true => {
            core.spool = None;
            engine().and_then(|engine| engine.tenant(tenant, core))
        }
        false => engine().and_then(|engine| engine.client(core)),
    }?;
    Ok((client, spooled))
}
