//! Python values to the core's JSON values. Every refusal names the key path of the value
//! (`properties['items'][2]`), so a caller can find it in a nested structure.
//!
//! The rules (also in `docs/python.md`):
//! - `dict` (str keys only), `list`, `tuple`, `str`, `int`, `float`, `bool`, `None` map to
//!   their JSON counterparts; an `int` outside the 64-bit range becomes `float(i)` (what
//!   `JSON.parse` would read).
//! - `datetime` becomes a UTC timestamp string with milliseconds, as the wire carries it; a naive
//!   one is read as local time, as `datetime.timestamp()` reads it.
//! - `date` becomes `date.isoformat()`; `UUID` becomes `str(uuid)`; an `Enum` member becomes
//!   its `.value`, converted by these rules; a `Decimal` becomes the number `float(d)`.
//! - NaN and infinities are refused (`ValidationError`, a `ValueError`); a `set`, `bytes` or
//!   any other object is refused (`UnsupportedType`, a `TypeError`).

use crate::errors::{UnsupportedType, ValidationError};
use outbound::canonical_json::{WriteJson, Writer};
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

/// What a Python value is, by the rules above: the one place they are decided, for both
/// the walk into the core's writer (`PyJson`) and the conversion into a `Value`.
enum Shape<'py> {
    Null,
    Bool(bool),
    Str(Bound<'py, PyString>),
    Int(i64),
    UInt(u64),
    /// A float, a Decimal or an int beyond 64 bits, as a double (not yet checked finite).
    Float(f64),
    /// A datetime, date or UUID, as its text.
    Text(String),
    Dict(Bound<'py, PyDict>),
    List(Bound<'py, PyList>),
    Tuple(Bound<'py, PyTuple>),
}

/// Why a value was refused, before the path is known (it is added on the way out).
enum Refusal {
    Invalid(String),
    Unsupported(String),
    Python(PyErr),
}

impl From<PyErr> for Refusal {
    fn from(e: PyErr) -> Self {
        Refusal::Python(e)
    }
}

/// The common values by their exact type: a pointer comparison each, where the checks
/// below each ask the interpreter for the type's flags (a call under the stable ABI).
fn exact<'py>(obj: &Bound<'py, PyAny>) -> Option<Shape<'py>> {
    use pyo3::ffi;
    use std::ptr::addr_of_mut;
    let ty = obj.get_type_ptr();
    // SAFETY: only the addresses of the interpreter's static type objects are taken, and
    // each cast is to the type `obj` was just seen to have.
    unsafe {
        if ty == addr_of_mut!(ffi::PyUnicode_Type) {
            return Some(Shape::Str(obj.cast_unchecked::<PyString>().clone()));
        }
        if ty == addr_of_mut!(ffi::PyFloat_Type) {
            return Some(Shape::Float(obj.cast_unchecked::<PyFloat>().value()));
        }
        if ty == addr_of_mut!(ffi::PyDict_Type) {
            return Some(Shape::Dict(obj.cast_unchecked::<PyDict>().clone()));
        }
        if ty == addr_of_mut!(ffi::PyList_Type) {
            return Some(Shape::List(obj.cast_unchecked::<PyList>().clone()));
        }
        if ty == addr_of_mut!(ffi::PyLong_Type) {
            // Beyond 64 bits goes the general way below.
            return obj.extract::<i64>().ok().map(Shape::Int);
        }
    }
    None
}

fn shape<'py>(obj: &Bound<'py, PyAny>) -> Result<Shape<'py>, Refusal> {
    if let Some(shape) = exact(obj) {
        return Ok(shape);
    }
    if obj.is_none() {
        return Ok(Shape::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Shape::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Shape::Str(s.clone()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Shape::Int(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Shape::UInt(u));
        }
        // Beyond 64 bits: the double JavaScript would read.
        let f: f64 = obj
            .extract()
            .map_err(|_| Refusal::Invalid("integer is too large for a JSON number".into()))?;
        return Ok(Shape::Float(f));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Shape::Float(f.value()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(Shape::Dict(d.clone()));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(Shape::List(l.clone()));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(Shape::Tuple(t.clone()));
    }
    if is_instance(obj, &DATETIME, "datetime", "datetime")? {
        let at = datetime_instant(obj).map_err(|e| Refusal::Invalid(e.to_string()))?;
        return outbound::timestamp::format(at)
            .map(Shape::Text)
            .map_err(|e| Refusal::Invalid(e.to_string()));
    }
    if is_instance(obj, &DATE, "datetime", "date")? {
        return Ok(Shape::Text(obj.call_method0("isoformat")?.extract()?));
    }
    if is_instance(obj, &DECIMAL, "decimal", "Decimal")? {
        if !obj.call_method0("is_finite")?.is_truthy()? {
            return Err(Refusal::Invalid(format!(
                "{} is not a finite number",
                obj.repr()?.to_string_lossy()
            )));
        }
        let f: f64 = obj
            .call_method0("__float__")?
            .extract()
            .map_err(|_| Refusal::Invalid("Decimal is out of the range of a JSON number".into()))?;
        return Ok(Shape::Float(f));
    }
    if is_instance(obj, &UUID, "uuid", "UUID")? {
        return Ok(Shape::Text(obj.str()?.to_str()?.to_owned()));
    }
    if is_instance(obj, &ENUM, "enum", "Enum")? {
        return shape(&obj.getattr("value")?);
    }
    if obj.cast::<PySet>().is_ok() || obj.cast::<PyFrozenSet>().is_ok() {
        return Err(Refusal::Unsupported(format!(
            "a {} is not JSON serializable; use a list",
            type_name(obj)
        )));
    }
    if obj.cast::<PyBytes>().is_ok() || obj.cast::<PyByteArray>().is_ok() {
        return Err(Refusal::Unsupported(format!(
            "{} is not JSON serializable; decode it to str",
            type_name(obj)
        )));
    }
    Err(Refusal::Unsupported(format!(
        "object of type {} is not JSON serializable",
        type_name(obj)
    )))
}

/// A dict key, which must be a str.
fn key<'py>(k: Bound<'py, PyAny>) -> Result<Bound<'py, PyString>, Refusal> {
    match k.cast_into::<PyString>() {
        Ok(key) => Ok(key),
        Err(e) => {
            let k = e.into_inner();
            Err(Refusal::Unsupported(format!(
                "dict keys must be str, got {} ({})",
                type_name(&k),
                k.repr()?.to_string_lossy()
            )))
        }
    }
}

/// A refusal on its way out of nested values: the steps are collected innermost first, so
/// a value that converts costs nothing for its path.
struct Failed<'py> {
    steps: Vec<Step<'py>>,
    why: Refusal,
}

impl<'py> Failed<'py> {
    fn at(mut self, step: Step<'py>) -> Self {
        self.steps.push(step);
        self
    }

    fn into_err(self, root: &'static str) -> PyErr {
        let path = Path {
            root,
            steps: self.steps.into_iter().rev().collect(),
        };
        match self.why {
            Refusal::Invalid(why) => path.invalid(why),
            Refusal::Unsupported(why) => path.unsupported(why),
            Refusal::Python(e) => e,
        }
    }
}

impl From<Refusal> for Failed<'_> {
    fn from(why: Refusal) -> Self {
        Failed {
            steps: Vec::new(),
            why,
        }
    }
}

impl From<PyErr> for Failed<'_> {
    fn from(e: PyErr) -> Self {
        Refusal::Python(e).into()
    }
}

fn too_deep(depth: usize) -> Result<(), Refusal> {
    if depth > MAX_DEPTH {
        return Err(Refusal::Invalid(format!(
            "nested more than {MAX_DEPTH} levels deep (or contains itself)"
        )));
    }
    Ok(())
}

/// A core refusal of a number (NaN, infinity): its reason, at the value's path.
fn core_refusal(e: outbound::Error) -> Refusal {
    match e {
        outbound::Error::InvalidField { reason, .. } => Refusal::Invalid(reason),
        other => Refusal::Invalid(other.to_string()),
    }
}

/// `properties`, `traits` or `context` as the caller gave it: the core's encoder walks it
/// through [`WriteJson`], so no `Value` is built on the way.
pub(crate) struct PyJson<'py> {
    obj: Bound<'py, PyAny>,
    root: &'static str,
}

/// An error of a call: the core's (validation, queue full, ...) or one raised here.
pub(crate) enum CallError {
    Core(outbound::Error),
    Python(PyErr),
}

impl From<outbound::Error> for CallError {
    fn from(e: outbound::Error) -> Self {
        CallError::Core(e)
    }
}

impl WriteJson for PyJson<'_> {
    type Error = CallError;

    fn write_json(&self, w: &mut Writer<'_>) -> Result<(), CallError> {
        write(&self.obj, w, 0).map_err(|f| CallError::Python(f.into_err(self.root)))
    }
}

fn write<'py>(
    obj: &Bound<'py, PyAny>,
    w: &mut Writer<'_>,
    depth: usize,
) -> Result<(), Failed<'py>> {
    too_deep(depth)?;
    match shape(obj)? {
        Shape::Null => w.null(),
        Shape::Bool(b) => w.bool(b),
        Shape::Str(s) => w.str(s.to_str()?),
        Shape::Int(i) => w.i64(i),
        Shape::UInt(u) => w.u64(u),
        Shape::Float(f) => w.f64(f).map_err(core_refusal)?,
        Shape::Text(t) => w.str(&t),
        Shape::Dict(d) => {
            let mut o = w.object().map_err(core_refusal)?;
            for (k, v) in d.iter() {
                let k = key(k)?;
                let inner = o.key(k.to_str()?);
                if let Err(f) = write(&v, inner, depth + 1) {
                    return Err(f.at(Step::Key(k)));
                }
            }
            o.end();
        }
        Shape::List(l) => write_items(l.iter(), w, depth)?,
        Shape::Tuple(t) => write_items(t.iter(), w, depth)?,
    }
    Ok(())
}

fn write_items<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    w: &mut Writer<'_>,
    depth: usize,
) -> Result<(), Failed<'py>> {
    let mut a = w.array().map_err(core_refusal)?;
    for (i, item) in items.enumerate() {
        if let Err(f) = write(&item, a.item(), depth + 1) {
            return Err(f.at(Step::Index(i)));
        }
    }
    a.end();
    Ok(())
}

/// Converts any Python value the rules allow into a core `Value` (for the calls that need
/// one: `sign`, `verify`, trait values); `path` names it in errors.
pub(crate) fn to_value<'py>(obj: &Bound<'py, PyAny>, path: &mut Path<'py>) -> PyResult<Value> {
    value(obj, 0).map_err(|f| {
        let mut f = f;
        f.steps.extend(path.steps.drain(..).rev());
        f.into_err(path.root)
    })
}

fn value<'py>(obj: &Bound<'py, PyAny>, depth: usize) -> Result<Value, Failed<'py>> {
    too_deep(depth)?;
    Ok(match shape(obj)? {
        Shape::Null => Value::Null,
        Shape::Bool(b) => Value::Bool(b),
        Shape::Str(s) => Value::String(s.to_str()?.to_owned()),
        Shape::Int(i) => Value::from(i),
        Shape::UInt(u) => Value::from(u),
        Shape::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => {
                // The core's writer refuses it: its reason, named as everywhere else.
                let mut scratch = Vec::new();
                let e = Writer::new(&mut scratch).f64(f).expect_err("not finite");
                return Err(core_refusal(e).into());
            }
        },
        Shape::Text(t) => Value::String(t),
        Shape::Dict(d) => {
            let mut map = Map::new();
            for (k, v) in d.iter() {
                let k = key(k)?;
                let name = k.to_str()?.to_owned();
                match value(&v, depth + 1) {
                    Ok(v) => {
                        map.insert(name, v);
                    }
                    Err(f) => return Err(f.at(Step::Key(k))),
                }
            }
            Value::Object(map)
        }
        Shape::List(l) => array(l.iter(), depth)?,
        Shape::Tuple(t) => array(t.iter(), depth)?,
    })
}

fn array<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    depth: usize,
) -> Result<Value, Failed<'py>> {
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        match value(&item, depth + 1) {
            Ok(v) => out.push(v),
            Err(f) => return Err(f.at(Step::Index(i))),
        }
    }
    Ok(Value::Array(out))
}

/// Item `i` of a list of dicts (`subscriptions`), as a core `Value`; errors name it
/// `root[i]` and the path inside it (`subscriptions[1]['data']['at']`).
pub(crate) fn dict_item<'py>(
    obj: &Bound<'py, PyAny>,
    root: &'static str,
    i: usize,
) -> PyResult<Value> {
    let mut path = Path {
        root,
        steps: vec![Step::Index(i)],
    };
    if obj.cast::<PyDict>().is_err() {
        return Err(path.unsupported(format!("must be a dict, got {}", type_name(obj))));
    }
    to_value(obj, &mut path)
}

/// `properties`, `traits`, `context`: a dict, or None; written by the core as it is.
pub(crate) fn json_object<'py>(
    obj: Option<&Bound<'py, PyAny>>,
    field: &'static str,
) -> PyResult<Option<PyJson<'py>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if obj.cast::<PyDict>().is_err() {
        return Err(Path::new(field).unsupported(format!("must be a dict, got {}", type_name(obj))));
    }
    Ok(Some(PyJson {
        obj: obj.clone(),
        root: field,
    }))
}

/// `integrations`: a dict, or None, as a core object (the core reads its flags).
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
        return Ok(Some(s.to_str()?.to_owned()));
    }
    let ok = (obj.cast::<PyInt>().is_ok() && obj.cast::<PyBool>().is_err())
        || is_instance(obj, &UUID, "uuid", "UUID")?;
    if ok {
        return Ok(Some(obj.str()?.to_str()?.to_owned()));
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
        Ok(s) => Ok(Some(s.to_str()?.to_owned())),
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
        return outbound::timestamp::parse(s.to_str()?)
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
