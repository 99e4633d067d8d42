//! Subscriptions through the relay: a source's subscriptions, set in relay.toml (our settings or
//! Segment's export as written) and through the admin API, get the events their triggers
//! match, mapped, at real receivers on 127.0.0.1; errors name the field and, for a trigger,
//! the position; each subscription's records and dead letters are its own.

mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::mtls::Mtls;
use support::{basic, get, post, put, temp_dir, Addr, InProcess, Receiver};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

fn top() -> String {
    "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
     allowed_networks = [\"127.0.0.0/8\"]\nmax_backoff = 0.2\n"
        .to_string()
}

fn send(relay: &impl Addr, key: &str, events: Value) {
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic(key))],
        json!({ "batch": events }).to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "waited 20 s for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn sign(secret: &str, body: &[u8]) -> String {
    outbound::sign(secret.as_bytes(), body)
}

#[test]
fn relay_toml_subscriptions_get_what_their_triggers_match_as_their_mappings_say() {
    let (orders, people, classic) = (Receiver::start(), Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let config = format!(
        r#"{top}
[[sources]]
name = "shop"
write_keys = ["wk_shop"]
shared_secret = "s3cret"
[[sources.webhooks]]
url = "{classic}"
[[sources.subscriptions]]
name = "orders"
trigger = 'type = "track" and event = "Order Completed" and properties.total > 10'
url = "{orders}"
method = "PUT"
headers = {{ "X-Team" = "growth" }}
data = {{ order = {{ "@path" = "$.properties.order_id" }}, total = {{ "@path" = "$.properties.total" }} }}
# As Segment's Config API exports a Webhooks (Actions) mapping.
[[sources.subscriptions]]
name = "people"
subscribe = 'type = "identify"'
[sources.subscriptions.mapping]
url = "{people}"
method = "POST"
data = {{ "@path" = "$." }}
"#,
        top = top(),
        classic = classic.url,
        orders = orders.url,
        people = people.url,
    );
    let relay = InProcess::start(dir.path(), &config);
    send(
        &relay,
        "wk_shop",
        json!([
            {"type": "track", "userId": "u1", "event": "Order Completed", "messageId": "m-1",
             "properties": {"order_id": "o-1", "total": 25}},
            {"type": "track", "userId": "u1", "event": "Order Completed", "messageId": "m-2",
             "properties": {"order_id": "o-2", "total": 5}},
            {"type": "identify", "userId": "u2", "messageId": "m-3", "traits": {"plan": "pro"}}
        ]),
    );
    assert_eq!(
        classic.wait_for(3).len(),
        3,
        "the classic webhook gets every event"
    );
    let hit = &orders.wait_for(1)[0];
    let person = &people.wait_for(1)[0];
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!((orders.hits().len(), people.hits().len()), (1, 1));
    assert_eq!(hit.method, "PUT");
    assert_eq!(hit.body, br#"{"order":"o-1","total":25}"#);
    assert_eq!(hit.header("x-team"), Some("growth"));
    assert_eq!(
        hit.header("x-signature"),
        Some(sign("s3cret", &hit.body).as_str())
    );
    assert_eq!(person.method, "POST");
    let event = person.json();
    assert_eq!(
        (event["type"].as_str(), event["userId"].as_str()),
        (Some("identify"), Some("u2"))
    );
    assert_eq!(event["messageId"], "m-3");
    assert_eq!(event["traits"]["plan"], "pro");
    assert_eq!(
        person.header("x-signature"),
        Some(sign("s3cret", &person.body).as_str())
    );

    // The settings are shown as set.
    let shown = get(&relay.url("/admin/sources/shop"), &[ADMIN]).json();
    let subs = shown["subscriptions"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[1]["subscribe"], "type = \"identify\"");
}

#[test]
fn relay_toml_errors_name_the_subscription_and_the_position_in_its_trigger() {
    let dir = temp_dir();
    let config = format!(
        "{}[[sources]]\nname = \"shop\"\nwrite_keys = [\"wk\"]\n\
         [[sources.subscriptions]]\nname = \"bad\"\ntrigger = 'type = \"track\" and event = \"x'\n\
         url = \"http://127.0.0.1:9/x\"\n",
        top()
    );
    std::fs::write(dir.path().join("relay.toml"), config).unwrap();
    let out = support::relay_command()
        .args(["check", "--config"])
        .arg(dir.path().join("relay.toml"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("sources[0].subscriptions[0].trigger"),
        "{text}"
    );
    assert!(text.contains("at byte 27"), "{text}");
}

#[test]
fn the_admin_api_takes_subscriptions_in_either_form_and_names_what_it_refuses() {
    let (hook, sub) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top());
    let body = |subs: Value| {
        // The admin grants loopback: an API source has the strict guard otherwise.
        json!({"write_keys": ["wk_api"], "webhooks": [{"url": hook.url}], "subscriptions": subs,
               "allowed_networks": ["127.0.0.0/8"]})
    };
    let put_source = |b: &Value| {
        put(
            &relay.url("/admin/sources/api"),
            &[ADMIN],
            b.to_string().as_bytes(),
        )
    };
    // A trigger cut short: the field and the position.
    let a = put_source(&body(json!([
        {"name": "x", "trigger": "event = \"abc", "url": sub.url}
    ])));
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], "subscriptions[0].trigger", "{}", a.body);
    assert!(a.body.contains("at byte 8"), "{}", a.body);
    // A directive mapping-kit does not have.
    let a = put_source(&body(json!([
        {"name": "x", "trigger": "type = \"track\"", "url": sub.url, "data": {"v": {"@nope": 1}}}
    ])));
    assert_eq!(a.status, 400, "{}", a.body);
    assert!(
        a.json()["field"]
            .as_str()
            .unwrap()
            .starts_with("subscriptions[0].data"),
        "{}",
        a.body
    );
    // A field neither form has.
    let a = put_source(&body(json!([
        {"name": "x", "trigger": "type = \"track\"", "url": sub.url, "colour": "red"}
    ])));
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], "subscriptions[0].colour", "{}", a.body);
    // Segment's export, pasted as it is.
    let a = put_source(&body(json!([{
        "name": "signups",
        "subscribe": "type = \"track\" and event = \"Signed Up\"",
        "mapping": {"url": sub.url, "method": "PATCH", "data": {"email": {"@path": "$.properties.email"}}}
    }])));
    assert!(a.status == 200 || a.status == 201, "{}", a.body);
    send(
        &relay,
        "wk_api",
        json!([
            {"type": "track", "userId": "u", "event": "Signed Up", "properties": {"email": "a@b.c"}},
            {"type": "track", "userId": "u", "event": "Logged In"}
        ]),
    );
    let hit = &sub.wait_for(1)[0];
    assert_eq!(hit.method, "PATCH");
    assert_eq!(hit.body, br#"{"email":"a@b.c"}"#);
    until("the classic webhook's two", || hook.hits().len() == 2);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(sub.hits().len(), 1);
    let shown = get(&relay.url("/admin/sources/api"), &[ADMIN]).json();
    assert_eq!(shown["subscriptions"][0]["mapping"]["method"], "PATCH");
}

#[test]
fn each_subscription_has_its_own_records_dead_letters_replay_and_preview() {
    let (hook, crm) = (Receiver::start(), Receiver::start());
    crm.status.store(400, std::sync::atomic::Ordering::SeqCst);
    let dir = temp_dir();
    let config = format!(
        r#"{top}
[[sources]]
name = "shop"
write_keys = ["wk_shop"]
[[sources.webhooks]]
url = "{hook}"
[[sources.subscriptions]]
name = "crm"
trigger = 'event = "Lead"'
url = "{crm}"
data = {{ score = {{ "@path" = "$.properties.score" }} }}
"#,
        top = top(),
        hook = hook.url,
        crm = crm.url,
    );
    let relay = InProcess::start(dir.path(), &config);
    send(
        &relay,
        "wk_shop",
        json!([{"type": "track", "userId": "u", "event": "Lead", "messageId": "lead-1",
                "properties": {"score": 7}}]),
    );
    crm.wait_for(1);
    let path = |p: &str| relay.url(&format!("/admin/sources/shop/subscriptions/crm{p}"));
    until("its dead letter", || {
        let page = get(&path("/dead-letters"), &[ADMIN]).json();
        page["dead_letters"]
            .as_array()
            .is_some_and(|l| l.len() == 1)
    });
    // The source's own records are its classic webhook's: the subscription's are apart.
    let own = get(&relay.url("/admin/sources/shop/dead-letters"), &[ADMIN]).json();
    assert_eq!(own["dead_letters"].as_array().unwrap().len(), 0, "{own}");
    let state = get(&path(""), &[ADMIN]).json();
    assert_eq!(
        (state["accepted"].as_u64(), state["failed"].as_u64()),
        (Some(1), Some(1)),
        "{state}"
    );
    assert_eq!(state["health"]["consecutive_failures"], 1, "{state}");
    let attempts = get(&path("/attempts"), &[ADMIN]).json();
    assert_eq!(attempts["attempts"][0]["status"], 400, "{attempts}");
    let letter = get(&path("/dead-letters/lead-1"), &[ADMIN]).json();
    assert_eq!(letter["message_id"], "lead-1", "{letter}");
    // The receiver is fixed: the replay goes to the subscription, mapped as it was.
    crm.status.store(200, std::sync::atomic::Ordering::SeqCst);
    let a = post(&path("/dead-letters/lead-1/replay"), &[ADMIN], b"{}");
    assert_eq!(a.status, 202, "{}", a.body);
    let hits = crm.wait_for(2);
    assert_eq!(hits[1].body, br#"{"score":7}"#);
    assert_eq!(
        hook.hits().len(),
        1,
        "the classic webhook is not sent it again"
    );
    // Unknown subscription.
    let a = get(
        &relay.url("/admin/sources/shop/subscriptions/nope"),
        &[ADMIN],
    );
    assert_eq!(a.status, 404, "{}", a.body);

    // Preview: the saved one, and settings not saved (an error names the field).
    let event = json!({"type": "track", "event": "Lead", "properties": {"score": 9}});
    let p = post(
        &path("/preview"),
        &[ADMIN],
        json!({ "event": event }).to_string().as_bytes(),
    );
    assert_eq!(p.status, 200, "{}", p.body);
    let p = p.json();
    assert_eq!(p["matches"], true);
    assert_eq!(p["request"]["body"], r#"{"score":9}"#);
    assert_eq!(p["request"]["method"], "POST");
    let other = json!({"type": "identify", "userId": "u"});
    let p = post(
        &path("/preview"),
        &[ADMIN],
        json!({ "event": other }).to_string().as_bytes(),
    );
    assert_eq!(p.json()["matches"], false);
    let unsaved = json!({"subscription": {"name": "t", "trigger": "type = \"track\"",
        "url": "http://127.0.0.1:9/x", "method": "PUT", "headers": {"X-K": {"@path": "$.event"}}},
        "event": event});
    let p = post(
        &relay.url("/admin/sources/shop/subscriptions/preview"),
        &[ADMIN],
        unsaved.to_string().as_bytes(),
    );
    let p = p.json();
    assert_eq!(p["request"]["method"], "PUT", "{p}");
    assert_eq!(p["request"]["headers"][0], json!(["x-k", "Lead"]), "{p}");
    let bad = json!({"subscription": {"name": "t", "trigger": "type = ", "url": "ftp://x"},
        "event": event});
    let a = post(
        &relay.url("/admin/sources/shop/subscriptions/preview"),
        &[ADMIN],
        bad.to_string().as_bytes(),
    );
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], "subscription.url", "{}", a.body);
}

#[test]
fn a_batching_subscription_gets_its_events_in_full_batches() {
    let (batches, hook) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let config = format!(
        r#"{top}
[[sources]]
name = "bulk"
write_keys = ["wk_bulk"]
shared_secret = "s3cret"
[[sources.webhooks]]
url = "{hook}"
enabled = false
[[sources.subscriptions]]
name = "warehouse"
subscribe = 'type = "track"'
[sources.subscriptions.mapping]
url = "{batches}"
enable_batching = true
batch_size = 1000
data = {{ id = {{ "@path" = "$.messageId" }} }}
"#,
        top = top(),
        hook = hook.url,
        batches = batches.url,
    );
    let relay = InProcess::start(dir.path(), &config);
    for chunk in 0..20 {
        let events: Vec<Value> = (0..500)
            .map(|i| {
                json!({"type": "track", "userId": "u", "event": "E",
                            "messageId": format!("m-{}", chunk * 500 + i)})
            })
            .collect();
        send(&relay, "wk_bulk", Value::Array(events));
    }
    let hits = batches.wait_for(10);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        batches.hits().len(),
        10,
        "10,000 events in batches of 1,000"
    );
    let mut ids = std::collections::HashSet::new();
    for h in &hits {
        let events = h.json();
        assert_eq!(events.as_array().unwrap().len(), 1000);
        assert_eq!(
            h.header("x-signature"),
            Some(sign("s3cret", &h.body).as_str())
        );
        for e in events.as_array().unwrap() {
            ids.insert(e["id"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(ids.len(), 10_000, "each event once");
}

#[test]
fn a_subscriptions_header_values_are_write_only_as_a_webhooks_are() {
    let (hook, sub) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top());
    let source = |subs: Value| {
        json!({"write_keys": ["wk_w"], "webhooks": [{"url": hook.url}], "subscriptions": subs,
               "allowed_networks": ["127.0.0.0/8"]})
    };
    let put_source = |b: &Value| {
        put(
            &relay.url("/admin/sources/w"),
            &[ADMIN],
            b.to_string().as_bytes(),
        )
    };
    let first = json!([{"name": "crm", "trigger": "type = \"track\"", "url": sub.url,
                        "headers": {"Authorization": "Bearer s3cret-token"}}]);
    let a = put_source(&source(first));
    assert!(a.status == 200 || a.status == 201, "{}", a.body);
    assert!(!a.body.contains("s3cret-token"), "{}", a.body);
    let shown = get(&relay.url("/admin/sources/w"), &[ADMIN]);
    assert!(!shown.body.contains("s3cret-token"), "{}", shown.body);
    let shown = shown.json();
    assert_eq!(
        shown["subscriptions"][0]["headers"]["Authorization"],
        json!({"has_value": true})
    );
    // Sent back as shown: the value stays, and goes out.
    let mut again = shown.clone();
    for k in ["name", "id", "managed_by", "has_shared_secret"] {
        again.as_object_mut().unwrap().remove(k);
    }
    let a = put_source(&again);
    assert_eq!(a.status, 200, "{}", a.body);
    send(
        &relay,
        "wk_w",
        json!([{"type": "track", "userId": "u", "event": "E"}]),
    );
    assert_eq!(
        sub.wait_for(1)[0].header("authorization"),
        Some("Bearer s3cret-token")
    );
    // Kept only for the same subscription at the same URL.
    let mut moved = again.clone();
    moved["subscriptions"][0]["url"] = json!(format!("{}/elsewhere", hook.url));
    let a = put_source(&moved);
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(
        a.json()["field"],
        "subscriptions[0].headers.Authorization",
        "{}",
        a.body
    );
}

/// One event to `/v1/track`.
fn track(relay: &impl Addr, key: &str, id: &str) {
    let body = json!({"userId": "u1", "event": "Signed Up", "messageId": id});
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic(key))],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}

#[test]
fn relay_toml_subscriptions_call_their_endpoints_with_auth_and_mutual_tls() {
    let (basic_rx, bearer_rx) = (Receiver::start(), Receiver::start());
    let mtls = Mtls::start();
    let dir = temp_dir();
    for (name, text) in [
        ("client.pem", &mtls.client_cert),
        ("client.key", &mtls.client_key),
        ("ca.pem", &mtls.ca),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let path = |name: &str| dir.path().join(name).display().to_string();
    let config = format!(
        r#"{top}
[[sources]]
name = "shop"
write_keys = ["wk_shop"]
[[sources.subscriptions]]
name = "basic"
trigger = 'type = "track"'
url = "{basic}"
auth = {{ type = "basic", user = "Aladdin", password = "open sesame" }}
[[sources.subscriptions]]
name = "bearer"
trigger = 'type = "track"'
url = "{bearer}"
auth = {{ type = "bearer", token = "t0k-123" }}
[[sources.subscriptions]]
name = "secure"
trigger = 'type = "track"'
url = "{secure}"
tls = {{ client_cert = {cert:?}, client_key = {key:?}, ca_certs = {ca:?} }}
"#,
        top = top(),
        basic = basic_rx.url,
        bearer = bearer_rx.url,
        secure = mtls.receiver.url,
        cert = path("client.pem"),
        key = path("client.key"),
        ca = path("ca.pem"),
    );
    let relay = InProcess::start(dir.path(), &config);
    track(&relay, "wk_shop", "m-1");
    assert_eq!(
        basic_rx.wait_for(1)[0].header("authorization"),
        Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    );
    assert_eq!(
        bearer_rx.wait_for(1)[0].header("authorization"),
        Some("Bearer t0k-123")
    );
    until("the request over mutual TLS", || {
        !mtls.receiver.hits.lock().unwrap().is_empty()
    });
    assert_eq!(mtls.receiver.hits.lock().unwrap()[0], mtls.client_der);
    // Shown through the API without the secrets.
    let shown = get(&relay.url("/admin/sources/shop"), &[ADMIN]);
    for secret in ["open sesame", "t0k-123", "PRIVATE KEY"] {
        assert!(!shown.body.contains(secret), "{secret}: {}", shown.body);
    }
    let subs = &shown.json()["subscriptions"];
    assert_eq!(
        subs[1]["auth"],
        json!({"type": "bearer", "token": {"has_value": true}})
    );
    assert_eq!(
        subs[2]["tls"],
        json!({"client_cert": path("client.pem"), "client_key": {"has_value": true},
               "ca_certs": path("ca.pem")})
    );
}

/// A subscription's endpoint settings through a PUT and back: its secrets never shown, the
/// marker keeps the stored value only for the same subscription, URL and auth type, a bad
/// value answers 400 naming it, and the audit trail names fields only.
#[test]
fn the_admin_api_takes_a_subscriptions_endpoint_settings_with_secrets_write_only() {
    let (rx, other) = (Receiver::start(), Receiver::start());
    let mtls = Mtls::start();
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top());
    let put_source = |b: &Value| {
        put(
            &relay.url("/admin/sources/w"),
            &[ADMIN],
            b.to_string().as_bytes(),
        )
    };
    let trigger = "type = \"track\"";
    let body = json!({"write_keys": ["wk_w"], "allowed_networks": ["127.0.0.0/8"],
        "subscriptions": [
            {"name": "crm", "trigger": trigger, "url": rx.url,
             "auth": {"type": "bearer", "token": "tok-SECRET"}, "signature_header": "X-Sig",
             "rate_limit": {"per_second": 50}},
            {"name": "secure", "trigger": trigger, "url": mtls.receiver.url,
             "tls": {"client_cert": mtls.client_cert, "client_key": mtls.client_key,
                     "ca_certs": mtls.ca}}]});
    let a = put_source(&body);
    assert_eq!(a.status, 201, "{}", a.body);
    track(&relay, "wk_w", "m-1");
    assert_eq!(
        rx.wait_for(1)[0].header("authorization"),
        Some("Bearer tok-SECRET")
    );
    until("the request over mutual TLS", || {
        !mtls.receiver.hits.lock().unwrap().is_empty()
    });
    let shown = get(&relay.url("/admin/sources/w"), &[ADMIN]);
    for secret in ["tok-SECRET", "PRIVATE KEY"] {
        assert!(!shown.body.contains(secret), "{secret}: {}", shown.body);
    }
    let got = shown.json();
    let subs = &got["subscriptions"];
    assert_eq!(
        subs[0]["auth"],
        json!({"type": "bearer", "token": {"has_value": true}})
    );
    assert_eq!(subs[0]["signature_header"], json!("X-Sig"));
    assert_eq!(subs[0]["rate_limit"], json!({"per_second": 50}));
    assert_eq!(subs[1]["tls"]["client_key"], json!({"has_value": true}));
    assert_eq!(subs[1]["tls"]["client_cert"], json!(mtls.client_cert));

    // Sent back as shown: the secrets stay, and go out.
    let mut again = got.clone();
    for k in ["name", "id", "managed_by", "has_shared_secret"] {
        again.as_object_mut().unwrap().remove(k);
    }
    let a = put_source(&again);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(get(&relay.url("/admin/sources/w"), &[ADMIN]).json(), got);
    track(&relay, "wk_w", "m-2");
    assert_eq!(
        rx.wait_for(2)[1].header("authorization"),
        Some("Bearer tok-SECRET")
    );
    until("the second request over mutual TLS", || {
        mtls.receiver.hits.lock().unwrap().len() == 2
    });

    // Never to another URL, nor to another auth type.
    let mut moved = again.clone();
    moved["subscriptions"][0]["url"] = json!(other.url);
    let a = put_source(&moved);
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(
        a.json()["field"],
        "subscriptions[0].auth.token",
        "{}",
        a.body
    );
    let mut retyped = again.clone();
    retyped["subscriptions"][0]["auth"] =
        json!({"type": "basic", "user": "u", "password": {"has_value": true}});
    let a = put_source(&retyped);
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(
        a.json()["field"],
        "subscriptions[0].auth.password",
        "{}",
        a.body
    );
    // A path for a PEM, and values the core refuses: 400, named.
    let cases = [
        (
            json!({"tls": {"ca_certs": "/etc/ssl/ca.pem"}}),
            "subscriptions[0].tls.ca_certs",
        ),
        (
            json!({"auth": {"type": "bearer", "token": ""}}),
            "subscriptions[0].auth.token",
        ),
        (json!({"auth": {"type": "digest"}}), "subscriptions[0].auth"),
        (
            json!({"rate_limit": {"per_second": 0}}),
            "subscriptions[0].rate_limit.per_second",
        ),
        (
            json!({"signature_scheme": "md5"}),
            "subscriptions[0].signature_scheme",
        ),
    ];
    for (change, field) in cases {
        let mut bad = again.clone();
        for (k, v) in change.as_object().unwrap() {
            bad["subscriptions"][0][k] = v.clone();
        }
        let a = put_source(&bad);
        assert_eq!(a.status, 400, "{change}: {}", a.body);
        let got = a.json()["field"].as_str().unwrap_or("").to_string();
        assert!(got.starts_with(field), "{change}: {got} ({})", a.body);
    }
    // A new token: named in the audit trail, never shown.
    let mut renewed = again.clone();
    renewed["subscriptions"][0]["auth"] = json!({"type": "bearer", "token": "tok2-SECRET"});
    assert_eq!(put_source(&renewed).status, 200);
    track(&relay, "wk_w", "m-3");
    assert_eq!(
        rx.wait_for(3)[2].header("authorization"),
        Some("Bearer tok2-SECRET")
    );
    let audit = get(&relay.url("/admin/audit?source=w"), &[ADMIN]);
    assert_eq!(audit.status, 200, "{}", audit.body);
    assert!(
        audit.body.contains("subscriptions[0].auth.token"),
        "{}",
        audit.body
    );
    for secret in ["tok-SECRET", "tok2-SECRET", "PRIVATE KEY"] {
        assert!(!audit.body.contains(secret), "{secret}: {}", audit.body);
    }
}
