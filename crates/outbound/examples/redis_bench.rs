//! What each spool engine costs end to end: N `track` calls (5
//! properties) to an ingestion receiver on 127.0.0.1 answering 200, in memory only, with an
//! SQLite spool and with a Redis spool (a `redis-server` this program starts on 127.0.0.1,
//! AOF `appendfsync everysec`), in alternating rounds. Prints msg/s (and as a share of memory
//! only), the client's CPU seconds per 100,000 messages, and for Redis what the server saw
//! per message: commands, round trips (pipelines: EXEC + others), bytes in and out, and its
//! own CPU.
//!
//! ```text
//! cargo run --release -p outbound --example redis_bench [-- N ROUNDS [CASE]]
//! ```
//!
//! `CASE` (`memory`, `sqlite` or `redis`) runs that case alone, e.g. under a profiler.

#[path = "support/receiver.rs"]
mod receiver;

use outbound::{Client, Config, Message};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(100_000, |a| a.parse().expect("N"));
    let rounds: u32 = args.next().map_or(3, |a| a.parse().expect("ROUNDS"));
    let only = args.next();
    let port = receiver::start(|_| {});
    let redis = RedisServer::start();
    let mut best: HashMap<&str, f64> = HashMap::new();
    println!("| case | msg/s | client CPU-s per 100k | Redis per message: commands, round trips, bytes in / out | redis-server CPU-s per 100k |");
    println!("|---|---|---|---|---|");
    for round in 0..rounds * 3 {
        let case = ["memory", "sqlite", "redis"][(round % 3) as usize];
        if only.as_deref().is_some_and(|o| o != case) {
            continue;
        }
        let dir = std::env::temp_dir().join(format!("outbound-redis-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let spool = match case {
            "sqlite" => Some(dir.clone()),
            "redis" => Some(PathBuf::from(format!(
                "redis://127.0.0.1:{}/0?prefix=bench{round}",
                redis.port
            ))),
            _ => None,
        };
        let client = Client::new({
            let mut c = Config::default()
                .write_key("bench")
                .endpoint(format!("http://127.0.0.1:{port}"))
                .max_queue_size(n as usize + 1000)
                .proxy_from_env(false)
                .debug(false);
            c.spool = spool.map(Into::into);
            c
        })
        .expect("client");
        let before_redis = redis.info();
        let before_cpu = self_cpu();
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
        let cpu = (self_cpu() - before_cpu) * 100_000.0 / n as f64;
        // Removals are committed after the outcomes: let the last commit land.
        std::thread::sleep(Duration::from_millis(100));
        let after_redis = redis.info();
        let _ = client.close(Some(Duration::from_secs(10)));
        let _ = std::fs::remove_dir_all(&dir);
        let rate = n as f64 / took;
        let e = best.entry(case).or_default();
        *e = e.max(rate);
        let per = |k: &str| (after_redis[k] - before_redis[k]) / n as f64;
        let redis_cols = if case == "redis" {
            let trips = per("cmdstat_exec") + per("cmdstat_smembers") + per("cmdstat_sadd");
            format!(
                "{:.4}, {:.4}, {:.0} / {:.0} | {:.2}",
                per("total_commands_processed"),
                trips,
                per("total_net_input_bytes"),
                per("total_net_output_bytes"),
                per("used_cpu") * 100_000.0,
            )
        } else {
            "— | —".into()
        };
        println!("| {case} | {rate:.0} | {cpu:.2} | {redis_cols} |");
    }
    let mem = best.get("memory").copied().unwrap_or(f64::NAN);
    println!();
    for case in ["memory", "sqlite", "redis"] {
        if !best.contains_key(case) {
            continue;
        }
        println!(
            "best {case}: {:.0} msg/s = {:.0} % of memory only",
            best[case],
            best[case] * 100.0 / mem
        );
    }
    println!(
        "redis-server peak memory: {:.1} MiB",
        redis.info()["used_memory_peak"] / (1 << 20) as f64
    );
}

/// CPU seconds of this process so far.
fn self_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let close = stat.rfind(')').unwrap();
    let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
    // SAFETY: sysconf has no preconditions.
    let tick = (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64;
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / tick
}

struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: std::process::Child,
}

impl RedisServer {
    fn start() -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("outbound-redis-bench-srv-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--dir", dir.to_str().unwrap(), "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "everysec"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/redis-env.sh installs it)");
        let s = RedisServer { port, dir, child };
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// Counters of INFO (stats, commandstats calls, cpu, memory) as numbers.
    fn info(&self) -> HashMap<String, f64> {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{}/0", self.port))
            .unwrap()
            .get_connection()
            .unwrap();
        let text: String = redis::cmd("INFO").arg("everything").query(&mut c).unwrap();
        let mut out: HashMap<String, f64> = HashMap::new();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if let Some(calls) = v.strip_prefix("calls=") {
                let calls = calls.split(',').next().unwrap_or("0");
                out.insert(k.to_string(), calls.parse().unwrap_or(0.0));
            } else if let Ok(x) = v.trim().parse::<f64>() {
                out.insert(k.to_string(), x);
            }
        }
        let cpu = out.get("used_cpu_sys").copied().unwrap_or(0.0)
            + out.get("used_cpu_user").copied().unwrap_or(0.0);
        out.insert("used_cpu".into(), cpu);
        for k in ["cmdstat_exec", "cmdstat_smembers", "cmdstat_sadd"] {
            out.entry(k.into()).or_insert(0.0);
        }
        out
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
