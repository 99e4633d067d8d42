//! The spool: accepted messages kept on disk until their outcome.

pub(crate) mod fork_gate;
pub(crate) mod sqlite;
