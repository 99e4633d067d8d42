//! `relay.toml`: its shape (serde, unknown keys refused), and its conversion into one core
//! [`outbound::Config`] per source. The relay checks only what is its own (the TOML shape,
//! source names and write keys, durations as numbers of seconds); every delivery setting is
//! checked by the core when the source's `Client` is built, and its error is reported here
//! under the key it came from (`relay.toml: sources[1].webhooks[0].url: ...`). docs/relay.md
//! lists every key with its default.

mod convert;
pub mod env;
pub mod file;
mod public_url;
mod toml_keys;

pub use file::{is_redis, is_redis_url, File, SourceFile, DELIVERY_KEYS, SOURCE_KEYS};
use file::{Delivery, Seconds};
use outbound::Config as CoreConfig;
pub use public_url::PublicUrl;
use std::collections::HashMap;
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

/// Who keeps a source's settings: `relay.toml` (changed by editing it and SIGHUP), or the
/// admin API (`control/`, kept in the relay's store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManagedBy {
    File,
    Api,
}

/// One source, ready to start.
#[derive(Clone)]
pub struct SourceSpec {
    pub name: String,
    /// What tells this source from an earlier one of its name: drawn when the admin API
    /// creates it; empty for the file's sources (the file is their identity) and for the
    /// API's made before sources had one.
    pub id: String,
    /// Where its events, dead letters, replays and audience state are kept: its name, then
    /// `.` and its id when it has one, so nothing of a deleted source reaches the next of
    /// its name (a name cannot hold a `.`).
    pub tenant: String,
    pub write_keys: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// Its subscriptions as set (the core holds them compiled).
    pub subscriptions: Vec<serde_json::Value>,
    /// Where errors of this source's core config are reported (`sources[1]`; the API's
    /// sources: empty, their fields named from the top of the body).
    pub key: String,
    /// The delivery keys this source sets itself (the rest come from the top level).
    pub own_keys: Vec<&'static str>,
    pub core: CoreConfig,
    /// Everything its client is built from (its table, the top-level delivery settings,
    /// the network rules, `data_dir`): a reload keeps the running client when unchanged.
    pub fingerprint: u64,
    pub managed_by: ManagedBy,
}

/// `at.key`, or `key` alone at the top.
pub fn join(at: &str, key: &str) -> String {
    match at.is_empty() {
        true => key.to_string(),
        false => format!("{at}.{key}"),
    }
}

impl SourceSpec {
    /// The key and reason of a core config error of this source: its own key, or the top
    /// level's when the value came from there (`sources[1].webhooks[0].url`).
    pub fn core_error(&self, e: outbound::Error) -> (String, String) {
        let at = &self.key;
        match e {
            outbound::Error::Config { setting, reason } => {
                let key = match setting.as_str() {
                    // The forward's settings are the core's ingestion settings.
                    "write_key" => join(at, "forward.write_key"),
                    "endpoint" => join(at, "forward.endpoint"),
                    "write_key/webhooks" => join(at, "webhooks"),
                    // The spool is data_dir's unless a Redis URL was set.
                    "spool" if is_redis(&self.core) => match self.own_keys.contains(&"spool") {
                        true => join(at, "spool"),
                        false => "spool".to_string(),
                    },
                    "spool" => "data_dir".to_string(),
                    "allowed_networks" if self.own_keys.contains(&"allowed_networks") => {
                        join(at, "allowed_networks")
                    }
                    "endpoint_allowed_networks"
                        if self.own_keys.contains(&"forward_allowed_networks") =>
                    {
                        join(at, "forward_allowed_networks")
                    }
                    "allowed_networks" => setting,
                    "endpoint_allowed_networks" => "forward_allowed_networks".to_string(),
                    "shared_secret" => join(at, "shared_secret"),
                    s if s.starts_with("webhooks") || s.starts_with("subscriptions") => join(at, s),
                    s if self.own_keys.contains(&s) => join(at, s),
                    // A delivery setting the source did not set came from the top level.
                    _ => setting,
                };
                (key, reason)
            }
            outbound::Error::Spool { path, reason } => {
                ("data_dir".to_string(), format!("spool {path}: {reason}"))
            }
            other => (at.clone(), other.to_string()),
        }
    }

    /// The core's checks of its settings, before anything running is touched
    /// (`Client::validate`: nothing is started).
    pub fn check(&self) -> Result<(), (String, String)> {
        outbound::Client::validate(&self.core).map_err(|e| self.core_error(e))
    }
}

/// What a source's conversion takes from the top level: kept, so that a source the admin
/// API sets later is read as a `[[sources]]` table of this file would be.
#[derive(Clone, Debug)]
pub struct Base {
    top: Delivery,
    block_private_networks: bool,
    allowed_networks: Vec<String>,
    forward_allowed_networks: Vec<String>,
    log_url_paths: bool,
    pub data_dir: PathBuf,
    redis_ack: outbound::RedisAck,
    max_webhook_headers: usize,
    max_webhook_header_bytes: usize,
}

impl Base {
    /// Static headers one webhook may have at most (`max_webhook_headers`).
    pub fn max_webhook_headers(&self) -> usize {
        self.max_webhook_headers
    }

    /// The fleet's Redis URL when the top level's `spool` is one (its prefix as given, or
    /// the relay's default): where the API's sources go, with no file source to say it.
    pub fn fleet_redis(&self) -> Option<PathBuf> {
        match &self.top.spool {
            Some(file::Spool::Redis(url)) => {
                let url = file::source_redis_url(url, "");
                url.strip_suffix(':').map(PathBuf::from)
            }
            _ => None,
        }
    }

    /// Source table `s`, its errors keyed under `at` (`sources[1]`; empty for the API).
    /// Checks what is the relay's own (the name, its write keys present and not empty);
    /// write keys unique across sources are the caller's to check.
    pub fn source(
        &self,
        s: &SourceFile,
        at: &str,
        managed_by: ManagedBy,
        id: &str,
    ) -> Result<SourceSpec, (String, String)> {
        check_name(&s.name).map_err(|why| (join(at, "name"), why))?;
        let tenant = match id.is_empty() {
            true => s.name.clone(),
            false => format!("{}.{id}", s.name),
        };
        if s.write_keys.is_empty() {
            return Err((
                join(at, "write_keys"),
                "at least one write key is needed".into(),
            ));
        }
        let lists = [
            Some(&s.write_keys),
            Some(&s.allowed_origins),
            s.allowed_networks.as_ref(),
            s.forward_allowed_networks.as_ref(),
        ];
        for (key, list) in LIST_KEYS.iter().zip(lists) {
            if let Some(n) = list.map(Vec::len).filter(|n| *n > MAX_LIST) {
                return Err((
                    join(at, key),
                    format!("{n} given, at most {MAX_LIST} allowed"),
                ));
            }
        }
        for (k, key) in s.write_keys.iter().enumerate() {
            if key.is_empty() {
                return Err((
                    join(at, &format!("write_keys[{k}]")),
                    "must not be empty".into(),
                ));
            }
        }
        let mut own = s.delivery().keys();
        own.extend(s.allowed_networks.as_ref().map(|_| "allowed_networks"));
        own.extend((s.forward_allowed_networks.as_ref()).map(|_| "forward_allowed_networks"));
        let mut core = convert::core_config(s, self, managed_by, &tenant).map_err(|(k, r)| {
            // A value from the top level is reported there; a webhook's is the source's.
            let own_table = k.starts_with("webhooks[") || k.starts_with("subscriptions[");
            match own.iter().any(|o| *o == k) || own_table {
                true => (join(at, &k), r),
                false => (k, r),
            }
        })?;
        core.redis_ack = self.redis_ack;
        let fingerprint = fingerprint(&format!("{s:?}|{self:?}|{id}|{}", pem_files(&core)));
        Ok(SourceSpec {
            name: s.name.clone(),
            id: id.to_string(),
            tenant,
            write_keys: s.write_keys.clone(),
            allowed_origins: s.allowed_origins.clone(),
            subscriptions: s.subscriptions.clone(),
            key: at.to_string(),
            own_keys: own,
            core,
            fingerprint,
            managed_by,
        })
    }
}

/// A source's lists (write keys, origins, networks) hold at most this many entries: enough
/// for any rotation or set of sites, and a bound on what one source costs to read.
pub const MAX_LIST: usize = 10_000;
/// The settings of a source that are lists.
pub const LIST_KEYS: [&str; 4] = [
    "write_keys",
    "allowed_origins",
    "allowed_networks",
    "forward_allowed_networks",
];

/// A source name: letters, digits, `-` and `_` (it names state files and Redis keys).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && (name.chars()).all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{name:?} must be 1 to 64 letters, digits, '-' or '_'"
        )),
    }
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
    pub write_timeout: Duration,
}

/// `tls_cert` and `tls_key`, resolved against the file's directory.
#[derive(Clone, Debug, PartialEq)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How much of the admin API's audit trail is kept (`audit_max_entries`, `audit_retention`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AuditLimits {
    pub max_entries: usize,
    pub retention: Duration,
}

/// The most entries `audit_max_entries` may keep.
pub const MAX_AUDIT_ENTRIES: usize = 10_000_000;

impl Default for AuditLimits {
    fn default() -> AuditLimits {
        AuditLimits {
            max_entries: 100_000,
            retention: Duration::from_secs(90 * 24 * 3600),
        }
    }
}

/// The operator's alerts (`alert_*`): where they go, how they are signed, and the
/// thresholds that send them.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertSettings {
    pub url: String,
    pub secret: String,
    pub scheme: outbound::SignatureScheme,
    /// A source's dead letters at which it alerts.
    pub dead_letters: u64,
    /// A source's messages waiting at which it alerts.
    pub waiting: u64,
    /// The share of its `spool_max_bytes`, percent, at which it alerts.
    pub spool_percent: u64,
    /// How often the sources are looked at.
    pub interval: Duration,
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
    /// A fleet on Redis: when a commit counts as acknowledged.
    pub redis_ack: outbound::RedisAck,
    /// The I/O engine's threads (every source's requests).
    pub io_threads: usize,
    /// Events in memory at once, every source together, and bytes of their bodies.
    pub memory_window: usize,
    pub memory_window_bytes: u64,
    /// Bytes of spool every source together may hold (`None`: each source's own bound).
    pub spool_max_total_bytes: Option<u64>,
    /// Sources whose metrics have series of their own.
    pub metrics_sources: Vec<String>,
    /// How many more, the most waiting at a scrape, get gauges of their own.
    pub metrics_top_sources: usize,
    /// The audit trail's bounds.
    pub audit: AuditLimits,
    /// The operator's alerts (off: `None`).
    pub alerts: Option<AlertSettings>,
    /// Shared with the registry, which keeps each one it runs (one copy per source).
    pub sources: Vec<Arc<SourceSpec>>,
    /// What the API's sources are read with (the top-level delivery settings and rules).
    pub base: Base,
    /// `trusted_proxies`, read.
    pub trusted_proxies: Vec<outbound::Cidr>,
    pub public_url: Option<PublicUrl>,
}

impl Relay {
    /// Reads and checks `path` (or, with none, the environment alone) under the
    /// `OUTBOUND_RELAY_*` variables (`env.rs`); every error names the file and the key, or the
    /// variable.
    pub fn load(path: Option<&Path>) -> Result<Relay, ConfigError> {
        env::load(path)
    }

    #[cfg(test)]
    fn from_file(f: File, file: &str, base_dir: &Path) -> Result<Relay, ConfigError> {
        Relay::read(f, file, base_dir, None)
    }

    /// [`Relay::from_file`]; with `more`, the refusals of sources go there instead, and the
    /// relay holds the sources that were read.
    fn read(
        f: File,
        file: &str,
        base_dir: &Path,
        more: Option<&mut Vec<ConfigError>>,
    ) -> Result<Relay, ConfigError> {
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
        access(&f).map_err(|(k, r)| err(k, r))?;
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
        let tls = tls(&f, base_dir).map_err(|(k, r)| err(k, r))?;
        let log_format = match f.log_format.as_deref() {
            None => LogFormat::Text,
            Some(v) => LogFormat::parse(v).ok_or_else(|| {
                err(
                    "log_format".into(),
                    format!("{v:?} is not \"text\" or \"json\""),
                )
            })?,
        };
        let trusted_proxies = (f.trusted_proxies.iter())
            .map(|n| outbound::Cidr::parse(n.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| err("trusted_proxies".into(), why))?;
        let public_url = (f.public_url.as_deref())
            .map(PublicUrl::parse)
            .transpose()
            .map_err(|why| err("public_url".into(), why))?;
        let EngineSettings {
            redis_ack,
            io_threads,
            memory_window,
            memory_window_bytes,
        } = engine(&f).map_err(|(k, r)| err(k, r))?;
        let audit = audit_limits(&f).map_err(|(k, r)| err(k, r))?;
        let alerts = alert_settings(&f).map_err(|(k, r)| err(k, r))?;
        let base = Base {
            top: f.delivery(),
            block_private_networks: f.block_private_networks,
            allowed_networks: f.allowed_networks.clone(),
            forward_allowed_networks: f.forward_allowed_networks.clone(),
            log_url_paths: f.log_url_paths,
            data_dir: data_dir.clone(),
            redis_ack,
            max_webhook_headers: (f.max_webhook_headers)
                .unwrap_or(outbound::DEFAULT_MAX_WEBHOOK_HEADERS),
            max_webhook_header_bytes: (f.max_webhook_header_bytes)
                .unwrap_or(outbound::DEFAULT_MAX_WEBHOOK_HEADER_BYTES),
        };
        let (sources, errors) = file_sources(&f, &base);
        let mut errors = errors.into_iter().map(|(k, r)| err(k, r));
        match more {
            Some(more) => more.extend(errors),
            None => {
                if let Some(first) = errors.next() {
                    return Err(first);
                }
            }
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
            redis_ack,
            io_threads,
            memory_window,
            memory_window_bytes,
            spool_max_total_bytes: f.spool_max_total_bytes,
            metrics_sources: f.metrics_sources.clone(),
            metrics_top_sources: f.metrics_top_sources.unwrap_or(10),
            audit,
            alerts,
            sources,
            base,
            trusted_proxies,
            public_url,
        })
    }

    /// The file and key of a core config error of source `i`
    /// (`relay.toml: sources[1].webhooks[0].url: ...`).
    pub fn core_error(&self, i: usize, e: outbound::Error) -> ConfigError {
        let (key, reason) = self.sources[i].core_error(e);
        // A top-level value the environment set is named by its variable.
        env::named(&self.file, &key, reason)
    }
}

/// The `alert_*` keys, checked (the URL and secret as the core checks a webhook's).
fn alert_settings(f: &File) -> Result<Option<AlertSettings>, (String, String)> {
    let Some(url) = f.alert_url.clone() else {
        let given = [
            ("alert_secret", f.alert_secret.is_some()),
            ("alert_signature_scheme", f.alert_signature_scheme.is_some()),
            ("alert_dead_letters", f.alert_dead_letters.is_some()),
            ("alert_waiting", f.alert_waiting.is_some()),
            ("alert_spool_percent", f.alert_spool_percent.is_some()),
            ("alert_interval", f.alert_interval.is_some()),
        ];
        return match given.iter().find(|(_, set)| *set) {
            Some((key, _)) => Err((key.to_string(), "has no effect without alert_url".into())),
            None => Ok(None),
        };
    };
    let Some(secret) = f.alert_secret.clone().filter(|s| !s.is_empty()) else {
        let why = "is needed with alert_url: alerts are signed";
        return Err(("alert_secret".into(), why.into()));
    };
    let scheme = match f.alert_signature_scheme.as_deref() {
        None => outbound::SignatureScheme::StandardWebhooks,
        Some(v) => outbound::SignatureScheme::parse(v)
            .map_err(|e| ("alert_signature_scheme".to_string(), e.to_string()))?,
    };
    let at_least_one = |key: &str, v: Option<u64>, default: u64| match v.unwrap_or(default) {
        0 => Err((key.to_string(), "must be at least 1".to_string())),
        n => Ok(n),
    };
    let spool_percent = at_least_one("alert_spool_percent", f.alert_spool_percent, 80)?;
    if spool_percent > 100 {
        return Err((
            "alert_spool_percent".into(),
            format!("{spool_percent} is over 100"),
        ));
    }
    let interval = match f.alert_interval {
        Some(s) => s.duration("alert_interval")?,
        None => Duration::from_secs(5),
    };
    if interval < Duration::from_millis(100) {
        return Err(("alert_interval".into(), "must be at least 0.1".into()));
    }
    let settings = AlertSettings {
        url,
        secret,
        scheme,
        dead_letters: at_least_one("alert_dead_letters", f.alert_dead_letters, 100)?,
        waiting: at_least_one("alert_waiting", f.alert_waiting, 10_000)?,
        spool_percent,
        interval,
    };
    outbound::Client::validate(&settings.client_config()).map_err(|e| match e {
        outbound::Error::Config { setting, reason } => {
            let key = match setting.as_str() {
                s if s.starts_with("webhooks") => "alert_url",
                "shared_secret" => "alert_secret",
                _ => "alert_url",
            };
            (key.to_string(), reason)
        }
        other => ("alert_url".to_string(), other.to_string()),
    })?;
    Ok(Some(settings))
}

impl AlertSettings {
    /// The core's config of the client that sends the alerts: one webhook, the operator's
    /// URL (the operator's own, so the guard on private networks is off for it), signed with
    /// the operator's secret; its spool is the engine's (the caller makes it a tenant).
    pub fn client_config(&self) -> CoreConfig {
        CoreConfig::default()
            .webhooks(vec![outbound::Webhook::new(self.url.clone())])
            .shared_secret(self.secret.clone())
            .signature_scheme(self.scheme)
            .block_private_networks(false)
            .debug(true)
            .dead_letters(false)
    }
}

/// `audit_max_entries` and `audit_retention`, checked.
fn audit_limits(f: &File) -> Result<AuditLimits, (String, String)> {
    let default = AuditLimits::default();
    let max_entries = f.audit_max_entries.unwrap_or(default.max_entries);
    if !(1..=MAX_AUDIT_ENTRIES).contains(&max_entries) {
        let why = format!("{max_entries} is not between 1 and {MAX_AUDIT_ENTRIES}");
        return Err(("audit_max_entries".into(), why));
    }
    let retention = match f.audit_retention {
        Some(s) => s.duration("audit_retention")?,
        None => default.retention,
    };
    if retention.is_zero() {
        return Err(("audit_retention".into(), "must be more than 0".into()));
    }
    Ok(AuditLimits {
        max_entries,
        retention,
    })
}

/// The file's sources, each read and checked against the others; every refusal (key,
/// reason), in the file's order.
fn file_sources(f: &File, base: &Base) -> (Vec<Arc<SourceSpec>>, Vec<(String, String)>) {
    let mut names = HashMap::new();
    let mut keys: HashMap<&str, String> = HashMap::new();
    let (mut sources, mut errors) = (Vec::new(), Vec::new());
    for (i, s) in f.sources.iter().enumerate() {
        let at = format!("sources[{i}]");
        let source = match base.source(s, &at, ManagedBy::File, "") {
            Ok(source) => source,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if let Some(first) = names.insert(s.name.as_str(), i) {
            errors.push((
                format!("{at}.name"),
                format!("{:?} is already the name of sources[{first}]", s.name),
            ));
        }
        for (k, key) in s.write_keys.iter().enumerate() {
            if let Some(owner) = keys.insert(key.as_str(), s.name.clone()) {
                errors.push((
                    format!("{at}.write_keys[{k}]"),
                    format!("this write key is already a key of source {owner:?}"),
                ));
            }
        }
        sources.push(Arc::new(source));
    }
    (sources, errors)
}

/// What `outbound-relay check` reads of a file (with the environment's overrides, as a start
/// reads it): the relay with the sources that could be read, and every refusal of the others
/// (a start stops at the first); `Err` when the file itself cannot be read.
pub fn load_all(path: &Path) -> Result<(Relay, Vec<ConfigError>), ConfigError> {
    env::load_all(Some(path))
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
        write_timeout: timeout("write_timeout", f.write_timeout, 10.0)?,
    })
}

/// One I/O thread per core, at most 4 (past that the relay's request threads want the rest).
fn default_io_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
}

/// The PEM files a source's client reads (`ca_certs`, each webhook's and subscription's `tls`)
/// as their size and modification time: a certificate replaced in place changes the source's
/// fingerprint, so a reload starts its client again with it.
fn pem_files(core: &CoreConfig) -> String {
    let subs = core.subscriptions.iter().map(|s| &s.endpoint().tls);
    let tls = (core.webhooks.iter().map(|w| &w.tls).chain(subs))
        .flat_map(|t| [&t.client_cert, &t.client_key, &t.ca_certs]);
    (std::iter::once(&core.ca_certs).chain(tls))
        .flatten()
        .filter(|v| !v.contains("-----BEGIN"))
        .map(|path| match std::fs::metadata(path) {
            Ok(m) => format!("{path}:{}:{:?}", m.len(), m.modified().ok()),
            Err(_) => format!("{path}:-"),
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// A source's settings as one number, to tell at a reload whether they changed (a hash:
/// the text it is made of is kilobytes per source, and 10,000 sources keep theirs).
fn fingerprint(settings: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    settings.hash(&mut h);
    h.finish()
}

/// A refusal of a top-level setting: its key and why.
type Refusal = (String, String);

/// The settings that say who may reach the relay: a token given is not empty, and without the
/// admin API the file names its sources.
fn access(f: &File) -> Result<(), Refusal> {
    if f.admin_token.as_deref() == Some("") {
        let why = "must not be empty (leave it out to turn the admin API off)";
        return Err(("admin_token".into(), why.into()));
    }
    if f.sources.is_empty() && f.admin_token.is_none() {
        // With the admin API on, sources may all come from it.
        let why = "at least one [[sources]] is needed (or admin_token, to set them up through \
                   the admin API)";
        return Err(("sources".into(), why.into()));
    }
    if f.metrics_token.as_deref() == Some("") {
        let why = "must not be empty (leave it out to use the admin token)";
        return Err(("metrics_token".into(), why.into()));
    }
    Ok(())
}

/// The listener's certificate and key, both or neither, relative to the file's directory.
fn tls(f: &File, base_dir: &Path) -> Result<Option<Tls>, Refusal> {
    match (&f.tls_cert, &f.tls_key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(Tls {
            cert: base_dir.join(cert),
            key: base_dir.join(key),
        })),
        (Some(_), None) => Err((
            "tls_key".into(),
            "is needed with tls_cert (both or neither)".into(),
        )),
        (None, Some(_)) => Err((
            "tls_cert".into(),
            "is needed with tls_key (both or neither)".into(),
        )),
    }
}

/// The engine's settings in the file, checked.
struct EngineSettings {
    redis_ack: outbound::RedisAck,
    io_threads: usize,
    memory_window: usize,
    memory_window_bytes: u64,
}

fn engine(f: &File) -> Result<EngineSettings, Refusal> {
    let redis_ack = match f.redis_ack.as_deref() {
        None => outbound::RedisAck::Auto,
        Some(v) => v.parse().map_err(|e: outbound::Error| {
            let reason = match e {
                outbound::Error::Config { reason, .. } => reason,
                other => other.to_string(),
            };
            ("redis_ack".to_string(), reason)
        })?,
    };
    let io_threads = f.io_threads.unwrap_or_else(default_io_threads);
    if !(1..=outbound::MAX_IO_THREADS).contains(&io_threads) {
        let why = format!(
            "{io_threads} is not between 1 and {}",
            outbound::MAX_IO_THREADS
        );
        return Err(("io_threads".into(), why));
    }
    let memory_window =
        (f.memory_window).unwrap_or(outbound::EngineConfig::default().memory_window);
    if memory_window == 0 {
        return Err(("memory_window".into(), "must be at least 1".into()));
    }
    let memory_window_bytes =
        (f.memory_window_bytes).unwrap_or(outbound::EngineConfig::default().memory_window_bytes);
    if memory_window_bytes == 0 {
        return Err(("memory_window_bytes".into(), "must be at least 1".into()));
    }
    if f.spool_max_total_bytes == Some(0) {
        return Err(("spool_max_total_bytes".into(), "must be at least 1".into()));
    }
    Ok(EngineSettings {
        redis_ack,
        io_threads,
        memory_window,
        memory_window_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::file::source_redis_url;
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

    /// `redis_ack` is read once for the fleet and reaches every source's client; a wrong
    /// value names the key.
    #[test]
    fn redis_ack_reaches_every_source_and_a_wrong_one_names_its_key() {
        let sources = r#"
            [[sources]]
            name = "a"
            write_keys = ["wk_a"]
            [[sources]]
            name = "b"
            write_keys = ["wk_b"]
        "#;
        let load = |top: &str| {
            let text = format!("listen = \"127.0.0.1:0\"\n{top}\n{sources}");
            let file: File = toml::from_str(&text).unwrap();
            Relay::from_file(file, "relay.toml", Path::new("/tmp"))
        };
        let relay = load("").unwrap();
        assert_eq!(relay.redis_ack, outbound::RedisAck::Auto);
        let relay = load("redis_ack = \"replicas:2\"").unwrap();
        assert_eq!(relay.redis_ack, outbound::RedisAck::Replicas(2));
        assert!(relay
            .sources
            .iter()
            .all(|s| s.core.redis_ack == outbound::RedisAck::Replicas(2)));
        let Err(e) = load("redis_ack = \"disk\"") else {
            panic!("accepted")
        };
        assert_eq!(e.key, "redis_ack");
        assert!(e.reason.contains("replicas:N"), "{}", e.reason);
    }
}
