//! The store of a fleet: the relay's Redis (`spool = "redis://…"`, or through Sentinel
//! `redis+sentinel://…`: the primary the Sentinels name, asked again at each connection, so
//! a failover is followed as the spool follows it), under the fleet's prefix `P`: hashes
//! `P:control:sources`, `P:control:deleted`, `P:control:tokens` and the counter
//! `P:control:revision`, each change one MULTI/EXEC. Each change also names the entries it
//! touched in the log `P:control:log` (a stream, its last [`LOG_KEEP`] entries) and counts
//! itself in `P:control:logged`. Every relay of the fleet reads the revision every `POLL`
//! and, when it moved, reads the log from where it was and then only the entries it names,
//! so a source made at one relay takes events at every other within a second, whatever the
//! number of sources. When the log cannot tell (a relay further behind than the log keeps,
//! or a change made by a relay that writes no log: the revision moved more than the log),
//! it loads the whole state.

use super::{
    AuditEntries, AuditQuery, Body, Changes, Delta, LogMark, Snapshot, Store, TokenRecord,
};
use crate::config::AuditLimits;
use outbound::FleetRedis;
use redis::Commands;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

type Hash = HashMap<String, String>;

/// Each round trip's bound, and a connection's.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Entries the log of changes keeps (about: trimmed as Redis finds cheap).
pub const LOG_KEEP: usize = 10_000;

/// What a log entry names: a source (by name), a deletion (by tenant), a token (by id).
const SOURCE: &str = "s";
const DELETED: &str = "d";
const TOKEN: &str = "t";
/// The relay that wrote the entry (its changes are applied where they are made).
const BY: &str = "by";

/// Entries of the log as XRANGE gives them: id, then field and value in turn.
type Entries = Vec<(String, Vec<String>)>;

pub struct RedisStore {
    shown: String,
    keys: [String; 6],
    /// The audit trail: a stream (`P:control:audit`), each entry one field `e`.
    audit: String,
    /// This relay's name in the log, drawn at each start.
    me: String,
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
        let me = crate::control::tokens::random_hex(8).map_err(err)?;
        Ok(RedisStore {
            shown: format!("redis {} prefix {prefix}", fleet.location()),
            keys: [
                k("sources"),
                k("deleted"),
                k("tokens"),
                k("revision"),
                k("log"),
                k("logged"),
            ],
            audit: k("audit"),
            me,
            conn: Mutex::new((fleet, None)),
        })
    }

    /// Adds to `p` (a change's MULTI) its log entry, naming what it touches: (kind, key).
    fn log(&self, p: &mut redis::Pipeline, touched: &[(&str, &str)]) {
        let [.., log, logged] = &self.keys;
        let cmd = p.cmd("XADD").arg(log).arg("MAXLEN").arg("~").arg(LOG_KEEP);
        cmd.arg("*").arg(BY).arg(&self.me);
        for (kind, key) in touched {
            cmd.arg(*kind).arg(*key);
        }
        cmd.ignore().incr(logged, 1).ignore();
    }

    /// The entries the log names, as the store has them now; those this relay wrote are
    /// left out (applied when made).
    fn read_named(&self, entries: &Entries, revision: u64, log: LogMark) -> Result<Delta, String> {
        let [sources, deleted, tokens, ..] = &self.keys;
        let mut named: [Vec<&str>; 3] = Default::default();
        for (_, fields) in entries {
            let pairs: Vec<(&str, &str)> = (fields.chunks_exact(2))
                .map(|kv| (kv[0].as_str(), kv[1].as_str()))
                .collect();
            if pairs.contains(&(BY, self.me.as_str())) {
                continue;
            }
            for (kind, key) in pairs {
                let at = match kind {
                    SOURCE => 0,
                    DELETED => 1,
                    TOKEN => 2,
                    _ => continue,
                };
                if !named[at].contains(&key) {
                    named[at].push(key);
                }
            }
        }
        let mut delta = Delta {
            revision,
            log,
            ..Delta::default()
        };
        if named.iter().all(Vec::is_empty) {
            return Ok(delta);
        }
        let mut p = redis::pipe();
        for (key, fields) in [sources, deleted, tokens].into_iter().zip(&named) {
            // HMGET of no field is an error: for none, a field no entry has.
            let ask = match fields.is_empty() {
                true => vec!["\0"],
                false => fields.clone(),
            };
            p.cmd("HMGET").arg(key).arg(ask);
        }
        type Fields = Vec<Option<String>>;
        let (s, d, t): (Fields, Fields, Fields) = self.with(|c| p.query(c))?;
        delta.sources = (named[0].iter().zip(s))
            .map(|(name, body)| {
                let body = body.and_then(|b| readable::<Body>(sources, name, &b));
                (name.to_string(), body)
            })
            .collect();
        delta.deleted = (named[1].iter().zip(d))
            .map(|(tenant, entry)| {
                let entry = entry.and_then(|e| readable::<Value>(deleted, tenant, &e));
                let entry = entry.map(|v| (v["body"].clone(), v["until_ms"].as_u64().unwrap_or(0)));
                (tenant.to_string(), entry)
            })
            .collect();
        delta.tokens = (named[2].iter().zip(t))
            .map(|(id, record)| {
                let record = record.and_then(|r| readable::<TokenRecord>(tokens, id, &r));
                (id.to_string(), record)
            })
            .collect();
        Ok(delta)
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
        let [sources, deleted, tokens, revision, log, logged] = &self.keys;
        type Read = (Hash, Hash, Hash, Option<u64>, Option<u64>, Entries);
        let (s, d, t, rev, n, last): Read = self.with(|c| {
            redis::pipe()
                .atomic()
                .hgetall(sources)
                .hgetall(deleted)
                .hgetall(tokens)
                .get(revision)
                .get(logged)
                .cmd("XREVRANGE")
                .arg(log)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query(c)
        })?;
        let mut snap = Snapshot {
            revision: rev.unwrap_or(0),
            log: LogMark {
                logged: n.unwrap_or(0),
                last: last
                    .into_iter()
                    .next()
                    .map(|(id, _)| id)
                    .unwrap_or_default(),
            },
            ..Snapshot::default()
        };
        // Every relay of the fleet (of any version, or an operator by hand) writes here: an
        // entry that cannot be read is skipped and logged, so the others are still served
        // and still followed (the SQLite store is this relay's alone).
        for (name, body) in s {
            if let Some(v) = readable::<Body>(sources, &name, &body) {
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

    fn changes(&self, held: u64, mark: &LogMark) -> Result<Changes, String> {
        let [.., revision, log, logged] = &self.keys;
        let from = match mark.last.is_empty() {
            true => "-".to_string(),
            false => format!("({}", mark.last),
        };
        let (rev, n, entries): (Option<u64>, Option<u64>, Entries) = self.with(|c| {
            redis::pipe()
                .atomic()
                .get(revision)
                .get(logged)
                .cmd("XRANGE")
                .arg(log)
                .arg(&from)
                .arg("+")
                .arg("COUNT")
                .arg(LOG_KEEP + 1)
                .query(c)
        })?;
        let (rev, n) = (rev.unwrap_or(0), n.unwrap_or(0));
        if rev == held {
            return Ok(Changes::None);
        }
        // Every change since is in the log, and the log holds each of them.
        let moved = rev.checked_sub(held);
        let logged_since = n.checked_sub(mark.logged);
        if moved.is_none() || moved != logged_since || logged_since != Some(entries.len() as u64) {
            return self.load().map(Changes::All);
        }
        let last = entries.last().map(|(id, _)| id.clone()).unwrap_or_default();
        let mark = LogMark { logged: n, last };
        self.read_named(&entries, rev, mark).map(Changes::Some)
    }

    fn put_source(&self, name: &str, body: &RawValue) -> Result<(), String> {
        let [sources, deleted, _, revision, ..] = &self.keys;
        let mut p = redis::pipe();
        p.atomic()
            .hset(sources, name, body.get())
            .hdel(deleted, name)
            .incr(revision, 1);
        self.log(&mut p, &[(SOURCE, name), (DELETED, name)]);
        self.with(|c| p.query::<()>(c))
    }

    fn delete_source(
        &self,
        name: &str,
        tenant: &str,
        body: &Value,
        until_ms: u64,
    ) -> Result<(), String> {
        let [sources, deleted, tokens, revision, ..] = &self.keys;
        let all: HashMap<String, String> = self.with(|c| c.hgetall(tokens))?;
        let ids: Vec<&String> = (all.iter())
            .filter(|(_, r)| serde_json::from_str::<TokenRecord>(r).is_ok_and(|t| t.source == name))
            .map(|(id, _)| id)
            .collect();
        let entry = serde_json::json!({"body": body, "until_ms": until_ms}).to_string();
        let mut p = redis::pipe();
        p.atomic().hdel(sources, name).hset(deleted, tenant, entry);
        for id in &ids {
            p.hdel(tokens, *id);
        }
        p.incr(revision, 1);
        let mut touched = vec![(SOURCE, name), (DELETED, tenant)];
        touched.extend(ids.iter().map(|id| (TOKEN, id.as_str())));
        self.log(&mut p, &touched);
        self.with(|c| p.query::<()>(c))
    }

    fn put_token(&self, token: &TokenRecord) -> Result<(), String> {
        let [_, _, tokens, revision, ..] = &self.keys;
        let record = serde_json::to_string(token).map_err(err)?;
        let mut p = redis::pipe();
        p.atomic().hset(tokens, &token.id, record).incr(revision, 1);
        self.log(&mut p, &[(TOKEN, &token.id)]);
        self.with(|c| p.query::<()>(c))
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
        let [_, _, tokens, revision, ..] = &self.keys;
        let mut p = redis::pipe();
        p.atomic().hdel(tokens, id).incr(revision, 1);
        self.log(&mut p, &[(TOKEN, id)]);
        let (gone, _): (u64, u64) = self.with(|c| p.query(c))?;
        Ok(gone > 0)
    }
}
