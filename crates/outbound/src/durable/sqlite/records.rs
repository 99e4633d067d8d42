//! A store's records: group commits of ops, what is resumable, what is pending, whose.

use super::{db_err, spool_err, Live, LiveMap, LiveRollback, SqliteStore, COLUMNS};
use crate::durable::names::TenantNames;
use crate::durable::{fork_gate, Cursor, Op, Record, TenantNo};
use crate::error::Error;
use foldhash::HashMap;
use rusqlite::{params, Transaction, TransactionBehavior};
use std::sync::Arc;

impl SqliteStore {
    /// Tenant `no` is named `name`: its puts are kept under that name, and records of that
    /// name are resumable for it.
    pub fn register(&mut self, no: TenantNo, name: &str) {
        self.names.register(no, name);
    }

    /// Writes every op in one transaction: one commit, the WAL written but not fsynced. Only
    /// `Store::submit` calls it (`mod.rs`), and `Store::settle` waits for the fsync: a name
    /// of its own so that no caller takes it for the durable `Store::apply`. On error nothing
    /// of the batch is applied.
    pub(super) fn write(
        &mut self,
        ops: &[Op],
        dead: &[crate::durable::dead::DeadOp],
    ) -> Result<(), Error> {
        let _gate = fork_gate::hold();
        if ops.is_empty() && dead.is_empty() {
            return Ok(());
        }
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let mut live = std::mem::take(&mut self.live);
        let mut undo = Vec::new();
        let names = &self.names;
        let mut last_seq = self.last_seq;
        let mut counts: Vec<(TenantNo, i64, i64)> = Vec::new();
        let conn = self.file.conn();
        let dead_state = &mut self.dead;
        let dead_before = (!dead.is_empty()).then(|| dead_state.snapshot());
        let result = (|| {
            let conn = conn?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            let mut batch = Batch {
                live: &mut live,
                undo: &mut undo,
                names,
                last_seq: &mut last_seq,
                counts: &mut counts,
            };
            batch.apply(&tx, ops).map_err(err)?;
            if !dead.is_empty() {
                SqliteStore::write_dead(&tx, names, dead_state, dead).map_err(err)?;
            }
            tx.commit().map_err(err)?;
            Ok(())
        })();
        if let (Err(_), Some(before)) = (&result, dead_before) {
            self.dead.restore(before);
        }
        if result.is_err() {
            // The transaction rolled back: so does the map.
            for u in undo.into_iter().rev() {
                match u {
                    LiveRollback::Remove(i) => {
                        if let Some(m) = live.get_mut(&ops[i].tenant()) {
                            m.remove(ops[i].id());
                        }
                    }
                    LiveRollback::Restore(i, was) => {
                        let m = live.entry(ops[i].tenant()).or_default();
                        m.insert(ops[i].id().clone(), was);
                    }
                }
            }
            counts.clear();
        } else {
            self.last_seq = last_seq;
        }
        live.retain(|_, m| !m.is_empty());
        self.live = live;
        result?;
        for (tenant, records, bytes) in counts {
            let name = self.names.name_of(tenant);
            self.counts.count(&name, records, bytes);
        }
        Ok(())
    }

    /// Records of tenant `tenant` to resume (adopted from dead owners' files, or parked), in
    /// the order they became resumable; at most `limit`, after `after` (`None`: from the
    /// start). The returned cursor goes after the last record returned, or is `after` again
    /// when there is none: keep it and ask again later to get only what was added since.
    pub fn resumable_of(
        &mut self,
        tenant: TenantNo,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        let _gate = fork_gate::hold();
        let path = self.file.path.clone();
        let err = |e| db_err(&path, e);
        let name = self.names.name_of(tenant);
        let mut out = Vec::new();
        let mut last = after.cloned();
        // Records whose id we hold already (rowid, payload bytes): dropped, not resumed.
        let mut dropped = Vec::new();
        let live = self.live.entry(tenant).or_default();
        let conn = self.file.conn()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, resume_seq, rowid, copies, adopted FROM messages
                 WHERE tenant = ?1 AND resume_seq > ?2 ORDER BY resume_seq LIMIT ?3"
            ))
            .map_err(err)?;
        while out.len() < limit {
            let want = limit - out.len();
            let from = last.as_ref().map_or(0, |c| c.0);
            let mut rows = stmt
                .query(params![
                    &*name,
                    from,
                    i64::try_from(want).unwrap_or(i64::MAX)
                ])
                .map_err(err)?;
            let mut read = 0;
            while let Some(row) = rows.next().map_err(err)? {
                read += 1;
                // Our table is STRICT and adoption checks types, so a bad row is damage.
                let mut record = Record::from_row(row)
                    .ok_or_else(|| spool_err(&path, "a record has columns of the wrong type"))?;
                record.tenant = tenant;
                record.adopted = row.get::<_, i64>(10).map_err(err)? != 0;
                last = Some(Cursor(row.get(7).map_err(err)?));
                let rowid: i64 = row.get(8).map_err(err)?;
                if live.contains_key(&record.id) {
                    dropped.push((rowid, record.payload_bytes()));
                    continue;
                }
                let copies: i64 = row.get(9).map_err(err)?;
                let copies = u32::try_from(copies).unwrap_or(1).max(1);
                live.insert(record.id.clone(), Live::of(&record, rowid, copies));
                out.push(record);
            }
            if read < want {
                break;
            }
        }
        drop(stmt);
        if !dropped.is_empty() {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            {
                let mut delete = tx
                    .prepare_cached("DELETE FROM messages WHERE rowid = ?1")
                    .map_err(err)?;
                for (rowid, _) in &dropped {
                    delete.execute([rowid]).map_err(err)?;
                }
            }
            tx.commit().map_err(err)?;
            let bytes: u64 = dropped.iter().map(|(_, b)| b).sum();
            self.counts
                .count(&name, -(dropped.len() as i64), -(bytes as i64));
        }
        if self.live.get(&tenant).is_some_and(HashMap::is_empty) {
            self.live.remove(&tenant);
        }
        Ok((out, last))
    }

    /// Tenant `no` has closed: its records (put, parked, or handed out) become resumable,
    /// in the order they came, for the next tenant of its name, which counts them anew.
    pub fn release(&mut self, no: TenantNo) -> Result<(), Error> {
        let _gate = fork_gate::hold();
        self.live.remove(&no);
        let name = self.names.name_of(no);
        let path = self.file.path.clone();
        let last_seq = self.last_seq;
        let conn = self.file.conn()?;
        conn.execute(
            "UPDATE messages SET adopted = 2, resume_seq = ?2 + rowid
             WHERE tenant = ?1 AND adopted = 0",
            params![&*name, last_seq],
        )
        .map_err(|e| db_err(&path, e))?;
        let top: Option<i64> = conn
            .query_row("SELECT max(resume_seq) FROM messages", [], |r| r.get(0))
            .map_err(|e| db_err(&path, e))?;
        self.last_seq = top.unwrap_or(0).max(last_seq);
        self.names.forget(no);
        Ok(())
    }

    /// Records of tenant `tenant` held in our file and their payload bytes (ids and
    /// bodies, without SQLite's own overhead).
    pub fn pending_of(&self, tenant: TenantNo) -> (u64, u64) {
        self.names.get(tenant).map_or((0, 0), |n| self.counts.of(n))
    }

    /// Records held in our file, all tenants, and their payload bytes, kept up to date by
    /// [`SqliteStore::write`] and [`SqliteStore::adopt`].
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn pending(&self) -> (u64, u64) {
        (self.counts.records, self.counts.bytes)
    }
}

/// One [`SqliteStore::write`]'s state: the map kept in step with the transaction (with how
/// to undo each change), the parked records' seqs, the changes of counts per tenant.
struct Batch<'a> {
    live: &'a mut LiveMap,
    undo: &'a mut Vec<LiveRollback>,
    names: &'a TenantNames,
    last_seq: &'a mut i64,
    counts: &'a mut Vec<(TenantNo, i64, i64)>,
}

impl Batch<'_> {
    fn counted(&mut self, tenant: TenantNo, records: i64, bytes: i64) {
        match self.counts.last_mut() {
            Some((t, r, b)) if *t == tenant => {
                *r += records;
                *b += bytes;
            }
            _ => self.counts.push((tenant, records, bytes)),
        }
    }

    fn apply(&mut self, tx: &Transaction<'_>, ops: &[Op]) -> rusqlite::Result<()> {
        let mut put = tx.prepare_cached(
            "INSERT INTO messages
             (tenant, id, accepted_ms, first_ms, ingest, hook, hook_mask, hooks_key, resume_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        let mut copies = tx.prepare_cached("UPDATE messages SET copies = ?2 WHERE rowid = ?1")?;
        let mut first = tx.prepare_cached(
            "UPDATE messages SET first_ms = ?2
             WHERE rowid = ?1 AND (first_ms IS NULL OR first_ms > ?2)",
        )?;
        let mut ingest_done =
            tx.prepare_cached("UPDATE messages SET ingest = NULL WHERE rowid = ?1")?;
        let mut hook_done =
            tx.prepare_cached("UPDATE messages SET hook_mask = 0, hook = NULL WHERE rowid = ?1")?;
        let mut mask = tx.prepare_cached("UPDATE messages SET hook_mask = ?2 WHERE rowid = ?1")?;
        // Rows of removed messages, deleted after the other ops in runs of consecutive
        // rowids, one statement per run: messages mostly leave in the order they came, and
        // a statement per row was most of a removal's cost. No later op of the group can
        // touch them (their ids have left `live`).
        let mut gone: Vec<i64> = Vec::new();
        let empty = Arc::from("");
        for (i, op) in ops.iter().enumerate() {
            let tenant = op.tenant();
            let live = self.live.entry(tenant).or_default();
            match op {
                Op::Put(r) => {
                    if let Some(l) = live.get_mut(&r.id) {
                        self.undo.push(LiveRollback::Restore(i, *l));
                        l.copies += 1;
                        copies.execute(params![l.rowid, l.copies])?;
                        continue;
                    }
                    let name = self.names.get(tenant).unwrap_or(&empty);
                    put.execute(params![
                        &**name,
                        &*r.id,
                        r.accepted_ms,
                        r.first_ms,
                        r.ingest.as_deref(),
                        r.hook.as_deref(),
                        r.hook_mask,
                        r.hooks_key as i64,
                        None::<i64>
                    ])?;
                    live.insert(r.id.clone(), Live::of(r, tx.last_insert_rowid(), 1));
                    self.undo.push(LiveRollback::Remove(i));
                    self.counted(tenant, 1, r.payload_bytes() as i64);
                }
                Op::Park(r) => {
                    // Not in `live`: nothing reaches it until `resumable` hands it out.
                    let name = self.names.get(tenant).unwrap_or(&empty);
                    *self.last_seq += 1;
                    put.execute(params![
                        &**name,
                        &*r.id,
                        r.accepted_ms,
                        r.first_ms,
                        r.ingest.as_deref(),
                        r.hook.as_deref(),
                        r.hook_mask,
                        r.hooks_key as i64,
                        *self.last_seq
                    ])?;
                    self.counted(tenant, 1, r.payload_bytes() as i64);
                }
                Op::FirstAttempt { id, at_ms, .. } => {
                    if let Some(l) = live.get(id) {
                        first.execute(params![l.rowid, at_ms])?;
                    }
                }
                Op::IngestDone { id, .. } => {
                    if let Some(l) = live.get_mut(id).filter(|l| l.ingest > 0) {
                        self.undo.push(LiveRollback::Restore(i, *l));
                        ingest_done.execute([l.rowid])?;
                        let bytes = i64::from(l.ingest);
                        l.ingest = 0;
                        self.counted(tenant, 0, -bytes);
                    }
                }
                Op::HookMask { id, mask: 0, .. } => {
                    if let Some(l) = live.get_mut(id) {
                        self.undo.push(LiveRollback::Restore(i, *l));
                        hook_done.execute([l.rowid])?;
                        let bytes = i64::from(l.hook);
                        l.hook = 0;
                        self.counted(tenant, 0, -bytes);
                    }
                }
                Op::HookMask { id, mask: m, .. } => {
                    if let Some(l) = live.get(id) {
                        mask.execute(params![l.rowid, m])?;
                    }
                }
                Op::Remove { id, .. } => {
                    let Some(l) = live.get_mut(id) else { continue };
                    if l.copies > 1 {
                        self.undo.push(LiveRollback::Restore(i, *l));
                        l.copies -= 1;
                        copies.execute(params![l.rowid, l.copies])?;
                        continue;
                    }
                    let l = *l;
                    gone.push(l.rowid);
                    if let Some(was) = live.remove(id) {
                        self.undo.push(LiveRollback::Restore(i, was));
                    }
                    let bytes = (id.len() as u32 + l.ingest + l.hook) as i64;
                    self.counted(tenant, -1, -bytes);
                }
            }
        }
        delete_runs(tx, &mut gone)
    }
}

/// Deletes the rows `rowids` (distinct), one statement per run of consecutive rowids.
fn delete_runs(tx: &Transaction<'_>, rowids: &mut [i64]) -> rusqlite::Result<()> {
    if rowids.is_empty() {
        return Ok(());
    }
    rowids.sort_unstable();
    let mut one = tx.prepare_cached("DELETE FROM messages WHERE rowid = ?1")?;
    let mut run = tx.prepare_cached("DELETE FROM messages WHERE rowid BETWEEN ?1 AND ?2")?;
    let mut start = 0;
    for i in 1..=rowids.len() {
        if i < rowids.len() && rowids[i] == rowids[i - 1] + 1 {
            continue;
        }
        match (rowids[start], rowids[i - 1]) {
            (a, b) if a == b => one.execute([a])?,
            (a, b) => run.execute([a, b])?,
        };
        start = i;
    }
    Ok(())
}
