//! Dead letters on Redis (`durable/dead.rs`), under keys of their own and a connection of
//! their own, beside whatever the spool's store does: a tenant `T` of prefix `P` keeps
//!
//! - `{P:dl:T}:m`, a hash: message id → the dead letter (its fields as JSON, then its body);
//! - `{P:dl:T}:t`, a sorted set: id by failure time (lists, ranges, retention, eviction);
//! - `{P:dl:T}:r`, a sorted set: the ids being replayed, by mark, and `{P:dl:T}:o`, a hash:
//!   id → `owner mask` (who replays it, to which URLs);
//! - `{P:dl:T}:b`, their bytes; `{P:dl:T}:seq`, the last mark given;
//!
//! and every store `O` beats under `P:dl-alive:O` (for the spool's takeover time, refreshed
//! every few seconds). A store
//! hands out only the replays it owns; those of an owner whose beat expired are taken over
//! (marked again, after every mark given) by the next store of the tenant's name, so a
//! replay cut by a crash goes on, once.
//!
//! **Not one transaction with the records.** The spool's records are another store's
//! (`mod.rs`): a failed message's dead letter is written (MULTI/EXEC) before the commit that
//! removes its record, so a crash between the two keeps it both pending and dead (it is
//! delivered again, at least once, and its dead letter stays), never neither.

use super::connect::RedisServer;
use crate::durable::dead::{
    attempts_of, time_of, window, DeadLetters, DeadLimits, DeadOp, DeadRecord, Marked, Pick, Replay,
};
use crate::durable::TenantNo;
use crate::error::Error;
use crate::model::dead_letter::{
    bad_cursor, reason_of, DeadLetter, DeadLetterPage, DeadLetterQuery, DeadLetterStats, MAX_PAGE,
    SEARCH_SCAN,
};
use crate::model::spool::RedisSpool;
use crate::wire::Body;
use foldhash::HashMap;
use redis::{Commands, Connection};
use serde_json::{json, Value as Json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a store's beat is refreshed (at least; it lasts the spool's takeover time).
const BEAT_EVERY: Duration = Duration::from_secs(2);
/// Rows dropped at once by the limits.
const DROP_PAGE: isize = 256;
/// Letters a search fetches at once: few round trips, a bounded batch of bodies in memory.
const SEARCH_BATCH: usize = 256;

/// One tenant's keys.
struct Keys {
    m: String,
    t: String,
    r: String,
    o: String,
    b: String,
    seq: String,
}

impl Keys {
    fn of(prefix: &str, tenant: &str) -> Keys {
        let tag = format!("{{{prefix}:dl:{tenant}}}");
        Keys {
            m: format!("{tag}:m"),
            t: format!("{tag}:t"),
            r: format!("{tag}:r"),
            o: format!("{tag}:o"),
            b: format!("{tag}:b"),
            seq: format!("{tag}:seq"),
        }
    }
}

/// A tenant that keeps dead letters.
struct DeadLetterTenant {
    keys: Keys,
    limits: DeadLimits,
    evicted: u64,
    expired: u64,
}

/// The dead letters of a Redis spool's tenants.
pub(crate) struct RedisDead {
    /// The server, or the primary Sentinel names (`connect.rs`): asked at each connection,
    /// so dead letters follow a failover as the spool does.
    target: RedisServer,
    conn: Option<Connection>,
    io_timeout: Duration,
    prefix: String,
    shown: String,
    owner: String,
    /// How long a beat lasts: the spool's takeover time (`timeout` + 10 s).
    alive_for: Duration,
    tenants: HashMap<TenantNo, DeadLetterTenant>,
    beat_at: Option<Instant>,
}

/// A dead letter's value: its fields as JSON, a newline, its body.
fn pack(r: &DeadRecord) -> Vec<u8> {
    let meta = json!({
        "failed_ms": r.failed_ms,
        "reason": r.reason,
        "detail": r.detail,
        "rounds": r.rounds,
        "first_ms": r.first_ms,
        "attempts": r.attempts,
        "bytes": r.bytes(),
    })
    .to_string();
    let mut v = Vec::with_capacity(meta.len() + 1 + r.body.len());
    v.extend_from_slice(meta.as_bytes());
    v.push(b'\n');
    v.extend_from_slice(&r.body);
    v
}

/// Whether the body of a [`pack`]ed letter holds `needle` (exact bytes).
fn body_has(v: &[u8], needle: &[u8]) -> bool {
    let body = v
        .iter()
        .position(|b| *b == b'\n')
        .map_or(&[][..], |at| &v[at + 1..]);
    !needle.is_empty() && body.windows(needle.len()).any(|w| w == needle)
}

/// [`pack`] read back: the letter (its body when asked), its bytes.
fn unpack(id: &str, v: &[u8], with_body: bool) -> Option<(DeadLetter, u64)> {
    let at = v.iter().position(|b| *b == b'\n')?;
    let meta: Json = serde_json::from_slice(&v[..at]).ok()?;
    let body = &v[at + 1..];
    let letter = DeadLetter {
        message_id: id.to_string(),
        failed_at: time_of(meta.get("failed_ms")?.as_i64()?),
        reason: reason_of(meta.get("reason")?.as_str()?),
        detail: meta.get("detail")?.as_str()?.to_string(),
        rounds: meta.get("rounds")?.as_u64()? as u32,
        first_attempt: meta.get("first_ms").and_then(Json::as_i64).map(time_of),
        last_attempts: attempts_of(meta.get("attempts")?.as_str()?, id),
        size: body.len() as u64,
        replaying: false,
        body: with_body.then(|| body.to_vec()),
    };
    Some((letter, meta.get("bytes")?.as_u64()?))
}

impl RedisDead {
    /// Dead letters on the server of `spool`, with a connection of their own; a replay of a
    /// store silent for `alive_for` is taken over.
    pub(crate) fn open(
        spool: &RedisSpool,
        io_timeout: Duration,
        alive_for: Duration,
    ) -> Result<RedisDead, Error> {
        let target = RedisServer::of(spool).map_err(|reason| Error::Spool {
            path: spool.shown.clone(),
            reason,
        })?;
        Ok(RedisDead {
            target,
            conn: None,
            io_timeout,
            prefix: spool.prefix.clone(),
            shown: spool.shown.clone(),
            owner: format!("{:016x}", fastrand::u64(..)),
            alive_for,
            tenants: HashMap::default(),
            beat_at: None,
        })
    }

    fn err(&self, reason: impl std::fmt::Display) -> Error {
        Error::Spool {
            path: self.shown.clone(),
            reason: format!("dead letters: {reason}"),
        }
    }

    /// Runs `f` on the connection (made again when lost); a failure of the connection drops
    /// it.
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, Error> {
        if self.conn.is_none() {
            let c = (self.target.connect(self.io_timeout))
                .map_err(|e| self.err(format!("cannot connect: {e}")))?;
            self.conn = Some(c);
        }
        let conn = self.conn.as_mut().expect("connected above");
        match f(conn) {
            Ok(v) => Ok(v),
            Err(e) => {
                if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                    self.conn = None;
                }
                Err(self.err(e))
            }
        }
    }

    fn alive_key(&self, owner: &str) -> String {
        format!("{}:dl-alive:{owner}", self.prefix)
    }

    /// Refreshes this store's beat when due.
    fn beat(&mut self) -> Result<(), Error> {
        if self.beat_at.is_some_and(|t| t.elapsed() < BEAT_EVERY) {
            return Ok(());
        }
        let key = self.alive_key(&self.owner);
        let ms = self.alive_for.as_millis() as u64;
        self.with(|c| c.pset_ex::<_, _, ()>(&key, 1, ms))?;
        self.beat_at = Some(Instant::now());
        Ok(())
    }

    /// Its beat goes (at its close): its replays are taken over at once by the next store.
    pub(super) fn end_beat(&mut self) {
        let key = self.alive_key(&self.owner);
        let _ = self.with(|c| c.del::<_, ()>(&key));
    }

    fn kept(&self, no: TenantNo) -> Result<&DeadLetterTenant, Error> {
        self.tenants
            .get(&no)
            .ok_or_else(|| self.err("this tenant keeps no dead letters"))
    }

    /// The bytes a letter held (0: none).
    fn held(&mut self, k: &str, ids: &[&str]) -> Result<Vec<u64>, Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let k = k.to_string();
        let values: Vec<Option<Vec<u8>>> =
            self.with(|c| redis::cmd("HMGET").arg(&k).arg(ids).query(c))?;
        Ok(ids
            .iter()
            .zip(values)
            .map(|(id, v)| v.and_then(|v| unpack(id, &v, false)).map_or(0, |(_, b)| b))
            .collect())
    }

    /// Removes `ids` of tenant `no` (with `bytes` each) in one transaction.
    fn remove(&mut self, no: TenantNo, ids: &[String], bytes: u64) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let k = self.kept(no)?;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hdel(&k.keys.m, ids)
            .zrem(&k.keys.t, ids)
            .zrem(&k.keys.r, ids)
            .hdel(&k.keys.o, ids)
            .decr(&k.keys.b, bytes);
        self.with(|c| pipe.query::<()>(c))
    }

    /// Drops tenant `no`'s oldest until its bytes are within its limit.
    fn evict(&mut self, no: TenantNo) -> Result<(), Error> {
        loop {
            let k = self.kept(no)?;
            let (t, b, m, limit) = (
                k.keys.t.clone(),
                k.keys.b.clone(),
                k.keys.m.clone(),
                k.limits.max_bytes,
            );
            let total: Option<i64> = self.with(|c| c.get(&b))?;
            if total.unwrap_or(0) as u64 <= limit {
                return Ok(());
            }
            let oldest: Vec<String> = self.with(|c| c.zrange(&t, 0, DROP_PAGE - 1))?;
            if oldest.is_empty() {
                return Ok(());
            }
            let refs: Vec<&str> = oldest.iter().map(String::as_str).collect();
            let sizes = self.held(&m, &refs)?;
            let mut over = total.unwrap_or(0) as u64 - limit;
            let mut drop = Vec::new();
            let mut freed = 0;
            for (id, size) in oldest.into_iter().zip(sizes) {
                if over == 0 {
                    break;
                }
                over = over.saturating_sub(size);
                freed += size;
                drop.push(id);
            }
            let n = drop.len() as u64;
            self.remove(no, &drop, freed)?;
            if let Some(k) = self.tenants.get_mut(&no) {
                k.evicted += n;
            }
        }
    }

    /// Marks `ids` of tenant `no` as replayed by us to `mask`, after every mark given.
    fn mark(&mut self, no: TenantNo, ids: &[String], mask: u8) -> Result<Marked, Error> {
        if ids.is_empty() {
            return Ok(Marked::default());
        }
        let k = self.kept(no)?;
        let (seq, r, o) = (k.keys.seq.clone(), k.keys.r.clone(), k.keys.o.clone());
        let n = ids.len() as i64;
        let upto: i64 = self.with(|c| c.incr(&seq, n))?;
        let after = upto - n;
        let owner = format!("{} {mask}", self.owner);
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (i, id) in ids.iter().enumerate() {
            pipe.zadd(&r, id, after + 1 + i as i64).ignore();
            pipe.hset(&o, id, &owner).ignore();
        }
        self.with(|c| pipe.query::<()>(c))?;
        Ok(Marked {
            count: ids.len() as u64,
            after,
            upto,
        })
    }

    /// Marks again, as ours, the replays of owners whose beat expired.
    fn take_over(&mut self, no: TenantNo) -> Result<(), Error> {
        let o = self.kept(no)?.keys.o.clone();
        let owners: HashMap<String, String> = self.with(|c| c.hgetall(&o))?;
        let mut alive: HashMap<String, bool> = HashMap::default();
        let mut orphans: Vec<(String, u8)> = Vec::new();
        for (id, value) in owners {
            let (owner, mask) = value.split_once(' ').unwrap_or((&value, "0"));
            if owner == self.owner {
                continue;
            }
            let live = match alive.get(owner) {
                Some(l) => *l,
                None => {
                    let key = self.alive_key(owner);
                    let l: bool = self.with(|c| c.exists(&key))?;
                    alive.insert(owner.to_string(), l);
                    l
                }
            };
            if !live {
                orphans.push((id, mask.parse().unwrap_or(0)));
            }
        }
        for mask in 0..=u8::MAX {
            let ids: Vec<String> = (orphans.iter())
                .filter(|(_, m)| *m == mask)
                .map(|(id, _)| id.clone())
                .collect();
            self.mark(no, &ids, mask)?;
        }
        Ok(())
    }
}

impl DeadLetters for RedisDead {
    fn configure(&mut self, no: TenantNo, name: &str, limits: DeadLimits) -> Result<(), Error> {
        self.tenants.insert(
            no,
            DeadLetterTenant {
                keys: Keys::of(&self.prefix, name),
                limits,
                evicted: 0,
                expired: 0,
            },
        );
        self.beat()?;
        self.take_over(no)
    }

    fn apply_dead(&mut self, ops: &[DeadOp]) -> Result<(), Error> {
        let mut grown = Vec::new();
        for op in ops {
            match op {
                DeadOp::Put(r) => {
                    let k = self.kept(r.tenant)?;
                    let (m, t, rk, o, b) = (
                        k.keys.m.clone(),
                        k.keys.t.clone(),
                        k.keys.r.clone(),
                        k.keys.o.clone(),
                        k.keys.b.clone(),
                    );
                    let was = self.held(&m, &[&r.id])?[0];
                    let mut pipe = redis::pipe();
                    pipe.atomic()
                        .hset(&m, &*r.id, pack(r))
                        .zadd(&t, &*r.id, r.failed_ms)
                        .zrem(&rk, &*r.id)
                        .hdel(&o, &*r.id)
                        .incr(&b, r.bytes() as i64 - was as i64);
                    self.with(|c| pipe.query::<()>(c))?;
                    if !grown.contains(&r.tenant) {
                        grown.push(r.tenant);
                    }
                }
                DeadOp::Delivered { tenant, id, .. } => {
                    let (m, rk) = {
                        let k = self.kept(*tenant)?;
                        (k.keys.m.clone(), k.keys.r.clone())
                    };
                    let marked: Option<f64> = self.with(|c| c.zscore(&rk, &**id))?;
                    if marked.is_some() {
                        let held = self.held(&m, &[id])?[0];
                        self.remove(*tenant, &[id.to_string()], held)?;
                    }
                }
            }
        }
        for no in grown {
            self.evict(no)?;
        }
        Ok(())
    }

    fn list(&mut self, no: TenantNo, q: &DeadLetterQuery) -> Result<DeadLetterPage, Error> {
        let k = self.kept(no)?;
        let (t, m, r) = (k.keys.t.clone(), k.keys.m.clone(), k.keys.r.clone());
        let (since, until) = window(q);
        // A page's cursor: the last letter's failure time and id; any other text is refused.
        let cursor = match q.cursor.as_deref() {
            Some(c) => {
                let read = c
                    .split_once('.')
                    .filter(|(_, id)| !id.is_empty())
                    .and_then(|(ms, id)| Some((ms.parse::<i64>().ok()?, id.to_string())));
                Some(read.ok_or_else(|| bad_cursor(c))?)
            }
            None => None,
        };
        let limit = q.limit.clamp(1, MAX_PAGE);
        // A search reads up to its bound, in batches; a plain list reads exactly its page.
        let (needle, read) = match q.contains.as_deref() {
            Some(text) => (Some(text.as_bytes()), SEARCH_SCAN),
            None => (None, limit),
        };
        // Where the reading is: ids with a score at most `top`, newest first, past the first
        // `skip` (those at `top` read already: ties are passed by count, however many).
        let mut top = match &cursor {
            Some((ms, _)) => (*ms).min(until.saturating_sub(1)),
            None => until.saturating_sub(1),
        };
        let mut skip = 0usize;
        let mut page = DeadLetterPage::default();
        let (mut scanned, mut last) = (0usize, None::<(i64, String)>);
        while scanned < read && page.letters.len() < limit && top >= since {
            let want = match needle {
                Some(_) => SEARCH_BATCH.min(read - scanned),
                None => limit - page.letters.len(),
            };
            let got: Vec<(String, f64)> = self.with(|c| {
                redis::cmd("ZRANGE")
                    .arg(&t)
                    .arg(top)
                    .arg(since)
                    .arg("BYSCORE")
                    .arg("REV")
                    .arg("LIMIT")
                    .arg(skip)
                    .arg(want)
                    .arg("WITHSCORES")
                    .query(c)
            })?;
            let got: Vec<(String, i64)> = got.into_iter().map(|(id, s)| (id, s as i64)).collect();
            let Some((_, low)) = got.last() else {
                break;
            };
            let low = *low;
            let at_low = got.iter().filter(|(_, s)| *s == low).count();
            (top, skip) = match low == top {
                true => (top, skip + at_low),
                false => (low, at_low),
            };
            let ended = got.len() < want;
            // Those at the cursor's time not past its id were on the pages before.
            let ids: Vec<(String, i64)> = (got.into_iter())
                .filter(|(id, s)| match &cursor {
                    Some((ms, after)) => *s < *ms || (*s == *ms && id < after),
                    None => true,
                })
                .collect();
            if !ids.is_empty() {
                let names: Vec<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
                let (values, marks): (Vec<Option<Vec<u8>>>, Vec<Option<f64>>) = self.with(|c| {
                    let mut pipe = redis::pipe();
                    pipe.cmd("HMGET").arg(&m).arg(&names);
                    pipe.cmd("ZMSCORE").arg(&r).arg(&names);
                    pipe.query(c)
                })?;
                for ((id, ms), (v, mark)) in ids.into_iter().zip(values.into_iter().zip(marks)) {
                    scanned += 1;
                    let found = v.filter(|v| needle.is_none_or(|n| body_has(v, n)));
                    if let Some((mut letter, _)) = found.and_then(|v| unpack(&id, &v, false)) {
                        letter.replaying = mark.is_some();
                        page.letters.push(letter);
                    }
                    last = Some((ms, id));
                    if page.letters.len() == limit || scanned == read {
                        break;
                    }
                }
            }
            if ended {
                break;
            }
        }
        if page.letters.len() == limit || scanned == read {
            page.next = last.map(|(ms, id)| format!("{ms}.{id}"));
        }
        Ok(page)
    }

    fn get(&mut self, no: TenantNo, id: &str) -> Result<Option<DeadLetter>, Error> {
        let k = self.kept(no)?;
        let (m, r) = (k.keys.m.clone(), k.keys.r.clone());
        let (v, mark): (Option<Vec<u8>>, Option<f64>) = self.with(|c| {
            let mut pipe = redis::pipe();
            pipe.hget(&m, id).zscore(&r, id);
            pipe.query(c)
        })?;
        Ok(v.and_then(|v| unpack(id, &v, true)).map(|(mut l, _)| {
            l.replaying = mark.is_some();
            l
        }))
    }

    fn delete(&mut self, no: TenantNo, id: &str) -> Result<bool, Error> {
        let m = self.kept(no)?.keys.m.clone();
        let held: Option<Vec<u8>> = self.with(|c| c.hget(&m, id))?;
        let Some(v) = held else {
            return Ok(false);
        };
        let bytes = unpack(id, &v, false).map_or(0, |(_, b)| b);
        self.remove(no, &[id.to_string()], bytes)?;
        Ok(true)
    }

    fn mark_replay(&mut self, no: TenantNo, pick: &Pick, mask: u8) -> Result<Marked, Error> {
        let k = self.kept(no)?;
        let (t, r) = (k.keys.t.clone(), k.keys.r.clone());
        let ids: Vec<String> = match pick {
            Pick::One(id) => {
                let here: Option<f64> = self.with(|c| c.zscore(&t, id))?;
                here.map(|_| vec![id.clone()]).unwrap_or_default()
            }
            Pick::Range { since, until } => self.with(|c| {
                redis::cmd("ZRANGE")
                    .arg(&t)
                    .arg(*since)
                    .arg(format!("({until}"))
                    .arg("BYSCORE")
                    .query(c)
            })?,
        };
        let mut fresh = Vec::new();
        for chunk in ids.chunks(1000) {
            let marks: Vec<Option<f64>> =
                self.with(|c| redis::cmd("ZMSCORE").arg(&r).arg(chunk).query(c))?;
            fresh.extend(
                chunk
                    .iter()
                    .zip(marks)
                    .filter(|(_, m)| m.is_none())
                    .map(|(id, _)| id.clone()),
            );
        }
        self.mark(no, &fresh, mask)
    }

    fn replaying(
        &mut self,
        no: TenantNo,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Replay>, Error> {
        let k = self.kept(no)?;
        let (r, m, o) = (k.keys.r.clone(), k.keys.m.clone(), k.keys.o.clone());
        let from = after.map_or("-inf".to_string(), |a| format!("({a}"));
        let marked: Vec<(String, f64)> = self.with(|c| {
            redis::cmd("ZRANGE")
                .arg(&r)
                .arg(&from)
                .arg("+inf")
                .arg("BYSCORE")
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .arg("WITHSCORES")
                .query(c)
        })?;
        if marked.is_empty() {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = marked.iter().map(|(id, _)| id.as_str()).collect();
        let (values, owners): (Vec<Option<Vec<u8>>>, Vec<Option<String>>) = self.with(|c| {
            let mut pipe = redis::pipe();
            pipe.cmd("HMGET").arg(&m).arg(&names);
            pipe.cmd("HMGET").arg(&o).arg(&names);
            pipe.query(c)
        })?;
        let mut out = Vec::new();
        for ((id, seq), (v, owner)) in marked.iter().zip(values.into_iter().zip(owners)) {
            let owner = owner.unwrap_or_default();
            let (who, mask) = owner.split_once(' ').unwrap_or((&owner, "0"));
            let body = v
                .as_deref()
                .and_then(|v| Some(&v[v.iter().position(|b| *b == b'\n')? + 1..]));
            out.push(Replay {
                id: Arc::from(id.as_str()),
                body: Body::from(body.unwrap_or_default().to_vec()),
                mask: mask.parse().unwrap_or(0),
                seq: *seq as i64,
                // Another living store's replay (taken over if it dies), or a row gone.
                skip: who != self.owner || body.is_none(),
            });
        }
        Ok(out)
    }

    fn expire(&mut self, now_ms: i64) -> Result<(), Error> {
        self.beat()?;
        let nos: Vec<TenantNo> = self.tenants.keys().copied().collect();
        for no in nos {
            self.take_over(no)?;
            loop {
                let k = self.kept(no)?;
                let (t, m) = (k.keys.t.clone(), k.keys.m.clone());
                let before = now_ms.saturating_sub(k.limits.retention.as_millis() as i64);
                let old: Vec<String> = self.with(|c| {
                    redis::cmd("ZRANGE")
                        .arg(&t)
                        .arg("-inf")
                        .arg(format!("({before}"))
                        .arg("BYSCORE")
                        .arg("LIMIT")
                        .arg(0)
                        .arg(DROP_PAGE)
                        .query(c)
                })?;
                if old.is_empty() {
                    break;
                }
                let refs: Vec<&str> = old.iter().map(String::as_str).collect();
                let bytes: u64 = self.held(&m, &refs)?.iter().sum();
                let n = old.len() as u64;
                self.remove(no, &old, bytes)?;
                if let Some(k) = self.tenants.get_mut(&no) {
                    k.expired += n;
                }
            }
        }
        Ok(())
    }

    fn stats(&mut self, no: TenantNo) -> Result<DeadLetterStats, Error> {
        Ok(self.stats_of(&[no])?.pop().unwrap_or_default())
    }

    /// Counted by the server, every tenant in one pipeline on the writer's connection (its
    /// timeouts bound a stalled server): one round trip however many tenants there are.
    fn stats_of(&mut self, nos: &[TenantNo]) -> Result<Vec<DeadLetterStats>, Error> {
        let mut pipe = redis::pipe();
        let mut asked = 0;
        for k in nos.iter().filter_map(|no| self.tenants.get(no)) {
            pipe.zcard(&k.keys.t).get(&k.keys.b);
            asked += 1;
        }
        let counted: Vec<Option<i64>> = match asked {
            0 => Vec::new(),
            _ => self.with(|c| pipe.query(c))?,
        };
        let mut counted = counted.chunks(2);
        Ok(nos
            .iter()
            .map(|no| match self.tenants.get(no) {
                None => DeadLetterStats::default(),
                Some(k) => {
                    let (count, bytes) = match counted.next() {
                        Some([n, b]) => (n.unwrap_or(0), b.unwrap_or(0)),
                        _ => (0, 0),
                    };
                    DeadLetterStats {
                        count: count.max(0) as u64,
                        bytes: bytes.max(0) as u64,
                        evicted: k.evicted,
                        expired: k.expired,
                    }
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_dead_letter_reads_back() {
        let r = DeadRecord {
            tenant: 0,
            id: Arc::from("m-1"),
            failed_ms: 1_700_000_000_000,
            reason: "status:400".into(),
            detail: "webhooks: status 400".into(),
            rounds: 1,
            first_ms: Some(1_699_999_999_000),
            attempts: "[]".into(),
            body: Body::from(b"{\"a\":\"\\n\"}\n".to_vec()),
            job: None,
        };
        let (l, bytes) = unpack("m-1", &pack(&r), true).unwrap();
        assert_eq!(l.body.as_deref(), Some(&r.body[..]));
        assert_eq!(l.reason, crate::Reason::Status(400));
        assert_eq!(bytes, r.bytes());
        assert_eq!(l.size, r.body.len() as u64);
    }
}
