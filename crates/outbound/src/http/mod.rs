//! HTTP and TLS: one request out, its answer classified (`attempt.rs`: success, retryable,
//! permanent). Two clients: webhooks on the I/O engine (`io.rs`: a small tokio runtime;
//! `exchange.rs` one request, `connect.rs` lookups, the network guard, the proxy and TLS,
//! `pool.rs` keep-alive), and ingestion batches on ureq (`transport.rs`, with `tcp.rs` and
//! `one_write.rs` for fewer system calls); and the recording transport of `testing`
//! (`recorder.rs`). It knows nothing of messages: it posts bytes with headers to a URL.
//!
//! May use: `model/` (the settings, `Reason`, the network guard, `Retry-After` parsing) and
//! the leaves.

pub(crate) mod attempt;
pub(crate) mod connect;
pub(crate) mod exchange;
pub(crate) mod frames;
pub(crate) mod io;
pub(crate) mod one_write;
pub(crate) mod pool;
pub(crate) mod recorder;
pub(crate) mod tcp;
pub(crate) mod transport;
