//! What a call is: the message, its rules, the settings, and how a message can end.

pub(crate) mod config;
pub(crate) mod message;
pub(crate) mod network_guard;
pub(crate) mod outcome;
pub(crate) mod retry;
pub mod timestamp;
pub(crate) mod validate;
