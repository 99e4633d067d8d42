//! Requests coming back: what each result means for the messages it carried (retry,
//! progress for the spool, or the end of a destination).

use super::timers::Due;
use super::Tenant;
use crate::delivery::fanout::Settled;
use crate::delivery::job::{Batch, Job};
use crate::delivery::lane::Report;
use crate::delivery::watch::{tried, Attempted, Left};
use crate::durable::dead::{attempts_json, DeadOp, DeadRecord};
use crate::durable::Op;
use crate::http::attempt::Attempt;
use crate::log::Level;
use crate::model::attempts::WebhookAttempt;
use crate::model::dead_letter::reason_code;
use crate::model::outcome::Reason;
use crate::model::timestamp::wall_ms;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

impl Tenant {
    pub(super) fn on_report(&mut self, report: Report) {
        let now = Instant::now();
        let Report {
            tenant: _,
            lane,
            job,
            attempt,
            seen,
            started,
            lag,
            sent,
        } = report;
        self.lanes.at(lane).finished(&attempt, started, now);
        // What the request waited for this process: its first turn, and this look.
        self.lanes
            .at(lane)
            .answered(lag + now.saturating_duration_since(sent), now);
        // A webhook request's record: in its URL's log, and, for a failure with dead letters
        // on, kept by its message's round for its dead letter.
        let record = match &job {
            Job::Hook { id, .. } if lane > 0 => {
                let target = lane - 1;
                let answer = self.answers.share(target, seen.excerpt.as_deref());
                let attempted = Attempted {
                    id: id.as_str(),
                    attempt: &attempt,
                    seen: &seen,
                    answer: answer.clone(),
                    circuit_open: self.lanes.get(lane).is_some_and(|l| l.is_down()),
                };
                self.shared.watch.record(target, attempted, self.rules.keep);
                let keep = self.rules.dead_letters && !matches!(attempt, Attempt::Success);
                keep.then(|| tried(target, id.to_arc(), &attempt, &seen, answer))
            }
            // A subscription's batch: one record of the request, under its first event's id.
            Job::Batch(b) if self.rules.batched => {
                let first = b.msgs.first().and_then(|(seq, _)| self.tracks.get(seq));
                let id = first.map_or_else(|| Arc::from(""), |t| t.id.to_arc());
                let answer = self.answers.share(0, seen.excerpt.as_deref());
                let attempted = Attempted {
                    id: &id,
                    attempt: &attempt,
                    seen: &seen,
                    answer: answer.clone(),
                    circuit_open: self.lanes.get(0).is_some_and(|l| l.is_down()),
                };
                self.shared.watch.record(0, attempted, self.rules.keep);
                let keep = self.rules.dead_letters && !matches!(attempt, Attempt::Success);
                keep.then(|| tried(0, id, &attempt, &seen, answer))
            }
            _ => None,
        };
        match &job {
            Job::Batch(b) => {
                for (seq, _) in &b.msgs {
                    self.request_ended(*seq);
                }
            }
            Job::Hook { seq, .. } => {
                self.request_ended(*seq);
            }
        }
        self.result(lane, job, attempt, record, now);
    }

    /// What a request's result (or a request that will not be sent) means for its messages;
    /// `record`, a webhook request's (none for one not sent).
    pub(super) fn result(
        &mut self,
        lane: usize,
        job: Job,
        attempt: Attempt,
        record: Option<WebhookAttempt>,
        now: Instant,
    ) {
        match job {
            Job::Batch(batch) => self.batch_result(batch, attempt, record, now),
            Job::Hook { seq, .. } => self.hook_result(seq, (lane - 1) as u8, attempt, record, now),
        }
    }

    pub(super) fn batch_result(
        &mut self,
        mut batch: Batch,
        attempt: Attempt,
        record: Option<WebhookAttempt>,
        now: Instant,
    ) {
        let what = if self.rules.batched {
            "batch"
        } else {
            "ingestion"
        };
        let first = *batch.first.get_or_insert(now);
        batch.attempts += 1;
        if self.spool.is_some() {
            self.batch_progress(&batch, &attempt, first);
        }
        // A batching subscription's URL: its accounting, by message.
        let url = (self.shared.watch.urls.first()).filter(|_| self.rules.batched);
        let n = batch.msgs.len() as u64;
        match attempt {
            Attempt::Success => {
                if let Some(url) = url {
                    url.left(Left::Delivered, n);
                }
                for (seq, bytes) in &batch.msgs {
                    self.ingest_done(*seq, bytes, None);
                }
            }
            Attempt::Permanent {
                reason: Reason::Status(413),
                ..
            } if batch.msgs.len() > 1 => {
                // Too large for this receiver: halve it and send both halves now.
                let tail = batch.msgs.split_off(batch.msgs.len() / 2);
                let half = |msgs| Job::Batch(Batch::new(msgs, Some(first), batch.attempts));
                self.lanes.at(0).push_front(half(tail));
                self.lanes.at(0).push_front(half(batch.msgs));
            }
            Attempt::Permanent { reason, detail } => {
                self.logger
                    .log_every(Level::Warn, "ingestion:permanent", || {
                        format!("{what}: batch of {} failed: {detail}", batch.msgs.len())
                    });
                let detail = format!("{what}: {detail}");
                if let Some(url) = url {
                    url.left(Left::Failed, n);
                }
                self.batch_dead_letters(&batch, &reason, &detail, record);
                for (seq, bytes) in &batch.msgs {
                    self.ingest_done(*seq, bytes, Some((reason.clone(), detail.clone())));
                }
            }
            Attempt::Retryable {
                detail,
                retry_after,
                ..
            } => match self
                .rules
                .policy
                .next(batch.attempts, first, now, retry_after)
            {
                Some(at) => {
                    self.logger.log(Level::Debug, || {
                        format!(
                            "ingestion: retrying a batch of {} in {:?} after {detail}",
                            batch.msgs.len(),
                            at.saturating_duration_since(now)
                        )
                    });
                    self.shared.counters.retries.fetch_add(1, Relaxed);
                    self.timers.set(at, Due::Batch(batch));
                }
                None => {
                    let detail = format!(
                        "{what}: expired after {} attempts; last: {detail}",
                        batch.attempts
                    );
                    (self.logger).log_every(Level::Warn, "ingestion:expired", || detail.clone());
                    if let Some(url) = url {
                        url.left(Left::Failed, n);
                    }
                    self.batch_dead_letters(&batch, &Reason::Expired, &detail, record);
                    for (seq, bytes) in &batch.msgs {
                        self.ingest_done(*seq, bytes, Some((Reason::Expired, detail.clone())));
                    }
                }
            },
        }
    }

    /// A subscription's batch failed for good: each of its events is a dead letter (with
    /// `dead_letters` on), written before the ops that drop their bodies.
    fn batch_dead_letters(
        &self,
        batch: &Batch,
        reason: &Reason,
        detail: &str,
        record: Option<WebhookAttempt>,
    ) {
        let (Some(tx), true) = (&self.spool, self.rules.batched && self.rules.dead_letters) else {
            return;
        };
        let attempts = attempts_json(&record.into_iter().collect::<Vec<_>>());
        let failed_ms = crate::durable::dead::unix_ms(SystemTime::now());
        for (seq, bytes) in &batch.msgs {
            let Some(t) = self.tracks.get(seq) else {
                continue;
            };
            tx.send_dead(DeadOp::Put(Box::new(DeadRecord {
                tenant: tx.tenant,
                id: t.id.to_arc(),
                failed_ms,
                reason: reason_code(reason),
                detail: detail.to_string(),
                rounds: batch.attempts,
                first_ms: batch.first.map(wall_ms),
                attempts: attempts.clone(),
                body: bytes.to_body(),
                job: None,
            })));
        }
    }

    /// What the spool must remember of a batch's result: its first attempt when it will be
    /// retried, and that the ingestion part is over for messages still waiting on webhooks.
    pub(super) fn batch_progress(&self, batch: &Batch, attempt: &Attempt, first: Instant) {
        let over = !matches!(attempt, Attempt::Retryable { .. });
        let split = matches!(
            attempt,
            Attempt::Permanent {
                reason: Reason::Status(413),
                ..
            }
        ) && batch.msgs.len() > 1;
        for (seq, _) in &batch.msgs {
            let Some(t) = self.tracks.get(seq) else {
                continue;
            };
            if batch.attempts == 1 && !over {
                let at_ms = wall_ms(first);
                self.spool(|| Op::FirstAttempt {
                    tenant: self.spool_no(),
                    id: t.id.to_arc(),
                    at_ms,
                });
            }
            if over && !split && t.remaining > 1 && !t.finished {
                self.spool(|| Op::IngestDone {
                    tenant: self.spool_no(),
                    id: t.id.to_arc(),
                });
            }
        }
    }

    pub(super) fn hook_result(
        &mut self,
        seq: u64,
        target: u8,
        attempt: Attempt,
        record: Option<WebhookAttempt>,
        now: Instant,
    ) {
        let watch = &self.shared.watch;
        // An answer that came back after another URL took the message: it reached this URL
        // all the same, or this URL is not tried again.
        let late = |attempt: &Attempt| {
            watch.left(
                1 << target,
                match attempt {
                    Attempt::Success => Left::Delivered,
                    _ => Left::Abandoned,
                },
            )
        };
        let Some(t) = self.tracks.get_mut(&seq) else {
            return late(&attempt);
        };
        if t.finished {
            return late(&attempt);
        }
        // The fields themselves, not `round_mut`: `t.id` is read while the round is held.
        let Some(round) = t.extras.as_mut().and_then(|m| m.hook.as_mut()) else {
            // Already delivered through another URL.
            return late(&attempt);
        };
        if let Attempt::Permanent { detail, .. } = &attempt {
            let label = self.lanes.label(1 + target as usize);
            let kind = format!("webhooks[{target}]:permanent");
            self.logger.log_every(Level::Warn, &kind, || {
                format!("{label}: permanent failure: {detail}")
            });
        }
        // A replayed dead letter: its record is the dead letter, not a spooled message.
        let replay = match self.replays.is_empty() {
            true => None,
            false => self.replays.get(&seq).copied(),
        };
        if let (true, Some(record), false) = (
            self.rules.dead_letters,
            record,
            matches!(attempt, Attempt::Success),
        ) {
            if round.wants(target) {
                round.note(record);
            }
        }
        let before = round.live_mask();
        let (was_retrying, wanted) = (round.retrying(), round.wants(target));
        let permanent = matches!(attempt, Attempt::Permanent { .. });
        let settled = round.record(target, attempt, now, &self.rules.policy);
        let over = matches!(settled, Settled::Delivered | Settled::Failed(..));
        watch.unwait(match over {
            true => before,
            false => before & !round.live_mask(),
        });
        // Each URL's accounting: who took it, who refused it, who is left retrying it.
        let me = 1u8 << target;
        if wanted && permanent {
            watch.left(me, Left::Failed);
        }
        match &settled {
            Settled::Delivered => {
                watch.left(me, Left::Delivered);
                // Those waiting for their next round give up; those still out answer late.
                watch.left(round.next_round(), Left::Abandoned);
            }
            // Every request answered: those still on the list kept failing it to the end.
            Settled::Failed(..) => watch.left(round.live_mask(), Left::Failed),
            _ => {}
        }
        let retrying = if over { 0 } else { round.retrying() };
        watch.retrying(retrying & !was_retrying, was_retrying & !retrying);
        // The webhook part failed for good: the message is a dead letter, sent before any op
        // that drops its body or its record (a Redis store holds those back until the letter
        // is written); a replay delivered leaves them.
        let dead = match (&settled, &self.spool) {
            (Settled::Failed(reason, detail), Some(tx)) if self.rules.dead_letters => {
                Some(DeadOp::Put(Box::new(DeadRecord {
                    tenant: tx.tenant,
                    id: t.id.to_arc(),
                    failed_ms: crate::durable::dead::unix_ms(SystemTime::now()),
                    reason: reason_code(reason),
                    detail: format!("webhooks: {detail}"),
                    rounds: round.attempts,
                    first_ms: round.first.map(wall_ms),
                    attempts: attempts_json(&round.last_attempts()),
                    body: round.body.clone(),
                    job: replay,
                })))
            }
            (Settled::Delivered, Some(tx)) => replay.map(|job| DeadOp::Delivered {
                tenant: tx.tenant,
                id: t.id.to_arc(),
                job: Some(job),
            }),
            _ => None,
        };
        if let (Some(op), Some(tx)) = (dead, &self.spool) {
            tx.send_dead(op);
        }
        if let (Some(tx), None) = (&self.spool, replay) {
            let id = &t.id.to_arc();
            if over && t.remaining > 1 {
                // Webhooks done, ingestion not yet: the body leaves the spool.
                tx.send(Op::HookMask {
                    tenant: tx.tenant,
                    id: id.clone(),
                    mask: 0,
                });
            } else if !over && round.live_mask() != before {
                // A URL refused for good: a resumed round skips it.
                tx.send(Op::HookMask {
                    tenant: tx.tenant,
                    id: id.clone(),
                    mask: round.live_mask(),
                });
            }
            if matches!(settled, Settled::Retry(_)) && round.attempts == 1 {
                let at_ms = wall_ms(round.first.unwrap_or(now));
                tx.send(Op::FirstAttempt {
                    tenant: tx.tenant,
                    id: id.clone(),
                    at_ms,
                });
            }
        }
        match settled {
            Settled::Pending => {}
            Settled::Retry(at) => self.timers.set(at, Due::HookRound(seq)),
            Settled::Delivered => {
                t.end_round();
                self.dest_done(seq, None);
            }
            Settled::Failed(reason, detail) => {
                t.end_round();
                let detail = format!("webhooks: {detail}");
                if reason == Reason::Expired {
                    (self.logger).log_every(Level::Warn, "webhooks:expired", || detail.clone());
                }
                self.dest_done(seq, Some((reason, detail)));
            }
        }
    }
}
