//! `POST /v1/m` (and `/m`): the SDKs' own telemetry (analytics.js's and the mobile SDKs'
//! `RemoteMetrics` counters), which they send to `{apiHost}/m` when their settings sample it.
//! The relay's settings document turns it off (`metrics.sampleRate: 0`); an SDK configured
//! otherwise still gets a 200 here, so it neither retries nor logs an error, and the request
//! is dropped, counted in `outbound_relay_telemetry_dropped_total`.

use crate::http::body;
use crate::http::reply::{self, Answer};
use crate::sources::Sources;
use crate::tracking::allow_for_any_source;

use hyper::header::HeaderMap;

/// Largest telemetry body read (analytics.js sends at most 20 counters).
const MAX_BODY: usize = 64 * 1024;

/// Whether `path` is the telemetry path.
pub fn is_telemetry(path: &str) -> bool {
    matches!(path.trim_end_matches('/'), "/v1/m" | "/m")
}

/// The answer to a telemetry `POST`: its body read (within a bound, so the connection can be
/// kept) and dropped.
pub async fn drop(
    ops: &crate::operations::Ops,
    sources: &Sources,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let _ = body::read(headers, body, MAX_BODY).await;
    ops.metrics.telemetry_dropped();
    allow_for_any_source(sources, headers, reply::ok())
}
