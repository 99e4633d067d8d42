//! Damaged files: what can be read is salvaged into ours, then the file is renamed aside.

use super::{
    db_err, is_busy, is_damage, remove, unix_seconds, with_suffix, AdoptResult, Moved, SqliteStore,
    COLUMNS,
};
use crate::durable::{Adopted, Record};
use crate::error::Error;
use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};
use std::fs;
use std::path::Path;
use std::time::Duration;

impl SqliteStore {
    /// An error opening or checking a foreign file: damage is quarantined; anything else
    /// (I/O, permissions, a process holding it) leaves it alone.
    pub(super) fn cannot_read(
        &mut self,
        db: &Path,
        lock_path: &Path,
        legacy: &str,
        e: rusqlite::Error,
        out: &mut Adopted,
    ) -> Result<AdoptResult, Error> {
        if is_damage(&e) {
            return self.quarantine(db, lock_path, legacy, &e.to_string(), out);
        }
        let why = if is_busy(&e) {
            format!("left alone: in use by another process ({e})")
        } else {
            format!("left alone: cannot read it: {e}")
        };
        self.report_once(out, db, why);
        Ok(AdoptResult::Skipped)
    }
    /// Salvages what can be read from a damaged file, then renames it aside.
    pub(super) fn quarantine(
        &mut self,
        db: &Path,
        lock_path: &Path,
        legacy: &str,
        reason: &str,
        out: &mut Adopted,
    ) -> Result<AdoptResult, Error> {
        let before = self.last_seq;
        let salvaged = self.salvage(db, legacy)?;
        // On disk before the file is moved aside (where nothing reads it again).
        self.file.durable()?;
        self.count_added(before, out)?;
        self.last_seq = salvaged.last_seq;
        let aside = with_suffix(db, &format!(".corrupt-{}", unix_seconds()));
        let moved = fs::rename(db, &aside);
        let _ = fs::rename(with_suffix(db, "-wal"), with_suffix(&aside, "-wal"));
        let _ = remove(&with_suffix(db, "-shm"));
        let mut text = format!("damaged ({reason}); salvaged {} records", salvaged.records);
        if salvaged.wrong_types > 0 {
            text.push_str(&format!(
                ", {} rows had columns of the wrong type",
                salvaged.wrong_types
            ));
        }
        match moved {
            Ok(()) => {
                let _ = remove(lock_path);
                text.push_str(&format!("; moved aside to {}", aside.display()));
            }
            // Left in place, it is salvaged again next time (ids stay unique).
            Err(e) => text.push_str(&format!("; could not be moved aside: {e}")),
        }
        out.warnings.push((db.to_path_buf(), text));
        Ok(if salvaged.records > 0 {
            AdoptResult::Adopted(salvaged.records)
        } else {
            AdoptResult::Skipped
        })
    }

    /// Reads what it can from a damaged file, through a connection of its own, and inserts
    /// it into ours in one transaction. Several scans (table and id order, each both ways)
    /// so one bad page costs only the rows on it.
    fn salvage(&mut self, db: &Path, legacy: &str) -> Result<Moved, Error> {
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let first_seq = self.last_seq;
        let none = Moved {
            records: 0,
            last_seq: first_seq,
            wrong_types: 0,
        };
        let open = |flags| Connection::open_with_flags(db, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX);
        let Ok(source) = open(OpenFlags::SQLITE_OPEN_READ_WRITE)
            .or_else(|_| open(OpenFlags::SQLITE_OPEN_READ_ONLY))
        else {
            return Ok(none);
        };
        let _ = source.busy_timeout(Duration::from_secs(1));
        // Lets SQLite read a file shorter than its header says (it refuses otherwise); we
        // only read.
        let _ = source.pragma_update(None, "writable_schema", "ON");
        // A damaged b-tree can point back at itself: no scan reads more rows than could fit.
        let cap = fs::metadata(db).map_or(0, |m| m.len() / 8) + 1000;
        let mut seq = first_seq;
        let mut wrong_types = 0u64;
        let conn = self.file.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        {
            let mut insert = tx
                .prepare(&format!(
                    "INSERT OR IGNORE INTO messages ({COLUMNS}, copies, resume_seq, tenant, adopted)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, 1)"
                ))
                .map_err(err)?;
            for order in ["rowid", "rowid DESC", "id", "id DESC"] {
                // A file with tenants names each row's; one from before, `legacy`.
                let with_tenant =
                    format!("SELECT {COLUMNS}, tenant FROM messages ORDER BY {order}");
                let without = format!("SELECT {COLUMNS}, ?1 FROM messages ORDER BY {order}");
                let (mut stmt, bind) = match source.prepare(&with_tenant) {
                    Ok(s) => (s, false),
                    Err(_) => match source.prepare(&without) {
                        Ok(s) => (s, true),
                        Err(_) => continue,
                    },
                };
                let rows = if bind {
                    stmt.query([legacy])
                } else {
                    stmt.query([])
                };
                let Ok(mut rows) = rows else {
                    continue;
                };
                let mut wrong = 0u64;
                let mut read = 0u64;
                // Stops at the first unreadable page; another scan reads past it.
                while let Ok(Some(row)) = rows.next() {
                    read += 1;
                    if read > cap {
                        break;
                    }
                    let (Some(r), Ok(tenant)) = (Record::from_row(row), row.get::<_, String>(7))
                    else {
                        wrong += 1;
                        continue;
                    };
                    seq += 1;
                    insert
                        .execute(params![
                            &*r.id,
                            r.accepted_ms,
                            r.first_ms,
                            r.ingest.as_deref(),
                            r.hook.as_deref(),
                            r.hook_mask,
                            r.hooks_key as i64,
                            seq,
                            tenant
                        ])
                        .map_err(err)?;
                }
                wrong_types = wrong_types.max(wrong);
            }
        }
        let added = SqliteStore::added_since(&tx, first_seq).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Moved {
            wrong_types,
            ..added
        })
    }
}
