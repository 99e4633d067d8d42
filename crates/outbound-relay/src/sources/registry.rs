//! What should run, and making it so, live: the sources of `relay.toml` (replaced at each
//! SIGHUP) and those of the admin API (`control/`, one at a time or a whole snapshot from
//! its store). A name in the file is the file's. Every change is applied while requests
//! flow: a new source starts, a changed one swaps its client (`slot.rs`: nothing accepted
//! lost, nothing in flight sent twice), and a removed one stops taking events at once but
//! keeps delivering what it accepted (it *drains*) until its drain ends: an idle source on
//! a local spool ends at once; on a fleet's Redis, where a dead sibling's events of its name
//! may still be taken over, at the end the caller gives (the API's deletions keep it for the
//! source's `max_retry_duration` and 10 minutes).
//!
//! A source's client, drain and records belong to its *tenant* (`config::SourceSpec::tenant`:
//! its name, and its id when the admin API made it), not to its name: a source deleted and
//! made again under the same name is a new tenant, which inherits nothing of the old one
//! while that one drains beside it.

use super::engine::{log_sink, SharedEngine};
use super::slot::Slot;
use super::{Source, Sources};
use crate::config::{self, ConfigError, Relay};
use arc_swap::ArcSwap;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Makes each source's outcome callback (the metrics' counters), given by the layer above:
/// from its name and its tenant.
pub type OutcomeHook = Arc<dyn Fn(&str, &str) -> outbound::OutcomeCallback + Send + Sync>;

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
    engine: Arc<SharedEngine>,
}

struct Inner {
    file_name: String,
    close_timeout: Duration,
    file: BTreeMap<String, Arc<config::SourceSpec>>,
    /// The file's names in its order (lists show them so, then the API's by name).
    file_order: Vec<String>,
    api: BTreeMap<String, Arc<config::SourceSpec>>,
    /// Each write key's source, file and API together (a new key is looked up, not compared
    /// with every source's).
    owners: HashMap<String, String>,
    /// The version running of each source in the set, by name.
    running: BTreeMap<String, Arc<Source>>,
    /// Every open client, draining ones too, by tenant.
    slots: HashMap<String, Arc<Slot>>,
    /// Removed sources still delivering, by tenant, and when their drain ends at the latest.
    draining: HashMap<String, Instant>,
    /// The last version of each removed source, by tenant: requests that loaded a set
    /// holding it may still use it, and a drain does not end before they are done.
    retired: HashMap<String, Arc<Source>>,
}

impl Inner {
    /// `owners` made again from the file's and the API's sources.
    fn index_keys(&mut self) {
        self.owners = (self.file.values().chain(self.api.values()))
            .flat_map(|s| s.write_keys.iter().map(|k| (k.clone(), s.name.clone())))
            .collect();
    }

    /// The running version of `name` leaves the set: it drains until `until`.
    fn retire(&mut self, name: &str, until: Option<Instant>) {
        if let Some(old) = self.running.remove(name) {
            let until = until.unwrap_or_else(|| Instant::now() + drain_for(&old.spec));
            self.draining.insert(old.spec.tenant.clone(), until);
            self.retired.insert(old.spec.tenant.clone(), old);
        }
    }
}

/// How long a removed source keeps delivering at most: its retry window, and a margin.
pub fn drain_for(spec: &config::SourceSpec) -> Duration {
    spec.core.retry.max_retry_duration + Duration::from_secs(600)
}

impl Registry {
    /// Starts the file's sources (each client opens and resumes its part of the spool).
    pub fn start(
        relay: &Relay,
        engine: Arc<SharedEngine>,
        outcomes: OutcomeHook,
    ) -> Result<Registry, ConfigError> {
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
                owners: HashMap::new(),
                running: BTreeMap::new(),
                slots: HashMap::new(),
                draining: HashMap::new(),
                retired: HashMap::new(),
            }),
            data_dir: relay.data_dir.clone(),
            outcomes,
            engine,
        };
        let mut inner = registry.lock();
        for (i, s) in relay.sources.iter().enumerate() {
            inner.file.insert(s.name.clone(), s.clone());
            registry
                .apply(&mut inner, &s.name)
                .map_err(|e| relay.core_error(i, e))?;
        }
        inner.index_keys();
        registry.publish(&inner);
        drop(inner);
        Ok(registry)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The engine every source runs on.
    pub fn engine(&self) -> &Arc<SharedEngine> {
        &self.engine
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
                    s.check()
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
        inner.index_keys();
        self.publish(&inner);
        Ok(counts)
    }

    /// Sets (creates or replaces) the API's source `spec`: refused when the name is the
    /// file's, a write key is another source's, or the core refuses a value. True when it
    /// was created. Blocking (a changed source's hand-over).
    pub fn put(&self, spec: config::SourceSpec) -> Result<bool, Refused> {
        let mut inner = self.lock();
        if inner.file.contains_key(&spec.name) {
            return Err(Refused::File(inner.file_name.clone()));
        }
        for (k, key) in spec.write_keys.iter().enumerate() {
            match inner.owners.get(key) {
                Some(owner) if *owner != spec.name => {
                    return Err(Refused::Invalid(
                        format!("write_keys[{k}]"),
                        format!("this write key is already a key of source {owner:?}"),
                    ))
                }
                _ => {}
            }
        }
        spec.check().map_err(|(k, r)| Refused::Invalid(k, r))?;
        let name = spec.name.clone();
        let spec = Arc::new(spec);
        let old = inner.api.insert(name.clone(), spec.clone());
        for key in old.iter().flat_map(|o| o.write_keys.iter()) {
            inner.owners.remove(key);
        }
        for key in &spec.write_keys {
            inner.owners.insert(key.clone(), name.clone());
        }
        let created = old.is_none();
        let applied = self.apply(&mut inner, &name);
        if let Err(e) = applied {
            // Refused only as its client starts (a PEM the core reads then): what ran before
            // (or nothing) is what should run, and the answer names the field.
            for key in &spec.write_keys {
                inner.owners.remove(key);
            }
            match old {
                Some(old) => {
                    for key in &old.write_keys {
                        inner.owners.insert(key.clone(), name.clone());
                    }
                    inner.api.insert(name.clone(), old);
                }
                None => {
                    inner.api.remove(&name);
                }
            }
            self.publish_one(&inner, &name);
            let (field, why) = spec.core_error(e);
            return Err(Refused::Invalid(field, why));
        }
        self.publish_one(&inner, &name);
        Ok(created)
    }

    /// Removes the API's source `name`: its write keys are refused from the answer on, and
    /// it drains until `until` at the latest. False when there was none.
    pub fn remove(&self, name: &str, until: Instant) -> Result<bool, Refused> {
        let mut inner = self.lock();
        if inner.file.contains_key(name) {
            return Err(Refused::File(inner.file_name.clone()));
        }
        let Some(old) = inner.api.remove(name) else {
            return Ok(false);
        };
        for key in &old.write_keys {
            inner.owners.remove(key);
        }
        inner.retire(name, Some(until));
        self.publish_one(&inner, name);
        Ok(true)
    }

    /// The API's sources as the store has them now (at start, and a fleet's changes made at
    /// another relay): each applied where it differs from what runs; `drains`, sources
    /// deleted whose drain has not ended, are started to deliver what is theirs (after a
    /// restart) if they do not run.
    pub fn sync(&self, specs: Vec<config::SourceSpec>, drains: Vec<(config::SourceSpec, Instant)>) {
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
        inner.index_keys();
        // Deleted at another relay: it delivers what it accepted here, as one deleted here.
        for name in removed {
            inner.retire(&name, None);
        }
        names.sort();
        names.dedup();
        for name in names {
            if let Err(e) = self.apply(&mut inner, &name) {
                tracing::error!(source = %name, "cannot start: {e}");
            }
        }
        self.start_drains(&mut inner, drains);
        self.publish(&inner);
    }

    /// Some of the API's sources as the store has them now (a fleet's changes made at
    /// another relay, named by its log): each applied as [`Registry::sync`] would (`None`:
    /// gone from the store), the others left as they run. Costs the changes, not the number
    /// of sources.
    pub fn sync_some(
        &self,
        changed: Vec<(String, Option<config::SourceSpec>)>,
        drains: Vec<(config::SourceSpec, Instant)>,
    ) {
        let mut inner = self.lock();
        for (name, spec) in changed {
            if inner.file.contains_key(&name) {
                if spec.is_some() {
                    tracing::warn!(source = %name, "the admin API's source of this name is hidden by {}'s", inner.file_name);
                }
                continue;
            }
            if let Some(old) = inner.api.remove(&name) {
                for k in &old.write_keys {
                    if inner.owners.get(k) == Some(&name) {
                        inner.owners.remove(k);
                    }
                }
            }
            let owner = (spec.iter().flat_map(|s| s.write_keys.iter()))
                .find_map(|k| inner.owners.get(k).cloned());
            match (spec, owner) {
                (Some(_), Some(owner)) => {
                    tracing::warn!(source = %name, "not started: a write key of it is already a key of source {owner:?}");
                }
                (Some(spec), None) => {
                    for k in &spec.write_keys {
                        inner.owners.insert(k.clone(), name.clone());
                    }
                    inner.api.insert(name.clone(), Arc::new(spec));
                }
                (None, _) => {}
            }
            // Started, switched, or (not in `api`) draining.
            if let Err(e) = self.apply(&mut inner, &name) {
                tracing::error!(source = %name, "cannot start: {e}");
            }
            self.publish_one(&inner, &name);
        }
        self.start_drains(&mut inner, drains);
    }

    /// Deleted sources whose drain has not ended (`drains`), started to deliver what is
    /// theirs (after a restart) when they do not run.
    fn start_drains(&self, inner: &mut Inner, drains: Vec<(config::SourceSpec, Instant)>) {
        for (spec, until) in drains {
            if inner.slots.contains_key(&spec.tenant) {
                continue;
            }
            match self.open_slot(&spec, &inner.file_name) {
                Ok(slot) => {
                    tracing::info!(source = %spec.name, "deleted source draining: delivering what it accepted");
                    inner.slots.insert(spec.tenant.clone(), Arc::new(slot));
                    inner.draining.insert(spec.tenant.clone(), until);
                }
                Err(e) => tracing::error!(source = %spec.name, "cannot drain: {e}"),
            }
        }
    }

    /// Makes `name` run as desired: started, switched to new settings, or draining.
    fn apply(&self, inner: &mut Inner, name: &str) -> Result<(), outbound::Error> {
        let desired = (inner.file.get(name).cloned()).or_else(|| inner.api.get(name).cloned());
        let Some(spec) = desired else {
            inner.retire(name, None);
            return Ok(());
        };
        if (inner.running.get(name)).is_some_and(|r| r.spec.fingerprint == spec.fingerprint) {
            return Ok(());
        }
        // Another source of this name runs: it drains on its own, this one starts afresh.
        if (inner.running.get(name)).is_some_and(|r| r.spec.tenant != spec.tenant) {
            inner.retire(name, None);
        }
        let file = inner.file_name.clone();
        let slot = match inner.slots.get(&spec.tenant).cloned() {
            Some(slot) => {
                // The settings it ran with, should the new ones not start after all.
                let old = (inner.running.get(name)).map(|r| r.spec.clone());
                slot.switch(
                    inner.close_timeout,
                    |before| self.client(&spec, &file, before),
                    |before| match &old {
                        Some(old) => self.client(old, &file, before),
                        None => self.client(&spec, &file, before),
                    },
                )?;
                slot
            }
            None => {
                let slot = Arc::new(self.open_slot(&spec, &file)?);
                inner.slots.insert(spec.tenant.clone(), slot.clone());
                slot
            }
        };
        inner.draining.remove(&spec.tenant);
        inner.retired.remove(&spec.tenant);
        let source = Source::new(name, slot, spec);
        inner.running.insert(name.to_string(), Arc::new(source));
        Ok(())
    }

    /// Source `spec`'s client (the outcome hook and logs its own); `file` names relay.toml
    /// in what it logs; `before`, the client it replaces, whose webhooks' records it keeps.
    fn client(
        &self,
        spec: &config::SourceSpec,
        file: &str,
        before: Option<&outbound::Client>,
    ) -> Result<(outbound::Client, bool), outbound::Error> {
        // Said at each start: otherwise only the delivery failures would tell, after every
        // event was acknowledged.
        for (k, why) in spec.core.blocked_webhooks() {
            let at = config::join(&spec.key, &format!("webhooks[{k}]"));
            let at = match spec.managed_by {
                config::ManagedBy::File => format!("{file}: {at}"),
                config::ManagedBy::Api => at,
            };
            let url = outbound::url_for_log(&spec.core.webhooks[k].url, spec.core.log_url_paths);
            tracing::warn!(source = %spec.name, "{at} {url} can never be reached: {why}");
        }
        let mut core = spec.core.clone();
        core.log_sink = Some(log_sink(&spec.name));
        core.on_outcome = Some((self.outcomes)(&spec.name, &spec.tenant));
        self.engine
            .start_client(&self.data_dir, &spec.tenant, core, before)
    }

    fn open_slot(&self, spec: &config::SourceSpec, file: &str) -> Result<Slot, outbound::Error> {
        let (client, spooled) = self.client(spec, file, None)?;
        let audiences = (self.data_dir.join("audiences")).join(format!("{}.db", spec.tenant));
        Ok(Slot::new(&spec.name, client, spooled, audiences))
    }

    /// Publishes every running source (a reload, a fleet's changes).
    fn publish(&self, inner: &Inner) {
        let list = inner.running.values().cloned().collect();
        let set = Sources::new(list, inner.file_order.clone());
        self.current.store(Arc::new(set));
    }

    /// Publishes source `name` as it runs now, or its absence: the set is the last one with
    /// that one change, whatever the number of sources.
    fn publish_one(&self, inner: &Inner, name: &str) {
        let now = self.current.load();
        let next = match inner.running.get(name) {
            Some(s) => now.with(s.clone()),
            None => now.without(name),
        };
        self.current.store(Arc::new(next));
    }

    /// Ends the drains that are over: idle on a local spool, or past their end.
    pub fn tick(&self) {
        let mut inner = self.lock();
        let local = !self.engine.on_redis();
        let now = Instant::now();
        let over: Vec<String> = (inner.draining.iter())
            .filter(|(tenant, until)| {
                let idle = (inner.slots.get(*tenant).and_then(|s| s.current())).is_none_or(|c| {
                    let s = c.stats();
                    s.queued == 0 && s.in_flight == 0
                });
                // No request holds a set with it any more (ours is the last reference).
                let unheld = (inner.retired.get(*tenant)).is_none_or(|s| Arc::strong_count(s) == 1);
                now >= **until || (local && idle && unheld)
            })
            .map(|(tenant, _)| tenant.clone())
            .collect();
        let bound = inner.close_timeout;
        for tenant in over {
            inner.draining.remove(&tenant);
            inner.retired.remove(&tenant);
            if let Some(slot) = inner.slots.remove(&tenant) {
                if let Some((all, stats)) = slot.close(bound) {
                    tracing::info!(source = %slot.name, all_delivered = all, delivered = stats.delivered, left_in_spool = stats.spooled, "removed source drained: closed");
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
