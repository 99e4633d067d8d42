//! Group commits: ops noted in memory, then what Redis lacks written in one MULTI/EXEC.

use super::keys::{self, entry_id};
use super::*;

impl RedisStore {
    /// Notes every op, then writes everything Redis does not have yet in one transaction.
    /// On error what was not written stays pending here and goes with the next commit that
    /// reaches Redis (see the module docs).
    pub fn apply(&mut self, ops: &[Op]) -> Result<(), Error> {
        for op in ops {
            self.note(op);
        }
        self.sync(&[]).map(|_| ())
    }

    /// Changes become pending writes. Ops for ids we do not hold are no-ops.
    pub(super) fn note(&mut self, op: &Op) {
        let id = op.id();
        if let Op::Put(r) = op {
            if !self.live.contains_key(id) {
                let len = |b: &Option<Arc<[u8]>>| b.as_ref().map_or(0, |b| b.len() as u32);
                let seq = self.next_seq;
                self.next_seq += 1;
                let live = Live {
                    seq,
                    copies: 1,
                    first_ms: r.first_ms,
                    ingest_done: r.ingest.is_none(),
                    mask: r.hook_mask,
                    ingest: len(&r.ingest),
                    hook: len(&r.hook),
                    written: false,
                    progress: false,
                };
                self.bytes += live.bytes(id);
                self.live.insert(id.clone(), live);
                self.puts.insert(seq, r.clone());
                return;
            }
        }
        let Some(l) = self.live.get_mut(id) else {
            return;
        };
        let before = l.bytes(id);
        let mut changed = true;
        match op {
            // A pending id accepted again: one more copy, one more Remove to leave.
            Op::Put(_) => l.copies += 1,
            Op::FirstAttempt { at_ms, .. } => {
                changed = l.first_ms.is_none_or(|f| f > *at_ms);
                if changed {
                    l.first_ms = Some(*at_ms);
                }
            }
            Op::IngestDone { .. } => {
                changed = !l.ingest_done;
                l.ingest_done = true;
            }
            Op::HookMask { mask, .. } => {
                changed = l.mask != *mask;
                l.mask = *mask;
            }
            Op::Remove { .. } if l.copies > 1 => l.copies -= 1,
            Op::Remove { .. } => {
                let l = *l;
                self.live.remove(id);
                self.dirty.remove(id);
                self.bytes = self.bytes.saturating_sub(before);
                if l.written {
                    self.deletes.push((l.seq, l.progress));
                } else {
                    self.puts.remove(&l.seq);
                }
                return;
            }
        }
        let after = l.bytes(id);
        let written = l.written;
        self.bytes = (self.bytes + after).saturating_sub(before);
        if changed && written {
            self.dirty.insert(id.clone());
        }
    }

    /// True when something is waiting to be written.
    pub(super) fn backlog(&self) -> usize {
        self.puts.len() + self.dirty.len() + self.deletes.len()
    }

    /// Writes the pending puts, progress and removals (and the heartbeat when due), with
    /// `extra` commands at the end of the same transaction; returns the replies of `extra`.
    /// Nothing changes here unless the whole transaction ran.
    pub(super) fn sync(&mut self, extra: &[redis::Cmd]) -> Result<Vec<Value>, Error> {
        if self.backlog() == 0 && extra.is_empty() && !self.beat_due() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        let mut progress: Vec<(String, String)> = Vec::new();
        for (&seq, r) in &self.puts {
            let Some(l) = self.live.get(&r.id) else {
                continue;
            };
            // One field: Redis parses and keeps one value per message, not seven.
            let packed = keys::Packed {
                id: &r.id,
                accepted_ms: r.accepted_ms,
                first_ms: l.first_ms,
                ingest: r.ingest.as_deref().filter(|_| !l.ingest_done),
                hook: r.hook.as_deref().filter(|_| l.mask != 0),
                mask: l.mask,
                hooks_key: r.hooks_key,
            };
            pipe.cmd("XADD")
                .arg(&self.keys.stream)
                .arg(entry_id(seq))
                .arg(keys::F_RECORD)
                .arg(packed);
            if l.copies > 1 {
                progress.push((entry_id(seq), l.progress().encode()));
            }
        }
        let xadds = pipe.len();
        for id in &self.dirty {
            if let Some(l) = self.live.get(id) {
                progress.push((entry_id(l.seq), l.progress().encode()));
            }
        }
        if !progress.is_empty() {
            pipe.cmd("HSET").arg(&self.keys.progress).arg(&progress);
        }
        if !self.deletes.is_empty() {
            let ids: Vec<String> = self.deletes.iter().map(|&(s, _)| entry_id(s)).collect();
            pipe.cmd("XDEL").arg(&self.keys.stream).arg(&ids);
            let fields: Vec<String> = self
                .deletes
                .iter()
                .filter(|&&(_, p)| p)
                .map(|&(s, _)| entry_id(s))
                .collect();
            if !fields.is_empty() {
                pipe.cmd("HDEL").arg(&self.keys.progress).arg(&fields);
            }
        }
        let beat = self.beat_due();
        if beat {
            self.beat_into(&mut pipe);
        }
        let ours = pipe.len();
        for cmd in extra {
            pipe.add_command(cmd.clone());
        }
        let mut replies = match self.query(pipe, true) {
            Ok(r) => r,
            Err(e) => {
                if beat {
                    self.beat_at = None;
                }
                return Err(e);
            }
        };
        for (i, reply) in replies[..ours].iter().enumerate() {
            if let Value::ServerError(e) = reply {
                // An entry already there: an earlier commit wrote it and lost its reply.
                let again =
                    i < xadds && e.details().is_some_and(|d| d.contains("equal or smaller"));
                if !again {
                    return Err(self.err(format!("commit: {}", describe(reply))));
                }
            }
        }
        for (&seq, r) in &self.puts {
            if let Some(l) = self.live.get_mut(&r.id).filter(|l| l.seq == seq) {
                l.written = true;
                l.progress |= l.copies > 1;
            }
        }
        for id in &self.dirty {
            if let Some(l) = self.live.get_mut(id) {
                l.progress = true;
            }
        }
        self.puts.clear();
        self.dirty.clear();
        self.deletes.clear();
        Ok(replies.split_off(ours))
    }
}
