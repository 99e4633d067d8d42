//! Python values to the core's JSON values. Every refusal names the key path of the value
//! (`properties['items'][2]`), so a caller can find it in a nested structure.
//!
//! The rules (also in `docs/python.md`):
//! - `dict` (str keys only), `list`, `tuple`, `str`, `int`, `float`, `bool`, `None` map to
//!   their JSON counterparts; an `int` outside the 64-bit range becomes `float(i)` (what
//!   `JSON.parse` would read).
//! - `datetime` becomes a UTC timestamp string with milliseconds, the wire form of §3; a naive
//!   one is read as local time, as `datetime.timestamp()` reads it.
//! - `date` becomes `date.isoformat()`; `UUID` becomes `str(uuid)`; an `Enum` member becomes
//!   its `.value`, converted by these rules; a `Decimal` becomes the number `float(d)`.
//! - NaN and infinities are refused (`ValidationError`, a `ValueError`); a `set`, `bytes` or
//!   any other object is refused (`UnsupportedType`, a `TypeError`).

use crate::errors::{UnsupportedType, ValidationError};
use outbound::{OffsetDateTime, Value};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString,
    PyTuple, PyType,
};
use serde_json::Map;

/// Deeper than this is refused rather than risking the stack (and catches cycles).
const MAX_DEPTH: usize = 100;

static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DECIMAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UUID: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ENUM: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UTC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static MICROSECOND: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

enum Step<'py> {
    Key(Bound<'py, PyString>),
    Index(usize),
}

/// Where a value sits: the argument's name, then keys and indexes.
pub(crate) struct Path<'py> {
    root: &'static str,
    steps: Vec<Step<'py>>,
}

impl<'py> Path<'py> {
    pub(crate) fn new(root: &'static str) -> Self {
        Path {
            root,
            steps: Vec::new(),
        }
    }

    /// `properties['items'][2]`; keys are shown as Python shows them (`repr`).
    pub(crate) fn render(&self) -> String {
        let mut out = String::from(self.root);
        for step in &self.steps {
            match step {
                Step::Key(k) => {
                    let shown = k
                        .repr()
                        .map(|r| r.to_string_lossy().into_owned())
                        .unwrap_or_else(|_| "'?'".into());
                    out.push('[');
                    out.push_str(&shown);
                    out.push(']');
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    fn invalid(&self, why: impl std::fmt::Display) -> PyErr {
        let at = self.render();
        ValidationError::new_err((format!("{at}: {why}"), at))
    }

    fn unsupported(&self, why: impl std::fmt::Display) -> PyErr {
        let at = self.render();
        UnsupportedType::new_err((format!("{at}: {why}"), at))
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .qualname()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "?".into())
}

fn is_instance(
    obj: &Bound<'_, PyAny>,
    cell: &PyOnceLock<Py<PyType>>,
    module: &str,
    name: &str,
) -> PyResult<bool> {
    let ty = cell.import(obj.py(), module, name)?;
    obj.is_instance(ty)
}

fn cached<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    make: impl FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<&'static Py<PyAny>> {
    cell.get_or_try_init(py, || make(py).map(Bound::unbind))
}

/// A `datetime` as an instant: aware ones at their offset, naive ones as local time (the
/// rule of `datetime.timestamp()`), both exact to the microsecond.
pub(crate) fn datetime_instant(dt: &Bound<'_, PyAny>) -> PyResult<OffsetDateTime> {
    let py = dt.py();
    let utc = cached(py, &UTC, |py| {
        py.import("datetime")?.getattr("timezone")?.getattr("utc")
    })?;
    let epoch = cached(py, &EPOCH, |py| {
        let datetime = py.import("datetime")?.getattr("datetime")?;
        datetime.call1((1970, 1, 1, 0, 0, 0, 0, utc.bind(py)))
    })?;
    let micro = cached(py, &MICROSECOND, |py| {
        let delta = py.import("datetime")?.getattr("timedelta")?;
        delta.call1((0, 0, 1))
    })?;
    // datetime.astimezone() reads a naive datetime as local time.
    let aware = dt.call_method1("astimezone", (utc.bind(py),))?;
    let micros: i64 = aware
        .sub(epoch.bind(py))?
        .floor_div(micro.bind(py))?
        .extract()?;
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("datetime out of range: {e}")))
}

/// Converts any Python value the rules allow; `path` says where it sits.
pub(crate) fn to_value<'py>(obj: &Bound<'py, PyAny>, path: &mut Path<'py>) -> PyResult<Value> {
    if path.steps.len() > MAX_DEPTH {
        return Err(path.invalid(format!(
            "nested more than {MAX_DEPTH} levels deep (or contains itself)"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        // Beyond 64 bits: the double JavaScript would read.
        let f: f64 = obj
            .extract()
            .map_err(|_| path.invalid("integer is too large for a JSON number"))?;
        return number(f, path);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return number(f.value(), path);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key = match k.cast_into::<PyString>() {
                Ok(key) => key,
                Err(e) => {
                    let k = e.into_inner();
                    return Err(path.unsupported(format!(
                        "dict keys must be str, got {} ({})",
                        type_name(&k),
                        k.repr()?.to_string_lossy()
                    )));
                }
            };
            let name = key.to_cow()?.into_owned();
            path.steps.push(Step::Key(key));
            let value = to_value(&v, path)?;
            path.steps.pop();
            map.insert(name, value);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return array(l.iter(), path);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return array(t.iter(), path);
    }
    if is_instance(obj, &DATETIME, "datetime", "datetime")? {
        let at = datetime_instant(obj).map_err(|e| path.invalid(e))?;
        return outbound::timestamp::format(at)
            .map(Value::String)
            .map_err(|e| path.invalid(e));
    }
    if is_instance(obj, &DATE, "datetime", "date")? {
        return Ok(Value::String(obj.call_method0("isoformat")?.extract()?));
    }
    if is_instance(obj, &DECIMAL, "decimal", "Decimal")? {
        if !obj.call_method0("is_finite")?.is_truthy()? {
            return Err(path.invalid(format!(
                "{} is not a finite number",
                obj.repr()?.to_string_lossy()
            )));
        }
        let f: f64 = obj
            .call_method0("__float__")?
            .extract()
            .map_err(|_| path.invalid("Decimal is out of the range of a JSON number"))?;
        return number(f, path);
    }
    if is_instance(obj, &UUID, "uuid", "UUID")? {
        return Ok(Value::String(obj.str()?.to_cow()?.into_owned()));
    }
    if is_instance(obj, &ENUM, "enum", "Enum")? {
        return to_value(&obj.getattr("value")?, path);
    }
    if obj.cast::<PySet>().is_ok() || obj.cast::<PyFrozenSet>().is_ok() {
        return Err(path.unsupported(format!(
            "a {} is not JSON serializable; use a list",
            type_name(obj)
        )));
    }
    if obj.cast::<PyBytes>().is_ok() || obj.cast::<PyByteArray>().is_ok() {
        return Err(path.unsupported(format!(
            "{} is not JSON serializable; decode it to str",
            type_name(obj)
        )));
    }
    Err(path.unsupported(format!(
        "object of type {} is not JSON serializable",
        type_name(obj)
    )))
}

fn number(f: f64, path: &Path<'_>) -> PyResult<Value> {
    match serde_json::Number::from_f64(f) {
        Some(n) => Ok(Value::Number(n)),
        None => Err(path.invalid(format!(
            "{} is not a valid JSON number",
            if f.is_nan() { "NaN" } else { "infinity" }
        ))),
    }
}

fn array<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    path: &mut Path<'py>,
) -> PyResult<Value> {
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        path.steps.push(Step::Index(i));
        out.push(to_value(&item, path)?);
        path.steps.pop();
    }
    Ok(Value::Array(out))
}

/// `properties`, `traits`, `context`, `integrations`: a dict, or None.
pub(crate) fn object(
    obj: Option<&Bound<'_, PyAny>>,
    field: &'static str,
) -> PyResult<Option<Map<String, Value>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let mut path = Path::new(field);
    if obj.cast::<PyDict>().is_err() {
        return Err(path.unsupported(format!("must be a dict, got {}", type_name(obj))));
    }
    match to_value(obj, &mut path)? {
        Value::Object(map) => Ok(Some(map)),
        _ => unreachable!("a dict converts to an object"),
    }
}

/// An id (`user_id`, `anonymous_id`, `group_id`, `previous_id`): a str, or an int or UUID,
/// sent as its decimal or canonical text.
pub(crate) fn id(obj: Option<&Bound<'_, PyAny>>, field: &'static str) -> PyResult<Option<String>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Some(s.to_cow()?.into_owned()));
    }
    let ok = (obj.cast::<PyInt>().is_ok() && obj.cast::<PyBool>().is_err())
        || is_instance(obj, &UUID, "uuid", "UUID")?;
    if ok {
        return Ok(Some(obj.str()?.to_cow()?.into_owned()));
    }
    Err(Path::new(field).unsupported(format!("must be a str or int, got {}", type_name(obj))))
}

/// A text field (`event`, `name`, `category`, `message_id`): a str, or None.
pub(crate) fn text(
    obj: Option<&Bound<'_, PyAny>>,
    field: &'static str,
) -> PyResult<Option<String>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    match obj.cast::<PyString>() {
        Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
        Err(_) => {
            Err(Path::new(field).unsupported(format!("must be a str, got {}", type_name(obj))))
        }
    }
}

/// `timestamp`: a `datetime` (naive = local time), or RFC 3339 text with an offset.
pub(crate) fn timestamp(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<OffsetDateTime>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let path = Path::new("timestamp");
    if let Ok(s) = obj.cast::<PyString>() {
        return outbound::timestamp::parse(&s.to_cow()?)
            .map(Some)
            .map_err(crate::errors::to_py);
    }
    if is_instance(obj, &DATETIME, "datetime", "datetime")? {
        return datetime_instant(obj).map(Some).map_err(|e| path.invalid(e));
    }
    Err(path.unsupported(format!(
        "must be a datetime or an RFC 3339 str, got {}",
        type_name(obj)
    )))
}
