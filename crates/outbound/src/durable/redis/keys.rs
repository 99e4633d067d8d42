//! Names and shapes in Redis: the keys of one owner, the fields of a stream entry, the
//! progress kept beside it.
//!
//! Every key of one owner shares the hash tag `{PREFIX:OWNER}`, so on Redis Cluster an
//! owner's commit (one MULTI) stays on one slot. The registry of owners is one set per prefix.

use crate::durable::Record;
use crate::wire::Body;
use redis::Value;
use std::sync::Arc;

/// The consumer group adopters read a dead owner's stream through (never the owner itself).
pub(super) const GROUP: &str = "outbound-takeover";

/// The one field of an entry in the packed layouts: its value is a whole record (layout 1,
/// [`Packed`], written by versions before commit groups) or a whole commit group
/// (layout 2, until tenants shared a store; layout 3, [`GroupOut`], written since).
pub(super) const F_RECORD: &str = "r";

/// The fields of an entry in the old layout, one per part (still read: a fleet upgraded one
/// relay at a time has such entries in Redis): message id, accepted ms, first attempt ms,
/// ingestion bytes, webhook body, webhook URL mask, hash of the URL list.
pub(super) const F_ID: &str = "i";
pub(super) const F_ACCEPTED: &str = "a";
pub(super) const F_FIRST: &str = "f";
pub(super) const F_INGEST: &str = "g";
pub(super) const F_HOOK: &str = "h";
pub(super) const F_MASK: &str = "m";
pub(super) const F_HOOKS_KEY: &str = "k";

/// The keys of one owner (a client's store) under a prefix.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    pub owner: String,
    /// `{P:O}:s`: the stream of the owner's pending messages, one entry per commit group.
    pub stream: String,
    /// `{P:O}:p`: a hash, `0-SEQ:IDX` (record IDX of entry 0-SEQ; the entry id alone for a
    /// single-record entry of an older version) -> progress (first attempt, ingestion done,
    /// mask, copies), written only once a message has progress worth keeping; and
    /// `0-SEQ:d` -> which records of entry 0-SEQ were removed ([`done_field`]).
    pub progress: String,
    /// `{P:O}:alive`: the owner's heartbeat, a string with a TTL of the takeover threshold.
    pub alive: String,
}

impl Keys {
    pub fn of(prefix: &str, owner: &str) -> Keys {
        Keys {
            owner: owner.to_string(),
            stream: format!("{{{prefix}:{owner}}}:s"),
            progress: format!("{{{prefix}:{owner}}}:p"),
            alive: format!("{{{prefix}:{owner}}}:alive"),
        }
    }
}

/// `P:owners`: the set of owners that have written under the prefix.
pub(super) fn registry(prefix: &str) -> String {
    format!("{prefix}:owners")
}

/// The pattern of every owner's stream under a prefix (to rebuild a lost registry).
pub(super) fn stream_pattern(prefix: &str) -> String {
    format!("{{{prefix}:*}}:s")
}

/// The owner of a stream key `{P:O}:s`, and the name of its per-source prefix (`P:NAME`,
/// the version before tenants: `{P:NAME:O}:s`) when it has one. Owners are hex.
pub(super) fn owner_of_stream<'a>(
    prefix: &str,
    key: &'a str,
) -> Option<(Option<&'a str>, &'a str)> {
    let rest = key
        .strip_prefix('{')?
        .strip_prefix(prefix)?
        .strip_prefix(':')?
        .strip_suffix("}:s")?;
    let (name, owner) = match rest.rsplit_once(':') {
        Some((name, owner)) => (Some(name), owner),
        None => (None, rest),
    };
    (!owner.is_empty() && owner.bytes().all(|b| b.is_ascii_hexdigit())).then_some((name, owner))
}

/// What a message's progress hash field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Progress {
    pub first_ms: Option<i64>,
    pub ingest_done: bool,
    pub mask: u8,
    pub copies: u32,
}

/// `record` with its progress applied (the first attempt, what is done, the webhooks still
/// to try; what a progress field says wins), and the copies it counts.
pub(super) fn with_progress(mut record: Record, progress: Option<Progress>) -> (Record, u32) {
    let Some(p) = progress else {
        return (record, 1);
    };
    record.first_ms = p.first_ms.or(record.first_ms);
    if p.ingest_done {
        record.ingest = None;
    }
    record.hook_mask = p.mask;
    if p.mask == 0 {
        record.hook = None;
    }
    (record, p.copies)
}

impl Progress {
    pub fn encode(&self) -> String {
        format!(
            "{},{},{},{}",
            self.first_ms.unwrap_or(-1),
            u8::from(self.ingest_done),
            self.mask,
            self.copies
        )
    }

    pub fn decode(bytes: &[u8]) -> Option<Progress> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut parts = text.split(',');
        let first: i64 = parts.next()?.parse().ok()?;
        let done: u8 = parts.next()?.parse().ok()?;
        let mask: u8 = parts.next()?.parse().ok()?;
        let copies: u32 = parts.next()?.parse().ok()?;
        Some(Progress {
            first_ms: (first >= 0).then_some(first),
            ingest_done: done == 1,
            mask,
            copies: copies.max(1),
        })
    }
}

/// The first byte of a packed record: its layout.
const PACKED_V1: u8 = 1;
/// The first byte of a packed commit group: its layout (see [`GroupOut`]): 2 without
/// tenant names (read only), 3 with them.
const GROUPED_V2: u8 = 2;
const GROUPED_V3: u8 = 3;
const HAS_FIRST: u8 = 1;
const HAS_INGEST: u8 = 2;
const HAS_HOOK: u8 = 4;

/// A record packed in one value, written straight into the transaction (`resp.rs`):
///
/// ```text
/// u8 layout (1) | u8 flags (1: first attempt, 2: ingestion body, 4: webhook body) | u8 mask
/// | i64 accepted ms | [i64 first attempt ms] | u64 hooks key | u32 id length | id
/// | [u32 length | ingestion body] | [u32 length | webhook body]
/// ```
///
/// Integers little endian; the parts in brackets only when their flag is set.
#[derive(Clone, Copy)]
pub(super) struct Packed<'a> {
    pub id: &'a str,
    pub accepted_ms: i64,
    pub first_ms: Option<i64>,
    pub ingest: Option<&'a [u8]>,
    pub hook: Option<&'a [u8]>,
    pub mask: u8,
    pub hooks_key: u64,
}

impl Packed<'_> {
    /// Its length in bytes, known before it is written (RESP puts it first).
    pub fn len(&self) -> usize {
        let part = |p: Option<&[u8]>| p.map_or(0, |p| 4 + p.len());
        3 + 8
            + self.first_ms.map_or(0, |_| 8)
            + 8
            + 4
            + self.id.len()
            + part(self.ingest)
            + part(self.hook)
    }

    /// Appends it to `out` (exactly `len()` bytes).
    pub fn write_into(&self, out: &mut Vec<u8>) {
        let mut flags = 0;
        if self.first_ms.is_some() {
            flags |= HAS_FIRST;
        }
        if self.ingest.is_some() {
            flags |= HAS_INGEST;
        }
        if self.hook.is_some() {
            flags |= HAS_HOOK;
        }
        out.extend_from_slice(&[PACKED_V1, flags, self.mask]);
        out.extend_from_slice(&self.accepted_ms.to_le_bytes());
        if let Some(f) = self.first_ms {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out.extend_from_slice(&self.hooks_key.to_le_bytes());
        for part in [Some(self.id.as_bytes()), self.ingest, self.hook]
            .into_iter()
            .flatten()
        {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }

    #[cfg(test)]
    pub fn to_vec(self) -> Vec<u8> {
        let mut v = Vec::new();
        self.write_into(&mut v);
        assert_eq!(v.len(), self.len());
        v
    }
}

/// A commit group's value, records packed one after the other, each under its tenant's
/// name (layout 3, written since tenants share a store):
///
/// ```text
/// u8 layout (3) | u16 names | names × (u16 length | name)
/// | u32 count | count × (u16 name index | u32 length | packed record, layout 1)
/// ```
///
/// One stream entry (one field [`F_RECORD`]) per commit group: Redis parses, appends and
/// deletes one value per commit instead of one per message. A commit holds every tenant's
/// messages, so the names are listed once and each record points at its own. Layout 2 (the
/// same without names: `u8 2 | u32 count | count × (u32 length | record)`) is still read, as
/// records of the default tenant (or of a legacy prefix's, see `takeover.rs`). A version
/// that knows only older layouts sees a packed value of a newer layout and leaves the entry
/// for a newer adopter.
pub(super) struct GroupOut<'a> {
    pub names: Vec<&'a str>,
    /// Each record with the index of its tenant's name in `names`.
    pub records: Vec<(u16, Packed<'a>)>,
}

impl GroupOut<'_> {
    /// Its length in bytes, known before it is written (RESP puts it first).
    pub fn len(&self) -> usize {
        1 + 2
            + self.names.iter().map(|n| 2 + n.len()).sum::<usize>()
            + 4
            + self
                .records
                .iter()
                .map(|(_, r)| 2 + 4 + r.len())
                .sum::<usize>()
    }

    /// Appends it to `out` (exactly `len()` bytes).
    pub fn write_into(&self, out: &mut Vec<u8>) {
        out.push(GROUPED_V3);
        out.extend_from_slice(&(self.names.len() as u16).to_le_bytes());
        for n in &self.names {
            out.extend_from_slice(&(n.len() as u16).to_le_bytes());
            out.extend_from_slice(n.as_bytes());
        }
        out.extend_from_slice(&(self.records.len() as u32).to_le_bytes());
        for (name, r) in &self.records {
            out.extend_from_slice(&name.to_le_bytes());
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            r.write_into(out);
        }
    }
}

/// A commit group's value of layout 2 or 3 ([`GroupOut`]): its records, each with its
/// tenant's name (`default` for layout 2); `None` for bytes of another shape.
pub(super) fn unpack_group(mut b: &[u8], default: &Arc<str>) -> Option<Vec<(Arc<str>, Record)>> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if b.len() < n {
            return None;
        }
        let (head, tail) = b.split_at(n);
        *b = tail;
        Some(head)
    }
    fn u16_of(b: &mut &[u8]) -> Option<u16> {
        Some(u16::from_le_bytes(take(b, 2)?.try_into().ok()?))
    }
    fn u32_of(b: &mut &[u8]) -> Option<u32> {
        Some(u32::from_le_bytes(take(b, 4)?.try_into().ok()?))
    }
    let layout = *take(&mut b, 1)?.first()?;
    let mut names: Vec<Arc<str>> = Vec::new();
    match layout {
        GROUPED_V2 => {}
        GROUPED_V3 => {
            for _ in 0..u16_of(&mut b)? {
                let n = u16_of(&mut b)? as usize;
                names.push(Arc::from(std::str::from_utf8(take(&mut b, n)?).ok()?));
            }
        }
        _ => return None,
    }
    let n = u32_of(&mut b)? as usize;
    let mut out = Vec::with_capacity(n.min(b.len() / 4));
    for _ in 0..n {
        // The default tenant's records (`""`) are the prefix's default's (a legacy prefix's
        // name, see `takeover.rs`), as those of layout 2.
        let name = match layout {
            GROUPED_V3 => Some(names.get(u16_of(&mut b)? as usize)?).filter(|n| !n.is_empty()),
            _ => None,
        };
        let name = name.unwrap_or(default).clone();
        let len = u32_of(&mut b)? as usize;
        out.push((name, unpack(take(&mut b, len)?)?));
    }
    (b.is_empty() && !out.is_empty()).then_some(out)
}

/// The progress field of record `idx` of grouped entry `entry` (`0-SEQ:IDX`).
pub(super) fn field_of(entry: &str, idx: usize) -> String {
    format!("{entry}:{idx}")
}

/// The field holding which records of grouped entry `entry` were removed (`0-SEQ:d`): a
/// bitmap, bit `i` (byte `i / 8`, bit `i % 8`) set for record `i`. The entry itself is
/// deleted with its last record.
pub(super) fn done_field(entry: &str) -> String {
    format!("{entry}:d")
}

/// Whether bit `i` of a done bitmap is set.
pub(super) fn is_done(bitmap: &[u8], i: usize) -> bool {
    bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

/// Sets bit `i` of a done bitmap.
pub(super) fn set_done(bitmap: &mut Vec<u8>, i: usize) {
    if bitmap.len() <= i / 8 {
        bitmap.resize(i / 8 + 1, 0);
    }
    bitmap[i / 8] |= 1 << (i % 8);
}

/// A packed record ([`Packed`]); `None` for bytes of another shape.
pub(super) fn unpack(mut b: &[u8]) -> Option<Record> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if b.len() < n {
            return None;
        }
        let (head, tail) = b.split_at(n);
        *b = tail;
        Some(head)
    }
    fn u64_of(b: &mut &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(take(b, 8)?.try_into().ok()?))
    }
    fn part<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(take(b, 4)?.try_into().ok()?);
        take(b, n as usize)
    }
    let &[layout, flags, mask] = take(&mut b, 3)? else {
        return None;
    };
    if layout != PACKED_V1 || flags & !(HAS_FIRST | HAS_INGEST | HAS_HOOK) != 0 {
        return None;
    }
    let accepted_ms = u64_of(&mut b)? as i64;
    let first_ms = if flags & HAS_FIRST != 0 {
        Some(u64_of(&mut b)? as i64)
    } else {
        None
    };
    let hooks_key = u64_of(&mut b)?;
    let id = std::str::from_utf8(part(&mut b)?).ok()?;
    let ingest = if flags & HAS_INGEST != 0 {
        Some(Body::copy_from_slice(part(&mut b)?))
    } else {
        None
    };
    let hook = if flags & HAS_HOOK != 0 {
        Some(Body::copy_from_slice(part(&mut b)?))
    } else {
        None
    };
    if !b.is_empty() || id.is_empty() {
        return None;
    }
    Some(Record {
        tenant: 0,
        adopted: true,
        id: Arc::from(id),
        accepted_ms,
        first_ms,
        ingest,
        hook,
        hook_mask: mask,
        hooks_key,
    })
}

/// Whether a stream entry is a packed record of a layout newer than this version reads: a
/// newer version of the library wrote it, and only such a version may take it over.
pub(super) fn is_newer(fields: &Value) -> bool {
    let Value::Array(items) = fields else {
        return false;
    };
    match items.as_slice() {
        [name, value] => {
            bytes(name) == Some(F_RECORD.as_bytes())
                && bytes(value)
                    .and_then(|b| b.first())
                    .is_some_and(|layout| *layout > GROUPED_V3)
        }
        _ => false,
    }
}

/// Bytes of a reply value (bulk or simple string).
pub(super) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => std::str::from_utf8(bytes(other)?).ok()?.parse().ok(),
    }
}

/// What a stream entry holds: one record (layout 1, or the old one field per part: its
/// progress field is the entry id) or a commit group (layouts 2 and 3: its progress fields
/// are [`field_of`], its removed records in [`done_field`]); each record with its tenant's
/// name.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Held {
    One(Arc<str>, Record),
    Group(Vec<(Arc<str>, Record)>),
}

impl Held {
    /// How many records it holds.
    pub fn len(&self) -> usize {
        match self {
            Held::One(..) => 1,
            Held::Group(v) => v.len(),
        }
    }

    /// Its records with their tenants' names, in order.
    pub fn records(&self) -> impl Iterator<Item = (&Arc<str>, &Record)> {
        let (one, many) = match self {
            Held::One(n, r) => (Some((n, r)), None),
            Held::Group(v) => (None, Some(v.iter().map(|(n, r)| (n, r)))),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// A stream entry's fields as what it holds, in any layout this version reads, records of
/// the layouts without names under `default`; `None` for an entry that is not ours, or of a
/// newer layout ([`is_newer`]).
pub(super) fn held_of(fields: &Value, default: &Arc<str>) -> Option<Held> {
    if let Value::Array(items) = fields {
        if let [name, value] = items.as_slice() {
            let layout = bytes(value)?.first().copied();
            if bytes(name)? == F_RECORD.as_bytes()
                && matches!(layout, Some(GROUPED_V2 | GROUPED_V3))
            {
                return unpack_group(bytes(value)?, default).map(Held::Group);
            }
        }
    }
    record_of(fields).map(|r| Held::One(default.clone(), r))
}

/// A stream entry's fields (`[f, v, f, v, ...]`) as one record, in either single-record
/// layout (one packed field [`F_RECORD`], or the old one field per part); `None` for an
/// entry that is not one record of ours (a missing or mistyped field, a group).
pub(super) fn record_of(fields: &Value) -> Option<Record> {
    let Value::Array(items) = fields else {
        return None;
    };
    if let [name, value] = items.as_slice() {
        if bytes(name)? == F_RECORD.as_bytes() {
            return unpack(bytes(value)?);
        }
    }
    let (mut id, mut accepted, mut first, mut ingest, mut hook, mut mask, mut key) =
        (None, None, None, None, None, None, None);
    for pair in items.chunks_exact(2) {
        let name = bytes(&pair[0])?;
        let value = &pair[1];
        match std::str::from_utf8(name).ok()? {
            F_ID => id = Some(std::str::from_utf8(bytes(value)?).ok()?.to_string()),
            F_ACCEPTED => accepted = Some(int(value)?),
            F_FIRST => first = Some(int(value)?),
            F_INGEST => ingest = Some(Body::copy_from_slice(bytes(value)?)),
            F_HOOK => hook = Some(Body::copy_from_slice(bytes(value)?)),
            F_MASK => mask = Some(u8::try_from(int(value)?).ok()?),
            F_HOOKS_KEY => key = Some(int(value)? as u64),
            _ => {}
        }
    }
    let id = id.filter(|i| !i.is_empty())?;
    Some(Record {
        tenant: 0,
        adopted: true,
        id: Arc::from(id),
        accepted_ms: accepted?,
        first_ms: first,
        ingest,
        hook,
        hook_mask: mask?,
        hooks_key: key?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owners_keys_share_one_hash_tag() {
        let k = Keys::of("fleet", "abc");
        assert_eq!(k.stream, "{fleet:abc}:s");
        assert_eq!(k.progress, "{fleet:abc}:p");
        assert_eq!(k.alive, "{fleet:abc}:alive");
        assert_eq!(owner_of_stream("fleet", &k.stream), Some((None, "abc")));
        assert_eq!(owner_of_stream("other", &k.stream), None);
        let legacy = Keys::of("fleet:web", "0af");
        assert_eq!(
            owner_of_stream("fleet", &legacy.stream),
            Some((Some("web"), "0af"))
        );
        assert_eq!(owner_of_stream("fleet", "{fleet:web:zz}:s"), None);
    }

    #[test]
    fn progress_round_trips() {
        for p in [
            Progress {
                first_ms: None,
                ingest_done: false,
                mask: 0b101,
                copies: 1,
            },
            Progress {
                first_ms: Some(1_764_000_000_000),
                ingest_done: true,
                mask: 0,
                copies: 3,
            },
        ] {
            assert_eq!(Progress::decode(p.encode().as_bytes()), Some(p));
        }
        assert_eq!(Progress::decode(b"junk"), None);
    }

    fn bulk(b: &[u8]) -> Value {
        Value::BulkString(b.to_vec())
    }

    #[test]
    fn a_packed_record_round_trips_and_other_bytes_are_not_one() {
        let full = Packed {
            id: "m-1",
            accepted_ms: 1_764_000_000_000,
            first_ms: Some(1_764_000_000_500),
            ingest: Some(b"{\"ingest\":1}"),
            hook: Some(b""),
            mask: 0b101,
            hooks_key: u64::MAX - 7,
        };
        let bare = Packed {
            first_ms: None,
            ingest: None,
            hook: None,
            mask: 0,
            ..full
        };
        for p in [full, bare] {
            let bytes = p.to_vec();
            let r = record_of(&Value::Array(vec![bulk(b"r"), bulk(&bytes)])).unwrap();
            assert_eq!(&*r.id, p.id);
            assert_eq!(r.accepted_ms, p.accepted_ms);
            assert_eq!(r.first_ms, p.first_ms);
            assert_eq!(r.ingest.as_deref(), p.ingest);
            assert_eq!(r.hook.as_deref(), p.hook);
            assert_eq!(r.hook_mask, p.mask);
            assert_eq!(r.hooks_key, p.hooks_key);
            // Cut short, one byte more, another layout: not a record.
            assert_eq!(unpack(&bytes[..bytes.len() - 1]), None);
            assert_eq!(unpack(&[&bytes[..], b"x"].concat()), None);
            assert_eq!(unpack(&[&[2], &bytes[1..]].concat()), None);
        }
        assert_eq!(unpack(b""), None);
    }

    /// Layout 2, as the version before tenants wrote it.
    fn write_v2(out: &mut Vec<u8>, records: &[Packed]) {
        out.push(GROUPED_V2);
        out.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for r in records {
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            r.write_into(out);
        }
    }

    #[test]
    fn a_commit_group_round_trips_with_its_names_and_a_newer_layout_is_left() {
        let one = Packed {
            id: "m-1",
            accepted_ms: 1_764_000_000_000,
            first_ms: Some(1_764_000_000_500),
            ingest: Some(b"{\"ingest\":1}"),
            hook: None,
            mask: 0,
            hooks_key: 42,
        };
        let two = Packed { id: "m-2", ..one };
        let group = GroupOut {
            names: vec!["web", ""],
            records: vec![(1, one), (0, two), (1, Packed { id: "m-3", ..one })],
        };
        let mut v = Vec::new();
        group.write_into(&mut v);
        assert_eq!(v.len(), group.len());
        let fields = Value::Array(vec![bulk(b"r"), bulk(&v)]);
        let default: Arc<str> = Arc::from("legacy");
        let Some(Held::Group(records)) = held_of(&fields, &default) else {
            panic!("a group")
        };
        let got: Vec<(&str, &str)> = records.iter().map(|(n, r)| (&**n, &*r.id)).collect();
        // The default tenant's are the default name's (a legacy prefix's).
        assert_eq!(got, [("legacy", "m-1"), ("web", "m-2"), ("legacy", "m-3")]);
        assert_eq!(records[0].1.first_ms, Some(1_764_000_000_500));
        assert!(!is_newer(&fields));
        // Cut short, one byte more, a name index out of range: not a group.
        assert_eq!(unpack_group(&v[..v.len() - 1], &default), None);
        assert_eq!(unpack_group(&[&v[..], b"x"].concat(), &default), None);
        let bad = GroupOut {
            names: vec!["web"],
            records: vec![(1, one)],
        };
        let mut b = Vec::new();
        bad.write_into(&mut b);
        assert_eq!(unpack_group(&b, &default), None);
        // Layout 2 is read, its records under the default name.
        let mut v2 = Vec::new();
        write_v2(&mut v2, &[one, two]);
        let fields2 = Value::Array(vec![bulk(b"r"), bulk(&v2)]);
        let Some(Held::Group(old)) = held_of(&fields2, &default) else {
            panic!("a group")
        };
        let got: Vec<(&str, &str)> = old.iter().map(|(n, r)| (&**n, &*r.id)).collect();
        assert_eq!(got, [("legacy", "m-1"), ("legacy", "m-2")]);
        // A single record is still one.
        let single = Value::Array(vec![bulk(b"r"), bulk(&one.to_vec())]);
        assert!(matches!(held_of(&single, &default), Some(Held::One(..))));
        // Layout 4 is newer.
        let newer = Value::Array(vec![bulk(b"r"), bulk(&[&[4], &v[1..]].concat())]);
        assert!(held_of(&newer, &default).is_none() && is_newer(&newer));
        // Done bitmaps.
        let mut done = Vec::new();
        set_done(&mut done, 0);
        set_done(&mut done, 9);
        assert_eq!(done, [1, 2]);
        assert!(is_done(&done, 0) && is_done(&done, 9));
        assert!(!is_done(&done, 1) && !is_done(&done, 2047));
        assert_eq!(done_field("0-7"), "0-7:d");
        assert_eq!(field_of("0-7", 3), "0-7:3");
    }

    #[test]
    fn an_old_layout_entry_is_still_a_record() {
        let v = Value::Array(
            [
                "i",
                "m-1",
                "a",
                "1764000000000",
                "f",
                "1764000000500",
                "g",
                "{}",
                "m",
                "2",
                "k",
                "-1",
            ]
            .iter()
            .map(|s| bulk(s.as_bytes()))
            .collect(),
        );
        let r = record_of(&v).unwrap();
        assert_eq!(&*r.id, "m-1");
        assert_eq!(r.first_ms, Some(1_764_000_000_500));
        assert_eq!(r.ingest.as_deref(), Some(&b"{}"[..]));
        assert_eq!(r.hook, None);
        assert_eq!((r.hook_mask, r.hooks_key), (2, u64::MAX));
    }

    #[test]
    fn an_entry_without_an_id_is_not_a_record() {
        let v = Value::Array(vec![
            Value::BulkString(b"a".to_vec()),
            Value::BulkString(b"1".to_vec()),
        ]);
        assert_eq!(record_of(&v), None);
    }
}
