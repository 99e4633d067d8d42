//! Each directive's argument compiled into its [`Kind`], or the failure Segment reports for it
//! (a directive whose argument needs more than a line to read).

use super::super::text::{self, Replace};
use super::super::{validate, MappingError};
use super::{
    compile, fail, field_truthy, join, opt, real_type_of_json, truthy, type_of_json, CaseOp,
    JsonMode, Kind, Node, Root,
};
use serde_json::Value;

/// `@if`'s argument, compiled (or its failure).
pub(super) fn compile_if(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail("@if requires an object with an \"exists\" key"));
    };
    if !field_truthy(m, "exists") && !field_truthy(m, "blank") {
        return Ok(fail("@if requires an \"exists\" key or a \"blank\" key"));
    }
    let blank = !m.contains_key("exists");
    Ok(Kind::If {
        blank,
        test: opt(m, if blank { "blank" } else { "exists" }, path)?,
        then: m
            .contains_key("then")
            .then(|| opt(m, "then", path))
            .transpose()?,
        otherwise: field_truthy(m, "else")
            .then(|| opt(m, "else", path))
            .transpose()?,
    })
}

/// `@case`'s argument, compiled (or its failure).
pub(super) fn compile_case(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail("@case requires an object with a \"operator\" key"));
    };
    if !field_truthy(m, "operator") {
        return Ok(fail("@case requires a \"operator\" key"));
    }
    Ok(Kind::Case {
        operator: match m.get("operator").and_then(Value::as_str) {
            Some("lower") => CaseOp::Lower,
            Some("upper") => CaseOp::Upper,
            _ => CaseOp::Other,
        },
        value: field_truthy(m, "value")
            .then(|| opt(m, "value", path))
            .transpose()?,
    })
}

/// `@replace`'s argument, compiled (or its failure).
pub(super) fn compile_replace(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail("@replace requires an object with a \"pattern\" key"));
    };
    if !field_truthy(m, "pattern") {
        return Ok(fail("@replace requires a \"pattern\" key"));
    }
    // Segment fills these defaults in (on the mapping itself) before using them.
    let or = |key: &str, default: Value| match m.get(key) {
        None | Some(Value::Null) => default,
        Some(v) => v.clone(),
    };
    let replacement = or("replacement", Value::from(""));
    let ignore_case = or("ignorecase", Value::Bool(false));
    let global = or("global", Value::Bool(true));
    let first = match (m.get("pattern"), &replacement, &ignore_case, &global) {
        (Some(Value::String(p)), Value::String(r), Value::Bool(i), Value::Bool(g)) => {
            Some(Replace::new(p, r, *g, *i))
        }
        _ => None,
    };
    let second = match (
        m.get("pattern2"),
        or("replacement2", Value::from("")),
        &first,
    ) {
        (Some(Value::String(p)), Value::String(r), Some(_)) if !p.is_empty() => Some(Replace::new(
            p,
            &r,
            global == Value::Bool(true),
            ignore_case == Value::Bool(true),
        )),
        _ => None,
    };
    Ok(Kind::Replace {
        value: field_truthy(m, "value")
            .then(|| opt(m, "value", path))
            .transpose()?,
        first,
        second,
    })
}

/// `@arrayPath`'s argument, compiled (or its failure).
pub(super) fn compile_array_path(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Value::Array(items) = arg else {
        return Ok(fail(format!(
            "@arrayPath expected array, got {}",
            real_type_of_json(arg)
        )));
    };
    let root = match items.first() {
        Some(Value::String(p)) => Root::Path(text::path_arg(p)),
        Some(other) => Root::Resolved(compile(other, &join(path, "0"))?),
        None => Root::Resolved(Node::Undefined),
    };
    let shape = match items.get(1) {
        Some(s @ Value::Object(m)) if !m.is_empty() => Some(compile(s, &join(path, "1"))?),
        _ => None,
    };
    Ok(Kind::ArrayPath { root, shape })
}

/// `@flatten`'s argument, compiled (or its failure).
pub(super) fn compile_flatten(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail("@flatten requires an object with a \"separator\" key"));
    };
    if !field_truthy(m, "separator") {
        return Ok(fail("@flatten requires a \"separator\" key"));
    }
    Ok(Kind::Flatten {
        separator: opt(m, "separator", path)?,
        value: opt(m, "value", path)?,
        omit_arrays: field_truthy(m, "omitArrays"),
    })
}

/// `@json`'s argument, compiled (or its failure).
pub(super) fn compile_json(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail("@json requires an object with a \"value\" key"));
    };
    if !field_truthy(m, "mode") {
        return Ok(fail("@json requires a \"mode\" key"));
    }
    if !field_truthy(m, "value") {
        return Ok(fail("@json requires a \"value\" key"));
    }
    Ok(Kind::Json {
        mode: match m.get("mode").and_then(Value::as_str) {
            Some("encode") => JsonMode::Encode,
            Some("decode") => JsonMode::Decode,
            _ => JsonMode::Other,
        },
        value: opt(m, "value", path)?,
    })
}

/// `@merge`'s argument, compiled (or its failure).
pub(super) fn compile_merge(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail(
            "@merge requires an object with an \"objects\" key and a \"direction\" key",
        ));
    };
    if !field_truthy(m, "direction") {
        return Ok(fail("@merge requires a \"direction\" key"));
    }
    let objects = match m.get("objects") {
        Some(Value::Array(items)) if truthy(&m["objects"]) => Ok(items
            .iter()
            .enumerate()
            .map(|(i, o)| compile(o, &join(&join(path, "objects"), &i.to_string())))
            .collect::<Result<_, _>>()?),
        Some(v) if truthy(v) => Err(format!(
            "@merge: expected opts.array, got {}",
            type_of_json(v)
        )),
        _ => Err("@merge requires a \"objects\" key".to_owned()),
    };
    Ok(Kind::Merge {
        direction: opt(m, "direction", path)?,
        objects,
    })
}

/// `@transform`'s argument, compiled (or its failure).
pub(super) fn compile_transform(arg: &Value, path: &str) -> Result<Kind, MappingError> {
    let Some(m) = arg.as_object() else {
        return Ok(fail(
            "@transform requires an object with an \"apply\" key and a \"mapping\" key",
        ));
    };
    if !field_truthy(m, "mapping") {
        return Ok(fail("@transform requires a \"mapping\" key"));
    }
    if !field_truthy(m, "apply") {
        return Ok(fail("@transform requires a \"apply\" key"));
    }
    let Some(apply) = m["apply"].as_object() else {
        return Ok(fail("@transform \"apply\" key should be an object"));
    };
    let apply = if apply.contains_key("__segment_internal_directive") {
        Err(
            "a root directive (__segment_internal_directive) in @transform is not supported"
                .to_owned(),
        )
    } else {
        // Segment validates `apply` as a mapping of its own each time it runs.
        match validate::validate(&m["apply"], &[]).into_iter().next() {
            Some(e) => Err(format!("/{} {}.", e.path.replace('.', "/"), e.reason)),
            None => Ok(compile(&m["apply"], &join(path, "apply"))?),
        }
    };
    Ok(Kind::Transform {
        apply,
        mapping: opt(m, "mapping", path)?,
    })
}
