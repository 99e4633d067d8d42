//! How an endpoint wants to be called, a webhook's or a subscription's: its authentication,
//! its TLS identity and roots, the header its signature goes in and how it is signed, and
//! how fast it may be sent to. The checks of these settings are `config/endpoint_check.rs`'s.

use crate::error::Error;
use std::fmt;

/// How an endpoint wants to be called, as one value: what a subscription carries
/// ([`Subscription::with_endpoint`](crate::subscription::Subscription::with_endpoint)). A
/// webhook holds the same settings as fields of its own. Nothing set by default: the
/// client's TLS and signature scheme apply, with no auth and no rate limit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoint {
    /// How the endpoint authenticates us: Basic, a bearer token or OAuth2 client
    /// credentials.
    pub auth: Option<Auth>,
    /// A client certificate for mutual TLS, and roots of the endpoint's own.
    pub tls: EndpointTls,
    /// The header the signature goes in, in place of the scheme's own (`X-Signature`,
    /// `X-Signature-256`); not with Standard Webhooks, whose headers are fixed.
    pub signature_header: Option<String>,
    /// How the endpoint's requests are signed, in place of the client's `signature_scheme`.
    pub signature_scheme: Option<SignatureScheme>,
    /// At most this many requests a second to the endpoint; unlimited when unset.
    pub rate_limit: Option<RateLimit>,
}

impl Endpoint {
    /// Nothing set.
    pub fn new() -> Endpoint {
        Endpoint::default()
    }

    /// Sets how the endpoint authenticates us.
    pub fn auth(mut self, auth: Auth) -> Endpoint {
        self.auth = Some(auth);
        self
    }

    /// Sets the endpoint's TLS (client certificate, roots).
    pub fn tls(mut self, tls: EndpointTls) -> Endpoint {
        self.tls = tls;
        self
    }

    /// Puts the signature in header `name`.
    pub fn signature_header(mut self, name: impl Into<String>) -> Endpoint {
        self.signature_header = Some(name.into());
        self
    }

    /// Signs the endpoint's requests with `scheme`.
    pub fn signature_scheme(mut self, scheme: SignatureScheme) -> Endpoint {
        self.signature_scheme = Some(scheme);
        self
    }

    /// Limits the requests a second to the endpoint.
    pub fn rate_limit(mut self, limit: RateLimit) -> Endpoint {
        self.rate_limit = Some(limit);
        self
    }

    /// True when nothing is set.
    pub fn is_default(&self) -> bool {
        self == &Endpoint::default()
    }
}

/// How webhook requests are signed (with `shared_secret` set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignatureScheme {
    /// The seed's `X-Signature`: lowercase hex HMAC-SHA1 of the body, keyed with the shared
    /// secret as given. The default.
    #[default]
    XSignature,
    /// [Standard Webhooks](https://www.standardwebhooks.com): every request carries
    /// `webhook-id` (the message id), `webhook-timestamp` (Unix seconds of this attempt) and,
    /// with a secret, `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
    /// `shared_secret` then holds one or more `whsec_` secrets separated by spaces; each signs
    /// (one signature each, space separated), so keys rotate without downtime. No
    /// `X-Signature` is sent.
    StandardWebhooks,
    /// `X-Signature-256: sha256=<lowercase hex HMAC-SHA256 of the body>`, keyed with the
    /// shared secret as given: the form GitHub's `X-Hub-Signature-256` made common.
    HmacSha256,
}

impl SignatureScheme {
    /// `"x-signature"` or `"standard-webhooks"`: the names every binding takes.
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureScheme::XSignature => "x-signature",
            SignatureScheme::StandardWebhooks => "standard-webhooks",
            SignatureScheme::HmacSha256 => "hmac-sha256",
        }
    }

    /// The scheme named `name` (as [`as_str`](Self::as_str) writes it); a config error naming
    /// `signature_scheme` otherwise.
    pub fn parse(name: &str) -> Result<SignatureScheme, Error> {
        match name {
            "x-signature" => Ok(SignatureScheme::XSignature),
            "standard-webhooks" => Ok(SignatureScheme::StandardWebhooks),
            "hmac-sha256" => Ok(SignatureScheme::HmacSha256),
            _ => Err(Error::config(
                "signature_scheme",
                format!(
                    "{name:?} is not a scheme; use \"x-signature\", \"standard-webhooks\" \
                     or \"hmac-sha256\""
                ),
            )),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
