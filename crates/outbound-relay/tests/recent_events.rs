//! A source's recent events, for a subscription's preview, through the relay binary: a look
//! starts the capture; what the source accepts then comes back newest first, at most 20,
//! as the preview takes it; another source's events never; another source's token is
//! refused; a lease that lapses keeps nothing.

mod support;

use serde_json::{json, Value};
use std::time::Duration;
use support::{basic, get, post, temp_dir, Receiver, Relay};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

/// The lease the test gives the relay (`OUTBOUND_RELAY_TEST_CAPTURE_SECONDS`).
const LEASE_SECS: u64 = 4;

fn config(rx: &Receiver) -> String {
    let mut c = "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
                 allowed_networks = [\"127.0.0.0/8\"]\nmax_backoff = 0.2\n"
        .to_string();
    for name in ["shop", "web"] {
        c.push_str(&format!(
            "[[sources]]\nname = \"{name}\"\nwrite_keys = [\"wk_{name}\"]\n\
             [[sources.webhooks]]\nurl = \"{}\"\n",
            rx.url
        ));
    }
    c
}

fn look(relay: &Relay, source: &str, auth: (&str, &str)) -> Value {
    let a = get(
        &relay.url(&format!("/admin/sources/{source}/recent-events")),
        &[auth],
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

fn send(relay: &Relay, path: &str, key: &str, body: Value) {
    let a = post(
        &relay.url(path),
        &[("Authorization", &basic(key))],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}

fn names(recent: &Value) -> Vec<String> {
    (recent["events"].as_array().unwrap().iter())
        .map(|e| e["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_look_captures_the_sources_last_20_events_newest_first_until_its_lease_lapses() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let lease = LEASE_SECS.to_string();
    let env = [("OUTBOUND_RELAY_TEST_CAPTURE_SECONDS", lease.as_str())];
    let relay = Relay::start_with(dir.path(), &config(&rx), &[], &env);

    // Nothing is captured before a look.
    send(
        &relay,
        "/v1/track",
        "wk_shop",
        json!({"userId": "u", "event": "before"}),
    );
    let first = look(&relay, "shop", ADMIN);
    assert_eq!(first["events"], json!([]), "{first}");
    assert_eq!(first["capacity"], 20, "{first}");
    assert!(first["capturing_until"].is_string(), "{first}");

    // 10 single calls, then 15 events in 3 batches; another source's in between.
    for n in 0..10 {
        let mut event = json!({"userId": "u", "event": format!("e{n}"), "properties": {"n": n}});
        if n == 9 {
            // As analytics.js sends it in a text/plain body.
            event["writeKey"] = json!("wk_shop");
        }
        send(&relay, "/v1/track", "wk_shop", event);
        send(
            &relay,
            "/v1/track",
            "wk_web",
            json!({"userId": "u", "event": "other"}),
        );
    }
    assert_eq!(names(&look(&relay, "shop", ADMIN)).len(), 10);
    for b in 0..3 {
        let batch: Vec<Value> = (0..5)
            .map(|i| 10 + b * 5 + i)
            .map(|n| json!({"type": "track", "userId": "u", "event": format!("e{n}"), "properties": {"n": n}}))
            .collect();
        let body = json!({"batch": batch, "context": {"library": {"name": "t"}}});
        send(&relay, "/v1/batch", "wk_shop", body);
        send(
            &relay,
            "/v1/batch",
            "wk_web",
            json!({"batch": [{"type": "track", "userId": "u", "event": "other"}]}),
        );
    }
    let recent = look(&relay, "shop", ADMIN);
    let want: Vec<String> = (5..25).rev().map(|n| format!("e{n}")).collect();
    assert_eq!(names(&recent), want, "{recent}");
    let newest = &recent["events"][0];
    assert_eq!(newest["type"], "track", "{newest}");
    assert_eq!(newest["too_large"], false, "{newest}");
    assert!(newest["received_at"].is_string(), "{newest}");
    // The event as a preview takes it: its batch's context filled in, a single call's type
    // set, no write key.
    let event = &newest["event"];
    assert_eq!(event["event"], "e24", "{event}");
    assert_eq!(event["properties"]["n"], 24, "{event}");
    assert_eq!(event["context"]["library"]["name"], "t", "{event}");
    let single = &recent["events"][15]["event"];
    assert_eq!(single["event"], "e9", "{single}");
    assert_eq!(single["type"], "track", "{single}");
    assert!(single.get("writeKey").is_none(), "{single}");
    // What the preview takes, as it is.
    let ask = json!({"subscription": {"name": "t", "trigger": "event = \"e24\"",
        "url": "http://127.0.0.1:9/x", "data": {"n": {"@path": "$.properties.n"}}}, "event": event});
    let p = post(
        &relay.url("/admin/sources/shop/subscriptions/preview"),
        &[ADMIN],
        ask.to_string().as_bytes(),
    );
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(p.json()["matches"], true, "{}", p.body);
    assert_eq!(p.json()["request"]["body"], r#"{"n":24}"#, "{}", p.body);
    // The other source's are its own.
    let other = look(&relay, "web", ADMIN);
    assert_eq!(other["events"], json!([]), "{other}");

    // Another source's token: 403 (its own: 200).
    let made = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"");
    assert_eq!(made.status, 201, "{}", made.body);
    let token = format!("Bearer {}", made.json()["token"].as_str().unwrap());
    let theirs = get(
        &relay.url("/admin/sources/shop/recent-events"),
        &[("Authorization", &token)],
    );
    assert_eq!(theirs.status, 403, "{}", theirs.body);
    assert!(!theirs.body.contains("e24"), "{}", theirs.body);
    look(&relay, "web", ("Authorization", &token));
    let unknown = get(&relay.url("/admin/sources/nope/recent-events"), &[ADMIN]);
    assert_eq!(unknown.status, 404, "{}", unknown.body);

    // The lease lapses (and is swept within a second): nothing kept, nothing captured since.
    std::thread::sleep(Duration::from_secs(LEASE_SECS) + Duration::from_millis(1500));
    send(
        &relay,
        "/v1/track",
        "wk_shop",
        json!({"userId": "u", "event": "after"}),
    );
    let later = look(&relay, "shop", ADMIN);
    assert_eq!(later["events"], json!([]), "{later}");
}
