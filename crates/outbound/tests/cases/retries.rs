// Delivery outcomes and retries against real servers on 127.0.0.1: included by
// `tests/retries.rs` (a client of its own) and `tests/retries_engine.rs` (an engine's
// client), each with its own `new_client(config)`.

use outbound::{Client, Message, OutcomeKind, Reason, RetryPolicy};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{ingestion, Outcomes, Reply, Server};

const WAIT: Duration = Duration::from_secs(10);

/// A server that answers with `statuses` in turn, then 200.
fn scripted(statuses: &'static [u16]) -> Server {
    let n = Arc::new(AtomicUsize::new(0));
    Server::start(move |_| {
        Reply::Status(
            *statuses
                .get(n.fetch_add(1, Ordering::SeqCst))
                .unwrap_or(&200),
        )
    })
}

fn client(server: &Server, outcomes: &Outcomes) -> Client {
    new_client(ingestion(server).flush_at(1).on_outcome(outcomes.callback()))
    .unwrap()
}

#[test]
fn server_errors_are_retried_until_delivered_once() {
    let server = scripted(&[500, 500]);
    let outcomes = Outcomes::default();
    let client = client(&server, &outcomes);
    let id = client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(server.count(), 3);
    let got = outcomes.all();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (&*got[0].message_id, got[0].kind),
        (id.as_str(), OutcomeKind::Delivered)
    );
    let stats = client.stats();
    assert_eq!((stats.delivered, stats.retries), (1, 2));
}

#[test]
fn a_400_is_tried_once_then_failed() {
    let server = Server::answering(400);
    let outcomes = Outcomes::default();
    let client = client(&server, &outcomes);
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(
        !client.flush(Some(WAIT)),
        "flush reports that not everything was delivered"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.count(), 1);
    let got = outcomes.all();
    assert_eq!(got[0].kind, OutcomeKind::Failed);
    assert_eq!(got[0].reason, Some(Reason::Status(400)));
    assert_eq!(got[0].detail, "ingestion: status 400");
}

#[test]
fn retry_after_is_honoured() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_| match n.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::Full {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: vec![],
        },
        _ => Reply::Status(200),
    });
    let outcomes = Outcomes::default();
    let client = client(&server, &outcomes);
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
}

#[test]
fn connection_refused_is_retried() {
    // Take a free port, close it: connecting is refused until the server starts on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let outcomes = Outcomes::default();
    let config = support::config().write_key("wk").endpoint(format!("http://127.0.0.1:{port}")).flush_at(1).on_outcome(outcomes.callback());
    let client = new_client(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(client.stats().retries >= 1, "{:?}", client.stats());
    assert!(outcomes.all().is_empty(), "still retrying");
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    use std::io::{Read, Write};
    let mut buf = [0u8; 65536];
    let _ = conn.read(&mut buf).unwrap();
    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let got = outcomes.wait_for(1, WAIT);
    assert_eq!(got[0].kind, OutcomeKind::Delivered);
}

#[test]
fn a_receiver_slower_than_timeout_is_a_timeout_and_retried() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_| match n.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::After(Duration::from_secs(3), 200),
        _ => Reply::Status(200),
    });
    let outcomes = Outcomes::default();
    let logs = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let l = logs.clone();
    let config = ingestion(&server).timeout(Duration::from_millis(500)).flush_at(1).on_outcome(outcomes.callback()).debug(true).log_sink(Arc::new(move |_, line: &str| {
            l.lock().unwrap().push(line.to_string())
        }));
    let client = new_client(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].at - reqs[0].at < Duration::from_secs(2),
        "cut off at the timeout, not the reply"
    );
    // One guard: locking again to format the message would deadlock on failure.
    let logs = logs.lock().unwrap();
    assert!(logs.iter().any(|l| l.contains("Timeout")), "{logs:?}");
}

#[test]
fn retries_stop_after_max_retry_duration_as_expired() {
    let server = Server::answering(503);
    let outcomes = Outcomes::default();
    let config = ingestion(&server).flush_at(1).on_outcome(outcomes.callback()).retry(RetryPolicy {
            base: Duration::from_millis(20),
            max_backoff: Duration::from_millis(50),
            max_retry_duration: Duration::from_millis(600),
            ..Default::default()
        });
    let client = new_client(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    let got = outcomes.wait_for(1, WAIT);
    assert_eq!(got[0].kind, OutcomeKind::Failed);
    assert_eq!(got[0].reason, Some(Reason::Expired));
    assert!(got[0].detail.contains("status 503"), "{}", got[0].detail);
    let reqs = server.requests();
    assert!(reqs.len() >= 3, "retried several times: {}", reqs.len());
    let span = reqs.last().unwrap().at - reqs[0].at;
    assert!(
        span <= Duration::from_millis(800),
        "no attempt long after the window: {span:?}"
    );
}

#[test]
fn a_413_on_a_batch_splits_it_until_every_message_is_delivered() {
    // Refuses any batch of more than 2 messages.
    let server = Server::start(|req| {
        let n = req.json()["batch"].as_array().unwrap().len();
        Reply::Status(if n > 2 { 413 } else { 200 })
    });
    let outcomes = Outcomes::default();
    let config = ingestion(&server).flush_at(7).on_outcome(outcomes.callback());
    let client = new_client(config).unwrap();
    for i in 0..7 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    let got = outcomes.all();
    assert_eq!(got.len(), 7);
    assert!(got.iter().all(|o| o.kind == OutcomeKind::Delivered));
    let delivered: usize = server
        .requests()
        .iter()
        .map(|r| r.json()["batch"].as_array().unwrap().len())
        .filter(|&n| n <= 2)
        .sum();
    assert_eq!(delivered, 7);
}

#[test]
fn a_413_on_a_single_message_fails_it() {
    let server = Server::answering(413);
    let outcomes = Outcomes::default();
    let client = client(&server, &outcomes);
    client.enqueue(&Message::identify("u")).unwrap();
    let got = outcomes.wait_for(1, WAIT);
    assert_eq!(got[0].reason, Some(Reason::Status(413)));
    assert_eq!(server.count(), 1);
}

#[test]
fn every_accepted_message_has_exactly_one_outcome_and_counters_add_up() {
    // By request: ok, permanent failure, then a 502 or an ok in turn. A request may carry
    // several messages (batches that wait for a connection go together); each message's
    // outcome must be what the requests that carried it were answered.
    fn status(index: usize) -> u16 {
        match index % 3 {
            0 => 200,
            1 => 404,
            _ if index.is_multiple_of(2) => 502,
            _ => 200,
        }
    }
    let server = Server::start(|req| Reply::Status(status(req.index)));
    let outcomes = Outcomes::default();
    let client = client(&server, &outcomes);
    // Three groups, each flushed: at least three requests, so request 1 (404) carries some
    // messages and request 0 (200) others. In one burst, a scheduler slow to start (a busy
    // CI machine) could put all 30 into request 0.
    let mut ids = Vec::new();
    for group in 0..3 {
        for i in 0..10 {
            let user = format!("u{group}-{i}");
            ids.push(client.enqueue(&Message::identify(user)).unwrap());
        }
        // False when a message of the group failed (the 404s); the outcomes are checked below.
        client.flush(Some(WAIT));
    }
    client.close(Some(WAIT)).unwrap();
    let got = outcomes.all();
    let mut seen: Vec<String> = got.iter().map(|o| o.message_id.to_string()).collect();
    seen.sort();
    ids.sort();
    assert_eq!(seen, ids, "one outcome per accepted message");
    // What the wire said of each message: its last answer that was not a 502.
    let mut said = std::collections::HashMap::new();
    for req in server.requests() {
        for m in req.json()["batch"].as_array().unwrap() {
            let id = m["messageId"].as_str().unwrap().to_owned();
            match status(req.index) {
                200 => said.insert(id, OutcomeKind::Delivered),
                404 => said.insert(id, OutcomeKind::Failed),
                _ => None,
            };
        }
    }
    for o in &got {
        assert_eq!(Some(&o.kind), said.get(&*o.message_id), "{o:?}");
    }
    let s = client.stats();
    assert_eq!(s.accepted, 30);
    assert_eq!(
        s.delivered + s.failed + s.dropped - s.queue_full,
        s.accepted
    );
    let failed = got.iter().filter(|o| o.kind == OutcomeKind::Failed).count() as u64;
    assert!(
        failed > 0 && failed < 30,
        "{failed} failed: both kinds seen"
    );
    assert_eq!(
        (s.delivered, s.failed, s.queued, s.in_flight),
        (30 - failed, failed, 0, 0)
    );
}
