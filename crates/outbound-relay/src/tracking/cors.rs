//! Browsers: the request's `Origin`, read so that it fails closed, the CORS preflight
//! (`OPTIONS`), and the header that lets a page read an answer.

use crate::http::reply::{self, Answer};
use crate::operations::log_rate::LogRate;
use crate::sources::Sources;
use hyper::header::{HeaderMap, HeaderValue, ORIGIN};
use hyper::StatusCode;

/// An `Origin` that cannot be checked: more than one, or one that is not visible ASCII. A
/// browser sends neither; read as absent (as it was), such a header let a request skip the
/// origin check, so it is refused.
pub struct Unreadable;

/// The request's `Origin`, `None` when it has none.
pub fn origin(headers: &HeaderMap) -> Result<Option<&str>, Unreadable> {
    let mut all = headers.get_all(ORIGIN).iter();
    let Some(first) = all.next() else {
        return Ok(None);
    };
    if all.next().is_some() {
        return Err(Unreadable);
    }
    first.to_str().map(Some).map_err(|_| Unreadable)
}

/// The answer to an [`Unreadable`] origin.
pub fn refused(rate: &LogRate) -> Answer {
    if let Some(held) = rate.allow("origin_unreadable", "") {
        tracing::info!(
            held_back = held,
            "request refused: an Origin header that cannot be checked (several, or not ASCII)"
        );
    }
    reply::error(StatusCode::FORBIDDEN, "origin not allowed")
}

/// The CORS preflight (`OPTIONS`): no write key yet, so any source's `allowed_origins`
/// will do; the POST is checked against its own source.
pub fn preflight(rate: &LogRate, sources: &Sources, headers: &HeaderMap) -> Answer {
    let origin = match origin(headers) {
        Ok(Some(origin)) => origin,
        Ok(None) => return reply::empty(StatusCode::NO_CONTENT),
        Err(Unreadable) => return refused(rate),
    };
    if !sources.any_allows_origin(origin) {
        if let Some(held) = rate.allow("preflight_refused", "") {
            tracing::info!(
                origin,
                held_back = held,
                "CORS preflight refused: origin not allowed"
            );
        }
        return reply::error(StatusCode::FORBIDDEN, "origin not allowed");
    }
    let mut r = reply::empty(StatusCode::NO_CONTENT);
    let h = r.headers_mut();
    allow_origin(h, origin);
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("POST, OPTIONS"),
    );
    // analytics.js sends Content-Type, Authorization and X-Retry-Count; allow what is asked.
    let asked = headers
        .get("access-control-request-headers")
        .cloned()
        .unwrap_or(HeaderValue::from_static(
            "Content-Type, Authorization, X-Retry-Count, Content-Encoding",
        ));
    h.insert("access-control-allow-headers", asked);
    h.insert("access-control-max-age", HeaderValue::from_static("86400"));
    r
}

/// `answer`, readable by the page that sent the request when some source allows its origin
/// (a request with no write key, such as the SDKs' telemetry).
pub fn allow_for_any_source(sources: &Sources, headers: &HeaderMap, mut answer: Answer) -> Answer {
    if let Ok(Some(origin)) = origin(headers) {
        if sources.any_allows_origin(origin) {
            allow_origin(answer.headers_mut(), origin);
        }
    }
    answer
}

/// Lets the page at `origin` read the answer.
pub fn allow_origin(h: &mut HeaderMap, origin: &str) {
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert("access-control-allow-origin", v);
    }
    h.insert("vary", HeaderValue::from_static("Origin"));
}
