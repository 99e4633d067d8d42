//! Each webhook URL's honest accounting under the seed's any-URL rule, against real
//! receivers on 127.0.0.1: what a URL took, refused, keeps retrying, and gave up on because
//! another URL took the message, with its minutes; carried to a successor.

mod support;

use outbound::{
    Client, Config, Engine, EngineConfig, HealthState, Message, MessageCounts, RetryPolicy, Webhook,
};
use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Outcomes, Reply, Server};

const N: u64 = 20;

fn config(urls: &[&Server], outcomes: &Outcomes, window: Duration) -> Config {
    support::config()
        .webhooks(
            urls.iter()
                .map(|s| Webhook::new(format!("{}/hook", s.url)))
                .collect(),
        )
        .on_outcome(outcomes.callback())
        .retry(RetryPolicy {
            base: Duration::from_millis(20),
            max_backoff: Duration::from_millis(50),
            max_retry_duration: window,
            ..Default::default()
        })
}

fn send(client: &Client) {
    for i in 0..N {
        client
            .enqueue(&Message::track(format!("u{i}"), "Counted"))
            .unwrap();
    }
}

fn counts(client: &Client, webhook: usize) -> MessageCounts {
    client.webhook_health()[webhook].messages
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn counted(delivered: u64, failed: u64, retrying: u64, abandoned: u64) -> MessageCounts {
    MessageCounts {
        delivered,
        failed,
        retrying,
        abandoned,
    }
}

#[test]
fn a_url_refusing_everything_beside_one_that_takes_it_reads_failed_not_delivered() {
    let good = Server::start(|_| Reply::Status(200));
    let refusing = Server::start(|_| Reply::Status(400));
    let outcomes = Outcomes::default();
    let client = Client::new(config(
        &[&good, &refusing],
        &outcomes,
        Duration::from_secs(30),
    ))
    .unwrap();
    send(&client);
    outcomes.wait_for(N as usize, Duration::from_secs(10));
    // A late refusal (after the other URL took it) counts as given up, not as failed: wait
    // for every answer, then read.
    wait_until("both URLs' answers", || {
        let r = counts(&client, 1);
        r.failed + r.abandoned == N
    });
    assert_eq!(counts(&client, 0), counted(N, 0, 0, 0));
    let r = counts(&client, 1);
    assert_eq!((r.delivered, r.retrying), (0, 0), "{r:?}");
    assert!(r.failed > 0, "a refusal is a failure: {r:?}");
    let health = client.webhook_health();
    assert_eq!(health[1].state, HealthState::Failing);
    assert_eq!(health[0].state, HealthState::Healthy);
    assert_eq!(client.stats().delivered, N, "each message still delivered");
    let minutes = client.webhook_minutes(1).unwrap();
    let (f, a): (u64, u64) =
        (minutes.iter()).fold((0, 0), |(f, a), m| (f + m.failed, a + m.abandoned));
    assert_eq!((f, a), (r.failed, r.abandoned), "its minutes add up");
    client.close(None).unwrap();
}

#[test]
fn a_url_failing_retryably_is_abandoned_when_another_takes_it() {
    // The taking URL answers after the failing one: the failing one waits for its next
    // round when the message is delivered.
    let slow = Server::start(|_| Reply::After(Duration::from_millis(150), 200));
    let failing = Server::start(|_| Reply::Status(503));
    let outcomes = Outcomes::default();
    let client = Client::new(config(
        &[&slow, &failing],
        &outcomes,
        Duration::from_secs(30),
    ))
    .unwrap();
    send(&client);
    outcomes.wait_for(N as usize, Duration::from_secs(10));
    assert_eq!(counts(&client, 0), counted(N, 0, 0, 0));
    assert_eq!(counts(&client, 1), counted(0, 0, 0, N));
    let minutes = client.webhook_minutes(1).unwrap();
    assert_eq!(minutes.iter().map(|m| m.abandoned).sum::<u64>(), N);
    assert!(client.webhook_minutes(2).is_err(), "no third webhook");
    client.close(None).unwrap();
}

#[test]
fn a_lone_url_counts_its_retries_then_their_end() {
    let status = Arc::new(AtomicU16::new(503));
    let s = status.clone();
    let server = Server::start(move |_| Reply::Status(s.load(SeqCst)));
    let outcomes = Outcomes::default();
    let client = Client::new(config(&[&server], &outcomes, Duration::from_secs(30))).unwrap();
    send(&client);
    wait_until("every message retrying", || {
        counts(&client, 0).retrying == N
    });
    assert_eq!(counts(&client, 0), counted(0, 0, N, 0));
    status.store(200, SeqCst);
    outcomes.wait_for(N as usize, Duration::from_secs(10));
    assert_eq!(counts(&client, 0), counted(N, 0, 0, 0));
    client.close(None).unwrap();

    // A window that closes: each message failed there, none left retrying.
    let outcomes = Outcomes::default();
    let down = Server::start(|_| Reply::Status(503));
    let client = Client::new(config(&[&down], &outcomes, Duration::from_millis(300))).unwrap();
    send(&client);
    outcomes.wait_for(N as usize, Duration::from_secs(10));
    assert_eq!(counts(&client, 0), counted(0, N, 0, 0));
    client.close(None).unwrap();
}

#[test]
fn a_successor_with_changed_settings_keeps_each_urls_counts() {
    let good = Server::start(|_| Reply::Status(200));
    let refusing = Server::start(|_| Reply::Status(400));
    let outcomes = Outcomes::default();
    let cfg = config(&[&good, &refusing], &outcomes, Duration::from_secs(30));
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let client = engine.client(cfg.clone()).unwrap();
    send(&client);
    outcomes.wait_for(N as usize, Duration::from_secs(10));
    wait_until("both URLs' answers", || {
        let r = counts(&client, 1);
        r.failed + r.abandoned == N
    });
    let before = counts(&client, 1);
    client.close(None).unwrap();
    // The refusing URL moves to the front: its counts follow it, not its place.
    let mut hooks = cfg.webhooks.to_vec();
    hooks.swap(0, 1);
    let after = engine.client_after(cfg.webhooks(hooks), &client).unwrap();
    assert_eq!(counts(&after, 0), before);
    assert_eq!(counts(&after, 1), counted(N, 0, 0, 0));
    after.close(None).unwrap();
}
