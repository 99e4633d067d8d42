//! Acknowledged = durable, shutdown, and config errors, against the real binary.

mod support;

use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;
use support::{basic, config, post, temp_dir, Receiver, Relay};

fn batch(from: usize, n: usize) -> String {
    let events: Vec<Value> = (from..from + n)
        .map(|i| json!({"type": "track", "userId": "u1", "event": "E", "messageId": format!("m-{i}")}))
        .collect();
    json!({ "batch": events }).to_string()
}

fn ids(rx: &Receiver) -> HashSet<String> {
    rx.bodies()
        .iter()
        .map(|b| b["messageId"].as_str().unwrap().to_string())
        .collect()
}

fn wait_ids(rx: &Receiver, n: usize) -> HashSet<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = ids(rx);
        if got.len() >= n || std::time::Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn acknowledged_events_survive_a_sigkill_right_after_the_200() {
    let dir = temp_dir();
    let rx = Receiver::start();
    // The receiver refuses everything: nothing can leave before the kill.
    rx.status.store(503, SeqCst);
    let cfg = config(&[("web", "wk_web", &rx)], "");
    let relay = Relay::start(dir.path(), &cfg);
    let auth = basic("wk_web");
    let mut acked = 0;
    for round in 0..5 {
        let a = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &auth)],
            batch(round * 100, 100).as_bytes(),
        );
        assert_eq!(a.status, 200);
        acked += 100;
    }
    // At once after the last 200: no flush, no goodbye.
    relay.kill();
    rx.status.store(200, SeqCst);
    let _relay = Relay::start(dir.path(), &cfg);
    let got = wait_ids(&rx, acked);
    let want: HashSet<String> = (0..acked).map(|i| format!("m-{i}")).collect();
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(
        missing.is_empty(),
        "lost {} acknowledged events",
        missing.len()
    );
}

#[test]
fn sigterm_exits_0_and_leaves_undelivered_events_for_the_next_start() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, SeqCst);
    let cfg = config(&[("web", "wk_web", &rx)], "close_timeout = 0.5\n");
    let mut relay = Relay::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        batch(0, 10).as_bytes(),
    );
    assert_eq!(a.status, 200);
    let started = std::time::Instant::now();
    relay.signal(libc::SIGTERM);
    let status = relay.wait_exit(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{}", relay.stderr.lock().unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    rx.status.store(200, SeqCst);
    let _relay = Relay::start(dir.path(), &cfg);
    assert_eq!(wait_ids(&rx, 10).len(), 10);
}

#[test]
fn a_request_in_flight_at_sigterm_is_finished_and_acknowledged() {
    use std::io::{Read, Write};
    let dir = temp_dir();
    let rx = Receiver::start();
    let mut relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let body = batch(0, 3);
    let (head, tail) = body.as_bytes().split_at(body.len() / 2);
    let mut conn = std::net::TcpStream::connect(&relay.addr).unwrap();
    write!(
        conn,
        "POST /v1/batch HTTP/1.1\r\nHost: relay\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        basic("wk_web"),
        body.len()
    )
    .unwrap();
    conn.write_all(head).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    relay.signal(libc::SIGTERM);
    // New connections are refused once the relay stops accepting (polled: a loaded machine
    // may take a moment to deliver the signal).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&relay.addr).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "still accepting after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    conn.write_all(tail).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(relay.wait_exit(Duration::from_secs(15)).code(), Some(0));
    assert_eq!(wait_ids(&rx, 3).len(), 3);
}

#[test]
fn sigint_exits_0_too() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let mut relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    relay.signal(libc::SIGINT);
    assert_eq!(relay.wait_exit(Duration::from_secs(15)).code(), Some(0));
}

/// Runs the relay on `toml` and returns its exit code and stderr.
fn refused(toml: &str) -> (Option<i32>, String) {
    let dir = temp_dir();
    let path = dir.path().join("relay.toml");
    std::fs::write(&path, toml).unwrap();
    let out = support::relay_command()
        .arg("--config")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "no address is printed for a bad config"
    );
    let err =
        String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "relay.toml");
    (out.status.code(), err)
}

const GOOD_SOURCE: &str = "[[sources]]\nname = \"web\"\nwrite_keys = [\"k1\"]\n\
     [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n";

#[test]
fn a_bad_webhook_url_names_the_file_the_source_and_the_key() {
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n{GOOD_SOURCE}\
         [[sources]]\nname = \"ios\"\nwrite_keys = [\"k2\"]\n\
         [[sources.webhooks]]\nurl = \"ftp://x/in\"\n"
    );
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(
        err.starts_with("relay.toml: sources[1].webhooks[0].url: "),
        "{err}"
    );
}

#[test]
fn an_unknown_key_is_an_error_naming_it() {
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n{}",
        GOOD_SOURCE.replace(
            "[[sources.webhooks]]",
            "colour = \"red\"\n[[sources.webhooks]]"
        )
    );
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(err.starts_with("relay.toml: sources[0].colour: "), "{err}");
    assert!(err.contains("unknown field"), "{err}");
}

#[test]
fn a_value_of_the_wrong_type_names_its_key() {
    let toml = format!("listen = \"127.0.0.1:0\"\ntimeout = \"5s\"\n{GOOD_SOURCE}");
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(err.starts_with("relay.toml: timeout: "), "{err}");
}

#[test]
fn a_setting_the_core_refuses_is_reported_under_its_key() {
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n{}",
        GOOD_SOURCE.replace("[[sources.webhooks]]", "flush_at = 0\n[[sources.webhooks]]")
    );
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(
        err.starts_with("relay.toml: sources[0].flush_at: "),
        "{err}"
    );
    let six: String = (0..6)
        .map(|i| format!("[[sources.webhooks]]\nurl = \"https://h{i}.example.com/\"\n"))
        .collect();
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n[[sources]]\nname = \"web\"\nwrite_keys = [\"k\"]\n{six}"
    );
    let (_, err) = refused(&toml);
    assert!(
        err.starts_with("relay.toml: sources[0].webhooks: "),
        "{err}"
    );
}

#[test]
fn duplicate_source_names_and_shared_write_keys_are_errors() {
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n{GOOD_SOURCE}{}",
        GOOD_SOURCE.replace("k1", "k9")
    );
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(err.starts_with("relay.toml: sources[1].name: "), "{err}");
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n{GOOD_SOURCE}{}",
        GOOD_SOURCE.replace("\"web\"", "\"ios\"")
    );
    let (_, err) = refused(&toml);
    assert!(
        err.starts_with("relay.toml: sources[1].write_keys[0]: "),
        "{err}"
    );
    assert!(err.contains("\"web\""), "{err}");
}

#[test]
fn a_private_webhook_address_is_refused_at_delivery_unless_allowed() {
    // block_private_networks is on by default: a loopback receiver gets nothing.
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "").replace(
        "allowed_networks = [\"127.0.0.0/8\"]",
        "allowed_networks = []",
    );
    let relay = Relay::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        batch(0, 1).as_bytes(),
    );
    assert_eq!(a.status, 200);
    std::thread::sleep(Duration::from_millis(500));
    assert!(rx.hits().is_empty());
}

#[test]
fn a_private_forward_endpoint_is_refused_at_delivery_unless_allowed() {
    // The guard covers a forward's endpoint too (it carries the forward's write key), with
    // its own exceptions: the webhooks' allowed_networks do not open it.
    for (allowed, delivered) in [("[]", false), ("[\"127.0.0.0/8\"]", true)] {
        let dir = temp_dir();
        let (hooks, segment) = (Receiver::start(), Receiver::start());
        let endpoint = segment.url.trim_end_matches("/hook").to_string();
        let cfg = config(&[("web", "wk_web", &hooks)], "flush_at = 1")
            .replace(
                "forward_allowed_networks = [\"127.0.0.0/8\"]",
                &format!("forward_allowed_networks = {allowed}"),
            )
            .replace(
                "[[sources.webhooks]]",
                &format!(
                    "[sources.forward]\nendpoint = \"{endpoint}\"\nwrite_key = \"fw_key\"\n[[sources.webhooks]]"
                ),
            );
        let relay = Relay::start(dir.path(), &cfg);
        let a = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic("wk_web"))],
            batch(0, 1).as_bytes(),
        );
        assert_eq!(a.status, 200);
        // The webhook (allowed) gets it either way.
        assert_eq!(hooks.wait_for(1)[0].json()["messageId"], "m-0");
        if delivered {
            assert_eq!(segment.wait_for(1)[0].path, "/v1/batch");
        } else {
            relay.wait_log("blocked: 127.0.0.1 is a loopback address");
            assert!(segment.hits().is_empty(), "{allowed}");
        }
    }
}

#[test]
fn a_bad_top_level_value_is_reported_at_the_top_level() {
    let toml = format!("listen = \"127.0.0.1:0\"\nflush_at = 0\n{GOOD_SOURCE}");
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(err.starts_with("relay.toml: flush_at: "), "{err}");
    let toml = format!("listen = \"127.0.0.1:0\"\ntimeout = -1\n{GOOD_SOURCE}");
    let (_, err) = refused(&toml);
    assert!(err.starts_with("relay.toml: timeout: "), "{err}");
}

#[test]
fn max_batch_messages_below_flush_at_is_refused_under_its_key() {
    let toml =
        format!("listen = \"127.0.0.1:0\"\nflush_at = 50\nmax_batch_messages = 10\n{GOOD_SOURCE}");
    let (code, err) = refused(&toml);
    assert_ne!(code, Some(0));
    assert!(err.starts_with("relay.toml: max_batch_messages: "), "{err}");
}

#[test]
fn a_source_value_overrides_the_top_level_one() {
    // The top level's flush_at = 0 would be refused by the core; the source's own wins.
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "flush_at = 0").replace(
        "shared_secret = \"s3cret\"\n",
        "shared_secret = \"s3cret\"\nflush_at = 1\n",
    );
    let relay = Relay::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        batch(0, 1).as_bytes(),
    );
    assert_eq!(a.status, 200);
}

#[test]
fn a_source_with_a_forward_sends_batches_to_its_endpoint_with_its_write_key() {
    let dir = temp_dir();
    let (hooks, segment) = (Receiver::start(), Receiver::start());
    let endpoint = segment.url.trim_end_matches("/hook").to_string();
    let cfg = config(&[("web", "wk_web", &hooks)], "flush_at = 1").replace(
        "[[sources.webhooks]]",
        &format!(
            "[sources.forward]\nendpoint = \"{endpoint}\"\nwrite_key = \"fw_key\"\n[[sources.webhooks]]"
        ),
    );
    let relay = Relay::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        batch(0, 1).as_bytes(),
    );
    assert_eq!(a.status, 200);
    let hit = segment.wait_for(1).remove(0);
    assert_eq!(hit.path, "/v1/batch");
    assert_eq!(hit.header("Authorization"), Some(basic("fw_key").as_str()));
    assert_eq!(hit.json()["batch"][0]["messageId"], "m-0");
    assert_eq!(hooks.wait_for(1)[0].json()["messageId"], "m-0");
}

#[test]
fn io_threads_and_memory_window_out_of_range_are_refused_under_their_keys() {
    for (setting, key) in [
        ("io_threads = 0", "io_threads"),
        ("io_threads = 257", "io_threads"),
        ("memory_window = 0", "memory_window"),
        ("memory_window_bytes = 0", "memory_window_bytes"),
        ("spool_max_total_bytes = 0", "spool_max_total_bytes"),
    ] {
        let toml = format!("listen = \"127.0.0.1:0\"\n{setting}\n{GOOD_SOURCE}");
        let (code, err) = refused(&toml);
        assert_eq!(code, Some(2), "{setting}: {err}");
        assert!(err.starts_with(&format!("relay.toml: {key}: ")), "{err}");
    }
}

#[test]
fn io_threads_sets_the_engines_threads_and_a_small_memory_window_still_delivers_everything() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(
        &[("web", "wk_web", &rx)],
        "io_threads = 7\nmemory_window = 10\nmemory_window_bytes = 2048",
    );
    let relay = Relay::start(dir.path(), &cfg);
    // 500 events: fifty times the window (and many times its bytes), the rest of the
    // backlog read back from the spool.
    for from in (0..500).step_by(100) {
        let a = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic("wk_web"))],
            batch(from, 100).as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", a.body);
    }
    assert_eq!(wait_ids(&rx, 500).len(), 500);
    let io = std::fs::read_dir(format!("/proc/{}/task", relay.child.id()))
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "outbound-io")
        })
        .count();
    // The runtime's 7 workers, more than the default ever is (its blocking threads, for name
    // lookups, share the name: at most 2 more, none with literal addresses).
    assert!((7..=9).contains(&io), "{io} outbound-io threads");
}
