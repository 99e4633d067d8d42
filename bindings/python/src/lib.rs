//! Python binding for outbound.
