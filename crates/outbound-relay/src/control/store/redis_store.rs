//! The store of a fleet: the relay's Redis (`spool = "redis://…"`, or through Sentinel
//! `redis+sentinel://…`: the primary the Sentinels name, asked again at each connection, so
//! a failover is followed as the spool follows it), under the fleet's prefix `P`: hashes
//! `P:control:sources`, `P:control:deleted`, `P:control:tokens` and the counter
//! `P:control:revision`, each change one MULTI/EXEC. Every relay of the fleet reads the
//! revision every `POLL` and loads the whole state when it moved, so a source made at one
//! relay takes events at every other within a second.

use super::{AuditEntries, AuditQuery, Snapshot, Store, TokenRecord};
use crate::config::AuditLimits;
use outbound::FleetRedis;
use redis::Commands;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

type Hash = HashMap<String, String>;

/// Each round trip's bound, and a connection's.
const TIMEOUT: Duration = Duration::from_secs(2);

pub struct RedisStore {
    shown: String,
    keys: [String; 4],
    /// The audit trail: a stream (`P:control:audit`), each entry one field `e`.
    audit: String,
    /// How to reach the server, and the connection made (again after an error).
    conn: Mutex<(FleetRedis, Option<redis::Connection>)>,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Field `field` of hash `key` read as JSON; `None`, logged, when it cannot be.
fn readable<T: serde::de::DeserializeOwned>(key: &str, field: &str, text: &str) -> Option<T> {
    match serde_json::from_str(text) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::error!("admin API store: {key} {field:?} cannot be read, skipped: {e}");
            None
        }
    }
}

impl RedisStore {
    /// The store on the fleet's Redis `url` (a `spool` URL: `redis://`, `rediss://`,
    /// `redis+sentinel://`, `rediss+sentinel://`; `?prefix=P`).
    pub fn open(url: &str) -> Result<RedisStore, String> {
        let prefix = crate::config::file::fleet_prefix(url);
        let fleet = FleetRedis::open(url).map_err(err)?;
        let k = |s: &str| format!("{prefix}:control:{s}");
        Ok(RedisStore {
            shown: format!("redis {} prefix {prefix}", fleet.location()),
            keys: [k("sources"), k("deleted"), k("tokens"), k("revision")],
            audit: k("audit"),
            conn: Mutex::new((fleet, None)),
        })
    }

    /// Runs `f` on the connection (made again after an error).
    fn with<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, String> {
        let mut held = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let (fleet, slot) = &mut *held;
        let conn = match slot {
            Some(conn) => conn,
            None => slot.insert(fleet.connect(TIMEOUT).map_err(err)?),
        };
        let result = f(conn);
        if result.is_err() {
            *slot = None;
        }
        result.map_err(err)
    }
}

impl Store for RedisStore {
    fn location(&self) -> String {
        self.shown.clone()
    }

    fn load(&self) -> Result<Snapshot, String> {
        let [sources, deleted, tokens, revision] = &self.keys;
        let (s, d, t, rev): (Hash, Hash, Hash, Option<u64>) = self.with(|c| {
            redis::pipe()
                .atomic()
                .hgetall(sources)
                .hgetall(deleted)
                .hgetall(tokens)
                .get(revision)
                .query(c)
        })?;
        let mut snap = Snapshot {
            revision: rev.unwrap_or(0),
            ..Snapshot::default()
        };
        // Every relay of the fleet (of any version, or an operator by hand) writes here: an
        // entry that cannot be read is skipped and logged, so the others are still served
        // and still followed (the SQLite store is this relay's alone).
        for (name, body) in s {
            if let Some(v) = readable(sources, &name, &body) {
                snap.sources.insert(name, v);
            }
        }
        for (name, entry) in d {
            if let Some(v) = readable::<Value>(deleted, &name, &entry) {
                let until = v["until_ms"].as_u64().unwrap_or(0);
                snap.deleted.insert(name, (v["body"].clone(), until));
            }
        }
        for (id, record) in t {
            if let Some(t) = readable(tokens, &id, &record) {
                snap.tokens.insert(id, t);
            }
        }
        Ok(snap)
    }

    fn revision(&self) -> Result<u64, String> {
        let key = &self.keys[3];
        self.with(|c| c.get::<_, Option<u64>>(key))
            .map(|r| r.unwrap_or(0))
    }

    fn source(&self, name: &str) -> Result<Option<Value>, String> {
        let key = &self.keys[0];
        let body: Option<String> = self.with(|c| c.hget(key, name))?;
        body.map(|b| serde_json::from_str(&b).map_err(err))
            .transpose()
    }

    fn put_source(&self, name: &str, body: &Value) -> Result<(), String> {
        let [sources, deleted, _, revision] = &self.keys;
        self.with(|c| {
            redis::pipe()
                .atomic()
                .hset(sources, name, body.to_string())
                .hdel(deleted, name)
                .incr(revision, 1)
                .query::<()>(c)
        })
    }

    fn delete_source(
        &self,
        name: &str,
        tenant: &str,
        body: &Value,
        until_ms: u64,
    ) -> Result<(), String> {
        let [sources, deleted, tokens, revision] = &self.keys;
        let all: HashMap<String, String> = self.with(|c| c.hgetall(tokens))?;
        let ids: Vec<&String> = (all.iter())
            .filter(|(_, r)| serde_json::from_str::<TokenRecord>(r).is_ok_and(|t| t.source == name))
            .map(|(id, _)| id)
            .collect();
        let entry = serde_json::json!({"body": body, "until_ms": until_ms}).to_string();
        self.with(|c| {
            let mut p = redis::pipe();
            p.atomic().hdel(sources, name).hset(deleted, tenant, entry);
            for id in &ids {
                p.hdel(tokens, *id);
            }
            p.incr(revision, 1).query::<()>(c)
        })
    }

    fn put_token(&self, token: &TokenRecord) -> Result<(), String> {
        let [_, _, tokens, revision] = &self.keys;
        let record = serde_json::to_string(token).map_err(err)?;
        self.with(|c| {
            redis::pipe()
                .atomic()
                .hset(tokens, &token.id, record)
                .incr(revision, 1)
                .query::<()>(c)
        })
    }

    fn append_audit(&self, entry: &Value, limits: &AuditLimits) -> Result<(), String> {
        let at = entry["at_ms"].as_u64().unwrap_or(0);
        let cutoff = at.saturating_sub(limits.retention.as_millis() as u64);
        let key = &self.audit;
        self.with(|c| {
            redis::pipe()
                .cmd("XADD")
                .arg(key)
                .arg("MAXLEN")
                .arg("=")
                .arg(limits.max_entries)
                .arg("*")
                .arg("e")
                .arg(entry.to_string())
                .ignore()
                .cmd("XTRIM")
                .arg(key)
                .arg("MINID")
                .arg("=")
                .arg(cutoff)
                .ignore()
                .query::<()>(c)
        })
    }

    fn audit(&self, q: &AuditQuery) -> Result<Option<AuditEntries>, String> {
        let valid = |id: &str| {
            let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
            ms.parse::<u64>().is_ok() && seq.parse::<u64>().is_ok()
        };
        let mut end = match &q.before {
            None => "+".to_string(),
            Some(b) if valid(b) => format!("({b}"),
            Some(_) => return Ok(None),
        };
        // Filtered by source in the relay: chunks of the stream until the page is full (the
        // trail is bounded, so is the walk).
        let chunk = (q.limit * 4).clamp(64, 1024);
        let mut out = Vec::new();
        loop {
            type Entry = (String, HashMap<String, String>);
            let page: Vec<Entry> = self.with(|c| {
                redis::cmd("XREVRANGE")
                    .arg(&self.audit)
                    .arg(&end)
                    .arg("-")
                    .arg("COUNT")
                    .arg(chunk)
                    .query(c)
            })?;
            let full = page.len() == chunk;
            for (id, fields) in &page {
                let Some(v) = fields
                    .get("e")
                    .and_then(|e| readable::<Value>(&self.audit, id, e))
                else {
                    continue;
                };
                let mine = q.source.as_ref().is_none_or(|(name, sid)| {
                    v["source"].as_str() == Some(name)
                        && sid
                            .as_ref()
                            .is_none_or(|s| v["source_id"].as_str() == Some(s))
                });
                if mine {
                    out.push((id.clone(), v));
                    if out.len() == q.limit {
                        return Ok(Some(out));
                    }
                }
            }
            match (full, page.last()) {
                (true, Some((last, _))) => end = format!("({last}"),
                _ => return Ok(Some(out)),
            }
        }
    }

    fn delete_token(&self, id: &str) -> Result<bool, String> {
        let [_, _, tokens, revision] = &self.keys;
        let (gone, _): (u64, u64) = self.with(|c| {
            redis::pipe()
                .atomic()
                .hdel(tokens, id)
                .incr(revision, 1)
                .query(c)
        })?;
        Ok(gone > 0)
    }
}
