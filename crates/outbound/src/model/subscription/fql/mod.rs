//! Segment's subscription queries (FQL) as `parseFql` of `@segment/destination-subscriptions`
//! reads them, on the lexer of `@segment/fql-ts`: the same queries are accepted and refused,
//! and an accepted one means the same conditions. Both are ported step by step, quirks
//! included (a field Segment does not know is skipped, the last `and`/`or` of a level joins
//! all of it, `!(…)` is the group itself), because a customer's trigger must select exactly the
//! events it selected at Segment. Refusals say where (byte offset and token) and what was
//! expected instead.

mod lex;

use super::js::number;
use lex::{normalize, refuse, Kind, Lexer, Refusal, Tok};
use std::collections::VecDeque;
use std::fmt;

/// A trigger Segment's `parseFql` refuses: where, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerError {
    /// Byte offset in the query where the problem is.
    pub offset: usize,
    /// The text found there (empty at the end of the query).
    pub token: String,
    /// What the query needed at that place.
    pub expected: String,
}

impl fmt::Display for TriggerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.token.is_empty() {
            write!(
                f,
                "at byte {} (end of query): expected {}",
                self.offset, self.expected
            )
        } else {
            write!(
                f,
                "at byte {} (`{}`): expected {}",
                self.offset, self.token, self.expected
            )
        }
    }
}

impl std::error::Error for TriggerError {}

/// A level of conditions joined by one operator.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    /// `or` (any child) rather than `and` (every child).
    pub(crate) any: bool,
    pub(crate) children: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Group(Group),
    Cond(Cond),
    /// What an empty group `()` leaves in Segment's tree: `undefined`, on which its `validate`
    /// throws when it gets there.
    Hole,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cond {
    pub(crate) field: Field,
    pub(crate) op: Op,
    pub(crate) expected: Expected,
}

/// What a condition reads from the event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field {
    Type,
    Event,
    Name,
    UserId,
    Property(Path),
    Trait(Path),
    Context(Path),
}

/// A path under `properties`, `traits` or `context`, split as destination-subscriptions'
/// `get` splits it (on `.`, `[` and `]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Path {
    /// An empty name: always `undefined`.
    Empty,
    Keys(Vec<String>),
    /// A name of separators only: Segment's `get` throws on it.
    NoKeys,
}

impl Path {
    fn new(name: &str) -> Path {
        if name.is_empty() {
            return Path::Empty;
        }
        let keys: Vec<String> = name
            .split(['[', '.', ']'])
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        if keys.is_empty() {
            Path::NoKeys
        } else {
            Path::Keys(keys)
        }
    }
}

/// The operators of Segment's `validate` (`Other`: a token it has no case for, always false).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    NumberEq,
    NumberNe,
    Contains,
    NotContains,
    StartsWith,
    NotStartsWith,
    EndsWith,
    NotEndsWith,
    Exists,
    NotExists,
    IsTrue,
    IsFalse,
    Other,
}

impl Op {
    fn from_token(v: &str) -> Op {
        match v {
            "=" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "number_equals" => Op::NumberEq,
            "number_not_equals" => Op::NumberNe,
            "contains" => Op::Contains,
            "not_contains" => Op::NotContains,
            "starts_with" => Op::StartsWith,
            "not_starts_with" => Op::NotStartsWith,
            "ends_with" => Op::EndsWith,
            "not_ends_with" => Op::NotEndsWith,
            "exists" => Op::Exists,
            "not_exists" => Op::NotExists,
            "is_true" => Op::IsTrue,
            "is_false" => Op::IsFalse,
            _ => Op::Other,
        }
    }
}

/// A condition's value, as the two things `validate` makes of it: `String(value)` and
/// `Number(value)`, computed once here.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expected {
    pub(crate) text: Text,
    pub(crate) number: f64,
}

/// A JavaScript string: UTF-8 unless `slice` cut a character outside the BMP in half.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Text {
    Str(String),
    Units(Vec<u16>),
}

impl Text {
    fn units(&self) -> Vec<u16> {
        match self {
            Text::Str(s) => s.encode_utf16().collect(),
            Text::Units(u) => u.clone(),
        }
    }

    /// `.slice(from, len - cut_end)` in UTF-16 units.
    fn slice(&self, from: usize, cut_end: usize) -> Text {
        let units = self.units();
        let end = units
            .len()
            .saturating_sub(cut_end)
            .max(from.min(units.len()));
        let part = &units[from.min(units.len())..end];
        match String::from_utf16(part) {
            Ok(s) => Text::Str(s),
            Err(_) => Text::Units(part.to_vec()),
        }
    }
}

/// What `getTokenValue` makes of a token.
enum TokenValue {
    Str(Text),
    Num(f64),
    Bool(bool),
}

impl TokenValue {
    fn of(t: &Tok) -> TokenValue {
        match t.kind {
            Kind::Str => {
                let v = t.value.strip_prefix('"').unwrap_or(&t.value);
                let v = v.strip_suffix('"').unwrap_or(v);
                TokenValue::Str(Text::Str(v.to_owned()))
            }
            Kind::Number => TokenValue::Num(number::parse(&t.value)),
            Kind::Ident if t.value == "true" => TokenValue::Bool(true),
            Kind::Ident if t.value == "false" => TokenValue::Bool(false),
            _ => TokenValue::Str(Text::Str(t.value.clone())),
        }
    }

    /// `String(value)`.
    fn text(&self) -> Text {
        match self {
            TokenValue::Str(t) => t.clone(),
            TokenValue::Num(n) => Text::Str(number::to_string(*n)),
            TokenValue::Bool(b) => Text::Str(b.to_string()),
        }
    }

    /// The condition's value kept as it is (string, number or boolean).
    fn expected(self) -> Expected {
        let text = self.text();
        let number = match &self {
            TokenValue::Str(Text::Str(s)) => number::parse(s),
            TokenValue::Str(Text::Units(_)) => f64::NAN,
            TokenValue::Num(n) => *n,
            TokenValue::Bool(b) => f64::from(u8::from(*b)),
        };
        Expected { text, number }
    }

    /// The condition's value made a string first (`String(getTokenValue(t))`).
    fn expected_text(self) -> Expected {
        TokenValue::Str(self.text()).expected()
    }
}

fn no_value() -> Expected {
    Expected {
        text: Text::Str("undefined".to_owned()),
        number: f64::NAN,
    }
}

/// Parses `query` as Segment's `parseFql` does.
pub(crate) fn parse(query: &str) -> Result<Group, TriggerError> {
    let units: Vec<u16> = query.encode_utf16().collect();
    let err = |at: usize, token: &str, expected: &str| TriggerError {
        offset: byte_offset(query, at),
        token: token.to_owned(),
        expected: expected.to_owned(),
    };
    let tokens = Lexer {
        units: &units,
        pos: 0,
    }
    .lex()
    .map_err(|e| err(e.at, &e.token, &e.expected))?;
    let first = tokens.first().cloned();
    let mut tokens: VecDeque<Tok> = normalize(tokens).into();
    match parse_level(&mut tokens, 0).map_err(|e| err(e.at, &e.token, &e.expected))? {
        Some(Node::Group(g)) => Ok(g),
        Some(node) => Ok(Group {
            any: false,
            children: vec![node],
        }),
        None => {
            let (at, token) = first
                .filter(|t| t.kind != Kind::Eos)
                .map_or((units.len(), String::new()), |t| (t.at, t.value));
            Err(err(
                at,
                &token,
                "a condition Segment reads, such as `type = \"track\"` or `event = \"Order Completed\"`",
            ))
        }
    }
}

fn byte_offset(query: &str, unit: usize) -> usize {
    let mut at = 0;
    for (byte, c) in query.char_indices() {
        if at >= unit {
            return byte;
        }
        at += c.len_utf16();
    }
    query.len()
}

/// The identifiers `parse` treats as the start of a condition: Segment's seven, and the names
/// a JavaScript object inherits (its lookup table is a plain object), which take an operator
/// and a value and make nothing of them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    Type,
    Event,
    Name,
    UserId,
    Context,
    Properties,
    Traits,
    Inherited,
}

fn start_of(ident: &str) -> Option<Start> {
    let first = ident.split('.').next().unwrap_or("");
    Some(match first {
        "type" => Start::Type,
        "event" => Start::Event,
        "name" => Start::Name,
        "userId" => Start::UserId,
        "context" => Start::Context,
        "properties" => Start::Properties,
        "traits" => Start::Traits,
        "constructor"
        | "__defineGetter__"
        | "__defineSetter__"
        | "hasOwnProperty"
        | "__lookupGetter__"
        | "__lookupSetter__"
        | "isPrototypeOf"
        | "propertyIsEnumerable"
        | "toString"
        | "valueOf"
        | "__proto__"
        | "toLocaleString" => Start::Inherited,
        _ => return None,
    })
}

fn is_function(t: Option<&Tok>) -> bool {
    t.is_some_and(|t| t.kind == Kind::Ident && (t.value == "contains" || t.value == "match"))
}

/// `value.replace(/^(prefix)\./, '')`.
fn name_under(value: &str, prefix: &str) -> String {
    value
        .strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('.'))
        .unwrap_or(value)
        .to_owned()
}

fn condition(start: Start, ident: &str, op: &Tok, value: &Tok) -> Option<Cond> {
    let is_true = op.value == "=" && value.value == "true";
    let is_false = op.value == "=" && value.value == "false";
    let exists = op.value == "!=" && value.value == "null";
    let not_exists = op.value == "=" && value.value == "null";
    let number_eq = op.value == "=" && value.kind == Kind::Number;
    let number_ne = op.value == "!=" && value.kind == Kind::Number;
    let plain = |v: &Tok| Op::from_token(&v.value);
    let cond = |field, op, expected| {
        Some(Cond {
            field,
            op,
            expected,
        })
    };
    match start {
        Start::Event | Start::Type => {
            let field = if start == Start::Event {
                Field::Event
            } else {
                Field::Type
            };
            cond(field, plain(op), TokenValue::of(value).expected_text())
        }
        Start::Name | Start::UserId => {
            let field = if start == Start::Name {
                Field::Name
            } else {
                Field::UserId
            };
            let booleans = start == Start::UserId;
            if exists {
                cond(field, Op::Exists, no_value())
            } else if not_exists {
                cond(field, Op::NotExists, no_value())
            } else if booleans && is_true {
                cond(field, Op::IsTrue, no_value())
            } else if booleans && is_false {
                cond(field, Op::IsFalse, no_value())
            } else {
                cond(field, plain(op), TokenValue::of(value).expected_text())
            }
        }
        Start::Properties | Start::Traits | Start::Context => {
            let (prefix, make): (&str, fn(Path) -> Field) = match start {
                Start::Properties => ("properties", Field::Property),
                Start::Traits => ("traits", Field::Trait),
                _ => ("context", Field::Context),
            };
            let field = make(Path::new(&name_under(ident, prefix)));
            let (op, expected) = if exists {
                (Op::Exists, no_value())
            } else if not_exists {
                (Op::NotExists, no_value())
            } else if is_true {
                (Op::IsTrue, no_value())
            } else if is_false {
                (Op::IsFalse, no_value())
            } else if number_eq {
                (Op::NumberEq, TokenValue::of(value).expected())
            } else if number_ne {
                (Op::NumberNe, TokenValue::of(value).expected())
            } else {
                (plain(op), TokenValue::of(value).expected())
            };
            cond(field, op, expected)
        }
        Start::Inherited => None,
    }
}

/// `contains(field, value)` and `match(field, "glob")`, negated after `!`.
fn function(
    name: &Tok,
    nodes: &mut Vec<Node>,
    tokens: &mut VecDeque<Tok>,
    negate: bool,
) -> Result<(), Refusal> {
    let usage = format!(
        "`{}(field, \"value\")`",
        if name.value == "contains" {
            "contains"
        } else {
            "match"
        }
    );
    tokens.pop_front();
    let field = tokens.pop_front().ok_or_else(|| {
        refuse(
            name.at,
            name.value.clone(),
            format!("{usage}: its field is missing"),
        )
    })?;
    tokens.pop_front();
    let value = tokens.pop_front().ok_or_else(|| {
        refuse(
            name.at,
            name.value.clone(),
            format!("{usage}: its value is missing"),
        )
    })?;
    tokens.pop_front();
    let (op, text) = if name.value == "contains" {
        (
            if negate {
                Op::NotContains
            } else {
                Op::Contains
            },
            TokenValue::of(&value).text(),
        )
    } else if value.value.ends_with("*\"") {
        (
            if negate {
                Op::NotStartsWith
            } else {
                Op::StartsWith
            },
            TokenValue::of(&value).text().slice(0, 1),
        )
    } else {
        (
            if negate {
                Op::NotEndsWith
            } else {
                Op::EndsWith
            },
            TokenValue::of(&value).text().slice(1, 0),
        )
    };
    let expected = TokenValue::Str(text).expected();
    let field = match field.value.as_str() {
        "event" => Some(Field::Event),
        "name" => Some(Field::Name),
        "userId" => Some(Field::UserId),
        v if v.starts_with("properties") => {
            Some(Field::Property(Path::new(&name_under(v, "properties"))))
        }
        v if v.starts_with("traits") => Some(Field::Trait(Path::new(&name_under(v, "traits")))),
        v if v.starts_with("context") => Some(Field::Context(Path::new(&name_under(v, "context")))),
        _ => None,
    };
    if let Some(field) = field {
        nodes.push(Node::Cond(Cond {
            field,
            op,
            expected,
        }));
    }
    Ok(())
}

/// `parse` of parse-fql: one level of the query; `None` where Segment's gives `undefined`.
fn parse_level(tokens: &mut VecDeque<Tok>, depth: usize) -> Result<Option<Node>, Refusal> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut any = false;
    while let Some(token) = tokens.pop_front() {
        if token.kind == Kind::Eos {
            break;
        }
        if token.kind == Kind::Ident {
            if let Some(start) = start_of(&token.value) {
                let op = tokens.pop_front().ok_or_else(|| {
                    refuse(
                        token.at,
                        token.value.clone(),
                        format!("an operator and a value after `{}`", token.value),
                    )
                })?;
                let value = tokens.pop_front().ok_or_else(|| {
                    let expected = if op.kind == Kind::Eos {
                        format!("an operator and a value after `{}`", token.value)
                    } else {
                        format!("a value after `{} {}`", token.value, op.value)
                    };
                    refuse(token.at, token.value.clone(), expected)
                })?;
                if let Some(c) = condition(start, &token.value, &op, &value) {
                    nodes.push(Node::Cond(c));
                }
            }
            if is_function(Some(&token)) {
                function(&token, &mut nodes, tokens, false)?;
            }
        }
        if token.kind == Kind::Operator && token.value == "!" {
            if tokens.is_empty() {
                return Err(refuse(token.at, "!", "`contains(` or `match(` after `!`"));
            }
            if is_function(tokens.front()) {
                let name = tokens.pop_front().expect("checked");
                function(&name, &mut nodes, tokens, true)?;
            }
        }
        if token.kind == Kind::ParenLeft {
            let mut group: VecDeque<Tok> = VecDeque::new();
            loop {
                match tokens.pop_front() {
                    Some(t) if t.kind == Kind::ParenRight => break,
                    Some(t) => group.push_back(t),
                    None if depth > 0 => {
                        return Err(refuse(
                            token.at,
                            "(",
                            "`)` before another `(`: Segment's triggers nest groups one level deep",
                        ))
                    }
                    None => {
                        return Err(refuse(
                            token.at,
                            "(",
                            "a `)` to close the group that starts here",
                        ))
                    }
                }
            }
            group.push_back(Tok {
                kind: Kind::Eos,
                value: "eos".to_owned(),
                at: token.at,
            });
            nodes.push(parse_level(&mut group, depth + 1)?.unwrap_or(Node::Hole));
        }
        if token.kind == Kind::Conditional {
            any = token.value == "or";
        }
    }
    Ok(match nodes.len() {
        0 => None,
        1 => match nodes.pop().expect("one") {
            Node::Hole => None,
            node => Some(node),
        },
        _ => Some(Node::Group(Group {
            any,
            children: nodes,
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(q: &str) -> Cond {
        let g = parse(q).unwrap();
        assert_eq!(g.children.len(), 1, "{q}");
        match &g.children[0] {
            Node::Cond(c) => c.clone(),
            other => panic!("{q}: {other:?}"),
        }
    }

    fn text(s: &str) -> Text {
        Text::Str(s.to_owned())
    }

    #[test]
    fn type_and_event_compare_as_strings() {
        let c = cond(r#"type = "track""#);
        assert_eq!(
            (c.field, c.op, c.expected.text),
            (Field::Type, Op::Eq, text("track"))
        );
        let c = cond(r#"event != "Order Completed""#);
        assert_eq!(
            (c.field, c.op, c.expected.text),
            (Field::Event, Op::Ne, text("Order Completed"))
        );
        let c = cond("event = 1.50");
        assert_eq!(c.expected.text, text("1.5"));
    }

    #[test]
    fn property_paths_split_on_dots_and_brackets() {
        let c = cond(r#"properties.a.b = "x""#);
        assert_eq!(
            c.field,
            Field::Property(Path::Keys(vec!["a".into(), "b".into()]))
        );
        let c = cond(r#"context.app.name = "x""#);
        assert_eq!(
            c.field,
            Field::Context(Path::Keys(vec!["app".into(), "name".into()]))
        );
        let c = cond(r#"traits.email != null"#);
        assert_eq!(
            (c.field, c.op),
            (Field::Trait(Path::Keys(vec!["email".into()])), Op::Exists)
        );
    }

    #[test]
    fn numbers_compare_as_numbers_on_properties() {
        assert_eq!(cond("properties.total = 5").op, Op::NumberEq);
        assert_eq!(cond("properties.total != 5").op, Op::NumberNe);
        let c = cond("properties.total >= -2.5");
        assert_eq!((c.op, c.expected.number), (Op::Ge, -2.5));
        assert_eq!(cond(r#"properties.total = "5""#).op, Op::Eq);
    }

    #[test]
    fn null_true_and_false_become_their_operators() {
        assert_eq!(cond("properties.x = null").op, Op::NotExists);
        assert_eq!(cond("properties.x != null").op, Op::Exists);
        assert_eq!(cond("properties.x = true").op, Op::IsTrue);
        assert_eq!(cond("properties.x = false").op, Op::IsFalse);
        assert_eq!(cond("userId = true").op, Op::IsTrue);
        // `name` has no boolean form: it compares with the text "true".
        assert_eq!(cond("name = true").op, Op::Eq);
    }

    #[test]
    fn contains_and_match_read_as_segment_generates_them() {
        assert_eq!(cond(r#"contains(event, "Order")"#).op, Op::Contains);
        assert_eq!(cond(r#"!contains(properties.x, "a")"#).op, Op::NotContains);
        let c = cond(r#"match(event, "Order*")"#);
        assert_eq!((c.op, c.expected.text), (Op::StartsWith, text("Order")));
        let c = cond(r#"!match(event, "*Done")"#);
        assert_eq!((c.op, c.expected.text), (Op::NotEndsWith, text("Done")));
        // Without a `*`, Segment drops the first character and tests the end.
        assert_eq!(cond(r#"match(event, "abc")"#).expected.text, text("bc"));
    }

    #[test]
    fn the_last_conditional_of_a_level_joins_all_of_it() {
        let g = parse(r#"type = "a" and type = "b" or type = "c""#).unwrap();
        assert!(g.any);
        assert_eq!(g.children.len(), 3);
    }

    #[test]
    fn one_level_of_groups_is_read() {
        let g = parse(r#"(event = "a" or event = "b") and type = "track""#).unwrap();
        assert!(!g.any);
        assert!(
            matches!(&g.children[0], Node::Group(inner) if inner.any && inner.children.len() == 2)
        );
    }

    #[test]
    fn nested_groups_are_refused_at_the_inner_parenthesis() {
        let e = parse(r#"((event = "a") or type = "b")"#).unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (1, "("));
    }

    #[test]
    fn an_unclosed_group_is_refused_where_it_opens() {
        let e = parse(r#"type = "a" and (event = "b""#).unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (15, "("));
    }

    #[test]
    fn unknown_fields_are_skipped_as_segment_skips_them() {
        let g = parse(r#"foo = "bar" and type = "track""#).unwrap();
        assert_eq!(g.children.len(), 1);
        assert!(parse(r#"foo = "bar""#).is_err());
    }

    #[test]
    fn a_query_without_a_condition_is_refused() {
        let e = parse("").unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (0, ""));
        assert!(parse("   ").is_err());
        assert!(parse("and").is_err());
    }

    #[test]
    fn an_unterminated_string_is_refused_where_it_starts() {
        let e = parse(r#"event = "abc"#).unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (8, "\""));
    }

    #[test]
    fn bang_equals_needs_white_space_after_it() {
        let e = parse(r#"event !="a""#).unwrap_err();
        assert_eq!(e.offset, 6);
        assert!(parse(r#"event != "a""#).is_ok());
    }

    #[test]
    fn comparisons_need_white_space_before_them() {
        let e = parse("properties.x>5").unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (12, ">"));
    }

    #[test]
    fn characters_outside_the_grammar_are_refused_with_their_byte_offset() {
        let e = parse("event = é").unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (8, "é"));
        let e = parse("type = \"é\" \r").unwrap_err();
        assert_eq!(e.offset, 12);
    }

    #[test]
    fn an_empty_group_leaves_a_hole_as_in_segments_tree() {
        let g = parse(r#"type = "a" and ()"#).unwrap();
        assert_eq!(g.children[1], Node::Hole);
        assert!(parse("()").is_err());
    }

    #[test]
    fn a_field_at_the_end_without_a_value_is_refused() {
        let e = parse("type").unwrap_err();
        assert_eq!((e.offset, e.token.as_str()), (0, "type"));
        // `type =` takes the end of the query as its value, as Segment's parser does.
        assert_eq!(cond("type =").expected.text, text("eos"));
    }

    #[test]
    fn single_quoted_strings_keep_their_quotes() {
        assert_eq!(cond("event = 'a'").expected.text, text("'a'"));
    }

    #[test]
    fn escaped_identifier_characters_are_taken_literally() {
        let c = cond(r#"properties.a\ b = "x""#);
        assert_eq!(c.field, Field::Property(Path::Keys(vec!["a b".into()])));
    }

    #[test]
    fn inherited_names_swallow_an_operator_and_a_value() {
        // `toString` takes `and` and `type` as its operator and value: nothing is left.
        assert!(parse(r#"toString and type = "track""#).is_err());
        assert_eq!(
            parse(r#"foo and type = "track""#).unwrap().children.len(),
            1
        );
    }
}
