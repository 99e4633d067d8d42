//! A lane's worker threads: started when a request waits and every thread is busy, let go when idle,
//! joined at close; each sends one request at a time and reports it.

use super::*;

impl Lane {
    /// Hands a request from [`take`](Self::take) to a worker, starting one when every thread
    /// of the lane is busy.
    pub(crate) fn start(&mut self, job: Job, now: Instant) -> Result<(), std::io::Error> {
        if self.busy >= self.threads {
            self.spawn()?;
        }
        if let Health::Down { opens, .. } = self.health {
            self.health = Health::Probing { opens };
        }
        self.busy += 1;
        *self.out.entry(now).or_default() += 1;
        self.peak = self.peak.max(self.busy);
        // The lane holds a receiver, so the channel is open.
        let _ = self.jobs.send((now, job));
        Ok(())
    }

    fn spawn(&mut self) -> Result<(), std::io::Error> {
        let (delivery, jobs, reports, index) = (
            self.delivery.clone(),
            self.jobs_rx.clone(),
            self.reports.clone(),
            self.index,
        );
        let handle = std::thread::Builder::new()
            .name(format!("outbound-lane-{index}"))
            .spawn(move || work(index, &delivery, &jobs, &reports))?;
        self.handles.push(handle);
        self.threads += 1;
        Ok(())
    }

    /// Called periodically: lets threads that were not needed since the last call go.
    pub(crate) fn trim(&mut self) {
        let want = self.peak.max(self.busy).max(self.min_threads);
        while self.threads > want {
            let _ = self.jobs.send((Instant::now(), Job::Exit));
            self.threads -= 1;
        }
        self.peak = self.busy;
        self.join_finished();
    }

    /// Joins the threads that have exited, so none outlives the client unseen.
    fn join_finished(&mut self) {
        let (done, live): (Vec<_>, Vec<_>) = std::mem::take(&mut self.handles)
            .into_iter()
            .partition(|h| h.is_finished());
        for h in done {
            let _ = h.join();
        }
        self.handles = live;
    }

    /// Stops every thread of the lane (each after its current request) and returns what was
    /// still waiting.
    pub(crate) fn stop(&mut self) -> Vec<Job> {
        for _ in 0..self.threads {
            let _ = self.jobs.send((Instant::now(), Job::Exit));
        }
        self.threads = 0;
        self.ready.drain(..).collect()
    }

    /// After [`stop`](Self::stop): waits until the threads that were idle have exited and
    /// joins them (at most until `deadline`); a thread still on a request (a hung receiver)
    /// is left to finish it on its own, so close stays bounded. Joined, a thread's stack and
    /// thread-locals are freed before the client is gone.
    pub(crate) fn join_idle(&mut self, deadline: Instant) {
        let idle = self.handles.len().saturating_sub(self.busy);
        loop {
            let finished = self.handles.iter().filter(|h| h.is_finished()).count();
            if finished >= idle || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.join_finished();
        // The rest are detached.
        self.handles.clear();
    }
}

/// A worker: sends requests of one lane until told to exit or the scheduler is gone.
fn work(
    lane: usize,
    delivery: &Delivery,
    jobs: &Receiver<(Instant, Job)>,
    reports: &Sender<Report>,
) {
    while let Ok((started, job)) = jobs.recv() {
        let attempt = match &job {
            Job::Exit => return,
            Job::Batch(batch) => {
                let Some(endpoint) = delivery.ingestion.as_ref() else {
                    return;
                };
                let body = endpoint.body(batch.msgs.iter().map(|(_, m)| m));
                let attempt = delivery
                    .transport
                    .post(endpoint.url(), endpoint.headers(), &body);
                delivery.logger.log(Level::Debug, || {
                    format!("ingestion: batch of {}: {attempt:?}", batch.msgs.len())
                });
                attempt
            }
            Job::Hook { id, body, .. } => {
                let target = lane - 1;
                let hooks = &delivery.hooks;
                let attempt = match hooks.headers(target, id.as_str(), body) {
                    Ok(headers) => delivery
                        .transport
                        .post_hook(hooks.url(target), &headers, body),
                    Err(why) => Attempt::Permanent {
                        reason: Reason::Other,
                        detail: why.into(),
                    },
                };
                delivery.logger.log(Level::Debug, || {
                    format!("{}: {attempt:?}", delivery.hooks.label(target))
                });
                attempt
            }
        };
        let report = Report {
            lane,
            job,
            attempt,
            started,
        };
        if reports.send(report).is_err() {
            return;
        }
    }
}
