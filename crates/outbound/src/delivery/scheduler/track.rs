//! What the scheduler keeps of a message until its outcome: its id (read from its own
//! bytes when they hold it) and, for messages that need one, a `Track`.

use crate::delivery::fanout::Round;
use crate::model::outcome::Reason;
use crate::wire::ingestion::Element;
pub(crate) use crate::wire::message_id::MsgId;
use std::sync::Arc;
use std::time::Instant;

/// A lone message's id, read from its ingestion bytes: a message is lone only when this
/// reads back its id (see [`Tenant::accept`](super::Tenant::accept)).
pub(super) fn lone_id(bytes: &Element) -> Option<MsgId> {
    let (at, len) = bytes.id_span()?;
    Some(MsgId::In(bytes.bytes().clone(), at, len))
}

/// [`lone_id`] of a message accepted as lone, which reads back by construction.
pub(super) fn lone(bytes: &Element) -> MsgId {
    lone_id(bytes).unwrap_or_else(|| MsgId::Own(Arc::from("")))
}

pub(super) struct Track {
    pub(super) id: MsgId,
    /// What few messages have: boxed, since every accepted message has a `Track` until its
    /// outcome (the queue's memory is mostly these and the bytes).
    pub(super) extras: Option<Box<TrackExtras>>,
    /// Requests out for this message now (one per destination at most).
    pub(super) requests: u16,
    /// What the spool writer counts of it in its tenant's memory window (`Op::Remove`
    /// gives it back).
    pub(super) bytes: u32,
    /// Destinations still to finish.
    pub(super) remaining: u8,
    /// Outcome already reported; kept only until its last request returns.
    pub(super) finished: bool,
}

/// A `Track`'s rarer parts: a webhook round under way, a failure to report, an earlier life.
#[derive(Default)]
pub(super) struct TrackExtras {
    /// Boxed: failures are rare, and a webhook message holds a `TrackExtras` until its outcome.
    pub(super) failure: Option<Box<(Reason, String)>>,
    pub(super) hook: Option<Round>,
    /// A resumed message's first attempt (its ingestion retry window goes on from there).
    pub(super) since: Option<Instant>,
}

impl Track {
    pub(super) fn new(
        id: MsgId,
        remaining: u8,
        hook: Option<Round>,
        since: Option<Instant>,
        bytes: u32,
    ) -> Track {
        let extras = (hook.is_some() || since.is_some()).then(|| {
            Box::new(TrackExtras {
                failure: None,
                hook,
                since,
            })
        });
        Track {
            id,
            extras,
            requests: 0,
            bytes,
            remaining,
            finished: false,
        }
    }

    pub(super) fn round(&self) -> Option<&Round> {
        self.extras.as_ref()?.hook.as_ref()
    }

    pub(super) fn round_mut(&mut self) -> Option<&mut Round> {
        self.extras.as_mut()?.hook.as_mut()
    }

    pub(super) fn end_round(&mut self) {
        if let Some(extras) = &mut self.extras {
            extras.hook = None;
        }
    }

    pub(super) fn since(&self) -> Option<Instant> {
        self.extras.as_ref()?.since
    }

    /// Keeps the first failure of its destinations.
    pub(super) fn fail(&mut self, failure: (Reason, String)) {
        self.extras
            .get_or_insert_with(Box::default)
            .failure
            .get_or_insert_with(|| Box::new(failure));
    }

    pub(super) fn take_failure(&mut self) -> Option<(Reason, String)> {
        self.extras.as_mut()?.failure.take().map(|f| *f)
    }
}

// A `Track` lives for every queued message, a `TrackExtras` for each with webhooks: keep them
// small.
const _: () = assert!(std::mem::size_of::<Track>() <= 40);
const _: () = assert!(std::mem::size_of::<TrackExtras>() <= 72);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Body;

    #[test]
    fn a_lone_message_id_reads_back_from_its_ingestion_bytes() {
        let el = |b: &[u8]| Element::own(Body::copy_from_slice(b));
        let id = lone_id(&el(
            br#"{"type":"track","messageId":"m-1","timestamp":"t"}"#,
        ));
        assert_eq!(id.map(|id| id.as_str().to_owned()).as_deref(), Some("m-1"));
        let id = lone_id(&el(br#"{"type":"identify","messageId":"","x":1}"#));
        assert_eq!(id.map(|id| id.as_str().to_owned()).as_deref(), Some(""));
        // Not the shape of an ingestion element: no id, and such a message keeps a `Track`.
        assert!(lone_id(&el(br#"{"type":"track","userId":"u","messageId":"m"}"#)).is_none());
        assert!(lone_id(&el(br#"{"type":"track","messageId":"unterminated"#)).is_none());
        assert!(lone_id(&el(b"")).is_none());
    }
}
