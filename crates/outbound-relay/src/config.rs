//! `relay.toml`: its shape (serde, unknown keys refused), and its conversion into one core
//! [`outbound::Config`] per source. The relay checks only what is its own (the TOML shape,
//! source names and write keys, durations as numbers of seconds); every delivery setting is
//! checked by the core when the source's `Client` is built, and its error is reported here
//! under the key it came from (`relay.toml: sources[1].webhooks[0].url: ...`).
//!
//! Issue 25's settings are top-level keys beside these (`max_connections`,
//! `max_header_bytes`, `max_headers`, `header_read_timeout`, `request_timeout`, `tls_cert`,
//! `tls_key`, `metrics_token`, `log_format`); see docs/relay.md for their defaults.

use outbound::{Config as CoreConfig, RetryPolicy, SignatureScheme, Webhook};
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A config error: the file, the key and what is wrong.
#[derive(Debug)]
pub struct ConfigError {
    pub file: String,
    pub key: String,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.reason)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

/// The relay's group commit interval unless set (seconds): an acknowledgement waits for the
/// next commit, so the core's 20 ms would be most of a single event's answer time. Under
/// load the writer's own transaction and the fsync gather the requests that arrive
/// meanwhile, so the interval only needs to be short: 32 connections sending one event a
/// request got 1.27× the acknowledgements per second at 0.2 ms as at 1 ms, and 1.06× again
/// at 0.05 ms, with batches of 100 at the same rate and 6 % more bytes written to the disk
/// per event (medians of alternating runs; bench/log/2026-11.md, "Issue 25, stop 36" and "stop
/// 37"). A busy source fsyncs at most once per fsync's duration (one covers every commit
/// before it began).
pub const DEFAULT_COMMIT_INTERVAL: f64 = 0.00005;

/// The `spool` setting: on (SQLite under `data_dir`), off, or a Redis URL.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Spool {
    /// `true`: SQLite files under `data_dir/spool/<source>`; `false`: memory only.
    On(bool),
    /// `redis://host:port/db?prefix=P` (`rediss://` for TLS): a Redis shared by a fleet.
    Redis(String),
}

/// The Redis key prefix of the relay's sources when the URL names none.
pub const DEFAULT_REDIS_PREFIX: &str = "outbound-relay";

/// Source `name`'s spool on the Redis at `url`: the URL's `prefix` (or
/// [`DEFAULT_REDIS_PREFIX`]) followed by `:<name>`, so every relay of a fleet files a source's
/// events under the same keys and takes over its dead siblings' (the core takes over only
/// within one prefix), and sources never mix.
pub fn source_redis_url(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut prefix = DEFAULT_REDIS_PREFIX.to_string();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("prefix=") {
            Some(p) => prefix = p.to_string(),
            None => rest.push(pair),
        }
    }
    let own = format!("prefix={prefix}:{name}");
    rest.push(&own);
    format!("{base}?{}", rest.join("&"))
}

/// True when the source's spool is a Redis (not a directory under `data_dir`).
pub fn is_redis(core: &CoreConfig) -> bool {
    core.spool.as_ref().is_some_and(|p| {
        let p = p.to_string_lossy();
        p.starts_with("redis://") || p.starts_with("rediss://")
    })
}

/// A number of seconds (`5`, `0.5`), as every duration in the file is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seconds(pub f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Num {
            I(i64),
            F(f64),
        }
        match Num::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected a number of seconds (e.g. 5 or 0.25)")
        })? {
            Num::I(i) => Ok(Seconds(i as f64)),
            Num::F(f) => Ok(Seconds(f)),
        }
    }
}

impl Seconds {
    fn duration(self, key: &str) -> Result<Duration, (String, String)> {
        Duration::try_from_secs_f64(self.0).map_err(|_| {
            (
                key.to_string(),
                format!("{} is not a number of seconds of 0 or more", self.0),
            )
        })
    }
}

/// Defines the top-level and per-source structs with the delivery settings of the core's
/// `Config` in both (serde's `flatten` cannot be combined with `deny_unknown_fields`).
macro_rules! with_delivery {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
            /// Bound on one whole HTTP exchange, seconds (core `timeout`).
            #[serde(default)]
            pub timeout: Option<Seconds>,
            /// How long a message is retried after its first attempt, seconds.
            #[serde(default)]
            pub max_retry_duration: Option<Seconds>,
            /// Largest backoff between attempts, seconds.
            #[serde(default)]
            pub max_backoff: Option<Seconds>,
            /// Largest `Retry-After` honoured, seconds.
            #[serde(default)]
            pub max_retry_after: Option<Seconds>,
            /// Most requests in flight to each destination.
            #[serde(default)]
            pub max_in_flight: Option<usize>,
            /// Delivery threads each destination keeps ready.
            #[serde(default)]
            pub workers: Option<usize>,
            /// `"x-signature"` (default) or `"standard-webhooks"`.
            #[serde(default)]
            pub signature_scheme: Option<String>,
            /// `User-Agent` of webhook requests.
            #[serde(default)]
            pub webhook_user_agent: Option<String>,
            /// Gzip the forward's batches.
            #[serde(default)]
            pub gzip: Option<bool>,
            /// Forward batches close at this many messages, the most one request carries...
            #[serde(default)]
            pub flush_at: Option<usize>,
            /// ...unless this is set higher: waiting batches then join up to it (core
            /// `max_batch_messages`).
            #[serde(default)]
            pub max_batch_messages: Option<usize>,
            /// ... or this long after their first message, seconds.
            #[serde(default)]
            pub flush_interval: Option<Seconds>,
            /// Most messages held in memory per source, including those waiting to retry.
            #[serde(default)]
            pub max_queue_size: Option<usize>,
            /// How long a request that finds its source's queue (or spool) full waits for
            /// room before it is answered 429, seconds (default 0: at once).
            #[serde(default)]
            pub queue_full_wait: Option<Seconds>,
            /// Extra trusted roots: PEM text or the path of a PEM file.
            #[serde(default)]
            pub ca_certs: Option<String>,
            /// Use `HTTP(S)_PROXY` from the environment.
            #[serde(default)]
            pub proxy_from_env: Option<bool>,
            /// Where accepted events wait for their outcome: `true` (default: SQLite files
            /// under `data_dir/spool/<source>`), `false` (memory only: a 200 means accepted
            /// in memory), or a `redis://` / `rediss://` URL (Redis Streams shared by a fleet
            /// of relays; each source's keys go under `<prefix>:<source>`).
            #[serde(default)]
            pub spool: Option<Spool>,
            /// Bytes each source's spool may hold.
            #[serde(default)]
            pub spool_max_bytes: Option<u64>,
            /// The group commit interval, seconds. The relay's default is 0.00005 (the core's
            /// is 0.02): every acknowledgement waits for the next commit.
            #[serde(default)]
            pub spool_commit_interval: Option<Seconds>,
            /// The core's own log lines (failures as warnings, progress as debug), to stderr
            /// through `tracing` (default true).
            #[serde(default)]
            pub debug: Option<bool>,
            /// Keep messages whose webhook delivery failed for good, to list and replay
            /// (default true with a spool; they live in it).
            #[serde(default)]
            pub dead_letters: Option<bool>,
            /// How long a dead letter is kept, seconds (default 14 days).
            #[serde(default)]
            pub dead_letter_retention: Option<Seconds>,
            /// Bytes of dead letters each source keeps at most (default 256 MiB).
            #[serde(default)]
            pub dead_letter_max_bytes: Option<u64>,
        }

        impl $name {
            fn delivery(&self) -> Delivery {
                Delivery {
                    timeout: self.timeout,
                    max_retry_duration: self.max_retry_duration,
                    max_backoff: self.max_backoff,
                    max_retry_after: self.max_retry_after,
                    max_in_flight: self.max_in_flight,
                    workers: self.workers,
                    signature_scheme: self.signature_scheme.clone(),
                    webhook_user_agent: self.webhook_user_agent.clone(),
                    gzip: self.gzip,
                    flush_at: self.flush_at,
                    max_batch_messages: self.max_batch_messages,
                    flush_interval: self.flush_interval,
                    max_queue_size: self.max_queue_size,
                    queue_full_wait: self.queue_full_wait,
                    ca_certs: self.ca_certs.clone(),
                    proxy_from_env: self.proxy_from_env,
                    spool: self.spool.clone(),
                    spool_max_bytes: self.spool_max_bytes,
                    spool_commit_interval: self.spool_commit_interval,
                    debug: self.debug,
                    dead_letters: self.dead_letters,
                    dead_letter_retention: self.dead_letter_retention,
                    dead_letter_max_bytes: self.dead_letter_max_bytes,
                }
            }
        }
    };
}

/// The delivery settings, as given at one level (unset: the level above decides).
#[derive(Clone, Debug, Default)]
struct Delivery {
    timeout: Option<Seconds>,
    max_retry_duration: Option<Seconds>,
    max_backoff: Option<Seconds>,
    max_retry_after: Option<Seconds>,
    max_in_flight: Option<usize>,
    workers: Option<usize>,
    signature_scheme: Option<String>,
    webhook_user_agent: Option<String>,
    gzip: Option<bool>,
    flush_at: Option<usize>,
    max_batch_messages: Option<usize>,
    flush_interval: Option<Seconds>,
    max_queue_size: Option<usize>,
    queue_full_wait: Option<Seconds>,
    ca_certs: Option<String>,
    proxy_from_env: Option<bool>,
    spool: Option<Spool>,
    spool_max_bytes: Option<u64>,
    spool_commit_interval: Option<Seconds>,
    debug: Option<bool>,
    dead_letters: Option<bool>,
    dead_letter_retention: Option<Seconds>,
    dead_letter_max_bytes: Option<u64>,
}

impl Delivery {
    /// The keys set at this level.
    fn keys(&self) -> Vec<&'static str> {
        let d = self;
        let set: [(&'static str, bool); 23] = [
            ("timeout", d.timeout.is_some()),
            ("max_retry_duration", d.max_retry_duration.is_some()),
            ("max_backoff", d.max_backoff.is_some()),
            ("max_retry_after", d.max_retry_after.is_some()),
            ("max_in_flight", d.max_in_flight.is_some()),
            ("workers", d.workers.is_some()),
            ("signature_scheme", d.signature_scheme.is_some()),
            ("webhook_user_agent", d.webhook_user_agent.is_some()),
            ("gzip", d.gzip.is_some()),
            ("flush_at", d.flush_at.is_some()),
            ("max_batch_messages", d.max_batch_messages.is_some()),
            ("flush_interval", d.flush_interval.is_some()),
            ("max_queue_size", d.max_queue_size.is_some()),
            ("queue_full_wait", d.queue_full_wait.is_some()),
            ("ca_certs", d.ca_certs.is_some()),
            ("proxy_from_env", d.proxy_from_env.is_some()),
            ("spool", d.spool.is_some()),
            ("spool_max_bytes", d.spool_max_bytes.is_some()),
            ("spool_commit_interval", d.spool_commit_interval.is_some()),
            ("debug", d.debug.is_some()),
            ("dead_letters", d.dead_letters.is_some()),
            ("dead_letter_retention", d.dead_letter_retention.is_some()),
            ("dead_letter_max_bytes", d.dead_letter_max_bytes.is_some()),
        ];
        set.into_iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| k)
            .collect()
    }

    /// `self` where set, `base` otherwise.
    fn over(self, base: &Delivery) -> Delivery {
        macro_rules! pick {
            ($($f:ident),*) => { Delivery { $($f: self.$f.or_else(|| base.$f.clone()),)* } };
        }
        pick!(
            timeout,
            max_retry_duration,
            max_backoff,
            max_retry_after,
            max_in_flight,
            workers,
            signature_scheme,
            webhook_user_agent,
            gzip,
            flush_at,
            max_batch_messages,
            flush_interval,
            max_queue_size,
            queue_full_wait,
            ca_certs,
            proxy_from_env,
            spool,
            spool_max_bytes,
            spool_commit_interval,
            debug,
            dead_letters,
            dead_letter_retention,
            dead_letter_max_bytes
        )
    }
}

with_delivery! {
    /// The whole file.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct File {
        /// `host:port` of the tracking and admin API (`127.0.0.1:0`: any free port).
        pub listen: String,
        /// The spool and audience state (relative paths are relative to the file).
        #[serde(default = "default_data_dir")]
        pub data_dir: PathBuf,
        /// Enables the admin API.
        #[serde(default)]
        pub admin_token: Option<String>,
        /// Webhook URLs come from customers: refuse private addresses (default true).
        #[serde(default = "yes")]
        pub block_private_networks: bool,
        /// Exempt networks (CIDR).
        #[serde(default)]
        pub allowed_networks: Vec<String>,
        /// How long shutdown waits for requests in flight, seconds (default 10).
        #[serde(default)]
        pub shutdown_timeout: Option<Seconds>,
        /// Then how long each client may go on delivering before the rest is left in its
        /// spool for the next start, seconds (default 2).
        #[serde(default)]
        pub close_timeout: Option<Seconds>,
        /// Most client connections open at once; more wait in the listen backlog
        /// (default 10000).
        #[serde(default)]
        pub max_connections: Option<usize>,
        /// Largest request head (request line and headers), bytes; over it: 431
        /// (default 16384, 1024 to 1048576).
        #[serde(default)]
        pub max_header_bytes: Option<usize>,
        /// Most header fields of a request; over it: 431 (default 100).
        #[serde(default)]
        pub max_headers: Option<usize>,
        /// A client must send the whole request head within this, seconds; else the
        /// connection is closed (default 10).
        #[serde(default)]
        pub header_read_timeout: Option<Seconds>,
        /// A request (its body read, its events committed) must be answered within this,
        /// seconds; else 408 and the connection is closed (default 30).
        #[serde(default)]
        pub request_timeout: Option<Seconds>,
        /// HTTPS: the certificate chain (PEM file); with `tls_key`.
        #[serde(default)]
        pub tls_cert: Option<PathBuf>,
        /// HTTPS: the private key (PEM file); with `tls_cert`.
        #[serde(default)]
        pub tls_key: Option<PathBuf>,
        /// A token for `GET /metrics` only (Prometheus' `authorization`); the admin token
        /// also works. Neither set: `/metrics` is off.
        #[serde(default)]
        pub metrics_token: Option<String>,
        /// `"text"` (default) or `"json"` (one JSON object a line); `--log-format` wins.
        #[serde(default)]
        pub log_format: Option<String>,
        /// The sources.
        #[serde(default)]
        pub sources: Vec<SourceFile>,
    }
}

with_delivery! {
    /// One `[[sources]]` table.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct SourceFile {
        /// Letters, digits, `-` and `_` (it names the spool and state files).
        pub name: String,
        /// One or more; several for rotation.
        pub write_keys: Vec<String>,
        /// Signs webhook requests.
        #[serde(default)]
        pub shared_secret: Option<String>,
        /// Browser origins allowed (CORS); `"*"` allows any.
        #[serde(default)]
        pub allowed_origins: Vec<String>,
        /// 1 to 5 (the core checks).
        #[serde(default)]
        pub webhooks: Vec<WebhookFile>,
        /// Also forward to a Segment-compatible endpoint.
        #[serde(default)]
        pub forward: Option<ForwardFile>,
    }
}

/// One `[[sources.webhooks]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookFile {
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// `[sources.forward]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardFile {
    #[serde(default)]
    pub endpoint: Option<String>,
    pub write_key: String,
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("outbound-relay-data")
}

fn yes() -> bool {
    true
}

/// One source, ready to start.
pub struct Source {
    pub name: String,
    pub write_keys: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// Where errors of this source's core config are reported (`sources[1]`).
    pub key: String,
    /// The delivery keys this source sets itself (the rest come from the top level).
    pub own_keys: Vec<&'static str>,
    pub core: CoreConfig,
    /// Everything its client is built from (its table, the top-level delivery settings,
    /// the network rules, `data_dir`): a reload keeps the running client when unchanged.
    pub fingerprint: String,
}

/// How logs are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    pub fn parse(s: &str) -> Option<LogFormat> {
        match s {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// The listener's limits (read at start; a reload does not change them).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    pub max_connections: usize,
    pub max_header_bytes: usize,
    pub max_headers: usize,
    pub header_read_timeout: Duration,
    pub request_timeout: Duration,
}

/// `tls_cert` and `tls_key`, resolved against the file's directory.
#[derive(Clone, Debug, PartialEq)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The loaded config.
pub struct Relay {
    /// The file as named on the command line (for messages).
    pub file: String,
    pub listen: String,
    pub data_dir: PathBuf,
    pub admin_token: Option<String>,
    pub shutdown_timeout: Duration,
    pub close_timeout: Duration,
    pub limits: Limits,
    pub tls: Option<Tls>,
    pub metrics_token: Option<String>,
    pub log_format: LogFormat,
    pub sources: Vec<Source>,
}

impl Relay {
    /// Reads and checks `path`; every error names the file and the key.
    pub fn load(path: &Path) -> Result<Relay, ConfigError> {
        let file = path.display().to_string();
        let err = |key: &str, reason: String| ConfigError {
            file: file.clone(),
            key: key.to_string(),
            reason,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err("", format!("cannot read: {e}")))?;
        let parsed: File = toml::from_str(&text).map_err(|e| toml_error(&file, &text, e))?;
        let base_dir = path.parent().unwrap_or(Path::new("."));
        Relay::from_file(parsed, &file, base_dir)
    }

    fn from_file(f: File, file: &str, base_dir: &Path) -> Result<Relay, ConfigError> {
        let err = |key: String, reason: String| ConfigError {
            file: file.to_string(),
            key,
            reason,
        };
        let data_dir = if f.data_dir.is_absolute() {
            f.data_dir.clone()
        } else {
            base_dir.join(&f.data_dir)
        };
        if f.admin_token.as_deref() == Some("") {
            return Err(err(
                "admin_token".into(),
                "must not be empty (leave it out to turn the admin API off)".into(),
            ));
        }
        if f.sources.is_empty() {
            return Err(err(
                "sources".into(),
                "at least one [[sources]] is needed".into(),
            ));
        }
        let shutdown_timeout = f
            .shutdown_timeout
            .unwrap_or(Seconds(10.0))
            .duration("shutdown_timeout")
            .map_err(|(k, r)| err(k, r))?;
        let close_timeout = f
            .close_timeout
            .unwrap_or(Seconds(2.0))
            .duration("close_timeout")
            .map_err(|(k, r)| err(k, r))?;
        let limits = limits(&f).map_err(|(k, r)| err(k, r))?;
        let tls = match (&f.tls_cert, &f.tls_key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(Tls {
                cert: base_dir.join(cert),
                key: base_dir.join(key),
            }),
            (Some(_), None) => {
                return Err(err(
                    "tls_key".into(),
                    "is needed with tls_cert (both or neither)".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(err(
                    "tls_cert".into(),
                    "is needed with tls_key (both or neither)".into(),
                ))
            }
        };
        if f.metrics_token.as_deref() == Some("") {
            return Err(err(
                "metrics_token".into(),
                "must not be empty (leave it out to use the admin token)".into(),
            ));
        }
        let log_format = match f.log_format.as_deref() {
            None => LogFormat::Text,
            Some(v) => LogFormat::parse(v).ok_or_else(|| {
                err(
                    "log_format".into(),
                    format!("{v:?} is not \"text\" or \"json\""),
                )
            })?,
        };
        let top = f.delivery();
        let mut names = HashMap::new();
        let mut keys: HashMap<&str, String> = HashMap::new();
        let mut sources = Vec::new();
        for (i, s) in f.sources.iter().enumerate() {
            let at = format!("sources[{i}]");
            if s.name.is_empty()
                || !s
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(err(
                    format!("{at}.name"),
                    format!("{:?} must be letters, digits, '-' or '_'", s.name),
                ));
            }
            if let Some(first) = names.insert(s.name.as_str(), i) {
                return Err(err(
                    format!("{at}.name"),
                    format!("{:?} is already the name of sources[{first}]", s.name),
                ));
            }
            if s.write_keys.is_empty() {
                return Err(err(
                    format!("{at}.write_keys"),
                    "at least one write key is needed".into(),
                ));
            }
            for (k, key) in s.write_keys.iter().enumerate() {
                if key.is_empty() {
                    return Err(err(
                        format!("{at}.write_keys[{k}]"),
                        "must not be empty".into(),
                    ));
                }
                if let Some(owner) = keys.insert(key.as_str(), s.name.clone()) {
                    return Err(err(
                        format!("{at}.write_keys[{k}]"),
                        format!("this write key is already a key of source {owner:?}"),
                    ));
                }
            }
            let own = s.delivery().keys();
            let core = core_config(s, &f, &top, &data_dir).map_err(|(k, r)| {
                // A value from the top level is reported there.
                let key = match own.iter().any(|o| *o == k) {
                    true => format!("{at}.{k}"),
                    false => k,
                };
                err(key, r)
            })?;
            sources.push(Source {
                name: s.name.clone(),
                write_keys: s.write_keys.clone(),
                allowed_origins: s.allowed_origins.clone(),
                key: at,
                own_keys: own,
                core,
                fingerprint: format!(
                    "{s:?}|{top:?}|{}|{:?}|{}",
                    f.block_private_networks,
                    f.allowed_networks,
                    data_dir.display()
                ),
            });
        }
        Ok(Relay {
            file: file.to_string(),
            listen: f.listen,
            data_dir,
            admin_token: f.admin_token,
            shutdown_timeout,
            close_timeout,
            limits,
            tls,
            metrics_token: f.metrics_token,
            log_format,
            sources,
        })
    }

    /// The file and key of a core config error of source `i`
    /// (`relay.toml: sources[1].webhooks[0].url: ...`): the source's own key, or the top
    /// level's when the value came from there.
    pub fn core_error(&self, i: usize, e: outbound::Error) -> ConfigError {
        let source = &self.sources[i];
        let at = &source.key;
        let (key, reason) = match e {
            outbound::Error::Config { setting, reason } => {
                let key = match setting.as_str() {
                    // The forward's settings are the core's ingestion settings.
                    "write_key" => format!("{at}.forward.write_key"),
                    "endpoint" => format!("{at}.forward.endpoint"),
                    "write_key/webhooks" => format!("{at}.webhooks"),
                    // The spool is data_dir's unless a Redis URL was set.
                    "spool" if is_redis(&source.core) => match source.own_keys.contains(&"spool") {
                        true => format!("{at}.spool"),
                        false => "spool".to_string(),
                    },
                    "spool" => "data_dir".to_string(),
                    "allowed_networks" => setting,
                    "shared_secret" => format!("{at}.shared_secret"),
                    s if s.starts_with("webhooks") => format!("{at}.{s}"),
                    s if source.own_keys.contains(&s) => format!("{at}.{s}"),
                    // A delivery setting the source did not set came from the top level.
                    _ => setting,
                };
                (key, reason)
            }
            outbound::Error::Spool { path, reason } => {
                ("data_dir".to_string(), format!("spool {path}: {reason}"))
            }
            other => (at.clone(), other.to_string()),
        };
        ConfigError {
            file: self.file.clone(),
            key,
            reason,
        }
    }
}

/// The listener's limits, checked.
fn limits(f: &File) -> Result<Limits, (String, String)> {
    let positive = |key: &str, v: Option<usize>, default: usize| match v {
        Some(0) => Err((key.to_string(), "must be at least 1".to_string())),
        Some(n) => Ok(n),
        None => Ok(default),
    };
    let max_header_bytes = f.max_header_bytes.unwrap_or(16_384);
    if !(1_024..=1_048_576).contains(&max_header_bytes) {
        return Err((
            "max_header_bytes".into(),
            format!("{max_header_bytes} is not between 1024 and 1048576"),
        ));
    }
    let timeout = |key: &str, v: Option<Seconds>, default: f64| {
        let d = v.unwrap_or(Seconds(default)).duration(key)?;
        if d.is_zero() {
            return Err((key.to_string(), "must be more than 0".to_string()));
        }
        Ok(d)
    };
    Ok(Limits {
        max_connections: positive("max_connections", f.max_connections, 10_000)?,
        max_header_bytes,
        max_headers: positive("max_headers", f.max_headers, 100)?,
        header_read_timeout: timeout("header_read_timeout", f.header_read_timeout, 10.0)?,
        request_timeout: timeout("request_timeout", f.request_timeout, 30.0)?,
    })
}

/// The core's config for source `s`: its own settings over the top level's over the core's
/// defaults.
fn core_config(
    s: &SourceFile,
    f: &File,
    top: &Delivery,
    data_dir: &Path,
) -> Result<CoreConfig, (String, String)> {
    let d = s.delivery().over(top);
    let mut c = CoreConfig {
        webhooks: s
            .webhooks
            .iter()
            .map(|w| Webhook {
                url: w.url.clone(),
                headers: w
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            })
            .collect(),
        shared_secret: s.shared_secret.clone(),
        block_private_networks: f.block_private_networks,
        allowed_networks: f.allowed_networks.clone(),
        ..CoreConfig::default()
    };
    if let Some(fw) = &s.forward {
        c.write_key = Some(fw.write_key.clone());
        if let Some(endpoint) = &fw.endpoint {
            c.endpoint = endpoint.clone();
        }
    }
    let mut retry = RetryPolicy::default();
    if let Some(v) = d.timeout {
        c.timeout = v.duration("timeout")?;
    }
    if let Some(v) = d.max_retry_duration {
        retry.max_retry_duration = v.duration("max_retry_duration")?;
    }
    if let Some(v) = d.max_backoff {
        retry.max_backoff = v.duration("max_backoff")?;
    }
    if let Some(v) = d.max_retry_after {
        retry.max_retry_after = v.duration("max_retry_after")?;
    }
    c.retry = retry;
    if let Some(v) = d.max_in_flight {
        c.max_in_flight = v;
    }
    if let Some(v) = d.workers {
        c.workers = v;
    }
    if let Some(v) = &d.signature_scheme {
        c.signature_scheme = SignatureScheme::parse(v).map_err(|e| match e {
            outbound::Error::Config { setting, reason } => (setting, reason),
            other => ("signature_scheme".into(), other.to_string()),
        })?;
    }
    if let Some(v) = &d.webhook_user_agent {
        c.webhook_user_agent = v.clone();
    }
    if let Some(v) = d.gzip {
        c.gzip = v;
    }
    if let Some(v) = d.flush_at {
        c.flush_at = v;
    }
    c.max_batch_messages = d.max_batch_messages;
    if let Some(v) = d.flush_interval {
        c.flush_interval = v.duration("flush_interval")?;
    }
    if let Some(v) = d.max_queue_size {
        c.max_queue_size = v;
    }
    if let Some(v) = d.queue_full_wait {
        c.queue_full_wait = v.duration("queue_full_wait")?;
    }
    // A request waiting for room must not hold a runtime thread: its other tasks move off.
    c.room_wait = Some(Arc::new(|wait: &mut (dyn FnMut() -> bool + Send)| {
        tokio::task::block_in_place(wait)
    }));
    c.ca_certs = d.ca_certs.clone();
    if let Some(v) = d.proxy_from_env {
        c.proxy_from_env = v;
    }
    c.spool = match &d.spool {
        None | Some(Spool::On(true)) => Some(data_dir.join("spool").join(&s.name)),
        Some(Spool::On(false)) => None,
        Some(Spool::Redis(url)) => Some(PathBuf::from(source_redis_url(url, &s.name))),
    };
    if let Some(v) = d.spool_max_bytes {
        c.spool_max_bytes = v;
    }
    c.spool_commit_interval = d
        .spool_commit_interval
        .unwrap_or(Seconds(DEFAULT_COMMIT_INTERVAL))
        .duration("spool_commit_interval")?;
    c.debug = Some(d.debug.unwrap_or(true));
    // On wherever there is a spool to keep them in.
    c.dead_letters = d.dead_letters.unwrap_or(c.spool.is_some());
    if let Some(v) = d.dead_letter_retention {
        c.dead_letter_retention = v.duration("dead_letter_retention")?;
    }
    if let Some(v) = d.dead_letter_max_bytes {
        c.dead_letter_max_bytes = v;
    }
    Ok(c)
}

/// toml's error as `file: key: reason`, the key found from where the error is (the tables
/// above it and the key on its line): `relay.toml: sources[1].webhooks[0].url: ...`.
fn toml_error(file: &str, text: &str, e: toml::de::Error) -> ConfigError {
    let reason = e.message().trim().to_string();
    let key = e
        .span()
        .map(|span| key_at(text, span.start.min(text.len())))
        .unwrap_or_default();
    ConfigError {
        file: file.to_string(),
        key,
        reason,
    }
}

/// The dotted key path at byte `at` of `text`, with array-of-tables indices.
fn key_at(text: &str, mut at: usize) -> String {
    // A span starts at a character; be sure, since slicing inside one would panic.
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let here = line.trim();
    // A header's own line counts (a missing key is reported at its table).
    let scanned = if here.starts_with('[') {
        &text[..line_start + line.len()]
    } else {
        &text[..line_start]
    };
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut table = String::new();
    for line in scanned.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            // A new element of an array of tables resets the arrays nested in it.
            counts.retain(|k, _| !k.starts_with(&format!("{name}.")));
            counts
                .entry(name.clone())
                .and_modify(|n| *n += 1)
                .or_insert(0);
            table = name;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            table = name.trim().to_string();
        }
    }
    // `sources.webhooks` -> `sources[i].webhooks[j]`.
    let mut path = String::new();
    let mut prefix = String::new();
    for part in table.split('.').filter(|p| !p.is_empty()) {
        prefix = if prefix.is_empty() {
            part.to_string()
        } else {
            format!("{prefix}.{part}")
        };
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(part);
        if let Some(n) = counts.get(&prefix) {
            path.push_str(&format!("[{n}]"));
        }
    }
    if !here.starts_with('[') {
        if let Some(key) = here
            .split('=')
            .next()
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key.trim_matches('"'));
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sources_redis_prefix_is_the_urls_followed_by_its_name() {
        let cases = [
            (
                "redis://h:6379/0",
                "redis://h:6379/0?prefix=outbound-relay:web",
            ),
            ("redis://h/0?prefix=eu", "redis://h/0?prefix=eu:web"),
            (
                "rediss://u:p@h:6380/1?protocol=resp3&prefix=eu",
                "rediss://u:p@h:6380/1?protocol=resp3&prefix=eu:web",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(source_redis_url(url, "web"), want, "{url}");
        }
    }

    /// The relay's own default (not the core's 20 ms) reaches every source's client, and a
    /// value set at the top or in a source wins.
    #[test]
    fn the_commit_interval_is_the_relays_default_unless_set() {
        let text = r#"
            listen = "127.0.0.1:0"
            [[sources]]
            name = "a"
            write_keys = ["wk_a"]
            [[sources]]
            name = "b"
            write_keys = ["wk_b"]
            spool_commit_interval = 0.005
        "#;
        let intervals = |text: &str| -> Vec<Duration> {
            let file: File = toml::from_str(text).unwrap();
            let relay = Relay::from_file(file, "relay.toml", Path::new("/tmp")).unwrap();
            relay
                .sources
                .iter()
                .map(|s| s.core.spool_commit_interval)
                .collect()
        };
        let ms = Duration::from_millis;
        assert_eq!(intervals(text), [Duration::from_micros(50), ms(5)]);
        let top = format!("spool_commit_interval = 0.01\n{text}");
        assert_eq!(intervals(&top), [ms(10), ms(5)]);
    }
}
