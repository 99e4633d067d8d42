//! A lane's requests on the I/O engine: each is a task that sends one batch, or signs and
//! sends one webhook message, classifies the answer and reports back; while out it holds a
//! place in the engine's budget of requests in flight (a lane's first is never refused, the
//! rest within the lane's fair share), and the lane holds a seat among the lanes with
//! requests out.

use super::*;
use crate::http::frames::Frames;

impl Lane {
    /// Takes a place in the budget for a request from [`take`](Self::take)
    /// ([`start`](Self::start) hands it on); false when the budget has none for this lane
    /// now: the request should wait, and the lane's own answers give it another chance.
    pub(crate) fn make_room(&mut self) -> bool {
        if self.ticket.is_none() {
            self.ticket = self.budget.acquire(self.busy);
        }
        self.ticket.is_some()
    }

    /// Sends a request from [`take`](Self::take), given a place by
    /// [`make_room`](Self::make_room).
    pub(crate) fn start(&mut self, job: Job, now: Instant) {
        debug_assert!(self.ticket.is_some(), "start without make_room");
        if let Health::Down { opens, .. } = self.health {
            self.health = Health::Probing { opens };
        }
        self.busy += 1;
        *self.out.entry(now).or_default() += 1;
        if self.seat.is_none() {
            self.seat = Some(self.budget.seat());
        }
        let ticket = self.ticket.take();
        let (delivery, reports, lane, tenant) = (
            self.delivery.clone(),
            self.reports.clone(),
            self.index,
            self.tenant,
        );
        let Some(io) = self.delivery.io() else {
            return;
        };
        io.spawn(async move {
            let _ticket = ticket;
            // How long the I/O engine took to give it a turn.
            let lag = now.elapsed();
            let (attempt, seen) = post(&delivery, lane, &job).await;
            // The scheduler gone (closed), nobody waits for it.
            let _ = reports.send(Report {
                tenant,
                lane,
                job,
                attempt,
                seen,
                started: now,
                lag,
                sent: Instant::now(),
            });
        });
    }

    /// A request of this lane waited `lag` for the process: the budget of requests follows
    /// such delays ([`Budget::answered`]).
    pub(crate) fn answered(&self, lag: Duration, now: Instant) {
        self.budget.answered(lag, now);
    }

    /// A request of this lane came back: a lane with none out gives up its seat.
    pub(super) fn request_ended(&mut self) {
        if self.busy == 0 {
            self.seat = None;
        }
    }
}

/// Sends `job` from lane `lane`: a batch to ingestion, or a message signed for webhook
/// `lane - 1`; with what was seen of the exchange (for the URL's attempts and health).
async fn post(delivery: &Delivery, lane: usize, job: &Job) -> (Attempt, Seen) {
    match job {
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
            let headers = match delivery.hooks.headers(target, id.as_str(), body) {
                Ok(h) => h,
                Err(why) => return not_sent(why),
            };
            let bytes = bytes::Bytes::from_owner(body.clone());
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
