//! HTTP and TLS: requests out, responses classified. Knows nothing of messages.

pub(crate) mod one_write;
pub(crate) mod recorder;
pub(crate) mod tcp;
pub(crate) mod transport;
