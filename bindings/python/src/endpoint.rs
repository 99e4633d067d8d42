//! A webhook as `outbound.Webhook` passes it, made the core's `Webhook`: its URL, static
//! headers, on or off, and how its endpoint wants to be called (`auth`, `tls`,
//! `signature_header`, `signature_scheme`, `rate_limit`). Only the Python shapes are checked
//! here (a dict, its keys, the type of each value); every rule about the values is the
//! core's, when the client is built, its errors naming the field (`webhooks[0].auth.user`).

use crate::errors::{self, to_py};
use outbound::{Auth, EndpointTls, OAuth2, RateLimit, SignatureScheme, Webhook};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::path::PathBuf;

/// URL, static headers in order, on or off, then `auth`, `tls`, `signature_header`,
/// `signature_scheme`, `rate_limit` (None when not set).
pub(crate) type WebhookArgs<'py> = (
    String,
    Vec<(String, String)>,
    bool,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
);

/// Webhook `i` of `webhooks=`.
pub(crate) fn webhook(i: usize, args: WebhookArgs<'_>) -> PyResult<Webhook> {
    let (url, headers, enabled, auth, tls, signature_header, signature_scheme, rate_limit) = args;
    let setting = |field: &str| format!("webhooks[{i}].{field}");
    let mut hook = Webhook::new(url).enabled(enabled);
    hook.headers = headers;
    if let Some(auth) = auth {
        hook.auth = Some(self::auth(&setting("auth"), &auth)?);
    }
    if let Some(tls) = tls {
        hook.tls = self::tls(&setting("tls"), &tls)?;
    }
    hook.signature_header = text(&setting("signature_header"), signature_header)?;
    if let Some(name) = text(&setting("signature_scheme"), signature_scheme)? {
        hook.signature_scheme = Some(SignatureScheme::parse(&name).map_err(|e| match e {
            outbound::Error::Config { reason, .. } => to_py(outbound::Error::Config {
                setting: setting("signature_scheme"),
                reason,
            }),
            other => to_py(other),
        })?);
    }
    if let Some(rate) = rate_limit {
        hook.rate_limit = Some(self::rate_limit(&setting("rate_limit"), &rate)?);
    }
    Ok(hook)
}

/// A str setting, or None.
fn text(setting: &str, v: Option<Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
            Err(_) => {
                let kind = type_name(&v);
                Err(errors::wrong_type(
                    setting,
                    format!("{setting} must be a str, not {kind}"),
                ))
            }
        },
    }
}

/// `{"type": "basic", "user": ..., "password": ...}`, `{"type": "bearer", "token": ...}` or
/// `{"type": "oauth2", "token_url": ..., "client_id": ..., "client_secret": ...,
/// "client_assertion_key": ..., "scope": ..., "audience": ...}` (all but the first two
/// optional; a secret absent is ""; the core refuses a secret and a key together).
fn auth(setting: &str, obj: &Bound<'_, PyAny>) -> PyResult<Auth> {
    let mut d = Fields::of(setting, obj)?;
    let kind = d.text("type")?;
    let auth = match kind.as_str() {
        "basic" => Auth::basic(d.text("user")?, d.text("password")?),
        "bearer" => Auth::bearer(d.text("token")?),
        "oauth2" => {
            let mut o = OAuth2::new(
                d.text("token_url")?,
                d.text("client_id")?,
                d.opt_text("client_secret")?.unwrap_or_default(),
            );
            o.client_assertion_key = d.pem_or_path("client_assertion_key")?;
            o.scope = d.opt_text("scope")?;
            o.audience = d.opt_text("audience")?;
            Auth::oauth2(o)
        }
        other => {
            return Err(errors::config(
                &format!("{setting}.type"),
                format!("{other:?} is not an auth type; use \"basic\", \"bearer\" or \"oauth2\""),
            ))
        }
    };
    d.done(&format!("{kind} auth"))?;
    Ok(auth)
}

/// `{"client_cert": ..., "client_key": ..., "ca_certs": ...}`, each PEM text or a path (str or
/// `os.PathLike`), each optional.
fn tls(setting: &str, obj: &Bound<'_, PyAny>) -> PyResult<EndpointTls> {
    let mut d = Fields::of(setting, obj)?;
    let tls = EndpointTls {
        client_cert: d.pem_or_path("client_cert")?,
        client_key: d.pem_or_path("client_key")?,
        ca_certs: d.pem_or_path("ca_certs")?,
    };
    d.done("tls")?;
    Ok(tls)
}

/// `{"per_second": n, "burst": m}`; `burst` is `per_second` when not given.
fn rate_limit(setting: &str, obj: &Bound<'_, PyAny>) -> PyResult<RateLimit> {
    let mut d = Fields::of(setting, obj)?;
    let per_second = d
        .count("per_second")?
        .ok_or_else(|| d.missing("per_second"))?;
    let burst = d.count("burst")?.unwrap_or(per_second);
    d.done("rate_limit")?;
    Ok(RateLimit::per_second(per_second).burst(burst))
}

/// The items of a settings dict, taken one by one; what is left at the end is refused.
struct Fields<'py> {
    setting: String,
    items: Vec<(String, Bound<'py, PyAny>)>,
}

impl<'py> Fields<'py> {
    fn of(setting: &str, obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        let dict = obj.cast::<PyDict>().map_err(|_| {
            let kind = type_name(obj);
            errors::wrong_type(setting, format!("{setting} must be a dict, not {kind}"))
        })?;
        let mut items = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| errors::wrong_type(setting, format!("{setting}: keys must be str")))?;
            items.push((key.to_cow()?.into_owned(), v));
        }
        Ok(Fields {
            setting: setting.to_string(),
            items,
        })
    }

    fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.setting)
    }

    /// The value of `key`, removed; None when absent or None.
    fn take(&mut self, key: &str) -> Option<Bound<'py, PyAny>> {
        let at = self.items.iter().position(|(k, _)| k == key)?;
        let (_, v) = self.items.remove(at);
        (!v.is_none()).then_some(v)
    }

    fn missing(&self, key: &str) -> PyErr {
        errors::config(&self.field(key), "missing")
    }

    fn opt_text(&mut self, key: &str) -> PyResult<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
                Err(_) => Err(self.wrong(key, "a str", &v)),
            },
        }
    }

    fn text(&mut self, key: &str) -> PyResult<String> {
        self.opt_text(key)?.ok_or_else(|| self.missing(key))
    }

    fn pem_or_path(&mut self, key: &str) -> PyResult<Option<String>> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let path: PathBuf = v
            .extract()
            .map_err(|_| self.wrong(key, "a str or os.PathLike", &v))?;
        path.into_os_string()
            .into_string()
            .map(Some)
            .map_err(|_| errors::config(&self.field(key), "must be valid UTF-8"))
    }

    fn count(&mut self, key: &str) -> PyResult<Option<u32>> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        if v.is_instance_of::<pyo3::types::PyBool>() {
            return Err(self.wrong(key, "an int", &v));
        }
        let n: i128 = v.extract().map_err(|_| self.wrong(key, "an int", &v))?;
        u32::try_from(n).map(Some).map_err(|_| {
            errors::config(
                &self.field(key),
                format!("{n} is not between 1 and {}", u32::MAX),
            )
        })
    }

    fn wrong(&self, key: &str, want: &str, v: &Bound<'_, PyAny>) -> PyErr {
        let field = self.field(key);
        let kind = type_name(v);
        errors::wrong_type(&field, format!("{field} must be {want}, not {kind}"))
    }

    /// Refuses the keys nobody took (a misspelt one would otherwise be ignored).
    fn done(self, what: &str) -> PyResult<()> {
        match self.items.first() {
            None => Ok(()),
            Some((key, _)) => Err(errors::config(
                &format!("{}.{key}", self.setting),
                format!("{what} has no such key"),
            )),
        }
    }
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .qualname()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
