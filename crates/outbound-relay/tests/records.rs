//! Delivery records on the relay (the real binary, real receivers): a source's webhook
//! attempts and health, its dead letters (on by default), their replay one by one and in bulk with
//! progress, surviving a SIGKILL, and the settings at the top level and per source.

mod support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::{basic, config, delete, get, post, temp_dir, Receiver, Relay};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");
const ANSWER: &str = r#"{"error":"unknown event"}"#;

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn track(relay: &Relay, key: &str, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"type": "track", "userId": format!("u{i}"), "event": "Bought"}))
            .collect();
        let a = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic(key))],
            json!({ "batch": batch }).to_string().as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", a.body);
    }
}

fn admin_get(relay: &Relay, path: &str) -> (u16, Value) {
    let a = get(&relay.url(path), &[ADMIN]);
    let v = serde_json::from_str(&a.body).unwrap_or(Value::Null);
    (a.status, v)
}

fn dead_count(relay: &Relay) -> u64 {
    let (_, v) = admin_get(relay, "/admin/sources/web/dead-letters?limit=1");
    v["stats"]["count"].as_u64().unwrap_or(0)
}

/// Every dead letter's id, paging with `limit`.
fn all_dead(relay: &Relay, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/admin/sources/web/dead-letters?limit={limit}&cursor={c}"),
            None => format!("/admin/sources/web/dead-letters?limit={limit}"),
        };
        let (status, v) = admin_get(relay, &path);
        assert_eq!(status, 200, "{v}");
        for d in v["dead_letters"].as_array().unwrap() {
            ids.push(d["message_id"].as_str().unwrap().to_string());
        }
        match v["next"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return ids,
        }
    }
}

fn ids_since(rx: &Receiver, from: usize) -> HashMap<String, usize> {
    let mut ids = HashMap::new();
    for hit in rx.hits().into_iter().skip(from) {
        *ids.entry(hit.json()["messageId"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    ids
}

#[test]
fn a_400_is_a_dead_letter_with_its_status_and_answer_and_a_replay_delivers_it_once() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    *rx.answer.lock().unwrap() = ANSWER.into();
    // The guard off: a receiver on 127.0.0.1 is then not one of an internal network, and its
    // answers are kept (with the guard's exception, they are not: tests/tenants.rs).
    let relay = Relay::start(
        dir.path(),
        &config(&[("web", "wk_web", &rx)], "block_private_networks = false"),
    );
    track(&relay, "wk_web", 1);
    rx.wait_for(1);
    wait_until("the dead letter", || dead_count(&relay) == 1);
    let (status, list) = admin_get(&relay, "/admin/sources/web/dead-letters");
    assert_eq!(status, 200);
    let dead = &list["dead_letters"][0];
    let id = dead["message_id"].as_str().unwrap().to_string();
    assert_eq!(dead["reason"], "status 400");
    assert_eq!(dead["replaying"], false);
    assert_eq!(dead["last_attempts"][0]["status"], 400);
    assert_eq!(dead["last_attempts"][0]["answer"], ANSWER);
    assert!(dead.get("body").is_none(), "lists leave bodies out");
    let (status, one) = admin_get(&relay, &format!("/admin/sources/web/dead-letters/{id}"));
    assert_eq!(status, 200);
    assert_eq!(one["body"]["messageId"], id.as_str());
    assert_eq!(one["body"]["event"], "Bought");
    // The URL's attempts and health.
    let (status, attempts) = admin_get(&relay, "/admin/sources/web/webhooks/0/attempts");
    assert_eq!(status, 200);
    assert_eq!(attempts["attempts"][0]["message_id"], id.as_str());
    assert_eq!(attempts["attempts"][0]["status"], 400);
    assert_eq!(attempts["attempts"][0]["answer"], ANSWER);
    assert!(attempts["attempts"][0]["duration_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(
        admin_get(&relay, "/admin/sources/web/webhooks/1/attempts").0,
        404
    );
    let (_, health) = admin_get(&relay, "/admin/sources/web/health");
    assert_eq!(health["webhooks"][0]["state"], "failing");
    assert_eq!(health["webhooks"][0]["consecutive_failures"], 1);
    // The receiver recovers: the replay delivers it once, under the same id, signed.
    rx.status.store(200, std::sync::atomic::Ordering::SeqCst);
    let url = relay.url(&format!("/admin/sources/web/dead-letters/{id}/replay"));
    let a = post(&url, &[ADMIN], b"");
    assert_eq!(a.status, 202, "{}", a.body);
    let hit = rx.wait_for(2).remove(1);
    assert_eq!(hit.json()["messageId"], id.as_str());
    assert!(outbound::verify(
        b"s3cret",
        &hit.body,
        hit.header("X-Signature").unwrap()
    ));
    wait_until("the dead letter to leave", || dead_count(&relay) == 0);
    let (status, _) = admin_get(&relay, &format!("/admin/sources/web/dead-letters/{id}"));
    assert_eq!(status, 404);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rx.hits().len(), 2, "delivered once");
    let (_, health) = admin_get(&relay, "/admin/sources/web/health");
    assert_eq!(health["webhooks"][0]["state"], "healthy");
    assert_eq!(
        post(&url, &[ADMIN], b"").status,
        404,
        "nothing left to replay"
    );
    // Without the admin token: 401.
    assert_eq!(
        get(&relay.url("/admin/sources/web/dead-letters"), &[]).status,
        401
    );
}

#[test]
fn a_bulk_replay_of_a_thousand_runs_in_the_background_with_progress() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(422, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    track(&relay, "wk_web", 1000);
    wait_until("a thousand dead letters", || dead_count(&relay) == 1000);
    let ids = all_dead(&relay, 300);
    assert_eq!(ids.len(), 1000);
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 1000, "pages do not overlap");
    assert_eq!(
        admin_get(&relay, "/admin/sources/web/dead-letters?limit=1001").0,
        400
    );
    let before = rx.hits().len();
    rx.status.store(200, std::sync::atomic::Ordering::SeqCst);
    let a = post(
        &relay.url("/admin/sources/web/dead-letters/replay"),
        &[ADMIN],
        json!({"since": "2000-01-01T00:00:00Z", "webhook": 0})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 202, "{}", a.body);
    let job = a.json();
    assert_eq!(job["total"], 1000);
    let link = job["progress"].as_str().unwrap().to_string();
    wait_until("the replay to end", || {
        admin_get(&relay, &link).1["done"] == true
    });
    let (_, p) = admin_get(&relay, &link);
    assert_eq!(
        (p["sent"].as_u64(), p["delivered"].as_u64()),
        (Some(1000), Some(1000))
    );
    let got = ids_since(&rx, before);
    assert_eq!(got.len(), 1000);
    assert!(got.values().all(|n| *n == 1), "each once");
    wait_until("the dead letters to leave", || dead_count(&relay) == 0);
}

#[test]
fn a_cursor_no_page_gave_is_a_400_naming_cursor() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    track(&relay, "wk_web", 2);
    wait_until("two dead letters", || dead_count(&relay) == 2);
    // A page's next goes on to the next page.
    let (status, first) = admin_get(&relay, "/admin/sources/web/dead-letters?limit=1");
    assert_eq!(status, 200, "{first}");
    let next = first["next"].as_str().unwrap().to_string();
    let (status, second) = admin_get(
        &relay,
        &format!("/admin/sources/web/dead-letters?limit=1&cursor={next}"),
    );
    assert_eq!(status, 200, "{second}");
    assert_ne!(
        second["dead_letters"][0]["message_id"],
        first["dead_letters"][0]["message_id"]
    );
    // Anything else is refused as the other bad parameters are, never answered as page one.
    let (_, limit) = admin_get(&relay, "/admin/sources/web/dead-letters?limit=0");
    for garbage in ["garbage", "12", "x.1", "1.", "%ZZ", "1.2.3.4.5.x", ""] {
        let path = format!("/admin/sources/web/dead-letters?cursor={garbage}");
        let (status, v) = admin_get(&relay, &path);
        assert_eq!(status, 400, "{path}: {v}");
        assert_eq!(v["success"], false, "{v}");
        let message = v["message"].as_str().unwrap();
        assert!(message.starts_with("cursor: "), "{message}");
        assert!(message.contains("is not a page's next"), "{message}");
        let keys = |o: &Value| o.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&v), keys(&limit), "the shape of the limit's 400");
    }
    // The OpenAPI document lists the 400.
    let (_, doc) = admin_get(&relay, "/admin/openapi.json");
    let get = &doc["paths"]["/admin/sources/{name}/dead-letters"]["get"];
    assert!(
        get["responses"]["400"]["description"]
            .as_str()
            .unwrap()
            .contains("`cursor`"),
        "{get}"
    );
}

#[test]
fn dead_letters_survive_a_sigkill_and_a_restart() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(410, std::sync::atomic::Ordering::SeqCst);
    let text = config(&[("web", "wk_web", &rx)], "");
    let relay = Relay::start(dir.path(), &text);
    track(&relay, "wk_web", 20);
    wait_until("twenty dead letters", || dead_count(&relay) == 20);
    let before = all_dead(&relay, 1000);
    relay.kill();
    let relay = Relay::start(dir.path(), &text);
    wait_until("their adoption", || dead_count(&relay) == 20);
    assert_eq!(all_dead(&relay, 1000), before);
    let (_, one) = admin_get(
        &relay,
        &format!("/admin/sources/web/dead-letters/{}", before[0]),
    );
    assert_eq!(one["reason"], "gone");
    // Discarded for good.
    let url = relay.url(&format!("/admin/sources/web/dead-letters/{}", before[0]));
    assert_eq!(delete(&url, &[ADMIN]).status, 200);
    assert_eq!(delete(&url, &[ADMIN]).status, 404);
    assert_eq!(dead_count(&relay), 19);
}

#[test]
fn the_settings_are_keys_at_the_top_level_and_per_source() {
    let dir = temp_dir();
    let (rx, off) = (Receiver::start(), Receiver::start());
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    off.status.store(400, std::sync::atomic::Ordering::SeqCst);
    // Top level: a small byte limit and a retention; per source: off.
    let mut text = config(
        &[("web", "wk_web", &rx), ("quiet", "wk_quiet", &off)],
        "dead_letter_max_bytes = 3000\ndead_letter_retention = 3600",
    );
    text = text.replace(
        "name = \"quiet\"\n",
        "name = \"quiet\"\ndead_letters = false\n",
    );
    let relay = Relay::start(dir.path(), &text);
    track(&relay, "wk_web", 30);
    track(&relay, "wk_quiet", 1);
    wait_until("the limit", || {
        let (_, v) = admin_get(&relay, "/admin/sources/web/dead-letters?limit=1");
        v["stats"]["evicted"].as_u64().unwrap_or(0) > 0
            && v["stats"]["count"].as_u64().unwrap_or(0) + v["stats"]["evicted"].as_u64().unwrap()
                == 30
    });
    let (_, v) = admin_get(&relay, "/admin/sources/web/dead-letters?limit=1");
    assert!(v["stats"]["bytes"].as_u64().unwrap() <= 3000, "{v}");
    off.wait_for(1);
    let (status, v) = admin_get(&relay, "/admin/sources/quiet/dead-letters");
    assert_eq!(status, 404, "{v}");
    assert_eq!(admin_get(&relay, "/admin/sources/nope/dead-letters").0, 404);
    drop(relay);
    // A bad value is refused under its key.
    let bad = config(&[("web", "wk_web", &rx)], "dead_letter_max_bytes = 0");
    std::fs::write(dir.path().join("relay.toml"), bad).unwrap();
    let out = support::relay_command()
        .arg("--config")
        .arg(dir.path().join("relay.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dead_letter_max_bytes"), "{err}");
}

/// A URL's log keeps `attempt_log_size` attempts, each for `attempt_retention`: keys at the
/// top level, per source, through the admin API and the environment, refused out of range
/// under their key.
#[test]
fn the_attempt_log_keeps_attempt_log_size_for_attempt_retention() {
    let dir = temp_dir();
    let (rx, brief, own) = (Receiver::start(), Receiver::start(), Receiver::start());
    let mut text = config(
        &[("web", "wk_web", &rx), ("brief", "wk_brief", &brief)],
        "flush_at = 1\nattempt_log_size = 5",
    );
    text = text.replace(
        "name = \"brief\"\n",
        "name = \"brief\"\nattempt_retention = 0.5\n",
    );
    let relay = Relay::start(dir.path(), &text);
    let attempts = |name: &str| {
        let path = format!("/admin/sources/{name}/webhooks/0/attempts");
        let (status, v) = admin_get(&relay, &path);
        assert_eq!(status, 200, "{v}");
        v["attempts"].as_array().unwrap().len()
    };
    let delivered = |name: &str, n: u64| {
        wait_until("the deliveries", || {
            let (_, v) = admin_get(&relay, &format!("/admin/sources/{name}/health"));
            v["webhooks"][0]["messages"]["delivered"] == n
        })
    };
    track(&relay, "wk_web", 12);
    delivered("web", 12);
    assert_eq!(attempts("web"), 5);
    track(&relay, "wk_brief", 1);
    delivered("brief", 1);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(attempts("brief"), 0);
    // Through the admin API: set, shown, applied; out of range, refused naming it.
    let body = |size: usize| {
        json!({"write_keys": ["wk_own"], "webhooks": [{"url": own.url}],
               "allowed_networks": ["127.0.0.0/8"],
               "attempt_log_size": size, "attempt_retention": 3600})
        .to_string()
    };
    let url = relay.url("/admin/sources/own");
    let a = support::put(&url, &[ADMIN], body(3).as_bytes());
    assert_eq!(a.status, 201, "{}", a.body);
    let (_, shown) = admin_get(&relay, "/admin/sources/own");
    assert_eq!(
        (&shown["attempt_log_size"], &shown["attempt_retention"]),
        (&json!(3), &json!(3600.0)),
        "{shown}"
    );
    track(&relay, "wk_own", 4);
    delivered("own", 4);
    assert_eq!(attempts("own"), 3);
    let refused = support::put(&url, &[ADMIN], body(10_001).as_bytes());
    assert!(refused.status >= 400, "{}", refused.body);
    assert!(
        refused.body.contains("attempt_log_size"),
        "{}",
        refused.body
    );
    drop(relay);
    // At start, from relay.toml and from the environment.
    let refused_at_start = |extra: &str, var: Option<(&str, &str)>| {
        let bad = config(&[("web", "wk_web", &rx)], extra);
        std::fs::write(dir.path().join("relay.toml"), bad).unwrap();
        let mut cmd = support::relay_command();
        cmd.arg("--config").arg(dir.path().join("relay.toml"));
        if let Some((k, v)) = var {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = refused_at_start("attempt_retention = 0", None);
    assert!(err.contains("attempt_retention"), "{err}");
    let err = refused_at_start("attempt_retention = 2592001", None);
    assert!(err.contains("attempt_retention"), "{err}");
    let err = refused_at_start("", Some(("OUTBOUND_RELAY_ATTEMPT_LOG_SIZE", "0")));
    // A value from the environment is named by its variable.
    assert!(err.contains("OUTBOUND_RELAY_ATTEMPT_LOG_SIZE"), "{err}");
    let err = refused_at_start("", Some(("OUTBOUND_RELAY_ATTEMPT_RETENTION", "2592001")));
    assert!(err.contains("OUTBOUND_RELAY_ATTEMPT_RETENTION"), "{err}");
}

/// A saved edit of one source once wiped another's attempts. A source's
/// records are its own client's: a change to another source leaves its attempts and health
/// as they were.
#[test]
fn a_change_to_one_source_leaves_anothers_attempts_and_health() {
    let dir = temp_dir();
    let (rx, other) = (Receiver::start(), Receiver::start());
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &config(&[], "block_private_networks = false"));
    let body = |key: &str, rx: &Receiver, header: Option<&str>| {
        let headers = match header {
            Some(v) => json!({ "X-Team": v }),
            None => json!({}),
        };
        json!({"write_keys": [key], "shared_secret": "s3cret",
               "webhooks": [{"url": rx.url, "headers": headers}]})
        .to_string()
    };
    for (name, key, r) in [("kept", "wk_kept", &rx), ("edited", "wk_edited", &other)] {
        let url = relay.url(&format!("/admin/sources/{name}"));
        let a = support::put(&url, &[ADMIN], body(key, r, None).as_bytes());
        assert_eq!(a.status, 201, "{}", a.body);
    }
    track(&relay, "wk_kept", 3);
    rx.wait_for(3);
    let attempts = || {
        let (status, v) = admin_get(&relay, "/admin/sources/kept/webhooks/0/attempts");
        assert_eq!(status, 200, "{v}");
        v["attempts"].as_array().unwrap().len()
    };
    wait_until("three attempts", || attempts() == 3);
    let (_, before) = admin_get(&relay, "/admin/sources/kept/health");
    assert_eq!(before["webhooks"][0]["state"], "failing", "{before}");
    assert_eq!(before["webhooks"][0]["consecutive_failures"], 3, "{before}");
    assert!(before["webhooks"][0]["last_error"].is_object(), "{before}");
    // Another source gets a header, as a console save would send it.
    let url = relay.url("/admin/sources/edited");
    let a = support::put(
        &url,
        &[ADMIN],
        body("wk_edited", &other, Some("growth")).as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(attempts(), 3);
    let (_, after) = admin_get(&relay, "/admin/sources/kept/health");
    assert_eq!(after["webhooks"][0]["state"], "failing", "{after}");
    assert_eq!(after["webhooks"][0]["consecutive_failures"], 3, "{after}");
    assert_eq!(
        after["webhooks"][0]["last_error"],
        before["webhooks"][0]["last_error"]
    );
}

/// An edited source's own records carry on: a header added to one webhook, then the two
/// swapped, and the other (failing) URL still shows its attempts and failures, found by
/// its URL wherever it now stands.
#[test]
fn an_edit_keeps_the_records_of_each_url_it_keeps() {
    let dir = temp_dir();
    let (ok, bad) = (Receiver::start(), Receiver::start());
    bad.status.store(500, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &config(&[], "block_private_networks = false"));
    let url = relay.url("/admin/sources/web");
    let put = |hooks: Value| {
        let body = json!({"write_keys": ["wk_web"], "shared_secret": "s3cret", "webhooks": hooks});
        support::put(&url, &[ADMIN], body.to_string().as_bytes())
    };
    let a = put(json!([{"url": ok.url}, {"url": bad.url}]));
    assert_eq!(a.status, 201, "{}", a.body);
    track(&relay, "wk_web", 3);
    bad.wait_for(3);
    let attempts = |i: usize| {
        let path = format!("/admin/sources/web/webhooks/{i}/attempts");
        let (status, v) = admin_get(&relay, &path);
        assert_eq!(status, 200, "{v}");
        v["attempts"].as_array().unwrap().len()
    };
    wait_until("three attempts", || attempts(1) == 3);
    let (_, before) = admin_get(&relay, "/admin/sources/web/health");
    let failing = before["webhooks"][1].clone();
    assert_eq!(failing["state"], "failing", "{before}");
    assert_eq!(failing["consecutive_failures"], 3, "{before}");
    assert!(failing["last_error"].is_object(), "{before}");

    // A header added to webhook 1, as a console save sends it.
    let a = put(json!([{"url": ok.url, "headers": {"X-Team": "growth"}}, {"url": bad.url}]));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(attempts(1), 3, "the failing URL's attempts");
    assert_eq!(attempts(0), 3, "the edited URL's attempts");
    let (_, after) = admin_get(&relay, "/admin/sources/web/health");
    for key in ["state", "consecutive_failures", "last_error", "attempts_5m"] {
        assert_eq!(after["webhooks"][1][key], failing[key], "{key}: {after}");
    }

    // Swapped: the records go with the URL to its new place.
    let a = put(json!([{"url": bad.url}, {"url": ok.url, "headers": {"X-Team": "growth"}}]));
    assert_eq!(a.status, 200, "{}", a.body);
    let (_, swapped) = admin_get(&relay, "/admin/sources/web/health");
    assert_eq!(
        swapped["webhooks"][0]["consecutive_failures"], 3,
        "{swapped}"
    );
    assert_eq!(swapped["webhooks"][0]["last_error"], failing["last_error"]);
    assert_eq!(
        swapped["webhooks"][1]["consecutive_failures"], 0,
        "{swapped}"
    );
    assert_eq!((attempts(0), attempts(1)), (3, 3));
}

/// The seed's any-URL rule, accounted per URL: beside a webhook that takes every message, one
/// that refuses everything reads as failing in its health and its own minutes, while the
/// source's messages read delivered; one failing retryably reads "abandoned".
#[test]
fn each_webhook_accounts_for_what_it_took_refused_and_gave_up() {
    let dir = temp_dir();
    let (ok, refusing, flaky) = (Receiver::start(), Receiver::start(), Receiver::start());
    refusing
        .status
        .store(400, std::sync::atomic::Ordering::SeqCst);
    flaky.status.store(503, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &config(&[], "block_private_networks = false"));
    let body = json!({"write_keys": ["wk_web"], "shared_secret": "s3cret",
        "webhooks": [{"url": ok.url}, {"url": refusing.url}, {"url": flaky.url}]});
    let a = support::put(
        &relay.url("/admin/sources/web"),
        &[ADMIN],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 201, "{}", a.body);
    track(&relay, "wk_web", 10);
    let messages = |i: usize| {
        let (_, v) = admin_get(&relay, "/admin/sources/web/health");
        v["webhooks"][i]["messages"].clone()
    };
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap();
    // Every answer in (a refusal may come after the first webhook took the message: then it
    // is one given up, not one failed).
    wait_until("every webhook's answers", || {
        let (r, f) = (messages(1), messages(2));
        n(&messages(0), "delivered") == 10
            && n(&r, "failed") + n(&r, "abandoned") == 10
            && n(&f, "abandoned") == 10
    });
    let (_, health) = admin_get(&relay, "/admin/sources/web/health");
    assert_eq!(health["webhooks"][1]["state"], "failing", "{health}");
    let r = messages(1);
    assert_eq!((n(&r, "delivered"), n(&r, "retrying")), (0, 0), "{r}");
    assert_eq!(
        messages(2),
        json!({"delivered": 0, "failed": 0, "retrying": 0, "abandoned": 10})
    );

    let (status, hour) = admin_get(&relay, "/admin/sources/web/activity");
    assert_eq!(status, 200, "{hour}");
    let sum = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(sum(&hour["delivered"]), 10, "the source's messages: {hour}");
    assert_eq!(sum(&hour["failed"]), 0, "{hour}");
    let hooks = hour["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 3, "{hour}");
    let minutes = hour["delivered"].as_array().unwrap().len();
    for (i, h) in hooks.iter().enumerate() {
        assert_eq!(h["webhook"], i);
        assert_eq!(h["failed"].as_array().unwrap().len(), minutes);
    }
    assert_eq!(sum(&hooks[0]["delivered"]), 10);
    assert_eq!(
        sum(&hooks[1]["failed"]) + sum(&hooks[1]["abandoned"]),
        10,
        "the refusing webhook's minutes: {hour}"
    );
    assert_eq!(sum(&hooks[2]["abandoned"]), 10);
}

/// The attempts explorer's API: a webhook's attempts chosen by result, status, message and
/// time; a list shows a failure's answer's first 1 KiB, one message's attempts all of it (up
/// to 64 KiB), with the request's headers (credentials redacted) and the answer's.
#[test]
fn attempts_are_chosen_by_result_status_message_and_time_and_show_their_headers() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[], "block_private_networks = false"));
    let body = json!({"write_keys": ["wk_web"], "shared_secret": "s3cret",
        "webhooks": [{"url": rx.url, "headers": {"X-Team": "growth", "Authorization": "Bearer t0ken"}}]});
    let url = relay.url("/admin/sources/web");
    let a = support::put(&url, &[ADMIN], body.to_string().as_bytes());
    assert_eq!(a.status, 201, "{}", a.body);
    track(&relay, "wk_web", 5);
    rx.wait_for(5);
    let list = |query: &str| {
        let (status, v) = admin_get(
            &relay,
            &format!("/admin/sources/web/webhooks/0/attempts{query}"),
        );
        assert_eq!(status, 200, "{v}");
        v["attempts"].as_array().unwrap().clone()
    };
    wait_until("five deliveries", || list("").len() == 5);
    let middle = outbound::timestamp::format(std::time::SystemTime::now().into()).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    rx.status.store(422, std::sync::atomic::Ordering::SeqCst);
    *rx.answer.lock().unwrap() = "x".repeat(5000);
    track(&relay, "wk_web", 3);
    wait_until("three refusals", || list("?result=permanent").len() == 3);

    assert_eq!(list("?status=422").len(), 3);
    assert_eq!(list("?result=delivered").len(), 5);
    assert_eq!(list(&format!("?since={middle}")).len(), 3);
    assert_eq!(list(&format!("?until={middle}&limit=2")).len(), 2);
    let refused = list("?status=422");
    let first = &refused[0];
    assert_eq!(
        first["answer"].as_str().unwrap().len(),
        1024,
        "a list shows 1 KiB"
    );
    assert_eq!(first["answer_bytes"], 5000);
    let header = |list: &Value, name: &str| {
        (list.as_array().unwrap().iter())
            .find(|h| h["name"] == name)
            .map(|h| h["value"].as_str().unwrap().to_string())
    };
    assert_eq!(
        header(&first["request_headers"], "x-team").as_deref(),
        Some("growth")
    );
    assert_eq!(
        header(&first["request_headers"], "authorization").as_deref(),
        Some("[redacted]")
    );
    assert_eq!(
        header(&first["request_headers"], "x-signature").as_deref(),
        Some("[redacted]")
    );
    assert!(!first.to_string().contains("t0ken"), "{first}");
    assert!(
        header(&first["answer_headers"], "content-length").is_some(),
        "{first}"
    );
    let id = first["message_id"].as_str().unwrap();
    let one = list(&format!("?message_id={id}"));
    assert_eq!(one.len(), 1);
    assert_eq!(
        one[0]["answer"].as_str().unwrap().len(),
        5000,
        "one message: all of it"
    );
    let delivered = &list("?result=delivered")[0];
    assert!(delivered.get("request_headers").is_none(), "{delivered}");

    for (query, field) in [
        ("?result=maybe", "result"),
        ("?status=99", "status"),
        ("?since=yesterday", "since"),
        ("?limit=10001", "limit"),
        ("?colour=red", ""),
    ] {
        let (status, v) = admin_get(
            &relay,
            &format!("/admin/sources/web/webhooks/0/attempts{query}"),
        );
        assert_eq!(
            (status, v["field"].as_str().unwrap_or("")),
            (400, field),
            "{query}: {v}"
        );
    }
}

/// `text` as a query parameter's value.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b.is_ascii_alphanumeric() {
            true => (b as char).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}

/// The ids a search for `text` gives, paging with `limit`, and how many pages it took.
fn search(relay: &Relay, text: &str, limit: usize) -> (Vec<String>, usize) {
    let (mut ids, mut pages) = (Vec::new(), 0);
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!(
            "/admin/sources/web/dead-letters?limit={limit}&contains={}",
            encoded(text)
        );
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let (status, v) = admin_get(relay, &path);
        assert_eq!(status, 200, "{v}");
        pages += 1;
        let letters = v["dead_letters"].as_array().unwrap();
        assert!(letters.len() <= limit);
        ids.extend((letters.iter()).map(|d| d["message_id"].as_str().unwrap().to_string()));
        match v["next"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return (ids, pages),
        }
    }
}

#[test]
fn dead_letters_are_found_by_a_user_an_event_or_a_property_value() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let events = ["Signed Up", "Order Completed", "Cart Viewed"];
    let batch: Vec<Value> = (0..60)
        .map(|i| {
            json!({"type": "track", "userId": format!("u{}", i % 30 + 1), "event": events[i % 3],
                "messageId": format!("m-{i}"), "properties": {"orderId": format!("ord-{i}")}})
        })
        .collect();
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        json!({ "batch": batch }).to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    wait_until("the dead letters", || dead_count(&relay) == 60);
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    // One user: u3's two, not u30's, though its id holds "u3" too.
    let (u3, _) = search(&relay, r#""userId":"u3""#, 100);
    assert_eq!(sorted(u3), ["m-2", "m-32"]);
    assert_eq!(search(&relay, "u3", 100).0.len(), 4, "u3 and u30");
    // One order, by its property's value; the case matters.
    assert_eq!(search(&relay, r#""ord-41""#, 100).0, ["m-41"]);
    assert!(search(&relay, r#""ORD-41""#, 100).0.is_empty());
    // One event, three at a time: all twenty, newest first as the list has them, once each.
    let (completed, pages) = search(&relay, r#""event":"Order Completed""#, 3);
    assert!(pages >= 7, "{pages}");
    let want: Vec<String> = (all_dead(&relay, 100).into_iter())
        .filter(|id| id[2..].parse::<usize>().unwrap() % 3 == 1)
        .collect();
    assert_eq!(want.len(), 20);
    assert_eq!(completed, want);
    // Empty or too long: a 400 naming contains.
    for bad in [String::new(), "x".repeat(257)] {
        let path = format!("/admin/sources/web/dead-letters?contains={bad}");
        let (status, v) = admin_get(&relay, &path);
        assert_eq!(status, 400, "{v}");
        let message = v["message"].as_str().unwrap();
        assert!(message.starts_with("contains: "), "{message}");
        assert!(message.contains("256"), "{message}");
    }
    // The OpenAPI document describes it, on the source's and a subscription's lists.
    let (_, doc) = admin_get(&relay, "/admin/openapi.json");
    for path in [
        "/admin/sources/{name}/dead-letters",
        "/admin/sources/{name}/subscriptions/{subscription}/dead-letters",
    ] {
        let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
        let contains = params.iter().find(|p| p["name"] == "contains");
        let description = contains.unwrap()["description"].as_str().unwrap();
        assert!(description.contains("exact bytes"), "{description}");
    }
}
