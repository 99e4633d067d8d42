//! Takeover: the streams of owners whose heartbeat expired moved into ours, parked under
//! their tenants' names (`tenants.rs` hands them out). Besides our prefix's owners, the
//! owners of each registered tenant's per-source prefix of the version before tenants
//! (`PREFIX:NAME`, as outbound-relay named a source's keys): their records, written without
//! names, are that tenant's. Such a prefix is scanned while its registry lists owners; an
//! empty one is left (a process of that version that starts later adds itself to it, and
//! is taken over when the tenant registers again, e.g. at the next start).

use super::keys::{self, with_progress, Keys, Progress, GROUP};
use super::{describe, tenants, RedisStore, COMPACT_AFTER, GROUP_MAX};
use crate::durable::Adopted;
use crate::error::Error;
use foldhash::HashMap;
use redis::Value;
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// Most records one pass takes over: they are read into memory (payloads included) before
/// they are written to our stream, parked. A larger backlog stays where it is, for the next
/// pass, or for another living process.
const ADOPT_MAX: usize = 10_000;

/// The per-source prefix of the version before tenants for tenant `name` under `prefix`
/// (`PREFIX:NAME`), when `name` can be one.
pub(super) fn legacy_prefix(prefix: &str, name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && prefix.len() + 1 + name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    ok.then(|| format!("{prefix}:{name}"))
}

/// The most commit groups read at once beyond what `ADOPT_MAX` needs when the groups seen
/// are small (see `take_over`).
const READ_MORE: usize = 16;

/// The entries one pass read from a dead owner's stream, and the stream's length after.
type PassRead = (Vec<Entry>, Option<Value>);

/// A stream entry as read: its id and what it holds.
type Entry = (String, Read);

/// What an entry holds: records (one, or a commit group); one written by a newer version of
/// the library (left in the stream for such a version to take over: dropping it would lose
/// its message); or something that is not an outbound message at all (dropped, and
/// reported).
#[derive(Clone)]
enum Read {
    Held(keys::Held),
    Newer,
    Foreign,
}

impl RedisStore {
    /// Refreshes our heartbeat, then moves into our stream what owners without one left, at
    /// about [`ADOPT_MAX`] records a pass (entries are read whole: see `take_over`): our
    /// prefix's owners, then those of each legacy prefix still scanned. `files` counts the
    /// owners taken from; `tenants`, the registered tenants with records to resume.
    pub fn adopt(&mut self) -> Result<Adopted, Error> {
        // The heartbeat first: a commit that keeps failing (a key someone broke, Redis out
        // of memory) must not make a living owner look dead.
        self.beat()?;
        // What we owe Redis goes next (with entries mostly delivered compacted): a
        // takeover's transaction then holds only its own.
        self.compact(COMPACT_AFTER);
        self.sync(&[])?;
        self.recheck_ack()?;
        let mut out = Adopted::default();
        if let Some(change) = self.acks.changed.take() {
            out.warnings.push((PathBuf::from(&self.link.shown), change));
        }
        let mut room = ADOPT_MAX;
        let mut names: HashSet<Arc<str>> = HashSet::new();
        let prefix = self.prefix.clone();
        self.adopt_under(&prefix, &Arc::from(""), &mut room, &mut out, &mut names)?;
        for name in self.takeover.legacy.clone() {
            let legacy = legacy_prefix(&prefix, &name).expect("checked at register");
            let owners = self.adopt_under(&legacy, &name, &mut room, &mut out, &mut names)?;
            if owners == 0 {
                self.takeover.legacy.remove(&name);
            }
        }
        out.tenants = (names.iter())
            .filter_map(|n| self.names.number_of(n))
            .collect();
        out.tenants.sort_unstable();
        Ok(out)
    }

    /// Takes over the dead owners under `prefix` (records without a name are `default`'s),
    /// within `room`; returns how many owners its registry lists besides us.
    fn adopt_under(
        &mut self,
        prefix: &str,
        default: &Arc<str>,
        room: &mut usize,
        out: &mut Adopted,
        names: &mut HashSet<Arc<str>>,
    ) -> Result<usize, Error> {
        let registry = keys::registry(prefix);
        let reply = self.query(
            redis::pipe().cmd("SMEMBERS").arg(&registry).to_owned(),
            false,
        )?;
        let owners: Vec<String> = match reply.into_iter().next() {
            Some(Value::Array(v)) | Some(Value::Set(v)) => v
                .iter()
                .filter_map(keys::bytes)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .filter(|o| *o != self.keys.owner)
                .collect(),
            _ => Vec::new(),
        };
        if owners.is_empty() || *room == 0 {
            return Ok(owners.len());
        }
        // One MGET for every heartbeat: a pass costs one command whatever the fleet's size.
        let beats: Vec<String> = owners.iter().map(|o| Keys::of(prefix, o).alive).collect();
        let reply = self.query(redis::pipe().cmd("MGET").arg(&beats).to_owned(), false)?;
        let alive = match reply.into_iter().next() {
            Some(Value::Array(v)) if v.len() == owners.len() => v,
            other => return Err(self.err(format!("unexpected MGET reply: {other:?}"))),
        };
        for (owner, beat) in owners.iter().zip(alive) {
            if *room == 0 {
                break;
            }
            if !matches!(beat, Value::Nil) {
                continue; // alive: left alone
            }
            let n = self.take_over(prefix, default, owner, *room, out, names)?;
            if n > 0 {
                out.records += n as u64;
                out.files += 1;
            }
            *room = room.saturating_sub(n);
        }
        Ok(owners.len())
    }

    /// Moves up to `room` entries of a dead owner's stream into ours, in one transaction;
    /// returns how many records we took.
    fn take_over(
        &mut self,
        prefix: &str,
        default: &Arc<str>,
        owner: &str,
        room: usize,
        out: &mut Adopted,
        names: &mut HashSet<Arc<str>>,
    ) -> Result<usize, Error> {
        let k = Keys::of(prefix, owner);
        if !self.ready_to_read(prefix, &k, owner, out)? {
            return Ok(0);
        }
        let Some((entries, left)) = self.read_entries(&k, default, room, out)? else {
            return Ok(0);
        };
        if entries.is_empty() {
            if matches!(left, Some(Value::Int(0))) {
                // Everything it held was delivered before it died: its keys go.
                self.forget(prefix, &k, owner);
            }
            return Ok(0);
        }
        let (mut fields, values) = self.read_progress(&k, &entries)?;
        let taken = self.park_entries(&k, &entries, &values, names, out);
        // Entries of a newer version stay where they are (acknowledged by no one, so a
        // newer adopter claims them); everything else leaves the dead owner's keys.
        let ids: Vec<&str> = entries
            .iter()
            .filter(|(_, read)| !matches!(read, Read::Newer))
            .map(|(e, _)| e.as_str())
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        if fields.is_empty() {
            // Only foreign entries: HDEL needs a field.
            fields.push(ids[0].to_string());
        }
        let extra = [
            redis::cmd("XACK")
                .arg(&k.stream)
                .arg(GROUP)
                .arg(&ids)
                .to_owned(),
            redis::cmd("XDEL").arg(&k.stream).arg(&ids).to_owned(),
            redis::cmd("HDEL").arg(&k.progress).arg(&fields).to_owned(),
            redis::cmd("XLEN").arg(&k.stream).to_owned(),
        ];
        let left = match self.sync(&extra) {
            Ok(replies) => replies.last().cloned(),
            Err(e) => {
                self.unpark(&taken);
                return Err(e);
            }
        };
        if matches!(left, Some(Value::Int(0))) {
            self.forget(prefix, &k, owner);
        }
        Ok(taken.len())
    }

    /// Whether the dead owner's stream can be read through our consumer group: false when
    /// it is gone (the owner then leaves the registry) or its group cannot be made
    /// (reported).
    fn ready_to_read(
        &mut self,
        prefix: &str,
        k: &Keys,
        owner: &str,
        out: &mut Adopted,
    ) -> Result<bool, Error> {
        let mut pipe = redis::pipe();
        pipe.cmd("EXISTS").arg(&k.stream);
        // Made before every read, so a group that vanished (a Redis that lost data) is made
        // again instead of stalling everything on NOGROUP. "0": every entry it holds.
        pipe.cmd("XGROUP")
            .arg("CREATE")
            .arg(&k.stream)
            .arg(GROUP)
            .arg("0");
        let replies = self.query(pipe, false)?;
        if matches!(replies.first(), Some(Value::Int(0))) {
            // Nothing left: the owner leaves the registry.
            let mut pipe = redis::pipe();
            pipe.cmd("DEL").arg(&k.progress);
            pipe.cmd("SREM").arg(keys::registry(prefix)).arg(owner);
            self.query(pipe, true)?;
            return Ok(false);
        }
        if let Some(reply @ Value::ServerError(e)) = replies.get(1) {
            if e.code() != "BUSYGROUP" {
                let why = format!("cannot make its group: {}", describe(reply));
                self.takeover.report(out, &k.stream, why);
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// What an adopter that died mid-move left (idle for T), then what nobody has read, by
    /// count of entries, in rounds, for about `room` records; with the stream's length
    /// after the last read. `None` when a read failed (reported: what this pass read stays
    /// in the group's pending list, claimed again after T).
    ///
    /// A commit group holds up to `GROUP_MAX` records, an entry of an older version one (an
    /// owner's stream holds one kind: its version's). Reading ceil(room / GROUP_MAX) entries
    /// never takes more than one group beyond `room`; an older version's stream is read
    /// `room` at a time, and small groups (a quiet owner's) up to [`READ_MORE`] at a time,
    /// beyond `room` by `READ_MORE` groups at most. An entry just claimed is not idle: a
    /// second XAUTOCLAIM does not take it.
    fn read_entries(
        &mut self,
        k: &Keys,
        default: &Arc<str>,
        room: usize,
        out: &mut Adopted,
    ) -> Result<Option<PassRead>, Error> {
        let me = self.keys.owner.clone();
        let mut entries: Vec<Entry> = Vec::new();
        let mut records: usize = 0;
        let mut largest: usize = 0;
        loop {
            let want = room.saturating_sub(records);
            let safe = want.div_ceil(GROUP_MAX);
            let count = if entries.is_empty() {
                safe
            } else if largest <= 1 {
                want
            } else {
                want.div_ceil(largest).min(safe.max(READ_MORE))
            }
            .max(1);
            let mut pipe = redis::pipe();
            pipe.cmd("XAUTOCLAIM")
                .arg(&k.stream)
                .arg(GROUP)
                .arg(&me)
                .arg(self.takeover_after.as_millis() as u64)
                .arg("0-0")
                .arg("COUNT")
                .arg(count);
            pipe.cmd("XREADGROUP")
                .arg("GROUP")
                .arg(GROUP)
                .arg(&me)
                .arg("COUNT")
                .arg(count)
                .arg("STREAMS")
                .arg(&k.stream)
                .arg(">");
            pipe.cmd("XLEN").arg(&k.stream);
            let mut replies = self.query(pipe, false)?;
            let left = replies.pop();
            let before = entries.len();
            for reply in &replies {
                match reply {
                    Value::ServerError(_) => {
                        let why = format!("cannot read: {}", describe(reply));
                        self.takeover.report(out, &k.stream, why);
                        return Ok(None);
                    }
                    other => entries.extend(entries_of(other, default)),
                }
            }
            for (_, read) in &entries[before..] {
                let n = match read {
                    Read::Held(h) => h.len(),
                    _ => 1,
                };
                records += n;
                largest = largest.max(n);
            }
            if entries.len() == before || records >= room {
                return Ok(Some((entries, left)));
            }
        }
    }

    /// The progress fields of every record read, and each group's done bitmap: the fields
    /// (to delete with the entries) and their values, in the order of `entries`.
    fn read_progress(
        &mut self,
        k: &Keys,
        entries: &[Entry],
    ) -> Result<(Vec<String>, Vec<Value>), Error> {
        let mut fields: Vec<String> = Vec::new();
        for (e, read) in entries {
            match read {
                Read::Held(keys::Held::One(..)) => fields.push(e.clone()),
                Read::Held(keys::Held::Group(v)) => {
                    fields.push(keys::done_field(e));
                    fields.extend((0..v.len()).map(|i| keys::field_of(e, i)));
                }
                _ => {}
            }
        }
        if fields.is_empty() {
            return Ok((fields, Vec::new()));
        }
        let reply = self.query(
            redis::pipe()
                .cmd("HMGET")
                .arg(&k.progress)
                .arg(&fields)
                .to_owned(),
            false,
        )?;
        match reply.into_iter().next() {
            Some(Value::Array(v)) if v.len() == fields.len() => Ok((fields, v)),
            other => Err(self.err(format!("unexpected HMGET reply: {other:?}"))),
        }
    }

    /// Parks the records of `entries` still pending, with their progress (`values`, from
    /// [`read_progress`](Self::read_progress)) applied, under their tenants' names (added
    /// to `names`); reports the entries that are not ours to take. Returns the put numbers
    /// of the records taken (parked puts until the transaction that moves them).
    fn park_entries(
        &mut self,
        k: &Keys,
        entries: &[Entry],
        values: &[Value],
        names: &mut HashSet<Arc<str>>,
        out: &mut Adopted,
    ) -> Vec<u64> {
        let mut values = values.iter();
        let mut taken: Vec<u64> = Vec::new();
        let (mut foreign, mut newer) = (0, 0);
        for (_, read) in entries {
            let (held, done) = match read {
                Read::Held(h @ keys::Held::One(..)) => (h, None),
                Read::Held(h @ keys::Held::Group(_)) => (h, values.next().and_then(keys::bytes)),
                Read::Newer => {
                    newer += 1;
                    continue;
                }
                Read::Foreign => {
                    foreign += 1;
                    continue;
                }
            };
            for (i, (name, record)) in held.records().enumerate() {
                let progress = values
                    .next()
                    .and_then(keys::bytes)
                    .and_then(Progress::decode);
                // Removed by the dead owner while other records of its entry were pending.
                if done.is_some_and(|d| keys::is_done(d, i)) {
                    continue;
                }
                // An id its tenant holds already is kept once (receivers deduplicate by
                // messageId).
                let no = self.names.number_of(name);
                if no.is_some_and(|no| self.live.contains(no, &record.id)) {
                    continue;
                }
                let (record, copies) = with_progress(record.clone(), progress);
                // Through the same path as our own parked puts: a new entry in our stream.
                taken.push(self.park(name.clone(), record, copies, true));
                names.insert(name.clone());
            }
        }
        if foreign > 0 {
            self.takeover.report(
                out,
                &k.stream,
                format!("{foreign} entries that are not outbound messages were dropped"),
            );
        }
        if newer > 0 {
            self.takeover.report(
                out,
                &k.stream,
                format!(
                    "{newer} entries written by a newer version of outbound were left for it \
                     (upgrade this process to deliver them)"
                ),
            );
        }
        taken
    }

    /// The transaction that moved the puts `taken` failed: they are dropped, and their
    /// entries under the ids just tried are left alone, not deleted (the failure rule would
    /// delete them): if the transaction ran after all, they are the only copies. Not moved,
    /// they stay in the dead owner's stream, ours to claim again after T (or anyone's).
    fn unpark(&mut self, taken: &[u64]) {
        let mut seqs: HashSet<u64> = HashSet::new();
        let mut unpark: HashMap<Arc<str>, HashSet<u64>> = HashMap::default();
        for pno in taken {
            if let Some(p) = self.commits.puts.remove(pno) {
                seqs.extend(p.at.map(|(seq, _)| seq));
                unpark.entry(p.name.clone()).or_default().insert(*pno);
                if let Some(w) = self.waiting.get_mut(&p.name) {
                    w.records = w.records.saturating_sub(1);
                    w.bytes = w.bytes.saturating_sub(tenants::payload(&p.rec));
                }
            }
        }
        self.commits.deletes.retain(|d| !seqs.contains(&d.seq));
        for (name, pnos) in unpark {
            if let Some(w) = self.waiting.get_mut(&name) {
                w.spots.retain(|s| s.written || !pnos.contains(&s.at));
                if w.spots.is_empty() {
                    self.waiting.remove(&name);
                }
            }
        }
    }

    /// Deletes the keys of a silent owner whose stream is empty, and its registry entry.
    /// Best effort: what is left is tried again by the next pass.
    fn forget(&mut self, prefix: &str, k: &Keys, owner: &str) {
        let mut pipe = redis::pipe();
        pipe.cmd("DEL").arg(&k.stream).arg(&k.progress);
        pipe.cmd("SREM").arg(keys::registry(prefix)).arg(owner);
        let _ = self.query(pipe, true);
    }
}

/// The entries of an XREADGROUP or XAUTOCLAIM reply (records without a name: `default`'s).
fn entries_of(reply: &Value, default: &Arc<str>) -> Vec<Entry> {
    let entry_of = |v: &Value| entry_of(v, default);
    let mut out = Vec::new();
    match reply {
        // XREADGROUP: [[stream, [[id, fields], ...]]]
        Value::Array(streams)
            if streams
                .first()
                .is_some_and(|s| matches!(s, Value::Array(_))) =>
        {
            for s in streams {
                if let Value::Array(pair) = s {
                    if let Some(Value::Array(list)) = pair.get(1) {
                        out.extend(list.iter().filter_map(entry_of));
                    }
                }
            }
        }
        // XAUTOCLAIM: [next, [[id, fields], ...], [deleted ids]] (6.2: deleted as [id, nil])
        Value::Array(parts) => {
            if let Some(Value::Array(list)) = parts.get(1) {
                out.extend(list.iter().filter_map(entry_of));
            }
        }
        // RESP3 maps: {stream: [[id, fields], ...]}
        Value::Map(streams) => {
            for (_, list) in streams {
                if let Value::Array(list) = list {
                    out.extend(list.iter().filter_map(entry_of));
                }
            }
        }
        _ => {}
    }
    out
}

fn entry_of(v: &Value, default: &Arc<str>) -> Option<Entry> {
    let Value::Array(pair) = v else { return None };
    let id = String::from_utf8_lossy(keys::bytes(pair.first()?)?).into_owned();
    let fields = pair.get(1);
    let read = match fields.and_then(|f| keys::held_of(f, default)) {
        Some(held) => Read::Held(held),
        None if fields.is_some_and(keys::is_newer) => Read::Newer,
        None => Read::Foreign,
    };
    Some((id, read))
}

/// What takeover passes keep between them.
#[derive(Default)]
pub(super) struct Takeover {
    /// Names whose per-source prefix of the version before tenants (`PREFIX:NAME`) is
    /// scanned for dead owners, while that prefix has any.
    pub(super) legacy: BTreeSet<Arc<str>>,
    /// Keys already reported as left alone.
    reported: HashSet<String>,
}

impl Takeover {
    /// Warns of `key` left alone, once per key.
    fn report(&mut self, out: &mut Adopted, key: &str, why: String) {
        if self.reported.insert(key.to_string()) {
            out.warnings.push((PathBuf::from(key), why));
        }
    }
}
