//! Hostile bodies, against the real binary: what a body of 500 KB may cost the
//! relay in CPU before and after the write key, what its answer and its log may grow to, and
//! what four at once may take in memory. CPU is the relay's request threads' own time
//! (/proc/PID/task/*/schedstat), far less sensitive to the machine's load than wall time.
//! bench/relay/hostile_cost.py measures every shape on the release build.

mod support;

use flate2::write::GzEncoder;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{basic, config, get, temp_dir, Receiver, Relay};

/// CPU a hostile body may cost on this (debug) build: the linear work takes 20-40 ms here;
/// the quadratic parse it replaced took seconds even in a release build.
const CPU_BOUND: Duration = Duration::from_millis(400);

fn start(extra: &str) -> (tempfile::TempDir, Receiver, Relay) {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], extra));
    (dir, rx, relay)
}

/// POSTs `body` on a new connection (closed after the answer); the status and the whole
/// answer, head and body.
fn send(relay: &Relay, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: r\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let status = String::from_utf8_lossy(&answer[..answer.len().min(12)])
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

/// The JSON body of an answer.
fn body_json(answer: &[u8]) -> Value {
    let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    serde_json::from_slice(&answer[at..]).unwrap()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `prefix`, then `item(i)` comma-separated while the whole fits in 500,000 bytes, then
/// `suffix`.
fn fill(prefix: &str, item: impl Fn(usize) -> String, suffix: &str) -> Vec<u8> {
    let mut out = prefix.to_string();
    for i in 0.. {
        let piece = item(i);
        if out.len() + piece.len() + 1 + suffix.len() > 500_000 {
            break;
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&piece);
    }
    out.push_str(suffix);
    out.into_bytes()
}

/// `{"aaa":0,"aab":0,...}`: 62,498 distinct short keys.
fn many_keys() -> Vec<u8> {
    let key = |mut i: usize| {
        let mut k = Vec::new();
        for _ in 0..3 {
            k.push(b'a' + (i % 26) as u8);
            i /= 26;
        }
        format!("\"{}{i}\":0", String::from_utf8(k).unwrap())
    };
    fill("{", key, "}")
}

/// `{"batch":[0,0,...]}`: 249,995 elements that are not events.
fn zeros() -> Vec<u8> {
    fill("{\"batch\":[", |_| "0".into(), "]}")
}

#[test]
fn a_body_of_62_thousand_keys_costs_little_cpu_before_the_write_key() {
    let (_dir, _rx, relay) = start("");
    let body = many_keys();
    let mut trailing = body.clone();
    trailing.insert(body.len() - 1, b',');
    for (path, body, want) in [
        ("/v1/track", &body, 401),
        ("/v1/batch", &body, 401),
        // Not JSON: once parsed twice, each pass quadratic (5.6 s in a release build).
        ("/v1/batch", &trailing, 400),
    ] {
        let before = relay.io_cpu();
        let (status, _) = send(&relay, path, &[], body);
        let cpu = relay.io_cpu_since(&before);
        eprintln!("{path} {} bytes: {status} for {cpu:?} of CPU", body.len());
        assert_eq!(status, want, "{path}");
        assert!(cpu < CPU_BOUND, "{path}: {cpu:?}");
    }
}

#[test]
fn a_500_kb_write_key_is_refused_with_little_cpu_among_2000_keys() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let keys: Vec<String> = (0..2_000)
        .map(|i| format!("\"wk_{i:04}_{}\"", "k".repeat(24)))
        .collect();
    let cfg = config(&[("web", "wk_web", &rx)], "").replace(
        "write_keys = [\"wk_web\"]",
        &format!("write_keys = [\"wk_web\", {}]", keys.join(", ")),
    );
    let relay = Relay::start(dir.path(), &cfg);
    let body = format!("{{\"batch\":[],\"writeKey\":\"{}\"}}", "w".repeat(499_960));
    let before = relay.io_cpu();
    let (status, _) = send(&relay, "/v1/batch", &[], body.as_bytes());
    let cpu = relay.io_cpu_since(&before);
    eprintln!(
        "a {} byte writeKey against 2,001 keys: {status} for {cpu:?} of CPU",
        499_960
    );
    assert_eq!(status, 401);
    assert!(cpu < CPU_BOUND, "{cpu:?}");
    // The same lookup finds a real key among them.
    let ok = format!("{{\"batch\":[],\"writeKey\":{}}}", keys[1_999]);
    assert_eq!(send(&relay, "/v1/batch", &[], ok.as_bytes()).0, 200);
}

#[test]
fn healthz_is_answered_while_four_hostile_bodies_are_read() {
    let (_dir, _rx, relay) = start("");
    let body = many_keys();
    let auth = basic("wk_web");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let worst = std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    send(&relay, "/v1/track", &[("Authorization", &auth)], &body);
                }
            });
        }
        std::thread::sleep(Duration::from_millis(300));
        let mut worst = Duration::ZERO;
        for _ in 0..20 {
            let t = Instant::now();
            assert_eq!(get(&relay.url("/healthz"), &[]).status, 200);
            worst = worst.max(t.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        worst
    });
    eprintln!("/healthz beside four hostile bodies: slowest of 20 answers {worst:?}");
    assert!(worst < Duration::from_millis(500), "{worst:?}");
}

#[test]
fn a_batch_of_a_quarter_million_zeros_is_answered_and_logged_in_a_few_lines() {
    let (_dir, _rx, relay) = start("");
    // 500 KB of JSON, a few hundred bytes on the wire, sent with a browser's (public) key.
    let raw = zeros();
    let n = raw.iter().filter(|b| **b == b'0').count();
    let body = gz(&raw);
    let (status, answer) = send(
        &relay,
        "/v1/batch",
        &[
            ("Authorization", &basic("wk_web")),
            ("Content-Encoding", "gzip"),
        ],
        &body,
    );
    eprintln!(
        "{n} zeros in {} bytes of gzip: {status}, answered in {} bytes",
        body.len(),
        answer.len()
    );
    assert_eq!(status, 200);
    assert!(answer.len() < 4_096, "{} bytes", answer.len());
    let a = body_json(&answer);
    assert_eq!(a["accepted"], 0);
    assert_eq!(a["rejectedCount"], n);
    let named = a["rejected"].as_array().unwrap();
    assert_eq!(named.len(), 20);
    assert_eq!(
        named[0],
        json!({"index": 0, "reason": "an event must be a JSON object"})
    );
    assert_eq!(named[19]["index"], 19);
    // One line for the request, naming a few and counting each kind.
    let log = relay.wait_log("events rejected");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("rejected")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains(&format!("rejected={n}"))
            && lines[0].contains("not_an_object=2500")
            && lines[0].contains(&format!("batch_limit={}", n - 2_500)),
        "{}",
        lines[0]
    );
}

#[test]
fn four_amplifying_requests_at_once_keep_the_relay_within_64_mib_of_idle() {
    let (_dir, _rx, relay) = start("");
    let idle = relay.rss_kib().0;
    let auth = basic("wk_web");
    let zeros = gz(&zeros());
    let keys = many_keys();
    for (name, body, gzip) in [("zeros", &zeros, true), ("62,498 keys", &keys, false)] {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let mut headers = vec![("Authorization", auth.as_str())];
                    if gzip {
                        headers.push(("Content-Encoding", "gzip"));
                    }
                    let (status, _) = send(&relay, "/v1/batch", &headers, body);
                    assert_ne!(status, 0, "{name}");
                });
            }
        });
    }
    let (now, peak) = relay.rss_kib();
    eprintln!("RSS: idle {idle} KiB, peak {peak} KiB, now {now} KiB");
    assert!(
        peak.saturating_sub(idle) < 64 * 1024,
        "peak {peak} KiB, idle {idle} KiB"
    );
}

#[test]
fn events_past_2500_in_a_batch_are_rejected_by_index_unread() {
    let (_dir, rx, relay) = start("");
    let events: Vec<Value> = (0..2_503)
        .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("m-{i}")}))
        .collect();
    let body = json!({ "batch": events }).to_string();
    let (status, answer) = send(
        &relay,
        "/v1/batch",
        &[("Authorization", &basic("wk_web"))],
        body.as_bytes(),
    );
    assert_eq!(status, 200);
    let a = body_json(&answer);
    assert_eq!(a["accepted"], 2_500);
    assert_eq!(a["rejectedCount"], 3);
    assert_eq!(
        a["rejected"][0],
        json!({"index": 2500, "reason": "over Segment's limit of 2500 events in a batch"})
    );
    assert_eq!(rx.wait_for(2_500).len(), 2_500);
}
