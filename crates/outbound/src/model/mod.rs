//! The model: what a call is and what may be asked of the client. Owns the message
//! (`message.rs`), the rules of each call (`validate.rs`), the settings and their checks
//! (`config/`), how an endpoint wants to be called (`endpoint.rs`: auth, TLS, signature,
//! rate limit), which addresses a webhook may reach (`network_guard.rs`), the retry policy
//! (`retry.rs`), what a `spool` setting names (`spool.rs`: a directory or a Redis URL), timestamps (`timestamp.rs`), how a message ends (`outcome.rs`), what a client shows of
//! its webhook deliveries (`attempts.rs`: attempts and health; `dead_letter.rs`) and what a
//! collector of Segment's tracking API adds to a message it receives (`collected.rs`), and
//! subscriptions, Segment's Webhooks (Actions): which events an endpoint gets and how
//! (`subscription/`: triggers, mappings, the Send action's requests).
//!
//! May use: the crate's leaves (`error`, `log`). Nothing else of the crate: every other
//! folder builds on this one.

pub(crate) mod attempts;
pub(crate) mod collected;
pub(crate) mod config;
pub(crate) mod dead_letter;
pub(crate) mod endpoint;
pub(crate) mod message;
pub(crate) mod network_guard;
pub(crate) mod outcome;
pub(crate) mod retry;
pub(crate) mod spool;
pub mod subscription;
pub mod timestamp;
pub(crate) mod validate;
