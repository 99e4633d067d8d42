//! Group commits: ops noted in memory, then what Redis lacks written in one MULTI/EXEC,
//! pipelined: a transaction is sent before the replies of the one before it are read (see
//! the module docs, "# Commits", for what a failed one does).

use super::keys;
use super::resp;
use super::*;
use crate::wire::Body;
use std::collections::hash_map::Entry;

/// The most the transaction buffer keeps between commits (a group of 2,048 messages of
/// ~500 bytes needs about 1 MiB).
const WIRE_KEEP: usize = 4 << 20;

impl RedisStore {
    /// Notes every op, then writes everything Redis does not have yet in one transaction.
    /// On error what was not written stays pending here and goes with the next commit that
    /// reaches Redis (see the module docs).
    pub fn apply(&mut self, ops: &[Op]) -> Result<(), Error> {
        let ticket = self.submit(ops);
        self.settle(ticket)
    }

    /// Notes every op and sends the transaction without reading its replies (`settle` does).
    pub fn submit(&mut self, ops: &[Op]) -> Ticket {
        for op in ops {
            self.note(op);
        }
        match self.send(&[]) {
            Ok(Some(no)) => Ticket { no, done: None },
            Ok(None) => Ticket {
                no: 0,
                done: Some(Ok(())),
            },
            Err(e) => Ticket {
                no: 0,
                done: Some(Err(e)),
            },
        }
    }

    /// Reads the replies of every transaction up to the ticket's, in order, and returns its
    /// outcome.
    pub fn settle(&mut self, ticket: Ticket) -> Result<(), Error> {
        match ticket.done {
            Some(done) => done,
            None => self.outcome(ticket.no).map(|_| ()),
        }
    }

    /// Changes become pending writes. Ops for ids we do not hold are no-ops.
    pub(super) fn note(&mut self, op: &Op) {
        let id = op.id();
        // One hash of the id per op where it can (two for an id accepted again): this runs
        // for every message.
        if let Op::Put(r) | Op::Park(r) = op {
            if let Entry::Vacant(slot) = self.live.entry(id.clone()) {
                let len = |b: &Option<Body>| b.as_ref().map_or(0, |b| b.len() as u32);
                let pno = self.next_pno;
                self.next_pno += 1;
                let live = Live {
                    pno,
                    seq: 0,
                    idx: 0,
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
                slot.insert(live);
                self.puts.insert(pno, r.clone());
                return;
            }
        }
        if let Op::Remove { .. } = op {
            let Some((id, l)) = self.live.remove_entry(id) else {
                return;
            };
            if l.copies > 1 {
                // One more Remove to leave; its progress (copies) changed.
                if l.written {
                    self.dirty.insert(id.clone());
                }
                let copies = l.copies - 1;
                self.live.insert(id, Live { copies, ..l });
                return;
            }
            if !self.dirty.is_empty() {
                self.dirty.remove(&id);
            }
            self.bytes = self.bytes.saturating_sub(l.bytes(&id));
            if l.written {
                self.removed(l.seq, l.idx);
            } else {
                self.puts.remove(&l.pno);
            }
            return;
        }
        let Some(l) = self.live.get_mut(id) else {
            return;
        };
        let before = l.bytes(id);
        let mut changed = true;
        match op {
            // A pending id accepted again: one more copy, one more Remove to leave. (No
            // record is parked on Redis: `Store::parks` is false.)
            Op::Put(_) | Op::Park(_) => l.copies += 1,
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
            // Handled above.
            Op::Remove { .. } => return,
        }
        let after = l.bytes(id);
        let written = l.written;
        let (seq, idx, ingest_done, mask) = (l.seq, l.idx, l.ingest_done, l.mask);
        self.bytes = (self.bytes + after).saturating_sub(before);
        if changed && written {
            self.dirty.insert(id.clone());
            // The payloads a compaction would not write again are not kept for it.
            if after < before {
                let kept = (self.groups.get_mut(&seq))
                    .and_then(|g| g.recs.get_mut(idx as usize))
                    .and_then(Option::as_mut);
                if let Some(r) = kept {
                    if ingest_done {
                        r.ingest = None;
                    }
                    if mask == 0 {
                        r.hook = None;
                    }
                }
            }
        }
    }

    /// Record `idx` of our written entry `seq` left: the entry goes with its last record;
    /// until then the record is marked done in the entry's bitmap (an adopter skips it).
    fn removed(&mut self, seq: u64, idx: u32) {
        let Some(g) = self.groups.get_mut(&seq) else {
            return;
        };
        g.left = g.left.saturating_sub(1);
        if let Some(r) = g.recs.get_mut(idx as usize) {
            *r = None;
        }
        if g.left == 0 {
            let g = self.groups.remove(&seq).expect("found above");
            if !self.marks.is_empty() {
                self.marks.remove(&seq);
            }
            self.deletes.push(Delete::of(seq, g));
        } else {
            keys::set_done(&mut g.done, idx as usize);
            self.marks.insert(seq);
        }
    }

    /// Compacts our entries sent at least `older_than` ago of which at most a quarter is
    /// still held (see `COMPACT_MIN`): their held records become new puts, written by the
    /// next commit in its group, and the old entries are deleted (XDEL, HDEL of their
    /// fields) in that same transaction, as the failure rule does for a failed one.
    pub(super) fn compact(&mut self, older_than: Duration) {
        let old: Vec<u64> = (self.groups.iter())
            .filter(|(_, g)| {
                g.n >= COMPACT_MIN && g.left * 4 <= g.n && g.at.elapsed() >= older_than
            })
            .map(|(&seq, _)| seq)
            .collect();
        for seq in old {
            let mut g = self.groups.remove(&seq).expect("listed above");
            self.marks.remove(&seq);
            for r in std::mem::take(&mut g.recs).into_iter().flatten() {
                let Some(l) = (self.live.get_mut(&r.id)).filter(|l| l.written && l.seq == seq)
                else {
                    continue;
                };
                l.written = false;
                l.progress = false;
                self.dirty.remove(&r.id);
                self.puts.insert(l.pno, r);
            }
            self.deletes.push(Delete::of(seq, g));
        }
    }

    /// True when something is waiting to be written.
    pub(super) fn backlog(&self) -> usize {
        self.puts.len() + self.dirty.len() + self.marks.len() + self.deletes.len()
    }

    /// Writes the pending puts, progress and removals (and the heartbeat when due), with
    /// `extra` commands at the end of the same transaction, and waits for it (and for the
    /// transactions sent before it); returns the replies of `extra`.
    pub(super) fn sync(&mut self, extra: &[redis::Cmd]) -> Result<Vec<Value>, Error> {
        match self.send(extra)? {
            Some(no) => self.outcome(no),
            None => Ok(Vec::new()),
        }
    }

    /// Sends one transaction with what is pending (and `extra`), without reading its
    /// replies; its number, or `None` when there was nothing to send. What it carries is
    /// taken as written from here on (later commits build on it: a progress change goes as
    /// an HSET, a removal as an XDEL); `fail` puts it back if the transaction turns out to
    /// have failed.
    fn send(&mut self, extra: &[redis::Cmd]) -> Result<Option<u64>, Error> {
        if self.backlog() == 0 && extra.is_empty() && !self.beat_due() {
            return Ok(None);
        }
        // Not connected: nothing is sent, nothing changes.
        self.conn()?;
        let mut out = std::mem::take(&mut self.wire);
        out.clear();
        out.extend_from_slice(resp::MULTI);
        // Progress fields and done bitmaps, for one HSET.
        let mut progress: Vec<(resp::Field, Vec<u8>)> = Vec::new();
        let puts = std::mem::take(&mut self.puts);
        let held: Vec<&Record> = puts
            .iter()
            .filter(|(pno, r)| self.live.get(&r.id).is_some_and(|l| l.pno == **pno))
            .map(|(_, r)| r)
            .collect();
        let mut made = Vec::new();
        // One entry per commit group (at most GROUP_MAX records), one field: Redis parses,
        // appends and later deletes one value per group, not one per message.
        let mut packed = Vec::new();
        for chunk in held.chunks(GROUP_MAX) {
            let seq = self.next_seq;
            self.next_seq += 1;
            let mut fields = Vec::new();
            let mut recs = Vec::with_capacity(chunk.len());
            packed.clear();
            for (i, r) in chunk.iter().enumerate() {
                let l = self.live.get_mut(&r.id).expect("held: checked above");
                // Taken as written: what changes from now on goes as a change to this entry.
                l.seq = seq;
                l.idx = i as u32;
                l.written = true;
                l.progress = l.copies > 1;
                if l.progress {
                    fields.push(i as u32);
                    let p = l.progress().encode().into_bytes();
                    progress.push((resp::Field::Of(seq, i as u32), p));
                }
                recs.push(Some((*r).clone()));
                packed.push(keys::Packed {
                    id: &r.id,
                    accepted_ms: r.accepted_ms,
                    first_ms: l.first_ms,
                    ingest: r.ingest.as_deref().filter(|_| !l.ingest_done),
                    hook: r.hook.as_deref().filter(|_| l.mask != 0),
                    mask: l.mask,
                    hooks_key: r.hooks_key,
                });
            }
            resp::xadd_group(&mut out, &self.keys.stream, seq, &packed);
            let n = chunk.len() as u32;
            self.groups.insert(
                seq,
                Group {
                    n,
                    left: n,
                    done: Vec::new(),
                    fields,
                    recs,
                    at: Instant::now(),
                },
            );
            made.push(seq);
        }
        drop(packed);
        drop(held);
        let xadds = made.len();
        for id in &self.dirty {
            if let Some(l) = self.live.get_mut(id) {
                let p = l.progress().encode().into_bytes();
                progress.push((resp::Field::Of(l.seq, l.idx), p));
                if !l.progress {
                    l.progress = true;
                    if let Some(g) = self.groups.get_mut(&l.seq) {
                        g.fields.push(l.idx);
                    }
                }
            }
        }
        let marks: Vec<u64> = self.marks.drain().collect();
        for &seq in &marks {
            if let Some(g) = self.groups.get(&seq) {
                progress.push((resp::Field::Done(seq), g.done.clone()));
            }
        }
        let mut ours = xadds;
        if !progress.is_empty() {
            ours += 1;
            resp::array(&mut out, 2 + 2 * progress.len());
            resp::bulk(&mut out, b"HSET");
            resp::bulk(&mut out, self.keys.progress.as_bytes());
            for (field, value) in &progress {
                resp::bulk_field(&mut out, *field);
                resp::bulk(&mut out, value);
            }
        }
        if !self.deletes.is_empty() {
            ours += 1;
            let all = self.deletes.iter().map(|d| d.seq);
            resp::ids(&mut out, "XDEL", &self.keys.stream, all);
            let mut fields = Vec::new();
            for d in &self.deletes {
                if d.n > 1 {
                    fields.push(resp::Field::Done(d.seq));
                }
                fields.extend(d.fields.iter().map(|&i| resp::Field::Of(d.seq, i)));
            }
            if !fields.is_empty() {
                ours += 1;
                resp::hdel(&mut out, &self.keys.progress, &fields);
            }
        }
        let beat = self.beat_due();
        if beat {
            ours += 1;
            self.beat_cmd().write_packed_command(&mut out);
        }
        for cmd in extra {
            cmd.write_packed_command(&mut out);
        }
        let commands = ours + extra.len();
        out.extend_from_slice(resp::EXEC);
        self.flight_no += 1;
        let flight = Flight {
            no: self.flight_no,
            commands,
            xadds,
            ours,
            beat,
            puts,
            made,
            marks,
            dirty: std::mem::take(&mut self.dirty),
            deletes: std::mem::take(&mut self.deletes),
            outcome: None,
        };
        let sent = match self.conn() {
            Ok(c) => match c.send_packed_command(&out) {
                Ok(()) => Ok(()),
                Err(e) => {
                    let reason = e.to_string();
                    self.lose_connection();
                    Err(self.err(reason))
                }
            },
            Err(e) => Err(e),
        };
        // Kept for the next commit, unless a takeover made it large.
        if out.capacity() <= WIRE_KEEP {
            self.wire = out;
        }
        self.flights.push_back(flight);
        if let Err(e) = sent {
            // Those sent before it are lost with the connection too.
            self.fail_in_flight(&e);
            self.flights.pop_back();
            return Err(e);
        }
        Ok(Some(self.flight_no))
    }
    /// The outcome of transaction `no` (the replies of its `extra` commands), after reading
    /// the replies of every transaction up to it in order.
    pub(super) fn outcome(&mut self, no: u64) -> Result<Vec<Value>, Error> {
        self.read_up_to(no);
        let mut found = Ok(Vec::new());
        while self.flights.front().is_some_and(|f| f.no <= no) {
            let f = self.flights.pop_front().expect("checked above");
            if f.no == no {
                found = f.outcome.expect("read above");
            }
        }
        found
    }

    /// Reads the replies of every transaction in flight up to `no` whose replies are not
    /// read yet; their outcomes wait in `flights` for `outcome`.
    pub(super) fn read_up_to(&mut self, no: u64) {
        for i in 0..self.flights.len() {
            if self.flights[i].no > no {
                break;
            }
            if self.flights[i].outcome.is_some() {
                continue;
            }
            let read = self.read_one(i);
            let outcome = match read {
                Ok(replies) => self.check(i, replies),
                Err(e) => {
                    // The connection is gone, and every transaction still in flight on it:
                    // each may or may not have run.
                    self.lose_connection();
                    let e = self.err(e);
                    self.fail_in_flight(&e);
                    return;
                }
            };
            if outcome.is_err() {
                self.undo(i);
            }
            self.flights[i].outcome = Some(outcome);
        }
    }

    /// Reads the replies of transaction `i` (MULTI's, one per command, EXEC's); the EXEC
    /// reply, or why the connection failed.
    fn read_one(&mut self, i: usize) -> Result<Value, String> {
        let expected = self.flights[i].commands + 2;
        let Some(conn) = self.conn.as_mut() else {
            return Err("connection lost".into());
        };
        let mut last = Value::Nil;
        let mut got = 0;
        while got < expected {
            match conn.recv_response() {
                // RESP3 may put push data between replies.
                Ok(Value::Push { .. }) => {}
                Ok(v) => {
                    got += 1;
                    last = v;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(last)
    }

    /// Whether transaction `i` ran whole, from its EXEC reply; the replies of its `extra`.
    fn check(&mut self, i: usize, exec: Value) -> Result<Vec<Value>, Error> {
        let (commands, xadds, ours) = {
            let f = &self.flights[i];
            (f.commands, f.xadds, f.ours)
        };
        let mut replies = match exec {
            Value::Array(items) if items.len() == commands => items,
            e @ Value::ServerError(_) => {
                return Err(self.err(format!("transaction refused: {}", describe(&e))))
            }
            other => return Err(self.err(format!("unexpected transaction reply: {other:?}"))),
        };
        for (i, reply) in replies[..ours].iter().enumerate() {
            if let Value::ServerError(e) = reply {
                // An entry id at or below the stream's last: cannot come from our own
                // retries (each goes with a new id, see the module docs), so only from an
                // entry already there.
                let again =
                    i < xadds && e.details().is_some_and(|d| d.contains("equal or smaller"));
                if !again {
                    return Err(self.err(format!("commit: {}", describe(reply))));
                }
            }
        }
        Ok(replies.split_off(ours))
    }

    /// Every transaction in flight, failed with `e` without reading (the connection is gone).
    pub(super) fn fail_in_flight(&mut self, e: &Error) {
        for j in 0..self.flights.len() {
            if self.flights[j].outcome.is_none() {
                let failed = self.err(e.to_string());
                self.flights[j].outcome = Some(Err(failed));
                self.undo(j);
            }
        }
    }

    /// Puts back as pending what failed transaction `i` carried (it stays in `flights` for
    /// its outcome).
    fn undo(&mut self, i: usize) {
        let f = &mut self.flights[i];
        let beat = f.beat;
        let puts = std::mem::take(&mut f.puts);
        let made = std::mem::take(&mut f.made);
        let marks = std::mem::take(&mut f.marks);
        let dirty = std::mem::take(&mut f.dirty);
        let deletes = std::mem::take(&mut f.deletes);
        self.fail(beat, puts, made, marks, dirty, deletes);
    }

    /// The failure rule: what a transaction that failed carried becomes pending again. It
    /// may have run (a reply lost with the connection) or not, and transactions sent after
    /// it may have run: each entry it made is deleted (XDEL, HDEL of its fields) in the
    /// same transaction as the XADD of a new entry, under a new seq above every id sent so
    /// far, holding its records still held, so none is refused as "equal or smaller" nor
    /// kept twice.
    fn fail(
        &mut self,
        beat: bool,
        puts: BTreeMap<u64, Record>,
        made: Vec<u64>,
        marks: Vec<u64>,
        dirty: HashSet<Arc<str>>,
        deletes: Vec<Delete>,
    ) {
        if beat {
            self.beat_at = None;
        }
        for &seq in &made {
            // Gone already when its last record left: its XDEL is in a later transaction
            // or pending.
            if let Some(g) = self.groups.remove(&seq) {
                self.marks.remove(&seq);
                self.deletes.push(Delete::of(seq, g));
            }
        }
        for (pno, r) in puts {
            // Still held and still in an entry this transaction made: not removed since
            // (counted in its entry, deleted above), nor moved by a compaction.
            let Some(l) = (self.live.get_mut(&r.id))
                .filter(|l| l.pno == pno && l.written && made.contains(&l.seq))
            else {
                continue;
            };
            // `seq` stays: the id it was tried under (a failed takeover leaves it alone).
            l.written = false;
            l.progress = false;
            self.dirty.remove(&r.id);
            self.puts.insert(pno, r);
        }
        for id in dirty {
            if self.live.get(&id).is_some_and(|l| l.written) {
                self.dirty.insert(id);
            }
        }
        for seq in marks {
            if self.groups.contains_key(&seq) {
                self.marks.insert(seq);
            }
        }
        self.deletes.extend(deletes);
    }
}

impl Flight {
    /// Whether its replies were read (or it failed without them).
    pub(super) fn is_read(&self) -> bool {
        self.outcome.is_some()
    }
}

/// A transaction sent and what it carries, until its replies are read.
pub(super) struct Flight {
    no: u64,
    /// Commands between MULTI and EXEC, of which the first `xadds` are XADDs and the first
    /// `ours` not `extra`.
    commands: usize,
    xadds: usize,
    ours: usize,
    beat: bool,
    /// Its new messages, by put number, and the entries it made of them (by seq).
    puts: BTreeMap<u64, Record>,
    made: Vec<u64>,
    /// Entries whose done bitmap it wrote.
    marks: Vec<u64>,
    dirty: HashSet<Arc<str>>,
    deletes: Vec<Delete>,
    /// Read: whether it ran whole, with the replies of its `extra`.
    outcome: Option<Result<Vec<Value>, Error>>,
}
