//! Subscriptions: Segment's Webhooks (Actions) in the core. A subscription is a trigger (which
//! events, Segment's FQL) and the Send action (where and how): a URL, a method, headers and a
//! `data` mapping (Segment's mapping-kit), optionally batched. Segment's own code defines what
//! each part means, and ours is checked against it (tests/subscriptions/).
//!
//! `fql.rs` reads triggers and `trigger.rs` evaluates them; `mapping/` is mapping-kit;
//! `request.rs` the Send action's rules for headers, body and batches; `js/` the JavaScript
//! semantics all of them share; `endpoint.rs` reads how its endpoint wants to be called
//! (`model/endpoint.rs`'s settings, a webhook's too). Everything is read once, when a
//! subscription is configured; per event, a trigger allocates nothing and a mapping only what
//! it builds.
//!
//! May use: serde_json and std, the crate's leaves (`error`, `log`), and `model/endpoint.rs`.

mod endpoint;
pub(crate) mod fql;
pub(crate) mod js;
pub(crate) mod mapping;
pub(crate) mod request;
pub(crate) mod trigger;

pub use fql::TriggerError;
pub use mapping::{Mapping, MappingError};
pub use trigger::{Trigger, Unevaluable};

use crate::error::Error;
use crate::model::endpoint::Endpoint;
use js::V;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// The most events one batch request carries (Segment's limit).
pub const MAX_BATCH_SIZE: usize = 4000;

/// Events per batch request when batching is on and no size is given.
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// The HTTP method of a subscription's requests: the three Segment's Send action offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// `POST` (Segment's default).
    #[default]
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
}

impl Method {
    /// The method's name as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
        }
    }

    /// The method named exactly (`POST`, `PUT`, `PATCH`; Segment's check is case-sensitive).
    pub fn parse(name: &str) -> Option<Method> {
        match name {
            "POST" => Some(Method::Post),
            "PUT" => Some(Method::Put),
            "PATCH" => Some(Method::Patch),
            _ => None,
        }
    }
}

/// What a batch request's `X-Signature` covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchSignature {
    /// The whole body, as every other request of ours.
    #[default]
    Body,
    /// Only the first element of the batch's array, as Segment signs (`JSON.stringify(body[0])`),
    /// for receivers ported from Segment.
    FirstElement,
}

impl BatchSignature {
    /// The setting's spelling: `body` or `first-element`.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchSignature::Body => "body",
            BatchSignature::FirstElement => "first-element",
        }
    }
}

/// A subscription's settings in our own terms (the relay's file and API); Segment's export is
/// read by [`Subscription::from_segment`].
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// A name to show and log.
    pub name: String,
    /// The trigger: Segment's FQL (`type = "track" and event = "Order Completed"`).
    pub trigger: String,
    /// Where requests go (http or https).
    pub url: String,
    /// The request method.
    pub method: Method,
    /// Headers: an object whose values may be mapping-kit directives.
    pub headers: Option<Value>,
    /// The body's mapping; `None` is Segment's default, the whole event (`{"@path": "$."}`).
    pub data: Option<Value>,
    /// `Some(n)`: events are sent in batches of at most `n` (1..=4000), as a JSON array.
    pub batch_size: Option<usize>,
    /// Whether the subscription receives events (a disabled one keeps its settings).
    pub enabled: bool,
    /// What a batch's signature covers.
    pub batch_signature: BatchSignature,
}

impl Settings {
    /// Settings with Segment's defaults: `POST`, the whole event as body, no batching, enabled.
    pub fn new(name: &str, trigger: &str, url: &str) -> Settings {
        Settings {
            name: name.to_owned(),
            trigger: trigger.to_owned(),
            url: url.to_owned(),
            method: Method::Post,
            headers: None,
            data: None,
            batch_size: None,
            enabled: true,
            batch_signature: BatchSignature::Body,
        }
    }
}

/// A subscription ready for events: its trigger parsed and its mappings compiled.
#[derive(Debug, Clone)]
pub struct Subscription {
    name: String,
    trigger: Trigger,
    url: String,
    method: Method,
    headers: Headers,
    data: Data,
    batch_size: Option<usize>,
    enabled: bool,
    batch_signature: BatchSignature,
    endpoint: Endpoint,
}

/// Headers known at configuration (no directive in them) or mapped per event.
#[derive(Debug, Clone)]
enum Headers {
    Fixed(Vec<(String, String)>, bool),
    Mapped(Mapping),
}

/// A body known at configuration, or mapped per event.
#[derive(Debug, Clone)]
enum Data {
    Fixed(Option<Value>),
    Mapped(Mapping),
}

/// One event's request, as Segment's Send action would make it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped<'a> {
    /// The mapped headers, names in lower case. The sender adds `content-type:
    /// application/json` when there is a body (a mapped one is left out then), its
    /// `user-agent` unless one is here, and `x-signature` when [`Mapped::signed`]. Values hold
    /// tab and U+0020–U+00FF only: each character goes out as one byte (Latin-1), as Node sends it.
    pub headers: Cow<'a, [(String, String)]>,
    /// The body, written as canonical JSON (`None`: the request has none).
    pub body: Option<Cow<'a, Value>>,
    own_signature: bool,
}

impl Mapped<'_> {
    /// Whether this event's request carries the sender's `X-Signature`: it has a body and the
    /// mapping does not set (or remove) that header itself.
    pub fn signed(&self) -> bool {
        self.body.is_some() && !self.own_signature
    }

    /// Whether the mapping sets or removes `X-Signature` itself (its value then goes out).
    pub fn own_signature(&self) -> bool {
        self.own_signature
    }
}

/// The request a subscription would make for one event ([`Subscription::preview`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    /// Its method.
    pub method: Method,
    /// Where it goes.
    pub url: String,
    /// Its headers, names in lower case: the mapping's, and `content-type` with a body.
    pub headers: Vec<(String, String)>,
    /// Its body (sent as canonical JSON: `outbound::canonical_json`); `None`: it has none.
    pub body: Option<Value>,
    /// Whether it carries the sender's signature (`X-Signature`).
    pub signed: bool,
}

/// Why an event that reached a subscription cannot be sent to it (at Segment, the event fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventError {
    /// Segment's trigger evaluation throws on this event.
    Trigger(Unevaluable),
    /// The mapping throws, or its result is not a request Segment's action would send.
    Mapping(MappingError),
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::Trigger(e) => write!(f, "trigger: {e}"),
            EventError::Mapping(e) => write!(f, "mapping: {e}"),
        }
    }
}

impl std::error::Error for EventError {}

/// The fields of the Send action's mapping.
const MAPPING_FIELDS: &[&str] = &[
    "url",
    "method",
    "headers",
    "data",
    "enable_batching",
    "batch_size",
    "batch_keys",
];

/// The fields of our own settings.
const SETTINGS_FIELDS: &[&str] = &[
    "name",
    "trigger",
    "url",
    "method",
    "headers",
    "data",
    "batch_size",
    "enabled",
    "batch_signature",
    "auth",
    "tls",
    "signature_header",
    "signature_scheme",
    "rate_limit",
];

fn config(setting: &str, reason: impl Into<String>) -> Error {
    Error::config(setting, reason)
}

impl Subscription {
    /// Checks and compiles `settings`: the trigger parsed, the mappings validated as
    /// mapping-kit validates them. Errors name the setting (`trigger`, `data.total.@path`).
    pub fn new(settings: Settings) -> Result<Subscription, Error> {
        Subscription::build(settings, "")
    }

    fn build(s: Settings, prefix: &str) -> Result<Subscription, Error> {
        let at = |field: &str| format!("{prefix}{field}");
        let trigger_field = if prefix.is_empty() {
            "trigger"
        } else {
            "subscribe"
        };
        let trigger =
            Trigger::parse(&s.trigger).map_err(|e| config(trigger_field, e.to_string()))?;
        check_url(&s.url).map_err(|reason| config(&at("url"), reason))?;
        if let Some(n) = s.batch_size {
            if !(1..=MAX_BATCH_SIZE).contains(&n) {
                return Err(config(
                    &at("batch_size"),
                    format!("must be 1 to {MAX_BATCH_SIZE}, got {n}"),
                ));
            }
        }
        let mapping_error = |e: MappingError| config(&e.path, e.reason);
        let headers = match &s.headers {
            None => Headers::Fixed(Vec::new(), false),
            Some(h) => {
                let m = Mapping::at(h, &at("headers")).map_err(mapping_error)?;
                if m.is_fixed() {
                    let (list, own) = request::headers(m.resolve_fixed())
                        .map_err(|e| config(&format!("{prefix}{}", e.field), e.reason))?;
                    Headers::Fixed(list, own)
                } else {
                    Headers::Mapped(m)
                }
            }
        };
        let default_data = json!({"@path": "$."});
        let data_value = s.data.as_ref().unwrap_or(&default_data);
        let data = Mapping::at(data_value, &at("data")).map_err(mapping_error)?;
        let data = if data.is_fixed() {
            let body =
                request::body(data.resolve_fixed()).map_err(|e| config(&at(&e.field), e.reason))?;
            Data::Fixed(body.map(Cow::into_owned))
        } else {
            Data::Mapped(data)
        };
        Ok(Subscription {
            name: s.name,
            trigger,
            url: s.url,
            method: s.method,
            headers,
            data,
            batch_size: s.batch_size,
            enabled: s.enabled,
            batch_signature: s.batch_signature,
            endpoint: Endpoint::default(),
        })
    }

    /// A subscription as Segment exports it: `subscribe` (or `trigger`) and `mapping` (or
    /// `settings`) with the Send action's fields `url`, `method`, `headers`, `data`,
    /// `enable_batching`, `batch_size` (and `batch_keys`, read and ignored: requests are
    /// batched only with identical URL, method and headers); `name` and `enabled` when given.
    /// A URL or method given as a directive is refused: each subscription is one destination.
    pub fn from_segment(subscription: &Value) -> Result<Subscription, Error> {
        let top = subscription
            .as_object()
            .ok_or_else(|| config("subscription", "must be a JSON object"))?;
        let (trigger_key, trigger) = pick(top, &["subscribe", "trigger"]);
        let trigger = match trigger {
            Some(Value::String(t)) => t.clone(),
            Some(_) => return Err(config(trigger_key, "must be a string (Segment's FQL)")),
            None => {
                return Err(config(
                    "subscribe",
                    "is required (the trigger, Segment's FQL)",
                ))
            }
        };
        let (mapping_key, mapping) = pick(top, &["mapping", "settings"]);
        let mapping = match mapping {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(config(mapping_key, "must be a JSON object")),
            None => return Err(config("mapping", "is required (the Send action's fields)")),
        };
        let field = |name: &str| format!("{mapping_key}.{name}");
        if let Some(k) = mapping
            .keys()
            .find(|k| !MAPPING_FIELDS.contains(&k.as_str()))
        {
            return Err(config(
                &field(k),
                format!(
                    "is not a field of Segment's Send action ({})",
                    MAPPING_FIELDS.join(", ")
                ),
            ));
        }
        let url = match mapping.get("url") {
            Some(Value::String(u)) => u.clone(),
            Some(Value::Object(_)) => {
                return Err(config(
                    &field("url"),
                    "a mapped URL is not supported: give the URL as a string",
                ))
            }
            Some(_) => return Err(config(&field("url"), "must be a string")),
            None => return Err(config(&field("url"), "is required")),
        };
        let method = match mapping.get("method") {
            None => Method::Post,
            Some(Value::String(m)) => Method::parse(m).ok_or_else(|| {
                config(
                    &field("method"),
                    format!("must be POST, PUT or PATCH, got {m:?}"),
                )
            })?,
            Some(Value::Object(_)) => {
                return Err(config(
                    &field("method"),
                    "a mapped method is not supported: give POST, PUT or PATCH",
                ))
            }
            Some(_) => return Err(config(&field("method"), "must be POST, PUT or PATCH")),
        };
        let batching = match mapping.get("enable_batching") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => return Err(config(&field("enable_batching"), "must be true or false")),
        };
        let batch_size = match mapping.get("batch_size") {
            None | Some(Value::Null) => None,
            Some(n) => match n.as_u64() {
                Some(n) => Some(n as usize),
                None => {
                    return Err(config(
                        &field("batch_size"),
                        "must be a whole number of events",
                    ))
                }
            },
        };
        if let Some(keys) = mapping.get("batch_keys") {
            if !keys
                .as_array()
                .is_some_and(|k| k.iter().all(Value::is_string))
            {
                return Err(config(
                    &field("batch_keys"),
                    "must be a list of field names",
                ));
            }
        }
        let enabled = match top.get("enabled") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(config("enabled", "must be true or false")),
        };
        let name = match top.get("name") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(n)) => n.clone(),
            Some(_) => return Err(config("name", "must be a string")),
        };
        let settings = Settings {
            name,
            trigger,
            url,
            method,
            headers: mapping.get("headers").cloned(),
            data: mapping.get("data").cloned(),
            // Segment's `batch_size` of 0 (its field's default) means its own default.
            batch_size: batching.then_some(match batch_size {
                None | Some(0) => DEFAULT_BATCH_SIZE,
                Some(n) => n,
            }),
            enabled,
            batch_signature: BatchSignature::Body,
        };
        Subscription::build(settings, &format!("{mapping_key}."))
    }

    /// A subscription from our own JSON settings: `name`, `trigger`, `url`, `method`,
    /// `headers`, `data`, `batch_size` (given: batching on), `enabled`, `batch_signature`
    /// (`body` or `first-element`), and how its endpoint wants to be called, as a webhook's
    /// in the relay's API: `auth` (`{"type": "basic", "user", "password"}`, `{"type":
    /// "bearer", "token"}` or `{"type": "oauth2", "token_url", "client_id", "client_secret"
    /// or "client_assertion_key", "scope", "audience"}`), `tls` (`{"client_cert",
    /// "client_key", "ca_certs"}`, each PEM text or a path), `signature_header`,
    /// `signature_scheme` and `rate_limit` (`{"per_second", "burst"}`); a `null` is a
    /// setting left out. Their values are checked with the client, as a webhook's are.
    pub fn from_settings(settings: &Value) -> Result<Subscription, Error> {
        let top = settings
            .as_object()
            .ok_or_else(|| config("subscription", "must be a JSON object"))?;
        if let Some(k) = top.keys().find(|k| !SETTINGS_FIELDS.contains(&k.as_str())) {
            return Err(config(
                k,
                format!(
                    "is not a setting of a subscription ({})",
                    SETTINGS_FIELDS.join(", ")
                ),
            ));
        }
        let string = |key: &str| -> Result<Option<String>, Error> {
            match top.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(config(key, "must be a string")),
            }
        };
        let required = |key: &str| -> Result<String, Error> {
            string(key)?.ok_or_else(|| config(key, "is required"))
        };
        let mut s = Settings::new(
            &string("name")?.unwrap_or_default(),
            &required("trigger")?,
            &required("url")?,
        );
        if let Some(m) = string("method")? {
            s.method = Method::parse(&m).ok_or_else(|| {
                config("method", format!("must be POST, PUT or PATCH, got {m:?}"))
            })?;
        }
        s.headers = top.get("headers").cloned();
        s.data = top.get("data").cloned();
        s.batch_size = match top.get("batch_size") {
            None | Some(Value::Null) => None,
            Some(n) => Some(
                n.as_u64()
                    .ok_or_else(|| config("batch_size", "must be a whole number of events"))?
                    as usize,
            ),
        };
        s.enabled = match top.get("enabled") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(config("enabled", "must be true or false")),
        };
        s.batch_signature = match string("batch_signature")?.as_deref() {
            None | Some("body") => BatchSignature::Body,
            Some("first-element") => BatchSignature::FirstElement,
            Some(other) => {
                return Err(config(
                    "batch_signature",
                    format!("must be \"body\" or \"first-element\", got {other:?}"),
                ))
            }
        };
        let endpoint = endpoint::read(top)?;
        Ok(Subscription::new(s)?.with_endpoint(endpoint))
    }

    /// A subscription from JSON in either form: Segment's export (it has `subscribe` or
    /// `mapping`; [`from_segment`](Self::from_segment)) or our settings
    /// ([`from_settings`](Self::from_settings)). What every face takes. In either form the
    /// endpoint settings of [`from_settings`](Self::from_settings) (`auth`, `tls`,
    /// `signature_header`, `signature_scheme`, `rate_limit`) sit at the top level: Segment's
    /// export has none, and one pasted as it is may be given them beside its own fields.
    pub fn from_json(value: &Value) -> Result<Subscription, Error> {
        match value.as_object() {
            Some(o) if o.contains_key("subscribe") || o.contains_key("mapping") => {
                let sub = Subscription::from_segment(value)?;
                Ok(sub.with_endpoint(endpoint::read(o)?))
            }
            _ => Subscription::from_settings(value),
        }
    }

    /// The same subscription with batches signed as `signature` says (Segment's settings have
    /// no such field: [`Subscription::from_segment`] signs whole bodies).
    pub fn with_batch_signature(mut self, signature: BatchSignature) -> Subscription {
        self.batch_signature = signature;
        self
    }

    /// The same subscription with its endpoint called as `endpoint` says (auth, TLS,
    /// signature header and scheme, rate limit), as a webhook's would be: checked when the
    /// client is built, errors named `subscriptions[i].auth.token` and so on.
    pub fn with_endpoint(mut self, endpoint: Endpoint) -> Subscription {
        self.endpoint = endpoint;
        self
    }

    /// How its endpoint wants to be called.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The subscription's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its trigger.
    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }

    /// Where its requests go.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its requests' method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Events per batch request, when batching is on.
    pub fn batch_size(&self) -> Option<usize> {
        self.batch_size
    }

    /// Whether it receives events.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// What a batch's signature covers.
    pub fn batch_signature(&self) -> BatchSignature {
        self.batch_signature
    }

    /// The headers of every request when no directive is in them (names in lower case,
    /// each value's characters one byte each), and whether they set the signature
    /// themselves (`X-Signature`, or the endpoint's `signature_header`); `None` when they are
    /// mapped per event.
    pub fn fixed_headers(&self) -> Option<(&[(String, String)], bool)> {
        match &self.headers {
            Headers::Fixed(list, own) => Some((list, self.own_signature(list, *own))),
            Headers::Mapped(_) => None,
        }
    }

    /// Whether `headers` give the signature themselves: `own` (they set `X-Signature`), or
    /// they set the header the endpoint's signature goes in.
    fn own_signature(&self, headers: &[(String, String)], own: bool) -> bool {
        own || (self.endpoint.signature_header.as_deref())
            .is_some_and(|h| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(h)))
    }

    /// Turns the subscription on or off (a disabled one keeps its settings).
    pub fn with_enabled(mut self, on: bool) -> Subscription {
        self.enabled = on;
        self
    }

    /// The same subscription under `name`.
    pub fn with_name(mut self, name: &str) -> Subscription {
        self.name = name.to_owned();
        self
    }

    /// Whether `event` matches the trigger (an event Segment's code cannot evaluate does not).
    pub fn matches(&self, event: &Value) -> bool {
        self.trigger.matches(event)
    }

    /// The request for `event`: `None` when the trigger does not match it. Borrows from the
    /// event and the settings where it can (the default mapping allocates nothing).
    pub fn map<'a>(&'a self, event: &'a Value) -> Result<Option<Mapped<'a>>, EventError> {
        if !self.trigger.evaluate(event).map_err(EventError::Trigger)? {
            return Ok(None);
        }
        let field_error = |e: request::FieldError| {
            EventError::Mapping(MappingError {
                path: e.field,
                reason: e.reason,
            })
        };
        let (headers, own_signature) = match &self.headers {
            Headers::Fixed(list, own) => (
                Cow::Borrowed(list.as_slice()),
                self.own_signature(list, *own),
            ),
            Headers::Mapped(m) => {
                let (list, own) = request::headers(event_value(m, event)?).map_err(field_error)?;
                let own = self.own_signature(&list, own);
                (Cow::Owned(list), own)
            }
        };
        let body = match &self.data {
            Data::Fixed(body) => body.as_ref().map(Cow::Borrowed),
            Data::Mapped(m) if m.is_object() => {
                check_event(event)?;
                m.json(event).map_err(EventError::Mapping)?
            }
            Data::Mapped(m) => request::body(event_value(m, event)?).map_err(field_error)?,
        };
        let headers = match body {
            Some(_) if headers.iter().any(|(n, _)| n == "content-type") => Cow::Owned(
                headers
                    .iter()
                    .filter(|(n, _)| n != "content-type")
                    .cloned()
                    .collect(),
            ),
            _ => headers,
        };
        Ok(Some(Mapped {
            headers,
            body,
            own_signature,
        }))
    }

    /// What this subscription would send for `event` (a preview; nothing is sent): `None`
    /// when its trigger does not match; an error when Segment's code would fail the event.
    /// The sender adds `user-agent` and the signature.
    pub fn preview(&self, event: &Value) -> Result<Option<Preview>, EventError> {
        let Some(mapped) = self.map(event)? else {
            return Ok(None);
        };
        let mut headers: Vec<(String, String)> = mapped.headers.to_vec();
        if mapped.body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let body = mapped.body.as_ref().map(|b| b.clone().into_owned());
        Ok(Some(Preview {
            method: self.method,
            url: self.url.clone(),
            headers,
            body,
            signed: mapped.signed(),
        }))
    }

    /// A batch request's body from its events' bodies (each as canonical JSON; `None` for an
    /// event without one, sent as `null`), and the bytes its `X-Signature` covers: the whole
    /// body, or with [`BatchSignature::FirstElement`] the first element's (none when the first
    /// event has no body); none when the batch's headers set the signature themselves
    /// (`own_signature` of its events' [`Mapped`]). A batch shares the first event's URL,
    /// method and headers.
    pub fn batch_body(
        &self,
        bodies: &[Option<&[u8]>],
        own_signature: bool,
    ) -> (Vec<u8>, Option<Range<usize>>) {
        let (body, signed) =
            request::batch(bodies, self.batch_signature == BatchSignature::FirstElement);
        (body, signed.filter(|_| !own_signature))
    }
}

fn event_value<'a>(m: &'a Mapping, event: &'a Value) -> Result<V<'a>, EventError> {
    check_event(event)?;
    m.resolve(event).map_err(EventError::Mapping)
}

/// mapping-kit maps objects only.
fn check_event(event: &Value) -> Result<(), EventError> {
    if event.is_object() {
        return Ok(());
    }
    Err(EventError::Mapping(MappingError {
        path: String::new(),
        reason: "data must be an object".into(),
    }))
}

/// The first of `keys` present in `m`, with its key (the first key when none is).
fn pick<'m>(m: &'m Map<String, Value>, keys: &[&'static str]) -> (&'static str, Option<&'m Value>) {
    keys.iter()
        .find_map(|k| m.get(*k).map(|v| (*k, Some(v))))
        .unwrap_or((keys[0], None))
}

/// An absolute http(s) URL with a host: what Segment's `format: uri` check and node-fetch
/// would send to. The network rules (which addresses) are the sender's.
fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("must start with http:// or https://")?;
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("must not hold white space or control characters".into());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err("must name a host".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
