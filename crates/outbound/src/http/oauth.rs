//! OAuth2 client credentials for one endpoint: a token asked of the authorization server
//! through the endpoint's connector (its guard, proxy and TLS), kept until shortly before it
//! expires, and asked again when the endpoint refuses it. Tokens and the server's answers
//! never reach a log or an attempt's record.

use crate::error::Error;
use crate::http::attempt::{classify_status, Attempt};
use crate::http::connect::{Connector, ParsedUrl};
use crate::http::frames::Frames;
use crate::model::config::OAuth2;
use crate::model::outcome::Reason;
use crate::model::retry::parse_retry_after;
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderValue, Method, Request};
use http_body_util::BodyExt;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use std::time::{Duration, Instant};
use tokio_rustls::rustls::crypto::ring::sign::any_supported_type;
use tokio_rustls::rustls::sign::Signer;
use tokio_rustls::rustls::SignatureScheme;

/// The largest token answer read.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;
/// A token without `expires_in` is kept this long (or until the endpoint refuses it).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// A token is renewed this long before it expires (at most a tenth of its life), so one
/// never expires on its way.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// How long a client assertion is valid.
const ASSERTION_LIFE: u64 = 300;

/// How the client proves who it is.
enum Proof {
    /// `Basic base64(urlencoded id ":" urlencoded secret)` (RFC 6749 §2.3.1).
    Secret(HeaderValue),
    /// A JWT signed anew for each token request (RFC 7523), with its `alg`.
    Assertion(Box<dyn Signer>, &'static str),
}

/// One endpoint's tokens.
pub(crate) struct Tokens {
    target: ParsedUrl,
    client_id: String,
    proof: Proof,
    /// `grant_type=client_credentials` with scope and audience.
    form: String,
    /// The token in use and until when; one request asks the server at a time.
    held: tokio::sync::Mutex<Option<(HeaderValue, Instant)>>,
}

impl Tokens {
    /// The token source of `o` (checked: `token_url` is absolute http(s)); `webhook` names it
    /// in errors.
    pub(crate) fn new(o: &OAuth2, webhook: &str) -> Result<Tokens, Error> {
        let target = ParsedUrl::parse(&o.token_url)
            .map_err(|why| Error::config(format!("{webhook}.auth.token_url"), why))?;
        let proof = match &o.client_assertion_key {
            None => {
                let enc =
                    |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
                let pair = format!("{}:{}", enc(&o.client_id), enc(&o.client_secret));
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                Proof::Secret(
                    HeaderValue::from_str(&format!("Basic {basic}")).map_err(|_| {
                        Error::config(format!("{webhook}.auth"), "invalid client credentials")
                    })?,
                )
            }
            Some(key) => {
                let setting = format!("{webhook}.auth.client_assertion_key");
                let der = crate::http::pem::load_key(key, &setting)?;
                let signing = any_supported_type(&der)
                    .map_err(|e| Error::config(&setting, format!("unusable key: {e}")))?;
                let signer = signing
                    .choose_scheme(&[
                        SignatureScheme::RSA_PKCS1_SHA256,
                        SignatureScheme::ECDSA_NISTP256_SHA256,
                    ])
                    .ok_or_else(|| {
                        Error::config(&setting, "must be an RSA or a P-256 key (RS256 or ES256)")
                    })?;
                let alg = match signer.scheme() {
                    SignatureScheme::RSA_PKCS1_SHA256 => "RS256",
                    _ => "ES256",
                };
                Proof::Assertion(signer, alg)
            }
        };
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        if let Some(scope) = &o.scope {
            form.append_pair("scope", scope);
        }
        if let Some(audience) = &o.audience {
            form.append_pair("audience", audience);
        }
        Ok(Tokens {
            target,
            client_id: o.client_id.clone(),
            proof,
            form: form.finish(),
            held: tokio::sync::Mutex::new(None),
        })
    }

    /// The token request's body, and its `Authorization` (none with an assertion, which
    /// travels in the body).
    fn request(&self) -> Result<(Bytes, Option<HeaderValue>), String> {
        match &self.proof {
            Proof::Secret(basic) => Ok((Bytes::from(self.form.clone()), Some(basic.clone()))),
            Proof::Assertion(signer, alg) => {
                let jwt = self.assertion(&**signer, alg)?;
                let mut form = form_urlencoded::Serializer::new(self.form.clone());
                form.append_pair("client_id", &self.client_id);
                form.append_pair(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                );
                form.append_pair("client_assertion", &jwt);
                Ok((Bytes::from(form.finish()), None))
            }
        }
    }

    /// A client assertion (RFC 7523 §3): `iss` and `sub` the client id, `aud` the token URL.
    fn assertion(&self, signer: &dyn Signer, alg: &str) -> Result<String, String> {
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut jti = [0u8; 36];
        let header = serde_json::json!({"alg": alg, "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": self.audience_url(),
            "iat": now,
            "exp": now + ASSERTION_LIFE,
            "jti": crate::wire::message_id::new_v4(&mut jti),
        });
        let signed = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = signer
            .sign(signed.as_bytes())
            .map_err(|e| format!("cannot sign the client assertion: {e}"))?;
        let signature = match alg {
            "ES256" => ecdsa_raw(&signature).ok_or("the ECDSA signature is malformed")?,
            _ => signature,
        };
        Ok(format!("{signed}.{}", b64(&signature)))
    }

    /// The token endpoint's URL as the assertion's audience.
    fn audience_url(&self) -> String {
        let scheme = if self.target.https { "https" } else { "http" };
        let host = self.target.authority.to_str().unwrap_or_default();
        format!("{scheme}://{host}{}", self.target.path)
    }

    /// The `Authorization` value to send: the token held while it is good, else a new one.
    /// `refused`: the value the endpoint just answered 401 to; unless another request
    /// renewed it meanwhile, a new one is asked for. An error is the attempt's outcome.
    pub(crate) async fn authorization(
        &self,
        connector: &Connector,
        timeout: Duration,
        refused: Option<&HeaderValue>,
    ) -> Result<HeaderValue, Attempt> {
        let mut held = self.held.lock().await;
        if let Some((value, until)) = held.as_ref() {
            if Instant::now() < *until && refused != Some(value) {
                return Ok(value.clone());
            }
        }
        *held = None;
        let (value, lifetime) = match tokio::time::timeout(timeout, self.ask(connector)).await {
            Ok(got) => got?,
            Err(_) => {
                return Err(Attempt::Retryable {
                    reason: Reason::Timeout,
                    detail: format!("OAuth2 token endpoint: no answer within {timeout:?}"),
                    retry_after: None,
                })
            }
        };
        let early = RENEW_BEFORE.min(lifetime / 10);
        *held = Some((value.clone(), Instant::now() + lifetime - early));
        Ok(value)
    }

    /// One token request: the form POSTed, the JSON answer read.
    async fn ask(&self, connector: &Connector) -> Result<(HeaderValue, Duration), Attempt> {
        let failed = |detail: String| Attempt::Retryable {
            reason: Reason::Connection,
            detail: format!("OAuth2 token endpoint: {detail}"),
            retry_after: None,
        };
        let stream = connector
            .connect(&self.target)
            .await
            .map_err(|e| match e.attempt() {
                Attempt::Permanent { reason, detail } => Attempt::Permanent {
                    reason,
                    detail: format!("OAuth2 token endpoint: {detail}"),
                },
                other => other,
            })?;
        let (mut tx, conn) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let (form, authorization) = self.request().map_err(|why| Attempt::Permanent {
            reason: Reason::Other,
            detail: format!("OAuth2: {why}"),
        })?;
        let len = form.len();
        let mut req = Request::new(Frames::one(form));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.target.path.clone().into();
        let h = req.headers_mut();
        h.insert(HOST, self.target.authority.clone());
        h.insert(CONTENT_LENGTH, HeaderValue::from(len));
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(basic) = authorization {
            h.insert(AUTHORIZATION, basic);
        }
        let answer = tx
            .send_request(req)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let status = answer.status().as_u16();
        let retry_after = (answer.headers().get("retry-after"))
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let mut body = answer.into_body();
        let mut read = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| failed(e.to_string()))?;
            if let Some(data) = frame.data_ref() {
                read.extend_from_slice(data);
                if read.len() > MAX_TOKEN_ANSWER {
                    return Err(failed("answer larger than 64 KiB".into()));
                }
            }
        }
        if !(200..300).contains(&status) {
            // The answer's body is the server's business (it may echo credentials): only
            // its status is kept.
            return Err(match classify_status(status, retry_after) {
                Attempt::Retryable { reason, .. } => Attempt::Retryable {
                    reason,
                    detail: format!("OAuth2 token endpoint answered {status}"),
                    retry_after,
                },
                _ => Attempt::Permanent {
                    reason: Reason::Status(status),
                    detail: format!(
                        "OAuth2 token endpoint answered {status} (client id, secret or scope \
                         refused)"
                    ),
                },
            });
        }
        token_of(&read).map_err(|why| Attempt::Permanent {
            reason: Reason::Other,
            detail: format!("OAuth2 token endpoint: {why}"),
        })
    }
}

/// An ECDSA signature's DER (`SEQUENCE { INTEGER r, INTEGER s }`) as JWS wants it: `r || s`,
/// 32 bytes each (RFC 7518 §3.4).
fn ecdsa_raw(der: &[u8]) -> Option<Vec<u8>> {
    let (&tag, rest) = der.split_first()?;
    let (&len, mut rest) = rest.split_first()?;
    if tag != 0x30 || usize::from(len) != rest.len() {
        return None;
    }
    let mut out = Vec::with_capacity(64);
    for _ in 0..2 {
        let (&t, r) = rest.split_first()?;
        let (&n, r) = r.split_first()?;
        let n = usize::from(n);
        if t != 0x02 || n > r.len() {
            return None;
        }
        let int = &r[..n];
        let int = &int[int.len().saturating_sub(32)..];
        if int.len() < 32 {
            out.extend(std::iter::repeat_n(0, 32 - int.len()));
        }
        out.extend_from_slice(int);
        rest = &r[n..];
    }
    rest.is_empty().then_some(out)
}

/// The bearer value and lifetime in a token answer (RFC 6749 §5.1).
fn token_of(body: &[u8]) -> Result<(HeaderValue, Duration), &'static str> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "the answer is not JSON")?;
    let token = (v.get("access_token").and_then(|t| t.as_str()))
        .filter(|t| !t.is_empty())
        .ok_or("the answer has no access_token")?;
    if let Some(kind) = v.get("token_type").and_then(|t| t.as_str()) {
        if !kind.eq_ignore_ascii_case("bearer") {
            return Err("the token_type is not bearer");
        }
    }
    let lifetime = match v.get("expires_in").and_then(|e| e.as_f64()) {
        Some(secs) if secs >= 1.0 && secs.is_finite() => {
            Duration::from_secs_f64(secs.min(365.0 * 86400.0))
        }
        Some(_) => Duration::from_secs(1),
        None => DEFAULT_LIFETIME,
    };
    let value = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the access_token is not a valid header value")?;
    Ok((value, lifetime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answer_gives_the_bearer_value_and_its_life() {
        let (v, life) =
            token_of(br#"{"access_token":"abc","token_type":"Bearer","expires_in":120}"#).unwrap();
        assert_eq!(
            (v.to_str().unwrap(), life),
            ("Bearer abc", Duration::from_secs(120))
        );
        let (_, life) = token_of(br#"{"access_token":"abc"}"#).unwrap();
        assert_eq!(life, DEFAULT_LIFETIME);
        assert!(token_of(b"<html>").is_err());
        assert!(token_of(br#"{"token_type":"bearer"}"#).is_err());
        assert!(token_of(br#"{"access_token":"a","token_type":"mac"}"#).is_err());
        assert!(token_of(br#"{"access_token":"a\nb"}"#).is_err());
    }

    #[test]
    fn the_client_is_sent_as_basic_of_its_urlencoded_id_and_secret() {
        let o = OAuth2::new("https://auth.example/token", "my id", "s&cret")
            .scope("events:write read")
            .audience("https://api.example");
        let t = Tokens::new(&o, "webhooks[0]").unwrap();
        let basic = base64::engine::general_purpose::STANDARD.encode("my+id:s%26cret");
        let (form, authorization) = t.request().unwrap();
        assert_eq!(authorization.unwrap(), format!("Basic {basic}").as_str());
        assert_eq!(
            &form[..],
            b"grant_type=client_credentials&scope=events%3Awrite+read\
              &audience=https%3A%2F%2Fapi.example"
        );
    }
}
