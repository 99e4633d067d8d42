//! Adoption: the files of dead owners moved into ours, one transaction per file.

use super::{
    db_err, is_damage, remove, rw_uri, spool_err, still_named, try_lock, with_suffix, AdoptResult,
    Moved, SqliteStore, COLUMNS, PREFIX, ROW_BYTES, SCHEMA_VERSION, VALID,
};
use crate::durable::{fork_gate, Adopted};
use crate::error::Error;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::{fs, io};

impl SqliteStore {
    /// Moves the records of every file in the directory whose owner is gone into our file,
    /// one transaction per file, then deletes that file. Damaged files are salvaged and
    /// quarantined; files of a newer schema and files another process holds are left alone.
    /// Errors only when our own file fails (disk full, ...), or the directory cannot be read.
    pub fn adopt(&mut self) -> Result<Adopted, Error> {
        let _gate = fork_gate::hold();
        self.file.usable()?;
        let mut out = Adopted::default();
        // The directory itself, and for an engine's shared spool the per-client spools of
        // the version before tenants, one subdirectory per client (its tenant's name).
        let mut places: Vec<(PathBuf, Arc<str>)> = vec![(self.file.dir.clone(), Arc::from(""))];
        if self.legacy_dirs {
            let entries = fs::read_dir(&self.file.dir).map_err(|e| {
                spool_err(&self.file.dir, format!("cannot list the directory: {e}"))
            })?;
            for entry in entries.flatten() {
                let name = entry.file_name();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if let (true, Some(name)) = (is_dir, name.to_str()) {
                    places.push((entry.path(), Arc::from(name)));
                }
            }
        }
        let start = self.last_seq;
        for (dir, legacy) in places {
            let entries = fs::read_dir(&dir)
                .map_err(|e| spool_err(&dir, format!("cannot list the directory: {e}")))?;
            let (mut dbs, mut locks) = (Vec::new(), Vec::new());
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if !name.starts_with(PREFIX) {
                    continue;
                }
                if name.ends_with(".db") {
                    dbs.push(entry.path());
                } else if name.ends_with(".lock") {
                    locks.push(entry.path());
                }
            }
            dbs.sort();
            for db in dbs {
                if db == self.file.path {
                    continue;
                }
                if let AdoptResult::Adopted(n) = self.adopt_file(&db, &legacy, &mut out)? {
                    out.records += n;
                    out.files += 1;
                }
            }
            for lock in locks {
                if lock != self.file.lock_path && !lock.with_extension("db").exists() {
                    self.sweep(&lock);
                }
            }
        }
        if out.records > 0 {
            self.resequence(start)?;
        }
        out.tenants.sort_unstable();
        out.tenants.dedup();
        Ok(out)
    }

    /// Counts the records a step of an adoption added (those with a `resume_seq` above
    /// `since`), per tenant, and notes the registered tenants among them in `out`.
    pub(super) fn count_added(&mut self, since: i64, out: &mut Adopted) -> Result<(), Error> {
        let path = self.file.path.clone();
        let conn = self.file.conn()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT tenant, count(*), coalesce(sum({ROW_BYTES}), 0) FROM messages
                 WHERE resume_seq > ?1 GROUP BY tenant"
            ))
            .map_err(|e| db_err(&path, e))?;
        let added: Vec<(String, i64, i64)> = stmt
            .query_map([since], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| db_err(&path, e))?;
        drop(stmt);
        for (name, records, bytes) in added {
            if let Some(no) = self.names.number_of(&name) {
                out.tenants.push(no);
            }
            self.counts.count(&Arc::from(name), records, bytes);
        }
        Ok(())
    }

    /// Takes over one foreign `.db` if its owner is gone; `legacy` names the tenant of a
    /// file written before tenants.
    fn adopt_file(
        &mut self,
        db: &Path,
        legacy: &str,
        out: &mut Adopted,
    ) -> Result<AdoptResult, Error> {
        let lock_path = db.with_extension("lock");
        // A missing lock file means a dead owner; creating it keeps concurrent adopters out.
        let lock = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
        {
            Ok(f) => f,
            Err(e) => {
                self.report_once(
                    out,
                    db,
                    format!("left alone: cannot open its lock file: {e}"),
                );
                return Ok(AdoptResult::Skipped);
            }
        };
        match try_lock(&lock) {
            Ok(true) => {}
            Ok(false) => return Ok(AdoptResult::Skipped), // a live owner
            Err(e) => {
                self.report_once(
                    out,
                    db,
                    format!("left alone: cannot lock its lock file: {e}"),
                );
                return Ok(AdoptResult::Skipped);
            }
        }
        if !still_named(&lock, &lock_path) {
            return Ok(AdoptResult::Skipped); // another adopter finished with it meanwhile
        }
        let wal = with_suffix(db, "-wal");
        let len = |p: &Path| fs::metadata(p).map(|m| m.len());
        match len(db) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let _ = remove(&lock_path);
                return Ok(AdoptResult::Skipped);
            }
            // Created but never written (its owner died while opening): nothing to keep.
            Ok(0) if len(&wal).unwrap_or(0) == 0 => {
                self.delete_files(db, &lock_path, out);
                return Ok(AdoptResult::Skipped);
            }
            _ => {}
        }
        let fate = self.adopt_locked(db, &lock_path, legacy, out);
        drop(lock); // releases the flock, after the files are gone
        fate
    }

    /// [`SqliteStore::adopt_file`] once we hold the file's lock.
    fn adopt_locked(
        &mut self,
        db: &Path,
        lock_path: &Path,
        legacy: &str,
        out: &mut Adopted,
    ) -> Result<AdoptResult, Error> {
        let last_seq = self.last_seq;
        let dead_seq = self.dead.last_seq;
        let conn = self.file.conn()?;
        let step = match conn.execute("ATTACH DATABASE ?1 AS dead", [rw_uri(db)]) {
            Err(e) => Step::Unreadable(e),
            Ok(_) => {
                let step = match SqliteStore::check_dead(conn) {
                    Ok(Check::Good(version)) => {
                        match SqliteStore::move_rows(conn, (last_seq, dead_seq), version, legacy) {
                            Ok(moved) => Step::Moved(moved),
                            Err(e) if is_damage(&e) => Step::Damaged(e.to_string()),
                            Err(e) => Step::OwnFailure(e), // our file (disk full, ...)
                        }
                    }
                    Ok(Check::Empty) => Step::Empty,
                    Ok(Check::Newer(v)) => Step::Newer(v),
                    Ok(Check::Bad(reason)) => Step::Damaged(reason),
                    Err(e) => Step::Unreadable(e),
                };
                let _ = conn.execute("DETACH DATABASE dead", []);
                step
            }
        };
        match step {
            Step::Moved(m) => {
                // The rows we took must be on disk before the file that held them is gone.
                self.file.durable()?;
                self.count_added(last_seq, out)?;
                self.last_seq = m.last_seq;
                // The next file's replays are marked after this one's.
                self.recount_dead()?;
                if m.wrong_types > 0 {
                    out.warnings.push((
                        db.to_path_buf(),
                        format!(
                            "{} records with columns of the wrong type could not be adopted",
                            m.wrong_types
                        ),
                    ));
                }
                self.delete_files(db, lock_path, out);
                Ok(AdoptResult::Adopted(m.records))
            }
            Step::Empty => {
                self.delete_files(db, lock_path, out);
                Ok(AdoptResult::Skipped)
            }
            Step::Newer(v) => {
                self.report_once(
                    out,
                    db,
                    format!("left alone: written by a newer outbound (spool schema {v})"),
                );
                Ok(AdoptResult::Skipped)
            }
            Step::Damaged(reason) => self.quarantine(db, lock_path, legacy, &reason, out),
            Step::Unreadable(e) => self.cannot_read(db, lock_path, legacy, e, out),
            Step::OwnFailure(e) => Err(db_err(&self.file.path, e)),
        }
    }

    /// Looks at the attached `dead` database before anything is moved.
    fn check_dead(conn: &Connection) -> rusqlite::Result<Check> {
        let verdict: String = conn.query_row("PRAGMA dead.quick_check(1)", [], |r| r.get(0))?;
        if verdict != "ok" {
            // One line for the log: "*** in database dead ***\nTree 4 page 54: ..."
            let verdict = verdict.replace("*** in database dead ***", "");
            let verdict = verdict.split_whitespace().collect::<Vec<_>>().join(" ");
            return Ok(Check::Bad(format!("quick_check: {verdict}")));
        }
        let tables: i64 =
            conn.query_row("SELECT count(*) FROM dead.sqlite_master", [], |r| r.get(0))?;
        if tables == 0 {
            return Ok(Check::Empty);
        }
        let version = conn
            .query_row(
                "SELECT value FROM dead.meta WHERE key = 'schema'",
                [],
                |r| r.get::<_, rusqlite::types::Value>(0),
            )
            .optional();
        let version = match version {
            Ok(Some(rusqlite::types::Value::Integer(v @ 1..=SCHEMA_VERSION))) => v,
            Ok(Some(rusqlite::types::Value::Integer(v))) if v > SCHEMA_VERSION => {
                return Ok(Check::Newer(v))
            }
            Ok(v) => {
                return Ok(Check::Bad(format!(
                    "not an outbound spool (schema version {v:?})"
                )))
            }
            Err(e) if is_damage(&e) => return Err(e),
            Err(e) => return Ok(Check::Bad(format!("not an outbound spool: {e}"))),
        };
        let columns = match version {
            1 => COLUMNS.to_string(),
            _ => format!("tenant, {COLUMNS}"),
        };
        let mut tables = vec![format!("SELECT {columns} FROM dead.messages")];
        if version >= 3 {
            tables.push("SELECT tenant, id, body, replay_seq FROM dead.dead_letters".into());
        }
        for sql in tables {
            if let Err(e) = conn.prepare(&sql) {
                if is_damage(&e) {
                    return Err(e);
                }
                return Ok(Check::Bad(format!("not an outbound spool: {e}")));
            }
        }
        Ok(Check::Good(version))
    }

    /// Copies the attached `dead` file's valid rows into ours in one transaction: a file
    /// of schema 1 (before tenants) as tenant `legacy`'s.
    fn move_rows(
        conn: &mut Connection,
        (last_seq, dead_seq): (i64, i64),
        version: i64,
        legacy: &str,
    ) -> rusqlite::Result<Moved> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // A client's own spool kept its records under `""`: in a subdirectory of an
        // engine's spool (`legacy`), they are that tenant's.
        let (tenant, valid) = match version {
            1 => ("?2".to_string(), VALID.to_string()),
            _ => (
                "CASE WHEN tenant = '' THEN ?2 ELSE tenant END".to_string(),
                format!("{VALID} AND typeof(tenant) = 'text'"),
            ),
        };
        let wrong_types: i64 = tx.query_row(
            &format!("SELECT count(*) FROM dead.messages WHERE NOT ({valid})"),
            [],
            |r| r.get(0),
        )?;
        // OR IGNORE: an id a tenant holds already (re-adoption after a crash mid-adoption,
        // or the same id in two files) is kept once.
        let sql = format!(
            "INSERT OR IGNORE INTO main.messages (tenant, {COLUMNS}, copies, resume_seq, adopted)
             SELECT {tenant}, {COLUMNS}, 1, ?1 + row_number() OVER (ORDER BY accepted_ms, id), 1
             FROM dead.messages WHERE {valid} ORDER BY accepted_ms, id"
        );
        tx.execute(&sql, params![last_seq, legacy])?;
        if version >= 3 {
            SqliteStore::move_dead_letters(&tx, dead_seq)?;
        }
        let moved = SqliteStore::added_since(&tx, last_seq)?;
        tx.commit()?;
        Ok(Moved {
            wrong_types: wrong_types as u64,
            ..moved
        })
    }

    /// The records whose `resume_seq` is above `last_seq`: all added by the current step.
    pub(super) fn added_since(conn: &Connection, last_seq: i64) -> rusqlite::Result<Moved> {
        conn.query_row(
            "SELECT count(*), 0, coalesce(max(resume_seq), ?1)
             FROM main.messages WHERE resume_seq > ?1",
            [last_seq],
            |r| {
                Ok(Moved {
                    records: r.get::<_, i64>(0)? as u64,
                    last_seq: r.get(2)?,
                    wrong_types: 0,
                })
            },
        )
    }

    /// Renumbers the records adopted since `start` in acceptance order across all the files
    /// of one pass (each file's rows came in one block).
    fn resequence(&mut self, start: i64) -> Result<(), Error> {
        let path = self.file.path.clone();
        let conn = self.file.conn()?;
        conn.execute(
            "UPDATE messages SET resume_seq = r.n
             FROM (SELECT rowid AS k, ?1 + row_number() OVER (ORDER BY accepted_ms, id) AS n
                   FROM messages WHERE resume_seq > ?1) AS r
             WHERE messages.rowid = r.k",
            [start],
        )
        .map_err(|e| db_err(&path, e))?;
        self.last_seq = SqliteStore::added_since(conn, start)
            .map_err(|e| db_err(&path, e))?
            .last_seq;
        Ok(())
    }

    /// Deletes an adopted or empty file: the database first (what makes it adoptable), the
    /// lock file last (our flock keeps siblings away until then).
    fn delete_files(&mut self, db: &Path, lock_path: &Path, out: &mut Adopted) {
        for p in [
            db.to_path_buf(),
            with_suffix(db, "-wal"),
            with_suffix(db, "-shm"),
            lock_path.to_path_buf(),
        ] {
            if let Err(e) = remove(&p) {
                out.warnings
                    .push((p.clone(), format!("adopted, but could not be deleted: {e}")));
            }
        }
    }

    /// Removes a lock file (and stray `-wal`/`-shm`) left without its database by a crash
    /// while deleting. A store being opened checks its lock file still has its name after
    /// locking it, so removing one between its creation and its flock is harmless.
    fn sweep(&mut self, lock_path: &Path) {
        let Ok(lock) = OpenOptions::new().read(true).write(true).open(lock_path) else {
            return;
        };
        if !matches!(try_lock(&lock), Ok(true)) || !still_named(&lock, lock_path) {
            return;
        }
        let db = lock_path.with_extension("db");
        if db.exists() {
            return; // created since we listed the directory
        }
        let _ = remove(&with_suffix(&db, "-wal"));
        let _ = remove(&with_suffix(&db, "-shm"));
        let _ = remove(lock_path);
    }

    pub(super) fn report_once(&mut self, out: &mut Adopted, db: &Path, why: String) {
        if self.reported.insert(db.to_path_buf()) {
            out.warnings.push((db.to_path_buf(), why));
        }
    }
}

/// Where [`SqliteStore::adopt_locked`] got to with a file.
enum Step {
    Moved(Moved),
    Empty,
    Newer(i64),
    Damaged(String),
    Unreadable(rusqlite::Error),
    OwnFailure(rusqlite::Error),
}

/// What [`SqliteStore::check_dead`] found.
enum Check {
    /// A spool of this schema version (or an older one this code reads).
    Good(i64),
    /// No tables at all: a file whose owner died while creating it.
    Empty,
    Newer(i64),
    Bad(String),
}
