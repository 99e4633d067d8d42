//! Threads, memory bounds, flush/close/drop and logging.

mod support;

use outbound::{Client, Error, Message, OutcomeKind, Reason};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{ingestion, Outcomes, Reply, Server};

#[test]
fn a_full_queue_rejects_without_blocking() {
    let server = Server::start(|_| Reply::Hang);
    let config = ingestion(&server)
        .max_queue_size(50)
        .flush_at(10)
        .timeout(Duration::from_secs(30));
    let client = Client::new(config).unwrap();
    let start = Instant::now();
    let mut full = 0;
    for i in 0..(50 + 7) {
        match client.enqueue(&Message::identify(format!("u{i}"))) {
            Ok(_) => {}
            Err(Error::QueueFull { capacity: 50 }) => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(full, 7);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "enqueue never waits: {:?}",
        start.elapsed()
    );
    let s = client.stats();
    assert_eq!((s.accepted, s.dropped, s.queue_full), (50, 7, 7));
    assert!(!client.close(Some(Duration::from_millis(200))).unwrap());
}

/// `queue_full_wait`: a call that finds the queue full waits for an outcome to free a slot,
/// and is taken then; one that waits longer than the setting fails as before.
#[test]
fn queue_full_wait_waits_for_room() {
    let server = Server::start(|_| Reply::After(Duration::from_millis(300), 200));
    let client = Client::new(
        ingestion(&server)
            .max_queue_size(2)
            .flush_at(1)
            .queue_full_wait(Duration::from_secs(10)),
    )
    .unwrap();
    let start = Instant::now();
    for i in 0..4 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    // The third and fourth calls each waited for a request of 300 ms to come back.
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert!(client.flush(Some(Duration::from_secs(10))));
    let s = client.stats();
    assert_eq!((s.accepted, s.delivered, s.dropped), (4, 4, 0));
    client.close(None).unwrap();

    let server = Server::start(|_| Reply::Hang);
    let client = Client::new(
        ingestion(&server)
            .max_queue_size(1)
            .queue_full_wait(Duration::from_millis(200))
            .timeout(Duration::from_secs(30)),
    )
    .unwrap();
    client.enqueue(&Message::identify("a")).unwrap();
    let start = Instant::now();
    assert_eq!(
        client.enqueue(&Message::identify("b")).unwrap_err(),
        Error::QueueFull { capacity: 1 }
    );
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(190) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    let s = client.stats();
    assert_eq!((s.accepted, s.dropped, s.queue_full), (1, 1, 1));
    assert!(!client.close(Some(Duration::from_millis(200))).unwrap());

    let e = Client::new(ingestion(&server).queue_full_wait(Duration::from_secs(3601)))
        .err()
        .unwrap();
    assert!(
        matches!(&e, Error::Config { setting, .. } if setting == "queue_full_wait"),
        "{e}"
    );
}

/// `close` ends a wait for room at once: the waiting call fails as closed (nothing taken).
#[test]
fn close_ends_a_wait_for_room() {
    let server = Server::start(|_| Reply::Hang);
    let client = Arc::new(
        Client::new(
            ingestion(&server)
                .max_queue_size(1)
                .queue_full_wait(Duration::from_secs(60))
                .timeout(Duration::from_secs(30)),
        )
        .unwrap(),
    );
    client.enqueue(&Message::identify("a")).unwrap();
    let waiter = {
        let client = client.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            (client.enqueue(&Message::identify("b")), start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(!waiter.is_finished(), "the second call waits for room");
    let start = Instant::now();
    assert!(!client.close(Some(Duration::from_millis(300))).unwrap());
    let (answer, waited) = waiter.join().unwrap();
    assert_eq!(answer.unwrap_err(), Error::Closed);
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
    let s = client.stats();
    assert_eq!((s.accepted, s.queue_full), (1, 0));
}

/// `enqueue_each` takes messages one at a time, by value: an error given is its entry's
/// answer as it is, the others are encoded and queued all or none, and each answer's id is
/// the one the message goes out with.
#[test]
fn enqueue_each_answers_in_order_and_passes_errors_through() {
    let server = Server::start(|_| Reply::Status(200));
    let client = Client::new(ingestion(&server).max_queue_size(3)).unwrap();
    let given = vec![
        Ok(Message::identify("a").message_id("m-a")),
        Err(Error::InvalidField {
            field: "type".into(),
            reason: "unreadable".into(),
        }),
        Ok(Message::track("b", "")),
        Ok(Message::identify("c").message_id("m-c")),
    ];
    let answers = client.enqueue_each(given).unwrap();
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[0].as_deref().unwrap(), "m-a");
    assert_eq!(
        answers[1].as_ref().unwrap_err().to_string(),
        "invalid type: unreadable"
    );
    assert!(answers[2].is_err(), "an empty event name: {:?}", answers[2]);
    assert_eq!(answers[3].as_deref().unwrap(), "m-c");
    assert!(client.flush(Some(Duration::from_secs(10))));
    let s = client.stats();
    assert_eq!((s.accepted, s.delivered), (2, 2));
    // No room for three: none is taken, as with `enqueue_all`.
    let three = (0..3).map(|i| Ok::<_, Error>(Message::identify(format!("u{i}"))));
    let held = Client::new(ingestion(&server).max_queue_size(2)).unwrap();
    assert_eq!(
        held.enqueue_each(three).unwrap_err(),
        Error::QueueFull { capacity: 2 }
    );
    assert_eq!(held.stats().accepted, 0);
    assert!(client.close(Some(Duration::from_secs(5))).unwrap());
    assert!(held.close(Some(Duration::from_secs(5))).unwrap());
}

/// `enqueue_all` takes the valid messages of a batch all or none: with room for 3, a batch of
/// 4 takes nothing (so a relay's 429 leaves nothing of it queued), and an invalid message
/// is its own answer without costing the others their place.
#[test]
fn enqueue_all_takes_a_batch_whole_or_not_at_all() {
    let server = Server::start(|_| Reply::Hang);
    let client = Client::new(
        ingestion(&server)
            .max_queue_size(10)
            .timeout(Duration::from_secs(30)),
    )
    .unwrap();
    for i in 0..7 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    let four: Vec<Message> = (0..4).map(|i| Message::identify(format!("b{i}"))).collect();
    assert_eq!(
        client.enqueue_all(&four).unwrap_err(),
        Error::QueueFull { capacity: 10 }
    );
    let s = client.stats();
    assert_eq!((s.accepted, s.dropped, s.queue_full), (7, 4, 4));
    let mut three_and_a_bad_one = four[..3].to_vec();
    three_and_a_bad_one.insert(1, Message::track("u1", ""));
    let answers = client.enqueue_all(&three_and_a_bad_one).unwrap();
    assert!(answers[0].is_ok() && answers[2].is_ok() && answers[3].is_ok());
    assert!(
        matches!(
            &answers[1],
            Err(Error::MissingField { .. }) | Err(Error::InvalidField { .. })
        ),
        "{:?}",
        answers[1]
    );
    assert_eq!(
        client.stats().accepted,
        10,
        "the three valid ones fill the room"
    );
    assert!(!client.close(Some(Duration::from_millis(200))).unwrap());
}

#[test]
fn flush_is_bounded_and_says_whether_all_was_delivered() {
    let server = Server::start(|_| Reply::Hang);
    let client = Client::new(ingestion(&server).timeout(Duration::from_secs(30))).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    let start = Instant::now();
    assert!(!client.flush(Some(Duration::from_millis(300))));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert!(!client.close(Some(Duration::from_millis(100))).unwrap());

    let ok = Server::answering(200);
    let client = Client::new(ingestion(&ok)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(Duration::from_secs(10))));
}

#[test]
fn flush_reports_a_failure_that_ended_before_it_was_called_once() {
    let server = Server::answering(400);
    let outcomes = Outcomes::default();
    let client = Client::new(
        ingestion(&server)
            .flush_at(1)
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    // The failure lands before the call.
    assert_eq!(outcomes.wait_for(1, Duration::from_secs(10)).len(), 1);
    assert!(
        !client.flush(Some(Duration::from_secs(10))),
        "a message accepted before the call failed"
    );
    assert!(
        client.flush(Some(Duration::from_secs(10))),
        "nothing failed since the last flush"
    );
    client.enqueue(&Message::identify("v")).unwrap();
    assert_eq!(outcomes.wait_for(2, Duration::from_secs(10)).len(), 2);
    assert!(
        !client.close(Some(Duration::from_secs(10))).unwrap(),
        "close answers for a failure since the last flush too"
    );
}

#[test]
fn close_is_bounded_and_drops_what_is_left_as_closed() {
    let server = Server::start(|_| Reply::Hang);
    let outcomes = Outcomes::default();
    let config = ingestion(&server)
        .timeout(Duration::from_secs(30))
        .flush_at(1)
        .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    for i in 0..3 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    let start = Instant::now();
    assert!(!client.close(Some(Duration::from_millis(300))).unwrap());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let got = outcomes.all();
    assert_eq!(got.len(), 3);
    assert!(got
        .iter()
        .all(|o| o.kind == OutcomeKind::Dropped && o.reason == Some(Reason::Closed)));
    let s = client.stats();
    assert_eq!((s.dropped, s.queued, s.in_flight), (3, 0, 0));
}

#[test]
fn close_twice_and_enqueue_after_close_are_closed_errors() {
    let server = Server::answering(200);
    let client = Client::new(ingestion(&server)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.close(Some(Duration::from_secs(10))).unwrap());
    assert_eq!(server.count(), 1, "close flushed the open batch");
    assert_eq!(client.close(None), Err(Error::Closed));
    assert_eq!(client.enqueue(&Message::identify("u")), Err(Error::Closed));
}

#[test]
fn dropping_a_client_whose_receiver_hangs_returns_within_its_timeout() {
    let server = Server::start(|_| Reply::Hang);
    let timeout = Duration::from_millis(800);
    let client = Client::new(ingestion(&server).timeout(timeout).flush_at(1)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(server.wait_for(1, Duration::from_secs(5)));
    let start = Instant::now();
    drop(client);
    let took = start.elapsed();
    assert!(
        took < timeout + Duration::from_secs(1),
        "drop took {took:?}"
    );
}

#[test]
fn callers_on_many_threads_all_get_outcomes() {
    let server = Server::answering(200);
    let outcomes = Outcomes::default();
    let client = Arc::new(
        Client::new(
            ingestion(&server)
                .flush_at(25)
                .on_outcome(outcomes.callback()),
        )
        .unwrap(),
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let c = client.clone();
            std::thread::spawn(move || {
                for i in 0..250 {
                    c.enqueue(&Message::track(format!("t{t}-{i}"), "E"))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(client.flush(Some(Duration::from_secs(10))));
    assert_eq!(outcomes.all().len(), 1000);
    let received: usize = server
        .requests()
        .iter()
        .map(|r| r.json()["batch"].as_array().unwrap().len())
        .sum();
    assert_eq!(received, 1000);
}

#[test]
fn send_false_validates_and_counts_but_sends_nothing() {
    let server = Server::answering(200);
    let client = Client::new(ingestion(&server).send(false).flush_at(1)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client
        .enqueue(&Message::new(outbound::Kind::Track).user_id("u"))
        .is_err());
    client.close(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(server.count(), 0);
    assert_eq!(client.stats().dropped, 1);
}

fn logging_client(server: &Server, debug: Option<bool>) -> (Client, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let config = {
        let mut c = ingestion(server)
            .write_key("wk_SECRET_1234")
            .flush_at(1)
            .log_sink(Arc::new(move |level: outbound::Level, line: &str| {
                l.lock()
                    .unwrap()
                    .push(format!("{}: {line}", level.as_str()))
            }));
        c.debug = debug;
        c
    };
    (Client::new(config).unwrap(), lines)
}

#[test]
fn logs_never_contain_the_write_key() {
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = Server::start(move |_| {
        Reply::Status(
            if n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                500
            } else {
                400
            },
        )
    });
    let (client, lines) = logging_client(&server, Some(true));
    client.enqueue(&Message::identify("u")).unwrap();
    client.close(Some(Duration::from_secs(5))).unwrap();
    let lines = lines.lock().unwrap();
    assert!(lines.len() >= 3, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("status 400")), "{lines:?}");
    let b64 = "d2tfU0VDUkVUXzEyMzQ6"; // base64("wk_SECRET_1234:")
    for l in lines.iter() {
        assert!(!l.contains("SECRET") && !l.contains(b64), "leaked in {l:?}");
    }
}

#[test]
fn debug_env_turns_logging_on() {
    // One test owns the DEBUG variable: the others pass `debug` explicitly.
    let server = Server::answering(200);
    for (value, on) in [
        ("analytics", true),
        ("express,analytics", true),
        ("*", true),
        ("other", false),
    ] {
        std::env::set_var("DEBUG", value);
        assert_eq!(outbound::debug_from_env(), on, "DEBUG={value}");
        let (client, lines) = logging_client(&server, None);
        client.enqueue(&Message::identify("u")).unwrap();
        client.close(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(!lines.lock().unwrap().is_empty(), on, "DEBUG={value}");
    }
    std::env::remove_var("DEBUG");
}

#[test]
fn close_reports_every_outcome_before_it_returns_even_past_its_timeout() {
    let server = Server::start(|_| Reply::Hang);
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    // A slow callback: reporting 20 drops takes 1 s, far past close's deadline.
    let config = ingestion(&server)
        .timeout(Duration::from_secs(30))
        .flush_at(1)
        .on_outcome(Arc::new(move |_: &outbound::Outcome| {
            std::thread::sleep(Duration::from_millis(50));
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
    let client = Client::new(config).unwrap();
    for i in 0..20 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    let _ = client.close(Some(Duration::from_millis(100)));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 20);
    let s = client.stats();
    assert_eq!(
        (s.accepted, s.dropped, s.queued, s.in_flight),
        (20, 20, 0, 0)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 20);
}

#[test]
fn close_stops_waiting_for_a_callback_that_blocks_and_still_counts_everything() {
    let server = Server::start(|_| Reply::Hang);
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    // The first callback blocks for 3 s: longer than the client's timeout.
    let config = ingestion(&server)
        .timeout(Duration::from_secs(1))
        .flush_at(1)
        .on_outcome(Arc::new(move |_: &outbound::Outcome| {
            if c.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_secs(3));
            }
        }));
    let client = Client::new(config).unwrap();
    for i in 0..20 {
        client.enqueue(&Message::identify(format!("u{i}"))).unwrap();
    }
    let start = Instant::now();
    assert_eq!(client.close(Some(Duration::from_millis(100))), Ok(false));
    let took = start.elapsed();
    assert!(took < Duration::from_millis(2500), "{took:?}");
    let s = client.stats();
    assert_eq!(s.accepted, 20);
    assert_eq!(s.delivered + s.failed + s.dropped, 20, "{s:?}");
    assert_eq!((s.queued, s.in_flight), (0, 0), "{s:?}");
    let at_close = calls.load(std::sync::atomic::Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        at_close,
        "no callback starts after close returns"
    );
    assert_eq!(client.stats(), s, "nothing counted twice");
}

#[test]
fn flush_and_close_from_inside_a_callback_return_at_once() {
    let server = Server::answering(200);
    let slot: Arc<std::sync::OnceLock<std::sync::Weak<Client>>> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s, seen2) = (slot.clone(), seen.clone());
    let config =
        ingestion(&server)
            .flush_at(1)
            .on_outcome(Arc::new(move |_: &outbound::Outcome| {
                if let Some(client) = s.get().and_then(|w| w.upgrade()) {
                    let start = Instant::now();
                    client.flush(Some(Duration::from_secs(10)));
                    let closed = client.close(Some(Duration::from_secs(10))).is_ok();
                    seen2.lock().unwrap().push((start.elapsed(), closed));
                }
            }));
    let client = Arc::new(Client::new(config).unwrap());
    slot.set(Arc::downgrade(&client)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(server.wait_for(1, Duration::from_secs(5)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].0 < Duration::from_secs(1), "{:?}", seen[0].0);
    assert!(seen[0].1, "close from the callback succeeded");
    assert!(client.is_closed());
}

#[test]
fn huge_timeouts_do_not_panic() {
    let server = Server::answering(200);
    let config = ingestion(&server).flush_interval(Duration::MAX);
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(Duration::MAX)));
    assert!(client.close(Some(Duration::MAX)).unwrap());
}

#[test]
fn no_log_line_reaches_the_sink_after_close_returns() {
    let server = Server::start(|_| Reply::Hang);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = lines.clone();
    let config = ingestion(&server)
        .timeout(Duration::from_millis(600))
        .flush_at(1)
        .debug(true)
        .log_sink(Arc::new(move |_, line: &str| {
            l.lock().unwrap().push(line.to_string())
        }));
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(server.wait_for(1, Duration::from_secs(5)));
    let _ = client.close(Some(Duration::from_millis(50)));
    let at_close = lines.lock().unwrap().len();
    // The worker's request times out after close returned; it must not log that.
    std::thread::sleep(Duration::from_millis(1200));
    // One guard: locking again to format the message would deadlock on failure.
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), at_close, "{lines:?}");
}

/// The ids of `n` tracks of `event`, one per user `u0`, `u1`, ...
fn tracks(client: &Client, n: usize, event: &str) -> Vec<String> {
    (0..n)
        .map(|i| {
            client
                .enqueue(&Message::track(format!("u{i}"), event))
                .unwrap()
        })
        .collect()
}

/// The message ids of `outcomes`, sorted (one entry per outcome).
fn sorted_ids(outcomes: &[outbound::Outcome]) -> Vec<String> {
    let mut ids: Vec<String> = outcomes.iter().map(|o| o.message_id.to_string()).collect();
    ids.sort();
    ids
}

/// Messages for ingestion alone carry no per-message record in the scheduler (only their
/// batch entry): close must still find each one, wherever it waits, and end it once under
/// its own id.
#[test]
fn close_ends_each_ingestion_message_once_under_its_id_wherever_it_waits() {
    // In flight to a receiver that never answers, waiting in the lane behind them, and in
    // the open batch.
    let hang = Server::start(|_| Reply::Hang);
    let outcomes = Outcomes::default();
    let client = Client::new(
        ingestion(&hang)
            .timeout(Duration::from_secs(30))
            .flush_at(2)
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    // 8 batches of 2 out: what the lane gives a receiver that has never answered. One at a
    // time, each seen out before the next is made.
    let mut ids = Vec::new();
    for n in 1..=8 {
        ids.extend(tracks(&client, 2, "Out"));
        assert!(
            hang.wait_for(n, Duration::from_secs(10)),
            "{n} requests out"
        );
    }
    // Behind them, waiting in the lane (held back: nothing joins a request already out),
    // and one in the open batch.
    ids.extend(tracks(&client, 25, "Waits"));
    // A user's own id that reads back from the bytes, and one that needs escapes.
    for own in ["mine-1", "q\"uote"] {
        ids.push(
            client
                .enqueue(&Message::track("u", "Waits").message_id(own))
                .unwrap(),
        );
    }
    let _ = client.close(Some(Duration::from_millis(100)));
    let all = outcomes.all();
    ids.sort();
    assert_eq!(sorted_ids(&all), ids, "each message once, under its own id");
    assert!(all
        .iter()
        .all(|o| o.kind == OutcomeKind::Dropped && o.reason == Some(Reason::Closed)));
    let in_flight = all
        .iter()
        .filter(|o| o.detail.contains("in flight"))
        .count();
    assert_eq!(in_flight, 16, "8 batches of 2 were out");
    let s = client.stats();
    assert_eq!(
        (s.accepted, s.dropped, s.queued, s.in_flight),
        (43, 43, 0, 0),
        "{s:?}"
    );

    // Waiting to retry after 503s.
    let failing = Server::answering(503);
    let outcomes = Outcomes::default();
    let client = Client::new(
        ingestion(&failing)
            .flush_at(5)
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    let mut ids = tracks(&client, 10, "Retries");
    assert!(
        failing.wait_for(4, Duration::from_secs(10)),
        "both batches failed twice"
    );
    let _ = client.close(Some(Duration::from_millis(100)));
    ids.sort();
    assert_eq!(sorted_ids(&outcomes.all()), ids);
    let s = client.stats();
    assert_eq!((s.accepted, s.dropped, s.delivered), (10, 10, 0), "{s:?}");
}
