//! Bytes: everything about how a message is written and read. Owns the JS-canonical JSON
//! writer (`canonical_json.rs`), a message read from JSON text (`json_text.rs`; as a
//! collector of Segment's tracking API receives it: `read_collected.rs`), a call's
//! objects written once (`encode.rs`), the two destinations' bodies and headers
//! (`ingestion.rs`, `webhook.rs`), the bytes the queue shares (`body.rs`) and a request body
//! made of them (`frames.rs`), message ids
//! (`message_id.rs`) and signatures (`signature.rs`). It builds requests; it never sends one.
//!
//! May use: `model/` and the leaves.

pub(crate) mod body;
pub mod canonical_json;
pub(crate) mod encode;
pub(crate) mod frames;
pub(crate) mod ingestion;
pub(crate) mod json_text;
pub(crate) mod message_id;
pub(crate) mod read_collected;
pub(crate) mod signature;
pub(crate) mod subscription;
pub(crate) mod webhook;

pub(crate) use body::Body;
