//! `SIGHUP`: the config file is read again and, if it is sound, its sources and tokens
//! replace the running ones; a broken file is refused with the reason logged, and the
//! running config stays.
//!
//! The swap: a request loads [`Live`] once, so the requests in flight finish on the set
//! they started with, and new requests see the new one. A source whose settings did not
//! change keeps its running client (its queue, its spool). A new source starts its client
//! before the swap; if one cannot start, nothing changes. A changed source (any of its
//! keys, or a top-level delivery setting, `data_dir` or the network rules) needs a new
//! client on the same spool, and a spool has one client at a time: the old client is closed
//! first (within `close_timeout`; what it has not delivered stays in the spool, and the new
//! client resumes it), so a request that reaches the old client during that moment is
//! answered 503 and the SDK sends again. A removed source is swapped out first and closed
//! once the requests that hold it have finished (at most `shutdown_timeout`), its spool left
//! for the next owner of that name.
//!
//! `listen`, the limits, `tls_cert`/`tls_key`, `log_format` and `shutdown_timeout` are read
//! at start only: an applied reload whose file differs from what the process runs with logs
//! that the change needs a restart, and otherwise ignores it; a refused reload says nothing
//! of them.

use crate::config::{ConfigError, Limits, LogFormat, Relay, Tls};
use crate::server::{Live, State};
use crate::sources::{Source, Sources};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the running relay was started or last reloaded with.
pub struct Reloader {
    path: PathBuf,
    current: Relay,
    /// The settings read at start only, as this process runs them: each reload's file is
    /// compared with these, so a change undone by a later reload is no change.
    running: StartOnly,
}

/// The settings a reload cannot apply.
#[derive(PartialEq)]
struct StartOnly {
    listen: String,
    limits: Limits,
    tls: Option<Tls>,
    /// `None` when `--log-format` was given: the file's value is then never used.
    log_format: Option<LogFormat>,
    shutdown_timeout: Duration,
}

impl StartOnly {
    fn of(r: &Relay, log_format_given: bool) -> StartOnly {
        StartOnly {
            listen: r.listen.clone(),
            limits: r.limits.clone(),
            tls: r.tls.clone(),
            log_format: (!log_format_given).then_some(r.log_format),
            shutdown_timeout: r.shutdown_timeout,
        }
    }
}

impl Reloader {
    /// `log_format_given`: the command line chose the log format, whatever the file says.
    pub fn new(path: PathBuf, current: Relay, log_format_given: bool) -> Reloader {
        let running = StartOnly::of(&current, log_format_given);
        Reloader {
            path,
            current,
            running,
        }
    }

    /// Waits for SIGHUPs (the stream is installed by the caller before the address is
    /// printed) and reloads at each; runs until the runtime stops.
    pub async fn run(self, state: Arc<State>, mut hup: tokio::signal::unix::Signal) {
        let me = Arc::new(std::sync::Mutex::new(self));
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading the config");
            let (me, state) = (me.clone(), state.clone());
            // Clients open and close spools: blocking work, off the runtime's threads.
            let _ = tokio::task::spawn_blocking(move || {
                let mut me = me.lock().unwrap_or_else(|p| p.into_inner());
                me.reload(&state);
            })
            .await;
        }
    }

    /// One reload; every refusal is logged with its reason.
    pub fn reload(&mut self, state: &State) {
        let new = match Relay::load(&self.path) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("config reload refused, the running config stays: {e}");
                return;
            }
        };
        let old = state.live.load_full();
        match swap(&old.sources, &self.current, &new) {
            Ok(swapped) => {
                state.live.store(Arc::new(Live {
                    sources: Arc::new(swapped.sources),
                    admin_token: new.admin_token.clone(),
                    metrics_token: new.metrics_token.clone(),
                }));
                tracing::info!(
                    added = swapped.added,
                    changed = swapped.changed,
                    kept = swapped.kept,
                    removed = swapped.removed.len(),
                    "config reloaded"
                );
                close_removed(
                    old,
                    swapped.removed,
                    new.shutdown_timeout,
                    new.close_timeout,
                );
                self.warn_restart_only(&new);
                self.current = new;
            }
            Err(e) => tracing::error!("config reload refused, the running config stays: {e}"),
        }
    }

    /// Logs each start-only setting of the applied file that differs from the running one.
    fn warn_restart_only(&self, new: &Relay) {
        let run = &self.running;
        let file = StartOnly::of(new, run.log_format.is_none());
        let changed = [
            ("listen", run.listen != file.listen),
            ("limits", run.limits != file.limits),
            ("tls_cert/tls_key", run.tls != file.tls),
            ("log_format", run.log_format != file.log_format),
            (
                "shutdown_timeout",
                run.shutdown_timeout != file.shutdown_timeout,
            ),
        ];
        for (key, _) in changed.iter().filter(|(_, c)| *c) {
            tracing::warn!(
                "{}: {key} changed: it takes effect at the next start",
                new.file
            );
        }
    }
}

/// A reload's new set of sources, what it counted, and the old sources not in it.
struct Swapped {
    sources: Sources,
    added: usize,
    changed: usize,
    kept: usize,
    removed: Vec<Arc<Source>>,
}

/// Builds source `i`'s client without a spool and without sending, and closes it: the
/// core's checks of its settings, before anything running is touched. It logs through
/// `tracing` like every client of the relay.
fn check(new: &Relay, i: usize) -> Result<(), ConfigError> {
    let mut core = new.sources[i].core.clone();
    core.spool = None;
    // Dead letters need the spool left out here (their limits are checked all the same).
    core.dead_letters = false;
    core.send = false;
    core.log_sink = Some(crate::sources::log_sink(&new.sources[i].name));
    let client = outbound::Client::new(core).map_err(|e| new.core_error(i, e))?;
    let _ = client.close(Some(Duration::ZERO));
    Ok(())
}

/// The new set of sources, and the old sources that are not in it. Every new or changed
/// source is checked first, then the new ones started (an error: those stopped again,
/// nothing changed), then the changed ones restarted.
fn swap(running: &Sources, old: &Relay, new: &Relay) -> Result<Swapped, ConfigError> {
    let mut list: Vec<Option<Arc<Source>>> = vec![None; new.sources.len()];
    let mut changed = Vec::new();
    let mut fresh = Vec::new();
    for (i, s) in new.sources.iter().enumerate() {
        match running.by_name(&s.name) {
            Some(r) if r.fingerprint == s.fingerprint => list[i] = Some(r.clone()),
            Some(_) => changed.push(i),
            None => fresh.push(i),
        }
    }
    for &i in changed.iter().chain(&fresh) {
        check(new, i)?;
    }
    let mut started: Vec<Arc<Source>> = Vec::new();
    for &i in &fresh {
        match Sources::start_one(new, i) {
            Ok(source) => {
                started.push(source.clone());
                list[i] = Some(source);
            }
            Err(e) => {
                for s in &started {
                    let _ = s.client.close(Some(new.close_timeout));
                }
                return Err(e);
            }
        }
    }
    for &i in &changed {
        let name = &new.sources[i].name;
        if let Some(r) = running.by_name(name) {
            let _ = r.client.close(Some(new.close_timeout));
        }
        let source = Sources::start_one(new, i).or_else(|e| {
            // Checked above, so the spool or the audience state would not open: the old
            // settings again, on the same spool.
            tracing::error!(
                "source {name}: cannot restart with the new settings ({e}): keeping the old ones"
            );
            let k = old.sources.iter().position(|s| &s.name == name);
            k.map_or(Err(e), |k| Sources::start_one(old, k))
        });
        match source {
            Ok(source) => list[i] = Some(source),
            Err(e) => tracing::error!("source {name}: cannot restart: {e}"),
        }
    }
    let list: Vec<Arc<Source>> = list.into_iter().flatten().collect();
    let removed = running
        .list
        .iter()
        .filter(|r| !new.sources.iter().any(|s| s.name == r.name))
        .cloned()
        .collect();
    Ok(Swapped {
        sources: Sources { list },
        added: fresh.len(),
        changed: changed.len(),
        kept: new.sources.len() - fresh.len() - changed.len(),
        removed,
    })
}

/// Closes `removed` once no request holds the old set any more (bounded by `wait`), on a
/// thread of its own.
fn close_removed(old: Arc<Live>, removed: Vec<Arc<Source>>, wait: Duration, bound: Duration) {
    if removed.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        let deadline = Instant::now() + wait;
        // `old` here plus one per request in flight on it.
        while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(old);
        for s in removed {
            let done = s.client.close(Some(bound));
            let stats = s.client.stats();
            tracing::info!(
                source = %s.name,
                all_delivered = matches!(done, Ok(true)),
                left_in_spool = stats.spooled,
                "source removed by reload: closed"
            );
        }
    });
}
