//! Segment's tracking API as its SDKs expect it, against the real binary and real
//! receivers: the settings document, the telemetry sink, the fields Segment adds to events
//! (`receivedAt`, `originalTimestamp`, the corrected `timestamp`, `context.ip`) and those it
//! keeps (`sentAt`, `context.library`, every other field), still JS-canonical and signed.
//! tests/relay runs the real SDKs against the same.

mod support;

use outbound::timestamp;
use serde_json::{json, Value};
use std::time::Duration;
use support::{basic, config, get, post, temp_dir, Addr, InProcess, Receiver};

fn start(extra: &str) -> (tempfile::TempDir, Receiver, InProcess) {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = InProcess::start(dir.path(), &config(&[("web", "wk_web", &rx)], extra));
    (dir, rx, relay)
}

fn send(relay: &impl Addr, path: &str, headers: &[(&str, &str)], body: &Value) -> Value {
    let auth = basic("wk_web");
    let mut all = vec![("Authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let a = post(&relay.url(path), &all, body.to_string().as_bytes());
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

/// The one webhook body `rx` got.
fn delivered(rx: &Receiver) -> (Value, support::Hit) {
    let hit = rx.wait_for(1).remove(0);
    (hit.json(), hit)
}

// --- The settings document -----------------------------------------------------------------

#[test]
fn the_settings_document_points_an_sdk_at_the_relay() {
    let (_dir, _rx, relay) = start("");
    for path in ["/v1/projects/wk_web/settings", "/projects/wk_web/settings"] {
        let a = get(&relay.url(path), &[("Origin", "https://any.example")]);
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        let doc = a.json();
        let integrations = doc["integrations"].as_object().unwrap();
        // Only Segment.io: any other name makes analytics.js load it from Segment's CDN.
        assert_eq!(integrations.keys().collect::<Vec<_>>(), ["Segment.io"]);
        let segment = &integrations["Segment.io"];
        assert_eq!(segment["apiKey"], "wk_web");
        assert_eq!(segment["apiHost"], format!("{}/v1", relay.addr));
        assert_eq!(segment["protocol"], "http");
        assert_eq!(doc["metrics"]["sampleRate"], 0);
        assert_eq!(doc["remotePlugins"], json!([]));
        assert_eq!(doc["enabledMiddleware"], json!({}));
        assert_eq!(a.header("access-control-allow-origin"), Some("*"));
        assert_eq!(a.header("cache-control"), Some("public, max-age=300"));
        assert_eq!(a.header("content-type"), Some("application/json"));
    }
}

#[test]
fn the_settings_of_an_unknown_write_key_are_404() {
    let (_dir, _rx, relay) = start("");
    let a = get(&relay.url("/v1/projects/wk_nope/settings"), &[]);
    assert_eq!(a.status, 404, "{}", a.body);
}

#[test]
fn the_settings_document_names_no_secret() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "metrics_token = \"SECRET-prom\"").replace(
        "[[sources.webhooks]]",
        "[sources.forward]\nendpoint = \"https://api.segment.io\"\nwrite_key = \"SECRET-fwd\"\n[[sources.webhooks]]",
    );
    let relay = InProcess::start(dir.path(), &cfg);
    let a = get(&relay.url("/v1/projects/wk_web/settings"), &[]);
    assert_eq!(a.status, 200, "{}", a.body);
    for secret in ["s3cret", "SECRET-fwd", "SECRET-prom", "adm", "growth"] {
        assert!(!a.body.contains(secret), "{secret:?} in {}", a.body);
    }
}

#[test]
fn the_api_host_is_public_url_when_set() {
    let (_dir, _rx, relay) = start("public_url = \"https://Relay.example.com/segment/\"\n");
    let doc = get(&relay.url("/v1/projects/wk_web/settings"), &[]).json();
    assert_eq!(
        doc["integrations"]["Segment.io"]["apiHost"],
        "relay.example.com/segment/v1"
    );
    assert_eq!(doc["integrations"]["Segment.io"]["protocol"], "https");
}

#[test]
fn forwarded_host_and_proto_count_only_from_trusted_proxies() {
    let forwarded = [
        ("X-Forwarded-Host", "relay.example.com"),
        ("X-Forwarded-Proto", "https"),
    ];
    let host = |extra: &str| {
        let (_dir, _rx, relay) = start(extra);
        let doc = get(&relay.url("/v1/projects/wk_web/settings"), &forwarded).json();
        let s = &doc["integrations"]["Segment.io"];
        format!(
            "{}://{}",
            s["protocol"].as_str().unwrap(),
            s["apiHost"].as_str().unwrap()
        )
    };
    assert!(host("").starts_with("http://127.0.0.1:"), "{}", host(""));
    assert_eq!(
        host("trusted_proxies = [\"127.0.0.0/8\"]\n"),
        "https://relay.example.com/v1"
    );
}

// --- Telemetry -------------------------------------------------------------------------------

#[test]
fn sdk_telemetry_is_answered_200_dropped_and_counted() {
    let (_dir, rx, relay) = start("metrics_token = \"prom\"\n");
    // analytics.js's RemoteMetrics body, as it sends it.
    let body = br#"{"series":[{"type":"Counter","metric":"analytics_js.invoke","value":1,"tags":{"method":"track","library":"analytics.js","library_version":"npm:next-1.84.3"}}]}"#;
    for path in ["/v1/m", "/m"] {
        let a = post(
            &relay.url(path),
            &[
                ("Content-Type", "text/plain"),
                ("Origin", "https://shop.example.com"),
            ],
            body,
        );
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        assert_eq!(
            a.header("access-control-allow-origin"),
            Some("https://shop.example.com")
        );
    }
    let metrics = get(&relay.url("/metrics"), &[("Authorization", "Bearer prom")]).body;
    assert!(
        metrics.contains("outbound_relay_telemetry_dropped_total 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("route=\"telemetry\",status=\"200\""),
        "{metrics}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

// --- What Segment adds -----------------------------------------------------------------------

/// `later − earlier`, ms, of two timestamps of a body.
fn ms_between(body: &Value, earlier: &str, later: &str) -> i128 {
    let t = |k: &str| timestamp::parse(body[k].as_str().unwrap()).unwrap();
    (t(later) - t(earlier)).whole_milliseconds()
}

#[test]
fn a_device_clock_an_hour_fast_is_corrected_from_sent_at() {
    let (_dir, rx, relay) = start("");
    let fast = outbound::OffsetDateTime::now_utc() + time_hours(1);
    let at = |d: outbound::OffsetDateTime| timestamp::format(d).unwrap();
    // Made 5 s before it was sent, by a phone whose clock is an hour ahead.
    let event = json!({"type": "track", "userId": "u1", "event": "E",
        "timestamp": at(fast - time_seconds(5)), "sentAt": at(fast)});
    send(&relay, "/v1/track", &[], &event);
    let (body, _) = delivered(&rx);
    assert_eq!(body["originalTimestamp"], event["timestamp"]);
    assert_eq!(body["sentAt"], event["sentAt"]);
    assert_eq!(ms_between(&body, "timestamp", "receivedAt"), 5_000);
    // receivedAt is now, within the test's own time.
    let received = timestamp::parse(body["receivedAt"].as_str().unwrap()).unwrap();
    let age = outbound::OffsetDateTime::now_utc() - received;
    assert!(age.whole_seconds().abs() < 30, "{age}");
}

fn time_hours(h: i64) -> std::time::Duration {
    std::time::Duration::from_secs(h as u64 * 3600)
}

fn time_seconds(s: u64) -> std::time::Duration {
    std::time::Duration::from_secs(s)
}

#[test]
fn without_sent_at_the_timestamp_is_kept_as_sent() {
    let (_dir, rx, relay) = start("");
    let event = json!({"type": "track", "userId": "u1", "event": "E",
        "timestamp": "2026-01-02T03:04:05.678+01:00"});
    send(&relay, "/v1/track", &[], &event);
    let (body, _) = delivered(&rx);
    assert_eq!(body["timestamp"], "2026-01-02T02:04:05.678Z");
    assert_eq!(body["originalTimestamp"], "2026-01-02T03:04:05.678+01:00");
    assert!(body.get("sentAt").is_none() && body["receivedAt"].is_string());
}

fn library(name: &str) -> Value {
    json!({"name": name, "version": "1.0.0"})
}

#[test]
fn browser_and_mobile_events_get_the_clients_ip_and_server_events_do_not() {
    let (_dir, rx, relay) = start("");
    let batch = json!({"batch": [
        {"type": "page", "anonymousId": "a1", "messageId": "js", "context": {"library": library("analytics.js")}},
        {"type": "screen", "anonymousId": "a1", "messageId": "kt", "context": {"library": library("analytics-kotlin")}},
        {"type": "track", "userId": "u1", "event": "E", "messageId": "py", "context": {"library": library("analytics-python")}},
        {"type": "page", "anonymousId": "a1", "messageId": "set", "context": {"library": library("analytics.js"), "ip": "0.0.0.0"}},
    ]});
    send(&relay, "/v1/batch", &[], &batch);
    let hits = rx.wait_for(4);
    let ip = |id: &str| {
        let body = hits
            .iter()
            .map(|h| h.json())
            .find(|b| b["messageId"] == id)
            .unwrap();
        body["context"]["ip"].clone()
    };
    assert_eq!(ip("js"), "127.0.0.1");
    assert_eq!(ip("kt"), "127.0.0.1");
    assert_eq!(ip("py"), Value::Null);
    assert_eq!(ip("set"), "0.0.0.0");
}

#[test]
fn behind_trusted_proxies_the_ip_is_the_first_untrusted_hop() {
    let event = json!({"type": "page", "anonymousId": "a1",
        "context": {"library": library("analytics.js")}});
    let xff = [("X-Forwarded-For", "198.51.100.9, 10.0.0.5")];
    for (trusted, want) in [
        ("", "127.0.0.1"),
        ("trusted_proxies = [\"127.0.0.0/8\"]\n", "10.0.0.5"),
        (
            "trusted_proxies = [\"127.0.0.0/8\", \"10.0.0.0/8\"]\n",
            "198.51.100.9",
        ),
    ] {
        let (_dir, rx, relay) = start(trusted);
        send(&relay, "/v1/p", &xff, &event);
        let (body, _) = delivered(&rx);
        assert_eq!(body["context"]["ip"], want, "{trusted}");
    }
}

// --- What Segment keeps ----------------------------------------------------------------------

#[test]
fn the_senders_library_and_unknown_fields_are_kept_canonical_and_signed() {
    let (_dir, rx, relay) = start("");
    let event = json!({"type": "identify", "userId": "u1", "traits": {"plan": "pro"},
        "sessionId": 1732700000123_u64, "event": "not an identify's", "channel": "browser",
        "experiment": {"b": [1.0, 1e21], "a": "\u{2028}", "10": true, "2": null},
        "context": {"library": library("analytics.js")}});
    send(&relay, "/v1/batch", &[], &json!({"batch": [event]}));
    let (body, hit) = delivered(&rx);
    assert_eq!(body["context"]["library"], library("analytics.js"));
    assert_eq!(body["sessionId"], 1732700000123_u64);
    assert_eq!(body["event"], "not an identify's");
    assert_eq!(body["channel"], "browser");
    assert_eq!(body["experiment"]["b"], json!([1, 1e21]));
    // JS-canonical: the bytes JSON.stringify(JSON.parse(body)) would give...
    let canonical = outbound::canonical_json::to_vec(&body).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&canonical),
        String::from_utf8_lossy(&hit.body)
    );
    // ...and signed over them.
    assert!(outbound::verify(
        b"s3cret",
        &hit.body,
        hit.header("X-Signature").unwrap()
    ));
}

#[test]
fn only_undeliverable_events_are_rejected_each_named() {
    let (_dir, rx, relay) = start("");
    let batch = json!({"batch": [
        {"type": "track", "userId": "u1", "event": "E", "messageId": "ok-1", "sessionId": "s"},
        "not an event",
        {"type": "track", "event": "no identity"},
        {"type": "track", "userId": "u1"},
        {"type": "identify", "userId": "u1", "messageId": "ok-2", "properties": {"kept": true}},
        {"type": "track", "userId": "u1", "event": "big", "properties": {"x": "x".repeat(33_000)}},
    ]});
    let a = send(&relay, "/v1/batch", &[], &batch);
    assert_eq!(a["accepted"], 2, "{a}");
    let reasons: Vec<(u64, String)> = (a["rejected"].as_array().unwrap().iter())
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(reasons[0], (1, "an event must be a JSON object".into()));
    assert_eq!(
        reasons[1],
        (2, "track requires user_id or anonymous_id".into())
    );
    assert_eq!(reasons[2], (3, "track requires event".into()));
    assert_eq!(reasons[3].0, 5);
    assert!(
        reasons[3].1.contains("over the limit of 32768 bytes"),
        "{reasons:?}"
    );
    assert_eq!(reasons.len(), 4);
    let bodies = rx.wait_for(2);
    let identify = bodies
        .iter()
        .map(|h| h.json())
        .find(|b| b["messageId"] == "ok-2")
        .unwrap();
    assert_eq!(identify["properties"], json!({"kept": true}));
}
