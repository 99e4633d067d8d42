//! The admin API: Bearer token only; deletions to each affected source's webhooks;
//! audiences through the core's sync, with state that survives a restart.

mod support;

use serde_json::json;
use std::time::Duration;
use support::{config, post, put, temp_dir, Receiver, Relay};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

#[test]
fn admin_requests_without_the_bearer_token_are_401_and_send_nothing() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let body = json!({"user_id": "u1"}).to_string();
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic YWRtOg=="),
        Some("Bearer adm2"),
    ] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
        let a = post(&relay.url("/admin/deletions"), &headers, body.as_bytes());
        assert_eq!(a.status, 401, "{auth:?}");
        let a = put(
            &relay.url("/admin/sources/web/audiences/VIP"),
            &headers,
            json!({"members": ["u1"]}).to_string().as_bytes(),
        );
        assert_eq!(a.status, 401, "{auth:?}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

#[test]
fn a_deletion_goes_to_every_source_with_webhooks_and_the_answer_names_them() {
    let dir = temp_dir();
    let (web, ios) = (Receiver::start(), Receiver::start());
    let relay = Relay::start(
        dir.path(),
        &config(&[("web", "wk_web", &web), ("ios", "wk_ios", &ios)], ""),
    );
    let a = post(
        &relay.url("/admin/deletions"),
        &[ADMIN],
        json!({"user_id": "u-gone"}).to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["sources"], json!(["web", "ios"]));
    for rx in [&web, &ios] {
        let hit = rx.wait_for(1).remove(0);
        let body = hit.json();
        assert_eq!(body["type"], "delete");
        assert_eq!(body["userId"], "u-gone");
        assert!(outbound::verify(
            b"s3cret",
            &hit.body,
            hit.header("X-Signature").unwrap()
        ));
    }
}

#[test]
fn a_deletion_for_named_sources_reaches_only_those() {
    let dir = temp_dir();
    let (web, ios) = (Receiver::start(), Receiver::start());
    let relay = Relay::start(
        dir.path(),
        &config(&[("web", "wk_web", &web), ("ios", "wk_ios", &ios)], ""),
    );
    let a = post(
        &relay.url("/admin/deletions"),
        &[ADMIN],
        json!({"user_id": "u1", "sources": ["ios"]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(
        (a.status, a.json()["sources"].clone()),
        (200, json!(["ios"]))
    );
    ios.wait_for(1);
    std::thread::sleep(Duration::from_millis(300));
    assert!(web.hits().is_empty());
    let a = post(
        &relay.url("/admin/deletions"),
        &[ADMIN],
        json!({"user_id": "u1", "sources": ["nope"]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 400);
}

#[test]
fn an_audience_sync_sends_only_changes_and_a_restart_sends_nothing_twice() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "");
    let url = "/admin/sources/web/audiences/High%20Value%20Users";
    let mut relay = Relay::start(dir.path(), &cfg);
    let a = put(
        &relay.url(url),
        &[ADMIN],
        json!({"members": ["u1", "u2"]}).to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let v = a.json();
    assert_eq!(
        (v["joined"].clone(), v["left"].clone()),
        (json!(2), json!(0))
    );
    assert_eq!(v["trait"], "high_value_users");
    let hits = rx.wait_for(2);
    for h in &hits {
        let b = h.json();
        assert_eq!(b["type"], "identify");
        assert_eq!(b["traits"]["high_value_users"], true);
    }
    // A restart (SIGTERM, not a kill: a kill may deliver the spooled identifies again,
    // which is the spool's at-least-once, not the audience state).
    relay.signal(libc::SIGTERM);
    assert_eq!(relay.wait_exit(Duration::from_secs(15)).code(), Some(0));
    // Same data_dir: the state is on disk.
    let relay = Relay::start(dir.path(), &cfg);
    let a = put(
        &relay.url(url),
        &[ADMIN],
        json!({"members": ["u2", "u3"]}).to_string().as_bytes(),
    );
    let v = a.json();
    assert_eq!(
        (
            v["joined"].clone(),
            v["left"].clone(),
            v["unchanged"].clone()
        ),
        (json!(1), json!(1), json!(1))
    );
    let hits = rx.wait_for(4);
    std::thread::sleep(Duration::from_millis(300));
    let later: Vec<(String, bool)> = rx.bodies()[2..]
        .iter()
        .map(|b| {
            (
                b["userId"].as_str().unwrap().to_string(),
                b["traits"]["high_value_users"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(rx.hits().len(), 4, "{hits:?}");
    assert!(later.contains(&("u3".into(), true)) && later.contains(&("u1".into(), false)));
}

#[test]
fn an_audience_of_an_unknown_source_is_404() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let a = put(
        &relay.url("/admin/sources/nope/audiences/VIP"),
        &[ADMIN],
        json!({"members": []}).to_string().as_bytes(),
    );
    assert_eq!(a.status, 404);
}
