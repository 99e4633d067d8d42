//! A tenant's settings changed live: its successor (`Engine::tenant_after`) carries on the
//! delivery records of every webhook URL it keeps, found by URL, not by place; a URL removed
//! leaves its records behind. Real receivers on 127.0.0.1, a real spool in a temp directory.

mod support;

use outbound::subscription::{Settings, Subscription};
use outbound::{Client, Config, Engine, EngineConfig, HealthState, Message, Webhook};
use std::time::Duration;
use support::Server;

struct Dir(std::path::PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!(
            "outbound-successor-{name}-{}-{}",
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
    let failing = health_of(&old, &bad.url);
    assert_eq!(failing.state, HealthState::CircuitOpen, "{failing:?}");
    assert!(failing.consecutive_failures >= 20, "{failing:?}");
    let (bad_attempts, ok_attempts) = (attempts_of(&old, &bad.url), attempts_of(&old, &ok.url));
    assert!(bad_attempts >= 20 && ok_attempts == 24);
    assert!(old.hand_over(None).unwrap());

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
    let after = health_of(&new, &bad.url);
    assert_eq!(after.state, HealthState::CircuitOpen, "{after:?}");
    assert_eq!(after.consecutive_failures, failing.consecutive_failures + 1);
    assert_eq!(attempts_of(&new, &ok.url), ok_attempts + 1);
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
