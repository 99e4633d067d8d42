//! mapping-kit's `resolve` and its directives, compiled once from the mapping JSON and run per
//! event. What a directive decides from its own arguments alone (`@if` without `exists` or
//! `blank`, `@merge` without `direction`) is decided at compile time into a node that throws
//! when reached, as Segment's does on every event that reaches it; what depends on the event
//! runs per event, in the order Segment runs it.

use super::super::js::{self, json, string, truthy, Obj, RealType, Thrown, TypeOf, V};
use super::text::{self, PathSpec, Piece, Replace};
use super::MappingError;
use serde_json::{Map, Value};
use std::borrow::Cow;

mod compile;

use compile::{
    compile_array_path, compile_case, compile_flatten, compile_if, compile_json, compile_merge,
    compile_replace, compile_transform,
};

/// A compiled mapping value.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// A value with no directive anywhere in it: it resolves to itself.
    Const(Value),
    /// A missing argument (`undefined`).
    Undefined,
    /// A plain object, its keys in JavaScript's order.
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
    Directive(Box<Directive>),
}

/// A directive and where it is in the mapping (for errors).
#[derive(Debug, Clone)]
pub(crate) struct Directive {
    path: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Throws this message when reached.
    Fail(String),
    If {
        blank: bool,
        test: Node,
        then: Option<Node>,
        otherwise: Option<Node>,
    },
    Case {
        operator: CaseOp,
        value: Option<Node>,
    },
    Replace {
        value: Option<Node>,
        first: Option<Result<Replace, String>>,
        second: Option<Result<Replace, String>>,
    },
    ArrayPath {
        root: Root,
        shape: Option<Node>,
    },
    Path(Arg<PathSpec>),
    Template(Arg<Template>),
    Literal(Node),
    Flatten {
        separator: Node,
        value: Node,
        omit_arrays: bool,
    },
    Json {
        mode: JsonMode,
        value: Node,
    },
    Merge {
        direction: Node,
        objects: Result<Vec<Node>, String>,
    },
    Transform {
        apply: Result<Node, String>,
        mapping: Node,
    },
    ExcludeWhenNull(Node),
}

/// A string argument: read at compile time when it is a string, else resolved per event.
#[derive(Debug, Clone)]
enum Arg<T> {
    Fixed(T),
    Resolved(Node),
}

/// A template read at compile time: its first pass, and its second when the first changes
/// nothing (the second pass runs over the first's output).
#[derive(Debug, Clone)]
struct Template {
    first: Vec<Piece>,
    second: Option<Vec<Piece>>,
}

impl Template {
    fn new(t: &str) -> Template {
        let first = text::scan(t, 3);
        let fixed = !first.iter().any(|p| matches!(p, Piece::Key(_)));
        Template {
            first,
            second: fixed.then(|| text::scan(t, 2)),
        }
    }
}

#[derive(Debug, Clone)]
enum Root {
    Path(PathSpec),
    Resolved(Node),
}

#[derive(Debug, Clone, Copy)]
enum CaseOp {
    Lower,
    Upper,
    Other,
}

#[derive(Debug, Clone, Copy)]
enum JsonMode {
    Encode,
    Decode,
    Other,
}

/// A failure while resolving: where in the mapping and what Segment's code would throw.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) path: String,
    pub(crate) message: String,
}

impl Fault {
    pub(crate) fn into_error(self) -> MappingError {
        MappingError {
            path: self.path,
            reason: self.message,
        }
    }
}

type Resolved<'a> = Result<V<'a>, Fault>;

/// `isDirective` of mapping-kit: an object with an `@` key and no other keys but `_metadata`.
fn is_directive(m: &Map<String, Value>) -> bool {
    m.keys().any(|k| k.starts_with('@')) && m.keys().all(|k| k.starts_with('@') || k == "_metadata")
}

fn has_directive(v: &Value) -> bool {
    match v {
        Value::Object(m) => is_directive(m) || m.values().any(has_directive),
        Value::Array(items) => items.iter().any(has_directive),
        _ => false,
    }
}

/// `path.key`, or `key` at the top.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Compiles `v`, found at `path` in the mapping. `@liquid` anywhere is refused.
pub(crate) fn compile(v: &Value, path: &str) -> Result<Node, MappingError> {
    Ok(match v {
        _ if !has_directive(v) => Node::Const(v.clone()),
        Value::Array(items) => Node::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| compile(item, &join(path, &i.to_string())))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) if is_directive(m) => {
            let name = m
                .keys()
                .find(|k| k.starts_with('@'))
                .expect("a directive key");
            let at = join(path, name);
            if name == "@liquid" {
                return Err(MappingError {
                    path: at,
                    reason: "@liquid is not supported".into(),
                });
            }
            Node::Directive(Box::new(Directive {
                kind: directive(name, &m[name.as_str()], &at)?,
                path: at,
            }))
        }
        Value::Object(m) => Node::Object(
            js::js_entries(m)
                .map(|(k, item)| Ok((k.clone(), compile(item, &join(path, k))?)))
                .collect::<Result<_, MappingError>>()?,
        ),
        _ => Node::Const(v.clone()),
    })
}

fn opt(m: &Map<String, Value>, key: &str, path: &str) -> Result<Node, MappingError> {
    match m.get(key) {
        Some(v) => compile(v, &join(path, key)),
        None => Ok(Node::Undefined),
    }
}

fn field_truthy(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).is_some_and(truthy)
}

fn fail(message: impl Into<String>) -> Kind {
    Kind::Fail(message.into())
}

fn directive(name: &str, arg: &Value, path: &str) -> Result<Kind, MappingError> {
    Ok(match name {
        "@if" => compile_if(arg, path)?,
        "@case" => compile_case(arg, path)?,
        "@replace" => compile_replace(arg, path)?,
        "@arrayPath" => compile_array_path(arg, path)?,
        "@path" => Kind::Path(match arg {
            Value::String(p) => Arg::Fixed(text::path_arg(p)),
            other => Arg::Resolved(compile(other, path)?),
        }),
        "@template" => Kind::Template(match arg {
            Value::String(t) => Arg::Fixed(Template::new(t)),
            other => Arg::Resolved(compile(other, path)?),
        }),
        "@literal" => Kind::Literal(compile(arg, path)?),
        "@flatten" => compile_flatten(arg, path)?,
        "@json" => compile_json(arg, path)?,
        "@merge" => compile_merge(arg, path)?,
        "@transform" => compile_transform(arg, path)?,
        "@excludeWhenNull" => Kind::ExcludeWhenNull(compile(arg, path)?),
        other => fail(format!("{other} is not a valid directive, got undefined")),
    })
}

fn real_type_of_json(v: &Value) -> &'static str {
    V::Ref(v).real_type().name()
}

fn type_of_json(v: &Value) -> &'static str {
    match V::Ref(v).type_of() {
        TypeOf::Object => "object",
        TypeOf::Boolean => "boolean",
        TypeOf::Number => "number",
        TypeOf::String => "string",
        TypeOf::Function => "function",
        TypeOf::Undefined => "undefined",
    }
}

/// `resolve(mapping, payload)`.
pub(crate) fn resolve<'a>(node: &'a Node, payload: &V<'a>) -> Resolved<'a> {
    match node {
        Node::Const(v) => Ok(V::Ref(v)),
        Node::Undefined => Ok(V::Undefined),
        Node::Array(items) => items
            .iter()
            .map(|i| resolve(i, payload))
            .collect::<Result<_, _>>()
            .map(V::Arr),
        Node::Object(entries) => {
            let mut o = Obj::with_capacity(entries.len());
            for (k, child) in entries {
                let v = resolve(child, payload)?;
                // `resolved.__proto__ = v` sets a prototype, not a property.
                if k != json::PROTO {
                    o.set(Cow::Borrowed(k), v);
                }
            }
            Ok(V::Obj(o))
        }
        Node::Directive(d) => run(d, payload),
    }
}

fn run<'a>(d: &'a Directive, payload: &V<'a>) -> Resolved<'a> {
    let thrown = |t: Thrown| Fault {
        path: d.path.clone(),
        message: t.0,
    };
    let throw = |m: &str| Fault {
        path: d.path.clone(),
        message: m.to_owned(),
    };
    match &d.kind {
        Kind::Fail(m) => Err(throw(m)),
        Kind::If {
            blank,
            test,
            then,
            otherwise,
        } => {
            let v = resolve(test, payload)?;
            let hit = !v.is_nullish() && (!blank || !v.loosely_empty().map_err(thrown)?);
            match (hit, then, otherwise) {
                (true, Some(t), _) => resolve(t, payload),
                (false, _, Some(e)) => resolve(e, payload),
                _ => Ok(V::Undefined),
            }
        }
        Kind::Case { operator, value } => {
            let Some(value) = value else {
                return Ok(V::Undefined);
            };
            let v = resolve(value, payload)?;
            match (v.as_str(), operator) {
                (Some(s), CaseOp::Lower) => Ok(V::Str(Cow::Owned(string::lower(s)))),
                (Some(s), CaseOp::Upper) => Ok(V::Str(Cow::Owned(string::upper(s)))),
                (Some(_), CaseOp::Other) => Err(throw(
                    "operator key should have a value of \"lower\" or \"upper\"",
                )),
                (None, _) => Ok(v),
            }
        }
        Kind::Replace {
            value,
            first,
            second,
        } => run_replace(d, payload, value.as_ref(), first, second),
        Kind::ArrayPath { root, shape } => {
            let r = match root {
                Root::Path(p) => get(payload, p).map_err(thrown)?,
                Root::Resolved(n) => resolve(n, payload)?,
            };
            match (r.real_type(), shape) {
                (RealType::Object | RealType::Array, Some(shape)) => {
                    let items = r.items().unwrap_or_else(|| vec![r.clone()]);
                    items
                        .iter()
                        .map(|item| resolve(shape, item))
                        .collect::<Result<_, _>>()
                        .map(V::Arr)
                }
                _ => Ok(r),
            }
        }
        Kind::Path(arg) => match arg {
            Arg::Fixed(p) => get(payload, p).map_err(thrown),
            Arg::Resolved(n) => {
                let s = string_arg("@path", resolve(n, payload)?).map_err(thrown)?;
                get(payload, &text::path_arg(&s)).map_err(thrown)
            }
        },
        Kind::Template(arg) => {
            let out = match arg {
                Arg::Fixed(t) => render(t, payload),
                Arg::Resolved(n) => {
                    let s = string_arg("@template", resolve(n, payload)?).map_err(thrown)?;
                    render(&Template::new(&s), payload)
                }
            };
            out.map(|s| V::Str(Cow::Owned(s))).map_err(thrown)
        }
        Kind::Literal(n) => resolve(n, payload),
        Kind::Flatten {
            separator,
            value,
            omit_arrays,
        } => {
            let sep = resolve(separator, payload)?;
            let Some(sep) = sep.as_str().map(str::to_owned) else {
                return Err(throw("@flatten requires a string separator"));
            };
            let v = resolve(value, payload)?;
            let mut out = Obj::default();
            flatten(&v, "", &sep, *omit_arrays, &mut out);
            Ok(V::Obj(out))
        }
        Kind::Json { mode, value } => {
            let v = resolve(value, payload)?;
            Ok(match mode {
                JsonMode::Encode => {
                    json::stringify(&v).map_or(V::Undefined, |s| V::Str(Cow::Owned(s)))
                }
                JsonMode::Decode => match v.as_str().map(json::parse) {
                    Some(Some(parsed)) => parsed,
                    _ => v,
                },
                JsonMode::Other => V::Undefined,
            })
        }
        Kind::Merge { direction, objects } => run_merge(d, payload, direction, objects),
        Kind::Transform { apply, mapping } => run_transform(d, payload, apply, mapping),
        Kind::ExcludeWhenNull(n) => {
            let v = resolve(n, payload)?;
            Ok(match v {
                V::Null | V::Ref(Value::Null) => V::Undefined,
                other => clean_nulls(other),
            })
        }
    }
}

/// `@replace` on `value` resolved against `payload`.
fn run_replace<'a>(
    d: &'a Directive,
    payload: &V<'a>,
    value: Option<&'a Node>,
    first: &'a Option<Result<Replace, String>>,
    second: &'a Option<Result<Replace, String>>,
) -> Resolved<'a> {
    let thrown = |t: Thrown| Fault {
        path: d.path.clone(),
        message: t.0,
    };
    let throw = |m: &str| Fault {
        path: d.path.clone(),
        message: m.to_owned(),
    };
    let Some(value) = value else {
        return Ok(V::Undefined);
    };
    let v = resolve(value, payload)?;
    let text = match v.type_of() {
        TypeOf::Boolean | TypeOf::Number => Some(v.to_js_string().map_err(thrown)?),
        TypeOf::String => v.as_str().map(str::to_owned),
        _ => None,
    };
    let (Some(text), Some(first)) = (text, first) else {
        return Ok(V::Str(Cow::Borrowed("")));
    };
    let mut out = first.as_ref().map_err(|m| throw(m))?.apply(&text);
    if let Some(second) = second {
        out = second.as_ref().map_err(|m| throw(m))?.apply(&out);
    }
    Ok(V::Str(Cow::Owned(out)))
}

/// `@merge` of `objects` resolved against `payload`, in `direction`.
fn run_merge<'a>(
    d: &'a Directive,
    payload: &V<'a>,
    direction: &'a Node,
    objects: &'a Result<Vec<Node>, String>,
) -> Resolved<'a> {
    let throw = |m: &str| Fault {
        path: d.path.clone(),
        message: m.to_owned(),
    };
    let dir = resolve(direction, payload)?;
    let nodes = objects.as_ref().map_err(|m| throw(m))?;
    let mut sources = nodes
        .iter()
        .map(|n| resolve(n, payload))
        .collect::<Result<Vec<_>, _>>()?;
    if dir.as_str() == Some("left") {
        sources.reverse();
    }
    let mut out = Obj::default();
    for s in &sources {
        assign(&mut out, s);
    }
    Ok(V::Obj(out))
}

/// `@transform`: `apply` resolved against `payload` becomes the payload of `mapping`.
fn run_transform<'a>(
    d: &'a Directive,
    payload: &V<'a>,
    apply: &'a Result<Node, String>,
    mapping: &'a Node,
) -> Resolved<'a> {
    let throw = |m: &str| Fault {
        path: d.path.clone(),
        message: m.to_owned(),
    };
    // `transform(mapping, data = {})`: an undefined payload is an empty object.
    let empty = V::Obj(Obj::default());
    let payload = if payload.is_undefined() {
        &empty
    } else {
        payload
    };
    if payload.real_type() != RealType::Object {
        return Err(throw(&format!(
            "data must be an object, got {}",
            payload.real_type().name()
        )));
    }
    let apply = apply.as_ref().map_err(|m| throw(m))?;
    let new_payload = remove_undefined(resolve(apply, payload)?);
    resolve(mapping, &new_payload)
}

/// `registerStringDirective`'s check.
fn string_arg(name: &str, v: V<'_>) -> Result<String, Thrown> {
    match (v.type_of(), v.as_str()) {
        (TypeOf::String, Some(s)) => Ok(s.to_owned()),
        _ => Err(Thrown::new(format!(
            "{name}: expected string, got {}",
            v.real_type().name()
        ))),
    }
}

/// actions-core's `get`: each step `prev && prev[key]`.
pub(crate) fn get<'a>(payload: &V<'a>, path: &PathSpec) -> Result<V<'a>, Thrown> {
    let PathSpec::Keys(keys) = path else {
        return Ok(payload.clone());
    };
    let mut keys = keys.iter();
    let Some(first) = keys.next() else {
        return Ok(payload.clone());
    };
    if !payload.truthy() {
        return Ok(payload.clone());
    }
    let mut at = payload.get(first)?;
    for key in keys {
        if !at.truthy() {
            break;
        }
        at = at.get(key)?;
    }
    Ok(at)
}

/// `render`: the `{{{…}}}` pass, then the `{{…}}` pass over its result.
fn render(t: &Template, data: &V<'_>) -> Result<String, Thrown> {
    let once = fill(&t.first, data)?;
    match &t.second {
        Some(second) => fill(second, data),
        None => fill(&text::scan(&once, 2), data),
    }
}

fn fill(pieces: &[Piece], data: &V<'_>) -> Result<String, Thrown> {
    let mut out = String::new();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Key(path) => {
                let v = get(data, path)?;
                if !v.is_nullish() {
                    v.write_string(&mut out)?;
                }
            }
        }
    }
    Ok(out)
}

/// `flattenObject`.
fn flatten<'a>(input: &V<'a>, prefix: &str, sep: &str, omit_arrays: bool, out: &mut Obj<'a>) {
    let entries = match input.real_type() {
        RealType::Object => input.entries(),
        RealType::Array if !omit_arrays => input.items().map(|items| {
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Cow::Owned(i.to_string()), v))
                .collect()
        }),
        _ => None,
    };
    match entries {
        Some(entries) => {
            for (k, v) in entries {
                let key = if prefix.is_empty() {
                    k.into_owned()
                } else {
                    format!("{prefix}{sep}{k}")
                };
                flatten(&v, &key, sep, omit_arrays, out);
            }
        }
        None => out.set(Cow::Owned(prefix.to_owned()), input.clone()),
    }
}

/// One source of `Object.assign({}, …sources)`: its own enumerable properties.
fn assign<'a>(out: &mut Obj<'a>, source: &V<'a>) {
    if let Some(entries) = source.entries() {
        for (k, v) in entries.into_iter().filter(|(k, _)| k != json::PROTO) {
            out.set(k, v);
        }
    } else if let Some(items) = source.items() {
        for (i, v) in items.into_iter().enumerate() {
            out.set(Cow::Owned(i.to_string()), v);
        }
    } else if source.type_of() == TypeOf::String {
        let s = source.as_str().unwrap_or_default();
        if let V::Lone(u) = source {
            out.set(Cow::Borrowed("0"), V::Lone(*u));
            return;
        }
        let mut i = 0;
        for c in s.chars() {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units).iter() {
                let v = if c.len_utf16() == 1 {
                    V::Str(Cow::Owned(c.to_string()))
                } else {
                    V::Lone(*u)
                };
                out.set(Cow::Owned(i.to_string()), v);
                i += 1;
            }
        }
    }
}

/// `removeUndefined`: plain objects lose their `undefined` values, arrays keep theirs.
fn remove_undefined(v: V<'_>) -> V<'_> {
    match v {
        V::Arr(items) => V::Arr(items.into_iter().map(remove_undefined).collect()),
        V::Obj(o) => {
            let mut out = Obj::default();
            for (k, item) in o.into_entries() {
                if !item.is_undefined() && k != json::PROTO {
                    out.set(k, remove_undefined(item));
                }
            }
            V::Obj(out)
        }
        V::Proto(js::Proto::Object) => V::Obj(Obj::default()),
        V::Proto(js::Proto::Array) => V::Arr(Vec::new()),
        other => other,
    }
}

/// `cleanNulls`: in plain objects, `null` values become `undefined`, nested objects too.
fn clean_nulls(v: V<'_>) -> V<'_> {
    if v.real_type() != RealType::Object {
        return v;
    }
    let mut out = Obj::default();
    for (k, item) in v.entries().unwrap_or_default() {
        if k == json::PROTO {
            continue;
        }
        let item = if item.real_type() == RealType::Null {
            V::Undefined
        } else if item.real_type() == RealType::Object {
            clean_nulls(item)
        } else {
            item
        };
        out.set(k, item);
    }
    V::Obj(out)
}
