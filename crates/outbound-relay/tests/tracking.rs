//! The tracking API against the real relay binary and real webhook receivers on 127.0.0.1.

mod support;

use serde_json::{json, Value};
use std::io::Write;
use support::{basic, config, get, options, post, temp_dir, Addr, InProcess, Receiver};

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn one_source() -> (tempfile::TempDir, Receiver, InProcess) {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = InProcess::start(dir.path(), &config(&[("web", "wk_web_1", &rx)], ""));
    (dir, rx, relay)
}

fn event(kind: &str) -> Value {
    let mut e = json!({"type": kind, "userId": "u1", "messageId": format!("m-{kind}")});
    match kind {
        "track" => e["event"] = json!("Signed Up"),
        "group" => e["groupId"] = json!("g1"),
        "alias" => e["previousId"] = json!("anon-1"),
        _ => {}
    }
    e
}

#[test]
fn every_single_call_path_and_short_path_is_accepted_and_delivered() {
    let (_dir, rx, relay) = one_source();
    let auth = basic("wk_web_1");
    let paths = [
        ("/v1/identify", "identify"),
        ("/v1/track", "track"),
        ("/v1/page", "page"),
        ("/v1/screen", "screen"),
        ("/v1/group", "group"),
        ("/v1/alias", "alias"),
        ("/v1/i", "identify"),
        ("/v1/t", "track"),
        ("/v1/p", "page"),
        ("/v1/s", "screen"),
        ("/v1/g", "group"),
        ("/v1/a", "alias"),
    ];
    for (path, kind) in paths {
        let mut e = event(kind);
        // The path says the type.
        e.as_object_mut().unwrap().remove("type");
        e["messageId"] = json!(format!("m-{path}"));
        let a = post(
            &relay.url(path),
            &[JSON, ("Authorization", &auth)],
            e.to_string().as_bytes(),
        );
        assert_eq!(
            (a.status, a.json()),
            (200, json!({"success": true})),
            "{path}"
        );
    }
    let hits = rx.wait_for(paths.len());
    for (path, kind) in paths {
        let body = hits
            .iter()
            .map(|h| h.json())
            .find(|b| b["messageId"] == json!(format!("m-{path}")))
            .unwrap_or_else(|| panic!("{path} not delivered"));
        assert_eq!(body["type"], json!(kind), "{path}");
    }
}

#[test]
fn batch_import_and_b_deliver_every_event() {
    let (_dir, rx, relay) = one_source();
    let auth = basic("wk_web_1");
    for (i, path) in ["/v1/batch", "/v1/import", "/v1/b"].iter().enumerate() {
        let batch: Vec<Value> = ["identify", "track", "page", "screen", "group", "alias"]
            .iter()
            .map(|k| {
                let mut e = event(k);
                e["messageId"] = json!(format!("m-{i}-{k}"));
                e
            })
            .collect();
        let body = json!({"batch": batch, "sentAt": "2026-11-25T10:00:00.000Z"});
        let a = post(
            &relay.url(path),
            &[JSON, ("Authorization", &auth)],
            body.to_string().as_bytes(),
        );
        assert_eq!(
            (a.status, a.json()),
            (200, json!({"success": true})),
            "{path}"
        );
    }
    let hits = rx.wait_for(18);
    assert_eq!(hits.len(), 18);
}

/// How long before its `receivedAt` a delivered event's `timestamp` is, ms.
fn ms_before_received(body: &Value) -> i128 {
    let t = |k: &str| outbound::timestamp::parse(body[k].as_str().unwrap()).unwrap();
    (t("receivedAt") - t("timestamp")).whole_milliseconds()
}

#[test]
fn the_write_key_may_come_in_the_body_as_text_plain() {
    let (_dir, rx, relay) = one_source();
    // analytics.js's standard dispatcher: text/plain, writeKey, sentAt and _metadata in the body.
    let body = json!({
        "type": "track", "event": "Clicked", "anonymousId": "anon-7",
        "messageId": "ajs-next-1", "timestamp": "2026-11-25T09:30:00.123Z",
        "context": {"page": {"path": "/"}}, "integrations": {},
        "writeKey": "wk_web_1", "sentAt": "2026-11-25T09:30:00.200Z",
        "_metadata": {"bundled": ["Segment.io"], "unbundled": [], "bundledIds": []}
    });
    let a = post(
        &relay.url("/v1/t"),
        &[("Content-Type", "text/plain")],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let got = rx.wait_for(1)[0].json();
    assert_eq!(got["messageId"], "ajs-next-1");
    assert_eq!(got["anonymousId"], "anon-7");
    assert_eq!(got["originalTimestamp"], "2026-11-25T09:30:00.123Z");
    assert_eq!(got["sentAt"], "2026-11-25T09:30:00.200Z");
    assert_eq!(ms_before_received(&got), 77);
    assert_eq!(got["context"]["page"]["path"], "/");
    assert!(got.get("writeKey").is_none() && got.get("_metadata").is_none());
}

#[test]
fn a_gzip_body_is_inflated() {
    let (_dir, rx, relay) = one_source();
    let body = json!({"batch": [event("track")]}).to_string();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(body.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let auth = basic("wk_web_1");
    let a = post(
        &relay.url("/v1/b"),
        &[JSON, ("Content-Encoding", "gzip"), ("Authorization", &auth)],
        &gz,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(rx.wait_for(1)[0].json()["event"], "Signed Up");
}

#[test]
fn the_sdks_message_id_timestamp_context_and_integrations_are_kept() {
    let (_dir, rx, relay) = one_source();
    let e = json!({
        "type": "track", "userId": "u1", "anonymousId": "a1", "event": "E",
        "messageId": "sdk-id-1", "timestamp": "2026-01-02T03:04:05.678Z",
        "context": {"ip": "10.0.0.1"}, "integrations": {"Mixpanel": false}
    });
    let a = post(
        &relay.url("/v1/track"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        e.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200);
    let got = rx.wait_for(1)[0].json();
    assert_eq!(got["messageId"], "sdk-id-1");
    assert_eq!(got["timestamp"], "2026-01-02T03:04:05.678Z");
    assert_eq!(got["anonymousId"], "a1");
    assert_eq!(got["context"]["ip"], "10.0.0.1");
    assert_eq!(got["integrations"], json!({"Mixpanel": false}));
}

#[test]
fn x_signature_verifies_with_the_cores_verify() {
    let (_dir, rx, relay) = one_source();
    post(
        &relay.url("/v1/track"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        event("track").to_string().as_bytes(),
    );
    let hit = rx.wait_for(1).remove(0);
    let sig = hit.header("X-Signature").expect("signed");
    assert!(outbound::verify(b"s3cret", &hit.body, sig));
    assert!(!outbound::verify(b"other", &hit.body, sig));
    assert_eq!(hit.header("X-Team"), Some("growth"));
}

#[test]
fn cors_preflight_is_answered_for_an_allowed_origin() {
    let (_dir, _rx, relay) = one_source();
    let a = options(
        &relay.url("/v1/t"),
        &[
            ("Origin", "https://shop.example.com"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "content-type,authorization,x-retry-count",
            ),
        ],
    );
    assert_eq!(a.status, 204);
    assert_eq!(
        a.header("access-control-allow-origin"),
        Some("https://shop.example.com")
    );
    assert!(a
        .header("access-control-allow-headers")
        .unwrap()
        .contains("x-retry-count"));
    assert!(a
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));
}

#[test]
fn cors_preflight_and_post_are_refused_for_another_origin() {
    let (_dir, rx, relay) = one_source();
    let evil = ("Origin", "https://evil.example.net");
    let a = options(&relay.url("/v1/t"), &[evil]);
    assert_eq!(a.status, 403);
    assert!(a.header("access-control-allow-origin").is_none());
    let a = post(
        &relay.url("/v1/t"),
        &[("Content-Type", "text/plain"), evil],
        json!({"writeKey": "wk_web_1", "type": "track", "userId": "u", "event": "E"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 403);
    // An allowed origin posts fine and is told so.
    let a = post(
        &relay.url("/v1/t"),
        &[
            ("Content-Type", "text/plain"),
            ("Origin", "https://shop.example.com"),
        ],
        json!({"writeKey": "wk_web_1", "type": "track", "userId": "u", "event": "E"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 200);
    assert_eq!(
        a.header("access-control-allow-origin"),
        Some("https://shop.example.com")
    );
    assert_eq!(rx.wait_for(1).len(), 1);
}

#[test]
fn a_body_that_is_not_json_is_400_naming_the_problem() {
    let (_dir, _rx, relay) = one_source();
    let a = post(
        &relay.url("/v1/track"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        b"{\"userId\": ",
    );
    assert_eq!(a.status, 400);
    assert!(a.json()["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
}

#[test]
fn a_missing_or_unknown_write_key_is_401_and_nothing_is_sent() {
    let (_dir, rx, relay) = one_source();
    let body = event("track").to_string();
    let a = post(&relay.url("/v1/track"), &[JSON], body.as_bytes());
    assert_eq!(a.status, 401);
    let a = post(
        &relay.url("/v1/track"),
        &[JSON, ("Authorization", &basic("wk_nope"))],
        body.as_bytes(),
    );
    assert_eq!(a.status, 401);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

#[test]
fn an_event_over_32_kb_is_413_and_a_batch_over_500_kb_is_413() {
    let (_dir, rx, relay) = one_source();
    let auth = basic("wk_web_1");
    let mut big = event("track");
    big["properties"] = json!({"blob": "x".repeat(40_000)});
    let a = post(
        &relay.url("/v1/track"),
        &[JSON, ("Authorization", &auth)],
        big.to_string().as_bytes(),
    );
    assert_eq!(a.status, 413, "{}", a.body);
    let mut e = event("track");
    e["properties"] = json!({"blob": "x".repeat(20_000)});
    let batch = json!({"batch": vec![e; 30]});
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &auth)],
        batch.to_string().as_bytes(),
    );
    assert_eq!(a.status, 413);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

#[test]
fn a_batch_with_invalid_events_accepts_the_valid_ones_and_names_the_rest_by_index() {
    let (_dir, rx, relay) = one_source();
    let mut big = event("track");
    big["messageId"] = json!("too-big");
    big["properties"] = json!({"blob": "x".repeat(40_000)});
    let batch = json!({"batch": [
        event("identify"),
        {"type": "track", "userId": "u1"},
        event("track"),
        {"type": "page"},
        big,
        "not an object",
    ]});
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        batch.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200);
    let v = a.json();
    assert_eq!(v["success"], true);
    assert_eq!(v["accepted"], 2);
    let rejected: Vec<u64> = v["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(rejected, [1, 3, 4, 5]);
    assert!(v["rejected"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("event"));
    let hits = rx.wait_for(2);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(rx.hits().len(), 2, "{hits:?}");
}

#[test]
fn two_sources_reach_only_their_own_webhooks() {
    let dir = temp_dir();
    let (web, ios) = (Receiver::start(), Receiver::start());
    let relay = InProcess::start(
        dir.path(),
        &config(&[("web", "wk_web", &web), ("ios", "wk_ios", &ios)], ""),
    );
    for (key, id) in [("wk_web", "from-web"), ("wk_ios", "from-ios")] {
        let mut e = event("track");
        e["messageId"] = json!(id);
        let a = post(
            &relay.url("/v1/track"),
            &[JSON, ("Authorization", &basic(key))],
            e.to_string().as_bytes(),
        );
        assert_eq!(a.status, 200);
    }
    assert_eq!(web.wait_for(1)[0].json()["messageId"], "from-web");
    assert_eq!(ios.wait_for(1)[0].json()["messageId"], "from-ios");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!((web.hits().len(), ios.hits().len()), (1, 1));
}

#[test]
fn integrations_all_false_or_webhooks_false_keep_an_event_from_the_webhooks() {
    let (_dir, rx, relay) = one_source();
    let cases = [
        ("all-off", json!({"All": false})),
        ("hooks-off", json!({"Webhooks": false})),
        ("all-off-hooks-on", json!({"All": false, "Webhooks": true})),
    ];
    let batch: Vec<Value> = cases
        .iter()
        .map(|(id, ints)| {
            let mut e = event("track");
            e["messageId"] = json!(id);
            e["integrations"] = ints.clone();
            e
        })
        .collect();
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        json!({ "batch": batch }).to_string().as_bytes(),
    );
    assert_eq!((a.status, a.json()), (200, json!({"success": true})));
    let hits = rx.wait_for(1);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let ids: Vec<Value> = rx.bodies().iter().map(|b| b["messageId"].clone()).collect();
    assert_eq!(ids, [json!("all-off-hooks-on")], "{hits:?}");
}

#[test]
fn a_delete_event_is_not_taken_from_the_tracking_api() {
    let (_dir, rx, relay) = one_source();
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        json!({"batch": [{"type": "delete", "userId": "u1"}]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 200);
    assert_eq!(
        a.json()["rejected"][0]["reason"],
        "invalid type: delete is not a call of the tracking API"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

#[test]
fn null_fields_are_absent_as_analytics_python_sends_them() {
    let (_dir, rx, relay) = one_source();
    // analytics-python's page with no anonymous id, name or category, in its batch shape.
    let body = json!({"batch": [{
        "integrations": {}, "anonymousId": null, "properties": {}, "category": null,
        "timestamp": "2026-11-25T10:00:00.123+00:00", "context": {"library": {"name": "analytics-python", "version": "2.3.3"}},
        "userId": "u1", "type": "page", "name": null, "messageId": "py-1"
    }], "sentAt": "2026-11-25T10:00:00.200000+00:00"});
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        body.to_string().as_bytes(),
    );
    assert_eq!(
        (a.status, a.json()),
        (200, json!({"success": true})),
        "{}",
        a.body
    );
    let got = rx.wait_for(1)[0].json();
    assert_eq!(got["messageId"], "py-1");
    assert_eq!(got["originalTimestamp"], "2026-11-25T10:00:00.123+00:00");
    // The batch's sentAt is the event's.
    assert_eq!(got["sentAt"], "2026-11-25T10:00:00.200000+00:00");
    assert_eq!(ms_before_received(&got), 77);
    assert!(got.get("anonymousId").is_none() && got.get("name").is_none());
}

#[test]
fn a_batchs_context_and_integrations_are_the_events_that_have_none() {
    let (_dir, rx, relay) = one_source();
    let track = |id: &str| json!({"type": "track", "userId": "u1", "event": "E", "messageId": id});
    let mut own = track("own");
    own["context"] = json!({"locale": "fr"});
    own["integrations"] = json!({"Amplitude": true});
    let mut null_context = track("null-context");
    null_context["context"] = Value::Null;
    let body = json!({"batch": [track("shared"), own, null_context],
        "context": {"locale": "de"}, "integrations": {"Mixpanel": false}});
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        body.to_string().as_bytes(),
    );
    assert_eq!((a.status, a.json()), (200, json!({"success": true})));
    let mut got: Vec<Value> = rx.wait_for(3).iter().map(|h| h.json()).collect();
    got.sort_by_key(|e| e["messageId"].as_str().unwrap().to_string());
    let [null_context, own, shared] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(shared["context"]["locale"], "de");
    assert_eq!(shared["integrations"], json!({"Mixpanel": false}));
    assert_eq!(own["context"]["locale"], "fr");
    assert_eq!(own["integrations"], json!({"Amplitude": true}));
    // Its own null: no context of the batch's.
    assert!(null_context["context"].get("locale").is_none());

    // A batch's context that is no object refuses the events that take it, and only those.
    let body = json!({"batch": [track("takes-it"), own_context()], "context": [1]});
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web_1"))],
        body.to_string().as_bytes(),
    );
    let v = a.json();
    assert_eq!((a.status, v["accepted"].clone()), (200, json!(1)), "{v}");
    assert_eq!(v["rejected"][0]["index"], 0);
    assert!(
        v["rejected"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("context"),
        "{v}"
    );
}

fn own_context() -> Value {
    json!({"type": "track", "userId": "u1", "event": "E", "messageId": "own-2", "context": {}})
}

/// A `/v1/batch` body of three tracks with ids `{tag}-0` .. `{tag}-2`.
fn three_tracks(tag: &str) -> String {
    let events: Vec<Value> = (0..3)
        .map(|i| json!({"type": "track", "userId": "u1", "event": "E", "messageId": format!("{tag}-{i}")}))
        .collect();
    json!({ "batch": events }).to_string()
}

/// With `queue_full_wait`, a batch that finds a memory-only source's queue full waits for room (the receiver
/// recovers, earlier events reach their outcome) and is answered 200, not 429; the relay
/// answers other requests meanwhile.
#[test]
fn queue_full_wait_holds_a_batch_until_there_is_room() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, std::sync::atomic::Ordering::SeqCst);
    let relay = InProcess::start(
        dir.path(),
        &config(
            &[("web", "wk_web_1", &rx)],
            "spool = false\nmax_queue_size = 3\nqueue_full_wait = 10",
        ),
    );
    let auth = basic("wk_web_1");
    let batch = three_tracks;
    let url = relay.url("/v1/batch");
    let send = |body: String| post(&url, &[JSON, ("Authorization", &auth)], body.as_bytes());
    assert_eq!(send(batch("a")).status, 200);
    let start = std::time::Instant::now();
    let answer = std::thread::scope(|s| {
        let waiting = s.spawn(|| send(batch("b")));
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!waiting.is_finished(), "batch b waits for room");
        assert_eq!(get(&relay.url("/healthz"), &[]).status, 200);
        rx.status.store(200, std::sync::atomic::Ordering::SeqCst);
        waiting.join().unwrap()
    });
    assert_eq!(answer.status, 200, "{}", answer.json());
    let waited = start.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(300)
            && waited < std::time::Duration::from_secs(10),
        "{waited:?}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let delivered = |tag: &str| {
        let hits = rx.hits();
        (0..3).all(|i| {
            hits.iter()
                .any(|h| h.json()["messageId"] == format!("{tag}-{i}").as_str())
        })
    };
    while !(delivered("a") && delivered("b")) {
        assert!(
            std::time::Instant::now() < deadline,
            "not every event was delivered"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A spooled source's backlog is bounded by bytes of spool, not by `max_queue_size`: with its
/// webhook down, twenty times `max_queue_size` is accepted and delivered once it recovers;
/// past `spool_max_bytes` a batch is answered 429 with `Retry-After`, whole.
#[test]
fn a_spooled_backlog_is_bounded_by_spool_bytes_and_delivered_after_an_outage() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, std::sync::atomic::Ordering::SeqCst);
    let relay = InProcess::start(
        dir.path(),
        &config(
            &[("web", "wk_web_1", &rx)],
            "max_queue_size = 5\nspool_max_bytes = 200000",
        ),
    );
    let auth = basic("wk_web_1");
    // About 1 KB an event, so the spool's bytes are the padding's, whatever else a body holds.
    let batch = |tag: &str| {
        let events: Vec<Value> = (0..3)
            .map(|i| {
                json!({"type": "track", "userId": "u1", "event": "E",
                "messageId": format!("{tag}-{i}"), "properties": {"pad": "x".repeat(1000)}})
            })
            .collect();
        json!({ "batch": events }).to_string()
    };
    let send = |body: &str| {
        post(
            &relay.url("/v1/batch"),
            &[JSON, ("Authorization", &auth)],
            body.as_bytes(),
        )
    };
    let mut sent = Vec::new();
    for n in 0..34 {
        let tag = format!("s{n}");
        let answer = send(&batch(&tag));
        assert_eq!(answer.status, 200, "batch {n}: {}", answer.json());
        sent.extend((0..3).map(|i| format!("{tag}-{i}")));
    }
    // 102 events of about 1.3 KB on disk: the next batches find the spool full.
    let full = (0..100)
        .map(|n| send(&batch(&format!("f{n}"))))
        .find(|a| a.status != 200)
        .expect("the spool filled");
    assert_eq!(full.status, 429, "{}", full.json());
    assert_eq!(full.header("retry-after"), Some("1"));
    assert!(full.json().to_string().contains("spool"), "{}", full.json());
    // Hits from here on are answered 200 (but one in flight at the switch, retried if not).
    let before = rx.hits().len();
    rx.status.store(200, std::sync::atomic::Ordering::SeqCst);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let delivered = || -> std::collections::HashSet<String> {
        (rx.hits().iter().skip(before))
            .map(|h| h.json()["messageId"].as_str().unwrap().to_string())
            .collect()
    };
    while !sent.iter().all(|id| delivered().contains(id)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {} delivered",
            sent.iter().filter(|id| delivered().contains(*id)).count(),
            sent.len()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `spool_max_total_bytes` bounds every source's spool together: once one source's backlog
/// fills it, another source's batch is refused too (429, nothing kept).
#[test]
fn spool_max_total_bytes_bounds_every_source_together() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, std::sync::atomic::Ordering::SeqCst);
    let relay = InProcess::start(
        dir.path(),
        &config(
            &[("web", "wk_web_1", &rx), ("app", "wk_app_1", &rx)],
            "spool_max_total_bytes = 100000",
        ),
    );
    let batch = |tag: &str| {
        let events: Vec<Value> = (0..3)
            .map(|i| {
                json!({"type": "track", "userId": "u1", "event": "E",
                "messageId": format!("{tag}-{i}"), "properties": {"pad": "x".repeat(1000)}})
            })
            .collect();
        json!({ "batch": events }).to_string()
    };
    let send = |key: &str, body: &str| {
        let auth = basic(key);
        post(
            &relay.url("/v1/batch"),
            &[JSON, ("Authorization", &auth)],
            body.as_bytes(),
        )
    };
    let refused = (0..100)
        .map(|n| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            send("wk_web_1", &batch(&format!("w{n}")))
        })
        .find(|a| a.status != 200)
        .expect("the relay's spool filled");
    assert_eq!(refused.status, 429, "{}", refused.json());
    let other = send("wk_app_1", &batch("a0"));
    assert_eq!(other.status, 429, "{}", other.json());
    assert_eq!(other.header("retry-after"), Some("1"));
}

/// A batch a memory-only source's queue has no room for is answered 429 and nothing of it is kept:
/// when the SDK sends it again, each of its events arrives once, not twice.
#[test]
fn a_batch_without_room_is_429_whole_and_arrives_once_when_sent_again() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, std::sync::atomic::Ordering::SeqCst);
    let relay = InProcess::start(
        dir.path(),
        &config(
            &[("web", "wk_web_1", &rx)],
            "spool = false\nmax_queue_size = 5",
        ),
    );
    let auth = basic("wk_web_1");
    let batch = three_tracks;
    let send = |body: &str| {
        post(
            &relay.url("/v1/batch"),
            &[JSON, ("Authorization", &auth)],
            body.as_bytes(),
        )
    };
    assert_eq!(send(&batch("a")).status, 200);
    let full = send(&batch("b"));
    assert_eq!(full.status, 429, "room for 2 of 3: {}", full.json());
    // The receiver recovers; the first batch goes out, the second is sent again.
    rx.status.store(200, std::sync::atomic::Ordering::SeqCst);
    let ids = |hits: &[support::Hit]| -> Vec<String> {
        hits.iter()
            .map(|h| h.json()["messageId"].as_str().unwrap().to_string())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !(0..3).all(|i| ids(&rx.hits()).contains(&format!("a-{i}"))) {
        assert!(
            std::time::Instant::now() < deadline,
            "batch a was not delivered"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !ids(&rx.hits()).iter().any(|id| id.starts_with("b-")),
        "nothing of the refused batch was kept"
    );
    // Room comes back once the client has counted batch a's outcomes (a moment after the
    // receiver saw them): until then the resend is 429 again, and keeps nothing either.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match send(&batch("b")).status {
            200 => break,
            429 if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => panic!("the resend of batch b: {other}"),
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !(0..3).all(|i| ids(&rx.hits()).contains(&format!("b-{i}"))) {
        assert!(
            std::time::Instant::now() < deadline,
            "batch b was not delivered"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = ids(&rx.hits());
    for i in 0..3 {
        let b = format!("b-{i}");
        assert_eq!(got.iter().filter(|id| **id == b).count(), 1, "{b} once");
    }
}

/// A source `web` that forwards to `segment` (and posts to `hooks`), with `lines` in its table.
fn forwarding(hooks: &Receiver, segment: &Receiver, lines: &str) -> String {
    let endpoint = segment.url.trim_end_matches("/hook");
    config(&[("web", "wk_web", hooks)], "").replace(
        "[[sources.webhooks]]",
        &format!(
            "{lines}\n[sources.forward]\nendpoint = \"{endpoint}\"\nwrite_key = \"fw_key\"\n\
             [[sources.webhooks]]"
        ),
    )
}

/// A `/v1/batch` body of `n` tracks.
fn tracks(n: usize) -> String {
    let events: Vec<Value> = (0..n)
        .map(|i| json!({"type": "track", "userId": "u1", "event": "E", "messageId": format!("m-{i}")}))
        .collect();
    json!({ "batch": events }).to_string()
}

/// How many events each forwarded request carried, in order.
fn forwarded_sizes(segment: &Receiver) -> Vec<usize> {
    segment
        .bodies()
        .iter()
        .map(|b| b["batch"].as_array().unwrap().len())
        .collect()
}

#[test]
fn the_forward_carries_at_most_flush_at_events_per_request() {
    // Twelve events in one request reach the core together: two full batches at once, which
    // must not join into one forwarded request.
    let dir = temp_dir();
    let (hooks, segment) = (Receiver::start(), Receiver::start());
    let cfg = forwarding(&hooks, &segment, "flush_at = 5\nflush_interval = 1");
    let relay = InProcess::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web"))],
        tracks(12).as_bytes(),
    );
    assert_eq!(a.status, 200);
    segment.wait_for(3); // the last two after flush_interval
    assert_eq!(forwarded_sizes(&segment), [5, 5, 2]);
}

#[test]
fn a_source_s_max_batch_messages_lets_forwarded_batches_join_up_to_it() {
    let dir = temp_dir();
    let (hooks, segment) = (Receiver::start(), Receiver::start());
    let cfg = forwarding(&hooks, &segment, "flush_at = 5\nmax_batch_messages = 15");
    let relay = InProcess::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/batch"),
        &[JSON, ("Authorization", &basic("wk_web"))],
        tracks(50).as_bytes(),
    );
    assert_eq!(a.status, 200);
    hooks.wait_for(50);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while forwarded_sizes(&segment).iter().sum::<usize>() < 50 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            forwarded_sizes(&segment)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let sizes = forwarded_sizes(&segment);
    assert_eq!(sizes.iter().sum::<usize>(), 50);
    assert!(sizes.iter().all(|n| *n <= 15), "{sizes:?}");
    assert!(sizes.iter().any(|n| *n > 5), "batches joined: {sizes:?}");
}
