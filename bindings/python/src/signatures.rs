//! The receivers' signature helpers of `outbound._native`: `X-Signature` (HMAC-SHA1),
//! `X-Signature-256` (HMAC-SHA256) and Standard Webhooks, signed and verified by the core;
//! here only the conversion of Python values (bytes, str, a parsed body).

use crate::_native::seconds;
use crate::convert::{self, Path};
use crate::errors::to_py;
use outbound::SignatureError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString};
use std::borrow::Cow;

fn raw<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Cow::Owned(s.to_cow()?.into_owned().into_bytes()));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{what} must be bytes or str, got {}",
        obj.get_type().qualname()?
    )))
}

fn is_parsed(body: &Bound<'_, PyAny>) -> bool {
    body.cast::<PyDict>().is_ok() || body.cast::<PyList>().is_ok()
}

/// `X-Signature` of `body`: the raw bytes (or str as UTF-8), or a parsed body written in
/// the JS-canonical form every sender uses.
#[pyfunction]
pub(crate) fn sign(secret: &Bound<'_, PyAny>, body: &Bound<'_, PyAny>) -> PyResult<String> {
    let secret = raw(secret, "secret")?;
    if is_parsed(body) {
        let value = convert::to_value(body, &mut Path::new("body"))?;
        let bytes = outbound::canonical_json::to_vec(&value).map_err(to_py)?;
        return Ok(outbound::sign(&secret, &bytes));
    }
    Ok(outbound::sign(&secret, &raw(body, "body")?))
}

/// The `hmac-sha256` scheme's signature of `body` (`sha256=<hex HMAC-SHA256>`, the value
/// of `X-Signature-256`): the raw bytes (or str as UTF-8), or a parsed body written in the
/// JS-canonical form every sender uses.
#[pyfunction]
pub(crate) fn sign_sha256(secret: &Bound<'_, PyAny>, body: &Bound<'_, PyAny>) -> PyResult<String> {
    let secret = raw(secret, "secret")?;
    if is_parsed(body) {
        let value = convert::to_value(body, &mut Path::new("body"))?;
        let bytes = outbound::canonical_json::to_vec(&value).map_err(to_py)?;
        return Ok(outbound::sign_sha256(&secret, &bytes));
    }
    Ok(outbound::sign_sha256(&secret, &raw(body, "body")?))
}

/// A request without `X-Signature` (`None`) carries no signature: the core's "no
/// signature" is the empty one, which it never accepts.
fn header(signature: Option<&str>) -> &str {
    signature.unwrap_or("")
}

/// True when `signature` is the signature of `body` (as for `sign`); constant time.
/// `None` (the header was missing) is False.
#[pyfunction]
pub(crate) fn verify(
    secret: &Bound<'_, PyAny>,
    body: &Bound<'_, PyAny>,
    signature: Option<&str>,
) -> PyResult<bool> {
    let secret = raw(secret, "secret")?;
    if is_parsed(body) {
        let value = convert::to_value(body, &mut Path::new("body"))?;
        return Ok(outbound::verify_value(&secret, &value, header(signature)));
    }
    Ok(outbound::verify(
        &secret,
        &raw(body, "body")?,
        header(signature),
    ))
}

/// True when `signature` (`sha256=<hex>`) is the `hmac-sha256` signature of `body` (as
/// for `sign_sha256`); constant time. `None` (the header was missing) is False.
#[pyfunction]
pub(crate) fn verify_sha256(
    secret: &Bound<'_, PyAny>,
    body: &Bound<'_, PyAny>,
    signature: Option<&str>,
) -> PyResult<bool> {
    let secret = raw(secret, "secret")?;
    let body = if is_parsed(body) {
        let value = convert::to_value(body, &mut Path::new("body"))?;
        Cow::Owned(outbound::canonical_json::to_vec(&value).map_err(to_py)?)
    } else {
        raw(body, "body")?
    };
    Ok(outbound::verify_sha256(&secret, &body, header(signature)))
}

/// True when `signature` is the signature of the already parsed `body` (any JSON value,
/// a `str` included), written in the JS-canonical form every sender uses. `None` is
/// False.
#[pyfunction]
pub(crate) fn verify_value(
    secret: &Bound<'_, PyAny>,
    body: &Bound<'_, PyAny>,
    signature: Option<&str>,
) -> PyResult<bool> {
    let secret = raw(secret, "secret")?;
    let value = convert::to_value(body, &mut Path::new("body"))?;
    Ok(outbound::verify_value(&secret, &value, header(signature)))
}

/// The Standard Webhooks `webhook-signature` value of a request: `v1,<base64>` per secret
/// of `secret` (`whsec_` secrets, space separated). Raises ValueError for a bad secret.
#[pyfunction]
pub(crate) fn sign_standard_webhook(
    secret: &str,
    webhook_id: &str,
    timestamp: i64,
    body: &Bound<'_, PyAny>,
) -> PyResult<String> {
    outbound::sign_standard(secret, webhook_id, timestamp, &raw(body, "body")?)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// True when a Standard Webhooks request is authentic and recent (the core's
/// `verify_standard`). Raises ValueError for a bad secret (the receiver's own mistake).
#[pyfunction]
#[pyo3(signature = (secret, body, webhook_id, webhook_timestamp, webhook_signature, *,
    tolerance=300.0))]
pub(crate) fn verify_standard_webhook(
    secret: &str,
    body: &Bound<'_, PyAny>,
    webhook_id: &str,
    webhook_timestamp: &Bound<'_, PyAny>,
    webhook_signature: &str,
    tolerance: f64,
) -> PyResult<bool> {
    let tolerance = seconds("tolerance", tolerance)?;
    // The header as received, or the int a framework already parsed it to.
    let timestamp = match webhook_timestamp.extract::<i64>() {
        Ok(n) => n.to_string(),
        Err(_) => webhook_timestamp.extract::<String>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("webhook_timestamp must be str or int")
        })?,
    };
    let body = raw(body, "body")?;
    match outbound::verify_standard(
        secret,
        webhook_id,
        &timestamp,
        &body,
        webhook_signature,
        tolerance,
    ) {
        Ok(()) => Ok(true),
        Err(SignatureError::InvalidSecret(why)) => Err(pyo3::exceptions::PyValueError::new_err(
            format!("invalid secret: {why}"),
        )),
        Err(_) => Ok(false),
    }
}

/// The core's default replay tolerance in seconds (the Python default must match).
#[pyfunction]
pub(crate) fn standard_webhook_tolerance() -> f64 {
    outbound::DEFAULT_TOLERANCE.as_secs_f64()
}
