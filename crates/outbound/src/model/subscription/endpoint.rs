//! How a subscription's endpoint wants to be called, read from our JSON settings with the
//! keys and shapes of a webhook's in the relay's API: `auth`, `tls`, `signature_header`,
//! `signature_scheme`, `rate_limit`. Only the shapes are read here; the values are checked
//! when the client is built, as a webhook's are. An error never holds a value: some are
//! secrets.

use crate::error::Error;
use crate::model::endpoint::{Auth, Endpoint, EndpointTls, OAuth2, RateLimit, SignatureScheme};
use serde_json::{Map, Value};

/// The fields each auth type takes.
const BASIC: &[&str] = &["type", "user", "password"];
const BEARER: &[&str] = &["type", "token"];
const OAUTH2: &[&str] = &[
    "type",
    "token_url",
    "client_id",
    "client_secret",
    "client_assertion_key",
    "scope",
    "audience",
];
const TLS: &[&str] = &["client_cert", "client_key", "ca_certs"];
const RATE: &[&str] = &["per_second", "burst"];

/// The endpoint settings of the subscription `top` (a `null` is a setting left out).
pub(crate) fn read(top: &Map<String, Value>) -> Result<Endpoint, Error> {
    let mut e = Endpoint::default();
    if let Some(v) = given(top, "auth") {
        e.auth = Some(auth(object("auth", v, None)?)?);
    }
    if let Some(v) = given(top, "tls") {
        let t = object("tls", v, Some(TLS))?;
        e.tls = EndpointTls {
            client_cert: text(t, "tls", "client_cert")?,
            client_key: text(t, "tls", "client_key")?,
            ca_certs: text(t, "tls", "ca_certs")?,
        };
    }
    e.signature_header = text(top, "", "signature_header")?;
    if let Some(name) = text(top, "", "signature_scheme")? {
        let scheme = SignatureScheme::parse(&name).map_err(|e| match e {
            Error::Config { reason, .. } => Error::config("signature_scheme", reason),
            other => other,
        })?;
        e.signature_scheme = Some(scheme);
    }
    if let Some(v) = given(top, "rate_limit") {
        let r = object("rate_limit", v, Some(RATE))?;
        let per_second = count(r, "per_second")?
            .ok_or_else(|| Error::config("rate_limit.per_second", "is required"))?;
        let burst = count(r, "burst")?.unwrap_or(per_second);
        e.rate_limit = Some(RateLimit::per_second(per_second).burst(burst));
    }
    Ok(e)
}

/// `key` of `m`, unless absent or `null`.
fn given<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).filter(|v| !v.is_null())
}

fn at(prefix: &str, key: &str) -> String {
    match prefix {
        "" => key.to_string(),
        p => format!("{p}.{key}"),
    }
}

/// `v` as an object whose keys are among `fields` (any, when `None`).
fn object<'a>(
    setting: &str,
    v: &'a Value,
    fields: Option<&[&str]>,
) -> Result<&'a Map<String, Value>, Error> {
    let m = v
        .as_object()
        .ok_or_else(|| Error::config(setting, "must be a JSON object"))?;
    if let Some(fields) = fields {
        refuse_others(setting, m, fields, setting)?;
    }
    Ok(m)
}

/// Refuses a key of `m` not among `fields` (a misspelt one would otherwise be ignored).
fn refuse_others(
    setting: &str,
    m: &Map<String, Value>,
    fields: &[&str],
    what: &str,
) -> Result<(), Error> {
    match m.keys().find(|k| !fields.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(Error::config(
            at(setting, k),
            format!("is not a field of {what} ({})", fields.join(", ")),
        )),
    }
}

/// A string setting, or none.
fn text(m: &Map<String, Value>, prefix: &str, key: &str) -> Result<Option<String>, Error> {
    match given(m, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::config(at(prefix, key), "must be a string")),
    }
}

fn required(m: &Map<String, Value>, prefix: &str, key: &str) -> Result<String, Error> {
    text(m, prefix, key)?.ok_or_else(|| Error::config(at(prefix, key), "is required"))
}

/// A whole number of at most `u32::MAX`, or none.
fn count(m: &Map<String, Value>, key: &str) -> Result<Option<u32>, Error> {
    let Some(v) = given(m, key) else {
        return Ok(None);
    };
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| {
            Error::config(
                at("rate_limit", key),
                format!("must be a whole number from 1 to {}", u32::MAX),
            )
        })
}

/// `auth` by its `type`: the fields of that type only.
fn auth(a: &Map<String, Value>) -> Result<Auth, Error> {
    let kind = required(a, "auth", "type")?;
    let fields = match kind.as_str() {
        "basic" => BASIC,
        "bearer" => BEARER,
        "oauth2" => OAUTH2,
        other => {
            return Err(Error::config(
                "auth.type",
                format!("{other:?} is not an auth type; use \"basic\", \"bearer\" or \"oauth2\""),
            ))
        }
    };
    refuse_others("auth", a, fields, &format!("{kind} auth"))?;
    let field = |key: &str| text(a, "auth", key);
    Ok(match kind.as_str() {
        "basic" => Auth::basic(
            required(a, "auth", "user")?,
            field("password")?.unwrap_or_default(),
        ),
        "bearer" => Auth::bearer(required(a, "auth", "token")?),
        _ => {
            let mut o = OAuth2::new(
                required(a, "auth", "token_url")?,
                required(a, "auth", "client_id")?,
                field("client_secret")?.unwrap_or_default(),
            );
            o.client_assertion_key = field("client_assertion_key")?;
            o.scope = field("scope")?;
            o.audience = field("audience")?;
            Auth::oauth2(o)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> Result<Endpoint, String> {
        read(v.as_object().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn each_setting_reads_as_a_webhook_s() {
        let e = of(json!({
            "auth": {"type": "oauth2", "token_url": "https://a.example/t", "client_id": "id",
                     "client_secret": "s", "scope": "events"},
            "tls": {"client_cert": "c.pem", "client_key": "k.pem", "ca_certs": null},
            "signature_header": "X-Sig", "signature_scheme": "hmac-sha256",
            "rate_limit": {"per_second": 5}
        }))
        .unwrap();
        let mut o = OAuth2::new("https://a.example/t", "id", "s");
        o.scope = Some("events".into());
        let want = Endpoint::new()
            .auth(Auth::oauth2(o))
            .tls(EndpointTls {
                client_cert: Some("c.pem".into()),
                client_key: Some("k.pem".into()),
                ca_certs: None,
            })
            .signature_header("X-Sig")
            .signature_scheme(SignatureScheme::HmacSha256)
            .rate_limit(RateLimit::per_second(5));
        assert_eq!(e, want);
        let basic = of(json!({"auth": {"type": "basic", "user": "u"}})).unwrap();
        assert_eq!(basic.auth, Some(Auth::basic("u", "")));
        assert!(of(json!({"auth": null, "tls": null})).unwrap().is_default());
    }

    #[test]
    fn a_bad_shape_is_refused_naming_the_field_never_the_value() {
        let cases = [
            (json!({"auth": "x"}), "auth: must be a JSON object"),
            (json!({"auth": {"type": "digest"}}), "auth.type"),
            (
                json!({"auth": {"type": "bearer"}}),
                "auth.token: is required",
            ),
            (
                json!({"auth": {"type": "bearer", "token": 7}}),
                "auth.token: must be a string",
            ),
            (
                json!({"auth": {"type": "bearer", "token": "t", "user": "u"}}),
                "auth.user: is not a field of bearer auth",
            ),
            (
                json!({"auth": {"type": "oauth2", "client_id": "i"}}),
                "auth.token_url: is required",
            ),
            (
                json!({"tls": {"client_crt": "c"}}),
                "tls.client_crt: is not a field of tls",
            ),
            (json!({"signature_scheme": "md5"}), "signature_scheme"),
            (
                json!({"signature_header": 1}),
                "signature_header: must be a string",
            ),
            (
                json!({"rate_limit": {"burst": 2}}),
                "rate_limit.per_second: is required",
            ),
            (
                json!({"rate_limit": {"per_second": -1}}),
                "rate_limit.per_second: must be a whole number",
            ),
            (
                json!({"rate_limit": {"per_second": 1.5}}),
                "rate_limit.per_second: must be a whole number",
            ),
        ];
        for (v, want) in cases {
            let got = of(v.clone()).unwrap_err();
            assert!(got.contains(want), "{v}: {got}");
        }
        let got = of(json!({"auth": {"type": "basic", "user": "u", "password": ["s3cret"]}}))
            .unwrap_err();
        assert!(
            got.contains("auth.password") && !got.contains("s3cret"),
            "{got}"
        );
    }
}
