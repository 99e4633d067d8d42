//! Bytes: the canonical JSON writer and reader, the two destinations' bodies, ids, signatures.

pub mod canonical_json;
pub(crate) mod encode;
pub(crate) mod ingestion;
pub(crate) mod json_text;
pub(crate) mod message_id;
pub(crate) mod signature;
pub(crate) mod webhook;
