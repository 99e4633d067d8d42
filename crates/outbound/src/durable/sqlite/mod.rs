//! The on-disk spool: every accepted message is written to an embedded SQLite
//! store before its first delivery attempt and removed at its outcome, so a restart, or a
//! sibling process sharing the directory, resumes what is pending.
//!
//! # Files
//!
//! Each [`SqliteStore`] owns one new file `DIR/outbound-<pid>-<16 hex>.db` (plus SQLite's `-wal`)
//! and holds an exclusive `flock` on its lock file `DIR/outbound-<pid>-<16 hex>.lock` for as
//! long as it is open. The lock is the only liveness signal: a `.db` whose lock can be taken
//! (or whose lock file is missing) belongs to a process that died or a client that closed
//! with messages left, and [`SqliteStore::adopt`] moves its records into our own file. A new name
//! per open makes pid reuse harmless. Within one process a directory has at most one open
//! store (a registry keyed by the canonical path; entries inherited through `fork` do not
//! count).
//!
//! # Durability
//!
//! WAL with `synchronous=NORMAL`, and the WAL fsynced after each commit (`syncer.rs`): in
//! place when this disk's fsyncs are fast, else by a thread of its own while the spool
//! writer runs the next group's transaction. A commit is settled ([`Store::settle`], and so
//! [`Store::apply`]) only after an fsync that began after it ended, so a settled commit
//! survives a power cut. Rows moved from another file are fsynced before that file is
//! deleted or moved aside. The caller commits in groups (one commit per interval), so a
//! message accepted less than one interval before a power cut can be lost; a process crash
//! loses nothing committed (the WAL is in the page cache once written).
//!
//! An fsync that fails poisons the store: on Linux the pages it should have written may be
//! dropped while marked clean, and SQLite's recovery stops at the first bad WAL frame, so
//! no later commit could be called durable, however well its own fsync went. Every later
//! commit (and adoption) then fails without touching the file, so the spool reports itself
//! failing (`Client::spool_ok`: the relay answers 503 and `/readyz` is not ready) and
//! messages go on to delivery from memory; closing leaves the file without a checkpoint,
//! unlocked for the next process's recovery and adoption.
//!
//! # Damage
//!
//! A file that cannot be opened as SQLite, fails `PRAGMA quick_check`, or is not a spool of
//! our schema is quarantined: whatever records can still be read are salvaged into our file,
//! then it is renamed to `X.db.corrupt-<unix seconds>` (its `-wal` beside it as
//! `X.db.corrupt-<unix seconds>-wal`, so SQLite can still open the pair) and reported as a
//! warning. No file content makes this module panic.
//!
//! # Message ids and rows
//!
//! Ops name records by message id; rows are found by their rowid through an in-memory map
//! of the records this store has handed out (its own puts, and adopted records once
//! [`SqliteStore::resumable`] gave them). SQLite keeps no index on the ids of our own puts: a
//! unique index on random ids, and the statement journals its checks need, were three
//! quarters of the spool thread's time. Adopted rows (`resume_seq` set) are unique by id
//! (a partial index), so a file adopted twice after a crash mid-adoption is kept once.
//!
//! Ids can be chosen by the caller, so two pending messages may share one: a second `Put`
//! of a pending id counts a copy (the first payload is kept) and the record stays until as
//! many `Remove`s; an adopted record whose id this store already holds is dropped when it
//! would be resumed. Receivers deduplicate by `messageId`, so keeping one payload per id
//! loses nothing they would keep.

use crate::durable::fork_gate;
use crate::durable::names::TenantNames;
use crate::durable::{Adopted, Cursor, Op, Record, Store, TenantNo, Ticket};
use crate::error::Error;
use crate::wire::Body;
use file::SpoolFile;
use foldhash::HashMap;
use rusqlite::{ErrorCode, Row};
use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Value of `meta.schema` in the files this code writes; it adopts these and the versions
/// before (1: no tenants, every record its one client's; 2: no dead letters).
const SCHEMA_VERSION: i64 = 3;

/// The page size of our own files (SQLite's default is 4 KiB; see `create_db`).
const PAGE_SIZE: i64 = 16 * 1024;

/// Every spool file's name starts with this.
const PREFIX: &str = "outbound-";

/// Our own file is new at every open, so the schema is created once, in one transaction.
/// (`dead.rs` adds its table in the same transaction.)
const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value ANY) STRICT;
INSERT INTO meta (key, value) VALUES ('schema', 3);
-- A rowid table: appends stay sequential, and our own puts are found by rowid.
CREATE TABLE messages (
    tenant      TEXT NOT NULL DEFAULT '', -- whose: the name of an engine's client
    id          TEXT NOT NULL,         -- message id
    accepted_ms INTEGER NOT NULL,      -- unix ms when accepted (ordering)
    first_ms    INTEGER,               -- unix ms of the first attempt (retry window)
    ingest      BLOB,                  -- ingestion bytes still to deliver
    hook        BLOB,                  -- webhook body still to deliver
    hook_mask   INTEGER NOT NULL,      -- bit i: webhook URL i still worth trying
    hooks_key   INTEGER NOT NULL,      -- hash of the webhook URL list the mask refers to
    copies      INTEGER NOT NULL DEFAULT 1, -- pending messages sharing this id
    resume_seq  INTEGER,               -- set on adoption and parking: order of SqliteStore::resumable
    adopted     INTEGER NOT NULL DEFAULT 0 -- 1: from a dead owner's file; 2: left by a client that closed
) STRICT;
CREATE INDEX messages_resume ON messages (tenant, resume_seq) WHERE resume_seq IS NOT NULL;
-- Adopted records once per tenant and id (see the module docs on ids).
CREATE UNIQUE INDEX messages_adopted ON messages (tenant, id) WHERE adopted = 1;
";

/// The columns a record is made of, as selected from any spool file.
const COLUMNS: &str = "id, accepted_ms, first_ms, ingest, hook, hook_mask, hooks_key";

/// Rows of a foreign file whose columns have the types our (STRICT) table needs.
const VALID: &str = "typeof(id) = 'text' AND length(id) > 0 \
    AND typeof(accepted_ms) = 'integer' \
    AND typeof(first_ms) IN ('integer', 'null') \
    AND typeof(ingest) IN ('blob', 'null') AND typeof(hook) IN ('blob', 'null') \
    AND typeof(hook_mask) = 'integer' AND hook_mask BETWEEN 0 AND 255 \
    AND typeof(hooks_key) = 'integer'";

/// Payload bytes of a row, as counted by [`SqliteStore::pending`].
const ROW_BYTES: &str =
    "octet_length(id) + coalesce(length(ingest), 0) + coalesce(length(hook), 0)";

impl Record {
    fn payload_bytes(&self) -> u64 {
        (self.id.len()
            + self.ingest.as_ref().map_or(0, |b| b.len())
            + self.hook.as_ref().map_or(0, |b| b.len())) as u64
    }

    /// A row selected with [`COLUMNS`] first; `None` when a column has the wrong type (only
    /// possible in a foreign or damaged file: our own table is STRICT).
    fn from_row(row: &Row<'_>) -> Option<Record> {
        let id: String = row.get(0).ok()?;
        if id.is_empty() {
            return None;
        }
        let mask: i64 = row.get(5).ok()?;
        Some(Record {
            // The caller knows whose it is, and whether it is counted yet.
            tenant: 0,
            adopted: true,
            id: Arc::from(id),
            accepted_ms: row.get(1).ok()?,
            first_ms: row.get(2).ok()?,
            ingest: row.get::<_, Option<Vec<u8>>>(3).ok()?.map(Body::from),
            hook: row.get::<_, Option<Vec<u8>>>(4).ok()?.map(Body::from),
            hook_mask: u8::try_from(mask).ok()?,
            hooks_key: row.get::<_, i64>(6).ok()? as u64,
        })
    }
}

/// A record this store handed out (put, or resumed): where its row is and what it holds,
/// so ops need no lookup by id in SQLite.
#[derive(Debug, Clone, Copy)]
struct Live {
    rowid: i64,
    /// Pending messages sharing the id.
    copies: u32,
    /// Bytes of the ingestion payload and of the webhook body still held (0: none).
    ingest: u32,
    hook: u32,
}

impl Live {
    fn of(record: &Record, rowid: i64, copies: u32) -> Live {
        let len = |b: &Option<Body>| b.as_ref().map_or(0, |b| b.len() as u32);
        Live {
            rowid,
            copies,
            ingest: len(&record.ingest),
            hook: len(&record.hook),
        }
    }
}

/// How to take back one change to [`SqliteStore`]'s map when its transaction fails, by the index
/// of the op that made it (an id of its own would cost two atomic refcount changes per op,
/// on a cache line the scheduler's thread wrote: a sixth of the spool thread's time).
enum LiveRollback {
    Remove(usize),
    Restore(usize, Live),
}

/// The records handed out, by tenant and id (see the module docs). foldhash: SipHash, std's
/// default, was 9 % of the spool thread's samples (one lookup per op).
type LiveMap = HashMap<TenantNo, HashMap<Arc<str>, Live>>;

/// One directory's open spool in this process: (canonical dir, pid, store token).
static OPEN: Mutex<Vec<(PathBuf, u32, u64)>> = Mutex::new(Vec::new());

/// Our file in a spool directory, locked for as long as it is open, and what we know of
/// its records. Used from one thread.
pub(crate) struct SqliteStore {
    /// The file, its connection and its fsyncs (`file.rs`).
    file: SpoolFile,
    /// Tenants' names, both ways (`Store::register`); tenant 0 is `""`.
    names: TenantNames,
    /// Records held and their payload bytes, in all and by tenant name.
    counts: Counts,
    /// Highest `resume_seq` given so far.
    last_seq: i64,
    live: LiveMap,
    /// An engine's shared spool: the per-client spools of the version before tenants, in
    /// subdirectories named after their client (`DIR/<name>/outbound-*.db`, the relay's
    /// `data_dir/spool/<source>`), are adopted as that tenant's.
    legacy_dirs: bool,
    /// Files already reported as left alone, so periodic passes do not repeat the warning.
    reported: HashSet<PathBuf>,
    /// The dead letters' limits and counts (`dead.rs`).
    dead: dead::DeadState,
}

/// Records held and their payload bytes, in all and by tenant name (names not registered
/// too: a dead owner's records of a tenant this process does not serve stay here).
#[derive(Default)]
struct Counts {
    records: u64,
    bytes: u64,
    by_name: HashMap<Arc<str>, (u64, u64)>,
}

impl Counts {
    /// Counts `records` and `bytes` (either may be negative) for `name`'s records.
    fn count(&mut self, name: &Arc<str>, records: i64, bytes: i64) {
        self.records = self.records.saturating_add_signed(records);
        self.bytes = self.bytes.saturating_add_signed(bytes);
        let (r, b) = self.by_name.entry(name.clone()).or_default();
        *r = r.saturating_add_signed(records);
        *b = b.saturating_add_signed(bytes);
        if *r == 0 {
            self.by_name.remove(name);
        }
    }

    /// `name`'s records and bytes.
    fn of(&self, name: &str) -> (u64, u64) {
        self.by_name.get(name).copied().unwrap_or((0, 0))
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("db_path", &self.file.path)
            .field("records", &self.counts.records)
            .field("bytes", &self.counts.bytes)
            .finish()
    }
}

fn spool_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Spool {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// A failure of our own file.
fn db_err(path: &Path, e: rusqlite::Error) -> Error {
    spool_err(path, format!("database: {e}"))
}

/// `db` with `suffix` appended to its name (`X.db` → `X.db-wal`).
fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name: OsString = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// Takes an exclusive `flock` without waiting: `Ok(false)` when another open file holds it.
fn try_lock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Whether `path` still names the file we hold open: a sibling may have unlinked a lock
/// file between its creation and our `flock` (see [`SqliteStore::sweep`]).
fn still_named(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Removes a file; a missing one is fine.
fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// An SQLite URI opening `path` read-write without creating it (a file that vanished must
/// not come back empty).
fn rw_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?mode=rw");
    uri
}

/// Damage SQLite reports in a file's content, as opposed to I/O trouble.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What became of one foreign file.
enum AdoptResult {
    /// Its records are ours now.
    Adopted(u64),
    /// Nothing to do: live, gone, empty, or left alone (with a warning when it matters).
    Skipped,
}

mod adopt;
mod dead;
mod file;
mod records;
mod salvage;
mod syncer;
#[cfg(test)]
mod tests;

impl SqliteStore {
    /// Creates `dir` if needed and opens a new file of our own in it, locked. Fails, naming
    /// the path, when the directory cannot be used or another store of this process has it
    /// open. Does not adopt anything: call [`SqliteStore::adopt`].
    pub fn open(dir: &Path) -> Result<SqliteStore, Error> {
        let _gate = fork_gate::hold();
        fs::create_dir_all(dir)
            .map_err(|e| spool_err(dir, format!("cannot create the directory: {e}")))?;
        let dir = fs::canonicalize(dir)
            .map_err(|e| spool_err(dir, format!("cannot resolve the directory: {e}")))?;
        let token = fastrand::u64(..);
        let pid = std::process::id();
        {
            let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
            // Entries of another pid were inherited through fork: that store is the parent's.
            open.retain(|&(_, p, _)| p == pid);
            if open.iter().any(|(d, _, _)| *d == dir) {
                return Err(spool_err(
                    &dir,
                    "already open by another client of this process (one client per spool)",
                ));
            }
            open.push((dir.clone(), pid, token));
        }
        let file =
            SpoolFile::create(dir.clone(), token).inspect_err(|_| unregister(&dir, token))?;
        Ok(SqliteStore {
            file,
            names: TenantNames::with_default_tenant(),
            counts: Counts::default(),
            last_seq: 0,
            live: HashMap::default(),
            legacy_dirs: false,
            reported: HashSet::new(),
            dead: dead::DeadState::default(),
        })
    }

    /// [`open`](Self::open) for an engine's shared spool: also adopts the per-client spools
    /// of the version before tenants from the subdirectories named after them.
    pub fn open_shared(dir: &Path) -> Result<SqliteStore, Error> {
        let mut store = SqliteStore::open(dir)?;
        store.legacy_dirs = true;
        Ok(store)
    }

    /// Closes our file. Without records left, its files are deleted; otherwise they stay,
    /// unlocked, for the next client or a live sibling to adopt.
    pub fn close(mut self) -> Result<(), Error> {
        self.file.shutdown()
    }

    /// Our own file (`DIR/outbound-<pid>-<hex>.db`).
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The lock file's descriptor: a forked child closes its inherited copy (the lock is
    /// the parent's), without touching anything else of the store.
    pub fn lock_fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.lock_fd()
    }

    /// In a forked child: forgets this store without touching SQLite (the parent still owns
    /// the file). Closes the child's copy of the lock descriptor, which leaves the parent's
    /// lock held, and leaks the connection: closing it would checkpoint the parent's file.
    // The client does the same through `lock_fd` (`Client::reset_after_fork`): its store
    // lives on the spool thread, which a forked child does not have.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn forget_after_fork(mut self) {
        self.file.forget_after_fork();
    }
}

impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path().display().to_string()
    }

    fn register(&mut self, no: TenantNo, name: &str) {
        SqliteStore::register(self, no, name);
    }

    fn release(&mut self, tenant: TenantNo) -> Result<(), Error> {
        SqliteStore::release(self, tenant)
    }

    fn lock_fd(&self) -> Option<std::os::fd::RawFd> {
        SqliteStore::lock_fd(self)
    }

    fn apply(&mut self, ops: &[Op]) -> Result<(), Error> {
        let ticket = Store::submit(self, ops);
        Store::settle(self, ticket)
    }

    fn submit(&mut self, ops: &[Op]) -> Ticket {
        Store::submit_with(self, ops, &[])
    }

    fn dead_letters(&mut self) -> Option<&mut dyn crate::durable::dead::DeadLetters> {
        Some(self)
    }

    /// The transaction (the ops, then the dead letters), then the fsync: asked of the
    /// syncer's thread when this disk's fsyncs are slow (settled when it ended), else made
    /// here (`syncer.rs`).
    fn submit_with(&mut self, ops: &[Op], dead: &[crate::durable::dead::DeadOp]) -> Ticket {
        let done = self.file.usable().and_then(|()| self.write(ops, dead));
        let syncer = self
            .file
            .syncer
            .as_ref()
            .filter(|_| done.is_ok() && !(ops.is_empty() && dead.is_empty()));
        let Some(syncer) = syncer else {
            return Ticket {
                no: 0,
                done: Some(done),
            };
        };
        if syncer.slow() {
            return Ticket {
                no: syncer.request(),
                done: None,
            };
        }
        let synced = syncer.sync_here();
        Ticket {
            no: 0,
            done: Some(self.file.fsynced(synced)),
        }
    }

    /// A commit is settled by its fsync and by no fsync having failed meanwhile: groups are
    /// settled in order, but a later group's transaction (and, in place, its fsync) may be
    /// made before an earlier group's fsync on the thread fails.
    fn settle(&mut self, ticket: Ticket) -> Result<(), Error> {
        match (ticket.done, &self.file.syncer) {
            (Some(done), _) => done.and_then(|()| self.file.usable()),
            (None, Some(syncer)) => {
                let synced = syncer.wait(ticket.no);
                self.file.fsynced(synced)
            }
            (None, None) => Err(spool_err(&self.file.path, "store is closed")),
        }
    }

    fn resumable(
        &mut self,
        tenant: TenantNo,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        SqliteStore::resumable_of(self, tenant, after, limit)
    }

    fn pending(&self, tenant: TenantNo) -> (u64, u64) {
        SqliteStore::pending_of(self, tenant)
    }

    fn adopt(&mut self) -> Result<Adopted, Error> {
        SqliteStore::adopt(self)
    }

    fn close(self: Box<Self>) -> Result<(), Error> {
        SqliteStore::close(*self)
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        let _ = self.file.shutdown();
    }
}

/// Records added to our file by one step of an adoption.
struct Moved {
    records: u64,
    /// Highest `resume_seq` in our file afterwards.
    last_seq: i64,
    /// Rows left out because a column had the wrong type.
    wrong_types: u64,
}

fn unregister(dir: &Path, token: u64) {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(d, _, t)| !(d == dir && *t == token));
}
