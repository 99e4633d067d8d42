//! The scheduler's cost of batching, for instruction counts under callgrind: N
//! `track` calls to an ingestion receiver on 127.0.0.1 that answers each request after
//! DELAY_US microseconds (so a backlog waits in the lane behind the requests out), then a
//! flush. Prints the messages, the requests and the wall time.
//!
//! ```text
//! cargo build --release -p outbound --example batch_bench
//! valgrind --tool=callgrind --separate-threads=yes \
//!     target/release/examples/batch_bench [N [FLUSH_AT [MAX_BATCH_MESSAGES [DELAY_US [ENGINE]]]]]
//! ```
//!
//! MAX_BATCH_MESSAGES 0: unset (`flush_at`). ENGINE 1: the client is a shared `Engine`'s
//! instead of one of its own (both send their batches on an I/O engine). Also prints the
//! process's CPU time (the receiver's included), steadier than the wall time on a busy machine.

#[path = "support/receiver.rs"]
mod receiver;

use outbound::{Client, Config, Message};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |default: u64| {
        args.next()
            .map_or(default, |a| a.parse().expect("a number"))
    };
    let (n, flush_at, max, delay_us) = (next(100_000), next(20), next(0), next(1_000));
    let on_engine = next(0) == 1;
    let requests = Arc::new(AtomicU64::new(0));
    let seen = requests.clone();
    let port = receiver::start(move |_| {
        seen.fetch_add(1, Relaxed);
        std::thread::sleep(Duration::from_micros(delay_us));
    });
    let engine = on_engine.then(|| outbound::Engine::new(outbound::EngineConfig::default()));
    let config = {
        let mut c = Config::default()
            .write_key("bench")
            .endpoint(format!("http://127.0.0.1:{port}"))
            .flush_at(flush_at as usize)
            .max_queue_size(n as usize + 1000)
            .proxy_from_env(false)
            .debug(false);
        c.max_batch_messages = (max > 0).then_some(max as usize);
        c
    };
    let client = match engine {
        Some(engine) => engine.expect("engine").client(config),
        None => Client::new(config),
    }
    .expect("client");
    let start = Instant::now();
    for _ in 0..n {
        let m = Message::track("user-12345", "Order Completed")
            .property("order_id", "ord-0001")
            .property("revenue", 49.99)
            .property("items", 3)
            .property("express", true)
            .property("tags", vec!["books", "gift"]);
        client.enqueue(&m).expect("enqueue");
    }
    assert!(client.flush(Some(Duration::from_secs(600))), "delivery");
    println!(
        "{n} messages, {} requests, {:.2} s, {:.2} CPU-s",
        requests.load(Relaxed),
        start.elapsed().as_secs_f64(),
        cpu_seconds()
    );
}

/// This process's user + system CPU time so far (the receiver's threads included).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}
