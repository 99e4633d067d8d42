//! mapping-kit's `validate`, which Segment runs on a mapping before every `transform`: which
//! directive objects are well formed. Ours runs once, when the mapping is configured; a mapping
//! it refuses fails every event at Segment, so we refuse it up front, naming where. Like
//! Segment's it does not look inside arrays (their directives are checked when they run).

use super::super::js::string::len16;
use super::MappingError;
use serde_json::{Map, Value};

/// The directives mapping-kit knows.
pub(crate) const DIRECTIVES: &[&str] = &[
    "@if",
    "@case",
    "@replace",
    "@arrayPath",
    "@path",
    "@json",
    "@flatten",
    "@merge",
    "@template",
    "@literal",
    "@transform",
    "@excludeWhenNull",
    "@liquid",
];

/// The longest `@replace` pattern and replacement mapping-kit accepts.
pub(crate) const MAX_REPLACE_LEN: usize = 10;

/// Every problem `validate` finds in `value` at `path` (empty: none).
pub(crate) fn validate(value: &Value, path: &[&str]) -> Vec<MappingError> {
    let mut v = Validator {
        errors: Vec::new(),
        path: path.iter().map(|s| (*s).to_owned()).collect(),
    };
    v.any(value);
    v.errors
}

struct Validator {
    errors: Vec<MappingError>,
    path: Vec<String>,
}

/// `realTypeOrDirective`: an object with any `@` key counts as a directive.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Object(m) if m.keys().any(|k| k.starts_with('@')) => "directive",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

impl Validator {
    fn fail(&mut self, reason: String) {
        self.errors.push(MappingError {
            path: self.path.join("."),
            reason,
        });
    }

    fn within<R>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        self.path.push(key.to_owned());
        let r = f(self);
        self.path.pop();
        r
    }

    /// `validate`: directives and objects are checked, arrays and scalars are not.
    fn any(&mut self, v: &Value) {
        match kind(v) {
            "directive" => self.directive(v),
            "object" => self.object(v),
            _ => {}
        }
    }

    fn directive(&mut self, v: &Value) {
        let Value::Object(m) = v else { return };
        let directives: Vec<&String> = m.keys().filter(|k| k.starts_with('@')).collect();
        if directives.len() > 1 {
            return self.fail(format!(
                "should only have one @-prefixed key but it has {} keys",
                directives.len()
            ));
        }
        if m.keys().any(|k| !k.starts_with('@') && k != "_metadata") {
            return self.fail(format!(
                "should only have one @-prefixed key but it has {} keys",
                m.len()
            ));
        }
        let name = directives[0].as_str();
        if !DIRECTIVES.contains(&name) {
            return self.fail(format!("has an invalid directive: {name}"));
        }
        let arg = &m[name];
        self.within(name, |s| s.arguments(name, arg));
    }

    fn arguments(&mut self, name: &str, arg: &Value) {
        match name {
            "@if" => self.fields(
                arg,
                &[
                    ("exists", Need::Optional, Check::Raw),
                    ("then", Need::Optional, Check::Raw),
                    ("else", Need::Optional, Check::Raw),
                ],
            ),
            "@case" => self.fields(
                arg,
                &[
                    ("operator", Need::Optional, Check::Str),
                    ("value", Need::Optional, Check::DirectiveOrString),
                ],
            ),
            "@replace" => self.fields(
                arg,
                &[
                    ("pattern", Need::Required, Check::StrLen(1, MAX_REPLACE_LEN)),
                    (
                        "replacement",
                        Need::Optional,
                        Check::StrLen(0, MAX_REPLACE_LEN),
                    ),
                    ("value", Need::Required, Check::DirectiveOrString),
                    ("ignorecase", Need::Optional, Check::Bool),
                    ("global", Need::Optional, Check::Bool),
                ],
            ),
            "@arrayPath" => {
                let Value::Array(items) = arg else {
                    return self.fail(format!(
                        "should be an array but it is {} {}",
                        article(kind(arg)),
                        real_type(arg)
                    ));
                };
                match items.first() {
                    Some(first) => self.check(first, Check::DirectiveOrString),
                    None => self.fail(
                        "should be a string or a mapping directive but it is an undefined".into(),
                    ),
                }
                if let Some(shape) = items.get(1) {
                    self.any(shape);
                }
            }
            "@path" | "@template" => self.check(arg, Check::DirectiveOrString),
            "@json" => self.fields(
                arg,
                &[
                    ("value", Need::Required, Check::Raw),
                    ("mode", Need::Required, Check::OneOf(&["encode", "decode"])),
                ],
            ),
            "@flatten" => self.fields(
                arg,
                &[
                    ("separator", Need::Optional, Check::Str),
                    ("value", Need::Required, Check::Raw),
                ],
            ),
            "@merge" => {
                let before = self.errors.len();
                self.fields(
                    arg,
                    &[
                        (
                            "direction",
                            Need::Optional,
                            Check::OneOf(&["left", "right"]),
                        ),
                        ("objects", Need::Required, Check::Array),
                    ],
                );
                if self.errors.len() == before {
                    if let Some(Value::Array(objects)) = arg.get("objects") {
                        for (i, o) in objects.iter().enumerate() {
                            self.within(&format!("objects.{i}"), |s| {
                                s.check(o, Check::DirectiveOrObject)
                            });
                        }
                    }
                }
            }
            "@literal" | "@excludeWhenNull" => self.check(arg, Check::Raw),
            "@transform" => self.fields(
                arg,
                &[
                    ("apply", Need::Required, Check::DirectiveOrObject),
                    ("mapping", Need::Required, Check::DirectiveOrObject),
                ],
            ),
            "@liquid" => self.check(arg, Check::Str),
            _ => {}
        }
    }

    /// `validateObjectWithFields`: an object (each value validated), then each field.
    fn fields(&mut self, v: &Value, fields: &[(&str, Need, Check)]) {
        let before = self.errors.len();
        self.object(v);
        if self.errors.len() > before && kind(v) != "object" {
            return;
        }
        let Value::Object(m) = v else { return };
        for (name, need, check) in fields {
            match m.get(*name) {
                Some(value) => self.within(name, |s| s.check(value, *check)),
                None if *need == Need::Required => {
                    self.fail(format!("should have field \"{name}\" but it doesn't"))
                }
                None => {}
            }
        }
    }

    /// `validateObject`: a plain object whose values are each validated.
    fn object(&mut self, v: &Value) {
        let Value::Object(m) = v else {
            return self.fail(format!(
                "should be an object but it is {} {}",
                article(kind(v)),
                kind(v)
            ));
        };
        if kind(v) == "directive" {
            let key = m
                .keys()
                .find(|k| k.starts_with('@'))
                .expect("a directive key");
            return self.fail(format!(
                "shouldn't have directive (@-prefixed) keys but it has \"{key}\""
            ));
        }
        self.entries(m);
    }

    fn entries(&mut self, m: &Map<String, Value>) {
        for (k, item) in m {
            self.within(k, |s| s.any(item));
        }
    }

    fn check(&mut self, v: &Value, check: Check) {
        let k = kind(v);
        let bad = |what: &str| format!("should be {what} but it is {} {k}", article(k));
        match check {
            Check::Raw => {
                if k == "directive" {
                    self.directive(v);
                }
            }
            Check::DirectiveOrString => match k {
                "directive" => self.directive(v),
                "string" => {}
                _ => self.fail(bad("a string or a mapping directive")),
            },
            Check::DirectiveOrObject => match k {
                "directive" => self.directive(v),
                "object" => self.object(v),
                _ => self.fail(bad("a object or a mapping directive")),
            },
            Check::Str => {
                if k != "string" {
                    self.fail(bad("a string"));
                }
            }
            Check::StrLen(min, max) => {
                if k != "string" {
                    return self.fail(bad("a string"));
                }
                let n = len16(v.as_str().expect("a string"));
                if n < min {
                    self.fail(format!("should be a string of length {min} or greater"));
                } else if n > max {
                    self.fail(format!("should be a string of length {max} or less"));
                }
            }
            Check::OneOf(allowed) => {
                let Some(s) = v.as_str() else {
                    return self.fail(bad("a string"));
                };
                // Segment compares in lower case here, though the directive itself does not.
                if !allowed.contains(&super::super::js::string::lower(s).as_str()) {
                    self.fail(format!(
                        "should be one of {} but it is {}",
                        allowed.join(", "),
                        Value::String(s.to_owned())
                    ));
                }
            }
            Check::Bool => {
                if k != "boolean" {
                    self.fail(bad("a boolean"));
                }
            }
            Check::Array => {
                if !v.is_array() {
                    self.fail(format!(
                        "should be an array but it is {} {}",
                        article(real_type(v)),
                        real_type(v)
                    ));
                }
            }
        }
    }
}

fn real_type(v: &Value) -> &'static str {
    match kind(v) {
        "directive" => "object",
        k => k,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    Optional,
}

#[derive(Clone, Copy)]
enum Check {
    /// `validateDirectiveOrRaw`: any JSON value; a directive is checked.
    Raw,
    DirectiveOrString,
    DirectiveOrObject,
    Str,
    StrLen(usize, usize),
    OneOf(&'static [&'static str]),
    Bool,
    Array,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(v: Value) -> Option<(String, String)> {
        validate(&v, &["data"])
            .into_iter()
            .next()
            .map(|e| (e.path, e.reason))
    }

    #[test]
    fn plain_values_and_known_directives_pass() {
        assert_eq!(
            first(json!({"a": 1, "b": [{"@nope": 1}], "c": {"@path": "$.x"}})),
            None
        );
        assert_eq!(
            first(json!({"@template": "Hi {{name}}", "_metadata": {}})),
            None
        );
    }

    #[test]
    fn an_unknown_directive_is_named_with_its_path() {
        let (path, reason) = first(json!({"x": {"@pathh": "$.a"}})).unwrap();
        assert_eq!(path, "data.x");
        assert_eq!(reason, "has an invalid directive: @pathh");
    }

    #[test]
    fn a_directive_with_other_keys_is_refused() {
        let (path, _) = first(json!({"x": {"@path": "$.a", "y": 1}})).unwrap();
        assert_eq!(path, "data.x");
        assert!(first(json!({"@path": "$.a", "@template": "b"})).is_some());
    }

    #[test]
    fn arguments_are_checked_per_directive() {
        assert!(first(json!({"@path": 5})).is_some());
        assert!(first(json!({"@path": {"@template": "$.{{k}}"}})).is_none());
        assert!(first(json!({"@replace": {"pattern": "", "value": "x"}})).is_some());
        assert!(first(json!({"@replace": {"pattern": "abcdefghijk", "value": "x"}})).is_some());
        assert!(
            first(json!({"@replace": {"pattern": "a", "value": "x", "global": "yes"}})).is_some()
        );
        assert!(first(json!({"@json": {"value": 1, "mode": "ENCODE"}})).is_none());
        assert!(first(json!({"@json": {"value": 1, "mode": "pack"}})).is_some());
        assert!(first(json!({"@merge": {"objects": [{"a": 1}, "x"]}})).is_some());
        assert!(first(json!({"@arrayPath": []})).is_some());
        assert!(first(json!({"@transform": {"apply": {}, "mapping": 1}})).is_some());
        assert!(first(json!({"@if": {"exists": {"@bad": 1}}})).is_some());
    }

    #[test]
    fn the_path_runs_through_the_directive_and_its_field() {
        let (path, _) = first(json!({"n": {"@case": {"operator": 3}}})).unwrap();
        assert_eq!(path, "data.n.@case.operator");
    }
}
