//! A webhook lane's requests on the I/O engine: each is a task that signs and sends one
//! message, classifies the answer and reports back; while out it holds a place in the
//! engine's budget of requests in flight (a lane's first is never refused, the rest within
//! the lane's fair share), and the lane holds a seat among the lanes with requests out.

use super::*;
use budget::Ticket;

impl Lane {
    /// A place in the budget for the next request ([`start`](Self::start) hands it on);
    /// false when the budget has none for this lane now.
    pub(super) fn take_ticket(&mut self) -> bool {
        if self.ticket.is_none() {
            self.ticket = self.budget.acquire(self.busy);
        }
        self.ticket.is_some()
    }

    /// Spawns the request on the I/O engine.
    pub(super) fn send_on_io(&mut self, job: Job, started: Instant) {
        if self.seat.is_none() {
            self.seat = Some(self.budget.seat());
        }
        let ticket: Option<Ticket> = self.ticket.take();
        let (delivery, reports, lane, tenant) = (
            self.delivery.clone(),
            self.reports.clone(),
            self.index,
            self.tenant,
        );
        let Some(out) = &self.delivery.hooks_out else {
            return;
        };
        out.io.spawn(async move {
            let _ticket = ticket;
            let (attempt, seen) = post(&delivery, lane - 1, &job).await;
            delivery.logger.log(Level::Debug, || {
                format!("{}: {attempt:?}", delivery.hooks.label(lane - 1))
            });
            // The scheduler gone (closed), nobody waits for it.
            let _ = reports.send(Report {
                tenant,
                lane,
                job,
                attempt,
                seen,
                started,
            });
        });
    }

    /// A request of this lane came back: a lane with none out gives up its seat.
    pub(super) fn request_ended(&mut self) {
        if self.on_io && self.busy == 0 {
            self.seat = None;
        }
    }
}

/// Signs and sends `job` to webhook `target`.
async fn post(delivery: &Delivery, target: usize, job: &Job) -> (Attempt, Seen) {
    let refused = |detail: String| {
        let attempt = Attempt::Permanent {
            reason: Reason::Other,
            detail,
        };
        let seen = Seen::of(&attempt, Duration::ZERO);
        (attempt, seen)
    };
    let (Job::Hook { id, body, .. }, Some(out)) = (job, &delivery.hooks_out) else {
        return refused("not a webhook request".into());
    };
    let headers = match delivery.hooks.headers(target, id.as_str(), body) {
        Ok(h) => h,
        Err(why) => return refused(why.into()),
    };
    let bytes = bytes::Bytes::from_owner(body.clone());
    out.exchange
        .post(&out.targets[target], &headers, bytes)
        .await
}
