//! A commit's transaction as RESP, written straight into one reused buffer: one copy of each
//! record, no command object (with its own buffers) per message, no `String` per entry id.
//! The few other commands of a commit go through `redis::Cmd::write_packed_command`.

use super::keys::GroupOut;
#[cfg(test)]
use super::keys::Packed;

/// `MULTI`, as Redis reads it.
pub(super) const MULTI: &[u8] = b"*1\r\n$5\r\nMULTI\r\n";
/// `EXEC`, as Redis reads it.
pub(super) const EXEC: &[u8] = b"*1\r\n$4\r\nEXEC\r\n";

/// The head of a command of `n` arguments (its name included).
pub(super) fn array(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn bulk_head(out: &mut Vec<u8>, len: usize) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// One argument.
pub(super) fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    bulk_head(out, b.len());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// The entry id `0-SEQ` as one argument. Our entry ids are chosen by us (not `*`): an XADD
/// retried after a reply was lost is refused as "equal or smaller" instead of written twice.
pub(super) fn bulk_id(out: &mut Vec<u8>, seq: u64) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(seq).as_bytes();
    bulk_head(out, 2 + digits.len());
    out.extend_from_slice(b"0-");
    out.extend_from_slice(digits);
    out.extend_from_slice(b"\r\n");
}

/// `NAME key 0-SEQ...` (XDEL of entries).
pub(super) fn ids(
    out: &mut Vec<u8>,
    name: &str,
    key: &str,
    seqs: impl ExactSizeIterator<Item = u64>,
) {
    array(out, 2 + seqs.len());
    bulk(out, name.as_bytes());
    bulk(out, key.as_bytes());
    for seq in seqs {
        bulk_id(out, seq);
    }
}

/// A progress hash field of entry `0-SEQ`: record `idx`'s (`0-SEQ:IDX`), or the entry's
/// done bitmap (`0-SEQ:d`), as one argument (`keys::field_of`, `keys::done_field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Of(u64, u32),
    Done(u64),
}

/// A progress field as one argument.
pub(super) fn bulk_field(out: &mut Vec<u8>, field: Field) {
    let (seq, tail) = match field {
        Field::Of(seq, idx) => (seq, Some(idx)),
        Field::Done(seq) => (seq, None),
    };
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(seq).as_bytes();
    let mut idx = itoa::Buffer::new();
    let tail = match tail {
        Some(i) => idx.format(i).as_bytes(),
        None => b"d",
    };
    bulk_head(out, 3 + digits.len() + tail.len());
    out.extend_from_slice(b"0-");
    out.extend_from_slice(digits);
    out.push(b':');
    out.extend_from_slice(tail);
    out.extend_from_slice(b"\r\n");
}

/// `HDEL key FIELD...`.
pub(super) fn hdel(out: &mut Vec<u8>, key: &str, fields: &[Field]) {
    array(out, 2 + fields.len());
    bulk(out, b"HDEL");
    bulk(out, key.as_bytes());
    for &f in fields {
        bulk_field(out, f);
    }
}

/// `XADD stream 0-SEQ r <packed commit group>` (`keys::GroupOut`).
pub(super) fn xadd_group(out: &mut Vec<u8>, stream: &str, seq: u64, group: &GroupOut) {
    out.extend_from_slice(b"*5\r\n$4\r\nXADD\r\n");
    bulk(out, stream.as_bytes());
    bulk_id(out, seq);
    bulk(out, super::keys::F_RECORD.as_bytes());
    bulk_head(out, group.len());
    group.write_into(out);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each form is what the redis crate itself packs for the same command.
    #[test]
    fn the_written_commands_are_the_ones_the_redis_crate_packs() {
        assert_eq!(MULTI, redis::cmd("MULTI").get_packed_command());
        assert_eq!(EXEC, redis::cmd("EXEC").get_packed_command());
        let mut out = Vec::new();
        ids(
            &mut out,
            "XDEL",
            "{p:o}:s",
            [7, 1_234_567_890_123].into_iter(),
        );
        let want = redis::cmd("XDEL")
            .arg("{p:o}:s")
            .arg("0-7")
            .arg("0-1234567890123")
            .get_packed_command();
        assert_eq!(out, want);
        let records = [
            Packed {
                id: "m-1",
                accepted_ms: 1_764_000_000_000,
                first_ms: Some(1_764_000_000_500),
                ingest: Some(b"{\"ingest\":1}"),
                hook: Some(b""),
                mask: 0b101,
                hooks_key: 42,
            },
            Packed {
                id: "m-2",
                accepted_ms: 1,
                first_ms: None,
                ingest: None,
                hook: None,
                mask: 0,
                hooks_key: 0,
            },
        ];
        let group = GroupOut {
            names: vec!["", "web"],
            records: vec![(0, records[0]), (1, records[1])],
        };
        let mut out = Vec::new();
        xadd_group(&mut out, "{p:o}:s", 12, &group);
        let mut value = Vec::new();
        group.write_into(&mut value);
        assert_eq!(value.len(), group.len());
        let want = redis::cmd("XADD")
            .arg("{p:o}:s")
            .arg("0-12")
            .arg("r")
            .arg(value)
            .get_packed_command();
        assert_eq!(out, want);
        let mut out = Vec::new();
        hdel(
            &mut out,
            "{p:o}:p",
            &[Field::Of(7, 0), Field::Done(7), Field::Of(12, 2047)],
        );
        let want = redis::cmd("HDEL")
            .arg("{p:o}:p")
            .arg("0-7:0")
            .arg("0-7:d")
            .arg("0-12:2047")
            .get_packed_command();
        assert_eq!(out, want);
    }
}
