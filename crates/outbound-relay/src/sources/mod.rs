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
    pub spec: Arc<config::SourceSpec>,
    /// At least one webhook is on (a deletion has somewhere to go).
    pub has_webhooks: bool,
    /// Its name and each webhook URL, each in lower case, one a line: what a search of the
    /// list reads, one string per source and no allocation per search.
    search: Box<str>,
}

impl Source {
    /// The running version `spec` of source `name`, on `slot`.
    pub fn new(name: &str, slot: Arc<Slot>, spec: Arc<config::SourceSpec>) -> Source {
        let hooks = spec.core.webhooks.iter();
        let fields =
            std::iter::once(name.to_lowercase()).chain(hooks.map(|w| w.url.to_lowercase()));
        Source {
            name: name.to_string(),
            slot,
            has_webhooks: spec.core.webhooks.iter().any(|w| w.enabled),
            search: fields.collect::<Vec<_>>().join("\n").into(),
            spec,
        }
    }

    /// True when its name or a webhook URL contains `q`, ignoring case (`q` in lower case).
    pub fn matches(&self, q: &str) -> bool {
        match q.contains('\n') {
            // Read field by field: a match must not span two of them.
            true => {
                self.name.to_lowercase().contains(q)
                    || (self.spec.core.webhooks.iter()).any(|w| w.url.to_lowercase().contains(q))
            }
            // Without a line break, a match in the joined fields is a match in one of them.
            false => self.search.contains(q),
        }
    }

    /// True when a browser at `origin` may send to this source.
    pub fn allows_origin(&self, origin: &str) -> bool {
        (self.spec.allowed_origins.iter()).any(|o| o == "*" || o == origin)
    }

    pub fn write_keys(&self) -> &[String] {
        &self.spec.write_keys
    }
}

/// A page of the sources list ([`Sources::page`]).
pub struct Page<'a> {
    pub sources: Vec<&'a Arc<Source>>,
    /// The last name of the page, when more sources match after it.
    pub next: Option<String>,
    /// How many sources match in all.
    pub matched: usize,
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
    /// What a search reads, made at this set's first search (a changed set starts without).
    index: std::sync::OnceLock<Arc<SearchIndex>>,
}

/// Every source's search text (`Source::search`) end to end in name order, each followed by
/// a line break: a search is one pass over contiguous memory (about 45 bytes a source)
/// instead of a visit to each source's own allocations (100,000 sources: two cache misses
/// each, most of a search's time).
struct SearchIndex {
    text: String,
    /// Where each source's text starts in `text`, and `text`'s end last.
    starts: Vec<usize>,
    sources: Vec<Arc<Source>>,
}

impl SearchIndex {
    fn new(by_name: &imbl::OrdMap<String, Arc<Source>>) -> SearchIndex {
        let size: usize = by_name.values().map(|s| s.search.len() + 1).sum();
        let mut index = SearchIndex {
            text: String::with_capacity(size),
            starts: Vec::with_capacity(by_name.len() + 1),
            sources: Vec::with_capacity(by_name.len()),
        };
        for s in by_name.values() {
            index.starts.push(index.text.len());
            index.text.push_str(&s.search);
            index.text.push('\n');
            index.sources.push(s.clone());
        }
        index.starts.push(index.text.len());
        index
    }

    /// The places (in name order) of the sources whose name or a webhook URL contains `q`
    /// (lower case, no line break: a match then lies within one field of one source).
    fn matching(&self, q: &str) -> Vec<usize> {
        let mut found = Vec::new();
        let mut at = 0;
        while let Some(hit) = self.text[at..].find(q) {
            let i = self.starts.partition_point(|&s| s <= at + hit) - 1;
            found.push(i);
            // On from the next source: each matches once.
            at = self.starts[i + 1];
        }
        found
    }
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
        next.index = Default::default();
        if let Some(old) = next.by_name.remove(name) {
            for k in old.write_keys() {
                next.keys.remove(&digest(k));
            }
        }
        next
    }

    fn put(&mut self, source: Arc<Source>) {
        self.index = Default::default();
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

    /// The sources that match `q` (lower case; empty: all) in name order after the name
    /// `after`, at most `limit`. Without `q` a page costs its own length; with it, one pass
    /// over the set's search index (`SearchIndex`, made at the set's first search; the
    /// matches are counted).
    pub fn page(&self, after: &str, q: &str, limit: usize) -> Page<'_> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let mut page = Page {
            sources: Vec::with_capacity(limit.min(self.len())),
            next: None,
            matched: 0,
        };
        if q.is_empty() {
            page.sources.extend(self.after(after).take(limit));
            page.matched = self.len();
            if let Some(last) = page.sources.last() {
                page.next = self.after(&last.name).next().map(|_| last.name.clone());
            }
            return page;
        }
        if !q.contains('\n') {
            let index = self
                .index
                .get_or_init(|| Arc::new(SearchIndex::new(&self.by_name)));
            let found = index.matching(q);
            page.matched = found.len();
            let first = (index.sources).partition_point(|s| s.name.as_str() <= after);
            let from = &found[found.partition_point(|&i| i < first)..];
            page.sources = from
                .iter()
                .take(limit)
                .map(|&i| &index.sources[i])
                .collect();
            if from.len() > limit {
                page.next = page.sources.last().map(|s| s.name.clone());
            }
            return page;
        }
        // A line break in `q`: field by field (rare; one pass over the sources).
        let before = self.by_name.range::<_, str>((Unbounded, Included(after)));
        page.matched = before.filter(|(_, s)| s.matches(q)).count();
        let mut more = false;
        for (_, s) in self.by_name.range::<_, str>((Excluded(after), Unbounded)) {
            if !s.matches(q) {
                continue;
            }
            page.matched += 1;
            match page.sources.len() < limit {
                true => page.sources.push(s),
                false => more = true,
            }
        }
        if more {
            page.next = page.sources.last().map(|s| s.name.clone());
        }
        page
    }

    /// True when some source allows `origin` (a preflight carries no write key yet).
    pub fn any_allows_origin(&self, origin: &str) -> bool {
        self.by_name.values().any(|s| s.allows_origin(origin))
    }
}
