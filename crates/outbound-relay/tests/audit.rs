//! The audit trail (`GET /admin/audit`): every change and destructive action of the admin
//! API with who did it, when and what (a PUT's changed fields by name, never a secret's
//! value), paged newest first; a source token reads its own source's only; bounded by count
//! and age; kept in `control.db`, or in the fleet's Redis where every relay reads the same.

mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::{basic, delete, get, post, put, temp_dir, Addr, InProcess, Receiver, Relay};

#[path = "../../outbound/tests/support/redis_server.rs"]
mod redis_server;
use redis_server::RedisServer;

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

fn top(extra: &str) -> String {
    format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         block_private_networks = false\nmax_backoff = 0.2\n{extra}\n"
    )
}

fn source(rx: &Receiver, secret: &str, header: &str) -> Vec<u8> {
    json!({"write_keys": ["wk_web"], "shared_secret": secret,
           "webhooks": [{"url": rx.url, "headers": {"X-Key": header}}]})
    .to_string()
    .into_bytes()
}

/// Every entry of the trail, newest first, read a page of `limit` at a time as `auth`.
fn trail(relay: &impl Addr, auth: &str, query: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut before = String::new();
    loop {
        let url = relay.url(&format!("/admin/audit?limit={limit}{before}{query}"));
        let page = get(&url, &[("Authorization", auth)]);
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        let entries = page["entries"].as_array().unwrap();
        assert!(entries.len() <= limit);
        out.extend(entries.iter().cloned());
        match page["next"].as_str() {
            Some(next) => before = format!("&before={next}"),
            None => return out,
        }
    }
}

fn actions(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every kind of action, by the admin and by a source's token, on `relay`.
fn every_action_is_recorded(relay: &impl Addr, rx: &Receiver) {
    let path = relay.url("/admin/sources/web");
    assert_eq!(
        put(&path, &[ADMIN], &source(rx, "first-SECRET", "h1-VALUE")).status,
        201
    );
    assert_eq!(
        put(&path, &[ADMIN], &source(rx, "second-SECRET", "h2-VALUE")).status,
        200
    );
    let made = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"").json();
    let bearer = format!("Bearer {}", made["token"].as_str().unwrap());
    // The source's own token makes a token of its own, and revokes it.
    let mine = post(
        &relay.url("/admin/sources/web/tokens"),
        &[("Authorization", &bearer)],
        b"",
    );
    assert_eq!(mine.status, 201, "{}", mine.body);
    let mine = mine.json()["id"].as_str().unwrap().to_string();
    let revoked = delete(
        &relay.url(&format!("/admin/sources/web/tokens/{mine}")),
        &[("Authorization", &bearer)],
    );
    assert_eq!(revoked.status, 204);
    // Two dead letters: one discarded, one replayed alone, then every one since a time.
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    for id in ["m-1", "m-2"] {
        let body = json!({"userId": "u1", "event": "E", "messageId": id}).to_string();
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic("wk_web"))],
            body.as_bytes(),
        );
        assert_eq!(a.status, 200);
    }
    wait_until("2 dead letters", || {
        let page = get(&relay.url("/admin/sources/web/dead-letters"), &[ADMIN]).json();
        page["stats"]["count"] == 2
    });
    rx.status.store(200, std::sync::atomic::Ordering::SeqCst);
    let gone = delete(
        &relay.url("/admin/sources/web/dead-letters/m-1"),
        &[("Authorization", &bearer)],
    );
    assert_eq!(gone.status, 200, "{}", gone.body);
    let one = post(
        &relay.url("/admin/sources/web/dead-letters/m-2/replay"),
        &[ADMIN],
        b"{\"webhook\": 0}",
    );
    assert_eq!(one.status, 202, "{}", one.body);
    let all = post(
        &relay.url("/admin/sources/web/dead-letters/replay"),
        &[("Authorization", &bearer)],
        b"{\"since\": \"2020-01-01T00:00:00Z\"}",
    );
    assert_eq!(all.status, 202, "{}", all.body);
    let sync = put(
        &relay.url("/admin/sources/web/audiences/vip"),
        &[ADMIN],
        b"{\"members\": [\"u1\", \"u2\"]}",
    );
    assert_eq!(sync.status, 200, "{}", sync.body);
    let deletion = post(
        &relay.url("/admin/deletions"),
        &[ADMIN],
        b"{\"user_id\": \"u9\", \"sources\": [\"web\"]}",
    );
    assert_eq!(deletion.status, 200, "{}", deletion.body);

    let all = trail(relay, "Bearer adm", "", 3);
    assert_eq!(
        actions(&all),
        [
            "user.deleted",
            "audience.synced",
            "dead_letters.replayed",
            "dead_letter.replayed",
            "dead_letter.discarded",
            "token.revoked",
            "token.created",
            "token.created",
            "source.updated",
            "source.created",
        ]
    );
    let text = serde_json::to_string(&all).unwrap();
    for secret in ["first-SECRET", "second-SECRET", "h1-VALUE", "h2-VALUE"] {
        assert!(!text.contains(secret), "{secret} in the trail: {text}");
    }
    let by = |i: usize| &all[i]["by"];
    let updated = &all[8];
    assert_eq!(by(8), &json!({"caller": "admin"}));
    assert_eq!(updated["source"], "web");
    assert_eq!(
        updated["detail"]["changed"],
        json!(["shared_secret", "webhooks[0].headers[\"X-Key\"]"])
    );
    assert!(updated["at"].as_str().unwrap().ends_with('Z'));
    let token_id = made["id"].as_str().unwrap();
    assert_eq!(
        by(6),
        &json!({"caller": "source", "source": "web", "token": token_id}),
        "a token made by the source's own token"
    );
    assert_eq!(all[6]["detail"]["token"], mine.as_str());
    assert_eq!(all[5]["detail"]["token"], mine.as_str());
    assert_eq!(all[4]["detail"]["message_id"], "m-1");
    assert_eq!(by(4)["caller"], "source");
    assert_eq!(
        all[3]["detail"],
        json!({"message_id": "m-2", "webhook": "0", "total": 1})
    );
    assert_eq!(all[2]["detail"]["since"], "2020-01-01T00:00:00Z");
    assert_eq!(all[1]["detail"]["audience"], "vip");
    assert_eq!(all[1]["detail"]["joined"], 2);
    assert_eq!(all[0]["detail"]["user_id"], "u9");
    // Pages chain without a gap or a repeat, whatever their size.
    assert_eq!(trail(relay, "Bearer adm", "", 1), all);
    assert_eq!(trail(relay, "Bearer adm", "", 1000), all);
    // A source token reads its own source's entries; another's is 403.
    assert_eq!(trail(relay, &bearer, "", 4), all);
    let other = get(
        &relay.url("/admin/audit?source=shop"),
        &[("Authorization", &bearer)],
    );
    assert_eq!(
        (other.status, other.json()["field"].clone()),
        (403, json!("source"))
    );
    let bad = get(&relay.url("/admin/audit?before=x"), &[ADMIN]);
    assert_eq!(
        (bad.status, bad.json()["field"].clone()),
        (400, json!("before"))
    );
    let bad = get(&relay.url("/admin/audit?limit=0"), &[ADMIN]);
    assert_eq!(
        (bad.status, bad.json()["field"].clone()),
        (400, json!("limit"))
    );

    // Deleted, then made again under its name: the new source's token reads none of the old
    // one's entries; the admin reads them all.
    assert_eq!(delete(&path, &[ADMIN]).status, 204);
    assert_eq!(
        put(&path, &[ADMIN], &source(rx, "third-SECRET", "h3")).status,
        201
    );
    let fresh = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"").json();
    let fresh = format!("Bearer {}", fresh["token"].as_str().unwrap());
    assert_eq!(
        actions(&trail(relay, &fresh, "", 50)),
        ["token.created", "source.created"]
    );
    let admin = trail(relay, "Bearer adm", "&source=web", 50);
    assert_eq!(admin.len(), all.len() + 3);
    assert_eq!(admin[2]["action"], "source.deleted");
}

#[test]
fn every_change_and_destructive_action_is_recorded_with_who_when_and_what() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = InProcess::start(dir.path(), &top(""));
    every_action_is_recorded(&relay, &rx);
}

#[test]
fn the_trail_keeps_at_most_its_count_and_nothing_older_than_its_age() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = InProcess::start(
        dir.path(),
        &top("audit_max_entries = 3\naudit_retention = 1.5"),
    );
    let path = relay.url("/admin/sources/web");
    for i in 0..5 {
        let secret = format!("s-{i}");
        assert!(put(&path, &[ADMIN], &source(&rx, &secret, "h")).status < 300);
    }
    let kept = trail(&relay, "Bearer adm", "", 50);
    assert_eq!(kept.len(), 3, "the newest 3: {kept:?}");
    assert!(kept.iter().all(|e| e["action"] == "source.updated"));
    std::thread::sleep(Duration::from_millis(1600));
    let made = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"");
    assert_eq!(made.status, 201);
    assert_eq!(
        actions(&trail(&relay, "Bearer adm", "", 50)),
        ["token.created"],
        "older than audit_retention: gone at the next entry"
    );
}

/// On a fleet's Redis: the same, and an entry made at one relay is read at another.
#[test]
fn on_a_fleet_every_relay_reads_one_trail() {
    let redis = RedisServer::start();
    let spool = format!("spool = \"{}\"", redis.spool("audit").display());
    let (dir_a, dir_b) = (temp_dir(), temp_dir());
    let rx = Receiver::start();
    let a = InProcess::start(dir_a.path(), &top(&spool));
    let b = InProcess::start(dir_b.path(), &top(&spool));
    every_action_is_recorded(&a, &rx);
    assert_eq!(
        trail(&b, "Bearer adm", "", 7),
        trail(&a, "Bearer adm", "", 50)
    );
    drop((a, b));
    let dir_c = temp_dir();
    let bounded = format!("{spool}\naudit_max_entries = 2");
    let c = InProcess::start(dir_c.path(), &top(&bounded));
    let path = c.url("/admin/sources/other");
    let body = json!({"write_keys": ["wk_other"], "webhooks": [{"url": rx.url}]}).to_string();
    assert_eq!(put(&path, &[ADMIN], body.as_bytes()).status, 201);
    assert_eq!(trail(&c, "Bearer adm", "", 50).len(), 2);
}

/// Each action is a line of the log too (a discard had none), naming who and what.
#[test]
fn each_action_is_a_line_of_the_log() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    let relay = Relay::start(dir.path(), &top(""));
    let path = relay.url("/admin/sources/web");
    assert_eq!(
        put(&path, &[ADMIN], &source(&rx, "x-SECRET", "h-VALUE")).status,
        201
    );
    let body = json!({"userId": "u1", "event": "E", "messageId": "m-9"}).to_string();
    let sent = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_web"))],
        body.as_bytes(),
    );
    assert_eq!(sent.status, 200);
    wait_until("the dead letter", || {
        get(&relay.url("/admin/sources/web/dead-letters/m-9"), &[ADMIN]).status == 200
    });
    let made = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"").json();
    let bearer = format!("Bearer {}", made["token"].as_str().unwrap());
    let gone = delete(
        &relay.url("/admin/sources/web/dead-letters/m-9"),
        &[("Authorization", &bearer)],
    );
    assert_eq!(gone.status, 200);
    let log = relay.wait_log("audit: dead_letter.discarded");
    let line = (log.lines())
        .find(|l| l.contains("audit: dead_letter.discarded"))
        .unwrap();
    let id = made["id"].as_str().unwrap();
    assert!(
        line.contains("by=Source") && line.contains(id) && line.contains("m-9"),
        "{line}"
    );
    let created = (log.lines())
        .find(|l| l.contains("audit: source.created"))
        .unwrap();
    assert!(
        created.contains("shared_secret") && created.contains("by=Admin"),
        "{created}"
    );
    assert!(!log.contains("x-SECRET") && !log.contains("h-VALUE"));
}
