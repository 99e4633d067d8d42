//! The checks of how a webhook's endpoint wants to be called (`auth`, `tls`,
//! `signature_header`, `signature_scheme`, `rate_limit`): here, so every face gets the same
//! rules and errors.

use crate::error::Error;
use crate::model::config::{check_url, SignatureScheme};
use crate::model::endpoint::Auth;
use base64::Engine as _;
use http::{HeaderName, HeaderValue};

/// Longest Basic user, password, bearer token or OAuth2 field: they ride every request's head.
const MAX_CREDENTIAL: usize = 4096;

/// Header names the signature may not take: the transport's and the other scheme's.
const SIGNATURE_RESERVED: [&str; 7] = [
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "authorization",
    "user-agent",
];

/// What a webhook's endpoint settings add to each request, once checked.
#[derive(Clone, Debug, Default)]
pub(crate) struct Checked {
    /// `Authorization` for Basic and bearer (OAuth2's is asked for at delivery).
    pub authorization: Option<HeaderValue>,
    /// The signature's header, when not the scheme's own.
    pub signature_header: Option<HeaderName>,
}

/// Checks webhook `i`'s endpoint settings: `auth`, `tls`, `signature_header`,
/// `signature_scheme` (against `shared_secret`), `rate_limit`.
pub(crate) fn check(
    i: usize,
    hook: &crate::model::config::Webhook,
    has_static_authorization: bool,
) -> Result<Checked, Error> {
    let setting = |field: &str| format!("webhooks[{i}].{field}");
    let mut checked = Checked::default();
    if let Some(auth) = &hook.auth {
        if has_static_authorization {
            return Err(Error::config(
                setting("auth"),
                "an Authorization header is set among the static headers too: keep one",
            ));
        }
        checked.authorization = check_auth(i, auth)?;
    }
    let tls = &hook.tls;
    match (&tls.client_cert, &tls.client_key) {
        (Some(_), None) => {
            return Err(Error::config(
                setting("tls.client_key"),
                "a client certificate needs its private key",
            ))
        }
        (None, Some(_)) => {
            return Err(Error::config(
                setting("tls.client_cert"),
                "a private key needs its client certificate",
            ))
        }
        _ => {}
    }
    if let Some(name) = &hook.signature_header {
        checked.signature_header = Some(check_signature_header(i, hook, name)?);
    }
    if let Some(rate) = hook.rate_limit {
        if rate.per_second == 0 {
            return Err(Error::config(
                setting("rate_limit.per_second"),
                "must be at least 1",
            ));
        }
        if rate.burst == 0 {
            return Err(Error::config(
                setting("rate_limit.burst"),
                "must be at least 1",
            ));
        }
    }
    Ok(checked)
}

/// A credential's text: given (unless `may_be_empty`), bounded, without control characters.
fn credential(i: usize, field: &str, value: &str, may_be_empty: bool) -> Result<(), Error> {
    let setting = || format!("webhooks[{i}].{field}");
    if !may_be_empty && value.is_empty() {
        return Err(Error::config(setting(), "must not be empty"));
    }
    if value.len() > MAX_CREDENTIAL {
        return Err(Error::config(
            setting(),
            format!("{} bytes, at most {MAX_CREDENTIAL}", value.len()),
        ));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(Error::config(
            setting(),
            "must not hold control characters (CR, LF, NUL, ...)",
        ));
    }
    Ok(())
}

/// Webhook `i`'s `auth`, checked: the `Authorization` it sends as it is (Basic, bearer), or
/// none (OAuth2 asks its token when sending).
fn check_auth(i: usize, auth: &Auth) -> Result<Option<HeaderValue>, Error> {
    let setting = |field: &str| format!("webhooks[{i}].{field}");
    match auth {
        Auth::Basic { user, password } => {
            credential(i, "auth.user", user, false)?;
            credential(i, "auth.password", password, true)?;
            if user.contains(':') {
                return Err(Error::config(
                    setting("auth.user"),
                    "must not contain ':' (RFC 7617)",
                ));
            }
            let pair =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            Ok(Some(header_value(&format!("Basic {pair}"))?))
        }
        Auth::Bearer { token } => {
            credential(i, "auth.token", token, false)?;
            // RFC 6750's b64token: visible ASCII, no spaces.
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Error::config(
                    setting("auth.token"),
                    "must be visible ASCII without spaces (RFC 6750)",
                ));
            }
            Ok(Some(header_value(&format!("Bearer {token}"))?))
        }
        Auth::OAuth2(o) => {
            check_url(&setting("auth.token_url"), &o.token_url)?;
            credential(i, "auth.client_id", &o.client_id, false)?;
            match &o.client_assertion_key {
                None => credential(i, "auth.client_secret", &o.client_secret, false)?,
                Some(_) if !o.client_secret.is_empty() => {
                    return Err(Error::config(
                        setting("auth.client_secret"),
                        "give a client secret or a client assertion key, not both",
                    ))
                }
                Some(_) => {}
            }
            if let Some(scope) = &o.scope {
                credential(i, "auth.scope", scope, false)?;
            }
            if let Some(audience) = &o.audience {
                credential(i, "auth.audience", audience, false)?;
            }
            Ok(None)
        }
    }
}

/// Webhook `i`'s `signature_header`, checked against the scheme and its static headers.
fn check_signature_header(
    i: usize,
    hook: &crate::model::config::Webhook,
    name: &str,
) -> Result<HeaderName, Error> {
    let setting = |field: &str| format!("webhooks[{i}].{field}");
    let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        Error::config(
            setting("signature_header"),
            "must be an HTTP token (letters, digits, !#$%&'*+-.^_`|~)",
        )
    })?;
    if SIGNATURE_RESERVED.contains(&parsed.as_str()) {
        return Err(Error::config(
            setting("signature_header"),
            format!("{name} is set by outbound and cannot carry the signature"),
        ));
    }
    if hook.signature_scheme == Some(SignatureScheme::StandardWebhooks) {
        return Err(Error::config(
            setting("signature_header"),
            "Standard Webhooks names its own headers (webhook-signature)",
        ));
    }
    if hook
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case(name))
    {
        return Err(Error::config(
            setting("signature_header"),
            format!("{name} is also a static header: keep one"),
        ));
    }
    Ok(parsed)
}

fn header_value(text: &str) -> Result<HeaderValue, Error> {
    HeaderValue::from_str(text)
        .map_err(|_| Error::config("webhooks", "credentials must be visible ASCII"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::Webhook;
    use crate::model::endpoint::{EndpointTls, OAuth2, RateLimit};

    fn err(hook: Webhook) -> String {
        check(0, &hook, false).unwrap_err().to_string()
    }

    #[test]
    fn basic_and_bearer_become_one_authorization_header() {
        let hook = Webhook::new("https://h.example/x").auth(Auth::basic("Aladdin", "open sesame"));
        let c = check(0, &hook, false).unwrap();
        assert_eq!(
            c.authorization.unwrap(),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        let hook = Webhook::new("https://h.example/x").auth(Auth::bearer("t0k"));
        assert_eq!(
            check(0, &hook, false).unwrap().authorization.unwrap(),
            "Bearer t0k"
        );
    }

    #[test]
    fn each_refusal_names_the_field() {
        let h = || Webhook::new("https://h.example/x");
        assert!(err(h().auth(Auth::basic("a:b", "p"))).contains("webhooks[0].auth.user"));
        assert!(err(h().auth(Auth::bearer(""))).contains("webhooks[0].auth.token"));
        assert!(err(h().auth(Auth::bearer("a\r\nb"))).contains("control characters"));
        assert!(err(h().auth(Auth::bearer("tök"))).contains("visible ASCII"));
        assert!(err(h().auth(Auth::bearer("a b"))).contains("visible ASCII"));
        assert!(
            err(h().auth(Auth::oauth2(OAuth2::new("ftp://x", "id", "s"))))
                .contains("webhooks[0].auth.token_url")
        );
        let cert_only = EndpointTls {
            client_cert: Some("cert".into()),
            ..EndpointTls::default()
        };
        assert!(err(h().tls(cert_only)).contains("webhooks[0].tls.client_key"));
        assert!(err(h().signature_header("Content-Type")).contains("signature_header"));
        assert!(err(h().signature_header("bad header")).contains("HTTP token"));
        assert!(err(h().rate_limit(RateLimit::per_second(0))).contains("rate_limit.per_second"));
        assert!(err(h().rate_limit(RateLimit::per_second(5).burst(0))).contains("rate_limit.burst"));
        let both = check(0, &h().auth(Auth::bearer("t")), true).unwrap_err();
        assert!(both.to_string().contains("Authorization header"), "{both}");
    }
}
