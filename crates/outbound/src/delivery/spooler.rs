//! The spool writer thread (only with `spool` set): it stands between the calls and the
//! scheduler. Every accepted message is written to the store (`durable::Store`) in a group commit
//! before it is passed on, so it is on disk before its first attempt; the scheduler's
//! progress and outcomes come back here and leave the store in the next commit (the next
//! group of messages, or at most `PROGRESS_EVERY` later when none comes). At start and
//! every few seconds it takes over what earlier clients and dead processes left in the
//! directory and passes it on as resumed messages, no more at once than the queue has room
//! for. The caller's thread never touches the disk. `Client::when_spooled` waiters are
//! answered right after the commit that holds every message sent before them.
//!
//! Commits are pipelined: a group's commit is started (`Store::submit`) and the group before
//! it is settled (`Store::settle`) only then, so with Redis one transaction is on the wire
//! while the last one's reply comes back; at most one group is unsettled, and it is settled
//! at once when the writer has nothing else to do, before a flush or shutdown is passed on,
//! and before an adoption pass. With SQLite, the transaction runs in `submit`, then the WAL's
//! fsync: in `submit` too on a disk with fast fsyncs, else on the store's own thread, whose
//! fsync `settle` waits for while the next group's transaction runs.
//! A commit whose outcome is known at once (nothing to write, or a failed one) is settled
//! at once. A group's messages go on to delivery, and its waiters are
//! answered, only when it is settled: after its commit, or after its commit failed (then
//! logged: they go on all the same). When a commit fails after the next one was sent, what
//! it carried goes with the commit after that: the waiters of the one sent in between are
//! answered `false`, as not everything before them is on disk.

use crate::delivery::command::{Command, Item, Resumed};
use crate::delivery::inbox::Inbox;
use crate::delivery::inbox::{SpoolMailbox, Waiter};
use crate::delivery::shared::Shared;
use crate::durable::{Cursor, Op, Record, Store, Ticket};
use crate::log::{Level, Logger};
use crate::model::timestamp::{instant_of, wall_ms};
use crate::wire::ingestion::Element;
use crossbeam_channel::{select, TryRecvError};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the directory is checked for files of dead processes.
const ADOPT_EVERY: Duration = Duration::from_secs(5);
/// Messages that make a commit group full before its interval ends: in a burst, the first
/// messages go on to delivery while later ones are still being written.
const GROUP_MAX: usize = 2048;
/// How long progress and outcomes wait for a commit when no message is waiting (they go
/// with the next group of messages when one comes sooner). Nothing is lost when a crash
/// loses them: a removal not on disk costs a duplicate delivery after a restart, a first
/// attempt a longer retry window. Committed every `spool_commit_interval`, a backlog's
/// deliveries cost a commit (an fsync and a rewritten page) per few messages: most of the
/// spool writer's time while a burst was delivered (BENCHMARKS.md).
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

/// The sooner of two deadlines, either of which may be unset.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    a.into_iter().chain(b).min()
}

/// A stable hash of the webhook URL list: a spooled URL mask only means something under the
/// same list.
pub(crate) fn hooks_key(urls: &[String]) -> u64 {
    // FNV-1a: stable across processes and versions (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for url in urls {
        for b in url.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

pub(crate) struct Spooler {
    pub store: Box<dyn Store>,
    pub shared: Arc<Shared>,
    /// Commands from the calls, progress and outcomes from the scheduler.
    pub mailbox: SpoolMailbox,
    /// To the scheduler.
    pub scheduler: Inbox,
    pub commit_every: Duration,
    pub capacity: u64,
    pub hook_mask: u8,
    pub hooks_key: u64,
    pub logger: Logger,
    /// `when_spooled` callbacks waiting for a commit.
    pub waiters: Vec<Waiter>,
    /// Messages taken off the channel, ever.
    pub taken: u64,
    /// Messages taken and then committed, ever (all of `taken` after each commit).
    pub committed: u64,
    /// Whether the last commit reached the disk.
    pub last_ok: bool,
    /// The group whose commit was started and not yet settled (at most one).
    pub in_flight: Option<InFlight>,
}

/// A group whose commit was started ([`Store::submit`]) and whose messages wait for its
/// outcome.
pub(crate) struct InFlight {
    /// `None`: nothing to write (messages with nowhere to go wait all the same, for order).
    ticket: Option<Ticket>,
    items: Vec<Item>,
    /// `taken` when it was started: every message up to there is in it or before it.
    taken: u64,
    /// The group before it failed after it was sent: what that one carried goes with the
    /// next commit, not this one, so this one's waiters are answered `false` all the same.
    after_failure: bool,
}

impl Spooler {
    pub(crate) fn run(mut self) {
        let mut waiting: Vec<Item> = Vec::new();
        let mut writes: Vec<Op> = Vec::new();
        // When the open group is due: `commit_at` once it holds a message, `progress_at`
        // while it holds progress alone (later, see `PROGRESS_EVERY`).
        let mut commit_at: Option<Instant> = None;
        let mut progress_at: Option<Instant> = None;
        // When the last commit began (or the thread started): the next one is due one
        // interval after it, not one interval after it ended (a commit as long as the
        // interval, i.e. one slow fsync, would otherwise double the wait of every
        // `when_spooled`), and at once when the spool has been idle for an interval or more.
        let mut last_commit = Instant::now();
        // Where resuming goes on from (the store's cursor is kept for good: after each adopt
        // it yields only what that adopt added), and whether there may be more.
        let mut cursor: Option<Cursor> = None;
        let mut resume_due = true;
        let mut next_adopt = Instant::now();
        self.logger.log(Level::Debug, || {
            format!("spool: writing to {}", self.store.location())
        });
        loop {
            let now = Instant::now();
            if now >= next_adopt {
                next_adopt = now + ADOPT_EVERY;
                self.settle();
                self.adopt();
                resume_due = true;
            }
            if resume_due {
                resume_due = self.resume(&mut cursor);
            }
            let wake = earliest(commit_at, progress_at).map_or(next_adopt, |t| t.min(next_adopt));
            let wait = wake.saturating_duration_since(Instant::now());
            // Sleep unless what is unread needs us now: senders ring only when no commit
            // is scheduled or the group is full (`inbox.rs`), not once per message.
            let room = GROUP_MAX.saturating_sub(waiting.len());
            let mailbox = &self.mailbox;
            let scheduled = (commit_at.is_some(), progress_at.is_some());
            if !mailbox.wake.must_drain(
                scheduled.0,
                scheduled.1,
                room,
                || !mailbox.ops.is_empty(),
                || !mailbox.waiters.is_empty(),
            ) {
                if self.in_flight.is_some() {
                    // Nothing else to do: the group in flight is settled now rather than
                    // with the next one, so no message waits longer than without pipelining.
                    self.settle();
                    continue;
                }
                select! {
                    recv(mailbox.bell) -> _ => {},
                    default(wait) => {},
                }
            }
            let now = Instant::now();
            let mut stop = false;
            let mut taken = 0;
            while waiting.len() < GROUP_MAX {
                match self.mailbox.commands.try_recv() {
                    Ok(Command::Message(mut item)) => {
                        taken += 1;
                        self.taken += 1;
                        if let Some(record) = self.record(&mut item) {
                            writes.push(Op::Put(record));
                        }
                        // Even a message with nowhere to go waits for the commit: order is
                        // kept.
                        commit_at.get_or_insert(self.due(last_commit, now));
                        waiting.push(item);
                    }
                    Ok(other) => {
                        // A flush or shutdown goes after every message before it.
                        last_commit = Instant::now();
                        self.commit(&mut writes, &mut waiting);
                        self.settle();
                        (commit_at, progress_at) = (None, None);
                        if !self.forward_or_stop(other) {
                            stop = true;
                            break;
                        }
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        stop = true;
                        break;
                    }
                }
            }
            self.mailbox.wake.taken(taken);
            // Taken after the messages: a waiter's messages were sent before it.
            self.waiters.extend(self.mailbox.waiters.try_iter());
            self.answer_waiters();
            while let Ok(op) = self.mailbox.ops.try_recv() {
                writes.push(op);
                progress_at.get_or_insert((last_commit + PROGRESS_EVERY).max(now));
            }
            if stop {
                return self.stop(writes, waiting);
            }
            let now = Instant::now();
            if waiting.len() >= GROUP_MAX
                || writes.len() >= GROUP_MAX
                || earliest(commit_at, progress_at).is_some_and(|t| now >= t)
            {
                last_commit = now;
                self.commit(&mut writes, &mut waiting);
                (commit_at, progress_at) = (None, None);
            }
        }
    }

    /// When a group that starts `now` is committed: one interval after the last commit
    /// began, and not before `now`.
    fn due(&self, last_commit: Instant, now: Instant) -> Instant {
        (last_commit + self.commit_every).max(now)
    }

    /// What the store keeps of `item`; `None` for a message with nowhere to go (the
    /// scheduler ends it at once).
    fn record(&self, item: &mut Item) -> Option<Record> {
        if item.ingest.is_none() && item.hook.is_none() {
            return None;
        }
        Some(Record {
            // Shared with the scheduler's record of it: the spool's ops need it as an `Arc`.
            id: item.share_id(),
            accepted_ms: wall_ms(item.accepted),
            first_ms: None,
            ingest: item.ingest.as_ref().map(Element::to_body),
            hook: item.hook.clone(),
            hook_mask: self.hook_mask,
            hooks_key: self.hooks_key,
        })
    }

    /// Starts the commit of what was written since the last commit (the group's messages
    /// wait for it), then settles the group before it: with a store that pipelines (Redis),
    /// this group's transaction is on the wire while the last one's reply comes back.
    fn commit(&mut self, writes: &mut Vec<Op>, waiting: &mut Vec<Item>) {
        let ticket = (!writes.is_empty()).then(|| self.store.submit(writes));
        writes.clear();
        // Known at once (SQLite, nothing to write, or nothing sent): nothing to overlap.
        let known = ticket.as_ref().is_none_or(Ticket::is_known);
        let mut group = InFlight {
            ticket,
            items: std::mem::take(waiting),
            taken: self.taken,
            after_failure: false,
        };
        group.after_failure = !self.settle();
        self.in_flight = Some(group);
        if known {
            self.settle();
        }
    }

    /// Waits for the outcome of the group in flight, then passes its messages on and answers
    /// the waiters it completes. When the disk refuses, they go on all the same (delivery
    /// matters more than durability), logged. Whether it reached the disk (true with none).
    fn settle(&mut self) -> bool {
        let Some(group) = self.in_flight.take() else {
            return true;
        };
        let mut ok = true;
        if let Some(ticket) = group.ticket {
            let result = self.store.settle(ticket);
            self.shared.spool_failing.store(result.is_err(), Relaxed);
            if let Err(e) = result {
                ok = false;
                let n = group.items.len();
                self.logger.log(Level::Warn, || {
                    format!("{e}; {n} message(s) go on without being on disk")
                });
            }
            self.shared
                .spool_bytes
                .store(self.store.pending().1, Relaxed);
        }
        (self.committed, self.last_ok) = (group.taken, ok && !group.after_failure);
        self.answer_waiters();
        for item in group.items {
            self.scheduler.send_now(Command::Message(item));
        }
        ok
    }

    /// Answers the waiters whose messages are all committed, with whether the last commit
    /// reached the disk.
    fn answer_waiters(&mut self) {
        if self.waiters.iter().all(|w| w.target > self.committed) {
            return;
        }
        let (done, rest) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|w| w.target <= self.committed);
        self.waiters = rest;
        for waiter in done {
            waiter.answer(self.last_ok);
        }
    }

    /// Passes a flush or shutdown on (after the commit); false on shutdown.
    fn forward_or_stop(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Shutdown => false,
            other => {
                self.scheduler.send_now(other);
                true
            }
        }
    }

    /// Takes over the files of dead processes and closed clients.
    fn adopt(&mut self) {
        let result = self.store.adopt();
        self.shared.spool_failing.store(result.is_err(), Relaxed);
        match result {
            Ok(adopted) => {
                for (path, why) in &adopted.warnings {
                    self.logger
                        .log(Level::Warn, || format!("spool {}: {why}", path.display()));
                }
                if adopted.records > 0 {
                    self.logger.log(Level::Warn, || {
                        format!(
                            "spool: took over {} message(s) from {} file(s)",
                            adopted.records, adopted.files
                        )
                    });
                }
            }
            Err(e) => self.logger.log(Level::Warn, || e.to_string()),
        }
    }

    /// Passes on the next page of resumable messages, as many as the queue has room for;
    /// true when there may be more (asked again on the next wake).
    fn resume(&mut self, cursor: &mut Option<Cursor>) -> bool {
        let room = self
            .capacity
            .saturating_sub(self.shared.pending.load(Acquire));
        if room == 0 {
            return true;
        }
        let (records, next) = match self.store.resumable(cursor.as_ref(), room as usize) {
            Ok(page) => page,
            Err(e) => {
                self.logger.log(Level::Warn, || e.to_string());
                return false;
            }
        };
        *cursor = next;
        let full_page = records.len() as u64 == room;
        let any = !records.is_empty();
        for r in records {
            self.shared.pending.fetch_add(1, AcqRel);
            self.shared.counters.resumed.fetch_add(1, Relaxed);
            let mask = if r.hooks_key == self.hooks_key {
                r.hook_mask & self.hook_mask
            } else {
                self.hook_mask
            };
            self.scheduler.send_now(Command::Resume(Resumed {
                id: r.id,
                ingest: r.ingest,
                hook: r.hook,
                hook_mask: mask,
                first: r.first_ms.map(instant_of),
            }));
        }
        if any {
            // Nothing more of them is coming: their last batch leaves now, not after
            // flush_interval.
            self.scheduler.send_now(Command::Flush(None));
        }
        self.shared
            .spool_bytes
            .store(self.store.pending().1, Relaxed);
        full_page
    }

    /// Shutdown: what was accepted but not yet passed on is committed and stays in the spool;
    /// then the scheduler stops, and its last progress and outcomes are committed before the
    /// store closes.
    fn stop(mut self, mut writes: Vec<Op>, waiting: Vec<Item>) {
        self.settle();
        let ok = match self.store.apply(&writes) {
            Ok(_) => true,
            Err(e) => {
                self.logger.log(Level::Warn, || e.to_string());
                false
            }
        };
        writes.clear();
        // Every message was sent before the shutdown: what waits for them is answered now;
        // a waiter for more than was ever taken cannot be (dropped: false).
        (self.committed, self.last_ok) = (self.taken, ok);
        self.waiters.extend(self.mailbox.waiters.try_iter());
        self.answer_waiters();
        self.waiters.clear();
        for item in &waiting {
            let spooled = item.ingest.is_some() || item.hook.is_some();
            self.shared.leave_spooled(spooled);
        }
        self.scheduler.send_now(Command::Shutdown);
        // The scheduler's Sender goes when it exits; what it sent before is ours to commit.
        while let Ok(op) = self.mailbox.ops.recv() {
            writes.push(op);
        }
        if let Err(e) = self.store.apply(&writes) {
            self.logger.log(Level::Warn, || e.to_string());
        }
        if let Err(e) = self.store.close() {
            self.logger.log(Level::Warn, || e.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_round_trips_through_instants() {
        let t = Instant::now() - Duration::from_secs(90);
        let ms = wall_ms(t);
        let back = instant_of(ms);
        let diff = if back > t { back - t } else { t - back };
        assert!(diff < Duration::from_millis(5), "{diff:?}");
        assert!(instant_of(wall_ms(Instant::now()) + 60_000) <= Instant::now());
    }

    /// How many spooled rows in `dir`'s files carry message id `id`, as a process after a
    /// crash right now would find them: the files (the database and its WAL) are copied as
    /// they are on disk and the copy opened, so SQLite recovers from the WAL.
    fn rows_on_disk(dir: &std::path::Path, id: &str) -> i64 {
        let copy = dir.with_extension("copy");
        let _ = std::fs::remove_dir_all(&copy);
        std::fs::create_dir_all(&copy).unwrap();
        let mut dbs = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if name.ends_with(".db") || name.ends_with(".db-wal") {
                std::fs::copy(&path, copy.join(&name)).unwrap();
            }
            if name.ends_with(".db") {
                dbs.push(copy.join(&name));
            }
        }
        let mut n = 0;
        for db in dbs {
            let conn = rusqlite::Connection::open(&db).unwrap();
            n += conn
                .query_row("SELECT count(*) FROM messages WHERE id = ?1", [id], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap();
        }
        let _ = std::fs::remove_dir_all(&copy);
        n
    }

    #[test]
    fn when_spooled_fires_once_the_messages_accepted_before_it_are_on_disk() {
        use crate::{Client, Config, Message, Webhook};
        let dir = std::env::temp_dir().join(format!(
            "outbound-when-spooled-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let client = Client::new(Config {
            // Port 9 (discard) is closed here: every attempt fails and is retried, so the
            // messages stay in the spool while the test looks.
            webhooks: vec![Webhook::new("http://127.0.0.1:9/hook")],
            spool: Some(dir.clone()),
            // A long interval: the callback must wait for the commit, not fire before it.
            spool_commit_interval: Duration::from_millis(300),
            ..Config::default()
        })
        .unwrap();
        let started = Instant::now();
        for i in 0..3 {
            let msg = Message::track("u1", "E").message_id(format!("m-{i}"));
            client.enqueue(&msg).unwrap();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = dir.clone();
        client.when_spooled(move |ok| {
            let on_disk: Vec<i64> = (0..3)
                .map(|i| rows_on_disk(&seen, &format!("m-{i}")))
                .collect();
            tx.send((ok, on_disk, started.elapsed())).unwrap();
        });
        let (ok, on_disk, after) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(ok);
        assert_eq!(
            on_disk,
            [1, 1, 1],
            "every message accepted before the call is on disk"
        );
        assert!(
            after >= Duration::from_millis(250),
            "waited for the group commit: {after:?}"
        );
        // Nothing new since: the next waiter is answered without another commit.
        let (tx, rx) = std::sync::mpsc::channel();
        client.when_spooled(move |ok| tx.send(ok).unwrap());
        assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        client.close(Some(Duration::from_millis(100))).unwrap();
        // Closed: answered at once, false.
        let (tx, rx) = std::sync::mpsc::channel();
        client.when_spooled(move |ok| tx.send(ok).unwrap());
        assert!(!rx.try_recv().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn when_spooled_without_a_spool_is_answered_at_once_with_true() {
        use crate::{Client, Config, Webhook};
        let client = Client::new(Config {
            webhooks: vec![Webhook::new("http://127.0.0.1:9/hook")],
            ..Config::default()
        })
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        client.when_spooled(move |ok| tx.send(ok).unwrap());
        assert!(
            rx.try_recv().unwrap(),
            "called on the caller's thread, before returning"
        );
        client.close(Some(Duration::from_millis(100))).unwrap();
    }

    #[test]
    fn the_hooks_key_is_stable_and_tells_lists_apart() {
        let a = hooks_key(&["https://a/x".into(), "https://b/y".into()]);
        assert_eq!(a, hooks_key(&["https://a/x".into(), "https://b/y".into()]));
        assert_ne!(a, hooks_key(&["https://a/xh".into(), "ttps://b/y".into()]));
        assert_ne!(a, hooks_key(&["https://b/y".into(), "https://a/x".into()]));
    }
}
