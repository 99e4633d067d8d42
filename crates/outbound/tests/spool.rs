//! Durable delivery: with `spool` set, what a client accepted survives its close,
//! a crash or a restart, and the next client on the directory delivers it.

mod support;

use outbound::{Client, Config, Error, Message, OutcomeKind, Reason, Webhook};
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{ingestion, Outcomes, Reply, Server};

fn spooled(server: &Server, dir: &Path) -> Config {
    ingestion(server)
        .spool(dir.to_path_buf())
        .webhooks(vec![Webhook::new(format!("{}/hook", server.url))])
        .max_queue_size(50_000)
}

/// Ids of the messages a server took: from batch bodies and webhook bodies.
fn taken(server: &Server, status_ok: impl Fn(usize) -> bool) -> Vec<String> {
    let mut ids = Vec::new();
    for (i, r) in server.requests().iter().enumerate() {
        if !status_ok(i) {
            continue;
        }
        let v = r.json();
        match v["batch"].as_array() {
            Some(batch) => ids.extend(
                batch
                    .iter()
                    .map(|m| m["messageId"].as_str().unwrap().to_string()),
            ),
            None => ids.push(v["messageId"].as_str().unwrap().to_string()),
        }
    }
    ids
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "outbound-spool-{name}-{}-{}",
        std::process::id(),
        fastrand_suffix()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn fastrand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn messages_left_by_close_are_delivered_by_the_next_client() {
    let dir = temp_dir("restart");
    let status = Arc::new(AtomicU16::new(503));
    let s = status.clone();
    let server = Server::start(move |_| Reply::Status(s.load(SeqCst)));
    let first = Outcomes::default();
    let a = Client::new(spooled(&server, &dir).on_outcome(first.callback())).unwrap();
    let ids: HashSet<String> = (0..200)
        .map(|i| {
            a.enqueue(&Message::track(format!("u{i}"), "Spooled"))
                .unwrap()
        })
        .collect();
    assert!(!a.flush(Some(Duration::from_millis(500))));
    assert_eq!(a.close(Some(Duration::from_millis(200))), Ok(false));
    let sa = a.stats();
    assert_eq!((sa.accepted, sa.spooled), (200, 200), "{sa:?}");
    assert_eq!(sa.delivered + sa.failed + sa.dropped, 0, "{sa:?}");
    assert!(
        first.all().is_empty(),
        "left in the spool: no outcome, no callback"
    );
    drop(a);

    status.store(200, SeqCst);
    let before = server.count();
    let second = Outcomes::default();
    let b = Client::new(spooled(&server, &dir).on_outcome(second.callback())).unwrap();
    let seen = second.wait_for(200, Duration::from_secs(20));
    assert_eq!(seen.len(), 200);
    assert!(
        seen.iter().all(|o| o.kind == OutcomeKind::Delivered),
        "{:?}",
        seen[0]
    );
    let resumed: HashSet<String> = seen.iter().map(|o| o.message_id.to_string()).collect();
    assert_eq!(resumed, ids);
    let got: HashSet<String> = taken(&server, |i| i >= before).into_iter().collect();
    assert_eq!(got, ids, "every id reached the receiver again");
    assert_eq!(b.close(Some(Duration::from_secs(5))), Ok(true));
    let sb = b.stats();
    assert_eq!(
        (sb.accepted, sb.resumed, sb.delivered, sb.spooled),
        (0, 200, 200, 0)
    );
    drop(b);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "an empty spool leaves no file: {left:?}");
}

#[test]
fn a_second_client_on_the_same_spool_is_refused_naming_the_path() {
    let dir = temp_dir("twice");
    let server = Server::answering(200);
    let a = Client::new(spooled(&server, &dir)).unwrap();
    match Client::new(spooled(&server, &dir)) {
        Err(Error::Spool { path, reason }) => {
            assert!(path.contains("outbound-spool-twice"), "{path}");
            assert!(!reason.is_empty());
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("two clients on one spool"),
    }
    drop(a);
    Client::new(spooled(&server, &dir)).expect("free again after the first closed");
}

#[test]
fn the_retry_window_goes_on_from_the_first_attempt_across_restarts() {
    let dir = temp_dir("window");
    let server = Server::answering(503);
    let window = |c: Config| {
        let retry = outbound::RetryPolicy {
            max_retry_duration: Duration::from_secs(2),
            ..c.retry
        };
        c.retry(retry).webhooks(vec![]).flush_at(1)
    };
    let a = Client::new(window(spooled(&server, &dir))).unwrap();
    let id = a.enqueue(&Message::identify("u")).unwrap();
    assert!(
        server.wait_for(1, Duration::from_secs(5)),
        "first attempt made"
    );
    std::thread::sleep(Duration::from_millis(100));
    a.close(Some(Duration::from_millis(100))).unwrap();
    assert_eq!(a.stats().spooled, 1);
    drop(a);
    std::thread::sleep(Duration::from_millis(2200));
    let outcomes = Outcomes::default();
    let start = Instant::now();
    let b = Client::new(window(spooled(&server, &dir)).on_outcome(outcomes.callback())).unwrap();
    let seen = outcomes.wait_for(1, Duration::from_secs(10));
    assert_eq!(seen.len(), 1);
    assert_eq!(&*seen[0].message_id, id.as_str());
    assert_eq!(seen[0].reason, Some(Reason::Expired), "{:?}", seen[0]);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "expired at once, not after a new window"
    );
    drop(b);
}

#[test]
fn spool_max_bytes_refuses_new_calls_as_queue_full() {
    let dir = temp_dir("full");
    let server = Server::answering(503);
    let client = Client::new(spooled(&server, &dir).spool_max_bytes(4_000)).unwrap();
    let mut refused = 0;
    for i in 0..50 {
        match client.enqueue(&Message::track(format!("u{i}"), "Big")) {
            Ok(_) => {}
            Err(Error::SpoolFull { limit }) => {
                assert_eq!(limit, 4_000);
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 0 && refused < 50, "{refused} refused");
    let s = client.stats();
    assert_eq!(s.queue_full, refused, "{s:?}");
    assert_eq!(s.accepted, 50 - refused);
}

#[test]
fn a_spooled_backlog_is_bounded_by_spool_bytes_not_by_max_queue_size() {
    // A webhook down: a backlog 50 times max_queue_size is accepted, waits in the spool, and
    // every message of it is delivered once the URL answers again.
    let dir = temp_dir("backlog");
    let up = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let delivered = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (on, log) = (up.clone(), delivered.clone());
    let server = Server::start(move |r| match on.load(SeqCst) {
        true => {
            let id = r.json()["messageId"].as_str().unwrap().to_string();
            log.lock().unwrap().push(id);
            Reply::Status(200)
        }
        false => Reply::Status(503),
    });
    let config = support::config()
        .spool(dir.clone())
        .webhooks(vec![Webhook::new(format!("{}/hook", server.url))])
        .max_queue_size(20)
        // A burst waits for the next commit rather than fail: what is on disk frees its place.
        .queue_full_wait(Duration::from_secs(10));
    let client = Client::new(config).unwrap();
    let n = 1_000;
    let mut sent = Vec::new();
    for i in 0..n {
        let id = client
            .enqueue(&Message::track(format!("u{i}"), "Backlog"))
            .unwrap_or_else(|e| panic!("message {i} refused: {e}"));
        sent.push(id);
    }
    let s = client.stats();
    assert_eq!((s.accepted, s.queue_full), (n, 0), "{s:?}");
    assert!(
        server.wait_for(3, Duration::from_secs(20)),
        "tried while down"
    );
    up.store(true, SeqCst);
    assert!(
        client.flush(Some(Duration::from_secs(60))),
        "{:?}",
        client.stats()
    );
    let s = client.stats();
    assert_eq!(s.delivered, n, "{s:?}");
    let mut got = delivered.lock().unwrap().clone();
    got.sort();
    sent.sort();
    assert_eq!(got, sent, "each message answered 200 once");
    assert!(client.close(None).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Env var that turns `killed_child` into the process the kill test SIGKILLs.
/// Runs test `name` of this binary in a child process with `env` set to `value`, and reads
/// its output up to its line READY: the child and the lines before READY.
fn child_until_ready(name: &str, env: &str, value: String) -> (std::process::Child, Vec<String>) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--ignored", "--nocapture"])
        .env(env, value)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0,
            "child ended early"
        );
        match line.trim() {
            "READY" => return (child, lines),
            l => lines.push(l.to_string()),
        }
    }
}

const KILL_ENV: &str = "OUTBOUND_SPOOL_KILL_CHILD";

#[test]
fn a_sigkilled_process_loses_nothing_it_flushed_to_the_spool() {
    let dir = temp_dir("kill");
    let down = Server::answering(503);
    let (mut child, lines) = child_until_ready(
        "killed_child",
        KILL_ENV,
        format!("{}|{}", down.url, dir.display()),
    );
    let ids: HashSet<String> = (lines.iter())
        .filter_map(|l| l.strip_prefix("id ").map(str::to_string))
        .collect();
    assert_eq!(ids.len(), 1000);
    child.kill().unwrap(); // SIGKILL: no close, no destructor, nothing flushed after this
    child.wait().unwrap();

    let up = Server::answering(200);
    let outcomes = Outcomes::default();
    let client = Client::new(spooled(&up, &dir).on_outcome(outcomes.callback())).unwrap();
    let seen = outcomes.wait_for(1000, Duration::from_secs(120));
    let delivered: HashSet<String> = seen
        .iter()
        .filter(|o| o.kind == OutcomeKind::Delivered)
        .map(|o| o.message_id.to_string())
        .collect();
    assert_eq!(delivered, ids, "every id the killed process accepted");
    let batch: HashSet<String> = taken(&up, |_| true).into_iter().collect();
    assert_eq!(batch, ids);
    assert_eq!(client.stats().resumed, 1000);
}

/// The child of the kill test: accepts 1,000 messages for a receiver that answers 503,
/// flushes (so they are on disk), prints their ids and READY, then waits to be killed.
#[test]
#[ignore = "the killed process of a_sigkilled_process_loses_nothing_it_flushed_to_the_spool"]
fn killed_child() {
    let Ok(arg) = std::env::var(KILL_ENV) else {
        return;
    };
    let (url, dir) = arg.split_once('|').unwrap();
    let client = Client::new(
        support::config()
            .write_key("wk")
            .endpoint(url)
            .webhooks(vec![Webhook::new(format!("{url}/hook"))])
            .spool(dir),
    )
    .unwrap();
    for i in 0..1000 {
        let id = client
            .enqueue(&Message::track(format!("u{i}"), "Killed"))
            .unwrap();
        println!("id {id}");
    }
    assert!(!client.flush(Some(Duration::from_millis(300))));
    println!("READY");
    std::thread::sleep(Duration::from_secs(60));
}

const DELIVERED_ENV: &str = "OUTBOUND_SPOOL_DELIVERED_CHILD";

/// Outcomes are committed lazily when no message follows them (up to 50 ms later, not
/// within `spool_commit_interval`), but they are committed: a process killed a while after
/// its messages were delivered leaves nothing to deliver again.
#[test]
fn removals_reach_the_disk_with_no_message_after_them() {
    let dir = temp_dir("removals");
    let up = Server::answering(200);
    let (mut child, _) = child_until_ready(
        "delivered_child",
        DELIVERED_ENV,
        format!("{}|{}", up.url, dir.display()),
    );
    child.kill().unwrap(); // SIGKILL: no close, nothing committed after this
    child.wait().unwrap();
    let requests = up.count();
    assert_eq!(taken(&up, |_| true).len(), 200, "the child delivered all");

    let client = Client::new(spooled(&up, &dir)).unwrap();
    assert!(client.flush(Some(Duration::from_secs(10))));
    assert_eq!(client.stats().resumed, 0, "nothing left to deliver again");
    assert_eq!(up.count(), requests);
    client.close(Some(Duration::from_secs(1))).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child of `removals_reach_the_disk_with_no_message_after_them`: 100 messages (to the
/// ingestion endpoint and a webhook) delivered one by one, then 300 ms without a message
/// (six times `PROGRESS_EVERY`), then READY, and it waits to be killed.
#[test]
#[ignore = "the killed process of removals_reach_the_disk_with_no_message_after_them"]
fn delivered_child() {
    let Ok(arg) = std::env::var(DELIVERED_ENV) else {
        return;
    };
    let (url, dir) = arg.split_once('|').unwrap();
    let outcomes = Outcomes::default();
    let client = Client::new(
        support::config()
            .write_key("wk")
            .endpoint(url)
            .webhooks(vec![Webhook::new(format!("{url}/hook"))])
            .spool(dir)
            .spool_commit_interval(Duration::from_millis(1))
            .flush_at(1)
            .on_outcome(outcomes.callback()),
    )
    .unwrap();
    for i in 0..100 {
        client
            .enqueue(&Message::track(format!("u{i}"), "Delivered"))
            .unwrap();
        assert_eq!(
            outcomes.wait_for(i + 1, Duration::from_secs(10)).len(),
            i + 1
        );
    }
    assert!(outcomes
        .all()
        .iter()
        .all(|o| o.kind == OutcomeKind::Delivered));
    std::thread::sleep(Duration::from_millis(300));
    println!("READY");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_resumed_message_goes_only_to_the_webhook_urls_still_worth_trying() {
    let dir = temp_dir("mask");
    // URL 0 refuses for good (404); URL 1 is unavailable (503) during the first life.
    let status1 = Arc::new(AtomicU16::new(503));
    let s1 = status1.clone();
    let gone = Server::answering(404);
    let flaky = Server::start(move |_| Reply::Status(s1.load(SeqCst)));
    let hooks = |c: Config| {
        let mut c = c.webhooks(vec![
            Webhook::new(format!("{}/zero", gone.url)),
            Webhook::new(format!("{}/one", flaky.url)),
        ]);
        c.write_key = None;
        c
    };
    let a = Client::new(hooks(spooled(&flaky, &dir))).unwrap();
    let id = a.enqueue(&Message::identify("u")).unwrap();
    assert!(gone.wait_for(1, Duration::from_secs(5)) && flaky.wait_for(1, Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(200)); // the progress is committed
    a.close(Some(Duration::from_millis(100))).unwrap();
    assert_eq!(a.stats().spooled, 1);
    drop(a);

    let before = gone.count();
    status1.store(200, SeqCst);
    let outcomes = Outcomes::default();
    let b = Client::new(hooks(spooled(&flaky, &dir)).on_outcome(outcomes.callback())).unwrap();
    let seen = outcomes.wait_for(1, Duration::from_secs(10));
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (&*seen[0].message_id, seen[0].kind),
        (id.as_str(), OutcomeKind::Delivered)
    );
    assert_eq!(
        gone.count(),
        before,
        "the URL that refused for good is not tried again"
    );
    drop(b);
}

#[test]
fn a_message_its_integrations_send_nowhere_ends_at_once_with_a_spool() {
    let dir = temp_dir("filtered");
    let server = Server::answering(200);
    let outcomes = Outcomes::default();
    // Webhooks only: ingestion takes every message (the endpoint applies integrations).
    let mut config = spooled(&server, &dir).on_outcome(outcomes.callback());
    config.write_key = None;
    let client = Client::new(config).unwrap();
    let mut msg = Message::identify("u");
    msg.integrations = Some(outbound::parse_object("integrations", r#"{"All": false}"#).unwrap());
    client.enqueue(&msg).unwrap();
    let seen = outcomes.wait_for(1, Duration::from_secs(2));
    assert_eq!(seen.len(), 1, "not held back waiting for another message");
    assert_eq!(seen[0].reason, Some(Reason::Filtered));
    assert!(
        client.flush(Some(Duration::from_secs(2))),
        "an intentional exclusion is no failure"
    );
}

/// A fork while the spool thread is inside SQLite must not hang the child (SQLite's global
/// mutexes would be copied locked): the child's `reset_after_fork` opens its own spool file.
#[test]
fn a_child_forked_while_the_spool_commits_gets_a_client_of_its_own() {
    use std::sync::atomic::AtomicBool;
    let dir = temp_dir("fork");
    let server = Server::start(|_| Reply::Status(200));
    let client = Arc::new(
        Client::new(spooled(&server, &dir).spool_commit_interval(Duration::from_millis(1)))
            .unwrap(),
    );
    // A steady stream of calls and removals keeps the spool thread committing.
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = {
        let (client, stop) = (client.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                let _ = client.enqueue(&Message::track(format!("u{i}"), "Busy"));
                i += 1;
                if i.is_multiple_of(5) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    for round in 0..10 {
        // SAFETY: the child only restarts the client, queues one message and _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = client.reset_after_fork().is_ok()
                && client.enqueue(&Message::track("child", "Forked")).is_ok();
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            let mut status = 0;
            // SAFETY: polls our own child.
            if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                break status;
            }
            if Instant::now() > deadline {
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("fork {round}: the child hung in reset_after_fork");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "fork {round}: the child failed ({status})"
        );
    }
    eprintln!("10 forks in {:?}", started.elapsed());
    stop.store(true, SeqCst);
    feeder.join().unwrap();
    let client = Arc::into_inner(client).unwrap();
    let closing = Instant::now();
    assert!(client.close(Some(Duration::from_secs(10))).is_ok());
    eprintln!("closed in {:?}", closing.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}
