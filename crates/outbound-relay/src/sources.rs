//! The sources: one core `Client` each (its webhooks, secret, optional forward and spool
//! under `data_dir/spool/<name>`), its write keys and allowed origins, and its audience
//! state under `data_dir/audiences/<name>.db`. A write key finds its source here.
//!
//! A config reload (SIGHUP, `reload.rs`) swaps this whole set for a new one; each client
//! reports its outcomes to `metrics.rs`.

use crate::config::{ConfigError, Relay};
use outbound::{AudienceSync, Client, Level, LogSink};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One source, running.
pub struct Source {
    pub name: String,
    write_keys: Vec<String>,
    allowed_origins: Vec<String>,
    pub client: Client,
    /// Opened at start; a sync holds it for its whole run (syncs of one source take turns).
    pub audiences: Mutex<AudienceSync>,
    pub has_webhooks: bool,
    /// What its client was built from (a reload keeps it running when unchanged).
    pub fingerprint: String,
}

impl Source {
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

/// The core's log lines, through `tracing` with the source's name (the core never writes a
/// key or a secret into them).
fn log_sink(source: &str) -> LogSink {
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
        let mut core = s.core.clone();
        core.log_sink = Some(log_sink(&s.name));
        core.on_outcome = Some(crate::metrics::on_outcome(&s.name));
        let has_webhooks = !core.webhooks.is_empty();
        let client = Client::new(core).map_err(|e| relay.core_error(i, e))?;
        let path = relay
            .data_dir
            .join("audiences")
            .join(format!("{}.db", s.name));
        let audiences = AudienceSync::open(&path).map_err(|e| ConfigError {
            file: relay.file.clone(),
            key: "data_dir".into(),
            reason: format!("audience state {}: {e}", path.display()),
        })?;
        Ok(Arc::new(Source {
            name: s.name.clone(),
            write_keys: s.write_keys.clone(),
            allowed_origins: s.allowed_origins.clone(),
            client,
            audiences: Mutex::new(audiences),
            has_webhooks,
            fingerprint: s.fingerprint.clone(),
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
