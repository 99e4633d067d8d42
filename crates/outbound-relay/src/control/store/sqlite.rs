//! The store of one relay: `data_dir/control.db`, SQLite (bundled, as the spool's), one
//! transaction per change.

use super::{AuditEntries, AuditQuery, Snapshot, Store, TokenRecord};
use crate::config::AuditLimits;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sources (name TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS deleted (name TEXT PRIMARY KEY, body TEXT NOT NULL, until_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at_ms INTEGER NOT NULL,
  source TEXT, source_id TEXT, entry TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_by_source ON audit (source, id);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at_ms);
INSERT OR IGNORE INTO meta (key, value) VALUES ('revision', 0);
";

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl SqliteStore {
    pub fn open(data_dir: &Path) -> Result<SqliteStore, String> {
        std::fs::create_dir_all(data_dir).map_err(err)?;
        let path = data_dir.join("control.db");
        let conn = Connection::open(&path).map_err(err)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(SqliteStore {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// Runs `f` in one transaction that bumps the revision.
    fn change(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
    ) -> Result<(), String> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction().map_err(err)?;
        f(&tx).map_err(err)?;
        (tx.prepare_cached("UPDATE meta SET value = value + 1 WHERE key = 'revision'"))
            .and_then(|mut bump| bump.execute([]))
            .map_err(err)?;
        tx.commit().map_err(err)
    }
}

impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&self) -> Result<Snapshot, String> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut snap = Snapshot {
            revision: conn
                .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(err)? as u64,
            ..Snapshot::default()
        };
        let mut rows = conn
            .prepare("SELECT name, body FROM sources")
            .map_err(err)?;
        for row in rows
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(err)?
        {
            let (name, body) = row.map_err(err)?;
            snap.sources
                .insert(name, RawValue::from_string(body).map_err(err)?);
        }
        let mut rows = conn
            .prepare("SELECT name, body, until_ms FROM deleted")
            .map_err(err)?;
        for row in rows
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .map_err(err)?
        {
            let (name, body, until) = row.map_err(err)?;
            snap.deleted.insert(
                name,
                (serde_json::from_str(&body).map_err(err)?, until as u64),
            );
        }
        let mut rows = conn.prepare("SELECT record FROM tokens").map_err(err)?;
        for row in rows.query_map([], |r| r.get::<_, String>(0)).map_err(err)? {
            let t: TokenRecord = serde_json::from_str(&row.map_err(err)?).map_err(err)?;
            snap.tokens.insert(t.id.clone(), t);
        }
        Ok(snap)
    }

    fn revision(&self) -> Result<u64, String> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.query_row("SELECT value FROM meta WHERE key = 'revision'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|v| v as u64)
        .map_err(err)
    }

    fn source(&self, name: &str) -> Result<Option<Value>, String> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let body: Option<String> = conn
            .query_row(
                "SELECT body FROM sources WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        body.map(|b| serde_json::from_str(&b).map_err(err))
            .transpose()
    }

    fn put_source(&self, name: &str, body: &RawValue) -> Result<(), String> {
        self.change(|tx| {
            // Cached: a PUT costs its commit, not parsing its statements again.
            tx.prepare_cached(
                "INSERT INTO sources (name, body) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET body = excluded.body",
            )?
            .execute(params![name, body.get()])?;
            (tx.prepare_cached("DELETE FROM deleted WHERE name = ?1")?).execute(params![name])?;
            Ok(())
        })
    }

    fn delete_source(
        &self,
        name: &str,
        tenant: &str,
        body: &Value,
        until_ms: u64,
    ) -> Result<(), String> {
        self.change(|tx| {
            tx.execute("DELETE FROM sources WHERE name = ?1", params![name])?;
            tx.execute(
                "INSERT OR REPLACE INTO deleted (name, body, until_ms) VALUES (?1, ?2, ?3)",
                params![tenant, body.to_string(), until_ms as i64],
            )?;
            let ids: Vec<String> = {
                let mut stmt = tx.prepare("SELECT id, record FROM tokens")?;
                let rows =
                    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
                rows.flatten()
                    .filter(|(_, rec)| {
                        serde_json::from_str::<TokenRecord>(rec).is_ok_and(|t| t.source == name)
                    })
                    .map(|(id, _)| id)
                    .collect()
            };
            for id in ids {
                tx.execute("DELETE FROM tokens WHERE id = ?1", params![id])?;
            }
            Ok(())
        })
    }

    fn put_token(&self, token: &TokenRecord) -> Result<(), String> {
        let record = serde_json::to_string(token).map_err(err)?;
        self.change(|tx| {
            tx.execute(
                "INSERT INTO tokens (id, record) VALUES (?1, ?2)",
                params![token.id, record],
            )?;
            Ok(())
        })
    }

    fn append_audit(&self, entry: &Value, limits: &AuditLimits) -> Result<(), String> {
        let at = entry["at_ms"].as_i64().unwrap_or(0);
        let cutoff = at.saturating_sub(limits.retention.as_millis() as i64);
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO audit (at_ms, source, source_id, entry) VALUES (?1, ?2, ?3, ?4)",
            params![
                at,
                entry["source"].as_str(),
                entry["source_id"].as_str(),
                entry.to_string()
            ],
        )
        .map_err(err)?;
        // Ids only grow: those more than `max_entries` below the newest are the oldest.
        let newest = tx.last_insert_rowid();
        tx.execute(
            "DELETE FROM audit WHERE id <= ?1 OR at_ms < ?2",
            params![newest - limits.max_entries as i64, cutoff],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    fn audit(&self, q: &AuditQuery) -> Result<Option<AuditEntries>, String> {
        let before = match &q.before {
            None => i64::MAX,
            Some(b) => match b.parse::<i64>() {
                Ok(n) => n,
                Err(_) => return Ok(None),
            },
        };
        let (source, id) = match &q.source {
            Some((s, id)) => (Some(s.as_str()), id.as_deref()),
            None => (None, None),
        };
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn
            .prepare(
                "SELECT id, entry FROM audit WHERE id < ?1 AND (?2 IS NULL OR source = ?2)
                 AND (?3 IS NULL OR source_id = ?3) ORDER BY id DESC LIMIT ?4",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![before, source, id, q.limit as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, entry) = row.map_err(err)?;
            out.push((id.to_string(), serde_json::from_str(&entry).map_err(err)?));
        }
        Ok(Some(out))
    }

    fn delete_token(&self, id: &str) -> Result<bool, String> {
        let mut found = false;
        self.change(|tx| {
            found = tx
                .query_row(
                    "SELECT 1 FROM tokens WHERE id = ?1",
                    params![id],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            tx.execute("DELETE FROM tokens WHERE id = ?1", params![id])?;
            Ok(())
        })?;
        Ok(found)
    }
}
