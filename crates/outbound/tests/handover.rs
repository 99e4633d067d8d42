//! A tenant's settings changed live (a service's sources): the old tenant hands over to a
//! new one of its name (`Client::hand_over`), webhooks that are off (`Webhook::enabled`), and
//! the successor (`Engine::tenant_after`) carrying on the delivery records of every webhook
//! URL it keeps, found by URL, not by place (a URL removed leaves its records behind). Real
//! receivers on 127.0.0.1, a real spool in a temp directory.

mod support;

use outbound::subscription::{Settings, Subscription};
use outbound::{Client, Config, Engine, EngineConfig, HealthState, Message, OutcomeKind, Webhook};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::{Outcomes, Reply, Server};

struct Dir(std::path::PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!(
            "outbound-handover-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn engine(dir: &Dir) -> Engine {
    Engine::new(EngineConfig {
        spool: Some(dir.0.clone().into()),
        spool_commit_interval: Duration::from_millis(2),
        ..EngineConfig::default()
    })
    .unwrap()
}

fn hooks(webhooks: Vec<Webhook>, outcomes: &Outcomes) -> Config {
    Config::default()
        .webhooks(webhooks)
        .on_outcome(outcomes.callback())
}

/// How many requests each message id got.
fn counts(server: &Server) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for r in server.requests() {
        let id = r.json()["messageId"].as_str().unwrap().to_string();
        *out.entry(id).or_insert(0) += 1;
    }
    out
}

fn enqueue(client: &outbound::Client, from: usize, n: usize) {
    for i in from..from + n {
        let msg = Message::track("u1", "E").message_id(format!("m-{i:03}"));
        client.enqueue(&msg).unwrap();
    }
}

/// Requests out when the old tenant hands over are waited for, not abandoned: the successor
/// resumes only what had not been delivered, so every message arrives exactly once. (With
/// `close(Some(ZERO))` in its place, the messages in flight are sent again.)
#[test]
fn a_tenant_handed_over_with_requests_out_leaves_its_successor_nothing_to_send_twice() {
    let dir = Dir::new("inflight");
    let engine = engine(&dir);
    // Slow answers: the hand-over meets requests out.
    let server = Server::start(|_| Reply::After(Duration::from_millis(300), 200));
    let old = engine
        .tenant(
            "src",
            hooks(vec![Webhook::new(&server.url)], &Outcomes::default()),
        )
        .unwrap();
    enqueue(&old, 0, 60);
    assert!(
        server.wait_for(1, Duration::from_secs(10)),
        "requests are out"
    );
    let started = Instant::now();
    assert!(old.hand_over(None).unwrap(), "every request out came back");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "no wait for the rest"
    );
    let s = old.stats();
    assert!(s.delivered > 0, "the requests out were kept: {s:?}");
    assert_eq!(s.delivered + s.spooled, 60, "{s:?}");
    assert_eq!((s.failed, s.dropped), (0, 0), "{s:?}");
    let new = engine
        .tenant(
            "src",
            hooks(vec![Webhook::new(&server.url)], &Outcomes::default()),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while counts(&server).len() < 60 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(new.flush(Some(Duration::from_secs(30))));
    assert_eq!(new.stats().resumed, s.spooled);
    let got = counts(&server);
    assert_eq!(got.len(), 60, "every message delivered");
    let twice: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent twice: {twice:?}");
    assert!(new.close(None).unwrap());
}

/// A webhook that is off keeps its place and is checked, but receives nothing; turned on in
/// the successor, it receives what is accepted from then on, and nothing accepted before.
#[test]
fn a_webhook_that_is_off_receives_nothing_until_it_is_turned_on() {
    let dir = Dir::new("enabled");
    let engine = engine(&dir);
    let (a, b) = (Server::answering(200), Server::answering(200));
    let off = vec![Webhook::new(&a.url), Webhook::new(&b.url).enabled(false)];
    let old = engine
        .tenant("src", hooks(off, &Outcomes::default()))
        .unwrap();
    enqueue(&old, 0, 10);
    assert!(old.flush(Some(Duration::from_secs(10))));
    assert!(a.wait_for(10, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!((a.count(), b.count()), (10, 0));
    assert!(old.hand_over(None).unwrap());
    let on = vec![Webhook::new(&a.url), Webhook::new(&b.url)];
    let new = engine
        .tenant("src", hooks(on, &Outcomes::default()))
        .unwrap();
    enqueue(&new, 10, 10);
    assert!(new.flush(Some(Duration::from_secs(10))));
    // The first 2xx delivers a message; the other URL's first request may still be out.
    assert!(a.wait_for(20, Duration::from_secs(10)) && b.wait_for(10, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(a.count(), 20);
    let mut ids: Vec<String> = counts(&b).into_keys().collect();
    ids.sort();
    let want: Vec<String> = (10..20).map(|i| format!("m-{i:03}")).collect();
    assert_eq!(ids, want, "only what was accepted once it was on");
    // Its header and URL are still checked while it is off.
    let bad = vec![Webhook::new(&a.url), Webhook::new("ftp://x").enabled(false)];
    let Err(e) = engine.tenant("bad", hooks(bad, &Outcomes::default())) else {
        panic!("a webhook that is off is checked all the same")
    };
    assert!(e.to_string().contains("webhooks[1].url"), "{e}");
    assert!(new.close(None).unwrap());
}

/// With every webhook off the client still takes messages (its source stays set up), sends
/// none, and says so in each outcome; a message pending for a webhook that is turned off is
/// not sent to it after the hand-over.
#[test]
fn with_every_webhook_off_nothing_is_sent_and_pending_messages_end_there() {
    let dir = Dir::new("alloff");
    let engine = engine(&dir);
    let down = Server::answering(503);
    let outcomes = Outcomes::default();
    let old = engine
        .tenant("src", hooks(vec![Webhook::new(&down.url)], &outcomes))
        .unwrap();
    enqueue(&old, 0, 5);
    assert!(down.wait_for(5, Duration::from_secs(10)), "tried, failing");
    assert!(old.hand_over(None).unwrap());
    assert_eq!(
        old.stats().spooled,
        5,
        "waiting to retry: left in the spool"
    );
    let outcomes = Outcomes::default();
    let off = vec![Webhook::new(&down.url).enabled(false)];
    let new = engine.tenant("src", hooks(off, &outcomes)).unwrap();
    enqueue(&new, 5, 5);
    let all = outcomes.wait_for(10, Duration::from_secs(10));
    assert_eq!(all.len(), 10);
    assert!(
        all.iter().all(|o| o.kind == OutcomeKind::Dropped),
        "{all:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let sent = down.count();
    assert_eq!(sent, 5, "no request after it was turned off");
    // A delete has nowhere to go, and the error says why.
    let e = new.enqueue(&Message::delete("u1")).unwrap_err().to_string();
    assert!(e.contains("every webhook of this client is off"), "{e}");
    assert!(new.close(None).unwrap() || new.stats().dropped == 10);
}

/// The tenant that replaces `previous` with `config`, as a service does when a customer's
/// settings change.
fn successor(engine: &Engine, config: Config, previous: &Client) -> Client {
    engine.tenant_after("src", config, previous).unwrap()
}

/// Sends `n` messages one after the other, each ended before the next: every URL gets one
/// attempt a message while its lane is up.
fn send_each(client: &Client, from: usize, n: usize) {
    for i in from..from + n {
        let msg = Message::track("u1", "Order Completed").message_id(format!("m-{i:03}"));
        client.enqueue(&msg).unwrap();
        assert!(client.flush(Some(Duration::from_secs(10))));
    }
}

/// Waits (at most 10 s) until `done`: records follow the outcomes they describe.
fn settled(done: impl Fn() -> bool) {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < end, "the records never settled");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn health_of(client: &Client, url: &str) -> outbound::WebhookHealth {
    let at = (client.config().webhooks.iter())
        .position(|w| w.url == url)
        .unwrap_or_else(|| panic!("{url} is not a webhook of this client"));
    client.webhook_health().remove(at)
}

fn attempts_of(client: &Client, url: &str) -> usize {
    let at = (client.config().webhooks.iter())
        .position(|w| w.url == url)
        .unwrap();
    client.webhook_attempts(at).unwrap().len()
}

#[test]
fn a_url_kept_keeps_its_records_wherever_it_moves_and_a_removed_one_leaves_them() {
    let dir = Dir::new("urls");
    let engine = engine(&dir);
    let (ok, bad, gone) = (
        Server::answering(200),
        Server::answering(500),
        Server::answering(200),
    );
    let first = support::config().webhooks(vec![
        Webhook::new(&ok.url),
        Webhook::new(&bad.url),
        Webhook::new(&gone.url),
    ]);
    let old = engine.tenant("src", first).unwrap();
    // Each message is delivered by the others; the failing URL fails it until its circuit
    // opens (20 failures in a row), then gets probes only.
    send_each(&old, 0, 24);
    // A message ends at the first URL that takes it; the others' attempts are recorded as
    // they end, a moment later.
    settled(|| attempts_of(&old, &ok.url) == 24);
    let failing = health_of(&old, &bad.url);
    assert_eq!(failing.state, HealthState::CircuitOpen, "{failing:?}");
    assert!(failing.consecutive_failures >= 20, "{failing:?}");
    let (bad_attempts, ok_attempts) = (attempts_of(&old, &bad.url), attempts_of(&old, &ok.url));
    assert!(bad_attempts >= 20 && ok_attempts == 24);
    assert!(old.hand_over(None).unwrap());
    // Read again once handed over: a probe may have failed since.
    let (failing, bad_attempts) = (health_of(&old, &bad.url), attempts_of(&old, &bad.url));

    // A header added to the other URL, the two swapped, the third removed.
    let second = support::config().webhooks(vec![
        Webhook::new(&bad.url),
        Webhook::new(&ok.url).header("X-Team", "growth"),
    ]);
    let new = successor(&engine, second, &old);
    let carried = health_of(&new, &bad.url);
    assert_eq!(
        carried.consecutive_failures, failing.consecutive_failures,
        "{carried:?}"
    );
    assert_eq!(carried.state, HealthState::CircuitOpen, "{carried:?}");
    assert_eq!(carried.last_error, failing.last_error);
    assert_eq!(carried.attempts_5m, failing.attempts_5m);
    assert_eq!(attempts_of(&new, &bad.url), bad_attempts);
    assert_eq!(attempts_of(&new, &ok.url), ok_attempts);
    assert_eq!(health_of(&new, &ok.url).consecutive_failures, 0);
    assert_eq!(
        new.webhook_health().len(),
        2,
        "the removed URL's records are gone"
    );
    // The predecessor keeps its own (what runs again should the new settings not start).
    assert_eq!(health_of(&old, &bad.url), failing);

    // Its lane carries on as it was: one probe, which fails, and the circuit stays open;
    // the new records follow the old ones.
    send_each(&new, 100, 1);
    settled(|| attempts_of(&new, &ok.url) == ok_attempts + 1);
    settled(|| health_of(&new, &bad.url).consecutive_failures > failing.consecutive_failures);
    let after = health_of(&new, &bad.url);
    assert_eq!(after.state, HealthState::CircuitOpen, "{after:?}");
    let newest = &new.webhook_attempts(1).unwrap()[0];
    assert_eq!(&*newest.message_id, "m-100");
    assert!(new.hand_over(None).unwrap());

    // The removed URL back: it starts with no records.
    let third = support::config().webhooks(vec![
        Webhook::new(&bad.url),
        Webhook::new(&ok.url).header("X-Team", "growth"),
        Webhook::new(&gone.url),
    ]);
    let last = successor(&engine, third, &new);
    let back = health_of(&last, &gone.url);
    assert_eq!((back.attempts_5m, back.consecutive_failures), (0, 0));
    assert_eq!(back.last_success, None);
    assert_eq!(attempts_of(&last, &gone.url), 0);
    assert!(attempts_of(&last, &bad.url) > bad_attempts);
    assert!(last.close(Some(Duration::from_secs(5))).is_ok());
}

fn orders(name: &str, url: &str, team: &str) -> Subscription {
    let mut s = Settings::new(name, r#"type = "track""#, url);
    s.headers = Some(serde_json::json!({ "X-Team": team }));
    Subscription::new(s).unwrap()
}

#[test]
fn a_subscription_keeps_its_records_by_name_and_url() {
    let dir = Dir::new("subscriptions");
    let engine = engine(&dir);
    let bad = Server::answering(500);
    let first = support::config().subscriptions(vec![orders("orders", &bad.url, "growth")]);
    let old = engine.tenant("src", first).unwrap();
    for i in 0..3 {
        let msg = Message::track("u1", "Order Completed").message_id(format!("s-{i}"));
        old.enqueue(&msg).unwrap();
    }
    let sub = old.subscription("orders").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while sub.webhook_health()[0].consecutive_failures < 6 {
        assert!(
            std::time::Instant::now() < deadline,
            "the subscription is tried"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(old.hand_over(None).unwrap());
    let before = sub.webhook_health().remove(0);
    let tried = sub.webhook_attempts(0).unwrap().len();

    // Its headers changed, and a subscription of another name to the same URL added.
    let second = support::config().subscriptions(vec![
        orders("orders", &bad.url, "sales"),
        orders("refunds", &bad.url, "sales"),
    ]);
    let new = successor(&engine, second, &old);
    let kept = new.subscription("orders").unwrap();
    // Its messages are resumed and retried: the records go on from where they were.
    let carried = kept.webhook_health().remove(0);
    assert!(
        carried.consecutive_failures >= before.consecutive_failures,
        "{carried:?}"
    );
    assert!(carried.last_error.is_some());
    assert!(kept.webhook_attempts(0).unwrap().len() >= tried);
    let other = new
        .subscription("refunds")
        .unwrap()
        .webhook_health()
        .remove(0);
    assert_eq!((other.attempts_5m, other.consecutive_failures), (0, 0));
    assert!(new.close(Some(Duration::from_millis(500))).is_ok());
}
