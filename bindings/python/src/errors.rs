//! The core's errors as the Python exceptions of `outbound._errors` (defined in Python so
//! they can have two bases, e.g. `ConfigError(OutboundError, ValueError)`).

use outbound::Error;
use pyo3::PyErr;

pyo3::import_exception!(outbound._errors, OutboundError);
pyo3::import_exception!(outbound._errors, ConfigError);
pyo3::import_exception!(outbound._errors, ValidationError);
pyo3::import_exception!(outbound._errors, UnsupportedType);
pyo3::import_exception!(outbound._errors, MessageTooLarge);
pyo3::import_exception!(outbound._errors, ClientClosed);
pyo3::import_exception!(outbound._errors, SpoolError);

/// One exception per kind of core error; the message is the core's, the field or setting
/// at fault is kept as an attribute (`err.field`, `err.setting`).
pub(crate) fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::MissingField { field, .. } => ValidationError::new_err((message, field)),
        Error::InvalidField { field, .. } => ValidationError::new_err((message, field)),
        Error::InvalidJson { what, .. } => ValidationError::new_err((message, what)),
        Error::WrongType { field, .. } => UnsupportedType::new_err((message, field)),
        Error::MessageTooLarge { .. } => MessageTooLarge::new_err((message, "message")),
        Error::Config { setting, .. } => ConfigError::new_err((message, setting)),
        Error::Closed => ClientClosed::new_err(message),
        Error::Spool { path, .. } => SpoolError::new_err((message, path)),
        // QueueFull never gets here (enqueue turns it into None); anything newer is generic.
        _ => OutboundError::new_err(message),
    }
}

/// A setting the binding cannot even convert (a negative duration, ...).
pub(crate) fn config(setting: &str, reason: impl std::fmt::Display) -> PyErr {
    ConfigError::new_err((
        format!("invalid configuration {setting}: {reason}"),
        setting.to_string(),
    ))
}

/// A setting of a Python type that has no meaning for it (`UnsupportedType`, a `TypeError`),
/// naming it.
pub(crate) fn wrong_type(setting: &str, message: String) -> PyErr {
    UnsupportedType::new_err((message, setting.to_string()))
}
