//! Subscriptions delivered, each its own destination. Against real receivers on
//! 127.0.0.1: which events each one gets (its trigger), what it gets (its mapping, method
//! and headers, signed as webhooks are), its own retries, outcomes, records and dead letters,
//! all or none with the message, and on the parent's spool.

mod support;

use outbound::subscription::{Method, Settings, Subscription};
use outbound::{Client, Config, Error, Message, OutcomeKind, Webhook};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;
use support::{Outcomes, Reply, Server};

const WAIT: Duration = Duration::from_secs(10);

fn hmac_sha1(key: &str, body: &[u8]) -> String {
    outbound::sign(key.as_bytes(), body)
}

fn track(user: &str, event: &str, properties: Value) -> Message {
    let props = properties.as_object().unwrap().clone();
    props
        .into_iter()
        .fold(Message::track(user, event), |m, (k, v)| m.property(k, v))
}

#[cfg(feature = "sqlite")]
fn temp_dir(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "outbound-subs-{name}-{}-{nanos}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn orders(url: &str) -> Subscription {
    let mut s = Settings::new(
        "orders",
        r#"type = "track" and event = "Order Completed""#,
        &format!("{url}/orders"),
    );
    s.method = Method::Put;
    s.headers = Some(json!({"X-Team": "growth"}));
    s.data = Some(json!({
        "order": {"@path": "$.properties.order_id"},
        "total": {"@path": "$.properties.total"},
        "who": {"@template": "{{userId}}"}
    }));
    Subscription::new(s).unwrap()
}

#[test]
fn each_subscription_gets_what_its_trigger_matches_as_its_mapping_says() {
    let (a, b, hook) = (
        Server::answering(200),
        Server::answering(200),
        Server::answering(200),
    );
    // As Segment's Config API exports it.
    let identifies = Subscription::from_segment(&json!({
        "name": "identifies",
        "subscribe": "type = \"identify\"",
        "mapping": {"url": format!("{}/ids", b.url), "method": "POST", "data": {"@path": "$."}}
    }))
    .unwrap();
    let outcomes = Outcomes::default();
    let client = Client::new(
        support::config()
            .webhooks(vec![Webhook::new(hook.url.clone())])
            .shared_secret("s3cret")
            .subscriptions(vec![orders(&a.url), identifies])
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    let order = client
        .enqueue(&track(
            "u1",
            "Order Completed",
            json!({"order_id": "o-1", "total": 12.5}),
        ))
        .unwrap();
    let other = client
        .enqueue(&track("u1", "Cart Viewed", json!({"order_id": "o-2"})))
        .unwrap();
    let who = client
        .enqueue(&Message::identify("u2").trait_("plan", "pro"))
        .unwrap();
    assert!(client.flush(Some(WAIT)));
    assert!(
        hook.wait_for(3, WAIT),
        "the classic webhook gets every event"
    );
    assert!(a.wait_for(1, WAIT) && b.wait_for(1, WAIT));
    std::thread::sleep(Duration::from_millis(200));
    let (a, b) = (a.requests(), b.requests());
    assert_eq!(
        (a.len(), b.len()),
        (1, 1),
        "each gets only what its trigger matches"
    );

    let put = &a[0];
    assert_eq!((put.method.as_str(), put.path.as_str()), ("PUT", "/orders"));
    assert_eq!(put.body, br#"{"order":"o-1","total":12.5,"who":"u1"}"#);
    assert_eq!(put.header("x-team"), Some("growth"));
    assert_eq!(put.header("content-type"), Some("application/json"));
    assert_eq!(
        put.header("x-signature"),
        Some(hmac_sha1("s3cret", &put.body).as_str())
    );

    let post = &b[0];
    assert_eq!(post.method, "POST");
    let event = post.json();
    assert_eq!(event["type"], "identify");
    assert_eq!(event["userId"], "u2");
    assert_eq!(event["traits"]["plan"], "pro");
    assert_eq!(event["messageId"], who.as_str());
    assert_eq!(
        post.header("x-signature"),
        Some(hmac_sha1("s3cret", &post.body).as_str())
    );

    // One outcome per message, and one per (message, subscription) it matched.
    let all = outcomes.wait_for(5, WAIT);
    let of = |id: &str, sub: Option<&str>| {
        all.iter()
            .filter(|o| &*o.message_id == id && o.subscription.as_deref() == sub)
            .map(|o| o.kind)
            .collect::<Vec<_>>()
    };
    assert_eq!(of(&order, None), [OutcomeKind::Delivered]);
    assert_eq!(of(&order, Some("orders")), [OutcomeKind::Delivered]);
    assert_eq!(of(&other, None), [OutcomeKind::Delivered]);
    assert_eq!(of(&who, Some("identifies")), [OutcomeKind::Delivered]);
    assert_eq!(all.len(), 5, "{all:#?}");
    let orders_client = client.subscription("orders").unwrap();
    assert_eq!(orders_client.stats().delivered, 1);
    assert_eq!(
        client.subscription("identifies").unwrap().stats().accepted,
        1
    );
    assert_eq!(client.stats().delivered, 3);
    assert_eq!(client.unmatched(), 0);
    client.close(None).unwrap();
}

#[test]
fn a_failing_subscription_retries_on_its_own_and_keeps_its_own_records() {
    // "slow" answers 503 twice, then 200; "fast" takes everything at once.
    let left = Arc::new(AtomicU16::new(2));
    let l = left.clone();
    let slow = Server::start(move |_| match l.load(SeqCst) {
        0 => Reply::Status(200),
        _ => {
            l.fetch_sub(1, SeqCst);
            Reply::Status(503)
        }
    });
    let fast = Server::answering(200);
    let sub = |name: &str, url: &str| {
        Subscription::new(Settings::new(name, r#"type = "track""#, url)).unwrap()
    };
    let outcomes = Outcomes::default();
    let client = Client::new(
        support::config()
            .subscriptions(vec![sub("slow", &slow.url), sub("fast", &fast.url)])
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    let id = client.enqueue(&track("u", "Signed Up", json!({}))).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(slow.count(), 3, "two 503s, then the delivery");
    assert_eq!(fast.count(), 1, "the other subscription is not sent again");
    let all = outcomes.all();
    assert_eq!(all.len(), 2, "{all:#?}");
    assert!(all
        .iter()
        .all(|o| o.kind == OutcomeKind::Delivered && *o.message_id == *id));
    let slow_client = client.subscription("slow").unwrap();
    assert_eq!(slow_client.stats().retries, 2);
    let attempts = slow_client.webhook_attempts(0).unwrap();
    assert_eq!(
        attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        [Some(200), Some(503), Some(503)],
        "newest first"
    );
    let health = slow_client.webhook_health();
    assert!(health[0].url.contains("127.0.0.1"), "{health:?}");
    assert_eq!(client.subscription("fast").unwrap().stats().retries, 0);
    // A subscription-only client's messages are the subscriptions'.
    assert_eq!(client.stats().accepted, 0);
    client.close(None).unwrap();
}

#[test]
fn an_event_nothing_matches_is_counted_and_one_the_mapping_fails_on_is_a_failed_delivery() {
    let server = Server::answering(200);
    let mut s = Settings::new("mapped", r#"type = "track""#, &format!("{}/in", server.url));
    s.headers = Some(json!({"@path": "$.properties.h"}));
    let outcomes = Outcomes::default();
    let client = Client::new(
        support::config()
            .subscriptions(vec![Subscription::new(s).unwrap()])
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    client.enqueue(&Message::page("u")).unwrap();
    assert_eq!(client.unmatched(), 2);
    // Headers mapped per event: these go out with this event's request only.
    client
        .enqueue(&track(
            "u",
            "A",
            json!({"h": {"X-Tenant": "t-1", "X-Signature": "mine"}}),
        ))
        .unwrap();
    // A string is not an object of headers: Segment fails the event.
    let bad = client
        .enqueue(&track("u", "B", json!({"h": "nope"})))
        .unwrap();
    client.flush(Some(WAIT));
    let got = server.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-tenant"), Some("t-1"));
    assert_eq!(
        got[0].header("x-signature"),
        Some("mine"),
        "the mapping's own signature wins"
    );
    let failed: Vec<_> = outcomes
        .all()
        .into_iter()
        .filter(|o| o.kind == OutcomeKind::Failed)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(&*failed[0].message_id, bad.as_str());
    assert!(failed[0].detail.contains("headers"), "{}", failed[0].detail);
    let attempts = client
        .subscription("mapped")
        .unwrap()
        .webhook_attempts(0)
        .unwrap();
    assert!(
        attempts.iter().any(|a| a.detail.contains("headers")),
        "{attempts:#?}"
    );
    client.close(None).unwrap();
}

// A spool in a directory: the `sqlite` feature (on by default).
#[cfg(feature = "sqlite")]
#[test]
fn a_subscriptions_dead_letters_are_its_own_and_replay_to_it() {
    let status = Arc::new(AtomicU16::new(400));
    let s = status.clone();
    let server = Server::start(move |_| Reply::Status(s.load(SeqCst)));
    let dir = temp_dir("dead");
    let sub = Subscription::new(Settings::new("crm", r#"event = "Lead""#, &server.url)).unwrap();
    let client = Client::new(
        support::config()
            .spool(dir.to_str().unwrap())
            .dead_letters(true)
            .subscriptions(vec![sub]),
    )
    .unwrap();
    let id = client
        .enqueue(&track("u", "Lead", json!({"score": 7})))
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    client.when_spooled(move |ok| tx.send(ok).unwrap());
    assert_eq!(rx.recv_timeout(WAIT), Ok(true));
    client.flush(Some(WAIT));
    let crm = client.subscription("crm").unwrap();
    // Written with the spool's next commit.
    let deadline = std::time::Instant::now() + WAIT;
    while crm.dead_letter_stats().unwrap().count == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let page = crm
        .dead_letters(&outbound::DeadLetterQuery::default())
        .unwrap();
    assert_eq!(page.letters.len(), 1);
    assert_eq!(page.letters[0].message_id, id);
    status.store(200, SeqCst);
    crm.replay_dead_letter(&id, None).unwrap();
    assert!(server.wait_for(2, WAIT));
    let replayed = &server.requests()[1];
    assert_eq!(replayed.json()["properties"]["score"], 7);
    client.close(None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn subscriptions_are_taken_all_or_none_with_the_message() {
    let server = Server::start(|_| Reply::Hang);
    let sub = Subscription::new(Settings::new("full", r#"type = "track""#, &server.url)).unwrap();
    let hook = Server::answering(200);
    let client = Client::new(
        support::config()
            .max_queue_size(2)
            .webhooks(vec![Webhook::new(hook.url.clone())])
            .subscriptions(vec![sub]),
    )
    .unwrap();
    client.enqueue(&track("u", "A", json!({}))).unwrap();
    client.enqueue(&track("u", "B", json!({}))).unwrap();
    // The subscription's queue is full: the message is refused whole, nothing of it queued.
    let refused = client.enqueue(&track("u", "C", json!({})));
    assert!(
        matches!(refused, Err(Error::QueueFull { .. })),
        "{refused:?}"
    );
    assert!(hook.wait_for(2, WAIT));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(hook.count(), 2, "the refused message went nowhere");
    assert_eq!(client.stats().accepted, 2);
    client.close(Some(Duration::from_millis(200))).unwrap();
}

#[test]
fn subscription_settings_are_checked_with_the_client() {
    let sub = |name: &str| {
        Subscription::new(Settings::new(
            name,
            r#"type = "track""#,
            "http://127.0.0.1:9/x",
        ))
        .unwrap()
    };
    let err = |c: Config| match Client::new(c) {
        Err(Error::Config { setting, reason }) => format!("{setting}: {reason}"),
        other => panic!("{:?}", other.map(|_| ())),
    };
    assert!(
        err(support::config().subscriptions(vec![sub("")])).starts_with("subscriptions[0].name")
    );
    let twice = err(support::config().subscriptions(vec![sub("a"), sub("a")]));
    assert!(twice.starts_with("subscriptions[1].name"), "{twice}");
    let many = err(support::config().subscriptions((0..51).map(|i| sub(&i.to_string())).collect()));
    assert!(many.contains("at most 50"), "{many}");
    let mut batched = Settings::new("b", r#"type = "track""#, "http://127.0.0.1:9/x");
    batched.batch_size = Some(4001);
    let refused = Subscription::new(batched).unwrap_err().to_string();
    assert!(refused.contains("batch_size"), "{refused}");
    // A client of subscriptions alone is a client.
    Client::new(support::config().subscriptions(vec![sub("only")]))
        .unwrap()
        .close(None)
        .unwrap();
}

// A spool in a directory: the `sqlite` feature (on by default).
#[cfg(feature = "sqlite")]
#[test]
fn what_a_subscription_left_in_the_spool_is_delivered_by_the_next_client() {
    let status = Arc::new(AtomicU16::new(503));
    let s = status.clone();
    let server = Server::start(move |_| Reply::Status(s.load(SeqCst)));
    let dir = temp_dir("resume");
    let config = || {
        let sub =
            Subscription::new(Settings::new("later", r#"type = "track""#, &server.url)).unwrap();
        support::config()
            .spool(dir.to_str().unwrap())
            .subscriptions(vec![sub])
    };
    let first = Client::new(config()).unwrap();
    let id = first.enqueue(&track("u", "Kept", json!({"n": 1}))).unwrap();
    assert!(server.wait_for(1, WAIT));
    first.close(Some(Duration::from_millis(100))).unwrap();
    assert_eq!(first.subscription("later").unwrap().stats().spooled, 1);
    drop(first);
    status.store(200, SeqCst);
    let outcomes = Outcomes::default();
    let second = Client::new(config().on_outcome(outcomes.callback())).unwrap();
    let got = outcomes.wait_for(1, WAIT);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(
        (&*got[0].message_id, got[0].kind),
        (id.as_str(), OutcomeKind::Delivered)
    );
    assert_eq!(got[0].subscription.as_deref(), Some("later"));
    let last = server.requests().pop().unwrap();
    assert_eq!(last.json()["properties"]["n"], 1);
    second.close(None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn batched(name: &str, url: &str, size: usize) -> Settings {
    let mut s = Settings::new(name, r#"type = "track""#, url);
    s.batch_size = Some(size);
    s.data = Some(json!({"n": {"@path": "$.properties.n"}}));
    s
}

#[test]
fn a_batching_subscription_sends_arrays_of_mapped_bodies_signed_as_set() {
    let (whole, first) = (Server::answering(200), Server::answering(200));
    let mut by_first = batched("first", &first.url, 3);
    by_first.batch_signature = outbound::subscription::BatchSignature::FirstElement;
    let outcomes = Outcomes::default();
    let client = Client::new(
        support::config()
            .shared_secret("s3cret")
            .flush_interval(Duration::from_millis(200))
            .subscriptions(vec![
                Subscription::new(batched("whole", &whole.url, 3)).unwrap(),
                Subscription::new(by_first).unwrap(),
            ])
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    for n in 0..7 {
        client.enqueue(&track("u", "E", json!({ "n": n }))).unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    let got = whole.requests();
    assert_eq!(got.len(), 3, "7 events in batches of 3");
    let mut all: Vec<Value> = Vec::new();
    for r in &got {
        assert_eq!(
            r.header("x-signature"),
            Some(hmac_sha1("s3cret", &r.body).as_str())
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        all.extend(r.json().as_array().unwrap().iter().cloned());
    }
    let mut ns: Vec<i64> = all.iter().map(|v| v["n"].as_i64().unwrap()).collect();
    ns.sort();
    assert_eq!(ns, (0..7).collect::<Vec<_>>());
    // Batches may be in flight together, so they may arrive in any order; each holds its
    // events in the order they were sent.
    assert!(
        got.iter()
            .any(|r| r.body == br#"[{"n":0},{"n":1},{"n":2}]"#),
        "the first batch, byte for byte"
    );
    // Segment's quirk: only the first element is signed.
    for r in first.requests() {
        let head = serde_json::to_vec(&r.json()[0]).unwrap();
        assert_eq!(
            r.header("x-signature"),
            Some(hmac_sha1("s3cret", &head).as_str())
        );
        assert_ne!(
            r.header("x-signature"),
            Some(hmac_sha1("s3cret", &r.body).as_str())
        );
    }
    assert_eq!(
        outcomes.all().len(),
        14,
        "one outcome per event and subscription"
    );
    let attempts = client
        .subscription("whole")
        .unwrap()
        .webhook_attempts(0)
        .unwrap();
    assert_eq!(attempts.len(), 3, "one record per request");
    client.close(None).unwrap();
}

// A spool in a directory: the `sqlite` feature (on by default).
#[cfg(feature = "sqlite")]
#[test]
fn one_answer_decides_a_batch_a_413_splits_it_and_failures_are_dead_letters() {
    // 413 for more than 2 events, 400 for a batch holding n = 3, else 200.
    let server = Server::start(|r| {
        let events = r.json();
        let events = events.as_array().unwrap();
        if events.len() > 2 {
            Reply::Status(413)
        } else if events.iter().any(|e| e["n"] == 3) {
            Reply::Status(400)
        } else {
            Reply::Status(200)
        }
    });
    let dir = temp_dir("batch-dead");
    let outcomes = Outcomes::default();
    let client = Client::new(
        support::config()
            .spool(dir.to_str().unwrap())
            .dead_letters(true)
            .subscriptions(vec![
                Subscription::new(batched("b", &server.url, 8)).unwrap()
            ])
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    for n in 0..8 {
        client.enqueue(&track("u", "E", json!({ "n": n }))).unwrap();
    }
    client.flush(Some(WAIT));
    let sizes: Vec<usize> = server
        .requests()
        .iter()
        .map(|r| r.json().as_array().unwrap().len())
        .collect();
    assert_eq!(sizes[0], 8, "{sizes:?}");
    assert!(
        sizes.iter().filter(|n| **n <= 2).count() == 4,
        "split down to pairs: {sizes:?}"
    );
    let all = outcomes.all();
    let failed: Vec<_> = all
        .iter()
        .filter(|o| o.kind == OutcomeKind::Failed)
        .collect();
    assert_eq!(
        failed.len(),
        2,
        "the pair with n = 3 fails together: {all:#?}"
    );
    assert_eq!(all.len(), 8);
    let b = client.subscription("b").unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while b.dead_letter_stats().unwrap().count < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let page = b
        .dead_letters(&outbound::DeadLetterQuery::default())
        .unwrap();
    assert_eq!(page.letters.len(), 2);
    let letter = b.dead_letter(&page.letters[0].message_id).unwrap().unwrap();
    let n = serde_json::from_slice::<Value>(letter.body.as_deref().unwrap()).unwrap()["n"]
        .as_i64()
        .unwrap();
    assert!(n == 2 || n == 3, "{n}");
    client.close(None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
