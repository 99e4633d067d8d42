//! From the queue to an outcome. Owns what flows into the scheduler (`command.rs`) and how a
//! send wakes it (`inbox.rs`), the spool writer thread (`spooler/`, over a `durable::Store`),
//! the scheduler thread (`scheduler/`: intake, dispatch, results, ending, shutdown), the open
//! ingestion batch (`batch.rs`), one message's webhook rounds (`fanout.rs`), a worker's jobs
//! (`job.rs`), the per-destination lanes and their threads (`lane/`), and the counters and
//! waits shared with the handle (`shared.rs`).
//!
//! May use: `durable/`, `http/`, `wire/`, `model/` and the leaves; never the client.

pub(crate) mod batch;
pub(crate) mod command;
pub(crate) mod fanout;
pub(crate) mod inbox;
pub(crate) mod job;
pub(crate) mod lane;
pub(crate) mod replay;
pub(crate) mod scheduler;
pub(crate) mod shared;
pub(crate) mod spooler;
pub(crate) mod watch;
