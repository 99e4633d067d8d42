//! `SIGHUP`: the config file is read again and, if it is sound, its sources and tokens
//! replace the running ones; a broken file is refused with the reason logged, and the
//! running config stays.
//!
//! The file's sources are handed to the registry (`sources/registry.rs`), which checks every
//! new or changed one with the core first (one refused: nothing changes) and applies the
//! rest live: a request loads the set once, so the requests in flight finish on the one
//! they started with; a source whose settings did not change keeps its client; a changed
//! one hands its client over to one with the new settings (nothing accepted lost, nothing
//! in flight sent twice, requests meanwhile wait instead of being refused); a removed one
//! stops taking events and drains what it accepted. The admin and metrics tokens are
//! swapped in [`Live`].
//!
//! The admin API's sources take the file's top level too: every setting they inherit (the
//! delivery settings, the network guard) applies to them at once, as to the file's sources;
//! the tokens of a file source that left the file are revoked.
//!
//! `listen`, `data_dir`, the limits, `tls_cert`/`tls_key`, `log_format`, `shutdown_timeout`,
//! `io_threads`, `memory_window`, `memory_window_bytes`, `spool_max_total_bytes` and `redis_ack` are read at start only: an applied reload
//! whose file differs from what the process runs with logs that the change needs a restart,
//! and otherwise ignores it; a refused reload says nothing of them.

use crate::config::Relay;
use crate::sources::registry::Registry;
use arc_swap::ArcSwap;
use std::path::PathBuf;
use std::sync::Arc;

/// What a reload replaces besides the sources: the tokens.
pub struct Live {
    pub admin_token: Option<String>,
    pub metrics_token: Option<String>,
}

/// What a reload changes: the sources, and the tokens.
#[derive(Clone)]
pub struct ReloadTarget {
    pub registry: Arc<Registry>,
    pub live: Arc<ArcSwap<Live>>,
    /// Called with each applied file: the admin API's sources take its top level too (the
    /// layer above gives it).
    pub applied: Arc<dyn Fn(&Relay) + Send + Sync>,
}

/// What the running relay was started or last reloaded with.
pub struct Reloader {
    /// The config file; none when the environment is the whole config.
    path: Option<PathBuf>,
    current: Relay,
    /// The settings read at start only, as this process runs them: each reload's file is
    /// compared with these, so a change undone by a later reload is no change.
    running: StartOnly,
}

/// The keys of relay.toml a reload does not apply (what [`StartOnly`] holds): docs/relay.md's
/// reference says so of each, checked by a test.
pub const START_ONLY_KEYS: [&str; 28] = [
    "listen",
    "data_dir",
    "max_connections",
    "max_header_bytes",
    "max_headers",
    "header_read_timeout",
    "request_timeout",
    "write_timeout",
    "tls_cert",
    "tls_key",
    "log_format",
    "shutdown_timeout",
    "trusted_proxies",
    "public_url",
    "io_threads",
    "memory_window",
    "memory_window_bytes",
    "spool_max_total_bytes",
    "redis_ack",
    "metrics_sources",
    "metrics_top_sources",
    "alert_url",
    "alert_secret",
    "alert_signature_scheme",
    "alert_dead_letters",
    "alert_waiting",
    "alert_spool_percent",
    "alert_interval",
];

/// The settings a reload cannot apply, each key of [`START_ONLY_KEYS`] with its value as
/// this process runs it (`log_format` given on the command line counts as unchanged).
#[derive(PartialEq)]
struct StartOnly(Vec<(&'static str, String)>);

impl StartOnly {
    fn of(r: &Relay, log_format_given: bool) -> StartOnly {
        let l = &r.limits;
        let value = |key: &str| -> String {
            match key {
                "listen" => r.listen.clone(),
                "data_dir" => format!("{:?}", r.data_dir),
                "max_connections" => l.max_connections.to_string(),
                "max_header_bytes" => l.max_header_bytes.to_string(),
                "max_headers" => l.max_headers.to_string(),
                "header_read_timeout" => format!("{:?}", l.header_read_timeout),
                "request_timeout" => format!("{:?}", l.request_timeout),
                "write_timeout" => format!("{:?}", l.write_timeout),
                "tls_cert" => format!("{:?}", r.tls.as_ref().map(|t| &t.cert)),
                "tls_key" => format!("{:?}", r.tls.as_ref().map(|t| &t.key)),
                "log_format" if log_format_given => String::new(),
                "log_format" => format!("{:?}", r.log_format),
                "shutdown_timeout" => format!("{:?}", r.shutdown_timeout),
                "trusted_proxies" => format!("{:?}", r.trusted_proxies),
                "public_url" => format!("{:?}", r.public_url),
                "io_threads" => r.io_threads.to_string(),
                "memory_window" => r.memory_window.to_string(),
                "memory_window_bytes" => r.memory_window_bytes.to_string(),
                "spool_max_total_bytes" => format!("{:?}", r.spool_max_total_bytes),
                "redis_ack" => format!("{:?}", r.redis_ack),
                "metrics_sources" => format!("{:?}", r.metrics_sources),
                "metrics_top_sources" => r.metrics_top_sources.to_string(),
                "alert_url" => format!("{:?}", r.alerts.as_ref().map(|a| &a.url)),
                // Compared, never shown: a log line names the key only.
                "alert_secret" => format!("{:?}", r.alerts.as_ref().map(|a| &a.secret)),
                "alert_signature_scheme" => format!("{:?}", r.alerts.as_ref().map(|a| a.scheme)),
                "alert_dead_letters" => format!("{:?}", r.alerts.as_ref().map(|a| a.dead_letters)),
                "alert_waiting" => format!("{:?}", r.alerts.as_ref().map(|a| a.waiting)),
                "alert_spool_percent" => {
                    format!("{:?}", r.alerts.as_ref().map(|a| a.spool_percent))
                }
                "alert_interval" => format!("{:?}", r.alerts.as_ref().map(|a| a.interval)),
                // Every key of the list has its arm (the reload tests go through each).
                other => format!("unknown start-only key {other}"),
            }
        };
        StartOnly(START_ONLY_KEYS.iter().map(|k| (*k, value(k))).collect())
    }
}

impl Reloader {
    /// `log_format_given`: the command line chose the log format, whatever the file says.
    pub fn new(path: Option<PathBuf>, current: Relay, log_format_given: bool) -> Reloader {
        let running = StartOnly::of(&current, log_format_given);
        Reloader {
            path,
            current,
            running,
        }
    }

    /// Waits for SIGHUPs (the stream is installed by the caller before the address is
    /// printed) and reloads at each; runs until the runtime stops.
    pub async fn run(self, state: ReloadTarget, mut hup: tokio::signal::unix::Signal) {
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
    pub fn reload(&mut self, state: &ReloadTarget) {
        let new = match Relay::load(self.path.as_deref()) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("config reload refused, the running config stays: {e}");
                return;
            }
        };
        match state.registry.set_file(&new) {
            Ok([added, changed, kept, removed]) => {
                state.live.store(Arc::new(Live {
                    admin_token: new.admin_token.clone(),
                    metrics_token: new.metrics_token.clone(),
                }));
                (state.applied)(&new);
                tracing::info!(added, changed, kept, removed, "config reloaded");
                self.warn_restart_only(&new);
                self.current = new;
            }
            Err(e) => tracing::error!("config reload refused, the running config stays: {e}"),
        }
    }

    /// Logs each start-only setting of the applied file that differs from the running one.
    fn warn_restart_only(&self, new: &Relay) {
        let given = self
            .running
            .0
            .iter()
            .any(|(k, v)| *k == "log_format" && v.is_empty());
        let file = StartOnly::of(new, given);
        let changed = (self.running.0.iter().zip(&file.0)).filter(|(run, now)| run.1 != now.1);
        for ((key, _), _) in changed {
            tracing::warn!(
                "{}: {key} changed: it takes effect at the next start",
                new.file
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every start-only key is compared by its own arm.
    #[test]
    fn every_start_only_key_has_its_arm() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("relay.toml");
        std::fs::write(
            &path,
            "listen = \"127.0.0.1:0\"\nadmin_token = \"a\"\nalert_url = \"http://127.0.0.1:9/\"\n\
             alert_secret = \"s\"\nalert_signature_scheme = \"x-signature\"\n",
        )
        .unwrap();
        let relay = Relay::load(Some(&path)).unwrap();
        let running = StartOnly::of(&relay, false);
        assert_eq!(running.0.len(), START_ONLY_KEYS.len());
        for (key, value) in &running.0 {
            assert!(!value.starts_with("unknown start-only key"), "{key}");
        }
    }
}
