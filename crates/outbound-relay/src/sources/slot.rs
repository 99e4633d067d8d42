//! One source name's client across its settings' changes. A request *uses* the client from
//! the moment it found its source until its events are enqueued and their commit waited
//! for (a count, no lock); a change swaps the client: new uses wait for the successor, the
//! uses under way finish on the old client (with the settings they started with), then the
//! old client hands over (`Client::hand_over`: its requests out come back, the rest stays
//! in the spool) and the new one, a tenant of the same name, resumes it. Nothing accepted is
//! lost, nothing in flight is sent twice, and no request is refused for the change.

use outbound::{AudienceSync, Client};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Slot {
    pub name: String,
    /// `None` while a change is under way.
    client: arc_swap::ArcSwapOption<Client>,
    /// Whether the client is on a spool (a change hands over; without one, it closes).
    spooled: std::sync::atomic::AtomicBool,
    users: AtomicUsize,
    /// Closed for good: no successor is coming.
    closed: std::sync::atomic::AtomicBool,
    /// Someone looks at the source's recent events (`operations::recent` sets it): its
    /// requests copy what they accept. Here, on data a request has at hand, so that a source
    /// nobody looks at pays one relaxed load and no lookup.
    capturing: AtomicBool,
    /// Notified when a change ends: what waiting uses wait for (no allocation: a watch
    /// channel was 352 bytes for each of 10,000 sources).
    ready: tokio::sync::Notify,
    /// Opened at the source's first audience sync (a source costs no open file until
    /// then); a sync holds it for its whole run (syncs of one source take turns).
    audiences: Mutex<Option<AudienceSync>>,
    audiences_path: PathBuf,
}

/// A use of the slot's client: counted until dropped.
pub struct Use<'a> {
    slot: &'a Slot,
    pub client: Arc<Client>,
}

impl Drop for Use<'_> {
    fn drop(&mut self) {
        self.slot.users.fetch_sub(1, SeqCst);
    }
}

impl Slot {
    pub fn new(name: &str, client: Client, spooled: bool, audiences_path: PathBuf) -> Slot {
        Slot {
            name: name.to_string(),
            client: arc_swap::ArcSwapOption::from_pointee(client),
            spooled: spooled.into(),
            users: AtomicUsize::new(0),
            closed: false.into(),
            capturing: false.into(),
            ready: tokio::sync::Notify::new(),
            audiences: Mutex::new(None),
            audiences_path,
        }
    }

    /// The client, for a use; `None` while a change is under way (see [`Slot::ready`]).
    pub fn enter(&self) -> Option<Use<'_>> {
        // Counted before the look: a change that takes the client away first waits for it.
        self.users.fetch_add(1, SeqCst);
        match self.client.load_full() {
            Some(client) => Some(Use { slot: self, client }),
            None => {
                self.users.fetch_sub(1, SeqCst);
                None
            }
        }
    }

    /// Whether the source's accepted events are to be copied for a look at them. Relaxed: the
    /// copies are kept under the capture's own lock, which checks again.
    pub fn capturing(&self) -> bool {
        self.capturing.load(Relaxed)
    }

    /// Turns the copying of accepted events on or off (`operations::recent`, under its lock).
    pub fn set_capturing(&self, on: bool) {
        self.capturing.store(on, Relaxed);
    }

    /// Waits (until `deadline`) for a change under way to end; false at the deadline.
    pub async fn ready(&self, deadline: Instant) -> bool {
        loop {
            // Registered before the look, so an end of the change after it wakes this one.
            let ended = self.ready.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.client.load().is_some() {
                return true;
            }
            if self.closed.load(SeqCst) {
                return false;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if tokio::time::timeout(left, ended).await.is_err() {
                return self.client.load().is_some();
            }
        }
    }

    /// [`Slot::enter`], waiting (blocking, until `deadline`) for a change under way.
    pub fn enter_blocking(&self, deadline: Instant) -> Option<Use<'_>> {
        loop {
            if let Some(u) = self.enter() {
                return Some(u);
            }
            if Instant::now() >= deadline || self.closed.load(SeqCst) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The client now, to read (stats, health); `None` during a change.
    pub fn current(&self) -> Option<Arc<Client>> {
        self.client.load_full()
    }

    /// Runs `f` on the source's audience state, opened on first use.
    pub fn with_audiences<T>(
        &self,
        f: impl FnOnce(&mut AudienceSync) -> Result<T, outbound::Error>,
    ) -> Result<T, outbound::Error> {
        let mut state = self.audiences.lock().unwrap_or_else(|e| e.into_inner());
        if state.is_none() {
            *state = Some(AudienceSync::open(&self.audiences_path)?);
        }
        match state.as_mut() {
            Some(sync) => f(sync),
            None => unreachable!("opened above"),
        }
    }

    /// Replaces the client with what `start` makes, once the old one has handed over (or,
    /// without a spool, closed within `close_timeout`). When `start` fails, `fallback`
    /// makes one with the old settings, and `start`'s error is returned. Both are given the
    /// old client, whose webhooks' records the new one carries on (the old one keeps them
    /// until it is dropped, so a fallback finds them too). Blocking: at most the old
    /// client's `timeout` and a second (its requests out), plus waiting for the uses under
    /// way.
    pub fn switch<E>(
        &self,
        close_timeout: Duration,
        start: impl FnOnce(Option<&Client>) -> Result<(Client, bool), E>,
        fallback: impl FnOnce(Option<&Client>) -> Result<(Client, bool), E>,
    ) -> Result<(), E> {
        let old = self.client.swap(None);
        // The uses under way finish on the old client: enqueue, then the commit wait is
        // registered. They take moments; one waiting for queue room (`queue_full_wait`)
        // is ended by the hand-over below, answered as closed.
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.users.load(SeqCst) != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        if let Some(old) = &old {
            let done = match self.spooled.load(SeqCst) {
                true => old.hand_over(None),
                false => old.close(Some(close_timeout)),
            };
            if !matches!(done, Ok(true)) {
                tracing::warn!(source = %self.name, "the old settings' client did not hand over cleanly: {done:?}");
            }
        }
        // Refused new settings are still an error when the old ones run again: the caller
        // keeps the old ones as what runs.
        let (result, out) = match start(old.as_deref()) {
            Ok(started) => (Some(started), Ok(())),
            Err(e) => (fallback(old.as_deref()).ok(), Err(e)),
        };
        if let Some((client, spooled)) = result {
            self.spooled.store(spooled, SeqCst);
            self.client.store(Some(Arc::new(client)));
        }
        self.ready.notify_waiters();
        out
    }

    /// Closes the client for good (the relay stops, or a removed source has drained),
    /// within `bound`; what is left stays in the spool.
    pub fn close(&self, bound: Duration) -> Option<(bool, outbound::Stats)> {
        self.closed.store(true, SeqCst);
        let client = self.client.swap(None)?;
        self.ready.notify_waiters();
        let done = client.close(Some(bound));
        Some((matches!(done, Ok(true)), client.stats()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbound::{Config, Engine, EngineConfig, Message, Webhook};

    /// New settings that fail to start: the old ones run again, with their records.
    #[test]
    fn a_fallback_to_the_old_settings_keeps_their_records() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::new(EngineConfig {
            spool: Some(dir.path().join("spool").into()),
            ..EngineConfig::default()
        })
        .unwrap();
        // A port nothing listens on: every attempt fails at once.
        let port = (std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .local_addr()
            .unwrap()
            .port();
        let config = || {
            Config::default()
                .proxy_from_env(false)
                .webhooks(vec![Webhook::new(format!("http://127.0.0.1:{port}/in"))])
        };
        let client = engine.tenant("src", config()).unwrap();
        for i in 0..3 {
            let msg = Message::track("u1", "E").message_id(format!("m{i}"));
            client.enqueue(&msg).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while client.webhook_health()[0].consecutive_failures < 3 {
            assert!(Instant::now() < deadline, "{:?}", client.webhook_health());
            std::thread::sleep(Duration::from_millis(10));
        }
        let slot = Slot::new("src", client, true, dir.path().join("audiences.db"));
        let refused = slot.switch(
            Duration::from_secs(1),
            |_| Err("refused"),
            |before| {
                let before = before.expect("the old client");
                let client = engine.tenant_after("src", config(), before);
                client.map(|c| (c, true)).map_err(|_| "fallback refused")
            },
        );
        assert_eq!(refused, Err("refused"));
        let health = slot.current().unwrap().webhook_health().remove(0);
        assert!(health.consecutive_failures >= 3, "{health:?}");
        assert!(health.last_error.is_some(), "{health:?}");
        let attempts = slot.current().unwrap().webhook_attempts(0).unwrap();
        assert!(attempts.len() >= 3, "{attempts:?}");
        slot.close(Duration::from_secs(1));
    }
}
