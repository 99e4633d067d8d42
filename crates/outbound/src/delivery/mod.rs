//! From the queue to an outcome: the scheduler, batches, webhook rounds, lanes.

pub(crate) mod batch;
pub(crate) mod command;
pub(crate) mod fanout;
pub(crate) mod inbox;
pub(crate) mod job;
pub(crate) mod lane;
pub(crate) mod scheduler;
pub(crate) mod shared;
pub(crate) mod spooler;
