//! Shutdown: what is left ends (dropped, or spooled), every outcome reported once.

use super::timers::Due;
use super::track::{lone, MsgId};
use super::Tenant;
use crate::delivery::command::Command;
use crate::delivery::job::Job;
use crate::model::outcome::{OutcomeKind, Reason};

impl Tenant {
    pub(super) fn shutdown(mut self) {
        // Requests out are left to the I/O engine (their messages end here as in flight).
        let mut waiting: Vec<Job> = Vec::new();
        for lane in self.lanes.iter_mut() {
            waiting.extend(lane.stop());
        }
        let mut left: Vec<(u64, MsgId, bool)> = self
            .tracks
            .iter()
            .filter(|(_, t)| !t.finished)
            .map(|(seq, t)| (*seq, t.id.clone(), t.requests > 0))
            .collect();
        // Lone messages: in flight, in the open batch, waiting in the lane, waiting to retry.
        left.extend(self.flying.drain().map(|(seq, b)| (seq, lone(&b), true)));
        let timers = self.timers.take_all();
        let batches = waiting
            .into_iter()
            .filter_map(|job| match job {
                Job::Batch(b) => Some(b),
                _ => None,
            })
            .chain(timers.filter_map(|due| match due {
                Due::Batch(b) => Some(b),
                Due::HookRound(_) => None,
            }))
            .chain(self.batcher.close());
        for batch in batches {
            for (seq, bytes) in batch.msgs {
                if !self.tracks.contains_key(&seq) {
                    left.push((seq, lone(&bytes), false));
                }
            }
        }
        left.sort_by_key(|(seq, _, _)| *seq);
        for t in self.tracks.values() {
            if let Some(round) = t.round().filter(|_| !t.finished) {
                self.shared.watch.unwait(round.live_mask());
                self.shared.watch.retrying(0, round.retrying());
            }
        }
        self.tracks.clear();
        // Replays left are still marked in the dead letters: the next client replays them.
        self.replays.clear();
        for (seq, id, in_flight) in left {
            if in_flight {
                self.shared.counters.landed();
            }
            if self.spool.is_some() {
                // On disk: the next client on the spool delivers it (at least once).
                self.shared.leave_spooled(true);
                continue;
            }
            let detail = if in_flight {
                "client closed while the request was in flight; delivery unknown"
            } else {
                "client closed before delivery"
            };
            self.report(
                Some(seq),
                || id.to_arc(),
                OutcomeKind::Dropped,
                Some(Reason::Closed),
                detail.into(),
            );
        }
        // Messages enqueued before close took effect but not yet read.
        while let Ok(cmd) = self.mailbox.commands.try_recv() {
            if let Command::Resume(_) = cmd {
                self.shared.leave_spooled(true);
            }
            if let Command::Message(item) = cmd {
                if self.spool.is_some() {
                    let spooled = item.ingest.is_some() || item.hook.is_some();
                    self.shared.leave_spooled(spooled);
                    continue;
                }
                self.report(
                    None,
                    || item.msg_id().to_arc(),
                    OutcomeKind::Dropped,
                    Some(Reason::Closed),
                    "client closed before delivery".into(),
                );
            }
        }
        // After its last op: the spool writer commits them, then lets the tenant go.
        if let Some(spool) = &self.spool {
            spool.closed();
        }
        self.shared
            .stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.shared.notify();
    }
}
