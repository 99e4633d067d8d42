//! A Redis spool through Sentinel (`redis+sentinel://`), against real `redis-server`s (a
//! primary and a replica) and three `redis-sentinel`s on 127.0.0.1 (scripts/redis-env.sh
//! installs them): the primary SIGKILLed mid-run loses nothing acknowledged, the client
//! follows the promotion, and another process takes its messages over from the new primary.
//! With `redis_ack = "auto"` (the default) the client acknowledges again at once on the new
//! primary (which has no replica: memory); with `"replicas:1"` only once a replica is back
//! (the killed server, restarted, made one by Sentinel).

#[path = "support/redis_server.rs"]
mod redis_server;
mod support;

use outbound::{Client, Config, DeadLetterQuery, Message, RedisAck, Webhook};
use redis_server::{RedisSentinel, RedisServer};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::Server;

const NAME: &str = "fo";

fn sentinel_spool(sentinels: &[RedisSentinel], prefix: &str) -> PathBuf {
    PathBuf::from(redis_server::sentinel_url(sentinels, NAME, prefix))
}

fn promotion(sentinels: &[RedisSentinel], replica: &RedisServer, killed: Instant) -> Instant {
    redis_server::promotion(sentinels, NAME, replica, killed)
}

fn client(spool: &Path, url: &str, ack: RedisAck) -> Client {
    Client::new(
        Config::default()
            .webhooks(vec![Webhook::new(url)])
            .spool(spool.to_path_buf())
            .redis_ack(ack)
            .timeout(Duration::from_secs(1))
            .max_queue_size(50_000)
            .debug(std::env::var("FAILOVER_DEBUG").is_ok()),
    )
    .unwrap()
}

#[test]
fn a_primary_sigkilled_mid_run_loses_nothing_acknowledged_and_auto_acknowledges_again_at_once() {
    let again = failover(RedisAck::Auto, false);
    assert!(again < Duration::from_secs(10), "{again:?}");
}

#[test]
fn with_replicas_1_a_failover_is_acknowledged_again_only_once_a_replica_is_back() {
    let again = failover(RedisAck::Replicas(1), true);
    assert!(
        again > Duration::from_secs(1),
        "{again:?}: before a replica was back?"
    );
}

/// The primary SIGKILLed while a client acknowledges one message each 10 ms, with `ack`;
/// with `restart`, the killed server is restarted after the promotion (Sentinel makes it
/// a replica). Checks that nothing acknowledged is lost (another client takes everything
/// over from the new primary); returns how long after the promotion messages were
/// acknowledged again.
/// Dead letters live beside the spool: through Sentinel they are written to the primary it
/// names, and after a failover to the new one, where those written before are still listed.
#[test]
fn dead_letters_follow_the_primary_through_a_failover() {
    let (mut primary, replica, sentinels) = redis_server::sentinel_fleet(NAME);
    let refusing = Server::answering(400); // a 400 fails at once: a dead letter
    let c = Client::new(
        Config::default()
            .webhooks(vec![Webhook::new(&refusing.url)])
            .spool(sentinel_spool(&sentinels, "dl"))
            .dead_letters(true)
            .timeout(Duration::from_secs(1)),
    )
    .unwrap();
    let send = |from: usize| {
        for i in from..from + 5 {
            c.enqueue(&Message::track("u1", "E").message_id(format!("d-{i}")))
                .unwrap();
        }
    };
    let count_reaches = |n: u64| {
        let end = Instant::now() + Duration::from_secs(30);
        let mut last = None;
        while Instant::now() < end {
            match c.dead_letter_stats() {
                Ok(s) if s.count == n => return,
                got => last = Some(got),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{n} dead letters not counted in 30 s; last answer: {last:?}");
    };
    send(0);
    count_reaches(5);
    replica.wait_in_sync();
    primary.kill(); // SIGKILL
    promotion(&sentinels, &replica, Instant::now());
    send(5);
    count_reaches(10);
    let page = c
        .dead_letters(&DeadLetterQuery {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    let mut ids: Vec<String> = page.letters.into_iter().map(|d| d.message_id).collect();
    ids.sort();
    let want: Vec<String> = (0..10).map(|i| format!("d-{i}")).collect();
    assert_eq!(ids, want);
    c.close(None).unwrap();
}

fn failover(ack: RedisAck, restart: bool) -> Duration {
    let (mut primary, replica, sentinels) = redis_server::sentinel_fleet(NAME);
    let spool = sentinel_spool(&sentinels, "fo");
    // A: messages stay pending (its receiver answers 503), acknowledged one at a time.
    let down = Server::answering(503);
    let a = Arc::new(client(&spool, &down.url, ack));
    let acked = Arc::new(Mutex::new(Vec::<(usize, bool, Instant)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (a, acked, stop) = (a.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(SeqCst) {
                a.enqueue(&Message::track("u1", "E").message_id(format!("m-{i:05}")))
                    .unwrap();
                let acked = acked.clone();
                a.when_spooled(move |ok| acked.lock().unwrap().push((i, ok, Instant::now())));
                i += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            i
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    primary.kill(); // SIGKILL
    let killed = Instant::now();
    let promoted = promotion(&sentinels, &replica, killed);
    // Its supervisor restarts the killed server: Sentinel makes it a replica of the new
    // primary, so `replicas:1` can be confirmed again.
    if restart {
        primary.restart();
    }
    let end = promoted + Duration::from_secs(30);
    while Instant::now() < end
        && !(acked.lock().unwrap().iter()).any(|(_, ok, at)| *ok && *at > promoted)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, SeqCst);
    let sent = sender.join().unwrap();
    let answers = acked.lock().unwrap().clone();
    let again = answers
        .iter()
        .find(|(_, ok, at)| *ok && *at > promoted)
        .map(|(_, _, at)| at.duration_since(promoted));
    eprintln!(
        "redis failover ({ack}): promoted {:.1} s after the SIGKILL; acknowledging again {:.1} s after \
         the promotion; {sent} sent",
        promoted.duration_since(killed).as_secs_f64(),
        again.map_or(f64::NAN, |d| d.as_secs_f64()),
    );
    let again = again.expect("acknowledging again after the promotion");
    // A leaves (its heartbeat goes); B takes its messages over from the new primary.
    a.close(Some(Duration::ZERO)).unwrap();
    let up = Server::answering(200);
    let b = client(&spool, &up.url, ack);
    // Acknowledged: answered true. A message answered false may be gone with the primary
    // that held it (its commit ran there unconfirmed, or not at all), as the SDK is told.
    let id = |i: usize| format!("m-{i:05}");
    let want: HashSet<String> = (answers.iter())
        .filter(|(_, ok, _)| *ok)
        .map(|(i, ..)| id(*i))
        .collect();
    let refused: HashSet<String> = (answers.iter())
        .filter(|(_, ok, _)| !*ok)
        .map(|(i, ..)| id(*i))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = || -> HashSet<String> {
        up.requests()
            .iter()
            .map(|r| r.json()["messageId"].as_str().unwrap().to_string())
            .collect()
    };
    while !want.is_subset(&got()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = got();
    eprintln!(
        "redis failover ({ack}): {} acknowledged, {} not ({} of those delivered all the same)",
        want.len(),
        refused.len(),
        refused.intersection(&got).count()
    );
    let lost = want.difference(&got).count();
    assert_eq!(lost, 0, "acknowledged messages lost");
    assert!(b.flush(Some(Duration::from_secs(30))));
    b.close(None).unwrap();
    again
}
