//! A spool store with its dead letters on Redis beside it (`dead.rs`): every call of the
//! spool goes to the store, the dead letters to Redis, written before the commit that
//! removes their records; a refused write holds those records back until it is written.

use super::dead::RedisDead;
use crate::durable::dead::{DeadLetters, DeadOp};
use crate::durable::{Adopted, Cursor, Op, Record, Store, TenantNo, Ticket};
use crate::error::Error;
use foldhash::HashSet;

/// A store whose dead letters are kept on Redis beside it: every call of the spool goes to
/// `store`, the dead letters to `dead` (written before the commit that removes their
/// records).
pub(crate) struct WithDead {
    pub store: Box<dyn Store>,
    pub dead: RedisDead,
    /// Dead-letter ops whose write failed: tried again with the next commit.
    unwritten: Vec<DeadOp>,
    /// The record ops about the messages of `unwritten`'s letters, in their order, held back
    /// until those are written: a record leaves the stream only once its letter is kept, so a
    /// crash (or a close) before that resumes the message instead of losing it.
    held: Vec<Op>,
    /// The last refusal: why `unwritten` is not empty, when it is not.
    refused: String,
}

impl WithDead {
    pub(crate) fn new(store: Box<dyn Store>, dead: RedisDead) -> WithDead {
        WithDead {
            store,
            dead,
            unwritten: Vec::new(),
            held: Vec::new(),
            refused: String::new(),
        }
    }

    /// `ops` less those about a message whose letter is unwritten (held back), after the
    /// ops held before when the letters are written now.
    fn passing(&mut self, ops: &[Op]) -> Vec<Op> {
        if self.unwritten.is_empty() {
            let mut all = std::mem::take(&mut self.held);
            all.extend_from_slice(ops);
            return all;
        }
        let waiting: HashSet<(TenantNo, &str)> = (self.unwritten.iter())
            .filter_map(|op| match op {
                DeadOp::Put(r) => Some((r.tenant, &*r.id)),
                DeadOp::Delivered { .. } => None,
            })
            .collect();
        let (hold, go): (Vec<Op>, Vec<Op>) =
            (ops.iter().cloned()).partition(|op| waiting.contains(&(op.tenant(), &**op.id())));
        self.held.extend(hold);
        go
    }
}

impl Store for WithDead {
    fn location(&self) -> String {
        self.store.location()
    }
    fn register(&mut self, no: TenantNo, name: &str) {
        self.store.register(no, name);
    }
    fn apply(&mut self, ops: &[Op]) -> Result<(), Error> {
        let ticket = self.submit_with(ops, &[]);
        self.settle(ticket)
    }
    fn submit(&mut self, ops: &[Op]) -> Ticket {
        self.submit_with(ops, &[])
    }
    fn settle(&mut self, ticket: Ticket) -> Result<(), Error> {
        self.store.settle(ticket)
    }
    fn dead_letters(&mut self) -> Option<&mut dyn DeadLetters> {
        Some(&mut self.dead)
    }
    /// The dead letters first (and those a failed write left); kept for the next commit
    /// when Redis refuses them, while the records' commit goes on without their messages'
    /// ops ([`passing`](WithDead::passing)).
    fn submit_with(&mut self, ops: &[Op], dead: &[DeadOp]) -> Ticket {
        self.unwritten.extend_from_slice(dead);
        if !self.unwritten.is_empty() {
            match self.dead.apply_dead(&self.unwritten) {
                Ok(()) => self.unwritten.clear(),
                Err(e) => self.refused = e.to_string(),
            }
        }
        if self.unwritten.is_empty() && self.held.is_empty() {
            return self.store.submit(ops);
        }
        let ops = self.passing(ops);
        self.store.submit(&ops)
    }
    fn dead_unwritten(&self) -> Option<(usize, String)> {
        (!self.unwritten.is_empty()).then(|| (self.unwritten.len(), self.refused.clone()))
    }
    fn lock_fd(&self) -> Option<std::os::fd::RawFd> {
        self.store.lock_fd()
    }
    fn parks(&self) -> bool {
        self.store.parks()
    }
    fn resumable(
        &mut self,
        tenant: TenantNo,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<Cursor>), Error> {
        self.store.resumable(tenant, after, limit)
    }
    fn release(&mut self, tenant: TenantNo) -> Result<(), Error> {
        self.store.release(tenant)
    }
    fn pending(&self, tenant: TenantNo) -> (u64, u64) {
        self.store.pending(tenant)
    }
    fn adopt(&mut self) -> Result<Adopted, Error> {
        self.store.adopt()
    }
    fn close(self: Box<Self>) -> Result<(), Error> {
        let WithDead {
            mut store,
            mut dead,
            unwritten,
            held,
            ..
        } = *self;
        // Letters still unwritten leave their records in the stream: the next store on it
        // resumes those messages, and their letters are written when they fail again.
        if !unwritten.is_empty() && dead.apply_dead(&unwritten).is_ok() && !held.is_empty() {
            let ticket = store.submit(&held);
            let _ = store.settle(ticket);
        }
        dead.end_beat();
        store.close()
    }
}
