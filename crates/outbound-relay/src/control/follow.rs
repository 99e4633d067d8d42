//! A relay on a fleet's Redis follows the changes made at the other relays: every
//! `store::POLL` it asks the store what changed since the state it holds, and applies only
//! that (the whole state when the store cannot tell), so following costs the changes, not
//! the number of sources.

use super::store::{self, Changes, Delta};
use super::{resource, Control};
use crate::sources::registry::Registry;
use serde_json::Value;
use std::time::{Duration, Instant};

impl Control {
    /// One look at the store, its changes applied. Blocking; one change at a time with the
    /// API's own (a change made here meanwhile would otherwise be overtaken by an older read).
    pub(super) fn poll(&self, registry: &Registry) -> Result<(), String> {
        let _one = self.changing.blocking_lock();
        let (revision, log) = {
            let held = self.held();
            (held.revision, held.log.clone())
        };
        match self.store.changes(revision, &log)? {
            Changes::None => {}
            Changes::All(snap) => self.adopt(snap, registry),
            Changes::Some(delta) => self.adopt_changes(delta, registry),
        }
        Ok(())
    }

    /// Applies the entries changed: each source as the store has it now (gone, or not
    /// readable: it stops), a deletion still draining started if it does not run, tokens.
    fn adopt_changes(&self, delta: Delta, registry: &Registry) {
        let base = self.base();
        let read = |name: &str, body: &Value| match resource::load(body, &base) {
            Ok(spec) => Some(spec),
            Err((k, r)) => {
                tracing::error!(source = %name, "stored source not started: {k}: {r}");
                None
            }
        };
        let sources = (delta.sources.iter())
            .map(|(name, body)| {
                let body = body
                    .as_ref()
                    .and_then(|b| serde_json::from_str(b.get()).ok());
                (name.clone(), body.and_then(|b: Value| read(name, &b)))
            })
            .collect();
        let now = store::now_ms();
        let drains = (delta.deleted.iter())
            .filter_map(|(tenant, entry)| entry.as_ref().map(|e| (tenant, e)))
            .filter(|(_, (_, until))| *until > now)
            .filter_map(|(tenant, (body, until))| {
                let left = Duration::from_millis(until - now);
                read(tenant, body).map(|s| (s, Instant::now() + left))
            })
            .collect();
        registry.sync_some(sources, drains);
        let mut held = self.held();
        let mut tokens = self.tokens_mut();
        for (name, body) in delta.sources {
            match body {
                Some(b) => held.sources.insert(name, b),
                None => held.sources.remove(&name),
            };
        }
        for (tenant, entry) in delta.deleted {
            match entry {
                Some(e) => held.deleted.insert(tenant, e),
                None => held.deleted.remove(&tenant),
            };
        }
        for (id, record) in delta.tokens {
            match record {
                Some(t) => {
                    tokens.insert(id.clone(), t.clone());
                    held.tokens.insert(id, t);
                }
                None => {
                    tokens.remove(&id);
                    held.tokens.remove(&id);
                }
            }
        }
        (held.revision, held.log) = (delta.revision, delta.log);
    }
}
