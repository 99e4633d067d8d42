//! What acknowledging only committed events costs: p50/p99 of a single-event `/v1/track`
//! request, one at a time over a kept-alive connection, with the spool (200 after the group
//! commit) and without it (200 once in memory). A measurement, not a gate:
//!
//! `cargo test -p outbound-relay --release --test latency -- --ignored --nocapture`

mod support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::{basic, config, temp_dir, Receiver, Relay};

fn measure(extra: &str, n: usize) -> (Duration, Duration) {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], extra));
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().build());
    let auth = basic("wk_web");
    let url = relay.url("/v1/track");
    let mut times = Vec::with_capacity(n);
    for i in 0..n + 50 {
        let body = json!({"userId": "u1", "event": "E", "messageId": format!("m-{i}")}).to_string();
        let started = Instant::now();
        let r = agent
            .post(&url)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .send(body.as_bytes())
            .unwrap();
        assert_eq!(r.status(), 200);
        if i >= 50 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    (times[n / 2], times[n * 99 / 100])
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn single_event_acknowledgement_latency_with_and_without_the_spool() {
    let n = 1000;
    let (m50, m99) = measure("spool = false", n);
    let (d50, d99) = measure("", n);
    let (t50, t99) = measure("spool_commit_interval = 0.0002", n);
    let (o50, o99) = measure("spool_commit_interval = 0.001", n);
    let (f50, f99) = measure("spool_commit_interval = 0.005", n);
    let (c50, c99) = measure("spool_commit_interval = 0.02", n);
    println!("single-event /v1/track, {n} sequential requests, one connection:");
    println!("  memory only (spool = false):           p50 {m50:?}  p99 {m99:?}");
    println!("  durable, relay default 0.05 ms commit: p50 {d50:?}  p99 {d99:?}");
    println!("  durable, 0.2 ms commit:                p50 {t50:?}  p99 {t99:?}");
    println!("  durable, 1 ms commit:                  p50 {o50:?}  p99 {o99:?}");
    println!("  durable, 5 ms commit:                  p50 {f50:?}  p99 {f99:?}");
    println!("  durable, the core's 20 ms commit:      p50 {c50:?}  p99 {c99:?}");
}
