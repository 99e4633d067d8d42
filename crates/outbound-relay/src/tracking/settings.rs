//! `GET /v1/projects/{writeKey}/settings` (and `/projects/{writeKey}/settings`): the settings
//! document analytics.js loads from its `cdnURL` before it starts, and the mobile SDKs from
//! their `cdnHost`, so they can be pointed at the relay with no settings of their own.
//!
//! What it says: send to this relay (`integrations["Segment.io"]`: `apiKey`, the write key
//! asked for; `apiHost`, the relay's public host and path plus `/v1`, no scheme, which the
//! SDKs put before their paths; `protocol`), load nothing else (no other integration, no
//! remote plugins or middleware, which would be fetched from Segment's CDN), and send no
//! telemetry (`metrics.sampleRate: 0`: it would go to Segment's servers). It names no secret:
//! the write key is the one in the URL. An unknown key is 404 (analytics.js then does not
//! start, as for a disabled source). Anyone may read it (`Access-Control-Allow-Origin: *`,
//! no credentials), and caches may keep it for five minutes.

use crate::http::reply::{self, Answer};
use crate::sources::Sources;
use crate::tracking::forwarded::PublicUrl;
use hyper::header::{HeaderValue, CACHE_CONTROL};
use hyper::StatusCode;
use serde_json::json;

/// The write key of a settings path, if `path` is one.
pub fn write_key_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/v1").unwrap_or(path);
    let key = rest.strip_prefix("/projects/")?.strip_suffix("/settings")?;
    (!key.is_empty() && !key.contains('/')).then_some(key)
}

/// The settings document of the source of `key` (URL-encoded as it came), pointing at
/// `public`.
pub fn answer(sources: &Sources, key: &str, public: Option<PublicUrl>) -> Answer {
    let key = crate::http::body::percent_decode(key);
    if sources.by_write_key(&key).is_none() {
        return reply::error(StatusCode::NOT_FOUND, "unknown write key");
    }
    let Some(public) = public else {
        return reply::error(
            StatusCode::BAD_REQUEST,
            "no usable Host header: set public_url in the relay's config",
        );
    };
    let all = json!({"__default": {"enabled": true, "integrations": {}}});
    let document = json!({
        "integrations": {"Segment.io": {
            "apiKey": key,
            "apiHost": format!("{}/v1", public.host),
            "protocol": public.protocol,
            "unbundledIntegrations": [],
            "addBundledMetadata": true,
            "maybeBundledConfigIds": {},
        }},
        "plan": {"track": all, "identify": all, "group": all},
        "edgeFunction": {},
        "analyticsNextEnabled": true,
        "middlewareSettings": {},
        "enabledMiddleware": {},
        "metrics": {"sampleRate": 0},
        "legacyVideoPluginsEnabled": false,
        "remotePlugins": [],
    });
    let mut r = reply::json(StatusCode::OK, &document);
    let h = r.headers_mut();
    h.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    h.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_paths_carry_the_write_key() {
        assert_eq!(write_key_of("/v1/projects/wk_1/settings"), Some("wk_1"));
        assert_eq!(write_key_of("/projects/wk_1/settings"), Some("wk_1"));
        for path in [
            "/v1/projects//settings",
            "/v1/projects/a/b/settings",
            "/v1/projects/a",
            "/v2/projects/a/settings",
        ] {
            assert_eq!(write_key_of(path), None, "{path}");
        }
        assert_eq!(crate::http::body::percent_decode("wk%3Ax%zz"), "wk:x%zz");
    }
}
