//! The control plane against the real binary: sources as resources of the admin API, applied
//! live while events flow (counted at real receivers on 127.0.0.1), kept across a restart,
//! per-source tokens, field-named refusals, secrets never shown, the OpenAPI document.

mod support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

const ADMIN: &str = "Bearer adm";

/// A relay with the admin API on and no source in its file.
fn api_only(extra: &str) -> String {
    format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         allowed_networks = [\"127.0.0.0/8\"]\nforward_allowed_networks = [\"127.0.0.0/8\"]\n\
         max_backoff = 0.2\n{extra}\n"
    )
}

/// PUTs `body` as the admin, who grants the source the loopback network its receivers and
/// collectors are on (an API source has the strict guard otherwise) unless the body says
/// otherwise.
fn put_source(relay: &Relay, name: &str, body: &Value) -> Answer {
    let mut body = body.clone();
    if let Some(map) = body.as_object_mut() {
        for grant in ["allowed_networks", "forward_allowed_networks"] {
            map.entry(grant).or_insert_with(|| json!(["127.0.0.0/8"]));
        }
    }
    put(
        &relay.url(&format!("/admin/sources/{name}")),
        &[
            ("Authorization", ADMIN),
            ("Content-Type", "application/json"),
        ],
        body.to_string().as_bytes(),
    )
}

fn hook(rx: &Receiver) -> Value {
    json!({"url": rx.url, "headers": {"X-Team": "growth"}})
}

fn track(key: &str, relay: &Relay, id: &str) -> u16 {
    let body = json!({"batch": [{"type": "track", "userId": "u1", "event": "E", "messageId": id}]});
    post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic(key))],
        body.to_string().as_bytes(),
    )
    .status
}

/// How many requests each message id got at `rx`.
fn ids(rx: &Receiver) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for b in rx.bodies() {
        *out.entry(b["messageId"].as_str().unwrap_or("").to_string())
            .or_insert(0) += 1;
    }
    out
}

fn seq_of(id: &str) -> usize {
    id.trim_start_matches("m-").parse().unwrap()
}

/// Create, replace (a second webhook), disable a webhook and delete, all while a sender posts
/// events without pause: every acknowledged event reaches a receiver, none twice; events sent
/// after an answer follow it (the new webhook gets them, the disabled one none), and after the
/// delete's answer the write key is refused.
#[test]
fn changes_through_the_api_while_events_flow_lose_nothing_and_follow_each_answer() {
    let (a, b) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let relay = Arc::new(Relay::start(dir.path(), &api_only("")));
    let created = put_source(
        &relay,
        "web",
        &json!({"write_keys": ["wk_web"], "webhooks": [hook(&a)]}),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.json()["managed_by"], "api");
    // The sender: one event a request, numbered; what was answered 200, and 401.
    let next = Arc::new(AtomicUsize::new(0));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (relay, next, acked, refused, stop) = (
            relay.clone(),
            next.clone(),
            acked.clone(),
            refused.clone(),
            stop.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                let n = next.fetch_add(1, SeqCst);
                match track("wk_web", &relay, &format!("m-{n}")) {
                    200 => acked.lock().unwrap().push(n),
                    401 => refused.lock().unwrap().push(n),
                    other => panic!("event {n} answered {other}: {}", relay.log()),
                }
            }
        })
    };
    let wait_events = |n: usize| {
        let from = next.load(SeqCst);
        while next.load(SeqCst) < from + n {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_events(40);
    let both = put_source(
        &relay,
        "web",
        &json!({"write_keys": ["wk_web"], "webhooks": [hook(&a), hook(&b)]}),
    );
    assert_eq!(both.status, 200, "{}", both.body);
    let with_b = next.load(SeqCst);
    wait_events(40);
    let a_off = json!({"url": a.url, "enabled": false});
    let off = put_source(
        &relay,
        "web",
        &json!({"write_keys": ["wk_web"], "webhooks": [a_off, hook(&b)]}),
    );
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.json()["webhooks"][0]["enabled"], false);
    let without_a = next.load(SeqCst);
    wait_events(40);
    let gone = delete(
        &relay.url("/admin/sources/web"),
        &[("Authorization", ADMIN)],
    );
    assert_eq!(gone.status, 204, "{}", gone.body);
    let deleted = next.load(SeqCst);
    wait_events(10);
    stop.store(true, SeqCst);
    sender.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    let refused = refused.lock().unwrap().clone();
    assert!(
        refused.iter().all(|&n| n + 1 >= deleted),
        "refused before the delete: {refused:?}"
    );
    assert!(
        refused.iter().filter(|&&n| n >= deleted).count() >= 9,
        "the write key is refused after the delete"
    );
    assert!(
        acked.iter().all(|&n| n < deleted),
        "accepted after the delete's answer"
    );
    // Every acknowledged event is delivered (the deleted source drains), none twice.
    let deadline = Instant::now() + Duration::from_secs(30);
    let delivered = || {
        let (ga, gb) = (ids(&a), ids(&b));
        acked.iter().all(|n| {
            let id = format!("m-{n}");
            ga.contains_key(&id) || gb.contains_key(&id)
        })
    };
    while !delivered() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        delivered(),
        "an acknowledged event was lost\n{}",
        relay.log()
    );
    std::thread::sleep(Duration::from_millis(300));
    let (ga, gb) = (ids(&a), ids(&b));
    for (rx, got) in [("a", &ga), ("b", &gb)] {
        let twice: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{rx} got some twice: {twice:?}");
    }
    for n in acked.iter().filter(|&&n| n >= with_b) {
        assert!(
            gb.contains_key(&format!("m-{n}")),
            "m-{n}, sent after b was added, not at b"
        );
    }
    let late_at_a: Vec<usize> = ga
        .keys()
        .map(|id| seq_of(id))
        .filter(|&n| n >= without_a)
        .collect();
    assert!(
        late_at_a.is_empty(),
        "sent to the disabled webhook: {late_at_a:?}"
    );
}

/// A body the core refuses is a 400 naming the field as relay.toml's errors do, and changes
/// nothing.
#[test]
fn a_refused_body_names_its_field_and_changes_nothing() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &api_only(""));
    let ok = json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "timeout": 2});
    assert_eq!(put_source(&relay, "web", &ok).status, 201);
    let six: Vec<Value> = (0..6).map(|_| hook(&rx)).collect();
    let cases = [
        (
            json!({"write_keys": ["wk_web"], "webhooks": six}),
            "webhooks",
            "at most 5",
        ),
        (
            json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx), {"url": "ftp://x"}]}),
            "webhooks[1].url",
            "http",
        ),
        (
            json!({"write_keys": ["wk_web"], "webhooks": [{"url": rx.url, "headers": {"Host": "x"}}]}),
            "webhooks[0].headers[\"Host\"]",
            "cannot be overridden",
        ),
        (
            json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "timeout": "soon"}),
            "timeout",
            "seconds",
        ),
        (
            json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "colour": "red"}),
            "",
            "colour",
        ),
        (
            json!({"write_keys": [], "webhooks": [hook(&rx)]}),
            "write_keys",
            "at least one",
        ),
        (
            json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "spool": false}),
            "spool",
            "operator",
        ),
        (
            json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "signature_scheme": "md5"}),
            "signature_scheme",
            "not a scheme",
        ),
    ];
    for (body, field, says) in cases {
        let a = put_source(&relay, "web", &body);
        assert_eq!(a.status, 400, "{body}: {}", a.body);
        let got = a.json();
        if !field.is_empty() {
            assert_eq!(got["field"], field, "{}", a.body);
        }
        assert!(
            got["message"].as_str().unwrap().contains(says),
            "{}",
            a.body
        );
    }
    let now = get(
        &relay.url("/admin/sources/web"),
        &[("Authorization", ADMIN)],
    )
    .json();
    assert_eq!(now["webhooks"].as_array().unwrap().len(), 1, "{now}");
    assert_eq!(now["timeout"], 2.0);
    assert_eq!(track("wk_web", &relay, "m-1"), 200);
    rx.wait_for(1);
}

/// A source of relay.toml is shown as the file's, and the API may not change it.
#[test]
fn a_file_source_is_shown_and_read_only() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let all = get(&relay.url("/admin/sources"), &[("Authorization", ADMIN)]).json();
    assert_eq!(all["sources"][0]["managed_by"], "file", "{all}");
    assert_eq!(all["sources"][0]["write_keys"], json!(["wk_web"]));
    for a in [
        put_source(
            &relay,
            "web",
            &json!({"write_keys": ["wk_x"], "webhooks": [hook(&rx)]}),
        ),
        delete(
            &relay.url("/admin/sources/web"),
            &[("Authorization", ADMIN)],
        ),
    ] {
        assert_eq!(a.status, 409, "{}", a.body);
        assert!(a.body.contains("relay.toml"), "{}", a.body);
    }
    // A write key of the file's source is refused to an API source.
    let taken = put_source(
        &relay,
        "shop",
        &json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)]}),
    );
    assert_eq!(
        (taken.status, taken.json()["field"].clone()),
        (400, json!("write_keys[0]"))
    );
}

/// The secret and the forward's write key are never shown, logged or scraped; left out of a
/// PUT they stay (the receiver's signature proves it).
#[test]
fn secrets_are_write_only() {
    let rx = Receiver::start();
    let collector = Receiver::start();
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &api_only(""));
    let endpoint = collector.url.trim_end_matches("/hook").to_string();
    let body = json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "shared_secret": "sekrit-9f3a",
        "forward": {"endpoint": endpoint, "write_key": "fwd-key-77c1"}, "flush_at": 1});
    let first = put_source(&relay, "web", &body);
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.json()["has_shared_secret"], true);
    assert_eq!(first.json()["forward"]["has_write_key"], true);
    // Left out: kept.
    let again = put_source(
        &relay,
        "web",
        &json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)],
        "forward": {"endpoint": endpoint}, "flush_at": 1}),
    );
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(track("wk_web", &relay, "m-1"), 200);
    let hit = &rx.wait_for(1)[0];
    assert_eq!(
        hit.header("x-signature"),
        Some(outbound::sign(b"sekrit-9f3a", &hit.body).as_str())
    );
    let fwd = &collector.wait_for(1)[0];
    assert!(fwd
        .header("authorization")
        .is_some_and(|h| h.starts_with("Basic ")));
    let seen = [
        first.body,
        again.body,
        get(
            &relay.url("/admin/sources/web"),
            &[("Authorization", ADMIN)],
        )
        .body,
        get(&relay.url("/admin/sources"), &[("Authorization", ADMIN)]).body,
        get(&relay.url("/metrics"), &[("Authorization", ADMIN)]).body,
        relay.log(),
    ];
    for text in seen {
        for secret in ["sekrit-9f3a", "fwd-key-77c1"] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
    }
    // null clears it.
    let cleared = put_source(
        &relay,
        "web",
        &json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "shared_secret": null}),
    );
    assert_eq!(cleared.json()["has_shared_secret"], false);
}

/// A source's token reads and changes its own source (not its write keys), and nothing else.
#[test]
fn a_source_token_reaches_its_own_source_only() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &api_only(""));
    for (name, key) in [("web", "wk_web"), ("shop", "wk_shop")] {
        assert_eq!(
            put_source(
                &relay,
                name,
                &json!({"write_keys": [key], "webhooks": [hook(&rx)]})
            )
            .status,
            201
        );
    }
    let made = post(
        &relay.url("/admin/sources/web/tokens"),
        &[("Authorization", ADMIN)],
        b"",
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let token = made.json()["token"].as_str().unwrap().to_string();
    let id = made.json()["id"].as_str().unwrap().to_string();
    let listed = get(
        &relay.url("/admin/sources/web/tokens"),
        &[("Authorization", ADMIN)],
    );
    assert!(!listed.body.contains(&token[10..]), "a token is shown once");
    let auth = format!("Bearer {token}");
    let h = [("Authorization", auth.as_str())];
    assert_eq!(get(&relay.url("/admin/sources/web"), &h).status, 200);
    let mine = json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx), hook(&rx)], "shared_secret": "s2"});
    let changed = put(
        &relay.url("/admin/sources/web"),
        &h,
        mine.to_string().as_bytes(),
    );
    assert_eq!(changed.status, 200, "{}", changed.body);
    let keys = json!({"write_keys": ["wk_other"], "webhooks": [hook(&rx)]});
    let refused = put(
        &relay.url("/admin/sources/web"),
        &h,
        keys.to_string().as_bytes(),
    );
    assert_eq!(
        (refused.status, refused.json()["field"].clone()),
        (403, json!("write_keys"))
    );
    let limits = json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "max_queue_size": 5});
    assert_eq!(
        put(
            &relay.url("/admin/sources/web"),
            &h,
            limits.to_string().as_bytes()
        )
        .status,
        403
    );
    let other = json!({"write_keys": ["wk_shop"], "webhooks": [hook(&rx)]});
    for a in [
        get(&relay.url("/admin/sources/shop"), &h),
        put(
            &relay.url("/admin/sources/shop"),
            &h,
            other.to_string().as_bytes(),
        ),
        delete(&relay.url("/admin/sources/shop"), &h),
        delete(&relay.url("/admin/sources/web"), &h),
        get(&relay.url("/admin/sources"), &h),
        post(&relay.url("/admin/deletions"), &h, br#"{"user_id":"u1"}"#),
        put(
            &relay.url("/admin/sources/web/audiences/vip"),
            &h,
            br#"{"members":["u1"]}"#,
        ),
        post(&relay.url("/admin/sources/shop/tokens"), &h, b""),
        get(&relay.url("/metrics"), &h),
    ] {
        assert_eq!(a.status, 403, "{}", a.body);
    }
    // A token of its own source it may make (a customer rotating its keys).
    let own = post(&relay.url("/admin/sources/web/tokens"), &h, b"");
    assert_eq!(own.status, 201, "{}", own.body);
    assert_eq!(get(&relay.url("/admin/openapi.json"), &h).status, 200);
    let revoked = delete(&relay.url(&format!("/admin/sources/web/tokens/{id}")), &h);
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    assert_eq!(get(&relay.url("/admin/sources/web"), &h).status, 401);
    assert!(
        !relay.log().contains(&token[10..]),
        "the token is never logged"
    );
}

/// Sources made through the API survive a restart (data_dir/control.db), tokens too.
#[test]
fn api_sources_survive_a_restart() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let mut relay = Relay::start(dir.path(), &api_only(""));
    assert_eq!(
        put_source(
            &relay,
            "web",
            &json!({"write_keys": ["wk_web"], "webhooks": [hook(&rx)], "shared_secret": "s"})
        )
        .status,
        201
    );
    let token = post(
        &relay.url("/admin/sources/web/tokens"),
        &[("Authorization", ADMIN)],
        b"",
    )
    .json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    relay.signal(libc::SIGTERM);
    relay.wait_exit(Duration::from_secs(20));
    let relay = Relay::start(dir.path(), &api_only(""));
    let auth = format!("Bearer {token}");
    let got = get(
        &relay.url("/admin/sources/web"),
        &[("Authorization", auth.as_str())],
    );
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.json()["has_shared_secret"], true);
    assert_eq!(track("wk_web", &relay, "m-1"), 200);
    rx.wait_for(1);
}

/// The document is OpenAPI 3.1 and lists the sources' routes.
#[test]
fn the_openapi_document_is_served() {
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &api_only(""));
    let doc = get(
        &relay.url("/admin/openapi.json"),
        &[("Authorization", ADMIN)],
    );
    assert_eq!(doc.status, 200);
    let doc = doc.json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/admin/sources/{name}"]["put"].is_object());
    if let Ok(path) = std::env::var("OUTBOUND_RELAY_OPENAPI_OUT") {
        std::fs::write(path, doc.to_string()).unwrap();
    }
}
