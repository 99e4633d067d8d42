//! The store against a real `redis-server` (scripts/redis-env.sh installs it): copies,
//! progress carried through a takeover, living owners left alone, racing adopters.

use super::*;
use crate::model::spool::{RedisAck, RedisSpool, Spool};
use crate::wire::Body;
use std::collections::HashSet;

// The same starter as the integration tests: a free port, retried if another test takes
// it first, and the server recognised by its pid.
#[path = "../../../tests/support/redis_server.rs"]
mod redis_server;

struct Server {
    port: u16,
    redis: redis_server::RedisServer,
}

impl Server {
    fn start() -> Server {
        let redis = redis_server::RedisServer::start();
        Server {
            port: redis.port,
            redis,
        }
    }

    fn store(&self, takeover_after: Duration) -> RedisStore {
        self.store_acking(takeover_after, RedisAck::Auto).unwrap()
    }

    fn store_acking(&self, takeover_after: Duration, ack: RedisAck) -> Result<RedisStore, Error> {
        let url = format!("redis://127.0.0.1:{}/0?prefix=unit", self.port);
        let Spool::Redis(url) = Spool::from(url) else {
            unreachable!()
        };
        let spool = RedisSpool::parse(&url).unwrap();
        // Redis may still be loading its AOF: try for a moment.
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            match RedisStore::open(&spool, Duration::from_secs(2), takeover_after, ack) {
                Ok(s) => return Ok(s),
                Err(e) if Instant::now() > end || !e.to_string().contains("LOADING") => {
                    return Err(e)
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn cmd(&self, args: &[&str]) -> Value {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{}/0", self.port))
            .unwrap()
            .get_connection()
            .unwrap();
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query(&mut c).unwrap()
    }

    fn xlen(&self, store: &RedisStore) -> i64 {
        match self.cmd(&["XLEN", &store.keys.stream]) {
            Value::Int(n) => n,
            v => panic!("{v:?}"),
        }
    }

    /// As if the owner died long ago: its heartbeat gone.
    fn silence(&self, store: &RedisStore) {
        self.cmd(&["DEL", &store.keys.alive]);
    }
}

const T: Duration = Duration::from_secs(60);

fn record(id: &str) -> Record {
    Record {
        tenant: 0,
        adopted: false,
        id: Arc::from(id),
        accepted_ms: 1_764_000_000_000,
        first_ms: None,
        ingest: Some(Body::from_static(b"{\"ingest\":1}")),
        hook: Some(Body::from_static(b"{\"hook\":1}")),
        hook_mask: 0b11,
        hooks_key: 42,
    }
}

fn id(s: &str) -> Arc<str> {
    Arc::from(s)
}

#[test]
fn a_repeated_id_stays_until_as_many_removes() {
    let server = Server::start();
    let mut a = server.store(T);
    a.apply(&[Op::Put(record("m")), Op::Put(record("m"))])
        .unwrap();
    assert_eq!(server.xlen(&a), 1);
    assert_eq!(Store::pending(&a, 0).0, 1);
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("m"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(server.xlen(&a), 1, "one copy left");
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("m"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(server.xlen(&a), 0);
    assert_eq!(Store::pending(&a, 0), (0, 0));
}

#[test]
fn progress_goes_with_a_takeover_and_the_dead_owner_s_keys_go() {
    let server = Server::start();
    let mut a = server.store(T);
    a.apply(&[
        Op::Put(record("first")),
        Op::Put(record("ingested")),
        Op::Put(record("masked")),
        Op::Put(record("twice")),
        Op::Put(record("twice")),
    ])
    .unwrap();
    a.apply(&[
        Op::FirstAttempt {
            tenant: 0,
            id: id("first"),
            at_ms: 1_764_000_000_500,
        },
        Op::IngestDone {
            tenant: 0,
            id: id("ingested"),
        },
        Op::HookMask {
            tenant: 0,
            id: id("masked"),
            mask: 0b10,
        },
    ])
    .unwrap();
    server.silence(&a);
    let dead_stream = a.keys.stream.clone();
    std::mem::forget(a); // died: no close

    let mut b = server.store(T);
    let adopted = b.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (4, 1));
    let (records, _) = b.resumable(0, None, 100).unwrap();
    let by_id = |name: &str| records.iter().find(|r| &*r.id == name).unwrap().clone();
    assert_eq!(by_id("first").first_ms, Some(1_764_000_000_500));
    assert_eq!(by_id("ingested").ingest, None);
    assert!(by_id("ingested").hook.is_some());
    assert_eq!(by_id("masked").hook_mask, 0b10);
    // Two copies: two removes to leave.
    b.apply(&[Op::Remove {
        tenant: 0,
        id: id("twice"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(stream_ids(&server, &b).len(), 4);
    b.apply(&[Op::Remove {
        tenant: 0,
        id: id("twice"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(stream_ids(&server, &b).len(), 3);
    assert_eq!(server.xlen(&b), 1, "one commit group");
    assert_eq!(server.cmd(&["EXISTS", &dead_stream]), Value::Int(0));
}

#[test]
fn a_living_owner_is_never_taken_over() {
    let server = Server::start();
    let mut a = server.store(T);
    a.apply(&[Op::Put(record("mine"))]).unwrap();
    let mut b = server.store(T);
    assert_eq!(b.adopt().unwrap().records, 0);
    assert_eq!(server.xlen(&a), 1);
    // Closed with messages left: the heartbeat goes, the messages stay, and are taken over.
    RedisStore::close(a).unwrap();
    assert_eq!(b.adopt().unwrap().records, 1);
}

/// `commits` commits of `per` new messages each (`m0`, `m1`, ...): one entry per commit.
fn put_commits(store: &mut RedisStore, commits: usize, per: usize) {
    for c in 0..commits {
        let ops: Vec<Op> = (0..per)
            .map(|i| Op::Put(record(&format!("m{}", c * per + i))))
            .collect();
        store.apply(&ops).unwrap();
    }
}

#[test]
fn two_adopters_never_get_the_same_message() {
    let server = Server::start();
    let mut a = server.store(T);
    // 20 commits: 20 entries of 100.
    put_commits(&mut a, 20, 100);
    server.silence(&a);
    std::mem::forget(a);
    let stores: Vec<RedisStore> = (0..3).map(|_| server.store(T)).collect();
    let got: Vec<Vec<Arc<str>>> = std::thread::scope(|s| {
        let handles: Vec<_> = stores
            .into_iter()
            .map(|mut st| {
                s.spawn(move || {
                    let mut ids = Vec::new();
                    for _ in 0..3 {
                        st.adopt().unwrap();
                        let (r, _) = st.resumable(0, None, usize::MAX).unwrap();
                        ids.extend(r.into_iter().map(|r| r.id));
                    }
                    ids
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<&Arc<str>> = got.iter().flatten().collect();
    let unique: HashSet<&Arc<str>> = all.iter().copied().collect();
    assert_eq!(
        all.len(),
        2000,
        "{:?}",
        got.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert_eq!(unique.len(), 2000);
}

#[test]
fn entries_an_adopter_read_and_died_with_are_claimed_after_the_threshold() {
    let server = Server::start();
    let t = Duration::from_millis(600);
    let mut a = server.store(t);
    let ops: Vec<Op> = (0..10).map(|i| Op::Put(record(&format!("m{i}")))).collect();
    a.apply(&ops).unwrap();
    server.silence(&a);
    let stream = a.keys.stream.clone();
    std::mem::forget(a);
    // An adopter reads them, then dies before moving them.
    server.cmd(&["XGROUP", "CREATE", &stream, keys::GROUP, "0"]);
    server.cmd(&[
        "XREADGROUP",
        "GROUP",
        keys::GROUP,
        "ghost",
        "STREAMS",
        &stream,
        ">",
    ]);
    let mut b = server.store(t);
    assert_eq!(b.adopt().unwrap().records, 0, "not before the threshold");
    std::thread::sleep(t + Duration::from_millis(100));
    assert_eq!(b.adopt().unwrap().records, 10);
}

#[test]
fn an_unreachable_redis_keeps_the_changes_and_writes_them_when_back() {
    let server = Server::start();
    let mut a = server.store(T);
    a.apply(&[Op::Put(record("before"))]).unwrap();
    // Cut the connection and refuse new ones for a moment: point the store at a closed port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = closed.local_addr().unwrap().port();
    drop(closed);
    let good = std::mem::replace(
        &mut a.link.server,
        connect::RedisServer::Direct(
            redis::Client::open(format!("redis://127.0.0.1:{dead_port}/0")).unwrap(),
        ),
    );
    a.link.conn = None;
    assert!(a
        .apply(&[
            Op::Put(record("during")),
            Op::Remove {
                tenant: 0,
                id: id("before"),
                bytes: 0,
            }
        ])
        .is_err());
    assert_eq!(a.commits.backlog(), 2);
    a.link.server = good;
    a.link.retry_at = None;
    a.apply(&[]).unwrap();
    assert_eq!(a.commits.backlog(), 0);
    assert_eq!(server.xlen(&a), 1, "'during' written, 'before' removed");
}

#[test]
fn an_owner_that_died_with_nothing_pending_leaves_no_key_after_a_pass() {
    let server = Server::start();
    let mut a = server.store(T);
    a.apply(&[Op::Put(record("done"))]).unwrap();
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("done"),
        bytes: 0,
    }])
    .unwrap();
    let stream = a.keys.stream.clone();
    assert_eq!(
        server.cmd(&["EXISTS", &stream]),
        Value::Int(1),
        "an empty stream"
    );
    server.silence(&a);
    std::mem::forget(a);
    let mut b = server.store(T);
    assert_eq!(b.adopt().unwrap().records, 0);
    assert_eq!(server.cmd(&["EXISTS", &stream]), Value::Int(0));
    let owners = server.cmd(&["SMEMBERS", "unit:owners"]);
    assert_eq!(
        owners,
        Value::Array(vec![Value::BulkString(b.keys.owner.clone().into_bytes())])
    );
}

#[test]
fn entries_in_the_old_layout_are_taken_over() {
    // A relay of the version before the packed layout died with these in its stream.
    let server = Server::start();
    let dead = Keys::of("unit", "0123456789abcdef");
    server.cmd(&["SADD", "unit:owners", &dead.owner]);
    server.cmd(&[
        "XADD",
        &dead.stream,
        "0-1",
        "i",
        "old-1",
        "a",
        "1764000000000",
        "g",
        "{\"ingest\":1}",
        "h",
        "{\"hook\":1}",
        "m",
        "3",
        "k",
        "42",
    ]);
    server.cmd(&[
        "XADD",
        &dead.stream,
        "0-2",
        "i",
        "old-2",
        "a",
        "1764000000001",
        "f",
        "1764000000500",
        "h",
        "{\"hook\":2}",
        "m",
        "1",
        "k",
        "42",
    ]);
    // Its progress: old-2's ingestion was done (so no "g"), and it was accepted twice.
    server.cmd(&["HSET", &dead.progress, "0-2", "1764000000500,1,1,2"]);

    let mut b = server.store(T);
    let adopted = b.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (2, 1));
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    let (records, _) = b.resumable(0, None, 100).unwrap();
    let by_id = |name: &str| records.iter().find(|r| &*r.id == name).unwrap().clone();
    let one = by_id("old-1");
    assert_eq!(one.accepted_ms, 1_764_000_000_000);
    assert_eq!(one.first_ms, None);
    assert_eq!(one.ingest.as_deref(), Some(&b"{\"ingest\":1}"[..]));
    assert_eq!(one.hook.as_deref(), Some(&b"{\"hook\":1}"[..]));
    assert_eq!((one.hook_mask, one.hooks_key), (3, 42));
    let two = by_id("old-2");
    assert_eq!(two.first_ms, Some(1_764_000_000_500));
    assert_eq!(two.ingest, None);
    assert_eq!(two.hook_mask, 1);
    // Moved into our stream as one commit group, and gone from the dead owner's keys.
    assert_eq!(server.xlen(&b), 1);
    assert_eq!(stream_ids(&server, &b).len(), 2);
    assert_eq!(server.cmd(&["EXISTS", &dead.stream]), Value::Int(0));
    assert_eq!(
        server.redis.spooled_ids("unit").len(),
        2,
        "the helper reads packed entries"
    );
    // Two copies of old-2: two removes to leave.
    b.apply(&[
        Op::Remove {
            tenant: 0,
            id: id("old-1"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("old-2"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(server.xlen(&b), 1);
    b.apply(&[Op::Remove {
        tenant: 0,
        id: id("old-2"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(server.xlen(&b), 0);
}

#[test]
fn entries_of_a_newer_version_are_left_for_it_and_the_rest_taken() {
    // A relay of a later version (packed layout 4) died with one entry; one of this
    // version's single-record layout is beside it.
    let server = Server::start();
    let dead = Keys::of("unit", "fedcba9876543210");
    server.cmd(&["SADD", "unit:owners", &dead.owner]);
    server.cmd(&["XADD", &dead.stream, "0-1", "r", "\u{4}future layout"]);
    let ours = keys::Packed {
        id: "ours-1",
        accepted_ms: 1_764_000_000_000,
        first_ms: None,
        ingest: Some(b"{\"ingest\":1}"),
        hook: None,
        mask: 0,
        hooks_key: 42,
    }
    .to_vec();
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{}/0", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: Value = redis::cmd("XADD")
        .arg(&dead.stream)
        .arg("0-2")
        .arg("r")
        .arg(ours)
        .query(&mut c)
        .unwrap();

    let mut b = server.store(T);
    let adopted = b.adopt().unwrap();
    assert_eq!(adopted.records, 1, "this version's entry is taken");
    assert!(
        adopted
            .warnings
            .iter()
            .any(|(_, w)| w.contains("newer version")),
        "{:?}",
        adopted.warnings
    );
    let (records, _) = b.resumable(0, None, 100).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(&*records[0].id, "ours-1");
    // The newer entry is still in the dead owner's stream, for a newer adopter.
    assert_eq!(server.cmd(&["XLEN", &dead.stream]), Value::Int(1));
    // A second pass (as after T) neither drops it nor hands it out.
    let again = b.adopt().unwrap();
    assert_eq!(again.records, 0);
    assert_eq!(server.cmd(&["XLEN", &dead.stream]), Value::Int(1));
}

/// The records in `store`'s stream not marked removed, in stream order.
fn stream_records(server: &Server, store: &RedisStore) -> Vec<Record> {
    let Value::Array(entries) = server.cmd(&["XRANGE", &store.keys.stream, "-", "+"]) else {
        panic!("XRANGE")
    };
    let mut out = Vec::new();
    for e in &entries {
        let Value::Array(parts) = e else {
            panic!("{e:?}")
        };
        let entry = String::from_utf8(keys::bytes(&parts[0]).unwrap().to_vec()).unwrap();
        let done = server.cmd(&["HGET", &store.keys.progress, &keys::done_field(&entry)]);
        let done = keys::bytes(&done).unwrap_or_default().to_vec();
        let held = keys::held_of(&parts[1], &Arc::from("")).unwrap();
        for (i, (_, r)) in held.records().enumerate() {
            if !keys::is_done(&done, i) {
                out.push(r.clone());
            }
        }
    }
    out
}

/// The ids of the records in `store`'s stream not marked removed, in stream order.
fn stream_ids(server: &Server, store: &RedisStore) -> Vec<String> {
    (stream_records(server, store).iter())
        .map(|r| r.id.to_string())
        .collect()
}

#[test]
fn a_failed_commit_followed_by_one_that_ran_is_written_again_under_new_ids() {
    let server = Server::start();
    let mut a = server.store(T);
    a.apply(&[Op::Put(record("before"))]).unwrap();
    // Commit n is refused whole (out of memory: EXECABORT) ...
    server.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let n = a.submit(&[
        Op::Put(record("n1")),
        Op::Put(record("n2")),
        Op::Put(record("n3")),
        Op::Remove {
            tenant: 0,
            id: id("before"),
            bytes: 0,
        },
    ]);
    assert!(n.done.is_none(), "sent, not settled");
    // ... before memory is back (its transaction has reached the server by then) ...
    std::thread::sleep(Duration::from_millis(100));
    server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    // ... while n+1, sent before n's reply was read, runs: its entries have larger ids.
    let n1 = a.submit(&[
        Op::Put(record("m1")),
        Op::Put(record("m2")),
        Op::FirstAttempt {
            tenant: 0,
            id: id("n2"),
            at_ms: 1_764_000_000_500,
        },
        Op::Remove {
            tenant: 0,
            id: id("n3"),
            bytes: 0,
        },
    ]);
    let failed = a.settle(n).unwrap_err().to_string();
    assert!(failed.contains("EXECABORT"), "{failed}");
    a.settle(n1).unwrap();
    // The next commit writes n's entries again, under ids above n+1's.
    a.apply(&[]).unwrap();
    assert_eq!(a.commits.backlog(), 0);
    let mut ids = stream_ids(&server, &a);
    ids.sort();
    assert_eq!(ids, ["m1", "m2", "n1", "n2"], "each message exactly once");
    // n+1's group and n's still-held messages in one new group; "before"'s entry and the
    // refused group (whose n3 was marked done by n+1) are gone.
    assert_eq!(server.xlen(&a), 2);
    let Value::Int(fields) = server.cmd(&["HLEN", &a.keys.progress]) else {
        panic!("HLEN")
    };
    assert_eq!(fields, 0, "no progress field left for an old id");
    // n2's first attempt went with its new entry.
    let n2 = stream_records(&server, &a)
        .into_iter()
        .find(|r| &*r.id == "n2")
        .unwrap();
    assert_eq!(n2.first_ms, Some(1_764_000_000_500));
    // And everything leaves cleanly.
    a.apply(&[
        Op::Remove {
            tenant: 0,
            id: id("n1"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("n2"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m1"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m2"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(server.xlen(&a), 0);
    assert_eq!(Store::pending(&a, 0), (0, 0));
}

#[test]
fn a_commit_whose_connection_dies_in_flight_is_written_again_once() {
    let server = Server::start();
    let mut a = server.store(T);
    let n = a.submit(&[Op::Put(record("x1")), Op::Put(record("x2"))]);
    let n1 = a.submit(&[Op::Put(record("y1"))]);
    // Both ran (a moment for the server); the connection goes before their replies are
    // read: as far as the store knows, each may or may not have run.
    std::thread::sleep(Duration::from_millis(100));
    a.link.conn = None;
    assert!(a.settle(n).is_err());
    assert!(a.settle(n1).is_err());
    a.link.retry_at = None;
    a.apply(&[]).unwrap();
    let mut ids = stream_ids(&server, &a);
    ids.sort();
    assert_eq!(ids, ["x1", "x2", "y1"], "each message exactly once");
}

/// Every kind of command a commit writes (`resp.rs`), in one transaction each time, read
/// back from Redis: XADDs with a progress HSET, an HSET of changes with the heartbeat and an
/// `extra` command, an XDEL with an HDEL.
#[test]
fn each_command_a_commit_writes_is_what_redis_keeps() {
    let server = Server::start();
    let mut a = server.store(T);
    let progress = a.keys.progress.clone();
    let field = |seq: &str| server.cmd(&["HGET", &progress, seq]);
    let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    a.apply(&[
        Op::Put(record("x")),
        Op::Put(record("y")),
        Op::Put(record("y")),
    ])
    .unwrap();
    assert_eq!(stream_ids(&server, &a), ["x", "y"]);
    assert_eq!(server.xlen(&a), 1, "one commit group");
    assert_eq!(field("0-1:1"), text("-1,0,3,2"), "y, twice");
    server.cmd(&["DEL", &a.keys.alive]);
    a.heartbeat.missed();
    for op in [
        Op::FirstAttempt {
            tenant: 0,
            id: id("x"),
            at_ms: 1_764_000_000_500,
        },
        Op::Remove {
            tenant: 0,
            id: id("y"),
            bytes: 0,
        },
        Op::Put(record("z")),
    ] {
        a.note(&op);
    }
    let xlen = redis::cmd("XLEN").arg(&a.keys.stream).to_owned();
    assert_eq!(
        a.sync(&[xlen]).unwrap(),
        [Value::Int(2)],
        "two commit groups"
    );
    assert_eq!(stream_ids(&server, &a), ["x", "y", "z"]);
    assert_eq!(field("0-1:0"), text("1764000000500,0,3,1"));
    assert_eq!(field("0-1:1"), text("-1,0,3,1"), "y, once");
    assert_eq!(field("0-2:0"), Value::Nil);
    // One of two removed: marked done in its entry's bitmap, the entry kept.
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("y"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(stream_ids(&server, &a), ["x", "z"]);
    assert_eq!(server.xlen(&a), 2);
    assert_eq!(field("0-1:d"), Value::BulkString(vec![0b10]));
    let Value::Int(ttl) = server.cmd(&["PTTL", &a.keys.alive]) else {
        panic!("PTTL")
    };
    assert!(ttl > 0, "the heartbeat went with the commit");
    a.apply(&[
        Op::Remove {
            tenant: 0,
            id: id("x"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("z"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(server.xlen(&a), 0);
    assert_eq!(server.cmd(&["HLEN", &a.keys.progress]), Value::Int(0));
    assert_eq!(Store::pending(&a, 0), (0, 0));
}

#[test]
fn a_partly_removed_group_adopted_delivers_only_what_was_not_removed() {
    let server = Server::start();
    let mut a = server.store(T);
    let ops: Vec<Op> = (0..10).map(|i| Op::Put(record(&format!("m{i}")))).collect();
    a.apply(&ops).unwrap();
    assert_eq!(server.xlen(&a), 1, "one commit, one entry");
    // Over two commits: m0..m4 and m7 leave, m5 gets a first attempt.
    let mut ops: Vec<Op> = (0..3)
        .map(|i| Op::Remove {
            tenant: 0,
            id: id(&format!("m{i}")),
            bytes: 0,
        })
        .collect();
    ops.push(Op::FirstAttempt {
        tenant: 0,
        id: id("m5"),
        at_ms: 1_764_000_000_500,
    });
    a.apply(&ops).unwrap();
    a.apply(&[
        Op::Remove {
            tenant: 0,
            id: id("m3"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m4"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m7"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(server.xlen(&a), 1, "kept while some of it is held");
    assert_eq!(stream_ids(&server, &a), ["m5", "m6", "m8", "m9"]);
    server.silence(&a);
    let dead = a.keys.clone();
    std::mem::forget(a);

    let mut b = server.store(T);
    let adopted = b.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (4, 1));
    let (records, _) = b.resumable(0, None, 100).unwrap();
    let ids: Vec<&str> = records.iter().map(|r| &*r.id).collect();
    assert_eq!(ids, ["m5", "m6", "m8", "m9"]);
    assert_eq!(records[0].first_ms, Some(1_764_000_000_500));
    assert_eq!(stream_ids(&server, &b), ["m5", "m6", "m8", "m9"]);
    assert_eq!(server.cmd(&["EXISTS", &dead.stream]), Value::Int(0));
    assert_eq!(server.cmd(&["EXISTS", &dead.progress]), Value::Int(0));
    b.apply(&[
        Op::Remove {
            tenant: 0,
            id: id("m5"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m6"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m8"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("m9"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(server.xlen(&b), 0);
    assert_eq!(server.cmd(&["HLEN", &b.keys.progress]), Value::Int(0));
}

#[test]
fn entries_of_one_packed_record_each_are_still_taken_over() {
    // A relay of the version before commit groups died with these: one entry per message,
    // progress keyed by entry id.
    let server = Server::start();
    let dead = Keys::of("unit", "00112233445566aa");
    server.cmd(&["SADD", "unit:owners", &dead.owner]);
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{}/0", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    for (seq, name) in [(1, "one-1"), (2, "one-2")] {
        let packed = keys::Packed {
            id: name,
            accepted_ms: 1_764_000_000_000,
            first_ms: None,
            ingest: Some(b"{\"ingest\":1}"),
            hook: Some(b"{\"hook\":1}"),
            mask: 1,
            hooks_key: 42,
        }
        .to_vec();
        let _: Value = redis::cmd("XADD")
            .arg(&dead.stream)
            .arg(format!("0-{seq}"))
            .arg("r")
            .arg(packed)
            .query(&mut c)
            .unwrap();
    }
    server.cmd(&["HSET", &dead.progress, "0-2", "1764000000500,1,1,2"]);
    let mut b = server.store(T);
    let adopted = b.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (2, 1));
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    let (records, _) = b.resumable(0, None, 100).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].first_ms, None);
    assert!(records[0].ingest.is_some());
    assert_eq!(records[1].first_ms, Some(1_764_000_000_500));
    assert_eq!(records[1].ingest, None);
    assert_eq!(server.cmd(&["EXISTS", &dead.stream]), Value::Int(0));
    // Copied as one commit group; one-2's two copies kept.
    assert_eq!(server.xlen(&b), 1);
    b.apply(&[
        Op::Remove {
            tenant: 0,
            id: id("one-1"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 0,
            id: id("one-2"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(stream_ids(&server, &b), ["one-2"]);
    b.apply(&[Op::Remove {
        tenant: 0,
        id: id("one-2"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(server.xlen(&b), 0);
    assert_eq!(server.cmd(&["HLEN", &b.keys.progress]), Value::Int(0));
}

#[test]
fn a_commit_larger_than_a_group_is_split_and_all_of_it_adopted() {
    let server = Server::start();
    let mut a = server.store(T);
    let n = GROUP_MAX * 2 + 10;
    let ops: Vec<Op> = (0..n).map(|i| Op::Put(record(&format!("m{i}")))).collect();
    a.apply(&ops).unwrap();
    assert_eq!(server.xlen(&a), 3);
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("m0"),
        bytes: 0,
    }])
    .unwrap();
    server.silence(&a);
    std::mem::forget(a);
    let mut b = server.store(T);
    assert_eq!(b.adopt().unwrap().records, n as u64 - 1);
    let (records, _) = b.resumable(0, None, usize::MAX).unwrap();
    let unique: HashSet<&str> = records.iter().map(|r| &*r.id).collect();
    assert_eq!(unique.len(), n - 1);
    assert!(!unique.contains("m0"));
    assert_eq!(server.xlen(&b), 3);
}

#[test]
fn many_small_groups_are_all_adopted_in_one_pass() {
    // A quiet owner: one small entry per commit. The first read asks for few entries
    // (each could hold GROUP_MAX records); later rounds ask for more.
    let server = Server::start();
    let mut a = server.store(T);
    put_commits(&mut a, 60, 3);
    assert_eq!(server.xlen(&a), 60);
    server.silence(&a);
    std::mem::forget(a);
    let mut b = server.store(T);
    assert_eq!(b.adopt().unwrap().records, 180);
    let (records, _) = b.resumable(0, None, usize::MAX).unwrap();
    let unique: HashSet<&str> = records.iter().map(|r| &*r.id).collect();
    assert_eq!(unique.len(), 180);
}

#[test]
fn a_mostly_delivered_group_is_compacted_and_what_it_held_adopted() {
    let server = Server::start();
    let mut a = server.store(T);
    let ops: Vec<Op> = (0..100)
        .map(|i| Op::Put(record(&format!("m{i}"))))
        .collect();
    a.apply(&ops).unwrap();
    a.apply(&[
        Op::FirstAttempt {
            tenant: 0,
            id: id("m99"),
            at_ms: 1_764_000_000_500,
        },
        Op::IngestDone {
            tenant: 0,
            id: id("m98"),
        },
    ])
    .unwrap();
    // The record kept for a compaction drops what is done.
    let kept = |a: &RedisStore, i: usize| a.commits.groups.values().next().unwrap().recs[i].clone();
    assert!(kept(&a, 98).unwrap().ingest.is_none());
    assert!(kept(&a, 97).unwrap().ingest.is_some());
    let gone: Vec<Op> = (0..80)
        .map(|i| Op::Remove {
            tenant: 0,
            id: id(&format!("m{i}")),
            bytes: 0,
        })
        .collect();
    a.apply(&gone[..70]).unwrap();
    // Young, or more than a quarter held: left alone.
    a.compact(Duration::from_secs(3600));
    a.compact(Duration::ZERO);
    assert_eq!(a.commits.backlog(), 0, "30 of 100 held: not compacted");
    a.apply(&gone[70..]).unwrap();
    a.compact(Duration::from_secs(3600));
    assert_eq!(a.commits.backlog(), 0, "too young");
    // 20 of 100 held: written again in a new entry, the old one deleted in the same commit.
    a.compact(Duration::ZERO);
    a.apply(&[Op::Put(record("new"))]).unwrap();
    let Value::Array(entries) = server.cmd(&["XRANGE", &a.keys.stream, "-", "+"]) else {
        panic!("XRANGE")
    };
    assert_eq!(entries.len(), 1, "one entry: the 20 and the new one");
    let want: Vec<String> = (80..100)
        .map(|i| format!("m{i}"))
        .chain(["new".to_string()])
        .collect();
    assert_eq!(stream_ids(&server, &a), want);
    assert_eq!(
        server.cmd(&["HLEN", &a.keys.progress]),
        Value::Int(0),
        "the old entry's bitmap and progress went with it"
    );
    let m99 = stream_records(&server, &a)
        .pop()
        .filter(|r| &*r.id == "new");
    assert!(m99.is_some());
    assert_eq!(
        stream_records(&server, &a)[19].first_ms,
        Some(1_764_000_000_500),
        "m99's first attempt went with it"
    );
    assert!(
        stream_records(&server, &a)[18].ingest.is_none(),
        "m98's ingestion done"
    );
    // Removals after the compaction land in the new entry.
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("m80"),
        bytes: 0,
    }])
    .unwrap();
    server.silence(&a);
    std::mem::forget(a);
    let mut b = server.store(T);
    assert_eq!(b.adopt().unwrap().records, 20);
    let (records, _) = b.resumable(0, None, 100).unwrap();
    let ids: HashSet<&str> = records.iter().map(|r| &*r.id).collect();
    assert!(!ids.contains("m80") && ids.contains("m99") && ids.contains("new"));
}

#[test]
fn a_group_compacted_while_its_commit_fails_leaves_each_message_once() {
    let server = Server::start();
    let mut a = server.store(T);
    server.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let ops: Vec<Op> = (0..100)
        .map(|i| Op::Put(record(&format!("m{i}"))))
        .collect();
    let n = a.submit(&ops);
    std::thread::sleep(Duration::from_millis(100));
    server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    // n+1 (runs) marks 80 of n's group done; the group is compacted before n's reply is read.
    let gone: Vec<Op> = (0..80)
        .map(|i| Op::Remove {
            tenant: 0,
            id: id(&format!("m{i}")),
            bytes: 0,
        })
        .collect();
    let n1 = a.submit(&gone);
    a.compact(Duration::ZERO);
    assert!(a.settle(n).is_err());
    a.settle(n1).unwrap();
    a.apply(&[]).unwrap();
    assert_eq!(a.commits.backlog(), 0);
    let mut ids = stream_ids(&server, &a);
    ids.sort();
    let mut want: Vec<String> = (80..100).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(ids, want, "each held message exactly once");
    assert_eq!(server.xlen(&a), 1);
    assert_eq!(server.cmd(&["HLEN", &a.keys.progress]), Value::Int(0));
    let rest: Vec<Op> = (80..100)
        .map(|i| Op::Remove {
            tenant: 0,
            id: id(&format!("m{i}")),
            bytes: 0,
        })
        .collect();
    a.apply(&rest).unwrap();
    assert_eq!(server.xlen(&a), 0);
    assert_eq!(Store::pending(&a, 0), (0, 0));
}

fn of(tenant: TenantNo, id: &str) -> Record {
    Record {
        tenant,
        ..record(id)
    }
}

#[test]
fn two_tenants_with_the_same_ids_keep_their_records_apart_through_a_takeover() {
    let server = Server::start();
    let mut a = server.store(T);
    a.register(0, "web");
    a.register(1, "app");
    a.apply(&[
        Op::Put(of(0, "m")),
        Op::Put(of(1, "m")),
        Op::Put(of(1, "n")),
    ])
    .unwrap();
    a.apply(&[Op::IngestDone {
        tenant: 1,
        id: id("m"),
    }])
    .unwrap();
    assert_eq!(Store::pending(&a, 0).0, 1);
    assert_eq!(Store::pending(&a, 1).0, 2);
    a.apply(&[Op::Remove {
        tenant: 0,
        id: id("m"),
        bytes: 0,
    }])
    .unwrap();
    assert_eq!(Store::pending(&a, 0).0, 0);
    assert_eq!(Store::pending(&a, 1).0, 2, "its m is another message");
    server.silence(&a);
    drop(a);
    // The adopter knows "app" under another number, and "web" not at all yet.
    let mut b = server.store(T);
    b.register(7, "app");
    let adopted = b.adopt().unwrap();
    assert_eq!(adopted.records, 2);
    assert_eq!(adopted.tenants, vec![7]);
    let (web, _) = b.resumable(3, None, 100).unwrap();
    assert!(
        web.is_empty(),
        "tenant 3 is not registered: nothing of app's"
    );
    let (app, _) = b.resumable(7, None, 100).unwrap();
    let mut got: Vec<(String, bool, TenantNo, bool)> = app
        .iter()
        .map(|r| (r.id.to_string(), r.ingest.is_some(), r.tenant, r.adopted))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("m".to_string(), false, 7, true),
            ("n".to_string(), true, 7, true)
        ]
    );
    assert_eq!(Store::pending(&b, 7).0, 2);
}

#[test]
fn records_of_a_name_nobody_here_has_wait_parked_for_a_tenant_of_it() {
    let server = Server::start();
    let mut a = server.store(T);
    a.register(0, "gone");
    a.apply(&[Op::Put(of(0, "x")), Op::Put(of(0, "y"))])
        .unwrap();
    server.silence(&a);
    drop(a);
    let mut b = server.store(T);
    let adopted = b.adopt().unwrap();
    assert_eq!((adopted.records, adopted.tenants.len()), (2, 0));
    // Ours now, in Redis, not in memory: one entry of two records.
    assert_eq!(stream_ids(&server, &b), ["x", "y"]);
    assert!(b.live.is_empty() && b.commits.puts.is_empty());
    b.register(4, "gone");
    let (got, _) = b.resumable(4, None, 1).unwrap();
    assert_eq!(got.iter().map(|r| &*r.id).collect::<Vec<_>>(), ["x"]);
    let (got, _) = b.resumable(4, None, 10).unwrap();
    assert_eq!(got.iter().map(|r| &*r.id).collect::<Vec<_>>(), ["y"]);
    b.apply(&[
        Op::Remove {
            tenant: 4,
            id: id("x"),
            bytes: 0,
        },
        Op::Remove {
            tenant: 4,
            id: id("y"),
            bytes: 0,
        },
    ])
    .unwrap();
    assert_eq!(server.xlen(&b), 0);
}

#[test]
fn a_parked_backlog_stays_out_of_memory_and_comes_back_in_order_once() {
    let server = Server::start();
    let mut a = server.store(T);
    a.register(0, "src");
    let n = 5_000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(700) {
        let ops: Vec<Op> = chunk
            .iter()
            .map(|i| Op::Park(of(0, &format!("m-{i:05}"))))
            .collect();
        a.apply(&ops).unwrap();
    }
    assert!(
        a.live.is_empty() && a.commits.puts.is_empty(),
        "no payload in memory"
    );
    assert_eq!(Store::pending(&a, 0).0, n as u64);
    assert_eq!(stream_ids(&server, &a).len(), n);
    let mut got = Vec::new();
    loop {
        let (page, _) = a.resumable(0, None, 1024).unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.iter().all(|r| !r.adopted && r.ingest.is_some()));
        let removes: Vec<Op> = page
            .iter()
            .map(|r| Op::Remove {
                tenant: 0,
                id: r.id.clone(),
                bytes: 0,
            })
            .collect();
        got.extend(page.into_iter().map(|r| r.id.to_string()));
        a.apply(&removes).unwrap();
    }
    let want: Vec<String> = (0..n).map(|i| format!("m-{i:05}")).collect();
    assert_eq!(got, want, "in order, once");
    assert_eq!(server.xlen(&a), 0);
    assert_eq!(Store::pending(&a, 0), (0, 0));
}

#[test]
fn parked_records_whose_commit_failed_are_written_again_in_their_place() {
    let server = Server::start();
    let mut a = server.store(T);
    a.register(0, "src");
    a.apply(&[Op::Park(of(0, "p-1")), Op::Park(of(0, "p-2"))])
        .unwrap();
    // The next commit is refused (a key of the wrong type makes its HSET fail): its parked
    // records go back to memory, and the one after writes them again.
    server.cmd(&["DEL", &a.keys.progress]);
    server.cmd(&["SET", &a.keys.progress, "x"]);
    let dup = Record {
        tenant: 0,
        ..record("p-3")
    };
    let failed = a.apply(&[
        Op::Park(dup),
        Op::Put(of(0, "live")),
        Op::Put(of(0, "live")),
    ]);
    assert!(failed.is_err());
    server.cmd(&["DEL", &a.keys.progress]);
    a.apply(&[Op::Park(of(0, "p-4"))]).unwrap();
    let (page, _) = a.resumable(0, None, 100).unwrap();
    let ids: Vec<&str> = page.iter().map(|r| &*r.id).collect();
    assert_eq!(ids, ["p-1", "p-2", "p-3", "p-4"]);
    let mut all = stream_ids(&server, &a);
    all.sort();
    assert_eq!(all, ["live", "p-1", "p-2", "p-3", "p-4"], "each once");
}

#[test]
fn a_released_tenant_s_records_go_to_the_next_of_its_name_with_their_progress() {
    let server = Server::start();
    let mut a = server.store(T);
    a.register(0, "src");
    a.apply(&[Op::Put(of(0, "held")), Op::Park(of(0, "parked"))])
        .unwrap();
    a.apply(&[Op::FirstAttempt {
        tenant: 0,
        id: id("held"),
        at_ms: 1_764_000_000_900,
    }])
    .unwrap();
    // Progress noted but not yet committed when the tenant closes: written as its entry's
    // field, so the next tenant of its name reads it back.
    a.note(&Op::HookMask {
        tenant: 0,
        id: id("held"),
        mask: 0b01,
    });
    Store::release(&mut a, 0).unwrap();
    assert_eq!(Store::pending(&a, 0).0, 0, "not registered any more");
    a.apply(&[]).unwrap();
    assert!(
        a.commits.loose.is_empty() && a.commits.backlog() == 0,
        "written"
    );
    a.register(1, "src");
    assert_eq!(Store::pending(&a, 1).0, 2);
    let (page, _) = a.resumable(1, None, 100).unwrap();
    let got: Vec<(&str, bool, Option<i64>, u8)> = page
        .iter()
        .map(|r| (&*r.id, r.adopted, r.first_ms, r.hook_mask))
        .collect();
    assert_eq!(
        got,
        [
            ("held", true, Some(1_764_000_000_900), 0b01),
            ("parked", true, None, 0b11)
        ]
    );
}

#[test]
fn a_legacy_per_source_prefix_is_taken_over_by_its_tenant_and_then_left() {
    // A relay of the version before tenants died: source "checkout" had prefix unit:checkout,
    // entries of layout 2 (no names).
    let server = Server::start();
    let dead = Keys::of("unit:checkout", "00000000000000aa");
    server.cmd(&["SADD", "unit:checkout:owners", &dead.owner]);
    let one = keys::Packed {
        id: "old-1",
        accepted_ms: 1_764_000_000_000,
        first_ms: None,
        ingest: Some(b"{}"),
        hook: None,
        mask: 0,
        hooks_key: 42,
    };
    let mut v = vec![2u8];
    v.extend_from_slice(&2u32.to_le_bytes());
    for p in [one, keys::Packed { id: "old-2", ..one }] {
        v.extend_from_slice(&(p.len() as u32).to_le_bytes());
        v.extend_from_slice(&p.to_vec());
    }
    let mut c = server.redis.conn();
    let _: Value = redis::cmd("XADD")
        .arg(&dead.stream)
        .arg("0-1")
        .arg("r")
        .arg(v)
        .query(&mut c)
        .unwrap();
    let mut b = server.store(T);
    b.register(0, "web");
    b.register(1, "checkout");
    assert_eq!(b.takeover.legacy.len(), 2, "both names scanned at first");
    let adopted = b.adopt().unwrap();
    assert_eq!((adopted.records, adopted.tenants.clone()), (2, vec![1]));
    assert_eq!(
        b.takeover.legacy.len(),
        1,
        "web's legacy registry is empty: left"
    );
    let (page, _) = b.resumable(1, None, 100).unwrap();
    assert_eq!(
        page.iter().map(|r| &*r.id).collect::<Vec<_>>(),
        ["old-1", "old-2"]
    );
    assert_eq!(server.cmd(&["EXISTS", &dead.stream]), Value::Int(0));
    b.adopt().unwrap();
    assert!(
        b.takeover.legacy.is_empty(),
        "its registry emptied: no longer scanned"
    );
}

#[test]
fn redis_ack_replicas_counts_a_commit_only_once_a_replica_has_it() {
    let server = Server::start();
    // No replica: the commit runs (its records are in Redis) but is not acknowledged.
    let mut lone = server.store_acking(T, RedisAck::Replicas(1)).unwrap();
    let refused = lone.apply(&[Op::Put(record("alone"))]).unwrap_err();
    assert!(refused.to_string().contains("0 of 1 replica"), "{refused}");
    assert_eq!(
        stream_ids(&server, &lone),
        ["alone"],
        "written all the same"
    );
    // Progress alone waits for nothing.
    lone.apply(&[Op::FirstAttempt {
        tenant: 0,
        id: id("alone"),
        at_ms: 1,
    }])
    .unwrap();
    // Auto without a replica: memory (Redis 7.0 has no WAITAOF), said where it opens.
    assert!(
        server
            .store(T)
            .location()
            .contains("redis_ack = \"memory\"")
            || server.store(T).location().contains("fsync")
    );
    // With a replica in sync: acknowledged, and the replica has it; auto picks replicas:1.
    let replica = redis_server::RedisServer::replica_of(server.port);
    replica.wait_in_sync();
    let mut a = server.store_acking(T, RedisAck::Replicas(1)).unwrap();
    a.apply(&[Op::Put(record("replicated"))]).unwrap();
    let len: i64 = redis::cmd("XLEN")
        .arg(&a.keys.stream)
        .query(&mut replica.conn())
        .unwrap();
    assert_eq!(len, 1, "on the replica when acknowledged");
    assert!(server.store(T).location().contains("replicas:1"));
    // Two asked, one there: not acknowledged.
    let mut two = server.store_acking(T, RedisAck::Replicas(2)).unwrap();
    assert!(two.apply(&[Op::Put(record("two"))]).is_err());
}

#[test]
fn redis_ack_fsync_needs_waitaof_and_says_so_on_an_older_redis() {
    let server = Server::start();
    let info = server.cmd(&["INFO", "server"]);
    let text = String::from_utf8_lossy(keys::bytes(&info).unwrap()).into_owned();
    let (_, version) = connect_version(&text);
    match server.store_acking(T, RedisAck::Fsync) {
        Ok(mut s) => {
            assert!(version >= (7, 2), "{version:?}");
            s.apply(&[Op::Put(record("on-disk"))]).unwrap();
        }
        Err(e) => {
            assert!(version < (7, 2), "{version:?}: {e}");
            let e = e.to_string();
            assert!(e.contains("WAITAOF") && e.contains("7.2"), "{e}");
        }
    }
}

fn connect_version(info: &str) -> (String, (u32, u32)) {
    let v = (info.lines())
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap()
        .trim()
        .to_string();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap());
    let pair = (parts.next().unwrap(), parts.next().unwrap());
    (v, pair)
}

#[test]
fn an_entry_with_parked_records_is_not_compacted_until_they_are_read_back() {
    let server = Server::start();
    let mut a = server.store(T);
    a.register(0, "src");
    // One group: 64 held records (all but one delivered) and one parked.
    let mut ops: Vec<Op> = (0..64).map(|i| Op::Put(of(0, &format!("h-{i}")))).collect();
    ops.push(Op::Park(of(0, "parked")));
    a.apply(&ops).unwrap();
    let removes: Vec<Op> = (1..64)
        .map(|i| Op::Remove {
            tenant: 0,
            id: id(&format!("h-{i}")),
            bytes: 0,
        })
        .collect();
    a.apply(&removes).unwrap();
    a.compact(Duration::ZERO);
    assert_eq!(
        a.commits.backlog(),
        0,
        "left alone while it holds a parked record"
    );
    let (page, _) = a.resumable(0, None, 10).unwrap();
    assert_eq!(page.iter().map(|r| &*r.id).collect::<Vec<_>>(), ["parked"]);
    a.compact(Duration::ZERO);
    a.apply(&[]).unwrap();
    let mut left = stream_ids(&server, &a);
    left.sort();
    assert_eq!(
        left,
        ["h-0", "parked"],
        "compacted once read back, each once"
    );
    assert_eq!(server.xlen(&a), 1);
}

#[test]
fn a_dead_letter_search_pages_across_its_scan_bound() {
    use crate::durable::dead::{search_check, DeadLetters, DeadLimits};
    let server = Server::start();
    let url = format!("redis://127.0.0.1:{}/0?prefix=unit", server.port);
    let Spool::Redis(url) = Spool::from(url) else {
        unreachable!()
    };
    let spool = RedisSpool::parse(&url).unwrap();
    let mut dead =
        dead::RedisDead::open(&spool, Duration::from_secs(5), Duration::from_secs(30)).unwrap();
    let limits = DeadLimits {
        retention: Duration::from_secs(3600),
        max_bytes: u64::MAX,
    };
    // Redis may still be loading its AOF: try for a moment.
    let end = Instant::now() + Duration::from_secs(5);
    while let Err(e) = dead.configure(0, "t", limits) {
        assert!(Instant::now() < end, "{e}");
        std::thread::sleep(Duration::from_millis(50));
    }
    search_check::a_search_pages_across_the_scan_bound(&mut dead, 0);
}
