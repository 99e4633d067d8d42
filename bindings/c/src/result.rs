//! Result codes, the mapping from the core's errors, and the thread's last error text.

use std::cell::RefCell;
use std::ffi::c_char;

/// What a call did. Every fallible function returns one of these; the text of the last
/// failure on the calling thread is available from `outbound_last_error`.
/// `OUTBOUND_RESULT_OK` is 0; every other value is a failure. Codes are stable: new ones
/// are only ever added at the end.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum outbound_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL (the text names it).
    NullArgument = 1,
    /// A text argument was not valid UTF-8 (the text names it).
    InvalidUtf8 = 2,
    /// A JSON text argument was not valid JSON (syntax error; the text says where).
    InvalidJson = 3,
    /// A JSON value had the wrong type, e.g. an array where an object is needed.
    WrongType = 4,
    /// A required field was absent or empty (`track requires event`).
    MissingField = 5,
    /// A field was present but its value broke a rule (bad timestamp, a field the call does
    /// not carry, an unknown key in a generic message, ...).
    InvalidField = 6,
    /// The message serializes to more than 32 KB (32,768 bytes); nothing was queued.
    MessageTooLarge = 7,
    /// The queue already holds `max_queue_size` messages; this one was dropped and counted
    /// (`outbound_stats.queue_full`). Messages already queued are not affected.
    QueueFull = 8,
    /// The client is closed: nothing more can be enqueued and it cannot be closed twice.
    Closed = 9,
    /// The options were refused when the client was built (the text names the setting).
    Config = 10,
    /// An output buffer was too small; nothing was written to it and nothing else happened
    /// (no message was queued). The length out-parameter, when given, holds the length needed
    /// (without the terminating NUL).
    InsufficientSize = 11,
    /// A flush or close ended before every message had an outcome, or some message ended
    /// failed or dropped since the previous flush or close returned. Not an error of the
    /// call itself: see
    /// `outbound_client_stats` and the outcome callback for what happened.
    Incomplete = 12,
    /// `outbound_verify`: the signature does not match the body and secret.
    /// `outbound_verify_standard`: no signature matches, or the timestamp is not a number or
    /// is outside the tolerance (the text says which).
    BadSignature = 13,
    /// A bug: liboutbound panicked inside this call. The panic was contained; the text has
    /// its message. Please report it.
    Panic = 14,
    /// An error this version of the binding does not know how to classify (a newer core).
    Other = 15,
    /// The spool directory or a file in it could not be used (cannot be created, already
    /// used by another client of this process, disk full, ...); the text names the path.
    Spool = 16,
    /// A recording accessor (`outbound_recording_snapshot`, `_respond_with`, `_clear`) was
    /// given a client built without `outbound_options_set_recording`.
    NotRecording = 17,
}

impl outbound_result {
    fn from_code(code: u32) -> Option<outbound_result> {
        use outbound_result::*;
        [
            Ok,
            NullArgument,
            InvalidUtf8,
            InvalidJson,
            WrongType,
            MissingField,
            InvalidField,
            MessageTooLarge,
            QueueFull,
            Closed,
            Config,
            InsufficientSize,
            Incomplete,
            BadSignature,
            Panic,
            Other,
            Spool,
            NotRecording,
        ]
        .into_iter()
        .find(|r| *r as u32 == code)
    }

    fn name(self) -> &'static std::ffi::CStr {
        use outbound_result::*;
        match self {
            Ok => c"OUTBOUND_RESULT_OK: success",
            NullArgument => c"OUTBOUND_RESULT_NULL_ARGUMENT: a required pointer argument was NULL",
            InvalidUtf8 => c"OUTBOUND_RESULT_INVALID_UTF8: a text argument is not valid UTF-8",
            InvalidJson => c"OUTBOUND_RESULT_INVALID_JSON: a JSON argument is not valid JSON",
            WrongType => c"OUTBOUND_RESULT_WRONG_TYPE: a JSON value has the wrong type",
            MissingField => c"OUTBOUND_RESULT_MISSING_FIELD: a required field is missing",
            InvalidField => c"OUTBOUND_RESULT_INVALID_FIELD: a field's value is not allowed",
            MessageTooLarge => {
                c"OUTBOUND_RESULT_MESSAGE_TOO_LARGE: the message is over 32 KB serialized"
            }
            QueueFull => c"OUTBOUND_RESULT_QUEUE_FULL: the queue is full; the message was dropped",
            Closed => c"OUTBOUND_RESULT_CLOSED: the client is closed",
            Config => c"OUTBOUND_RESULT_CONFIG: the options were refused",
            InsufficientSize => c"OUTBOUND_RESULT_INSUFFICIENT_SIZE: an output buffer is too small",
            Incomplete => {
                c"OUTBOUND_RESULT_INCOMPLETE: not every message was delivered within the wait"
            }
            BadSignature => c"OUTBOUND_RESULT_BAD_SIGNATURE: the signature does not match",
            Panic => c"OUTBOUND_RESULT_PANIC: internal error (contained panic)",
            Other => c"OUTBOUND_RESULT_OTHER: an unclassified error",
            Spool => c"OUTBOUND_RESULT_SPOOL: the spool directory could not be used",
            NotRecording => c"OUTBOUND_RESULT_NOT_RECORDING: the client is not a recording client",
        }
    }
}

/// Why a call failed, before it becomes a code and a text.
#[derive(Debug)]
pub(crate) enum Failure {
    Null(&'static str),
    Utf8(&'static str),
    Core(outbound::Error),
    Size {
        what: &'static str,
        needed: usize,
        given: usize,
    },
    Incomplete(&'static str),
    BadSignature,
    /// A Standard Webhooks request refused; the core's reason.
    StandardSignature(String),
    /// A recording accessor on a client that does not record.
    NotRecording,
}

impl From<outbound::Error> for Failure {
    fn from(e: outbound::Error) -> Self {
        Failure::Core(e)
    }
}

impl Failure {
    pub(crate) fn code(&self) -> outbound_result {
        use outbound::Error as E;
        match self {
            Failure::Null(_) => outbound_result::NullArgument,
            Failure::Utf8(_) => outbound_result::InvalidUtf8,
            Failure::Size { .. } => outbound_result::InsufficientSize,
            Failure::Incomplete(_) => outbound_result::Incomplete,
            Failure::BadSignature | Failure::StandardSignature(_) => outbound_result::BadSignature,
            Failure::NotRecording => outbound_result::NotRecording,
            Failure::Core(e) => match e {
                E::MissingField { .. } => outbound_result::MissingField,
                E::InvalidField { .. } => outbound_result::InvalidField,
                E::InvalidJson { .. } => outbound_result::InvalidJson,
                E::WrongType { .. } => outbound_result::WrongType,
                E::MessageTooLarge { .. } => outbound_result::MessageTooLarge,
                E::QueueFull { .. } | E::SpoolFull { .. } => outbound_result::QueueFull,
                E::Closed => outbound_result::Closed,
                E::Config { .. } => outbound_result::Config,
                E::Spool { .. } => outbound_result::Spool,
                _ => outbound_result::Other,
            },
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            Failure::Null(what) => format!("{what} must not be NULL"),
            Failure::Utf8(what) => format!("{what} is not valid UTF-8"),
            Failure::Core(e) => e.to_string(),
            Failure::Size {
                what,
                needed,
                given,
            } => {
                format!("{what} is too small: {needed} bytes needed (with the NUL), {given} given")
            }
            Failure::Incomplete(what) => format!(
                "{what} ended before every message was delivered (timeout, or a message failed \
                 or was dropped); see outbound_client_stats and the outcome callback"
            ),
            Failure::BadSignature => "the signature does not match the body and secret".into(),
            Failure::StandardSignature(why) => why.clone(),
            Failure::NotRecording => "not a recording client: the client was built without \
                                      outbound_options_set_recording(options, true)"
                .into(),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

pub(crate) fn set_last_error(text: String) {
    let _ = LAST_ERROR.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = text;
        }
    });
}

#[cfg(test)]
pub(crate) fn last_error_text() -> String {
    LAST_ERROR.with(|cell| cell.borrow().clone())
}

/// Records `failure` as the thread's last error and returns its code.
pub(crate) fn fail(failure: Failure) -> outbound_result {
    set_last_error(failure.text());
    failure.code()
}

/// `Ok(())` → `OUTBOUND_RESULT_OK`; a failure is recorded and becomes its code.
pub(crate) fn finish(result: Result<(), Failure>) -> outbound_result {
    match result {
        Ok(()) => outbound_result::Ok,
        Err(failure) => fail(failure),
    }
}

/// A short, static, human-readable description of a result code (`"OUTBOUND_RESULT_QUEUE_FULL:
/// the queue is full; ..."`). Unknown codes give `"unknown outbound_result code"`.
///
/// Ownership: the returned pointer is static and never NULL; do not free it.
#[no_mangle]
pub extern "C" fn outbound_result_str(code: u32) -> *const c_char {
    ffi!({
        match outbound_result::from_code(code) {
            Some(r) => r.name().as_ptr(),
            None => c"unknown outbound_result code".as_ptr(),
        }
    })
}

/// Copies the text of the last failure returned to the calling thread by any `outbound_`
/// function (thread-local, like `errno`: successful calls leave it unchanged, and other
/// threads' failures never touch it) into `buf`, truncating to `len - 1` bytes and always
/// NUL-terminating when `len > 0`. An empty string when this thread has had no failure.
///
/// Returns the full length of the text in bytes, without the NUL (as `snprintf` does), so
/// a return value `>= len` means the text was truncated.
///
/// Ownership: `buf` is the caller's; it may be NULL when `len` is 0 (to ask the length).
///
/// # Safety
/// `buf` must be NULL or point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn outbound_last_error(buf: *mut c_char, len: usize) -> usize {
    ffi!({
        LAST_ERROR
            .try_with(|cell| {
                let text = cell.try_borrow().map(|s| s.clone()).unwrap_or_default();
                if !buf.is_null() && len > 0 {
                    let n = text.len().min(len - 1);
                    // SAFETY: the caller gives `len` writable bytes at `buf`; n + 1 <= len.
                    unsafe {
                        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                        *buf.add(n) = 0;
                    }
                }
                text.len()
            })
            .unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn every_code_has_its_own_text() {
        let mut seen = std::collections::HashSet::new();
        for code in 0..=outbound_result::NotRecording as u32 {
            let text = unsafe { CStr::from_ptr(outbound_result_str(code)) };
            assert!(seen.insert(text.to_owned()), "{code}");
            assert!(text.to_str().unwrap().starts_with("OUTBOUND_RESULT_"));
        }
        let unknown = unsafe { CStr::from_ptr(outbound_result_str(9999)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown outbound_result code");
    }

    #[test]
    fn each_core_error_has_its_own_code() {
        use outbound::Error as E;
        let codes = [
            E::MissingField {
                call: "track",
                field: "event",
            },
            E::InvalidField {
                field: "f".into(),
                reason: "r".into(),
            },
            E::InvalidJson {
                what: "w".into(),
                reason: "r".into(),
            },
            E::WrongType {
                field: "f".into(),
                expected: "an object",
                got: "an array",
            },
            E::MessageTooLarge { size: 2, limit: 1 },
            E::QueueFull { capacity: 1 },
            E::Closed,
            E::Config {
                setting: "s".into(),
                reason: "r".into(),
            },
        ]
        .map(|e| Failure::Core(e).code() as u32);
        let unique: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), codes.len());
        assert!(!codes.contains(&(outbound_result::Other as u32)));
    }

    #[test]
    fn last_error_truncates_like_snprintf() {
        set_last_error("hello world".into());
        let mut buf = [0x7f as c_char; 6];
        let n = unsafe { outbound_last_error(buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, 11);
        let got = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(got.to_str().unwrap(), "hello");
        assert_eq!(unsafe { outbound_last_error(std::ptr::null_mut(), 0) }, 11);
    }
}
