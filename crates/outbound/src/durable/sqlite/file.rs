//! A store's own file: `DIR/outbound-<pid>-<hex>.db` made and locked, its connection, the
//! WAL's fsync (`syncer.rs`) and the poison of a failed one, and its close (the files
//! deleted when nothing is left in them).

use super::syncer::Syncer;
use super::{db_err, dead, remove, spool_err, still_named, try_lock, unregister, with_suffix};
use super::{PAGE_SIZE, PREFIX, SCHEMA};
use crate::durable::fork_gate;
use crate::error::Error;
use rusqlite::{Connection, OpenFlags};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(super) struct SpoolFile {
    /// `None` once closed or forgotten.
    conn: Option<Connection>,
    /// The open lock file; closing it releases the `flock`.
    lock: Option<File>,
    /// Canonical directory.
    pub(super) dir: PathBuf,
    /// Our file (`DIR/outbound-<pid>-<hex>.db`).
    pub(super) path: PathBuf,
    pub(super) lock_path: PathBuf,
    /// Identifies this store in `OPEN`.
    token: u64,
    /// The WAL's fsync, on its own thread (`syncer.rs`); `None` once closed or forgotten.
    pub(super) syncer: Option<Syncer>,
    /// Why an fsync of the WAL failed, once one did: see "Durability" in `mod.rs`.
    poisoned: Option<String>,
}

impl SpoolFile {
    pub(super) fn create(dir: PathBuf, token: u64) -> Result<SpoolFile, Error> {
        let pid = std::process::id();
        // A collision or a sibling's sweep between create and flock only costs another name.
        for _ in 0..16 {
            let stem = format!("{PREFIX}{pid}-{:016x}", fastrand::u64(..));
            let lock_path = dir.join(format!("{stem}.lock"));
            let lock = match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&lock_path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(spool_err(
                        &dir,
                        format!("cannot create {}: {e}", lock_path.display()),
                    ))
                }
            };
            let locked = try_lock(&lock).map_err(|e| {
                spool_err(&dir, format!("cannot lock {}: {e}", lock_path.display()))
            })?;
            if !locked || !still_named(&lock, &lock_path) {
                continue;
            }
            let db_path = dir.join(format!("{stem}.db"));
            return match SpoolFile::create_db(&db_path) {
                Ok((conn, syncer)) => Ok(SpoolFile {
                    syncer: Some(syncer),
                    poisoned: None,
                    conn: Some(conn),
                    lock: Some(lock),
                    dir,
                    path: db_path,
                    lock_path,
                    token,
                }),
                Err(e) => {
                    for p in [
                        with_suffix(&db_path, "-wal"),
                        with_suffix(&db_path, "-shm"),
                        db_path.clone(),
                        lock_path,
                    ] {
                        let _ = remove(&p);
                    }
                    Err(e)
                }
            };
        }
        Err(spool_err(
            &dir,
            "could not create a file with a unique name",
        ))
    }

    fn create_db(db_path: &Path) -> Result<(Connection, Syncer), Error> {
        let err = |e| db_err(db_path, e);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(db_path, flags).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(1)).map_err(err)?;
        // Before WAL, which fixes it. A message's row is about 350 bytes and the file is a
        // queue (appends at one end, deletes at the other): with 4 KiB pages, deletes
        // rebalanced and rewrote pages still holding live rows, and every page cost two
        // writes in the WAL and two in a checkpoint. 16 KiB pages: 49,000 -> 9,000 writes
        // and 0.22 -> 0.15 CPU-s per 100,000 messages (`examples/spool_bench.rs`).
        conn.pragma_update(Some("main"), "page_size", PAGE_SIZE)
            .map_err(err)?;
        // Nobody else may touch our file while we live; exclusive also means no -shm.
        let _: String = conn
            .pragma_update_and_check(Some("main"), "locking_mode", "EXCLUSIVE", |r| r.get(0))
            .map_err(err)?;
        let mode: String = conn
            .pragma_update_and_check(Some("main"), "journal_mode", "WAL", |r| r.get(0))
            .map_err(err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(spool_err(
                db_path,
                format!("SQLite refused WAL mode (got {mode})"),
            ));
        }
        // NORMAL: a commit writes the WAL without an fsync; the syncer fsyncs it (on its
        // thread when fsyncs are slow, so the writer runs the next group's transaction
        // meanwhile), and a commit counts as made (`Store::settle`) only after that fsync.
        conn.pragma_update(Some("main"), "synchronous", "NORMAL")
            .map_err(err)?;
        // Statement journals (one per insert, for its UNIQUE id) in memory, not a temp file;
        // and room for a commit group's pages, so SQLite does not spill them to the WAL
        // mid-transaction: both were most of the spool thread's time. 2 MiB is 128 pages:
        // a full group's inserts (2,048 rows of ~350 bytes) take about 45. 16 MiB cost every
        // spool that much RSS once its file grew past it (a queue's file fragments) and was
        // no faster.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(err)?;
        conn.pragma_update(Some("main"), "cache_size", -2048)
            .map_err(err)?;
        // Truncate the WAL after a checkpoint that followed a burst.
        let _: i64 = conn
            .pragma_update_and_check(Some("main"), "journal_size_limit", 16 << 20, |r| r.get(0))
            .map_err(err)?;
        conn.execute_batch(&format!("BEGIN; {SCHEMA} {} COMMIT;", dead::DEAD_SCHEMA))
            .map_err(err)?;
        // The WAL exists from the schema's commit on; the syncer keeps it open.
        let wal = with_suffix(db_path, "-wal");
        let syncer = OpenOptions::new()
            .write(true)
            .open(&wal)
            .and_then(Syncer::start)
            .map_err(|e| spool_err(&wal, format!("cannot open the WAL to fsync it: {e}")))?;
        syncer.sync().map_err(|e| spool_err(&wal, e))?;
        // The new names must survive a power cut too, not only the data in them.
        if let Some(dir) = db_path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| spool_err(dir, format!("cannot sync the directory: {e}")))?;
        }
        Ok((conn, syncer))
    }

    /// Everything committed so far is on disk once this returns `Ok` (an fsync of the WAL).
    pub(super) fn durable(&mut self) -> Result<(), Error> {
        let synced = match &self.syncer {
            Some(syncer) => syncer.sync(),
            None => return Err(spool_err(&self.path, "store is closed")),
        };
        self.fsynced(synced)
    }

    /// The outcome of an fsync of the WAL. One that failed poisons the store: the frames it
    /// should have written may be gone from the disk while the page cache reports them
    /// clean, and SQLite's recovery after a power cut stops at the first bad frame, so no
    /// later commit, however well fsynced, can be called durable.
    pub(super) fn fsynced(&mut self, synced: Result<(), String>) -> Result<(), Error> {
        if let Err(why) = synced {
            self.poisoned.get_or_insert(why.clone());
            return Err(spool_err(&self.path, why));
        }
        self.usable()
    }

    /// `Err` once an fsync of the WAL failed: nothing more is written to this file.
    pub(super) fn usable(&self) -> Result<(), Error> {
        match &self.poisoned {
            None => Ok(()),
            Some(why) => Err(spool_err(
                &self.path,
                format!(
                    "not written since an fsync of the WAL failed ({why}): nothing written \
                     after it is known to survive a power cut; restart the process to open \
                     a new spool file (this one is adopted then)"
                ),
            )),
        }
    }

    pub(super) fn conn(&mut self) -> Result<&mut Connection, Error> {
        let path = &self.path;
        self.conn
            .as_mut()
            .ok_or_else(|| spool_err(path, "store is closed"))
    }

    /// The lock file's descriptor: a forked child closes its inherited copy (the lock is
    /// the parent's), without touching anything else of the store.
    pub(super) fn lock_fd(&self) -> Option<std::os::fd::RawFd> {
        self.lock.as_ref().map(|f| f.as_raw_fd())
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn shutdown(&mut self) -> Result<(), Error> {
        let _gate = fork_gate::hold();
        let Some(conn) = self.conn.take() else {
            return Ok(());
        };
        unregister(&self.dir, self.token);
        if let Err(e) = self.usable() {
            // No checkpoint: it would copy into the database file WAL frames that may have
            // been lost from the disk, read back as whatever it holds. The file is left
            // (unlocked) to recovery: the next process to open it adopts what survived.
            std::mem::forget(conn);
            self.syncer = None;
            self.lock = None;
            return Err(e);
        }
        // Dead letters are kept too: a file holding any stays for the next store.
        let empty = conn.query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM messages)
                AND NOT EXISTS (SELECT 1 FROM dead_letters)",
            [],
            |r| r.get::<_, bool>(0),
        );
        // Closing checkpoints the WAL into the database file (and fsyncs both); the syncer's
        // last fsync has ended before (dropping it waits for its thread).
        self.syncer = None;
        let closed = conn.close().map_err(|(_, e)| db_err(&self.path, e));
        let result = match (empty, closed) {
            (_, Err(e)) => Err(e),
            (Err(e), _) => Err(db_err(&self.path, e)),
            (Ok(false), Ok(())) => Ok(()),
            (Ok(true), Ok(())) => [
                self.path.clone(),
                with_suffix(&self.path, "-wal"),
                with_suffix(&self.path, "-shm"),
                self.lock_path.clone(),
            ]
            .iter()
            .try_for_each(|p| remove(p))
            .map_err(|e| spool_err(&self.path, format!("cannot delete: {e}"))),
        };
        self.lock = None; // releases the flock last
        result
    }

    /// In a forked child: forgets this store without touching SQLite (the parent still owns
    /// the file). Closes the child's copy of the lock descriptor, which leaves the parent's
    /// lock held, and leaks the connection: closing it would checkpoint the parent's file.
    // The client does the same through `lock_fd` (`Client::reset_after_fork`): its store
    // lives on the spool thread, which a forked child does not have.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) fn forget_after_fork(&mut self) {
        if let Some(conn) = self.conn.take() {
            std::mem::forget(conn);
        }
        if let Some(syncer) = self.syncer.take() {
            syncer.forget();
        }
        self.lock = None;
    }
}
