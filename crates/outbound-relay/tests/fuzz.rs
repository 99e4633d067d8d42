//! A structured fuzz loop over the relay's request handling, against the running binary:
//! random methods, paths (the settings and telemetry paths too), headers (auth, encodings,
//! lengths, origins: repeated, not ASCII; forwarded addresses and hosts from a trusted proxy)
//! and bodies (valid events, mutated and truncated JSON, gzip of both, broken gzip, garbage,
//! and hostile shapes up to 500 KB: many keys, long and repeated keys, keys with
//! control characters, deep and wide arrays, long write keys, numbers beyond range), from a
//! fixed seed, for a time budget (`OUTBOUND_RELAY_FUZZ_SECS`, default 10; the seed from
//! `OUTBOUND_RELAY_FUZZ_SEED`, default 25). No request may crash the relay: it must still be
//! running and answering `/healthz` at the end, have logged no panic, and have written no
//! control character into a log line.
//!
//! Not libFuzzer (the relay is a binary crate, and its handling is async over a socket):
//! coverage is not guided; the generator is shaped by the API instead.

mod support;

use flate2::write::GzEncoder;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{basic, config, get, temp_dir, Receiver, Relay};

const PATHS: &[&str] = &[
    "/v1/batch",
    "/v1/import",
    "/v1/b",
    "/v1/track",
    "/v1/t",
    "/v1/identify",
    "/v1/i",
    "/v1/page",
    "/v1/p",
    "/v1/screen",
    "/v1/s",
    "/v1/group",
    "/v1/g",
    "/v1/alias",
    "/v1/a",
    "/v1/",
    "/v1/batch/",
    "/v1//batch",
    "/admin",
    "/admin/deletions",
    "/admin/sources/web/audiences/vip",
    "/admin/sources/web/audiences/%ff%00%2F",
    "/admin/sources/../audiences/x",
    "/healthz",
    "/readyz",
    "/metrics",
    "/",
    "*",
    "/%",
    "/v1/track?x=%zz",
    "/v1/projects/wk_web/settings",
    "/projects/wk_web/settings",
    "/v1/projects/wk%00web/settings",
    "/v1/projects//settings",
    "/v1/m",
    "/m",
];

const METHODS: &[&str] = &[
    "POST", "POST", "POST", "GET", "PUT", "OPTIONS", "DELETE", "HEAD", "PATCH", "BREW",
];

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn valid_body(rng: &mut fastrand::Rng) -> String {
    let kinds = [
        "track", "identify", "page", "screen", "group", "alias", "delete", "x",
    ];
    let n = rng.usize(0..5);
    let events: Vec<String> = (0..n)
        .map(|_| {
            let kind = kinds[rng.usize(..kinds.len())];
            format!(
                r#"{{"type":"{kind}","userId":"u{}","event":"E","groupId":"g","previousId":"p","properties":{{"n":{}}},"context":{{"ip":"1.2.3.4"}},"integrations":{{"All":{}}},"messageId":"m-{}","timestamp":"2026-11-21T09:30:00.123Z"}}"#,
                rng.u8(..),
                rng.i64(..),
                rng.bool(),
                rng.u32(..)
            )
        })
        .collect();
    match rng.u8(..4) {
        0 => format!(r#"{{"batch":[{}],"writeKey":"wk_web"}}"#, events.join(",")),
        1 => format!(r#"{{"batch":[{}]}}"#, events.join(",")),
        2 => events
            .first()
            .cloned()
            .unwrap_or_else(|| r#"{"userId":"u1","event":"E"}"#.into()),
        _ => r#"{"userId":"u1","members":["a","b"],"sources":["web","nope"]}"#.into(),
    }
}

fn mutate(rng: &mut fastrand::Rng, mut b: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.usize(0..8) {
        if b.is_empty() {
            b.push(rng.u8(..));
            continue;
        }
        let at = rng.usize(..b.len());
        match rng.u8(..6) {
            0 => b[at] = rng.u8(..),
            1 => b.truncate(at),
            2 => {
                let special = b"{}[]\",:\\0-e.9\x00\xff";
                b.insert(at, special[rng.usize(..special.len())]);
            }
            3 => {
                let s = b.get(at..).unwrap_or(&[]).to_vec();
                b.extend_from_slice(&s[..s.len().min(64)]);
            }
            4 => b.splice(at..at, b"\\ud800".iter().copied()).for_each(drop),
            _ => b.splice(at..at, "[".repeat(200).bytes()).for_each(drop),
        }
    }
    b
}

/// A key that needs escaping: control characters, quotes, a lone surrogate, a long one.
fn odd_key(rng: &mut fastrand::Rng) -> String {
    let parts = [
        r"\r\n",
        r"\u0000",
        r"\u001b[31m",
        r#"\""#,
        r"\\",
        r"\ud800",
        "é",
        "writeKey",
        "type",
    ];
    let mut k: String = (0..rng.usize(1..4))
        .map(|_| parts[rng.usize(..parts.len())])
        .collect();
    if rng.u8(..8) == 0 {
        k.push_str(&"k".repeat(rng.usize(1..100_000)));
    }
    k
}

/// One hostile shape, up to 500 KB: what a body may cost and what its answer and log
/// may grow to.
fn hostile_body(rng: &mut fastrand::Rng) -> Vec<u8> {
    let size = rng.usize(1_000..=500_000);
    let fill = |open: &str, item: &dyn Fn(usize) -> String, close: &str| {
        let mut out = String::from(open);
        let mut i = 0;
        while out.len() < size {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&item(i));
            i += 1;
        }
        out.push_str(close);
        out.into_bytes()
    };
    let depth = rng.usize(1..200);
    match rng.u8(..9) {
        0 => fill("{", &|i| format!("\"k{i}\":0"), "}"),
        1 => fill(
            r#"{"batch":[{"type":"track","userId":"u","event":"E","#,
            &|i| format!("\"k{i}\":0"),
            "}]}",
        ),
        2 => fill(r#"{"batch":["#, &|_| "0".into(), "]}"),
        3 => fill(r#"{"writeKey":"wk_web","batch":["#, &|_| "{}".into(), "]}"),
        4 => fill(
            r#"{"batch":["#,
            &|_| format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
            "]}",
        ),
        5 => format!(r#"{{"batch":[],"writeKey":"{}"}}"#, "w".repeat(size)).into_bytes(),
        6 => fill(
            r#"{"type":"track","userId":"u","event":"E","properties":{"x":["#,
            &|_| "1e400".into(),
            "]}}",
        ),
        7 => {
            let k = odd_key(rng);
            format!(r#"{{"writeKey":"wk_web","batch":[{{"type":"track","userId":"u","event":"E","{k}":1,"{k}":2}}],"batch":[{{"{k}":0}}]}}"#).into_bytes()
        }
        _ => fill("{", &|_| format!("\"{}\":0", "p".repeat(96)), "}"),
    }
}

fn body(rng: &mut fastrand::Rng) -> Vec<u8> {
    match rng.u8(..9) {
        0 => Vec::new(),
        1 => (0..rng.usize(0..2000)).map(|_| rng.u8(..)).collect(),
        8 => hostile_body(rng),
        2 | 3 => {
            let valid = valid_body(rng).into_bytes();
            mutate(rng, valid)
        }
        _ => valid_body(rng).into_bytes(),
    }
}

/// One request's bytes: request line, headers, body (maybe gzipped, maybe chunked, maybe
/// with a wrong length).
fn request(rng: &mut fastrand::Rng) -> Vec<u8> {
    if rng.u8(..20) == 0 {
        return (0..rng.usize(1..500)).map(|_| rng.u8(..)).collect();
    }
    let method = METHODS[rng.usize(..METHODS.len())];
    let path = PATHS[rng.usize(..PATHS.len())];
    let mut body = body(rng);
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: relay\r\n");
    match rng.u8(..6) {
        0 => {}
        1 => head.push_str("Authorization: Bearer adm\r\n"),
        2 => head.push_str(&format!("Authorization: {}\r\n", basic("wk_web"))),
        3 => head.push_str(&format!("Authorization: {}\r\n", basic("wk_nope"))),
        4 => head.push_str("Authorization: Basic %%%not-base64\r\n"),
        _ => head.push_str("Authorization: Basic \r\n"),
    }
    match rng.u8(..7) {
        0 | 1 => {
            head.push_str("Content-Encoding: gzip\r\n");
            body = gz(&body);
            if rng.bool() {
                body = mutate(rng, body);
            }
        }
        2 => head.push_str("Content-Encoding: x-gzip\r\n"),
        3 => head.push_str("Content-Encoding: br\r\n"),
        4 => head.push_str("Content-Encoding: \u{7f}\r\n"),
        _ => {}
    }
    match rng.u8(..12) {
        0..=3 => head.push_str("Origin: https://shop.example.com\r\n"),
        4 => head.push_str("Origin: https://evil.example\r\n"),
        5 => head.push_str("Origin: https://shop.example.com\r\nOrigin: https://evil.example\r\n"),
        6 => head.push_str("Origin: https://sh\u{f6}p.example.com\r\n"),
        _ => {}
    }
    if rng.u8(..6) == 0 {
        head.push_str("Content-Type: text/plain\r\nAccess-Control-Request-Headers: x-a, y\r\n");
    }
    match rng.u8(..8) {
        0 => head.push_str("X-Forwarded-For: 198.51.100.9, not-an-ip, , 10.0.0.1\r\n"),
        1 => head.push_str("X-Forwarded-Host: evil\"/x\r\nX-Forwarded-Proto: gopher\r\n"),
        2 => head.push_str("Host: \u{e9}vil.example:99999\r\n"),
        _ => {}
    }
    let chunked = rng.u8(..6) == 0;
    if chunked {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        let mut out = head.into_bytes();
        for piece in body.chunks(rng.usize(1..300)) {
            out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
        if rng.bool() {
            out.extend_from_slice(b"0\r\n\r\n");
        } else {
            out.extend_from_slice(b"zz\r\n");
        }
        return out;
    }
    // Mostly the right length; sometimes less (the rest is read as the next request) or a
    // bit more (the relay waits, then request_timeout answers).
    let len = match rng.u8(..10) {
        0 => body.len().saturating_sub(rng.usize(0..10)),
        1 => body.len() + rng.usize(1..5),
        _ => body.len(),
    };
    head.push_str(&format!("Content-Length: {len}\r\n\r\n"));
    let mut out = head.into_bytes();
    out.extend_from_slice(&body);
    out
}

#[test]
fn random_requests_never_crash_the_relay() {
    let secs: u64 = std::env::var("OUTBOUND_RELAY_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("OUTBOUND_RELAY_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(
        &[("web", "wk_web", &rx)],
        "request_timeout = 0.3\nheader_read_timeout = 0.3\ntrusted_proxies = [\"127.0.0.0/8\"]\n",
    );
    let mut relay = Relay::start(dir.path(), &cfg);
    let mut rng = fastrand::Rng::with_seed(seed);
    let started = Instant::now();
    let (mut runs, mut answered) = (0u64, 0u64);
    while started.elapsed() < Duration::from_secs(secs) {
        let bytes = request(&mut rng);
        let mut conn = TcpStream::connect(&relay.addr).expect("the relay accepts connections");
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = conn.write_all(&bytes);
        let _ = conn.shutdown(std::net::Shutdown::Write);
        let mut got = Vec::new();
        let _ = conn.read_to_end(&mut got);
        if got.starts_with(b"HTTP/1.1 ") {
            answered += 1;
        }
        runs += 1;
        if runs % 100 == 0 {
            assert!(
                relay.child.try_wait().unwrap().is_none(),
                "the relay exited after run {runs} (seed {seed}): {}",
                relay.log()
            );
        }
    }
    eprintln!(
        "fuzz: {runs} requests ({answered} answered) in {:?}, seed {seed}",
        started.elapsed()
    );
    assert!(relay.child.try_wait().unwrap().is_none(), "{}", relay.log());
    assert_eq!(get(&relay.url("/healthz"), &[]).status, 200);
    let log = relay.log();
    assert!(!log.contains("panicked"), "{log}");
    // Whatever was sent, no line carries a control character (a forged line, a terminal
    // escape).
    for line in log.lines() {
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }
    assert!(runs > 50, "only {runs} requests in {secs} s");
}
