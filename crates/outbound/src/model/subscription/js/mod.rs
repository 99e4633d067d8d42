//! JavaScript's values as Segment's code sees them. Segment's triggers and mappings run in
//! Node on `JSON.parse`d events, so what they decide depends on JavaScript's rules: property
//! access (`"abc".length`, an index into a string, a method inherited from a prototype), its
//! truthiness, `String(value)`, `==` against `''`, and `JSON.stringify`. This module holds those
//! rules; `number.rs`, `string.rs` and `json.rs` hold the conversions.
//!
//! A value borrows from the event or the mapping wherever it can (`V::Ref`), so walking a path
//! through an event allocates nothing.

pub(crate) mod json;
pub(crate) mod number;
pub(crate) mod string;

use serde_json::{Map, Value};
use std::borrow::Cow;
use string::Unit;

/// A JavaScript exception: Segment's code would have thrown, with this message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Thrown(pub(crate) String);

impl Thrown {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Thrown(message.into())
    }
}

/// A built-in function reached through a path (`properties.constructor`): JavaScript hands
/// back the method itself, which exists, is truthy and prints as its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Builtin {
    pub(crate) name: &'static str,
    pub(crate) length: u8,
}

/// A built-in prototype object reached through `__proto__`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    Object,
    Array,
    String,
    Number,
    Boolean,
}

/// A JavaScript value.
#[derive(Debug, Clone)]
pub(crate) enum V<'a> {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, str>),
    /// Half of a surrogate pair, from indexing into a string.
    Lone(u16),
    /// A JSON value of the event or the mapping, borrowed.
    Ref(&'a Value),
    Arr(Vec<V<'a>>),
    Obj(Obj<'a>),
    Func(Builtin),
    Proto(Proto),
}

/// A plain object made by a directive, its keys in JavaScript's order: array-index keys first
/// in ascending order, then the others in insertion order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Obj<'a> {
    entries: Vec<(Cow<'a, str>, V<'a>)>,
}

impl<'a> Obj<'a> {
    /// `o[key] = v`: a key already there keeps its place.
    pub(crate) fn set(&mut self, key: Cow<'a, str>, v: V<'a>) {
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = v;
            return;
        }
        match array_index(&key) {
            Some(i) => {
                let at = self
                    .entries
                    .iter()
                    .position(|(k, _)| array_index(k).is_none_or(|j| j > i))
                    .unwrap_or(self.entries.len());
                self.entries.insert(at, (key, v));
            }
            None => self.entries.push((key, v)),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&V<'a>> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Cow<'a, str>, &V<'a>)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn with_capacity(n: usize) -> Obj<'a> {
        Obj {
            entries: Vec::with_capacity(n),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn into_entries(self) -> Vec<(Cow<'a, str>, V<'a>)> {
        self.entries
    }
}

/// The key as an array index (a canonical decimal integer below 2^32 − 1), if it is one.
pub(crate) fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    if !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|n| *n < u64::from(u32::MAX))
        .map(|n| n as u32)
}

/// The entries of a JSON object in JavaScript's order. Without array-index keys (almost every
/// object) that is the map's own order and nothing is allocated.
pub(crate) fn js_entries(map: &Map<String, Value>) -> JsEntries<'_> {
    if !map.keys().any(|k| array_index(k).is_some()) {
        return JsEntries::Plain(map.iter());
    }
    let mut indexed: Vec<(u32, &String, &Value)> = map
        .iter()
        .filter_map(|(k, v)| array_index(k).map(|i| (i, k, v)))
        .collect();
    indexed.sort_by_key(|(i, _, _)| *i);
    let mut all: Vec<(&String, &Value)> = indexed.into_iter().map(|(_, k, v)| (k, v)).collect();
    all.extend(map.iter().filter(|(k, _)| array_index(k).is_none()));
    JsEntries::Sorted(all.into_iter())
}

/// The iterator of [`js_entries`].
pub(crate) enum JsEntries<'m> {
    Plain(serde_json::map::Iter<'m>),
    Sorted(std::vec::IntoIter<(&'m String, &'m Value)>),
}

impl<'m> Iterator for JsEntries<'m> {
    type Item = (&'m String, &'m Value);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            JsEntries::Plain(it) => it.next(),
            JsEntries::Sorted(it) => it.next(),
        }
    }
}

/// `typeof v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeOf {
    Undefined,
    Object,
    Boolean,
    Number,
    String,
    Function,
}

/// `Object.prototype.toString.call(v)` as actions-core's `realTypeOf` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RealType {
    Undefined,
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
    Function,
}

impl RealType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RealType::Undefined => "undefined",
            RealType::Null => "null",
            RealType::Boolean => "boolean",
            RealType::Number => "number",
            RealType::String => "string",
            RealType::Array => "array",
            RealType::Object => "object",
            RealType::Function => "function",
        }
    }
}

impl<'a> V<'a> {
    /// The value with borrowed JSON looked through: what kind of JavaScript value it is.
    pub(crate) fn type_of(&self) -> TypeOf {
        match self {
            V::Undefined => TypeOf::Undefined,
            V::Null | V::Arr(_) | V::Obj(_) | V::Proto(_) => TypeOf::Object,
            V::Bool(_) => TypeOf::Boolean,
            V::Num(_) => TypeOf::Number,
            V::Str(_) | V::Lone(_) => TypeOf::String,
            V::Func(_) => TypeOf::Function,
            V::Ref(v) => match v {
                Value::Null | Value::Array(_) | Value::Object(_) => TypeOf::Object,
                Value::Bool(_) => TypeOf::Boolean,
                Value::Number(_) => TypeOf::Number,
                Value::String(_) => TypeOf::String,
            },
        }
    }

    pub(crate) fn real_type(&self) -> RealType {
        match self {
            V::Undefined => RealType::Undefined,
            V::Null => RealType::Null,
            V::Bool(_) => RealType::Boolean,
            V::Num(_) => RealType::Number,
            V::Str(_) | V::Lone(_) => RealType::String,
            V::Arr(_) => RealType::Array,
            V::Obj(_) => RealType::Object,
            V::Func(_) => RealType::Function,
            V::Proto(p) => match p {
                Proto::Object => RealType::Object,
                Proto::Array => RealType::Array,
                Proto::String => RealType::String,
                Proto::Number => RealType::Number,
                Proto::Boolean => RealType::Boolean,
            },
            V::Ref(v) => match v {
                Value::Null => RealType::Null,
                Value::Bool(_) => RealType::Boolean,
                Value::Number(_) => RealType::Number,
                Value::String(_) => RealType::String,
                Value::Array(_) => RealType::Array,
                Value::Object(_) => RealType::Object,
            },
        }
    }

    pub(crate) fn is_nullish(&self) -> bool {
        matches!(self, V::Undefined | V::Null | V::Ref(Value::Null))
    }

    pub(crate) fn is_undefined(&self) -> bool {
        matches!(self, V::Undefined)
    }

    /// `Boolean(v)`.
    pub(crate) fn truthy(&self) -> bool {
        match self {
            V::Undefined | V::Null => false,
            V::Bool(b) => *b,
            V::Num(n) => *n != 0.0 && !n.is_nan(),
            V::Str(s) => !s.is_empty(),
            V::Lone(_) | V::Arr(_) | V::Obj(_) | V::Func(_) | V::Proto(_) => true,
            V::Ref(v) => truthy(v),
        }
    }

    /// The text of a string value (`typeof v === 'string'`), `None` for anything else. A lone
    /// surrogate reads as U+FFFD.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            V::Str(s) => Some(s),
            V::Lone(_) => Some(string::LONE),
            V::Ref(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// The number of a number value (`typeof v === 'number'`).
    pub(crate) fn as_num(&self) -> Option<f64> {
        match self {
            V::Num(n) => Some(*n),
            V::Ref(Value::Number(n)) => Some(n.as_f64().unwrap_or(f64::NAN)),
            _ => None,
        }
    }

    /// The boolean of a boolean value.
    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self {
            V::Bool(b) | V::Ref(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    /// The items of an array (`Array.isArray(v)`), children borrowed where they were.
    pub(crate) fn items(&self) -> Option<Vec<V<'a>>> {
        match self {
            V::Arr(items) => Some(items.clone()),
            V::Ref(Value::Array(items)) => Some(items.iter().map(V::Ref).collect()),
            V::Proto(Proto::Array) => Some(Vec::new()),
            _ => None,
        }
    }

    /// The own enumerable entries of a plain object, in JavaScript's order.
    pub(crate) fn entries(&self) -> Option<Vec<(Cow<'a, str>, V<'a>)>> {
        match self {
            V::Obj(o) => Some(o.entries.clone()),
            V::Ref(Value::Object(map)) => Some(
                js_entries(map)
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), V::Ref(v)))
                    .collect(),
            ),
            V::Proto(Proto::Object) => Some(Vec::new()),
            _ => None,
        }
    }

    /// `v[key]` on a value that is neither `undefined` nor `null` (callers check truthiness
    /// first, as Segment's `prev && prev[key]` does).
    pub(crate) fn get(&self, key: &str) -> Result<V<'a>, Thrown> {
        // The common step of a path: an event's object and a key it has.
        if let V::Ref(Value::Object(map)) = self {
            if let Some(v) = own(map, key) {
                return Ok(V::Ref(v));
            }
        }
        match self {
            V::Undefined | V::Null | V::Ref(Value::Null) => Err(Thrown::new(format!(
                "Cannot read properties of {} (reading '{key}')",
                if self.is_undefined() {
                    "undefined"
                } else {
                    "null"
                }
            ))),
            V::Bool(_) | V::Ref(Value::Bool(_)) => Ok(inherited(Proto::Boolean, key)),
            V::Num(_) | V::Ref(Value::Number(_)) => Ok(inherited(Proto::Number, key)),
            V::Str(Cow::Borrowed(s)) => Ok(string_prop(s, key)),
            V::Str(Cow::Owned(s)) => Ok(detach(string_prop(s, key))),
            V::Ref(Value::String(s)) => Ok(string_prop(s, key)),
            V::Lone(u) => Ok(match key {
                "length" => V::Num(1.0),
                "0" => V::Lone(*u),
                _ => inherited(Proto::String, key),
            }),
            V::Ref(Value::Array(items)) => Ok(match key {
                "length" => V::Num(items.len() as f64),
                _ => match array_index(key) {
                    Some(i) => items.get(i as usize).map_or(V::Undefined, V::Ref),
                    None => inherited(Proto::Array, key),
                },
            }),
            V::Arr(items) => Ok(match key {
                "length" => V::Num(items.len() as f64),
                _ => match array_index(key) {
                    Some(i) => items.get(i as usize).cloned().unwrap_or(V::Undefined),
                    None => inherited(Proto::Array, key),
                },
            }),
            V::Ref(Value::Object(map)) => Ok(match own(map, key) {
                Some(v) => V::Ref(v),
                None => inherited(Proto::Object, key),
            }),
            V::Obj(o) => Ok(match o.get(key) {
                Some(v) => v.clone(),
                None => inherited(Proto::Object, key),
            }),
            V::Func(f) => func_prop(*f, key),
            V::Proto(p) => Ok(proto_prop(*p, key)),
        }
    }

    /// `String(v)`, appended to `out`. Throws where JavaScript does: an object with an own
    /// `toString` that is not a function cannot be converted.
    pub(crate) fn write_string(&self, out: &mut String) -> Result<(), Thrown> {
        match self {
            V::Undefined => out.push_str("undefined"),
            V::Null => out.push_str("null"),
            V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            V::Num(n) => number::write(out, *n),
            V::Str(s) => out.push_str(s),
            V::Lone(_) => out.push_str(string::LONE),
            V::Ref(v) => write_json_string(v, out)?,
            V::Arr(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !item.is_nullish() {
                        item.write_string(out)?;
                    }
                }
            }
            V::Obj(o) => {
                if o.get("toString").is_some() {
                    return Err(cannot_convert());
                }
                out.push_str("[object Object]");
            }
            V::Func(f) => {
                out.push_str("function ");
                out.push_str(f.name);
                out.push_str("() { [native code] }");
            }
            V::Proto(p) => out.push_str(match p {
                Proto::Object => "[object Object]",
                Proto::Array | Proto::String => "",
                Proto::Number => "0",
                Proto::Boolean => "false",
            }),
        }
        Ok(())
    }

    /// `String(v)`.
    pub(crate) fn to_js_string(&self) -> Result<String, Thrown> {
        let mut s = String::new();
        self.write_string(&mut s)?;
        Ok(s)
    }

    /// `v == ''` (loose equality: numbers and booleans compare as numbers, objects by their
    /// primitive).
    pub(crate) fn loosely_empty(&self) -> Result<bool, Thrown> {
        Ok(match self {
            V::Undefined | V::Null | V::Ref(Value::Null) => false,
            V::Bool(b) | V::Ref(Value::Bool(b)) => !*b,
            V::Num(n) => *n == 0.0,
            V::Ref(Value::Number(n)) => n.as_f64() == Some(0.0),
            V::Str(s) => s.is_empty(),
            V::Ref(Value::String(s)) => s.is_empty(),
            V::Lone(_) | V::Func(_) => false,
            V::Arr(_) | V::Ref(Value::Array(_)) => self.to_js_string()?.is_empty(),
            V::Obj(_) | V::Ref(Value::Object(_)) => {
                self.to_js_string()?;
                false
            }
            V::Proto(p) => *p != Proto::Object,
        })
    }
}

/// `map[key]`. An event's objects hold a few keys each: comparing them costs less than
/// hashing the key, so small maps are scanned.
fn own<'m>(map: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    if map.len() <= 16 {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// JavaScript truthiness of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn cannot_convert() -> Thrown {
    Thrown::new("Cannot convert object to primitive value")
}

fn write_json_string(v: &Value, out: &mut String) -> Result<(), Thrown> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => number::write(out, n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !item.is_null() {
                    write_json_string(item, out)?;
                }
            }
        }
        Value::Object(map) => {
            if map.contains_key("toString") {
                return Err(cannot_convert());
            }
            out.push_str("[object Object]");
        }
    }
    Ok(())
}

/// A property read from a string the value owns, made independent of it.
fn detach(v: V<'_>) -> V<'static> {
    match v {
        V::Str(s) => V::Str(Cow::Owned(s.into_owned())),
        V::Num(n) => V::Num(n),
        V::Lone(u) => V::Lone(u),
        V::Func(f) => V::Func(f),
        V::Proto(p) => V::Proto(p),
        _ => V::Undefined,
    }
}

/// A property of a string: its length, one code unit, or an inherited method.
fn string_prop<'s>(s: &'s str, key: &str) -> V<'s> {
    if key == "length" {
        return V::Num(string::len16(s) as f64);
    }
    match array_index(key) {
        Some(i) => match string::unit_at(s, i as usize) {
            Some(Unit::Char(c)) => V::Str(Cow::Borrowed(c)),
            Some(Unit::Lone(u)) => V::Lone(u),
            None => V::Undefined,
        },
        None => inherited(Proto::String, key),
    }
}

/// What a value of the prototype's kind inherits under `key`: a method of its own prototype,
/// one of `Object.prototype`'s, the prototype itself under `__proto__`, else `undefined`.
fn inherited(p: Proto, key: &str) -> V<'static> {
    if key == "__proto__" {
        return V::Proto(p);
    }
    let own = match p {
        Proto::Object => &[][..],
        Proto::Array => ARRAY_METHODS,
        Proto::String => STRING_METHODS,
        Proto::Number => NUMBER_METHODS,
        Proto::Boolean => BOOLEAN_METHODS,
    };
    own.iter()
        .chain(OBJECT_METHODS)
        .find(|(k, _)| *k == key)
        .map_or(V::Undefined, |(_, f)| V::Func(*f))
}

/// A property of a prototype object itself.
fn proto_prop(p: Proto, key: &str) -> V<'static> {
    match (p, key) {
        (Proto::Object, "__proto__") => V::Null,
        (_, "__proto__") => V::Proto(Proto::Object),
        (Proto::Array | Proto::String, "length") => V::Num(0.0),
        _ => match inherited(p, key) {
            V::Proto(_) => V::Undefined,
            v => v,
        },
    }
}

/// A property of a built-in function: its name, its length, `Function.prototype`'s methods.
fn func_prop(f: Builtin, key: &str) -> Result<V<'static>, Thrown> {
    Ok(match key {
        "name" => V::Str(Cow::Borrowed(f.name)),
        "length" => V::Num(f64::from(f.length)),
        "caller" | "arguments" => {
            return Err(Thrown::new(
                "'caller', 'callee', and 'arguments' properties may not be accessed on strict mode functions or the arguments objects for calls to them",
            ))
        }
        "__proto__" => V::Func(Builtin {
            name: "",
            length: 0,
        }),
        _ => FUNCTION_METHODS
            .iter()
            .chain(OBJECT_METHODS)
            .find(|(k, _)| *k == key)
            .map_or(V::Undefined, |(_, f)| V::Func(*f)),
    })
}

const fn b(name: &'static str, length: u8) -> Builtin {
    Builtin { name, length }
}

// The methods of Node 20's prototypes (`Object.getOwnPropertyNames`), with each function's
// `name` and `length`.
static OBJECT_METHODS: &[(&str, Builtin)] = &[
    ("constructor", b("Object", 1)),
    ("__defineGetter__", b("__defineGetter__", 2)),
    ("__defineSetter__", b("__defineSetter__", 2)),
    ("hasOwnProperty", b("hasOwnProperty", 1)),
    ("__lookupGetter__", b("__lookupGetter__", 1)),
    ("__lookupSetter__", b("__lookupSetter__", 1)),
    ("isPrototypeOf", b("isPrototypeOf", 1)),
    ("propertyIsEnumerable", b("propertyIsEnumerable", 1)),
    ("toString", b("toString", 0)),
    ("valueOf", b("valueOf", 0)),
    ("toLocaleString", b("toLocaleString", 0)),
];

static ARRAY_METHODS: &[(&str, Builtin)] = &[
    ("constructor", b("Array", 1)),
    ("at", b("at", 1)),
    ("concat", b("concat", 1)),
    ("copyWithin", b("copyWithin", 2)),
    ("fill", b("fill", 1)),
    ("find", b("find", 1)),
    ("findIndex", b("findIndex", 1)),
    ("findLast", b("findLast", 1)),
    ("findLastIndex", b("findLastIndex", 1)),
    ("lastIndexOf", b("lastIndexOf", 1)),
    ("pop", b("pop", 0)),
    ("push", b("push", 1)),
    ("reverse", b("reverse", 0)),
    ("shift", b("shift", 0)),
    ("unshift", b("unshift", 1)),
    ("slice", b("slice", 2)),
    ("sort", b("sort", 1)),
    ("splice", b("splice", 2)),
    ("includes", b("includes", 1)),
    ("indexOf", b("indexOf", 1)),
    ("join", b("join", 1)),
    ("keys", b("keys", 0)),
    ("entries", b("entries", 0)),
    ("values", b("values", 0)),
    ("forEach", b("forEach", 1)),
    ("filter", b("filter", 1)),
    ("flat", b("flat", 0)),
    ("flatMap", b("flatMap", 1)),
    ("map", b("map", 1)),
    ("every", b("every", 1)),
    ("some", b("some", 1)),
    ("reduce", b("reduce", 1)),
    ("reduceRight", b("reduceRight", 1)),
    ("toLocaleString", b("toLocaleString", 0)),
    ("toString", b("toString", 0)),
    ("toReversed", b("toReversed", 0)),
    ("toSorted", b("toSorted", 1)),
    ("toSpliced", b("toSpliced", 2)),
    ("with", b("with", 2)),
];

static STRING_METHODS: &[(&str, Builtin)] = &[
    ("constructor", b("String", 1)),
    ("anchor", b("anchor", 1)),
    ("at", b("at", 1)),
    ("big", b("big", 0)),
    ("blink", b("blink", 0)),
    ("bold", b("bold", 0)),
    ("charAt", b("charAt", 1)),
    ("charCodeAt", b("charCodeAt", 1)),
    ("codePointAt", b("codePointAt", 1)),
    ("concat", b("concat", 1)),
    ("endsWith", b("endsWith", 1)),
    ("fontcolor", b("fontcolor", 1)),
    ("fontsize", b("fontsize", 1)),
    ("fixed", b("fixed", 0)),
    ("includes", b("includes", 1)),
    ("indexOf", b("indexOf", 1)),
    ("isWellFormed", b("isWellFormed", 0)),
    ("italics", b("italics", 0)),
    ("lastIndexOf", b("lastIndexOf", 1)),
    ("link", b("link", 1)),
    ("localeCompare", b("localeCompare", 1)),
    ("match", b("match", 1)),
    ("matchAll", b("matchAll", 1)),
    ("normalize", b("normalize", 0)),
    ("padEnd", b("padEnd", 1)),
    ("padStart", b("padStart", 1)),
    ("repeat", b("repeat", 1)),
    ("replace", b("replace", 2)),
    ("replaceAll", b("replaceAll", 2)),
    ("search", b("search", 1)),
    ("slice", b("slice", 2)),
    ("small", b("small", 0)),
    ("split", b("split", 2)),
    ("strike", b("strike", 0)),
    ("sub", b("sub", 0)),
    ("substr", b("substr", 2)),
    ("substring", b("substring", 2)),
    ("sup", b("sup", 0)),
    ("startsWith", b("startsWith", 1)),
    ("toString", b("toString", 0)),
    ("toWellFormed", b("toWellFormed", 0)),
    ("trim", b("trim", 0)),
    ("trimStart", b("trimStart", 0)),
    ("trimLeft", b("trimStart", 0)),
    ("trimEnd", b("trimEnd", 0)),
    ("trimRight", b("trimEnd", 0)),
    ("toLocaleLowerCase", b("toLocaleLowerCase", 0)),
    ("toLocaleUpperCase", b("toLocaleUpperCase", 0)),
    ("toLowerCase", b("toLowerCase", 0)),
    ("toUpperCase", b("toUpperCase", 0)),
    ("valueOf", b("valueOf", 0)),
];

static NUMBER_METHODS: &[(&str, Builtin)] = &[
    ("constructor", b("Number", 1)),
    ("toExponential", b("toExponential", 1)),
    ("toFixed", b("toFixed", 1)),
    ("toPrecision", b("toPrecision", 1)),
    ("toString", b("toString", 1)),
    ("valueOf", b("valueOf", 0)),
    ("toLocaleString", b("toLocaleString", 0)),
];

static BOOLEAN_METHODS: &[(&str, Builtin)] = &[
    ("constructor", b("Boolean", 1)),
    ("toString", b("toString", 0)),
    ("valueOf", b("valueOf", 0)),
];

static FUNCTION_METHODS: &[(&str, Builtin)] = &[
    ("constructor", b("Function", 1)),
    ("apply", b("apply", 2)),
    ("bind", b("bind", 1)),
    ("call", b("call", 1)),
    ("toString", b("toString", 0)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get<'a>(v: &V<'a>, key: &str) -> V<'a> {
        v.get(key).unwrap()
    }

    #[test]
    fn own_properties_come_before_inherited_ones() {
        let o = json!({"constructor": "mine", "a": 1});
        assert_eq!(get(&V::Ref(&o), "constructor").as_str(), Some("mine"));
        assert!(matches!(get(&V::Ref(&o), "toString"), V::Func(f) if f.name == "toString"));
        assert!(get(&V::Ref(&o), "missing").is_undefined());
    }

    #[test]
    fn strings_and_arrays_have_a_length_and_indices() {
        let s = json!("héllo");
        assert_eq!(get(&V::Ref(&s), "length").as_num(), Some(5.0));
        assert_eq!(get(&V::Ref(&s), "1").as_str(), Some("é"));
        assert!(get(&V::Ref(&s), "01").is_undefined());
        let a = json!([1, 2, 3]);
        assert_eq!(get(&V::Ref(&a), "length").as_num(), Some(3.0));
        assert_eq!(get(&V::Ref(&a), "2").as_num(), Some(3.0));
        assert!(get(&V::Ref(&a), "3").is_undefined());
    }

    #[test]
    fn string_of_values_is_javascripts() {
        let cases = [
            (json!([1, null, [2, "a"], true]), "1,,2,a,true"),
            (json!({"a": 1}), "[object Object]"),
            (json!(1e21), "1e+21"),
            (json!(null), "null"),
        ];
        for (v, want) in cases {
            assert_eq!(V::Ref(&v).to_js_string().unwrap(), want);
        }
        let empty = json!({});
        let f = get(&V::Ref(&empty), "hasOwnProperty");
        assert_eq!(
            f.to_js_string().unwrap(),
            "function hasOwnProperty() { [native code] }"
        );
    }

    #[test]
    fn an_object_with_its_own_to_string_cannot_be_converted() {
        let o = json!({"toString": "x"});
        assert!(V::Ref(&o).to_js_string().is_err());
    }

    #[test]
    fn loose_equality_with_the_empty_string() {
        for (v, want) in [
            (json!(0), true),
            (json!(false), true),
            (json!([]), true),
            (json!([[], null]), false),
            (json!([null]), true),
            (json!(" "), false),
            (json!({}), false),
            (json!("0"), false),
        ] {
            assert_eq!(V::Ref(&v).loosely_empty().unwrap(), want, "{v}");
        }
    }

    #[test]
    fn objects_keep_javascripts_key_order() {
        let mut o = Obj::default();
        for k in ["b", "10", "a", "2", "b"] {
            o.set(Cow::Borrowed(k), V::Null);
        }
        let keys: Vec<&str> = o.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["2", "10", "b", "a"]);
    }

    #[test]
    fn array_index_keys_are_canonical_integers_below_two_to_the_32_minus_one() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("4294967294"), Some(4_294_967_294));
        for k in ["", "01", "-1", "1.0", "4294967295", " 1", "1e3"] {
            assert_eq!(array_index(k), None, "{k}");
        }
    }

    #[test]
    fn reading_callers_of_a_builtin_throws() {
        let empty = json!({});
        let f = get(&V::Ref(&empty), "valueOf");
        assert!(f.get("caller").is_err());
        assert_eq!(get(&f, "name").as_str(), Some("valueOf"));
    }
}
