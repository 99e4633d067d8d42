//! Takeover: the streams of owners whose heartbeat expired moved into ours, and handed out
//! by `resumable`.

use super::keys::{self, Keys, Progress, GROUP};
use super::*;
use std::path::PathBuf;

/// Most adopted records held before `resumable` hands them out: what a pass adds is kept
/// in memory (payloads included) until then. A larger backlog stays where it is, for the
/// next pass, or for another living process.
const ADOPT_MAX: usize = 10_000;

/// The most commit groups read at once beyond what `ADOPT_MAX` needs when the groups seen
/// are small (see `take_over`).
const READ_MORE: usize = 16;

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
    /// about [`ADOPT_MAX`] records held unresumed (entries are read whole: see `take_over`). `files` counts the owners taken from.
    pub fn adopt(&mut self) -> Result<Adopted, Error> {
        // The heartbeat first: a commit that keeps failing (a key someone broke, Redis out
        // of memory) must not make a living owner look dead.
        self.beat()?;
        // What we owe Redis goes next (with entries mostly delivered compacted): a
        // takeover's transaction then holds only its own.
        self.compact(COMPACT_AFTER);
        self.sync(&[])?;
        let mut out = Adopted::default();
        let mut room = ADOPT_MAX.saturating_sub(self.unresumed.len());
        if room == 0 {
            return Ok(out);
        }
        let registry = keys::registry(&self.prefix);
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
        if owners.is_empty() {
            return Ok(out);
        }
        // One MGET for every heartbeat: a pass costs one command whatever the fleet's size.
        let beats: Vec<String> = owners
            .iter()
            .map(|o| Keys::of(&self.prefix, o).alive)
            .collect();
        let reply = self.query(redis::pipe().cmd("MGET").arg(&beats).to_owned(), false)?;
        let alive = match reply.into_iter().next() {
            Some(Value::Array(v)) if v.len() == owners.len() => v,
            other => return Err(self.err(format!("unexpected MGET reply: {other:?}"))),
        };
        for (owner, beat) in owners.iter().zip(alive) {
            if room == 0 {
                break;
            }
            if !matches!(beat, Value::Nil) {
                continue; // alive: left alone
            }
            let n = self.take_over(owner, room, &mut out)?;
            if n > 0 {
                out.records += n as u64;
                out.files += 1;
            }
            room = room.saturating_sub(n);
        }
        Ok(out)
    }

    /// Moves up to `room` entries of a dead owner's stream into ours, in one transaction;
    /// returns how many records we took.
    fn take_over(&mut self, owner: &str, room: usize, out: &mut Adopted) -> Result<usize, Error> {
        let k = Keys::of(&self.prefix, owner);
        let registry = keys::registry(&self.prefix);
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
            pipe.cmd("SREM").arg(&registry).arg(owner);
            self.query(pipe, true)?;
            return Ok(0);
        }
        if let Some(reply @ Value::ServerError(e)) = replies.get(1) {
            if e.code() != "BUSYGROUP" {
                let why = format!("cannot make its group: {}", describe(reply));
                self.report(out, &k.stream, why);
                return Ok(0);
            }
        }
        // What an adopter that died mid-move left (idle for T), then what nobody has read,
        // by count of entries, in rounds: a commit group holds up to GROUP_MAX records, an
        // entry of an older version one (an owner's stream holds one kind: its version's).
        // Reading ceil(room / GROUP_MAX) entries never takes more than one group beyond
        // `room`; an older version's stream is read `room` at a time, and small groups (a
        // quiet owner's) up to READ_MORE at a time, beyond `room` by READ_MORE groups at
        // most. An entry just claimed is not idle: a second XAUTOCLAIM does not take it.
        let me = self.keys.owner.clone();
        let mut entries: Vec<Entry> = Vec::new();
        let mut records: usize = 0;
        let mut largest: usize = 0;
        let mut left;
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
            left = replies.pop();
            let before = entries.len();
            for reply in &replies {
                match reply {
                    Value::ServerError(_) => {
                        let why = format!("cannot read: {}", describe(reply));
                        self.report(out, &k.stream, why);
                        // What this pass read stays in the group's pending list: claimed
                        // again after T.
                        return Ok(0);
                    }
                    other => entries.extend(entries_of(other)),
                }
            }
            for (_, read) in &entries[before..] {
                let n = match read {
                    Read::Held(h) => h.records().len(),
                    _ => 1,
                };
                records += n;
                largest = largest.max(n);
            }
            if entries.len() == before || records >= room {
                break;
            }
        }
        if entries.is_empty() {
            if matches!(left, Some(Value::Int(0))) {
                // Everything it held was delivered before it died: its keys go.
                self.forget(&k, owner);
            }
            return Ok(0);
        }
        // The progress fields of every record read, and each group's done bitmap.
        let mut fields: Vec<String> = Vec::new();
        for (e, read) in &entries {
            match read {
                Read::Held(keys::Held::One(_)) => fields.push(e.clone()),
                Read::Held(keys::Held::Group(v)) => {
                    fields.push(keys::done_field(e));
                    fields.extend((0..v.len()).map(|i| keys::field_of(e, i)));
                }
                _ => {}
            }
        }
        let values: Vec<Value> = if fields.is_empty() {
            Vec::new()
        } else {
            let reply = self.query(
                redis::pipe()
                    .cmd("HMGET")
                    .arg(&k.progress)
                    .arg(&fields)
                    .to_owned(),
                false,
            )?;
            match reply.into_iter().next() {
                Some(Value::Array(v)) if v.len() == fields.len() => v,
                other => return Err(self.err(format!("unexpected HMGET reply: {other:?}"))),
            }
        };
        let mut values = values.iter();
        let mut taken: Vec<(Arc<str>, u32)> = Vec::new();
        let (mut foreign, mut newer) = (0, 0);
        for (_, read) in &entries {
            let (held, done) = match read {
                Read::Held(h @ keys::Held::One(_)) => (h, None),
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
            for (i, record) in held.records().iter().enumerate() {
                let progress = values
                    .next()
                    .and_then(keys::bytes)
                    .and_then(Progress::decode);
                // Removed by the dead owner while other records of its entry were pending.
                if done.is_some_and(|d| keys::is_done(d, i)) {
                    continue;
                }
                // An id we hold already is kept once (receivers deduplicate by messageId).
                if self.live.contains_key(&record.id) {
                    continue;
                }
                let mut record = record.clone();
                let mut copies = 1;
                if let Some(p) = progress {
                    record.first_ms = p.first_ms.or(record.first_ms);
                    if p.ingest_done {
                        record.ingest = None;
                    }
                    record.hook_mask = p.mask;
                    if p.mask == 0 {
                        record.hook = None;
                    }
                    copies = p.copies;
                }
                self.note_adopted(&record, copies);
                taken.push((record.id.clone(), copies));
                self.unresumed.push_back(record);
            }
        }
        if foreign > 0 {
            self.report(
                out,
                &k.stream,
                format!("{foreign} entries that are not outbound messages were dropped"),
            );
        }
        if newer > 0 {
            self.report(
                out,
                &k.stream,
                format!(
                    "{newer} entries written by a newer version of outbound were left for it \
                     (upgrade this process to deliver them)"
                ),
            );
        }
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
                // Their entries under the ids just tried are left alone, not deleted (the
                // failure rule would delete them): if the transaction ran after all, they are
                // the only copies. (`seq` is still the id tried; 0 when none was sent.)
                let seqs: HashSet<u64> = taken
                    .iter()
                    .filter_map(|(id, _)| self.live.get(id).map(|l| l.seq))
                    .filter(|&s| s != 0)
                    .collect();
                self.deletes.retain(|d| !seqs.contains(&d.seq));
                // Not moved: they stay in the dead owner's stream, ours to claim again after T
                // (or anyone's).
                for (id, _) in &taken {
                    if let Some(l) = self.live.remove(id) {
                        self.bytes = self.bytes.saturating_sub(l.bytes(id));
                        self.puts.remove(&l.pno);
                    }
                }
                let n = taken.len();
                self.unresumed.truncate(self.unresumed.len() - n);
                return Err(e);
            }
        };
        if matches!(left, Some(Value::Int(0))) {
            self.forget(&k, owner);
        }
        Ok(taken.len())
    }

    /// Deletes the keys of a silent owner whose stream is empty, and its registry entry.
    /// Best effort: what is left is tried again by the next pass.
    fn forget(&mut self, k: &Keys, owner: &str) {
        let mut pipe = redis::pipe();
        pipe.cmd("DEL").arg(&k.stream).arg(&k.progress);
        pipe.cmd("SREM")
            .arg(keys::registry(&self.prefix))
            .arg(owner);
        let _ = self.query(pipe, true);
    }

    /// An adopted record becomes ours, to be written to our stream by the takeover's
    /// transaction.
    fn note_adopted(&mut self, record: &Record, copies: u32) {
        // Through the same path as our own puts: a new entry in our stream.
        self.note(&Op::Put(record.clone()));
        if let Some(l) = self.live.get_mut(&record.id) {
            l.copies = copies.max(1);
        }
    }

    /// Hands out adopted records, oldest pass first, at most `limit`. The cursor counts what
    /// was handed out (only this store reads it).
    pub fn resumable(
        &mut self,
        _after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        let n = limit.min(self.unresumed.len());
        let out: Vec<Record> = self.unresumed.drain(..n).collect();
        self.resumed += n as i64;
        Ok((out, Some(Cursor(self.resumed))))
    }

    fn report(&mut self, out: &mut Adopted, key: &str, why: String) {
        if self.reported.insert(key.to_string()) {
            out.warnings.push((PathBuf::from(key), why));
        }
    }
}

/// The entries of an XREADGROUP or XAUTOCLAIM reply.
fn entries_of(reply: &Value) -> Vec<Entry> {
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

fn entry_of(v: &Value) -> Option<Entry> {
    let Value::Array(pair) = v else { return None };
    let id = String::from_utf8_lossy(keys::bytes(pair.first()?)?).into_owned();
    let fields = pair.get(1);
    let read = match fields.and_then(keys::held_of) {
        Some(held) => Read::Held(held),
        None if fields.is_some_and(keys::is_newer) => Read::Newer,
        None => Read::Foreign,
    };
    Some((id, read))
}
