//! The panic boundary: every exported function's body runs inside [`guard`], so a panic
//! (a bug, in the binding or the core) becomes a result code instead of unwinding into C,
//! which would be undefined behaviour, or aborting the host process.

use crate::result::{outbound_result, set_last_error};
use std::any::Any;
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What an exported function returns when its body panicked.
pub(crate) trait PanicValue {
    fn on_panic() -> Self;
}

impl PanicValue for outbound_result {
    fn on_panic() -> Self {
        outbound_result::Panic
    }
}

impl PanicValue for () {
    fn on_panic() -> Self {}
}

impl PanicValue for usize {
    fn on_panic() -> Self {
        0
    }
}

impl<T> PanicValue for *mut T {
    fn on_panic() -> Self {
        std::ptr::null_mut()
    }
}

impl PanicValue for *const c_char {
    fn on_panic() -> Self {
        c"panic inside liboutbound".as_ptr()
    }
}

impl PanicValue for *const c_void {
    fn on_panic() -> Self {
        std::ptr::null()
    }
}

fn payload_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// Runs `body`; a panic is caught, recorded as the thread's last error and turned into the
/// return type's [`PanicValue`].
pub(crate) fn guard<R: PanicValue>(body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            // Formatting the text cannot panic again in any way that matters; if it did,
            // this second catch still keeps the unwind out of C.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                set_last_error(format!(
                    "internal error (panic) in liboutbound: {}",
                    payload_text(payload.as_ref())
                ))
            }));
            drop_quietly(payload);
            R::on_panic()
        }
    }
}

/// A panic payload's own destructor could panic; never let that escape either.
fn drop_quietly(payload: Box<dyn Any + Send>) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
}

/// Wraps an exported function's body in the panic boundary.
macro_rules! ffi {
    ($body:block) => {
        $crate::panic::guard(move || $body)
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::last_error_text;

    #[test]
    fn a_panic_becomes_the_panic_code_and_the_last_error() {
        let code: outbound_result = guard(|| panic!("boom"));
        assert_eq!(code, outbound_result::Panic);
        assert!(last_error_text().contains("boom"), "{}", last_error_text());
    }

    #[test]
    fn a_panic_in_a_pointer_returning_function_gives_null() {
        let p: *mut u8 = guard(|| panic!("{}", String::from("owned message")));
        assert!(p.is_null());
        assert!(last_error_text().contains("owned message"));
    }

    #[test]
    fn no_panic_returns_the_value() {
        assert_eq!(guard(|| 7usize), 7);
    }
}
