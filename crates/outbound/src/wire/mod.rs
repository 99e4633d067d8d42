//! Bytes: everything about how a message is written and read. Owns the JS-canonical JSON
//! writer (`canonical_json.rs`), a message read from JSON text (`json_text.rs`), a call's
//! objects written once (`encode.rs`), the two destinations' bodies and headers
//! (`ingestion.rs`, `webhook.rs`), message ids (`message_id.rs`) and signatures
//! (`signature.rs`). It builds requests; it never sends one.
//!
//! May use: `model/` and the leaves.

pub mod canonical_json;
pub(crate) mod encode;
pub(crate) mod ingestion;
pub(crate) mod json_text;
pub(crate) mod message_id;
pub(crate) mod signature;
pub(crate) mod webhook;

/// A message's bytes as the queue, the lanes and the spool share them: a reference-counted
/// slice. A call's bodies are carved from its thread's chunk ([`encode::Scratch::body_bytes`]),
/// so a call allocates once per chunk rather than once per body, and the thread that ends a
/// message frees a chunk rather than each body (with glibc, each such free takes the calling
/// thread's arena lock: contention with the next call's allocation).
pub(crate) type Body = bytes::Bytes;
