//! Waiting for what was accepted: on the spool (`when_spooled`), delivered (`flush`), and
//! the client's end (`close`, `hand_over`).

use super::start::{CommandSink, TenantHandle};
use super::{Client, DEFAULT_WAIT};
use crate::delivery::command::Command;
use crate::error::Error;
use crate::log::Level;
use crate::model::retry::after;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Client {
    /// Calls `callback` once every message this client accepted before the call is committed
    /// to the spool (the group commit that holds the last of them; see `spool_commit_interval`),
    /// so it survives a crash of the process: `true` then. `false` when the commit failed
    /// (the messages go on to delivery, but not from disk) or the client closed first. Each
    /// answer is about its own call: a `true` does not vouch for messages an earlier call
    /// was answered `false` for (on Redis, a commit that ran unconfirmed can be lost with
    /// its primary).
    ///
    /// Never blocks: the callback runs later on the spool writer's thread, so it must be
    /// quick (send on a channel, complete a future). Without a `spool` there is nothing to
    /// wait for and it is called at once, on the caller's thread, with `true` (a closed
    /// client: `false`). This is how a server acknowledges only what is on disk.
    pub fn when_spooled(&self, callback: impl FnOnce(bool) + Send + 'static) {
        if !self.subs.is_empty() {
            // The subscriptions' clients hold their shares of the messages: all must say so.
            let all = Arc::new(AllOf::new(1 + self.subs.len(), Box::new(callback)));
            for sub in &self.subs {
                let all = all.clone();
                sub.when_spooled_own(move |ok| all.answer(ok));
            }
            return self.when_spooled_own(move |ok| all.answer(ok));
        }
        self.when_spooled_own(callback)
    }

    fn when_spooled_own(&self, callback: impl FnOnce(bool) + Send + 'static) {
        let engine = self.engine.load();
        match &engine.tx {
            _ if engine.shared.closed.load(SeqCst) => callback(false),
            CommandSink::Scheduler(_) => callback(true),
            CommandSink::Spooler(inbox) => inbox.when_spooled(Box::new(callback)),
        }
    }

    /// Sends what is waiting for a batch now, and waits until every message accepted before
    /// the call has an outcome, or `timeout` (default [`DEFAULT_WAIT`]) passes. True when all
    /// of them ended and no message failed or was dropped since the previous `flush`
    /// returned (or the client started), whether before this call or during it: a failure
    /// that lands before the call is not missed (a message that its own `integrations` send
    /// nowhere is not a failure).
    pub fn flush(&self, timeout: Option<Duration>) -> bool {
        let deadline = after(Instant::now(), timeout.unwrap_or(DEFAULT_WAIT));
        let mut ok = true;
        for sub in &self.subs {
            ok &= sub.flush(Some(deadline.saturating_duration_since(Instant::now())));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        self.flush_own(Some(left)) && ok
    }

    fn flush_own(&self, timeout: Option<Duration>) -> bool {
        let engine = self.engine.load_full();
        let before = engine.shared.answered_losses.load(SeqCst);
        if engine.on_scheduler() {
            // Inside an outcome callback: the scheduler cannot progress while we wait.
            engine.tx.send(Command::Flush(None));
            let idle = engine.shared.pending.load(Acquire) == 0;
            return self.no_losses_since(&engine, before) && idle;
        }
        let barrier = Arc::new(AtomicU64::new(u64::MAX));
        engine.tx.send(Command::Flush(Some(barrier.clone())));
        let deadline = after(Instant::now(), timeout.unwrap_or(DEFAULT_WAIT));
        let ended = engine.shared.wait_until(deadline, |s| {
            let b = barrier.load(SeqCst);
            b != u64::MAX && s.low_water.load(SeqCst) >= b
        });
        if !ended && self.config.spool.is_some() {
            // The flush passes the spool writer after its commit: whatever the timeout, what
            // was accepted before the call is in the spool when flush returns. A commit is
            // bounded by the client's timeout (the store's I/O), so is this wait.
            let committed = after(deadline.max(Instant::now()), self.config.timeout);
            engine
                .shared
                .wait_until(committed, |_| barrier.load(SeqCst) != u64::MAX);
        }
        self.no_losses_since(&engine, before) && ended
    }

    /// True when no message failed or was dropped since `before` losses; the ones counted
    /// now are answered for (the next flush or close looks past them).
    fn no_losses_since(&self, engine: &TenantHandle, before: u64) -> bool {
        let now = engine.shared.counters.losses.load(Relaxed);
        engine.shared.answered_losses.fetch_max(now, SeqCst);
        now == before
    }

    /// Flushes (bounded by `timeout`, default [`DEFAULT_WAIT`]), then stops the threads;
    /// messages still waiting end as dropped (reason: closed). Returns what `flush` would.
    /// Closing twice is [`Error::Closed`].
    ///
    /// When it returns, every accepted message has exactly one outcome in [`stats`](Self::stats)
    /// (`accepted = delivered + failed + dropped - queue_full + spooled`) and each was handed
    /// to `on_outcome`: the wait goes past `timeout` for as long as that takes. The one
    /// exception is a callback that blocks: once a single call has not returned for the
    /// client's `timeout`, `close` stops waiting, counts what is left as dropped, skips the
    /// callbacks not yet made, and returns false. Called from inside a callback, it does not
    /// wait at all. No `on_outcome` or log-sink call starts after `close` returns.
    pub fn close(&self, timeout: Option<Duration>) -> Result<bool, Error> {
        let engine = self.engine.load_full();
        if engine.shared.closed.swap(true, SeqCst) {
            return Err(Error::Closed);
        }
        // No call takes new messages now; the subscriptions' clients end first (they are
        // tenants of this client's spool writer, which ends with it).
        let mut subs_ok = true;
        if !self.subs.is_empty() {
            while engine.shared.calls.load(SeqCst) != 0 {
                std::thread::yield_now();
            }
            let deadline = after(Instant::now(), timeout.unwrap_or(DEFAULT_WAIT));
            for sub in &self.subs {
                let left = deadline.saturating_duration_since(Instant::now());
                subs_ok &= sub.close(Some(left)).unwrap_or(false);
            }
        }
        // Calls waiting for room (`queue_full_wait`) give up now, as closed.
        engine.shared.wake_room();
        let deadline = after(Instant::now(), timeout.unwrap_or(DEFAULT_WAIT));
        // Let enqueue calls that started before `closed` was set land in the channel first.
        while engine.shared.calls.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        let before = engine.shared.answered_losses.load(SeqCst);
        engine.tx.send(Command::Flush(None));
        let on_scheduler = engine.on_scheduler();
        let idle = if on_scheduler {
            engine.shared.pending.load(Acquire) == 0
        } else {
            engine
                .shared
                .wait_until(deadline, |s| s.pending.load(Acquire) == 0)
        };
        engine.tx.send(Command::Shutdown);
        let complete = self.finish(&engine, on_scheduler, true, "closed");
        Ok(self.no_losses_since(&engine, before) && complete && idle && subs_ok)
    }

    /// Closes the client for a successor of its name on the same spool (a service that
    /// changes a tenant's settings live: `TenantHandle::tenant` again with the new ones once this
    /// returns): no new request starts, the requests out are waited for and their results
    /// kept, then everything else is left in the spool, as it stands, for the successor to
    /// resume. Unlike [`close`](Self::close), nothing that was in flight is abandoned, so the
    /// successor sends nothing twice; and nothing waits for retries or batches to finish.
    /// Requests still out after `timeout` (default: the client's `timeout` plus 1 s, by
    /// which each one has its answer or its timeout) are abandoned as `close` abandons them.
    /// Without a spool, what is left ends as dropped (closed). Closing twice is
    /// [`Error::Closed`]. True when no request had to be abandoned.
    pub fn hand_over(&self, timeout: Option<Duration>) -> Result<bool, Error> {
        let engine = self.engine.load_full();
        if engine.shared.closed.swap(true, SeqCst) {
            return Err(Error::Closed);
        }
        engine.shared.wake_room();
        while engine.shared.calls.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        let mut subs_ok = true;
        for sub in &self.subs {
            subs_ok &= sub.hand_over(timeout).unwrap_or(false);
        }
        engine.tx.send(Command::HandOver);
        let on_scheduler = engine.on_scheduler();
        let bound = timeout.unwrap_or(self.config.timeout + Duration::from_secs(1));
        let deadline = after(Instant::now(), bound);
        let settled = on_scheduler
            || engine
                .shared
                .wait_until(deadline, |s| s.stopped.load(SeqCst));
        if !settled {
            // Past the answers' bound: end as `close` ends, the requests out abandoned.
            engine.tx.send(Command::Shutdown);
        }
        Ok(self.finish(&engine, on_scheduler, settled, "handed over") && subs_ok)
    }

    /// The end that `close` and `hand_over` share, once the shutdown or hand-over was sent:
    /// waits for the outcomes of what is left, waits for the last spool commit (a successor
    /// may take the name only once this one's records are released), then stops callbacks
    /// and logs.
    /// Whether everything ended (`complete` so far, and the drain).
    fn finish(
        &self,
        engine: &TenantHandle,
        on_scheduler: bool,
        mut complete: bool,
        how: &str,
    ) -> bool {
        if !on_scheduler {
            complete &= self.wait_for_drain(engine);
            if engine.spooled {
                let end = Instant::now() + self.config.timeout;
                engine.shared.wait_until(end, |s| s.spool_done.load(SeqCst));
                if let Some(own) = &engine.own_spool {
                    own.join(end);
                }
            }
        }
        engine.stop_callbacks(complete);
        self.logger
            .log(Level::Debug, || format!("client {how}: {:?}", self.stats()));
        self.logger.stop();
        complete
    }

    /// Waits for the scheduler to report the outcomes of what is left, for as long as its
    /// callbacks keep returning. False when one blocked and the rest was counted here.
    fn wait_for_drain(&self, engine: &TenantHandle) -> bool {
        let stuck_after = self.config.timeout;
        let mut seen = engine.shared.reported.load(Relaxed);
        let mut since = Instant::now();
        loop {
            if engine.shared.stopped.load(SeqCst) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
            let now = engine.shared.reported.load(Relaxed);
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() >= stuck_after {
                let left = engine.shared.abandon();
                self.logger.log(Level::Warn, || {
                    format!(
                        "close: an outcome callback has not returned for {stuck_after:?}; \
                         {left} message(s) counted as dropped without a callback"
                    )
                });
                return false;
            }
        }
    }
}

type Answered = Box<dyn FnOnce(bool) + Send>;

/// A callback answered once every one of `n` answers came: `true` when all were.
struct AllOf {
    /// Answers still to come, whether all so far were `true`, and the callback.
    left: std::sync::Mutex<(usize, bool, Option<Answered>)>,
}

impl AllOf {
    fn new(n: usize, callback: Answered) -> AllOf {
        AllOf {
            left: std::sync::Mutex::new((n, true, Some(callback))),
        }
    }

    fn answer(&self, ok: bool) {
        let done = {
            let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
            left.0 -= 1;
            left.1 &= ok;
            (left.0 == 0).then(|| (left.2.take(), left.1))
        };
        if let Some((Some(callback), ok)) = done {
            callback(ok);
        }
    }
}
