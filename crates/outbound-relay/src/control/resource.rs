//! A source as the admin API reads and shows it. A PUT body is read in two steps, so that
//! what a caller may not send costs nothing to refuse:
//!
//! 1. [`Fields::scan`]: the body's keys, each value kept as the body's own text. A key that
//!    is not a source's is refused as it is met, before its value is looked at.
//! 2. [`read`]: the fields, merged with what is stored, read straight into the file's own
//!    `[[sources]]` shape (`SourceFile`), so a refusal names the field as the file's errors do
//!    (`webhooks[0].url: ...`, without the file's `sources[i].`). No intermediate tree of the
//!    body is built: a value of the wrong type stops the read where it starts.
//!
//! Between the two, [`changes_forbidden`] compares what a source's own token sent with what
//! is stored, by meaning (`2` and `2.0` are one number of seconds).
//!
//! Write-only values: `shared_secret`, `forward.write_key`, every webhook's and
//! subscription's header values and endpoint secrets (`endpoint.rs`) are never shown (`has_shared_secret`,
//! `has_write_key`, `{"has_value": true}` instead). Left out of a PUT, the secret and the
//! write key stay; `null` clears them. A header given as `{"has_value": true}` keeps its
//! value, on a webhook whose URL is unchanged.

use super::endpoint;
use super::schema;
use super::write_only::WriteOnly;
use crate::config::{self, Base, ManagedBy, SourceFile, DELIVERY_KEYS, SOURCE_KEYS};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;

/// Largest body of a source's PUT (after gzip): a source's settings are kilobytes; this
/// leaves room for thousands of write keys and origins.
pub const MAX_BODY: usize = 1 << 20;

/// Settings the relay's operator keeps: the storage and its logs, the egress path, and a
/// file read on the relay's host.
const OPERATOR_ONLY: [&str; 4] = ["spool", "spool_commit_interval", "debug", "proxy_from_env"];
/// Read-only fields of an answer, accepted back (a console PUTs what it got) and ignored.
const SHOWN_ONLY: [&str; 4] = ["managed_by", "has_shared_secret", "name", "id"];
/// What the store keeps beside a source's settings: its revision, counted up at each PUT
/// (the ETag a conditional write names).
const REVISION: &str = "revision";

/// A refusal: the field and why.
pub type Refusal = (String, String);

/// A PUT body's fields: each key with its value's text, as sent.
pub struct Fields<'a> {
    fields: Vec<(Cow<'a, str>, &'a RawValue)>,
}

/// Whether `key` may appear in a source's body.
fn known(key: &str) -> bool {
    SOURCE_KEYS.contains(&key) || DELIVERY_KEYS.contains(&key) || SHOWN_ONLY.contains(&key)
}

impl<'a> Fields<'a> {
    /// The fields of `body`: a JSON object whose keys are a source's, each once.
    pub fn scan(body: &'a [u8]) -> Result<Fields<'a>, Refusal> {
        let refused = RefCell::new(None);
        let seed = FieldsSeed { refused: &refused };
        let mut de = serde_json::Deserializer::from_slice(body);
        match de::DeserializeSeed::deserialize(seed, &mut de).and_then(|f| de.end().map(|_| f)) {
            Ok(fields) => Ok(Fields { fields }),
            Err(e) => Err(refused
                .into_inner()
                .unwrap_or_else(|| (String::new(), format!("body is not valid JSON: {e}")))),
        }
    }

    fn get(&self, key: &str) -> Option<&'a RawValue> {
        (self.fields.iter()).find_map(|(k, v)| (k == key).then_some(*v))
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| k.as_ref())
    }
}

/// Reads an object's keys one by one and stops at the first that is not a source's; the
/// refusal goes beside the error (serde's own error cannot carry the field).
struct FieldsSeed<'r> {
    refused: &'r RefCell<Option<Refusal>>,
}

impl<'de> de::DeserializeSeed<'de> for FieldsSeed<'_> {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FieldsSeed<'_> {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object (a source's settings)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let why = match () {
                _ if !known(&key) => Some("not a setting of a source"),
                _ if out.iter().any(|(k, _)| *k == key) => Some("given twice"),
                _ => None,
            };
            if let Some(why) = why {
                let shown: String = key.chars().take(64).collect();
                *self.refused.borrow_mut() = Some((shown, why.to_string()));
                return Err(de::Error::custom(why));
            }
            let value: &'de RawValue = map.next_value()?;
            out.push((key, value));
        }
        Ok(out)
    }
}

/// Refuses what a source's own token may not do: change a field outside `self_service`
/// (sending it unchanged is fine: a console PUTs what it read; leaving it out keeps it, see
/// [`read`]'s `keep_unsent`). Values are compared by meaning, not by spelling.
pub fn changes_forbidden(
    fields: &Fields<'_>,
    current: &Value,
    self_service: &[&str],
) -> Result<(), Refusal> {
    let mine = |k: &str| self_service.contains(&k) || SHOWN_ONLY.contains(&k);
    let refuse = |k: &str| {
        Err((
            k.to_string(),
            "a source token cannot change this (the admin token can)".to_string(),
        ))
    };
    for (key, raw) in &fields.fields {
        if !mine(key) && !same_meaning(raw, current.get(key.as_ref())) {
            return refuse(key);
        }
    }
    Ok(())
}

/// Whether `raw` says what `current` does. A value far longer than the stored one differs
/// without being read.
fn same_meaning(raw: &RawValue, current: Option<&Value>) -> bool {
    let Some(current) = current.filter(|c| !c.is_null()) else {
        return raw.get().trim() == "null";
    };
    if raw.get().len() > 2 * current.to_string().len() + 1024 {
        return false;
    }
    serde_json::from_str::<Value>(raw.get()).is_ok_and(|v| json_eq(&v, current))
}

/// JSON equality by meaning: numbers by value (`2` is `2.0`), a null member as none.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            let set = |m: &Map<String, Value>| m.iter().filter(|(_, v)| !v.is_null()).count();
            set(x) == set(y)
                && (x.iter().filter(|(_, v)| !v.is_null()))
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// A webhook as a PUT gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookBody<'a> {
    url: String,
    #[serde(default, borrow)]
    headers: Option<&'a RawValue>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default, borrow)]
    auth: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tls: Option<&'a RawValue>,
    #[serde(default, borrow)]
    signature_header: Option<&'a RawValue>,
    #[serde(default, borrow)]
    signature_scheme: Option<&'a RawValue>,
    #[serde(default, borrow)]
    rate_limit: Option<&'a RawValue>,
}

/// A webhook's headers, at most `most` of them (the rest is not read).
struct HeadersSeed {
    most: usize,
}

impl<'de> de::DeserializeSeed<'de> for HeadersSeed {
    type Value = Vec<(String, WriteOnly)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeadersSeed {
    type Value = Vec<(String, WriteOnly)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of header names and values")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(String, WriteOnly)> = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            if out.len() == self.most {
                let why = format!("at most {} allowed (max_webhook_headers)", self.most);
                return Err(de::Error::custom(why));
            }
            let value = map.next_value::<WriteOnly>()?;
            out.push((name, value));
        }
        Ok(out)
    }
}

/// `forward` as a PUT gives it (`write_key` left out: the stored one stays).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForwardBody {
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    write_key: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    has_write_key: Option<IgnoredAny>,
}

/// `raw` read as a `T`, an error named `key` and the path inside it.
fn typed<'a, T: Deserialize<'a>>(key: &str, raw: &'a RawValue) -> Result<T, Refusal> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.path().to_string();
        let at = match inner.as_str() {
            "." | "" => key.to_string(),
            p if p.starts_with('[') => format!("{key}{p}"),
            p => format!("{key}.{p}"),
        };
        (at, e.into_inner().to_string())
    })
}

/// Source `name`'s PUT `fields`, with what the store holds of it now (`current`), and its
/// `id` (drawn for a new source): what to store (secrets included) and the source to run.
/// `keep_unsent`: the stored fields outside it that the body leaves out stay as they are
/// (a source's token sends only what it may change); without it, a field left out is unset.
pub fn read(
    name: &str,
    id: &str,
    fields: &Fields<'_>,
    current: Option<&Value>,
    keep_unsent: Option<&[&str]>,
    base: &Base,
) -> Result<(Value, config::SourceSpec), Refusal> {
    if let Some(n) = fields.get("name") {
        if serde_json::from_str::<String>(n.get()).ok().as_deref() != Some(name) {
            let shown: String = n.get().chars().take(80).collect();
            return Err((
                "name".into(),
                format!("{shown} is not the name in the path ({name:?})"),
            ));
        }
    }
    let mut out = Map::new();
    for key in fields.keys() {
        if OPERATOR_ONLY.contains(&key) {
            return Err((
                key.to_string(),
                "set in relay.toml by the relay's operator, not through the API".into(),
            ));
        }
    }
    for (key, raw) in &fields.fields {
        let key = key.as_ref();
        if SHOWN_ONLY.contains(&key) || raw.get().trim() == "null" {
            continue;
        }
        let value = match key {
            "webhooks" => webhooks(raw, current, base)?,
            "subscriptions" => subscriptions(raw, current)?,
            "forward" => forward(raw, current)?,
            "ca_certs" => {
                let text: String = typed(key, raw)?;
                if !text.trim_start().starts_with("-----BEGIN") {
                    return Err((
                        key.into(),
                        "must be PEM text through the API (a path would be read on the \
                         relay's host)"
                            .into(),
                    ));
                }
                Value::String(text)
            }
            // Read into its type first: a value of the wrong shape stops here, unbuilt.
            _ => check_type(key, raw)?,
        };
        out.insert(key.to_string(), value);
    }
    if fields.get("shared_secret").is_none() {
        if let Some(v) = current.and_then(|c| c.get("shared_secret")) {
            out.insert("shared_secret".into(), v.clone());
        }
    }
    if let (Some(except), Some(Value::Object(stored))) = (keep_unsent, current) {
        for (key, value) in stored {
            let unsent =
                fields.get(key).is_none() && !SHOWN_ONLY.contains(&key.as_str()) && key != REVISION;
            if unsent && !except.contains(&key.as_str()) {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out.insert("name".into(), Value::String(name.into()));
    let mut doc = Value::Object(out);
    let file: SourceFile = serde_path_to_error::deserialize(&doc)
        .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))?;
    let source = base.source(&file, "", ManagedBy::Api, id)?;
    if !id.is_empty() {
        doc["id"] = Value::String(id.into());
    }
    doc[REVISION] = Value::from(current.map_or(0, revision) + 1);
    Ok((doc, source))
}

/// The fields a PUT changed, from what was stored to what is (`None`: it made the source),
/// by name only: `webhooks[1]` (added or removed), `webhooks[0].url`, `webhooks[0].enabled`,
/// `webhooks[0].headers["X-Team"]`, `shared_secret`, `forward.write_key`, `timeout`. Values
/// compare by meaning; a secret's value is never in what this gives.
pub fn changed_fields(before: Option<&Value>, after: &Value) -> Vec<String> {
    let empty = Value::Object(Map::new());
    let before = before.unwrap_or(&empty);
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut names: Vec<String> = keys(before);
    names.extend(keys(after).into_iter().filter(|k| before.get(k).is_none()));
    names.sort();
    let mut out = Vec::new();
    let skip = ["id", "name", REVISION];
    for key in names.iter().filter(|k| !skip.contains(&k.as_str())) {
        let (a, b) = (before.get(key), after.get(key));
        let null = Value::Null;
        match key.as_str() {
            "webhooks" => {
                let list =
                    |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
                let (a, b) = (list(a), list(b));
                for i in 0..a.len().max(b.len()) {
                    let (x, y) = (a.get(i), b.get(i));
                    let (Some(x), Some(y)) = (x, y) else {
                        out.push(format!("webhooks[{i}]"));
                        continue;
                    };
                    if x.get("url") != y.get("url") {
                        out.push(format!("webhooks[{i}].url"));
                    }
                    let on = |w: &Value| w.get("enabled").and_then(Value::as_bool).unwrap_or(true);
                    if on(x) != on(y) {
                        out.push(format!("webhooks[{i}].enabled"));
                    }
                    let hx = x.get("headers").and_then(Value::as_object);
                    let hy = y.get("headers").and_then(Value::as_object);
                    let mut hn: Vec<&String> =
                        hx.iter().chain(hy.iter()).flat_map(|m| m.keys()).collect();
                    hn.sort();
                    hn.dedup();
                    for h in hn {
                        if hx.and_then(|m| m.get(h)) != hy.and_then(|m| m.get(h)) {
                            out.push(format!("webhooks[{i}].headers[{h:?}]"));
                        }
                    }
                    endpoint::changed(&format!("webhooks[{i}]"), x, y, &mut out);
                }
            }
            "subscriptions" => {
                let list =
                    |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
                subscriptions_changed(&list(a), &list(b), &mut out);
            }
            "forward" => match (a, b) {
                (Some(x), Some(y)) if !x.is_null() && !y.is_null() => {
                    for k in ["endpoint", "write_key"] {
                        if x.get(k) != y.get(k) {
                            out.push(format!("forward.{k}"));
                        }
                    }
                }
                _ if json_eq(a.unwrap_or(&null), b.unwrap_or(&null)) => {}
                _ => out.push("forward".into()),
            },
            _ if json_eq(a.unwrap_or(&null), b.unwrap_or(&null)) => {}
            _ => out.push(key.clone()),
        }
    }
    out
}

/// The subscriptions that differ, by place: `subscriptions[1]` (added or removed), its
/// endpoint settings by field (`subscriptions[0].auth.token`), its other settings by key
/// (`subscriptions[0].headers`); never a value.
fn subscriptions_changed(a: &[Value], b: &[Value], out: &mut Vec<String>) {
    for i in 0..a.len().max(b.len()) {
        let place = format!("subscriptions[{i}]");
        let (Some(x), Some(y)) = (a.get(i), b.get(i)) else {
            out.push(place);
            continue;
        };
        let keys = |v: &Value| -> Vec<String> {
            v.as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let mut names = keys(x);
        names.extend(keys(y));
        names.sort();
        names.dedup();
        let null = Value::Null;
        for key in names
            .iter()
            .filter(|k| !endpoint::KEYS.contains(&k.as_str()))
        {
            let (v, w) = (x.get(key).unwrap_or(&null), y.get(key).unwrap_or(&null));
            if !json_eq(v, w) {
                out.push(format!("{place}.{key}"));
            }
        }
        endpoint::changed(&place, x, y, out);
    }
}

/// A stored source's revision (0: stored by a version that kept none).
pub fn revision(stored: &Value) -> u64 {
    stored.get(REVISION).and_then(Value::as_u64).unwrap_or(0)
}

/// The ETag of a stored source: its id and revision, so a source made again under its name
/// never matches a tag of the one before.
pub fn etag(stored: &Value) -> String {
    let id = stored.get("id").and_then(Value::as_str).unwrap_or("");
    format!("\"{id}.{}\"", revision(stored))
}

/// The ETag of a source of relay.toml: the start of a SHA-256 of what GET shows (its
/// secrets are not in it, so the tag tells nothing of them).
pub fn shown_etag(shown: &schema::Source) -> String {
    use sha2::{Digest, Sha256};
    let text = serde_json::to_vec(shown).unwrap_or_default();
    let hex: String = Sha256::digest(&text)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("\"f{hex}\"")
}

/// How many items the JSON array `raw` holds, counted without building any (`None`: not an
/// array).
fn items(raw: &RawValue) -> Option<usize> {
    struct Count;
    impl<'de> Visitor<'de> for Count {
        type Value = usize;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de.deserialize_seq(Count).ok()
}

/// `raw` as a JSON value, once its text has been read as the setting's own type.
fn check_type(key: &str, raw: &RawValue) -> Result<Value, Refusal> {
    if config::LIST_KEYS.contains(&key) {
        if let Some(n) = items(raw).filter(|n| *n > config::MAX_LIST) {
            let most = config::MAX_LIST;
            return Err((
                key.to_string(),
                format!("{n} given, at most {most} allowed"),
            ));
        }
    }
    let keys = match key {
        "write_keys" => "",
        _ => "\"write_keys\":[\"-\"],",
    };
    let probe = format!("{{\"name\":\"-\",{keys}\"{key}\":{}}}", raw.get());
    let mut de = serde_json::Deserializer::from_str(&probe);
    serde_path_to_error::deserialize::<_, SourceFile>(&mut de)
        .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))?;
    serde_json::from_str(raw.get()).map_err(|e| (key.to_string(), e.to_string()))
}

/// The webhooks of a PUT, their headers resolved: a kept value is taken from the stored
/// webhook at the same place with the same URL, so it never goes to a URL it was not set for.
fn webhooks(raw: &RawValue, current: Option<&Value>, base: &Base) -> Result<Value, Refusal> {
    let given: Vec<WebhookBody<'_>> = typed("webhooks", raw)?;
    let stored = current
        .and_then(|c| c.get("webhooks"))
        .and_then(Value::as_array);
    let mut out = Vec::with_capacity(given.len());
    for (i, w) in given.into_iter().enumerate() {
        let at = format!("webhooks[{i}].headers");
        let headers = match w.headers {
            None => Vec::new(),
            Some(raw) => {
                let seed = HeadersSeed {
                    most: base.max_webhook_headers(),
                };
                let mut de = serde_json::Deserializer::from_str(raw.get());
                de::DeserializeSeed::deserialize(seed, &mut de)
                    .map_err(|e| (at.clone(), e.to_string()))?
            }
        };
        let same_url = (stored.and_then(|s| s.get(i)))
            .filter(|s| s.get("url").and_then(Value::as_str) == Some(w.url.as_str()));
        let before = same_url.and_then(|s| s.get("headers"));
        let mut kept = BTreeMap::new();
        for (name, value) in headers {
            let value =
                match value {
                    WriteOnly::Set(v) => v,
                    WriteOnly::Clear => continue,
                    WriteOnly::Keep => {
                        match before.and_then(|b| b.get(&name)).and_then(Value::as_str) {
                            Some(v) => v.to_string(),
                            None => return Err((
                                format!("{at}[{name:?}]"),
                                "no value is kept for this header of a webhook at this URL: give \
                             its value"
                                    .into(),
                            )),
                        }
                    }
                };
            kept.insert(name, Value::String(value));
        }
        let mut hook = Map::new();
        hook.insert("url".into(), Value::String(w.url));
        hook.insert("headers".into(), json!(kept));
        if let Some(enabled) = w.enabled {
            hook.insert("enabled".into(), Value::Bool(enabled));
        }
        let given = endpoint::Given {
            auth: w.auth,
            tls: w.tls,
            signature_header: w.signature_header,
            signature_scheme: w.signature_scheme,
            rate_limit: w.rate_limit,
        };
        endpoint::read(&format!("webhooks[{i}]"), &given, same_url, &mut hook)?;
        out.push(Value::Object(hook));
    }
    Ok(Value::Array(out))
}

/// Where a subscription's headers are: its own `headers`, or in Segment's form its
/// `mapping.headers`; with the key path as errors name it.
fn headers_of(sub: &mut Value) -> Option<(&mut Map<String, Value>, &'static str)> {
    let segment = sub.get("mapping").is_some_and(Value::is_object);
    let (holder, at) = match segment {
        true => (sub.get_mut("mapping")?, "mapping.headers"),
        false => (sub, "headers"),
    };
    Some((holder.get_mut("headers")?.as_object_mut()?, at))
}

/// A subscription's URL, in either form.
fn url_of(sub: &Value) -> Option<&str> {
    (sub.get("url").or_else(|| sub.get("mapping")?.get("url")))?.as_str()
}

/// The subscriptions of a PUT, their header values and endpoint secrets resolved as
/// webhooks' are: one given as `{"has_value": true}` keeps the stored value of the
/// subscription of the same name and URL (so it never goes to a URL it was not set for; a
/// secret of its auth also needs the same type and token URL), refused when there is none.
fn subscriptions(raw: &RawValue, current: Option<&Value>) -> Result<Value, Refusal> {
    let mut given: Vec<Value> = typed("subscriptions", raw)?;
    let stored = current
        .and_then(|c| c.get("subscriptions"))
        .and_then(Value::as_array);
    for (i, sub) in given.iter_mut().enumerate() {
        let name = sub.get("name").cloned();
        let url = url_of(sub).map(str::to_owned);
        let before = stored.and_then(|all| {
            all.iter()
                .find(|s| s.get("name") == name.as_ref() && url_of(s) == url.as_deref())
        });
        let mut before = before.cloned();
        if let Some(obj) = sub.as_object_mut() {
            endpoint::read_json(&format!("subscriptions[{i}]"), obj, before.as_ref())?;
        }
        let kept = before.as_mut().and_then(headers_of).map(|(h, _)| h.clone());
        let Some((headers, at)) = headers_of(sub) else {
            continue;
        };
        for (header, value) in headers.iter_mut() {
            if !WriteOnly::is_keep(value) {
                continue;
            }
            match kept.as_ref().and_then(|k| k.get(header)) {
                Some(v) => *value = v.clone(),
                None => {
                    return Err((
                        format!("subscriptions[{i}].{at}.{header}"),
                        "no value is kept for this header of a subscription of this name and \
                         URL: give its value"
                            .into(),
                    ))
                }
            }
        }
    }
    Ok(Value::Array(given))
}

/// A subscription as the API shows it: its header values and endpoint secrets write-only
/// (`{"has_value": true}`), as a webhook's are.
fn shown_subscription(sub: &Value) -> Value {
    let mut sub = sub.clone();
    if let Some(obj) = sub.as_object_mut() {
        endpoint::hide_secrets(obj);
    }
    if let Some((headers, _)) = headers_of(&mut sub) {
        for value in headers.values_mut() {
            *value = json!({"has_value": true});
        }
    }
    sub
}

/// `forward` of a PUT: the stored write key stays when it is left out.
fn forward(raw: &RawValue, current: Option<&Value>) -> Result<Value, Refusal> {
    let given: ForwardBody = typed("forward", raw)?;
    let mut out = Map::new();
    if let Some(e) = given.endpoint {
        out.insert("endpoint".into(), Value::String(e));
    }
    let key = given.write_key.map(Value::String).or_else(|| {
        (current.and_then(|c| c.get("forward")))
            .and_then(|f| f.get("write_key"))
            .cloned()
    });
    if let Some(k) = key {
        out.insert("write_key".into(), k);
    }
    Ok(Value::Object(out))
}

/// A stored body back into its source (at start, and a fleet's changes).
pub fn load(stored: &Value, base: &Base) -> Result<config::SourceSpec, Refusal> {
    let id = stored.get("id").and_then(Value::as_str).unwrap_or("");
    let mut body = stored.clone();
    if let Value::Object(map) = &mut body {
        map.remove("id");
        map.remove(REVISION);
        strip_nulls(map);
    }
    let file: SourceFile = serde_path_to_error::deserialize(&body)
        .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))?;
    base.source(&file, "", ManagedBy::Api, id)
}

/// Bodies stored by earlier versions may hold nulls: a null is a value left out.
fn strip_nulls(map: &mut Map<String, Value>) {
    map.retain(|_, v| !v.is_null());
    for (k, v) in map.iter_mut() {
        // A mapping's null is a value of its own (`{"@literal": null}`).
        if k == "subscriptions" {
            continue;
        }
        match v {
            Value::Object(m) => strip_nulls(m),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(m) = item {
                        strip_nulls(m);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Seconds as the file writes them.
fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// What the API shows of `spec`: every field a PUT takes but the secrets and header values
/// (whether each is set instead), the delivery settings the source sets itself, and who
/// manages it.
pub fn view(spec: &config::SourceSpec) -> schema::Source {
    let c = &spec.core;
    let webhooks = c.webhooks.iter().map(endpoint::view).collect();
    let forward = c.write_key.as_ref().map(|_| schema::ForwardView {
        endpoint: c.endpoint.clone(),
        has_write_key: true,
    });
    let own = |key: &str| spec.own_keys.contains(&key);
    let pick = |key: &str, v: f64| own(key).then_some(v);
    let delivery = schema::Delivery {
        timeout: pick("timeout", secs(c.timeout)),
        max_retry_duration: pick("max_retry_duration", secs(c.retry.max_retry_duration)),
        max_backoff: pick("max_backoff", secs(c.retry.max_backoff)),
        retry_base: pick("retry_base", secs(c.retry.base)),
        max_retry_after: pick("max_retry_after", secs(c.retry.max_retry_after)),
        max_in_flight: own("max_in_flight").then_some(c.max_in_flight),
        workers: own("workers").then_some(c.workers),
        signature_scheme: own("signature_scheme").then(|| c.signature_scheme.as_str().into()),
        webhook_user_agent: own("webhook_user_agent").then(|| c.webhook_user_agent.clone()),
        gzip: own("gzip").then_some(c.gzip),
        flush_at: own("flush_at").then_some(c.flush_at),
        max_batch_messages: own("max_batch_messages")
            .then_some(c.max_batch_messages)
            .flatten(),
        flush_interval: pick("flush_interval", secs(c.flush_interval)),
        max_queue_size: own("max_queue_size").then_some(c.max_queue_size),
        queue_full_wait: pick("queue_full_wait", secs(c.queue_full_wait)),
        ca_certs: own("ca_certs").then(|| c.ca_certs.clone()).flatten(),
        spool_max_bytes: own("spool_max_bytes").then_some(c.spool_max_bytes),
        dead_letters: own("dead_letters").then_some(c.dead_letters),
        dead_letter_retention: pick("dead_letter_retention", secs(c.dead_letter_retention)),
        dead_letter_max_bytes: own("dead_letter_max_bytes").then_some(c.dead_letter_max_bytes),
        attempt_log_size: own("attempt_log_size").then_some(c.attempt_log_size),
        attempt_retention: pick("attempt_retention", secs(c.attempt_retention)),
        allowed_networks: own("allowed_networks").then(|| c.allowed_networks.clone()),
        forward_allowed_networks: own("forward_allowed_networks")
            .then(|| c.endpoint_allowed_networks.clone()),
    };
    schema::Source {
        name: spec.name.clone(),
        id: (!spec.id.is_empty()).then(|| spec.id.clone()),
        managed_by: match spec.managed_by {
            ManagedBy::File => schema::ManagedBy::File,
            ManagedBy::Api => schema::ManagedBy::Api,
        },
        write_keys: spec.write_keys.clone(),
        allowed_origins: spec.allowed_origins.clone(),
        webhooks,
        subscriptions: spec.subscriptions.iter().map(shown_subscription).collect(),
        has_shared_secret: c.shared_secret.is_some(),
        forward,
        delivery,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_refused_before_its_value_is_read() {
        // The value after "x" is not even JSON: it is never looked at.
        let body = br#"{"webhooks": [], "x": [0, 0, 0 this is not json"#;
        let Err((field, why)) = Fields::scan(body) else {
            panic!("accepted")
        };
        assert_eq!(
            (field.as_str(), why.as_str()),
            ("x", "not a setting of a source")
        );
        let Err((field, why)) = Fields::scan(br#"{"timeout": 1, "timeout": 2}"#) else {
            panic!("accepted")
        };
        assert_eq!((field.as_str(), why.as_str()), ("timeout", "given twice"));
        assert!(Fields::scan(b"[1]").is_err());
        assert!(Fields::scan(br#"{"timeout": 1} x"#).is_err());
    }

    #[test]
    fn a_change_is_named_by_its_fields_never_by_a_secrets_value() {
        let before = json!({"name": "web", "id": "a", "revision": 1, "write_keys": ["k"],
            "shared_secret": "old-SECRET", "timeout": 2,
            "webhooks": [{"url": "https://a/", "headers": {"X-Key": "v1", "X-Same": "s"}},
                         {"url": "https://b/"}],
            "forward": {"endpoint": "https://f/", "write_key": "wk-SECRET"}});
        let after = json!({"name": "web", "id": "a", "revision": 2, "write_keys": ["k"],
            "shared_secret": "new-SECRET", "timeout": 2.0,
            "webhooks": [{"url": "https://a/", "headers": {"X-Key": "v2", "X-Same": "s"},
                          "enabled": false}],
            "forward": {"endpoint": "https://f/", "write_key": "wk2-SECRET"}});
        let changed = changed_fields(Some(&before), &after);
        assert_eq!(
            changed,
            [
                "forward.write_key",
                "shared_secret",
                "webhooks[0].enabled",
                "webhooks[0].headers[\"X-Key\"]",
                "webhooks[1]"
            ]
        );
        assert!(!changed.concat().contains("SECRET") && !changed.concat().contains("v2"));
        let made = changed_fields(None, &after);
        assert!(
            made.contains(&"webhooks[0]".to_string()) && made.contains(&"write_keys".to_string())
        );
        assert!(changed_fields(Some(&after), &after).is_empty());
    }

    #[test]
    fn settings_compare_by_meaning() {
        let current = json!({"timeout": 2.0, "webhooks": [{"url": "u", "headers": {}}]});
        let same = |body: &[u8]| {
            let f = Fields::scan(body).unwrap();
            changes_forbidden(&f, &current, &["webhooks"]).is_ok()
        };
        assert!(same(br#"{"timeout": 2, "webhooks": []}"#));
        assert!(same(br#"{"timeout": 2.0}"#));
        assert!(!same(br#"{"timeout": 3}"#));
        assert!(same(br#"{"webhooks": []}"#), "timeout left out stays");
        assert!(json_eq(&json!({"a": 1, "b": null}), &json!({"a": 1.0})));
    }
}
