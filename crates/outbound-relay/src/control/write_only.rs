//! A write-only value as a PUT gives it (a header's value, an endpoint's password, token,
//! client secret or client key): the value, `{"has_value": true}` to keep the stored one,
//! or `null` to clear it. GET shows `{"has_value": true}` in its place, never the value.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// A write-only value of a PUT.
pub enum WriteOnly {
    Set(String),
    /// `{"has_value": true}`: the stored value stays.
    Keep,
    /// `null` (or `{"has_value": false}`): left out.
    Clear,
}

impl WriteOnly {
    /// Whether `value` (a JSON value a PUT holds where a write-only one may be) says to keep
    /// the stored value: exactly `{"has_value": true}`.
    pub fn is_keep(value: &serde_json::Value) -> bool {
        value.as_object().is_some_and(|o| {
            o.len() == 1 && o.get("has_value") == Some(&serde_json::Value::Bool(true))
        })
    }
}

impl<'de> Deserialize<'de> for WriteOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WriteOnly;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, null (to clear it) or {\"has_value\": true} (to keep it)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WriteOnly, E> {
                Ok(WriteOnly::Set(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<WriteOnly, E> {
                Ok(WriteOnly::Clear)
            }
            fn visit_none<E: de::Error>(self) -> Result<WriteOnly, E> {
                Ok(WriteOnly::Clear)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WriteOnly, A::Error> {
                let mut keep = false;
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    match k.as_ref() {
                        "has_value" => keep = map.next_value::<bool>()?,
                        _ => return Err(de::Error::unknown_field(&k, &["has_value"])),
                    }
                }
                match keep {
                    true => Ok(WriteOnly::Keep),
                    false => Ok(WriteOnly::Clear),
                }
            }
        }
        d.deserialize_any(V)
    }
}
