//! C ABI for outbound: `liboutbound.so` / `liboutbound.a`, with the header
//! `include/outbound.h` generated from this crate by cbindgen (never edited by hand).
//!
//! The crate only converts: C strings to `&str` (invalid UTF-8 is refused here), JSON text
//! to objects (through the core's `parse_object` / `Message::from_json`), `outbound::Error`
//! to an [`outbound_result`] code plus a readable text, and Rust values back into caller
//! buffers. Every rule about messages, configuration and delivery is the core's.
//!
//! Every exported function runs its body inside [`panic::guard`] (through the `ffi!` macro),
//! so a panic becomes [`outbound_result::Panic`] (or a NULL / zero return) and never unwinds
//! into C or aborts. Every pointer argument is checked for NULL before use.
#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]
// A C ABI passes optional fields as flat arguments (NULL = not given).
#![allow(clippy::too_many_arguments)]

#[macro_use]
mod panic;
mod audience;
mod client;
mod convert;
mod deliveries;
mod options;
mod packed;
mod recording;
mod result;
mod signature;
mod subscriptions;
mod timestamp;

pub use audience::*;
pub use client::*;
pub use deliveries::*;
pub use options::*;
pub use recording::*;
pub use result::*;
pub use signature::*;
pub use subscriptions::*;
pub use timestamp::*;

use std::ffi::c_char;

/// The library's version as a NUL-terminated string (`"0.2.0"`).
///
/// Ownership: the returned pointer is static; do not free it.
#[no_mangle]
pub extern "C" fn outbound_version() -> *const c_char {
    ffi!({
        concat!(env!("CARGO_PKG_VERSION"), "\0")
            .as_ptr()
            .cast::<c_char>()
    })
}
