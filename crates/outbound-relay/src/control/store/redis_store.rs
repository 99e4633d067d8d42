//! The store of a fleet: the relay's Redis (`spool = "redis://…"`), under the fleet's prefix
//! `P`: hashes `P:control:sources`, `P:control:deleted`, `P:control:tokens` and the counter
//! `P:control:revision`, each change one MULTI/EXEC. Every relay of the fleet reads the
//! revision every `POLL` and loads the whole state when it moved, so a source made at one
//! relay takes events at every other within a second.

use super::{Snapshot, Store, TokenRecord};
use redis::Commands;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

type Hash = HashMap<String, String>;

pub struct RedisStore {
    client: redis::Client,
    shown: String,
    keys: [String; 4],
    conn: Mutex<Option<redis::Connection>>,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl RedisStore {
    /// The store on the fleet's Redis `url` (`redis://` or `rediss://`, `?prefix=P`).
    pub fn open(url: &str) -> Result<RedisStore, String> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut prefix = crate::config::file::DEFAULT_REDIS_PREFIX.to_string();
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.strip_prefix("prefix=") {
                Some(p) => prefix = p.to_string(),
                None => rest.push(pair),
            }
        }
        let url = match rest.is_empty() {
            true => base.to_string(),
            false => format!("{base}?{}", rest.join("&")),
        };
        let client = redis::Client::open(url.as_str()).map_err(err)?;
        let host = client.get_connection_info().addr.to_string();
        let k = |s: &str| format!("{prefix}:control:{s}");
        Ok(RedisStore {
            client,
            shown: format!("redis {host} prefix {prefix}"),
            keys: [k("sources"), k("deleted"), k("tokens"), k("revision")],
            conn: Mutex::new(None),
        })
    }

    /// Runs `f` on the connection (made again after an error).
    fn with<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, String> {
        let mut slot = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let conn = self
                .client
                .get_connection_with_timeout(Duration::from_secs(2))
                .map_err(err)?;
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
            *slot = Some(conn);
        }
        let result = f(slot.as_mut().expect("made above"));
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
        for (name, body) in s {
            snap.sources
                .insert(name, serde_json::from_str(&body).map_err(err)?);
        }
        for (name, entry) in d {
            let v: Value = serde_json::from_str(&entry).map_err(err)?;
            let until = v["until_ms"].as_u64().unwrap_or(0);
            snap.deleted.insert(name, (v["body"].clone(), until));
        }
        for (id, record) in t {
            snap.tokens
                .insert(id, serde_json::from_str(&record).map_err(err)?);
        }
        Ok(snap)
    }

    fn revision(&self) -> Result<u64, String> {
        let key = &self.keys[3];
        self.with(|c| c.get::<_, Option<u64>>(key))
            .map(|r| r.unwrap_or(0))
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

    fn delete_source(&self, name: &str, body: &Value, until_ms: u64) -> Result<(), String> {
        let [sources, deleted, tokens, revision] = &self.keys;
        let all: HashMap<String, String> = self.with(|c| c.hgetall(tokens))?;
        let ids: Vec<&String> = (all.iter())
            .filter(|(_, r)| serde_json::from_str::<TokenRecord>(r).is_ok_and(|t| t.source == name))
            .map(|(id, _)| id)
            .collect();
        let entry = serde_json::json!({"body": body, "until_ms": until_ms}).to_string();
        self.with(|c| {
            let mut p = redis::pipe();
            p.atomic().hdel(sources, name).hset(deleted, name, entry);
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
