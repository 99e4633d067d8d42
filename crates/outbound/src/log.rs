//! Runtime logs, off unless asked for (`debug`, or `DEBUG` containing `analytics` or `*`).
//! Secrets never reach a log line: nothing here is given the write key or the shared secret.

use std::fmt;
use std::sync::Arc;

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

#[derive(Clone)]
pub(crate) struct Logger {
    enabled: bool,
    sink: Option<LogSink>,
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
        }
    }

    /// Logs the line `f` makes; `f` runs only when logging is on.
    pub(crate) fn log(&self, level: Level, f: impl FnOnce() -> String) {
        if !self.enabled {
            return;
        }
        let line = f();
        match &self.sink {
            Some(sink) => sink(level, &line),
            None => eprintln!("outbound {}: {line}", level.as_str()),
        }
    }
}
