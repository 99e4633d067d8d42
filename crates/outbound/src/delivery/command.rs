//! What flows into the scheduler: accepted messages in their bytes, messages resumed from
//! the spool, flush and shutdown.

use crate::wire::ingestion::Element;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

/// One accepted message, already in the bytes of each destination it goes to.
pub(crate) struct Item {
    pub id: Arc<str>,
    /// Where `id` stands as it is (no escapes) in `ingest`, or in `hook` when there is no
    /// `ingest`: the scheduler keeps the id there rather than in an allocation of its own.
    pub id_at: Option<u16>,
    pub ingest: Option<Element>,
    pub hook: Option<Arc<[u8]>>,
    /// When the call accepted it: its batch's `flush_interval` counts from here, however
    /// late the scheduler reads it.
    pub accepted: Instant,
}

/// A message taken over from the spool: what is left of it to deliver.
pub(crate) struct Resumed {
    pub id: Arc<str>,
    pub ingest: Option<Arc<[u8]>>,
    pub hook: Option<Arc<[u8]>>,
    /// Webhook URLs still worth trying.
    pub hook_mask: u8,
    /// Its first attempt, in an earlier life: the retry window goes on from there.
    pub first: Option<Instant>,
}

pub(crate) enum Command {
    Message(Item),
    Resume(Resumed),
    /// Close the open batch now; the scheduler writes into the barrier the number below
    /// which every message was accepted before the flush.
    Flush(Option<Arc<AtomicU64>>),
    /// End what is left (outcome: dropped, closed) and stop.
    Shutdown,
}
