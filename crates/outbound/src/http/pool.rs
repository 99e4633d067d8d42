//! Keep-alive: the idle HTTP/1.1 connections of an I/O engine, per connector settings and
//! host. A request takes the most recently used one (a few stay warm, the rest age out),
//! and gives it back once its answer was read whole.

use crate::http::frames::Frames;
use hyper::client::conn::http1::SendRequest;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// An idle connection is closed after this long (receivers close theirs sooner or later,
/// and a closed one is found out before it is used).
pub(crate) const IDLE_FOR: Duration = Duration::from_secs(20);

/// Idle connections kept per host at most: what the engine may have in flight at once
/// (`PROCESS_REQUESTS`). Many tenants share a host (hooks.zapier.com, or one receiver
/// behind 1,000 URLs): a cap of one lane's `max_in_flight` closed most connections after
/// their answer, and each new one cost a handshake on both sides. [`IDLE_FOR`] closes the
/// ones a burst left.
pub(crate) const KEEP_PER_HOST: usize = 16_384;

pub(crate) type Sender = SendRequest<Frames>;

/// Connector key and `scheme://host:port`.
pub(crate) type Key = (u64, bool, std::sync::Arc<str>, u16);

#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<HashMap<Key, Vec<(Instant, Sender)>>>,
}

impl Pool {
    /// The newest idle connection of `key` that is still open.
    pub(crate) fn take(&self, key: &Key) -> Option<Sender> {
        let mut idle = self.lock();
        let list = idle.get_mut(key)?;
        let found = loop {
            match list.pop() {
                Some((since, tx)) if since.elapsed() < IDLE_FOR && !tx.is_closed() => {
                    break Some(tx)
                }
                Some(_) => continue,
                None => break None,
            }
        };
        if list.is_empty() {
            idle.remove(key);
        }
        found
    }

    /// Gives a connection back, at most `most` idle per key.
    pub(crate) fn put(&self, key: Key, tx: Sender, most: usize) {
        let mut idle = self.lock();
        let list = idle.entry(key).or_default();
        if list.len() < most {
            list.push((Instant::now(), tx));
        }
    }

    /// Closes the connections idle for [`IDLE_FOR`] (called every few seconds).
    pub(crate) fn sweep(&self) {
        self.lock().retain(|_, list| {
            list.retain(|(since, tx)| since.elapsed() < IDLE_FOR && !tx.is_closed());
            !list.is_empty()
        });
    }

    /// Idle connections held now.
    #[cfg(test)]
    pub(crate) fn idle(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Vec<(Instant, Sender)>>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}
