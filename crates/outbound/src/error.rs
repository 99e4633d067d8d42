//! The one error type of the crate. Every variant says what is wrong and,
//! where a field is at fault, names it.

use std::fmt;

/// What went wrong with a call, a configuration or the client's state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A required field is absent or empty (`track requires event`).
    MissingField {
        /// The call that was made (`track`, `identify`, ...).
        call: &'static str,
        /// The field, or the fields of which one is needed (`user_id or anonymous_id`).
        field: &'static str,
    },
    /// A field is present but its value breaks a rule (wrong type, does not apply to the call, ...).
    InvalidField {
        /// The field's name (`properties`, `timestamp`, `integrations.Webhooks`, ...).
        field: String,
        /// Why it was refused.
        reason: String,
    },
    /// A text that must be JSON is not, or not of the right shape (C and generic JSON input).
    InvalidJson {
        /// Which input (`message`, `properties`, ...).
        what: String,
        /// The parser's or the shape check's message.
        reason: String,
    },
    /// A value has the wrong JSON type (an array where an object is needed, ...).
    WrongType {
        /// The input or field (`message`, `properties`, `userId`, ...).
        field: String,
        /// What was needed (`an object`, `a string`).
        expected: &'static str,
        /// What was given (`an array`, `a number`, ...).
        got: &'static str,
    },
    /// The serialized message is over the 32 KB per-call limit.
    MessageTooLarge {
        /// Serialized size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The queue holds `max_queue_size` messages already; the message was dropped (and counted).
    QueueFull {
        /// The configured capacity.
        capacity: usize,
    },
    /// The spool holds `spool_max_bytes` already; the message was dropped (and counted, as
    /// for a full queue).
    SpoolFull {
        /// The configured limit in bytes.
        limit: u64,
    },
    /// The client was closed; nothing more can be enqueued, and it cannot be closed twice.
    Closed,
    /// The configuration was refused when the client was built.
    Config {
        /// The setting at fault (`webhooks[2].url`, `flush_at`, ...).
        setting: String,
        /// Why.
        reason: String,
    },
    /// The spool directory (setting `spool`) or a file in it could not be used: the
    /// directory cannot be created, another client of this process has it open, or the
    /// database failed (disk full, I/O error, ...).
    Spool {
        /// The directory or file at fault.
        path: String,
        /// Why.
        reason: String,
    },
}

impl Error {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidField {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn config(setting: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Config {
            setting: setting.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn json(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidJson {
            what: what.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::MissingField { call, field } => write!(f, "{call} requires {field}"),
            Error::InvalidField { field, reason } => write!(f, "invalid {field}: {reason}"),
            Error::InvalidJson { what, reason } => write!(f, "invalid JSON for {what}: {reason}"),
            Error::WrongType {
                field,
                expected,
                got,
            } => {
                write!(f, "{field} must be {expected}, got {got}")
            }
            Error::MessageTooLarge { size, limit } => write!(
                f,
                "message is {size} bytes serialized, over the limit of {limit} bytes"
            ),
            Error::QueueFull { capacity } => write!(
                f,
                "queue is full ({capacity} messages waiting); the message was dropped"
            ),
            Error::SpoolFull { limit } => write!(
                f,
                "spool is full (spool_max_bytes {limit}); the message was dropped"
            ),
            Error::Closed => write!(f, "client is closed"),
            Error::Config { setting, reason } => {
                write!(f, "invalid configuration {setting}: {reason}")
            }
            Error::Spool { path, reason } => write!(f, "spool {path}: {reason}"),
        }
    }
}

impl std::error::Error for Error {}
