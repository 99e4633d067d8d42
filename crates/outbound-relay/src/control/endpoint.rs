//! How a webhook's or a subscription's endpoint is called (`auth`, `tls`, `signature_header`,
//! `signature_scheme`, `rate_limit`) as the admin API reads and shows it. The values are the
//! core's to judge; this module keeps the secrets write-only: a password, token, client
//! secret or client key is shown as `{"has_value": true}`, and sent back so it keeps the
//! stored value only where it cannot reach anyone it was not given for (the same URL; for
//! auth the same `type`, and for OAuth2 the same `token_url`, where the client secret goes).
//! Fields are named under the endpoint's place (`webhooks[0]`, `subscriptions[2]`).

use super::schema::{self, HasValue};
use super::write_only::WriteOnly;
use outbound::{Auth, Webhook};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A refusal: the field and why.
type Refusal = (String, String);

/// The endpoint settings in a PUT body, as sent (each left out or null: unset).
pub struct Given<'a> {
    pub auth: Option<&'a RawValue>,
    pub tls: Option<&'a RawValue>,
    pub signature_header: Option<&'a RawValue>,
    pub signature_scheme: Option<&'a RawValue>,
    pub rate_limit: Option<&'a RawValue>,
}

/// `auth` as a PUT gives it: every field any type takes; the file's shape then refuses a
/// field its type does not take, naming it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    password: Option<WriteOnly>,
    #[serde(default)]
    token: Option<WriteOnly>,
    #[serde(default)]
    token_url: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<WriteOnly>,
    #[serde(default)]
    client_assertion_key: Option<WriteOnly>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    audience: Option<String>,
}

/// `tls` as a PUT gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsBody {
    #[serde(default)]
    client_cert: Option<String>,
    #[serde(default)]
    client_key: Option<WriteOnly>,
    #[serde(default)]
    ca_certs: Option<String>,
}

/// `raw` read as a `T`, a refusal naming `at` and the path inside it.
fn typed<'a, T: Deserialize<'a>>(at: &str, raw: &'a RawValue) -> Result<T, Refusal> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.path().to_string();
        let at = match inner.as_str() {
            "." | "" => at.to_string(),
            p => format!("{at}.{p}"),
        };
        (at, e.into_inner().to_string())
    })
}

/// The endpoint settings of a PUT at `place` (`webhooks[0]`) into `hook` (the stored form,
/// secrets included), a kept secret taken from `before`: the stored webhook at the same place
/// with the same URL, or the stored subscription of the same name and URL.
pub fn read(
    place: &str,
    given: &Given<'_>,
    before: Option<&Value>,
    hook: &mut Map<String, Value>,
) -> Result<(), Refusal> {
    let at = |field: &str| format!("{place}.{field}");
    if let Some(raw) = given.auth {
        let before = before.and_then(|b| b.get("auth"));
        hook.insert(
            "auth".into(),
            auth(&at("auth"), typed(&at("auth"), raw)?, before)?,
        );
    }
    if let Some(raw) = given.tls {
        let before = before.and_then(|b| b.get("tls"));
        hook.insert(
            "tls".into(),
            tls(&at("tls"), typed(&at("tls"), raw)?, before)?,
        );
    }
    for (key, raw) in [
        ("signature_header", given.signature_header),
        ("signature_scheme", given.signature_scheme),
        ("rate_limit", given.rate_limit),
    ] {
        if let Some(raw) = raw {
            let value: Value = typed(&at(key), raw)?;
            hook.insert(key.into(), value);
        }
    }
    Ok(())
}

/// The endpoint settings of a subscription of a PUT (our JSON, `sub`), resolved in place as
/// a webhook's are (`read`); `null` ones left out.
pub fn read_json(
    place: &str,
    sub: &mut Map<String, Value>,
    before: Option<&Value>,
) -> Result<(), Refusal> {
    let mut raws = Vec::new();
    for key in KEYS {
        match sub.remove(key) {
            None | Some(Value::Null) => {}
            Some(v) => {
                let raw = serde_json::value::to_raw_value(&v)
                    .map_err(|e| (format!("{place}.{key}"), e.to_string()))?;
                raws.push((key, raw));
            }
        }
    }
    let raw = |key: &str| (raws.iter()).find_map(|(k, r)| (*k == key).then_some(&**r));
    let given = Given {
        auth: raw("auth"),
        tls: raw("tls"),
        signature_header: raw("signature_header"),
        signature_scheme: raw("signature_scheme"),
        rate_limit: raw("rate_limit"),
    };
    read(place, &given, before, sub)
}

/// What GET shows of endpoint settings stored as JSON (a subscription's): each secret as
/// `{"has_value": true}` (an empty client secret, unset with a client assertion key, not at
/// all), as a webhook's are.
pub fn hide_secrets(sub: &mut Map<String, Value>) {
    let hide = |m: Option<&mut Value>, keys: &[&str]| {
        let Some(Value::Object(m)) = m else {
            return;
        };
        for key in keys {
            match m.get(*key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() && *key != "password" => {
                    m.remove(*key);
                }
                Some(_) => {
                    m.insert(key.to_string(), serde_json::json!({"has_value": true}));
                }
            }
        }
    };
    let secrets = ["password", "token", "client_secret", "client_assertion_key"];
    hide(sub.get_mut("auth"), &secrets);
    hide(sub.get_mut("tls"), &["client_key"]);
}

/// A secret of a PUT resolved: the value given, the stored one (kept, when `may_keep`), or
/// none (cleared).
fn secret(
    at: &str,
    given: Option<WriteOnly>,
    stored: Option<&Value>,
    may_keep: bool,
) -> Result<Option<Value>, Refusal> {
    match given {
        None | Some(WriteOnly::Clear) => Ok(None),
        Some(WriteOnly::Set(v)) => Ok(Some(Value::String(v))),
        Some(WriteOnly::Keep) => match stored.filter(|_| may_keep).and_then(Value::as_str) {
            Some(v) => Ok(Some(Value::String(v.to_string()))),
            None => Err((
                at.to_string(),
                "no value is kept for it at this endpoint's URL (and auth type and token_url): \
                 give its value"
                    .into(),
            )),
        },
    }
}

fn auth(at: &str, a: AuthBody, before: Option<&Value>) -> Result<Value, Refusal> {
    let field = |k: &str| format!("{at}.{k}");
    let stored = |k: &str| before.and_then(|b| b.get(k));
    let same_type = stored("type").and_then(Value::as_str) == Some(a.kind.as_str());
    // The client secret goes to the token URL: kept only for the one it was given for.
    let same_server = stored("token_url").and_then(Value::as_str) == a.token_url.as_deref();
    let mut out = Map::new();
    out.insert("type".into(), Value::String(a.kind));
    let plain = [
        ("user", a.user),
        ("token_url", a.token_url),
        ("client_id", a.client_id),
        ("scope", a.scope),
        ("audience", a.audience),
    ];
    for (k, v) in plain {
        if let Some(v) = v {
            out.insert(k.into(), Value::String(v));
        }
    }
    let secrets = [
        ("password", a.password, same_type),
        ("token", a.token, same_type),
        ("client_secret", a.client_secret, same_type && same_server),
        (
            "client_assertion_key",
            a.client_assertion_key,
            same_type && same_server,
        ),
    ];
    for (k, given, may_keep) in secrets {
        if let Some(v) = secret(&field(k), given, stored(k), may_keep)? {
            out.insert(k.into(), v);
        }
    }
    // Through the API the key is PEM text: a path would be read on the relay's host.
    if let Some(key) = out.get("client_assertion_key").and_then(Value::as_str) {
        if !key.trim_start().starts_with("-----BEGIN") {
            let why = "must be PEM text through the API (a path would be read on the relay's host)";
            return Err((field("client_assertion_key"), why.into()));
        }
    }
    Ok(Value::Object(out))
}

fn tls(at: &str, t: TlsBody, before: Option<&Value>) -> Result<Value, Refusal> {
    let field = |k: &str| format!("{at}.{k}");
    let mut out = Map::new();
    for (k, v) in [("client_cert", t.client_cert), ("ca_certs", t.ca_certs)] {
        if let Some(v) = v {
            out.insert(k.into(), Value::String(v));
        }
    }
    let stored = before.and_then(|b| b.get("client_key"));
    if let Some(v) = secret(&field("client_key"), t.client_key, stored, true)? {
        out.insert("client_key".into(), v);
    }
    // Through the API each is PEM text: a path would be read on the relay's host.
    for (k, v) in &out {
        if !v
            .as_str()
            .unwrap_or("")
            .trim_start()
            .starts_with("-----BEGIN")
        {
            let why = "must be PEM text through the API (a path would be read on the relay's host)";
            return Err((field(k), why.into()));
        }
    }
    Ok(Value::Object(out))
}

/// The keys of the endpoint settings.
pub const KEYS: [&str; 5] = [
    "auth",
    "tls",
    "signature_header",
    "signature_scheme",
    "rate_limit",
];

/// The endpoint settings that differ between two stored endpoints at `place`, by name only
/// (`webhooks[0].auth.password`, `subscriptions[1].rate_limit`): never a value.
pub fn changed(place: &str, before: &Value, after: &Value, out: &mut Vec<String>) {
    for key in KEYS {
        let (x, y) = (before.get(key), after.get(key));
        match (x.and_then(Value::as_object), y.and_then(Value::as_object)) {
            (Some(a), Some(b)) if key != "rate_limit" => {
                let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
                names.sort();
                names.dedup();
                for k in names.into_iter().filter(|k| a.get(*k) != b.get(*k)) {
                    out.push(format!("{place}.{key}.{k}"));
                }
            }
            _ if x == y => {}
            _ => out.push(format!("{place}.{key}")),
        }
    }
}

/// What GET shows of webhook `w`.
pub fn view(w: &Webhook) -> schema::WebhookView {
    let kept = || HasValue { has_value: true };
    let auth = w.auth.as_ref().and_then(|a| match a {
        Auth::Basic { user, .. } => Some(schema::AuthView::Basic {
            user: user.clone(),
            password: kept(),
        }),
        Auth::Bearer { .. } => Some(schema::AuthView::Bearer { token: kept() }),
        Auth::OAuth2(o) => Some(schema::AuthView::OAuth2 {
            token_url: o.token_url.clone(),
            client_id: o.client_id.clone(),
            client_secret: (!o.client_secret.is_empty()).then(kept),
            client_assertion_key: o.client_assertion_key.as_ref().map(|_| kept()),
            scope: o.scope.clone(),
            audience: o.audience.clone(),
        }),
        // A kind of a later core: not shown rather than shown wrong.
        _ => None,
    });
    let tls = (!w.tls.is_default()).then(|| schema::TlsView {
        client_cert: w.tls.client_cert.clone(),
        client_key: w.tls.client_key.as_ref().map(|_| kept()),
        ca_certs: w.tls.ca_certs.clone(),
    });
    schema::WebhookView {
        url: w.url.clone(),
        headers: (w.headers.iter())
            .map(|(k, _)| (k.clone(), kept()))
            .collect(),
        enabled: w.enabled,
        auth,
        tls,
        signature_header: w.signature_header.clone(),
        signature_scheme: w.signature_scheme.map(|s| s.as_str().to_string()),
        rate_limit: w.rate_limit.map(|r| schema::RateLimit {
            per_second: r.per_second,
            burst: Some(r.burst),
        }),
    }
}
