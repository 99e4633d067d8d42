//! Hostile input, against the real binary over raw TCP (and TLS): header and body limits,
//! a gzip bomb, slow clients, the connection cap, and the HTTPS listener.

mod support;

use serde_json::json;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{basic, config, temp_dir, Receiver, Relay};

/// Writes `head` and `body` on a new connection and reads the answer's status code (0 when
/// the relay closed without one).
fn raw(relay: &Relay, head: &str, body: &[u8]) -> (u16, String) {
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // The relay may answer and close before the whole request is written.
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    read_answer(&mut conn)
}

fn read_answer(conn: &mut TcpStream) -> (u16, String) {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("no answer: {e}"),
        }
    }
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn start(extra: &str) -> (tempfile::TempDir, Receiver, Relay) {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], extra));
    (dir, rx, relay)
}

#[test]
fn a_request_head_over_max_header_bytes_is_refused_with_431() {
    let (_dir, _rx, relay) = start("max_header_bytes = 4096\n");
    let big = "x".repeat(5_000);
    let head = format!("GET /healthz HTTP/1.1\r\nHost: r\r\nX-Big: {big}\r\n\r\n");
    assert_eq!(raw(&relay, &head, b"").0, 431);
    // Under the limit is fine.
    let small = "x".repeat(3_000);
    let head = format!("GET /healthz HTTP/1.1\r\nHost: r\r\nX-Big: {small}\r\n\r\n");
    assert_eq!(raw(&relay, &head, b"").0, 200);
}

#[test]
fn more_header_fields_than_max_headers_are_refused_with_431() {
    let (_dir, _rx, relay) = start("max_headers = 20\n");
    let many: String = (0..30).map(|i| format!("X-H{i}: v\r\n")).collect();
    let head = format!("GET /healthz HTTP/1.1\r\nHost: r\r\n{many}\r\n");
    assert_eq!(raw(&relay, &head, b"").0, 431);
}

#[test]
fn a_declared_body_over_the_limit_is_refused_before_it_is_sent() {
    let (_dir, _rx, relay) = start("");
    let head = format!(
        "POST /v1/batch HTTP/1.1\r\nHost: r\r\nAuthorization: {}\r\nContent-Length: 100000000\r\n\r\n",
        basic("wk_web")
    );
    let started = Instant::now();
    // Not a byte of the body is written: the answer comes from the head alone.
    let (status, _) = raw(&relay, &head, b"");
    assert_eq!(status, 413);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_chunked_body_is_cut_off_at_the_limit_while_it_is_read() {
    let (_dir, _rx, relay) = start("");
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        conn,
        "POST /v1/batch HTTP/1.1\r\nHost: r\r\nAuthorization: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        basic("wk_web")
    )
    .unwrap();
    // Up to 50 MB in 64 KiB chunks; the relay stops reading after 500 KB.
    let chunk = vec![b' '; 65_536];
    let mut sent = 0usize;
    while sent < 50_000_000 {
        let piece = format!("{:x}\r\n", chunk.len());
        if conn.write_all(piece.as_bytes()).is_err()
            || conn.write_all(&chunk).is_err()
            || conn.write_all(b"\r\n").is_err()
        {
            break;
        }
        sent += chunk.len();
        if sent > 2_000_000 {
            // By now the answer is there; stop writing once it is readable.
            conn.set_nonblocking(true).unwrap();
            let mut peek = [0u8; 1];
            let ready = conn.peek(&mut peek).is_ok();
            conn.set_nonblocking(false).unwrap();
            if ready {
                break;
            }
        }
    }
    let (status, _) = read_answer(&mut conn);
    assert_eq!(status, 413);
    assert!(sent < 50_000_000, "the relay read 50 MB");
}

/// `n` gzip members of 1,000,000 spaces each (a valid gzip stream: members concatenate),
/// between `{"batch":[` and `]}`: `n` MB of JSON whitespace in about n KB.
fn gzip_bomb(n: usize) -> Vec<u8> {
    use flate2::write::GzEncoder;
    let gz = |data: &[u8]| {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let spaces = gz(&vec![b' '; 1_000_000]);
    let mut bomb = gz(b"{\"batch\":[");
    for _ in 0..n {
        bomb.extend_from_slice(&spaces);
    }
    bomb.extend_from_slice(&gz(b"]}"));
    bomb
}

#[test]
fn a_gzip_bomb_of_300_mb_is_refused_at_the_limit_without_the_relay_growing() {
    let (_dir, _rx, relay) = start("");
    let bomb = gzip_bomb(300);
    assert!(bomb.len() < 500_000, "{} bytes on the wire", bomb.len());
    // Warm up the same path (a gzip body refused) so the baseline has its buffers.
    let small = gzip_bomb(1);
    let head = |len: usize| {
        format!(
            "POST /v1/batch HTTP/1.1\r\nHost: r\r\nAuthorization: {}\r\n\
             Content-Encoding: gzip\r\nContent-Length: {len}\r\n\r\n",
            basic("wk_web")
        )
    };
    assert_eq!(raw(&relay, &head(small.len()), &small).0, 413);
    let (rss_before, peak_before) = relay.rss_kib();
    let started = Instant::now();
    let (status, text) = raw(&relay, &head(bomb.len()), &bomb);
    let took = started.elapsed();
    let (rss_after, peak_after) = relay.rss_kib();
    eprintln!(
        "gzip bomb: {} bytes gzip = 300,000,000 bytes of whitespace; answered {status} in {took:?}; \
         relay RSS {rss_before} KiB -> {rss_after} KiB, peak {peak_before} KiB -> {peak_after} KiB",
        bomb.len()
    );
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("over the limit"), "{text}");
    // Inflating all of it would be 300 MB; at the limit it is 500 KB plus buffers.
    assert!(
        peak_after.saturating_sub(peak_before) < 16 * 1024,
        "peak RSS grew by {} KiB",
        peak_after - peak_before
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_client_dribbling_its_headers_is_disconnected_within_header_read_timeout() {
    let (_dir, _rx, relay) = start("header_read_timeout = 2\n");
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let started = Instant::now();
    let head =
        b"POST /v1/batch HTTP/1.1\r\nHost: relay\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut next_byte = Instant::now();
    let mut i = 0;
    let cut = loop {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still connected after 20 s"
        );
        if Instant::now() >= next_byte {
            // One byte a second.
            if conn.write_all(&head[i % head.len()..][..1]).is_err() {
                break started.elapsed();
            }
            i += 1;
            next_byte += Duration::from_secs(1);
        }
        let mut buf = [0u8; 256];
        match conn.read(&mut buf) {
            // Closed, with or without an answer first.
            Ok(0) => break started.elapsed(),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break started.elapsed(),
        }
    };
    eprintln!("slowloris: {i} bytes sent, disconnected after {cut:?} (header_read_timeout 2 s)");
    assert!(cut >= Duration::from_millis(1800), "{cut:?}");
    // The timeout plus scheduling slack on a loaded machine.
    assert!(cut < Duration::from_secs(5), "{cut:?}");
}

#[test]
fn a_request_whose_body_does_not_arrive_within_request_timeout_gets_408() {
    let (_dir, _rx, relay) = start("request_timeout = 1\n");
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        conn,
        "POST /v1/batch HTTP/1.1\r\nHost: r\r\nAuthorization: {}\r\nContent-Length: 100\r\n\r\n{{\"batch\":",
        basic("wk_web")
    )
    .unwrap();
    let started = Instant::now();
    let (status, _) = read_answer(&mut conn);
    assert_eq!(status, 408);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Every answer is counted under the part of the relay that took it, a 408 too (its route
/// known before the body was awaited), with the series `/metrics` has always had.
#[test]
fn each_answer_is_counted_under_the_route_that_took_it() {
    let (_dir, _rx, relay) = start("request_timeout = 1\n");
    let track = json!({"userId": "u", "event": "E"}).to_string();
    let key = basic("wk_web");
    let origin = "Origin: https://shop.example.com\r\nAccess-Control-Request-Method: POST\r\n";
    let adm = "Authorization: Bearer adm\r\n";
    let asks: &[(&str, &str, &str, &str)] = &[
        ("GET", "/healthz", "", "healthz"),
        ("POST", "/healthz", "", "healthz"),
        ("GET", "/readyz", "", "readyz"),
        ("GET", "/metrics", "", "metrics"),
        ("GET", "/admin/sources", "", "admin"),
        ("PATCH", "/admin/sources", adm, "admin"),
        ("GET", "/admin/nothing", adm, "admin"),
        ("GET", "/console/", "", "console"),
        ("GET", "/v1/projects/wk_web/settings", "", "settings"),
        ("POST", "/v1/projects/wk_web/settings", "", "settings"),
        ("POST", "/v1/m", "", "telemetry"),
        ("GET", "/v1/m", "", "telemetry"),
        ("OPTIONS", "/v1/m", origin, "preflight"),
        ("OPTIONS", "/v1/track", origin, "preflight"),
        ("GET", "/v1/track", "", "tracking"),
        ("POST", "/v1/track", "", "tracking"),
        ("POST", "/v1/t//", "", "tracking"),
        ("GET", "/healthz/", "", "other"),
        ("GET", "/nothing", "", "other"),
    ];
    let mut want = std::collections::BTreeMap::new();
    for (method, path, headers, label) in asks {
        let headers = match headers.is_empty() {
            true => format!("Authorization: {key}\r\n"),
            false => headers.to_string(),
        };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: r\r\n{headers}\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            track.len()
        );
        let (status, text) = raw(&relay, &head, track.as_bytes());
        assert!(status != 0, "{method} {path}: {text}");
        *want.entry((*label, status)).or_insert(0u32) += 1;
    }
    // A body that never arrives: 408, counted under the route that was waiting for it.
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        conn,
        "POST /v1/batch HTTP/1.1\r\nHost: r\r\nAuthorization: {key}\r\nContent-Length: 100\r\n\r\n{{"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n"),
        "{answer}"
    );
    assert!(
        answer.contains("the request took longer than 1s"),
        "{answer}"
    );
    *want.entry(("tracking", 408)).or_insert(0) += 1;
    relay.wait_log("request timed out after 1s: answered 408");
    assert!(
        relay.log().contains("answered 408 route=\"tracking\""),
        "{}",
        relay.log()
    );

    let scrape = format!("GET /metrics HTTP/1.1\r\nHost: r\r\n{adm}Connection: close\r\n\r\n");
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.write_all(scrape.as_bytes()).unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let counted: std::collections::BTreeMap<(String, u16), u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("outbound_relay_requests_total{route=\""))
        .map(|l| {
            let (route, rest) = l.split_once("\",status=\"").unwrap();
            let (status, n) = rest.split_once("\"} ").unwrap();
            (
                (route.to_string(), status.parse().unwrap()),
                n.trim().parse().unwrap(),
            )
        })
        .collect();
    let want: std::collections::BTreeMap<(String, u16), u32> = want
        .into_iter()
        .map(|((l, s), n)| ((l.to_string(), s), n))
        .collect();
    assert_eq!(counted, want, "{text}");
    for label in ["healthz", "admin", "tracking", "preflight", "other"] {
        let series = format!("outbound_relay_request_duration_seconds_count{{route=\"{label}\"}}");
        assert!(text.contains(&series), "{series}: {text}");
    }
}

#[test]
fn connections_over_max_connections_wait_until_one_closes() {
    let (_dir, _rx, relay) = start("max_connections = 2\n");
    let first = TcpStream::connect(&relay.addr).unwrap();
    let _second = TcpStream::connect(&relay.addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(&relay.addr).unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: r\r\n\r\n")
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut buf = [0u8; 64];
    match third.read(&mut buf) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("the third connection was served at the cap: {other:?}"),
    }
    drop(first);
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(read_answer(&mut third).0, 200);
}

/// A CA, and a certificate for 127.0.0.1 signed by it: (ca_pem, cert_pem, key_pem).
fn test_pki() -> (String, String, String) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "relay test CA");
    let ca =
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let ca_pem = AsRef::<rcgen::Certificate>::as_ref(&ca).pem();
    (ca_pem, leaf.pem(), key.serialize_pem())
}

fn tls_agent(ca_pem: &str) -> ureq::Agent {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let ca = Certificate::from_pem(ca_pem.as_bytes()).unwrap().to_owned();
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .tls_config(
                TlsConfig::builder()
                    .root_certs(RootCerts::Specific(std::sync::Arc::new(vec![ca])))
                    .build(),
            )
            .build(),
    )
}

#[test]
fn the_tls_listener_serves_the_tracking_api_over_https() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let (ca, cert, key) = test_pki();
    std::fs::write(dir.path().join("cert.pem"), cert).unwrap();
    std::fs::write(dir.path().join("key.pem"), key).unwrap();
    let cfg = config(
        &[("web", "wk_web", &rx)],
        "tls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n",
    );
    let relay = Relay::start(dir.path(), &cfg);
    let agent = tls_agent(&ca);
    let url = format!("https://{}/v1/track", relay.addr);
    let body = json!({"userId": "u1", "event": "Over TLS", "messageId": "m-tls"}).to_string();
    let r = agent
        .post(&url)
        .header("Authorization", &basic("wk_web"))
        .send(body.as_bytes())
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(rx.wait_for(1)[0].json()["messageId"], "m-tls");
    // Plain HTTP on the TLS port gets no HTTP answer.
    let (status, _) = {
        let mut conn = TcpStream::connect(&relay.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
        let _ = conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: r\r\n\r\n");
        let mut got = Vec::new();
        let _ = conn.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got).to_string();
        (text.starts_with("HTTP/1.1 200"), text)
    };
    assert!(!status);
    // A client that does not trust the CA refuses the handshake.
    let untrusting = ureq::Agent::new_with_defaults();
    assert!(untrusting
        .get(&format!("https://{}/healthz", relay.addr))
        .call()
        .is_err());
}

#[test]
fn tls_cert_without_tls_key_is_a_config_error_naming_the_key() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "tls_cert = \"cert.pem\"\n");
    std::fs::write(dir.path().join("relay.toml"), cfg).unwrap();
    let out = support::relay_command()
        .arg("--config")
        .arg(dir.path().join("relay.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("relay.toml: tls_key: is needed with tls_cert"),
        "{err}"
    );
}

#[test]
fn write_keys_differing_only_in_the_last_byte_are_refused() {
    // The comparison is constant-time (auth::ct_eq, every key of every source compared);
    // timing cannot be asserted reliably here, so this checks the comparison's result on
    // the keys a timing attack would probe: a prefix, one byte off at the end, a longer one.
    let (_dir, _rx, relay) = start("");
    for key in ["wk_we", "wk_wex", "wk_webb", "Wk_web"] {
        let a = support::post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic(key))],
            br#"{"userId":"u1","event":"E"}"#,
        );
        assert_eq!(a.status, 401, "{key}");
    }
}

#[test]
fn an_idle_connection_is_closed_after_header_read_timeout() {
    // Idle connections cannot hold max_connections' permits for ever.
    let (_dir, _rx, relay) = start("header_read_timeout = 1\n");
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let n = conn.read(&mut buf).unwrap_or(0);
    let took = started.elapsed();
    assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&buf[..n]));
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "{took:?}"
    );
}

#[test]
fn bad_values_of_the_new_settings_are_config_errors_naming_the_key() {
    let cases = [
        (
            "max_header_bytes = 100",
            "relay.toml: max_header_bytes: 100 is not between 1024 and 1048576",
        ),
        (
            "max_connections = 0",
            "relay.toml: max_connections: must be at least 1",
        ),
        (
            "max_headers = 0",
            "relay.toml: max_headers: must be at least 1",
        ),
        (
            "header_read_timeout = 0",
            "relay.toml: header_read_timeout: must be more than 0",
        ),
        (
            "request_timeout = -1",
            "relay.toml: request_timeout: -1 is not a number of seconds",
        ),
        (
            "write_timeout = 0",
            "relay.toml: write_timeout: must be more than 0",
        ),
        (
            "forward_allowed_networks = [\"10.0.0.0/33\"]",
            "relay.toml: forward_allowed_networks: \"10.0.0.0/33\": the prefix length",
        ),
        (
            "log_format = \"xml\"",
            "relay.toml: log_format: \"xml\" is not \"text\" or \"json\"",
        ),
        (
            "metrics_token = \"\"",
            "relay.toml: metrics_token: must not be empty",
        ),
        (
            "tls_cert = \"missing.pem\"\ntls_key = \"missing.pem\"",
            "relay.toml: tls_cert: ",
        ),
    ];
    for (line, want) in cases {
        let dir = temp_dir();
        let path = dir.path().join("relay.toml");
        let toml = format!(
            "listen = \"127.0.0.1:0\"\n{line}\n[[sources]]\nname = \"web\"\nwrite_keys = [\"k1\"]\n\
             [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n"
        );
        std::fs::write(&path, toml).unwrap();
        let out = support::relay_command()
            .arg("--config")
            .arg(&path)
            .output()
            .unwrap();
        let err =
            String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "relay.toml");
        assert_eq!(out.status.code(), Some(2), "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
    }
}

#[test]
fn a_client_that_never_reads_its_answers_is_disconnected_after_write_timeout() {
    let (_dir, _rx, relay) = start("write_timeout = 1\n");
    let mut conn = TcpStream::connect(&relay.addr).unwrap();
    // Requests pipelined on one connection and no answer read: once the answers fill the
    // socket buffers, the relay's writes stall, then it stops reading, then this write blocks.
    // Large answers (the API's document) stall the relay's writes after a few requests, so
    // the stall does not wait on how fast a loaded machine gets through small ones.
    conn.set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let request =
        b"GET /admin/openapi.json HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer adm\r\n\r\n"
            .repeat(100);
    let started = Instant::now();
    let mut sent = 0usize;
    while conn.write_all(&request).is_ok() {
        sent += 100;
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the relay read {sent} requests without ever stalling"
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    // Now read: what was written before the relay gave up, then the end of the connection.
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0usize;
    let closed = loop {
        match conn.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break false
            }
            Err(_) => break true,
        }
    };
    eprintln!("write stall: {sent} requests sent, {got} bytes of answers read, closed: {closed}");
    assert!(
        closed,
        "the connection is still open: the relay went on answering"
    );
}

#[test]
fn an_origin_that_is_not_ascii_is_refused_not_ignored() {
    let (_dir, rx, relay) = start("");
    let body = br#"{"userId":"u1","event":"E"}"#;
    let head = format!(
        "POST /v1/track HTTP/1.1\r\nHost: r\r\nAuthorization: {}\r\nOrigin: https://sh\u{f6}p.example.com\r\n\
         Content-Length: {}\r\n\r\n",
        basic("wk_web"),
        body.len()
    );
    assert_eq!(raw(&relay, &head, body).0, 403);
    let preflight =
        "OPTIONS /v1/track HTTP/1.1\r\nHost: r\r\nOrigin: https://sh\u{f6}p.example.com\r\n\r\n";
    assert_eq!(raw(&relay, preflight, b"").0, 403);
    std::thread::sleep(Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

#[test]
fn two_origin_headers_are_refused_even_when_the_first_is_allowed() {
    let (_dir, rx, relay) = start("");
    let body = br#"{"userId":"u1","event":"E"}"#;
    let origins = "Origin: https://shop.example.com\r\nOrigin: https://evil.example\r\n";
    let head = format!(
        "POST /v1/track HTTP/1.1\r\nHost: r\r\nAuthorization: {}\r\n{origins}Content-Length: {}\r\n\r\n",
        basic("wk_web"),
        body.len()
    );
    assert_eq!(raw(&relay, &head, body).0, 403);
    let preflight = format!("OPTIONS /v1/track HTTP/1.1\r\nHost: r\r\n{origins}\r\n");
    assert_eq!(raw(&relay, &preflight, b"").0, 403);
    std::thread::sleep(Duration::from_millis(300));
    assert!(rx.hits().is_empty());
}

/// The relay on `cfg`, started with its open-files limit set to `soft`/`hard`.
fn with_open_files(dir: &std::path::Path, cfg: &str, soft: u64, hard: u64) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    std::fs::write(dir.join("relay.toml"), cfg).unwrap();
    let mut cmd = support::relay_command();
    cmd.arg("--config")
        .arg(dir.join("relay.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

#[test]
fn max_connections_over_the_hard_open_files_limit_is_refused_at_start() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "max_connections = 100\n");
    let mut child = with_open_files(dir.path(), &cfg, 512, 512);
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the relay started with 100 connections allowed and 512 open files");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("max_connections: 100 connections need 1124 open files")
            && err.contains("hard limit of 512"),
        "{err}"
    );
}

#[test]
fn a_soft_open_files_limit_under_max_connections_is_raised_at_start() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "max_connections = 100\n");
    let mut child = with_open_files(dir.path(), &cfg, 256, 4096);
    let mut addr = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut addr,
    )
    .unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let soft: Vec<&str> = line.split_whitespace().collect();
    assert!(!addr.trim().is_empty(), "the relay did not start");
    assert_eq!(soft[3], "1124", "{line}");
    assert_eq!(soft[4], "4096", "{line}");
}
