//! The scheduler thread: one per engine, whatever the number of clients (tenants) on it. It
//! owns every accepted message until its outcome, tenant by tenant (`tenant.rs`, in steps:
//! `intake.rs` → `dispatch.rs` → `results.rs` → `ending.rs`, plus `shutdown.rs`), and runs a
//! tenant only when something is there for it: a signal of its inbox, an answer of one of its
//! requests, or a deadline of its own (a retry, its open batch, housekeeping). An idle tenant
//! costs it nothing. It never touches the network and never blocks.

use crate::delivery::lane::Report;
use crossbeam_channel::{select, Receiver, Sender};
use foldhash::HashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

mod dispatch;
mod ending;
mod intake;
mod results;
mod shutdown;
mod tenant;
mod timers;
mod track;
mod watermark;

pub(crate) use tenant::Tenant;

/// How often a tenant with waiting requests of a down destination checks them against their
/// retry window.
const HOUSEKEEPING: Duration = Duration::from_secs(1);
/// Commands of one tenant read in one go before its requests are handed out.
const READ_AHEAD: usize = 512;
/// What a tenant with no deadline publishes as its wake-up (see `inbox`): so far that
/// every lazy send signals it.
const IDLE_PUBLISH: Duration = Duration::from_secs(365 * 24 * 3600);

/// What the engine tells its scheduler thread.
pub(crate) enum Control {
    /// A new tenant, under its number.
    Add(u32, Box<Tenant>),
    /// Every handle of the engine is gone: stop (after the tenants still open).
    Stop,
}

/// The scheduler thread's own state.
pub(crate) struct Scheduler {
    /// Boxed: a map's spare slots then cost a pointer each, not a whole tenant.
    tenants: HashMap<u32, Box<Tenant>>,
    /// When each tenant asked to run next (the heap may hold older, stale entries: a popped
    /// entry counts only when it is the tenant's current one).
    due: HashMap<u32, Instant>,
    heap: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Tenants whose inbox rang.
    woken: Receiver<u32>,
    /// Every tenant's answers.
    reports: Receiver<Report>,
    control: Receiver<Control>,
    stopping: bool,
    /// Tenants to run in this round, once each.
    dirty: Vec<u32>,
}

/// The channels into a scheduler thread: tenants whose inbox rang, the requests' reports,
/// control.
pub(crate) struct SchedulerChannels {
    pub woken: Sender<u32>,
    pub reports: Sender<Report>,
    pub control: Sender<Control>,
}

impl Scheduler {
    pub(crate) fn new() -> (Scheduler, SchedulerChannels) {
        let (rung_tx, woken) = crossbeam_channel::unbounded();
        let (reports_tx, reports) = crossbeam_channel::unbounded();
        let (control_tx, control) = crossbeam_channel::unbounded();
        (
            Scheduler {
                tenants: HashMap::default(),
                due: HashMap::default(),
                heap: BinaryHeap::new(),
                woken,
                reports,
                control,
                stopping: false,
                dirty: Vec::new(),
            },
            SchedulerChannels {
                woken: rung_tx,
                reports: reports_tx,
                control: control_tx,
            },
        )
    }

    pub(crate) fn run(mut self) {
        loop {
            self.take_control();
            if self.stopping && self.tenants.is_empty() {
                return;
            }
            let now = Instant::now();
            while let Some(Reverse((at, tenant))) = self.heap.peek().copied() {
                if at > now {
                    break;
                }
                self.heap.pop();
                if self.due.get(&tenant) == Some(&at) {
                    self.due.remove(&tenant);
                    self.mark(tenant);
                }
            }
            for tenant in self.woken.try_iter() {
                if let Some(t) = self.tenants.get(&tenant) {
                    t.mailbox.rearm();
                }
                self.dirty.push(tenant);
            }
            for report in self.reports.try_iter() {
                if let Some(t) = self.tenants.get_mut(&report.tenant) {
                    let tenant = report.tenant;
                    t.on_report(report);
                    self.dirty.push(tenant);
                }
            }
            self.run_dirty();
            let wait = match self.heap.peek() {
                Some(Reverse((at, _))) => at.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if !self.dirty.is_empty() {
                continue;
            }
            select! {
                recv(self.woken) -> r => if let Ok(t) = r {
                    if let Some(t) = self.tenants.get(&t) {
                        t.mailbox.rearm();
                    }
                    self.dirty.push(t);
                },
                recv(self.reports) -> r => if let Ok(report) = r {
                    if let Some(t) = self.tenants.get_mut(&report.tenant) {
                        let tenant = report.tenant;
                        t.on_report(report);
                        self.dirty.push(tenant);
                    }
                },
                recv(self.control) -> c => match c {
                    Ok(c) => self.control(c),
                    // Every engine handle gone without a word: stop as told.
                    Err(_) => self.stopping = true,
                },
                default(wait) => {},
            }
        }
    }

    fn mark(&mut self, tenant: u32) {
        self.dirty.push(tenant);
    }

    fn take_control(&mut self) {
        while let Ok(c) = self.control.try_recv() {
            self.control(c);
        }
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::Add(id, tenant) => {
                // Its first step reads what was sent before it arrived, so its wakeup is
                // re-armed: a signal taken before it was known (the scheduler may take a signal
                // and this Add in either order) left it marked as woken, and every later
                // send, a flush or a close too, would have woken no more.
                tenant.mailbox.rearm();
                self.tenants.insert(id, tenant);
                self.dirty.push(id);
            }
            Control::Stop => self.stopping = true,
        }
    }

    /// Runs each tenant marked once, and schedules when it asks to run next.
    fn run_dirty(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for id in dirty.drain(..) {
            let Some(tenant) = self.tenants.get_mut(&id) else {
                continue;
            };
            match tenant.step() {
                Ok(Some(at)) => {
                    // A sooner deadline goes on the heap; a later one waits for the entry
                    // already there, which runs the tenant early (it then asks again).
                    let current = self.due.get(&id).copied();
                    if current.is_none_or(|c| at < c) {
                        self.due.insert(id, at);
                        self.heap.push(Reverse((at, id)));
                    }
                }
                Ok(None) => {}
                Err(()) => {
                    self.due.remove(&id);
                    if let Some(tenant) = self.tenants.remove(&id) {
                        tenant.shutdown();
                    }
                }
            }
        }
        // Reuse the allocation.
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }
}
