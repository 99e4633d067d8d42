//! The relay's answers: JSON bodies with `success`, and the headers every answer carries.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

pub type Answer = Response<Full<Bytes>>;

/// `status` with `body` as JSON.
pub fn json(status: StatusCode, body: &Value) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// `{"success":true}`.
pub fn ok() -> Answer {
    json(StatusCode::OK, &json!({"success": true}))
}

/// `{"success":false,"message":...}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Answer {
    let mut r = json(
        status,
        &json!({"success": false, "message": message.into()}),
    );
    if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
        // SDKs retry 429 and 5xx; analytics.js's batching reads X-RateLimit-Reset (seconds).
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        r.headers_mut()
            .insert("x-ratelimit-reset", HeaderValue::from_static("1"));
    }
    r
}

/// An empty answer (preflights).
pub fn empty(status: StatusCode) -> Answer {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = status;
    r
}
