//! A lane's requests out on the I/O engine: how many and since when (the brisk share, slow
//! requests, the in-flight cap), their places in the process's budget of requests (a lane's
//! first is never refused, the rest within the lane's fair share) and the lane's membership among
//! the lanes with requests out; and the task that sends one batch, or signs and sends one
//! webhook message, classifies the answer and reports back.

use super::budget::{Budget, ShareMember, Ticket};
use super::{Delivery, Report, SILENT, SLOW_AFTER};
use crate::delivery::job::Job;
use crate::http::attempt::{Attempt, Seen};
use crate::http::frames::Frames;
use crate::log::Level;
use crate::model::outcome::Reason;
use crate::model::retry::after;
use crossbeam_channel::Sender;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A lane's requests out.
pub(super) struct Requests {
    pub(super) busy: usize,
    /// When each request out was started (a count per instant).
    pub(super) out: BTreeMap<Instant, u32>,
    /// The process's budget of requests, shared with every client (`budget.rs`).
    pub(super) budget: &'static Budget,
    /// Counts the lane among those with requests out, while it has any.
    member: Option<ShareMember>,
    /// A place in the budget for the next request (taken by `reserve`, kept by the request
    /// while it is out).
    ticket: Option<Ticket>,
    /// The lane's part of `BRISK` (`share_brisk`).
    pub(super) share: usize,
    /// Requests out at once the lane always allows (`workers`), within `cap`.
    floor: usize,
    /// The most out at once (`max_in_flight`).
    cap: usize,
}

impl Requests {
    pub(super) fn new(budget: &'static Budget, floor: usize, cap: usize) -> Requests {
        Requests {
            busy: 0,
            out: BTreeMap::new(),
            budget,
            member: None,
            ticket: None,
            share: super::BRISK,
            floor: floor.min(cap),
            cap,
        }
    }

    pub(super) fn at_cap(&self) -> bool {
        self.busy >= self.cap
    }

    /// When the youngest request out was started.
    pub(super) fn newest(&self) -> Option<Instant> {
        self.out.last_key_value().map(|(t, _)| *t)
    }

    /// Takes a place in the budget for the next request, unless one is taken already.
    pub(super) fn reserve(&mut self) -> bool {
        if self.ticket.is_none() {
            self.ticket = self.budget.acquire(self.busy);
        }
        self.ticket.is_some()
    }

    /// A request goes out at `now` on the place [`reserve`](Self::reserve) took, which it
    /// holds until it comes back.
    pub(super) fn started(&mut self, now: Instant) -> Option<Ticket> {
        debug_assert!(self.ticket.is_some(), "started without a place");
        self.busy += 1;
        *self.out.entry(now).or_default() += 1;
        if self.member.is_none() {
            self.member = Some(self.budget.member());
        }
        self.ticket.take()
    }

    /// The request started at `started` came back: a lane with none out leaves the lanes the budget is shared among.
    pub(super) fn ended(&mut self, started: Instant) {
        self.busy -= 1;
        if let Some(n) = self.out.get_mut(&started) {
            *n -= 1;
            if *n == 0 {
                self.out.remove(&started);
            }
        }
        if self.busy == 0 {
            self.member = None;
        }
    }

    /// Whether the next request waits: [`brisk`](Self::brisk) requests out are moving (not
    /// known to be slow; `answered`: when the destination last answered), or the process's
    /// budget has no place for it. The moving ones are counted only when it matters (fewer
    /// out than the brisk share cannot be too many moving): the count walks the requests
    /// out, and this runs at every turn of the scheduler.
    pub(super) fn held_back(&self, now: Instant, answered: Option<Instant>) -> bool {
        let brisk = self.brisk(answered);
        let moving = match self.busy < brisk {
            true => self.busy,
            false => self.moving(now, answered),
        };
        moving >= brisk || !self.budget.may_grow(self.busy)
    }

    /// Requests out that are not slow beyond which the lane starts no more: its share of
    /// `BRISK`, or [`SILENT`] while the destination has answered nothing.
    fn brisk(&self, answered: Option<Instant>) -> usize {
        let n = match answered {
            Some(_) => self.share,
            None => SILENT,
        };
        n.max(self.floor)
    }

    /// Before this instant, a request out is slow: out for [`SLOW_AFTER`], and answered
    /// around (the destination answered since it left). `None`: none is.
    fn slow_before(now: Instant, answered: Option<Instant>) -> Option<Instant> {
        Some(now.checked_sub(SLOW_AFTER)?.min(answered?))
    }

    /// Requests out that are not slow (see [`slow_before`](Self::slow_before)).
    fn moving(&self, now: Instant, answered: Option<Instant>) -> usize {
        match Requests::slow_before(now, answered) {
            Some(cutoff) => self
                .out
                .range((Excluded(cutoff), Unbounded))
                .map(|(_, n)| *n as usize)
                .sum(),
            None => self.busy,
        }
    }

    /// When the next request out that the destination answered around turns slow (making
    /// room for another), if one will.
    pub(super) fn turns_slow(&self, now: Instant, answered: Option<Instant>) -> Option<Instant> {
        let cutoff = now.checked_sub(SLOW_AFTER).unwrap_or(now);
        let answered = answered?;
        self.out
            .range((Excluded(cutoff), Unbounded))
            .next()
            .filter(|(t, _)| **t <= answered)
            .map(|(t, _)| after(*t, SLOW_AFTER))
    }
}

/// Spawns `job` of lane `(tenant, lane)` on the I/O engine, holding `ticket` while it is
/// out; its [`Report`] goes to `reports`.
pub(super) fn send(
    delivery: Arc<Delivery>,
    reports: Sender<Report>,
    (tenant, lane): (u32, usize),
    job: Job,
    started: Instant,
    ticket: Option<Ticket>,
) {
    let Some(io) = delivery.io().cloned() else {
        return;
    };
    io.spawn(async move {
        let _ticket = ticket;
        // How long the I/O engine took to give it a turn.
        let lag = started.elapsed();
        let (attempt, seen) = post(&delivery, lane, &job).await;
        // The scheduler gone (closed), nobody waits for it.
        let _ = reports.send(Report {
            tenant,
            lane,
            job,
            attempt,
            seen,
            started,
            lag,
            sent: Instant::now(),
        });
    });
}

/// Sends `job` from lane `lane`: a batch to ingestion, or a message signed for webhook
/// `lane - 1`; with what was seen of the exchange (for the URL's attempts and health).
async fn post(delivery: &Delivery, lane: usize, job: &Job) -> (Attempt, Seen) {
    match job {
        Job::Batch(batch) if delivery.hooks.batched() => {
            // A subscription's batch: to its one endpoint, as its single requests go.
            let Some(out) = &delivery.hooks_out else {
                return not_sent("no webhooks");
            };
            let events = batch.msgs.iter().map(|(_, m)| m.bytes());
            let (headers, bytes) = match delivery.hooks.batch_request(events) {
                Ok(request) => request,
                Err(why) => return not_sent(why),
            };
            let (attempt, seen) = out.exchange.post(0, &headers, Frames::one(bytes)).await;
            delivery.logger.log(Level::Debug, || {
                format!(
                    "{}: batch of {}: {attempt:?}",
                    delivery.hooks.label(0),
                    batch.msgs.len()
                )
            });
            (attempt, seen)
        }
        Job::Batch(batch) => {
            let (Some(endpoint), Some(out)) = (&delivery.ingestion, &delivery.batches_out) else {
                return not_sent("no ingestion endpoint");
            };
            let body = endpoint.frames(batch.msgs.iter().map(|(_, m)| m));
            let (attempt, seen) = out.exchange.post(0, endpoint.headers(), body).await;
            delivery.logger.log(Level::Debug, || {
                format!("ingestion: batch of {}: {attempt:?}", batch.msgs.len())
            });
            (attempt, seen)
        }
        Job::Hook { id, body, .. } => {
            let Some(out) = &delivery.hooks_out else {
                return not_sent("no webhooks");
            };
            let target = lane - 1;
            let (headers, bytes) = match delivery.hooks.request(target, id.as_str(), body) {
                Ok(request) => request,
                Err(why) => return not_sent(why),
            };
            let (attempt, seen) = out
                .exchange
                .post(target, &headers, Frames::one(bytes))
                .await;
            delivery.logger.log(Level::Debug, || {
                format!("{}: {attempt:?}", delivery.hooks.label(target))
            });
            (attempt, seen)
        }
    }
}

fn not_sent(why: impl Into<String>) -> (Attempt, Seen) {
    let attempt = Attempt::Permanent {
        reason: Reason::Other,
        detail: why.into(),
    };
    let seen = Seen::of(&attempt, Duration::ZERO);
    (attempt, seen)
}
