//! The running sources. Each source is a tenant of one engine (`engine.rs`): its settings
//! and queues, no thread and no file of its own. A [`Source`] is one version of a source's
//! settings (what a request started with: its write keys, origins), and holds its name's
//! [`Slot`] (`slot.rs`), the client that outlives settings changes. [`Sources`] is the set a
//! request loads once (write key → source). `registry.rs` keeps what should run (the file's
//! sources and the admin API's) and applies every change live.
//!
//! Outcomes are counted through the hook the caller gives (`operations::metrics`), so this
//! layer imports nothing above it.

pub mod engine;
pub mod registry;
pub mod slot;

use crate::config;
use sha2::{Digest, Sha256};
use slot::Slot;
use std::sync::Arc;

/// One version of a source's settings, running.
pub struct Source {
    pub name: String,
    pub slot: Arc<Slot>,
    /// What it was started from (the admin API shows it; secrets never leave it).
    pub spec: Arc<config::Source>,
    /// At least one webhook is on (a deletion has somewhere to go).
    pub has_webhooks: bool,
}

impl Source {
    /// True when a browser at `origin` may send to this source.
    pub fn allows_origin(&self, origin: &str) -> bool {
        (self.spec.allowed_origins.iter()).any(|o| o == "*" || o == origin)
    }

    pub fn write_keys(&self) -> &[String] {
        &self.spec.write_keys
    }
}

/// The running sources, as one request sees them: a persistent map, so that publishing a
/// change to one source copies a path of its trees, not every source.
#[derive(Default, Clone)]
pub struct Sources {
    /// relay.toml's names in the file's order (lists show them first).
    file_order: Arc<Vec<String>>,
    by_name: imbl::OrdMap<String, Arc<Source>>,
    /// The SHA-256 of each write key → its source.
    keys: imbl::HashMap<[u8; 32], Arc<Source>>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl Sources {
    /// The set of `list`, its write keys and names indexed; `file_order`: the file's names.
    pub fn new(list: Vec<Arc<Source>>, file_order: Vec<String>) -> Sources {
        let mut set = Sources {
            file_order: Arc::new(file_order),
            ..Sources::default()
        };
        for s in list {
            set.put(s);
        }
        set
    }

    /// This set with `source` in it (replacing the version of its name).
    pub fn with(&self, source: Arc<Source>) -> Sources {
        let mut next = self.clone();
        next.put(source);
        next
    }

    /// This set without source `name`.
    pub fn without(&self, name: &str) -> Sources {
        let mut next = self.clone();
        if let Some(old) = next.by_name.remove(name) {
            for k in old.write_keys() {
                next.keys.remove(&digest(k));
            }
        }
        next
    }

    fn put(&mut self, source: Arc<Source>) {
        if let Some(old) = self.by_name.insert(source.name.clone(), source.clone()) {
            for k in old.write_keys() {
                self.keys.remove(&digest(k));
            }
        }
        for k in source.write_keys() {
            self.keys.insert(digest(k), source.clone());
        }
    }

    /// The source whose write keys include `key`. The key is hashed once (SHA-256, in a time
    /// set by its length alone) and its digest looked up: the lookup's time can tell at most
    /// how much of a digest matched, which says nothing of any key.
    pub fn by_write_key(&self, key: &str) -> Option<&Arc<Source>> {
        self.keys.get(&digest(key))
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<Source>> {
        self.by_name.get(name)
    }

    /// How many sources run.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Every source: the file's in its order, then the API's by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Source>> {
        let file = (self.file_order.iter()).filter_map(|n| self.by_name.get(n));
        let api = (self.by_name.values()).filter(|s| s.spec.managed_by == config::ManagedBy::Api);
        file.chain(api)
    }

    /// The sources in name order, from the first name after `after`.
    pub fn after<'a>(&'a self, after: &str) -> impl Iterator<Item = &'a Arc<Source>> + 'a {
        use std::ops::Bound::{Excluded, Unbounded};
        (self.by_name.range::<_, str>((Excluded(after), Unbounded))).map(|(_, s)| s)
    }

    /// True when some source allows `origin` (a preflight carries no write key yet).
    pub fn any_allows_origin(&self, origin: &str) -> bool {
        self.by_name.values().any(|s| s.allows_origin(origin))
    }
}
