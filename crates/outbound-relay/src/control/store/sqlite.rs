//! The store of one relay: `data_dir/control.db`, SQLite (bundled, as the spool's), one
//! transaction per change.

use super::{Snapshot, Store, TokenRecord};
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
