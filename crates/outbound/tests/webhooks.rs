//! Webhooks destination against real
//! HTTP(S) servers on 127.0.0.1.

mod support;

use outbound::{
    json, Client, Config, Error, Message, Object, OutcomeKind, Reason, RetryPolicy, Webhook,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Outcomes, Reply, Server};

const WAIT: Duration = Duration::from_secs(10);

fn hooks(urls: &[&str]) -> Config {
    support::config().webhooks(urls.iter().map(|u| Webhook::new(*u)).collect())
}

fn obj(v: outbound::Value) -> Object {
    v.as_object().unwrap().clone()
}

fn config_error(config: Config) -> String {
    match Client::new(config) {
        Err(e @ Error::Config { .. }) => e.to_string(),
        Err(e) => panic!("expected a config error, got {e}"),
        Ok(_) => panic!("expected a config error"),
    }
}

// 1. Configuration

#[test]
fn a_refused_url_is_named_without_its_credentials_path_or_query() {
    for url in [
        "ftp://user:pw-LEAK@hooks.example.com/x?token=SECRETQ",
        "http://user:pw-LEAK@hooks example.com/x?token=SECRETQ",
    ] {
        let e = config_error(hooks(&[url]));
        assert!(e.contains("webhooks[0].url"), "{e}");
        assert!(!e.contains("pw-LEAK") && !e.contains("SECRETQ"), "{e}");
    }
}

#[test]
fn a_sixth_webhook_is_refused() {
    let e = config_error(hooks(&["http://127.0.0.1:1/a"; 6]));
    assert_eq!(
        e,
        "invalid configuration webhooks: 6 given, at most 5 allowed"
    );
    Client::new(hooks(&["http://127.0.0.1:1/a"; 5])).unwrap();
}

#[test]
fn urls_must_be_absolute_http_or_https_without_credentials() {
    for url in [
        "/relative",
        "ftp://127.0.0.1/x",
        "127.0.0.1:80/x",
        "not a url",
    ] {
        let e = config_error(hooks(&[url]));
        assert!(
            e.starts_with("invalid configuration webhooks[0].url"),
            "{url}: {e}"
        );
    }
    let e = config_error(hooks(&["https://user:pw@127.0.0.1/x"]));
    assert!(e.contains("credentials"), "{e}");
}

#[test]
fn header_names_and_values_must_be_valid() {
    let bad = [
        ("X-Ok", "a\r\nInjected: 1"),
        ("X-Ok", "nul\0"),
        ("X-Ok", "lf\n"),
        ("Bad Name", "v"),
        ("X:Colon", "v"),
        ("", "v"),
    ];
    for (name, value) in bad {
        let config = support::config()
            .webhooks(vec![Webhook::new("http://127.0.0.1:1/").header(name, value)]);
        let e = config_error(config);
        assert!(
            e.contains("webhooks[0].headers"),
            "{name:?}: {value:?} -> {e}"
        );
    }
}

#[test]
fn a_webhook_has_at_most_max_webhook_headers_and_max_webhook_header_bytes() {
    let hook = |n: usize, value_len: usize| {
        (0..n).fold(Webhook::new("http://127.0.0.1:1/"), |w, i| {
            w.header(format!("X-H{i}"), "v".repeat(value_len))
        })
    };
    let at = |w: Webhook, extra: fn(&mut Config)| {
        let mut config = support::config().webhooks(vec![w]);
        extra(&mut config);
        config
    };
    // The defaults: 20 headers and 8 KiB.
    assert!(Client::new(at(hook(20, 10), |_| ())).is_ok());
    let e = config_error(at(hook(21, 10), |_| ()));
    assert!(
        e.contains("webhooks[0].headers") && e.contains("at most 20"),
        "{e}"
    );
    let e = config_error(at(hook(2, 4096), |_| ()));
    assert!(
        e.contains("max_webhook_header_bytes") && e.contains("8192"),
        "{e}"
    );
    // Both are settings.
    assert!(Client::new(at(hook(21, 10), |c| c.max_webhook_headers = 21)).is_ok());
    let e = config_error(at(hook(2, 10), |c| c.max_webhook_headers = 1));
    assert!(e.contains("at most 1 allowed"), "{e}");
    let e = config_error(at(hook(1, 10), |c| c.max_webhook_header_bytes = 8));
    assert!(e.contains("14 bytes"), "{e}");
}

/// `Client::validate` refuses what `Client::new` refuses, with the same words.
#[test]
fn validate_refuses_what_new_refuses() {
    let bad = [
        support::config().webhooks(vec![Webhook::new("ftp://x")]),
        support::config().webhooks(vec![
            Webhook::new("http://127.0.0.1:1/").header("Bad Header", "v")
        ]),
        support::config()
            .webhooks(vec![Webhook::new("http://127.0.0.1:1/")])
            .ca_certs("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"),
        support::config()
            .webhooks(vec![Webhook::new("http://127.0.0.1:1/")])
            .block_private_networks(true)
            .allowed_networks(vec!["10.0.0.0/33".into()]),
        support::config()
            .webhooks(vec![Webhook::new("http://127.0.0.1:1/")])
            .timeout(Duration::ZERO),
    ];
    for config in bad {
        let said = Client::validate(&config).expect_err("refused").to_string();
        assert_eq!(said, config_error(config));
    }
    let good = support::config().webhooks(vec![
        Webhook::new("http://127.0.0.1:1/").header("X-Team", "a")
    ]);
    assert!(Client::validate(&good).is_ok());
}

#[test]
fn reserved_headers_cannot_be_overridden() {
    for name in [
        "Content-Type",
        "content-length",
        "Host",
        "Transfer-Encoding",
        "Connection",
        "X-Signature",
    ] {
        let config =
            support::config().webhooks(vec![Webhook::new("http://127.0.0.1:1/").header(name, "v")]);
        let e = config_error(config);
        assert!(e.contains("cannot be overridden"), "{name}: {e}");
    }
}

// 2. Request

#[test]
fn requests_carry_user_agent_content_type_static_headers_and_signature() {
    let server = Server::answering(200);
    let config = support::config()
        .webhooks(vec![Webhook::new(format!("{}/hooks/in?src=1", server.url))
            .header("X-Team", "growth")
            .header("Authorization", "Bearer t")])
        .shared_secret("abc123");
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::track("u", "E")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/hooks/in?src=1")
    );
    assert_eq!(req.header("user-agent"), Some("Outbound/1.0"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("x-team"), Some("growth"));
    assert_eq!(req.header("authorization"), Some("Bearer t"));
    let sig = req.header("x-signature").unwrap();
    assert_eq!(sig, outbound::sign(b"abc123", &req.body));
    assert!(sig
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
}

#[test]
fn no_secret_means_no_signature_header_and_user_agent_is_configurable() {
    let server = Server::answering(200);
    let config = hooks(&[&server.url]).webhook_user_agent("Acme/2.0");
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    assert_eq!(req.header("x-signature"), None);
    assert_eq!(req.header("user-agent"), Some("Acme/2.0"));
}

#[test]
fn the_published_signature_vector_holds() {
    assert_eq!(
        outbound::sign(b"abc123", br#"{"cool":true}"#),
        "5099cab379b3be52908387457007040cc934ef86"
    );
}

// 3. Bodies: exact bytes

const LIB: &str = concat!(
    r#""context":{"library":{"name":"outbound","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}}"#
);

fn body_of(msg: Message) -> String {
    let server = Server::answering(200);
    let client = Client::new(hooks(&[&server.url])).unwrap();
    let ts = outbound::timestamp::parse("2026-11-21T09:30:00.123Z").unwrap();
    client.enqueue(&msg.message_id("m1").timestamp(ts)).unwrap();
    assert!(client.flush(Some(WAIT)));
    String::from_utf8(server.requests()[0].body.clone()).unwrap()
}

fn golden(middle: &str) -> String {
    format!(
        r#"{{"version":1,{middle},{LIB},"messageId":"m1","timestamp":"2026-11-21T09:30:00.123Z"}}"#
    )
}

#[test]
fn page_body_is_exact() {
    let props = obj(json!({"path": "/a", "referrer": "", "title": "A", "url": "https://x/a"}));
    assert_eq!(
        body_of(Message::page("u1").name("Home").properties(props)),
        golden(
            r#""type":"page","userId":"u1","name":"Home","properties":{"path":"/a","referrer":"","title":"A","url":"https://x/a"}"#
        )
    );
}

#[test]
fn screen_body_is_exact() {
    let ctx = obj(
        json!({"device": {"model": "P7", "type": "android"}, "os": {"name": "Android", "version": "14"}, "app": {"build": "7", "name": "X", "version": "1.2"}}),
    );
    let expected = format!(
        r#"{{"version":1,"type":"screen","userId":"u1","name":"Home","context":{{"device":{{"model":"P7","type":"android"}},"os":{{"name":"Android","version":"14"}},"app":{{"build":"7","name":"X","version":"1.2"}},"library":{{"name":"outbound","version":"{}"}}}},"messageId":"m1","timestamp":"2026-11-21T09:30:00.123Z"}}"#,
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        body_of(Message::screen("u1").name("Home").context(ctx)),
        expected
    );
}

#[test]
fn identify_body_is_exact() {
    let traits = obj(json!({"email": "a@b.c", "age": 42, "10": "index keys first"}));
    assert_eq!(
        body_of(Message::identify("u1").traits(traits)),
        golden(
            r#""type":"identify","userId":"u1","traits":{"10":"index keys first","email":"a@b.c","age":42}"#
        )
    );
}

#[test]
fn track_body_is_exact() {
    assert_eq!(
        body_of(
            Message::track("u1", "Bought")
                .property("price", 1.0)
                .property("sku", "S-1")
        ),
        golden(
            r#""type":"track","userId":"u1","event":"Bought","properties":{"price":1,"sku":"S-1"}"#
        )
    );
}

#[test]
fn alias_body_has_previous_id_and_user_id_with_spaces_and_no_user_id_key() {
    assert_eq!(
        body_of(Message::alias("anon-1", "u1")),
        golden(r#""type":"alias","Previous ID":"anon-1","User ID":"u1""#)
    );
}

#[test]
fn group_body_is_exact() {
    let traits = obj(json!({"name": "Initech", "employee count": 120}));
    assert_eq!(
        body_of(Message::group("u1", "g1").traits(traits)),
        golden(
            r#""type":"group","userId":"u1","groupId":"g1","traits":{"name":"Initech","employee count":120}"#
        )
    );
}

#[test]
fn delete_body_is_only_type_user_id_and_timestamp() {
    assert_eq!(
        body_of(Message::delete("u1")),
        r#"{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:30:00.123Z"}"#
    );
}

// 4. Integrations

#[test]
fn integrations_decide_whether_webhooks_get_the_message() {
    let cases = [
        (json!({"Webhooks": false}), false),
        (json!({"All": false}), false),
        (json!({"All": false, "Webhooks": true}), true),
        (json!({"webhooks": false}), true),
    ];
    for (ints, sent) in cases {
        let server = Server::answering(200);
        let outcomes = Outcomes::default();
        let client = Client::new(hooks(&[&server.url]).on_outcome(outcomes.callback())).unwrap();
        client
            .enqueue(&Message::track("u", "E").integrations(obj(ints.clone())))
            .unwrap();
        client.flush(Some(WAIT));
        assert_eq!(server.count() == 1, sent, "{ints}");
        let expected = if sent {
            OutcomeKind::Delivered
        } else {
            OutcomeKind::Dropped
        };
        assert_eq!(outcomes.all()[0].kind, expected, "{ints}");
    }
}

// 5. Fan-out

#[test]
fn one_success_delivers_and_the_failing_url_is_not_retried() {
    let bad = Server::answering(500);
    let good = Server::answering(200);
    let outcomes = Outcomes::default();
    let client =
        Client::new(hooks(&[&bad.url, &good.url]).on_outcome(outcomes.callback())).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(outcomes.all()[0].kind, OutcomeKind::Delivered);
    assert_eq!((bad.count(), good.count()), (1, 1));
}

#[test]
fn all_failing_with_5xx_are_retried_until_one_succeeds() {
    let a = Server::answering(503);
    let n = Arc::new(AtomicUsize::new(0));
    let b = Server::start(move |_| {
        Reply::Status(if n.fetch_add(1, Ordering::SeqCst) < 2 {
            502
        } else {
            200
        })
    });
    let outcomes = Outcomes::default();
    let client = Client::new(hooks(&[&a.url, &b.url]).on_outcome(outcomes.callback())).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(outcomes.all()[0].kind, OutcomeKind::Delivered);
    // Both URLs' third requests leave together; flush waits for the outcome (b's 200), not
    // for a's request still on its way.
    assert!(a.wait_for(3, WAIT));
    assert_eq!((a.count(), b.count()), (3, 3));
}

#[test]
fn a_permanent_failure_is_not_retried_while_a_5xx_url_is() {
    let gone = Server::answering(404);
    let n = Arc::new(AtomicUsize::new(0));
    let flaky = Server::start(move |_| {
        Reply::Status(if n.fetch_add(1, Ordering::SeqCst) < 3 {
            503
        } else {
            200
        })
    });
    let client = Client::new(hooks(&[&gone.url, &flaky.url])).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!((gone.count(), flaky.count()), (1, 4));
}

#[test]
fn all_urls_failing_permanently_fails_the_message() {
    let a = Server::answering(404);
    let b = Server::answering(401);
    let outcomes = Outcomes::default();
    let client = Client::new(hooks(&[&a.url, &b.url]).on_outcome(outcomes.callback())).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    let o = &outcomes.all()[0];
    assert_eq!(o.kind, OutcomeKind::Failed);
    assert!(matches!(o.reason, Some(Reason::Status(404 | 401))), "{o:?}");
}

#[test]
fn gone_410_fails_at_once_with_its_own_reason_and_is_not_retried() {
    let gone = Server::answering(410);
    let outcomes = Outcomes::default();
    let client = Client::new(hooks(&[&gone.url]).on_outcome(outcomes.callback())).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(gone.count(), 1, "410 is never retried");
    let o = &outcomes.all()[0];
    assert_eq!(
        (o.kind, o.reason.clone()),
        (OutcomeKind::Failed, Some(Reason::Gone))
    );
    assert_eq!(Reason::Gone.to_string(), "gone");
    assert!(
        o.detail.starts_with("webhooks: gone (status 410)"),
        "{}",
        o.detail
    );
    assert_eq!(client.stats().retries, 0);
}

#[test]
fn five_urls_are_sent_concurrently() {
    let servers: Vec<Server> = (0..5)
        .map(|_| Server::start(|_| Reply::After(Duration::from_millis(600), 500)))
        .collect();
    let urls: Vec<&str> = servers.iter().map(|s| s.url.as_str()).collect();
    let client = Client::new(hooks(&urls).workers(1)).unwrap();
    let start = Instant::now();
    client.enqueue(&Message::identify("u")).unwrap();
    for s in &servers {
        assert!(s.wait_for(1, WAIT));
    }
    let firsts: Vec<Instant> = servers.iter().map(|s| s.requests()[0].at).collect();
    let spread = *firsts.iter().max().unwrap() - *firsts.iter().min().unwrap();
    assert!(
        spread < Duration::from_millis(300),
        "all five started together, spread {spread:?}"
    );
    assert!(start.elapsed() < Duration::from_millis(1500));
    let _ = client.close(Some(Duration::from_millis(100)));
}

// 6. Timeouts and responses

#[test]
fn a_receiver_sleeping_past_the_timeout_is_cut_off_and_retried() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_| {
        if n.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::After(Duration::from_secs(6), 200)
        } else {
            Reply::Status(200)
        }
    });
    let outcomes = Outcomes::default();
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let l = lines.clone();
    let client = Client::new(
        hooks(&[&server.url])
            .on_outcome(outcomes.callback())
            .debug(true)
            .log_sink(Arc::new(move |_, line: &str| {
                l.lock().unwrap().push(line.to_string())
            })),
    )
    .unwrap();
    assert_eq!(
        client.config().timeout,
        Duration::from_secs(5),
        "the default"
    );
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let reqs = server.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(
        gap >= Duration::from_millis(4900) && gap < Duration::from_millis(5900),
        "cut off at about 5 s: {gap:?}"
    );
    assert_eq!(client.stats().retries, 1);
    assert_eq!(outcomes.all()[0].kind, OutcomeKind::Delivered);
    let lines = lines.lock().unwrap();
    assert!(
        lines.iter().any(|l| l.contains("reason: Timeout")),
        "counted as a timeout: {lines:?}"
    );
}

#[test]
fn a_body_dripping_a_byte_a_second_is_cut_off() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_| {
        if n.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::Drip { len: 100 }
        } else {
            Reply::Status(200)
        }
    });
    let client = Client::new(hooks(&[&server.url]).timeout(Duration::from_millis(1500))).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    // The drip is a 200: headers came, so whether it counts depends on reading the body.
    // Either way the exchange must end at the timeout, not after 100 s.
    let start = Instant::now();
    client.flush(Some(WAIT));
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(client.stats().in_flight, 0);
}

#[test]
fn a_10_mb_response_body_is_not_read_whole() {
    let big = Arc::new(vec![b'z'; 10 * 1024 * 1024]);
    let server = Server::start(move |_| Reply::Full {
        status: 200,
        headers: vec![],
        body: big.to_vec(),
    });
    let client = Client::new(hooks(&[&server.url])).unwrap();
    let rss_before = rss_kib();
    for i in 0..5 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    let grew = rss_kib().saturating_sub(rss_before);
    // The server side holds copies of the body; the client must not add 5 × 10 MB.
    assert!(grew < 80 * 1024, "RSS grew by {grew} KiB");
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        })
        .unwrap_or(0)
}

#[test]
fn a_redirect_is_not_followed_and_fails_permanently() {
    let target = Server::answering(200);
    let location = format!("{}/elsewhere", target.url);
    let redirect = Server::start(move |_| Reply::Full {
        status: 302,
        headers: vec![("Location".into(), location.clone())],
        body: vec![],
    });
    let outcomes = Outcomes::default();
    let client = Client::new(hooks(&[&redirect.url]).on_outcome(outcomes.callback())).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    assert_eq!(outcomes.all()[0].reason, Some(Reason::Status(302)));
    assert_eq!((redirect.count(), target.count()), (1, 0));
}

// 7. TLS

#[test]
fn a_self_signed_certificate_is_a_certificate_error_and_no_request_is_sent() {
    let (cert, key) = support::self_signed();
    let server = Server::start_tls(vec![cert], key, |_| Reply::Status(200));
    let outcomes = Outcomes::default();
    let client = Client::new(hooks(&[&server.url]).on_outcome(outcomes.callback())).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    let o = &outcomes.all()[0];
    assert_eq!(
        (o.kind, o.reason.clone()),
        (OutcomeKind::Failed, Some(Reason::Certificate)),
        "{o:?}"
    );
    assert_eq!(server.count(), 0, "the handler saw no request");
}

#[test]
fn a_certificate_from_a_ca_given_in_ca_certs_is_trusted() {
    let (ca_pem, leaf, key) = support::ca_and_leaf();
    let server = Server::start_tls(vec![leaf], key, |_| Reply::Status(200));
    let dir = std::env::temp_dir().join(format!("outbound-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ca.pem");
    std::fs::write(&path, &ca_pem).unwrap();
    for ca in [ca_pem.clone(), path.to_string_lossy().into_owned()] {
        let outcomes = Outcomes::default();
        let config = hooks(&[&server.url])
            .ca_certs(ca)
            .on_outcome(outcomes.callback());
        let client = Client::new(config).unwrap();
        client.enqueue(&Message::identify("u")).unwrap();
        assert!(client.flush(Some(WAIT)), "{:?}", outcomes.all());
    }
    assert_eq!(server.count(), 2);
    let e = config_error(hooks(&[&server.url]).ca_certs("/nonexistent/ca.pem"));
    assert!(e.contains("ca_certs"), "{e}");
}

// 8. Retry window

#[test]
fn server_errors_are_retried_with_backoff_until_the_window_expires() {
    let server = Server::answering(503);
    let outcomes = Outcomes::default();
    let retry = RetryPolicy {
        base: Duration::from_millis(50),
        max_backoff: Duration::from_millis(100),
        max_retry_duration: Duration::from_millis(800),
        ..Default::default()
    };
    let client = Client::new(
        hooks(&[&server.url])
            .retry(retry)
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    let o = &outcomes.wait_for(1, WAIT)[0];
    assert_eq!(o.reason, Some(Reason::Expired));
    assert!(
        o.detail.starts_with("webhooks: expired after"),
        "{}",
        o.detail
    );
    let reqs = server.requests();
    assert!(reqs.len() >= 4, "{}", reqs.len());
    assert!(reqs.last().unwrap().at - reqs[0].at <= Duration::from_millis(1000));
}

#[test]
fn retry_after_on_a_webhook_is_honoured() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_| match n.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::Full {
            status: 503,
            headers: vec![("Retry-After".into(), "1".into())],
            body: vec![],
        },
        _ => Reply::Status(200),
    });
    let client = Client::new(hooks(&[&server.url])).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let reqs = server.requests();
    assert!(reqs[1].at - reqs[0].at >= Duration::from_secs(1));
}

// 9. Delete notifications

#[test]
fn delete_sends_the_delete_body_to_every_webhook_but_not_to_ingestion() {
    let hook = Server::answering(200);
    let ingest = Server::answering(200);
    let config = hooks(&[&hook.url])
        .write_key("wk")
        .endpoint(ingest.url.clone())
        .flush_at(1)
        .shared_secret("s");
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::delete("u9")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &hook.requests()[0];
    let body = req.json();
    assert_eq!(
        body.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "userId", "timestamp"]
    );
    assert_eq!(
        (body["type"].as_str(), body["userId"].as_str()),
        (Some("delete"), Some("u9"))
    );
    assert!(outbound::verify(
        b"s",
        &req.body,
        req.header("x-signature").unwrap()
    ));
    assert_eq!(ingest.count(), 0);
}

#[test]
fn both_destinations_must_deliver_for_a_delivered_outcome() {
    let hook = Server::answering(200);
    let ingest = Server::answering(400);
    let outcomes = Outcomes::default();
    let config = hooks(&[&hook.url])
        .write_key("wk")
        .endpoint(ingest.url.clone())
        .flush_at(1)
        .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    let o = &outcomes.all()[0];
    assert_eq!(
        (o.kind, o.detail.as_str()),
        (OutcomeKind::Failed, "ingestion: status 400")
    );
    assert_eq!((hook.count(), ingest.count()), (1, 1));
}
