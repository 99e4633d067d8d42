//! Whether an event matches a trigger, decided as `validate` of
//! `@segment/destination-subscriptions` decides it: `=` compares strings only, `<` and the
//! other comparisons numbers only (`Number(value)` of the query's value), `contains` and the
//! globs strings only, `exists` anything but `null` and `undefined`; paths walk JavaScript
//! values (`properties.items.length` is an array's length).
//!
//! Evaluation borrows from the event and allocates nothing.

use super::fql::{self, Cond, Field, Group, Node, Op, Path, Text, TriggerError};
use super::js::{Thrown, V};
use serde_json::Value;
use std::fmt;

/// A parsed trigger: Segment's FQL subscription query, read once, evaluated per event.
#[derive(Debug, Clone)]
pub struct Trigger {
    source: String,
    root: Group,
}

/// An event on which Segment's `validate` throws instead of answering (the trigger holds an
/// empty group, a path of separators only, or walks into a built-in function's `caller`):
/// Segment's pipeline fails the event, so it matches nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unevaluable(String);

impl fmt::Display for Unevaluable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Segment's validate throws on this event: {}", self.0)
    }
}

impl std::error::Error for Unevaluable {}

impl Trigger {
    /// Reads `query` as Segment stores it in a mapping's `subscribe` field.
    pub fn parse(query: &str) -> Result<Trigger, TriggerError> {
        Ok(Trigger {
            source: query.to_owned(),
            root: fql::parse(query)?,
        })
    }

    /// The query as it was given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether `event` matches (an event Segment's code cannot evaluate does not).
    pub fn matches(&self, event: &Value) -> bool {
        self.evaluate(event).unwrap_or(false)
    }

    /// Whether `event` matches, or that Segment's `validate` would throw on it.
    pub fn evaluate(&self, event: &Value) -> Result<bool, Unevaluable> {
        group(&self.root, &V::Ref(event)).map_err(|Thrown(m)| Unevaluable(m))
    }
}

fn group(g: &Group, data: &V<'_>) -> Result<bool, Thrown> {
    for child in &g.children {
        let hit = node(child, data)?;
        if hit == g.any {
            return Ok(hit);
        }
    }
    Ok(!g.any)
}

fn node(n: &Node, data: &V<'_>) -> Result<bool, Thrown> {
    match n {
        Node::Group(g) => group(g, data),
        Node::Cond(c) => cond(c, data),
        Node::Hole => Err(Thrown::new(
            "Cannot read properties of undefined (reading 'type')",
        )),
    }
}

fn cond(c: &Cond, data: &V<'_>) -> Result<bool, Thrown> {
    let actual = match &c.field {
        Field::Type => data.get("type")?,
        Field::Event => data.get("event")?,
        Field::Name => data.get("name")?,
        Field::UserId => data.get("userId")?,
        Field::Property(p) => path(data.get("properties")?, p)?,
        Field::Trait(p) => path(data.get("traits")?, p)?,
        Field::Context(p) => path(data.get("context")?, p)?,
    };
    Ok(compare(&actual, c.op, &c.expected))
}

/// destination-subscriptions' `get`: each step `prev && prev[key]`, so a falsy value on the
/// way (`0`, `""`, `false`, `null`) is the answer.
fn path<'a>(start: V<'a>, p: &Path) -> Result<V<'a>, Thrown> {
    match p {
        Path::Empty => Ok(V::Undefined),
        Path::NoKeys => Err(Thrown::new(
            "Cannot read properties of null (reading 'reduce')",
        )),
        Path::Keys(keys) => {
            let mut at = start;
            for key in keys {
                if !at.truthy() {
                    break;
                }
                at = at.get(key)?;
            }
            Ok(at)
        }
    }
}

fn compare(actual: &V<'_>, op: Op, expected: &fql::Expected) -> bool {
    match op {
        Op::Exists => !actual.is_nullish(),
        Op::NotExists => actual.is_nullish(),
        Op::IsTrue => actual.as_bool() == Some(true),
        Op::IsFalse => actual.as_bool() == Some(false),
        Op::NumberEq | Op::NumberNe | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let Some(a) = actual.as_num() else {
                return false;
            };
            let e = expected.number;
            match op {
                Op::NumberEq => a == e,
                Op::NumberNe => a != e,
                Op::Lt => a < e,
                Op::Le => a <= e,
                Op::Gt => a > e,
                _ => a >= e,
            }
        }
        Op::Ne => !text(actual, Op::Eq, &expected.text),
        Op::Other => false,
        _ => text(actual, op, &expected.text),
    }
}

/// A string operator: false unless `actual` is a string.
fn text(actual: &V<'_>, op: Op, expected: &Text) -> bool {
    if let (V::Str(_) | V::Ref(Value::String(_)), Text::Str(e)) = (actual, expected) {
        let a = actual.as_str().expect("a string");
        return match op {
            Op::Eq => a == e,
            Op::Contains => a.contains(e.as_str()),
            Op::NotContains => !a.contains(e.as_str()),
            Op::StartsWith => a.starts_with(e.as_str()),
            Op::NotStartsWith => !a.starts_with(e.as_str()),
            Op::EndsWith => a.ends_with(e.as_str()),
            _ => !a.ends_with(e.as_str()),
        };
    }
    let Some(a) = actual_text(actual) else {
        return false;
    };
    let e = Units::of(expected);
    match op {
        Op::Eq => a.eq(&e),
        Op::Contains => a.contains(&e),
        Op::NotContains => !a.contains(&e),
        Op::StartsWith => a.starts_with(&e),
        Op::NotStartsWith => !a.starts_with(&e),
        Op::EndsWith => a.ends_with(&e),
        _ => !a.ends_with(&e),
    }
}

/// A JavaScript string for comparison: UTF-8 text, or UTF-16 units when half a surrogate pair
/// is involved (rare, so only then converted).
enum Units<'t> {
    Str(&'t str),
    Wide(Vec<u16>),
}

fn actual_text<'t>(v: &'t V<'_>) -> Option<Units<'t>> {
    match v {
        V::Lone(u) => Some(Units::Wide(vec![*u])),
        _ => v.as_str().map(Units::Str),
    }
}

impl<'t> Units<'t> {
    fn of(t: &'t Text) -> Units<'t> {
        match t {
            Text::Str(s) => Units::Str(s),
            Text::Units(u) => Units::Wide(u.clone()),
        }
    }

    fn wide(&self) -> Vec<u16> {
        match self {
            Units::Str(s) => s.encode_utf16().collect(),
            Units::Wide(u) => u.clone(),
        }
    }

    fn eq(&self, other: &Units<'_>) -> bool {
        match (self, other) {
            (Units::Str(a), Units::Str(b)) => a == b,
            _ => self.wide() == other.wide(),
        }
    }

    fn contains(&self, other: &Units<'_>) -> bool {
        match (self, other) {
            (Units::Str(a), Units::Str(b)) => a.contains(b),
            _ => {
                let (a, b) = (self.wide(), other.wide());
                b.is_empty() || a.windows(b.len()).any(|w| w == b.as_slice())
            }
        }
    }

    fn starts_with(&self, other: &Units<'_>) -> bool {
        match (self, other) {
            (Units::Str(a), Units::Str(b)) => a.starts_with(b),
            _ => self.wide().starts_with(&other.wide()),
        }
    }

    fn ends_with(&self, other: &Units<'_>) -> bool {
        match (self, other) {
            (Units::Str(a), Units::Str(b)) => a.ends_with(b),
            _ => self.wide().ends_with(&other.wide()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(query: &str, event: Value) -> bool {
        Trigger::parse(query).unwrap().matches(&event)
    }

    fn track() -> Value {
        json!({
            "type": "track",
            "event": "Order Completed",
            "userId": "u1",
            "properties": {"total": 25, "price": "9.5", "coupon": null, "paid": true,
                           "name": "Größe", "items": [{"sku": "a"}], "zero": 0},
            "context": {"app": {"name": "Shop"}},
            "traits": {"plan": "pro"}
        })
    }

    #[test]
    fn equals_matches_strings_exactly_and_case_sensitively() {
        assert!(m(r#"type = "track""#, track()));
        assert!(!m(r#"type = "Track""#, track()));
        assert!(m(r#"event = "Order Completed""#, track()));
    }

    #[test]
    fn equals_never_matches_a_number_property() {
        assert!(!m(r#"properties.total = "25""#, track()));
        assert!(m("properties.total = 25", track()));
    }

    #[test]
    fn not_equals_matches_anything_but_that_string() {
        assert!(m(r#"event != "Signed Up""#, track()));
        assert!(!m(r#"event != "Order Completed""#, track()));
        assert!(m(r#"properties.missing != "x""#, track()));
        assert!(m(r#"properties.total != "25""#, track()));
    }

    #[test]
    fn number_equals_needs_a_number_property() {
        assert!(!m("properties.price = 9.5", track()));
        assert!(m("properties.total != 3", track()));
        assert!(!m("properties.price != 3", track()));
    }

    #[test]
    fn comparisons_need_a_number_and_read_the_value_as_a_number() {
        assert!(m("properties.total > 20", track()));
        assert!(m("properties.total >= 25", track()));
        assert!(m("properties.total < 30", track()));
        assert!(m("properties.total <= 25", track()));
        assert!(!m("properties.price < 30", track()));
        assert!(m(r#"properties.total < "30""#, track()));
        assert!(!m(r#"properties.total < "abc""#, track()));
    }

    #[test]
    fn contains_and_globs_test_strings_only() {
        assert!(m(r#"contains(event, "Order")"#, track()));
        assert!(!m(r#"contains(properties.total, "2")"#, track()));
        assert!(m(r#"!contains(event, "Refund")"#, track()));
        assert!(!m(r#"!contains(properties.missing, "x")"#, track()));
        assert!(m(r#"match(event, "Order*")"#, track()));
        assert!(m(r#"match(event, "*Completed")"#, track()));
        assert!(m(r#"!match(event, "Refund*")"#, track()));
        assert!(m(r#"!match(event, "*Refunded")"#, track()));
    }

    #[test]
    fn exists_is_anything_but_null_and_undefined() {
        assert!(m("properties.total != null", track()));
        assert!(!m("properties.coupon != null", track()));
        assert!(m("properties.coupon = null", track()));
        assert!(m("properties.missing = null", track()));
        assert!(m("userId != null", track()));
        assert!(m("name = null", track()));
    }

    #[test]
    fn true_and_false_need_booleans() {
        assert!(m("properties.paid = true", track()));
        assert!(!m("properties.paid = false", track()));
        assert!(!m("properties.price = true", track()));
    }

    #[test]
    fn paths_read_nested_values_lengths_and_indices() {
        assert!(m(r#"context.app.name = "Shop""#, track()));
        assert!(m("properties.items.length = 1", track()));
        // A digit after a dot starts a number token: Segment's lexer needs `\0` for an index.
        assert!(m(r#"properties.items.\0.sku = "a""#, track()));
        assert!(m(r#"properties.name.\0 = "G""#, track()));
        assert!(!m(r#"properties.name.0 = "G""#, track()));
        assert!(m(r#"traits.plan = "pro""#, track()));
    }

    #[test]
    fn a_falsy_value_on_a_path_is_the_answer() {
        // `properties.zero.x` is `0 && 0.x`: 0.
        assert!(m("properties.zero.x = 0", track()));
    }

    #[test]
    fn and_needs_every_condition_and_or_any() {
        assert!(m(
            r#"type = "track" and event = "Order Completed""#,
            track()
        ));
        assert!(!m(r#"type = "track" and event = "x""#, track()));
        assert!(m(r#"type = "x" or event = "Order Completed""#, track()));
        assert!(m(
            r#"(event = "x" or event = "Order Completed") and type = "track""#,
            track()
        ));
    }

    #[test]
    fn an_empty_group_throws_only_when_reached() {
        let t = Trigger::parse(r#"type = "page" and ()"#).unwrap();
        assert_eq!(t.evaluate(&track()), Ok(false));
        let t = Trigger::parse(r#"type = "track" and ()"#).unwrap();
        assert!(t.evaluate(&track()).is_err());
        assert!(!t.matches(&track()));
    }

    #[test]
    fn a_glob_cut_inside_an_emoji_compares_utf16_units() {
        // `match(event, "😀x")` keeps the low surrogate of 😀 and "x": an ends-with test.
        assert!(m(r#"match(event, "😀x")"#, json!({"event": "a😀x"})));
        assert!(!m(r#"match(event, "😀x")"#, json!({"event": "ax"})));
    }
}
