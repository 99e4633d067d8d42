//! The library alone, for `scripts/relay-bench.sh`'s webhook case: one core `Client` with one
//! signed webhook (no spool, the library's defaults, as `scripts/bench.sh` measures its 1-URL
//! rate), `N` track events (the load generator's event, messageIds `lib-0` ..) enqueued as
//! fast as the queue takes them, timed until the receiver has every id.
//!
//! `bench_library_webhook <receiver base url> <n> <shared secret>`; prints one JSON line.

use outbound::{Client, Config, Message, Webhook};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base = args
        .get(1)
        .expect("receiver base url")
        .trim_end_matches('/');
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let secret = args.get(3).cloned().unwrap_or_else(|| "s".into());
    let config = Config::default()
        .webhooks(vec![Webhook::new(format!("{base}/hook/lib"))])
        .shared_secret(secret)
        .max_queue_size(n as usize + 1)
        .block_private_networks(false);
    let client = Client::new(config).expect("client");
    let start = Instant::now();
    for k in 0..n {
        let text = format!(
            r#"{{"type":"track","event":"Order Completed","userId":"user-{}","properties":{{"order_id":"ord-{k}","revenue":49.99,"items":3,"express":true,"tags":["a","b"]}},"messageId":"lib-{k}","timestamp":"2026-11-21T09:30:00.123Z","context":{{"library":{{"name":"analytics-python","version":"2.3.4"}}}}}}"#,
            k % 1000
        );
        let msg = Message::from_json_text(&text).expect("event");
        client.enqueue_with(&msg).expect("enqueue");
    }
    let enqueued = start.elapsed().as_secs_f64();
    let agent = ureq::Agent::new_with_defaults();
    let url = format!("{base}/_wait?n={n}&timeout=300");
    let body = agent
        .get(&url)
        .call()
        .expect("wait")
        .body_mut()
        .read_to_string()
        .expect("wait body");
    let secs = start.elapsed().as_secs_f64();
    let _ = client.close(Some(Duration::from_secs(5)));
    println!(
        "{{\"n\":{n},\"seconds\":{secs:.3},\"deliveries_per_s\":{:.0},\"enqueue_s\":{enqueued:.3},\"wait\":{body}}}",
        n as f64 / secs
    );
}
