//! Operations, against the real binary: `/healthz`, `/readyz`, `/metrics`, log formats,
//! secrets kept out of logs and metrics, and SIGHUP reloads.

mod support;

use serde_json::{json, Value};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};
use support::{basic, config, get, post, temp_dir, Receiver, Relay};

fn track(id: &str) -> String {
    json!({"userId": "u1", "event": "E", "messageId": id}).to_string()
}

/// The value of the sample `name{labels}` (labels as written, in order) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

fn scrape(relay: &Relay, token: &str) -> String {
    let a = get(
        &relay.url("/metrics"),
        &[("Authorization", &format!("Bearer {token}"))],
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.body
}

/// Scrapes until `series` reaches `want` (outcomes arrive after the answer).
fn wait_sample(relay: &Relay, token: &str, series: &str, want: f64) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape(relay, token);
        if sample(&text, series) == Some(want) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{series} never reached {want}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn healthz_answers_200_without_a_token() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let a = get(&relay.url("/healthz"), &[]);
    assert_eq!(a.status, 200);
    assert_eq!(a.json()["status"], "alive");
}

#[test]
fn readyz_answers_200_while_the_spool_is_writable() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let a = get(&relay.url("/readyz"), &[]);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["spool"], "writable");
}

#[test]
fn readyz_answers_503_when_the_spool_cannot_be_written() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    // The tests run as root, so permissions would not stop a write: put a file where the
    // spool directory was (the running client keeps its open files).
    let spool = dir.path().join("data/spool");
    std::fs::rename(&spool, dir.path().join("data/spool-moved")).unwrap();
    std::fs::write(&spool, b"not a directory").unwrap();
    let a = get(&relay.url("/readyz"), &[]);
    assert_eq!(a.status, 503, "{}", a.body);
    assert_eq!(a.json()["check"], "spool_dir", "{}", a.body);
    let reason = a.json()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("not writable"), "{reason}");
    // No path in an answer open to anyone: the log has it.
    assert!(!reason.contains("data/spool"), "{reason}");
    relay.wait_log("data/spool is not writable");
    // A balancer probes often: one line a window, not one a probe.
    for _ in 0..50 {
        assert_eq!(get(&relay.url("/readyz"), &[]).status, 503);
    }
    let log = relay.log();
    assert_eq!(log.matches("is not writable").count(), 1, "{log}");
    std::fs::remove_file(&spool).unwrap();
    std::fs::rename(dir.path().join("data/spool-moved"), &spool).unwrap();
    assert_eq!(get(&relay.url("/readyz"), &[]).status, 200);
}

#[test]
fn metrics_need_the_metrics_or_the_admin_token() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = config(&[("web", "wk_web", &rx)], "metrics_token = \"prom\"\n");
    let relay = Relay::start(dir.path(), &cfg);
    assert_eq!(get(&relay.url("/metrics"), &[]).status, 401);
    let wrong = get(&relay.url("/metrics"), &[("Authorization", "Bearer nope")]);
    assert_eq!(wrong.status, 401);
    let a = get(&relay.url("/metrics"), &[("Authorization", "Bearer prom")]);
    assert_eq!(a.status, 200);
    assert!(
        a.header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text; version=1.0.0"),
        "{:?}",
        a.header("content-type")
    );
    assert!(a.body.trim_end().ends_with("# EOF"), "{}", a.body);
    assert!(scrape(&relay, "prom").contains("outbound_relay_requests_in_flight"));
    assert!(scrape(&relay, "adm").contains("outbound_relay_requests_in_flight"));
}

#[test]
fn metrics_count_events_accepted_and_rejected_per_source_and_reason() {
    let dir = temp_dir();
    let (rx_web, rx_app) = (Receiver::start(), Receiver::start());
    let cfg = config(
        &[("web", "wk_web", &rx_web), ("app", "wk_app", &rx_app)],
        "",
    );
    let relay = Relay::start(dir.path(), &cfg);
    let batch = json!({"batch": [
        {"type": "track", "userId": "u1", "event": "E"},
        {"type": "track", "userId": "u1", "event": "E"},
        {"type": "track", "event": "no user"},
        {"type": "track", "userId": "u1"},
        "not an object",
    ]});
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        batch.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_app"))],
        track("m-1").as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let bad = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("nope"))],
        b"{}",
    );
    assert_eq!(bad.status, 401);
    let text = scrape(&relay, "adm");
    let at = |s: &str| sample(&text, s);
    assert_eq!(
        at("outbound_relay_events_accepted_total{source=\"web\"}"),
        Some(2.0)
    );
    assert_eq!(
        at("outbound_relay_events_accepted_total{source=\"app\"}"),
        Some(1.0)
    );
    // The core reports the missing userId/anonymousId and the missing event as missing
    // fields; the string as not an object.
    assert_eq!(
        at("outbound_relay_events_rejected_total{source=\"web\",reason=\"missing_field\"}"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        at("outbound_relay_events_rejected_total{source=\"web\",reason=\"not_an_object\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        at("outbound_relay_requests_total{route=\"tracking\",status=\"401\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        at("outbound_relay_requests_total{route=\"tracking\",status=\"200\"}"),
        Some(2.0),
        "{text}"
    );
}

/// A batch refused whole for want of room (429; a memory-only queue) counts each of its events as rejected.
#[test]
fn a_batch_refused_for_room_counts_each_event_rejected() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, SeqCst); // keeps the first batch queued
    let relay = Relay::start(
        dir.path(),
        &config(
            &[("web", "wk_web", &rx)],
            "spool = false\nmax_queue_size = 5",
        ),
    );
    let send = |tag: &str| {
        let events: Vec<Value> = (0..3)
            .map(|i| json!({"type": "track", "userId": "u1", "event": "E", "messageId": format!("{tag}-{i}")}))
            .collect();
        post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic("wk_web"))],
            json!({ "batch": events }).to_string().as_bytes(),
        )
    };
    assert_eq!(send("a").status, 200);
    let full = send("b");
    assert_eq!(full.status, 429, "room for 2 of 3: {}", full.body);
    let text = scrape(&relay, "adm");
    assert_eq!(
        sample(
            &text,
            "outbound_relay_events_rejected_total{source=\"web\",reason=\"queue_full\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "outbound_relay_events_accepted_total{source=\"web\"}"
        ),
        Some(3.0),
        "{text}"
    );
}

#[test]
fn metrics_count_outcomes_per_source_and_destination() {
    let dir = temp_dir();
    let (ok, refusing) = (Receiver::start(), Receiver::start());
    refusing.status.store(400, SeqCst);
    let cfg = config(&[("web", "wk_web", &ok), ("app", "wk_app", &refusing)], "");
    let relay = Relay::start(dir.path(), &cfg);
    for (key, id) in [("wk_web", "m-1"), ("wk_web", "m-2"), ("wk_app", "m-3")] {
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic(key))],
            track(id).as_bytes(),
        );
        assert_eq!(a.status, 200);
    }
    wait_sample(
        &relay,
        "adm",
        "outbound_relay_outcomes_total{source=\"web\",destination=\"all\",outcome=\"delivered\"}",
        2.0,
    );
    wait_sample(
        &relay,
        "adm",
        "outbound_relay_outcomes_total{source=\"app\",destination=\"webhooks\",outcome=\"failed\"}",
        1.0,
    );
}

#[test]
fn metrics_show_the_dead_letters_each_source_keeps() {
    let dir = temp_dir();
    let (ok, gone, quiet) = (Receiver::start(), Receiver::start(), Receiver::start());
    gone.status.store(410, SeqCst); // refused for good: dead letters (on by default)
    quiet.status.store(400, SeqCst);
    let cfg = config(
        &[
            ("web", "wk_web", &ok),
            ("gone", "wk_gone", &gone),
            ("quiet", "wk_quiet", &quiet),
        ],
        "",
    )
    .replace(
        "name = \"quiet\"\n",
        "name = \"quiet\"\ndead_letters = false\n",
    );
    let relay = Relay::start(dir.path(), &cfg);
    let send = |key: &str, id: &str| {
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic(key))],
            track(id).as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", a.body);
    };
    for i in 0..3 {
        send("wk_gone", &format!("g-{i}"));
    }
    send("wk_quiet", "q-1");
    send("wk_web", "w-1");
    let text = wait_sample(
        &relay,
        "adm",
        "outbound_relay_dead_letters{source=\"gone\"}",
        3.0,
    );
    assert!(
        text.contains("# TYPE outbound_relay_dead_letters gauge"),
        "{text}"
    );
    let bytes = sample(&text, "outbound_relay_dead_letter_bytes{source=\"gone\"}").unwrap();
    assert!(bytes > 0.0, "{text}");
    // Every letter was written: none held in memory (the count is the core's,
    // `Engine::dead_letters_unwritten`, tested with a refusing Redis there).
    assert_eq!(
        sample(&text, "outbound_relay_dead_letters_unwritten"),
        Some(0.0),
        "{text}"
    );
    // A source that keeps them and has none: 0; one that keeps none: not there.
    assert_eq!(
        sample(&text, "outbound_relay_dead_letters{source=\"web\"}"),
        Some(0.0),
        "{text}"
    );
    quiet.wait_for(1);
    let text = scrape(&relay, "adm");
    for name in ["dead_letters", "dead_letter_bytes"] {
        let series = format!("outbound_relay_{name}{{source=\"quiet\"}}");
        assert_eq!(sample(&text, &series), None, "{text}");
    }
    assert!(
        sample(&text, "outbound_relay_queue_depth{source=\"quiet\"}").is_some(),
        "{text}"
    );
    // One discarded through the admin API: the gauge follows at the next scrape.
    let page = get(
        &relay.url("/admin/sources/gone/dead-letters?limit=1"),
        &[("Authorization", "Bearer adm")],
    )
    .json();
    let id = page["dead_letters"][0]["message_id"]
        .as_str()
        .unwrap()
        .to_string();
    let url = relay.url(&format!("/admin/sources/gone/dead-letters/{id}"));
    assert_eq!(
        support::delete(&url, &[("Authorization", "Bearer adm")]).status,
        200
    );
    wait_sample(
        &relay,
        "adm",
        "outbound_relay_dead_letters{source=\"gone\"}",
        2.0,
    );
}

#[test]
fn metrics_show_queue_depth_spool_size_in_flight_and_latency() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(503, SeqCst); // retried: the events stay queued and spooled
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let events: Vec<Value> = (0..50)
        .map(|i| json!({"type": "track", "userId": "u1", "event": "E", "messageId": format!("m-{i}")}))
        .collect();
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        json!({ "batch": events }).to_string().as_bytes(),
    );
    assert_eq!(a.status, 200);
    let text = scrape(&relay, "adm");
    let queued = sample(&text, "outbound_relay_queue_depth{source=\"web\"}").unwrap();
    assert!(queued > 0.0, "{text}");
    let spool = sample(&text, "outbound_relay_spool_bytes{source=\"web\"}").unwrap();
    assert!(spool > 0.0, "{text}");
    // The scrape itself is the request in flight.
    assert_eq!(
        sample(&text, "outbound_relay_requests_in_flight"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "outbound_relay_request_duration_seconds_count{route=\"tracking\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        text.contains(
            "outbound_relay_request_duration_seconds_bucket{le=\"0.005\",route=\"tracking\"}"
        ),
        "{text}"
    );
}

#[test]
fn json_log_format_writes_one_json_object_per_line() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start_with(
        dir.path(),
        &config(&[("web", "wk_web", &rx)], ""),
        &["--log-format", "json"],
        &[],
    );
    // One line worth logging: an unknown write key.
    post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("nope"))],
        b"{}",
    );
    let log = relay.wait_log("unknown write key");
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 2, "{log}");
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string() && v["message"].is_string(), "{line}");
    }
}

/// A client refused at every request writes one line every 10 s per kind and source, not one
/// a request (a revoked key in a million apps, a hostile sender); the metrics count them all,
/// and the next line says how many were held back.
#[test]
fn refusals_repeated_by_a_client_are_logged_once_every_ten_seconds() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(
        dir.path(),
        &config(&[("web", "wk_web", &rx)], "metrics_token = \"m\"\n"),
    );
    let bad_event = json!({"batch": [{"type": "track", "event": "E"}]}).to_string(); // no user
    for _ in 0..50 {
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic("nope"))],
            b"{}",
        );
        assert_eq!(a.status, 401);
        let b = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic("wk_web"))],
            bad_event.as_bytes(),
        );
        assert_eq!(b.status, 200, "{}", b.body);
    }
    relay.wait_log("events rejected");
    let log = relay.log();
    assert_eq!(
        log.matches("request refused: unknown write key").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("events rejected").count(), 1, "{log}");
    // Every one counted.
    let text = get(&relay.url("/metrics"), &[("Authorization", "Bearer m")]).body;
    let line = (text.lines())
        .find(|l| l.starts_with("outbound_relay_events_rejected_total{source=\"web\""))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with(" 50"), "{line}");
}

/// Refused admin and metrics requests go through the same rule: one line a window per kind,
/// with `held_back`, and at most the first 100 bytes of a path (a 6 KB path would otherwise
/// write 6 KB of log per request).
#[test]
fn admin_and_metrics_refusals_are_logged_once_a_window_with_the_path_cut() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(
        dir.path(),
        &config(&[("web", "wk_web", &rx)], "metrics_token = \"m\"\n"),
    );
    // Within the request head's limit (a longer head is a 431 before any route).
    let long = format!("/admin/sources/{}", "x".repeat(6 * 1024));
    for _ in 0..50 {
        let a = get(&relay.url(&long), &[("Authorization", "Bearer nope")]);
        assert_eq!(a.status, 401);
        let m = get(&relay.url("/metrics"), &[("Authorization", "Bearer nope")]);
        assert_eq!(m.status, 401);
    }
    relay.wait_log("admin request refused");
    relay.wait_log("metrics");
    let log = relay.log();
    let admin: Vec<&str> = (log.lines())
        .filter(|l| l.contains("admin request refused"))
        .collect();
    assert_eq!(admin.len(), 1, "{log}");
    assert!(
        admin[0].contains(&format!("/admin/sources/{}", "x".repeat(85))),
        "{}",
        admin[0]
    );
    assert!(
        !admin[0].contains(&"x".repeat(101)),
        "the path is cut: {}",
        admin[0]
    );
    assert!(admin[0].len() < 400, "{}", admin[0]);
    let metrics = log.lines().filter(|l| l.contains("/metrics")).count();
    assert_eq!(metrics, 1, "{log}");
}

/// A name carrying CR LF, ESC and NUL, which the core names in its reason (an integration's
/// name whose value is not true, false or an object): once written raw into the text log,
/// where it forged a whole line.
const FORGERY: &str =
    r"x\r\n2026-11-27T10:00:00.000000Z  WARN outbound_relay: admin token accepted\u001b[2K\u0000";

#[test]
fn a_client_cannot_forge_a_text_log_line() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let body = format!(r#"{{"userId":"u1","event":"E","integrations":{{"{FORGERY}":1}}}}"#);
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_web"))],
        body.as_bytes(),
    );
    assert_eq!(a.status, 400, "{}", a.body);
    let batch = format!(
        r#"{{"batch":[{{"type":"track","userId":"u1","event":"E","integrations":{{"{FORGERY}":1}}}}]}}"#
    );
    post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        batch.as_bytes(),
    );
    let log = relay.wait_log("admin token accepted");
    for line in log.lines() {
        assert!(
            !line.starts_with("2026-11-27T10:00:00"),
            "a forged line: {log}"
        );
        assert!(
            !line.chars().any(|c| c.is_control()),
            "a control character in {line:?}"
        );
    }
    // The reason is there, escaped.
    assert!(log.contains("integrations.x\\r\\n2026-11-27"), "{log}");
}

#[test]
fn json_log_lines_stay_valid_json_whatever_a_client_sends() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start_with(
        dir.path(),
        &config(&[("web", "wk_web", &rx)], ""),
        &["--log-format", "json"],
        &[],
    );
    let body = format!(
        r#"{{"batch":[{{"type":"track","userId":"u1","event":"E","integrations":{{"{FORGERY}\"}}{{":1}}}}]}}"#
    );
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic("wk_web"))],
        body.as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let log = relay.wait_log("admin token accepted");
    for line in log.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v["message"] == "events rejected" {
            assert!(
                v["first"]
                    .as_str()
                    .unwrap()
                    .contains("admin token accepted"),
                "{line}"
            );
        }
    }
}

#[test]
fn webhook_url_paths_are_logged_only_with_log_url_paths() {
    for (extra, shown) in [("", false), ("log_url_paths = true\n", true)] {
        let dir = temp_dir();
        let rx = Receiver::start();
        rx.status.store(400, SeqCst); // a permanent failure: the core logs the webhook
        let secret_path = "/services/T0SECRET/B0SECRET/XXXXSECRETXXXX";
        let cfg = config(&[("web", "wk_web", &rx)], extra).replace(
            &rx.url,
            &format!("{}{secret_path}", rx.url.trim_end_matches("/hook")),
        );
        let relay = Relay::start(dir.path(), &cfg);
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic("wk_web"))],
            track("m-1").as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", a.body);
        let host = rx.url.trim_end_matches("/hook");
        let log = relay.wait_log("permanent failure");
        assert_eq!(log.contains("T0SECRET"), shown, "{extra:?}: {log}");
        let label = match shown {
            true => format!("webhooks[0] {host}{secret_path}"),
            false => format!("webhooks[0] {host}/…"),
        };
        assert!(log.contains(&label), "{label:?} not in {log}");
    }
}

/// A receiver refusing every event writes one line per URL and kind every 10 s, not one per
/// event; the outcomes count every one.
#[test]
fn failed_deliveries_are_logged_once_a_window_not_once_an_event() {
    let dir = temp_dir();
    let rx = Receiver::start();
    rx.status.store(400, SeqCst);
    let relay = Relay::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let events: Vec<String> = (0..2000)
        .map(|i| format!(r#"{{"type":"track","userId":"u","event":"E","messageId":"f-{i}"}}"#))
        .collect();
    for chunk in events.chunks(500) {
        let body = format!(r#"{{"batch":[{}]}}"#, chunk.join(","));
        let a = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic("wk_web"))],
            body.as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", a.body);
    }
    rx.wait_for(2000);
    std::thread::sleep(Duration::from_millis(300));
    let lines = relay.log().matches("permanent failure").count();
    assert!((1..=2).contains(&lines), "{lines} lines: {}", relay.log());
}

#[test]
fn no_write_key_secret_or_token_appears_in_logs_or_metrics() {
    let dir = temp_dir();
    let (rx, failing) = (Receiver::start(), Receiver::start());
    failing.status.store(401, SeqCst);
    let (key, key2, secret, admin, prom, fwd) = (
        "wk-SECRET-key-7f3a",
        "wk-SECRET-key-other-91b2",
        "SECRET-shared-c0ffee",
        "SECRET-admin-d00d",
        "SECRET-metrics-beef",
        "SECRET-forward-key-5e5e",
    );
    let cfg = format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"{admin}\"\n\
         metrics_token = \"{prom}\"\nallowed_networks = [\"127.0.0.0/8\"]\n\
         forward_allowed_networks = [\"127.0.0.0/8\"]\nmax_backoff = 0.1\n\
         max_retry_duration = 0.5\n\
         [[sources]]\nname = \"web\"\nwrite_keys = [\"{key}\", \"{key2}\"]\n\
         shared_secret = \"{secret}\"\n\
         [[sources.webhooks]]\nurl = \"{}\"\n[[sources.webhooks]]\nurl = \"{}\"\n\
         [sources.forward]\nendpoint = \"{}\"\nwrite_key = \"{fwd}\"\n",
        rx.url,
        failing.url,
        failing.url.trim_end_matches("/hook")
    );
    let relay = Relay::start_with(dir.path(), &cfg, &[], &[("RUST_LOG", "debug")]);
    let url = relay.url("/v1/batch");
    // Accepted, rejected, wrong key (a near miss of the real one), key in the body.
    let body =
        json!({"batch": [{"type": "track", "userId": "u1", "event": "E"}, {"type": "track"}]});
    assert_eq!(
        post(
            &url,
            &[("Authorization", &basic(key))],
            body.to_string().as_bytes()
        )
        .status,
        200
    );
    let near = &key[..key.len() - 1];
    assert_eq!(
        post(&url, &[("Authorization", &basic(near))], b"{\"batch\":[]}").status,
        401
    );
    let in_body = json!({"writeKey": key2, "batch": [{"type": "identify", "userId": "u2"}]});
    assert_eq!(post(&url, &[], in_body.to_string().as_bytes()).status, 200);
    // Admin: a wrong token, then a deletion.
    let admin_url = relay.url("/admin/deletions");
    let del = br#"{"user_id":"u1"}"#;
    assert_eq!(
        post(
            &admin_url,
            &[("Authorization", &format!("Bearer {admin}x"))],
            del
        )
        .status,
        401
    );
    assert_eq!(
        post(
            &admin_url,
            &[("Authorization", &format!("Bearer {admin}"))],
            del
        )
        .status,
        200
    );
    rx.wait_for(3);
    // Let the forward fail (401 from the failing receiver) and be logged.
    std::thread::sleep(Duration::from_millis(1500));
    let metrics = scrape(&relay, prom);
    let log = relay.log();
    assert!(log.contains("unknown write key"), "{log}");
    for s in [key, key2, near, secret, admin, prom, fwd] {
        assert!(!log.contains(s), "{s:?} in the log:\n{log}");
        assert!(!metrics.contains(s), "{s:?} in /metrics:\n{metrics}");
    }
    // Base64 of the Basic header would hide a key from a plain grep: not there either.
    for s in [basic(key), basic(near)] {
        let b64 = s.trim_start_matches("Basic ");
        assert!(!log.contains(b64), "{b64:?} in the log");
    }
}

fn reload_config(sources: &[(&str, &str, &Receiver)]) -> String {
    config(sources, "")
}

#[test]
fn sighup_applies_a_new_source_and_a_new_url_to_new_events() {
    let dir = temp_dir();
    let (first, second, third) = (Receiver::start(), Receiver::start(), Receiver::start());
    let relay = Relay::start(dir.path(), &reload_config(&[("web", "wk_web", &first)]));
    let send = |key: &str, id: &str| {
        post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic(key))],
            track(id).as_bytes(),
        )
    };
    assert_eq!(send("wk_web", "m-1").status, 200);
    first.wait_for(1);
    assert_eq!(send("wk_app", "m-2").status, 401);
    // web's URL changes, app is new.
    std::fs::write(
        dir.path().join("relay.toml"),
        reload_config(&[("web", "wk_web", &second), ("app", "wk_app", &third)]),
    )
    .unwrap();
    relay.signal(libc::SIGHUP);
    relay.wait_log("config reloaded");
    assert_eq!(send("wk_web", "m-3").status, 200);
    assert_eq!(send("wk_app", "m-4").status, 200);
    assert_eq!(second.wait_for(1)[0].json()["messageId"], "m-3");
    assert_eq!(third.wait_for(1)[0].json()["messageId"], "m-4");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(first.hits().len(), 1, "the old URL got a new event");
}

#[test]
fn sighup_with_a_broken_file_keeps_the_running_config_and_logs_why() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = Relay::start(dir.path(), &reload_config(&[("web", "wk_web", &rx)]));
    // The same write key twice: refused.
    let broken = reload_config(&[("web", "wk_web", &rx), ("app", "wk_web", &rx)]);
    std::fs::write(dir.path().join("relay.toml"), &broken).unwrap();
    relay.signal(libc::SIGHUP);
    let log = relay.wait_log("config reload refused");
    assert!(
        log.contains("sources[1].write_keys[0]") && log.contains("already a key of source"),
        "{log}"
    );
    // Not even parseable TOML.
    std::fs::write(dir.path().join("relay.toml"), "listen = [\n").unwrap();
    relay.signal(libc::SIGHUP);
    let deadline = Instant::now() + Duration::from_secs(20);
    while relay.log().matches("config reload refused").count() < 2 {
        assert!(Instant::now() < deadline, "{}", relay.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_web"))],
        track("m-1").as_bytes(),
    );
    assert_eq!(a.status, 200);
    rx.wait_for(1);
    assert_eq!(get(&relay.url("/readyz"), &[]).status, 200);
}

/// A source removed from the file refuses its write key at once, and still delivers what it
/// accepted (it drains): nothing accepted is dropped by a removal.
#[test]
fn sighup_removing_a_source_refuses_its_key_and_delivers_what_it_accepted() {
    let dir = temp_dir();
    let (web, app) = (Receiver::start(), Receiver::start());
    app.status.store(503, SeqCst); // app's event waits to be retried
    let cfg = reload_config(&[("web", "wk_web", &web), ("app", "wk_app", &app)]);
    let relay = Relay::start(dir.path(), &cfg);
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_app"))],
        track("m-app").as_bytes(),
    );
    assert_eq!(a.status, 200);
    app.wait_for(1);
    std::fs::write(
        dir.path().join("relay.toml"),
        reload_config(&[("web", "wk_web", &web)]),
    )
    .unwrap();
    relay.signal(libc::SIGHUP);
    relay.wait_log("config reloaded");
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_app"))],
        track("m-2").as_bytes(),
    );
    assert_eq!(a.status, 401);
    // Removed, but draining: the retries go on until the receiver takes it.
    let before = app.hits().len();
    app.status.store(200, SeqCst);
    let got = app.wait_for(before + 1);
    assert_eq!(got[before].json()["messageId"], "m-app");
    relay.wait_log("removed source drained: closed");
    assert!(app.hits().iter().all(|h| h.json()["messageId"] == "m-app"));
}

#[test]
fn a_request_in_flight_during_a_reload_finishes_on_the_sources_it_started_with() {
    use std::io::{Read, Write};
    let dir = temp_dir();
    let (web, app) = (Receiver::start(), Receiver::start());
    let cfg = reload_config(&[("web", "wk_web", &web), ("app", "wk_app", &app)]);
    let relay = Relay::start(dir.path(), &cfg);
    let body = track("m-inflight");
    let (head, tail) = body.as_bytes().split_at(body.len() / 2);
    let mut conn = std::net::TcpStream::connect(&relay.addr).unwrap();
    write!(
        conn,
        "POST /v1/track HTTP/1.1\r\nHost: relay\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n",
        basic("wk_app"),
        body.len()
    )
    .unwrap();
    conn.write_all(head).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // app is removed while its request is half sent.
    std::fs::write(
        dir.path().join("relay.toml"),
        reload_config(&[("web", "wk_web", &web)]),
    )
    .unwrap();
    relay.signal(libc::SIGHUP);
    relay.wait_log("config reloaded");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !relay.log().contains("removed source drained: closed"),
        "closed under a request in flight"
    );
    conn.write_all(tail).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = [0u8; 512];
    let n = conn.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(app.wait_for(1)[0].json()["messageId"], "m-inflight");
    drop(conn);
    relay.wait_log("removed source drained: closed");
    // A new request for app is refused: it is gone.
    let a = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_app"))],
        track("m-after").as_bytes(),
    );
    assert_eq!(a.status, 401);
}

/// Waits until stderr holds `text` at least `n` times (panics after 20 s).
fn wait_count(relay: &Relay, text: &str, n: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = relay.log();
        if log.matches(text).count() >= n {
            return log;
        }
        assert!(Instant::now() < deadline, "{text:?} not {n} times: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_reload_with_json_logs_writes_only_json_lines() {
    let dir = temp_dir();
    let (first, second, third) = (Receiver::start(), Receiver::start(), Receiver::start());
    let relay = Relay::start_with(
        dir.path(),
        &reload_config(&[("web", "wk_web", &first)]),
        &["--log-format", "json"],
        &[],
    );
    // web's URL changes (a changed source) and app is new: both are checked by building a
    // client, whose start and close the core logs.
    std::fs::write(
        dir.path().join("relay.toml"),
        reload_config(&[("web", "wk_web", &second), ("app", "wk_app", &third)]),
    )
    .unwrap();
    relay.signal(libc::SIGHUP);
    relay.wait_log("config reloaded");
    // The clients replaced by the reload close after it; give their lines time to come.
    std::thread::sleep(Duration::from_millis(500));
    let log = relay.log();
    for line in log.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}\nwhole log:\n{log}"));
        assert!(v["level"].is_string() && v["message"].is_string(), "{line}");
    }
}

#[test]
fn a_restart_only_setting_is_compared_with_what_runs_and_a_refused_reload_says_nothing_of_it() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let cfg = reload_config(&[("web", "wk_web", &rx)]);
    let relay = Relay::start(dir.path(), &cfg);
    let moved = cfg.replace("listen = \"127.0.0.1:0\"", "listen = \"127.0.0.1:1\"");
    assert_ne!(moved, cfg);
    let warning = "listen changed: it takes effect at the next start";
    // Changed: said once.
    std::fs::write(dir.path().join("relay.toml"), &moved).unwrap();
    relay.signal(libc::SIGHUP);
    wait_count(&relay, "config reloaded", 1);
    assert_eq!(relay.log().matches(warning).count(), 1, "{}", relay.log());
    // Restored: the running listener is the one the file names again, nothing to say.
    std::fs::write(dir.path().join("relay.toml"), &cfg).unwrap();
    relay.signal(libc::SIGHUP);
    wait_count(&relay, "config reloaded", 2);
    // Changed again, in a file the core refuses (a webhook URL that is not http/https):
    // refused, so nothing of it takes effect, now or at the next start.
    let refused = moved.replace(&rx.url, "ftp://127.0.0.1/hook");
    std::fs::write(dir.path().join("relay.toml"), refused).unwrap();
    relay.signal(libc::SIGHUP);
    let log = wait_count(&relay, "config reload refused", 1);
    assert_eq!(log.matches(warning).count(), 1, "{log}");
}

/// A config whose one webhook is `url`, with the relay's defaults for the network rules
/// (`block_private_networks` on) plus `extra` top-level lines.
fn guarded_config(sources: &[(&str, &str, &str)], extra: &str) -> String {
    let mut c = format!("listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\n{extra}\n");
    for (name, key, url) in sources {
        c.push_str(&format!(
            "[[sources]]\nname = \"{name}\"\nwrite_keys = [\"{key}\"]\n\
             [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n\
             [[sources.webhooks]]\nurl = \"{url}\"\n"
        ));
    }
    c
}

#[test]
fn a_webhook_the_network_rules_always_block_is_named_at_start_and_at_reload() {
    let dir = temp_dir();
    let relay = Relay::start(
        dir.path(),
        &guarded_config(&[("web", "wk_web", "http://127.0.0.1:9/in")], ""),
    );
    let log = relay.wait_log("can never be reached");
    let line = log
        .lines()
        .find(|l| l.contains("can never be reached"))
        .unwrap();
    for part in [
        "WARN",
        "source=web",
        "relay.toml: sources[0].webhooks[1] http://127.0.0.1:9/… can never be reached",
        "127.0.0.1 is a loopback address",
        "allowed_networks",
    ] {
        assert!(line.contains(part), "{part:?} not in: {line}");
    }
    assert!(!line.contains("/in"), "the URL's path is logged: {line}");
    // A reload adding a source whose webhook is private says so for that source.
    std::fs::write(
        dir.path().join("relay.toml"),
        guarded_config(
            &[
                ("web", "wk_web", "http://127.0.0.1:9/in"),
                ("app", "wk_app", "http://[fd00::1]:8080/in"),
            ],
            "",
        ),
    )
    .unwrap();
    relay.signal(libc::SIGHUP);
    let log = wait_count(&relay, "config reloaded", 1);
    assert!(
        log.lines().any(|l| l.contains("can never be reached")
            && l.contains("source=app")
            && l.contains("http://[fd00::1]:8080/…")
            && l.contains("fd00::1 is a unique-local address")),
        "{log}"
    );
    // Allowed: nothing to say.
    std::fs::write(
        dir.path().join("relay.toml"),
        guarded_config(
            &[("web", "wk_web", "http://127.0.0.1:9/in")],
            "allowed_networks = [\"127.0.0.0/8\"]",
        ),
    )
    .unwrap();
    let before = relay.log().matches("can never be reached").count();
    relay.signal(libc::SIGHUP);
    let log = wait_count(&relay, "config reloaded", 2);
    assert_eq!(log.matches("can never be reached").count(), before, "{log}");
}

/// A URL with credentials is refused, and neither the refusal nor the warning before it
/// shows them.
#[test]
fn credentials_in_a_webhook_url_are_never_logged() {
    let dir = temp_dir();
    std::fs::write(
        dir.path().join("relay.toml"),
        guarded_config(
            &[("web", "wk_web", "http://user:pw-9f3a1c@127.0.0.1:9/in")],
            "",
        ),
    )
    .unwrap();
    let out = support::relay_command()
        .arg("--config")
        .arg(dir.path().join("relay.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("must not carry credentials"), "{all}");
    assert!(
        !all.contains("pw-9f3a1c") && !all.contains("user:pw"),
        "{all}"
    );
}
