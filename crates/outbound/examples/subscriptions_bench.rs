//! What a subscription costs per event: a 3-condition trigger and a 10-field mapping on a
//! `track` event of ~700 bytes, in nanoseconds per event (median of rounds), single-threaded.
//!
//! ```text
//! cargo build --release -p outbound --example subscriptions_bench
//! target/release/examples/subscriptions_bench [ROUNDS [EVENTS_PER_ROUND [ROW]]]
//! ```
//!
//! ROW runs one row alone (0-based). On a busy machine, count instructions instead of time:
//! `valgrind --tool=callgrind target/release/examples/subscriptions_bench 1 N ROW` for two N,
//! the difference of the totals over the difference of N.

use outbound::canonical_json;
use outbound::subscription::Subscription;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Instant;

fn event(total: f64) -> Value {
    json!({
        "type": "track",
        "event": "Order Completed",
        "userId": "user-48213",
        "anonymousId": "5c2a9d1e-8d8f-4bcf-9b1a-2f0d6c1e7a44",
        "messageId": "ajs-next-1732871234567-0d2b1f3e",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "properties": {
            "order_id": "50314b8e9bcf000000000000",
            "total": total,
            "revenue": 25.0,
            "currency": "USD",
            "coupon": "hasbros",
            "products": [
                {"product_id": "507f1f77bcf86cd799439011", "sku": "45790-32", "name": "Monopoly", "price": 19, "quantity": 1},
                {"product_id": "505bd76785ebb509fc183733", "sku": "46493-32", "name": "Uno", "price": 3, "quantity": 2}
            ]
        },
        "context": {
            "ip": "8.8.8.8",
            "library": {"name": "analytics.js", "version": "2.11.1"},
            "traits": {"email": "ada@example.com", "plan": "pro"},
            "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)"
        }
    })
}

fn subscription() -> Subscription {
    Subscription::from_segment(&json!({
        "subscribe": "type = \"track\" and event = \"Order Completed\" and properties.total > 100",
        "mapping": {
            "url": "https://hooks.example.com/orders",
            "method": "POST",
            "headers": {"X-Source": "outbound"},
            "data": {
                "id": {"@path": "$.messageId"},
                "user": {"@path": "$.userId"},
                "event": {"@path": "$.event"},
                "total": {"@path": "$.properties.total"},
                "currency": {"@path": "$.properties.currency"},
                "first_sku": {"@path": "$.properties.products[0].sku"},
                "email": {"@path": "$.context.traits.email"},
                "label": {"@template": "{{event}} by {{userId}}"},
                "plan": {"@case": {"operator": "upper", "value": {"@path": "$.context.traits.plan"}}},
                "when": {"@path": "$.timestamp"}
            }
        }
    }))
    .expect("the bench's subscription")
}

/// Median nanoseconds per event of `f` over `rounds` rounds of `n` calls.
fn measure(rounds: usize, n: usize, mut f: impl FnMut() -> usize) -> f64 {
    let mut per = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let mut sink = 0;
        for _ in 0..n {
            sink += f();
        }
        black_box(sink);
        per.push(start.elapsed().as_nanos() as f64 / n as f64);
    }
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(15, |a| a.parse().expect("ROUNDS"));
    let n: usize = args
        .next()
        .map_or(200_000, |a| a.parse().expect("EVENTS_PER_ROUND"));
    let only: Option<usize> = args.next().map(|a| a.parse().expect("ROW"));
    let run = |row: usize| only.is_none_or(|o| o == row);
    let sub = subscription();
    let whole = Subscription::from_segment(&json!({
        "subscribe": "type = \"track\"", "mapping": {"url": "https://hooks.example.com/all"}
    }))
    .expect("the default mapping");
    let hit = event(250.0);
    let miss = event(50.0);
    let mut buf = Vec::with_capacity(1024);

    let mut rows: Vec<(&str, f64)> = Vec::new();
    if run(0) {
        rows.push((
            "trigger, 3 conditions, matches",
            measure(rounds, n, || usize::from(sub.matches(black_box(&hit)))),
        ));
    }
    if run(1) {
        rows.push((
            "trigger, 3 conditions, third fails",
            measure(rounds, n, || usize::from(sub.matches(black_box(&miss)))),
        ));
    }
    if run(2) {
        rows.push((
            "trigger + 10-field mapping (a Value)",
            measure(rounds, n, || {
                let m = sub.map(black_box(&hit)).expect("maps").expect("matches");
                m.body.map_or(0, |b| b.as_object().map_or(0, |o| o.len()))
            }),
        ));
    }
    if run(3) {
        rows.push((
            "the same, written as canonical JSON",
            measure(rounds, n, || {
                let m = sub.map(black_box(&hit)).expect("maps").expect("matches");
                buf.clear();
                buf.extend_from_slice(
                    canonical_json::to_string(m.body.as_deref().expect("a body"))
                        .expect("writable")
                        .as_bytes(),
                );
                buf.len()
            }),
        ));
    }
    if run(4) {
        rows.push((
            "default mapping ($.), borrowed",
            measure(rounds, n, || {
                let m = whole.map(black_box(&hit)).expect("maps").expect("matches");
                usize::from(m.body.is_some())
            }),
        ));
    }
    println!("subscriptions: ns per event (median of {rounds} rounds of {n} events, one thread)");
    println!();
    println!("{:<40} {:>10}", "step", "ns/event");
    for (what, ns) in rows {
        println!("{what:<40} {ns:>10.0}");
    }
}
