//! Many clients on one engine (the relay's sources): they share its threads, and each keeps
//! its own settings, queue, outcomes and close. Real receivers on 127.0.0.1.

mod support;

use outbound::{Config, Engine, EngineConfig, Message, OutcomeKind, Webhook};
use std::time::{Duration, Instant};
use support::{Outcomes, Reply, Server};

/// Thread counts mean something only with one test at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn hooks(url: &str, outcomes: &Outcomes) -> Config {
    Config {
        webhooks: vec![Webhook::new(url)],
        on_outcome: Some(outcomes.callback()),
        ..Config::default()
    }
}

#[test]
fn clients_on_an_engine_start_no_threads_of_their_own() {
    let _one = serial();
    let server = Server::answering(200);
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let outcomes = Outcomes::default();
    let before = threads();
    let clients: Vec<_> = (0..200)
        .map(|_| engine.client(hooks(&server.url, &outcomes)).unwrap())
        .collect();
    assert!(threads() <= before, "200 clients, not one thread more");
    for (i, c) in clients.iter().enumerate() {
        c.enqueue(&Message::track(format!("u{i}"), "E")).unwrap();
    }
    let got = outcomes.wait_for(200, Duration::from_secs(20));
    assert_eq!(got.len(), 200);
    assert!(got.iter().all(|o| o.kind == OutcomeKind::Delivered));
    for c in &clients {
        assert_eq!(c.stats().delivered, 1, "each client counts its own");
    }
    for c in clients {
        assert!(c.close(None).unwrap());
    }
}

#[test]
fn a_hanging_client_does_not_hold_up_another_on_the_same_engine() {
    let _one = serial();
    let hang = Server::start(|_| Reply::Hang);
    let quick = Server::answering(200);
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let (stuck, fine) = (Outcomes::default(), Outcomes::default());
    let slow = engine
        .client(Config {
            timeout: Duration::from_secs(3),
            ..hooks(&hang.url, &stuck)
        })
        .unwrap();
    for i in 0..200 {
        slow.enqueue(&Message::track(format!("u{i}"), "E")).unwrap();
    }
    let client = engine.client(hooks(&quick.url, &fine)).unwrap();
    let started = Instant::now();
    for i in 0..100 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    assert!(client.flush(Some(Duration::from_secs(10))));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "delivered beside the hung one: {:?}",
        started.elapsed()
    );
    assert_eq!(fine.all().len(), 100);
    assert!(
        stuck.all().is_empty(),
        "the hung receiver has answered nothing"
    );
    assert!(client.close(None).unwrap());
    // Closing the hung one ends what it holds (in flight: delivery unknown) and leaves the
    // engine running for the others.
    assert!(!slow.close(Some(Duration::from_millis(100))).unwrap());
    assert_eq!(stuck.all().len(), 200);
    assert!(stuck.all().iter().all(|o| o.kind == OutcomeKind::Dropped));
}

#[test]
fn a_client_closed_leaves_the_others_running() {
    let _one = serial();
    let server = Server::answering(200);
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let (a_out, b_out) = (Outcomes::default(), Outcomes::default());
    let a = engine.client(hooks(&server.url, &a_out)).unwrap();
    let b = engine.client(hooks(&server.url, &b_out)).unwrap();
    a.enqueue(&Message::track("u1", "E")).unwrap();
    assert!(a.close(None).unwrap());
    assert!(a.enqueue(&Message::track("u1", "E")).is_err(), "closed");
    for i in 0..10 {
        b.enqueue(&Message::track(format!("u{i}"), "E")).unwrap();
    }
    assert!(b.flush(Some(Duration::from_secs(10))));
    assert_eq!((a_out.all().len(), b_out.all().len()), (1, 10));
    // The engine handle goes first; the client keeps the threads alive until it closes.
    drop(engine);
    b.enqueue(&Message::track("u1", "E")).unwrap();
    assert!(b.close(None).unwrap());
    assert_eq!(b_out.all().len(), 11);
}
