//! The spool: accepted messages kept until their outcome, behind one trait ([`Store`]), so
//! the spool writer (`delivery/spooler/`) never knows which engine holds them. Engines:
//! `sqlite/` (files in a directory, the embedded default: `mod.rs` the file, `records.rs`
//! group commits and what is resumable, `syncer.rs` the WAL's fsync, `adopt.rs` dead
//! owners' files, `salvage.rs` damaged ones) and `redis/` (Redis Streams shared by a fleet:
//! `mod.rs` the connection and the heartbeat, `connect.rs` the server or Sentinel's primary
//! and what a commit waits for (`redis_ack`), `keys.rs` names and entry fields, `commit.rs`
//! group commits, `tenants.rs` tenants and parked records, `takeover.rs` dead owners'
//! streams, `dead.rs` dead letters). `dead.rs` holds what both engines' dead letters share.
//! `fork_gate.rs` keeps `fork()` out of SQLite.
//!
//! A commit is `apply`, or `submit` then `settle` (pipelined: the spool writer submits the
//! next group before settling the last). SQLite runs the transaction in `submit`, and the
//! WAL's fsync there too when this disk's fsyncs are fast, else on a thread of its own
//! whose fsync `settle` waits for (`sqlite/syncer.rs`); Redis
//! sends the transaction in `submit` and reads its reply in `settle` (`redis/mod.rs`,
//! "# Commits", for what a failed one does).
//!
//! May use: `model/` and the leaves. Knows nothing of channels or delivery; its one thread
//! is the SQLite store's fsync of the WAL on slow disks (`sqlite/syncer.rs`), hidden behind
//! `settle`.

use crate::error::Error;
use crate::wire::Body;
use dead::{DeadLetters, DeadOp};
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) mod dead;
#[cfg(feature = "sqlite")]
pub(crate) mod fork_gate;
pub(crate) mod names;
pub(crate) mod open;
#[cfg(feature = "redis")]
pub(crate) mod redis;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

/// A tenant's number in this process (an engine's client); the store keeps records under
/// the tenant's name ([`Store::register`]), which outlives the process. A client of its own
/// engine is tenant 0, named `""`.
pub(crate) type TenantNo = u32;

/// Where accepted messages wait for their outcome, for any number of tenants. Used from one
/// thread (the spool writer).
pub(crate) trait Store: Send {
    /// Where the messages are kept, as logs show it.
    fn location(&self) -> String;

    /// Tenant `no` is named `name` from now on: its records are kept under that name, and
    /// records of that name left by dead owners are resumable for it.
    fn register(&mut self, no: TenantNo, name: &str);

    /// Applies every op in one commit. On error the batch counts as not durable: SQLite
    /// rolls it back; Redis keeps it pending in memory and writes it with the next commit
    /// that reaches the server (new messages under new entry ids, the old ones deleted in the
    /// same transaction, as the failed one may have run: `redis/mod.rs`, "# Commits").
    fn apply(&mut self, ops: &[Op]) -> Result<(), Error>;

    /// Starts the commit of `ops` (its ops count as noted at once: later commits build on
    /// them); [`Store::settle`] waits for its outcome. The spool writer sends the next group
    /// before settling this one, so a store that can pipeline (Redis) has the two on the
    /// wire together. Tickets are settled in the order they were given. Default: the commit
    /// is done here, as [`Store::apply`] (SQLite).
    fn submit(&mut self, ops: &[Op]) -> Ticket {
        Ticket {
            no: 0,
            done: Some(self.apply(ops)),
        }
    }

    /// Waits for the outcome of a commit started by [`Store::submit`] (and of every one
    /// started before it): as [`Store::apply`]'s.
    fn settle(&mut self, ticket: Ticket) -> Result<(), Error> {
        ticket.done.unwrap_or(Ok(()))
    }

    /// Its dead letters, when it keeps them.
    fn dead_letters(&mut self) -> Option<&mut dyn DeadLetters> {
        None
    }

    /// [`Store::submit`] with dead-letter ops. Default: they are applied first, in a commit
    /// of their own (a crash between the two keeps a failed message both dead and pending:
    /// it is delivered again, at least once, never lost); SQLite makes it one transaction.
    /// A store without dead letters drops them.
    fn submit_with(&mut self, ops: &[Op], dead: &[DeadOp]) -> Ticket {
        let failed = match (dead.is_empty(), self.dead_letters()) {
            (false, Some(d)) => d.apply_dead(dead).err(),
            _ => None,
        };
        let ticket = self.submit(ops);
        match failed {
            None => ticket,
            Some(e) => {
                let _ = self.settle(ticket);
                Ticket {
                    no: 0,
                    done: Some(Err(e)),
                }
            }
        }
    }

    /// How many dead-letter ops a refusal left unwritten, and the refusal (a store that writes
    /// them in its commit has none): their messages stay pending until they are written.
    fn dead_unwritten(&self) -> Option<(usize, String)> {
        None
    }

    /// The descriptor of the store's lock on its file, if it has one (a forked child closes
    /// its inherited copy, so the lock goes with the parent).
    fn lock_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// Whether this store keeps parked records ([`Op::Park`]) out of memory; a store that
    /// does not is never given one.
    fn parks(&self) -> bool {
        true
    }

    /// Records of tenant `tenant` to pass on to delivery: taken over from others (dead
    /// processes, closed clients) or parked ([`Op::Park`]), at most `limit` after `after`
    /// (`None`: from the start), with the cursor to ask again from. Once returned, a record
    /// is held as if put: ops reach it.
    fn resumable(
        &mut self,
        tenant: TenantNo,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error>;

    /// Tenant `tenant` has closed: the records it holds stay, resumable for the next tenant
    /// of its name.
    fn release(&mut self, tenant: TenantNo) -> Result<(), Error>;

    /// Records held and their payload bytes, of tenant `tenant`.
    fn pending(&self, tenant: TenantNo) -> (u64, u64);

    /// Takes over what dead owners left; their records become resumable for the tenants of
    /// their names ([`Adopted::tenants`]).
    fn adopt(&mut self) -> Result<Adopted, Error>;

    /// Closes the store; records left stay for the next owner.
    fn close(self: Box<Self>) -> Result<(), Error>;
}

/// A commit started by [`Store::submit`], for [`Store::settle`].
#[derive(Debug)]
#[must_use = "a submitted commit is settled"]
pub(crate) struct Ticket {
    /// The store's number for it.
    pub(crate) no: u64,
    /// Its outcome, when known at once.
    pub(crate) done: Option<Result<(), Error>>,
}

impl Ticket {
    /// Whether its outcome is known without waiting (`settle` returns at once).
    pub(crate) fn is_known(&self) -> bool {
        self.done.is_some()
    }
}

/// One pending message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// Whose it is.
    pub tenant: TenantNo,
    /// The message id (unique per tenant in the spool).
    pub id: Arc<str>,
    /// Unix milliseconds when the message was accepted.
    pub accepted_ms: i64,
    /// Unix milliseconds of its first delivery attempt; `None` before any. The retry window
    /// counts from here, across restarts.
    pub first_ms: Option<i64>,
    /// Ingestion bytes still to deliver; `None` when delivered or not needed. Shared with
    /// the message in memory, not copied.
    pub ingest: Option<Body>,
    /// Webhook body still to deliver; `None` when done or not needed.
    pub hook: Option<Body>,
    /// Bit `i`: webhook URL `i` is still worth trying.
    pub hook_mask: u8,
    /// Hash of the webhook URL list `hook_mask` refers to; under another list the mask means
    /// nothing and every URL is tried.
    pub hooks_key: u64,
    /// From [`Store::resumable`]: not counted in its tenant's queue in this process (taken
    /// over from a dead owner, or left by a client of its name that closed), as opposed to
    /// parked by the tenant itself.
    pub adopted: bool,
}

impl Record {
    /// Its bodies' bytes: what a memory window counts of it (as `Item::spool_size`).
    pub(crate) fn body_bytes(&self) -> u64 {
        let len = |b: &Option<Body>| b.as_ref().map_or(0, |b| b.len() as u64);
        len(&self.ingest) + len(&self.hook)
    }
}

/// One change to the spool; a batch of them is committed by [`Store::apply`]. Changes to an
/// id the spool does not hold (for that tenant) are no-ops.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A message was accepted. A pending id already held counts one more copy.
    Put(Record),
    /// A message was accepted and stays in the store until [`Store::resumable`] hands it
    /// out (its tenant has as many messages in memory as it may): memory holds a window of
    /// a backlog, the store the rest.
    Park(Record),
    /// The message's first attempt started (the earliest time given is kept).
    FirstAttempt {
        tenant: TenantNo,
        id: Arc<str>,
        at_ms: i64,
    },
    /// Its ingestion part is done (delivered or failed for good): the bytes are dropped.
    IngestDone { tenant: TenantNo, id: Arc<str> },
    /// The webhook URLs still worth trying; `0` means its webhook part is done, and drops the
    /// body.
    HookMask {
        tenant: TenantNo,
        id: Arc<str>,
        mask: u8,
    },
    /// The message reached its outcome (one copy of the id leaves). `bytes`: what the
    /// spool writer counted of it in its tenant's memory window (stores ignore it).
    Remove {
        tenant: TenantNo,
        id: Arc<str>,
        bytes: u32,
    },
}

impl Op {
    /// The id the op is about.
    pub(crate) fn id(&self) -> &Arc<str> {
        match self {
            Op::Put(r) | Op::Park(r) => &r.id,
            Op::FirstAttempt { id, .. }
            | Op::IngestDone { id, .. }
            | Op::HookMask { id, .. }
            | Op::Remove { id, .. } => id,
        }
    }

    /// The tenant the op is about.
    pub(crate) fn tenant(&self) -> TenantNo {
        match self {
            Op::Put(r) | Op::Park(r) => r.tenant,
            Op::FirstAttempt { tenant, .. }
            | Op::IngestDone { tenant, .. }
            | Op::HookMask { tenant, .. }
            | Op::Remove { tenant, .. } => *tenant,
        }
    }
}

/// Position in [`Store::resumable`]'s order; only meaningful to the store that gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor(pub(crate) i64);

/// What one [`Store::adopt`] pass did.
#[derive(Debug, Default)]
pub(crate) struct Adopted {
    /// Records moved into our file (salvaged ones included).
    pub records: u64,
    /// Registered tenants that have records to resume since this pass.
    pub tenants: Vec<TenantNo>,
    /// Foreign files taken over (adopted whole or quarantined).
    pub files: u64,
    /// Files set aside or left alone, with why; the caller logs them. A file left alone for a
    /// lasting reason is reported once per store.
    pub warnings: Vec<(PathBuf, String)>,
}
