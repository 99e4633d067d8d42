//! Tenants on one store: what is held in memory per tenant, what is parked per name (in our
//! stream, not in memory), names, and reading parked records back (`resumable`).
//!
//! A parked record costs memory only its place (`ParkedPlace`: entry seq and index, 16 bytes):
//! its payload is in Redis, in the group entry it was written in like any put, and
//! `resumable` reads it back (XRANGE of those entries, HMGET of their progress fields)
//! when its tenant has room. Records taken over from dead owners are parked the same way,
//! under their tenant's name, whether or not a tenant of that name is here: one of that
//! name that registers later reads them back; until then they cost their spots.

use super::keys::{self, with_progress, Progress};
use super::{takeover, Live, Put, RedisStore};
use crate::durable::{Cursor, Record, TenantNo};
use crate::error::Error;
use foldhash::HashMap;
use redis::Value;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The messages held in memory, by tenant and id (ids may repeat across tenants), with
/// each tenant's count and payload bytes.
#[derive(Debug, Default)]
pub(super) struct HeldRecords {
    by: HashMap<TenantNo, HashMap<Arc<str>, Live>>,
    counts: HashMap<TenantNo, (u64, u64)>,
}

impl HeldRecords {
    pub fn get(&self, t: TenantNo, id: &str) -> Option<&Live> {
        self.by.get(&t)?.get(id)
    }

    pub fn get_mut(&mut self, t: TenantNo, id: &str) -> Option<&mut Live> {
        self.by.get_mut(&t)?.get_mut(id)
    }

    pub fn contains(&self, t: TenantNo, id: &str) -> bool {
        self.get(t, id).is_some()
    }

    pub fn entry(&mut self, t: TenantNo, id: Arc<str>) -> Entry<'_, Arc<str>, Live> {
        self.by.entry(t).or_default().entry(id)
    }

    pub fn remove_entry(&mut self, t: TenantNo, id: &str) -> Option<(Arc<str>, Live)> {
        self.by.get_mut(&t)?.remove_entry(id)
    }

    pub fn insert(&mut self, t: TenantNo, id: Arc<str>, l: Live) {
        self.by.entry(t).or_default().insert(id, l);
    }

    /// Counts `records` and `bytes` (either may be negative) for tenant `t`.
    pub fn count(&mut self, t: TenantNo, records: i64, bytes: i64) {
        let (r, b) = self.counts.entry(t).or_default();
        *r = r.saturating_add_signed(records);
        *b = b.saturating_add_signed(bytes);
    }

    /// Tenant `t`'s count and payload bytes.
    pub fn counted(&self, t: TenantNo) -> (u64, u64) {
        self.counts.get(&t).copied().unwrap_or((0, 0))
    }

    /// Takes every message of tenant `t` out, with its counts.
    pub fn take(&mut self, t: TenantNo) -> (HashMap<Arc<str>, Live>, (u64, u64)) {
        let lives = self.by.remove(&t).unwrap_or_default();
        (lives, self.counts.remove(&t).unwrap_or((0, 0)))
    }

    pub fn is_empty(&self) -> bool {
        self.by.values().all(HashMap::is_empty)
    }
}

/// Where a parked record is: in our entry `0-at` at index `idx` once written, else the put
/// numbered `at` (still in `puts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ParkedPlace {
    pub at: u64,
    pub idx: u16,
    pub written: bool,
    /// Not counted in its tenant's queue in this process (see `Record::adopted`).
    pub adopted: bool,
}

impl ParkedPlace {
    pub fn put(pno: u64, adopted: bool) -> ParkedPlace {
        ParkedPlace {
            at: pno,
            idx: 0,
            written: false,
            adopted,
        }
    }

    pub fn entry(seq: u64, idx: u32, adopted: bool) -> ParkedPlace {
        ParkedPlace {
            at: seq,
            idx: idx as u16,
            written: true,
            adopted,
        }
    }
}

/// A name's parked records, in order, with their count and payload bytes.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    pub spots: VecDeque<ParkedPlace>,
    pub records: u64,
    pub bytes: u64,
}

/// Payload bytes of a record as counted (id, and what it still has to deliver).
pub(super) fn payload(r: &Record) -> u64 {
    let len = |b: &Option<crate::wire::Body>| b.as_ref().map_or(0, |b| b.len());
    (r.id.len() + len(&r.ingest) + len(&r.hook)) as u64
}

impl RedisStore {
    /// Tenant `no` is named `name`: its puts are kept under that name, records of that
    /// name are resumable for it, and the per-source prefix of that name from before
    /// tenants is scanned for dead owners.
    pub fn register(&mut self, no: TenantNo, name: &str) {
        let name = self.names.register(no, name);
        if takeover::legacy_prefix(&self.prefix, &name).is_some() {
            self.takeover.legacy.insert(name);
        }
    }

    /// Records of tenant `tenant` held (in memory and parked) and their payload bytes.
    pub fn pending(&self, tenant: TenantNo) -> (u64, u64) {
        let (r, b) = self.live.counted(tenant);
        match self.waiting.get(&self.names.name_of(tenant)) {
            Some(w) => (r + w.records, b + w.bytes),
            None => (r, b),
        }
    }

    /// Parks `rec` under `name` (not in memory once written): read back by `resumable`.
    /// Returns its put number.
    pub(super) fn park(&mut self, name: Arc<str>, rec: Record, copies: u32, adopted: bool) -> u64 {
        let pno = self.commits.next_put();
        let w = self.waiting.entry(name.clone()).or_default();
        w.spots.push_back(ParkedPlace::put(pno, adopted));
        w.records += 1;
        w.bytes += payload(&rec);
        self.commits.puts.insert(
            pno,
            Put {
                rec,
                name,
                parked: true,
                copies: copies.max(1),
                at: None,
            },
        );
        pno
    }

    /// Tenant `no` has closed: every record it holds (in memory or parked) stays, parked
    /// under its name, in the order it came, resumable (as adopted) for the next tenant of
    /// that name. What is in flight is settled first, so nothing it holds is mid-commit.
    pub fn release(&mut self, no: TenantNo) {
        self.read_up_to(u64::MAX);
        let name = self.names.name_of(no);
        let (lives, (records, bytes)) = self.live.take(no);
        let mut spots: Vec<((u8, u64, u32), ParkedPlace)> = Vec::with_capacity(lives.len());
        for (id, l) in lives {
            if l.written {
                // Its progress not written yet goes as a field of its entry.
                if self.commits.dirty.remove(&(no, id)) {
                    self.commits.loose.push((l.seq, l.idx, l.progress()));
                }
                if let Some(g) = self.commits.groups.get_mut(&l.seq) {
                    if let Some(r) = g.recs.get_mut(l.idx as usize) {
                        *r = None;
                    }
                    g.parked += 1;
                    if !l.progress && !g.fields.contains(&l.idx) {
                        g.fields.push(l.idx);
                    }
                }
                spots.push(((0, l.seq, l.idx), ParkedPlace::entry(l.seq, l.idx, true)));
            } else if let Some(put) = self.commits.puts.get_mut(&l.pno) {
                // Not written yet: it goes as a parked put, its progress in the record.
                let r = &mut put.rec;
                r.first_ms = l.first_ms;
                if l.ingest_done {
                    r.ingest = None;
                }
                r.hook_mask = l.mask;
                if l.mask == 0 {
                    r.hook = None;
                }
                put.parked = true;
                put.copies = l.copies;
                spots.push(((1, l.pno, 0), ParkedPlace::put(l.pno, true)));
            }
        }
        spots.sort_unstable_by_key(|(k, _)| *k);
        let w = self.waiting.entry(name.clone()).or_default();
        let mut all: VecDeque<ParkedPlace> = spots.into_iter().map(|(_, s)| s).collect();
        all.extend(
            w.spots
                .drain(..)
                .map(|s| ParkedPlace { adopted: true, ..s }),
        );
        w.spots = all;
        w.records += records;
        w.bytes += bytes;
        if w.spots.is_empty() {
            self.waiting.remove(&name);
        }
        self.names.forget(no);
    }

    /// Records of tenant `tenant` to pass on: its name's parked records (its own, and those
    /// taken over or left by a closed tenant of its name: `adopted`), oldest first, at most
    /// `limit`. Once returned, a record is held as if put. An id the tenant holds already is
    /// dropped (receivers deduplicate by messageId). The cursor counts what was handed out
    /// (only this store reads it; the order is kept here).
    pub fn resumable(
        &mut self,
        tenant: TenantNo,
        _after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        // A failed commit in flight puts its parked records back in memory: known first.
        self.read_up_to(u64::MAX);
        let name = self.names.name_of(tenant);
        let spots: Vec<ParkedPlace> = match self.waiting.get(&name) {
            Some(w) => w.spots.iter().take(limit).copied().collect(),
            None => Vec::new(),
        };
        let read = self.read_back(&name, &spots)?;
        let mut out = Vec::with_capacity(spots.len());
        // Bytes of the records taken off the queue (each spot leaves it, found or not).
        let mut taken_bytes = 0u64;
        for (spot, found) in spots.iter().zip(read) {
            let Some((record, copies, progress)) = found else {
                // Its entry is gone from Redis (a Redis that lost data): nothing to resume.
                continue;
            };
            taken_bytes += payload(&record);
            if self.live.contains(tenant, &record.id) {
                // Held already: this copy leaves.
                if spot.written {
                    if let Some(g) = self.commits.groups.get_mut(&spot.at) {
                        g.parked = g.parked.saturating_sub(1);
                    }
                    self.commits.removed(spot.at, u32::from(spot.idx));
                } else {
                    self.commits.puts.remove(&spot.at);
                }
                continue;
            }
            let len = |b: &Option<crate::wire::Body>| b.as_ref().map_or(0, |b| b.len() as u32);
            let mut live = Live {
                pno: 0,
                seq: 0,
                idx: 0,
                copies,
                first_ms: record.first_ms,
                ingest_done: record.ingest.is_none(),
                mask: record.hook_mask,
                ingest: len(&record.ingest),
                hook: len(&record.hook),
                written: spot.written,
                progress,
            };
            if spot.written {
                live.pno = self.commits.next_put();
                (live.seq, live.idx) = (spot.at, u32::from(spot.idx));
                if let Some(g) = self.commits.groups.get_mut(&spot.at) {
                    g.parked = g.parked.saturating_sub(1);
                    let i = usize::from(spot.idx);
                    if g.recs.len() <= i {
                        g.recs.resize(i + 1, None);
                    }
                    g.recs[i] = Some(Record {
                        tenant,
                        ..record.clone()
                    });
                }
            } else {
                live.pno = spot.at;
                if let Some(put) = self.commits.puts.get_mut(&spot.at) {
                    put.parked = false;
                    put.rec.tenant = tenant;
                }
            }
            self.live.insert(tenant, record.id.clone(), live);
            self.live.count(tenant, 1, live.bytes(&record.id) as i64);
            out.push(Record {
                tenant,
                adopted: spot.adopted,
                ..record
            });
        }
        if let Some(w) = self.waiting.get_mut(&name) {
            w.spots.drain(..spots.len());
            w.records = w.records.saturating_sub(spots.len() as u64);
            w.bytes = w.bytes.saturating_sub(taken_bytes);
            if w.spots.is_empty() {
                self.waiting.remove(&name);
            }
        }
        self.resumed += out.len() as i64;
        Ok((out, Some(Cursor(self.resumed))))
    }

    /// The records at `spots` (of name `name`), with their copies and whether a progress
    /// field holds their progress: unwritten ones from `puts`, written ones read back from
    /// our stream in one round trip (one XRANGE per entry, one HMGET of their progress
    /// fields). `None` for a record no longer there.
    #[allow(clippy::type_complexity)]
    fn read_back(
        &mut self,
        name: &Arc<str>,
        spots: &[ParkedPlace],
    ) -> Result<Vec<Option<(Record, u32, bool)>>, Error> {
        let mut seqs: Vec<u64> = spots.iter().filter(|s| s.written).map(|s| s.at).collect();
        seqs.dedup();
        let mut entries: HashMap<u64, Vec<(Arc<str>, Record)>> = HashMap::default();
        let mut progress: Vec<Option<Progress>> = Vec::new();
        if !seqs.is_empty() {
            let mut pipe = redis::pipe();
            for seq in &seqs {
                let id = format!("0-{seq}");
                pipe.cmd("XRANGE").arg(&self.keys.stream).arg(&id).arg(&id);
            }
            let fields: Vec<String> = (spots.iter().filter(|s| s.written))
                .map(|s| keys::field_of(&format!("0-{}", s.at), usize::from(s.idx)))
                .collect();
            pipe.cmd("HMGET").arg(&self.keys.progress).arg(&fields);
            let mut replies = self.query(pipe, false)?;
            progress = match replies.pop() {
                Some(Value::Array(v)) if v.len() == fields.len() => v
                    .iter()
                    .map(|v| keys::bytes(v).and_then(Progress::decode))
                    .collect(),
                other => return Err(self.err(format!("unexpected HMGET reply: {other:?}"))),
            };
            for (seq, reply) in seqs.iter().zip(&replies) {
                let held = match reply {
                    Value::Array(list) => list.first().and_then(|e| match e {
                        Value::Array(pair) => pair.get(1).and_then(|f| keys::held_of(f, name)),
                        _ => None,
                    }),
                    _ => None,
                };
                if let Some(keys::Held::Group(v)) = held {
                    entries.insert(*seq, v);
                }
            }
        }
        let mut progress = progress.into_iter();
        let mut out = Vec::with_capacity(spots.len());
        for spot in spots {
            if !spot.written {
                out.push(
                    (self.commits.puts.get(&spot.at)).map(|p| (p.rec.clone(), p.copies, false)),
                );
                continue;
            }
            let p = progress.next().flatten();
            let found = (entries.get(&spot.at))
                .and_then(|v| v.get(usize::from(spot.idx)))
                .map(|(_, r)| {
                    let (r, copies) = with_progress(r.clone(), p);
                    (r, copies, p.is_some())
                });
            out.push(found);
        }
        Ok(out)
    }

    /// The spots of parked puts just sent move from their put numbers to their entries:
    /// each name's unwritten spots are found from its queue's end (they are its newest,
    /// but for those a failed commit put back, a commit or two older).
    pub(super) fn place(&mut self, puts: &BTreeMap<u64, Put>, parked: &[(u64, u64, u32)]) {
        let mut by_name: HashMap<Arc<str>, HashMap<u64, (u64, u32)>> = HashMap::default();
        for &(pno, seq, idx) in parked {
            if let Some(p) = puts.get(&pno) {
                by_name
                    .entry(p.name.clone())
                    .or_default()
                    .insert(pno, (seq, idx));
            }
        }
        for (name, mut at) in by_name {
            let Some(w) = self.waiting.get_mut(&name) else {
                continue;
            };
            for spot in w.spots.iter_mut().rev() {
                if at.is_empty() {
                    break;
                }
                if !spot.written {
                    if let Some((seq, idx)) = at.remove(&spot.at) {
                        *spot = ParkedPlace::entry(seq, idx, spot.adopted);
                    }
                }
            }
        }
    }

    /// The reverse of `place`, for a commit that failed.
    pub(super) fn unplace(&mut self, puts: &BTreeMap<u64, Put>, parked: &[(u64, u64, u32)]) {
        let mut by_name: HashMap<Arc<str>, HashMap<(u64, u16), u64>> = HashMap::default();
        for &(pno, seq, idx) in parked {
            if let Some(p) = puts.get(&pno) {
                let of = by_name.entry(p.name.clone()).or_default();
                of.insert((seq, idx as u16), pno);
            }
        }
        for (name, mut at) in by_name {
            let Some(w) = self.waiting.get_mut(&name) else {
                continue;
            };
            for spot in w.spots.iter_mut().rev() {
                if at.is_empty() {
                    break;
                }
                if spot.written {
                    if let Some(pno) = at.remove(&(spot.at, spot.idx)) {
                        *spot = ParkedPlace::put(pno, spot.adopted);
                    }
                }
            }
        }
    }
}
