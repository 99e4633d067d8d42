//! Messages coming in: accepted by a call, or resumed from the spool.

use super::track::{MsgId, Track};
use super::Tenant;
use crate::delivery::command::{Item, ItemId, Resumed};
use crate::delivery::fanout::Round;
use crate::delivery::job::Batch;
use crate::durable::Op;
use crate::model::outcome::{OutcomeKind, Reason};
use crate::wire::ingestion::Element;
use std::time::Instant;

impl Tenant {
    /// Takes an accepted message. One for ingestion alone, on a client without a spool, whose
    /// id reads back from its bytes, is *lone*: it gets no `Track` (40 bytes and the map's
    /// slot, a fifth of a queued message's memory). Its batch entry is all the scheduler
    /// keeps, its outcome is reported from the batch's result with the id read from its
    /// bytes, and `flying` holds it while a request carries it, so close can end it.
    pub(super) fn accept(&mut self, item: Item) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.watermark.accept();
        if !self.rules.send {
            return self.report(
                Some(seq),
                || item.msg_id().to_arc(),
                OutcomeKind::Dropped,
                Some(Reason::SendDisabled),
                "send is disabled".into(),
            );
        }
        let remaining = u8::from(item.ingest.is_some()) + u8::from(item.hook.is_some());
        if remaining == 0 {
            return self.report(
                Some(seq),
                || item.msg_id().to_arc(),
                OutcomeKind::Dropped,
                Some(Reason::Filtered),
                "integrations exclude every destination of this client".into(),
            );
        }
        let has_hook = item.hook.is_some();
        let now = Instant::now();
        if let (Some(bytes), None, None, ItemId::At(at, len)) =
            (&item.ingest, &item.hook, &self.spool, &item.id)
        {
            if bytes.id_span() == Some((*at, *len)) {
                // A lone message: its batch entry is all the scheduler keeps of it.
                let bytes = item.ingest.expect("matched above");
                let closed: Vec<Batch> = self.batcher.add(seq, bytes, item.accepted).collect();
                for batch in closed {
                    self.queue_batch(batch, now);
                }
                return;
            }
        }
        let id = item.msg_id();
        let bytes = window_bytes(item.spool_size());
        let round = item
            .hook
            .map(|body| Round::new(body, self.rules.hook_mask, None));
        if round.is_some() {
            self.shared.watch.wait(self.rules.hook_mask);
        }
        self.tracks
            .insert(seq, Track::new(id, remaining, round, None, bytes));
        if let Some(bytes) = item.ingest {
            let closed: Vec<Batch> = self.batcher.add(seq, bytes, item.accepted).collect();
            for batch in closed {
                self.queue_batch(batch, now);
            }
        }
        if has_hook {
            self.start_round(seq, now);
        }
    }

    /// A message from the spool: goes on where its earlier life left it. A part this client
    /// has no destination for fails with a reason.
    pub(super) fn resume(&mut self, r: Resumed) {
        let len = |b: &Option<crate::wire::Body>| b.as_ref().map_or(0, |b| b.len() as u64);
        let bytes = window_bytes(len(&r.ingest) + len(&r.hook));
        let seq = self.next_seq;
        self.next_seq += 1;
        self.watermark.accept();
        let mut failure = None;
        let ingest = match r.ingest {
            Some(_) if !self.rules.has_ingestion => {
                failure =
                    Some("resumed from the spool for ingestion, but this client has no write key");
                None
            }
            other => other,
        };
        // Webhooks that are all off (`Webhook::enabled`) end a resumed webhook part without
        // a failure, as a mask that no URL is left in does.
        let hooks_off = self.rules.hook_mask == 0 && self.lanes.len() > 1;
        let hook = match r.hook {
            Some(_) if hooks_off => None,
            Some(_) if self.rules.hook_mask == 0 => {
                failure
                    .get_or_insert("resumed from the spool for webhooks, but this client has none");
                None
            }
            Some(body) if r.hook_mask != 0 => Some(Round::new(body, r.hook_mask, r.first)),
            _ => None,
        };
        let remaining = u8::from(ingest.is_some()) + u8::from(hook.is_some());
        if remaining == 0 {
            self.spool(|| Op::Remove {
                tenant: self.spool_no(),
                id: r.id.clone(),
                bytes,
            });
            return match failure {
                Some(why) => self.report(
                    Some(seq),
                    || r.id.clone(),
                    OutcomeKind::Failed,
                    Some(Reason::Other),
                    why.into(),
                ),
                None => self.report(
                    Some(seq),
                    || r.id.clone(),
                    OutcomeKind::Dropped,
                    Some(Reason::Other),
                    "resumed from the spool with nothing left to send".into(),
                ),
            };
        }
        let has_hook = hook.is_some();
        if let Some(round) = &hook {
            self.shared.watch.wait(round.live_mask());
        }
        if let Some(job) = r.replay {
            self.replays.insert(seq, job);
        }
        let mut track = Track::new(MsgId::Own(r.id), remaining, hook, r.first, bytes);
        if let Some(why) = failure {
            track.fail((Reason::Other, why.to_string()));
        }
        self.tracks.insert(seq, track);
        let now = Instant::now();
        if let Some(bytes) = ingest {
            let closed: Vec<Batch> = self.batcher.add(seq, Element::own(bytes), now).collect();
            for batch in closed {
                self.queue_batch(batch, now);
            }
        }
        if has_hook {
            self.start_round(seq, now);
        }
    }

    /// This tenant's number in its spool.
    pub(super) fn spool_no(&self) -> crate::durable::TenantNo {
        self.spool.as_ref().map_or(0, |s| s.tenant)
    }

    /// Tells the spool writer, if any.
    pub(super) fn spool(&self, op: impl FnOnce() -> Op) {
        if let Some(tx) = &self.spool {
            tx.send(op());
        }
    }
}

/// A message's bytes as the spool writer counts them in a memory window (a message is at most
/// `MAX_MESSAGE_BYTES` in each of its two bodies, so this never saturates in practice).
pub(super) fn window_bytes(bytes: u64) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}
