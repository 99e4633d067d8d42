//! Requests going out: batches and webhook rounds handed to the lanes.

use super::track::Track;
use super::Tenant;
use crate::delivery::job::{Batch, Job};
use crate::wire::ingestion::Element;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

impl Tenant {
    /// Hands each lane the requests it may send now.
    pub(super) fn dispatch(&mut self, now: Instant) {
        self.lanes.share_brisk();
        for i in 0..self.lanes.len() {
            while let Some(job) = self.lanes.get_mut(i).and_then(|l| l.take(now)) {
                if let Job::Hook { seq, first, .. } = &job {
                    // Every URL gets each message's first request, even when another URL
                    // has delivered it meanwhile (each message goes to every webhook); a
                    // retry of a round another URL settled is not sent.
                    let target = (i - 1) as u8;
                    let wanted = self
                        .tracks
                        .get(seq)
                        .and_then(Track::round)
                        .is_some_and(|r| r.wants(target));
                    if !wanted && !*first {
                        continue;
                    }
                }
                if !self.lanes.at(i).make_room() {
                    // No place for it in the process's budget of requests now: it waits at
                    // the head of its lane for the lane's next answer.
                    self.lanes.at(i).push_front(job);
                    break;
                }
                match &job {
                    Job::Batch(b) => {
                        for (seq, bytes) in &b.msgs {
                            self.request_started(*seq, Some(bytes));
                        }
                    }
                    Job::Hook { seq, .. } => self.request_started(*seq, None),
                }
                self.lanes.at(i).start(job, now);
            }
            if let Some((now_held, waited)) = self.lanes.get_mut(i).and_then(|l| l.throttled()) {
                if let Some(url) = self.shared.watch.urls.get(i - 1) {
                    url.throttled_now.store(now_held, Relaxed);
                    if waited > 0 {
                        url.throttled.fetch_add(waited, Relaxed);
                    }
                }
            }
        }
    }

    /// A request carrying message `seq` goes out; `bytes` is its batch entry (ingestion).
    pub(super) fn request_started(&mut self, seq: u64, bytes: Option<&Element>) {
        match self.tracks.get_mut(&seq) {
            Some(t) => {
                t.requests += 1;
                if t.requests == 1 && !t.finished {
                    self.shared.counters.in_flight.fetch_add(1, Relaxed);
                }
            }
            None => {
                if let Some(bytes) = bytes {
                    self.flying.insert(seq, bytes.clone());
                    self.shared.counters.in_flight.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// A request carrying message `seq` came back (or never left); a lone message's bytes.
    pub(super) fn request_ended(&mut self, seq: u64) -> Option<Element> {
        if let Some(bytes) = self.flying.remove(&seq) {
            self.shared.counters.landed();
            return Some(bytes);
        }
        if let Some(t) = self.tracks.get_mut(&seq) {
            t.requests -= 1;
            if t.requests == 0 {
                if t.finished {
                    self.tracks.remove(&seq);
                } else {
                    self.shared.counters.landed();
                }
            }
        }
        None
    }

    pub(super) fn close_batch(&mut self, now: Instant) {
        if let Some(batch) = self.batcher.close() {
            self.queue_batch(batch, now);
        }
    }

    pub(super) fn queue_batch(&mut self, mut batch: Batch, now: Instant) {
        // A resumed message's window started in its earlier life.
        let earliest = batch
            .msgs
            .iter()
            .filter_map(|(seq, _)| self.tracks.get(seq).and_then(Track::since))
            .min();
        batch.first = Some(earliest.map_or(now, |e| e.min(now)));
        self.lanes.at(0).push(Job::Batch(batch));
    }

    /// Sends the message to every webhook still worth trying.
    pub(super) fn start_round(&mut self, seq: u64, now: Instant) {
        let Some(track) = self.tracks.get_mut(&seq) else {
            return;
        };
        // Usually a view of the body: no copy per round.
        let id = track.id.clone();
        let Some(round) = track.round_mut() else {
            return;
        };
        let mask = round.start(now);
        if round.attempts > 1 {
            self.shared
                .counters
                .retries
                .fetch_add(u64::from(mask.count_ones()), Relaxed);
        }
        let body = round.body.clone();
        let first = round.attempts == 1;
        for target in 0..8u8 {
            if mask & (1 << target) != 0 {
                self.lanes.at(1 + target as usize).push(Job::Hook {
                    seq,
                    id: id.clone(),
                    body: body.clone(),
                    first,
                });
            }
        }
    }
}
