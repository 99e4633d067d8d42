//! Runtime logs, off unless asked for (`debug`, or `DEBUG` containing `analytics` or `*`).
//! Secrets never reach a log line: nothing here is given the write key or the shared secret.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Severity of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Progress: batches sent, retries scheduled.
    Debug,
    /// Something the user should know: a message failed, the queue was full.
    Warn,
}

impl Level {
    /// `"debug"` or `"warn"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Warn => "warn",
        }
    }
}

/// Where log lines go; stderr when none is given. Bindings forward them (Python `logging`).
pub type LogSink = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// True when the `DEBUG` environment variable asks for our logs.
pub fn env_enabled() -> bool {
    std::env::var("DEBUG").is_ok_and(|v| v.contains("analytics") || v.contains('*'))
}

/// A URL as logs show it unless `log_url_paths` is set: its scheme, host and port; anything
/// after them (a path, a query string, a fragment) is replaced by `/…`, since each can carry
/// a token (Slack's incoming webhooks keep theirs in the path). Credentials before the host
/// (`user:password@`) are never shown.
pub(crate) fn redact_url(url: &str) -> String {
    url_for_log(url, false)
}

/// `url` as a log line may show it: never its `user:password@`; its path, query and fragment
/// only when `whole` (a service's `log_url_paths`), else `/…` in their place. Every URL a
/// service logs goes through this one function.
pub fn url_for_log(url: &str, whole: bool) -> String {
    let start = url.find("://").map_or(0, |at| at + 3);
    let rest = &url[start..];
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    // The last '@' before the path ends the credentials (a password may hold an '@').
    let host_start = rest[..host_end].rfind('@').map_or(0, |at| at + 1);
    let (scheme, host, tail) = (
        &url[..start],
        &rest[host_start..host_end],
        &rest[host_end..],
    );
    match tail {
        "" | "/" => format!("{scheme}{host}{tail}"),
        _ if whole => format!("{scheme}{host}{tail}"),
        _ => format!("{scheme}{host}/…"),
    }
}

/// The shortest time between two lines of one kind about one destination
/// ([`Logger::log_every`]).
pub(crate) const EVERY: Duration = Duration::from_secs(10);

/// When each kind of line last went out, and how many were held back since.
type Held = HashMap<String, (Instant, u64)>;

#[derive(Clone)]
pub(crate) struct Logger {
    enabled: bool,
    sink: Option<LogSink>,
    held: Arc<Mutex<Held>>,
    /// The sink runs holding this lock, and not once `stop` set the flag: after a client
    /// is closed no thread of it calls the sink (a C caller may free its `userdata`).
    stopped: Arc<(Mutex<()>, AtomicBool)>,
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Logger {{ enabled: {} }}", self.enabled)
    }
}

impl Logger {
    pub(crate) fn new(debug: Option<bool>, sink: Option<LogSink>) -> Self {
        Logger {
            enabled: debug.unwrap_or_else(env_enabled),
            sink,
            held: Arc::default(),
            stopped: Arc::default(),
        }
    }

    /// As [`log`](Self::log), at most once every [`EVERY`] per `kind` (a destination and
    /// what happened to it): a receiver refusing every message would otherwise write a line
    /// per message. The next line says how many were held back; the outcomes and counters
    /// have every one.
    pub(crate) fn log_every(&self, level: Level, kind: &str, f: impl FnOnce() -> String) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let held_back = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            match held.get_mut(kind) {
                Some((at, n)) if now.duration_since(*at) < EVERY => {
                    *n += 1;
                    return;
                }
                Some((at, n)) => {
                    *at = now;
                    std::mem::take(n)
                }
                None => {
                    // Bounded by the destinations a client has, times the kinds of line.
                    held.insert(kind.to_string(), (now, 0));
                    0
                }
            }
        };
        self.log(level, || match held_back {
            0 => f(),
            n => format!("{} ({n} more like it held back)", f()),
        });
    }

    /// Logs the line `f` makes; `f` runs only when logging is on.
    pub(crate) fn log(&self, level: Level, f: impl FnOnce() -> String) {
        if !self.enabled {
            return;
        }
        let line = f();
        match &self.sink {
            Some(sink) => {
                let _gate = self.stopped.0.lock().unwrap_or_else(|e| e.into_inner());
                if !self.stopped.1.load(SeqCst) {
                    sink(level, &line);
                }
            }
            None => eprintln!("outbound {}: {line}", level.as_str()),
        }
    }

    /// No sink call after this returns (it waits for one under way).
    pub(crate) fn stop(&self) {
        let _gate = self.stopped.0.lock().unwrap_or_else(|e| e.into_inner());
        self.stopped.1.store(true, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_of_a_kind_every_ten_seconds_then_the_count_held_back() {
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let got = lines.clone();
        let sink: LogSink = Arc::new(move |_, line: &str| got.lock().unwrap().push(line.into()));
        let logger = Logger::new(Some(true), Some(sink));
        for i in 0..2000 {
            logger.log_every(Level::Warn, "webhooks[0]:permanent", || {
                format!("failed {i}")
            });
        }
        logger.log_every(Level::Warn, "webhooks[1]:permanent", || "other".into());
        assert_eq!(*lines.lock().unwrap(), ["failed 0", "other"]);
        // A window later: the next line says how many were left out.
        let past = Instant::now() - EVERY - Duration::from_millis(1);
        for entry in logger.held.lock().unwrap().values_mut() {
            entry.0 = past;
        }
        logger.log_every(Level::Warn, "webhooks[0]:permanent", || {
            "failed 2000".into()
        });
        assert_eq!(
            lines.lock().unwrap().last().unwrap(),
            "failed 2000 (1999 more like it held back)"
        );
    }

    #[test]
    fn urls_in_logs_keep_only_their_scheme_host_and_port() {
        for (url, shown) in [
            (
                "https://h.example/in?token=s3cret&x=1",
                "https://h.example/…",
            ),
            ("https://h.example/in#k=v", "https://h.example/…"),
            ("https://h.example?token=s3cret", "https://h.example/…"),
            (
                "https://hooks.slack.com/services/T0/B0/XXXXXXXXXXXXXXXXXXXXXXXX",
                "https://hooks.slack.com/…",
            ),
            ("http://127.0.0.1:9/hook", "http://127.0.0.1:9/…"),
            ("http://[::1]:9/a/b", "http://[::1]:9/…"),
            ("https://h.example/", "https://h.example/"),
            ("https://h.example", "https://h.example"),
            (
                "https://user:pa@ss@h.example:8443/in",
                "https://h.example:8443/…",
            ),
            ("http://user@h.example", "http://h.example"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        assert_eq!(
            url_for_log("https://u:p@h.example/in?q=1", true),
            "https://h.example/in?q=1"
        );
    }
}
