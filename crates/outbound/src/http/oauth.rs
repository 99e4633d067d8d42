//! OAuth2 client credentials for one endpoint: a token asked of the authorization server
//! through the endpoint's connector (its guard, proxy and TLS), kept until shortly before it
//! expires, and asked again when the endpoint refuses it. Tokens and the server's answers
//! never reach a log or an attempt's record.

use crate::error::Error;
use crate::http::attempt::{classify_status, Attempt};
use crate::http::connect::{Connector, Target};
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

/// The largest token answer read.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;
/// A token without `expires_in` is kept this long (or until the endpoint refuses it).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// A token is renewed this long before it expires (at most a tenth of its life), so one
/// never expires on its way.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// One endpoint's tokens.
pub(crate) struct Tokens {
    target: Target,
    /// `Basic base64(urlencoded id ":" urlencoded secret)` (RFC 6749 §2.3.1).
    client: HeaderValue,
    /// `grant_type=client_credentials` with scope and audience.
    form: Bytes,
    /// The token in use and until when; one request asks the server at a time.
    held: tokio::sync::Mutex<Option<(HeaderValue, Instant)>>,
}

impl Tokens {
    /// The token source of `o` (checked: `token_url` is absolute http(s)); `webhook` names it
    /// in errors.
    pub(crate) fn new(o: &OAuth2, webhook: &str) -> Result<Tokens, Error> {
        let target = Target::parse(&o.token_url)
            .map_err(|why| Error::config(format!("{webhook}.auth.token_url"), why))?;
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let pair = format!("{}:{}", enc(&o.client_id), enc(&o.client_secret));
        let client = HeaderValue::from_str(&format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ))
        .map_err(|_| Error::config(format!("{webhook}.auth"), "invalid client credentials"))?;
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
            client,
            form: Bytes::from(form.finish()),
            held: tokio::sync::Mutex::new(None),
        })
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
        let mut req = Request::new(Frames::one(self.form.clone()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.target.path.clone().into();
        let h = req.headers_mut();
        h.insert(HOST, self.target.authority.clone());
        h.insert(CONTENT_LENGTH, HeaderValue::from(self.form.len()));
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        h.insert(AUTHORIZATION, self.client.clone());
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
        let mut o = OAuth2::new("https://auth.example/token", "my id", "s&cret");
        o.scope = Some("events:write read".into());
        o.audience = Some("https://api.example".into());
        let t = Tokens::new(&o, "webhooks[0]").unwrap();
        let basic = base64::engine::general_purpose::STANDARD.encode("my+id:s%26cret");
        assert_eq!(t.client, format!("Basic {basic}").as_str());
        assert_eq!(
            &t.form[..],
            b"grant_type=client_credentials&scope=events%3Awrite+read\
              &audience=https%3A%2F%2Fapi.example"
        );
    }
}
