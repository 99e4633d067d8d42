//! Group commits: ops noted in memory, then what Redis lacks written in one MULTI/EXEC,
//! pipelined: a transaction is sent before the replies of the one before it are read (see
//! the module docs, "# Commits", for what a failed one does).

use super::{
    describe, is_readonly, keys, resp, Delete, Group, Live, Put, RedisStore, COMPACT_MIN, GROUP_MAX,
};
use crate::durable::{Op, Record, TenantNo, Ticket};
use crate::error::Error;
use crate::wire::Body;
use foldhash::HashMap;
use redis::Value;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What Redis lacks, and the transactions sent that carry it.
pub(super) struct Commits {
    /// Messages to XADD, by put number (a held one removed before being written: never
    /// written).
    pub(super) puts: BTreeMap<u64, Put>,
    next_pno: u64,
    /// Our written entries, by seq.
    pub(super) groups: HashMap<u64, Group>,
    /// Written messages whose progress changed since the last commit.
    pub(super) dirty: HashSet<(TenantNo, Arc<str>)>,
    /// Progress of written records parked since (their tenant closed), to write.
    pub(super) loose: Vec<(u64, u32, keys::Progress)>,
    /// Written entries whose done bitmap changed since the last commit.
    marks: HashSet<u64>,
    /// Written entries to delete.
    pub(super) deletes: Vec<Delete>,
    next_seq: u64,
    /// Transactions sent whose replies are not read or not yet asked for, oldest first,
    /// and the number of the last one sent.
    flights: VecDeque<SentCommit>,
    flight_no: u64,
    /// The buffer each commit's transaction is written into, kept between commits.
    wire: Vec<u8>,
}

impl Default for Commits {
    fn default() -> Commits {
        Commits {
            puts: BTreeMap::new(),
            next_pno: 1,
            groups: HashMap::default(),
            dirty: HashSet::new(),
            loose: Vec::new(),
            marks: HashSet::new(),
            deletes: Vec::new(),
            next_seq: 1,
            flights: VecDeque::new(),
            flight_no: 0,
            wire: Vec::new(),
        }
    }
}

impl Commits {
    /// The seq of a new entry of ours.
    fn next_group(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// A number for a new put.
    pub(super) fn next_put(&mut self) -> u64 {
        let pno = self.next_pno;
        self.next_pno += 1;
        pno
    }

    /// How many writes are waiting for the next commit.
    pub(super) fn backlog(&self) -> usize {
        self.puts.len()
            + self.dirty.len()
            + self.loose.len()
            + self.marks.len()
            + self.deletes.len()
    }

    /// Whether a transaction sent still owes its replies.
    pub(super) fn in_flight(&self) -> bool {
        self.flights.iter().any(|f| !f.is_read())
    }

    /// Record `idx` of our written entry `seq` left: the entry goes with its last record;
    /// until then the record is marked done in the entry's bitmap (an adopter skips it).
    pub(super) fn removed(&mut self, seq: u64, idx: u32) {
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
}

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
        let (tenant, id) = (op.tenant(), op.id());
        if let Op::Park(r) = op {
            // Written like a put, then out of memory until `resumable` reads it back.
            self.park(self.names.name_of(tenant), r.clone(), 1, false);
            return;
        }
        // One hash of the id per op where it can (two for an id accepted again): this runs
        // for every message.
        if let Op::Put(r) = op {
            let name = self.names.name_of(tenant);
            if let Entry::Vacant(slot) = self.live.entry(tenant, id.clone()) {
                let len = |b: &Option<Body>| b.as_ref().map_or(0, |b| b.len() as u32);
                let pno = self.commits.next_put();
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
                let bytes = live.bytes(id) as i64;
                slot.insert(live);
                self.live.count(tenant, 1, bytes);
                let put = Put {
                    rec: r.clone(),
                    name,
                    parked: false,
                    copies: 1,
                    at: None,
                };
                self.commits.puts.insert(pno, put);
                return;
            }
        }
        if let Op::Remove { .. } = op {
            let Some((id, l)) = self.live.remove_entry(tenant, id) else {
                return;
            };
            if l.copies > 1 {
                // One more Remove to leave; its progress (copies) changed.
                if l.written {
                    self.commits.dirty.insert((tenant, id.clone()));
                }
                let copies = l.copies - 1;
                self.live.insert(tenant, id, Live { copies, ..l });
                return;
            }
            if !self.commits.dirty.is_empty() {
                self.commits.dirty.remove(&(tenant, id.clone()));
            }
            self.live.count(tenant, -1, -(l.bytes(&id) as i64));
            if l.written {
                self.commits.removed(l.seq, l.idx);
            } else {
                self.commits.puts.remove(&l.pno);
            }
            return;
        }
        let Some(l) = self.live.get_mut(tenant, id) else {
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
            // Handled above.
            Op::Remove { .. } | Op::Park(_) => return,
        }
        let after = l.bytes(id);
        let written = l.written;
        let (seq, idx, ingest_done, mask) = (l.seq, l.idx, l.ingest_done, l.mask);
        self.live.count(tenant, 0, after as i64 - before as i64);
        if changed && written {
            self.commits.dirty.insert((tenant, id.clone()));
            // The payloads a compaction would not write again are not kept for it.
            if after < before {
                let kept = (self.commits.groups.get_mut(&seq))
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

    /// Compacts our entries sent at least `older_than` ago of which at most a quarter is
    /// still held and none parked (see `COMPACT_MIN`): their held records become new puts,
    /// written by the next commit in its group, and the old entries are deleted (XDEL, HDEL
    /// of their fields) in that same transaction, as the failure rule does for a failed one.
    /// An entry with parked records waits until they are read back (they are in order, so
    /// soon): compaction never needs a payload that is not in memory.
    pub(super) fn compact(&mut self, older_than: Duration) {
        let old: Vec<u64> = (self.commits.groups.iter())
            .filter(|(_, g)| {
                g.n >= COMPACT_MIN
                    && g.parked == 0
                    && g.left * 4 <= g.n
                    && g.at.elapsed() >= older_than
            })
            .map(|(&seq, _)| seq)
            .collect();
        for seq in old {
            let mut g = self.commits.groups.remove(&seq).expect("listed above");
            self.commits.marks.remove(&seq);
            for r in std::mem::take(&mut g.recs).into_iter().flatten() {
                let t = r.tenant;
                let Some(l) = (self.live.get_mut(t, &r.id)).filter(|l| l.written && l.seq == seq)
                else {
                    continue;
                };
                l.written = false;
                l.progress = false;
                let pno = l.pno;
                self.commits.dirty.remove(&(t, r.id.clone()));
                let put = Put {
                    name: self.names.name_of(t),
                    rec: r,
                    parked: false,
                    copies: 1,
                    at: None,
                };
                self.commits.puts.insert(pno, put);
            }
            self.commits.deletes.push(Delete::of(seq, g));
        }
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
        if self.commits.backlog() == 0 && extra.is_empty() && !self.heartbeat.due() {
            return Ok(None);
        }
        // Not connected: nothing is sent, nothing changes.
        self.conn()?;
        if self.acks.recheck {
            self.recheck_ack()?;
        }
        let mut out = std::mem::take(&mut self.commits.wire);
        out.clear();
        out.extend_from_slice(resp::MULTI);
        // Progress fields and done bitmaps, for one HSET.
        let mut progress: Vec<(resp::Field, Vec<u8>)> = Vec::new();
        let puts = std::mem::take(&mut self.commits.puts);
        let (made, parked) = self.write_groups(&mut out, &puts, &mut progress);
        self.place(&puts, &parked);
        let xadds = made.len();
        let (loose, marks) = self.changed_progress(&mut progress);
        let mut ours = xadds + self.write_changes(&mut out, &progress);
        let beat = self.heartbeat.due();
        if beat {
            ours += 1;
            (self.heartbeat.cmd(&self.keys.alive, self.takeover_after))
                .write_packed_command(&mut out);
        }
        for cmd in extra {
            cmd.write_packed_command(&mut out);
        }
        out.extend_from_slice(resp::EXEC);
        // New records count once Redis confirms them as `redis_ack` asks (after EXEC: a
        // WAIT inside MULTI would not wait). Progress and removals alone wait for nothing,
        // nor does a takeover (`extra`): it moves records that are acknowledged already,
        // and replicas apply its transaction whole or not at all.
        let wait = match xadds == 0 || !extra.is_empty() {
            true => None,
            false => self.acks.wait_cmd(self.link.io_timeout),
        };
        if let Some(cmd) = &wait {
            cmd.write_packed_command(&mut out);
        }
        self.commits.flight_no += 1;
        let flight = SentCommit {
            no: self.commits.flight_no,
            commands: ours + extra.len(),
            wait: wait.is_some(),
            xadds,
            ours,
            beat,
            puts,
            made,
            parked,
            loose,
            marks,
            dirty: std::mem::take(&mut self.commits.dirty),
            deletes: std::mem::take(&mut self.commits.deletes),
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
            self.commits.wire = out;
        }
        self.commits.flights.push_back(flight);
        if let Err(e) = sent {
            // Those sent before it are lost with the connection too.
            self.fail_in_flight(&e);
            self.commits.flights.pop_back();
            return Err(e);
        }
        Ok(Some(self.commits.flight_no))
    }

    /// Writes the XADDs of `puts` still to write into `out`, one entry per commit group of
    /// at most `GROUP_MAX` records in one field (Redis parses, appends and later deletes one
    /// value per group, not one per message), and the progress of records with copies into
    /// `progress`. A held put is written while its message is still held; a parked one
    /// always (only `resumable` takes it out of `puts`). Held ones first: a group keeps its
    /// held records for compaction as a prefix, so a group of parked records keeps nothing.
    /// Returns the seqs of the entries made, and the parked puts sent as (put number, entry
    /// seq, index), to place them.
    #[allow(clippy::type_complexity)]
    fn write_groups(
        &mut self,
        out: &mut Vec<u8>,
        puts: &BTreeMap<u64, Put>,
        progress: &mut Vec<(resp::Field, Vec<u8>)>,
    ) -> (Vec<u64>, Vec<(u64, u64, u32)>) {
        let mut held: Vec<(u64, &Put)> = puts
            .iter()
            .filter(|(pno, p)| {
                p.parked || (self.live.get(p.rec.tenant, &p.rec.id)).is_some_and(|l| l.pno == **pno)
            })
            .map(|(pno, p)| (*pno, p))
            .collect();
        held.sort_by_key(|(_, p)| p.parked);
        let mut made = Vec::new();
        let mut parked: Vec<(u64, u64, u32)> = Vec::new();
        for chunk in held.chunks(GROUP_MAX) {
            let seq = self.commits.next_group();
            let mut fields = Vec::new();
            let mut recs = Vec::new();
            let mut group = keys::GroupOut {
                names: Vec::new(),
                records: Vec::with_capacity(chunk.len()),
            };
            let mut n_parked = 0;
            for (i, (pno, p)) in chunk.iter().enumerate() {
                let name = match group.names.iter().rposition(|n| *n == &*p.name) {
                    Some(at) => at,
                    None => {
                        group.names.push(&p.name);
                        group.names.len() - 1
                    }
                } as u16;
                let at = resp::Field::Of(seq, i as u32);
                let (packed, progressed) = match p.parked {
                    true => {
                        n_parked += 1;
                        parked.push((*pno, seq, i as u32));
                        parked_record(p)
                    }
                    false => {
                        recs.push(Some(p.rec.clone()));
                        self.held_record(&p.rec, seq, i as u32)
                    }
                };
                if let Some(pr) = progressed {
                    fields.push(i as u32);
                    progress.push((at, pr.encode().into_bytes()));
                }
                group.records.push((name, packed));
            }
            resp::xadd_group(out, &self.keys.stream, seq, &group);
            let n = chunk.len() as u32;
            self.commits.groups.insert(
                seq,
                Group {
                    n,
                    left: n,
                    parked: n_parked,
                    done: Vec::new(),
                    fields,
                    recs,
                    at: Instant::now(),
                },
            );
            made.push(seq);
        }
        (made, parked)
    }

    /// A held record written as record `idx` of entry `seq`: taken as written from here on
    /// (what changes goes as a change to this entry); packed with what its message still
    /// needs, and its progress when it counts copies.
    fn held_record<'a>(
        &mut self,
        r: &'a Record,
        seq: u64,
        idx: u32,
    ) -> (keys::Packed<'a>, Option<keys::Progress>) {
        let l = (self.live.get_mut(r.tenant, &r.id)).expect("held: checked by write_groups");
        l.seq = seq;
        l.idx = idx;
        l.written = true;
        l.progress = l.copies > 1;
        let packed = keys::Packed {
            id: &r.id,
            accepted_ms: r.accepted_ms,
            first_ms: l.first_ms,
            ingest: r.ingest.as_deref().filter(|_| !l.ingest_done),
            hook: r.hook.as_deref().filter(|_| l.mask != 0),
            mask: l.mask,
            hooks_key: r.hooks_key,
        };
        (packed, l.progress.then(|| l.progress()))
    }

    /// Progress of written records changed since the last commit (held, or parked since),
    /// and the done bitmaps of entries with records removed, into `progress`. Returns what
    /// was taken for it (a failed transaction puts them back).
    fn changed_progress(
        &mut self,
        progress: &mut Vec<(resp::Field, Vec<u8>)>,
    ) -> (Vec<(u64, u32, keys::Progress)>, Vec<u64>) {
        for (t, id) in &self.commits.dirty {
            if let Some(l) = self.live.get_mut(*t, id) {
                let p = l.progress().encode().into_bytes();
                progress.push((resp::Field::Of(l.seq, l.idx), p));
                if !l.progress {
                    l.progress = true;
                    if let Some(g) = self.commits.groups.get_mut(&l.seq) {
                        g.fields.push(l.idx);
                    }
                }
            }
        }
        let loose = std::mem::take(&mut self.commits.loose);
        for (seq, idx, p) in &loose {
            progress.push((resp::Field::Of(*seq, *idx), p.encode().into_bytes()));
        }
        let marks: Vec<u64> = self.commits.marks.drain().collect();
        for &seq in &marks {
            if let Some(g) = self.commits.groups.get(&seq) {
                progress.push((resp::Field::Done(seq), g.done.clone()));
            }
        }
        (loose, marks)
    }

    /// Writes the HSET of `progress`, and the XDEL and HDEL of the entries to delete, into
    /// `out`; returns how many commands it wrote.
    fn write_changes(&self, out: &mut Vec<u8>, progress: &[(resp::Field, Vec<u8>)]) -> usize {
        let mut commands = 0;
        if !progress.is_empty() {
            commands += 1;
            resp::array(out, 2 + 2 * progress.len());
            resp::bulk(out, b"HSET");
            resp::bulk(out, self.keys.progress.as_bytes());
            for (field, value) in progress {
                resp::bulk_field(out, *field);
                resp::bulk(out, value);
            }
        }
        if !self.commits.deletes.is_empty() {
            commands += 1;
            let all = self.commits.deletes.iter().map(|d| d.seq);
            resp::ids(out, "XDEL", &self.keys.stream, all);
            let mut fields = Vec::new();
            for d in &self.commits.deletes {
                if d.n > 1 {
                    fields.push(resp::Field::Done(d.seq));
                }
                fields.extend(d.fields.iter().map(|&i| resp::Field::Of(d.seq, i)));
            }
            if !fields.is_empty() {
                commands += 1;
                resp::hdel(out, &self.keys.progress, &fields);
            }
        }
        commands
    }

    /// The outcome of transaction `no` (the replies of its `extra` commands), after reading
    /// the replies of every transaction up to it in order.
    pub(super) fn outcome(&mut self, no: u64) -> Result<Vec<Value>, Error> {
        self.read_up_to(no);
        let mut found = Ok(Vec::new());
        while self.commits.flights.front().is_some_and(|f| f.no <= no) {
            let f = self.commits.flights.pop_front().expect("checked above");
            if f.no == no {
                found = f.outcome.expect("read above");
            }
        }
        found
    }

    /// Reads the replies of every transaction in flight up to `no` whose replies are not
    /// read yet; their outcomes wait in `flights` for `outcome`.
    pub(super) fn read_up_to(&mut self, no: u64) {
        for i in 0..self.commits.flights.len() {
            if self.commits.flights[i].no > no {
                break;
            }
            if self.commits.flights[i].outcome.is_some() {
                continue;
            }
            let read = self.read_one(i);
            let outcome = match read {
                Ok((exec, wait)) => match self.check(i, exec) {
                    // It ran: only its confirmation is missing. Not undone (it is written),
                    // but not acknowledged either.
                    Ok(extra) => match wait
                        .as_ref()
                        .map(|w| self.acks.confirmed(w, self.link.io_timeout))
                    {
                        Some(Err(why)) => {
                            self.commits.flights[i].outcome = Some(Err(self.err(why)));
                            continue;
                        }
                        _ => Ok(extra),
                    },
                    failed => failed,
                },
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
            self.commits.flights[i].outcome = Some(outcome);
        }
    }

    /// Reads the replies of transaction `i` (MULTI's, one per command, EXEC's, and its
    /// confirmation's); the EXEC reply and the confirmation's, or why the connection failed.
    fn read_one(&mut self, i: usize) -> Result<(Value, Option<Value>), String> {
        let wait = self.commits.flights[i].wait;
        let expected = self.commits.flights[i].commands + 2 + usize::from(wait);
        let Some(conn) = self.link.conn.as_mut() else {
            return Err("connection lost".into());
        };
        let (mut before, mut last) = (Value::Nil, Value::Nil);
        let mut got = 0;
        while got < expected {
            match conn.recv_response() {
                // RESP3 may put push data between replies.
                Ok(Value::Push { .. }) => {}
                Ok(v) => {
                    got += 1;
                    before = std::mem::replace(&mut last, v);
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(match wait {
            true => (before, Some(last)),
            false => (last, None),
        })
    }

    /// Whether transaction `i` ran whole, from its EXEC reply; the replies of its `extra`.
    fn check(&mut self, i: usize, exec: Value) -> Result<Vec<Value>, Error> {
        let (commands, xadds, ours) = {
            let f = &self.commits.flights[i];
            (f.commands, f.xadds, f.ours)
        };
        let mut replies = match exec {
            Value::Array(items) if items.len() == commands => items,
            e @ Value::ServerError(_) => {
                if is_readonly(&e) {
                    // A primary demoted by a failover: the next connection finds the new one.
                    self.lose_connection();
                }
                return Err(self.err(format!("transaction refused: {}", describe(&e))));
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
                    if is_readonly(reply) {
                        self.lose_connection();
                    }
                    return Err(self.err(format!("commit: {}", describe(reply))));
                }
            }
        }
        Ok(replies.split_off(ours))
    }

    /// Every transaction in flight, failed with `e` without reading (the connection is gone).
    pub(super) fn fail_in_flight(&mut self, e: &Error) {
        for j in 0..self.commits.flights.len() {
            if self.commits.flights[j].outcome.is_none() {
                let failed = self.err(e.to_string());
                self.commits.flights[j].outcome = Some(Err(failed));
                self.undo(j);
            }
        }
    }

    /// Puts back as pending what failed transaction `i` carried (it stays in `flights` for
    /// its outcome).
    fn undo(&mut self, i: usize) {
        let f = &mut self.commits.flights[i];
        let beat = f.beat;
        let sent = Sent {
            puts: std::mem::take(&mut f.puts),
            made: std::mem::take(&mut f.made),
            parked: std::mem::take(&mut f.parked),
            loose: std::mem::take(&mut f.loose),
            marks: std::mem::take(&mut f.marks),
            dirty: std::mem::take(&mut f.dirty),
            deletes: std::mem::take(&mut f.deletes),
        };
        self.fail(beat, sent);
    }

    /// The failure rule: what a transaction that failed carried becomes pending again. It
    /// may have run (a reply lost with the connection) or not, and transactions sent after
    /// it may have run: each entry it made is deleted (XDEL, HDEL of its fields) in the
    /// same transaction as the XADD of a new entry, under a new seq above every id sent so
    /// far, holding its records still held, so none is refused as "equal or smaller" nor
    /// kept twice.
    fn fail(&mut self, beat: bool, sent: Sent) {
        let Sent {
            puts,
            made,
            parked,
            loose,
            marks,
            dirty,
            deletes,
        } = sent;
        if beat {
            self.heartbeat.missed();
        }
        for &seq in &made {
            // Gone already when its last record left: its XDEL is in a later transaction
            // or pending.
            if let Some(g) = self.commits.groups.remove(&seq) {
                self.commits.marks.remove(&seq);
                self.commits.deletes.push(Delete::of(seq, g));
            }
        }
        // Parked records it carried are puts again, their spots back on their put numbers
        // (nothing read them back meanwhile: `resumable` settles what is in flight first).
        let tried: HashMap<u64, (u64, u32)> = parked
            .iter()
            .map(|&(pno, seq, idx)| (pno, (seq, idx)))
            .collect();
        self.unplace(&puts, &parked);
        for (pno, mut put) in puts {
            if put.parked {
                put.at = tried.get(&pno).copied();
                self.commits.puts.insert(pno, put);
                continue;
            }
            let r = &put.rec;
            // Still held and still in an entry this transaction made: not removed since
            // (counted in its entry, deleted above), nor moved by a compaction.
            let Some(l) = (self.live.get_mut(r.tenant, &r.id))
                .filter(|l| l.pno == pno && l.written && made.contains(&l.seq))
            else {
                continue;
            };
            // `seq` stays: the id it was tried under (a failed takeover leaves it alone).
            l.written = false;
            l.progress = false;
            self.commits.dirty.remove(&(r.tenant, r.id.clone()));
            self.commits.puts.insert(pno, put);
        }
        for (t, id) in dirty {
            if self.live.get(t, &id).is_some_and(|l| l.written) {
                self.commits.dirty.insert((t, id));
            }
        }
        for l in loose {
            if self.commits.groups.contains_key(&l.0) {
                self.commits.loose.push(l);
            }
        }
        for seq in marks {
            if self.commits.groups.contains_key(&seq) {
                self.commits.marks.insert(seq);
            }
        }
        self.commits.deletes.extend(deletes);
    }
}

/// A parked put packed as it is (not in memory once written), and its progress when it
/// counts copies.
fn parked_record(p: &Put) -> (keys::Packed<'_>, Option<keys::Progress>) {
    let r = &p.rec;
    let packed = keys::Packed {
        id: &r.id,
        accepted_ms: r.accepted_ms,
        first_ms: r.first_ms,
        ingest: r.ingest.as_deref(),
        hook: r.hook.as_deref(),
        mask: r.hook_mask,
        hooks_key: r.hooks_key,
    };
    let progress = (p.copies > 1).then(|| keys::Progress {
        first_ms: r.first_ms,
        ingest_done: r.ingest.is_none(),
        mask: r.hook_mask,
        copies: p.copies,
    });
    (packed, progress)
}

/// What a failed transaction carried, to put back as pending.
struct Sent {
    puts: BTreeMap<u64, Put>,
    made: Vec<u64>,
    parked: Vec<(u64, u64, u32)>,
    loose: Vec<(u64, u32, keys::Progress)>,
    marks: Vec<u64>,
    dirty: HashSet<(TenantNo, Arc<str>)>,
    deletes: Vec<Delete>,
}

impl SentCommit {
    /// Whether its replies were read (or it failed without them).
    pub(super) fn is_read(&self) -> bool {
        self.outcome.is_some()
    }
}

/// A transaction sent and what it carries, until its replies are read.
pub(super) struct SentCommit {
    no: u64,
    /// Commands between MULTI and EXEC, of which the first `xadds` are XADDs and the first
    /// `ours` not `extra`; and whether a confirmation (`redis_ack`) follows the EXEC.
    commands: usize,
    wait: bool,
    xadds: usize,
    ours: usize,
    beat: bool,
    /// Its new messages, by put number, and the entries it made of them (by seq).
    puts: BTreeMap<u64, Put>,
    made: Vec<u64>,
    /// Its parked puts: (put number, entry seq, index).
    parked: Vec<(u64, u64, u32)>,
    /// Progress fields of parked records it wrote.
    loose: Vec<(u64, u32, keys::Progress)>,
    /// Entries whose done bitmap it wrote.
    marks: Vec<u64>,
    dirty: HashSet<(TenantNo, Arc<str>)>,
    deletes: Vec<Delete>,
    /// Read: whether it ran whole, with the replies of its `extra`.
    outcome: Option<Result<Vec<Value>, Error>>,
}
