// The ingestion destination against a real HTTP server on 127.0.0.1: included by
// `tests/ingestion.rs` (a client of its own) and `tests/ingestion_engine.rs` (an engine's
// client, as a relay's source), each with its own `client(config)`: every rule holds on both.

use outbound::{json, Config, Message, OutcomeKind, Reason};
use std::io::Read;
use std::time::{Duration, Instant};
use support::{ingestion, Reply, Server};

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn posts_batches_to_v1_batch_with_auth_user_agent_and_content_type() {
    let server = Server::answering(200);
    let client = client(ingestion(&server).flush_at(1))
    .unwrap();
    client.enqueue(&Message::track("u1", "Signed Up")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/batch");
    // base64("wk_test:")
    assert_eq!(req.header("authorization"), Some("Basic d2tfdGVzdDo="));
    assert_eq!(
        req.header("user-agent"),
        Some(concat!("outbound/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(req.header("content-type"), Some("application/json"));
    // The body is read from the queue as it is sent, with its length given first.
    assert_eq!(
        req.header("content-length"),
        Some(req.body.len().to_string().as_str())
    );
    assert_eq!(req.header("transfer-encoding"), None);
}

#[test]
fn endpoint_with_trailing_slash_still_posts_to_v1_batch() {
    let server = Server::answering(200);
    let config = ingestion(&server).endpoint(format!("{}/", server.url)).flush_at(1);
    let client = client(config).unwrap();
    client.enqueue(&Message::identify("u1")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(server.requests()[0].path, "/v1/batch");
}

#[test]
fn body_is_batch_and_sent_at_with_each_message() {
    let server = Server::answering(200);
    let client = client(ingestion(&server).flush_at(2))
    .unwrap();
    let ts = outbound::timestamp::parse("2026-11-21T11:30:00.123+02:00").unwrap();
    let id = client
        .enqueue(
            &Message::track("u1", "Bought")
                .property("price", 9.5)
                .message_id("m-1")
                .timestamp(ts),
        )
        .unwrap();
    assert_eq!(id, "m-1");
    let anon = client
        .enqueue(&Message::new(outbound::Kind::Identify).anonymous_id("a1"))
        .unwrap();
    assert!(client.flush(Some(WAIT)));
    let body = server.requests()[0].json();
    let obj = body.as_object().unwrap();
    assert_eq!(obj.keys().collect::<Vec<_>>(), ["batch", "sentAt"]);
    let sent_at = obj["sentAt"].as_str().unwrap();
    assert_eq!(sent_at.len(), 24);
    assert!(sent_at.ends_with('Z'));
    let batch = obj["batch"].as_array().unwrap();
    assert_eq!(
        batch[0],
        json!({"type":"track","messageId":"m-1","timestamp":"2026-11-21T09:30:00.123Z","userId":"u1",
               "event":"Bought","properties":{"price":9.5},
               "context":{"library":{"name":"outbound","version":env!("CARGO_PKG_VERSION")}}})
    );
    assert_eq!(batch[1]["anonymousId"], "a1");
    assert_eq!(batch[1]["messageId"], anon.as_str());
    assert!(batch[1].get("userId").is_none());
}

#[test]
fn default_message_id_is_a_fresh_uuid_v4() {
    let server = Server::answering(200);
    let client = client(ingestion(&server)).unwrap();
    let a = client.enqueue(&Message::identify("u")).unwrap();
    let b = client.enqueue(&Message::identify("u")).unwrap();
    assert_ne!(a, b);
    for id in [&a, &b] {
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4", "version nibble of {id}");
        assert!("89ab".contains(&id[19..20]), "variant of {id}");
    }
}

#[test]
fn context_library_is_always_ours() {
    let server = Server::answering(200);
    let client = client(ingestion(&server).flush_at(1))
    .unwrap();
    let ctx = json!({"library": {"name": "spoof"}, "ip": "10.0.0.1"});
    client
        .enqueue(&Message::identify("u").context(ctx.as_object().unwrap().clone()))
        .unwrap();
    assert!(client.flush(Some(WAIT)));
    let msg = &server.requests()[0].json()["batch"][0];
    assert_eq!(msg["context"]["library"]["name"], "outbound");
    assert_eq!(msg["context"]["ip"], "10.0.0.1");
}

/// The messages each request to `server` carried, in order.
fn sizes(server: &Server) -> Vec<usize> {
    server
        .requests()
        .iter()
        .map(|r| r.json()["batch"].as_array().unwrap().len())
        .collect()
}

#[test]
fn by_default_a_request_carries_at_most_flush_at_messages() {
    // 12 calls in a row, no flush, the interval a minute away.
    let server = Server::answering(200);
    let client = client(ingestion(&server).flush_at(5).flush_interval(Duration::from_secs(60)))
    .unwrap();
    for i in 0..12 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    assert!(
        server.wait_for(2, WAIT),
        "both full batches go without a flush"
    );
    // Long enough for any joined or third request to show.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        sizes(&server),
        [5, 5],
        "2 messages wait for 3 more or the interval"
    );
    assert!(client.flush(Some(WAIT)));
    assert_eq!(sizes(&server), [5, 5, 2]);
}

#[test]
fn with_flush_at_1_a_bad_answer_fails_only_its_own_message() {
    // One request per message, so a 400 fails one message.
    let server = Server::start(|r| {
        if r.index == 0 {
            Reply::After(Duration::from_millis(20), 400)
        } else {
            Reply::Status(200)
        }
    });
    let outcomes = support::Outcomes::default();
    let client = client(ingestion(&server).flush_at(1).on_outcome(outcomes.callback()))
    .unwrap();
    for i in 0..6 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    assert!(!client.flush(Some(WAIT)), "one message failed");
    let got = outcomes.wait_for(6, WAIT);
    let failed: Vec<_> = got
        .iter()
        .filter(|o| o.kind == OutcomeKind::Failed)
        .collect();
    assert_eq!(failed.len(), 1, "{got:?}");
    assert_eq!(failed[0].reason, Some(Reason::Status(400)));
    let delivered = got
        .iter()
        .filter(|o| o.kind == OutcomeKind::Delivered)
        .count();
    assert_eq!(delivered, 5);
    assert_eq!(sizes(&server), [1; 6], "one request per message");
}

#[test]
fn max_batch_messages_lets_waiting_batches_join_up_to_it() {
    // Opt-in joining: the receiver answers nothing until every call is made, so closed
    // batches wait behind the requests out and join, up to max_batch_messages each.
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gate = open.clone();
    let server = Server::start(move |_| {
        while !gate.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        Reply::Status(200)
    });
    let client = client(ingestion(&server).flush_at(5).max_batch_messages(15).max_in_flight(1))
    .unwrap();
    for i in 0..50 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    open.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(client.flush(Some(WAIT)));
    let sizes = sizes(&server);
    assert_eq!(sizes.iter().sum::<usize>(), 50);
    assert!(sizes.iter().all(|n| *n <= 15), "{sizes:?}");
    assert!(sizes.iter().any(|n| *n > 5), "batches joined: {sizes:?}");
}

#[test]
fn max_batch_messages_below_flush_at_is_a_config_error_naming_it() {
    let server = Server::answering(200);
    let err = client(ingestion(&server).flush_at(20).max_batch_messages(19))
    .err()
    .expect("refused");
    match err {
        outbound::Error::Config { setting, .. } => assert_eq!(setting, "max_batch_messages"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn with_joining_on_closed_batches_wait_for_a_young_request_and_go_out_together() {
    // The lane's fill rule, with joining on: while a request sent under 25 ms ago is out,
    // closed batches that fit in one request wait for it, then go in one request.
    let server = Server::start(|_| Reply::After(Duration::from_millis(15), 200));
    let client = client(ingestion(&server).flush_at(1).max_batch_messages(1_000))
    .unwrap();
    // One message every 2 ms: without the rule each would go alone (a thread is free).
    for i in 0..20 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(client.flush(Some(WAIT)));
    let sizes: Vec<usize> = server
        .requests()
        .iter()
        .map(|r| r.json()["batch"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes.iter().sum::<usize>(), 20);
    assert!(
        sizes.len() <= 10,
        "20 batches of 1, 2 ms apart, behind a 15 ms receiver went out in {} requests: {sizes:?}",
        sizes.len()
    );
}

#[test]
fn with_joining_on_batches_behind_a_stalled_request_leave_once_it_turns_slow() {
    // While a young request is out, new messages may stay unread in the scheduler's
    // channel (no wake per batch); a request that stalls must not hold them: they go once
    // it is 25 ms old (measured: 25.6 ms; without that deadline, 1 s: the housekeeping
    // tick), long before its answer.
    let server = Server::start(|r| {
        if r.index == 0 {
            Reply::After(Duration::from_secs(3), 200)
        } else {
            Reply::Status(200)
        }
    });
    let client = client(ingestion(&server).flush_at(5).max_batch_messages(100))
    .unwrap();
    for i in 0..5 {
        client
            .enqueue(&Message::track(format!("a{i}"), "E"))
            .unwrap();
    }
    assert!(server.wait_for(1, WAIT), "the first batch went out");
    let sent = Instant::now();
    for i in 0..20 {
        client
            .enqueue(&Message::track(format!("b{i}"), "E"))
            .unwrap();
    }
    assert!(
        server.wait_for(2, Duration::from_secs(2)),
        "held behind a stalled request"
    );
    let second = &server.requests()[1];
    let waited = second.at.duration_since(sent);
    assert!(
        waited < Duration::from_millis(500),
        "the second request left {waited:?} after its messages"
    );
    assert_eq!(second.json()["batch"].as_array().unwrap().len(), 20);
    assert!(client.flush(Some(WAIT)));
}

#[test]
fn no_body_exceeds_500000_bytes() {
    let server = Server::answering(200);
    let client = client(ingestion(&server).flush_at(1000).max_queue_size(1000))
    .unwrap();
    let filler = "x".repeat(20_000);
    for i in 0..100 {
        client
            .enqueue(&Message::track(format!("u{i}"), "Big").property("filler", filler.as_str()))
            .unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    let reqs = server.requests();
    let total: usize = reqs
        .iter()
        .map(|r| r.json()["batch"].as_array().unwrap().len())
        .sum();
    assert_eq!(total, 100);
    assert!(
        reqs.len() >= 5,
        "100 × 20 KB needs at least 5 bodies, got {}",
        reqs.len()
    );
    for r in &reqs {
        assert!(r.body.len() <= 500_000, "body of {} bytes", r.body.len());
    }
}

#[test]
fn with_joining_on_batches_that_wait_for_a_connection_go_out_together() {
    // The receiver answers nothing until every call is made (on a loaded machine the calls
    // can be slower than a 100 ms receiver): closed batches queue behind the requests out,
    // and with max_batch_messages set high they join up to 500,000 bytes.
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gate = open.clone();
    let server = Server::start(move |_| {
        while !gate.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
        support::Reply::Status(200)
    });
    let client = client(ingestion(&server).flush_at(20).max_batch_messages(100_000).max_queue_size(5_000))
    .unwrap();
    let mut ids: Vec<String> = (0..4_000)
        .map(|i| {
            client
                .enqueue(&Message::track(format!("u{i}"), "Queued"))
                .unwrap()
        })
        .collect();
    open.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(client.flush(Some(Duration::from_secs(30))));
    let reqs = server.requests();
    let mut got: Vec<String> = reqs
        .iter()
        .flat_map(|r| {
            let body = r.json();
            body["batch"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["messageId"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    got.sort();
    ids.sort();
    assert_eq!(got, ids, "each message once");
    assert!(
        reqs.len() < 4_000 / 20 / 4,
        "{} requests for 200 batches of 20",
        reqs.len()
    );
    assert!(reqs
        .iter()
        .any(|r| r.json()["batch"].as_array().unwrap().len() > 20));
    for r in &reqs {
        assert!(r.body.len() <= 500_000, "body of {} bytes", r.body.len());
    }
}

#[test]
fn a_lone_message_waits_for_flush_interval() {
    let server = Server::answering(200);
    let interval = Duration::from_millis(700);
    let client = client(ingestion(&server).flush_interval(interval))
    .unwrap();
    let sent = Instant::now();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(server.wait_for(1, WAIT));
    let waited = server.requests()[0].at - sent;
    assert!(waited >= interval, "arrived after {waited:?}");
    assert!(
        waited < interval + Duration::from_secs(2),
        "arrived after {waited:?}"
    );
}

#[test]
fn oversized_message_is_rejected_at_the_call_and_the_others_go_out() {
    let server = Server::answering(200);
    let client = client(ingestion(&server)).unwrap();
    client.enqueue(&Message::track("u", "Before")).unwrap();
    let big = Message::track("u", "Huge").property("blob", "y".repeat(33_000));
    match client.enqueue(&big) {
        Err(outbound::Error::MessageTooLarge {
            size,
            limit: 32_768,
        }) => assert!(size > 33_000),
        other => panic!("expected MessageTooLarge, got {other:?}"),
    }
    client.enqueue(&Message::track("u", "After")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let events: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| r.json()["batch"].as_array().unwrap().clone())
        .map(|m| m["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["Before", "After"]);
    assert_eq!(client.stats().accepted, 2);
}

#[test]
fn gzip_bodies_decode_to_the_same_json() {
    let server = Server::answering(200);
    let client = client(ingestion(&server).gzip(true).flush_at(3))
    .unwrap();
    for i in 0..3 {
        client
            .enqueue(&Message::track("u", format!("E{i}")).message_id(format!("m{i}")))
            .unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    assert_eq!(req.header("content-encoding"), Some("gzip"));
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(req.body.as_slice())
        .read_to_end(&mut plain)
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&plain).unwrap();
    let ids: Vec<&str> = body["batch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m0", "m1", "m2"]);
}

#[test]
fn delete_is_refused_without_webhooks() {
    let server = Server::answering(200);
    let client = client(ingestion(&server)).unwrap();
    let e = client.enqueue(&Message::delete("u")).unwrap_err();
    assert!(e.to_string().contains("webhooks"), "{e}");
}

#[test]
fn a_client_with_no_destination_is_a_config_error() {
    let e = client(support::config()).err().unwrap();
    assert!(matches!(e, outbound::Error::Config { .. }), "{e}");
}

#[test]
fn a_flush_behind_many_unread_messages_sends_them_all() {
    // Go v2's allocation test: flush_at far above what 500 KB holds and the interval an
    // hour away, so the calls wake nothing and more wait unread than the scheduler reads at
    // once; the flush queued behind them (and close) must still reach it and send them all,
    // in requests within the size limit. It waited for the interval before.
    let server = Server::answering(200);
    let client = client(ingestion(&server).flush_at(100_000).max_queue_size(100_000).flush_interval(Duration::from_secs(3600)))
    .unwrap();
    for i in 0..1407 {
        let m = Message::track(format!("u{i}"), "E")
            .property("revenue", 49.99)
            .property("pad", "x".repeat(300));
        client.enqueue(&m).unwrap();
    }
    assert!(client.flush(Some(WAIT)), "the flush reached the scheduler");
    let sizes = sizes(&server);
    assert_eq!(sizes.iter().sum::<usize>(), 1407, "{sizes:?}");
    assert!(sizes.len() >= 2, "split at 500 KB: {sizes:?}");
    assert!(server.requests().iter().all(|r| r.body.len() <= 500_000));
    assert!(client.close(Some(WAIT)).unwrap());
}

#[test]
fn a_client_whose_first_ring_beats_its_registration_still_wakes_the_scheduler() {
    // A new client's first send can ring before the scheduler has added it (both wait for
    // the scheduler together, and it may take the ring first); every later send must still
    // wake it. The bell stayed marked as rung, and a flush waited for the interval.
    let server = Server::answering(200);
    for round in 0..200 {
        let client = client(ingestion(&server).flush_at(100_000).flush_interval(Duration::from_secs(3600)))
        .unwrap();
        client.enqueue(&Message::track("u", "E")).unwrap();
        assert!(
            client.flush(Some(Duration::from_secs(5))),
            "round {round}: the flush never reached the scheduler"
        );
        client.close(Some(WAIT)).unwrap();
    }
    assert_eq!(sizes(&server).iter().sum::<usize>(), 200);
}
