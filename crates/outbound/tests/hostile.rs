//! Delivery under hostile receivers: slow, stalled, failing and dead destinations
//! must not hold up the others, and every accepted message still ends exactly once.

mod support;

use outbound::{Client, Message, OutcomeKind, Webhook};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{config, ingestion, Outcomes, Reply, Server};

/// The tests of this file measure throughput and concurrency: they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts requests under way in a handler, and the most at once.
#[derive(Clone, Default)]
struct Concurrency {
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Concurrency {
    fn during(&self, f: impl FnOnce()) {
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(n, SeqCst);
        f();
        self.now.fetch_sub(1, SeqCst);
    }
}

/// A server that takes `each` over every request before its 200, and how many it had at once.
fn slow_server(each: Duration) -> (Server, Concurrency) {
    let c = Concurrency::default();
    let seen = c.clone();
    let server = Server::start(move |_| {
        seen.during(|| std::thread::sleep(each));
        Reply::Status(200)
    });
    (server, c)
}

/// A client with one webhook on `server` (one request per message: ingestion joins waiting
/// batches, so a lane's growth is seen through a webhook lane).
fn hook_client(server: &Server, timeout: Duration) -> Client {
    Client::new(
        config()
            .webhooks(vec![Webhook::new(format!("{}/hook", server.url))])
            .timeout(timeout),
    )
    .unwrap()
}

#[test]
fn requests_in_flight_grow_with_slow_responses() {
    let _serial = serial();
    let (server, c) = slow_server(Duration::from_millis(200));
    let client = hook_client(&server, Duration::from_secs(5));
    let start = Instant::now();
    // Enough that the lane is still growing, a step with each wave of answers, when it
    // passes 50 however its answers spread.
    for i in 0..400 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    assert!(client.flush(Some(Duration::from_secs(30))));
    let took = start.elapsed();
    let most = c.most.load(SeqCst);
    eprintln!("400 requests of 200 ms: {took:?}, {most} at most in flight");
    // With the 2 threads kept ready this would take 40 s.
    assert!(most >= 50, "only {most} requests in flight at once");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn a_receiver_that_answers_nothing_gets_a_few_requests_not_hundreds() {
    let _serial = serial();
    // Every request outlives the client's timeout: the receiver never answers one.
    let (server, c) = slow_server(Duration::from_secs(3));
    let client = hook_client(&server, Duration::from_secs(2));
    for i in 0..200 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    let most = c.most.load(SeqCst);
    eprintln!("a silent receiver: {most} requests at most in flight");
    // 8 is what a receiver that never answered gets; slow requests make room for more only
    // while the receiver answers others (see `requests_in_flight_grow_with_slow_responses`).
    assert!(
        (2..=8).contains(&most),
        "{most} requests in flight to a receiver that answers nothing"
    );
    drop(client);
}

#[test]
fn max_in_flight_caps_each_destination() {
    let _serial = serial();
    let (server, c) = slow_server(Duration::from_millis(50));
    let client = Client::new(
        ingestion(&server)
            .flush_at(1)
            .max_in_flight(8)
            .webhooks(vec![Webhook::new(format!("{}/hook", server.url))]),
    )
    .unwrap();
    for i in 0..100 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    assert!(client.flush(Some(Duration::from_secs(30))));
    let most = c.most.load(SeqCst);
    // Two destinations on this server, 8 each.
    assert!(
        (9..=16).contains(&most),
        "{most} in flight with a cap of 8 per destination"
    );
}

#[test]
fn a_dead_receiver_gets_probes_not_a_retry_storm_and_recovers() {
    let _serial = serial();
    let up = Arc::new(AtomicBool::new(false));
    let u = up.clone();
    let server = Server::start(move |_| Reply::Status(if u.load(SeqCst) { 200 } else { 503 }));
    let client = Client::new(
        config()
            .webhooks(vec![Webhook::new(format!("{}/hook", server.url))])
            .max_queue_size(5000),
    )
    .unwrap();
    let n = 1000;
    for i in 0..n {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    std::thread::sleep(Duration::from_secs(3));
    let tried = server.count();
    // Without a per-destination hold, each of 1,000 messages retries every 20-200 ms here:
    // over 3 s that is more than 15,000 requests.
    eprintln!("dead receiver: {tried} requests in 3 s for {n} messages");
    assert!(tried < n + 300, "{tried} requests in 3 s: a retry storm");
    let s = client.stats();
    assert_eq!(s.delivered + s.failed, 0, "{s:?}");
    up.store(true, SeqCst);
    assert!(
        client.flush(Some(Duration::from_secs(30))),
        "{:?}",
        client.stats()
    );
    assert_eq!(client.stats().delivered, n as u64);
}

#[test]
fn retry_after_holds_the_whole_destination() {
    let _serial = serial();
    let server = Server::start(|r| {
        if r.index == 0 {
            Reply::Full {
                status: 503,
                headers: vec![("Retry-After".into(), "2".into())],
                body: b"busy".to_vec(),
            }
        } else {
            Reply::Status(200)
        }
    });
    let client = Client::new(ingestion(&server).flush_at(1)).unwrap();
    client.enqueue(&Message::identify("first")).unwrap();
    assert!(server.wait_for(1, Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(100));
    client.enqueue(&Message::identify("second")).unwrap();
    assert!(client.flush(Some(Duration::from_secs(10))));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "first (503), then both");
    for r in &reqs[1..] {
        let after = r.at - reqs[0].at;
        assert!(
            after >= Duration::from_millis(1900),
            "a request {after:?} after the Retry-After of 2 s"
        );
    }
}

#[test]
fn close_ends_50k_messages_pending_on_a_dead_receiver_each_exactly_once() {
    let _serial = serial();
    // A port nothing listens on: every connection is refused.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let outcomes = Outcomes::default();
    let client = Client::new(
        config()
            .write_key("wk")
            .endpoint(dead.clone())
            .webhooks(vec![Webhook::new(format!("{dead}/hook"))])
            .max_queue_size(60_000)
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    let n = 50_000;
    let mut ids = HashSet::new();
    for i in 0..n {
        ids.insert(
            client
                .enqueue(&Message::track(format!("u{i}"), "Pending"))
                .unwrap(),
        );
    }
    let start = Instant::now();
    assert_eq!(client.close(Some(Duration::from_secs(1))), Ok(false));
    let took = start.elapsed();
    let s = client.stats();
    eprintln!("close(1 s) with {n} pending: {took:?}, {s:?}");
    assert_eq!(s.accepted, n as u64);
    assert_eq!(s.delivered + s.failed + s.dropped, n as u64, "{s:?}");
    assert_eq!((s.queued, s.in_flight), (0, 0), "{s:?}");
    let seen = outcomes.all();
    assert_eq!(
        seen.len(),
        n,
        "one callback per message before close returned"
    );
    let reported: HashSet<String> = seen.iter().map(|o| o.message_id.to_string()).collect();
    assert_eq!(reported, ids, "each accepted id exactly once");
    assert!(seen.iter().all(|o| o.kind == OutcomeKind::Dropped));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(outcomes.all().len(), n, "nothing after close returned");
}

/// Design §6: a message goes to every webhook. A URL whose lane is backed up still gets each
/// message's first request after a faster URL delivered it; only retries stop there.
#[test]
fn a_slow_url_still_gets_every_message_a_fast_url_delivered() {
    let _s = serial();
    let fast = Server::answering(200);
    let slow = Server::start(|_| Reply::After(Duration::from_millis(100), 503));
    // One request at a time to each URL: the slow URL's lane backs up.
    let client = Client::new(
        config()
            .webhooks(vec![
                Webhook::new(format!("{}/fast", fast.url)),
                Webhook::new(format!("{}/slow", slow.url)),
            ])
            .max_in_flight(1)
            .workers(1),
    )
    .unwrap();
    for i in 0..10 {
        client
            .enqueue(&Message::track(format!("u{i}"), "Fanned"))
            .unwrap();
    }
    assert!(
        client.flush(Some(Duration::from_secs(10))),
        "the fast URL delivers"
    );
    assert_eq!(fast.count(), 10);
    assert!(
        slow.wait_for(10, Duration::from_secs(10)),
        "the slow URL got {} of the 10 first requests",
        slow.count()
    );
    // Its 503s are not retried: the messages were delivered through the fast URL.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(slow.count(), 10);
    assert!(client.close(Some(Duration::from_secs(5))).unwrap());
}
