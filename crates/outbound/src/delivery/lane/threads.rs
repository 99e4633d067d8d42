//! A lane's worker threads: started when a request waits and every thread is busy, let go when idle,
//! joined at close; each sends one request at a time and reports it.

use super::*;

impl Lane {
    /// Makes sure a worker is free for a request from [`take`](Self::take), starting one
    /// when every thread of the lane is busy; false when none could be had (the process's
    /// [`Budget`] is spent, or the system refused one): the request should wait, and the
    /// lane's own answers, or the next housekeeping, give it another chance.
    pub(crate) fn make_room(&mut self) -> bool {
        if self.on_io {
            return self.take_ticket();
        }
        if self.busy < self.threads {
            return true;
        }
        let Some(ticket) = self.budget.acquire(self.threads) else {
            return false;
        };
        let jobs = self
            .jobs
            .get_or_insert_with(|| Box::new(crossbeam_channel::unbounded()))
            .1
            .clone();
        let (delivery, reports, index, tenant) = (
            self.delivery.clone(),
            self.reports.clone(),
            self.index,
            self.tenant,
        );
        let spawned = std::thread::Builder::new()
            .name(format!("outbound-lane-{index}"))
            .spawn(move || {
                // Its place in the budget ends with the thread, however it ends.
                let _ticket = ticket;
                work(tenant, index, &delivery, &jobs, &reports)
            });
        match spawned {
            Ok(handle) => {
                self.handles.push(handle);
                self.threads += 1;
                if self.seat.is_none() {
                    self.seat = Some(self.budget.seat());
                }
                if std::mem::take(&mut self.refused) {
                    self.delivery.logger.log(Level::Warn, || {
                        format!("{}: threads start again", self.label)
                    });
                }
                true
            }
            Err(e) => {
                if !std::mem::replace(&mut self.refused, true) {
                    self.delivery.logger.log(Level::Warn, || {
                        format!(
                            "{}: cannot start a thread ({e}); requests wait for one",
                            self.label
                        )
                    });
                }
                false
            }
        }
    }

    /// Hands a request from [`take`](Self::take) to a worker made ready by
    /// [`make_room`](Self::make_room).
    pub(crate) fn start(&mut self, job: Job, now: Instant) {
        debug_assert!(
            self.on_io || self.busy < self.threads,
            "start without make_room"
        );
        if let Health::Down { opens, .. } = self.health {
            self.health = Health::Probing { opens };
        }
        self.busy += 1;
        *self.out.entry(now).or_default() += 1;
        self.peak = self.peak.max(self.busy);
        if self.on_io {
            return self.send_on_io(job, now);
        }
        // The lane holds a receiver, so the channel is open.
        if let Some(jobs) = self.jobs.as_ref().map(|j| &j.0) {
            let _ = jobs.send((now, job));
        }
    }

    /// The lane's thread count changed to `threads`: a lane without threads gives up its seat.
    fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
        if threads == 0 && !self.on_io {
            self.seat = None;
        }
    }

    /// Called periodically: lets threads that were not needed since the last call go.
    /// A lane above its fair share of the process's budget comes back down to it (after
    /// the requests its threads are on).
    pub(crate) fn trim(&mut self) {
        let want = self
            .peak
            .max(self.busy)
            .max(self.min_threads)
            .min(self.budget.fair_share());
        let mut threads = self.threads;
        while threads > want {
            if let Some(jobs) = self.jobs.as_ref().map(|j| &j.0) {
                let _ = jobs.send((Instant::now(), Job::Exit));
            }
            threads -= 1;
        }
        self.set_threads(threads);
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
        if let Some(jobs) = self.jobs.as_ref().map(|j| &j.0) {
            for _ in 0..self.threads {
                let _ = jobs.send((Instant::now(), Job::Exit));
            }
        }
        self.set_threads(0);
        self.ready.drain(..).collect()
    }

    /// After [`stop`](Self::stop): the lane's threads, for [`join_idle`] on a thread that
    /// may wait (the scheduler serves other tenants).
    pub(crate) fn take_threads(&mut self) -> LaneThreads {
        LaneThreads {
            handles: std::mem::take(&mut self.handles),
            busy: self.busy,
        }
    }
}

/// A stopped lane's threads: `busy` of them may still be on a request.
pub(crate) struct LaneThreads {
    handles: Vec<std::thread::JoinHandle<()>>,
    busy: usize,
}

impl LaneThreads {
    /// Waits until the threads that were idle have exited and joins them (at most until
    /// `deadline`); a thread still on a request (a hung receiver) is left to finish it on
    /// its own, so close stays bounded. Joined, a thread's stack and thread-locals are
    /// freed before the client is gone.
    pub(crate) fn join_idle(self, deadline: Instant) {
        let idle = self.handles.len().saturating_sub(self.busy);
        loop {
            let finished = self.handles.iter().filter(|h| h.is_finished()).count();
            if finished >= idle || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        for h in self.handles {
            if h.is_finished() {
                let _ = h.join();
            }
        }
        // The rest are detached.
    }
}

/// The largest request body buffer a worker keeps between requests.
const KEEP_BODY: usize = 64 * 1024;

/// A worker: sends requests of one lane until told to exit or the scheduler is gone.
fn work(
    tenant: u32,
    lane: usize,
    delivery: &Delivery,
    jobs: &Receiver<(Instant, Job)>,
    reports: &Sender<Report>,
) {
    // A gzip batch's request body is written here (the others are read from the chunks as
    // they are sent), kept between requests when small (the default 20 messages are a few
    // KiB): no allocation, and no fresh memory to fault in.
    let mut batch_body = Vec::new();
    while let Ok((started, job)) = jobs.recv() {
        let sent = Instant::now();
        let attempt = match &job {
            Job::Exit => return,
            Job::Batch(batch) => {
                let (Some(endpoint), Some(transport)) =
                    (delivery.ingestion.as_ref(), delivery.transport.as_ref())
                else {
                    return;
                };
                let msgs = batch.msgs.iter().map(|(_, m)| m);
                let (url, headers) = (endpoint.url(), endpoint.headers());
                let attempt = if let Some(mut body) = endpoint.reader(msgs.clone()) {
                    let len = body.len();
                    transport.post_read(url, headers, len, &mut body)
                } else {
                    endpoint.body(&mut batch_body, msgs);
                    let attempt = transport.post(url, headers, &batch_body);
                    if batch_body.capacity() > KEEP_BODY {
                        batch_body = Vec::new(); // a rare large batch: not held while idle
                    }
                    attempt
                };
                delivery.logger.log(Level::Debug, || {
                    format!("ingestion: batch of {}: {attempt:?}", batch.msgs.len())
                });
                attempt
            }
            Job::Hook { id, body, .. } => {
                let target = lane - 1;
                let hooks = &delivery.hooks;
                let attempt = match (
                    hooks.headers(target, id.as_str(), body),
                    &delivery.transport,
                ) {
                    (Ok(headers), Some(transport)) => {
                        transport.post_hook(hooks.url(target), &headers, body)
                    }
                    (Err(why), _) => Attempt::Permanent {
                        reason: Reason::Other,
                        detail: why.into(),
                    },
                    // Webhook lanes run threads only for a recording client, which has one.
                    (Ok(_), None) => Attempt::Permanent {
                        reason: Reason::Other,
                        detail: "no transport".into(),
                    },
                };
                delivery.logger.log(Level::Debug, || {
                    format!("{}: {attempt:?}", delivery.hooks.label(target))
                });
                attempt
            }
        };
        let seen = Seen::of(&attempt, sent.elapsed());
        let report = Report {
            tenant,
            lane,
            job,
            attempt,
            seen,
            started,
            lag: Duration::ZERO,
            sent: Instant::now(),
        };
        if reports.send(report).is_err() {
            return;
        }
    }
}
