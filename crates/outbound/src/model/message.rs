//! The message model: what a caller records. One flat struct for all seven calls, so
//! bindings can fill it field by field; [`crate::model::validate`] decides which fields each call
//! needs and allows.

use crate::error::Error;
use crate::model::collected::Collected;
use serde_json::{Map, Value};
use time::OffsetDateTime;

/// A JSON object: properties, traits, context, integrations.
pub type Object = Map<String, Value>;

/// The seven calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Who the user is (`traits`).
    Identify,
    /// Something the user did (`event`, `properties`).
    Track,
    /// A web page view (`name`, `category`, `properties`).
    Page,
    /// A mobile screen view (`name`, `category`, `properties`).
    Screen,
    /// The user's membership of a group (`group_id`, `traits`).
    Group,
    /// Two identities are one (`previous_id` → `user_id`).
    Alias,
    /// A deletion request for `user_id` (webhooks only).
    Delete,
}

impl Kind {
    /// All kinds, in a stable order.
    pub const ALL: [Kind; 7] = [
        Kind::Identify,
        Kind::Track,
        Kind::Page,
        Kind::Screen,
        Kind::Group,
        Kind::Alias,
        Kind::Delete,
    ];

    /// The wire name (`"track"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Identify => "identify",
            Kind::Track => "track",
            Kind::Page => "page",
            Kind::Screen => "screen",
            Kind::Group => "group",
            Kind::Alias => "alias",
            Kind::Delete => "delete",
        }
    }

    /// The kind for a wire name.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// One call's data. Build it with a constructor ([`Message::track`], ...) and the setters,
/// or fill the fields directly; the client validates it when it is enqueued.
///
/// `O` is the type of the free-form objects (`properties`, `traits`, `context`): a JSON
/// [`Object`] by default; a binding may use its own objects, written by the encoders
/// through [`WriteJson`](crate::wire::canonical_json::WriteJson) without an intermediate value
/// (see [`Client::enqueue_with`](crate::Client::enqueue_with)).
#[derive(Clone, Debug, PartialEq)]
pub struct Message<O = Object> {
    /// Which call.
    pub kind: Kind,
    /// The user's id in your system.
    pub user_id: Option<String>,
    /// An id for a user not known yet (one of the two ids is required, except for alias and delete).
    pub anonymous_id: Option<String>,
    /// Kept when given; a fresh UUIDv4 otherwise.
    pub message_id: Option<String>,
    /// When it happened; the time of the call otherwise. Sent in UTC with milliseconds.
    pub timestamp: Option<OffsetDateTime>,
    /// Extra facts about the call (device, ip, ...). `context.library` is always ours.
    pub context: Option<O>,
    /// Destination name → `true`/`false` (or an object of options); `"All": false` disables all
    /// not named `true`.
    pub integrations: Option<Object>,
    /// Track: the event's name.
    pub event: Option<String>,
    /// Page and screen: the name.
    pub name: Option<String>,
    /// Page and screen: the category.
    pub category: Option<String>,
    /// Group: the group's id.
    pub group_id: Option<String>,
    /// Alias: the previous id.
    pub previous_id: Option<String>,
    /// Track, page, screen: free-form properties.
    pub properties: Option<O>,
    /// Identify, group: free-form traits.
    pub traits: Option<O>,
    /// Set by [`Message::collect`] (a collector's message): Segment's server-side fields and
    /// the message's other fields, kept as they came. `None` for a library's own calls.
    pub collected: Option<Box<Collected>>,
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(mut self, value: impl Into<$ty>) -> Self {
            self.$name = Some(value.into());
            self
        }
    )*};
}

impl<O> Message<O> {
    /// An empty message of `kind`, whatever its objects' type.
    pub(crate) fn empty(kind: Kind) -> Self {
        Message {
            kind,
            user_id: None,
            anonymous_id: None,
            message_id: None,
            timestamp: None,
            context: None,
            integrations: None,
            event: None,
            name: None,
            category: None,
            group_id: None,
            previous_id: None,
            properties: None,
            traits: None,
            collected: None,
        }
    }

    /// The same message with its objects (`properties`, `traits`, `context`) converted.
    pub(crate) fn map_objects<P>(self, f: impl Fn(O) -> P) -> Message<P> {
        Message {
            kind: self.kind,
            user_id: self.user_id,
            anonymous_id: self.anonymous_id,
            message_id: self.message_id,
            timestamp: self.timestamp,
            context: self.context.map(&f),
            integrations: self.integrations,
            event: self.event,
            name: self.name,
            category: self.category,
            group_id: self.group_id,
            previous_id: self.previous_id,
            properties: self.properties.map(&f),
            traits: self.traits.map(&f),
            collected: self.collected,
        }
    }
}

impl Message {
    /// An empty message of `kind`.
    pub fn new(kind: Kind) -> Self {
        Message::empty(kind)
    }

    /// `identify` for `user_id`.
    pub fn identify(user_id: impl Into<String>) -> Self {
        Message::new(Kind::Identify).user_id(user_id)
    }

    /// `track` of `event` by `user_id`.
    pub fn track(user_id: impl Into<String>, event: impl Into<String>) -> Self {
        Message::new(Kind::Track).user_id(user_id).event(event)
    }

    /// `page` viewed by `user_id`.
    pub fn page(user_id: impl Into<String>) -> Self {
        Message::new(Kind::Page).user_id(user_id)
    }

    /// `screen` viewed by `user_id`.
    pub fn screen(user_id: impl Into<String>) -> Self {
        Message::new(Kind::Screen).user_id(user_id)
    }

    /// `group`: `user_id` belongs to `group_id`.
    pub fn group(user_id: impl Into<String>, group_id: impl Into<String>) -> Self {
        Message::new(Kind::Group)
            .user_id(user_id)
            .group_id(group_id)
    }

    /// `alias`: `previous_id` is now known as `user_id`.
    pub fn alias(previous_id: impl Into<String>, user_id: impl Into<String>) -> Self {
        Message::new(Kind::Alias)
            .previous_id(previous_id)
            .user_id(user_id)
    }

    /// `delete`: a deletion request for `user_id` (sent to webhooks only).
    pub fn delete(user_id: impl Into<String>) -> Self {
        Message::new(Kind::Delete).user_id(user_id)
    }

    setters! {
        /// Sets `user_id`.
        user_id: String,
        /// Sets `anonymous_id`.
        anonymous_id: String,
        /// Sets `message_id`.
        message_id: String,
        /// Sets `timestamp`.
        timestamp: OffsetDateTime,
        /// Sets `context`.
        context: Object,
        /// Sets `integrations`.
        integrations: Object,
        /// Sets `event`.
        event: String,
        /// Sets `name`.
        name: String,
        /// Sets `category`.
        category: String,
        /// Sets `group_id`.
        group_id: String,
        /// Sets `previous_id`.
        previous_id: String,
        /// Sets `properties`.
        properties: Object,
        /// Sets `traits`.
        traits: Object,
    }

    /// Adds one property.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.properties
            .get_or_insert_with(Object::new)
            .insert(key.into(), value.into());
        self
    }

    /// Adds one trait.
    pub fn trait_(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.traits
            .get_or_insert_with(Object::new)
            .insert(key.into(), value.into());
        self
    }

    /// Reads a message from Segment-style JSON: `{"type":"track","userId":"u1","event":"E",
    /// "properties":{...},"context":{...},"integrations":{...},"timestamp":"2026-...Z",
    /// "messageId":"...","anonymousId":"...","name":..,"category":..,"groupId":..,
    /// "previousId":..,"traits":{...}}`. Unknown keys and wrong types are refused by name.
    pub fn from_json(json: &str) -> Result<Message, Error> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| Error::json("message", e.to_string()))?;
        let obj = object("message", value)?;
        let kind = match obj.get("type") {
            Some(Value::String(t)) => Kind::parse(t).ok_or_else(|| {
                Error::invalid(
                    "type",
                    format!(
                        "{t:?} is not one of identify, track, page, screen, group, alias, delete"
                    ),
                )
            })?,
            Some(other) => return Err(wrong("type", "a string", other)),
            None => {
                return Err(Error::MissingField {
                    call: "message",
                    field: "type",
                })
            }
        };
        let mut msg = Message::new(kind);
        for (key, value) in obj {
            match key.as_str() {
                "type" => {}
                "userId" => msg.user_id = Some(id_text("userId", value)?),
                "anonymousId" => msg.anonymous_id = Some(id_text("anonymousId", value)?),
                "messageId" => msg.message_id = Some(text("messageId", value)?),
                "timestamp" => {
                    msg.timestamp =
                        Some(crate::model::timestamp::parse(&text("timestamp", value)?)?)
                }
                "event" => msg.event = Some(text("event", value)?),
                "name" => msg.name = Some(text("name", value)?),
                "category" => msg.category = Some(text("category", value)?),
                "groupId" => msg.group_id = Some(id_text("groupId", value)?),
                "previousId" => msg.previous_id = Some(id_text("previousId", value)?),
                "context" => msg.context = Some(object("context", value)?),
                "integrations" => msg.integrations = Some(object("integrations", value)?),
                "properties" => msg.properties = Some(object("properties", value)?),
                "traits" => msg.traits = Some(object("traits", value)?),
                other => {
                    return Err(Error::invalid(other, "is not a field of a message"));
                }
            }
        }
        Ok(msg)
    }
}

/// Parses `text` as a JSON object (for maps passed as JSON text, e.g. from C).
pub fn parse_object(what: &str, text: &str) -> Result<Object, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::json(what, e.to_string()))?;
    object(what, value)
}

/// Static headers from JSON text (for C): an object of header name -> string value. The
/// names and values themselves are checked when the client is built.
pub fn parse_headers(what: &str, text: &str) -> Result<Vec<(String, String)>, Error> {
    parse_object(what, text)?
        .into_iter()
        .map(|(name, value)| match value {
            Value::String(v) => Ok((name, v)),
            other => Err(wrong(&format!("{what}.{name}"), "a string", &other)),
        })
        .collect()
}

/// JSON's name for the type of `v`, for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn wrong(field: &str, expected: &'static str, got: &Value) -> Error {
    Error::WrongType {
        field: field.into(),
        expected,
        got: type_name(got),
    }
}

pub(crate) fn text(field: &str, v: Value) -> Result<String, Error> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(wrong(field, "a string", &other)),
    }
}

/// Ids may be given as integers (a common database key); they are sent as strings.
pub(crate) fn id_text(field: &str, v: Value) -> Result<String, Error> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        other => text(field, other),
    }
}

pub(crate) fn object(field: &str, v: Value) -> Result<Object, Error> {
    match v {
        Value::Object(o) => Ok(o),
        other => Err(wrong(field, "an object", &other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_json_reads_every_field() {
        let m = Message::from_json(r#"{"type":"group","userId":42,"groupId":"g","traits":{"n":1},"context":{"ip":"1.2.3.4"},"integrations":{"All":false},"messageId":"m","timestamp":"2026-11-21T09:30:00.123+01:00","anonymousId":"a"}"#).unwrap();
        assert_eq!(m.kind, Kind::Group);
        assert_eq!(m.user_id.as_deref(), Some("42"));
        assert_eq!(m.group_id.as_deref(), Some("g"));
        assert_eq!(m.message_id.as_deref(), Some("m"));
        assert!(m.timestamp.is_some() && m.traits.is_some() && m.context.is_some());
    }

    #[test]
    fn header_json_must_be_an_object_of_strings() {
        let h = parse_headers("headers_json", r#"{"X-A":"1","X-B":"two"}"#).unwrap();
        assert_eq!(
            h,
            [
                ("X-A".to_string(), "1".to_string()),
                ("X-B".to_string(), "two".to_string())
            ]
        );
        let e = |t: &str| parse_headers("headers_json", t).unwrap_err().to_string();
        assert_eq!(
            e(r#"{"X-A":1}"#),
            "headers_json.X-A must be a string, got a number"
        );
        assert_eq!(e("[]"), "headers_json must be an object, got an array");
    }

    #[test]
    fn from_json_names_what_is_wrong() {
        let e = |j: &str| Message::from_json(j).unwrap_err().to_string();
        assert_eq!(e("[1]"), "message must be an object, got an array");
        assert!(e("{").starts_with("invalid JSON for message"));
        assert_eq!(
            e(r#"{"type":"track","properties":[]}"#),
            "properties must be an object, got an array"
        );
        assert_eq!(
            e(r#"{"type":"track","colour":1}"#),
            "invalid colour: is not a field of a message"
        );
        assert_eq!(e(r#"{"userId":"u"}"#), "message requires type");
        assert_eq!(e(r#"{"type":"nope"}"#), "invalid type: \"nope\" is not one of identify, track, page, screen, group, alias, delete");
    }
}
