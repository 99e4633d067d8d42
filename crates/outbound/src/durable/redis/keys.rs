//! Names and shapes in Redis: the keys of one owner, the fields of a stream entry, the
//! progress kept beside it.
//!
//! Every key of one owner shares the hash tag `{PREFIX:OWNER}`, so on Redis Cluster an
//! owner's commit (one MULTI) stays on one slot. The registry of owners is one set per prefix.

use crate::durable::Record;
use redis::Value;
use std::sync::Arc;

/// The consumer group adopters read a dead owner's stream through (never the owner itself).
pub(super) const GROUP: &str = "outbound-takeover";

/// Stream entry fields: message id, accepted ms, first attempt ms, ingestion bytes, webhook
/// body, webhook URL mask, hash of the URL list.
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
    /// `{P:O}:s`: the stream of the owner's pending messages, one entry per message.
    pub stream: String,
    /// `{P:O}:p`: a hash, entry id -> progress (first attempt, ingestion done, mask, copies),
    /// written only once a message has progress worth keeping.
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

/// The owner of a stream key `{P:O}:s`.
pub(super) fn owner_of_stream<'a>(prefix: &str, key: &'a str) -> Option<&'a str> {
    key.strip_prefix('{')?
        .strip_prefix(prefix)?
        .strip_prefix(':')?
        .strip_suffix("}:s")
}

/// Our entry ids are `0-SEQ`, chosen by us (not `*`): an XADD retried after a reply was
/// lost is refused as "equal or smaller" instead of written twice.
pub(super) fn entry_id(seq: u64) -> String {
    format!("0-{seq}")
}

/// What a message's progress hash field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Progress {
    pub first_ms: Option<i64>,
    pub ingest_done: bool,
    pub mask: u8,
    pub copies: u32,
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

/// A stream entry's fields (`[f, v, f, v, ...]`) as a record; `None` for an entry that is
/// not ours (a missing or mistyped field).
pub(super) fn record_of(fields: &Value) -> Option<Record> {
    let Value::Array(items) = fields else {
        return None;
    };
    let (mut id, mut accepted, mut first, mut ingest, mut hook, mut mask, mut key) =
        (None, None, None, None, None, None, None);
    for pair in items.chunks_exact(2) {
        let name = bytes(&pair[0])?;
        let value = &pair[1];
        match std::str::from_utf8(name).ok()? {
            F_ID => id = Some(std::str::from_utf8(bytes(value)?).ok()?.to_string()),
            F_ACCEPTED => accepted = Some(int(value)?),
            F_FIRST => first = Some(int(value)?),
            F_INGEST => ingest = Some(Arc::<[u8]>::from(bytes(value)?)),
            F_HOOK => hook = Some(Arc::<[u8]>::from(bytes(value)?)),
            F_MASK => mask = Some(u8::try_from(int(value)?).ok()?),
            F_HOOKS_KEY => key = Some(int(value)? as u64),
            _ => {}
        }
    }
    let id = id.filter(|i| !i.is_empty())?;
    Some(Record {
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
        assert_eq!(owner_of_stream("fleet", &k.stream), Some("abc"));
        assert_eq!(owner_of_stream("other", &k.stream), None);
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

    #[test]
    fn an_entry_without_an_id_is_not_a_record() {
        let v = Value::Array(vec![
            Value::BulkString(b"a".to_vec()),
            Value::BulkString(b"1".to_vec()),
        ]);
        assert_eq!(record_of(&v), None);
    }
}
