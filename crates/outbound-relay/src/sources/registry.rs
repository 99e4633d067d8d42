//! What should run, and making it so, live: the sources of `relay.toml` (replaced at each
//! SIGHUP) and those of the admin API (`control/`, one at a time or a whole snapshot from
//! its store). A name in the file is the file's. Every change is applied while requests
//! flow: a new source starts, a changed one swaps its client (`slot.rs`: nothing accepted
//! lost, nothing in flight sent twice), and a removed one stops taking events at once but
//! keeps delivering what it accepted (it *drains*) until its drain ends: an idle source on
//! a local spool ends at once; on a fleet's Redis, where a dead sibling's events of its name
//! may still be taken over, at the end the caller gives (the API's deletions keep it for the
//! source's `max_retry_duration` and 10 minutes).

use super::engine::{log_sink, shared_spool, start_client};
use super::slot::Slot;
use super::{Source, Sources};
use crate::config::{self, ConfigError, Relay};
use arc_swap::ArcSwap;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Makes each source's outcome callback (the metrics' counters), given by the layer above.
pub type OutcomeHook = fn(&str) -> outbound::OutcomeCallback;

/// Why a change of the API's sources was refused.
#[derive(Debug)]
pub enum Refused {
    /// The name is a source of `relay.toml` (the file named).
    File(String),
    /// A field's value: its key and what is wrong.
    Invalid(String, String),
}

/// Threads that close the sources at shutdown, together.
const CLOSERS: usize = 16;

pub struct Registry {
    current: ArcSwap<Sources>,
    inner: Mutex<Inner>,
    data_dir: PathBuf,
    outcomes: OutcomeHook,
}

struct Inner {
    file_name: String,
    close_timeout: Duration,
    file: BTreeMap<String, Arc<config::Source>>,
    /// The file's names in its order (lists show them so, then the API's by name).
    file_order: Vec<String>,
    api: BTreeMap<String, Arc<config::Source>>,
    /// The version running of each source in the set.
    running: BTreeMap<String, Arc<Source>>,
    /// Every open client, draining ones too.
    slots: HashMap<String, Arc<Slot>>,
    /// Removed sources still delivering, and when their drain ends at the latest.
    draining: HashMap<String, Instant>,
    /// The last version of each removed source: requests that loaded a set holding it may
    /// still use it, and a drain does not end before they are done.
    retired: HashMap<String, Arc<Source>>,
}

/// How long a removed source keeps delivering at most: its retry window, and a margin.
pub fn drain_for(spec: &config::Source) -> Duration {
    spec.core.retry.max_retry_duration + Duration::from_secs(600)
}

impl Registry {
    /// Starts the file's sources (each client opens and resumes its part of the spool).
    pub fn start(relay: &Relay, outcomes: OutcomeHook) -> Result<Registry, ConfigError> {
        let audiences = relay.data_dir.join("audiences");
        std::fs::create_dir_all(&audiences).map_err(|e| ConfigError {
            file: relay.file.clone(),
            key: "data_dir".into(),
            reason: format!("cannot create {}: {e}", audiences.display()),
        })?;
        let registry = Registry {
            current: ArcSwap::from_pointee(Sources::default()),
            inner: Mutex::new(Inner {
                file_name: relay.file.clone(),
                close_timeout: relay.close_timeout,
                file: BTreeMap::new(),
                file_order: relay.sources.iter().map(|s| s.name.clone()).collect(),
                api: BTreeMap::new(),
                running: BTreeMap::new(),
                slots: HashMap::new(),
                draining: HashMap::new(),
                retired: HashMap::new(),
            }),
            data_dir: relay.data_dir.clone(),
            outcomes,
        };
        let mut inner = registry.lock();
        for (i, s) in relay.sources.iter().enumerate() {
            inner.file.insert(s.name.clone(), s.clone());
            registry
                .apply(&mut inner, &s.name)
                .map_err(|e| relay.core_error(i, e))?;
        }
        registry.publish(&inner);
        drop(inner);
        Ok(registry)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set a request sees (loaded once per request).
    pub fn current(&self) -> Arc<Sources> {
        self.current.load_full()
    }

    /// Whether `name` is a source of `relay.toml`, and the file's name.
    pub fn file_source(&self, name: &str) -> Option<String> {
        let inner = self.lock();
        inner
            .file
            .contains_key(name)
            .then(|| inner.file_name.clone())
    }

    /// A reload's sources: every new or changed one checked by the core first (an error:
    /// nothing changes), then applied. Returns (added, changed, kept, removed).
    pub fn set_file(&self, relay: &Relay) -> Result<[usize; 4], ConfigError> {
        let mut inner = self.lock();
        let mut counts = [0; 4];
        for (i, s) in relay.sources.iter().enumerate() {
            match inner.running.get(&s.name) {
                Some(r) if r.spec.fingerprint == s.fingerprint => counts[2] += 1,
                r => {
                    counts[usize::from(r.is_some())] += 1;
                    s.check(log_sink(&s.name))
                        .map_err(|(key, reason)| ConfigError {
                            file: relay.file.clone(),
                            key,
                            reason,
                        })
                        .map_err(|e| (i, e))
                        .map_err(|(_, e)| e)?;
                }
            }
        }
        let old: Vec<String> = inner.file.keys().cloned().collect();
        inner.file = (relay.sources.iter())
            .map(|s| (s.name.clone(), s.clone()))
            .collect();
        inner.file_name = relay.file.clone();
        inner.file_order = relay.sources.iter().map(|s| s.name.clone()).collect();
        inner.close_timeout = relay.close_timeout;
        let mut names: Vec<String> = inner.file.keys().cloned().collect();
        counts[3] = old.iter().filter(|n| !inner.file.contains_key(*n)).count();
        names.extend(old);
        names.sort();
        names.dedup();
        for name in names {
            if let Err(e) = self.apply(&mut inner, &name) {
                tracing::error!(source = %name, "cannot start: {e}");
            }
        }
        self.publish(&inner);
        Ok(counts)
    }

    /// Sets (creates or replaces) the API's source `spec`: refused when the name is the
    /// file's, a write key is another source's, or the core refuses a value. True when it
    /// was created. Blocking (a changed source's hand-over).
    pub fn put(&self, spec: config::Source) -> Result<bool, Refused> {
        let mut inner = self.lock();
        if inner.file.contains_key(&spec.name) {
            return Err(Refused::File(inner.file_name.clone()));
        }
        for (k, key) in spec.write_keys.iter().enumerate() {
            let owner = (inner.file.values().chain(inner.api.values()))
                .find(|s| s.name != spec.name && s.write_keys.contains(key));
            if let Some(owner) = owner {
                return Err(Refused::Invalid(
                    format!("write_keys[{k}]"),
                    format!("this write key is already a key of source {:?}", owner.name),
                ));
            }
        }
        spec.check(log_sink(&spec.name))
            .map_err(|(k, r)| Refused::Invalid(k, r))?;
        let name = spec.name.clone();
        let created = inner.api.insert(name.clone(), Arc::new(spec)).is_none();
        let applied = self.apply(&mut inner, &name);
        self.publish(&inner);
        applied.map_err(|e| Refused::Invalid(String::new(), e.to_string()))?;
        Ok(created)
    }

    /// Removes the API's source `name`: its write keys are refused from the answer on, and
    /// it drains until `until` at the latest. False when there was none.
    pub fn remove(&self, name: &str, until: Instant) -> Result<bool, Refused> {
        let mut inner = self.lock();
        if inner.file.contains_key(name) {
            return Err(Refused::File(inner.file_name.clone()));
        }
        if inner.api.remove(name).is_none() {
            return Ok(false);
        }
        let _ = self.apply(&mut inner, name);
        inner.draining.insert(name.to_string(), until);
        self.publish(&inner);
        Ok(true)
    }

    /// The API's sources as the store has them now (at start, and a fleet's changes made at
    /// another relay): each applied where it differs from what runs; `drains`, sources
    /// deleted whose drain has not ended, are started to deliver what is theirs (after a
    /// restart) if they do not run.
    pub fn sync(&self, specs: Vec<config::Source>, drains: Vec<(config::Source, Instant)>) {
        let mut inner = self.lock();
        let mut names: Vec<String> = inner.api.keys().cloned().collect();
        let mut taken: HashMap<String, String> = HashMap::new();
        for s in inner.file.values() {
            for k in &s.write_keys {
                taken.insert(k.clone(), s.name.clone());
            }
        }
        let mut api = BTreeMap::new();
        for spec in specs {
            if inner.file.contains_key(&spec.name) {
                tracing::warn!(source = %spec.name, "the admin API's source of this name is hidden by {}'s", inner.file_name);
                continue;
            }
            if let Some(owner) = spec.write_keys.iter().find_map(|k| taken.get(k)) {
                tracing::warn!(source = %spec.name, "not started: a write key of it is already a key of source {owner:?}");
                continue;
            }
            for k in &spec.write_keys {
                taken.insert(k.clone(), spec.name.clone());
            }
            names.push(spec.name.clone());
            api.insert(spec.name.clone(), Arc::new(spec));
        }
        let removed: Vec<String> = (inner.api.keys())
            .filter(|n| !api.contains_key(*n))
            .cloned()
            .collect();
        inner.api = api;
        names.sort();
        names.dedup();
        for name in names {
            if let Err(e) = self.apply(&mut inner, &name) {
                tracing::error!(source = %name, "cannot start: {e}");
            }
        }
        for name in removed {
            let until = Instant::now() + Duration::from_secs(600);
            inner.draining.entry(name).or_insert(until);
        }
        for (spec, until) in drains {
            if inner.slots.contains_key(&spec.name) || inner.running.contains_key(&spec.name) {
                continue;
            }
            match self.open_slot(&spec) {
                Ok(slot) => {
                    tracing::info!(source = %spec.name, "deleted source draining: delivering what it accepted");
                    inner.slots.insert(spec.name.clone(), Arc::new(slot));
                    inner.draining.insert(spec.name.clone(), until);
                }
                Err(e) => tracing::error!(source = %spec.name, "cannot drain: {e}"),
            }
        }
        self.publish(&inner);
    }

    /// Makes `name` run as desired: started, switched to new settings, or draining.
    fn apply(&self, inner: &mut Inner, name: &str) -> Result<(), outbound::Error> {
        let desired = (inner.file.get(name).cloned()).or_else(|| inner.api.get(name).cloned());
        let Some(spec) = desired else {
            if let Some(old) = inner.running.remove(name) {
                let until = Instant::now() + drain_for(&old.spec);
                inner.draining.insert(name.to_string(), until);
                inner.retired.insert(name.to_string(), old);
            }
            return Ok(());
        };
        if (inner.running.get(name)).is_some_and(|r| r.spec.fingerprint == spec.fingerprint) {
            return Ok(());
        }
        let slot = match inner.slots.get(name).cloned() {
            Some(slot) => {
                // The settings it ran with, should the new ones not start after all.
                let old = (inner.running.get(name)).map(|r| r.spec.clone());
                slot.switch(
                    inner.close_timeout,
                    || self.client(&spec),
                    || match &old {
                        Some(old) => self.client(old),
                        None => self.client(&spec),
                    },
                )?;
                slot
            }
            None => {
                let slot = Arc::new(self.open_slot(&spec)?);
                inner.slots.insert(name.to_string(), slot.clone());
                slot
            }
        };
        inner.draining.remove(name);
        inner.retired.remove(name);
        let source = Source {
            name: name.to_string(),
            slot,
            has_webhooks: spec.core.webhooks.iter().any(|w| w.enabled),
            spec,
        };
        inner.running.insert(name.to_string(), Arc::new(source));
        Ok(())
    }

    /// Source `spec`'s client (the outcome hook and logs its own).
    fn client(&self, spec: &config::Source) -> Result<(outbound::Client, bool), outbound::Error> {
        // Said at each start: otherwise only the delivery failures would tell, after every
        // event was acknowledged.
        for (k, why) in spec.core.blocked_webhooks() {
            let at = config::join(&spec.key, &format!("webhooks[{k}]"));
            let url = &spec.core.webhooks[k].url;
            tracing::warn!(source = %spec.name, "{at} {url} can never be reached: {why}");
        }
        let mut core = spec.core.clone();
        core.log_sink = Some(log_sink(&spec.name));
        core.on_outcome = Some((self.outcomes)(&spec.name));
        start_client(&self.data_dir, &spec.name, core)
    }

    fn open_slot(&self, spec: &config::Source) -> Result<Slot, outbound::Error> {
        let (client, spooled) = self.client(spec)?;
        let audiences = (self.data_dir.join("audiences")).join(format!("{}.db", spec.name));
        Ok(Slot::new(&spec.name, client, spooled, audiences))
    }

    fn publish(&self, inner: &Inner) {
        let first = (inner.file_order.iter()).filter_map(|n| inner.running.get(n));
        let rest = (inner.running.iter())
            .filter(|(n, _)| !inner.file.contains_key(*n))
            .map(|(_, s)| s);
        let list = first.chain(rest).cloned().collect();
        self.current.store(Arc::new(Sources::new(list)));
    }

    /// Ends the drains that are over: idle on a local spool, or past their end.
    pub fn tick(&self) {
        let mut inner = self.lock();
        let local = !shared_spool().is_some_and(|p| config::is_redis_url(&p.to_string_lossy()));
        let now = Instant::now();
        let over: Vec<String> = (inner.draining.iter())
            .filter(|(name, until)| {
                let idle = (inner.slots.get(*name).and_then(|s| s.current())).is_none_or(|c| {
                    let s = c.stats();
                    s.queued == 0 && s.in_flight == 0
                });
                // No request holds a set with it any more (ours is the last reference).
                let unheld = (inner.retired.get(*name)).is_none_or(|s| Arc::strong_count(s) == 1);
                now >= **until || (local && idle && unheld)
            })
            .map(|(name, _)| name.clone())
            .collect();
        let bound = inner.close_timeout;
        for name in over {
            inner.draining.remove(&name);
            inner.retired.remove(&name);
            if let Some(slot) = inner.slots.remove(&name) {
                if let Some((all, stats)) = slot.close(bound) {
                    tracing::info!(source = %name, all_delivered = all, delivered = stats.delivered, left_in_spool = stats.spooled, "removed source drained: closed");
                }
            }
        }
    }

    /// Closes every client at once (one thread each), each within `bound`: what is not
    /// delivered by then stays in the spool for the next start. Returns how long it took.
    pub fn close_all(&self, bound: Duration) -> Duration {
        let started = Instant::now();
        let deadline = started + bound;
        let slots: Vec<Arc<Slot>> = self.lock().slots.values().cloned().collect();
        // Every source's deliveries go on, on the shared engine, whether or not a thread
        // waits for them: one wait for all of them (until none has a message waiting, or the
        // bound), then each is closed with the time left, by a few threads (a thread per
        // source would be 10,000 threads at once).
        let busy = |slot: &Slot| {
            (slot.current()).is_some_and(|c| {
                let s = c.stats();
                s.queued + s.in_flight > 0
            })
        };
        while Instant::now() < deadline && slots.iter().any(|s| busy(s)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let closers = slots.len().clamp(1, CLOSERS);
        std::thread::scope(|scope| {
            for _ in 0..closers {
                scope.spawn(|| {
                    while let Some(slot) =
                        slots.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if let Some((all, stats)) = slot.close(left) {
                            tracing::info!(
                                source = %slot.name,
                                all_delivered = all,
                                delivered = stats.delivered,
                                failed = stats.failed,
                                left_in_spool = stats.spooled,
                                "source closed"
                            );
                        }
                    }
                });
            }
        });
        started.elapsed()
    }
}
