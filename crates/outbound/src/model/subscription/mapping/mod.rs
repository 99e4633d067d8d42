//! Segment's mapping-kit: a mapping is JSON in which objects like `{"@path": "$.userId"}` are
//! directives, resolved against each event (`transform`). `validate.rs` is mapping-kit's check
//! of a mapping's shape, `directives.rs` its `resolve` and every directive but `@liquid`,
//! `text.rs` the path, template and replace text rules.

pub(crate) mod directives;
pub(crate) mod text;
pub(crate) mod validate;

use super::js::{json, V};
use directives::Node;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// A mapping refused at configuration, or one that failed on an event: where in the mapping
/// (`data.total.@path`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingError {
    /// The JSON path in the mapping, keys joined by `.`.
    pub path: String,
    /// What is wrong there (on an event: what Segment's code would throw).
    pub reason: String,
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for MappingError {}

/// A mapping-kit value, validated and compiled once, resolved per event.
#[derive(Debug, Clone)]
pub struct Mapping {
    node: Node,
}

impl Mapping {
    /// Validates `mapping` as mapping-kit does and compiles it. Errors name the path in the
    /// mapping; `@liquid` is refused.
    pub fn new(mapping: &Value) -> Result<Mapping, MappingError> {
        Mapping::at(mapping, "")
    }

    /// As [`Mapping::new`], for a mapping found at `path` in larger settings (`data`), so errors
    /// name the whole path.
    pub(crate) fn at(mapping: &Value, path: &str) -> Result<Mapping, MappingError> {
        let parts: Vec<&str> = if path.is_empty() {
            Vec::new()
        } else {
            vec![path]
        };
        if let Some(e) = validate::validate(mapping, &parts).into_iter().next() {
            return Err(e);
        }
        Ok(Mapping {
            node: directives::compile(mapping, path)?,
        })
    }

    /// `transform(mapping, event)`: the mapped value as JSON (`None` where Segment's is
    /// `undefined`), borrowing from the event or the mapping where it can.
    pub fn apply<'a>(&'a self, event: &'a Value) -> Result<Option<Cow<'a, Value>>, MappingError> {
        if !event.is_object() {
            return Err(MappingError {
                path: String::new(),
                reason: format!(
                    "data must be an object, got {}",
                    V::Ref(event).real_type().name()
                ),
            });
        }
        self.json(event)
    }

    /// The mapped value as JSON. A mapping that is an object (the usual `data`) is written
    /// straight into the JSON object, its keys already in JavaScript's order and distinct.
    pub(crate) fn json<'a>(
        &'a self,
        event: &'a Value,
    ) -> Result<Option<Cow<'a, Value>>, MappingError> {
        let Node::Object(entries) = &self.node else {
            return Ok(json::output(&self.resolve(event)?));
        };
        let payload = V::Ref(event);
        let mut map = Map::with_capacity(entries.len());
        for (key, child) in entries {
            let v = directives::resolve(child, &payload).map_err(directives::Fault::into_error)?;
            if let Some(j) = json::output(&v) {
                map.insert(key.clone(), j.into_owned());
            }
        }
        Ok(Some(Cow::Owned(Value::Object(map))))
    }

    /// Whether the mapping is a plain object (its value is always an object).
    pub(crate) fn is_object(&self) -> bool {
        matches!(self.node, Node::Object(_))
    }

    /// Whether the mapping holds no directive: its value is the same for every event.
    pub(crate) fn is_fixed(&self) -> bool {
        matches!(self.node, Node::Const(_))
    }

    /// The value of a mapping without directives.
    pub(crate) fn resolve_fixed(&self) -> V<'_> {
        match &self.node {
            Node::Const(v) => V::Ref(v),
            _ => V::Undefined,
        }
    }

    /// The mapped value as a JavaScript value, for the request rules that look at it before
    /// it becomes JSON.
    pub(crate) fn resolve<'a>(&'a self, event: &'a Value) -> Result<V<'a>, MappingError> {
        directives::resolve(&self.node, &V::Ref(event)).map_err(directives::Fault::into_error)
    }
}

#[cfg(test)]
mod tests;
