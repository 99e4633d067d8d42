//! A fleet: relays sharing one real `redis-server` (`spool = "redis://..."`, started here on
//! 127.0.0.1 with AOF; `scripts/redis-env.sh` installs it). A relay SIGKILLed with events it
//! acknowledged leaves them to a living sibling; an unreachable Redis is answered 503.

mod support;

use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};
use support::*;

// The core's starter: a free port, retried if another test takes it first, and the
// server recognised by its pid (a port probe alone once mistook another test's Redis,
// killed a moment later, for this one).
#[path = "../../outbound/tests/support/redis_server.rs"]
mod redis_server;
use redis_server::RedisServer;

fn redis_url(redis: &RedisServer) -> String {
    redis.spool("fleet").display().to_string()
}

fn batch(from: usize, n: usize) -> String {
    let events: Vec<Value> = (from..from + n)
        .map(|i| json!({"type": "track", "userId": "u1", "event": "E", "messageId": format!("m-{i}")}))
        .collect();
    json!({ "batch": events }).to_string()
}

/// The ids of the requests from the `from`-th on (those answered 200 below).
fn delivered(rx: &Receiver, from: usize) -> HashSet<String> {
    rx.hits()
        .iter()
        .skip(from)
        .map(|h| h.json()["messageId"].as_str().unwrap().to_string())
        .collect()
}

/// Two relays with their own `data_dir` on one Redis: the first acknowledges 300 events its
/// receiver cannot take yet and is SIGKILLed; the second, alive, delivers every one of them
/// once the dead one's silence passes `timeout` + 10 s.
#[test]
fn a_sigkilled_relays_acknowledged_events_are_delivered_by_its_sibling() {
    let redis = RedisServer::start();
    let rx = Receiver::start();
    rx.status.store(503, SeqCst);
    let extra = format!("spool = \"{}\"\ntimeout = 1\n", redis_url(&redis));
    let cfg = config(&[("web", "wk_web", &rx)], &extra);
    let (dir_a, dir_b) = (temp_dir(), temp_dir());
    let a = Relay::start(dir_a.path(), &cfg);
    let b = Relay::start(dir_b.path(), &cfg);
    let auth = basic("wk_web");
    for round in 0..3 {
        let answer = post(
            &a.url("/v1/batch"),
            &[("Authorization", &auth)],
            batch(round * 100, 100).as_bytes(),
        );
        assert_eq!(answer.status, 200, "{}", a.log());
    }
    a.kill();
    // Nothing is in flight now (A is dead, B has nothing of its own): every request from
    // here on is answered 200.
    let from = rx.hits().len();
    rx.status.store(200, SeqCst);
    let want: HashSet<String> = (0..300).map(|i| format!("m-{i}")).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut got = delivered(&rx, from);
    while !want.is_subset(&got) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        got = delivered(&rx, from);
    }
    let missing = want.difference(&got).count();
    assert_eq!(
        missing,
        0,
        "acknowledged events lost: {missing}\n{}",
        b.log()
    );
}

/// With its Redis gone, the relay refuses to acknowledge (SDKs keep their events and retry)
/// and says it is not ready.
#[test]
fn an_unreachable_redis_is_answered_503_and_not_ready() {
    let redis = RedisServer::start();
    let rx = Receiver::start();
    let extra = format!("spool = \"{}\"\ntimeout = 1\n", redis_url(&redis));
    let cfg = config(&[("web", "wk_web", &rx)], &extra);
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &cfg);
    let auth = basic("wk_web");
    let ok = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &auth)],
        batch(0, 10).as_bytes(),
    );
    assert_eq!(ok.status, 200);
    drop(redis);
    // The first request after the loss finds the commit failing; from then on, 503 at once.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut status = 0;
    let mut round = 1;
    while status != 503 && Instant::now() < deadline {
        status = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &auth)],
            batch(round * 10, 10).as_bytes(),
        )
        .status;
        round += 1;
    }
    assert_eq!(status, 503, "{}", relay.log());
    // Open to anyone: it says which check failed, and names the source only in the log.
    let ready = get(&relay.url("/readyz"), &[]);
    assert_eq!(ready.status, 503);
    assert_eq!(ready.json()["check"], "source_spools", "{}", ready.body);
    assert!(!ready.body.contains("web"), "{}", ready.body);
    relay.wait_log("readyz: the spool of web cannot be written");
}
