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

/// An engine whose threads are all up and named (a new thread takes its name once running).
fn settled(engine: Engine) -> Engine {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = threads();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = threads();
        if now == last || Instant::now() > deadline {
            return engine;
        }
        last = now;
    }
}

/// The library's threads in this process (named `outbound-…`; the receivers' are not).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|name| name.starts_with("outbound"))
        })
        .count()
}

fn hooks(url: &str, outcomes: &Outcomes) -> Config {
    Config::default()
        .webhooks(vec![Webhook::new(url)])
        .on_outcome(outcomes.callback())
}

#[test]
fn clients_on_an_engine_start_no_threads_of_their_own() {
    let _one = serial();
    let server = Server::answering(200);
    let engine = settled(Engine::new(EngineConfig::default()).unwrap());
    let outcomes = Outcomes::default();
    let before = threads();
    let clients: Vec<_> = (0..200)
        .map(|_| engine.client(hooks(&server.url, &outcomes)).unwrap())
        .collect();
    let after = threads();
    assert!(
        after <= before,
        "200 clients, not one thread more: {before} -> {after}"
    );
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
        .client(hooks(&hang.url, &stuck).timeout(Duration::from_secs(3)))
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

/// A directory removed at the end of the test.
#[cfg(feature = "sqlite")]
struct Dir(std::path::PathBuf);

#[cfg(feature = "sqlite")]
impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!(
            "outbound-engine-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    /// The spool files in it (not in subdirectories).
    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".db"))
            .collect();
        names.sort();
        names
    }
}

#[cfg(feature = "sqlite")]
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(feature = "sqlite")]
fn spooled(dir: &Dir, window: usize) -> Engine {
    Engine::new(EngineConfig {
        spool: Some(dir.0.clone().into()),
        spool_commit_interval: Duration::from_millis(5),
        memory_window: window,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// Port 9 (discard) is closed here: every attempt fails and is retried, so messages stay.
#[cfg(feature = "sqlite")]
const NOWHERE: &str = "http://127.0.0.1:9/hook";

#[cfg(feature = "sqlite")]
fn sent_ids(server: &Server) -> Vec<String> {
    let mut ids: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["messageId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// An engine on a spool in `dir` that may hold 20,000 bytes for all its tenants, committing
/// every `commit`, and two tenants on it, each with its own bound far above that: the
/// engine's total is what refuses.
#[cfg(feature = "sqlite")]
fn bounded_at_20_000(dir: &Dir, commit: Duration) -> (Engine, [outbound::Client; 2]) {
    let engine = Engine::new(EngineConfig {
        spool: Some(dir.0.clone().into()),
        spool_commit_interval: commit,
        spool_max_bytes: Some(20_000),
        ..EngineConfig::default()
    })
    .unwrap();
    let tenant = |name: &str| {
        engine
            .tenant(name, hooks(NOWHERE, &Outcomes::default()))
            .unwrap()
    };
    let tenants = [tenant("a"), tenant("b")];
    (engine, tenants)
}

/// Message `i`, about 1 KB.
#[cfg(feature = "sqlite")]
fn big(i: usize) -> Message {
    Message::track("u1", "E")
        .message_id(format!("m-{i}"))
        .property("pad", "x".repeat(1_000))
}

#[cfg(feature = "sqlite")]
#[test]
fn the_engine_s_spool_max_bytes_bounds_every_tenant_together() {
    let _one = serial();
    let dir = Dir::new("total");
    let (engine, [a, b]) = bounded_at_20_000(&dir, Duration::from_millis(5));
    let mut taken = 0;
    let refused = loop {
        match a.enqueue(&big(taken)) {
            Ok(_) => taken += 1,
            Err(e) => break e,
        }
        assert!(taken < 100, "never refused");
        // Paced: the bytes are counted by the store after each commit, not only as the
        // calls took them.
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(refused, outbound::Error::SpoolFull { limit: 20_000 });
    assert!(taken >= 5, "{taken} taken");
    assert_eq!(
        b.enqueue(&big(1_000)).unwrap_err(),
        outbound::Error::SpoolFull { limit: 20_000 },
        "the other tenant shares the bound"
    );
    let bytes = a.spool_bytes();
    assert!(
        bytes > 0 && bytes <= 20_000 + 2_000,
        "{bytes} bytes, {taken} taken"
    );
    a.close(Some(Duration::ZERO)).unwrap();
    b.close(Some(Duration::ZERO)).unwrap();
    // A closed tenant's records no longer count: a new one has room again.
    let c = engine
        .tenant("c", hooks(NOWHERE, &Outcomes::default()))
        .unwrap();
    c.enqueue(&big(2_000)).unwrap();
    c.close(Some(Duration::ZERO)).unwrap();
}

#[cfg(feature = "sqlite")]
#[test]
fn calls_within_one_commit_do_not_pass_the_engine_s_spool_max_bytes_together() {
    let _one = serial();
    let dir = Dir::new("total-at-once");
    // A long commit interval: every call below lands before the first commit is published.
    let (_engine, tenants) = bounded_at_20_000(&dir, Duration::from_millis(500));
    let mut taken = 0;
    let refused = loop {
        match tenants[taken % 2].enqueue(&big(taken)) {
            Ok(_) => taken += 1,
            Err(e) => break e,
        }
        assert!(taken < 100, "never refused: {taken} taken at once");
    };
    assert_eq!(refused, outbound::Error::SpoolFull { limit: 20_000 });
    let held = || tenants.iter().map(|t| t.spool_bytes()).sum::<u64>();
    assert!(
        taken >= 10 && held() <= 20_000,
        "{taken} taken, {} bytes",
        held()
    );
    // Once committed, the store counts what the calls took: the bound still holds.
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(held() > 0 && held() <= 20_000, "{} bytes", held());
    assert_eq!(
        tenants[0].enqueue(&big(1_000)).unwrap_err(),
        outbound::Error::SpoolFull { limit: 20_000 }
    );
    for t in tenants {
        t.close(Some(Duration::ZERO)).unwrap();
    }
}

#[test]
fn an_engine_refuses_a_spool_max_bytes_of_zero() {
    let Err(outbound::Error::Config { setting, .. }) = Engine::new(EngineConfig {
        spool_max_bytes: Some(0),
        ..EngineConfig::default()
    }) else {
        panic!("accepted")
    };
    assert_eq!(setting, "spool_max_bytes");
}

#[cfg(feature = "sqlite")]
#[test]
fn tenants_share_one_spool_file_and_each_resumes_its_own_after_a_restart() {
    let _one = serial();
    let dir = Dir::new("shared");
    let engine = settled(spooled(&dir, 100_000));
    let before = threads();
    let tenants: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            engine
                .tenant(name, hooks(NOWHERE, &Outcomes::default()))
                .unwrap()
        })
        .collect();
    assert!(threads() <= before, "a tenant opens no thread");
    for (t, name) in tenants.iter().zip(["a", "b", "c"]) {
        for i in 0..20 {
            let msg = Message::track("u1", "E").message_id(format!("{name}-{i}"));
            t.enqueue(&msg).unwrap();
        }
    }
    for t in &tenants {
        assert!(
            !t.flush(Some(Duration::from_millis(200))),
            "nothing delivered yet"
        );
    }
    assert_eq!(
        dir.files().len(),
        1,
        "one file for every tenant: {:?}",
        dir.files()
    );
    for t in tenants {
        t.close(Some(Duration::ZERO)).unwrap();
        assert_eq!(t.stats().spooled, 20, "left in the spool");
    }
    drop(engine);
    // A new engine on the directory: each tenant gets its own messages back.
    let engine = spooled(&dir, 100_000);
    let servers: Vec<Server> = (0..3).map(|_| Server::answering(200)).collect();
    let clients: Vec<_> = ["c", "a", "b"]
        .iter()
        .zip(&servers)
        .map(|(name, s)| {
            engine
                .tenant(name, hooks(&s.url, &Outcomes::default()))
                .unwrap()
        })
        .collect();
    for (s, name) in servers.iter().zip(["c", "a", "b"]) {
        assert!(s.wait_for(20, Duration::from_secs(20)), "{name}");
        let mut want: Vec<String> = (0..20).map(|i| format!("{name}-{i}")).collect();
        want.sort();
        assert_eq!(sent_ids(s), want, "{name} got its own, each once");
    }
    for c in &clients {
        assert_eq!(c.stats().resumed, 20);
        assert!(c.flush(Some(Duration::from_secs(10))));
    }
    for c in clients {
        assert!(c.close(None).unwrap());
    }
    drop(engine);
    assert!(dir.files().is_empty(), "nothing left: {:?}", dir.files());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_backlog_past_the_memory_window_waits_in_the_spool_and_all_of_it_is_delivered_once() {
    let _one = serial();
    let dir = Dir::new("window");
    let engine = spooled(&dir, 300);
    let server = Server::answering(200);
    let outcomes = Outcomes::default();
    let client = engine
        .tenant(
            "burst",
            hooks(&server.url, &outcomes).max_queue_size(10_000),
        )
        .unwrap();
    for i in 0..3_000 {
        let msg = Message::track("u1", "E").message_id(format!("m-{i:05}"));
        client.enqueue(&msg).unwrap();
    }
    assert!(client.flush(Some(Duration::from_secs(60))));
    let got = outcomes.all();
    assert_eq!(got.len(), 3_000);
    assert!(got.iter().all(|o| o.kind == OutcomeKind::Delivered));
    let want: Vec<String> = (0..3_000).map(|i| format!("m-{i:05}")).collect();
    assert_eq!(sent_ids(&server), want, "each once");
    assert_eq!(
        client.stats().resumed,
        0,
        "parked messages are its own, not resumed ones"
    );
    assert!(client.close(None).unwrap());
}

#[cfg(feature = "sqlite")]
#[test]
fn large_messages_past_the_window_s_bytes_wait_in_the_spool_and_all_are_delivered_once() {
    use std::sync::atomic::Ordering::SeqCst;
    let _one = serial();
    // Messages of about 16 KiB to a receiver that takes 50 ms each: what is in memory is
    // what can be out at once (`most`, counted by the receiver).
    let run = |window_bytes: u64| -> (usize, Vec<String>) {
        let dir = Dir::new("window-bytes");
        let engine = Engine::new(EngineConfig {
            spool: Some(dir.0.clone().into()),
            spool_commit_interval: Duration::from_millis(5),
            memory_window_bytes: window_bytes,
            ..EngineConfig::default()
        })
        .unwrap();
        let (server, most) = support::holding(Duration::from_millis(50));
        let outcomes = Outcomes::default();
        let client = engine
            .tenant("big", hooks(&server.url, &outcomes).max_queue_size(10_000))
            .unwrap();
        for msg in support::padded_tracks(40, 16_000) {
            client.enqueue(&msg).unwrap();
        }
        assert!(client.flush(Some(Duration::from_secs(60))));
        let got = outcomes.all();
        assert_eq!(got.len(), 40);
        assert!(got.iter().all(|o| o.kind == OutcomeKind::Delivered));
        assert!(client.close(None).unwrap());
        (most.load(SeqCst), sent_ids(&server))
    };
    let want: Vec<String> = (0..40).map(|i| format!("m-{i:03}")).collect();
    // 64 KiB hold four of them (a fifth would pass it): the rest waits in the spool.
    let (bounded, ids) = run(64 << 10);
    assert_eq!(ids, want, "each once");
    assert!((1..=4).contains(&bounded), "{bounded} out at once");
    // The default's 80 MiB holds all 40: more go out at once.
    let (unbounded, ids) = run(EngineConfig::default().memory_window_bytes);
    assert_eq!(ids, want, "each once");
    assert!(unbounded > 4, "{unbounded} out at once");
}

#[cfg(feature = "sqlite")]
#[test]
fn large_messages_left_by_a_closed_tenant_are_read_back_within_the_window_s_bytes() {
    use std::sync::atomic::Ordering::SeqCst;
    let _one = serial();
    let dir = Dir::new("window-bytes-left");
    let engine = Engine::new(EngineConfig {
        spool: Some(dir.0.clone().into()),
        spool_commit_interval: Duration::from_millis(5),
        memory_window_bytes: 64 << 10,
        ..EngineConfig::default()
    })
    .unwrap();
    let old = engine
        .tenant("big", hooks(NOWHERE, &Outcomes::default()))
        .unwrap();
    for msg in support::padded_tracks(40, 16_000) {
        old.enqueue(&msg).unwrap();
    }
    assert!(!old.flush(Some(Duration::from_millis(300))));
    old.close(Some(Duration::ZERO)).unwrap();
    // Taken over by the next tenant of the name: their sizes are known only once read, so
    // they come back a few at a time, never more than the window's 64 KiB hold.
    let (server, most) = support::holding(Duration::from_millis(50));
    let new = engine
        .tenant("big", hooks(&server.url, &Outcomes::default()))
        .unwrap();
    assert!(server.wait_for(40, Duration::from_secs(30)));
    let want: Vec<String> = (0..40).map(|i| format!("m-{i:03}")).collect();
    assert_eq!(sent_ids(&server), want, "each once");
    assert_eq!(new.stats().resumed, 40);
    let most = most.load(SeqCst);
    assert!((1..=4).contains(&most), "{most} out at once");
    assert!(new.close(None).unwrap());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_tenant_closed_with_a_backlog_leaves_it_to_the_next_tenant_of_its_name() {
    let _one = serial();
    let dir = Dir::new("reopen");
    let engine = spooled(&dir, 300);
    let old = engine
        .tenant("src", hooks(NOWHERE, &Outcomes::default()))
        .unwrap();
    // Past the window: most of it parked, the rest in memory retrying.
    for i in 0..1_000 {
        let msg = Message::track("u1", "E").message_id(format!("m-{i:04}"));
        old.enqueue(&msg).unwrap();
    }
    assert!(!old.flush(Some(Duration::from_millis(300))));
    old.close(Some(Duration::ZERO)).unwrap();
    let s = old.stats();
    assert_eq!(
        (s.spooled, s.delivered, s.failed, s.dropped),
        (1_000, 0, 0, 0)
    );
    // The same engine, the same name, a receiver that answers: every message, once.
    let server = Server::answering(200);
    let new = engine
        .tenant("src", hooks(&server.url, &Outcomes::default()))
        .unwrap();
    assert!(server.wait_for(1_000, Duration::from_secs(30)));
    let want: Vec<String> = (0..1_000).map(|i| format!("m-{i:04}")).collect();
    assert_eq!(sent_ids(&server), want);
    assert_eq!(new.stats().resumed, 1_000);
    assert!(new.close(None).unwrap());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_client_s_own_spool_of_an_earlier_version_in_a_subdirectory_is_taken_over_by_its_tenant() {
    let _one = serial();
    let dir = Dir::new("legacy");
    // What a relay of the version before tenants left: a spool per source, by name.
    let legacy = dir.0.join("checkout");
    let old = outbound::Client::new(hooks(NOWHERE, &Outcomes::default()).spool(legacy)).unwrap();
    for i in 0..5 {
        old.enqueue(&Message::track("u1", "E").message_id(format!("old-{i}")))
            .unwrap();
    }
    old.close(Some(Duration::from_millis(100))).unwrap();
    drop(old);
    let server = Server::answering(200);
    let engine = spooled(&dir, 100_000);
    let other = engine
        .tenant("web", hooks(NOWHERE, &Outcomes::default()))
        .unwrap();
    let client = engine
        .tenant("checkout", hooks(&server.url, &Outcomes::default()))
        .unwrap();
    assert!(server.wait_for(5, Duration::from_secs(20)));
    assert_eq!(
        sent_ids(&server),
        (0..5).map(|i| format!("old-{i}")).collect::<Vec<_>>()
    );
    assert_eq!(other.stats().resumed, 0, "another tenant's are not its");
    assert!(client.close(None).unwrap());
    other.close(Some(Duration::ZERO)).unwrap();
}

#[test]
fn an_engine_refuses_no_io_threads_too_many_and_an_empty_window_naming_each() {
    for (config, setting) in [
        (
            EngineConfig {
                io_threads: 0,
                ..EngineConfig::default()
            },
            "io_threads",
        ),
        (
            EngineConfig {
                io_threads: outbound::MAX_IO_THREADS + 1,
                ..EngineConfig::default()
            },
            "io_threads",
        ),
        (
            EngineConfig {
                memory_window: 0,
                ..EngineConfig::default()
            },
            "memory_window",
        ),
        (
            EngineConfig {
                memory_window_bytes: 0,
                ..EngineConfig::default()
            },
            "memory_window_bytes",
        ),
    ] {
        match Engine::new(config) {
            Err(outbound::Error::Config { setting: s, reason }) => {
                assert_eq!(s, setting, "{reason}")
            }
            other => panic!("{setting}: {:?}", other.map(|_| ())),
        }
    }
    // The bounds themselves are fine.
    for io_threads in [1, outbound::MAX_IO_THREADS] {
        let engine = Engine::new(EngineConfig {
            io_threads,
            memory_window: 1,
            ..EngineConfig::default()
        });
        assert!(engine.is_ok(), "{io_threads}");
    }
}
