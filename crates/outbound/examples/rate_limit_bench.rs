//! An endpoint's rate limit under a burst: one client with two webhooks on
//! 127.0.0.1, one limited to LIMIT requests a second (bursts of 5), one free; `track` calls
//! at RATE a second for SECONDS. Prints, per second, what each endpoint received, and a
//! summary: the limited endpoint's seconds within LIMIT ± 5 %, the free one's pace.
//!
//! ```text
//! cargo run --release -p outbound --example rate_limit_bench [-- LIMIT RATE SECONDS]
//! ```

#[path = "support/receiver.rs"]
mod receiver;

use outbound::{Client, Config, Message, RateLimit, Webhook};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Seconds counted at most (the run plus its drain).
const SLOTS: usize = 4096;

fn counter(start: Instant) -> (u16, Arc<Vec<AtomicU64>>) {
    let slots: Arc<Vec<AtomicU64>> = Arc::new((0..SLOTS).map(|_| AtomicU64::new(0)).collect());
    let s = slots.clone();
    let port = receiver::start(move |_| {
        let second = (start.elapsed().as_secs() as usize).min(SLOTS - 1);
        s[second].fetch_add(1, Relaxed);
    });
    (port, slots)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let limit: u32 = args.next().map_or(100, |a| a.parse().expect("LIMIT"));
    let rate: u64 = args.next().map_or(2000, |a| a.parse().expect("RATE"));
    let seconds: u64 = args.next().map_or(60, |a| a.parse().expect("SECONDS"));
    let start = Instant::now();
    let (limited_port, limited) = counter(start);
    let (free_port, free) = counter(start);
    let total = rate * seconds;
    let config = Config::default()
        .webhooks(vec![
            Webhook::new(format!("http://127.0.0.1:{limited_port}/limited"))
                .rate_limit(RateLimit::per_second(limit).burst(5)),
            Webhook::new(format!("http://127.0.0.1:{free_port}/free")),
        ])
        // The limited endpoint's backlog is held until it has had its first request.
        .max_queue_size(total as usize + 1000)
        .proxy_from_env(false)
        .debug(false);
    let client = Client::new(config).expect("client");
    // RATE calls a second, in steps of 10 ms.
    let per_step = rate / 100;
    for step in 0..seconds * 100 {
        let due = start + Duration::from_millis(step * 10);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        for i in 0..per_step {
            let m = Message::track(format!("user-{step}-{i}"), "Order Completed")
                .property("revenue", 49.99);
            client.enqueue(&m).expect("enqueue");
        }
    }
    let sent_for = start.elapsed().as_secs_f64();
    // One more second for the last calls to reach the endpoints.
    std::thread::sleep(Duration::from_millis(1500));
    let health = client.webhook_health();
    let _ = client.close(Some(Duration::from_secs(1)));
    let got = |v: &Vec<AtomicU64>, s: usize| v[s].load(Relaxed);
    println!("| second | calls | free endpoint | limited endpoint ({limit}/s) |");
    println!("|---|---|---|---|");
    for s in 0..seconds as usize {
        println!(
            "| {} | {} | {} | {} |",
            s + 1,
            rate,
            got(&free, s),
            got(&limited, s)
        );
    }
    // The first and last second are partial for the free endpoint (calls start and stop).
    let window: Vec<u64> = (0..seconds as usize).map(|s| got(&limited, s)).collect();
    let (lo, hi) = (f64::from(limit) * 0.95, f64::from(limit) * 1.05);
    let within = window
        .iter()
        .filter(|n| (lo..=hi).contains(&(**n as f64)))
        .count();
    let free_inner: Vec<u64> = (1..seconds as usize - 1).map(|s| got(&free, s)).collect();
    println!();
    println!(
        "calls: {total} in {sent_for:.1} s; limited endpoint: {within} of {seconds} seconds \
         within {limit} ± 5 % (min {}, max {}, total {}); free endpoint: min {} max {} a second \
         (seconds 2 to {}), total {}; throttled requests counted: {}; state at the end: {}",
        window.iter().min().unwrap(),
        window.iter().max().unwrap(),
        limited.iter().map(|a| a.load(Relaxed)).sum::<u64>(),
        free_inner.iter().min().unwrap_or(&0),
        free_inner.iter().max().unwrap_or(&0),
        seconds - 1,
        free.iter().map(|a| a.load(Relaxed)).sum::<u64>(),
        health[0].throttled,
        health[0].state.as_str(),
    );
}
