//! Dead letters in the spool's file (`dead_letters`, schema 3): written in the group
//! commit's transaction with the ops of their messages, bounded per tenant by
//! `dead_letter_max_bytes` (oldest dropped first, in that transaction) and
//! `dead_letter_retention` (dropped at the writer's periodic pass), moved with the records
//! when a dead owner's file is adopted. A replay's mark (`replay_seq`) makes the row the
//! pending message (`durable/dead.rs`).

use super::{db_err, SqliteStore};
use crate::durable::dead::{
    attempts_of, time_of, window, DeadLetters, DeadLimits, DeadOp, Marked, Pick, Replay,
};
use crate::durable::fork_gate;
use crate::durable::names::TenantNames;
use crate::durable::TenantNo;
use crate::error::Error;
use crate::model::dead_letter::{
    bad_cursor, reason_of, DeadLetter, DeadLetterPage, DeadLetterQuery, DeadLetterStats, MAX_PAGE,
    SEARCH_SCAN,
};
use crate::wire::Body;
use foldhash::HashMap;
use rusqlite::params;
use rusqlite::OptionalExtension;
use rusqlite::Row;
use rusqlite::Transaction;
use rusqlite::TransactionBehavior;
use std::sync::Arc;

/// The table, in our own file's schema (`mod.rs`, `SCHEMA`).
pub(super) const DEAD_SCHEMA: &str = "
CREATE TABLE dead_letters (
    tenant      TEXT NOT NULL,
    id          TEXT NOT NULL,
    failed_ms   INTEGER NOT NULL,  -- unix ms of the failure (order, retention)
    reason      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    rounds      INTEGER NOT NULL,
    first_ms    INTEGER,
    attempts    TEXT NOT NULL,     -- each URL's last attempt (JSON)
    body        BLOB NOT NULL,     -- the webhook body as sent
    bytes       INTEGER NOT NULL,  -- as dead_letter_max_bytes counts it
    replay_seq  INTEGER,           -- set while a replay is under way: its order
    replay_mask INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE UNIQUE INDEX dead_letters_id ON dead_letters (tenant, id);
CREATE INDEX dead_letters_time ON dead_letters (tenant, failed_ms);
CREATE INDEX dead_letters_replay ON dead_letters (tenant, replay_seq) WHERE replay_seq IS NOT NULL;
";

/// The columns copied from an adopted file.
const DEAD_COLUMNS: &str =
    "tenant, id, failed_ms, reason, detail, rounds, first_ms, attempts, body, bytes, replay_mask";

/// Rows of an adopted file with the types our table needs.
const DEAD_VALID: &str = "typeof(tenant) = 'text' AND typeof(id) = 'text' \
    AND typeof(failed_ms) = 'integer' AND typeof(reason) = 'text' \
    AND typeof(detail) = 'text' AND typeof(rounds) = 'integer' \
    AND typeof(first_ms) IN ('integer', 'null') AND typeof(attempts) = 'text' \
    AND typeof(body) = 'blob' AND typeof(bytes) = 'integer' \
    AND typeof(replay_mask) = 'integer' AND typeof(replay_seq) IN ('integer', 'null')";

/// What the store keeps in memory of its dead letters.
#[derive(Default)]
pub(super) struct DeadState {
    /// Limits of the tenants that keep dead letters, by name.
    limits: HashMap<Arc<str>, DeadLimits>,
    /// Counts by tenant name.
    counts: HashMap<Arc<str>, DeadLetterStats>,
    /// Highest `replay_seq` given so far.
    pub(super) last_seq: i64,
    /// `last_seq` was read from the table (at the first registration or adoption).
    seq_known: bool,
}

/// What [`DeadState::restore`] puts back.
pub(super) struct DeadSnapshot(HashMap<Arc<str>, DeadLetterStats>, i64);

impl DeadState {
    pub(super) fn snapshot(&self) -> DeadSnapshot {
        DeadSnapshot(self.counts.clone(), self.last_seq)
    }

    /// Back to `s`: the transaction that changed the counts since was rolled back.
    pub(super) fn restore(&mut self, s: DeadSnapshot) {
        (self.counts, self.last_seq) = (s.0, s.1);
    }
}

/// The ops' changes to the counts, made in a transaction (undone with it).
struct Changes<'a> {
    state: &'a mut DeadState,
}

impl Changes<'_> {
    fn count(&mut self, name: &Arc<str>, n: i64, bytes: i64) {
        let c = self.state.counts.entry(name.clone()).or_default();
        c.count = c.count.saturating_add_signed(n);
        c.bytes = c.bytes.saturating_add_signed(bytes);
    }
}

impl SqliteStore {
    /// Writes `dead` in transaction `tx` (the group commit's): puts replace a dead letter of
    /// the same id, a delivered replay removes its row, and a tenant past its bytes loses its
    /// oldest rows. `state` is changed as the rows are: the caller restores it when the
    /// transaction fails.
    pub(super) fn write_dead(
        tx: &Transaction<'_>,
        names: &TenantNames,
        state: &mut DeadState,
        dead: &[DeadOp],
    ) -> rusqlite::Result<()> {
        let mut old =
            tx.prepare_cached("SELECT bytes FROM dead_letters WHERE tenant = ?1 AND id = ?2")?;
        let mut put = tx.prepare_cached(
            "INSERT INTO dead_letters
             (tenant, id, failed_ms, reason, detail, rounds, first_ms, attempts, body, bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (tenant, id) DO UPDATE SET failed_ms = ?3, reason = ?4, detail = ?5,
                 rounds = ?6, first_ms = ?7, attempts = ?8, body = ?9, bytes = ?10,
                 replay_seq = NULL, replay_mask = 0",
        )?;
        let mut gone = tx.prepare_cached(
            "DELETE FROM dead_letters WHERE tenant = ?1 AND id = ?2 AND replay_seq IS NOT NULL
             RETURNING bytes",
        )?;
        let empty: Arc<str> = Arc::from("");
        let mut changes = Changes { state };
        let mut grown: Vec<Arc<str>> = Vec::new();
        for op in dead {
            match op {
                DeadOp::Put(r) => {
                    let name = names.get(r.tenant).unwrap_or(&empty);
                    let was: Option<i64> = old
                        .query_row(params![&**name, &*r.id], |row| row.get(0))
                        .optional()?;
                    put.execute(params![
                        &**name,
                        &*r.id,
                        r.failed_ms,
                        r.reason,
                        r.detail,
                        r.rounds,
                        r.first_ms,
                        r.attempts,
                        &*r.body,
                        r.bytes() as i64
                    ])?;
                    let n = i64::from(was.is_none());
                    changes.count(name, n, r.bytes() as i64 - was.unwrap_or(0));
                    if !grown.contains(name) {
                        grown.push(name.clone());
                    }
                }
                DeadOp::Delivered { tenant, id, .. } => {
                    let name = names.get(*tenant).unwrap_or(&empty);
                    let bytes: Option<i64> = gone
                        .query_row(params![&**name, &**id], |row| row.get(0))
                        .optional()?;
                    if let Some(b) = bytes {
                        changes.count(name, -1, -b);
                    }
                }
            }
        }
        for name in grown {
            SqliteStore::evict(tx, &name, changes.state)?;
        }
        Ok(())
    }

    /// Drops `name`'s oldest dead letters until its bytes are within its limit.
    fn evict(tx: &Transaction<'_>, name: &Arc<str>, state: &mut DeadState) -> rusqlite::Result<()> {
        let Some(limit) = state.limits.get(name).map(|l| l.max_bytes) else {
            return Ok(());
        };
        let mut oldest = tx.prepare_cached(
            "SELECT rowid, bytes FROM dead_letters WHERE tenant = ?1
             ORDER BY failed_ms, rowid LIMIT 64",
        )?;
        let mut delete = tx.prepare_cached("DELETE FROM dead_letters WHERE rowid = ?1")?;
        loop {
            let c = state.counts.entry(name.clone()).or_default();
            if c.bytes <= limit {
                return Ok(());
            }
            let rows: Vec<(i64, i64)> = oldest
                .query_map([&**name], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            if rows.is_empty() {
                return Ok(());
            }
            for (rowid, bytes) in rows {
                if c.bytes <= limit {
                    return Ok(());
                }
                delete.execute([rowid])?;
                c.count = c.count.saturating_sub(1);
                c.bytes = c.bytes.saturating_sub(bytes as u64);
                c.evicted += 1;
            }
        }
    }

    /// Runs `f` in a transaction of its own, made durable (an fsync of the WAL) before it
    /// returns; the dead letters' state is restored when it fails.
    fn dead_tx<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>, &TenantNames, &mut DeadState) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let _gate = fork_gate::hold();
        self.file.usable()?;
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let mut state = std::mem::take(&mut self.dead);
        let before = state.snapshot();
        let conn = self.file.conn();
        let result = conn.and_then(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            let out = f(&tx, &self.names, &mut state).map_err(err)?;
            tx.commit().map_err(err)?;
            Ok(out)
        });
        if result.is_err() {
            state.restore(before);
        }
        self.dead = state;
        let out = result?;
        self.file.durable()?;
        Ok(out)
    }

    /// Recounts the dead letters of every tenant that keeps them (after an adoption).
    pub(super) fn recount_dead(&mut self) -> Result<(), Error> {
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let conn = self.file.conn()?;
        // One pass over the table, whatever the number of tenants.
        let mut found: HashMap<String, (u64, u64)> = HashMap::default();
        let mut stmt = conn
            .prepare_cached(
                "SELECT tenant, count(*), coalesce(sum(bytes), 0) FROM dead_letters GROUP BY tenant",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .map_err(err)?;
        for row in rows {
            let (name, n, b) = row.map_err(err)?;
            found.insert(name, (n as u64, b as u64));
        }
        drop(stmt);
        let top: Option<i64> = conn
            .query_row("SELECT max(replay_seq) FROM dead_letters", [], |r| r.get(0))
            .map_err(err)?;
        let names: Vec<Arc<str>> = self.dead.limits.keys().cloned().collect();
        for name in names {
            let (n, b) = found.get(&*name).copied().unwrap_or((0, 0));
            let c = self.dead.counts.entry(name).or_default();
            (c.count, c.bytes) = (n, b);
        }
        self.dead.last_seq = self.dead.last_seq.max(top.unwrap_or(0));
        self.dead.seq_known = true;
        Ok(())
    }

    /// [`recount_dead`](Self::recount_dead) for one tenant (one that starts keeping dead
    /// letters: its registration costs one indexed query, not one per tenant).
    fn recount_dead_of(&mut self, name: &Arc<str>) -> Result<(), Error> {
        if !self.dead.seq_known {
            return self.recount_dead();
        }
        let path = self.file.path.clone();
        let conn = self.file.conn()?;
        let (n, b): (i64, i64) = conn
            .prepare_cached(
                "SELECT count(*), coalesce(sum(bytes), 0) FROM dead_letters WHERE tenant = ?1",
            )
            .and_then(|mut s| s.query_row([&**name], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(|e| db_err(&path, e))?;
        let c = self.dead.counts.entry(name.clone()).or_default();
        (c.count, c.bytes) = (n as u64, b as u64);
        Ok(())
    }

    /// Copies the dead letters of the attached `dead` file (schema 3) into ours, in the
    /// adoption's transaction: a dead letter we hold already keeps the newer failure, and a
    /// row being replayed stays marked (its replay goes on here), after ours.
    /// `base`: the highest mark given so far (the adopted marks come after it).
    pub(super) fn move_dead_letters(tx: &Transaction<'_>, base: i64) -> rusqlite::Result<()> {
        tx.execute(
            &format!(
                "INSERT INTO main.dead_letters ({DEAD_COLUMNS}, replay_seq)
                 SELECT {DEAD_COLUMNS}, CASE WHEN replay_seq IS NULL THEN NULL ELSE ?1 + rowid END
                 FROM dead.dead_letters WHERE {DEAD_VALID}
                 ON CONFLICT (tenant, id) DO UPDATE SET failed_ms = excluded.failed_ms,
                     reason = excluded.reason, detail = excluded.detail,
                     rounds = excluded.rounds, first_ms = excluded.first_ms,
                     attempts = excluded.attempts, body = excluded.body,
                     bytes = excluded.bytes, replay_seq = excluded.replay_seq,
                     replay_mask = excluded.replay_mask
                 WHERE excluded.failed_ms > dead_letters.failed_ms"
            ),
            [base],
        )?;
        Ok(())
    }
}

/// A row selected as `id, failed_ms, reason, detail, rounds, first_ms, attempts,
/// length(body), replay_seq, rowid` (and `body` eleventh when asked).
fn letter(row: &Row<'_>, with_body: bool) -> rusqlite::Result<DeadLetter> {
    let id: String = row.get(0)?;
    let attempts: String = row.get(6)?;
    Ok(DeadLetter {
        last_attempts: attempts_of(&attempts, &id),
        message_id: id,
        failed_at: time_of(row.get(1)?),
        reason: reason_of(&row.get::<_, String>(2)?),
        detail: row.get(3)?,
        rounds: row.get::<_, i64>(4)?.clamp(0, u32::MAX as i64) as u32,
        first_attempt: row.get::<_, Option<i64>>(5)?.map(time_of),
        size: row.get::<_, i64>(7)?.max(0) as u64,
        replaying: row.get::<_, Option<i64>>(8)?.is_some(),
        body: match with_body {
            true => Some(row.get(10)?),
            false => None,
        },
    })
}

const LETTER: &str =
    "id, failed_ms, reason, detail, rounds, first_ms, attempts, length(body), replay_seq, rowid";

/// A page's cursor: the last row's failure time and rowid; any other text is refused.
fn cursor_of(text: &str) -> Result<(i64, i64), Error> {
    let read = || {
        let (ms, rowid) = text.split_once('.')?;
        Some((ms.parse().ok()?, rowid.parse().ok()?))
    };
    read().ok_or_else(|| bad_cursor(text))
}

impl DeadLetters for SqliteStore {
    fn configure(&mut self, no: TenantNo, name: &str, limits: DeadLimits) -> Result<(), Error> {
        let name = self
            .names
            .get(no)
            .cloned()
            .unwrap_or_else(|| Arc::from(name));
        self.dead.limits.insert(name.clone(), limits);
        let _gate = fork_gate::hold();
        self.recount_dead_of(&name)
    }

    fn apply_dead(&mut self, ops: &[DeadOp]) -> Result<(), Error> {
        self.dead_tx(|tx, names, state| SqliteStore::write_dead(tx, names, state, ops))
    }

    fn list(&mut self, no: TenantNo, q: &DeadLetterQuery) -> Result<DeadLetterPage, Error> {
        let _gate = fork_gate::hold();
        let name = self.names.name_of(no);
        let (since, until) = window(q);
        let (at_ms, at_row) = match q.cursor.as_deref() {
            Some(text) => cursor_of(text)?,
            None => (i64::MAX, i64::MAX),
        };
        let limit = q.limit.clamp(1, MAX_PAGE);
        // A search reads up to its bound; a plain list reads exactly its page.
        let (needle, read) = match q.contains.as_deref() {
            Some(text) => (Some(text.as_bytes()), SEARCH_SCAN),
            None => (None, limit),
        };
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let conn = self.file.conn()?;
        // The needle is bound as a blob: `instr` of two blobs compares bytes, exactly.
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {LETTER}, ?7 IS NULL OR instr(body, ?7) > 0 FROM dead_letters
                 WHERE tenant = ?1 AND failed_ms >= ?2 AND failed_ms < ?3
                   AND (failed_ms, rowid) < (?4, ?5)
                 ORDER BY failed_ms DESC, rowid DESC LIMIT ?6"
            ))
            .map_err(err)?;
        let mut rows = stmt
            .query(params![
                &*name,
                since,
                until,
                at_ms,
                at_row,
                read as i64,
                needle
            ])
            .map_err(err)?;
        let mut page = DeadLetterPage::default();
        let (mut last, mut scanned) = (None, 0);
        while let Some(row) = rows.next().map_err(err)? {
            scanned += 1;
            last = Some((
                row.get::<_, i64>(1).map_err(err)?,
                row.get::<_, i64>(9).map_err(err)?,
            ));
            if row.get::<_, bool>(10).map_err(err)? {
                page.letters.push(letter(row, false).map_err(err)?);
                if page.letters.len() == limit {
                    break;
                }
            }
        }
        if page.letters.len() == limit || scanned == read {
            page.next = last.map(|(ms, rowid)| format!("{ms}.{rowid}"));
        }
        Ok(page)
    }

    fn get(&mut self, no: TenantNo, id: &str) -> Result<Option<DeadLetter>, Error> {
        let _gate = fork_gate::hold();
        let name = self.names.name_of(no);
        let path = self.file.path.clone();
        let conn = self.file.conn()?;
        conn.query_row(
            &format!("SELECT {LETTER}, body FROM dead_letters WHERE tenant = ?1 AND id = ?2"),
            params![&*name, id],
            |row| letter(row, true),
        )
        .optional()
        .map_err(|e| db_err(&path, e))
    }

    fn delete(&mut self, no: TenantNo, id: &str) -> Result<bool, Error> {
        let name = self.names.name_of(no);
        self.dead_tx(|tx, _, state| {
            let bytes: Option<i64> = tx
                .query_row(
                    "DELETE FROM dead_letters WHERE tenant = ?1 AND id = ?2 RETURNING bytes",
                    params![&*name, id],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(b) = bytes {
                Changes { state }.count(&name, -1, -b);
            }
            Ok(bytes.is_some())
        })
    }

    fn mark_replay(&mut self, no: TenantNo, pick: &Pick, mask: u8) -> Result<Marked, Error> {
        let name = self.names.name_of(no);
        self.dead_tx(|tx, _, state| {
            let base = state.last_seq;
            // Each row's mark is unique and above every earlier one: `base + rowid`.
            let marked = match pick {
                Pick::One(id) => tx.execute(
                    "UPDATE dead_letters SET replay_seq = ?3 + rowid, replay_mask = ?4
                     WHERE tenant = ?1 AND id = ?2 AND replay_seq IS NULL",
                    params![&*name, id, base, mask],
                )?,
                Pick::Range { since, until } => tx.execute(
                    "UPDATE dead_letters SET replay_seq = ?4 + rowid, replay_mask = ?5
                     WHERE tenant = ?1 AND failed_ms >= ?2 AND failed_ms < ?3
                       AND replay_seq IS NULL",
                    params![&*name, since, until, base, mask],
                )?,
            };
            if marked > 0 {
                let top: Option<i64> =
                    tx.query_row("SELECT max(replay_seq) FROM dead_letters", [], |r| r.get(0))?;
                state.last_seq = state.last_seq.max(top.unwrap_or(base));
            }
            Ok(Marked {
                count: marked as u64,
                after: base,
                upto: state.last_seq,
            })
        })
    }

    fn replaying(
        &mut self,
        no: TenantNo,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Replay>, Error> {
        let _gate = fork_gate::hold();
        let name = self.names.name_of(no);
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let conn = self.file.conn()?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, body, replay_mask, replay_seq FROM dead_letters
                 WHERE tenant = ?1 AND replay_seq > ?2 ORDER BY replay_seq LIMIT ?3",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(
                params![&*name, after.unwrap_or(i64::MIN), limit as i64],
                |r| {
                    Ok(Replay {
                        id: Arc::from(r.get::<_, String>(0)?),
                        body: Body::from(r.get::<_, Vec<u8>>(1)?),
                        mask: u8::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                        seq: r.get(3)?,
                        skip: false,
                    })
                },
            )
            .map_err(err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(err)
    }

    fn expire(&mut self, now_ms: i64) -> Result<(), Error> {
        let limits: Vec<(Arc<str>, DeadLimits)> = self
            .dead
            .limits
            .iter()
            .map(|(n, l)| (n.clone(), *l))
            .collect();
        // Only the tenants that hold dead letters (each an indexed query).
        let limits: Vec<(Arc<str>, DeadLimits)> = (limits.into_iter())
            .filter(|(n, _)| self.dead.counts.get(n).is_some_and(|c| c.count > 0))
            .collect();
        if limits.is_empty() {
            return Ok(());
        }
        self.dead_tx(|tx, _, state| {
            for (name, l) in limits {
                let before = now_ms.saturating_sub(l.retention.as_millis() as i64);
                let (n, bytes): (i64, i64) = tx
                    .prepare_cached(
                        "SELECT count(*), coalesce(sum(bytes), 0) FROM dead_letters
                         WHERE tenant = ?1 AND failed_ms < ?2",
                    )?
                    .query_row(params![&*name, before], |r| Ok((r.get(0)?, r.get(1)?)))?;
                if n == 0 {
                    continue;
                }
                tx.prepare_cached("DELETE FROM dead_letters WHERE tenant = ?1 AND failed_ms < ?2")?
                    .execute(params![&*name, before])?;
                let c = state.counts.entry(name.clone()).or_default();
                c.count = c.count.saturating_sub(n as u64);
                c.bytes = c.bytes.saturating_sub(bytes as u64);
                c.expired += n as u64;
            }
            Ok(())
        })
    }

    fn stats(&mut self, no: TenantNo) -> Result<DeadLetterStats, Error> {
        Ok((self.names.get(no))
            .and_then(|n| self.dead.counts.get(n))
            .copied()
            .unwrap_or_default())
    }
}
