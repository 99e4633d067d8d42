//! A message's end: the join of its destinations into exactly one outcome, counted and
//! reported.

use super::track::lone;
use super::Tenant;
use crate::durable::Op;
use crate::log::Level;
use crate::model::outcome::{Outcome, OutcomeKind, Reason};
use crate::wire::ingestion::Element;
use std::sync::atomic::Ordering::{Acquire, SeqCst};
use std::sync::Arc;

impl Tenant {
    /// Message `seq`'s ingestion is done; `failure` when it failed.
    pub(super) fn ingest_done(
        &mut self,
        seq: u64,
        bytes: &Element,
        failure: Option<(Reason, String)>,
    ) {
        if self.tracks.contains_key(&seq) {
            self.dest_done(seq, failure);
        } else {
            self.lone_done(seq, bytes, failure);
        }
    }

    /// A lone message's one destination is done: its outcome.
    pub(super) fn lone_done(
        &mut self,
        seq: u64,
        bytes: &Element,
        failure: Option<(Reason, String)>,
    ) {
        // The id is read back from the bytes only for a callback.
        let id = || lone(bytes).to_arc();
        match failure {
            None => self.report(Some(seq), id, OutcomeKind::Delivered, None, String::new()),
            Some((reason, detail)) => {
                self.report(Some(seq), id, OutcomeKind::Failed, Some(reason), detail)
            }
        }
    }

    /// One destination of message `seq` is done; `failure` when it failed.
    pub(super) fn dest_done(&mut self, seq: u64, failure: Option<(Reason, String)>) {
        let Some(t) = self.tracks.get_mut(&seq) else {
            return;
        };
        if t.finished {
            return;
        }
        if let Some(f) = failure {
            t.fail(f);
        }
        t.remaining -= 1;
        if t.remaining > 0 {
            return;
        }
        t.finished = true;
        let id = t.id.clone();
        let bytes = t.bytes;
        let failure = t.take_failure();
        if t.requests == 0 {
            self.tracks.remove(&seq);
        } else {
            // Its other requests are still out; stop counting it as in flight.
            self.shared.counters.landed();
        }
        match failure {
            None => self.report(
                Some(seq),
                || id.to_arc(),
                OutcomeKind::Delivered,
                None,
                String::new(),
            ),
            Some((reason, detail)) => self.report(
                Some(seq),
                || id.to_arc(),
                OutcomeKind::Failed,
                Some(reason),
                detail,
            ),
        }
        // A replayed dead letter's record is the dead letter (`results.rs` settles it).
        if !self.replays.is_empty() && self.replays.remove(&seq).is_some() {
            return;
        }
        // After the callback: a crash in between makes the next client report it again (at
        // least once), never leaves a message that no process reported.
        self.spool(|| Op::Remove {
            tenant: self.spool_no(),
            id: id.to_arc(),
            bytes,
        });
    }

    /// Counts the outcome, hands it to `on_outcome` (`id` is asked for only then), then
    /// releases the message's slot.
    pub(super) fn report(
        &mut self,
        seq: Option<u64>,
        id: impl FnOnce() -> Arc<str>,
        kind: OutcomeKind,
        reason: Option<Reason>,
        detail: String,
    ) {
        let loss = kind != OutcomeKind::Delivered && reason != Some(Reason::Filtered);
        if self.shared.tally(kind, loss) {
            if let Some(cb) = &self.on_outcome {
                let _gate = self.shared.gate.lock().unwrap_or_else(|e| e.into_inner());
                if !self.shared.callbacks_off.load(SeqCst) {
                    let outcome = Outcome {
                        message_id: id(),
                        kind,
                        reason,
                        detail,
                        subscription: None,
                    };
                    // A panicking callback must not take the scheduler down with it.
                    let call = std::panic::AssertUnwindSafe(|| cb(&outcome));
                    if std::panic::catch_unwind(call).is_err() {
                        self.logger
                            .log(Level::Warn, || "on_outcome callback panicked".into());
                    }
                }
            }
            self.shared.release();
        }
        let moved = seq.is_some_and(|s| self.watermark.end(s));
        if moved {
            self.shared.low_water.store(self.watermark.base, SeqCst);
        }
        if moved || self.shared.pending.load(Acquire) == 0 {
            self.shared.notify();
        }
    }
}
