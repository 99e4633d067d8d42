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

/// A relay.toml with no sources of its own: the admin API on (token `adm`), webhooks to
/// 127.0.0.1 allowed, `timeout` 1 s, and `spool` when given.
fn api_config(spool: Option<&str>) -> String {
    let spool = spool.map_or(String::new(), |s| format!("spool = \"{s}\"\n"));
    format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         allowed_networks = [\"127.0.0.0/8\"]\ntimeout = 1\n{spool}"
    )
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

/// Every source on the fleet's Redis is a tenant of one store: one owner (one heartbeat,
/// one stream) per relay, whatever the number of sources, and no per-source keys.
#[test]
fn a_relay_s_sources_share_one_redis_owner() {
    let redis = RedisServer::start();
    let (rx_web, rx_app) = (Receiver::start(), Receiver::start());
    rx_web.status.store(503, SeqCst);
    rx_app.status.store(503, SeqCst);
    let extra = format!("spool = \"{}\"\ntimeout = 1\n", redis_url(&redis));
    let cfg = config(
        &[("web", "wk_web", &rx_web), ("app", "wk_app", &rx_app)],
        &extra,
    );
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &cfg);
    for key in ["wk_web", "wk_app"] {
        let answer = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic(key))],
            batch(0, 10).as_bytes(),
        );
        assert_eq!(answer.status, 200, "{}", relay.log());
    }
    let keys = redis.keys("fleet");
    let alive: Vec<&String> = keys.iter().filter(|k| k.ends_with(":alive")).collect();
    assert_eq!(alive.len(), 1, "one owner: {keys:?}");
    assert!(
        keys.iter()
            .all(|k| !k.contains("fleet:web") && !k.contains("fleet:app")),
        "no per-source keys: {keys:?}"
    );
    // The same ids in both sources: two messages each, kept apart.
    assert_eq!(redis.spooled_ids("fleet").len(), 20);
}

/// A relay of the version before tenants (each source its own prefix `P:<source>`) died
/// with acknowledged events; a relay of this version takes them over, source by source.
#[test]
fn a_dead_relay_of_the_version_before_tenants_is_taken_over_by_source() {
    let redis = RedisServer::start();
    // Its keys, as that version's per-source client wrote them (closed with events pending:
    // its heartbeat gone, its stream left).
    let old = outbound::Client::new(
        outbound::Config::default()
            .spool(redis.spool("fleet:web"))
            .webhooks(vec![outbound::Webhook::new("http://127.0.0.1:9/hook")]),
    )
    .unwrap();
    for i in 0..5 {
        let msg = outbound::Message::track("u1", "E").message_id(format!("old-{i}"));
        old.enqueue(&msg).unwrap();
    }
    old.close(Some(Duration::from_millis(100))).unwrap();
    drop(old);
    assert_eq!(redis.spooled_ids("fleet:web").len(), 5);
    let (rx_web, rx_app) = (Receiver::start(), Receiver::start());
    let extra = format!("spool = \"{}\"\ntimeout = 1\n", redis_url(&redis));
    let cfg = config(
        &[("app", "wk_app", &rx_app), ("web", "wk_web", &rx_web)],
        &extra,
    );
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &cfg);
    let want: HashSet<String> = (0..5).map(|i| format!("old-{i}")).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while delivered(&rx_web, 0) != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(delivered(&rx_web, 0), want, "{}", relay.log());
    assert!(rx_app.hits().is_empty(), "another source's are not its");
    assert!(redis.spooled_ids("fleet:web").is_empty());
}

/// `redis_ack = "replicas:1"`: a batch is acknowledged only once a replica has it; with no
/// replica the commit's confirmation times out and the answer is 503 (the SDK resends).
#[test]
fn with_redis_ack_replicas_a_batch_is_acknowledged_only_once_a_replica_has_it() {
    let primary = RedisServer::start();
    let rx = Receiver::start();
    rx.status.store(503, SeqCst);
    let extra = format!(
        "spool = \"{}\"\ntimeout = 1\nredis_ack = \"replicas:1\"\n",
        redis_url(&primary)
    );
    let cfg = config(&[("web", "wk_web", &rx)], &extra);
    let dir = temp_dir();
    let relay = Relay::start(dir.path(), &cfg);
    let auth = basic("wk_web");
    let alone = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &auth)],
        batch(0, 10).as_bytes(),
    );
    assert_eq!(alone.status, 503, "no replica: not acknowledged");
    let replica = RedisServer::replica_of(primary.port);
    replica.wait_in_sync();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    while status != 200 && Instant::now() < deadline {
        status = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &auth)],
            batch(100, 10).as_bytes(),
        )
        .status;
    }
    assert_eq!(status, 200, "{}", relay.log());
    // Acknowledged: on the replica.
    let on_replica = replica.spooled_ids("fleet");
    assert!(
        (100..110).all(|i| on_replica.contains(&format!("m-{i}"))),
        "{on_replica:?}"
    );
}

/// A source made through the admin API at relay A is stored in the fleet's Redis and takes
/// events at relay B within 2 s; deleted at B, A refuses its key too.
#[test]
fn a_source_made_at_one_relay_takes_events_at_another_within_two_seconds() {
    let redis = RedisServer::start();
    let rx = Receiver::start();
    let cfg = api_config(Some(&redis_url(&redis)));
    let (dir_a, dir_b) = (temp_dir(), temp_dir());
    let a = Relay::start(dir_a.path(), &cfg);
    let b = Relay::start(dir_b.path(), &cfg);
    let body = json!({"write_keys": ["wk_new"], "webhooks": [{"url": rx.url}],
        "shared_secret": "s", "allowed_networks": ["127.0.0.0/8"]});
    let made = put(
        &a.url("/admin/sources/new"),
        &[("Authorization", "Bearer adm")],
        body.to_string().as_bytes(),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let at = Instant::now();
    let auth = basic("wk_new");
    let mut status = 0;
    while status != 200 && at.elapsed() < Duration::from_secs(5) {
        status = post(
            &b.url("/v1/batch"),
            &[("Authorization", &auth)],
            batch(0, 1).as_bytes(),
        )
        .status;
        if status != 200 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let took = at.elapsed();
    assert_eq!(status, 200, "{}", b.log());
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_eq!(rx.wait_for(1)[0].json()["messageId"], "m-0");
    let shown = get(
        &b.url("/admin/sources/new"),
        &[("Authorization", "Bearer adm")],
    );
    assert_eq!(shown.json()["managed_by"], "api");
    let gone = delete(
        &b.url("/admin/sources/new"),
        &[("Authorization", "Bearer adm")],
    );
    assert_eq!(gone.status, 204);
    let at = Instant::now();
    while post(
        &a.url("/v1/batch"),
        &[("Authorization", &auth)],
        batch(1, 1).as_bytes(),
    )
    .status
        != 401
    {
        assert!(at.elapsed() < Duration::from_secs(2), "{}", a.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// PUTs source `name` at `at` through the admin API (write key `wk_<name>`, one webhook to
/// `rx`); its answer.
fn put_source(at: &Relay, name: &str, rx: &Receiver) -> Answer {
    let body = json!({"write_keys": [format!("wk_{name}")], "webhooks": [{"url": rx.url}],
        "allowed_networks": ["127.0.0.0/8"]});
    put(
        &at.url(&format!("/admin/sources/{name}")),
        &[("Authorization", "Bearer adm")],
        body.to_string().as_bytes(),
    )
}

/// Sends one event to `relay` with `key` until it is answered 200 (within `within`); how
/// long that took.
fn accepted_within(relay: &Relay, key: &str, id: usize, within: Duration) -> Duration {
    let at = Instant::now();
    let auth = basic(key);
    loop {
        let status = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &auth)],
            batch(id, 1).as_bytes(),
        )
        .status;
        if status == 200 {
            return at.elapsed();
        }
        assert!(at.elapsed() < within, "{key}: {status}\n{}", relay.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// On a fleet through Sentinel (`redis+sentinel://`) the admin API's sources live in the
/// primary the Sentinels name, as the spool does: a source made at relay A takes events at
/// relay B within 2 s; after the primary is SIGKILLed and its replica promoted, both relays
/// still know it, and a source made at B takes events at A within 2 s.
#[test]
fn through_sentinel_the_fleet_shares_its_sources_and_follows_a_failover() {
    const NAME: &str = "ctl";
    let (mut primary, replica, sentinels) = redis_server::sentinel_fleet(NAME);
    let rx = Receiver::start();
    let cfg = api_config(Some(&redis_server::sentinel_url(&sentinels, NAME, "fleet")));
    let (dir_a, dir_b) = (temp_dir(), temp_dir());
    let a = Relay::start(dir_a.path(), &cfg);
    let b = Relay::start(dir_b.path(), &cfg);
    let make = |at: &Relay, name: &str| {
        let made = put_source(at, name, &rx);
        assert_eq!(made.status, 201, "{}\n{}", made.body, at.log());
    };
    make(&a, "one");
    let took = accepted_within(&b, "wk_one", 0, Duration::from_secs(5));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // Kept in the primary, not in a data_dir.
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{}", primary.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let stored: Vec<String> = redis::cmd("HKEYS")
        .arg("fleet:control:sources")
        .query(&mut c)
        .unwrap();
    assert_eq!(stored, ["one"]);
    replica.wait_in_sync();
    let killed = Instant::now();
    primary.kill(); // SIGKILL
    redis_server::promotion(&sentinels, NAME, &replica, killed);
    // Both relays acknowledge again on the new primary (their spools' recovery), the first
    // source still known to them.
    accepted_within(&a, "wk_one", 1, Duration::from_secs(15));
    accepted_within(&b, "wk_one", 2, Duration::from_secs(15));
    make(&b, "two");
    let took = accepted_within(&a, "wk_two", 3, Duration::from_secs(5));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // Each delivered (at least once: a failover may send again what the old primary had
    // not passed on as done).
    let want = HashSet::from(["m-0", "m-1", "m-2", "m-3"].map(String::from));
    let at = Instant::now();
    while !delivered(&rx, 0).is_superset(&want) {
        assert!(
            at.elapsed() < Duration::from_secs(10),
            "{:?}",
            delivered(&rx, 0)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A relay whose spool moves from `data_dir` to a fleet's Redis brings the sources and
/// tokens its admin API made: copied into the fleet's store (never written before), served
/// at once, and shared with the fleet's other relays.
#[test]
fn a_relay_moving_onto_a_fleet_brings_the_sources_its_api_made() {
    let redis = RedisServer::start();
    let rx = Receiver::start();
    let base = api_config(None);
    let dir = temp_dir();
    let local = Relay::start(dir.path(), &base);
    let made = put_source(&local, "old", &rx);
    assert_eq!(made.status, 201, "{}", made.body);
    let token = post(
        &local.url("/admin/sources/old/tokens"),
        &[("Authorization", "Bearer adm")],
        b"",
    );
    assert_eq!(token.status, 201, "{}", token.body);
    let token = token.json()["token"].as_str().unwrap().to_string();
    local.kill();
    let fleet = api_config(Some(&redis_url(&redis)));
    let moved = Relay::start(dir.path(), &fleet);
    let other = temp_dir();
    let sibling = Relay::start(other.path(), &fleet);
    for relay in [&moved, &sibling] {
        accepted_within(relay, "wk_old", 0, Duration::from_secs(5));
        let shown = get(
            &relay.url("/admin/sources/old"),
            &[("Authorization", &format!("Bearer {token}"))],
        );
        assert_eq!(shown.status, 200, "{}\n{}", shown.body, relay.log());
    }
    assert!(
        moved.log().contains("copied to"),
        "the move is logged: {}",
        moved.log()
    );
}

/// A fleet's admin API store that cannot be read (its sources' hash of the wrong type) stops
/// the relay at start with exit code 2, the error named by `spool` (where that store is), not
/// `data_dir`.
#[test]
fn an_unreadable_fleet_store_is_refused_at_start_naming_spool() {
    let redis = RedisServer::start();
    let mut c = redis.conn();
    redis::cmd("SET")
        .arg("fleet:control:sources")
        .arg("not a hash")
        .query::<()>(&mut c)
        .unwrap();
    let dir = temp_dir();
    let cfg = api_config(Some(&redis_url(&redis)));
    std::fs::write(dir.path().join("relay.toml"), cfg).unwrap();
    let out = support::relay_command()
        .arg("--config")
        .arg(dir.path().join("relay.toml"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("spool: the admin API's store cannot be opened") && err.contains("WRONGTYPE"),
        "{err}"
    );
}

/// One stored source another relay (or a hand) wrote unreadably is skipped and logged; the
/// others are served, and changes made after it still reach every relay.
#[test]
fn an_unreadable_stored_source_is_skipped_and_the_rest_served() {
    let redis = RedisServer::start();
    let rx = Receiver::start();
    let cfg = api_config(Some(&redis_url(&redis)));
    let (dir_a, dir_b) = (temp_dir(), temp_dir());
    let a = Relay::start(dir_a.path(), &cfg);
    let b = Relay::start(dir_b.path(), &cfg);
    let make = |name: &str| {
        let made = put_source(&a, name, &rx);
        assert_eq!(made.status, 201, "{}", made.body);
    };
    make("good");
    accepted_within(&b, "wk_good", 0, Duration::from_secs(5));
    let mut c = redis.conn();
    redis::pipe()
        .hset("fleet:control:sources", "broken", "{not json")
        .incr("fleet:control:revision", 1)
        .query::<()>(&mut c)
        .unwrap();
    make("later");
    accepted_within(&b, "wk_later", 1, Duration::from_secs(5));
    accepted_within(&b, "wk_good", 2, Duration::from_secs(5));
    let log = b.wait_log("\"broken\" cannot be read, skipped");
    assert!(log.contains("fleet:control:sources"), "{log}");
}

/// The fleet's Redis down for a few seconds: the relay's follower says so once, not at every
/// poll, says when it answers again, and then still follows the fleet's changes.
#[test]
fn a_redis_outage_is_logged_once_by_the_follower_and_followed_after() {
    let mut redis = RedisServer::start();
    let rx = Receiver::start();
    let cfg = api_config(Some(&redis_url(&redis)));
    let (dir_a, dir_b) = (temp_dir(), temp_dir());
    let a = Relay::start(dir_a.path(), &cfg);
    let b = Relay::start(dir_b.path(), &cfg);
    redis.kill();
    std::thread::sleep(Duration::from_secs(3)); // six polls
    redis.restart();
    b.wait_log("admin API store answers again");
    let log = b.log();
    let down = log.matches("changes made at other relays wait").count();
    assert_eq!(down, 1, "{log}");
    let at = Instant::now();
    loop {
        let made = put_source(&a, "after", &rx);
        if made.status == 201 {
            break;
        }
        assert!(at.elapsed() < Duration::from_secs(10), "{}", made.body);
        std::thread::sleep(Duration::from_millis(100));
    }
    accepted_within(&b, "wk_after", 0, Duration::from_secs(15));
}
