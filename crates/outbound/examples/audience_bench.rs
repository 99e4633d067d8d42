//! Audience sync at scale: 1,000,000 members, then 1% churn (5,000 leave,
//! 5,000 join), delivered through a real client to an ingestion receiver on 127.0.0.1.
//! Asserts the churn sync emits exactly 10,000 identifies; prints time and peak memory.
//!
//! ```text
//! cargo run --release -p outbound --example audience_bench [-- MEMBERS]
//! ```
//!
//! The client keeps its default `max_queue_size` (10,000): the sync paces itself to the
//! queue, so memory does not grow with the audience.

#[path = "support/receiver.rs"]
mod receiver;

use outbound::{AudienceSync, Client, Config, SyncCounts};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

const AUDIENCE: &str = "High Value Users";

/// What the receiver saw: identifies whose membership trait is true, and false.
#[derive(Default)]
struct Seen {
    joined: AtomicU64,
    left: AtomicU64,
}

fn main() {
    let members: u64 = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("MEMBERS must be a number"))
        .unwrap_or(1_000_000);
    let churn = members / 200; // 0.5% leave + 0.5% join = 1% churn

    let seen = Arc::new(Seen::default());
    let port = receiver(seen.clone());
    let client = Client::new(
        Config::default()
            .write_key("bench")
            .endpoint(format!("http://127.0.0.1:{port}"))
            .flush_at(100)
            .proxy_from_env(false)
            .debug(false),
    )
    .expect("client");

    let dir = std::env::temp_dir().join(format!("outbound-audience-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    let mut sync = AudienceSync::open(&path).expect("state");

    let ids = |range: std::ops::Range<u64>| range.map(|i| format!("user-{i:08}"));
    let mut rows = Vec::new();

    let (counts, took) = timed(&client, || {
        sync.sync_audience(&client, AUDIENCE, ids(0..members))
    });
    assert_eq!(counts.joined, members);
    check_seen(&seen, members, 0);
    rows.push(("first sync", members, counts, took, mem()));

    let (counts, took) = timed(&client, || {
        sync.sync_audience(&client, AUDIENCE, ids(churn..members + churn))
    });
    assert_eq!((counts.joined, counts.left), (churn, churn));
    assert_eq!(counts.joined + counts.left, 2 * churn);
    check_seen(&seen, churn, churn);
    rows.push(("1% churn", members, counts, took, mem()));

    let (counts, took) = timed(&client, || {
        sync.sync_audience(&client, AUDIENCE, ids(churn..members + churn))
    });
    assert_eq!(counts.joined + counts.left, 0);
    check_seen(&seen, 0, 0);
    rows.push(("no change", members, counts, took, mem()));

    drop(sync);
    let db_bytes: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "| sync       |   members |  joined |    left | unchanged | emitted | time (s) | peak RSS (MiB) |"
    );
    println!(
        "|------------|-----------|---------|---------|-----------|---------|----------|----------------|"
    );
    for (name, n, c, took, (hwm, _)) in &rows {
        println!(
            "| {name:<10} | {n:>9} | {:>7} | {:>7} | {:>9} | {:>7} | {:>8.2} | {:>14.1} |",
            c.joined,
            c.left,
            c.unchanged,
            c.joined + c.left,
            took.as_secs_f64(),
            *hwm as f64 / 1024.0,
        );
    }
    let (hwm, rss) = mem();
    println!(
        "\npeak RSS (VmHWM) {:.1} MiB, RSS now {:.1} MiB; state files {:.1} MiB; client stats {:?}",
        hwm as f64 / 1024.0,
        rss as f64 / 1024.0,
        db_bytes as f64 / (1024.0 * 1024.0),
        client.stats()
    );
    println!(
        "OK: the churn sync emitted exactly {} identifies",
        2 * churn
    );
}

/// Runs one sync and waits until everything it emitted was delivered; the time covers both.
fn timed(
    client: &Client,
    f: impl FnOnce() -> Result<SyncCounts, outbound::Error>,
) -> (SyncCounts, Duration) {
    let start = Instant::now();
    let counts = f().expect("sync");
    assert!(client.flush(Some(Duration::from_secs(120))), "delivery");
    (counts, start.elapsed())
}

/// Checks the receiver saw exactly these many trues and falses since the last check.
fn check_seen(seen: &Seen, joined: u64, left: u64) {
    let got = (seen.joined.swap(0, Relaxed), seen.left.swap(0, Relaxed));
    assert_eq!(got, (joined, left), "identifies received (true, false)");
}

/// (VmHWM, VmRSS) in KiB, from /proc/self/status.
fn mem() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// An ingestion endpoint on 127.0.0.1 that answers 200 and counts the membership values.
fn receiver(seen: Arc<Seen>) -> u16 {
    let (yes, no) = (
        counter(b"\"high_value_users\":true"),
        counter(b"\"high_value_users\":false"),
    );
    receiver::start(move |body| {
        seen.joined.fetch_add(yes(body), Relaxed);
        seen.left.fetch_add(no(body), Relaxed);
    })
}

/// Counts the occurrences of `needle` in a body.
fn counter(needle: &'static [u8]) -> impl Fn(&[u8]) -> u64 {
    move |hay: &[u8]| hay.windows(needle.len()).filter(|w| *w == needle).count() as u64
}
