//! HTTP and TLS: one request out, its answer classified (`attempt.rs`: success, retryable,
//! permanent). Every request, ingestion batches and webhooks alike, goes out on the I/O
//! engine (`io.rs`: a small tokio runtime): `exchange.rs` one request, `connect.rs` lookups,
//! the network guard, the proxy (`proxy.rs`) and TLS (`pem.rs`: roots, an endpoint's client
//! certificate), `oauth.rs` an endpoint's OAuth2 tokens, `pool.rs` keep-alive; a recording client's requests go to its record instead (`recorder.rs`). It
//! knows nothing of messages: it posts bytes with headers to a URL.
//!
//! May use: `model/` (the settings, `Reason`, the network guard, `Retry-After` parsing) and
//! the leaves.

pub(crate) mod attempt;
pub(crate) mod connect;
pub(crate) mod exchange;
pub(crate) mod frames;
pub(crate) mod io;
pub(crate) mod oauth;
pub(crate) mod pem;
pub(crate) mod pool;
pub(crate) mod proxy;
pub(crate) mod recorder;
