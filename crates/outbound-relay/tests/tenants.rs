//! A tenant holding its own source token against the platform: it reaches its own source and
//! nothing else, inherits nothing from an earlier source of its name, gets no network
//! exception the admin did not grant it, and cannot read back the values of secrets.

mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::{basic, delete, get, post, put, temp_dir, Addr, Answer, InProcess, Receiver, Relay};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

fn top(extra: &str) -> String {
    format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         max_backoff = 0.2\n{extra}\n"
    )
}

fn file_source(name: &str, rx: &Receiver) -> String {
    format!(
        "[[sources]]\nname = \"{name}\"\nwrite_keys = [\"wk_{name}\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\n",
        rx.url
    )
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn make_token(relay: &impl Addr, source: &str) -> String {
    let made = post(
        &relay.url(&format!("/admin/sources/{source}/tokens")),
        &[ADMIN],
        b"",
    );
    assert_eq!(made.status, 201, "{}", made.body);
    made.json()["token"].as_str().unwrap().to_string()
}

fn put_as(relay: &impl Addr, auth: &str, name: &str, body: &Value) -> Answer {
    put(
        &relay.url(&format!("/admin/sources/{name}")),
        &[("Authorization", auth)],
        body.to_string().as_bytes(),
    )
}

fn send(relay: &impl Addr, key: &str, id: &str) -> u16 {
    let body = json!({"batch": [{"type": "track", "userId": "u1", "event": "E", "messageId": id}]});
    post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic(key))],
        body.to_string().as_bytes(),
    )
    .status
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "waited 20 s for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn dead_count(relay: &impl Addr, auth: &str, source: &str) -> u64 {
    let a = get(
        &relay.url(&format!("/admin/sources/{source}/dead-letters?limit=1")),
        &[("Authorization", auth)],
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()["stats"]["count"].as_u64().unwrap()
}

/// A token made for a source of relay.toml is revoked when the source leaves the file (a
/// reload), and an API source made later under that name is not its own.
#[test]
fn a_token_of_a_source_that_left_the_file_is_revoked_and_reaches_no_later_source_of_its_name() {
    let (rx, theirs, attacker) = (Receiver::start(), Receiver::start(), Receiver::start());
    let dir = temp_dir();
    // The guard off: the same steps run on a relay without per-source networks.
    let allowed = "block_private_networks = false";
    let both = format!(
        "{}{}{}",
        top(allowed),
        file_source("acme", &rx),
        file_source("keep", &rx)
    );
    let relay = Relay::start(dir.path(), &both);
    let token = bearer(&make_token(&relay, "acme"));
    let own = [("Authorization", token.as_str())];
    assert_eq!(get(&relay.url("/admin/sources/acme"), &own).status, 200);
    std::fs::write(
        dir.path().join("relay.toml"),
        format!("{}{}", top(allowed), file_source("keep", &rx)),
    )
    .unwrap();
    relay.signal(libc::SIGHUP);
    relay.wait_log("config reloaded");
    // The admin makes a source of that name for another tenant.
    let body = json!({"write_keys": ["wk_new"], "webhooks": [{"url": theirs.url}],
        "shared_secret": "theirs"});
    assert_eq!(put_as(&relay, "Bearer adm", "acme", &body).status, 201);
    assert_eq!(get(&relay.url("/admin/sources/acme"), &own).status, 401);
    let hijack = json!({"webhooks": [{"url": attacker.url}]});
    assert_eq!(put_as(&relay, &token, "acme", &hijack).status, 401);
    assert_eq!(send(&relay, "wk_new", "m-1"), 200);
    assert_eq!(theirs.wait_for(1)[0].json()["messageId"], "m-1");
    std::thread::sleep(Duration::from_millis(300));
    assert!(attacker.hits().is_empty());
    let log = relay.wait_log("source token revoked");
    assert!(log.contains("acme"), "{log}");
}

/// The same when the source left the file while the relay was stopped.
#[test]
fn a_token_of_a_source_gone_from_the_file_at_a_restart_is_revoked() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let allowed = "allowed_networks = [\"127.0.0.0/8\"]";
    let mut relay = Relay::start(
        dir.path(),
        &format!("{}{}", top(allowed), file_source("acme", &rx)),
    );
    let token = bearer(&make_token(&relay, "acme"));
    relay.signal(libc::SIGTERM);
    relay.wait_exit(Duration::from_secs(20));
    let relay = Relay::start(
        dir.path(),
        &format!("{}{}", top(allowed), file_source("keep", &rx)),
    );
    relay.wait_log("source token revoked");
    let body = json!({"write_keys": ["wk_acme2"], "webhooks": [{"url": rx.url}]});
    assert_eq!(put_as(&relay, "Bearer adm", "acme", &body).status, 201);
    let got = get(
        &relay.url("/admin/sources/acme"),
        &[("Authorization", token.as_str())],
    );
    assert_eq!(got.status, 401, "{}", got.body);
    let tokens = get(&relay.url("/admin/sources/acme/tokens"), &[ADMIN]).json();
    assert_eq!(tokens["tokens"], json!([]));
}

/// A deleted API source's dead letters (whole event bodies) are not listed, read or replayed
/// by the next source of its name, before or after a restart.
#[test]
fn a_deleted_sources_dead_letters_never_reach_the_next_source_of_its_name() {
    let refusing = Receiver::start();
    refusing
        .status
        .store(400, std::sync::atomic::Ordering::SeqCst);
    let fresh = Receiver::start();
    let dir = temp_dir();
    // The guard off: the same steps run on a relay without per-source networks.
    let open = top("block_private_networks = false");
    let mut relay = Relay::start(dir.path(), &open);
    let hook = |rx: &Receiver| json!({"write_keys": ["wk_acme"], "webhooks": [{"url": rx.url}]});
    assert_eq!(
        put_as(&relay, "Bearer adm", "acme", &hook(&refusing)).status,
        201
    );
    let first_id = get(&relay.url("/admin/sources/acme"), &[ADMIN]).json()["id"].clone();
    assert_eq!(send(&relay, "wk_acme", "secret-order-1"), 200);
    until("a dead letter", || {
        dead_count(&relay, "Bearer adm", "acme") == 1
    });
    let a = delete(&relay.url("/admin/sources/acme"), &[ADMIN]);
    assert_eq!(a.status, 204, "{}", a.body);
    assert_eq!(
        put_as(&relay, "Bearer adm", "acme", &hook(&fresh)).status,
        201
    );
    let second_id = get(&relay.url("/admin/sources/acme"), &[ADMIN]).json()["id"].clone();
    let token = bearer(&make_token(&relay, "acme"));
    for auth in ["Bearer adm", token.as_str()] {
        assert_eq!(dead_count(&relay, auth, "acme"), 0);
        let one = get(
            &relay.url("/admin/sources/acme/dead-letters/secret-order-1"),
            &[("Authorization", auth)],
        );
        assert_eq!(one.status, 404, "{}", one.body);
        let replay = post(
            &relay.url("/admin/sources/acme/dead-letters/replay"),
            &[("Authorization", auth)],
            b"{}",
        );
        assert!(!replay.body.contains("\"total\":1"), "{}", replay.body);
    }
    relay.signal(libc::SIGTERM);
    relay.wait_exit(Duration::from_secs(20));
    let relay = Relay::start(dir.path(), &open);
    assert_eq!(dead_count(&relay, "Bearer adm", "acme"), 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        fresh.hits().is_empty(),
        "the old event went to the new source"
    );
    assert!(first_id.is_string() && second_id.is_string() && first_id != second_id);
}

/// A replay's progress answers within its own source only, and its id is not a count.
#[test]
fn replays_answer_only_within_their_own_source() {
    let refusing = Receiver::start();
    refusing
        .status
        .store(400, std::sync::atomic::Ordering::SeqCst);
    let dir = temp_dir();
    let config = format!(
        "{}{}{}",
        top("allowed_networks = [\"127.0.0.0/8\"]"),
        file_source("web", &refusing),
        file_source("shop", &refusing)
    );
    let relay = Relay::start(dir.path(), &config);
    assert_eq!(send(&relay, "wk_web", "w-1"), 200);
    assert_eq!(send(&relay, "wk_shop", "s-1"), 200);
    until("dead letters", || {
        dead_count(&relay, "Bearer adm", "web") == 1
            && dead_count(&relay, "Bearer adm", "shop") == 1
    });
    let replay = |source: &str| {
        let a = post(
            &relay.url(&format!("/admin/sources/{source}/dead-letters/replay")),
            &[ADMIN],
            b"{}",
        );
        assert_eq!(a.status, 202, "{}", a.body);
        a.json()["id"].as_u64().unwrap()
    };
    let (web_job, shop_job) = (replay("web"), replay("shop"));
    assert!(
        web_job.abs_diff(shop_job) > 1_000,
        "{web_job} then {shop_job}"
    );
    let token = bearer(&make_token(&relay, "web"));
    let at = |source: &str, job: u64| {
        get(
            &relay.url(&format!(
                "/admin/sources/{source}/dead-letters/replays/{job}"
            )),
            &[("Authorization", token.as_str())],
        )
        .status
    };
    assert_eq!(at("web", web_job), 200);
    assert_eq!(at("web", shop_job), 404, "another source's replay");
    assert_eq!(at("shop", shop_job), 403);
}

/// relay.toml's `allowed_networks` reaches the file's sources only; a source of the admin API
/// gets a network when the admin grants it one, never through its own token; and answers of
/// a receiver reached only by such an exception are not shown in attempts.
#[test]
fn network_exceptions_are_per_source_and_only_the_admin_grants_them() {
    let rx = Receiver::start();
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    *rx.answer.lock().unwrap() = "{\"db_password\":\"hunter2\"}".into();
    let dir = temp_dir();
    let config = format!(
        "{}{}",
        top("allowed_networks = [\"127.0.0.0/8\"]"),
        file_source("file", &rx)
    );
    let relay = Relay::start(dir.path(), &config);
    assert_eq!(send(&relay, "wk_file", "f-1"), 200);
    rx.wait_for(1);
    let body = json!({"write_keys": ["wk_api"], "webhooks": [{"url": rx.url}]});
    assert_eq!(put_as(&relay, "Bearer adm", "api", &body).status, 201);
    let token = bearer(&make_token(&relay, "api"));
    let granted = json!({"write_keys": ["wk_api"], "webhooks": [{"url": rx.url}],
        "allowed_networks": ["127.0.0.0/8"]});
    let refused = put_as(&relay, &token, "api", &granted);
    assert_eq!(
        (refused.status, refused.json()["field"].clone()),
        (403, json!("allowed_networks"))
    );
    assert_eq!(send(&relay, "wk_api", "a-1"), 200);
    let attempts = |source: &str| {
        get(
            &relay.url(&format!("/admin/sources/{source}/webhooks/0/attempts")),
            &[ADMIN],
        )
        .json()
    };
    until("a blocked attempt", || {
        attempts("api").to_string().contains("blocked")
    });
    assert_eq!(
        rx.hits().len(),
        1,
        "the API source's loopback receiver got nothing"
    );
    assert_eq!(put_as(&relay, "Bearer adm", "api", &granted).status, 200);
    assert_eq!(send(&relay, "wk_api", "a-2"), 200);
    rx.wait_for(2);
    until("the answers recorded", || {
        attempts("file").to_string().contains("400") && attempts("api").to_string().contains("400")
    });
    for source in ["file", "api"] {
        let seen = attempts(source).to_string();
        assert!(!seen.contains("hunter2"), "{source}: {seen}");
    }
}

/// A reload applies relay.toml's top level to the admin API's sources at once, as to the
/// file's: here the network guard.
#[test]
fn a_reload_applies_the_top_level_to_api_sources() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &top("block_private_networks = false"));
    let body = json!({"write_keys": ["wk_api"], "webhooks": [{"url": rx.url}]});
    assert_eq!(put_as(&relay, "Bearer adm", "api", &body).status, 201);
    assert_eq!(send(&relay, "wk_api", "m-1"), 200);
    rx.wait_for(1);
    let reload = |extra: &str, n: usize| {
        std::fs::write(dir.path().join("relay.toml"), top(extra)).unwrap();
        relay.signal(libc::SIGHUP);
        until("the reload", || {
            relay.log().matches("config reloaded").count() >= n
        });
    };
    reload("block_private_networks = true", 1);
    assert_eq!(send(&relay, "wk_api", "m-2"), 200);
    until("a blocked attempt", || {
        get(
            &relay.url("/admin/sources/api/webhooks/0/attempts"),
            &[ADMIN],
        )
        .body
        .contains("blocked")
    });
    // A source made after the reload is guarded too.
    let later = json!({"write_keys": ["wk_later"], "webhooks": [{"url": rx.url}]});
    assert_eq!(put_as(&relay, "Bearer adm", "later", &later).status, 201);
    assert_eq!(send(&relay, "wk_later", "m-3"), 200);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(rx.hits().len(), 1, "blocked sources sent nothing");
    reload("block_private_networks = false", 2);
    assert_eq!(send(&relay, "wk_api", "m-4"), 200);
    assert_eq!(send(&relay, "wk_later", "m-5"), 200);
    let ids: Vec<Value> = (rx.wait_for(3).iter())
        .map(|h| h.json()["messageId"].clone())
        .collect();
    assert!(
        ids.contains(&json!("m-4")) && ids.contains(&json!("m-5")),
        "{ids:?}"
    );
}

/// Header values are write-only: shown as `{"has_value": true}`, kept when sent back so for
/// the same URL, never for another.
#[test]
fn header_values_are_write_only() {
    let (rx, other) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &top(""));
    let body = json!({"write_keys": ["wk_api"], "allowed_networks": ["127.0.0.0/8"],
        "webhooks": [{"url": rx.url, "headers": {"Authorization": "Bearer sekrit-77", "X-Team": "a"}}]});
    let made = put_as(&relay, "Bearer adm", "api", &body);
    assert_eq!(made.status, 201, "{}", made.body);
    let shown = get(&relay.url("/admin/sources/api"), &[ADMIN]);
    assert!(!shown.body.contains("sekrit-77"), "{}", shown.body);
    assert_eq!(
        shown.json()["webhooks"][0]["headers"]["Authorization"],
        json!({"has_value": true})
    );
    // What GET shows, PUT back (a console does), with one value replaced.
    let token = bearer(&make_token(&relay, "api"));
    let mut again = shown.json();
    again["webhooks"][0]["headers"]["X-Team"] = json!("b");
    let a = put_as(&relay, &token, "api", &again);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(send(&relay, "wk_api", "m-1"), 200);
    let hit = &rx.wait_for(1)[0];
    assert_eq!(hit.header("authorization"), Some("Bearer sekrit-77"));
    assert_eq!(hit.header("x-team"), Some("b"));
    // Kept for another URL: refused, naming the header.
    let mut moved = again.clone();
    moved["webhooks"][0]["url"] = json!(other.url);
    let refused = put_as(&relay, &token, "api", &moved);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.json()["field"],
        json!("webhooks[0].headers[\"Authorization\"]")
    );
    // null clears it.
    let mut cleared = again.clone();
    cleared["webhooks"][0]["headers"]["Authorization"] = Value::Null;
    assert_eq!(put_as(&relay, &token, "api", &cleared).status, 200);
    let shown = get(&relay.url("/admin/sources/api"), &[ADMIN]).json();
    assert!(shown["webhooks"][0]["headers"]
        .get("Authorization")
        .is_none());
    // data_dir and what it holds are the relay's own.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("data"), 0o700);
    assert_eq!(mode("data/control.db"), 0o600);
}

/// A webhook holds at most `max_webhook_headers` headers and `max_webhook_header_bytes` of
/// them, through the API and in relay.toml.
#[test]
fn a_webhooks_headers_are_bounded() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top("max_webhook_headers = 3"));
    let headers = |n: usize, len: usize| -> Value {
        (0..n)
            .map(|i| (format!("X-H{i}"), json!("v".repeat(len))))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let with =
        |h: Value| json!({"write_keys": ["wk_api"], "webhooks": [{"url": rx.url, "headers": h}]});
    assert_eq!(
        put_as(&relay, "Bearer adm", "api", &with(headers(3, 10))).status,
        201
    );
    let a = put_as(&relay, "Bearer adm", "api", &with(headers(4, 10)));
    assert_eq!(
        (a.status, a.json()["field"].clone()),
        (400, json!("webhooks[0].headers"))
    );
    let a = put_as(&relay, "Bearer adm", "api", &with(headers(2, 5000)));
    assert_eq!(
        (a.status, a.json()["field"].clone()),
        (400, json!("webhooks[0].headers"))
    );
    assert!(a.body.contains("max_webhook_header_bytes"), "{}", a.body);
    let a = put_as(&relay, "Bearer adm", "api", &with(headers(10_000, 1)));
    assert_eq!(a.status, 400, "{}", a.body);
}

/// A setting the admin stored as an integer reads back as a float; a source's token sending
/// back what it read changes nothing and is accepted.
#[test]
fn settings_compare_by_meaning_not_spelling() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top(""));
    let body = json!({"write_keys": ["wk_api"], "webhooks": [{"url": rx.url}], "timeout": 2});
    assert_eq!(put_as(&relay, "Bearer adm", "api", &body).status, 201);
    let token = bearer(&make_token(&relay, "api"));
    let shown = get(&relay.url("/admin/sources/api"), &[ADMIN]).json();
    assert_eq!(shown["timeout"], json!(2.0));
    let a = put_as(&relay, &token, "api", &shown);
    assert_eq!(a.status, 200, "{}", a.body);
    let mut longer = shown.clone();
    longer["timeout"] = json!(3);
    let a = put_as(&relay, &token, "api", &longer);
    assert_eq!(
        (a.status, a.json()["field"].clone()),
        (403, json!("timeout"))
    );
}

/// Every route of the admin API, as a source's own token meets it: on its own source, and on
/// another's. The table must name every route the OpenAPI document has.
#[test]
fn what_a_source_token_can_do_route_by_route() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let config = format!(
        "{}{}{}",
        top("allowed_networks = [\"127.0.0.0/8\"]"),
        file_source("web", &rx),
        file_source("shop", &rx)
    );
    let relay = InProcess::start(dir.path(), &config);
    let token = bearer(&make_token(&relay, "web"));
    let own_body = get(&relay.url("/admin/sources/web"), &[ADMIN]).body;
    // (method, path template, status on its own source, status on another's).
    let table: &[(&str, &str, u16, u16)] = &[
        ("GET", "/admin/openapi.json", 200, 200),
        ("GET", "/admin/whoami", 200, 200),
        ("GET", "/admin/sources", 403, 403),
        ("GET", "/admin/sources/{name}", 200, 403),
        ("PUT", "/admin/sources/{name}", 409, 403),
        ("DELETE", "/admin/sources/{name}", 403, 403),
        ("GET", "/admin/sources/{name}/tokens", 200, 403),
        ("POST", "/admin/sources/{name}/tokens", 201, 403),
        ("DELETE", "/admin/sources/{name}/tokens/{id}", 404, 403),
        (
            "PUT",
            "/admin/sources/{name}/audiences/{audience}",
            403,
            403,
        ),
        ("GET", "/admin/sources/{name}/health", 200, 403),
        ("GET", "/admin/sources/{name}/activity", 200, 403),
        // Starts the capture of its own source's events (tests/recent_events.rs).
        ("GET", "/admin/sources/{name}/recent-events", 200, 403),
        (
            "GET",
            "/admin/sources/{name}/webhooks/{index}/attempts",
            200,
            403,
        ),
        ("GET", "/admin/sources/{name}/dead-letters", 200, 403),
        (
            "POST",
            "/admin/sources/{name}/dead-letters/replay",
            202,
            403,
        ),
        (
            "GET",
            "/admin/sources/{name}/dead-letters/replays/{id}",
            404,
            403,
        ),
        (
            "GET",
            "/admin/sources/{name}/dead-letters/{message_id}",
            404,
            403,
        ),
        (
            "DELETE",
            "/admin/sources/{name}/dead-letters/{message_id}",
            404,
            403,
        ),
        (
            "POST",
            "/admin/sources/{name}/dead-letters/{message_id}/replay",
            404,
            403,
        ),
        // A subscription the source does not have: 404 on its own, 403 on another's.
        (
            "GET",
            "/admin/sources/{name}/subscriptions/{subscription}",
            404,
            403,
        ),
        (
            "GET",
            "/admin/sources/{name}/subscriptions/{subscription}/attempts",
            404,
            403,
        ),
        (
            "GET",
            "/admin/sources/{name}/subscriptions/{subscription}/dead-letters",
            404,
            403,
        ),
        (
            "GET",
            "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/{message_id}",
            404,
            403,
        ),
        (
            "DELETE",
            "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/{message_id}",
            404,
            403,
        ),
        (
            "POST",
            "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/{message_id}/replay",
            404,
            403,
        ),
        (
            "POST",
            "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/replay",
            404,
            403,
        ),
        (
            "GET",
            "/admin/sources/{name}/subscriptions/{subscription}/dead-letters/replays/{id}",
            404,
            403,
        ),
        (
            "POST",
            "/admin/sources/{name}/subscriptions/{subscription}/preview",
            404,
            403,
        ),
        // `{}` lacks the event: 400 on its own source.
        (
            "POST",
            "/admin/sources/{name}/subscriptions/preview",
            400,
            403,
        ),
        ("POST", "/admin/deletions", 403, 403),
        // Its own source's entries (`?source=` another's: 403, tests/audit.rs).
        ("GET", "/admin/audit", 200, 200),
        // Its own source's alerts, without the operator's URL (tests/alerts.rs).
        ("GET", "/admin/alerts", 200, 200),
    ];
    let doc = get(&relay.url("/admin/openapi.json"), &[ADMIN]).json();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        let methods = ops.as_object().unwrap().keys();
        for method in methods.filter(|m| *m != "parameters") {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    documented.sort();
    let mut tabled: Vec<(String, String)> = (table.iter())
        .map(|(m, p, _, _)| (m.to_string(), p.to_string()))
        .collect();
    tabled.sort();
    assert_eq!(
        tabled, documented,
        "every route of the document is in the table"
    );
    let auth = [("Authorization", token.as_str())];
    for (method, template, own, other) in table {
        for (source, want) in [("web", own), ("shop", other)] {
            let path = (template.replace("{name}", source))
                .replace("{id}", "1234")
                .replace("{audience}", "vip")
                .replace("{index}", "0")
                .replace("{message_id}", "m-none")
                .replace("{subscription}", "none");
            let url = relay.url(&path);
            let body = match (*method, path.ends_with(&format!("/{source}"))) {
                ("PUT", true) => own_body.as_bytes(),
                _ => b"{}".as_slice(),
            };
            let got = match *method {
                "GET" => get(&url, &auth),
                "POST" => post(&url, &auth, body),
                "PUT" => put(&url, &auth, body),
                _ => delete(&url, &auth),
            };
            assert_eq!(got.status, *want, "{method} {path}: {}", got.body);
        }
    }
    assert_eq!(get(&relay.url("/metrics"), &auth).status, 403);
}
