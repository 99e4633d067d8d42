//! What a lane sends: a batch for ingestion, or one POST of a message to a webhook URL.

use crate::wire::ingestion::Element;
use crate::wire::message_id::MsgId;
use crate::wire::Body;
use std::time::Instant;

/// Ingestion messages sent together: (message seq, bytes).
pub(crate) struct Batch {
    pub msgs: Vec<(u64, Element)>,
    /// The sum of the messages' lengths, kept as they join: what a request would carry is
    /// known without reading every message (`batch::RequestLimit`).
    pub bytes: usize,
    /// When its first attempt was made (the retry window opens then).
    pub first: Option<Instant>,
    pub attempts: u32,
}

impl Batch {
    /// A batch of `msgs`, their bytes counted.
    pub(crate) fn new(msgs: Vec<(u64, Element)>, first: Option<Instant>, attempts: u32) -> Batch {
        let bytes = msgs.iter().map(|(_, m)| m.len()).sum();
        Batch {
            msgs,
            bytes,
            first,
            attempts,
        }
    }
}

/// One request of a lane.
pub(crate) enum Job {
    Batch(Batch),
    Hook {
        seq: u64,
        /// The message id (Standard Webhooks sends and signs it), usually inside `body`.
        id: MsgId,
        body: Body,
        /// Part of the message's first round: sent even when another URL has delivered the
        /// message meanwhile (every URL gets each message once; only retries stop).
        first: bool,
    },
}
