//! The shared spool: Redis Streams, for fleets. `spool = "redis://host:port/db"`
//! (`rediss://` for TLS, `?prefix=NAME` to share a server between fleets;
//! `redis+sentinel://s1,s2,s3/MASTER/db` through Sentinel: `connect.rs`).
//!
//! # Shape
//!
//! Each [`RedisStore`] (a client's own, or an engine's for all of its tenants) is an *owner*
//! with a random id `O` and three keys under the hash tag `{P:O}` (`keys.rs`). The stream
//! `{P:O}:s` holds **one entry per commit group** (at most `GROUP_MAX` messages: a larger
//! commit, such as a backlog written after an outage, makes several): the records of the
//! messages the commit first wrote (id, accepted time, first attempt, payloads, webhook mask,
//! hash of the URL list), each packed (`keys::Packed`, layout 1) under the index of its
//! tenant's name, all in the one field `r` behind a layout byte 3 and the list of names
//! (`keys::GroupOut`). Redis parses, appends, persists and later deletes one value per
//! commit instead of one per message, which costs redis-server far less CPU than an entry per
//! message (BENCHMARKS.md). A version that reads only older layouts sees
//! a packed value of a newer layout and leaves the entry for a newer adopter, never drops
//! it; this version still adopts entries of layout 2 (groups without names: the default
//! tenant's, or a legacy prefix's, see `takeover.rs`) and of one record (layout 1, and the
//! older layout of one field per part), for a fleet upgraded one relay at a time.
//!
//! **Tenants** (`tenants.rs`): records in memory are keyed by tenant and id (ids may repeat
//! across tenants). A *parked* record (`Op::Park`: its tenant holds its share of the
//! engine's memory window) is written in its group like a put, and then only its place (entry
//! seq and index) stays in memory, in its name's queue; `resumable` reads it back (XRANGE of
//! its entry, HMGET of its progress) when its tenant has room. Records taken over, and those
//! of a tenant that closed (`release`), are parked the same way under their tenant's name.
//!
//! The hash `{P:O}:p` holds what changed after an entry was written: the progress of record
//! `i` of entry `0-SEQ` (first attempt, ingestion done, mask, copies) under `0-SEQ:i`, and
//! which of its records were removed, a bitmap under `0-SEQ:d`. A message that leaves while
//! others of its entry are pending is marked in that bitmap (one HSET per commit of each
//! entry touched, its whole bitmap: at most 256 bytes), so an adopter skips it; the entry
//! is deleted (XDEL, and HDEL of its fields) with its last message. The store keeps in
//! memory which entry and index each message has and how many of each entry's are left.
//! We chose the bitmap over a field per removed message because removal then costs Redis
//! one small HSET per commit, not one hash field per message (with its HDEL later), which
//! would give back a good part of what grouping saves; and over splitting entries again
//! (rewriting what is left at every removal) because that would copy the payloads again
//! and again. The price: an entry stays whole in Redis's memory until its last message
//! leaves, so a few messages retrying for hours (a webhook URL that is down) would keep
//! every delivered message of their groups. Hence **compaction** (`commit.rs`,
//! `compact`, at each adoption pass, every 5 s): an entry of at least `COMPACT_MIN`
//! records, sent `COMPACT_AFTER` (60 s) ago or more, with at most a quarter of them still
//! held and none parked, has its held records written again in the next commit's group and is deleted in
//! that same transaction (as the failure rule does). The store keeps each written entry's
//! held records for this (their payloads are the ones the messages in memory share), and
//! drops a record when its message leaves. Redis then holds at most about four times what
//! is pending in groups of `COMPACT_MIN` or more, plus the last minute's groups (a smaller
//! group keeps fewer than `COMPACT_MIN` delivered records per pending one); a record is
//! rewritten only when three quarters of its group were delivered.
//!
//! `{P:O}:alive` is its heartbeat, a string with a TTL of the takeover
//! threshold `T` (`timeout` + 10 s), refreshed every few seconds. The set `P:owners` lists
//! the owners. The owner delivers its own messages from memory, as with no spool: Redis is
//! the durable copy, and the owner never reads its stream.
//!
//! # Commits (`commit.rs`)
//!
//! `apply` updates what the store knows in memory, then writes what Redis lacks in one
//! MULTI/EXEC pipeline (one round trip): one XADD of the new messages (one per
//! `GROUP_MAX`), one HSET for progress and done bitmaps, one XDEL of the entries whose
//! last message left and one HDEL of their fields, the heartbeat when due, written as RESP
//! straight into one buffer kept between commits (`resp.rs`). Entry ids are ours
//! (`0-SEQ`, a new seq for each XADD sent). When Redis cannot be reached the changes stay
//! pending in memory (the messages are delivered all the same) and are written by the next
//! commit that reaches it: a process that dies while Redis is away loses what it had not
//! written.
//!
//! Commits are pipelined: `submit` sends a transaction without reading its replies and
//! `settle` reads them, in order, so the spool writer sends group n+1 while group n's reply
//! is on its way (it keeps at most one group unsettled; a synchronous query, such as a
//! takeover's, first reads every reply in flight). What a sent transaction carries counts
//! as written from then on: a later change to a message goes as an HSET of its progress,
//! its removal as a mark in its entry's bitmap (or the entry's XDEL, for its last).
//!
//! **The failure rule.** A transaction whose outcome is not "ran whole" (refused, e.g.
//! EXECABORT when the server is out of memory; a command of it refused; or its reply lost
//! with the connection, which fails every transaction in flight on it, and the connection
//! is made again later) may have run or not, and transactions sent after it may have run.
//! What it carried becomes pending again, for the next commit: its progress, done marks
//! and removals as they were, and each entry it made is deleted (XDEL, and HDEL of the
//! fields written for it since, by later transactions too) in the same transaction as the
//! XADD of its messages still held, re-grouped with the commit's other new messages under a
//! *new* seq, above every id sent so far (its messages removed in the meantime are simply
//! not written again). Kept under its old id, the entry would be refused as "equal or
//! smaller" whenever a later transaction had run (a stream's ids only grow) and be lost
//! from Redis; written under the new id without deleting the old one, its messages would be
//! kept twice when the failed transaction had run after all. So every message still held
//! ends in exactly one live entry. (An XADD still refused as "equal or smaller" is taken as
//! already written.) A takeover's transaction that fails leaves the adopted entries under
//! their tried ids alone instead: they may be the only copies (`takeover.rs`). Parked
//! records a failed transaction carried are puts again, their places back on their put
//! numbers (`tenants.rs`, `place` and `unplace`).
//!
//! **When a commit counts** (`redis_ack`, `connect.rs`): a transaction that writes new
//! records is followed by `WAIT n` or `WAITAOF 1 0` when asked; a reply short of it fails
//! the commit's outcome (its waiters are answered false) without undoing it: it ran, and a
//! later confirmed commit covers it (WAIT counts every write before it on the connection).
//!
//! # Takeover (`takeover.rs`)
//!
//! An owner whose heartbeat has expired showed no sign of life for `T`, above the request
//! timeout: nothing it sent can still be in flight. A living store (every `adopt`, 5 s)
//! reads such an owner's stream through the consumer group `outbound-takeover` (XREADGROUP
//! `>`, atomic: two adopters never get the same entry), copies the records into its own
//! stream and acknowledges and deletes the entries there (with their progress fields and
//! done bitmaps) in one MULTI. Adopted entries are unpacked, not copied as they are: the
//! records marked done are dropped, the others, with their progress applied, go through
//! the same path as our own parked messages, into new grouped entries of ours under their
//! tenants' names (so the done bitmaps and field names never need translating), handed out
//! by `resumable` to the tenant of each name. Reads count entries, not records: the
//! count follows the records per entry seen so far in the pass (a group holds up to
//! `GROUP_MAX`, an older version's entry one), so a pass holds about `ADOPT_MAX`
//! records, at most one group more. An adopter that dies between
//! the read and the MULTI leaves the entries in the group's pending list; XAUTOCLAIM with a
//! minimum idle time of `T` hands them to the next adopter. The group is created before each
//! read (a vanished group is recreated: svix's NOGROUP stall cannot happen), and a registry
//! that vanished is rebuilt by a SCAN of the streams.
//!
//! Delivery is at least once: a message delivered by a process that died before its removal
//! was written is delivered again by its adopter, and a process frozen for longer than `T`
//! (a stopped VM) comes back to find its messages taken over, and may deliver them too.

use crate::durable::names::TenantNames;
use crate::durable::{Adopted, Cursor, Op, Record, Store, TenantNo, Ticket};
use crate::error::Error;
use crate::model::spool::{RedisAck, RedisSpool};
use foldhash::HashMap;
use redis::{Connection, ConnectionLike, Pipeline, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod commit;
use commit::Commits;
mod connect;
use connect::{Ack, Acks, Link, RedisServer};
pub(crate) mod dead;
pub(crate) mod fleet;
pub(super) mod keys;
mod resp;
mod takeover;
mod tenants;
#[cfg(test)]
mod tests;
pub(crate) mod with_dead;

use keys::Keys;
use takeover::Takeover;
use tenants::{HeldRecords, Waiting};

/// What a takeover waits for beyond the request timeout: the heartbeat is refreshed every
/// 5 s (the spool writer's adoption pass), so a living owner always beats twice within it.
pub(crate) const TAKEOVER_MARGIN: Duration = Duration::from_secs(10);

/// How often the heartbeat is refreshed at most (commits refresh it too when due).
const BEAT_EVERY: Duration = Duration::from_secs(2);

/// A message this store holds in memory: where its entry is and what it still needs, so
/// ops need no read from Redis.
#[derive(Debug, Clone, Copy)]
struct Live {
    /// Its put's number (its key in `puts` while not written).
    pno: u64,
    /// Its entry `0-seq` in our stream and its index there (once written).
    seq: u64,
    idx: u32,
    copies: u32,
    first_ms: Option<i64>,
    ingest_done: bool,
    mask: u8,
    /// Payload bytes of ingestion and webhook body (0: none).
    ingest: u32,
    hook: u32,
    /// Its XADD was sent (it is in Redis, or in a transaction in flight: a failed one
    /// makes it pending again, see `commit.rs`).
    written: bool,
    /// A progress field was sent for it (HDEL with its entry).
    progress: bool,
}

/// A message to XADD: a held one's (in `live`) or a parked one's (in `waiting`).
#[derive(Debug, Clone)]
struct Put {
    rec: Record,
    /// The name its tenant's records are kept under.
    name: Arc<str>,
    /// Parked: not in memory once written (`ParkedPlace`), with its progress in `rec` and the
    /// copies it counts.
    parked: bool,
    copies: u32,
    /// The entry and index it was last sent in (a failed takeover leaves that entry alone).
    at: Option<(u64, u32)>,
}

/// An entry of ours written (sent): one commit group.
#[derive(Debug, Clone)]
struct Group {
    /// Records it holds, and how many are still held (it is deleted with the last), of
    /// which parked (not in memory).
    n: u32,
    left: u32,
    parked: u32,
    /// Bitmap of its records removed (`keys::done_field`).
    done: Vec<u8>,
    /// Indices of its records with a progress field sent.
    fields: Vec<u32>,
    /// Its records held in memory, by index (payloads shared with the messages in memory),
    /// to write them again when it is compacted; and when it was sent. Held records come
    /// first in a group, parked ones after, so a group of parked records keeps nothing.
    recs: Vec<Option<Record>>,
    at: Instant,
}

/// A written entry to delete, with its progress fields.
#[derive(Debug, Clone)]
struct Delete {
    seq: u64,
    n: u32,
    fields: Vec<u32>,
}

impl Delete {
    fn of(seq: u64, g: Group) -> Delete {
        Delete {
            seq,
            n: g.n,
            fields: g.fields,
        }
    }
}

/// The most records in one entry: a commit's new messages beyond it go in more entries
/// (a backlog written after an outage; an adopter reads entries by count).
const GROUP_MAX: usize = 2048;

/// An entry of at least `COMPACT_MIN` records, older than `COMPACT_AFTER`, with at most a
/// quarter of them still held and none parked, is compacted: its held records are written
/// again in the next commit's group and it is deleted in the same transaction
/// (`commit.rs`, `compact`). Without it, a few messages retrying for hours would keep every
/// delivered message of their groups in Redis.
const COMPACT_MIN: u32 = 64;
const COMPACT_AFTER: Duration = Duration::from_secs(60);

impl Live {
    fn bytes(&self, id: &str) -> u64 {
        let ingest = if self.ingest_done { 0 } else { self.ingest };
        let hook = if self.mask == 0 { 0 } else { self.hook };
        (id.len() + ingest as usize + hook as usize) as u64
    }

    fn progress(&self) -> keys::Progress {
        keys::Progress {
            first_ms: self.first_ms,
            ingest_done: self.ingest_done,
            mask: self.mask,
            copies: self.copies,
        }
    }
}

/// An engine's store on a Redis server, for any number of tenants. Used from one thread
/// (the spool writer).
pub(crate) struct RedisStore {
    /// The connection to the server (`connect.rs`).
    link: Link,
    /// When a commit that writes new records counts as acknowledged (`connect.rs`).
    acks: Acks,
    /// `T`: heartbeat TTL and minimum idle time of a claim.
    takeover_after: Duration,
    prefix: String,
    keys: Keys,
    heartbeat: Heartbeat,
    /// The messages we hold in memory, by tenant and id, and their counts per tenant.
    live: HeldRecords,
    /// Parked records (written, not in memory) by the name of their tenant, in the order
    /// they become resumable.
    waiting: HashMap<Arc<str>, Waiting>,
    /// Tenants' names, both ways.
    names: TenantNames,
    /// Records handed out by `resumable`, ever (its cursor).
    resumed: i64,
    /// What Redis lacks and the transactions that carry it (`commit.rs`).
    commits: Commits,
    /// What takeover passes keep between them (`takeover.rs`).
    takeover: Takeover,
}

/// Our heartbeat and our place in the registry.
#[derive(Default)]
struct Heartbeat {
    /// When it was last refreshed.
    beat_at: Option<Instant>,
    /// We are in the registry (a SADD that adds us again means it vanished).
    registered: bool,
}

impl Heartbeat {
    /// The command that refreshes it: `alive` lives for `ttl` (`T`). Noted as refreshed.
    fn cmd(&mut self, alive: &str, ttl: Duration) -> redis::Cmd {
        self.beat_at = Some(Instant::now());
        redis::cmd("SET")
            .arg(alive)
            .arg(format!("pid {}", std::process::id()))
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .to_owned()
    }

    /// Whether a commit should carry it.
    fn due(&self) -> bool {
        self.beat_at.is_none_or(|t| t.elapsed() >= BEAT_EVERY)
    }

    /// The transaction that carried it failed: the next commit carries it again.
    fn missed(&mut self) {
        self.beat_at = None;
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("location", &self.location())
            .field("waiting", &self.waiting.len())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to the server and checks it can hold a spool (streams with XAUTOCLAIM:
    /// Redis 6.2 or newer). `io_timeout` bounds every round trip; `takeover_after` is `T`.
    pub fn open(
        spool: &RedisSpool,
        io_timeout: Duration,
        takeover_after: Duration,
        ack: RedisAck,
    ) -> Result<RedisStore, Error> {
        let server = RedisServer::of(spool).map_err(|reason| Error::Spool {
            path: spool.shown.clone(),
            reason,
        })?;
        let owner = format!("{:016x}", fastrand::u64(..));
        let mut store = RedisStore {
            link: Link::new(server, io_timeout, spool.shown.clone()),
            acks: Acks::new(ack),
            takeover_after,
            prefix: spool.prefix.clone(),
            keys: Keys::of(&spool.prefix, &owner),
            heartbeat: Heartbeat::default(),
            live: HeldRecords::default(),
            waiting: HashMap::default(),
            names: TenantNames::default(),
            resumed: 0,
            commits: Commits::default(),
            takeover: Takeover::default(),
        };
        store.acks.now = store.check_server(ack)?;
        store.acks.changed = None;
        store.beat()?;
        // A registry lost before we came (a Redis that lost data) would hide the streams of
        // owners that died then: list them again, once per start.
        store.rebuild_registry()?;
        Ok(store)
    }

    fn err(&self, reason: impl Into<String>) -> Error {
        self.link.err(reason)
    }

    /// The connection, made again when lost; fails at once while a Redis that did not
    /// answer is left alone (so a dead server costs each commit nothing, not a timeout).
    fn conn(&mut self) -> Result<&mut Connection, Error> {
        if !self.link.is_connected() {
            // Replies still owed by a lost connection never come: those commits failed (a
            // new connection must not be read for them).
            if self.commits.in_flight() {
                let e = self.err("connection lost with commits in flight");
                self.fail_in_flight(&e);
            }
            self.link.connect()?;
            self.acks.reconnected();
        }
        self.link.connected()
    }

    /// Drops the connection; it is made again after a wait.
    pub(super) fn lose_connection(&mut self) {
        self.link.lose();
    }

    /// Sends a pipeline and returns one reply per command (server errors as values). With
    /// `atomic`, the commands run as one MULTI/EXEC. A failure of the connection drops it.
    fn query(&mut self, mut pipe: Pipeline, atomic: bool) -> Result<Vec<Value>, Error> {
        let n = pipe.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        // Replies of commits in flight come first on the connection.
        self.read_up_to(u64::MAX);
        if atomic {
            pipe.atomic();
        }
        let packed = pipe.get_packed_pipeline();
        let conn = self.conn()?;
        let result = if atomic {
            conn.req_packed_commands(&packed, n + 1, 1)
        } else {
            conn.req_packed_commands(&packed, 0, n)
        };
        match result {
            Ok(mut replies) if atomic => match replies.pop() {
                Some(Value::Array(items)) if items.len() == n => Ok(items),
                Some(e @ Value::ServerError(_)) => {
                    Err(self.err(format!("transaction refused: {}", describe(&e))))
                }
                other => Err(self.err(format!("unexpected transaction reply: {other:?}"))),
            },
            Ok(replies) => {
                // A primary demoted by a failover: the next connection finds the new one.
                if replies.iter().any(is_readonly) {
                    self.lose_connection();
                }
                Ok(replies)
            }
            Err(e) => {
                if !(e.kind() == redis::ErrorKind::ResponseError
                    || e.kind() == redis::ErrorKind::ExecAbortError)
                    || !self.link.is_open()
                {
                    self.lose_connection();
                }
                Err(self.err(e.to_string()))
            }
        }
    }

    /// Refreshes our heartbeat and our place in the registry (rebuilding a registry that
    /// vanished).
    fn beat(&mut self) -> Result<(), Error> {
        let mut pipe = redis::pipe();
        pipe.add_command(self.heartbeat.cmd(&self.keys.alive, self.takeover_after));
        pipe.cmd("SADD")
            .arg(keys::registry(&self.prefix))
            .arg(&self.keys.owner);
        let replies = self.query(pipe, false)?;
        if let Some(e) = replies.iter().find(|v| is_error(v)) {
            return Err(self.err(format!("heartbeat: {}", describe(e))));
        }
        let added = matches!(replies.last(), Some(Value::Int(1)));
        if added && self.heartbeat.registered {
            self.rebuild_registry()?;
        }
        self.heartbeat.registered = true;
        Ok(())
    }

    /// Lists every owner's stream under our prefix into a registry that vanished (a Redis
    /// that lost data, or a key deleted by hand), so no dead owner is forgotten; and the
    /// owners of the per-source prefixes of the version before tenants into theirs.
    fn rebuild_registry(&mut self) -> Result<(), Error> {
        let pattern = keys::stream_pattern(&self.prefix);
        let mut cursor = String::from("0");
        let mut owners = Vec::new();
        let mut legacy: BTreeMap<String, Vec<String>> = BTreeMap::new();
        loop {
            let pipe = redis::pipe()
                .cmd("SCAN")
                .arg(&cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .to_owned();
            let reply = self.query(pipe, false)?;
            let Some(Value::Array(parts)) = reply.into_iter().next() else {
                return Err(self.err("unexpected SCAN reply"));
            };
            let mut parts = parts.into_iter();
            cursor = parts
                .next()
                .as_ref()
                .and_then(keys::bytes)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| "0".into());
            if let Some(Value::Array(found)) = parts.next() {
                for key in found.iter().filter_map(keys::bytes) {
                    let key = String::from_utf8_lossy(key);
                    match keys::owner_of_stream(&self.prefix, &key) {
                        Some((None, o)) => owners.push(o.to_string()),
                        // A per-source prefix of the version before tenants: its registry.
                        Some((Some(name), o)) => legacy
                            .entry(keys::registry(&format!("{}:{name}", self.prefix)))
                            .or_default()
                            .push(o.to_string()),
                        None => {}
                    }
                }
            }
            if cursor == "0" {
                break;
            }
        }
        let mut pipe = redis::pipe();
        if !owners.is_empty() {
            pipe.cmd("SADD")
                .arg(keys::registry(&self.prefix))
                .arg(&owners);
        }
        for (registry, owners) in &legacy {
            pipe.cmd("SADD").arg(registry).arg(owners);
        }
        self.query(pipe, false)?;
        Ok(())
    }

    /// Writes what is pending, then leaves: with nothing held our keys go; otherwise they
    /// stay and the heartbeat goes, so a living store takes them over at its next pass.
    pub fn close(mut self) -> Result<(), Error> {
        let synced = self.sync(&[]).map(|_| ());
        let mut pipe = redis::pipe();
        if self.live.is_empty() && self.waiting.is_empty() && synced.is_ok() {
            pipe.cmd("DEL")
                .arg(&self.keys.stream)
                .arg(&self.keys.progress)
                .arg(&self.keys.alive);
            pipe.cmd("SREM")
                .arg(keys::registry(&self.prefix))
                .arg(&self.keys.owner);
        } else {
            pipe.cmd("DEL").arg(&self.keys.alive);
        }
        let done = self.query(pipe, true).map(|_| ());
        synced.and(done)
    }
}

/// A server's error as text ("ERR ...", "NOGROUP ...").
fn describe(v: &Value) -> String {
    match v {
        Value::ServerError(e) => format!("{} {}", e.code(), e.details().unwrap_or("")),
        other => format!("{other:?}"),
    }
}

fn is_error(v: &Value) -> bool {
    matches!(v, Value::ServerError(_))
}

/// A write refused by a replica (a primary demoted by a failover).
fn is_readonly(v: &Value) -> bool {
    matches!(v, Value::ServerError(e) if e.code() == "READONLY"
        || e.details().is_some_and(|d| d.contains("READONLY")))
}

/// Every tenant of an engine on one store: records kept under their tenant's name
/// (`tenants.rs`), parked ones read back from Redis.
impl Store for RedisStore {
    fn location(&self) -> String {
        format!(
            "{} (keys {{{}:{}}}; a commit counts once {})",
            self.link.shown,
            self.prefix,
            self.keys.owner,
            match self.acks.now {
                Ack::Memory => "in Redis's memory (redis_ack = \"memory\")".to_string(),
                Ack::Replicas(n) => format!("on {n} replica(s) (redis_ack = \"replicas:{n}\")"),
                Ack::Fsync => "in the AOF on disk (redis_ack = \"fsync\")".to_string(),
            }
        )
    }

    fn register(&mut self, no: TenantNo, name: &str) {
        RedisStore::register(self, no, name);
    }

    fn release(&mut self, tenant: TenantNo) -> Result<(), Error> {
        RedisStore::release(self, tenant);
        Ok(())
    }

    fn apply(&mut self, ops: &[Op]) -> Result<(), Error> {
        RedisStore::apply(self, ops)
    }

    fn submit(&mut self, ops: &[Op]) -> Ticket {
        RedisStore::submit(self, ops)
    }

    fn settle(&mut self, ticket: Ticket) -> Result<(), Error> {
        RedisStore::settle(self, ticket)
    }

    fn resumable(
        &mut self,
        tenant: TenantNo,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        RedisStore::resumable(self, tenant, after, limit)
    }

    fn pending(&self, tenant: TenantNo) -> (u64, u64) {
        RedisStore::pending(self, tenant)
    }

    fn adopt(&mut self) -> Result<Adopted, Error> {
        RedisStore::adopt(self)
    }

    fn close(self: Box<Self>) -> Result<(), Error> {
        RedisStore::close(*self)
    }
}
