//! HTTP plumbing every route uses: answers (`reply`), bodies read within a limit (`body`),
//! credentials in headers (`auth`), the HTTPS listener (`tls`) and stalled writes
//! (`write_timeout`). It knows nothing of sources, events or the admin API.

pub mod auth;
pub mod body;
pub mod reply;
pub mod tls;
pub mod write_timeout;
