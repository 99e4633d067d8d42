//! A store's records: group commits of ops, what is resumable, what is pending.

use super::*;

impl SqliteStore {
    /// Writes every op in one transaction: one commit, the WAL written but not fsynced. Only
    /// `Store::submit` calls it (`mod.rs`), and `Store::settle` waits for the fsync: a name
    /// of its own so that no caller takes it for the durable `Store::apply`. On error nothing
    /// of the batch is applied.
    pub(super) fn write(&mut self, ops: &[Op]) -> Result<(), Error> {
        let _gate = fork_gate::hold();
        if ops.is_empty() {
            return Ok(());
        }
        let path = self.db_path.clone();
        let err = |e| db_err(&path, e);
        let mut live = std::mem::take(&mut self.live);
        let mut undo = Vec::new();
        let result = (|| {
            let conn = self.conn()?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            let change = SqliteStore::apply_in(&tx, &mut live, &mut undo, ops).map_err(err)?;
            tx.commit().map_err(err)?;
            Ok(change)
        })();
        if result.is_err() {
            // The transaction rolled back: so does the map.
            for u in undo.into_iter().rev() {
                match u {
                    Undo::Remove(i) => live.remove(ops[i].id()),
                    Undo::Restore(i, was) => live.insert(ops[i].id().clone(), was),
                };
            }
        }
        self.live = live;
        let (records, bytes) = result?;
        self.records = self.records.saturating_add_signed(records);
        self.bytes = self.bytes.saturating_add_signed(bytes);
        Ok(())
    }

    /// The ops of one [`SqliteStore::write`], keeping `live` in step (with how to undo each
    /// change); returns the change of (records, bytes).
    fn apply_in(
        tx: &Transaction<'_>,
        live: &mut HashMap<Arc<str>, Live>,
        undo: &mut Vec<Undo>,
        ops: &[Op],
    ) -> rusqlite::Result<(i64, i64)> {
        let mut put = tx.prepare_cached(
            "INSERT INTO messages (id, accepted_ms, first_ms, ingest, hook, hook_mask, hooks_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
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

        let (mut records, mut bytes) = (0i64, 0i64);
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Put(r) => {
                    if let Some(l) = live.get_mut(&r.id) {
                        undo.push(Undo::Restore(i, *l));
                        l.copies += 1;
                        copies.execute(params![l.rowid, l.copies])?;
                        continue;
                    }
                    put.execute(params![
                        &*r.id,
                        r.accepted_ms,
                        r.first_ms,
                        r.ingest.as_deref(),
                        r.hook.as_deref(),
                        r.hook_mask,
                        r.hooks_key as i64
                    ])?;
                    live.insert(r.id.clone(), Live::of(r, tx.last_insert_rowid(), 1));
                    undo.push(Undo::Remove(i));
                    records += 1;
                    bytes += r.payload_bytes() as i64;
                }
                Op::FirstAttempt { id, at_ms } => {
                    if let Some(l) = live.get(id) {
                        first.execute(params![l.rowid, at_ms])?;
                    }
                }
                Op::IngestDone { id } => {
                    if let Some(l) = live.get_mut(id).filter(|l| l.ingest > 0) {
                        undo.push(Undo::Restore(i, *l));
                        ingest_done.execute([l.rowid])?;
                        bytes -= i64::from(l.ingest);
                        l.ingest = 0;
                    }
                }
                Op::HookMask { id, mask: 0 } => {
                    if let Some(l) = live.get_mut(id) {
                        undo.push(Undo::Restore(i, *l));
                        hook_done.execute([l.rowid])?;
                        bytes -= i64::from(l.hook);
                        l.hook = 0;
                    }
                }
                Op::HookMask { id, mask: m } => {
                    if let Some(l) = live.get(id) {
                        mask.execute(params![l.rowid, m])?;
                    }
                }
                Op::Remove { id } => {
                    let Some(l) = live.get_mut(id) else { continue };
                    if l.copies > 1 {
                        undo.push(Undo::Restore(i, *l));
                        l.copies -= 1;
                        copies.execute(params![l.rowid, l.copies])?;
                        continue;
                    }
                    let l = *l;
                    gone.push(l.rowid);
                    if let Some(was) = live.remove(id) {
                        undo.push(Undo::Restore(i, was));
                    }
                    records -= 1;
                    bytes -= (id.len() as u32 + l.ingest + l.hook) as i64;
                }
            }
        }
        delete_runs(tx, &mut gone)?;
        Ok((records, bytes))
    }

    /// Records this store did not `Put` itself (adopted from other files) in the order they
    /// became ours, oldest accepted first within one [`SqliteStore::adopt`] pass; at most `limit`,
    /// after `after` (`None`: from the start). The returned cursor goes after the last record
    /// returned, or is `after` again when there is none: keep it and ask again after the next
    /// `adopt` to get only what it added.
    pub fn resumable(
        &mut self,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        let _gate = fork_gate::hold();
        let path = self.db_path.clone();
        let err = |e| db_err(&path, e);
        let mut out = Vec::new();
        let mut last = after.cloned();
        // Records whose id we hold already (rowid, payload bytes): dropped, not resumed.
        let mut dropped = Vec::new();
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| spool_err(&path, "store is closed"))?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, resume_seq, rowid, copies FROM messages
                 WHERE resume_seq > ?1 ORDER BY resume_seq LIMIT ?2"
            ))
            .map_err(err)?;
        loop {
            let want = limit - out.len();
            let from = last.as_ref().map_or(0, |c| c.0);
            let mut rows = stmt
                .query(params![from, i64::try_from(want).unwrap_or(i64::MAX)])
                .map_err(err)?;
            let mut read = 0;
            while let Some(row) = rows.next().map_err(err)? {
                read += 1;
                // Our table is STRICT and adoption checks types, so a bad row is damage.
                let record = Record::from_row(row)
                    .ok_or_else(|| spool_err(&path, "a record has columns of the wrong type"))?;
                last = Some(Cursor(row.get(7).map_err(err)?));
                let rowid: i64 = row.get(8).map_err(err)?;
                if self.live.contains_key(&record.id) {
                    dropped.push((rowid, record.payload_bytes()));
                    continue;
                }
                let copies: i64 = row.get(9).map_err(err)?;
                let copies = u32::try_from(copies).unwrap_or(1).max(1);
                self.live
                    .insert(record.id.clone(), Live::of(&record, rowid, copies));
                out.push(record);
            }
            if read < want || out.len() == limit {
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
            self.records = self.records.saturating_sub(dropped.len() as u64);
            self.bytes = self
                .bytes
                .saturating_sub(dropped.iter().map(|(_, b)| b).sum::<u64>());
        }
        Ok((out, last))
    }

    /// Records held in our file and their payload bytes (ids and bodies, without SQLite's
    /// own overhead), kept up to date by [`SqliteStore::write`] and [`SqliteStore::adopt`].
    pub fn pending(&self) -> (u64, u64) {
        (self.records, self.bytes)
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
