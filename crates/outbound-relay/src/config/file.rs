//! The shape of `relay.toml` (serde; an unknown key, or one at the wrong level, is an
//! error): the top level, each `[[sources]]` table, and the delivery settings both levels
//! take. The API's sources (`control/`) are read into the same [`SourceFile`].

use outbound::Config as CoreConfig;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The `spool` setting: on (SQLite under `data_dir`), off, or a Redis URL.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Spool {
    /// `true`: SQLite files under `data_dir/spool/<source>`; `false`: memory only.
    On(bool),
    /// `redis://host:port/db?prefix=P` (`rediss://` for TLS; `redis+sentinel://s1,s2,s3/MASTER`
    /// through Sentinel): a Redis shared by a fleet.
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
    let mut rest: Vec<&str> = (query.split('&'))
        .filter(|p| !p.is_empty() && !p.starts_with("prefix="))
        .collect();
    let own = format!("prefix={}:{name}", fleet_prefix(url));
    rest.push(&own);
    format!("{base}?{}", rest.join("&"))
}

/// The fleet's key prefix in the Redis `url`: its `prefix` (the last one given), else
/// [`DEFAULT_REDIS_PREFIX`].
pub fn fleet_prefix(url: &str) -> String {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    (query.split('&'))
        .rev()
        .find_map(|p| p.strip_prefix("prefix="))
        .unwrap_or(DEFAULT_REDIS_PREFIX)
        .to_string()
}

/// True when the source's spool is a Redis (not a directory under `data_dir`).
pub fn is_redis(core: &CoreConfig) -> bool {
    core.spool.as_ref().is_some_and(outbound::Spool::is_redis)
}

/// True for a Redis spool URL: `redis://`, `rediss://`, or through Sentinel
/// (`redis+sentinel://`, `rediss+sentinel://`).
pub fn is_redis_url(url: &str) -> bool {
    [
        "redis://",
        "rediss://",
        "redis+sentinel://",
        "rediss+sentinel://",
    ]
    .iter()
    .any(|scheme| url.starts_with(scheme))
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
    pub(crate) fn duration(self, key: &str) -> Result<Duration, (String, String)> {
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
            /// The first backoff's ceiling, doubled at each attempt up to `max_backoff`,
            /// seconds (core `RetryPolicy::base`).
            #[serde(default)]
            pub retry_base: Option<Seconds>,
            /// Largest `Retry-After` honoured, seconds.
            #[serde(default)]
            pub max_retry_after: Option<Seconds>,
            /// Most requests in flight to each destination.
            #[serde(default)]
            pub max_in_flight: Option<usize>,
            /// Delivery threads each destination keeps ready.
            #[serde(default)]
            pub workers: Option<usize>,
            /// `"x-signature"` (default), `"standard-webhooks"` or `"hmac-sha256"`.
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
            /// Where accepted events wait for their outcome: `true` (default: SQLite, one file
            /// under `data_dir/spool` for every source), `false` (memory only: a 200 means
            /// accepted in memory), or a `redis://` / `rediss://` / `redis+sentinel://` URL
            /// (Redis Streams shared by a fleet of relays; every source on the fleet's URL is
            /// a tenant of one store per relay, its records under its name).
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
            /// Attempts each webhook URL's log keeps (default 100, at most 10,000).
            #[serde(default)]
            pub attempt_log_size: Option<usize>,
            /// How long an attempt stays in its URL's log, seconds (default 24 hours, at
            /// most 30 days).
            #[serde(default)]
            pub attempt_retention: Option<Seconds>,
        }

        impl $name {
            pub(crate) fn delivery(&self) -> Delivery {
                Delivery {
                    timeout: self.timeout,
                    max_retry_duration: self.max_retry_duration,
                    max_backoff: self.max_backoff,
                    retry_base: self.retry_base,
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
                    attempt_log_size: self.attempt_log_size,
                    attempt_retention: self.attempt_retention,
                }
            }
        }
    };
}

/// The delivery settings, as given at one level (unset: the level above decides).
#[derive(Clone, Debug, Default)]
pub(crate) struct Delivery {
    pub(crate) timeout: Option<Seconds>,
    pub(crate) max_retry_duration: Option<Seconds>,
    pub(crate) max_backoff: Option<Seconds>,
    pub(crate) retry_base: Option<Seconds>,
    pub(crate) max_retry_after: Option<Seconds>,
    pub(crate) max_in_flight: Option<usize>,
    pub(crate) workers: Option<usize>,
    pub(crate) signature_scheme: Option<String>,
    pub(crate) webhook_user_agent: Option<String>,
    pub(crate) gzip: Option<bool>,
    pub(crate) flush_at: Option<usize>,
    pub(crate) max_batch_messages: Option<usize>,
    pub(crate) flush_interval: Option<Seconds>,
    pub(crate) max_queue_size: Option<usize>,
    pub(crate) queue_full_wait: Option<Seconds>,
    pub(crate) ca_certs: Option<String>,
    pub(crate) proxy_from_env: Option<bool>,
    pub(crate) spool: Option<Spool>,
    pub(crate) spool_max_bytes: Option<u64>,
    pub(crate) spool_commit_interval: Option<Seconds>,
    pub(crate) debug: Option<bool>,
    pub(crate) dead_letters: Option<bool>,
    pub(crate) dead_letter_retention: Option<Seconds>,
    pub(crate) dead_letter_max_bytes: Option<u64>,
    pub(crate) attempt_log_size: Option<usize>,
    pub(crate) attempt_retention: Option<Seconds>,
}

/// Every delivery setting's key, at either level.
pub const DELIVERY_KEYS: [&str; 26] = [
    "timeout",
    "max_retry_duration",
    "max_backoff",
    "retry_base",
    "max_retry_after",
    "max_in_flight",
    "workers",
    "signature_scheme",
    "webhook_user_agent",
    "gzip",
    "flush_at",
    "max_batch_messages",
    "flush_interval",
    "max_queue_size",
    "queue_full_wait",
    "ca_certs",
    "proxy_from_env",
    "spool",
    "spool_max_bytes",
    "spool_commit_interval",
    "debug",
    "dead_letters",
    "dead_letter_retention",
    "dead_letter_max_bytes",
    "attempt_log_size",
    "attempt_retention",
];

/// The keys of a `[[sources]]` table besides the delivery settings.
pub const SOURCE_KEYS: [&str; 9] = [
    "name",
    "write_keys",
    "shared_secret",
    "allowed_origins",
    "webhooks",
    "subscriptions",
    "forward",
    "allowed_networks",
    "forward_allowed_networks",
];

impl Delivery {
    /// The keys set at this level.
    pub(crate) fn keys(&self) -> Vec<&'static str> {
        let d = self;
        let set: [(&'static str, bool); 26] = [
            ("timeout", d.timeout.is_some()),
            ("max_retry_duration", d.max_retry_duration.is_some()),
            ("max_backoff", d.max_backoff.is_some()),
            ("retry_base", d.retry_base.is_some()),
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
            ("attempt_log_size", d.attempt_log_size.is_some()),
            ("attempt_retention", d.attempt_retention.is_some()),
        ];
        set.into_iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| k)
            .collect()
    }

    /// `self` where set, `base` otherwise.
    pub(crate) fn over(self, base: &Delivery) -> Delivery {
        macro_rules! pick {
            ($($f:ident),*) => { Delivery { $($f: self.$f.or_else(|| base.$f.clone()),)* } };
        }
        pick!(
            timeout,
            max_retry_duration,
            max_backoff,
            retry_base,
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
            dead_letter_max_bytes,
            attempt_log_size,
            attempt_retention
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
        /// Networks the webhooks of this file's sources may reach although private (CIDR).
        /// The admin API's sources get none of them: the admin grants each its own.
        #[serde(default)]
        pub allowed_networks: Vec<String>,
        /// Networks a source's forward endpoint may reach although private (CIDR); the
        /// guard (`block_private_networks`) applies to forwards too, with these exceptions.
        #[serde(default)]
        pub forward_allowed_networks: Vec<String>,
        /// Logs show webhook and forward URLs whole (default false: scheme, host and port).
        #[serde(default)]
        pub log_url_paths: bool,
        /// The proxies in front of the relay whose `X-Forwarded-For`, `-Host` and `-Proto`
        /// are believed (CIDR).
        #[serde(default)]
        pub trusted_proxies: Vec<String>,
        /// Where SDKs reach the relay (`https://relay.example.com`): the settings document's
        /// `apiHost`; without it, the request's `Host`.
        #[serde(default)]
        pub public_url: Option<String>,
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
        /// A write of an answer that makes no progress for this long (a client that does not
        /// read) closes the connection, seconds (default 10).
        #[serde(default)]
        pub write_timeout: Option<Seconds>,
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
        /// A fleet on Redis: when a commit counts as acknowledged (`"auto"`, the default:
        /// the safe one the deployment allows; `"memory"`, `"replicas:N"`, `"fsync"`).
        /// Read at start (a reload does not change it).
        #[serde(default)]
        pub redis_ack: Option<String>,
        /// Threads of the I/O engine that sends every source's requests (default: one per
        /// core, at most 4; 1 to 256). Read at start.
        #[serde(default)]
        pub io_threads: Option<usize>,
        /// Events held in memory at once, every source together (default 100000, at least
        /// 1); the rest of a backlog waits in the spool. Read at start.
        #[serde(default)]
        pub memory_window: Option<usize>,
        /// Bytes of event bodies held in memory at once, every source together (default
        /// 83886080, 80 MiB; at least 1); the rest of a backlog waits in the spool. Read at
        /// start.
        #[serde(default)]
        pub memory_window_bytes: Option<u64>,
        /// Bytes the spool may hold for every source together (default: no bound but each
        /// source's `spool_max_bytes` and the disk's). Read at start.
        #[serde(default)]
        pub spool_max_total_bytes: Option<u64>,
        /// Sources whose metrics have series of their own (the rest are counted together
        /// under `source="_other"`).
        #[serde(default)]
        pub metrics_sources: Vec<String>,
        /// This many sources more, the most waiting at a scrape, get gauges of their own
        /// (default 10).
        #[serde(default)]
        pub metrics_top_sources: Option<usize>,
        /// Static headers one webhook may have at most (default 20).
        #[serde(default)]
        pub max_webhook_headers: Option<usize>,
        /// Bytes of one webhook's static headers at most, names and values (default 8192).
        #[serde(default)]
        pub max_webhook_header_bytes: Option<usize>,
        /// The admin API's audit trail keeps at most this many entries, the oldest going
        /// first (default 100000).
        #[serde(default)]
        pub audit_max_entries: Option<usize>,
        /// ... and none older than this, seconds (default 90 days).
        #[serde(default)]
        pub audit_retention: Option<Seconds>,
        /// The operator's alerts go to this URL, as signed webhooks (off when left out).
        #[serde(default)]
        pub alert_url: Option<String>,
        /// Signs them (required with `alert_url`).
        #[serde(default)]
        pub alert_secret: Option<String>,
        /// `"standard-webhooks"` (default) or `"x-signature"`.
        #[serde(default)]
        pub alert_signature_scheme: Option<String>,
        /// A source's dead letters at which it alerts (default 100).
        #[serde(default)]
        pub alert_dead_letters: Option<u64>,
        /// A source's messages waiting at which it alerts (default 10000).
        #[serde(default)]
        pub alert_waiting: Option<u64>,
        /// The share of a source's `spool_max_bytes`, percent, at which it alerts (default 80).
        #[serde(default)]
        pub alert_spool_percent: Option<u64>,
        /// How often the sources are looked at, seconds (default 5).
        #[serde(default)]
        pub alert_interval: Option<Seconds>,
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
        /// Up to 50 subscriptions, each as our settings (`name`, `trigger`, `url`, ...) or
        /// as Segment's export writes it (`subscribe`, `mapping`): read by the core.
        #[serde(default)]
        pub subscriptions: Vec<serde_json::Value>,
        /// Also forward to a Segment-compatible endpoint.
        #[serde(default)]
        pub forward: Option<ForwardFile>,
        /// Networks this source's webhooks may reach although private (CIDR): for a source
        /// of this file, instead of the top level's; for one of the admin API, set by the
        /// admin alone (none by default: the strict guard).
        #[serde(default)]
        pub allowed_networks: Option<Vec<String>>,
        /// The same for its forward's endpoint (instead of `forward_allowed_networks`).
        #[serde(default)]
        pub forward_allowed_networks: Option<Vec<String>>,
    }
}

/// One `[[sources.webhooks]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookFile {
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Off: kept, but sent nothing (the core's `Webhook::enabled`); on by default.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// How the endpoint authenticates us (`Authorization`). Boxed, as `tls`: every source
    /// keeps its webhooks' settings, and most set neither.
    #[serde(default)]
    pub auth: Option<Box<AuthFile>>,
    /// A client certificate (mutual TLS) and roots of the endpoint's own.
    #[serde(default)]
    pub tls: Option<Box<TlsFile>>,
    /// The header the signature goes in instead of the scheme's own.
    #[serde(default)]
    pub signature_header: Option<String>,
    /// How this endpoint's requests are signed, instead of the source's scheme.
    #[serde(default)]
    pub signature_scheme: Option<String>,
    /// At most this many requests a second to the endpoint (excess waits).
    #[serde(default)]
    pub rate_limit: Option<RateLimitFile>,
}

/// A webhook's `auth`, by its `type`. Debug shows the secrets: only the fingerprint of a
/// source's settings is made from it, never a log line.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum AuthFile {
    Basic {
        user: String,
        #[serde(default)]
        password: String,
    },
    Bearer {
        token: String,
    },
    #[serde(rename = "oauth2")]
    OAuth2 {
        token_url: String,
        client_id: String,
        /// Empty with `client_assertion_key`.
        #[serde(default)]
        client_secret: String,
        /// A private key (PEM text or path) signing a JWT client assertion instead.
        #[serde(default)]
        client_assertion_key: Option<String>,
        #[serde(default)]
        scope: Option<String>,
        #[serde(default)]
        audience: Option<String>,
    },
}

/// A webhook's `tls`: each PEM text or the path of a PEM file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFile {
    #[serde(default)]
    pub client_cert: Option<String>,
    #[serde(default)]
    pub client_key: Option<String>,
    /// Replaces the trusted roots for this endpoint.
    #[serde(default)]
    pub ca_certs: Option<String>,
}

/// A webhook's `rate_limit`; `burst` defaults to `per_second`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitFile {
    pub per_second: u32,
    #[serde(default)]
    pub burst: Option<u32>,
}

/// `[sources.forward]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardFile {
    #[serde(default)]
    pub endpoint: Option<String>,
    pub write_key: String,
}

impl File {
    /// `text` read as a file named `file`; an error names the key (`sources[1].timeout`).
    pub fn parse(file: &str, text: &str) -> Result<File, super::ConfigError> {
        toml::from_str(text).map_err(|e| super::toml_keys::toml_error(file, text, e))
    }
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("outbound-relay-data")
}

fn yes() -> bool {
    true
}
