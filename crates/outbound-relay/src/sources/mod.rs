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
use std::collections::HashMap;
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

/// The running sources, as one request sees them.
#[derive(Default)]
pub struct Sources {
    pub list: Vec<Arc<Source>>,
    /// The SHA-256 of each write key → its source's place in `list`.
    keys: HashMap<[u8; 32], usize>,
    names: HashMap<String, usize>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl Sources {
    /// The set of `list`, its write keys and names indexed.
    pub fn new(list: Vec<Arc<Source>>) -> Sources {
        let keys = (list.iter().enumerate())
            .flat_map(|(i, s)| s.write_keys().iter().map(move |k| (digest(k), i)))
            .collect();
        let names = (list.iter().enumerate())
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        Sources { list, keys, names }
    }

    /// The source whose write keys include `key`. The key is hashed once (SHA-256, in a time
    /// set by its length alone) and its digest looked up: the lookup's time can tell at most
    /// how much of a digest matched, which says nothing of any key. (Comparing the key with
    /// every configured key cost 1.45 s of CPU for one 500 KB `writeKey` among 2,000 keys.)
    pub fn by_write_key(&self, key: &str) -> Option<&Arc<Source>> {
        self.keys.get(&digest(key)).map(|&i| &self.list[i])
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<Source>> {
        self.names.get(name).map(|&i| &self.list[i])
    }

    /// True when some source allows `origin` (a preflight carries no write key yet).
    pub fn any_allows_origin(&self, origin: &str) -> bool {
        self.list.iter().any(|s| s.allows_origin(origin))
    }
}
