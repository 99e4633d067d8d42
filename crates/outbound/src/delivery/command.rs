//! What flows into the scheduler: accepted messages in their bytes, messages resumed from
//! the spool, flush and shutdown; and what a client asks the spool writer of its dead
//! letters ([`Request`]).

use crate::durable::dead::Pick;
use crate::durable::TenantNo;
use crate::error::Error;
use crate::model::dead_letter::{
    DeadLetter, DeadLetterPage, DeadLetterQuery, DeadLetterStats, ReplayProgress,
};
use crate::wire::ingestion::Element;
use crate::wire::message_id::MsgId;
use crate::wire::Body;
use crossbeam_channel::Sender;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

/// One accepted message, already in the bytes of each destination it goes to.
pub(crate) struct Item {
    pub id: ItemId,
    pub ingest: Option<Element>,
    pub hook: Option<Body>,
    /// When the call accepted it: its batch's `flush_interval` counts from here, however
    /// late the scheduler reads it.
    pub accepted: Instant,
}

/// Where an accepted message's id is.
pub(crate) enum ItemId {
    /// In its body, as it is, at (start, length): the ingestion element's bytes, or the
    /// webhook body when there is no element. Every id we make is: a call allocates
    /// nothing for it, and the scheduler reads it from there.
    At(u16, u16),
    Own(Arc<str>),
}

impl Item {
    /// The bytes it takes in a spool, as a call reserves them and the spool writer gives
    /// them back once the store counts the message itself.
    pub(crate) fn spool_size(&self) -> u64 {
        (self.ingest.as_ref().map_or(0, |b| b.len()) + self.hook.as_ref().map_or(0, |b| b.len()))
            as u64
    }

    /// What `ItemId::At` is read from.
    fn body(&self) -> Option<&Body> {
        self.ingest
            .as_ref()
            .map(Element::bytes)
            .or(self.hook.as_ref())
    }

    /// The id kept where `body` holds it as it is at `at` (checked), in an allocation of
    /// its own otherwise.
    pub(crate) fn id_of(id: &str, body: Option<&Body>, at: Option<u16>) -> ItemId {
        match (body, at, u16::try_from(id.len())) {
            (Some(body), Some(at), Ok(len))
                if body.get(usize::from(at)..usize::from(at) + id.len()) == Some(id.as_bytes()) =>
            {
                ItemId::At(at, len)
            }
            _ => ItemId::Own(id.into()),
        }
    }

    pub(crate) fn id(&self) -> &str {
        match (&self.id, self.body()) {
            (ItemId::At(at, len), Some(body)) => {
                let at = usize::from(*at);
                std::str::from_utf8(&body[at..at + usize::from(*len)]).unwrap_or("")
            }
            (ItemId::Own(id), _) => id,
            (ItemId::At(..), None) => "",
        }
    }

    /// The id as the scheduler keeps it until the outcome.
    pub(crate) fn msg_id(&self) -> MsgId {
        match (&self.id, self.body()) {
            (ItemId::At(at, len), Some(body)) => MsgId::In(body.clone(), *at, *len),
            (ItemId::Own(id), _) => MsgId::Own(id.clone()),
            (ItemId::At(..), None) => MsgId::Own(Arc::from("")),
        }
    }

    /// The id in an allocation of its own, which the item shares from now on: for a
    /// holder that keeps it as long as the message (the spool).
    pub(crate) fn share_id(&mut self) -> Arc<str> {
        let id: Arc<str> = match &self.id {
            ItemId::Own(id) => id.clone(),
            ItemId::At(..) => self.id().into(),
        };
        self.id = ItemId::Own(id.clone());
        id
    }
}

/// A message taken over from the spool: what is left of it to deliver.
pub(crate) struct Resumed {
    pub id: Arc<str>,
    pub ingest: Option<Body>,
    pub hook: Option<Body>,
    /// Webhook URLs still worth trying.
    pub hook_mask: u8,
    /// Its first attempt, in an earlier life: the retry window goes on from there.
    pub first: Option<Instant>,
    /// A dead letter's replay, of this replay job (0: none known): the dead letter is its
    /// record in the store, not a spooled message.
    pub replay: Option<u64>,
}

pub(crate) enum Command {
    Message(Item),
    Resume(Resumed),
    /// Close the open batch now; the scheduler writes into the barrier the number below
    /// which every message was accepted before the flush.
    Flush(Option<Arc<AtomicU64>>),
    /// End what is left (outcome: dropped, closed) and stop.
    Shutdown,
    /// Start no request, let the ones out come back, then stop as `Shutdown` does: what is
    /// left stays in the spool for the next client of the name, and nothing that was in
    /// flight is sent again by it (`Client::hand_over`).
    HandOver,
}

/// What a client asks of its dead letters.
pub(crate) enum Ask {
    List(DeadLetterQuery),
    Get(String),
    Delete(String),
    /// Replay what `pick` names to the webhooks of `mask` (0: all).
    Replay(Pick, u8),
    Progress(u64),
    Stats,
    /// Every tenant of the writer that keeps dead letters, by name, with its counts
    /// (`Engine::dead_letter_counts`; the request's tenant is not looked at), or only those
    /// numbered here (`Engine::dead_letter_counts_of`).
    Counts(Option<Vec<TenantNo>>),
}

/// The answer to an [`Ask`].
pub(crate) enum Answer {
    Page(DeadLetterPage),
    Letter(Option<Box<DeadLetter>>),
    Deleted(bool),
    /// A replay's progress; `None`: nothing was marked (not there, or replaying already),
    /// or no such replay.
    Replay(Option<ReplayProgress>),
    Stats(DeadLetterStats),
    Counts(Vec<(String, DeadLetterStats)>),
}

/// An [`Ask`] of tenant `tenant`, with where its answer goes.
pub(crate) struct Request {
    pub tenant: TenantNo,
    pub ask: Ask,
    pub reply: Sender<Result<Answer, Error>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_id_kept_in_the_body_reads_back_as_given() {
        let item = |id: &str, at| {
            let body = Body::from_static(br#"{"type":"track","messageId":"m-1","x":1}"#);
            Item {
                id: Item::id_of(id, Some(&body), at),
                ingest: Some(Element::own(body)),
                hook: None,
                accepted: Instant::now(),
            }
        };
        let kept = item("m-1", Some(29));
        assert!(matches!(kept.id, ItemId::At(29, 3)));
        assert_eq!(kept.id(), "m-1");
        let kept = kept.msg_id();
        assert!(matches!(kept, MsgId::In(..)));
        assert_eq!(kept.as_str(), "m-1");
        assert_eq!(&*kept.to_arc(), "m-1");
        let own = item("q\"", None);
        assert!(matches!(own.id, ItemId::Own(_)));
        assert_eq!(own.id(), "q\"");
        assert_eq!(own.msg_id().as_str(), "q\"");
        // A place that does not hold the id is not trusted.
        for at in [Some(28), Some(40), Some(u16::MAX)] {
            let own = item("m-1", at);
            assert!(matches!(own.id, ItemId::Own(_)), "{at:?}");
            assert_eq!(own.id(), "m-1");
        }
    }

    #[test]
    fn a_spooled_message_shares_the_id_the_spool_holds() {
        let body = Body::from_static(br#"{"type":"track","messageId":"m-1","x":1}"#);
        let mut item = Item {
            id: Item::id_of("m-1", Some(&body), Some(29)),
            ingest: Some(Element::own(body)),
            hook: None,
            accepted: Instant::now(),
        };
        let spool = item.share_id();
        let id = item.msg_id();
        // The same allocation: the spool's `Remove` and the callback's id cost none.
        let MsgId::Own(shared) = &id else {
            panic!("not shared: {id:?}")
        };
        assert!(Arc::ptr_eq(shared, &spool));
        assert!(Arc::ptr_eq(&id.to_arc(), &spool));
    }
}
