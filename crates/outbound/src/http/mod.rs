//! HTTP and TLS: one request out, its answer classified (`transport.rs`: success, retryable,
//! permanent), TCP with fewer system calls (`tcp.rs`), head and body in one write
//! (`one_write.rs`), and the recording transport of `testing` (`recorder.rs`). It knows
//! nothing of messages: it posts bytes with headers to a URL.
//!
//! May use: `model/` (the settings, `Reason`, the network guard, `Retry-After` parsing) and
//! the leaves.

pub(crate) mod one_write;
pub(crate) mod recorder;
pub(crate) mod tcp;
pub(crate) mod transport;
