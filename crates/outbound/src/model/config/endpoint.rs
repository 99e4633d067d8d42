//! How one webhook endpoint wants to be called: its authentication, its TLS identity and
//! roots, the header its signature goes in, and how fast it may be sent to. Checked here, so
//! every face gets the same rules and errors.

use crate::error::Error;
use crate::model::config::{check_url, SignatureScheme};
use base64::Engine as _;
use http::{HeaderName, HeaderValue};
use std::fmt;

/// How the endpoint authenticates our requests (`Authorization`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// `Authorization: Basic base64(user:password)` (RFC 7617).
    Basic {
        /// The user name (no `:`).
        user: String,
        /// The password.
        password: String,
    },
    /// `Authorization: Bearer <token>` (RFC 6750), the token as given.
    Bearer {
        /// The token.
        token: String,
    },
    /// OAuth2 client credentials (RFC 6749 §4.4): a token asked of `token_url`, kept until it
    /// expires and sent as a bearer token. Boxed: every copy of a webhook's settings holds an
    /// `Auth`, and most webhooks have none or a short one.
    OAuth2(Box<OAuth2>),
}

impl Auth {
    /// Basic authentication.
    pub fn basic(user: impl Into<String>, password: impl Into<String>) -> Auth {
        Auth::Basic {
            user: user.into(),
            password: password.into(),
        }
    }

    /// A bearer token.
    pub fn bearer(token: impl Into<String>) -> Auth {
        Auth::Bearer {
            token: token.into(),
        }
    }

    /// OAuth2 client credentials.
    pub fn oauth2(o: OAuth2) -> Auth {
        Auth::OAuth2(Box::new(o))
    }

    /// `"basic"`, `"bearer"` or `"oauth2"`: the names every face takes.
    pub fn kind(&self) -> &'static str {
        match self {
            Auth::Basic { .. } => "basic",
            Auth::Bearer { .. } => "bearer",
            Auth::OAuth2(_) => "oauth2",
        }
    }
}

impl fmt::Debug for Auth {
    // By hand: passwords, tokens and client secrets never reach a log or a panic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Basic { user, .. } => f
                .debug_struct("Basic")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            Auth::Bearer { .. } => f.debug_struct("Bearer").finish_non_exhaustive(),
            Auth::OAuth2(o) => o.fmt(f),
        }
    }
}

/// OAuth2 client credentials. The token request is a form POST of
/// `grant_type=client_credentials` (with `scope` and `audience` when set) to `token_url`,
/// authenticated with HTTP Basic of the client id and secret (RFC 6749 §2.3.1), or, with
/// `client_assertion_key`, with a JWT client assertion signed by that key (RFC 7523); it goes under
/// the webhook's network guard, TLS settings and `timeout`. The answer's `access_token` is
/// used until shortly before its `expires_in`, and asked again once when the endpoint
/// answers 401. A failed token request fails the attempt as the delivery's would (a 5xx or
/// a timeout is retried; a 4xx is permanent), and its answer is never logged.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuth2 {
    /// The authorization server's token endpoint (absolute http or https).
    pub token_url: String,
    /// The client id.
    pub client_id: String,
    /// The client secret (empty with `client_assertion_key`).
    pub client_secret: String,
    /// A private key (RSA or P-256; PEM text or the path of a PEM file) that signs a JWT
    /// client assertion (RS256 or ES256; `iss` and `sub` the client id, `aud` the token URL,
    /// valid 5 minutes) in place of the secret.
    pub client_assertion_key: Option<String>,
    /// `scope`, space-separated, when the server wants one.
    pub scope: Option<String>,
    /// `audience` (Auth0 and others), when the server wants one.
    pub audience: Option<String>,
}

impl OAuth2 {
    /// Client credentials for `token_url`, without scope or audience.
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> OAuth2 {
        OAuth2 {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            client_assertion_key: None,
            scope: None,
            audience: None,
        }
    }

    /// Client credentials proven by a JWT signed with `key` (PEM text or a path) instead of
    /// a secret.
    pub fn with_assertion_key(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        key: impl Into<String>,
    ) -> OAuth2 {
        OAuth2 {
            client_assertion_key: Some(key.into()),
            ..OAuth2::new(token_url, client_id, "")
        }
    }

    /// Sets `scope`.
    pub fn scope(mut self, scope: impl Into<String>) -> OAuth2 {
        self.scope = Some(scope.into());
        self
    }

    /// Sets `audience`.
    pub fn audience(mut self, audience: impl Into<String>) -> OAuth2 {
        self.audience = Some(audience.into());
        self
    }
}

impl fmt::Debug for OAuth2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth2")
            .field(
                "token_url",
                &crate::log::url_for_log(&self.token_url, false),
            )
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field(
                "client_assertion_key",
                &self.client_assertion_key.as_ref().map(|_| "<redacted>"),
            )
            .field("scope", &self.scope)
            .field("audience", &self.audience)
            .finish()
    }
}

/// The endpoint's TLS: a client certificate for mutual TLS, and roots of its own.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EndpointTls {
    /// The client certificate (and its chain) shown to the endpoint: PEM text or the path of
    /// a PEM file. Needs `client_key`.
    pub client_cert: Option<String>,
    /// The client certificate's private key (PKCS#8, PKCS#1 or SEC1): PEM text or a path.
    pub client_key: Option<String>,
    /// The only roots this endpoint's certificate may chain to (PEM text or a path): a
    /// private CA. Unset: the web's roots and the client's `ca_certs`.
    pub ca_certs: Option<String>,
}

impl EndpointTls {
    /// True when nothing is set: the client's TLS applies.
    pub fn is_default(&self) -> bool {
        self == &EndpointTls::default()
    }
}

impl fmt::Debug for EndpointTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointTls")
            .field("client_cert", &self.client_cert.is_some())
            .field(
                "client_key",
                &self.client_key.as_ref().map(|_| "<redacted>"),
            )
            .field("ca_certs", &self.ca_certs.is_some())
            .finish()
    }
}

/// At most `per_second` requests a second to the endpoint, with bursts of up to `burst` (a
/// token bucket). A webhook request carries one event, so this is events a second too.
/// Requests past it wait in the endpoint's queue (shown as `throttled`), inside their retry
/// window; none is dropped for it. Each process enforces it on its own deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests a second, at least 1.
    pub per_second: u32,
    /// Requests sent at once after a quiet spell, at least 1.
    pub burst: u32,
}

impl RateLimit {
    /// `per_second` requests a second, bursts of as many.
    pub fn per_second(per_second: u32) -> RateLimit {
        RateLimit {
            per_second,
            burst: per_second,
        }
    }

    /// The same with bursts of `burst`.
    pub fn burst(self, burst: u32) -> RateLimit {
        RateLimit { burst, ..self }
    }
}

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
    let credential = |field: &str, value: &str, may_be_empty: bool| {
        if !may_be_empty && value.is_empty() {
            return Err(Error::config(setting(field), "must not be empty"));
        }
        if value.len() > MAX_CREDENTIAL {
            return Err(Error::config(
                setting(field),
                format!("{} bytes, at most {MAX_CREDENTIAL}", value.len()),
            ));
        }
        if value.chars().any(|c| c.is_control()) {
            return Err(Error::config(
                setting(field),
                "must not hold control characters (CR, LF, NUL, ...)",
            ));
        }
        Ok(())
    };
    let mut checked = Checked::default();
    if let Some(auth) = &hook.auth {
        if has_static_authorization {
            return Err(Error::config(
                setting("auth"),
                "an Authorization header is set among the static headers too: keep one",
            ));
        }
        match auth {
            Auth::Basic { user, password } => {
                credential("auth.user", user, false)?;
                credential("auth.password", password, true)?;
                if user.contains(':') {
                    return Err(Error::config(
                        setting("auth.user"),
                        "must not contain ':' (RFC 7617)",
                    ));
                }
                let pair =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                checked.authorization = Some(header_value(&format!("Basic {pair}"))?);
            }
            Auth::Bearer { token } => {
                credential("auth.token", token, false)?;
                // RFC 6750's b64token: visible ASCII, no spaces.
                if !token.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(Error::config(
                        setting("auth.token"),
                        "must be visible ASCII without spaces (RFC 6750)",
                    ));
                }
                checked.authorization = Some(header_value(&format!("Bearer {token}"))?);
            }
            Auth::OAuth2(o) => {
                check_url(&setting("auth.token_url"), &o.token_url)?;
                credential("auth.client_id", &o.client_id, false)?;
                match &o.client_assertion_key {
                    None => credential("auth.client_secret", &o.client_secret, false)?,
                    Some(_) if !o.client_secret.is_empty() => {
                        return Err(Error::config(
                            setting("auth.client_secret"),
                            "give a client secret or a client assertion key, not both",
                        ))
                    }
                    Some(_) => {}
                }
                if let Some(scope) = &o.scope {
                    credential("auth.scope", scope, false)?;
                }
                if let Some(audience) = &o.audience {
                    credential("auth.audience", audience, false)?;
                }
            }
        }
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
        checked.signature_header = Some(parsed);
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

fn header_value(text: &str) -> Result<HeaderValue, Error> {
    HeaderValue::from_str(text)
        .map_err(|_| Error::config("webhooks", "credentials must be visible ASCII"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::Webhook;

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

    #[test]
    fn secrets_never_show_in_debug() {
        let mut o = OAuth2::new("https://auth.example/token?k=1", "me", "s3cret");
        o.scope = Some("events".into());
        let shown = format!(
            "{:?} {:?} {:?}",
            Auth::basic("u", "pa55"),
            Auth::bearer("tok3n"),
            Auth::oauth2(o)
        );
        for secret in ["pa55", "tok3n", "s3cret", "k=1"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        let tls = EndpointTls {
            client_key: Some("-----BEGIN PRIVATE KEY-----abc".into()),
            ..EndpointTls::default()
        };
        assert!(!format!("{tls:?}").contains("abc"));
    }
}
