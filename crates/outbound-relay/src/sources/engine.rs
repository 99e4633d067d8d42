//! The engine every source runs on: one scheduler thread and the I/O threads for all of
//! them, however many there are (a source adds no thread), and the spool they share
//! (`data_dir/spool`, or the fleet's Redis): each source a tenant of it, under its name.

use crate::config::{ConfigError, Relay};
use outbound::{Client, Engine, EngineConfig, Level, LogSink};
use std::path::PathBuf;
use std::sync::Arc;

/// The engine every source's client runs on: one scheduler thread and the I/O threads for
/// all of them, however many sources there are (a source adds no thread), and the spool they
/// share (`data_dir/spool`, or the fleet's Redis URL).
pub struct SharedEngine {
    engine: Engine,
    spool: PathBuf,
}

/// Starts the sources' engine (before the first source): `io_threads` I/O threads, its
/// `memory_window`, and the spool the sources share. On a fleet's Redis (the first source whose spool is a Redis
/// URL names it) that is one Redis store for every source on that URL, each a tenant under
/// its name, the keys under the URL's prefix (default `outbound-relay`): one owner, one
/// writer, one transaction per interval for all of them. Otherwise `data_dir/spool` (one
/// SQLite file for all of them, one group commit per interval). The per-source spools of
/// earlier versions (`data_dir/spool/<name>`; on Redis the prefixes `P:<name>`) are taken
/// over by the source of that name. Its commit interval is the shortest any source on it
/// asks for; on Redis, its `max_timeout` the longest `timeout` of those sources.
pub fn start_engine(relay: &Relay) -> Result<SharedEngine, ConfigError> {
    let redis = (relay.sources.iter())
        .find_map(|s| fleet_url(&s.tenant, &s.core))
        .or_else(|| relay.base.fleet_redis());
    let spool = redis.unwrap_or_else(|| relay.data_dir.join("spool"));
    let on_it: Vec<&outbound::Config> = (relay.sources.iter())
        .filter(|s| on_shared_spool(&spool, &relay.data_dir, &s.tenant, &s.core))
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
        memory_window_bytes: relay.memory_window_bytes,
        spool_max_bytes: relay.spool_max_total_bytes,
        spool: Some(spool.clone().into()),
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
    Ok(SharedEngine { engine, spool })
}

fn redis_spool(p: &std::path::Path) -> bool {
    crate::config::is_redis_url(&p.to_string_lossy())
}

/// The fleet's Redis URL of a source whose spool is on Redis, under `tenant`: its spool
/// setting with the fleet's prefix (`config::source_redis_url` adds `:<tenant>` to it last).
fn fleet_url(tenant: &str, core: &outbound::Config) -> Option<PathBuf> {
    let Some(outbound::Spool::Redis(url)) = &core.spool else {
        return None;
    };
    url.expose()
        .strip_suffix(&format!(":{tenant}"))
        .map(PathBuf::from)
}

/// Whether the client of a source (under `tenant`) goes on the engine's spool: its `spool`
/// is the default, under `data_dir`, on an engine on `data_dir`; or the fleet's Redis, on an
/// engine on that Redis (not memory only, not another Redis).
fn on_shared_spool(
    spool: &std::path::Path,
    data_dir: &std::path::Path,
    tenant: &str,
    core: &outbound::Config,
) -> bool {
    match redis_spool(spool) {
        true => fleet_url(tenant, core).as_deref() == Some(spool),
        false => core.spool == Some(data_dir.join("spool").join(tenant).into()),
    }
}

impl SharedEngine {
    /// Each source on the shared spool that keeps dead letters, by tenant, with its counts:
    /// one question to the spool writer for all of them (`Engine::dead_letter_counts`).
    pub fn dead_letter_counts(
        &self,
    ) -> Result<Vec<(String, outbound::DeadLetterStats)>, outbound::Error> {
        self.engine.dead_letter_counts()
    }

    /// [`SharedEngine::dead_letter_counts`] of these sources' clients only
    /// (`Engine::dead_letter_counts_of`).
    pub fn dead_letter_counts_of(
        &self,
        tenants: &[&Client],
    ) -> Result<Vec<(String, outbound::DeadLetterStats)>, outbound::Error> {
        self.engine.dead_letter_counts_of(tenants)
    }

    /// Dead letters the shared spool's store refused and holds in memory
    /// (`Engine::dead_letters_unwritten`).
    pub fn dead_letters_unwritten(&self) -> usize {
        self.engine.dead_letters_unwritten()
    }

    /// The shared spool: `data_dir/spool`, or the fleet's Redis URL (its prefix as given).
    pub fn spool(&self) -> &PathBuf {
        &self.spool
    }

    /// Whether the shared spool is a fleet's Redis.
    pub fn on_redis(&self) -> bool {
        redis_spool(&self.spool)
    }

    /// Starts a source's client with `core`: a tenant of the shared spool under `tenant` when
    /// its spool is the shared one; true when it is on a spool. With `before` (the client it
    /// replaces), each webhook URL it keeps keeps its records (`Engine::tenant_after`).
    pub fn start_client(
        &self,
        data_dir: &std::path::Path,
        tenant: &str,
        mut core: outbound::Config,
        before: Option<&Client>,
    ) -> Result<(Client, bool), outbound::Error> {
        let shared = on_shared_spool(&self.spool, data_dir, tenant, &core);
        let spooled = shared || core.spool.is_some();
        if shared {
            core.spool = None;
        }
        let client = match (shared, before) {
            (true, Some(before)) => self.engine.tenant_after(tenant, core, before),
            (true, None) => self.engine.tenant(tenant, core),
            (false, Some(before)) => self.engine.client_after(core, before),
            (false, None) => self.engine.client(core),
        }?;
        Ok((client, spooled))
    }
}

impl SharedEngine {
    /// A client of the relay's own (not a source's) on the shared spool, under `tenant`.
    pub fn tenant_client(
        &self,
        tenant: &str,
        core: outbound::Config,
    ) -> Result<Client, outbound::Error> {
        self.engine.tenant(tenant, core)
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
