//! A tenant's lanes, each made when its destination first has a request: an idle destination
//! costs a pointer, not a queue, counters and health (a service's idle tenants are most of
//! its memory).

use super::{Delivery, Lane, Report};
use crate::delivery::batch::RequestLimit;
use crate::model::config::{Config, Webhook};
use crossbeam_channel::Sender;
use std::sync::{Arc, OnceLock};

/// Lane 0 is ingestion (or a batched subscription's URL), lane 1 + i is webhook i.
pub(crate) struct Lanes {
    slots: Vec<Option<Box<Lane>>>,
    make: Make,
}

/// What a lane is made from: the same for every lane of the tenant, but its label and rate.
struct Make {
    tenant: u32,
    delivery: Arc<Delivery>,
    reports: Sender<Report>,
    floor: usize,
    cap: usize,
    limit: RequestLimit,
    /// The webhooks' rate limits are read from here when their lane is made.
    webhooks: Arc<Vec<Webhook>>,
}

impl Lanes {
    /// Tenant `tenant`'s lanes for `config`, none made yet.
    pub(crate) fn new(
        tenant: u32,
        config: &Config,
        delivery: Arc<Delivery>,
        reports: Sender<Report>,
    ) -> Lanes {
        Lanes {
            slots: (0..1 + config.webhooks.len()).map(|_| None).collect(),
            make: Make {
                tenant,
                delivery,
                reports,
                floor: config.workers,
                cap: config.max_in_flight,
                limit: RequestLimit::of(config),
                webhooks: config.webhooks.clone(),
            },
        }
    }

    /// How many destinations (made or not).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Lane `i`, once made.
    pub(crate) fn get(&self, i: usize) -> Option<&Lane> {
        self.slots.get(i)?.as_deref()
    }

    /// Lane `i`, once made.
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Lane> {
        self.slots.get_mut(i)?.as_deref_mut()
    }

    /// Lane `i`, made now if it was not.
    pub(crate) fn at(&mut self, i: usize) -> &mut Lane {
        let make = &self.make;
        self.slots[i].get_or_insert_with(|| {
            let rate = (i.checked_sub(1)).and_then(|w| make.webhooks[w].rate_limit);
            Box::new(Lane::new(
                make.tenant,
                i,
                make.label(i),
                make.delivery.clone(),
                make.reports.clone(),
                make.floor,
                make.cap,
                make.limit,
                rate,
            ))
        })
    }

    /// The lanes made so far.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Lane> {
        self.slots.iter().flatten().map(|l| &**l)
    }

    /// The lanes made so far.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Lane> {
        self.slots.iter_mut().flatten().map(|l| &mut **l)
    }

    /// Lane `i`'s destination as logs show it, made or not.
    pub(crate) fn label(&self, i: usize) -> Arc<str> {
        match self.get(i) {
            Some(lane) => lane.label.clone(),
            None => self.make.label(i),
        }
    }

    /// Shares [`super::BRISK`] among the lanes made that have work ([`super::brisk_share`]);
    /// a lane not made has none.
    pub(crate) fn share_brisk(&mut self) {
        let share = super::brisk_share(self.iter().filter(|l| l.has_work()).count());
        for lane in self.iter_mut() {
            lane.requests.share = share;
        }
    }
}

impl Make {
    /// Labels shared: one of the process for ingestion, the hooks' own for the webhooks (and
    /// for a batched subscription's lane 0, its URL).
    fn label(&self, i: usize) -> Arc<str> {
        static INGESTION: OnceLock<Arc<str>> = OnceLock::new();
        let hooks = &self.delivery.hooks;
        match i.checked_sub(1) {
            Some(w) => hooks.label(w),
            None if hooks.batched() => hooks.label(0),
            None => INGESTION.get_or_init(|| "ingestion".into()).clone(),
        }
    }
}
