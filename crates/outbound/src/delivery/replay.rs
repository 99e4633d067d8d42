//! The spool writer's dead letters (`durable/dead.rs`): the clients' requests, answered on
//! its thread between commits (a list, a dead letter, a deletion, a replay, a replay's
//! progress), and the replays handed to delivery a few at a time.
//!
//! A replay marks its dead letters in the store (one statement), then they go to the
//! tenant's scheduler as resumed messages (same id, the webhook body as it was sent, a fresh
//! retry window; signed when sent, so with the current secret), at most [`REPLAY_WINDOW`]
//! of a tenant out at once and never past its `max_queue_size`: a replay of 100,000 costs
//! the window's memory. Their outcomes come back as dead-letter ops (`Delivered`, or a `Put`
//! that rewrites the dead letter), which free their place and count in their replay's
//! progress.

use crate::delivery::command::{Answer, Ask, Command, Request, Resumed};
use crate::delivery::inbox::Inbox;
use crate::delivery::shared::Shared;
use crate::durable::dead::{unix_ms, DeadLetters, DeadOp};
use crate::durable::{Store, TenantNo};
use crate::error::Error;
use crate::model::dead_letter::ReplayProgress;
use foldhash::HashMap;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::*;
use std::time::SystemTime;

/// Replayed dead letters of one tenant out in delivery at once.
pub(crate) const REPLAY_WINDOW: u64 = 1024;
/// Replays whose progress is kept (the newest).
const JOBS_KEPT: usize = 256;

/// What a replay needs of a tenant (as the spool writer knows it).
pub(crate) struct Tenant<'a> {
    pub shared: &'a Shared,
    /// Its part of the scheduler.
    pub scheduler: &'a Inbox,
    /// Its `max_queue_size`.
    pub capacity: u64,
    /// Its webhooks.
    pub hook_mask: u8,
}

/// What is handed out of one tenant's marked dead letters.
#[derive(Default)]
struct Feed {
    /// The last mark handed out.
    after: Option<i64>,
    /// There may be more to hand out.
    due: bool,
    /// Handed out, outcome not back yet.
    out: u64,
    /// It passed rows another store replays (on Redis): they come back as ours once that
    /// store's beat expires, so it looks again at each adoption pass.
    others: bool,
}

/// One replay: its marks are `(after, upto]`.
struct Job {
    tenant: TenantNo,
    /// Its tenant's name: a client that replaces it (new settings) still finds the job, a
    /// client of another name does not.
    name: Box<str>,
    after: i64,
    upto: i64,
    progress: ReplayProgress,
}

#[derive(Default)]
pub(crate) struct Replays {
    feeds: HashMap<TenantNo, Feed>,
    /// The tenants whose feed may be due (each due one is here; some here may not be, or
    /// be here twice): what [`Replays::feed`] looks at, not every tenant's feed at each turn
    /// of the spool writer (100,000 tenants made each turn a pass over 100,000 feeds).
    due: Vec<TenantNo>,
    jobs: VecDeque<Job>,
}

/// A new replay's id: drawn from the OS, so one tenant cannot guess another's (0 is the id
/// of a replay with nothing to do). 53 bits: a JSON number every reader (a browser's
/// JavaScript too) holds exactly.
fn job_id() -> u64 {
    loop {
        let id = uuid::Uuid::new_v4().as_u64_pair().0 >> 11;
        if id != 0 {
            return id;
        }
    }
}

fn no_dead_letters() -> Error {
    Error::config(
        "dead_letters",
        "this client keeps no dead letters (dead_letters is off, or its spool keeps none)",
    )
}

impl Replays {
    /// Answers `req` from `store`; `keeps`: whether its tenant keeps dead letters; `name`:
    /// the name its records are kept under.
    pub(crate) fn answer(&mut self, store: &mut dyn Store, keeps: bool, name: &str, req: Request) {
        let answer = self.answer_one(store, keeps, name, req.tenant, req.ask);
        let _ = req.reply.send(answer);
    }

    fn answer_one(
        &mut self,
        store: &mut dyn Store,
        keeps: bool,
        name: &str,
        no: TenantNo,
        ask: Ask,
    ) -> Result<Answer, Error> {
        let dead = match store.dead_letters() {
            Some(d) if keeps => d,
            _ => return Err(no_dead_letters()),
        };
        Ok(match ask {
            Ask::List(q) => Answer::Page(dead.list(no, &q)?),
            Ask::Get(id) => Answer::Letter(dead.get(no, &id)?.map(Box::new)),
            Ask::Delete(id) => Answer::Deleted(dead.delete(no, &id)?),
            Ask::Stats => Answer::Stats(dead.stats(no)?),
            // The writer answers it itself (`spooler.rs`): it knows the tenants' names.
            Ask::Counts(_) => Answer::Counts(Vec::new()),
            Ask::Progress(id) => Answer::Replay(self.progress(name, id)),
            Ask::Replay(pick, mask) => {
                let marked = dead.mark_replay(no, &pick, mask)?;
                if marked.count == 0 {
                    return Ok(Answer::Replay(None));
                }
                let progress = ReplayProgress {
                    id: job_id(),
                    total: marked.count,
                    sent: 0,
                    delivered: 0,
                    failed: 0,
                    skipped: 0,
                    started: SystemTime::now(),
                };
                self.jobs.push_back(Job {
                    tenant: no,
                    name: name.into(),
                    after: marked.after,
                    upto: marked.upto,
                    progress,
                });
                if self.jobs.len() > JOBS_KEPT {
                    self.jobs.pop_front();
                }
                self.feeds.entry(no).or_default().due = true;
                self.due.push(no);
                Answer::Replay(Some(progress))
            }
        })
    }

    /// Replay `id` of the tenant named `name`: another tenant's is not found.
    fn progress(&self, name: &str, id: u64) -> Option<ReplayProgress> {
        self.jobs
            .iter()
            .find(|j| j.progress.id == id && &*j.name == name)
            .map(|j| j.progress)
    }

    fn job(&mut self, id: u64) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| j.progress.id == id)
    }

    /// A dead-letter op on its way to the store: a replay's outcome frees its place and
    /// counts in its progress.
    pub(crate) fn noted(&mut self, no: TenantNo, op: &DeadOp) {
        let (job, delivered) = match op {
            DeadOp::Put(r) => match r.job {
                Some(job) => (job, false),
                None => return,
            },
            DeadOp::Delivered { job, .. } => (job.unwrap_or(0), true),
        };
        if let Some(feed) = self.feeds.get_mut(&no) {
            feed.out = feed.out.saturating_sub(1);
            feed.due = true;
            self.due.push(no);
        }
        if let Some(j) = self.job(job) {
            match delivered {
                true => j.progress.delivered += 1,
                false => j.progress.failed += 1,
            }
        }
    }

    /// Tenant `no` keeps dead letters: what a process before left marked is replayed.
    pub(crate) fn start(&mut self, no: TenantNo) {
        self.feeds.insert(
            no,
            Feed {
                due: true,
                ..Feed::default()
            },
        );
        self.due.push(no);
    }

    /// Tenant `no` is gone: its replays out stay marked, for the next tenant of its name.
    pub(crate) fn forget(&mut self, no: TenantNo) {
        self.feeds.remove(&no);
    }

    /// After an adoption pass: every tenant looks again when it took over files (they may
    /// have brought marked rows), else those that passed another store's replays (taken
    /// over by time, not by file). Looking costs a query per tenant: 10,000 idle tenants
    /// looking at every pass kept the spool's thread busy.
    pub(crate) fn look_again(&mut self, files: bool) {
        for (no, feed) in self.feeds.iter_mut() {
            if files || feed.others {
                feed.due = true;
                self.due.push(*no);
            }
        }
    }

    /// Hands out what each tenant has room for; `tenant` finds a tenant that is not
    /// closing.
    pub(crate) fn feed<'a>(
        &mut self,
        store: &mut dyn Store,
        tenant: impl Fn(TenantNo) -> Option<Tenant<'a>>,
    ) -> Result<(), Error> {
        if self.due.is_empty() {
            return Ok(());
        }
        let Some(dead) = store.dead_letters() else {
            return Ok(());
        };
        let mut due = std::mem::take(&mut self.due);
        due.sort_unstable();
        due.dedup();
        let mut result = Ok(());
        for no in due {
            if result.is_ok() {
                result = self.feed_one(dead, no, &tenant);
            }
            // Still due (no room yet, more rows, or not reached after an error): looked at
            // again next time.
            if self.feeds.get(&no).is_some_and(|f| f.due) {
                self.due.push(no);
            }
        }
        result
    }

    /// Tenant `no`'s part of [`Replays::feed`], when its feed is due.
    fn feed_one<'a>(
        &mut self,
        dead: &mut dyn DeadLetters,
        no: TenantNo,
        tenant: &impl Fn(TenantNo) -> Option<Tenant<'a>>,
    ) -> Result<(), Error> {
        if !self.feeds.get(&no).is_some_and(|f| f.due) {
            return Ok(());
        }
        let Some(t) = tenant(no) else {
            return Ok(());
        };
        let feed = self.feeds.get_mut(&no).expect("looked up above");
        if t.hook_mask == 0 {
            // No webhook to replay to (a forwarding source): nothing to look for.
            feed.due = false;
            return Ok(());
        }
        let queue_room = t.capacity.saturating_sub(t.shared.pending.load(Acquire));
        let room = REPLAY_WINDOW.saturating_sub(feed.out).min(queue_room);
        if room == 0 {
            return Ok(());
        }
        let rows = dead.replaying(no, feed.after, room as usize)?;
        feed.due = rows.len() as u64 == room;
        for r in rows {
            feed.after = Some(r.seq);
            if r.skip {
                feed.others = true;
                continue;
            }
            feed.out += 1;
            t.shared.pending.fetch_add(1, AcqRel);
            t.shared.counters.resumed.fetch_add(1, Relaxed);
            let job = (self.jobs.iter_mut())
                .find(|j| j.tenant == no && r.seq > j.after && r.seq <= j.upto)
                .map_or(0, |j| {
                    j.progress.sent += 1;
                    j.progress.id
                });
            // To the URLs chosen when it was marked that are still configured, else all.
            let mask = match r.mask & t.hook_mask {
                0 => t.hook_mask,
                m => m,
            };
            t.scheduler.send_now(Command::Resume(Resumed {
                id: r.id,
                ingest: None,
                hook: Some(r.body),
                hook_mask: mask,
                first: None,
                replay: Some(job),
            }));
        }
        if !feed.due {
            // Every row marked so far was handed out: what its replays marked and did
            // not send was deleted or dropped meanwhile.
            for j in self.jobs.iter_mut().filter(|j| j.tenant == no) {
                let p = &mut j.progress;
                p.skipped = p.total.saturating_sub(p.sent);
            }
        }
        Ok(())
    }

    /// Drops what is past retention.
    pub(crate) fn expire(&mut self, store: &mut dyn Store) -> Result<(), Error> {
        match store.dead_letters() {
            Some(dead) if !self.feeds.is_empty() => dead.expire(unix_ms(SystemTime::now())),
            _ => Ok(()),
        }
    }
}
