//! What a spool costs the delivery side, without Python in the way:
//! N `track` calls (5 properties) to an ingestion receiver on 127.0.0.1 answering 200, with
//! and without a spool, in alternating rounds. Prints wall time to delivery and the CPU
//! seconds of each outbound thread (from /proc), per 100,000 messages.
//!
//! ```text
//! cargo run --release -p outbound --example spool_bench [-- N ROUNDS]
//! ```

#[path = "support/receiver.rs"]
mod receiver;

use outbound::{Client, Config, Message};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(100_000, |a| a.parse().expect("N"));
    let rounds: u32 = args.next().map_or(3, |a| a.parse().expect("ROUNDS"));
    let port = receiver::start(|_| {});
    let tick = clock_ticks();
    println!("| case | msg/s | CPU-s per 100k (by thread) |");
    println!("|---|---|---|");
    for round in 0..rounds * 2 {
        let spool = round % 2 == 1;
        let dir = std::env::temp_dir().join(format!("outbound-spool-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let before = threads(tick);
        let client = Client::new({
            let mut c = Config::default()
                .write_key("bench")
                .endpoint(format!("http://127.0.0.1:{port}"))
                .max_queue_size(n as usize + 1000)
                .proxy_from_env(false)
                .debug(false);
            c.spool = spool.then(|| dir.clone().into());
            c
        })
        .expect("client");
        let start = Instant::now();
        for i in 0..n {
            let m = Message::track("user-12345", "Order Completed")
                .property("order_id", format!("ord-{i:06}"))
                .property("revenue", 49.99)
                .property("items", 3)
                .property("express", true)
                .property("tags", vec!["books", "gift"]);
            client.enqueue(&m).expect("enqueue");
        }
        assert!(client.flush(Some(Duration::from_secs(300))), "delivery");
        let took = start.elapsed().as_secs_f64();
        let after = threads(tick);
        let _ = client.close(Some(Duration::from_secs(10)));
        let _ = std::fs::remove_dir_all(&dir);
        let mut by: BTreeMap<String, f64> = BTreeMap::new();
        for (tid, (name, cpu)) in &after {
            let was = before.get(tid).map_or(0.0, |b| b.1);
            *by.entry(name.clone()).or_default() += (cpu - was) * 100_000.0 / n as f64;
        }
        let total: f64 = by.values().sum();
        let detail: Vec<String> = by
            .iter()
            .filter(|(_, c)| **c >= 0.01)
            .map(|(k, c)| format!("{k} {c:.2}"))
            .collect();
        println!(
            "| {} | {:.0} | {total:.2} ({}) |",
            if spool { "spool" } else { "memory" },
            n as f64 / took,
            detail.join(", ")
        );
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// Every thread of this process: tid → (name, CPU seconds).
fn threads(tick: f64) -> BTreeMap<u64, (String, f64)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let cpu = (fields[11].parse::<f64>().unwrap_or(0.0)
            + fields[12].parse::<f64>().unwrap_or(0.0))
            / tick;
        out.insert(tid, (name, cpu));
    }
    out
}
