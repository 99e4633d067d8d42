//! The SQLite spool's tests: real files, real processes.

use super::*;
use crate::wire::Body;
use rusqlite::Connection;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh directory under the system temp dir, removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "outbound-spool-{test}-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn id(s: &str) -> Arc<str> {
    Arc::from(s)
}

fn name(i: usize) -> String {
    format!("m-{i:05}")
}

/// Record `i`: accepted at 1000 + i ms, both payloads, webhooks 0 and 1 to try.
fn rec(i: usize) -> Record {
    Record {
        tenant: 0,
        adopted: false,
        id: id(&name(i)),
        accepted_ms: 1_000 + i as i64,
        first_ms: None,
        ingest: Some(format!("{{\"ingest\":{i}}}").into_bytes().into()),
        hook: Some(format!("{{\"hook\":{i}}}").into_bytes().into()),
        hook_mask: 0b11,
        hooks_key: u64::MAX - 7, // above i64::MAX: stored as its bit pattern
    }
}

fn puts(range: std::ops::Range<usize>) -> Vec<Op> {
    range.map(|i| Op::Put(rec(i))).collect()
}

/// File names in `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// File names in `dir` other than the store's own (its `.db`, `-wal` and `.lock`).
fn others(dir: &Path, store: &SqliteStore) -> Vec<String> {
    let own = store
        .path()
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    files(dir)
        .into_iter()
        .filter(|n| !n.starts_with(&own))
        .collect()
}

/// Every resumable record, read in small pages.
fn all_resumable(store: &mut SqliteStore) -> Vec<Record> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (page, next) = store.resumable_of(0, cursor.as_ref(), 7).unwrap();
        if page.is_empty() {
            return out;
        }
        // Taken over from another file: not counted in any queue of this process yet.
        assert!(page.iter().all(|r| r.adopted));
        out.extend(page.into_iter().map(|r| Record {
            adopted: false,
            ..r
        }));
        cursor = next;
    }
}

/// Record `i` as taken over from another file.
fn adopted(i: usize) -> Record {
    Record {
        adopted: true,
        ..rec(i)
    }
}

/// A spool file left by a client that closed with `records` pending, made in a directory
/// of its own; returns that directory (keep it alive) and the file.
fn closed_spool(test: &str, records: std::ops::Range<usize>) -> (TempDir, PathBuf) {
    let dir = TempDir::new(test);
    let mut store = SqliteStore::open(&dir).unwrap();
    store.apply(&puts(records)).unwrap();
    let path = store.path().to_owned();
    store.close().unwrap();
    (dir, path)
}

/// Moves a closed spool file into `dir` under a dead owner's name (its lock file stays
/// behind, as after a crash that lost it).
fn plant(db: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    fs::rename(db, &to).unwrap();
    to
}

#[test]
fn ops_round_trip_and_a_reopened_directory_resumes_exactly_the_pending_records() {
    let dir = TempDir::new("roundtrip");
    let mut first = SqliteStore::open(&dir).unwrap();
    first.apply(&puts(1..5)).unwrap();
    first
        .apply(&[
            Op::FirstAttempt {
                tenant: 0,
                id: id("m-00001"),
                at_ms: 5_000,
            },
            Op::FirstAttempt {
                tenant: 0,
                id: id("m-00001"),
                at_ms: 6_000, // a later attempt keeps the first time
            },
            Op::IngestDone {
                tenant: 0,
                id: id("m-00002"),
            },
            Op::HookMask {
                tenant: 0,
                id: id("m-00003"),
                mask: 0b01,
            },
            Op::Remove {
                tenant: 0,
                id: id("m-00004"),
                bytes: 0,
            },
            Op::Remove {
                tenant: 0,
                id: id("unknown"),
                bytes: 0,
            },
            Op::IngestDone {
                tenant: 0,
                id: id("unknown"),
            },
        ])
        .unwrap();
    assert_eq!(first.pending().0, 3);
    let (own, _) = first.resumable_of(0, None, 100).unwrap();
    assert!(own.is_empty(), "a store's own puts are not resumable");
    first.close().unwrap();

    let mut second = SqliteStore::open(&dir).unwrap();
    assert!(second.resumable_of(0, None, 100).unwrap().0.is_empty());
    let adopted = second.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (3, 1));
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    let mut expected = vec![rec(1), rec(2), rec(3)];
    expected[0].first_ms = Some(5_000);
    expected[1].ingest = None;
    expected[2].hook_mask = 0b01;
    assert_eq!(all_resumable(&mut second), expected);
    assert!(others(&dir, &second).is_empty(), "{:?}", files(&dir));

    second
        .apply(
            &(1..4)
                .map(|i| Op::Remove {
                    tenant: 0,
                    id: id(&name(i)),
                    bytes: 0,
                })
                .collect::<Vec<_>>(),
        )
        .unwrap();
    assert_eq!(second.pending(), (0, 0));
    second.close().unwrap();
    assert!(files(&dir).is_empty(), "{:?}", files(&dir));
}

#[test]
fn our_files_use_large_pages() {
    let dir = TempDir::new("page-size");
    let mut store = SqliteStore::open(&dir).unwrap();
    store.apply(&puts(0..3)).unwrap();
    let page: i64 = store
        .file
        .conn()
        .unwrap()
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(page, PAGE_SIZE);
    store.close().unwrap();
}

/// A commit is settled by the syncer's fsync of the WAL, and that WAL stays the file SQLite
/// writes through checkpoints that truncate it (were it replaced, the syncer would fsync a
/// file nobody writes).
#[test]
fn commits_wait_for_the_fsync_of_the_wal_sqlite_keeps_writing() {
    use std::os::unix::fs::MetadataExt;
    let dir = TempDir::new("syncer");
    let mut store = SqliteStore::open(&dir).unwrap();
    let wal = with_suffix(store.path(), "-wal");
    let ino = fs::metadata(&wal).unwrap().ino();
    let mut next = 0;
    for round in 0..3 {
        for i in 0..20 {
            // Both ways of fsyncing, whatever this disk's speed.
            let slow = i % 2 == 0;
            store.file.syncer.as_ref().unwrap().pretend(slow);
            let ticket = Store::submit(&mut store, &puts(next..next + 50));
            assert_eq!(
                ticket.is_known(),
                !slow,
                "slow: settled by the thread; fast: here"
            );
            Store::settle(&mut store, ticket).unwrap();
            next += 50;
        }
        let mode = if round == 1 { "TRUNCATE" } else { "RESTART" };
        let (busy, _, _): (i64, i64, i64) = store
            .file
            .conn()
            .unwrap()
            .query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(busy, 0);
    }
    Store::apply(&mut store, &puts(next..next + 1)).unwrap();
    let meta = fs::metadata(&wal).unwrap();
    assert_eq!(meta.ino(), ino, "SQLite replaced its WAL");
    assert!(meta.len() > 0, "the last commit went to another file");
    assert_eq!(store.pending().0, next as u64 + 1);
    store.close().unwrap();
}

/// This test binary again, running only the ignored test `test` (a child process's part of
/// a test), with `var` set to `value`.
fn child_test(test: &str, var: &str, value: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        &format!("durable::sqlite::tests::{test}"),
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(var, value);
    cmd
}

/// A failed fsync of the WAL poisons the store: no later commit is durable (SQLite's
/// recovery would stop at the frames that fsync lost), so every later one fails, on either
/// path and even when its own fsync succeeds, nothing more is written, and closing leaves
/// the file, without a checkpoint, to the next process, which adopts what survived. The
/// poisoned store lives in a child process (`poisoned_child`): its file stays in use until
/// that process ends.
#[test]
fn a_failed_fsync_poisons_the_store_and_its_file_is_left_to_adoption() {
    let dir = TempDir::new("poisoned");
    let out = child_test("poisoned_child", POISONED_ENV, &*dir.0)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("poisoned: ok"),
        "the child: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its file is adopted whole: everything committed before the failure (here the page
    // cache still holds the rest, so the two puts of the failed fsync too), none after.
    let mut next = SqliteStore::open(&dir).unwrap();
    let adopted = next.adopt().unwrap();
    assert_eq!(adopted.files, 1, "{:?}", adopted.warnings);
    let ids: Vec<String> = all_resumable(&mut next)
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids, (0..5).map(name).collect::<Vec<_>>());
    next.close().unwrap();
}

/// Env var that turns `poisoned_child` into the process of the test above: `DIR`.
const POISONED_ENV: &str = "OUTBOUND_POISONED_CHILD";

#[test]
#[ignore = "the process of a_failed_fsync_poisons_the_store_and_its_file_is_left_to_adoption"]
fn poisoned_child() {
    let Ok(dir) = std::env::var(POISONED_ENV) else {
        return;
    };
    let mut store = SqliteStore::open(Path::new(&dir)).unwrap();
    store.file.syncer.as_ref().unwrap().pretend(false);
    Store::apply(&mut store, &puts(0..3)).unwrap();
    let wal = store
        .file
        .syncer
        .as_mut()
        .unwrap()
        .swap_here(syncer::unsyncable());
    // In place, whatever the fsyncs above measured (a loaded machine's disk is slow).
    store.file.syncer.as_ref().unwrap().pretend(false);
    let failed = Store::apply(&mut store, &puts(3..5))
        .unwrap_err()
        .to_string();
    assert!(failed.contains("fsync of the WAL failed"), "{failed}");
    // The disk recovers: fsyncs succeed again, on both paths, yet nothing is durable now.
    store.file.syncer.as_mut().unwrap().swap_here(wal);
    let written = store.pending();
    for slow in [false, true] {
        store.file.syncer.as_ref().unwrap().pretend(slow);
        let refused = Store::apply(&mut store, &puts(5..7))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("not written since an fsync of the WAL failed")
                && refused.contains("restart the process"),
            "{refused}"
        );
        assert_eq!(store.pending(), written, "nothing more was written");
    }
    let adopt = store.adopt().unwrap_err().to_string();
    assert!(adopt.contains("not written since"), "{adopt}");
    let db = store.path().to_path_buf();
    assert!(
        store.close().is_err(),
        "closing says the file was not settled"
    );
    assert!(db.exists(), "the file is left for adoption");
    println!("poisoned: ok");
}

#[test]
fn a_file_with_small_pages_from_an_earlier_version_is_adopted() {
    let dir = TempDir::new("small-pages");
    let (_src, db) = closed_spool("small-pages-src", 1..40);
    // Earlier versions used SQLite's default page size.
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096; VACUUM;")
        .unwrap();
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(page, 4096);
    drop(conn);
    plant(&db, &dir, "outbound-7-0000000000000007.db");
    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    assert_eq!(adopted.records, 39);
    assert_eq!(
        all_resumable(&mut store),
        (1..40).map(rec).collect::<Vec<_>>()
    );
}

#[test]
fn put_then_remove_in_one_batch_leaves_nothing() {
    let dir = TempDir::new("put-remove");
    let mut store = SqliteStore::open(&dir).unwrap();
    store
        .apply(&[
            Op::Put(rec(1)),
            Op::Remove {
                tenant: 0,
                id: id("m-00001"),
                bytes: 0,
            },
        ])
        .unwrap();
    assert_eq!(store.pending(), (0, 0));
    store.close().unwrap();
    assert!(files(&dir).is_empty(), "no row left: {:?}", files(&dir));
}

#[test]
fn removals_in_runs_and_alone_delete_exactly_their_rows() {
    let dir = TempDir::new("runs");
    let mut store = SqliteStore::open(&dir).unwrap();
    store.apply(&puts(0..20)).unwrap();
    // Runs (1-3, 8-10), rows alone (5, 14, 19: the last), out of order; then an id removed
    // and accepted again in the same group, which gets a row of its own.
    let mut ops: Vec<Op> = [10, 2, 5, 19, 9, 1, 14, 3, 8, 6]
        .iter()
        .map(|&i| Op::Remove {
            tenant: 0,
            id: id(&name(i)),
            bytes: 0,
        })
        .collect();
    ops.push(Op::Put(rec(6)));
    store.apply(&ops).unwrap();
    assert_eq!(store.pending().0, 11);
    store.close().unwrap();
    let mut next = SqliteStore::open(&dir).unwrap();
    assert_eq!(next.adopt().unwrap().records, 11);
    let left: Vec<String> = all_resumable(&mut next)
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    let want: Vec<String> = [0, 4, 6, 7, 11, 12, 13, 15, 16, 17, 18]
        .iter()
        .map(|&i| name(i))
        .collect();
    assert_eq!(left, want);
}

#[test]
fn a_pending_id_put_twice_stays_until_removed_twice() {
    let dir = TempDir::new("copies");
    let mut store = SqliteStore::open(&dir).unwrap();
    let mut other = rec(1);
    other.ingest = Some(Body::copy_from_slice(b"second payload"));
    store.apply(&[Op::Put(rec(1)), Op::Put(other)]).unwrap();
    assert_eq!(store.pending(), (1, rec(1).payload_bytes()));
    store
        .apply(&[Op::Remove {
            tenant: 0,
            id: id("m-00001"),
            bytes: 0,
        }])
        .unwrap();
    assert_eq!(store.pending().0, 1, "one copy still pending");
    store
        .apply(&[Op::Remove {
            tenant: 0,
            id: id("m-00001"),
            bytes: 0,
        }])
        .unwrap();
    assert_eq!(store.pending(), (0, 0));
    store.close().unwrap();
    assert!(files(&dir).is_empty());
}

#[test]
fn payload_bytes_follow_puts_marks_and_removes() {
    let dir = TempDir::new("bytes");
    let mut store = SqliteStore::open(&dir).unwrap();
    let (a, b) = (rec(1), rec(2));
    let (ingest_a, hook_b) = (a.ingest.clone().unwrap(), b.hook.clone().unwrap());
    store
        .apply(&[Op::Put(a.clone()), Op::Put(b.clone())])
        .unwrap();
    let full = a.payload_bytes() + b.payload_bytes();
    assert_eq!(store.pending(), (2, full));
    store
        .apply(&[Op::IngestDone {
            tenant: 0,
            id: a.id.clone(),
        }])
        .unwrap();
    let after_ingest = full - ingest_a.len() as u64;
    assert_eq!(store.pending(), (2, after_ingest));
    store
        .apply(&[Op::IngestDone {
            tenant: 0,
            id: a.id.clone(),
        }]) // twice: counted once
        .unwrap();
    assert_eq!(store.pending(), (2, after_ingest));
    store
        .apply(&[Op::HookMask {
            tenant: 0,
            id: b.id.clone(),
            mask: 0,
        }])
        .unwrap();
    let after_hook = after_ingest - hook_b.len() as u64;
    assert_eq!(store.pending(), (2, after_hook));
    store
        .apply(&[Op::Remove {
            tenant: 0,
            id: a.id.clone(),
            bytes: 0,
        }])
        .unwrap();
    assert_eq!(
        store.pending(),
        (
            1,
            after_hook - (full - b.payload_bytes() - ingest_a.len() as u64)
        )
    );
    store.close().unwrap();

    // An adopter counts what it took over the same way.
    let mut adopter = SqliteStore::open(&dir).unwrap();
    adopter.adopt().unwrap();
    assert_eq!(
        adopter.pending(),
        (1, b.payload_bytes() - hook_b.len() as u64)
    );
    let resumed = all_resumable(&mut adopter);
    assert_eq!((resumed[0].hook.as_ref(), resumed[0].hook_mask), (None, 0));
}

#[test]
fn a_failed_apply_changes_nothing_and_the_same_ops_apply_later() {
    let dir = TempDir::new("rollback");
    let mut store = SqliteStore::open(&dir).unwrap();
    store.apply(&puts(1..4)).unwrap();
    let before = store.pending();
    // A trigger makes the last op of the batch fail, after the others ran.
    let conn = store.file.conn().unwrap();
    conn.execute_batch(
        "CREATE TEMP TRIGGER boom BEFORE DELETE ON main.messages
         WHEN old.id = 'm-00003' BEGIN SELECT RAISE(ABORT, 'boom'); END;",
    )
    .unwrap();
    let batch = [
        Op::Remove {
            tenant: 0,
            id: id("m-00001"),
            bytes: 0,
        },
        Op::Put(rec(9)),
        Op::Put(rec(2)), // a second copy
        Op::IngestDone {
            tenant: 0,
            id: id("m-00002"),
        },
        Op::Remove {
            tenant: 0,
            id: id("m-00003"),
            bytes: 0,
        },
    ];
    let err = store.apply(&batch).unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
    assert_eq!(store.pending(), before);
    store
        .file
        .conn()
        .unwrap()
        .execute_batch("DROP TRIGGER boom;")
        .unwrap();
    store.apply(&batch).unwrap();
    // Left: m-00002 (two copies, ingestion done) and m-00009.
    let expected =
        rec(2).payload_bytes() - rec(2).ingest.unwrap().len() as u64 + rec(9).payload_bytes();
    assert_eq!(store.pending(), (2, expected));
    store
        .apply(&[
            Op::Remove {
                tenant: 0,
                id: id("m-00002"),
                bytes: 0,
            },
            Op::Remove {
                tenant: 0,
                id: id("m-00002"),
                bytes: 0,
            },
            Op::Remove {
                tenant: 0,
                id: id("m-00009"),
                bytes: 0,
            },
        ])
        .unwrap();
    assert_eq!(store.pending(), (0, 0));
    store.close().unwrap();
    assert!(files(&dir).is_empty(), "{:?}", files(&dir));
}

#[test]
fn an_id_in_two_dead_files_is_adopted_once_and_one_we_hold_is_not_resumed() {
    let dir = TempDir::new("dup-ids");
    let (_a, file_a) = closed_spool("dup-ids-a", 1..4);
    let (_b, file_b) = closed_spool("dup-ids-b", 2..5);
    plant(&file_a, &dir, "outbound-1-a.db");
    plant(&file_b, &dir, "outbound-1-b.db");
    let mut store = SqliteStore::open(&dir).unwrap();
    // Our own pending copy of m-00004, put before the adoption.
    store.apply(&[Op::Put(rec(4))]).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!(adopted.records, 4, "m-00001..4 once each");
    assert_eq!(store.pending().0, 5);
    let resumed: Vec<String> = all_resumable(&mut store)
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(resumed, ["m-00001", "m-00002", "m-00003"]);
    assert_eq!(
        store.pending(),
        (4, (1..5).map(|i| rec(i).payload_bytes()).sum())
    );
    store
        .apply(
            &(1..5)
                .map(|i| Op::Remove {
                    tenant: 0,
                    id: id(&name(i)),
                    bytes: 0,
                })
                .collect::<Vec<_>>(),
        )
        .unwrap();
    assert_eq!(store.pending(), (0, 0));
    store.close().unwrap();
    assert!(files(&dir).is_empty(), "{:?}", files(&dir));
}

#[test]
fn a_second_store_on_the_same_directory_in_one_process_is_refused_until_the_first_closes() {
    let dir = TempDir::new("twice");
    let first = SqliteStore::open(&dir).unwrap();
    let canonical = fs::canonicalize(&*dir).unwrap().display().to_string();
    // Another spelling of the same directory is the same spool.
    let err = SqliteStore::open(&dir.join(".")).unwrap_err();
    match &err {
        Error::Spool { path, reason } => {
            assert_eq!(*path, canonical);
            assert!(reason.contains("already open"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&canonical), "{err}");
    first.close().unwrap();
    SqliteStore::open(&dir).unwrap().close().unwrap();
}

#[test]
fn a_directory_that_cannot_be_created_is_an_error_naming_it() {
    let dir = TempDir::new("not-a-dir");
    let file = dir.join("file");
    fs::write(&file, b"x").unwrap();
    let err = SqliteStore::open(&file.join("spool")).unwrap_err();
    assert!(
        err.to_string()
            .contains(&file.join("spool").display().to_string()),
        "{err}"
    );
}

/// Env var that turns `spool_child` into a process holding a spool: `DIR|COUNT`.
const CHILD_ENV: &str = "OUTBOUND_SPOOL_CHILD";

/// A child process that opened `dir` and applied `count` puts; killed on drop.
struct ChildSpool {
    child: Child,
    db: PathBuf,
}

impl ChildSpool {
    fn start(dir: &Path, count: usize) -> ChildSpool {
        let mut child = child_test(
            "spool_child",
            CHILD_ENV,
            format!("{}|{count}", dir.display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        for line in stdout.lines() {
            // libtest writes the test's name on the same line first.
            if let Some((_, db)) = line.unwrap().split_once("ready ") {
                return ChildSpool {
                    child,
                    db: PathBuf::from(db),
                };
            }
        }
        let _ = child.kill();
        panic!("the child ended before it was ready: {:?}", child.wait());
    }

    fn kill(&mut self) {
        self.child.kill().unwrap(); // SIGKILL: no destructor, no close
        self.child.wait().unwrap();
    }
}

impl Drop for ChildSpool {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "the process of killed_child and live_child tests"]
fn spool_child() {
    let Ok(arg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (dir, count) = arg.split_once('|').unwrap();
    let mut store = SqliteStore::open(Path::new(dir)).unwrap();
    store.apply(&puts(0..count.parse().unwrap())).unwrap();
    println!("ready {}", store.path().display());
    std::thread::sleep(Duration::from_secs(120)); // killed long before
}

#[test]
fn a_killed_processs_records_are_all_adopted_once_and_its_files_removed() {
    let dir = TempDir::new("killed");
    let mut child = ChildSpool::start(&dir, 1_000);
    child.kill();
    assert!(child.db.exists());

    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (1_000, 1));
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    let ids: Vec<String> = all_resumable(&mut store)
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids, (0..1_000).map(name).collect::<Vec<_>>());
    assert!(others(&dir, &store).is_empty(), "{:?}", files(&dir));
    assert_eq!(
        store.pending(),
        (1_000, (0..1_000).map(|i| rec(i).payload_bytes()).sum())
    );

    let again = store.adopt().unwrap();
    assert_eq!((again.records, again.files), (0, 0));
    assert!(again.warnings.is_empty());
}

#[test]
fn a_live_processs_file_is_not_adopted() {
    let dir = TempDir::new("live");
    let mut child = ChildSpool::start(&dir, 10);
    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (0, 0));
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    assert!(child.db.exists());

    child.kill();
    assert_eq!(store.adopt().unwrap().records, 10, "adopted once it died");
}

/// Env var that turns `fork_child` into a process that forks: the spool directory.
const FORK_ENV: &str = "OUTBOUND_SPOOL_FORK_CHILD";

#[test]
#[ignore = "the process of forked_child_takes_its_own_file_and_leaves_the_parents"]
fn fork_child() {
    let Ok(dir) = std::env::var(FORK_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let mut store = SqliteStore::open(dir).unwrap();
    store.apply(&puts(1..6)).unwrap();
    // SAFETY: this process runs one test on one thread; the child exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.forget_after_fork();
            // The parent's registry entry was inherited: it does not count here.
            let mut mine = SqliteStore::open(dir).unwrap();
            let adopted = mine.adopt().unwrap();
            // The parent lives and still holds its lock after we closed our copy (were
            // the lock gone, SQLite's own lock would refuse us: a warning).
            assert_eq!((adopted.records, adopted.files), (0, 0));
            assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
            mine.apply(&[Op::Put(rec(100))]).unwrap();
            mine.close().unwrap();
        }))
        .is_ok();
        // SAFETY: ends the forked child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // The child's leaked connection did not disturb our file (closing it would have
    // checkpointed and deleted our WAL under us).
    assert!(with_suffix(store.path(), "-wal").exists());
    store
        .apply(&[Op::Remove {
            tenant: 0,
            id: id("m-00001"),
            bytes: 0,
        }])
        .unwrap();
    store.close().unwrap();
}

#[test]
fn forked_child_takes_its_own_file_and_leaves_the_parents() {
    let dir = TempDir::new("fork");
    let run = child_test("fork_child", FORK_ENV, &*dir.0)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!(
        (adopted.records, adopted.files),
        (5, 2),
        "parent's and child's"
    );
    let mut ids: Vec<String> = all_resumable(&mut store)
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    ids.sort();
    assert_eq!(ids, ["m-00002", "m-00003", "m-00004", "m-00005", "m-00100"]);
}

#[test]
fn damaged_files_are_salvaged_and_moved_aside_and_a_good_one_beside_them_is_adopted() {
    let dir = TempDir::new("damaged");
    // A good file left by a closed client.
    let (_good_dir, good) = closed_spool("damaged-good", 1..4);
    plant(&good, &dir, "outbound-3-0000000000000003.db");
    // A full spool cut in half.
    let big_dir = TempDir::new("damaged-big");
    let mut big = SqliteStore::open(&big_dir).unwrap();
    let records: Vec<Op> = (0..200)
        .map(|i| {
            let mut r = rec(i);
            r.id = id(&format!("big-{i:03}"));
            r.ingest = Some(vec![b'i'; 2_000].into());
            r.hook = Some(vec![b'h'; 2_000].into());
            Op::Put(r)
        })
        .collect();
    big.apply(&records).unwrap();
    let big_path = big.path().to_owned();
    big.close().unwrap();
    let bytes = fs::read(&big_path).unwrap();
    let truncated = dir.join("outbound-7-00000000000000aa.db");
    fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    // Not a database at all.
    let garbage = dir.join("outbound-1-xxxx.db");
    fs::write(&garbage, b"not a database, just text\n".repeat(200)).unwrap();

    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    let mut warned: Vec<&Path> = adopted.warnings.iter().map(|(p, _)| p.as_path()).collect();
    warned.sort();
    assert_eq!(warned, [garbage.as_path(), truncated.as_path()]);
    for (path, why) in &adopted.warnings {
        assert!(
            why.contains("damaged") && why.contains("moved aside"),
            "{path:?}: {why}"
        );
        println!("warning for {}: {why}", path.display());
    }
    let resumed = all_resumable(&mut store);
    let ids: Vec<&str> = resumed.iter().map(|r| &*r.id).collect();
    for good in ["m-00001", "m-00002", "m-00003"] {
        assert!(ids.contains(&good), "{good} missing from {ids:?}");
    }
    let salvaged = resumed.iter().filter(|r| r.id.starts_with("big-")).count();
    println!("salvaged {salvaged} of 200 records from the half file");
    // Truncation keeps the first half of the table's pages readable.
    assert!(salvaged > 0 && salvaged < 200, "{salvaged}");
    assert_eq!(adopted.records as usize, 3 + salvaged);
    assert_eq!(store.pending().0 as usize, 3 + salvaged);
    for r in resumed.iter().filter(|r| r.id.starts_with("big-")) {
        assert_eq!(
            r.ingest.as_deref(),
            Some(&[b'i'; 2_000][..]),
            "salvaged intact"
        );
    }

    let mut rest = others(&dir, &store);
    rest.iter_mut().for_each(|n| {
        *n = n.split(".corrupt-").next().unwrap().to_owned();
    });
    assert_eq!(
        rest,
        ["outbound-1-xxxx.db", "outbound-7-00000000000000aa.db"]
    );
    let again = store.adopt().unwrap();
    assert_eq!((again.records, again.warnings.len()), (0, 0));
}

#[test]
fn a_bad_page_in_the_middle_costs_only_the_records_on_it() {
    let dir = TempDir::new("bad-page");
    let src = TempDir::new("bad-page-src");
    let mut big = SqliteStore::open(&src).unwrap();
    big.apply(
        &(0..200)
            .map(|i| {
                let mut r = rec(i);
                r.ingest = Some(vec![b'i'; 1_500].into());
                Op::Put(r)
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let path = big.path().to_owned();
    big.close().unwrap();
    let mut bytes = fs::read(&path).unwrap();
    let page = PAGE_SIZE as usize;
    let middle = bytes.len() / page / 2 * page;
    bytes[middle..middle + page].fill(0xA5);
    let db = dir.join("outbound-2-0000000000000002.db");
    fs::write(&db, &bytes).unwrap();

    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!(adopted.warnings.len(), 1, "{:?}", adopted.warnings);
    println!("{}", adopted.warnings[0].1);
    // At most one page of 1,500-byte records is lost.
    let per_page = PAGE_SIZE as u64 / 1_500;
    assert!(adopted.records >= 200 - per_page, "{}", adopted.records);
    assert!(adopted.records < 200, "{}", adopted.records);
    assert_eq!(store.pending().0, adopted.records);
}

#[test]
fn a_file_of_a_newer_schema_is_left_alone_and_reported_once() {
    let dir = TempDir::new("newer");
    let (_src, db) = closed_spool("newer-src", 1..3);
    let db = plant(&db, &dir, "outbound-4-0000000000000004.db");
    Connection::open(&db)
        .unwrap()
        .execute("UPDATE meta SET value = 4 WHERE key = 'schema'", [])
        .unwrap();
    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!(adopted.records, 0);
    assert_eq!(adopted.warnings.len(), 1);
    assert!(
        adopted.warnings[0].1.contains("newer"),
        "{:?}",
        adopted.warnings
    );
    assert!(db.exists());
    assert!(store.adopt().unwrap().warnings.is_empty(), "reported once");
}

#[test]
fn empty_files_and_orphan_lock_files_are_removed_quietly() {
    let dir = TempDir::new("empty");
    fs::write(dir.join("outbound-5-0000000000000005.db"), b"").unwrap();
    fs::write(dir.join("outbound-6-0000000000000006.lock"), b"").unwrap();
    fs::write(dir.join("outbound-6-0000000000000006.db-wal"), b"").unwrap();
    fs::write(dir.join("unrelated.db"), b"not ours").unwrap();
    let mut store = SqliteStore::open(&dir).unwrap();
    let adopted = store.adopt().unwrap();
    assert_eq!((adopted.records, adopted.files), (0, 0));
    assert!(adopted.warnings.is_empty(), "{:?}", adopted.warnings);
    assert_eq!(others(&dir, &store), ["unrelated.db"]);
}

#[test]
fn the_cursor_goes_on_to_records_adopted_later() {
    let dir = TempDir::new("cursor");
    let (_a_dir, a) = closed_spool("cursor-a", 10..13);
    plant(&a, &dir, "outbound-8-0000000000000008.db");
    let mut store = SqliteStore::open(&dir).unwrap();
    store.adopt().unwrap();
    let (page, cursor) = store.resumable_of(0, None, 2).unwrap();
    assert_eq!(page, [adopted(10), adopted(11)]);
    let (page, cursor) = store.resumable_of(0, cursor.as_ref(), 2).unwrap();
    assert_eq!(page, [adopted(12)]);
    let (page, cursor) = store.resumable_of(0, cursor.as_ref(), 2).unwrap();
    assert!(page.is_empty());
    assert!(cursor.is_some(), "an empty page keeps the position");

    // Older records adopted later still come after the cursor.
    let (_b_dir, b) = closed_spool("cursor-b", 1..3);
    plant(&b, &dir, "outbound-9-0000000000000009.db");
    assert_eq!(store.adopt().unwrap().records, 2);
    let (page, _) = store.resumable_of(0, cursor.as_ref(), 10).unwrap();
    assert_eq!(page, [adopted(1), adopted(2)]);
}

#[test]
fn records_of_several_files_adopted_together_come_in_acceptance_order() {
    let dir = TempDir::new("order");
    let (_a_dir, a) = closed_spool("order-a", 0..10);
    plant(&a, &dir, "outbound-8-0000000000000008.db");
    let (_b_dir, b) = closed_spool("order-b", 10..20);
    // Listed first, accepted later.
    plant(&b, &dir, "outbound-1-0000000000000001.db");
    let mut store = SqliteStore::open(&dir).unwrap();
    assert_eq!(store.adopt().unwrap().records, 20);
    let got = all_resumable(&mut store);
    assert_eq!(got, (0..20).map(rec).collect::<Vec<_>>());
}

/// The cost of one group commit; printed, not asserted (machines differ).
#[test]
fn ten_thousand_puts_in_one_apply() {
    let dir = TempDir::new("bench");
    let mut store = SqliteStore::open(&dir).unwrap();
    // About the size of a track call: 700 bytes per destination.
    let ops: Vec<Op> = (0..10_000)
        .map(|i| {
            let mut r = rec(i);
            r.id = id(&uuid::Uuid::new_v4().to_string());
            r.ingest = Some(vec![b'i'; 700].into());
            r.hook = Some(vec![b'h'; 700].into());
            Op::Put(r)
        })
        .collect();
    let started = Instant::now();
    store.apply(&ops).unwrap();
    let put = started.elapsed();
    let ends: Vec<Op> = ops
        .iter()
        .flat_map(|op| {
            let Op::Put(r) = op else { unreachable!() };
            [
                Op::FirstAttempt {
                    tenant: 0,
                    id: r.id.clone(),
                    at_ms: 2_000,
                },
                Op::IngestDone {
                    tenant: 0,
                    id: r.id.clone(),
                },
                Op::Remove {
                    tenant: 0,
                    id: r.id.clone(),
                    bytes: 0,
                },
            ]
        })
        .collect();
    let started = Instant::now();
    store.apply(&ends).unwrap();
    let end = started.elapsed();
    println!(
        "spool: 10,000 puts in one apply {:.1} ms; their 30,000 first-attempt/ingest-done/\
         remove ops in one apply {:.1} ms",
        put.as_secs_f64() * 1e3,
        end.as_secs_f64() * 1e3
    );
    assert_eq!(store.pending(), (0, 0));
}

#[test]
fn a_dead_letter_search_pages_across_its_scan_bound() {
    use crate::durable::dead::{search_check, DeadLetters, DeadLimits};
    let dir = TempDir::new("dl-search");
    let mut store = SqliteStore::open(&dir).unwrap();
    store.register(0, "t");
    let limits = DeadLimits {
        retention: Duration::from_secs(3600),
        max_bytes: u64::MAX,
    };
    store.configure(0, "t", limits).unwrap();
    search_check::a_search_pages_across_the_scan_bound(&mut store, 0);
}
