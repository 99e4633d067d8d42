//! The sources: one core `Client` each (its webhooks, secret, optional forward; spooled as a
//! tenant of the engine's spool, `data_dir/spool` or the fleet's Redis), its write keys and
//! allowed origins, and its audience
//! state under `data_dir/audiences/<name>.db`. A write key finds its source here.
//!
//! A config reload (SIGHUP, `reload.rs`) swaps this whole set for a new one; each client
//! reports its outcomes to `metrics.rs`.

use crate::config::{ConfigError, Relay};
use outbound::{AudienceSync, Client, Engine, EngineConfig, Level, LogSink};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One source, running.
pub struct Source {
    pub name: String,
    write_keys: Vec<String>,
    allowed_origins: Vec<String>,
    pub client: Client,
    /// Opened at the source's first sync (a source costs no open file until then); a sync
    /// holds it for its whole run (syncs of one source take turns).
    pub audiences: Mutex<Option<AudienceSync>>,
    /// Where its audience state lives (`data_dir/audiences/<name>.db`).
    pub audiences_path: std::path::PathBuf,
    pub has_webhooks: bool,
    /// What its client was built from (a reload keeps it running when unchanged).
    pub fingerprint: u64,
}

impl Source {
    /// Runs `f` on the source's audience state, opened on first use.
    pub fn with_audiences<T>(
        &self,
        f: impl FnOnce(&mut AudienceSync) -> Result<T, outbound::Error>,
    ) -> Result<T, outbound::Error> {
        let mut state = self.audiences.lock().unwrap_or_else(|e| e.into_inner());
        if state.is_none() {
            *state = Some(AudienceSync::open(&self.audiences_path)?);
        }
        match state.as_mut() {
            Some(sync) => f(sync),
            None => unreachable!("opened above"),
        }
    }

    /// True when a browser at `origin` may send to this source.
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.allowed_origins.iter().any(|o| o == "*" || o == origin)
    }
}

/// Every source of the config.
pub struct Sources {
    pub list: Vec<Arc<Source>>,
    /// The SHA-256 of each write key → its source's place in `list`.
    keys: HashMap<[u8; 32], usize>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The engine every source's client runs on: one scheduler thread and the I/O threads for
/// all of them, however many sources there are (a source adds no thread).
static ENGINE: OnceLock<Engine> = OnceLock::new();

/// The spool the engine's tenants share: `data_dir/spool`, or the fleet's Redis URL.
static ENGINE_SPOOL: OnceLock<PathBuf> = OnceLock::new();

/// Starts the sources' engine (before the first source): `io_threads` I/O threads, and the
/// spool the sources share. On a fleet's Redis (the first source whose spool is a Redis
/// URL names it) that is one Redis store for every source on that URL, each a tenant under
/// its name, the keys under the URL's prefix (default `outbound-relay`): one owner, one
/// writer, one transaction per interval for all of them. Otherwise `data_dir/spool` (one
/// SQLite file for all of them, one group commit per interval). The per-source spools of
/// earlier versions (`data_dir/spool/<name>`; on Redis the prefixes `P:<name>`) are taken
/// over by the source of that name. Its commit interval is the shortest any source on it
/// asks for; on Redis, its `max_timeout` the longest `timeout` of those sources.
pub fn start_engine(relay: &Relay, io_threads: usize) -> Result<(), ConfigError> {
    let redis = (relay.sources.iter()).find_map(|s| fleet_url(&s.name, &s.core));
    let spool = redis.unwrap_or_else(|| relay.data_dir.join("spool"));
    let _ = ENGINE_SPOOL.set(spool.clone());
    let on_it: Vec<&outbound::Config> = (relay.sources.iter())
        .filter(|s| on_shared_spool(relay, &s.name, &s.core))
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
        io_threads,
        spool: Some(spool.clone()),
        max_timeout,
        redis_ack: relay.redis_ack,
        spool_commit_interval: commit,
        debug: Some(true),
        log_sink: Some(log_sink("-")),
        ..defaults
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

/// The fleet's Redis URL of source `name` whose spool is on Redis: its spool setting with
/// the fleet's prefix (`config::source_redis_url` adds `:<name>` to it last).
fn fleet_url(name: &str, core: &outbound::Config) -> Option<PathBuf> {
    let spool = core.spool.as_ref().filter(|p| redis_spool(p))?;
    let text = spool.to_str()?;
    text.strip_suffix(&format!(":{name}")).map(PathBuf::from)
}

/// Whether source `name`'s client goes on the engine's spool: its `spool` is the default,
/// under `data_dir`, on an engine on `data_dir`; or the fleet's Redis, on an engine on
/// that Redis (not memory only, not another Redis).
fn on_shared_spool(relay: &Relay, name: &str, core: &outbound::Config) -> bool {
    match ENGINE_SPOOL.get() {
        Some(url) if redis_spool(url) => fleet_url(name, core).as_ref() == Some(url),
        _ => core.spool.as_ref() == Some(&relay.data_dir.join("spool").join(name)),
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

impl Sources {
    /// Starts a client per source; the first error names the file and the key.
    pub fn start(relay: &Relay) -> Result<Sources, ConfigError> {
        let audiences_dir = relay.data_dir.join("audiences");
        std::fs::create_dir_all(&audiences_dir).map_err(|e| ConfigError {
            file: relay.file.clone(),
            key: "data_dir".into(),
            reason: format!("cannot create {}: {e}", audiences_dir.display()),
        })?;
        let mut list = Vec::new();
        for i in 0..relay.sources.len() {
            list.push(Sources::start_one(relay, i)?);
        }
        Ok(Sources::new(list))
    }

    /// The set of `list`, its write keys indexed.
    pub fn new(list: Vec<Arc<Source>>) -> Sources {
        let keys = (list.iter().enumerate())
            .flat_map(|(i, s)| s.write_keys.iter().map(move |k| (digest(k), i)))
            .collect();
        Sources { list, keys }
    }

    /// Starts source `i` of `relay` (its client opens and resumes its spool).
    pub fn start_one(relay: &Relay, i: usize) -> Result<Arc<Source>, ConfigError> {
        let s = &relay.sources[i];
        // Said at start and at each reload that (re)starts the source: otherwise only the
        // delivery failures would tell, after every event was acknowledged.
        for (k, why) in s.core.blocked_webhooks() {
            tracing::warn!(
                source = %s.name,
                "{}: {}.webhooks[{k}] {} can never be reached: {why}",
                relay.file,
                s.key,
                s.core.webhooks[k].url
            );
        }
        let mut core = s.core.clone();
        core.log_sink = Some(log_sink(&s.name));
        core.on_outcome = Some(crate::operations::metrics::on_outcome(&s.name));
        let has_webhooks = !core.webhooks.is_empty();
        let client = match on_shared_spool(relay, &s.name, &core) {
            true => {
                core.spool = None;
                engine().and_then(|engine| engine.tenant(&s.name, core))
            }
            false => engine().and_then(|engine| engine.client(core)),
        }
        .map_err(|e| relay.core_error(i, e))?;
        let path = relay
            .data_dir
            .join("audiences")
            .join(format!("{}.db", s.name));
        Ok(Arc::new(Source {
            name: s.name.clone(),
            write_keys: s.write_keys.clone(),
            allowed_origins: s.allowed_origins.clone(),
            client,
            audiences: Mutex::new(None),
            audiences_path: path,
            has_webhooks,
            fingerprint: s.fingerprint,
        }))
    }

    /// The source whose write keys include `key`. The key is hashed once (SHA-256, in a time
    /// set by its length alone) and its digest looked up: the lookup's time can tell at most
    /// how much of a digest matched, which says nothing of any key. (Comparing the key with
    /// every configured key cost 1.45 s of CPU for one 500 KB `writeKey` among 2,000 keys.)
    pub fn by_write_key(&self, key: &str) -> Option<&Arc<Source>> {
        self.keys.get(&digest(key)).map(|&i| &self.list[i])
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<Source>> {
        self.list.iter().find(|s| s.name == name)
    }

    /// True when some source allows `origin` (a preflight carries no write key yet).
    pub fn any_allows_origin(&self, origin: &str) -> bool {
        self.list.iter().any(|s| s.allows_origin(origin))
    }

    /// Closes every client at once (one thread each), each within `bound`: what is not
    /// delivered by then stays in its spool for the next start. Returns how long it took.
    pub fn close_all(&self, bound: Duration) -> Duration {
        let started = Instant::now();
        std::thread::scope(|scope| {
            for source in &self.list {
                scope.spawn(move || {
                    let done = source.client.close(Some(bound));
                    let stats = source.client.stats();
                    tracing::info!(
                        source = %source.name,
                        all_delivered = matches!(done, Ok(true)),
                        delivered = stats.delivered,
                        failed = stats.failed,
                        left_in_spool = stats.spooled,
                        "source closed"
                    );
                });
            }
        });
        started.elapsed()
    }
}
