//! Every delivery visible, nothing discarded. Against real receivers on 127.0.0.1:
//! each URL's attempts and health, dead letters (kept, listed, limited, surviving a kill)
//! and their replay (one, and a thousand in the background; a replay cut by a kill).

#[path = "support/redis_server.rs"]
mod redis_server;
mod support;

use outbound::{
    Client, Config, DeadLetterQuery, Engine, EngineConfig, Error, HealthState, Message,
    OutcomeKind, Reason, Webhook,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Outcomes, Reply, Server};

const ANSWER: &[u8] = br#"{"error":"schema: properties.plan must be a string"}"#;

fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "outbound-dead-{name}-{}-{nanos}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A receiver answering what `status` holds now (with `ANSWER` as the body of a failure);
/// 0: it hangs.
fn switchable() -> (Server, Arc<AtomicU16>) {
    let status = Arc::new(AtomicU16::new(400));
    let s = status.clone();
    let server = Server::start(move |_| match s.load(SeqCst) {
        0 => Reply::Hang,
        200 => Reply::Status(200),
        st => Reply::Full {
            status: st,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: ANSWER.to_vec(),
        },
    });
    (server, status)
}

fn dead_config(server: &Server, spool: &Path, outcomes: &Outcomes) -> Config {
    support::config()
        .webhooks(vec![Webhook::new(format!("{}/hook", server.url))])
        .spool(spool.to_path_buf())
        .dead_letters(true)
        .on_outcome(outcomes.callback())
        .max_queue_size(5_000)
        .retry(outbound::RetryPolicy {
            base: Duration::from_millis(20),
            max_backoff: Duration::from_millis(100),
            max_retry_duration: Duration::from_millis(500),
            ..Default::default()
        })
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ids the receiver answered 200 for, with how many times each.
fn delivered(server: &Server, since: usize) -> HashMap<String, usize> {
    let mut ids = HashMap::new();
    for r in server.requests().into_iter().skip(since) {
        *ids.entry(r.json()["messageId"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    ids
}

fn all_dead(client: &Client) -> Vec<outbound::DeadLetter> {
    let mut out = Vec::new();
    let mut q = DeadLetterQuery {
        limit: 1000,
        ..Default::default()
    };
    loop {
        let page = client.dead_letters(&q).unwrap();
        out.extend(page.letters);
        match page.next {
            Some(next) => q.cursor = Some(next),
            None => return out,
        }
    }
}

#[test]
fn a_url_answering_400_makes_a_dead_letter_with_that_status_and_answer() {
    let (server, _) = switchable();
    let dir = temp_dir("400");
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes)).unwrap();
    let id = client
        .enqueue(&Message::track("u1", "Signed Up").property("plan", 3))
        .unwrap();
    let ended = outcomes.wait_for(1, Duration::from_secs(10));
    assert_eq!(ended[0].kind, OutcomeKind::Failed);
    assert_eq!(ended[0].reason, Some(Reason::Status(400)));
    wait_until("its dead letter", Duration::from_secs(5), || {
        client.dead_letter_stats().unwrap().count == 1
    });
    let page = client.dead_letters(&DeadLetterQuery::default()).unwrap();
    assert_eq!(page.letters.len(), 1);
    let dead = &page.letters[0];
    assert_eq!(dead.message_id, id);
    assert_eq!(dead.reason, Reason::Status(400));
    assert!(!dead.replaying);
    assert!(dead.body.is_none(), "lists leave the body out");
    let last = &dead.last_attempts[0];
    assert_eq!((last.webhook, last.status), (0, Some(400)));
    assert_eq!(last.answer.as_deref(), Some(ANSWER));
    // The one with its body: the webhook body as it was sent.
    let whole = client.dead_letter(&id).unwrap().unwrap();
    let sent = &server.requests()[0].body;
    assert_eq!(whole.body.as_deref(), Some(&sent[..]));
    assert_eq!(whole.size, sent.len() as u64);
    // The URL's log and health say the same.
    let attempts = client.webhook_attempts(0).unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(&*attempts[0].message_id, id.as_str());
    assert_eq!(attempts[0].status, Some(400));
    assert_eq!(attempts[0].answer.as_deref(), Some(ANSWER));
    let health = client.webhook_health();
    assert_eq!(health[0].state, HealthState::Failing);
    assert_eq!(health[0].consecutive_failures, 1);
    assert_eq!(health[0].waiting, 0);
    assert!(client.webhook_attempts(1).is_err());
    // Discarded, it is gone.
    assert!(client.delete_dead_letter(&id).unwrap());
    assert!(!client.delete_dead_letter(&id).unwrap());
    assert!(client.dead_letter(&id).unwrap().is_none());
    client.close(None).unwrap();
}

#[test]
fn a_replay_after_the_receiver_recovers_delivers_it_once_with_the_same_id() {
    let (server, status) = switchable();
    let dir = temp_dir("replay-one");
    let outcomes = Outcomes::default();
    let client =
        Client::new(dead_config(&server, &dir, &outcomes).shared_secret("secret-1")).unwrap();
    let id = client.enqueue(&Message::track("u1", "Paid")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    wait_until("the dead letter", Duration::from_secs(5), || {
        client.dead_letter(&id).unwrap().is_some()
    });
    let before = server.count();
    status.store(200, SeqCst);
    let progress = client.replay_dead_letter(&id, None).unwrap().unwrap();
    assert_eq!(progress.total, 1);
    assert!(
        client.replay_dead_letter(&id, None).unwrap().is_none(),
        "being replayed already"
    );
    let ended = outcomes.wait_for(2, Duration::from_secs(10));
    assert_eq!(ended[1].kind, OutcomeKind::Delivered);
    assert_eq!(&*ended[1].message_id, id.as_str());
    wait_until("the dead letter to leave", Duration::from_secs(5), || {
        client.dead_letter(&id).unwrap().is_none()
    });
    let got = delivered(&server, before);
    assert_eq!(got.get(&id), Some(&1), "{got:?}");
    assert_eq!(got.len(), 1);
    let replayed = &server.requests()[before];
    assert_eq!(
        replayed.header("X-Signature"),
        Some(outbound::sign(b"secret-1", &replayed.body).as_str())
    );
    let p = client.replay_progress(progress.id).unwrap().unwrap();
    assert_eq!((p.sent, p.delivered, p.failed), (1, 1, 0));
    assert!(p.done());
    assert!(client
        .replay_dead_letter("no-such-id", None)
        .unwrap()
        .is_none());
    client.close(None).unwrap();
}

#[test]
fn a_replay_that_fails_again_goes_back_into_the_dead_letters() {
    let (server, _) = switchable();
    let dir = temp_dir("replay-again");
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes)).unwrap();
    let id = client.enqueue(&Message::track("u1", "Paid")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    wait_until("the dead letter", Duration::from_secs(5), || {
        client.dead_letter(&id).unwrap().is_some()
    });
    let first = client.dead_letter(&id).unwrap().unwrap();
    let job = client.replay_dead_letter(&id, Some(0)).unwrap().unwrap();
    wait_until("the replay to fail", Duration::from_secs(10), || {
        client.replay_progress(job.id).unwrap().unwrap().failed == 1
    });
    wait_until("it to be back", Duration::from_secs(5), || {
        client
            .dead_letter(&id)
            .unwrap()
            .is_some_and(|d| !d.replaying && d.failed_at > first.failed_at)
    });
    assert_eq!(client.dead_letter_stats().unwrap().count, 1);
    assert_eq!(server.count(), 2);
    client.close(None).unwrap();
}

#[test]
fn a_bulk_replay_of_a_thousand_delivers_each_once_in_the_background() {
    let (server, status) = switchable();
    let dir = temp_dir("bulk");
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes).max_queue_size(300)).unwrap();
    let mut ids = Vec::new();
    for i in 0..1000 {
        // One snapshot: a message between its retries leaves `in_flight` for `queued`, so two
        // reads can miss it and the queue fill past its 300.
        while {
            let s = client.stats();
            s.queued + s.in_flight > 250
        } {
            std::thread::sleep(Duration::from_millis(2));
        }
        // A refusal says which limit and what the counters read at that moment.
        let id = client.enqueue(&Message::track(format!("u{i}"), "Bulk"));
        ids.push(id.unwrap_or_else(|e| panic!("message {i}: {e:?}; {:?}", client.stats())));
    }
    outcomes.wait_for(1000, Duration::from_secs(60));
    wait_until("a thousand dead letters", Duration::from_secs(10), || {
        client.dead_letter_stats().unwrap().count == 1000
    });
    assert_eq!(all_dead(&client).len(), 1000, "paged through");
    let before = server.count();
    status.store(200, SeqCst);
    let job = client.replay_dead_letters(None, None, None).unwrap();
    assert_eq!(job.total, 1000);
    wait_until("the replay", Duration::from_secs(60), || {
        client.replay_progress(job.id).unwrap().unwrap().done()
    });
    let p = client.replay_progress(job.id).unwrap().unwrap();
    assert_eq!(
        (p.sent, p.delivered, p.failed, p.skipped),
        (1000, 1000, 0, 0)
    );
    let got = delivered(&server, before);
    assert_eq!(got.len(), 1000);
    assert!(got.values().all(|n| *n == 1), "each once");
    assert!(ids.iter().all(|id| got.contains_key(id)));
    wait_until("the dead letters to empty", Duration::from_secs(5), || {
        client.dead_letter_stats().unwrap().count == 0
    });
    // Within its queue: a replay never held more than max_queue_size.
    assert_eq!(client.stats().dropped, 0);
    client.close(None).unwrap();
}

#[test]
fn the_byte_limit_and_the_retention_drop_the_oldest_and_count_them() {
    let (server, _) = switchable();
    let dir = temp_dir("limits");
    let outcomes = Outcomes::default();
    let client = Client::new(
        dead_config(&server, &dir, &outcomes)
            .dead_letter_max_bytes(3_000)
            .dead_letter_retention(Duration::from_secs(2)),
    )
    .unwrap();
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(
            client
                .enqueue(&Message::track(format!("u{i}"), "E"))
                .unwrap(),
        );
        outcomes.wait_for(i + 1, Duration::from_secs(10));
    }
    wait_until("the last dead letter", Duration::from_secs(5), || {
        client.dead_letter(&ids[19]).unwrap().is_some()
    });
    let stats = client.dead_letter_stats().unwrap();
    assert!(stats.bytes <= 3_000, "{stats:?}");
    assert!(stats.evicted > 0, "{stats:?}");
    assert_eq!(stats.count + stats.evicted + stats.expired, 20, "{stats:?}");
    let kept: Vec<String> = all_dead(&client)
        .into_iter()
        .map(|d| d.message_id)
        .collect();
    let newest: Vec<String> = ids.iter().rev().take(kept.len()).cloned().collect();
    assert_eq!(kept, newest, "the newest are kept, newest first");
    // Past the retention (checked every 5 s) every one goes.
    wait_until("the retention", Duration::from_secs(15), || {
        client.dead_letter_stats().unwrap().count == 0
    });
    assert_eq!(client.dead_letter_stats().unwrap().expired, stats.count);
    client.close(None).unwrap();
}

#[test]
fn health_moves_to_failing_and_back() {
    let (server, status) = switchable();
    status.store(503, SeqCst);
    let dir = temp_dir("health");
    let outcomes = Outcomes::default();
    let client = Client::new(
        dead_config(&server, &dir, &outcomes).retry(outbound::RetryPolicy {
            base: Duration::from_millis(20),
            max_backoff: Duration::from_millis(50),
            max_retry_duration: Duration::from_secs(30),
            ..Default::default()
        }),
    )
    .unwrap();
    assert_eq!(client.webhook_health()[0].state, HealthState::Healthy);
    client.enqueue(&Message::track("u1", "E")).unwrap();
    wait_until("failures", Duration::from_secs(5), || {
        client.webhook_health()[0].consecutive_failures >= 3
    });
    let h = &client.webhook_health()[0];
    assert_eq!(h.state, HealthState::Failing);
    assert_eq!(h.waiting, 1);
    assert_eq!(h.success_rate_5m, Some(0.0));
    assert!(h.last_error.as_ref().unwrap().1.contains("503"), "{h:?}");
    status.store(200, SeqCst);
    outcomes.wait_for(1, Duration::from_secs(10));
    let h = &client.webhook_health()[0];
    assert_eq!(h.state, HealthState::Healthy);
    assert_eq!((h.consecutive_failures, h.waiting), (0, 0));
    assert!(h.last_success.is_some());
    assert!(h.success_rate_5m.unwrap() > 0.0 && h.success_rate_5m.unwrap() < 1.0);
    assert!(h.p50_5m.is_some() && h.p99_5m >= h.p50_5m);
    // Nothing failed for good: no dead letter.
    assert_eq!(client.dead_letter_stats().unwrap().count, 0);
    client.close(None).unwrap();
}

/// Pages through two dead letters one at a time, then asks with cursors no page gave: each
/// is refused naming `cursor`, never answered as the first page.
fn cursors_are_pages_nexts_only(client: &Client, outcomes: &Outcomes) {
    for i in 0..2 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    outcomes.wait_for(2, Duration::from_secs(10));
    wait_until("two dead letters", Duration::from_secs(5), || {
        client.dead_letter_stats().unwrap().count == 2
    });
    let one = DeadLetterQuery {
        limit: 1,
        ..Default::default()
    };
    let first = client.dead_letters(&one).unwrap();
    let next = first.next.clone().expect("a next page");
    let second = client
        .dead_letters(&DeadLetterQuery {
            cursor: Some(next),
            ..one.clone()
        })
        .unwrap();
    assert_eq!(second.letters.len(), 1);
    assert_ne!(second.letters[0].message_id, first.letters[0].message_id);
    for garbage in ["garbage", "", "12", "x.1", "1.", ".", "%%%"] {
        let err = client
            .dead_letters(&DeadLetterQuery {
                cursor: Some(garbage.into()),
                ..one.clone()
            })
            .unwrap_err();
        match &err {
            Error::InvalidField { field, reason } => {
                assert_eq!(field, "cursor");
                assert!(reason.contains("is not a page's next"), "{reason}");
            }
            other => panic!("{garbage:?}: {other}"),
        }
    }
}

#[test]
fn a_cursor_no_page_gave_is_refused_naming_cursor() {
    let (server, _) = switchable();
    let dir = temp_dir("cursor");
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes)).unwrap();
    cursors_are_pages_nexts_only(&client, &outcomes);
    client.close(None).unwrap();
}

#[test]
fn on_redis_a_cursor_no_page_gave_is_refused_naming_cursor() {
    let redis = redis_server::RedisServer::start();
    let (server, _) = switchable();
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &redis.spool("cursor"), &outcomes)).unwrap();
    cursors_are_pages_nexts_only(&client, &outcomes);
    client.close(None).unwrap();
}

/// A Redis that stops answering (`CLIENT PAUSE ALL`) costs a question about dead letters
/// the client's `timeout`, and an error naming them; the answers are right again once it
/// answers.
#[test]
fn on_redis_a_stalled_server_fails_a_count_within_the_timeout() {
    let redis = redis_server::RedisServer::start();
    let (server, _) = switchable();
    let outcomes = Outcomes::default();
    let client = Client::new(
        dead_config(&server, &redis.spool("stall"), &outcomes).timeout(Duration::from_secs(1)),
    )
    .unwrap();
    client.enqueue(&Message::track("u1", "E")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    wait_until("its dead letter", Duration::from_secs(5), || {
        client.dead_letter_stats().unwrap().count == 1
    });
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(4_000)
        .arg("ALL")
        .query::<()>(&mut redis.conn())
        .unwrap();
    let asked = Instant::now();
    let answer = client.dead_letter_stats();
    let took = asked.elapsed();
    let err = answer.expect_err("a count from a paused server");
    assert!(err.to_string().contains("dead letters"), "{err}");
    assert!(
        took < Duration::from_millis(2_500),
        "answered after {took:?}"
    );
    wait_until("the count again", Duration::from_secs(10), || {
        client.dead_letter_stats().is_ok_and(|s| s.count == 1)
    });
    client.close(None).unwrap();
}

/// A dead letter Redis refuses to write (here its hash is the wrong type) keeps its message
/// in the stream until it is written: closed before that, the next client resumes the
/// message, and its letter is kept when it fails again. Nothing is lost in between.
#[test]
fn on_redis_a_letter_that_cannot_be_written_keeps_its_message_in_the_stream() {
    let redis = redis_server::RedisServer::start();
    let (server, _) = switchable();
    let spool = redis.spool("hold");
    let outcomes = Outcomes::default();
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let l = lines.clone();
    let a = Client::new(
        dead_config(&server, &spool, &outcomes)
            .debug(true)
            .log_sink(Arc::new(move |_, line: &str| {
                l.lock().unwrap().push(line.to_string())
            })),
    )
    .unwrap();
    a.enqueue(&Message::track("u1", "E")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    wait_until("the first letter", Duration::from_secs(5), || {
        a.dead_letter_stats().unwrap().count == 1
    });
    let mut c = redis.conn();
    let letters: Vec<String> = redis::cmd("KEYS")
        .arg("{hold:dl:*}:m")
        .query(&mut c)
        .unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    redis::cmd("SET")
        .arg(&letters[0])
        .arg("not a hash")
        .query::<()>(&mut c)
        .unwrap();
    let id = a.enqueue(&Message::track("u2", "E")).unwrap();
    outcomes.wait_for(2, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500)); // commits go on meanwhile
    assert!(
        redis.spooled_ids("hold").contains(&id),
        "the message left the stream without its letter"
    );
    a.close(None).unwrap();
    assert!(redis.spooled_ids("hold").contains(&id));
    redis::cmd("DEL")
        .arg(&letters[0])
        .query::<()>(&mut c)
        .unwrap();
    let outcomes = Outcomes::default();
    let b = Client::new(dead_config(&server, &spool, &outcomes)).unwrap();
    wait_until(
        "its letter, written by the next client",
        Duration::from_secs(30),
        || b.dead_letter(&id).unwrap().is_some(),
    );
    wait_until("the stream to let it go", Duration::from_secs(5), || {
        !redis.spooled_ids("hold").contains(&id)
    });
    b.close(None).unwrap();
}

/// `Engine::dead_letters_unwritten`: the letters Redis refuses are counted while they wait
/// in memory, and the count falls back to 0 once they are written.
#[test]
fn on_redis_an_engine_counts_the_letters_it_holds_unwritten() {
    let redis = redis_server::RedisServer::start();
    let (server, _) = switchable();
    let spool = redis.spool("count");
    let engine = Engine::new(EngineConfig {
        spool: Some(spool.clone().into()),
        ..EngineConfig::default()
    })
    .unwrap();
    let outcomes = Outcomes::default();
    let config = {
        let mut c = dead_config(&server, &spool, &outcomes);
        c.spool = None;
        c
    };
    let t = engine.tenant("t", config).unwrap();
    t.enqueue(&Message::track("u1", "E")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    wait_until("the first letter", Duration::from_secs(5), || {
        t.dead_letter_stats().unwrap().count == 1
    });
    assert_eq!(engine.dead_letters_unwritten(), 0);
    let mut c = redis.conn();
    let letters: Vec<String> = redis::cmd("KEYS").arg("*dl*:m").query(&mut c).unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    redis::cmd("SET")
        .arg(&letters[0])
        .arg("not a hash")
        .query::<()>(&mut c)
        .unwrap();
    t.enqueue(&Message::track("u2", "E")).unwrap();
    outcomes.wait_for(2, Duration::from_secs(10));
    wait_until("the refused letter counted", Duration::from_secs(5), || {
        engine.dead_letters_unwritten() >= 1
    });
    redis::cmd("DEL")
        .arg(&letters[0])
        .query::<()>(&mut c)
        .unwrap();
    // A commit retries it: the next message's brings one.
    t.enqueue(&Message::track("u3", "E")).unwrap();
    wait_until("the letter written", Duration::from_secs(10), || {
        engine.dead_letters_unwritten() == 0
    });
    outcomes.wait_for(3, Duration::from_secs(10));
    t.close(None).unwrap();
}

#[test]
fn dead_letters_need_a_spool() {
    let err = Client::new(
        support::config()
            .webhooks(vec![Webhook::new("http://127.0.0.1:9/hook")])
            .dead_letters(true),
    )
    .err()
    .unwrap();
    assert!(
        matches!(&err, Error::Config { setting, .. } if setting == "dead_letters"),
        "{err}"
    );
    let off =
        Client::new(support::config().webhooks(vec![Webhook::new("http://127.0.0.1:9/hook")]))
            .unwrap();
    assert!(matches!(
        off.dead_letters(&DeadLetterQuery::default()),
        Err(Error::Config { .. })
    ));
    off.close(Some(Duration::ZERO)).unwrap();
}

#[test]
fn tenants_of_an_engine_keep_their_own_dead_letters() {
    let (server, _) = switchable();
    let dir = temp_dir("tenants");
    let engine = Engine::new(EngineConfig {
        spool: Some(dir.clone().into()),
        ..EngineConfig::default()
    })
    .unwrap();
    let (oa, ob) = (Outcomes::default(), Outcomes::default());
    let tenant = |name: &str, o: &Outcomes| {
        let config = {
            let mut c = dead_config(&server, &dir, o);
            c.spool = None;
            c
        };
        engine.tenant(name, config).unwrap()
    };
    let (a, b) = (tenant("a", &oa), tenant("b", &ob));
    let ida = a.enqueue(&Message::track("u", "A")).unwrap();
    let idb = b.enqueue(&Message::track("u", "B")).unwrap();
    oa.wait_for(1, Duration::from_secs(10));
    ob.wait_for(1, Duration::from_secs(10));
    wait_until("both", Duration::from_secs(5), || {
        a.dead_letter_stats().unwrap().count == 1 && b.dead_letter_stats().unwrap().count == 1
    });
    assert!(a.dead_letter(&idb).unwrap().is_none());
    assert_eq!(all_dead(&b)[0].message_id, idb);
    assert_eq!(all_dead(&a)[0].message_id, ida);
    // A replay is its tenant's alone: another finds no such replay, and ids are not a count.
    let job = a.replay_dead_letters(None, None, None).unwrap();
    assert_eq!(job.total, 1);
    assert!(a.replay_progress(job.id).unwrap().is_some());
    assert!(b.replay_progress(job.id).unwrap().is_none());
    let next = b.replay_dead_letters(None, None, None).unwrap();
    assert!(
        next.id.abs_diff(job.id) > 1_000,
        "{} then {}",
        job.id,
        next.id
    );
    assert!(a.replay_progress(next.id).unwrap().is_none());
    a.close(None).unwrap();
    b.close(None).unwrap();
}

/// `Engine::dead_letter_counts`: every tenant that keeps dead letters, by name, with the
/// counts `dead_letter_stats` gives it; one that keeps none is not there. `_of` asks of some.
fn counts_of_an_engine(spool: PathBuf) {
    let (server, _) = switchable();
    let engine = Engine::new(EngineConfig {
        spool: Some(spool.clone().into()),
        ..EngineConfig::default()
    })
    .unwrap();
    let outcomes: Vec<Outcomes> = (0..3).map(|_| Outcomes::default()).collect();
    let tenant = |name: &str, o: &Outcomes, keeps: bool| {
        let config = {
            let mut c = dead_config(&server, &spool, o).dead_letters(keeps);
            c.spool = None;
            c
        };
        engine.tenant(name, config).unwrap()
    };
    let a = tenant("a", &outcomes[0], true);
    let b = tenant("b", &outcomes[1], true);
    let off = tenant("off", &outcomes[2], false);
    for i in 0..3 {
        a.enqueue(&Message::track(format!("u{i}"), "A")).unwrap();
    }
    off.enqueue(&Message::track("u", "Off")).unwrap();
    outcomes[0].wait_for(3, Duration::from_secs(10));
    outcomes[2].wait_for(1, Duration::from_secs(10));
    let counts = || -> HashMap<String, outbound::DeadLetterStats> {
        engine.dead_letter_counts().unwrap().into_iter().collect()
    };
    wait_until("a's three", Duration::from_secs(5), || {
        counts().get("a").is_some_and(|s| s.count == 3)
    });
    let now = counts();
    assert_eq!(now.len(), 2, "{now:?}");
    assert_eq!(now["a"], a.dead_letter_stats().unwrap());
    assert!(now["a"].bytes > 0);
    assert_eq!(now["b"], Default::default());
    assert!(!now.contains_key("off"), "off keeps none");
    // Those of some tenants only: the ones given that keep dead letters on this engine.
    let elsewhere = Client::new(dead_config(&server, &temp_dir("elsewhere"), &outcomes[2]));
    let elsewhere = elsewhere.unwrap();
    let some = engine
        .dead_letter_counts_of(&[&a, &off, &elsewhere])
        .unwrap();
    assert_eq!(some, vec![("a".to_string(), now["a"])]);
    assert!(engine.dead_letter_counts_of(&[]).unwrap().is_empty());
    elsewhere.close(None).unwrap();
    // One goes: the counts follow.
    let first = all_dead(&a)[0].message_id.clone();
    assert!(a.delete_dead_letter(&first).unwrap());
    assert_eq!(counts()["a"].count, 2);
    for c in [a, b, off] {
        c.close(None).unwrap();
    }
    // Without a spool: none.
    let bare = Engine::new(EngineConfig::default()).unwrap();
    assert!(bare.dead_letter_counts().unwrap().is_empty());
}

#[test]
fn an_engine_counts_its_tenants_dead_letters_at_once() {
    counts_of_an_engine(temp_dir("counts"));
}

#[test]
fn on_redis_an_engine_counts_its_tenants_dead_letters_at_once() {
    let redis = redis_server::RedisServer::start();
    counts_of_an_engine(redis.spool("counts"));
}

/// The child of the kill test: its messages fail into dead letters; then (with
/// `DEAD_REPLAY`) it starts a replay that the receiver hangs on. It says where it got to on
/// stdout and waits to be killed.
#[test]
fn child_of_the_kill_test() {
    let (Ok(url), Ok(spool)) = (std::env::var("DEAD_URL"), std::env::var("DEAD_SPOOL")) else {
        return;
    };
    let outcomes = Outcomes::default();
    let timeout = std::env::var("DEAD_TIMEOUT_MS").map_or(5_000, |t| t.parse().unwrap());
    let client = Client::new(
        support::config()
            .webhooks(vec![Webhook::new(url)])
            .spool(PathBuf::from(&spool))
            .dead_letters(true)
            .on_outcome(outcomes.callback())
            .timeout(Duration::from_millis(timeout)),
    )
    .unwrap();
    for i in 0..50 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    outcomes.wait_for(50, Duration::from_secs(20));
    wait_until("dead letters", Duration::from_secs(10), || {
        client.dead_letter_stats().unwrap().count == 50
    });
    println!("DEAD");
    if std::env::var("DEAD_REPLAY").is_ok() {
        // Once the receiver hangs (the parent says so with a file), replay into it.
        let go = PathBuf::from(std::env::var("DEAD_GO").unwrap());
        wait_until("the go", Duration::from_secs(10), || go.exists());
        let job = client.replay_dead_letters(None, None, None).unwrap();
        wait_until("sent", Duration::from_secs(10), || {
            client.replay_progress(job.id).unwrap().unwrap().sent == 50
        });
        println!("REPLAYING");
    }
    std::thread::sleep(Duration::from_secs(120));
}

/// The child, on `spool`; with `go`, it replays once that file exists.
fn spawn_child(url: &str, spool: &Path, go: Option<&Path>) -> std::process::Child {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_of_the_kill_test",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("DEAD_URL", url)
    .env("DEAD_SPOOL", spool)
    .env("DEAD_TIMEOUT_MS", "1000")
    .stdout(std::process::Stdio::piped());
    if let Some(go) = go {
        cmd.env("DEAD_REPLAY", "1").env("DEAD_GO", go);
    }
    cmd.spawn().unwrap()
}

/// Kills the child once it replays into a hanging receiver; the ids the receiver answered
/// 200 for afterwards are counted from the returned index.
fn kill_mid_replay(url: &str, spool: &Path, status: &AtomicU16, server: &Server) -> usize {
    let go = temp_dir("go");
    let mut child = spawn_child(url, spool, Some(&go));
    read_until(&mut child, "DEAD");
    status.store(0, SeqCst);
    std::fs::write(&go, b"").unwrap();
    read_until(&mut child, "REPLAYING");
    child.kill().unwrap();
    child.wait().unwrap();
    // What the child wrote before it died is read (and hung on) before we count.
    std::thread::sleep(Duration::from_millis(300));
    let hung = server.count();
    status.store(200, SeqCst);
    hung
}

fn read_until(child: &mut std::process::Child, word: &str) {
    use std::io::BufRead;
    let out = child.stdout.as_mut().unwrap();
    let mut lines = std::io::BufReader::new(out).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains(word) => return,
            Some(_) => {}
            None => panic!("the child ended before {word}"),
        }
    }
}

#[test]
fn dead_letters_survive_a_kill_and_a_replay_cut_by_one_ends_once() {
    let (server, status) = switchable();
    let dir = temp_dir("kill");
    let url = format!("{}/hook", server.url);
    // Killed with its dead letters kept: the next client on the spool lists them.
    let mut child = spawn_child(&url, &dir, None);
    read_until(&mut child, "DEAD");
    child.kill().unwrap();
    child.wait().unwrap();
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes)).unwrap();
    wait_until("the adoption", Duration::from_secs(10), || {
        client.dead_letter_stats().unwrap().count == 50
    });
    let ids: Vec<String> = all_dead(&client)
        .into_iter()
        .map(|d| d.message_id)
        .collect();
    assert_eq!(ids.len(), 50);
    client.close(None).unwrap();
    // Killed mid-replay, the receiver hanging: the next client replays what was marked,
    // each once.
    let dir = temp_dir("kill-replay");
    let hung = kill_mid_replay(&url, &dir, &status, &server);
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes)).unwrap();
    wait_until("the replay to end", Duration::from_secs(30), || {
        client.dead_letter_stats().unwrap().count == 0 && outcomes.all().len() >= 50
    });
    let got = delivered(&server, hung);
    assert_eq!(got.len(), 50, "{got:?}");
    assert!(got.values().all(|n| *n == 1), "each once: {got:?}");
    assert!(outcomes
        .all()
        .iter()
        .all(|o| o.kind == OutcomeKind::Delivered));
    client.close(None).unwrap();
}

#[test]
fn on_redis_a_400_is_kept_listed_and_replayed_once() {
    let redis = redis_server::RedisServer::start();
    let (server, status) = switchable();
    let outcomes = Outcomes::default();
    let client = Client::new(
        dead_config(&server, &redis.spool("dl"), &outcomes).dead_letter_max_bytes(6_000),
    )
    .unwrap();
    let ids: Vec<String> = (0..30)
        .map(|i| {
            client
                .enqueue(&Message::track(format!("u{i}"), "E"))
                .unwrap()
        })
        .collect();
    outcomes.wait_for(30, Duration::from_secs(10));
    wait_until("the dead letters", Duration::from_secs(5), || {
        client.dead_letter(&ids[29]).unwrap().is_some()
    });
    let stats = client.dead_letter_stats().unwrap();
    assert!(stats.evicted > 0 && stats.bytes <= 6_000, "{stats:?}");
    let kept = all_dead(&client);
    assert_eq!(kept.len() as u64, stats.count);
    let dead = client.dead_letter(&ids[29]).unwrap().unwrap();
    assert_eq!(dead.reason, Reason::Status(400));
    assert_eq!(dead.last_attempts[0].answer.as_deref(), Some(ANSWER));
    assert!(dead.body.is_some());
    let before = server.count();
    status.store(200, SeqCst);
    let job = client.replay_dead_letters(None, None, None).unwrap();
    assert_eq!(job.total, stats.count);
    wait_until("the replay", Duration::from_secs(20), || {
        client.replay_progress(job.id).unwrap().unwrap().done()
    });
    let got = delivered(&server, before);
    assert_eq!(got.len() as u64, stats.count);
    assert!(got.values().all(|n| *n == 1), "{got:?}");
    wait_until("the dead letters to leave", Duration::from_secs(5), || {
        client.dead_letter_stats().unwrap().count == 0
    });
    assert!(client.delete_dead_letter(&ids[0]).is_ok_and(|found| !found));
    client.close(None).unwrap();
}

#[test]
fn on_redis_a_replay_cut_by_a_kill_is_taken_over_and_ends_once() {
    let redis = redis_server::RedisServer::start();
    let (server, status) = switchable();
    let url = format!("{}/hook", server.url);
    let spool = redis.spool("kill");
    let hung = kill_mid_replay(&url, &spool, &status, &server);
    let outcomes = Outcomes::default();
    let client =
        Client::new(dead_config(&server, &spool, &outcomes).timeout(Duration::from_secs(1)))
            .unwrap();
    // The child's beat lasts its takeover time (1 s + 10 s).
    wait_until("the takeover", Duration::from_secs(40), || {
        client.dead_letter_stats().unwrap().count == 0 && outcomes.all().len() >= 50
    });
    let got = delivered(&server, hung);
    assert_eq!(got.len(), 50, "{got:?}");
    assert!(got.values().all(|n| *n == 1), "each once: {got:?}");
    client.close(None).unwrap();
}

/// Letters of users u1..u30 (two each), events and order ids by turn; a search finds exactly
/// the letters whose body holds its text, page by page, within since/until.
fn searches_find_the_letters_holding_the_text(client: &Client, outcomes: &Outcomes) {
    let events = ["Signed Up", "Order Completed", "Cart Viewed"];
    for i in 0..60 {
        let msg = Message::track(format!("u{}", i % 30 + 1), events[i % 3])
            .property("orderId", format!("ord-{i}"));
        client.enqueue(&msg).unwrap();
        if i == 29 {
            // Two waves, failing at different times, for since/until.
            outcomes.wait_for(30, Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    outcomes.wait_for(60, Duration::from_secs(10));
    wait_until("the dead letters", Duration::from_secs(5), || {
        client.dead_letter_stats().unwrap().count == 60
    });
    let all = all_dead(client);
    let bodies: Vec<(String, std::time::SystemTime, Vec<u8>)> = all
        .iter()
        .map(|l| {
            let body = client.dead_letter(&l.message_id).unwrap().unwrap().body;
            (l.message_id.clone(), l.failed_at, body.unwrap())
        })
        .collect();
    // What a search must give: the letters holding the text, newest first.
    let expect = |text: &str, since: Option<std::time::SystemTime>| -> Vec<String> {
        (bodies.iter())
            .filter(|(_, at, _)| since.is_none_or(|s| *at >= s))
            .filter(|(_, _, b)| b.windows(text.len()).any(|w| w == text.as_bytes()))
            .map(|(id, _, _)| id.clone())
            .collect()
    };
    let search = |text: &str, limit: usize, since, until| -> (Vec<String>, usize) {
        let mut q = DeadLetterQuery {
            limit,
            since,
            until,
            contains: Some(text.into()),
            ..Default::default()
        };
        let (mut ids, mut pages) = (Vec::new(), 0);
        loop {
            let page = client.dead_letters(&q).unwrap();
            pages += 1;
            assert!(page.letters.len() <= limit);
            ids.extend(page.letters.into_iter().map(|l| l.message_id));
            match page.next {
                Some(next) => q.cursor = Some(next),
                None => return (ids, pages),
            }
        }
    };
    // One user: u3 and not u30, whose id holds "u3" too.
    let (u3, _) = search(r#""userId":"u3""#, 100, None, None);
    assert_eq!(u3.len(), 2, "{u3:?}");
    assert_eq!(u3, expect(r#""userId":"u3""#, None));
    let (loose, _) = search("u3", 100, None, None);
    assert_eq!(loose.len(), 4, "u3 and u30: {loose:?}");
    // One order, by its property's value; exact bytes, so the case matters.
    let (order, _) = search(r#""ord-41""#, 100, None, None);
    assert_eq!(order.len(), 1);
    assert_eq!(order, expect(r#""ord-41""#, None));
    assert!(search(r#""ORD-41""#, 100, None, None).0.is_empty());
    // One event, a few at a time: the same letters, in the same order, once each.
    let text = r#""event":"Order Completed""#;
    let (by_pages, pages) = search(text, 7, None, None);
    assert_eq!(by_pages.len(), 20);
    assert_eq!(by_pages, expect(text, None));
    assert!(pages >= 3, "{pages}");
    // Within a window: the second wave alone, from the first failure of it.
    let second = bodies
        .iter()
        .filter(|(_, _, b)| b.windows(6).any(|w| w == b"ord-30"))
        .map(|(_, at, _)| *at)
        .next()
        .unwrap();
    let (recent, _) = search(text, 3, Some(second), None);
    assert_eq!(recent, expect(text, Some(second)));
    assert!(!recent.is_empty() && recent.len() < 20, "{recent:?}");
    let (older, _) = search(text, 3, None, Some(second));
    let mut both = recent.clone();
    both.extend(older);
    assert_eq!(both, expect(text, None));
    // Refused: empty, and longer than the limit; the limit itself is taken.
    for bad in [String::new(), "x".repeat(257)] {
        let err = client
            .dead_letters(&DeadLetterQuery {
                contains: Some(bad),
                ..Default::default()
            })
            .unwrap_err();
        match &err {
            Error::InvalidField { field, reason } => {
                assert_eq!(field, "contains");
                assert!(reason.contains("256"), "{reason}");
            }
            other => panic!("{other}"),
        }
    }
    let longest = DeadLetterQuery {
        contains: Some("x".repeat(256)),
        ..Default::default()
    };
    assert!(client.dead_letters(&longest).unwrap().letters.is_empty());
}

#[test]
fn a_search_finds_the_letters_of_one_user_event_or_order() {
    let (server, _) = switchable();
    let dir = temp_dir("search");
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &dir, &outcomes)).unwrap();
    searches_find_the_letters_holding_the_text(&client, &outcomes);
    client.close(None).unwrap();
}

#[test]
fn on_redis_a_search_finds_the_letters_of_one_user_event_or_order() {
    let redis = redis_server::RedisServer::start();
    let (server, _) = switchable();
    let outcomes = Outcomes::default();
    let client = Client::new(dead_config(&server, &redis.spool("search"), &outcomes)).unwrap();
    searches_find_the_letters_holding_the_text(&client, &outcomes);
    client.close(None).unwrap();
}
