//! C ABI for outbound.
