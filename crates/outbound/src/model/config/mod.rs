//! Client configuration, and its checks when the client is built.

use crate::error::Error;
use crate::log::LogSink;
use crate::model::network_guard::NetworkGuard;
use crate::model::outcome::Outcome;
use crate::model::retry::RetryPolicy;
pub use crate::model::spool::{RedisAck, Spool};
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine as _};
use http::{HeaderName, HeaderValue, Uri};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

mod endpoint_check;
mod setters;
mod subscriptions;

pub use crate::model::endpoint::{Auth, Endpoint, EndpointTls, OAuth2, RateLimit, SignatureScheme};
pub(crate) use subscriptions::{named as subscription_error, SendAs};
pub use subscriptions::{MAX_SUBSCRIPTIONS, SUBSCRIPTION_TIMEOUT};

/// At most this many webhooks per client.
pub const MAX_WEBHOOKS: usize = 5;
/// [`Config::max_webhook_headers`]'s default.
pub const DEFAULT_MAX_WEBHOOK_HEADERS: usize = 20;
/// [`Config::max_webhook_header_bytes`]'s default.
pub const DEFAULT_MAX_WEBHOOK_HEADER_BYTES: usize = 8 * 1024;

/// Called once per accepted message with how it ended, on the client's scheduler thread.
pub type OutcomeCallback = Arc<dyn Fn(&Outcome) + Send + Sync>;

/// How a call's wait for room runs (`Config::room_wait`): it is given the wait, runs it, and
/// returns what it returned.
pub type RoomWaitHook = Arc<dyn Fn(&mut (dyn FnMut() -> bool + Send)) -> bool + Send + Sync>;

/// One customer webhook: a URL, the static headers added to every request to it, and how
/// its endpoint wants to be called. Made with [`Webhook::new`] and its setters, so a new
/// field breaks no caller.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Webhook {
    /// Absolute `http` or `https` URL, without credentials.
    pub url: String,
    /// Static headers, in order.
    pub headers: Vec<(String, String)>,
    /// Off: the webhook stays in the config (checked, counted among the 5, its place kept)
    /// but no request goes to it, and a message accepted while it is off is never sent to
    /// it. A message still pending for it when a client of its name resumes with it off
    /// (a service's live change) is not sent to it either. On by default.
    pub enabled: bool,
    /// How the endpoint authenticates us: Basic, a bearer token or OAuth2 client
    /// credentials. None by default.
    pub auth: Option<Auth>,
    /// A client certificate for mutual TLS, and roots of the endpoint's own.
    pub tls: EndpointTls,
    /// The header the signature goes in, in place of the scheme's own (`X-Signature`,
    /// `X-Signature-256`); not with Standard Webhooks, whose headers are fixed.
    pub signature_header: Option<String>,
    /// How this endpoint's requests are signed, in place of the client's
    /// `signature_scheme`.
    pub signature_scheme: Option<SignatureScheme>,
    /// At most this many requests a second to the endpoint; unlimited by default.
    pub rate_limit: Option<RateLimit>,
}

impl Webhook {
    /// A webhook with no static headers, on.
    pub fn new(url: impl Into<String>) -> Self {
        Webhook {
            url: url.into(),
            headers: Vec::new(),
            enabled: true,
            auth: None,
            tls: EndpointTls::default(),
            signature_header: None,
            signature_scheme: None,
            rate_limit: None,
        }
    }

    /// Sets how the endpoint authenticates us.
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Sets the endpoint's TLS (client certificate, roots).
    pub fn tls(mut self, tls: EndpointTls) -> Self {
        self.tls = tls;
        self
    }

    /// Puts the signature in header `name`.
    pub fn signature_header(mut self, name: impl Into<String>) -> Self {
        self.signature_header = Some(name.into());
        self
    }

    /// Signs this endpoint's requests with `scheme`.
    pub fn signature_scheme(mut self, scheme: SignatureScheme) -> Self {
        self.signature_scheme = Some(scheme);
        self
    }

    /// Limits the requests a second to the endpoint.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// Adds a static header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Turns the webhook on or off (see [`Webhook::enabled`]).
    pub fn enabled(mut self, on: bool) -> Self {
        self.enabled = on;
        self
    }
}

/// Everything a client can be told. `Config::default()` sends nowhere; set a `write_key`
/// (ingestion), `webhooks`, or both, with the setter of each field
/// (`Config::default().write_key("k").flush_at(50)`): new fields come with defaults, so no
/// caller breaks when one is added.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// Source write key: enables the ingestion destination.
    pub write_key: Option<String>,
    /// Ingestion base URL; batches go to `{endpoint}/v1/batch`.
    pub endpoint: String,
    /// Up to 5 webhooks: enables the webhooks destination. Shared: a clone of the config
    /// (a service keeps one, its client another) holds the list once; change it with
    /// `Arc::make_mut` or assign a new one (`vec![…].into()`).
    pub webhooks: Arc<Vec<Webhook>>,
    /// Up to 50 subscriptions (Segment's Webhooks (Actions)): each gets the events its
    /// trigger matches, mapped as its `data` says, as a destination of its own (its own
    /// queue, retries within `retry`'s window, records, health and dead letters), signed
    /// with `shared_secret` as webhooks are, with a 10 s timeout. Each message has one
    /// outcome per subscription it matched, with [`Outcome::subscription`] set, besides
    /// its own (ingestion and webhooks). Names must be given and unique.
    pub subscriptions: Vec<crate::model::subscription::Subscription>,
    /// Set on the client made for one subscription: how it sends.
    pub(crate) send_as: Option<Arc<SendAs>>,
    /// When set, webhook requests are signed: `X-Signature` with this text as the key, or,
    /// with [`SignatureScheme::StandardWebhooks`], `webhook-signature` with one or more
    /// `whsec_` secrets separated by spaces (key rotation: list the new and the old one).
    pub shared_secret: Option<String>,
    /// How webhook requests are signed; `X-Signature` by default.
    pub signature_scheme: SignatureScheme,
    /// `User-Agent` of webhook requests (a product token, `Outbound/1.0`).
    pub webhook_user_agent: String,
    /// A batch closes, and is sent, at this many messages (1: each message closes its own,
    /// and goes in a request of its own). It is also the most messages one request carries
    /// (as every peer's batch size is), unless `max_batch_messages` is set higher. Default 20.
    pub flush_at: usize,
    /// The most messages one ingestion request may carry when closed batches waiting
    /// together are joined; `None` (the default): `flush_at`, so batches are never joined
    /// past it. Set higher, batches that wait for a connection, or (while a request sent
    /// less than 25 ms ago is out) for that request's answer, go out together in one
    /// request of up to this many messages, still within 500,000 bytes: fewer, larger
    /// requests (less work per message on both sides), but one bad answer (a 400) fails
    /// every message it carried, and a receiver that takes less per request than
    /// `flush_at` implies may refuse them (a 413 still splits a batch until it fits).
    /// Below `flush_at` it is a config error naming `max_batch_messages`.
    pub max_batch_messages: Option<usize>,
    /// A batch closes this long after its first message arrived.
    pub flush_interval: Duration,
    /// Most messages held in memory at once, including those waiting to retry. Without a
    /// spool that is every message accepted and not yet ended. With a spool, a backlog past
    /// it waits on disk, bounded by `spool_max_bytes`: what this bounds then is the messages
    /// not yet committed and those read back for delivery (and, while the spool's commits
    /// fail, every message not yet ended again).
    pub max_queue_size: usize,
    /// How long a call waits for room when the queue (`max_queue_size`) or the spool
    /// (`spool_max_bytes`) is full, before it fails with [`Error::QueueFull`] or
    /// [`Error::SpoolFull`] (counted as dropped). Zero, the default: it fails at once and
    /// never blocks. A waiting call holds its thread; room comes back as messages reach
    /// their outcome (a dead destination keeps them up to `max_retry_duration`), and `close`
    /// ends the wait with [`Error::Closed`]. At most 1 hour.
    pub queue_full_wait: Duration,
    /// Runs each of a call's waits for room (`queue_full_wait`); `None`: in place. A binding
    /// whose callers hold a lock that outcomes need (Python's GIL) releases it around the
    /// wait; an async server moves its other tasks off the thread first.
    pub room_wait: Option<RoomWaitHook>,
    /// Bound on one whole HTTP exchange (connect, send, response, body).
    pub timeout: Duration,
    /// Backoff and retry window.
    pub retry: RetryPolicy,
    /// Gzip ingestion bodies.
    pub gzip: bool,
    /// Extra trusted roots: PEM text, or the path of a PEM file.
    pub ca_certs: Option<String>,
    /// Requests each destination may have out at once however quickly it answers (its
    /// share of the client's quick requests is never below this); more start on demand,
    /// up to `max_in_flight`.
    pub workers: usize,
    /// Most requests in flight at once to each destination (ingestion, and each webhook URL
    /// on its own), so a slow destination uses its own budget and never another's. Default
    /// 512: a receiver that stalls 5 % of requests for the whole 5 s timeout holds 250 slots
    /// at 1,000 requests/s. Requests that are answered quickly are kept to 16 out at once,
    /// shared by the destinations with work (at least 8 each); a destination that has never
    /// answered gets 8: more would only pile up stalled requests. All clients of a process
    /// together have at most 16,384 requests out (less while requests wait on the process
    /// itself), each destination at most an equal share: past that, requests wait for one
    /// of the destination's own to come back.
    pub max_in_flight: usize,
    /// Called with each message's outcome.
    pub on_outcome: Option<OutcomeCallback>,
    /// Logging on or off; `None` follows the `DEBUG` environment variable.
    pub debug: Option<bool>,
    /// Where log lines go (stderr when `None`).
    pub log_sink: Option<LogSink>,
    /// When false, messages are validated and counted but never sent (tests, dry runs).
    pub send: bool,
    /// Use `HTTP(S)_PROXY`/`ALL_PROXY` from the environment.
    pub proxy_from_env: bool,
    /// Refuse to send webhooks to non-public addresses: loopback, private (RFC 1918),
    /// link-local (169.254.0.0/16, with the cloud metadata services), unique-local (fc00::/7),
    /// unspecified, shared (100.64.0.0/10), multicast and reserved ones, checked after DNS
    /// resolution and again for the addresses about to be dialled. Such a message fails at
    /// once with reason [`Reason::Blocked`](crate::Reason::Blocked) and nothing is sent.
    /// Off by default; recommended when webhook URLs come from customers (SSRF). Ingestion
    /// is not affected (its endpoint is the operator's own), nor is a proxy from the
    /// environment (the target's name is still resolved and checked here).
    pub block_private_networks: bool,
    /// Networks exempt from `block_private_networks`, in CIDR notation (`"10.1.0.0/16"`,
    /// `"fd00::/8"`; a bare address is one host).
    pub allowed_networks: Vec<String>,
    /// The same guard for the ingestion endpoint, with its own exceptions
    /// (`endpoint_allowed_networks`). Off by default: a library's endpoint is its operator's
    /// own. A service whose endpoints come from its customers (the relay's forwards) turns it
    /// on.
    pub block_private_endpoint: bool,
    /// Networks exempt from `block_private_endpoint`, in CIDR notation.
    pub endpoint_allowed_networks: Vec<String>,
    /// Log lines show URLs whole. Off by default: they show the scheme, host and port only
    /// (`https://hooks.slack.com/…`), since a path can be a secret (Slack's incoming webhooks)
    /// as a query string can. For debugging.
    pub log_url_paths: bool,
    /// Where accepted messages are kept until their outcome: every accepted message is
    /// stored before its first attempt and leaves at its outcome. `None`: memory only.
    ///
    /// - A directory (the embedded SQLite engine): a new client on the directory (or a live
    ///   sibling process, for a dead one's files) resumes what is pending.
    /// - `redis://[user:password@]host[:port][/db][?prefix=NAME]` (`rediss://` for TLS): a
    ///   Redis 6.2+ server shared by a fleet (Redis Streams). A process's pending messages
    ///   are taken over by a living process on the same server and prefix once it has shown
    ///   no sign of life for `timeout` + 10 s. `prefix` (default `outbound`) starts every
    ///   key, so fleets can share a server. Run Redis with `appendonly yes` and
    ///   `appendfsync everysec` (ARCHITECTURE.md, "The spool: why Redis Streams").
    /// - `redis+sentinel://[user:password@]host[:port][,host[:port]...]/MASTER[/db][?prefix=NAME
    ///   &sentinel_password=P]` (`rediss+sentinel://` for TLS): the same on the primary the
    ///   Sentinels name (asked at each connection, so a failover is followed).
    pub spool: Option<Spool>,
    /// On a Redis spool: when a commit counts as acknowledged ([`RedisAck`]; default
    /// `Auto`: the safe one the deployment allows). A commit whose confirmation does not
    /// come within half of `timeout` is not acknowledged (`Client::when_spooled` answers
    /// false). A tenant of an engine follows its engine's (`EngineConfig::redis_ack`).
    pub redis_ack: RedisAck,
    /// Bytes the spool may hold for this client: the bound on a backlog (a destination
    /// down), past which new calls are refused ([`Error::SpoolFull`], counted as
    /// `queue_full`). Default 1 GiB: an SDK's event of about 300 bytes takes about 450 in
    /// the spool, so about 2.4 million events, a 4-hour outage at 165 events a second.
    pub spool_max_bytes: u64,
    /// How often accepted messages are committed to the spool, together (default 20 ms).
    /// A power cut loses at most the messages accepted within one interval.
    pub spool_commit_interval: Duration,
    /// Keep dead letters: a message whose webhook delivery fails for good (its retry window
    /// closed, a permanent 4xx, a 410, the network guard's refusal) is kept in the spool's
    /// store with its body and each URL's last attempt, to be listed and replayed
    /// ([`Client::dead_letters`](crate::Client::dead_letters),
    /// [`Client::replay_dead_letter`](crate::Client::replay_dead_letter)). Needs a spool (the
    /// client's `spool`, or its engine's); off by default (the relay turns it on). The
    /// outcome callback and the counters are the same either way.
    pub dead_letters: bool,
    /// How long a dead letter is kept (default 14 days).
    pub dead_letter_retention: Duration,
    /// Attempts each webhook URL's log keeps, newest (default 100, at most
    /// [`MAX_ATTEMPT_LOG_SIZE`](crate::MAX_ATTEMPT_LOG_SIZE)). The logs are in memory, all of
    /// a process's within one budget: past it, the logs touched longest ago are freed.
    pub attempt_log_size: usize,
    /// How long an attempt stays in its URL's log (default 24 hours, at most 30 days).
    pub attempt_retention: Duration,
    /// Bytes of dead letters kept at most (bodies, ids, attempts; default 256 MiB): past it
    /// the oldest are dropped, and counted (`DeadLetterStats::evicted`).
    pub dead_letter_max_bytes: u64,
    /// Static headers one webhook may have at most (default 20).
    pub max_webhook_headers: usize,
    /// Bytes of one webhook's static headers at most, names and values (default 8 KiB):
    /// every request carries them, to a receiver whoever set them chose.
    pub max_webhook_header_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            write_key: None,
            endpoint: "https://api.segment.io".into(),
            webhooks: Arc::default(),
            subscriptions: Vec::new(),
            send_as: None,
            shared_secret: None,
            signature_scheme: SignatureScheme::XSignature,
            webhook_user_agent: "Outbound/1.0".into(),
            flush_at: 20,
            max_batch_messages: None,
            flush_interval: Duration::from_secs(5),
            max_queue_size: 10_000,
            queue_full_wait: Duration::ZERO,
            room_wait: None,
            timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            gzip: false,
            ca_certs: None,
            workers: 2,
            max_in_flight: 512,
            on_outcome: None,
            debug: None,
            log_sink: None,
            send: true,
            proxy_from_env: true,
            block_private_networks: false,
            allowed_networks: Vec::new(),
            block_private_endpoint: false,
            endpoint_allowed_networks: Vec::new(),
            log_url_paths: false,
            spool: None,
            redis_ack: RedisAck::Auto,
            spool_max_bytes: 1 << 30,
            spool_commit_interval: Duration::from_millis(20),
            dead_letters: false,
            dead_letter_retention: crate::model::dead_letter::DEFAULT_RETENTION,
            attempt_log_size: crate::model::attempts::DEFAULT_ATTEMPT_LOG_SIZE,
            attempt_retention: Duration::from_secs(24 * 3600),
            dead_letter_max_bytes: 256 << 20,
            max_webhook_headers: DEFAULT_MAX_WEBHOOK_HEADERS,
            max_webhook_header_bytes: DEFAULT_MAX_WEBHOOK_HEADER_BYTES,
        }
    }
}

impl fmt::Debug for Config {
    // Written by hand so the write key and the secret can never reach a log or a panic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("write_key", &self.write_key.as_ref().map(|_| "<redacted>"))
            .field("endpoint", &self.endpoint)
            .field("webhooks", &self.webhooks.len())
            .field("subscriptions", &self.subscriptions.len())
            .field(
                "shared_secret",
                &self.shared_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("signature_scheme", &self.signature_scheme)
            .field("flush_at", &self.flush_at)
            .field("max_batch_messages", &self.max_batch_messages)
            .field("flush_interval", &self.flush_interval)
            .field("max_queue_size", &self.max_queue_size)
            .field("queue_full_wait", &self.queue_full_wait)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("gzip", &self.gzip)
            .field("workers", &self.workers)
            .field("max_in_flight", &self.max_in_flight)
            .field("send", &self.send)
            .field("block_private_networks", &self.block_private_networks)
            .field("allowed_networks", &self.allowed_networks)
            .field("block_private_endpoint", &self.block_private_endpoint)
            .field("endpoint_allowed_networks", &self.endpoint_allowed_networks)
            .field("log_url_paths", &self.log_url_paths)
            .field("dead_letters", &self.dead_letters)
            .field("dead_letter_retention", &self.dead_letter_retention)
            .field("attempt_log_size", &self.attempt_log_size)
            .field("attempt_retention", &self.attempt_retention)
            .field("dead_letter_max_bytes", &self.dead_letter_max_bytes)
            .field("max_webhook_headers", &self.max_webhook_headers)
            .field("max_webhook_header_bytes", &self.max_webhook_header_bytes)
            .field("spool", &self.spool)
            .field("redis_ack", &self.redis_ack)
            .finish_non_exhaustive()
    }
}

/// Headers no webhook may set: the transport and the signatures own them.
const RESERVED: [&str; 10] = [
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "x-signature",
    "x-signature-256",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
];

/// Standard Webhooks secrets shorter than this are refused (the spec: at least 24 bytes).
const MIN_STANDARD_KEY: usize = 24;
/// ...and longer than this (the spec: at most 512 bits).
const MAX_STANDARD_KEY: usize = 64;

/// A webhook's own headers after its checks: parsed, ready to send.
pub(crate) type StaticHeaders = Vec<(HeaderName, HeaderValue)>;

/// One webhook after its checks: its static headers (with `Authorization` for Basic and
/// bearer auth) and where its signature goes.
pub(crate) struct CheckedHook {
    pub headers: StaticHeaders,
    /// The signature's header when not its scheme's own.
    pub signature_header: Option<HeaderName>,
    /// The scheme its requests are signed with.
    pub scheme: SignatureScheme,
}

/// The prefix of a Standard Webhooks secret as shown to customers (`whsec_<base64>`).
const SECRET_PREFIX: &str = "whsec_";

/// Secrets are decoded with or without `=` padding: the spec's Python library pads them
/// itself, so a secret copied without its padding works there and must work here.
const SECRET_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Standard Webhooks keys from `secrets`: one or more `whsec_<base64>` secrets separated by
/// spaces (the prefix may be left out, as the spec's libraries allow). Each is one key.
pub(crate) fn standard_keys(secrets: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut keys = Vec::new();
    for (i, secret) in secrets.split_ascii_whitespace().enumerate() {
        let b64 = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
        match SECRET_BASE64.decode(b64) {
            Ok(key) if !key.is_empty() => keys.push(key),
            _ => {
                return Err(format!(
                    "secret {} is not a whsec_ secret (\"whsec_\" followed by standard base64)",
                    i + 1
                ))
            }
        }
    }
    if keys.is_empty() {
        return Err("no secret given".into());
    }
    Ok(keys)
}

/// Checks `secrets` are Standard Webhooks secrets of the spec's sizes (`shared_secret`).
fn check_standard_secrets(secrets: &str) -> Result<(), Error> {
    let keys = standard_keys(secrets).map_err(|why| Error::config("shared_secret", why))?;
    if let Some(i) = keys
        .iter()
        .position(|k| !(MIN_STANDARD_KEY..=MAX_STANDARD_KEY).contains(&k.len()))
    {
        return Err(Error::config(
            "shared_secret",
            format!(
                "secret {} decodes to {} bytes; Standard Webhooks secrets are \
                 {MIN_STANDARD_KEY} to {MAX_STANDARD_KEY} random bytes",
                i + 1,
                keys[i].len()
            ),
        ));
    }
    Ok(())
}

/// Checks `url` is absolute http(s), has a host and no credentials.
pub(crate) fn check_url(setting: &str, url: &str) -> Result<Uri, Error> {
    // Shown without `user:password@`, path or query: the error reaches logs.
    let shown = crate::log::url_for_log(url, false);
    let uri: Uri = url
        .parse()
        .map_err(|e| Error::config(setting, format!("{shown:?} is not a valid URL ({e})")))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => {
            return Err(Error::config(
                setting,
                format!("{shown:?} must be an absolute http:// or https:// URL"),
            ))
        }
    }
    let Some(authority) = uri.authority() else {
        return Err(Error::config(setting, format!("{shown:?} has no host")));
    };
    if authority.as_str().contains('@') {
        return Err(Error::config(
            setting,
            "URL must not carry credentials (user:password@); use a static header",
        ));
    }
    if authority.host().is_empty() {
        return Err(Error::config(setting, format!("{shown:?} has no host")));
    }
    Ok(uri)
}

impl Config {
    /// Checks the webhooks (how many, their URLs, their static headers, how each endpoint
    /// is called) and gives each one's headers, parsed, and its signature's header.
    pub(crate) fn check_webhooks(&self) -> Result<Vec<CheckedHook>, Error> {
        if self.webhooks.len() > MAX_WEBHOOKS {
            return Err(Error::config(
                "webhooks",
                format!(
                    "{} given, at most {MAX_WEBHOOKS} allowed",
                    self.webhooks.len()
                ),
            ));
        }
        let mut targets = Vec::with_capacity(self.webhooks.len());
        for (i, hook) in self.webhooks.iter().enumerate() {
            check_url(&format!("webhooks[{i}].url"), &hook.url)?;
            if hook.headers.len() > self.max_webhook_headers {
                return Err(Error::config(
                    format!("webhooks[{i}].headers"),
                    format!(
                        "{} headers given, at most {} allowed (max_webhook_headers)",
                        hook.headers.len(),
                        self.max_webhook_headers
                    ),
                ));
            }
            let bytes: usize = (hook.headers.iter()).map(|(k, v)| k.len() + v.len()).sum();
            if bytes > self.max_webhook_header_bytes {
                return Err(Error::config(
                    format!("webhooks[{i}].headers"),
                    format!(
                        "{bytes} bytes of names and values, at most {} allowed \
                         (max_webhook_header_bytes)",
                        self.max_webhook_header_bytes
                    ),
                ));
            }
            let mut headers = Vec::with_capacity(hook.headers.len());
            for (name, value) in &hook.headers {
                let setting = format!("webhooks[{i}].headers[{name:?}]");
                let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    Error::config(
                        &setting,
                        "header name must be an HTTP token (letters, digits, !#$%&'*+-.^_`|~)",
                    )
                })?;
                if RESERVED.contains(&parsed.as_str()) {
                    return Err(Error::config(
                        &setting,
                        format!("{name} is set by outbound and cannot be overridden"),
                    ));
                }
                let value = HeaderValue::from_str(value).map_err(|_| {
                    Error::config(
                        &setting,
                        "header value must be visible ASCII or spaces, with no CR, LF or NUL",
                    )
                })?;
                headers.push((parsed, value));
            }
            // A subscription's fixed headers go out with its webhook's: one Authorization.
            let fixed = self.send_as.iter().flat_map(|s| s.headers.iter());
            let has_authorization =
                (headers.iter().chain(fixed)).any(|(k, _)| k == http::header::AUTHORIZATION);
            let endpoint = endpoint_check::check(i, hook, has_authorization)?;
            headers.extend((endpoint.authorization).map(|v| (http::header::AUTHORIZATION, v)));
            let scheme = hook.signature_scheme.unwrap_or(self.signature_scheme);
            if let (SignatureScheme::StandardWebhooks, Some(secrets)) =
                (scheme, &self.shared_secret)
            {
                check_standard_secrets(secrets).map_err(|e| match (e, hook.signature_scheme) {
                    (Error::Config { reason, .. }, Some(_)) => Error::config(
                        format!("webhooks[{i}].signature_scheme"),
                        format!(
                            "standard-webhooks signs with shared_secret's whsec_ secrets: {reason}"
                        ),
                    ),
                    (e, _) => e,
                })?;
            }
            targets.push(CheckedHook {
                headers,
                signature_header: endpoint.signature_header,
                scheme,
            });
        }
        Ok(targets)
    }

    /// Checks everything that can be checked before the client starts.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let positive = |setting: &str, v: Duration| {
            if v.is_zero() {
                Err(Error::config(setting, "must be greater than zero"))
            } else {
                Ok(())
            }
        };
        if self.write_key.is_none() && self.webhooks.is_empty() && self.subscriptions.is_empty() {
            return Err(Error::config(
                "write_key/webhooks",
                "a client needs a write key (ingestion), at least one webhook or subscription, \
                 or more than one of these",
            ));
        }
        self.check_subscriptions()?;
        if let Some(key) = &self.write_key {
            if key.is_empty() {
                return Err(Error::config("write_key", "must not be empty"));
            }
            check_url("endpoint", &self.endpoint)?;
        }
        if self.flush_at == 0 {
            return Err(Error::config("flush_at", "must be at least 1"));
        }
        if let Some(max) = self.max_batch_messages.filter(|m| *m < self.flush_at) {
            return Err(Error::config(
                "max_batch_messages",
                format!(
                    "{max} is below flush_at ({}): it must be at least flush_at; \
                     leave it unset for flush_at",
                    self.flush_at
                ),
            ));
        }
        if self.max_queue_size == 0 {
            return Err(Error::config("max_queue_size", "must be at least 1"));
        }
        if self.queue_full_wait > Duration::from_secs(3600) {
            return Err(Error::config("queue_full_wait", "must be at most 1 hour"));
        }
        if self.workers == 0 {
            return Err(Error::config("workers", "must be at least 1"));
        }
        if self.max_in_flight == 0 {
            return Err(Error::config("max_in_flight", "must be at least 1"));
        }
        positive("flush_interval", self.flush_interval)?;
        positive("timeout", self.timeout)?;
        positive("max_retry_duration", self.retry.max_retry_duration)?;
        if self.spool.is_some() {
            positive("spool_commit_interval", self.spool_commit_interval)?;
            if self.spool_commit_interval > Duration::from_secs(1) {
                return Err(Error::config(
                    "spool_commit_interval",
                    "must be at most 1 s",
                ));
            }
            if self.spool_max_bytes == 0 {
                return Err(Error::config(
                    "spool_max_bytes",
                    "must be greater than zero",
                ));
            }
            if let Some(spool) = &self.spool {
                spool.check()?;
            }
        }
        // Checked on or off: a reload's check of a config turns them off (no spool).
        positive("dead_letter_retention", self.dead_letter_retention)?;
        if !(1..=crate::MAX_ATTEMPT_LOG_SIZE).contains(&self.attempt_log_size) {
            return Err(Error::config(
                "attempt_log_size",
                format!(
                    "must be 1 to {}, got {}",
                    crate::MAX_ATTEMPT_LOG_SIZE,
                    self.attempt_log_size
                ),
            ));
        }
        positive("attempt_retention", self.attempt_retention)?;
        if self.attempt_retention > Duration::from_secs(30 * 86_400) {
            return Err(Error::config(
                "attempt_retention",
                "must be at most 30 days",
            ));
        }
        if self.dead_letter_max_bytes == 0 {
            return Err(Error::config(
                "dead_letter_max_bytes",
                "must be greater than zero",
            ));
        }
        if self.shared_secret.as_deref() == Some("") {
            return Err(Error::config(
                "shared_secret",
                "must not be empty (leave it unset to send unsigned)",
            ));
        }
        if let (SignatureScheme::StandardWebhooks, Some(secrets)) =
            (self.signature_scheme, &self.shared_secret)
        {
            check_standard_secrets(secrets)?;
        }
        if HeaderValue::from_str(&self.webhook_user_agent).is_err() {
            return Err(Error::config(
                "webhook_user_agent",
                "must be a valid header value",
            ));
        }
        self.network_guard()?;
        self.endpoint_guard()?;
        Ok(())
    }

    /// The webhooks that `block_private_networks` refuses whatever DNS answers: their URL's
    /// host is an address (or `localhost`) outside `allowed_networks`, so every message to
    /// them would fail as `blocked`. Each as its index and the refusal (`blocked: 127.0.0.1
    /// is a loopback address ...`). Names that DNS resolves are judged at delivery. Empty
    /// when the guard is off, or when `allowed_networks` is refused (as [`Client::new`]
    /// reports).
    ///
    /// [`Client::new`]: crate::Client::new
    pub fn blocked_webhooks(&self) -> Vec<(usize, String)> {
        let Ok(Some(guard)) = self.network_guard() else {
            return Vec::new();
        };
        // A webhook that is off sends nothing: nothing to warn of.
        self.webhooks
            .iter()
            .enumerate()
            .filter(|(_, hook)| hook.enabled)
            .filter_map(|(i, hook)| guard.check_url(&hook.url).err().map(|b| (i, b.to_string())))
            .collect()
    }

    /// The SSRF guard for webhooks, when `block_private_networks` is on; an allow-list entry
    /// that is not a network is a config error naming `allowed_networks`.
    pub(crate) fn network_guard(&self) -> Result<Option<NetworkGuard>, Error> {
        NetworkGuard::configured(
            self.block_private_networks,
            &self.allowed_networks,
            "allowed_networks",
        )
    }

    /// The SSRF guard for the ingestion endpoint, when `block_private_endpoint` is on.
    pub(crate) fn endpoint_guard(&self) -> Result<Option<NetworkGuard>, Error> {
        NetworkGuard::configured(
            self.block_private_endpoint,
            &self.endpoint_allowed_networks,
            "endpoint_allowed_networks",
        )
    }

    /// Whether a webhook that is on signs with Standard Webhooks (its ids must then be
    /// header values without `.`).
    pub(crate) fn signs_standard(&self) -> bool {
        (self.webhooks.iter()).any(|w| {
            w.enabled
                && w.signature_scheme.unwrap_or(self.signature_scheme)
                    == SignatureScheme::StandardWebhooks
        })
    }

    /// The webhooks that are on, as a mask (bit `i`: webhook `i`): where a message goes.
    pub(crate) fn hook_mask(&self) -> u8 {
        (self.webhooks.iter().enumerate())
            .filter(|(_, w)| w.enabled)
            .fold(0u8, |m, (i, _)| m | (1 << i))
    }
}
